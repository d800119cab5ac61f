"""Producer: pykafka's asynchronous producer on librdkafka (``rd_kafka_produce_batch``,
``rd_kafka_producev``).

``produce()`` has one fast path and one general path. The fast path is the core's
(:mod:`pyrdk.core`): a message of bytes with no timestamp or headers gets a partition and a
``Message``, and waits in its partition's queue, handed to librdkafka 64 at a time or by the
poller thread. Everything else -- a serializer, a timestamp or headers, ``sync``, delivery
reports, a full queue, a failure to raise, an outage, a stopped producer -- takes the general
path, :meth:`Producer._produce_general`, one ``rd_kafka_producev`` call per message.

Delivery reports are recorded in C (``pyrdk_dr_msg_cb``) and handed to the core by whichever
thread serves them (``produce()``'s general path, ``flush()``, ``get_delivery_report()``, the
poller thread); a failed delivery reaches the user through ``get_delivery_report()`` when
``delivery_reports=True``, from ``produce()`` itself when ``sync=True``, and otherwise as
``ProduceFailureError`` on the next ``produce()``, ``flush()`` or ``stop()``.

With a ``transactional_id`` the producer is transactional (librdkafka's transactional API,
:mod:`pyrdk.rd.transaction`): every ``produce()`` takes the general path, so each message is
in librdkafka's hands -- and so in the open transaction -- when ``produce()`` returns, and
nothing the core could still hold slips into the next transaction.
"""
from __future__ import annotations

import atexit
import contextlib
import datetime
import functools
import logging
import math
import queue
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Optional, Union

from pyrdk import common
from pyrdk.common import (INT32_MAX, INT64_MAX, CompressionType, check_bool, check_config, check_headers,
                          check_int, ZERO_TIMESTAMP, check_number, check_pair, integer, stop_at_exit, weak_method)
from pyrdk.core import Message, ProducerCore, producer_core
from pyrdk.core import arrow
from pyrdk.exceptions import (AuthenticationError, CallState, ConfigurationError, KafkaException,
                              MessageSizeTooLarge, ProduceFailureError, ProducerQueueFullError,
                              ProducerStoppedException, ProduceTimeoutError, SslError, TransactionStateError)
from pyrdk.partition import Partition, to_timestamp_ms
from pyrdk.partitioners import Murmur2Partitioner, _presorted, murmur2_partitioner, random_partitioner
from pyrdk.rd import conf, transaction
from pyrdk.rd.callbacks import Callbacks, security_failure
from pyrdk.rd.errors import PURGE_INFLIGHT, PURGE_QUEUE, QUEUE_FULL, UNKNOWN_PARTITION
from pyrdk.rd.errors import exception as errors_exception
from pyrdk.rd.handle import Handle

if TYPE_CHECKING:
    from pyrdk.cluster import Cluster
    from pyrdk.topic import Topic

log = logging.getLogger(__name__)

# Started and not stopped: stopped at exit, so nothing queued is lost.
_unstopped: weakref.WeakSet[Producer] = weakref.WeakSet()
# Poller threads, joined at exit: one may be stopping a producer the program let go of.
_pollers: weakref.WeakSet[threading.Thread] = weakref.WeakSet()

POLL_MS = 100
QUEUE_FULL_WAIT_MS = 10
STOP_PURGE_WAIT_MS = 1000
SYNC_WAIT_MS = 1000  # a sync produce()'s least wait for its report: pykafka's one get_delivery_report(timeout=1)
DROPPED_WAIT_MS = 5000  # a dropped producer's wait for deliveries when pending_timeout_ms is -1
BATCH = 64  # produce()'s messages handed to librdkafka at once, per partition
METADATA_MS = 2000  # the poller's wait for its topic's metadata (at most socket_timeout_ms)
METADATA_RETRY_S = 10.0  # a failed refresh of the topic's metadata is tried again this soon
BATCH_MIN_LINGER_MS = 5  # below it, produce() hands each message over at once
RECORD_OVERHEAD = 36  # librdkafka's RD_KAFKAP_MESSAGE_V2_MAX_OVERHEAD, counted against max_request_size


# The librdkafka property each constructor argument sets, to name the argument when
# librdkafka refuses its value.
_ARGUMENTS = {"message.send.max.retries": "max_retries", "retry.backoff.ms": "retry_backoff_ms",
              "request.required.acks": "required_acks", "request.timeout.ms": "ack_timeout_ms",
              "queue.buffering.max.messages": "max_queued_messages", "batch.num.messages": "min_queued_messages",
              "linger.ms": "linger_ms", "message.max.bytes": "max_request_size",
              "transaction.timeout.ms": "transaction_timeout_ms", "statistics.interval.ms": "statistics_interval_ms"}


def _compression(compression):
    """``compression`` as a CompressionType, else ValueError naming the argument."""
    try:
        return CompressionType(compression)
    except ValueError:
        raise ValueError("compression must be a CompressionType (%s), not %r"
                         % (", ".join(c.name for c in CompressionType), compression)) from None


def _check_bytes(name, value, serialized=False):
    if value is not None and not isinstance(value, bytes):
        if serialized:
            raise TypeError("the serializer returned %s as the %s: it must return bytes or None (e.g. end it "
                            "with .encode() when it makes a str)" % (type(value).__name__, name))
        raise TypeError("Producer.produce accepts bytes as %s (or a serializer), but got %s"
                        % (name, type(value).__name__))


