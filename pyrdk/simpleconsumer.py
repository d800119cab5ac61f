"""SimpleConsumer: pykafka's consumer of explicit partitions, on librdkafka's consumer
(``rd_kafka_assign`` + ``rd_kafka_consume_batch_queue``).

librdkafka prefetches into its queue; the consumer takes batches from it into a small
buffer and hands messages out one by one. Offsets follow pykafka: ``held_offsets`` is
the last offset *returned* per partition, ``commit_offsets()`` commits that + 1 (the
next offset to read) with ``rd_kafka_commit``, and auto-commit runs on the consuming
thread every ``auto_commit_interval_ms``, so it never commits a message not yet returned.
"""
import collections
import datetime
import logging
import time
import uuid

from pyrdk.common import OffsetPartitionResponse, OffsetType, check_int
from pyrdk.exceptions import ConsumerStoppedException, KafkaException, OffsetRequestFailedError
from pyrdk.partition import Partition, to_timestamp_ms
from pyrdk.rd.callbacks import Callbacks
from pyrdk.rd.handle import Handle, librdkafka_runtime_version
from pyrdk.rd.message import buffer_iterator, mark_last, mark_next
from pyrdk.rd.partitions import OFFSET_BEGINNING, OFFSET_END, OFFSET_INVALID

log = logging.getLogger(__name__)

BATCH = 1000
SLICE_MS = 100


def _logical(offset_type):
    return OFFSET_BEGINNING if offset_type == OffsetType.EARLIEST else OFFSET_END


