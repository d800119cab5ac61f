"""Producer: pykafka's asynchronous producer on librdkafka (``rd_kafka_produce_batch``,
``rd_kafka_producev``).

``produce()`` picks a partition with the partitioner, queues the message for that
partition (handed to librdkafka 64 at a time, or by the poller thread) and returns; a
message with a timestamp or headers, or one that must be refused or waited on at once,
goes to librdkafka straight away. Delivery reports are recorded in C (``pyrdk_dr_msg_cb``)
and dispatched in Python by ``produce()``, ``flush()``, ``get_delivery_report()`` and a
small poller thread; a failed delivery reaches the user through ``get_delivery_report()`` when
``delivery_reports=True``, from ``produce()`` itself when ``sync=True``, and otherwise as
``ProduceFailureError`` on the next ``produce()``, ``flush()`` or ``stop()``.
"""
import atexit
import datetime
import itertools
import logging
import queue
import random
import threading
import weakref

from pyrdk.common import CompressionType, Message, check_int
from pyrdk.exceptions import (KafkaException, KafkaTimeoutError, MessageSizeTooLarge,
                              ProduceFailureError, ProducerQueueFullError, ProducerStoppedException)
from pyrdk.partition import to_timestamp_ms
from pyrdk.partitioners import random_partitioner
from pyrdk.rd.callbacks import Callbacks
from pyrdk.rd.errors import exception as errors_exception
from pyrdk.rd.handle import Handle
from pyrdk.rd.message import buffered_produce, pack_values, pending_table, send_message

log = logging.getLogger(__name__)

_unstopped = weakref.WeakSet()  # started and not stopped: stopped at exit, so nothing queued is lost

POLL_MS = 100
QUEUE_FULL_WAIT_MS = 10
STOP_PURGE_WAIT_MS = 1000
DISPATCH_EVERY = 4096  # a power of two: produce() tests it with a mask
BUFFER_CAP = 64  # produce()'s messages handed to librdkafka at once, per partition
BUFFER_MIN_LINGER_MS = 5  # below it, produce() hands each message over at once
BUFFERED_IDS = 1 << 48  # the first id of a buffered message (the others count from 1)
RECORD_OVERHEAD = 36  # librdkafka's RD_KAFKAP_MESSAGE_V2_MAX_OVERHEAD, counted against max_request_size


def _check_bytes(name, value):
    if value is not None and not isinstance(value, bytes):
        raise TypeError("Producer.produce accepts bytes as %s (or a serializer), but got %s"
                        % (name, type(value).__name__))