class Producer:
    """Produce messages to one topic (pykafka 2.8's signature and defaults).

    :param partitioner: ``(partitions, key) -> Partition``; see :mod:`pyrdk.partitioners`
    :param compression: a :class:`CompressionType` (``compression.codec``)
    :param max_retries: ``message.send.max.retries``
    :param retry_backoff_ms: ``retry.backoff.ms``
    :param required_acks: ``request.required.acks`` (0, 1, -1 = all)
    :param ack_timeout_ms: ``request.timeout.ms``, the broker's wait for the acks; 0 (pykafka's
        answer at once) is librdkafka's least, 1
    :param max_queued_messages: ``queue.buffering.max.messages``
    :param min_queued_messages: ``batch.num.messages``
    :param linger_ms: ``linger.ms``
    :param queue_empty_timeout_ms: accepted for pykafka compatibility
    :param block_on_queue_full: wait for room when the queue is full; False raises
        ``ProducerQueueFullError``
    :param max_request_size: the largest message (``message.max.bytes``), counting value, key,
        headers and librdkafka's record overhead; larger ones raise ``MessageSizeTooLarge``
        from ``produce()``
    :param sync: ``produce()`` waits for delivery and raises its error
    :param delivery_reports: keep ``(message, exception or None)`` for
        :meth:`get_delivery_report`, per producing thread (ignored when ``sync``)
    :param pending_timeout_ms: how long ``stop()`` (and a sync ``produce()``, a second at
        least) waits for deliveries; -1 waits for ever. What is still queued or in flight
        then is purged and reported as failed (an in-flight message may nonetheless have been
        written).
    :param auto_start: start in the constructor
    :param serializer: ``(value, partition_key) -> (bytes, bytes)``
    :param enable_idempotence: ``enable.idempotence``; it requires acks from all replicas,
        so with it the default ``required_acks=1`` becomes -1
    :param transactional_id: ``transactional.id``: makes the producer transactional (and
        idempotent, so ``required_acks`` becomes -1 too). Produce inside
        ``with producer.transaction():`` or between :meth:`begin_transaction` and
        :meth:`commit_transaction`; :meth:`init_transactions` is called by the first of them
        if the program did not call it. A second producer with the same id fences this one
        (``ProducerFenced``).
    :param transaction_timeout_ms: ``transaction.timeout.ms``: the coordinator aborts a
        transaction open this long; also the default bound of the transactional calls.
        librdkafka wants it at least the client's ``socket_timeout_ms`` - 100 and longer than
        ``linger_ms`` (``ConfigurationError`` otherwise)
    :param rdkafka_config: any librdkafka properties, applied last
    :param statistics_interval_ms: ``statistics.interval.ms`` (None: the client's); see :meth:`stats`
    :param stats_callback: called with each statistics snapshot, a dict (None: the client's)

    The defaults are pykafka's, and suit throughput: messages wait up to ``linger_ms``
    (``linger.ms=5000``) for a batch of ``min_queued_messages``, or of librdkafka's
    ``batch.size`` (1 MB), whichever fills first. A full queue of ``max_queued_messages``
    is waited on 10 ms at a time, sending at once. :meth:`produce` makes one ``Message`` per
    message and, as pykafka does, queues it for a moment before sending: each partition's
    messages go to librdkafka 64 at a time (with ``linger_ms`` of 5 or more), and at least
    every ``linger_ms`` (100 ms at most) from the poller thread; then librdkafka lingers as
    usual. :meth:`produce_batch` makes no ``Message``.
    """

    def __init__(self, cluster: Cluster, topic: Topic,
                 partitioner: Optional[Callable[[list[Partition], Any], Partition]] = None,
                 compression: CompressionType = CompressionType.NONE, max_retries: int = 3,
                 retry_backoff_ms: int = 100, required_acks: int = 1, ack_timeout_ms: int = 10 * 1000,
                 max_queued_messages: int = 100000, min_queued_messages: int = 70000, linger_ms: int = 5 * 1000,
                 queue_empty_timeout_ms: int = 0, block_on_queue_full: bool = True,
                 max_request_size: int = 1000012, sync: bool = False, delivery_reports: bool = False,
                 pending_timeout_ms: int = 5 * 1000, auto_start: bool = True,
                 serializer: Optional[Callable[[Any, Any], tuple[Optional[bytes], Optional[bytes]]]] = None,
                 enable_idempotence: bool = False, transactional_id: Optional[str] = None,
                 transaction_timeout_ms: int = 60 * 1000, rdkafka_config: Optional[dict[str, Any]] = None,
                 use_rdkafka: Any = None, statistics_interval_ms: Optional[int] = None,
                 stats_callback: Optional[Callable[[dict[str, Any]], None]] = None) -> None:
        self._cluster = cluster
        self._topic = topic
        self._topic_name = topic.name.decode()
        self._partitioner = partitioner or random_partitioner
        # given the partitions sorted by id (_partition_list, the core's pairs)
        self._choose = _presorted(self._partitioner)
        if not callable(self._partitioner):
            raise TypeError("partitioner must be callable (partitions, key) -> Partition")
        if serializer is not None and not callable(serializer):
            raise TypeError("serializer must be callable (value, partition_key) -> (value, key)")
        self._serializer = serializer
        self._compression = _compression(compression)
        for name, value, low, high in (("max_retries", max_retries, 0, INT32_MAX),
                                       ("retry_backoff_ms", retry_backoff_ms, 0, INT32_MAX),
                                       ("ack_timeout_ms", ack_timeout_ms, 0, INT32_MAX),
                                       ("max_queued_messages", max_queued_messages, 1, INT32_MAX),
                                       ("min_queued_messages", min_queued_messages, 1, INT32_MAX),
                                       ("queue_empty_timeout_ms", queue_empty_timeout_ms, -1, INT32_MAX)):
            check_int(name, value, low, high)
        if required_acks not in (-1, 0, 1) or isinstance(required_acks, bool):
            raise ValueError("required_acks must be -1 (all in-sync replicas), 0 (none) or 1 (the leader), "
                             "not %r" % (required_acks,))
        check_number("linger_ms", linger_ms, 0)
        rdkafka_config = check_config("rdkafka_config", rdkafka_config)
        self._block_on_queue_full = check_bool("block_on_queue_full", block_on_queue_full)
        self._max_request_size = check_int("max_request_size", max_request_size, 1, 1000000000)  # librdkafka's most
        self._sync = sync = check_bool("sync", sync)
        self._delivery_reports = check_bool("delivery_reports", delivery_reports) and not sync
        enable_idempotence = check_bool("enable_idempotence", enable_idempotence)
        self._pending_timeout_ms = check_int("pending_timeout_ms", pending_timeout_ms, -1)
        if transactional_id is not None and (not isinstance(transactional_id, str) or not transactional_id):
            raise TypeError("transactional_id must be a non-empty str, not %r" % (transactional_id,))
        self._transaction_timeout_ms = check_int("transaction_timeout_ms", transaction_timeout_ms, 1)
        self._txn_ready = False  # init_transactions() done
        self._in_transaction = False
        self._txn_fatal: Optional[KafkaException] = None  # the fatal error a transactional call raised
        self._aborting = False  # purged messages of an aborted transaction are not failures to tell
        # "commit_transaction" or "abort_transaction": the call timed out and goes on in the
        # background; librdkafka takes no other transactional call until it is made again
        self._unfinished: Optional[str] = None
        self._config = cluster.config_for("producer")
        self._config.update({
            "compression.codec": self._compression.codec,
            "message.send.max.retries": max_retries,
            "retry.backoff.ms": retry_backoff_ms,
            "request.required.acks": required_acks,
            "request.timeout.ms": max(ack_timeout_ms, 1),
            "queue.buffering.max.messages": max_queued_messages,
            "batch.num.messages": min_queued_messages,
            "linger.ms": linger_ms,
            "message.max.bytes": max(max_request_size, 1000),
            "enable.idempotence": enable_idempotence or transactional_id is not None,
        })
        if transactional_id is not None:
            self._config.update({"transactional.id": transactional_id,
                                 "transaction.timeout.ms": transaction_timeout_ms})
        self._stats_callback = cluster.statistics(self._config, statistics_interval_ms, stats_callback)
        for key in rdkafka_config:  # set last, after the arguments' properties: librdkafka takes the
            self._config.pop(key, None)  # last of aliases (the client's compression.type, acks...)
        self._config.update(rdkafka_config)
        conf.check(self._config, _ARGUMENTS, rdkafka_config)
        self._size_limit_name = "max_request_size"  # what a size error names
        if "message.max.bytes" in rdkafka_config:  # applied last: it is the largest message, not max_request_size
            self._max_request_size = int(conf.to_str("message.max.bytes", rdkafka_config["message.max.bytes"]))
            self._size_limit_name = "rdkafka_config's message.max.bytes"
        cluster.check_statistics(self._config, stats_callback)
        self._transactional_id = self._config.get("transactional.id") or None  # also from rdkafka_config
        if self._transactional_id is not None:
            _check_transaction_timeout(self._config, rdkafka_config)
        if (_idempotent(self._config) or self._transactional_id is not None) and required_acks == 1 and \
                not {"acks", "request.required.acks"} & set(rdkafka_config):
            # Idempotence needs acks=all, and librdkafka refuses an explicit acks=1 with it:
            # pykafka's default required_acks=1 becomes -1 (the stronger guarantee).
            self._config["request.required.acks"] = -1
        self._partition_list = sorted(topic.partitions.values())
        # Calls the fast path never takes: each message is waited on, reported, serialized
        # or refused at once, or must be in librdkafka's hands inside its transaction.
        self._general_only = sync or self._delivery_reports or serializer is not None or \
            not block_on_queue_full or self._transactional_id is not None
        self._handle: Optional[Handle] = None
        self._core: Optional[ProducerCore] = None
        self._running = False
        self._failures = CallState()  # failed deliveries nobody else was told about
        self._cut_short = False  # a Ctrl-C cut stop() short: the next stop() raises its failures
        self._errors = CallState()  # errors of the poller thread and callbacks, raised as they are
        self._waiting: dict[common.Message, _Delivery] = {}  # for the messages of a sync produce()
        self._local = threading.local()
        self._lock = threading.Lock()
        # General-path produce() calls handing a message to librdkafka, by thread: stop() from
        # one of them (its serializer or partitioner) must not wait for itself.
        self._entering: dict[int, int] = {}
        self._entered = threading.Condition(self._lock)  # notified when an entry of _entering goes
        self._poller: Optional[threading.Thread] = None
        if check_bool("auto_start", auto_start):
            self.start()

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        """Create the librdkafka producer (``rd_kafka_new``), its core and the poller thread."""
        with self._lock:
            if self._running:
                return
            self._outage = self._cluster.broker_outage()
            # librdkafka's callbacks, the core and the poller thread hold the producer weakly:
            # one the program lets go of without stop() is stopped by its poller thread. So do
            # they its partitioner and stats_callback, which only the producer holds: one
            # of them may hold the producer (a bound method of the object that holds it),
            # and held by the core or the handle it would keep the producer alive for ever.
            left = _Leftovers(self._topic_name, self._failures, self._errors, self._pending_timeout_ms,
                              self._transactional_id is not None)
            self._handle = left.handle = Handle(
                "producer", self._config,
                Callbacks(on_deliveries=weak_method(self, "_on_deliveries", left.deliveries),
                          on_batch_failure=weak_method(self, "_on_batch_failure", left.batch_failure),
                          on_error=weak_method(self, "_on_error", None)),
                closed_exc=ProducerStoppedException,
                stats_callback=None if self._stats_callback is None else weak_method(self, "_stats_callback", None))
            batch = BATCH if self._linger_ms() >= BATCH_MIN_LINGER_MS else 1
            self._core = left.core = producer_core(
                self._handle, self._topic_name, [(p.id, p) for p in self._partition_list],
                None if self._partitioner is random_partitioner else weak_method(self, "_choose", left.general),
                self._compression,
                min(self._max_request_size, int(conf.to_str("message.max.bytes", self._config["message.max.bytes"]))),
                batch,
                self._sync or self._delivery_reports, weak_method(self, "_produce_general", left.general))
            self._core.divert = self._general_only
            self._running = True
            tick_ms = POLL_MS if batch == 1 else max(1, min(POLL_MS, int(self._linger_ms())))
            self._poller = threading.Thread(
                target=_poll_loop, args=(weakref.ref(self), left, tick_ms, self._metadata_interval_s()),
                daemon=True, name="pyrdk-producer-poller")
            self._poller.start()
            _unstopped.add(self)
            _pollers.add(self._poller)

    def _linger_ms(self):
        return float(conf.to_str("linger.ms", self._config["linger.ms"]))  # as given: a number, str or bytes

    def stop(self) -> None:
        """Deliver what is queued (waiting up to ``pending_timeout_ms``), report what could
        not be delivered, and close the producer. Raises ``ProduceFailureError`` for failed
        deliveries nobody else was told about (those of a stop() a Ctrl-C cut short too), but
        not for those of a transaction left open and not committed (it aborts it, or, after a
        commit that timed out, leaves it to the coordinator)."""
        with self._lock:
            if not self._running:
                if self._cut_short:  # what a stop() a Ctrl-C cut short left is raised now, once
                    self._cut_short = False
                    self._raise_failures()
                return  # stopped, or another stop() is under way (a signal handler's, say)
            handle, core, poller = self._handle, self._core, self._poller
            assert handle is not None and core is not None and poller is not None  # start() made them
            handle.check_close()
            self._running = False
            core.close()  # produce() now raises ProducerStoppedException (under the lock: see _check)
        interrupted = True
        uncommitted = self._in_transaction and self._txn_fatal is None  # never committed: must not count
        try:
            entered = self._wait_entered(self._pending_timeout_ms)
            if uncommitted:
                self._abort_at_stop()
            flush = functools.partial(self._flush_at_stop, handle)
            _deliver_or_purge(handle, core, self._pending_timeout_ms, flush)
            if entered:
                # Calls still waiting for room in a full queue end now (_check_waiting); what
                # they handed over after the purge is purged and reported too, not dropped
                # unreported with the handle.
                self._wait_entered(STOP_PURGE_WAIT_MS)
                _deliver_or_purge(handle, core, 0, flush)
            interrupted = False
        finally:
            handle.close()
            poller.join()
            # Messages whose report never came (only if librdkafka was cut short), and those
            # never handed over: report them.
            for msg in core.take_all():
                self._report(msg, ProduceFailureError(NO_REPORT_AT_STOP))
            self._cut_short = interrupted and bool(self._failures)
            if self._cut_short:  # the next stop() raises them; a program that ends now must see them
                log.error("stop() of the producer of %s was cut short: %d message(s) not delivered, which the next "
                          "stop() raises", self._topic.name.decode(), len(self._failures))
        if self._txn_fatal is not None:
            # The program was told (a transactional call raised it); its transaction is aborted.
            for _, exc in self._errors.take() + self._failures.take():
                log.warning("after the fatal error %s: %s", self._txn_fatal, exc)
            return
        if uncommitted:  # failed deliveries of a transaction aborted, or left to its coordinator to abort: moot
            self._failures.take()
        for msg, err in core.refused():  # refused at hand-off: failed deliveries too
            self._report(msg, errors_exception(err))
        security = self._errors.pop((SslError, AuthenticationError)) if self._failures else None
        if security is not None:
            # TLS or the login refused the connections: the messages stop() could not deliver
            # failed for that reason, raised as their cause (not alone, their list lost)
            self._errors.discard((SslError, AuthenticationError))
            for _, other in self._errors.take():  # not raised: said
                log.error("stop() of the producer of %s: %s", self._topic.name.decode(), other)
            raise _produce_failure([(msg, security) for msg, _ in self._failures.take()])
        self._raise_failures()

    def _flush_at_stop(self, handle, timeout_ms):
        """``rd_kafka_flush`` at stop(), in slices of ``POLL_MS``. librdkafka also hands the
        fatal error a transactional call raised to ``error_cb``: served by this flush rather
        than by the poller thread, it is kept with the poller's errors (logged by stop()), not
        raised a second time. A TLS failure or refused login (this flush's, or the poller
        thread's) is kept too and ends the wait: nothing will be delivered, so what is left is
        purged (``rd_kafka_purge``) and reported, with it as their cause."""
        deadline = None if timeout_ms < 0 else time.monotonic() + timeout_ms / 1000.0
        while True:
            slice_ms = POLL_MS if deadline is None else max(0, min(POLL_MS, int((deadline - time.monotonic()) * 1000)))
            try:
                if handle.flush(slice_ms):
                    return True
            except KafkaException as exc:
                if security_failure(exc):
                    self._errors.crash(exc)
                    return False
                if not exc.fatal or self._txn_fatal is None:
                    raise
                self._errors.crash(exc)
                return handle.flush(0)  # the flush ran: the callback's error was raised after it
            if self._errors.holds((SslError, AuthenticationError)):
                return False
            if deadline is not None and time.monotonic() >= deadline:
                return False

    def _wait_entered(self, timeout_ms):
        """Wait (up to ``timeout_ms``; -1: for ever) until the general-path produce() calls
        (and the produce_batch() and produce_arrow() calls the core takes) that passed their
        running check have handed their messages over: stop() then flushes them too, so
        every message they returned is delivered or reported. Those of the
        calling thread (stop() from a serializer or partitioner) are not waited for: the
        closed handle refuses their message. Returns whether some are still under way."""
        waited = 0
        me = threading.get_ident()
        with self._entered:
            while True:
                entered = any(ident != me for ident in self._entering)
                if not entered or 0 <= timeout_ms <= waited:
                    return entered
                self._entered.wait(QUEUE_FULL_WAIT_MS / 1000.0)
                waited += QUEUE_FULL_WAIT_MS

    def __enter__(self) -> Producer:
        self.start()
        return self

    def __exit__(self, exc_type: Optional[type[BaseException]], exc_value: Optional[BaseException],
                 traceback: Any) -> None:
        stop_at_exit(self.stop, exc_type, "producer")

    # -- producing -----------------------------------------------------------------------------

    def produce(self, message: Any, partition_key: Any = None,
                timestamp: Union[int, float, datetime.datetime, None] = None,
                headers: Union[list[tuple[str, Optional[bytes]]], dict[str, Optional[bytes]], None] = None
                ) -> common.Message:
        """Send ``message`` to a partition chosen by the partitioner; returns the ``Message``.

        Its ``offset`` (and ``timestamp``) are filled in when its delivery report arrives.
        Without ``delivery_reports`` or ``sync``, earlier messages whose delivery failed are
        raised here as one ``ProduceFailureError`` (``failed``), after this message is queued
        (``produced`` is 1), as pykafka raises its workers' errors after queueing; a
        delivery that fails while the call runs (this message's own) waits for the next call.

        :param message: bytes (or anything the serializer takes)
        :param partition_key: bytes given to the partitioner and stored as the key
        :param timestamp: ms since the epoch (an int, or a float such as ``time.time() * 1000``,
            cut to whole ms as pykafka did) or a ``datetime`` (default: now; not 0, which
            librdkafka reads as now)
        :param headers: ``[(str, bytes)]`` or ``{str: bytes}``
        """
        core = self._core
        if core is None:
            raise ProducerStoppedException("the producer is not started; call start()")
        return core.produce(message, partition_key, timestamp, headers)

    def _produce_general(self, message, partition_key, timestamp, headers, partition):
        """produce()'s general path: whatever the core's fast path does not take, one
        ``rd_kafka_producev`` call per message. ``partition``: the partitioner's choice if
        the fast path asked for it already. Inside a produce_batch() or produce_arrow() that
        sends its messages one at a time, the failures it raises are those from before that
        call began (its ``_call_mark``), not from before this message."""
        me = self._enter()
        try:
            msg, done, mark = self._hand_over(message, partition_key, timestamp, headers, partition)
        finally:
            self._leave(me)
        call_mark = getattr(self._local, "call_mark", None)  # a produce_batch()'s or produce_arrow()'s
        if call_mark is not None:
            mark = call_mark
        if done is not None:
            try:
                self._wait_delivered(msg, done)
            except KafkaException as exc:
                if exc.fatal and self._transactional_id is not None and self._txn_fatal is None:
                    self._txn_fatal = exc  # fenced: an abort could not end well
                raise
        self._raise_failed(1, mark)
        return msg

    def _enter(self):
        """Count a call about to hand messages to librdkafka, for stop() to wait for (see
        _wait_entered); ProducerStoppedException once stopped. Returns the thread's id, for
        _leave()."""
        with self._lock:
            if not self._running:
                raise ProducerStoppedException("the producer is stopped; call start() or use a new one")
            me = threading.get_ident()
            self._entering[me] = self._entering.get(me, 0) + 1
        return me

    def _leave(self, me):
        with self._lock:
            self._entering[me] -= 1
            if not self._entering[me]:
                del self._entering[me]
                self._entered.notify_all()

    def _hand_over(self, message, partition_key, timestamp, headers, partition):
        """The general path's checks and its ``rd_kafka_producev``: returns the Message, for a
        sync producer what its delivery report will set, and the ``_failures`` mark of
        ``_check()``."""
        if self._transactional_id is not None and not self._in_transaction:
            raise TransactionStateError("produce() outside a transaction: the producer is transactional "
                                        "(transactional_id=%r); call begin_transaction() first, or produce "
                                        "inside 'with producer.transaction():'" % self._transactional_id)
        mark = self._check()
        if self._serializer is not None:
            message, partition_key = check_pair("serializer", self._serializer(message, partition_key))
        _check_bytes("message", message, self._serializer is not None)
        _check_bytes("partition_key", partition_key, self._serializer is not None)
        size = len(message or b"") + len(partition_key or b"")
        # reported, not raised, as pykafka's: with delivery_reports, for a producer not sync
        reported = self._delivery_reports and not self._sync
        too_large = size > self._max_request_size
        if too_large and not reported:
            raise self._too_large(message, partition_key)
        if timestamp is not None:
            if isinstance(timestamp, datetime.datetime):
                timestamp = to_timestamp_ms(timestamp, cut=True)
            timestamp = _check_timestamp(timestamp)
        check_headers(headers)
        if partition is None:
            partition = self._choose(self._refresh_partitions(), partition_key)
        partition_id = self._partition_id(partition)
        msg = Message(message, partition_key=partition_key, partition_id=partition_id,
                      timestamp=timestamp, headers=headers, partition=partition,
                      topic=self._topic_name, compression_type=self._compression,
                      delivery_report_q=self._report_queue() if self._delivery_reports else None)
        if too_large:  # as pykafka: the message is returned and its report holds the refusal
            return self._report_refused(msg, self._too_large(message, partition_key)), None, mark
        self._hand_off(producing=True)  # the queued ones first: each partition's messages stay in order
        core = self._core
        msg_id = core.track(msg)
        done = _Delivery() if self._sync else None
        if done is not None:
            self._waiting[msg] = done
        try:
            self._enqueue(msg, msg_id, headers)
        except BaseException as exc:
            core.untrack(msg_id)
            self._waiting.pop(msg, None)
            if isinstance(exc, MessageSizeTooLarge) and reported:
                return self._report_refused(msg, exc), None, mark
            if isinstance(exc, TransactionStateError) and self.commit_in_doubt and not exc.fatal:
                raise self._unfinished_error("produce()") from exc  # librdkafka takes nothing but that commit
            if isinstance(exc, TransactionStateError) and self._in_transaction and not exc.fatal:
                # rd_kafka_producev's _STATE in a transaction: it failed already (a delivery, a
                # request of its coordinator), and only abort_transaction() gets out of that
                raise errors_exception(exc.code, "produce to %s [%d]" % (self._topic_name, partition_id),
                                       reason="the transaction failed already (a delivery or a request of "
                                       "its coordinator failed): abort_transaction(), then try it again",
                                       txn_requires_abort=True) from exc
            raise
        return msg, done, mark

    def _report_refused(self, msg, exc):
        """A message too large to send, with ``delivery_reports``: returned, its failure in
        its delivery report (pykafka's producer reported it so, not raised from produce())."""
        log.warning("message of partition %d not delivered: %s", msg.partition_id, exc)
        self._report_queue().put((msg, exc))
        return msg

    def _partition_id(self, partition):
        """The id of the partitioner's choice, which must be one of the topic's partitions."""
        pid = getattr(partition, "id", None)
        if not isinstance(partition, Partition) or partition.topic.name != self._topic.name or \
                isinstance(pid, bool) or not isinstance(pid, int) or pid not in self._topic.partitions:
            raise ValueError("the partitioner returned %r, not a Partition of topic %s (a partitioner "
                             "takes (partitions, key) and returns one of the partitions)"
                             % (partition, self._topic_name))
        return pid

    def _check(self):
        """What the general path does first: hand out the delivery reports, raise an error of
        the poller thread or a callback and ``NoBrokersAvailableError`` after an outage; then
        let the fast path go on if nothing is left for the general one. Failed deliveries wait
        for ``_raise_failed()``, once the call has queued its own messages: returns the
        ``_failures`` mark up to which it raises them (those reported before the call)."""
        self._handle.dispatch_reports()
        mark = self._failures.mark()
        self._errors.check()
        if self._outage.since is not None:
            self._outage.check(self._handle)  # every broker unreachable for socket_timeout_ms
        divert = self._general_only or self._outage.since is not None or bool(self._errors) or bool(self._failures)
        with self._lock:  # never on a core stop() closed meanwhile: its queues are handed over no more
            if self._running:
                self._core.divert = divert
        return mark

    def _hand_off(self, timeout_ms=-1, stopping=False, producing=False):
        """Hand every queued message to librdkafka, waiting (up to ``timeout_ms``; -1: for
        ever) for room in a full queue as _enqueue() does; returns the ms waited. Once
        stopped, only stop() itself hands over (``stopping``). A call that produces or
        flushes (``producing``) raises ``NoBrokersAvailableError`` rather than wait on an outage."""
        core, waited = self._core, 0
        while core.hand_off(stopping) and (timeout_ms < 0 or waited < timeout_ms):
            if not stopping:  # the closed core keeps its queues for stop(), which waits for this
                self._check_waiting()  # call (see _wait_entered) before it hands them over
            self._handle.flush(QUEUE_FULL_WAIT_MS)
            waited += QUEUE_FULL_WAIT_MS
            if producing and self._outage.since is not None:
                self._outage.check(self._handle)  # every broker unreachable for socket_timeout_ms
        return waited

    def _too_large(self, value, key):
        size = len(value or b"") + len(key or b"")
        if size > self._max_request_size:
            return MessageSizeTooLarge("message of %d bytes is larger than %s=%d"
                                       % (size, self._size_limit_name, self._max_request_size))
        return MessageSizeTooLarge("message of %d bytes is larger than %s=%d once librdkafka "
                                   "adds its record overhead (up to %d bytes, plus any headers)"
                                   % (size, self._size_limit_name, self._max_request_size, RECORD_OVERHEAD))

    def _metadata_interval_s(self):
        """librdkafka's ``topic.metadata.refresh.interval.ms`` (5 minutes by default; -1:
        never) in seconds: how often the poller re-reads the topic's partitions."""
        try:
            return int(conf.to_str("topic.metadata.refresh.interval.ms",
                                    self._config.get("topic.metadata.refresh.interval.ms", 300000))) / 1000.0
        except ValueError:
            return 300.0

    def _refresh_metadata(self, handle):
        """Re-read the topic's partitions and leaders through the producer's handle, as
        librdkafka does every ``topic.metadata.refresh.interval.ms``: partitions added since
        the producer started are then chosen too (by the partitioner, or as a partition of
        ``produce_arrow()``). False if the request failed or did not list the topic."""
        try:
            return self._cluster.refresh_topic(self._topic, handle, min(METADATA_MS, self._cluster.timeout_ms))
        except ProducerStoppedException:
            raise
        except KafkaException as exc:
            if exc.fatal or security_failure(exc):  # what the handle kept for the program: raised
                raise
            log.debug("%s: metadata refresh failed: %s", self._topic_name, exc)  # retried by librdkafka, and here
            return False

    def _refresh_topic(self, handle):
        """:meth:`_refresh_metadata`, then :meth:`_refresh_partitions`; False if the request
        failed or did not list the topic (the partitions are renewed either way)."""
        listed = self._refresh_metadata(handle)
        self._refresh_partitions()
        return listed

    def _refresh_partitions(self):
        """The partitions to choose from, renewed when the topic grew."""
        if len(self._partition_list) != len(self._topic.partitions):
            self._partition_list = sorted(self._topic.partitions.values())
            if self._core is not None:
                self._core.partitions = [(p.id, p) for p in self._partition_list]
        return self._partition_list

    def produce_batch(self, messages: Iterable[Any]) -> int:  # bytes or pairs; anything a serializer takes
        """Send many messages in one call; returns how many were queued.

        :param messages: a list (or any iterable) of values (bytes), or of ``(value,
            partition_key)`` pairs (bytes, and bytes or None)
        :returns: the number of messages queued: all of them, else an exception is raised

        No ``Message`` objects are made: the values and keys are handed to librdkafka by
        the core, spread evenly over the partitions as the default partitioner does, but in
        one run of consecutive messages per partition (the next batch starting at the next
        partition), so that each partition's batch fills at once, each run in
        ``rd_kafka_produce_batch`` calls; their delivery reports are counted in C. A failed
        delivery still surfaces, as ``ProduceFailureError`` on the next ``produce()``,
        ``flush()`` or ``stop()``, with a ``Message`` holding the value and key. With a
        serializer, a partitioner other than the default, ``sync``, ``delivery_reports``,
        ``block_on_queue_full=False``, or items of other types, each message goes through
        :meth:`produce` instead. An error (a value that is not bytes, the queue full with
        ``block_on_queue_full=False``, a message over ``max_request_size`` without
        ``delivery_reports``, which reports it instead) is raised with ``produced``: how
        many messages were queued before it. Earlier failed deliveries are
        raised as :meth:`produce` raises them: once this call's messages are queued (what
        fails while the call runs waits for the next call).
        """
        if not self._running:
            raise ProducerStoppedException("the producer is stopped; call start() or use a new one")
        if not isinstance(messages, list):
            if isinstance(messages, (str, bytes)):
                raise TypeError("produce_batch takes a list of values or (value, partition_key) pairs, not %r"
                                % (messages,))
            try:
                items = iter(messages)
            except TypeError:
                raise TypeError("produce_batch takes a list of values or (value, partition_key) pairs, not %s"
                                % type(messages).__name__) from None
            messages = list(items)  # what the iterable itself raises, it raises as it is: nothing is queued yet
        if not messages:
            return 0
        mark = self._check()
        if self._general_only or self._partitioner is not random_partitioner:
            return self._produce_each(messages, mark)
        core, handle = self._core, self._handle
        assert core is not None and handle is not None  # start() made them
        me = self._enter()  # stop() flushes what this call queues
        try:
            total = self._produce_batch(core, handle, messages, mark)
        finally:
            self._leave(me)
        self._raise_failed(total, mark)
        return total

    def _produce_batch(self, core, handle, messages, mark):
        self._hand_off(producing=True)
        total = 0
        while True:
            result = core.produce_batch(messages, POLL_MS)
            if result is None:
                return self._produce_each(messages, mark)
            sent, err = result
            total += sent
            if err == QUEUE_FULL:  # waited POLL_MS for room: serve reports and go on
                messages = messages[sent:]
                try:
                    self._check_waiting()
                    handle.dispatch_reports()
                    if self._outage.since is not None:
                        self._outage.check(handle)
                except Exception as lost:  # NoBrokersAvailableError: what went before it, too
                    setattr(lost, "produced", total)
                    raise
                continue
            if err:
                try:
                    handle.raise_produce_error(err, self._topic_name, -1)
                except MessageSizeTooLarge:
                    item = messages[sent]
                    exc = self._too_large(*(item if isinstance(item, tuple) else (item, None)))
                    exc.produced = total
                    raise exc from None
                except KafkaException as exc:
                    exc.produced = total
                    raise
            return total

    def produce_arrow(self, batch: Any) -> int:
        """Send the rows of a ``pyarrow.RecordBatch`` (or ``Table``); returns how many were queued.

        :param batch: columns ``value`` (binary or string, null: no value), and optionally
            ``key`` (binary or string) and ``partition`` (an int, null: the partitioner's
            choice); no other column
        :returns: the number of rows queued: all of them, else an exception is raised

        The C core reads the columns' Arrow buffers and hands the rows to librdkafka in
        ``rd_kafka_produce_batch`` calls (``RD_KAFKA_MSG_F_PARTITION``, each row its
        partition) with no Python object per row; their delivery reports are counted and a
        failed one surfaces as ``produce_batch()``'s do. A row without a partition goes
        where the partitioner puts it: the default spreads the rows in runs as
        ``produce_batch()`` does, ``Murmur2Partitioner`` hashes the key in C (rows without a
        key are spread). With another partitioner, ``sync``, ``delivery_reports`` or
        ``block_on_queue_full=False``, each row goes through the general path instead (with
        ``delivery_reports``, a row over ``max_request_size`` counts as queued and its
        delivery report holds the refusal, as :meth:`produce` does). An error is raised
        with ``produced`` as in :meth:`produce_batch`; a ``partition`` the topic lacks is a
        ``ValueError``.
        """
        if not self._running:
            raise ProducerStoppedException("the producer is stopped; call start() or use a new one")
        if self._serializer is not None:
            raise ConfigurationError("produce_arrow sends the columns' bytes and this producer has a serializer: "
                                     "use produce(), or a producer without one")
        total = 0
        marks: list[int] = []  # the call's one mark, whatever number of record batches
        for part in arrow.record_batches(batch):
            try:
                columns = arrow.write_columns(part)
                total += self._produce_columns(part, columns, marks)
            except Exception as exc:  # its ``produced`` counts the rows of the batches before too
                setattr(exc, "produced", total + getattr(exc, "produced", 0))
                raise
        return total

    def _produce_columns(self, batch, columns, marks):
        """One record batch of produce_arrow(); ``marks``: the call's ``_failures`` mark,
        taken once the first batch's check has handed out the reports come before the call."""
        rows = columns[0]
        if not rows:
            return 0
        mark = self._check()
        if not marks:
            marks.append(mark)
        mark = marks[0]
        core, handle = self._core, self._handle
        assert core is not None and handle is not None  # start() made them
        if self._general_only or self._partitioner not in (random_partitioner, murmur2_partitioner) and \
                not isinstance(self._partitioner, Murmur2Partitioner):
            with self._call_mark(mark):
                return self._produce_rows(batch)
        columns = (rows, self._partitioner is not random_partitioner) + columns[1:]
        me = self._enter()  # stop() flushes what this call queues
        try:
            self._produce_core_rows(core, handle, batch, columns, rows)
        finally:
            self._leave(me)
        self._raise_failed(rows, mark)
        return rows

    def _produce_core_rows(self, core, handle, batch, columns, rows):
        self._hand_off(producing=True)  # the queued ones first
        start, refreshed = 0, False
        while True:
            result = core.produce_arrow(columns, start, POLL_MS)
            if result is None:
                raise ValueError("topic %s has no partitions to send the rows to" % self._topic_name)
            start, err = result
            if err == UNKNOWN_PARTITION and not refreshed:  # added since the last refresh?
                refreshed = True
                if self._refresh_topic(handle):
                    continue
            if err == QUEUE_FULL:  # waited POLL_MS for room: serve reports and go on
                try:
                    self._check_waiting()
                    handle.dispatch_reports()
                    if self._outage.since is not None:
                        self._outage.check(handle)
                except Exception as lost:  # NoBrokersAvailableError: the rows queued before it, too
                    setattr(lost, "produced", start)
                    raise
                continue
            if err:
                self._raise_row_error(batch, start, err)
            return rows

    def _raise_row_error(self, batch, row, err):
        value = batch.column("value")[row].as_py()
        key = batch.column("key")[row].as_py() if "key" in batch.schema.names else None
        if err == UNKNOWN_PARTITION:
            exc = ValueError("column 'partition' holds %s, but the topic has partitions %s (row %d, "
                                        "topic %s)" % (batch.column("partition")[row].as_py(),
                                                       sorted(self._topic.partitions), row, self._topic_name))
        else:
            try:
                self._handle.raise_produce_error(err, self._topic_name, -1)
            except MessageSizeTooLarge:
                exc = self._too_large(value if isinstance(value, bytes) or value is None else value.encode(),
                                      key if isinstance(key, bytes) or key is None else key.encode())
            except KafkaException as caught:
                exc = caught
        exc.produced = row
        raise exc

    def _produce_rows(self, batch):
        """produce_arrow() row by row through the general path."""
        names = batch.schema.names
        n = batch.num_rows
        values = [_encoded(v) for v in batch.column("value").to_pylist()]
        keys = [_encoded(k) for k in batch.column("key").to_pylist()] if "key" in names else [None] * n
        parts = batch.column("partition").to_pylist() if "partition" in names else [None] * n
        for row, (value, key, pid) in enumerate(zip(values, keys, parts)):
            partition = None
            if pid is not None:
                partition = self._topic.partitions.get(pid)
                if partition is None and self._handle is not None and \
                        self._refresh_topic(self._handle):  # added since the last refresh?
                    partition = self._topic.partitions.get(pid)
                if partition is None:
                    self._raise_row_error(batch, row, UNKNOWN_PARTITION)
            try:
                self._produce_general(value, key, None, None, partition)
            except Exception as exc:  # failed deliveries come after the row is queued
                exc.produced = row + getattr(exc, "produced", 0)
                raise
        return n

    @contextlib.contextmanager
    def _call_mark(self, mark: int) -> Iterator[None]:
        """Make ``mark`` (a ``_failures`` mark taken as a produce_batch() or produce_arrow()
        call began) the one its messages sent one at a time through produce() raise up to:
        the deliveries of its earlier messages that fail while it runs wait for the next
        call, as they do when the core takes the whole call. A context manager; an outer
        call's mark (the call's own partitioner or serializer producing) stands."""
        outer = getattr(self._local, "call_mark", None)
        self._local.call_mark = mark if outer is None else outer
        try:
            yield
        finally:
            self._local.call_mark = outer

    def _produce_each(self, messages, mark):
        with self._call_mark(mark):
            for count, item in enumerate(messages):
                try:
                    if isinstance(item, tuple):
                        if len(item) != 2:
                            raise TypeError("produce_batch takes values or (value, partition_key) pairs, "
                                            "not a tuple of %d" % len(item))
                        self.produce(item[0], item[1])
                    else:
                        self.produce(item)
                except Exception as exc:  # produce() raises failed deliveries after queueing its message
                    exc.produced = count + getattr(exc, "produced", 0)
                    raise
            return len(messages)

    def _enqueue(self, msg, msg_id, headers):
        while True:
            try:
                self._handle.produce(self._topic_name, msg.partition_id, msg.value, msg.partition_key,
                                     msg.timestamp, headers, msg_id)
                return
            except MessageSizeTooLarge:
                raise self._too_large(msg.value, msg.partition_key) from None
            except ProducerQueueFullError as exc:
                if not self._block_on_queue_full:
                    raise errors_exception(QUEUE_FULL, str(exc), reason=(
                        "%d message(s) wait for delivery, max_queued_messages=%s; let some be delivered "
                        "(flush()) and produce it again, raise max_queued_messages, or wait for room with "
                        "block_on_queue_full=True" % (self._handle.outq_len(),
                                                      self._config.get("queue.buffering.max.messages")))) from None
                self._check_waiting()
                # Wait briefly for room: flush sends at once whatever linger_ms says, and
                # serves delivery reports; a longer wait would drain the whole queue.
                self._handle.flush(QUEUE_FULL_WAIT_MS)
                if self._outage.since is not None:
                    self._outage.check(self._handle)  # every broker unreachable for socket_timeout_ms

    def _check_waiting(self):
        """A call waiting for room in a full queue stops once stop() has begun: what it
        handed over before, stop() delivers or reports; what it would hand over after
        stop()'s last purge, librdkafka would drop unreported as the handle closes."""
        if not self._running:
            raise ProducerStoppedException("the producer was stopped while this call waited for room in its "
                                           "full queue (max_queued_messages); call start() or use a new one")

    def _wait_delivered(self, msg, done):
        handle = self._handle
        deadline_ms = self._pending_timeout_ms
        waited = 0
        while not done.event.is_set():
            if 0 <= deadline_ms and max(deadline_ms, SYNC_WAIT_MS) <= waited:  # a second at least, as pykafka
                self._give_up(done, ProduceTimeoutError(
                    "no delivery report for the message within pending_timeout_ms=%d; it "
                    "may still be delivered (a failure is raised by a later produce(), "
                    "flush() or stop())" % deadline_ms))
                break
            try:
                # What the poller thread got (a TLS failure, a refused login) is raised now,
                # not after pending_timeout_ms, as if this flush had served it.
                self._errors.check()
                handle.flush(POLL_MS)  # sends at once, whatever linger_ms says
            except BaseException as exc:
                self._give_up(done, exc)
                if not isinstance(exc, Exception):  # a KeyboardInterrupt: now, all the same
                    raise
                self._errors.crash(exc)  # the report came meanwhile: raised by the next call
                break
            waited += POLL_MS
        if done.error is not None:
            raise done.error

    @staticmethod
    def _give_up(done, exc):
        """Raise ``exc`` from a sync produce() whose report has not come: the report, when it
        comes, goes where an asynchronous one goes (a failure is raised by a later call).
        Returns if the report came meanwhile."""
        with done.lock:
            if not done.event.is_set():
                done.detached = True
                raise exc

    # -- delivery reports ----------------------------------------------------------------------

    def _on_deliveries(self, ids, errs, partitions, offsets, timestamps):
        """A batch of delivery reports (from ``Callbacks``): the core fills in the delivered
        Messages; what it returns (failures, or every report with delivery reports or sync)
        is told."""
        for msg, err in self._core.deliver(ids, errs, partitions, offsets, timestamps):
            exc = errors_exception(err) if err else None
            done = self._waiting.pop(msg, None) if self._waiting else None
            if done is not None:
                with done.lock:
                    if not done.detached:  # the sync produce() is still waiting for it
                        done.error = exc
                        done.event.set()
                        continue
            self._report(msg, exc)

    def _on_batch_failure(self, exc, partition, value, key):
        """A message of produce_batch() failed: report it like any other, in a Message made
        with its value, key and partition."""
        self._report(Message(value, key, partition, topic=self._topic_name,
                             partition=self._topic.partitions.get(partition),
                             compression_type=self._compression), exc)

    def _on_error(self, exc):
        """librdkafka's error callback: an outage sends produce() to the general path, which
        raises ``NoBrokersAvailableError`` once it has lasted ``socket_timeout_ms``."""
        try:
            self._outage.on_error(exc)
        finally:
            if self._outage.since is not None and self._core is not None:
                self._core.divert = True

    def _report(self, msg, exc):
        if self._aborting and exc is not None and exc.code in (PURGE_QUEUE, PURGE_INFLIGHT):
            if not self._delivery_reports:
                return  # purged by abort_transaction(): the program knows they were not written
            exc = errors_exception(exc.code, reason="the transaction was aborted before the message was "
                                   "delivered (%s)" % exc)
        if self._delivery_reports:
            msg.delivery_report_q.put((msg, exc))
        elif exc is not None:
            self._fail(msg, exc)

    def _fail(self, msg, exc):
        """Keep a failure nobody else was told about, for the next produce(), flush() or stop()."""
        self._failures.crash(exc, msg)
        core = self._core
        if core is not None:
            core.divert = True

    def _raise_failures(self):
        """Raise an error of the poller thread or a callback as it is, else the failed
        deliveries nobody was told about as one ``ProduceFailureError``."""
        self._errors.check()
        self._raise_failed(None)

    def _raise_failed(self, produced, mark=None):
        """The failed deliveries nobody was told about, as one ``ProduceFailureError``.
        ``produced``: how many messages the produce call raising it queued first (pykafka too
        raises after queueing), so that a program re-sending ``failed`` loses none; ``mark``:
        the ``_failures`` mark taken as that call began: what failed since (its own messages,
        perhaps) waits for the next call, so that none of them is among ``failed``."""
        for msg, err in self._core.refused():  # refused at hand-off: failed deliveries too
            self._report(msg, errors_exception(err))
        if self._failures:
            self._failures.check(functools.partial(_produce_failure, produced=produced), before=mark)

    def _report_queue(self):
        q = getattr(self._local, "queue", None)
        if q is None:
            q = self._local.queue = queue.Queue()
        return q

    def get_delivery_report(self, block: bool = True,
                            timeout: Optional[float] = None) -> tuple[common.Message, Optional[BaseException]]:
        """The next ``(Message, exception or None)`` for a message produced on this thread.

        Raises ``queue.Empty`` when none is ready (after ``timeout`` seconds if blocking), and
        while none is, the ``SslError`` or ``AuthenticationError`` that refused the producer's
        connections as soon as librdkafka reports it: no report comes before
        ``message.timeout.ms`` then.
        """
        if self._sync:
            raise KafkaException("a sync producer (sync=True) has no delivery reports to get: its produce() "
                                 "waits for each delivery and raises what failed")
        if not self._delivery_reports:
            raise KafkaException("Delivery-reporting is disabled: make the producer with "
                                 "get_producer(delivery_reports=True)")
        if timeout is not None:  # queue.get's own errors name neither the argument nor the call
            check_number("get_delivery_report(timeout)", timeout, 0)
        q = self._report_queue()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if q.empty() and self._running and self._handle is not None:
                self._handle.dispatch_reports()
            failure = self._errors.pop((SslError, AuthenticationError)) if q.empty() else None
            if failure is not None:
                raise failure
            if not block:
                return q.get(False)
            left = POLL_MS / 1000.0 if deadline is None else min(POLL_MS / 1000.0, deadline - time.monotonic())
            try:
                return q.get(True, max(0.0, left))
            except queue.Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    def flush(self, timeout: Optional[float] = None) -> int:
        """Wait until every queued message is delivered or reported (``rd_kafka_flush``);
        ``NoBrokersAvailableError`` once no broker has been reachable for ``socket_timeout_ms``.

        :param timeout: seconds (None: for ever)
        :returns: the number of messages still undelivered
        """
        if not self._running:
            raise ProducerStoppedException("the producer is stopped")
        handle = self._handle
        assert handle is not None  # start() made it
        timeout_ms = -1 if timeout is None else _seconds_ms("flush", timeout)
        waited = self._hand_off(timeout_ms, producing=True)  # not for ever on an outage either
        # In slices: what the poller thread got meanwhile (a TLS failure, a refused login)
        # is raised as soon as it is kept, not when a later one reaches this flush.
        while True:
            self._errors.check()
            if self._outage.since is not None:
                self._outage.check(handle)  # every broker unreachable for socket_timeout_ms: not a hang
            step = POLL_MS if timeout_ms < 0 else min(POLL_MS, max(0, timeout_ms - waited))
            if handle.flush(step) or (0 <= timeout_ms <= waited + step):
                break
            waited += step
        self._raise_failures()
        return handle.outq_len()

    # -- pykafka's private names, for programs that use them -----------------------------------

    def _wait_all(self):
        """pykafka's ``_wait_all()`` (a compatibility shim): wait until every message produced
        is delivered or reported, at most ``pending_timeout_ms`` (-1: for ever), then raise
        what failed (``ProduceFailureError``) as pykafka re-raised its workers' exceptions. It
        sends what lingers at once (``rd_kafka_flush``); a stopped producer has nothing left."""
        if not self._running:
            return
        timeout_ms = self._pending_timeout_ms
        self.flush(None if timeout_ms < 0 else timeout_ms / 1000.0)

    @property
    def _owned_brokers(self):
        """pykafka's ``{broker id: OwnedBroker}`` of the brokers leading this topic's partitions
        (a compatibility shim; see :class:`OwnedBroker`)."""
        brokers = {p.leader.id: p.leader for p in self._topic.partitions.values() if p.leader is not None}
        return {broker_id: OwnedBroker(self, broker) for broker_id, broker in sorted(brokers.items())}

    def stats(self) -> Optional[dict[str, Any]]:
        """The last statistics snapshot librdkafka sent (a dict, parsed from its JSON), or None
        before the first or without ``statistics_interval_ms``."""
        return self._handle.stats if self._handle is not None else None

    # -- transactions --------------------------------------------------------------------------

    def _transactional(self, what):
        """The handle of a running transactional producer, else the error saying why not."""
        if self._transactional_id is None:
            raise TransactionStateError("%s needs a transactional producer: get_producer(transactional_id=...)"
                                        % what)
        if not self._running:
            raise ProducerStoppedException("the producer is stopped")
        fatal = self._txn_fatal
        if fatal is not None:  # librdkafka may still take an abort, which cannot end well: refused
            raise errors_exception(fatal.code, what, fatal=True, reason="the producer can do nothing more after "
                                   "its fatal error (%s); stop() it: a new producer with the same transactional_id "
                                   "aborts what this one left open" % fatal)
        return self._handle

    def _txn(self, call, *args):
        """A call of :mod:`pyrdk.rd.transaction`; a fatal error is remembered: raised here,
        it is not raised again by ``stop()``. A commit or abort that raises a ``retriable``
        error (a timeout) goes on in the background: it is remembered as unfinished."""
        name = call.__name__ if call in (transaction.commit_transaction, transaction.abort_transaction) else None
        try:
            call(*args)
        except KafkaException as exc:
            if exc.fatal:
                self._txn_fatal = exc
            if name is not None and self._unfinished in (None, name):  # not refused for the other one
                self._unfinished = name if exc.retriable and not exc.fatal and not exc.txn_requires_abort else None
            raise
        except BaseException:  # Ctrl-C between its slices: it goes on in the background
            if name is not None and self._unfinished in (None, name):
                self._unfinished = name
            raise
        if name is not None:
            self._unfinished = None

    def _unfinished_error(self, what):
        """The ``TransactionStateError`` of the call ``what`` while the last commit or abort,
        which timed out, goes on in librdkafka's background: it takes nothing else until that
        call is made again."""
        if self._unfinished == "commit_transaction":
            return TransactionStateError("%s: the last commit_transaction() timed out and goes on in the background, "
                                         "so it may yet commit; call commit_transaction() again to finish it and "
                                         "learn whether it committed" % what)
        return TransactionStateError("%s: the last abort_transaction() timed out and goes on in the background; call "
                                     "abort_transaction() again (or begin_transaction(), which finishes it) before a "
                                     "new transaction" % what)

    @property
    def commit_in_doubt(self) -> bool:
        """Whether the last :meth:`commit_transaction` timed out (a ``retriable`` error) and
        goes on in librdkafka's background: the transaction may yet commit, and no other
        transactional call is taken until :meth:`commit_transaction` is called again to
        finish it."""
        return self._unfinished == "commit_transaction"

    def _timeout_ms(self, timeout):
        return self._transaction_timeout_ms if timeout is None else _seconds_ms("the transaction call", timeout)

    def init_transactions(self, timeout: Optional[float] = None) -> None:
        """Register the ``transactional_id`` with its coordinator
        (``rd_kafka_init_transactions``), fencing an older producer of the same id and
        completing (aborting) the transaction it left open. Called by the first
        :meth:`begin_transaction` if the program does not call it.

        :param timeout: seconds (default: ``transaction_timeout_ms``)
        """
        handle = self._transactional("init_transactions()")
        if not self._txn_ready:
            self._txn(transaction.init_transactions, handle, self._timeout_ms(timeout))
            self._txn_ready = True

    def begin_transaction(self) -> None:
        """Begin a transaction (``rd_kafka_begin_transaction``): what is produced from now on
        is written by :meth:`commit_transaction`, or not at all."""
        handle = self._transactional("begin_transaction()")
        self.init_transactions()
        if self._unfinished == "abort_transaction":  # the program chose to abort: finish that first
            self._abort(handle, self._transaction_timeout_ms)
        elif self._unfinished == "commit_transaction":
            raise self._unfinished_error("begin_transaction()")
        self._txn(transaction.begin_transaction, handle)
        self._in_transaction = True

    def send_offsets_to_transaction(self, consumer_or_offsets: Any,
                                    group_metadata: Optional[transaction.GroupMetadata] = None,
                                    timeout: Optional[float] = None) -> None:
        """Commit consumer offsets as part of the transaction
        (``rd_kafka_send_offsets_to_transaction``): they count only if it commits.

        :param consumer_or_offsets: a consumer (its ``held_offsets`` + 1, the next offsets
            to read, for its group: what ``commit_offsets()`` would commit), or
            ``(partition, offset)`` pairs of ``Partition`` objects (or ``(topic,
            partition_id, offset)`` triples), the offset being the next one to read
        :param group_metadata: with offsets: the consumer's ``group_metadata()``
        :param timeout: seconds (default: ``transaction_timeout_ms``)
        """
        handle = self._transactional("send_offsets_to_transaction()")
        if group_metadata is None:
            consumer = consumer_or_offsets
            if not callable(getattr(consumer, "group_metadata", None)):
                raise TypeError("send_offsets_to_transaction takes a consumer, or offsets and the "
                                "consumer's group_metadata()")
            topic = consumer.topic.name.decode()
            offsets = [(topic, pid, held + 1) for pid, held in sorted((consumer.held_offsets or {}).items())
                       if held >= 0]
            group_metadata = consumer.group_metadata()
        else:
            offsets = [_topic_offset(item) for item in consumer_or_offsets]
        if not isinstance(group_metadata, transaction.GroupMetadata):
            raise TypeError("group_metadata must be what a consumer's group_metadata() returns, not %r"
                            % (group_metadata,))
        if offsets:
            self._txn(transaction.send_offsets, handle, offsets, group_metadata, self._timeout_ms(timeout))

    def commit_transaction(self, timeout: Optional[float] = None) -> None:
        """Commit the transaction (``rd_kafka_commit_transaction``): deliver what it
        produced, then make it and its offsets visible together.

        A ``KafkaException`` with ``retriable`` (a timeout: the commit goes on in the
        background, :attr:`commit_in_doubt`) must be retried: nothing else is taken until
        then; one with ``txn_requires_abort`` needs :meth:`abort_transaction`; a ``fatal``
        one leaves the producer unusable.

        :param timeout: seconds (default: ``transaction_timeout_ms``)
        """
        handle = self._transactional("commit_transaction()")
        if self._unfinished == "abort_transaction":
            raise self._unfinished_error("commit_transaction()")
        self._hand_off()  # nothing is queued in the core of a transactional producer; never leave any
        self._txn(transaction.commit_transaction, handle, self._timeout_ms(timeout))
        self._in_transaction = False
        handle.dispatch_reports()
        self._raise_failures()

    def abort_transaction(self, timeout: Optional[float] = None) -> None:
        """Abort the transaction (``rd_kafka_abort_transaction``): what it produced is
        purged or marked aborted, and its offsets are not committed. The purged messages are
        not reported as failed deliveries (with ``delivery_reports=True`` they are, with
        ``_PURGE_QUEUE`` / ``_PURGE_INFLIGHT``). An abort that times out goes on in the
        background; the next :meth:`begin_transaction` finishes it.

        After a commit that timed out (:attr:`commit_in_doubt`), ``TransactionStateError``:
        librdkafka takes nothing but that commit again.

        :param timeout: seconds (default: ``transaction_timeout_ms``)
        """
        handle = self._transactional("abort_transaction()")
        if self._unfinished == "commit_transaction":
            raise self._unfinished_error("abort_transaction()")
        self._abort(handle, self._timeout_ms(timeout))

    def _abort(self, handle, timeout_ms):
        self._aborting = True
        try:
            self._hand_off(stopping=not self._running)
            self._txn(transaction.abort_transaction, handle, timeout_ms)
            self._in_transaction = False
            handle.dispatch_reports()  # waits for a dispatch in another thread, too
            self._failures.take()  # failed deliveries of the aborted transaction: moot now
        finally:
            self._aborting = False

    @contextlib.contextmanager
    def transaction(self, timeout: Optional[float] = None) -> Iterator[Producer]:
        """``with producer.transaction():`` begins a transaction, commits it when the block
        ends, and aborts it when the block raises (the exception then goes on). A commit
        that fails with ``txn_requires_abort`` is aborted and raised; a ``retriable`` one is
        retried within ``timeout``, then raised with the commit still under way
        (:attr:`commit_in_doubt`: call :meth:`commit_transaction` again to finish it).

        :param timeout: seconds for the commit or abort (default: ``transaction_timeout_ms``)
        """
        self.begin_transaction()
        try:
            yield self
        except BaseException as exc:
            handle = self._handle
            if isinstance(exc, KafkaException) and exc.fatal and self._txn_fatal is None \
                    and handle is not None and handle.fatal_error() is not None:  # this producer's, not a nested one's
                self._txn_fatal = exc  # fenced: an abort could not end well
            if self._in_transaction and self._txn_fatal is None:
                self._abort_quietly(timeout)
            raise
        self._commit_or_abort(timeout)

    def _commit_or_abort(self, timeout):
        """Commit; retry what librdkafka says may be retried (within ``timeout``); abort and
        raise what needs it."""
        deadline = time.monotonic() + self._timeout_ms(timeout) / 1000.0
        while True:
            try:
                self.commit_transaction(max(0.0, deadline - time.monotonic()))
                return
            except KafkaException as exc:
                if exc.retriable and not exc.txn_requires_abort and not exc.fatal \
                        and time.monotonic() < deadline:
                    log.warning("commit_transaction: %s; retrying", exc)
                    continue
                if exc.txn_requires_abort and not exc.fatal:
                    self._abort_quietly(timeout)
                raise

    def _abort_quietly(self, timeout):
        """Abort after an error, logging (not raising) a failure of the abort itself, so the
        first error is the one raised."""
        try:
            self.abort_transaction(timeout)
        except KafkaException as exc:
            log.error("abort_transaction after an error failed: %s", exc)

    def _abort_at_stop(self):
        if self._unfinished == "commit_transaction":  # librdkafka would refuse the abort: nothing to try
            log.warning("stop(): the last commit_transaction() timed out and was not called again, so the "
                        "transaction may have committed or not; read its output with "
                        "isolation_level=read_committed to know")
            self._in_transaction = False
            return
        try:
            self._abort(self._handle, self._pending_timeout_ms)
        except KafkaException as exc:
            log.warning("the open transaction could not be aborted at stop() (%s); the coordinator "
                        "aborts it after transaction_timeout_ms", exc)
            self._in_transaction = False

    def __len__(self):
        """Messages produced and not yet delivered or reported. The delivery reports
        librdkafka has given are handed out first (in this thread, or by the poller thread's
        dispatch under way, which this waits for): a message it no longer counts has its
        report told, and its failure kept for the next call (a report leaves the count as it
        is recorded or taken from the core, before it is told), so that a program that waits
        for 0 and then produces is told of every failure."""
        core, handle = self._core, self._handle
        if core is None:
            return 0
        if handle is not None and handle.owned:
            handle.dispatch_reports(reraise=False)
        outstanding = handle.batch_outstanding(core.batch_sent) if handle is not None else 0
        return len(core) + outstanding