class SimpleConsumer:
    """Consume a topic's partitions, all or a subset (pykafka 2.8's signature).

    :param consumer_group: bytes; needed to commit and fetch offsets (``group.id``)
    :param partitions: the partitions (``Partition`` objects or ids) to read; default all
    :param fetch_message_max_bytes: ``fetch.message.max.bytes``
    :param auto_commit_enable: commit held offsets every ``auto_commit_interval_ms`` and at
        ``stop()``
    :param queued_max_messages: ``queued.min.messages``: messages librdkafka prefetches per
        partition (pyrdk's default is librdkafka's 100000, as pykafka's rdkafka consumer)
    :param fetch_min_bytes: ``fetch.min.bytes``
    :param fetch_error_backoff_ms: ``fetch.error.backoff.ms``
    :param fetch_wait_max_ms: ``fetch.wait.max.ms``
    :param offsets_channel_backoff_ms: pause between commit retries
    :param offsets_commit_max_retries: retries of a commit that fails with a retriable error
    :param auto_offset_reset: ``OffsetType.EARLIEST`` or ``LATEST``: where a partition
        without a committed offset starts (``auto.offset.reset``)
    :param consumer_timeout_ms: ms ``consume()`` waits for a message before returning None
        (and iteration ends); -1 waits for ever
    :param reset_offset_on_start: start from ``auto_offset_reset`` even with committed offsets
    :param deserializer: ``(value, partition_key) -> (value, partition_key)``
    :param reset_offset_on_fetch: False makes an out-of-range fetch raise
        ``OffsetOutOfRangeError`` instead of resetting (``auto.offset.reset=error``)
    :param rdkafka_config: any librdkafka properties, applied last
    :param statistics_interval_ms: ``statistics.interval.ms`` (None: the client's); see :meth:`stats`
    :param stats_callback: called with each statistics snapshot, a dict (None: the client's)

    pyrdk sets ``fetch.queue.backoff.ms=10``: librdkafka's default (1000) stalls a fast
    consumer each time its prefetch queue fills.
    """

    def __init__(self, topic, cluster, consumer_group=None, partitions=None,
                 fetch_message_max_bytes=1024 * 1024, num_consumer_fetchers=1,
                 auto_commit_enable=False, auto_commit_interval_ms=60 * 1000,
                 queued_max_messages=100000, fetch_min_bytes=1, fetch_error_backoff_ms=500,
                 fetch_wait_max_ms=100, offsets_channel_backoff_ms=1000, offsets_commit_max_retries=5,
                 auto_offset_reset=OffsetType.EARLIEST, consumer_timeout_ms=-1, auto_start=True,
                 reset_offset_on_start=False, compacted_topic=False, generation_id=-1,
                 consumer_id=b"", deserializer=None, reset_offset_on_fetch=True,
                 rdkafka_config=None, use_rdkafka=None, statistics_interval_ms=None, stats_callback=None):
        if consumer_group is not None and not isinstance(consumer_group, (bytes, str)):
            raise TypeError("consumer_group must be bytes or str, not %s" % type(consumer_group).__name__)
        if isinstance(consumer_group, str):
            consumer_group = consumer_group.encode()
        if auto_commit_enable and not consumer_group:
            raise ValueError("auto_commit_enable requires a consumer_group")
        self._consumer_timeout_ms = check_int("consumer_timeout_ms", consumer_timeout_ms, -1)
        self._auto_commit_interval_ms = check_int("auto_commit_interval_ms", auto_commit_interval_ms, 0)
        if auto_offset_reset not in (OffsetType.EARLIEST, OffsetType.LATEST):
            raise ValueError("auto_offset_reset must be OffsetType.EARLIEST (-2) or LATEST (-1), not %r"
                             % (auto_offset_reset,))
        if deserializer is not None and not callable(deserializer):
            raise TypeError("deserializer must be callable (value, partition_key) -> (value, key)")
        self._topic = topic
        self._cluster = cluster
        self._topic_name = topic.name.decode()
        self._consumer_group = consumer_group
        self._auto_commit_enable = auto_commit_enable
        self._auto_offset_reset = OffsetType(auto_offset_reset)
        self._reset_offset_on_start = reset_offset_on_start
        self._deserializer = deserializer
        self._commit_retries = offsets_commit_max_retries
        self._commit_backoff_ms = offsets_channel_backoff_ms
        self._generation_id = generation_id
        self._consumer_id = consumer_id
        self._partitions = self._select_partitions(partitions)
        self._config = dict(cluster.rdkafka_config)
        self._config.update({
            # Without a consumer group librdkafka still needs a group.id to assign;
            # pyrdk never commits under this one.
            "group.id": (consumer_group or ("pyrdk-simple-%s" % uuid.uuid4().hex).encode()).decode(),
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": False,
            "auto.offset.reset": ("earliest" if self._auto_offset_reset == OffsetType.EARLIEST else "latest")
            if reset_offset_on_fetch else "error",
            "fetch.message.max.bytes": fetch_message_max_bytes,
            "queued.min.messages": queued_max_messages,
            "fetch.min.bytes": fetch_min_bytes,
            "fetch.error.backoff.ms": fetch_error_backoff_ms,
            "fetch.wait.max.ms": fetch_wait_max_ms,
        })
        if librdkafka_runtime_version() >= 0x02010000:  # fetch.queue.backoff.ms: since 2.1.0
            self._config["fetch.queue.backoff.ms"] = 10
        self._stats_callback = cluster.statistics(self._config, statistics_interval_ms, stats_callback)
        self._config.update(rdkafka_config or {})
        self._handle = None
        self._running = False
        self._buffer = collections.deque()
        self._offsets = {}  # partition id -> next offset to return (None: not known yet)
        self._last = [None]  # the message the iterator handed out last, until it is marked
        self._paused = set()
        self._deferred = None  # a deserializer error held back by consume_batch
        self._stash = {}  # paused partition id -> messages fetched but not returned
        self._last_commit = time.monotonic()
        if auto_start:
            self.start()

    def _select_partitions(self, partitions):
        everything = self._topic.partitions
        if partitions is None:
            return dict(everything)
        chosen = {}
        for p in partitions:
            pid = p.id if isinstance(p, Partition) else p
            if isinstance(pid, bool) or not isinstance(pid, int):
                raise TypeError("partitions must be Partition objects or ids, not %r" % (p,))
            if pid not in everything:
                raise ValueError("topic %s has no partition %d (it has %s)"
                                 % (self._topic_name, pid, sorted(everything)))
            chosen[pid] = everything[pid]
        if not chosen:
            raise ValueError("partitions is empty")
        return chosen

    # -- lifecycle -----------------------------------------------------------------------------

    @property
    def topic(self):
        return self._topic

    @property
    def partitions(self):
        """``{partition_id: Partition}`` this consumer reads."""
        return self._partitions

    def start(self):
        """Create the librdkafka consumer and assign the partitions at their start offsets:
        the committed offset; else, after a ``stop()``, the offset after the last one
        returned; else (and always with ``reset_offset_on_start``) ``auto_offset_reset``,
        looked up with ListOffsets."""
        if self._running:
            return
        self._outage = self._cluster.broker_outage()
        self._handle = Handle("consumer", self._config, Callbacks(on_error=self._outage.on_error),
                              closed_exc=ConsumerStoppedException, stats_callback=self._stats_callback)
        try:
            committed = {}
            if self._consumer_group and not self._reset_offset_on_start:
                committed = {tp.partition: tp.offset for tp in self._handle.committed(
                    [(self._topic_name, pid) for pid in self._partitions])}
            starts = {}
            for pid in sorted(self._partitions):
                offset = committed.get(pid, OFFSET_INVALID)
                if offset < 0 and not self._reset_offset_on_start and self._next.get(pid) is not None:
                    offset = self._next[pid]  # restarted: go on from where it was
                starts[pid] = offset
                self._next[pid] = offset if offset >= 0 else None  # None: nothing returned yet
            starts.update(self._resolve({pid: int(self._auto_offset_reset)
                                         for pid, offset in starts.items() if offset < 0}))
            logical = _logical(self._auto_offset_reset)
            self._handle.assign([(self._topic_name, pid, offset if offset >= 0 else logical)
                                 for pid, offset in sorted(starts.items())])
        except BaseException:
            self._handle.close()
            raise
        self._paused.clear()
        self._stash.clear()
        self._running = True
        self._last_commit = time.monotonic()

    def stop(self):
        """Commit held offsets if auto-commit is on, then close the consumer
        (``rd_kafka_consumer_close``, ``rd_kafka_destroy``)."""
        if not self._running:
            return
        try:
            if self._auto_commit_enable:
                self.commit_offsets()
        finally:
            self._running = False
            self._buffer.clear()
            self._stash.clear()
            self._handle.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def __del__(self):
        # The handle's own __del__ frees librdkafka; nothing may block here.
        self._running = False

    def _check_running(self):
        if not self._running:
            raise ConsumerStoppedException("the consumer is stopped; call start() or use a new one")

    # -- consuming -----------------------------------------------------------------------------

    def consume(self, block=True, unblock_event=None):
        """The next message, or None: when ``block`` is False and none is ready, when
        ``consumer_timeout_ms`` passes without one, or when ``unblock_event`` is set."""
        self._check_running()
        self._raise_deferred()
        if not self._buffer:
            self._fill(block, unblock_event)
            if not self._buffer:
                self._maybe_auto_commit()
                return None
        msg = self._hand_out(self._buffer.popleft())
        self._maybe_auto_commit()
        return msg

    def __iter__(self):
        """The messages until ``consume()`` returns None. With neither a deserializer nor
        auto-commit to run, a C iterator hands out the buffered messages (fetched a batch
        at a time) directly; the buffer is only ever changed in place, so it can hold it."""
        if self._deserializer is None and not self._auto_commit_enable:
            return buffer_iterator(self._buffer, self._offsets, self._consume_blocking, self._last)
        return iter(self._consume_blocking, None)

    @property
    def _next(self):
        """``{partition_id: next offset to return}`` (None: not known yet), with the
        message the iterator handed out last marked in it (``mark_last``)."""
        mark_last(self._last, self._offsets)
        return self._offsets

    def _consume_blocking(self):
        return self.consume(block=True)

    def consume_batch(self, max_messages=BATCH, timeout_ms=1000):
        """Up to ``max_messages`` messages, waiting at most ``timeout_ms`` for the first
        (one ``rd_kafka_consume_batch_queue`` call per batch)."""
        self._check_running()
        self._raise_deferred()
        if not self._buffer:
            self._fetch(max_messages, timeout_ms)
        buffer = self._buffer
        if self._deserializer is None:  # the short way: nothing per message can fail
            if max_messages >= len(buffer):
                out = list(buffer)
                buffer.clear()
            else:
                out = [buffer.popleft() for _ in range(max_messages)]
            mark_next(out, self._next)
            self._maybe_auto_commit()
            return out
        out = []
        for _ in range(min(max_messages, len(self._buffer))):
            try:
                out.append(self._hand_out(self._buffer.popleft()))
            except Exception as exc:
                if not out:
                    raise
                self._deferred = exc  # return what is ready; raise on the next call
                break
        self._maybe_auto_commit()
        return out

    def _hand_out(self, msg):
        """Count ``msg`` as returned, then deserialize it. A deserializer error reaches the
        caller and the message counts as consumed (its offset is not read again)."""
        self._next[msg.partition_id] = msg.offset + 1
        if self._deserializer is not None:
            msg.value, msg.partition_key = self._deserializer(msg.value, msg.partition_key)
        return msg

    def _raise_deferred(self):
        exc, self._deferred = self._deferred, None
        if exc is not None:
            raise exc

    def _fill(self, block, unblock_event):
        if not block:
            self._fetch(BATCH, 0)
            return
        timeout = self._consumer_timeout_ms
        deadline = None if timeout < 0 else time.monotonic() + timeout / 1000.0
        while not self._buffer:
            if unblock_event is not None and unblock_event.is_set():
                return
            remaining = SLICE_MS if deadline is None else int((deadline - time.monotonic()) * 1000)
            if remaining <= 0 and deadline is not None:
                return
            self._fetch(BATCH, min(SLICE_MS, max(remaining, 0)))

    def _fetch(self, max_messages, timeout_ms):
        msgs, errs = self._handle.consume_batch(max_messages, timeout_ms, self._partitions)
        paused = self._paused
        if not paused:
            self._buffer.extend(msgs)
        else:
            for msg in msgs:
                if msg.partition_id in paused:
                    self._stash.setdefault(msg.partition_id, []).append(msg)
                else:
                    self._buffer.append(msg)
        if msgs:
            self._outage.since = None
        for exc in errs:  # error events, then an exception a callback raised
            if isinstance(exc, KafkaException) and exc.retriable and not exc.fatal:
                log.warning("%s (librdkafka retries by itself)", exc)
            else:
                raise exc
        self._outage.check(self._handle)  # every broker unreachable for socket_timeout_ms

    # -- offsets -------------------------------------------------------------------------------

    @property
    def held_offsets(self):
        """``{partition_id: last offset returned}`` (-1 where nothing is known yet)."""
        return {pid: (-1 if nxt is None else nxt - 1) for pid, nxt in self._next.items()}

    def _require_group(self, what):
        if not self._consumer_group:
            raise ValueError("%s needs a consumer_group" % what)

    def _maybe_auto_commit(self):
        if self._auto_commit_enable and \
                (time.monotonic() - self._last_commit) * 1000 >= self._auto_commit_interval_ms:
            self.commit_offsets()

    def commit_offsets(self, partition_offsets=None):
        """Commit offsets for the consumer group (``rd_kafka_commit``).

        :param partition_offsets: ``(partition, offset)`` pairs to commit as given;
            default: each partition's held offset + 1 (the next to read)
        """
        self._check_running()
        self._require_group("commit_offsets")
        if partition_offsets is None:
            tps = [(self._topic_name, pid, nxt) for pid, nxt in sorted(self._next.items())
                   if nxt is not None]
        else:
            tps = [(self._topic_name, self._partition_id(p), _offset(o, logical=False))
                   for p, o in partition_offsets]
        self._last_commit = time.monotonic()
        if not tps:
            return
        for attempt in range(self._commit_retries + 1):
            try:
                self._handle.commit(tps)
                return
            except KafkaException as exc:
                if not exc.retriable or attempt == self._commit_retries:
                    raise
                log.warning("commit failed (%s), retrying in %d ms", exc, self._commit_backoff_ms)
                time.sleep(self._commit_backoff_ms / 1000.0)

    def fetch_offsets(self):
        """The group's committed offsets (``rd_kafka_committed``) as pykafka's
        ``[(partition_id, OffsetFetchPartitionResponse)]``; -1 where none is committed."""
        self._check_running()
        self._require_group("fetch_offsets")
        committed = self._handle.committed([(self._topic_name, pid) for pid in sorted(self._partitions)])
        return [(tp.partition, OffsetPartitionResponse(tp.offset if tp.offset >= 0 else -1, tp.error))
                for tp in committed]

    def reset_offsets(self, partition_offsets=None):
        """Move partitions, as pykafka does: an int ``o`` makes ``o`` the last offset
        consumed (the next message is ``o + 1``); ``OffsetType.EARLIEST`` / ``LATEST`` or a
        ``datetime`` move to the first message at or after that point (looked up with
        ListOffsets; a time after the last message moves to the end). Then commit the new
        positions, if the consumer has a group. Nothing moves if an entry is invalid.

        :param partition_offsets: ``(partition, int | OffsetType | datetime)`` pairs;
            default: every partition to ``auto_offset_reset``
        """
        self._check_running()
        if partition_offsets is None:
            partition_offsets = [(pid, self._auto_offset_reset) for pid in self._partitions]
        targets = {}  # partition id -> the next offset to read
        lookups = {}  # partition id -> ListOffsets timestamp (ms, or -2 / -1)
        for p, value in partition_offsets:
            pid = self._partition_id(p)
            if isinstance(value, datetime.datetime):
                lookups[pid] = to_timestamp_ms(value)
            elif isinstance(value, int) and not isinstance(value, bool) and value in (-1, -2):
                lookups[pid] = int(value)
            elif isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                targets[pid] = value + 1
                lookups.pop(pid, None)
                continue
            else:
                raise ValueError("invalid offset %r for partition %d: use an offset >= 0, an "
                                 "OffsetType or a datetime" % (value, pid))
            targets.pop(pid, None)
        # OffsetType and datetime are resolved with ListOffsets (as pykafka does), so the
        # position is known, held_offsets is right and the commit below records it.
        targets.update(self._list_offsets(lookups))
        self._drop_buffered(targets)
        self._handle.seek([(self._topic_name, pid, off) for pid, off in sorted(targets.items())])
        for pid, nxt in targets.items():
            self._next[pid] = nxt
        if self._consumer_group and targets:
            self.commit_offsets(sorted(targets.items()))

    def _resolve(self, lookups):
        """``_list_offsets`` for a start position, or ``{}`` if the lookup fails (librdkafka
        then resolves the logical offset itself). A position known in advance is what keeps a
        ``seek`` right after ``start`` from being overtaken by librdkafka's own lookup."""
        if not lookups:
            return {}
        try:
            return self._list_offsets(lookups)
        except KafkaException as exc:
            log.warning("could not look up the start offsets (%s); librdkafka will", exc)
            return {}

    def _list_offsets(self, lookups):
        """``{pid: offset}`` for ``{pid: timestamp or OffsetType}``; a time after the last
        message resolves to the end of the partition."""
        out = {}
        while lookups:
            results = self._cluster.offsets_for_times(
                [(self._topic_name, pid, ts) for pid, ts in sorted(lookups.items())])
            after_end = {}
            for tp in results:
                if tp.error:
                    raise OffsetRequestFailedError("offset lookup for partition %d failed: error %d"
                                                   % (tp.partition, tp.error))
                if tp.offset >= 0:
                    out[tp.partition] = tp.offset
                elif lookups.get(tp.partition, OffsetType.LATEST) >= 0:
                    after_end[tp.partition] = int(OffsetType.LATEST)  # no message at or after
                else:
                    raise OffsetRequestFailedError("offset lookup for partition %d returned %d"
                                                   % (tp.partition, tp.offset))
            lookups = after_end
        return out

    def _partition_id(self, p):
        pid = p.id if isinstance(p, Partition) else p
        if isinstance(pid, bool) or not isinstance(pid, int) or pid not in self._partitions:
            raise ValueError("unknown partition %r for this consumer (it has %s)"
                             % (p, sorted(self._partitions)))
        return pid

    # -- beyond pykafka ------------------------------------------------------------------------

    def highwater(self, partition):
        """The partition's high watermark (the offset the next message produced will get) as
        the last fetch response for it said, or None before the first response
        (``rd_kafka_get_watermark_offsets``, no request; kafka-python's ``highwater``)."""
        self._check_running()
        pid = self._partition_id(partition)
        high = self._handle.get_watermark_offsets(self._topic_name, pid)[1]
        return high if high >= 0 else None

    def seek(self, partition, offset):
        """Make ``offset`` the next offset returned for ``partition`` (``rd_kafka_seek_partitions``);
        ``offset`` may also be an ``OffsetType``, looked up with ListOffsets."""
        self._check_running()
        pid = self._partition_id(partition)
        offset = _offset(offset)
        logical = offset in (OffsetType.EARLIEST, OffsetType.LATEST)
        if logical:
            offset = self._list_offsets({pid: int(offset)})[pid]
        self._drop_buffered((pid,))
        self._handle.seek([(self._topic_name, pid, offset)])
        self._next[pid] = None if logical else offset

    def pause(self, partitions=None):
        """Stop fetching from these partitions (default: all) (``rd_kafka_pause_partitions``).
        Messages already fetched for them are held back until ``resume()``."""
        self._check_running()
        pids = self._pids(partitions)
        self._handle.pause([(self._topic_name, pid) for pid in pids])
        self._paused.update(pids)
        keep = []
        for msg in self._buffer:
            if msg.partition_id in self._paused:
                self._stash.setdefault(msg.partition_id, []).append(msg)
            else:
                keep.append(msg)
        self._buffer.clear()
        self._buffer.extend(keep)

    def resume(self, partitions=None):
        """Fetch again from paused partitions (``rd_kafka_resume_partitions``)."""
        self._check_running()
        pids = self._pids(partitions)
        self._handle.resume([(self._topic_name, pid) for pid in pids])
        for pid in pids:
            self._paused.discard(pid)
            # Held-back messages come before anything fetched for the partition from now on.
            self._buffer.extend(self._stash.pop(pid, ()))

    def _drop_buffered(self, pids):
        """Forget fetched, unreturned messages of ``pids`` (before a seek)."""
        keep = [m for m in self._buffer if m.partition_id not in pids]
        self._buffer.clear()
        self._buffer.extend(keep)
        for pid in pids:
            self._stash.pop(pid, None)

    def _pids(self, partitions):
        return sorted(self._partitions) if partitions is None else [self._partition_id(p) for p in partitions]

    def stats(self):
        """The last statistics snapshot librdkafka sent (a dict, parsed from its JSON), or None
        before the first or without ``statistics_interval_ms``."""
        return self._handle.stats if self._handle is not None else None

    def __repr__(self):
        return "<pyrdk.simpleconsumer.SimpleConsumer at %#x (topic=%s, consumer_group=%s)>" % (
            id(self), self._topic_name, self._consumer_group)


def _offset(value, logical=True):
    if isinstance(value, bool) or not isinstance(value, int) or \
            (value < 0 and not (logical and value in (-1, -2))):
        raise ValueError("invalid offset %r: use an int >= 0%s"
                         % (value, " or an OffsetType" if logical else " (the next offset to read)"))
    return value

