"""AIOKafkaProducer: aiokafka's producer on a librdkafka producer.

``send()`` hands the record to librdkafka at once (``rd_kafka_producev``, through the
core's ``SenderCore``: :mod:`pyrdk.core`; the common record, bytes to a topic sent to
before, in one call that also makes its future, and on the C core without a copy) and
returns a future; librdkafka's delivery
reports land in the main queue, which signals a pipe the event loop watches
(:class:`pyrdk.aio.wakeup.Wakeup`), and the loop's callback serves them (``rd_kafka_poll``
with a zero timeout) and the core resolves their futures, a batch at a time. The record's partition is
librdkafka's ``murmur2_random``: aiokafka's (and Java's) default partitioner, murmur2 of the
key, a random partition for records without one; or what the program's ``partitioner`` picks.
"""
from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import ssl
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Optional, Union

from pyrdk.aio import conf
from pyrdk.aio.abc import AbstractTokenProvider
from pyrdk.aio.batch import BatchBuilder, check_headers, check_timestamp
from pyrdk.aio.batch import check_bytes as _check_bytes
from pyrdk.aio.client import Client
from pyrdk.aio.errors import (IllegalOperation, IllegalStateError, KafkaTimeoutError, MessageSizeTooLargeError,
                              ProducerClosed)
from pyrdk.aio.structs import OffsetAndMetadata, RecordMetadata, TopicPartition, offsets_to_commit
from pyrdk.aio.wakeup import Wakeup
from pyrdk.common import INT32_MAX, check_bool, integer, weak_method
from pyrdk.core import sender_core
from pyrdk.exceptions import (KafkaException, NoBrokersAvailableError, ProducerQueueFullError, SocketDisconnectedError,
                              TransactionStateError)
from pyrdk.rd import transaction
from pyrdk.rd.callbacks import REPORT_BATCH, Callbacks
from pyrdk.rd.conf import to_str
from pyrdk.rd.errors import MSG_TIMED_OUT, PURGE_INFLIGHT, PURGE_QUEUE, QUEUE_FULL
from pyrdk.rd.errors import exception as error_for
from pyrdk.rd.handle import Handle

log = logging.getLogger(__name__)
_running_loop = asyncio.get_running_loop

_missing = object()
_ids = itertools.count(1)
_numbers = itertools.count(1)
COMPRESSION = {None: "none", "gzip": "gzip", "snappy": "snappy", "lz4": "lz4", "zstd": "zstd"}
YIELD_EVERY = 256  # send() lets the loop run other tasks once per this many calls (well under 1 ms)
PARTITION_UA = -1  # librdkafka's RD_KAFKA_PARTITION_UA: its partitioner chooses


def _settle(set_outcome, outcome):
    """Set a future's result or exception; one of a loop already closed (the producer was
    used from another loop) cannot tell its callbacks, and is left as it is."""
    try:
        set_outcome(outcome)
    except RuntimeError:  # "Event loop is closed"
        pass


def _future_of(entry):
    """The future of a ``_pending`` entry: the future itself, or ``(future, topic, timestamp_ms)``."""
    return entry[0] if entry.__class__ is tuple else entry


def _acks(acks, enable_idempotence):
    """librdkafka's ``acks`` for aiokafka's ``acks`` (default 1, or all with idempotence)."""
    if acks is _missing:
        return -1 if enable_idempotence else 1
    if acks == "all":
        acks = -1
    if acks not in (0, 1, -1) or isinstance(acks, bool):
        raise ValueError("acks must be 0, 1 or 'all' (or -1), not %r" % (acks,))
    if enable_idempotence and acks != -1:
        raise ValueError("enable_idempotence requires acks='all', not %r" % (acks,))
    return acks