class Producer:
    """Produce messages to one topic (pykafka 2.8's signature and defaults).

    :param partitioner: ``(partitions, key) -> Partition``; see :mod:`pyrdk.partitioners`
    :param compression: a :class:`CompressionType` (``compression.codec``)
    :param max_retries: ``message.send.max.retries``
    :param retry_backoff_ms: ``retry.backoff.ms``
    :param required_acks: ``request.required.acks`` (0, 1, -1 = all)
    :param ack_timeout_ms: ``request.timeout.ms``
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
    :param pending_timeout_ms: how long ``stop()`` (and a sync ``produce()``) waits for
        deliveries; -1 waits for ever. What is still queued or in flight then is purged and
        reported as failed (an in-flight message may nonetheless have been written).
    :param auto_start: start in the constructor
    :param serializer: ``(value, partition_key) -> (bytes, bytes)``
    :param enable_idempotence: ``enable.idempotence``; it requires acks from all replicas,
        so with it the default ``required_acks=1`` becomes -1
    :param rdkafka_config: any librdkafka properties, applied last
    :param statistics_interval_ms: ``statistics.interval.ms`` (None: the client's); see :meth:`stats`
    :param stats_callback: called with each statistics snapshot, a dict (None: the client's)

    The defaults are pykafka's, and suit throughput: messages wait up to ``linger_ms``
    (``linger.ms=5000``) for a batch of ``min_queued_messages``, or of librdkafka's
    ``batch.size`` (1 MB), whichever fills first. A full queue of ``max_queued_messages``
    is waited on 10 ms at a time, sending at once. :meth:`produce` makes one ``Message`` per
    message and, as pykafka does, queues it for a moment before sending: each partition's
    messages go to librdkafka 64 at a time, and at least every ``linger_ms`` (100 ms at
    most) from the poller thread; then librdkafka lingers as usual. A ``Message`` its caller
    has let go of two calls later is freed then; should its message fail, the
    ``ProduceFailureError`` names a ``Message`` made anew with its value, key and partition.
    :meth:`produce_batch` makes no ``Message``.
    """

    def __init__(self, cluster, topic, partitioner=None, compression=CompressionType.NONE,
                 max_retries=3, retry_backoff_ms=100, required_acks=1, ack_timeout_ms=10 * 1000,
                 max_queued_messages=100000, min_queued_messages=70000, linger_ms=5 * 1000,
                 queue_empty_timeout_ms=0, block_on_queue_full=True, max_request_size=1000012,
                 sync=False, delivery_reports=False, pending_timeout_ms=5 * 1000, auto_start=True,
                 serializer=None, enable_idempotence=False, rdkafka_config=None, use_rdkafka=None,
                 statistics_interval_ms=None, stats_callback=None):
        self._cluster = cluster
        self._topic = topic
        self._topic_name = topic.name.decode()
        self._partitioner = partitioner or random_partitioner
        if not callable(self._partitioner):
            raise TypeError("partitioner must be callable (partitions, key) -> Partition")
        if serializer is not None and not callable(serializer):
            raise TypeError("serializer must be callable (value, partition_key) -> (value, key)")
        self._serializer = serializer
        self._compression = CompressionType(compression)
        self._block_on_queue_full = block_on_queue_full
        self._max_request_size = check_int("max_request_size", max_request_size, 1)
        self._sync = sync
        self._delivery_reports = delivery_reports and not sync
        self._pending_timeout_ms = check_int("pending_timeout_ms", pending_timeout_ms, -1)
        self._config = dict(cluster.rdkafka_config)
        self._config.update({
            "compression.codec": self._compression.codec,
            "message.send.max.retries": max_retries,
            "retry.backoff.ms": retry_backoff_ms,
            "request.required.acks": required_acks,
            "request.timeout.ms": ack_timeout_ms,
            "queue.buffering.max.messages": max_queued_messages,
            "batch.num.messages": min_queued_messages,
            "linger.ms": linger_ms,
            "message.max.bytes": max(max_request_size, 1000),
            "enable.idempotence": enable_idempotence,
        })
        self._stats_callback = cluster.statistics(self._config, statistics_interval_ms, stats_callback)
        self._config.update(rdkafka_config or {})
        if _idempotent(self._config) and required_acks == 1 and \
                not {"acks", "request.required.acks"} & set(rdkafka_config or {}):
            # Idempotence needs acks=all, and librdkafka refuses an explicit acks=1 with it:
            # pykafka's default required_acks=1 becomes -1 (the stronger guarantee).
            self._config["request.required.acks"] = -1
        self._partition_list = sorted(topic.partitions.values())
        # The default partitioner, pykafka's RandomPartitioner (round robin from a random
        # start), is done inline here, and in C by produce_batch().
        self._random = self._partitioner is random_partitioner
        self._counter = itertools.count(random.randrange(1 << 16))
        # produce() goes the short way unless a message needs more than a value and a key.
        self._general = sync or self._delivery_reports or serializer is not None
        self._handle = None
        self._sender = None
        self._buffer = None
        self._running = False
        self._pending = {}  # msg id -> Message, until its delivery report
        self._pending_table = None  # the same for produce()'s buffered way, ids from BUFFERED_IDS
        self._waiting = {}  # msg id -> _Delivery, for the messages of a sync produce()
        self._batch_sent = 0  # messages sent by produce_batch() (reported in C)
        self._failed = []
        self._ids = itertools.count(1)
        self._produced = 0
        self._local = threading.local()
        self._lock = threading.Lock()
        self._poller = None
        if auto_start:
            self.start()

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self):
        """Create the librdkafka producer (``rd_kafka_new``) and the poller thread."""
        with self._lock:
            if self._running:
                return
            self._outage = self._cluster.broker_outage()
            # With no report to hand out or wait for, the reports go to the Messages in C.
            to_messages = None if self._sync or self._delivery_reports else self._pending
            self._pending_table = pending_table(BUFFERED_IDS)
            self._handle = Handle("producer", self._config,
                                  Callbacks(on_deliveries=self._on_deliveries,
                                            pending_messages=to_messages,
                                            pending_table=self._pending_table,
                                            on_batch_failure=self._on_batch_failure,
                                            on_error=self._outage.on_error),
                                  closed_exc=ProducerStoppedException, stats_callback=self._stats_callback)
            self._sender = self._handle.sender(self._topic_name, self._max_request_size)
            self._buffer = self._new_buffer()
            if self._buffer is not None:
                self.produce = self._buffer
            self._batch_sent = 0
            self._running = True
            self._poller = threading.Thread(target=self._poll_loop, daemon=True,
                                            name="pyrdk-producer-poller")
            self._poller.start()
            _unstopped.add(self)

    def _new_buffer(self):
        """produce()'s buffered way (``pyrdk_messages.c``): each partition's messages go to
        librdkafka ``BUFFER_CAP`` at a time, in one ``rd_kafka_produce_batch`` call, and
        at least every ``linger_ms`` (up to ``POLL_MS``) from the poller thread; they wait
        for their reports in ``_pending_table``. Not for a subclass's own produce(), nor
        when each message must be refused or waited on at once (``block_on_queue_full=False``,
        ``sync``, delivery reports, a serializer, a shorter linger)."""
        if self._general or not self._block_on_queue_full or type(self).produce is not Producer.produce \
                or self._linger_ms() < BUFFER_MIN_LINGER_MS:
            return None
        return buffered_produce(self._sender, self._pending_table, self._failed, self._outage,
                                self._partition_list, None if self._random else self._partitioner,
                                self._topic_name, self._compression, Producer.produce.__get__(self),
                                self._housekeeping, self._hand_off, self._on_hand_off_failure,
                                random.randrange(1 << 16), BUFFER_CAP, DISPATCH_EVERY,
                                int(str(self._config["message.max.bytes"])))

    def _linger_ms(self):
        return float(str(self._config["linger.ms"]))  # as given: an int, a float or a str

    def _poll_loop(self):
        handle = self._handle
        buffer = self._buffer
        tick_ms = POLL_MS if buffer is None else max(1, min(POLL_MS, int(self._linger_ms())))
        while not handle.closing:
            try:
                handle.poll(tick_ms)
                if buffer is not None and buffer.buffered:
                    buffer.hand_off()  # what a full queue refuses waits for the next tick
            except ProducerStoppedException:
                return
            except BaseException as exc:  # surfaced on the next produce()/flush()/stop()
                self._failed.append((None, exc))

    def stop(self):
        """Deliver what is queued (waiting up to ``pending_timeout_ms``), report what could
        not be delivered, and close the producer. Raises ``ProduceFailureError`` for failed
        deliveries nobody else was told about."""
        with self._lock:
            if not self._running:
                return
            self._running = False
        handle = self._handle
        if self._buffer is not None:
            self._buffer.open = 0  # produce() now raises ProducerStoppedException
        try:
            timeout_ms = self._pending_timeout_ms
            waited = self._hand_off(timeout_ms, stopping=True)
            if not handle.flush(timeout_ms if timeout_ms < 0 else max(0, timeout_ms - waited)):
                # Fail what is left, queued (_PURGE_QUEUE) or in flight (_PURGE_INFLIGHT: it
                # may have reached the broker). Purging only the queue and waiting for the
                # in-flight requests is not bounded: a timed-out request is retried, and its
                # messages wait in the queue again for message.timeout.ms.
                handle.purge(in_flight=True)
                handle.flush(STOP_PURGE_WAIT_MS)  # serve the purged messages' reports
        finally:
            handle.close()
            self._poller.join()
            released = []
            if self._buffer is not None:
                released = self._buffer.clear()  # what could not be handed over is reported below
                self._buffer = None
                self.__dict__.pop("produce", None)  # and the reference cycle through the buffer
            self._handle_unreported(released)
        self._raise_failures()

    def _handle_unreported(self, released):
        # Messages whose report never came (only if librdkafka was cut short), and released
        # ones never handed over: report them.
        unreported = [self._remade(partition, value, key) for partition, value, key in released]
        for msg_id in list(self._pending):
            msg = self._pending.pop(msg_id, None)
            if msg is not None:
                self._waiting.pop(msg_id, None)
                unreported.append(msg)
        if self._pending_table is not None:
            unreported += self._pending_table.take_all()
        for msg in unreported:
            self._report(msg, ProduceFailureError("no delivery report for message at stop()"))

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        try:
            self.stop()
        except Exception:
            if exc_type is None:
                raise
            log.exception("error while stopping the producer after an exception")

    def __del__(self):
        # Non-blocking last resort: the handle's own __del__ frees librdkafka.
        self._running = False

    # -- producing -----------------------------------------------------------------------------

    def produce(self, message, partition_key=None, timestamp=None, headers=None):
        """Send ``message`` to a partition chosen by the partitioner; returns the ``Message``.

        Its ``offset`` (and ``timestamp``) are filled in when its delivery report arrives.
        Unless each message must be refused or waited on at once (``sync``,
        ``delivery_reports``, a serializer, ``block_on_queue_full=False``, ``linger_ms`` under
        5) a message without timestamp or headers goes the buffered way: this method is
        then replaced, on the instance, by a C callable that queues the message for its
        partition and calls this one for anything else.

        :param message: bytes (or anything the serializer takes)
        :param partition_key: bytes given to the partitioner and stored as the key
        :param timestamp: ms since the epoch or a ``datetime`` (default: now)
        :param headers: ``[(str, bytes)]`` or ``{str: bytes}``
        """
        if not self._running:
            raise ProducerStoppedException("the producer is stopped; call start() or use a new one")
        if self._failed:
            self._raise_failures()
        if self._outage.since is not None:
            self._outage.check(self._handle)  # every broker unreachable for socket_timeout_ms
        if self._buffer is not None:
            self._hand_off()  # the buffered ones first: each partition's messages stay in order
        if self._general or timestamp is not None or headers:
            return self._produce_general(message, partition_key, timestamp, headers)
        # The short way: one C call (send_message) makes the Message, keeps it in _pending
        # and sends it; the size is checked in C, and named on the error path.
        if not self._random:
            _check_bytes("partition_key", partition_key)  # before the partitioner sees it
            partition = self._partitioner(self._partition_list, partition_key)
        else:
            partitions = self._partition_list
            partition = partitions[next(self._counter) % len(partitions)]
        msg_id = next(self._ids)
        msg = send_message(self._sender, partition.id, message, partition_key, msg_id,
                           self._pending, partition, self._topic_name, self._compression)
        if msg.__class__ is tuple:  # librdkafka refused it
            err, msg = msg
            try:
                self._sender.raise_error(err, msg.partition_id)
            except BaseException as exc:
                self._retry_send(exc, msg, msg_id)
        self._produced += 1
        if not self._produced & (DISPATCH_EVERY - 1):
            self._housekeeping()
        return msg

    def _hand_off(self, timeout_ms=-1, stopping=False):
        """Hand every buffered message to librdkafka, waiting (up to ``timeout_ms``; -1: for
        ever) for room in a full queue as _enqueue() does; returns the ms waited. Once
        stopped, only stop() itself hands over (``stopping``)."""
        buffer, waited = self._buffer, 0
        while buffer is not None and buffer.hand_off(stopping) and (timeout_ms < 0 or waited < timeout_ms):
            self._handle.flush(QUEUE_FULL_WAIT_MS)
            waited += QUEUE_FULL_WAIT_MS
        return waited

    def _on_hand_off_failure(self, msg_id, err, partition, value, key):
        """librdkafka refused a buffered message for another reason than a full queue: it
        is reported as a failed delivery (``msg_id`` None: released, its Message remade)."""
        msg = self._take_pending(msg_id) if msg_id is not None else None
        if msg is None:
            self._on_batch_failure(errors_exception(err), partition, value, key)
        else:
            self._report(msg, errors_exception(err))

    def _retry_send(self, exc, msg, msg_id):
        """The short way's error path: wait for room in a full queue, name an oversized
        message; anything else propagates."""
        if isinstance(exc, MessageSizeTooLarge):
            raise self._too_large(msg.value, msg.partition_key) from None
        if not isinstance(exc, ProducerQueueFullError) or not self._block_on_queue_full:
            raise exc
        self._pending[msg_id] = msg
        try:
            self._enqueue(msg, msg_id)
        except BaseException:
            self._pending.pop(msg_id, None)
            raise

    def _too_large(self, value, key):
        size = len(value or b"") + len(key or b"")
        if size > self._max_request_size:
            return MessageSizeTooLarge("message of %d bytes is larger than max_request_size=%d"
                                       % (size, self._max_request_size))
        return MessageSizeTooLarge("message of %d bytes is larger than max_request_size=%d once librdkafka "
                                   "adds its record overhead (up to %d bytes, plus any headers)"
                                   % (size, self._max_request_size, RECORD_OVERHEAD))

    def _housekeeping(self):
        """Every DISPATCH_EVERY messages: hand out the delivery reports (also done by the
        poller thread), and see whether the topic grew."""
        self._handle.dispatch_reports()
        self._refresh_partitions()

    def _refresh_partitions(self):
        """The partitions to choose from, renewed when the topic grew."""
        if len(self._partition_list) != len(self._topic.partitions):
            self._partition_list = sorted(self._topic.partitions.values())
            buffer = self._buffer
            if buffer is not None:
                buffer.partitions = self._partition_list
        return self._partition_list

    def _produce_general(self, message, partition_key, timestamp, headers):
        """produce() with a serializer, timestamp, headers, delivery reports or sync."""
        if self._serializer is not None:
            message, partition_key = self._serializer(message, partition_key)
        _check_bytes("message", message)
        _check_bytes("partition_key", partition_key)
        size = len(message or b"") + len(partition_key or b"")
        if size > self._max_request_size:
            raise self._too_large(message, partition_key)
        if timestamp is not None:
            timestamp = to_timestamp_ms(timestamp) if isinstance(timestamp, datetime.datetime) \
                else _check_timestamp(timestamp)
        partition = self._partitioner(self._refresh_partitions(), partition_key)
        msg = Message(message, partition_key=partition_key, partition_id=partition.id,
                      timestamp=timestamp, headers=headers, partition=partition,
                      topic=self._topic_name, compression_type=self._compression,
                      delivery_report_q=self._report_queue() if self._delivery_reports else None)
        msg_id = next(self._ids)
        done = _Delivery() if self._sync else None
        if done is not None:
            self._waiting[msg_id] = done
        self._pending[msg_id] = msg
        try:
            self._enqueue(msg, msg_id)
        except BaseException:
            self._pending.pop(msg_id, None)
            self._waiting.pop(msg_id, None)
            raise
        self._produced += 1
        if self._sync:
            self._wait_delivered(msg, done)
        elif not self._produced & (DISPATCH_EVERY - 1):
            self._housekeeping()
        return msg

    def produce_batch(self, messages):
        """Send many messages in one call; returns how many were queued.

        :param messages: a list (or any iterable) of values (bytes; other bytes-like objects
            are taken as their bytes), or of ``(value, partition_key)`` pairs (a value, and
            bytes or None)
        :returns: the number of messages queued: all of them, else an exception is raised

        No ``Message`` objects are made: the values and keys are handed to librdkafka in one
        C loop (``pyrdk_produce_batch``), spread evenly over the partitions as the default
        partitioner does, but in one run of consecutive messages per partition (the next
        batch starting at the next partition), so that each partition's batch fills at once,
        each run in one ``rd_kafka_produce_batch`` call; their delivery reports are counted
        in C. A failed delivery still surfaces, as ``ProduceFailureError`` on the next
        ``produce()``, ``flush()`` or ``stop()``, with a ``Message`` holding the value and
        key. With a serializer, a partitioner other than the default, ``sync`` or
        ``delivery_reports``, each message goes through :meth:`produce` instead. An error (a
        value that is not bytes, the queue full with ``block_on_queue_full=False``, a
        message over ``max_request_size``) is raised with ``produced``: how many messages
        were queued before it.
        """
        if not self._running:
            raise ProducerStoppedException("the producer is stopped; call start() or use a new one")
        if not isinstance(messages, list):
            messages = list(messages)
        if not messages:
            return 0
        if self._failed:
            self._raise_failures()
        if self._outage.since is not None:
            self._outage.check(self._handle)
        if self._buffer is not None:
            self._hand_off()
        packed = None if (self._general or not self._random) else _pack(messages)
        if packed is None:
            return self._produce_each(messages)
        values, value_lens, keys, key_lens = packed
        try:
            sent = self._handle.produce_batch(self._topic_name, len(self._partition_list), values,
                                              value_lens, keys, key_lens, self._max_request_size,
                                              self._block_on_queue_full, next(self._counter))
        except KafkaException as exc:
            self._batch_sent += exc.produced
            if isinstance(exc, MessageSizeTooLarge):
                value, key = (messages[exc.produced], None) if keys is None else messages[exc.produced]
                too_large = self._too_large(value, key)
                too_large.produced = exc.produced
                raise too_large from None
            raise
        self._batch_sent += sent
        self._produced += sent
        self._housekeeping()
        return sent

    def _produce_each(self, messages):
        for count, item in enumerate(messages):
            try:
                if isinstance(item, tuple):
                    if len(item) != 2:
                        raise TypeError("produce_batch takes values or (value, partition_key) pairs, "
                                        "not a tuple of %d" % len(item))
                    self.produce(item[0], item[1])
                else:
                    self.produce(item)
            except Exception as exc:
                exc.produced = count
                raise
        return len(messages)

    def _enqueue(self, msg, msg_id):
        while True:
            try:
                self._handle.produce(self._topic_name, msg.partition_id, msg.value, msg.partition_key,
                                     msg.timestamp, msg._headers, msg_id)
                return
            except MessageSizeTooLarge:
                raise self._too_large(msg.value, msg.partition_key) from None
            except ProducerQueueFullError:
                if not self._block_on_queue_full:
                    raise
                # Wait briefly for room: flush sends at once whatever linger_ms says, and
                # serves delivery reports; a longer wait would drain the whole queue.
                self._handle.flush(QUEUE_FULL_WAIT_MS)

    def _wait_delivered(self, msg, done):
        handle = self._handle
        deadline_ms = self._pending_timeout_ms
        waited = 0
        while not done.event.is_set():
            if 0 <= deadline_ms <= waited:
                with done.lock:
                    if not done.event.is_set():
                        # Its report, when it comes, goes where an asynchronous one goes.
                        done.detached = True
                        raise KafkaTimeoutError(
                            "no delivery report for the message within pending_timeout_ms=%d; it "
                            "may still be delivered (a failure is raised by a later produce(), "
                            "flush() or stop())" % deadline_ms)
                break
            handle.flush(POLL_MS)  # sends at once, whatever linger_ms says
            waited += POLL_MS
        if done.error is not None:
            raise done.error

    def _on_deliveries(self, ids, errs, partitions, offsets, timestamps):
        """A batch of delivery reports (from Callbacks.dispatch_reports)."""
        if self._waiting or self._delivery_reports or any(errs):
            for report in zip(ids, errs, partitions, offsets, timestamps):
                self._on_delivery(*report)
            return
        for msg_id, partition, offset, timestamp in zip(ids, partitions, offsets, timestamps):
            msg = self._take_pending(msg_id)
            if msg is not None:
                msg.partition_id = partition
                # With required_acks=0 the broker tells nothing: librdkafka reports an invalid
                # offset (-1001, -1000, ...); pykafka's Message says -1.
                msg.offset = offset if offset >= 0 else -1
                msg.timestamp = timestamp

    def _take_pending(self, msg_id):
        """The Message of msg_id, no longer pending; None if it was not."""
        if msg_id >= BUFFERED_IDS:
            table = self._pending_table
            return table.take(msg_id) if table is not None else None
        return self._pending.pop(msg_id, None)

    def _on_delivery(self, msg_id, err, partition, offset, timestamp):
        msg = self._take_pending(msg_id)
        if msg is None:
            return
        exc = errors_exception(err) if err else None
        msg.partition_id = partition if partition >= 0 else msg.partition_id
        if exc is None:
            msg.offset = offset if offset >= 0 else -1
            msg.timestamp = timestamp
        done = self._waiting.pop(msg_id, None)
        if done is not None:
            with done.lock:
                if not done.detached:  # the sync produce() is still waiting for it
                    done.error = exc
                    done.event.set()
                    return
        self._report(msg, exc)

    def _on_batch_failure(self, exc, partition, value, key):
        """A message of produce_batch() (or a released one of produce()) failed: report it
        like any other, in a Message made anew."""
        self._report(self._remade(partition, value, key), exc)

    def _remade(self, partition, value, key):
        """A Message for a message that has none any more (produce_batch()'s, released)."""
        return Message(value, key, partition, topic=self._topic_name,
                       partition=self._topic.partitions.get(partition), compression_type=self._compression)

    def _report(self, msg, exc):
        if self._delivery_reports:
            msg.delivery_report_q.put((msg, exc))
        elif exc is not None:
            self._failed.append((msg, exc))

    def _raise_failures(self):
        if self._failed:
            failed = self._failed[:]
            del self._failed[:]  # the same list: the buffered way looks at it
            first = failed[0][1]
            exc = ProduceFailureError("%d message(s) could not be delivered; first error: %s"
                                      % (len(failed), first))
            exc.failed = failed
            raise exc from first

    # -- reports -------------------------------------------------------------------------------

    def _report_queue(self):
        q = getattr(self._local, "queue", None)
        if q is None:
            q = self._local.queue = queue.Queue()
        return q

    def get_delivery_report(self, block=True, timeout=None):
        """The next ``(Message, exception or None)`` for a message produced on this thread.

        Raises ``queue.Empty`` when none is ready (after ``timeout`` seconds if blocking).
        """
        if not self._delivery_reports:
            raise KafkaException("Delivery-reporting is disabled")
        q = self._report_queue()
        if q.empty() and self._running:
            self._handle.dispatch_reports()
        return q.get(block, timeout)

    def flush(self, timeout=None):
        """Wait until every queued message is delivered or reported (``rd_kafka_flush``).

        :param timeout: seconds (None: for ever)
        :returns: the number of messages still undelivered
        """
        if not self._running:
            raise ProducerStoppedException("the producer is stopped")
        timeout_ms = -1 if timeout is None else int(timeout * 1000)
        self._hand_off(timeout_ms)
        self._handle.flush(timeout_ms)
        self._raise_failures()
        return self._handle.outq_len()

    def stats(self):
        """The last statistics snapshot librdkafka sent (a dict, parsed from its JSON), or None
        before the first or without ``statistics_interval_ms``."""
        return self._handle.stats if self._handle is not None else None

    def __len__(self):
        """Messages produced and not yet delivered or reported."""
        buffer, table = self._buffer, self._pending_table
        sent, outstanding = self._batch_sent, 0
        if buffer is not None:  # released messages: counted as produce_batch()'s once handed over
            sent += buffer.released_sent
            outstanding += buffer.released
        if self._handle is not None:
            outstanding += self._handle.batch_outstanding(sent)
        return len(self._pending) + (len(table) if table is not None else 0) + outstanding


