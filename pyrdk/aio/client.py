"""What the asyncio producer and consumer share: ``async with``, the event loop they belong
to, and the one way the control path reaches librdkafka's blocking calls."""
from __future__ import annotations

import asyncio
from typing import TypeVar

from pyrdk.aio.errors import IllegalStateError

_Self = TypeVar("_Self", bound="Client")


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

    def _foreign_loop(self):
        """Whether this call runs in another event loop than the one ``start()`` ran in
        (whose futures and pipe reader the client's are)."""
        return self._loop is not None and asyncio.get_running_loop() is not self._loop

    def _check_loop(self):
        if self._foreign_loop():
            raise IllegalStateError("this client was started in another event loop (each asyncio.run() has its "
                                    "own): make one in this loop, and stop each in its own")
