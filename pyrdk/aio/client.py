"""What the asyncio producer and consumer share: ``async with``, the event loop they belong
to, and the one way the control path reaches librdkafka's blocking calls."""
from __future__ import annotations

import asyncio
import time
from typing import TypeVar

from pyrdk.aio.conf import TokenCallback
from pyrdk.aio.errors import IllegalStateError
from pyrdk.exceptions import KafkaTimeoutError, NoBrokersAvailableError, SocketDisconnectedError

_Self = TypeVar("_Self", bound="Client")
FIRST_SLICE_MS = 100  # the first slice of a metadata request (see _fetch_metadata)


class Client:
    """``async with client:`` starts and stops it; subclasses set ``_loop`` in ``start()``."""

    async def __aenter__(self: _Self) -> _Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    async def start(self) -> None:
        """The subclass's: create the librdkafka client."""
        raise NotImplementedError

    async def stop(self) -> None:
        """The subclass's: close the librdkafka client."""
        raise NotImplementedError

    async def _blocking(self, fn, *args):
        """Run one of librdkafka's blocking control calls (metadata, commits, offset lookups,
        transactions, close) on the loop's default executor; the data path never does.
        From another loop than the client's, ``IllegalStateError`` (see ``_check_loop()``)."""
        self._check_loop()
        return await self._loop.run_in_executor(None, fn, *args)

    async def _fetch_metadata(self, timeout_ms, first=False):
        """``rd_kafka_metadata`` of every topic within ``timeout_ms``, asked in slices (from
        ``FIRST_SLICE_MS``, doubled after each late answer) with ``_raise_security_failure()``
        between them, so that a TLS failure (``SslError``) or a refused login
        (``AuthenticationError``) is raised as soon as librdkafka reports it instead of after
        the whole timeout. The ``first`` request, start()'s, raises ``KafkaConnectionError``
        early if the bootstrap brokers are unreachable (``Handle.unreachable``; aiokafka's
        start() tries each once)."""
        start = time.monotonic()
        deadline = self._loop.time() + timeout_ms / 1000.0
        slice_ms = FIRST_SLICE_MS
        while True:
            remaining_ms = max(1, int((deadline - self._loop.time()) * 1000))
            try:
                return await self._blocking(self._handle.metadata, None, min(slice_ms, remaining_ms))
            except (KafkaTimeoutError, SocketDisconnectedError, NoBrokersAvailableError) as exc:
                self._raise_security_failure()
                if first and await self._blocking(self._handle.unreachable, start):
                    raise SocketDisconnectedError("Unable to bootstrap from %s in %d ms (%s): check the address, and "
                                                  "that a broker runs there" % (self._config["bootstrap.servers"],
                                                                                (time.monotonic() - start) * 1000,
                                                                                exc)) from exc
                if remaining_ms <= slice_ms:
                    raise
                if isinstance(exc, KafkaTimeoutError):  # only then: while no broker is up, the wait stays short
                    slice_ms *= 2

    def _raise_security_failure(self):
        """The subclass's: raise a TLS failure or refused login librdkafka has reported."""
        raise NotImplementedError

    def _bind_token_provider(self):
        """Have a ``sasl_oauth_token_provider`` (``oauth_cb`` in the config) await its
        tokens on the loop ``start()`` runs in."""
        callback = self._config.get("oauth_cb")
        if isinstance(callback, TokenCallback):
            callback.loop = self._loop

    def _foreign_loop(self):
        """Whether this call runs in another event loop than the one ``start()`` ran in
        (whose futures and pipe reader the client's are)."""
        return self._loop is not None and asyncio.get_running_loop() is not self._loop

    def _check_loop(self):
        if self._foreign_loop():
            raise IllegalStateError("this client was started in another event loop (each asyncio.run() has its "
                                    "own): make one in this loop, and stop each in its own")