class _Delivery:
    """What a sync ``produce()`` waits on: set by the message's delivery report."""
    __slots__ = ("event", "error", "lock", "detached")

    def __init__(self):
        self.event = threading.Event()
        self.error = None
        self.lock = threading.Lock()
        self.detached = False  # the waiter gave up (pending_timeout_ms)


def _pack(messages):
    """``(values, value_lens, keys, key_lens)`` for Handle.produce_batch -- values and keys
    joined into one bytes each, keys None when no message has one, -1 for a missing key,
    value_lens packed as size_t when every message is bytes --
    or None when a message is not bytes nor a (bytes, bytes or None) pair (produce() then
    says which)."""
    packed = pack_values(messages)  # in C, when every message is bytes
    if packed is not None:
        return packed[0], packed[1], None, None
    try:
        values, keys = messages, None
        joined = b"".join(values)
    except TypeError:
        try:
            values = [v for v, _ in messages]
            keys = [k for _, k in messages]
            joined = b"".join(values)
        except (TypeError, ValueError):
            return None
    value_lens = list(map(len, values))
    # join() takes any bytes-like object; a length that is not its size in bytes (a
    # memoryview of wider items) would misplace every value after it.
    if sum(value_lens) != len(joined):
        return None
    if keys is None:
        return joined, value_lens, None, None
    try:
        joined_keys = b"".join(k for k in keys if k is not None)
    except TypeError:
        return None
    key_lens = [-1 if k is None else len(k) for k in keys]
    if sum(n for n in key_lens if n > 0) != len(joined_keys):
        return None
    return joined, value_lens, joined_keys, key_lens


def _idempotent(config):
    value = config.get("enable.idempotence")
    return value is True or (isinstance(value, (str, bytes)) and value.lower() in ("true", b"true"))


def _check_timestamp(value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TypeError("timestamp must be ms since the epoch (int >= 0) or a datetime, not %r" % (value,))
    return value


@atexit.register
def _stop_running_producers():
    """At exit, stop producers the program never stopped: their queued messages are
    delivered (within ``pending_timeout_ms``) and failures are logged, not lost unseen.
    Registered after rd.handle's hook, so it runs before the handles are closed."""
    for producer in list(_unstopped):
        if not producer._handle.owned:
            continue  # a forked child's copy: the parent delivers its messages
        try:
            producer.stop()
        except Exception:
            log.exception("stopping %r at exit", producer)