class OwnedBroker:
    """pykafka's ``OwnedBroker``, a compatibility shim for programs that import it or read
    ``producer._owned_brokers``: a broker this producer sends to. librdkafka queues messages
    per partition, not per broker, so ``messages_pending`` counts the producer's undelivered
    messages as a whole (``len(producer)``); pykafka's queue and flush machinery is not there.
    """

    def __init__(self, producer, broker, auto_start=True):
        self.producer = producer
        self.broker = broker

    @property
    def running(self):
        return self.producer._running

    @property
    def messages_pending(self):
        return len(self.producer)

    def message_is_pending(self):
        """Whether the producer has messages not yet delivered or reported."""
        return self.messages_pending > 0

    def __repr__(self):
        return "<pyrdk.producer.OwnedBroker (broker=%d)>" % self.broker.id


class _Delivery:
    """What a sync ``produce()`` waits on: set by the message's delivery report."""
    __slots__ = ("event", "error", "lock", "detached")

    def __init__(self):
        self.event = threading.Event()
        self.error = None
        self.lock = threading.Lock()
        self.detached = False  # the waiter gave up (pending_timeout_ms)


class _Leftovers:
    """What a started producer's poller thread needs to stop it once the program has let
    it go without ``stop()``: its handle, its core, and the failures nobody was told about.
    It holds nothing of the producer itself."""

    def __init__(self, topic_name, failures, errors, pending_timeout_ms, transactional):
        self.topic_name = topic_name
        self.failures = failures
        self.errors = errors
        self.timeout_ms = pending_timeout_ms if pending_timeout_ms >= 0 else DROPPED_WAIT_MS
        self.transactional = transactional
        self.handle = None  # a Handle, set by start()
        self.core = None  # a ProducerCore, set by start()

    def deliveries(self, ids, errs, partitions, offsets, timestamps):
        """Delivery reports once the producer is gone: the failures are kept for the log."""
        for msg, err in self.core.deliver(ids, errs, partitions, offsets, timestamps):
            if err:
                self.failures.crash(errors_exception(err), msg)

    def batch_failure(self, exc, partition, value, key):
        self.failures.crash(exc, Message(value, key, partition, topic=self.topic_name))

    def general(self, *args):
        raise ProducerStoppedException("the producer is stopped")

    def stop(self):
        """Stop the dropped producer, in its poller thread, as ``stop()`` does: deliver what
        it left, waiting up to ``pending_timeout_ms`` (``DROPPED_WAIT_MS`` when that is -1),
        abort a transaction left open, and log what could not be delivered or failed
        before: nobody is left to raise it to."""
        handle, core = self.handle, self.core
        lost = []
        try:
            core.close()
            if self.transactional:
                lost = self.failures.take()
                try:
                    transaction.abort_transaction(handle, self.timeout_ms)
                    log.warning("a transactional producer of topic %s was dropped without stop(): its open "
                                "transaction is aborted", self.topic_name)
                    handle.flush(STOP_PURGE_WAIT_MS)  # the purged messages' reports
                    self.failures.take()  # the aborted transaction's messages: never to be written
                except KafkaException:
                    pass  # none open
            _deliver_or_purge(handle, core, self.timeout_ms)
        except Exception as exc:
            self.errors.crash(exc)
        finally:
            handle.close()
            lost += [(msg, errors_exception(err)) for msg, err in core.refused()]
            lost += [(msg, ProduceFailureError(NO_REPORT_AT_STOP)) for msg in core.take_all()]
        lost = self.failures.take() + lost
        for _, error in self.errors.take():
            log.error("a producer of topic %s, dropped without stop(): %s", self.topic_name, error)
        if lost:
            log.error("a producer of topic %s was dropped without stop(): %d message(s) could not be delivered "
                      "(first error: %s); stop() a producer to have them raised instead", self.topic_name,
                      len(lost), lost[0][1])
            for msg, error in lost:
                log.debug("not delivered: %r: %s", msg, error)