class AIOKafkaProducer(Client):
    """aiokafka's ``AIOKafkaProducer``: its arguments and defaults, mapped to librdkafka
    properties (``rdkafka_config`` adds or overrides any). Left unset, ``partitioner`` is
    librdkafka's ``murmur2_random``, which partitions as aiokafka's default does; a callable
    is called in ``send()`` as aiokafka calls it;
    ``ssl_context`` must come from :func:`pyrdk.aio.helpers.create_ssl_context`."""

    def __init__(self, *, loop: Optional[asyncio.AbstractEventLoop] = None,
                 bootstrap_servers: Union[str, Sequence[str]] = "localhost", client_id: Optional[str] = None,
                 metadata_max_age_ms: int = 300000, request_timeout_ms: int = 40000, api_version: str = "auto",
                 acks: Any = _missing, key_serializer: Optional[Callable[[Any], Optional[bytes]]] = None,
                 value_serializer: Optional[Callable[[Any], Optional[bytes]]] = None,
                 compression_type: Optional[str] = None, max_batch_size: int = 16384,
                 partitioner: Optional[Callable[[Any, list[int], list[int]], int]] = None,
                 max_request_size: int = 1048576, linger_ms: int = 0, send_backoff_ms: int = 100,
                 retry_backoff_ms: int = 100, security_protocol: str = "PLAINTEXT",
                 ssl_context: Optional[ssl.SSLContext] = None, connections_max_idle_ms: Optional[int] = 540000,
                 enable_idempotence: bool = False, transactional_id: Optional[str] = None,
                 transaction_timeout_ms: int = 60000, sasl_mechanism: str = "PLAIN",
                 sasl_plain_password: Optional[str] = None, sasl_plain_username: Optional[str] = None,
                 sasl_kerberos_service_name: str = "kafka", sasl_kerberos_domain_name: Optional[str] = None,
                 sasl_oauth_token_provider: Optional[AbstractTokenProvider] = None,
                 rdkafka_config: Optional[Mapping[str, Any]] = None) -> None:
        if partitioner is not None and not callable(partitioner):
            raise TypeError("partitioner must be a callable(key, all_partitions, available_partitions) "
                            "returning a partition id, not %r" % (partitioner,))
        for name, fn in (("key_serializer", key_serializer), ("value_serializer", value_serializer)):
            if fn is not None and not callable(fn):
                raise TypeError("%s must be callable, not %r" % (name, fn))
        if compression_type not in COMPRESSION:
            raise ValueError("compression_type must be one of gzip, snappy, lz4, zstd or None, not %r"
                             % (compression_type,))
        enable_idempotence = check_bool("enable_idempotence", enable_idempotence)
        if transactional_id is not None:
            enable_idempotence = True
        self._key_serializer = key_serializer
        self._value_serializer = value_serializer
        self._request_timeout_ms = request_timeout_ms
        self._max_batch_size = max_batch_size
        self._partitioner = partitioner
        self._metadata_max_age_ms = metadata_max_age_ms
        self._partition_lists: dict[str, Any] = {}  # topic -> (all ids, ids with a leader, when), for the partitioner
        self._config = conf.common(bootstrap_servers, client_id or "aiokafka-producer-%d" % next(_numbers),
                                   metadata_max_age_ms, request_timeout_ms, retry_backoff_ms,
                                   security_protocol, ssl_context, connections_max_idle_ms, sasl_mechanism,
                                   sasl_plain_username, sasl_plain_password, sasl_kerberos_service_name,
                                   sasl_oauth_token_provider, rdkafka_config)
        self._config.update({
            "acks": _acks(acks, enable_idempotence),
            "enable.idempotence": bool(enable_idempotence),
            "compression.codec": COMPRESSION[compression_type],
            "batch.size": max_batch_size,
            "message.max.bytes": max(max_request_size, 1000),
            "linger.ms": linger_ms,
            "partitioner": "murmur2_random",
            "request.timeout.ms": request_timeout_ms,
            "message.timeout.ms": request_timeout_ms,
        })
        linger, timeout = integer(linger_ms), integer(request_timeout_ms)
        if isinstance(linger, int) and isinstance(timeout, int) and 0 <= timeout <= linger:
            # librdkafka refuses a message.timeout.ms not over linger.ms; aiokafka takes any
            # linger_ms: a record lingers, then has request_timeout_ms
            self._config["message.timeout.ms"] = linger + timeout
        if transactional_id is not None:
            self._config.update({"transactional.id": transactional_id,
                                 "transaction.timeout.ms": transaction_timeout_ms})
            if isinstance(request_timeout_ms, int) and isinstance(transaction_timeout_ms, int):
                # librdkafka refuses a transactional producer whose socket.timeout.ms is over
                # transaction.timeout.ms + 100 or whose message.timeout.ms is over it; aiokafka
                # takes a transaction_timeout_ms under request_timeout_ms, which then bounds both
                # (message.timeout.ms as widened past linger_ms above).
                self._config["socket.timeout.ms"] = min(request_timeout_ms, transaction_timeout_ms + 100)
                self._config["message.timeout.ms"] = min(self._config["message.timeout.ms"], transaction_timeout_ms)
        self._config.update(rdkafka_config or {})
        conf.check(self._config, rdkafka_config)
        self._transactional = self._config.get("transactional.id") is not None
        # The brokers tell nothing: futures resolve to None. librdkafka takes the last of acks'
        # names it is given, in this order (rdkafka_config's own names come after acks).
        acks = [to_str(k, v) for k, v in self._config.items() if k in ("acks", "request.required.acks")]
        self._unacked = acks[-1] == "0"
        self._handle: Any = None  # a pyrdk.rd.handle.Handle once started
        self._wakeup: Any = None
        self._loop: Any = None
        self._pending: dict[int, Any] = {}  # msg_id -> (future, topic, timestamp_ms), or future (send_record())
        self._room: Any = None  # set when deliveries free queue room
        self._flushing: list[list[Any]] = []  # flush()'s [ids pending when called, how many are done, its future]
        self._stopping = False  # stop() flushes: send() refuses new records
        self._in_transaction = False  # a transactional producer sends only between begin and commit/abort
        self._unfinished: Optional[str] = None  # the commit or abort that timed out: call it again
        self._txn_failure: Optional[KafkaException] = None  # the first delivery failure of the transaction
        self._running: Any = None  # the executor's future of the unfinished call, if it was cancelled
        self._offsets_call: Any = None  # the executor's future of a send_offsets_to_transaction() cancelled
        # the fatal error (ProducerFenced) after which no transactional call can succeed
        self._fatal: Optional[KafkaException] = None
        self._core: Any = None
        self._fast: Any = None  # the core while send_record() may take records: started, no partitioner
        self._topics: dict[str, int] = {}  # topic -> its index in the core (0: none, its records' entries name it)
        self._closed = False
        self._batches: dict[tuple[str, int], asyncio.Future[Any]] = {}  # (topic, partition) -> last send_batch()'s
        self._starting = False  # start() is loading the metadata

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        """Create the librdkafka producer (``rd_kafka_new``), watch its main queue and, as
        aiokafka's start() connects, load the cluster's metadata within ``request_timeout_ms``
        (``KafkaConnectionError`` when no broker answers; ``SslError`` or
        ``AuthenticationError`` as soon as librdkafka reports one); with a
        ``transactional_id``, ``rd_kafka_init_transactions`` instead. If that fails or is
        cancelled the producer is closed again: a later start() starts it anew."""
        if self._closed:
            raise ProducerClosed("the producer is stopped; make a new one")
        if self._handle is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._room = asyncio.Event()
        self._bind_token_provider()
        handle = Handle("producer", self._config, Callbacks(on_deliveries=weak_method(self, "_on_deliveries", None)),
                        closed_exc=ProducerClosed, what="producer")
        try:
            self._wakeup = Wakeup(self._loop, handle, self._serve)
        except BaseException:
            handle.close()
            raise
        self._handle = handle
        self._core = sender_core(handle, sys.maxsize)  # librdkafka checks the size (message.max.bytes)
        # asyncio's own loops make their futures as asyncio.Future(loop=loop): the core does so directly
        if type(self._loop).create_future is asyncio.BaseEventLoop.create_future:
            self._core.bind(self._pending, asyncio.Future, self._loop, YIELD_EVERY)
        else:
            self._core.bind(self._pending, self._loop.create_future, None, YIELD_EVERY)
        if self._partitioner is None and not self._transactional:
            self._fast = self._core
        self._starting = True  # the main queue's errors are served by _raise_security_failure()
        try:
            if self._transactional:
                await self._blocking(transaction.init_transactions, self._handle, self._request_timeout_ms)
            else:
                await self._fetch_metadata(self._request_timeout_ms, first=True)
        except BaseException as exc:  # failed or cancelled: a later start() starts anew
            self._wakeup.close()
            self._handle = self._core = self._fast = None
            # on the default executor, where a cancelled request still runs (close() waits for it)
            closed = self._loop.run_in_executor(None, handle.close)
            if isinstance(exc, Exception):
                await closed
            raise
        finally:
            self._starting = False
        self._serve()  # what came meanwhile

    def _raise_security_failure(self):
        """Serve the main queue's events (``rd_kafka_poll``; no delivery report comes before
        start() returns): a TLS failure or refused login librdkafka reported is raised."""
        self._handle.poll(0)

    async def stop(self) -> None:
        """Flush what is pending (up to ``request_timeout_ms``: librdkafka fails each record
        still undelivered then), then ``rd_kafka_destroy`` (on the default executor: it joins
        librdkafka's threads). In another event loop than its own, nothing can wait for the
        futures: it fails what is pending, closes, and raises ``IllegalStateError`` if that
        was any record."""
        if self._handle is None or self._closed:  # stopped, or never started: start() may still start it,
            return  # as aiokafka's may (a start() that failed closed what it had made)
        self._stopping = True  # what is sent from now on is refused: the flush can end
        self._fast = None
        foreign = self._foreign_loop()
        failed = 0
        try:
            if foreign:
                self._handle.purge(in_flight=True)
            else:
                await asyncio.wait_for(self.flush(), self._request_timeout_ms / 1000.0 + 5)
        except asyncio.TimeoutError:
            self._handle.purge(in_flight=True)
            self._serve()
        finally:
            self._closed = True
            self._wakeup.close()
            try:
                # rd_kafka_destroy joins librdkafka's threads: off the loop
                await asyncio.get_running_loop().run_in_executor(None, self._handle.close)
            finally:  # also when cancelled meanwhile: no report will be served, nor another stop() fail them
                for entry in self._pending.values():
                    fut = _future_of(entry)
                    self._core.release(fut)
                    if not fut.done():
                        failed += 1
                        _settle(fut.set_exception,
                                ProducerClosed("the producer stopped before the record was delivered"))
                self._pending.clear()
                self._check_drained()
        if foreign and failed:
            raise IllegalStateError("stopped in another event loop than the one it was started in: %d record(s) "
                                    "not yet delivered were failed (stop a client in its own loop, where stop() "
                                    "delivers them)" % failed)

    def _check_running(self):
        if self._closed or self._stopping:
            raise ProducerClosed("the producer is stopped")
        if self._handle is None:
            raise ProducerClosed("the producer is not started: await start() first (or use async with)")

    # -- sending -------------------------------------------------------------------------------

    async def send(self, topic: str, value: Any = None, key: Any = None, partition: Optional[int] = None,
                   timestamp_ms: Optional[int] = None, headers: Optional[Iterable[tuple[str, Optional[bytes]]]] = None
                   ) -> asyncio.Future[RecordMetadata]:
        """Hand the record to librdkafka (``rd_kafka_producev``); a future of its
        :class:`RecordMetadata` (None with ``acks=0``, as aiokafka's). A full queue is waited
        on for up to ``request_timeout_ms`` (``KafkaTimeoutError``); cancelling this coroutine
        while it waits sends nothing."""
        if self._key_serializer is not None:
            key = self._key_serializer(key)
        if self._value_serializer is not None:
            value = self._value_serializer(value)
        fast = self._fast
        try:
            if fast is not None and partition is None and timestamp_ms is None and headers is None \
                    and _running_loop() is self._loop:
                # The common record, in one call to the core: bytes to a topic sent to before,
                # librdkafka's partitioner (or None: the general path below). From another event
                # loop than the producer's, the general path raises IllegalStateError: the core's
                # future would be of the producer's loop, which may never tell it.
                fut = fast.send_record(topic, value, key)
                if fut is False:  # once every YIELD_EVERY calls: a loop of send() calls lets other tasks run
                    await asyncio.sleep(0)
                    fut = self._fast.send_record(topic, value, key) if self._fast is not None else None
                if fut is not None:
                    return fut
            return await self._send(topic, value, key, partition, timestamp_ms, headers)
        except TransactionStateError as exc:
            raise self._failed_transaction(exc, "send()") from exc

    async def _send(self, topic, value, key, partition, timestamp_ms, headers):
        """send() of every other record: checked, then through ``rd_kafka_producev``."""
        if self._closed or self._stopping or self._handle is None:
            self._check_running()
        self._check_loop()
        if self._transactional and not self._in_transaction:
            self._outside_transaction()
        if topic.__class__ is not str or not topic:
            raise TypeError("topic must be a non-empty str, not %r" % (topic,))
        if partition is None:
            partition = PARTITION_UA
        elif not isinstance(partition := integer(partition), int) or isinstance(partition, bool) \
                or not 0 <= partition <= INT32_MAX:
            raise TypeError("partition must be an int >= 0 and < 2**31 or None, not %r" % (partition,))
        if timestamp_ms is not None:
            timestamp_ms = check_timestamp(timestamp_ms)
        if value.__class__ is not bytes:
            value = _check_bytes("value", value, self._value_serializer is not None)
        if key is not None and key.__class__ is not bytes:
            key = _check_bytes("key", key, self._key_serializer is not None)
        if headers is not None:
            headers = check_headers(headers)
        if self._partitioner is not None and partition == PARTITION_UA:
            partition = await self._choose_partition(topic, key)
        msg_id = next(_ids)  # no topic index (pyrdk.core.TOPIC_SHIFT): its topic in its entry
        if msg_id % YIELD_EVERY == 0:
            await asyncio.sleep(0)  # a loop of send() calls must let other tasks run
        fut = self._track(msg_id, topic, timestamp_ms)
        try:
            if headers is None and timestamp_ms is None:
                if topic not in self._topics:
                    self._add_topic(topic)
                err = self._core.send(topic, partition, value, key, msg_id)
                if err == QUEUE_FULL:
                    await self._produce_when_room(topic, partition, value, key, timestamp_ms, headers, msg_id)
                elif err:
                    self._handle.raise_produce_error(err, topic, partition)
            else:
                await self._produce_when_room(topic, partition, value, key, timestamp_ms, headers, msg_id)
        except MessageSizeTooLargeError as exc:
            self._untrack(msg_id)
            raise self._too_large(value, key, headers) from exc
        except BaseException:
            self._untrack(msg_id)
            raise
        return fut

    def _too_large(self, value, key, headers):
        """librdkafka's refusal of a record over ``message.max.bytes``, saying which option it is."""
        size = len(value or b"") + len(key or b"") + sum(len(name.encode()) + len(data or b"")
                                                         for name, data in headers or ())
        return MessageSizeTooLargeError(
            "the record is %d bytes (value, key and headers), more than max_request_size=%s allows once "
            "librdkafka adds its record overhead: send a smaller record or raise max_request_size"
            % (size, self._config["message.max.bytes"]))

    async def _partition_ids(self, topic):
        """``(all ids, ids with a leader, when)`` of ``topic``'s partitions (sorted), from
        ``rd_kafka_metadata`` (on the default executor, at most once per
        ``metadata_max_age_ms``); while no broker answers, the last known, as aiokafka's
        metadata keeps them."""
        lists = self._partition_lists.get(topic)
        if lists is None or self._loop.time() - lists[2] > self._metadata_max_age_ms / 1000.0:
            try:
                md = await self._blocking(self._handle.metadata, topic, self._request_timeout_ms, False)
            except (KafkaTimeoutError, SocketDisconnectedError, NoBrokersAvailableError):
                if lists is None:
                    raise
                return lists
            t = md.topics.get(topic)
            if t is None or t.error:
                raise error_for(t.error if t is not None else 3, "metadata of %s" % topic)
            ids = sorted(p.id for p in t.partitions)
            lists = self._partition_lists[topic] = (
                ids, sorted(p.id for p in t.partitions if p.leader >= 0), self._loop.time())
        return lists

    async def _choose_partition(self, topic, key):
        """The partition the program's ``partitioner`` picks, called as aiokafka calls it:
        with the serialized key, the topic's partition ids (sorted) and those with a leader
        (``_partition_ids()``)."""
        lists = await self._partition_ids(topic)
        chosen = self._partitioner(key, list(lists[0]), list(lists[1]))
        if chosen not in lists[0] or isinstance(chosen, bool):
            raise ValueError("the partitioner returned %r, not one of the partitions of %s: %s"
                             % (chosen, topic, lists[0]))
        return chosen

    def _track(self, msg_id, topic, timestamp_ms):
        """A future for the delivery report of message ``msg_id``, pending from now on."""
        fut = self._loop.create_future()
        self._pending[msg_id] = (fut, topic, timestamp_ms)
        return fut

    def _untrack(self, msg_id):
        """Message ``msg_id`` never reached librdkafka: no report will come for it."""
        self._pending.pop(msg_id, None)
        self._check_drained()

    def _add_topic(self, topic):
        self._topics[topic] = self._core.add_topic(topic, self._handle.addresses(topic)[1])

    async def _produce_when_room(self, topic, partition, value, key, timestamp_ms, headers, msg_id):
        """Hand the record to librdkafka (``rd_kafka_producev``); while its queue is full, wait
        for delivery reports to make room and try again, for up to ``request_timeout_ms``."""
        deadline = self._loop.time() + self._request_timeout_ms / 1000.0
        while True:
            try:
                self._handle.produce_guarded(topic, partition, value, key, timestamp_ms, headers, msg_id)
                return
            except ProducerQueueFullError:
                pass
            remaining = deadline - self._loop.time()
            if remaining <= 0:
                raise KafkaTimeoutError("librdkafka's queue stayed full for request_timeout_ms (%d ms)"
                                        % self._request_timeout_ms) from None
            self._room.clear()
            self._serve()  # reports may be waiting
            try:
                await asyncio.wait_for(self._room.wait(), remaining)
            except asyncio.TimeoutError:
                pass

    def create_batch(self) -> BatchBuilder:
        """An empty :class:`~pyrdk.aio.batch.BatchBuilder` of up to ``max_batch_size`` bytes,
        to fill and hand to :meth:`send_batch`; its ``append()`` serializes with the
        producer's serializers, as aiokafka's."""
        return BatchBuilder(self._max_batch_size, key_serializer=self._key_serializer,
                            value_serializer=self._value_serializer)

    async def send_batch(self, batch: BatchBuilder, topic: str, *, partition: int) -> asyncio.Future[RecordMetadata]:
        """Hand the records of ``batch`` to librdkafka, all to ``partition`` of ``topic``
        (``rd_kafka_producev`` each, in order), after the previous batch sent to that
        partition is delivered; a future of the first record's :class:`RecordMetadata`, set
        once every record of the batch is delivered (or with the first failure). The records
        were serialized as they went into the batch."""
        self._check_running()
        self._check_loop()
        if self._transactional and not self._in_transaction:
            self._outside_transaction()
        if not isinstance(batch, BatchBuilder):
            raise TypeError("batch must come from create_batch(), not %r" % (batch,))
        if topic.__class__ is not str or not topic:
            raise TypeError("topic must be a non-empty str, not %r" % (topic,))
        partition = integer(partition)
        if not isinstance(partition, int) or isinstance(partition, bool) or not 0 <= partition <= INT32_MAX:
            raise TypeError("partition must be an int >= 0 and < 2**31, not %r" % (partition,))
        if not batch.record_count():
            raise ValueError("the batch is empty: append() records to it first")
        records = batch._take()
        previous = self._batches.get((topic, partition))
        if previous is not None and not previous.done():
            await asyncio.wait((previous,))
        futures = []
        for value, key, timestamp_ms, headers in records:
            msg_id = next(_ids)  # no topic index: its topic in its entry
            fut = self._track(msg_id, topic, timestamp_ms)
            try:
                await self._produce_when_room(topic, partition, value, key, timestamp_ms, headers, msg_id)
            except MessageSizeTooLargeError as exc:
                self._untrack(msg_id)
                raise self._too_large(value, key, headers) from exc
            except TransactionStateError as exc:
                self._untrack(msg_id)
                raise self._failed_transaction(exc, "send_batch()") from exc
            except BaseException:
                self._untrack(msg_id)
                raise
            futures.append(fut)
        delivered = self._loop.create_task(_first_when_all(futures))
        self._batches[(topic, partition)] = delivered
        delivered.add_done_callback(functools.partial(self._batch_done, (topic, partition)))
        return delivered

    def _batch_done(self, key, fut):
        if self._batches.get(key) is fut:
            del self._batches[key]

    async def send_and_wait(self, topic: str, value: Any = None, key: Any = None, partition: Optional[int] = None,
                            timestamp_ms: Optional[int] = None,
                            headers: Optional[Iterable[tuple[str, Optional[bytes]]]] = None) -> RecordMetadata:
        """``send()``, then wait for the delivery: the :class:`RecordMetadata`."""
        self._check_loop()
        fut = await self.send(topic, value, key, partition, timestamp_ms, headers)
        return await fut

    async def flush(self) -> None:
        """Wait until every record sent so far is delivered or failed (not the ones sent
        meanwhile)."""
        if not self._stopping:
            self._check_running()
        self._check_loop()
        self._serve()
        if self._pending:
            fut = self._loop.create_future()
            self._flushing.append([list(self._pending), 0, fut])  # the ids, in the order sent
            await fut

    async def partitions_for(self, topic: str) -> set[int]:
        """The partition ids of ``topic`` (``rd_kafka_metadata``, on the default executor, at
        most once per ``metadata_max_age_ms``; while no broker answers, the last known, as
        aiokafka's)."""
        self._check_running()
        if not isinstance(topic, str) or not topic:
            raise TypeError("topic must be a non-empty str, not %r" % (topic,))
        return set((await self._partition_ids(topic))[0])

    # -- transactions --------------------------------------------------------------------------

    def _outside_transaction(self):
        if self._unfinished is not None:
            raise IllegalOperation("the last %s() timed out or was cancelled and goes on in the background: await "
                                   "it again, then begin_transaction() to send" % self._unfinished)
        raise IllegalOperation("the producer has a transactional_id: send inside a transaction "
                               "(begin_transaction(), or async with producer.transaction())")

    def _failed_transaction(self, exc, what):
        """librdkafka's refusal (``_STATE``) of a record in a transaction that failed (a delivery
        failed in it: it can only be aborted), saying so and what to do; ``exc`` otherwise."""
        if not self._in_transaction or exc.fatal:
            return exc
        failure = self._txn_failure
        return TransactionStateError(
            "%s: the transaction failed%s and can only be aborted: abort_transaction() (an async with "
            "producer.transaction() block aborts it when this error leaves it), then send in a new transaction"
            % (what, " (%s)" % failure if failure is not None else " (a request of its coordinator failed)"),
            code=exc.code, name=exc.name, retriable=False, fatal=False, txn_requires_abort=True)

    def _check_transactional(self, what):
        self._check_running()
        if not self._transactional:
            raise IllegalOperation("transactions need a transactional_id")
        fatal = self._fatal
        if fatal is not None:  # librdkafka may still take an abort, which cannot end well: refused
            raise error_for(fatal.code, what, fatal=True, reason="the producer can do nothing more after its fatal "
                            "error (%s); stop() it: a new producer with the same transactional_id aborts what this "
                            "one left open" % fatal)

    def _note_fatal(self, exc):
        if isinstance(exc, KafkaException) and exc.fatal and self._fatal is None:
            self._fatal = exc

    async def begin_transaction(self) -> None:
        """``rd_kafka_begin_transaction`` (local: no request), a coroutine as aiokafka's. After a
        commit or abort that timed out or was cancelled (it goes on in the background),
        ``TransactionStateError``: await that call again first."""
        self._check_transactional("begin_transaction()")
        self._check_unfinished("begin_transaction")
        transaction.begin_transaction(self._handle)
        self._in_transaction = True
        self._txn_failure = None
        if self._partitioner is None:
            self._fast = self._core

    async def commit_transaction(self) -> None:
        """``rd_kafka_commit_transaction``: deliver what was sent, then commit (on the default
        executor). After an abort that timed out or was cancelled, ``TransactionStateError``:
        await that again."""
        self._check_transactional("commit_transaction()")
        self._check_unfinished("commit_transaction")
        try:
            await self._resumable(transaction.commit_transaction)
        finally:
            self._serve()

    async def abort_transaction(self) -> None:
        """``rd_kafka_abort_transaction``: the records sent in the transaction fail. After a
        commit that timed out or was cancelled, ``TransactionStateError``: await that again."""
        self._check_transactional("abort_transaction()")
        self._check_unfinished("abort_transaction")
        try:
            await self._resumable(transaction.abort_transaction)
        finally:
            self._serve()

    def _check_unfinished(self, name):
        """``TransactionStateError`` for the call ``name`` while a commit or abort that timed
        out or was cancelled goes on in librdkafka's background (it takes nothing else until
        that call is made again), unless ``name`` is that call."""
        if self._unfinished not in (None, name):
            raise TransactionStateError("%s(): the last %s() timed out or was cancelled and goes on in the "
                                        "background; await %s() again to finish it (librdkafka takes nothing else "
                                        "until then)"
                                        % (name, self._unfinished, self._unfinished))

    async def _resumable(self, call):
        """A commit or abort (the other one not unfinished: ``_check_unfinished``); one that
        raises a ``retriable`` error (a timeout) goes on in librdkafka's background, and is
        remembered until it is called again. So is one cancelled (its task was): its call goes
        on on the executor, whose outcome the next call of it awaits and gives."""
        self._ended_transaction()  # from the call on, as aiokafka's: whatever its outcome, no more records
        await self._finish_offsets()
        running, self._running = self._running, None
        if running is None:
            self._check_loop()
            running = self._loop.run_in_executor(None, call, self._handle, self._request_timeout_ms)
        try:
            await asyncio.shield(running)
        except asyncio.CancelledError:
            self._unfinished, self._running = call.__name__, running
            raise
        except KafkaException as exc:
            self._note_fatal(exc)
            goes_on = exc.retriable and not exc.fatal and not exc.txn_requires_abort
            self._unfinished = call.__name__ if goes_on else None
            raise
        self._unfinished = None

    def _ended_transaction(self):
        self._in_transaction = False
        self._fast = None

    async def send_offsets_to_transaction(
            self, offsets: Mapping[TopicPartition, Union[int, tuple[int, str], OffsetAndMetadata]],
            group_id: str) -> None:
        """Commit ``offsets`` (``{TopicPartition: offset, (offset, metadata) or
        OffsetAndMetadata}``, the next offsets to read, as aiokafka takes them) for
        ``group_id`` with the transaction (``rd_kafka_send_offsets_to_transaction``)."""
        self._check_transactional("send_offsets_to_transaction()")
        if not self._in_transaction:  # aiokafka's error (librdkafka's would be TransactionStateError)
            raise IllegalOperation("send_offsets_to_transaction(): not in the middle of a transaction "
                                   "(begin_transaction(), or async with producer.transaction())")
        entries = offsets_to_commit(offsets)
        metadata = transaction.GroupMetadata.for_group(group_id)
        await self._finish_offsets()
        self._check_loop()
        running = self._loop.run_in_executor(None, transaction.send_offsets, self._handle, entries, metadata,
                                             self._request_timeout_ms)
        try:
            await asyncio.shield(running)
        except asyncio.CancelledError:
            self._offsets_call = running  # librdkafka's call goes on: the next transactional call waits for it
            raise
        except KafkaException as exc:
            self._note_fatal(exc)
            raise

    async def _finish_offsets(self):
        """Wait for the call of a ``send_offsets_to_transaction()`` whose task was cancelled: it
        goes on on the executor, and until it ends librdkafka refuses every other transactional
        call ("Conflicting send_offsets_to_transaction API call"). Its failure is the
        transaction's: a commit raises it; an abort ends it."""
        running = self._offsets_call
        if running is not None:
            await asyncio.wait((running,))
            if not running.cancelled():
                running.exception()  # retrieved: the transaction's state tells it
            self._offsets_call = None

    def transaction(self) -> _Transaction:
        """``async with producer.transaction():`` begins a transaction, commits it when the
        block ends, aborts it when the block raises."""
        return _Transaction(self)

    # -- delivery reports ----------------------------------------------------------------------

    def _serve(self):
        """The pipe said events wait: serve them (``rd_kafka_poll(rk, 0)``), which resolves
        the futures of the delivery reports."""
        if self._handle is None or not self._handle.usable or self._starting:
            return
        try:
            self._handle.poll(0, dispatch=False)
            self._dispatch()
        except Exception as exc:
            self._fail_all(exc)

    def _dispatch(self):
        """Resolve the futures of one batch of delivery reports; if there may be more, come
        back on the loop's next round, so that no callback holds the loop for long."""
        if self._handle is None or not self._handle.usable:
            return
        try:
            if self._handle.dispatch_reports(limit=1) == REPORT_BATCH:
                self._loop.call_soon(self._dispatch)
        except Exception as exc:
            self._fail_all(exc)

    def _fail_all(self, exc):
        """A fatal error: every pending send learns it."""
        log.error("producer error: %s", exc)
        for entry in list(self._pending.values()):
            fut = _future_of(entry)
            self._core.release(fut)
            if not fut.done():
                fut.set_exception(exc)
        self._pending.clear()
        self._check_drained()

    def _on_deliveries(self, ids, errs, partitions, offsets, timestamps):
        if self._unacked:
            self._resolve_unacked(ids, errs)
        for fut, topic, err in self._core.deliver(self._pending, ids, errs, partitions, offsets, timestamps,
                                                  RecordMetadata, TopicPartition):
            exc = error_for(err, "deliver to %s" % topic)
            if err in (PURGE_QUEUE, PURGE_INFLIGHT) and self._transactional and not self._stopping:
                exc = error_for(err, "deliver to %s" % topic, reason="the transaction was aborted before the record "
                                "was delivered (%s)" % exc)  # librdkafka's abort purges what is not sent
            if err == MSG_TIMED_OUT:  # what kept it from the brokers (a TLS listener to a plaintext client...)
                exc = self._handle.with_last_error(exc)
            if self._transactional:
                self._note_fatal(exc)  # fenced: nothing more can be done in a transaction
                if self._in_transaction and self._txn_failure is None:
                    self._txn_failure = exc  # the transaction can only be aborted now
            fut.set_exception(exc)
        self._room.set()
        self._check_drained()

    def _resolve_unacked(self, ids, errs):
        """With acks=0 a delivered record's future resolves to None, as aiokafka's (its sender's
        ``done_noack()``): librdkafka reports offset -1001 (RD_KAFKA_OFFSET_INVALID), the
        brokers having told nothing. The failed ones are left to the core's ``deliver()``."""
        pending, release = self._pending, self._core.release
        for msg_id, err in zip(ids, errs):
            if not err:
                entry = pending.pop(msg_id, None)
                if entry is not None:
                    fut = _future_of(entry)
                    release(fut)
                    if not fut.done():
                        fut.set_result(None)

    def _check_drained(self):
        """Tell each flush() whose records are all done: each id it waits on is looked up
        once, from the oldest on, until one is still pending."""
        if not self._flushing:
            return
        pending, waiting = self._pending, []
        for flush in self._flushing:
            ids, done, fut = flush
            while done < len(ids) and ids[done] not in pending:
                done += 1
            flush[1] = done
            if done < len(ids) and not fut.done():
                waiting.append(flush)
            elif not fut.done():
                _settle(fut.set_result, None)
        self._flushing = waiting


async def _first_when_all(futures):
    """The first future's result once all are done; the first failure, if any."""
    results = await asyncio.gather(*futures)
    return results[0]


class _Transaction:
    """The context manager of :meth:`AIOKafkaProducer.transaction`."""

    def __init__(self, producer: AIOKafkaProducer) -> None:
        self._producer = producer

    async def __aenter__(self) -> _Transaction:
        await self._producer.begin_transaction()
        return self

    async def __aexit__(self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        producer = self._producer
        if exc_type is None:
            await producer.commit_transaction()
        elif isinstance(exc, KafkaException) and exc.fatal and (
                producer._fatal is not None or producer._handle.fatal_error() is not None):
            # this producer's (not another's, through a nested block): no abort, as aiokafka:
            # it cannot end well, and would hide exc
            producer._note_fatal(exc)
        else:
            await producer.abort_transaction()