# The fate of a message no report came for is unknown: it may be on the broker (at least once).
NO_REPORT_AT_STOP = "no delivery report for message at stop(), within pending_timeout_ms: it may have been delivered"


def _deliver_or_purge(handle, core, timeout_ms, flush=None):
    """A stopping producer's last deliveries (``stop()``'s, or a dropped producer's): hand
    the closed core's queues to librdkafka, waiting for room in a full queue, then wait for
    the delivery reports (``flush(ms)``: ``handle.flush``, ``rd_kafka_flush``, unless given),
    all within ``timeout_ms`` (-1: for ever); what is still undelivered then is purged
    (``rd_kafka_purge``) and its reports served."""
    flush = flush or handle.flush
    waited = 0
    while core.hand_off(True) and (timeout_ms < 0 or waited < timeout_ms):
        flush(QUEUE_FULL_WAIT_MS)
        waited += QUEUE_FULL_WAIT_MS
    if not flush(timeout_ms if timeout_ms < 0 else max(0, timeout_ms - waited)):
        # Fail what is left, queued (_PURGE_QUEUE) or in flight (_PURGE_INFLIGHT: it may
        # have reached the broker). Purging only the queue and waiting for the in-flight
        # requests is not bounded: a timed-out request is retried, and its messages wait in
        # the queue again for message.timeout.ms.
        handle.purge(in_flight=True)
        # What the core still holds, refused by a full queue, was never sent: handed over now
        # that there is room, and purged from the queue, its report says so (_PURGE_QUEUE).
        left = core.queued
        while left:
            flush(STOP_PURGE_WAIT_MS)  # serve the purged messages' reports: the room they held
            left, before = core.hand_off(True), left
            handle.purge()
            if left >= before:
                break
        flush(STOP_PURGE_WAIT_MS)  # serve the purged messages' reports


def _poll_loop(ref, left, tick_ms, interval_s):
    """A producer's poller thread: serve librdkafka's events and delivery reports, hand the
    core's queues over at least every ``linger_ms`` (``POLL_MS`` at most), and re-read the
    topic's partitions every ``interval_s`` (``topic.metadata.refresh.interval.ms``). It holds
    the producer weakly (``ref``), and stops one the program let go of without ``stop()``."""
    handle, core = left.handle, left.core
    next_metadata = time.monotonic() + interval_s
    while not handle.closing:
        producer = None
        try:
            handle.poll(tick_ms)
            if core.queued:
                core.hand_off()  # what a full queue refuses waits for the next tick
            producer = ref()
            if producer is None:
                left.stop()
                return
            if interval_s > 0 and time.monotonic() >= next_metadata:
                next_metadata = time.monotonic() + (
                    interval_s if producer._refresh_topic(handle) else min(interval_s, METADATA_RETRY_S))
            else:
                producer._refresh_partitions()
        except ProducerStoppedException:
            return
        except BaseException as exc:  # raised by the next produce()/flush()/stop()
            left.errors.crash(exc)
        if left.errors or left.failures:
            core.divert = True


def _encoded(data):
    """A string column's value as UTF-8 bytes."""
    return data.encode("utf-8") if isinstance(data, str) else data


def _produce_failure(failed, produced=None):
    """One ``ProduceFailureError`` for ``[(Message or None, exception)]``, from the first;
    ``produced``: the messages the raising call queued before (None: not a produce call)."""
    first = failed[0][1]
    text = "%d message(s) could not be delivered; first error: %s" % (len(failed), first)
    if produced is not None:
        text += " (raised once this call had queued its %d message(s), which are not among them)" % produced
    exc = ProduceFailureError(text)
    exc.failed = failed
    if produced is not None:
        exc.produced = produced
    exc.__cause__ = first
    exc.__suppress_context__ = True
    return exc


def _topic_offset(item):
    """``(topic, partition_id, offset)`` from ``(Partition, offset)`` or the triple itself."""
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], Partition):
        return item[0].topic.name.decode(), item[0].id, _check_next_offset(item[1])
    if isinstance(item, tuple) and len(item) == 3 and isinstance(item[0], (str, bytes)):
        topic = item[0].decode() if isinstance(item[0], bytes) else item[0]
        if isinstance(item[1], bool) or not isinstance(item[1], int):
            raise TypeError("partition ids are ints, not %r" % (item[1],))
        return topic, item[1], _check_next_offset(item[2])
    raise TypeError("offsets are (Partition, offset) pairs or (topic, partition_id, offset) triples, "
                    "not %r" % (item,))


def _check_next_offset(offset):
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ValueError("invalid offset %r: use an int >= 0 (the next offset to read)" % (offset,))
    return offset


def _check_transaction_timeout(config, given):
    """Refuse, in the names of the arguments that set them, what ``rd_kafka_new`` refuses of a
    transactional producer in its properties' names: ``socket.timeout.ms`` over
    ``transaction.timeout.ms`` + 100, and (``message.timeout.ms`` being
    ``transaction.timeout.ms`` then) a ``linger.ms`` not under ``transaction.timeout.ms``."""
    def read(key, name, default):
        value = config.get(key, default)
        named = "rdkafka_config[%r]=%s" % (key, value) if key in given else "%s=%s" % (name, value)
        try:
            return float(conf.to_str(key, value)), named
        except ValueError:
            return None, None  # librdkafka names it
    txn, txn_name = read("transaction.timeout.ms", "transaction_timeout_ms", 60000)
    socket, socket_name = read("socket.timeout.ms", "the KafkaClient's socket_timeout_ms", 60000)
    linger_key = "queue.buffering.max.ms" if "queue.buffering.max.ms" in given else "linger.ms"
    linger, linger_name = read(linger_key, "linger_ms", 5)
    if txn is None:
        return
    if socket is not None and socket > txn + 100:
        raise ConfigurationError("%s is shorter than %s: librdkafka needs a transactional producer's "
                                 "transaction timeout to be at least the socket timeout - 100 ms"
                                 % (txn_name, socket_name))
    if linger is not None and linger >= txn and "message.timeout.ms" not in given:
        raise ConfigurationError("%s is not longer than %s: librdkafka needs a transactional producer's "
                                 "transaction timeout to be longer than its linger time" % (txn_name, linger_name))


def _idempotent(config):
    value = config.get("enable.idempotence")
    return value is True or (isinstance(value, (str, bytes)) and value.lower() in ("true", b"true"))


def _seconds_ms(method, timeout):
    """``timeout`` (seconds, an int or a float) as the ms librdkafka takes, else TypeError
    naming ``method``'s argument."""
    check_number("%s(timeout)" % method, timeout, 0)
    if timeout * 1000 > INT32_MAX:
        raise ValueError("%s(timeout=%r): at most %d seconds, or None to wait for ever"
                         % (method, timeout, INT32_MAX // 1000))
    return int(timeout * 1000)


def _check_timestamp(value):
    """A produce() timestamp in ms: an int, or a float (``time.time() * 1000``) cut to an int
    as pykafka wrote it; else TypeError."""
    value = integer(value)
    if isinstance(value, float) and math.isfinite(value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INT64_MAX:
        raise TypeError("timestamp must be ms since the epoch (a number >= 0) or a datetime, not %r" % (value,))
    if value == 0:
        raise ValueError(ZERO_TIMESTAMP % "timestamp")
    return value


@atexit.register
def _stop_running_producers():
    """At exit, stop producers the program never stopped: their queued messages are
    delivered (within ``pending_timeout_ms``; ``DROPPED_WAIT_MS`` when that is -1, as for
    a dropped producer: the exit is bounded) and failures are logged, not lost unseen.
    Registered after rd.handle's hook, so it runs before the handles are closed."""
    for producer in list(_unstopped):
        if not producer._handle.owned:
            continue  # a forked child's copy: the parent delivers its messages
        if producer._pending_timeout_ms < 0:
            producer._pending_timeout_ms = DROPPED_WAIT_MS
        try:
            producer.stop()
        except Exception:
            log.exception("stopping %r at exit", producer)
    for poller in list(_pollers):  # stopping a dropped producer: its messages are delivered too
        if poller is not threading.current_thread():
            poller.join()
