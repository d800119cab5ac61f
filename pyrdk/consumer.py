"""Consumer: what pyrdk's consumers share. :class:`Consumer` reads a librdkafka consumer through
the core (``rd_kafka_consume_batch_queue`` into :mod:`pyrdk.core`) with pykafka's offset
conventions; :class:`pyrdk.simpleconsumer.SimpleConsumer` assigns it partitions,
:class:`pyrdk.managedbalancedconsumer.ManagedBalancedConsumer` lets the group assign them. The
option checks and the running check are shared with the ZooKeeper
:class:`pyrdk.balancedconsumer.BalancedConsumer` too.

Offsets follow pykafka 2.8 (its ``SimpleConsumer`` and ``OwnedPartition``):

- A partition's position is the last offset *returned* (pykafka's ``last_offset_consumed``);
  ``held_offsets`` reports it, and ``OffsetType.EARLIEST`` (-2) where it is -1 (nothing
  before offset 0 was returned).
- A consumer starts each partition at the group's committed offset; without one (and for
  every partition with ``reset_offset_on_start``) at ``auto_offset_reset``, looked up with
  ListOffsets (the position is the offset found - 1), and, with a group, that start is
  committed at once (not with ``reset_offset_on_fetch=False``, which keeps start-up
  read-only; always with ``reset_offset_on_start``).
- ``commit_offsets()`` commits position + 1 (the next offset to read) for every partition
  (``rd_kafka_commit``), with pykafka's commit metadata (``{"consumer_id": ..., "hostname":
  ...}``); ``fetch_offsets()`` reads the committed offsets and their metadata back, and
  changes nothing.
- ``reset_offsets`` moves partitions and commits their new positions; a position past the
  end of the log moves, at the next fetch, to ``auto_offset_reset`` (and is committed), as
  pykafka's answer to OFFSET_OUT_OF_RANGE does.
- Auto-commit runs on the consuming thread every ``auto_commit_interval_ms``, so it never
  commits a message not yet returned.
"""
from __future__ import annotations

import datetime
import json
import logging
import socket
import threading
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, Optional, TypeVar, Union

from pyrdk import common
from pyrdk.common import (INT32_MAX, INT64_MAX, OffsetFetchPartitionResponse, OffsetType, check_bool, check_config,
                          check_int, check_pair, integer, stop_at_exit)
from pyrdk.core import arrow, consumer_core
from pyrdk.exceptions import (CallState, ConsumerStoppedException, KafkaException, KafkaTimeoutError,
                              OffsetOutOfRangeError, OffsetRequestFailedError, UnicodeException,
                              UnknownPartitionError, UnknownTopicOrPartition)
from pyrdk.partition import Partition, to_timestamp_ms
from pyrdk.rd import conf, errors
from pyrdk.rd.errors import exception as errors_exception
from pyrdk.rd.handle import Handle, librdkafka_runtime_version
from pyrdk.rd.partitions import OFFSET_BEGINNING, OFFSET_END, TopicPartition
from pyrdk.rd.transaction import GroupMetadata

if TYPE_CHECKING:
    from pyrdk.topic import Topic

_C = TypeVar("_C", bound="Consumer")

log = logging.getLogger(__name__)
_AUTO_COMMIT = "auto-commit"  # what a kept auto-commit error is about (CallState's item)

BATCH = 1000
SLICE_MS = 100
MAX_BATCH = 1000000  # the most messages one consume_batch() call may ask for
KEEP_CHUNK = 100  # messages a batch cut off by Ctrl-C is kept by at a time (see Consumer._fetch)
ISOLATION_LEVELS = ("read_committed", "read_uncommitted")


def check_running(running):
    """Raise ``ConsumerStoppedException`` unless ``running``."""
    if not running:
        raise ConsumerStoppedException("the consumer is stopped; call start() or use a new one")


def check_group(consumer_group: Union[bytes, str]) -> bytes:
    """``consumer_group`` (bytes or str) as UTF-8 bytes, for librdkafka's ``group.id``;
    TypeError for another type, UnicodeException for bytes that are not UTF-8."""
    if not isinstance(consumer_group, (bytes, str)):
        raise TypeError("consumer_group must be bytes or str, not %s" % type(consumer_group).__name__)
    try:
        if isinstance(consumer_group, str):
            return consumer_group.encode("utf-8")
        consumer_group.decode("utf-8")
    except UnicodeError:
        raise UnicodeException("consumer_group %r is not UTF-8 text: pass a str, or its UTF-8 bytes"
                               % (consumer_group,)) from None
    return consumer_group


def check_auto_offset_reset(value):
    """``value`` as an ``OffsetType``: EARLIEST or LATEST, else ValueError."""
    if isinstance(value, bool) or value not in (OffsetType.EARLIEST, OffsetType.LATEST):
        raise ValueError("auto_offset_reset must be OffsetType.EARLIEST (-2) or LATEST (-1), not %r" % (value,))
    return OffsetType(value)


def check_isolation_level(value):
    """``value`` if it is one of librdkafka's ``isolation.level`` values, else ValueError."""
    if value not in ISOLATION_LEVELS:
        raise ValueError("isolation_level must be 'read_committed' (the default: messages of aborted or "
                         "open transactions are skipped) or 'read_uncommitted', not %r" % (value,))
    return value


def auto_commit_due(enabled, last_commit, interval_ms):
    """Whether auto-commit is on and ``interval_ms`` has passed since ``last_commit``
    (a ``time.monotonic()`` time)."""
    return enabled and (time.monotonic() - last_commit) * 1000 >= interval_ms


def logical(offset_type):
    """librdkafka's logical offset for an ``OffsetType``."""
    return OFFSET_BEGINNING if offset_type == OffsetType.EARLIEST else OFFSET_END


def held_offset(next_offset):
    """pykafka's held offset for a partition whose next offset is ``next_offset`` (None:
    unknown, as pykafka's initial ``last_offset_consumed`` of -1): the last offset returned,
    or ``OffsetType.EARLIEST`` where that is -1."""
    last = -1 if next_offset is None else next_offset - 1
    # a plain int, as pykafka's OffsetType.EARLIEST was: {0: -2}, not {0: <OffsetType.EARLIEST: -2>}
    return int(OffsetType.EARLIEST) if last == -1 else last


def commit_metadata(consumer_id):
    """pykafka's commit metadata: ``{"consumer_id": ..., "hostname": ...}`` as JSON bytes."""
    if isinstance(consumer_id, bytes):
        consumer_id = consumer_id.decode("utf-8", errors="replace")
    return json.dumps({"consumer_id": consumer_id, "hostname": socket.gethostname()}).encode()


# The librdkafka property each constructor argument sets, to name the argument when
# librdkafka refuses its value.
_ARGUMENTS = {"fetch.message.max.bytes": "fetch_message_max_bytes", "queued.min.messages": "queued_max_messages",
              "fetch.min.bytes": "fetch_min_bytes", "fetch.error.backoff.ms": "fetch_error_backoff_ms",
              "fetch.wait.max.ms": "fetch_wait_max_ms", "statistics.interval.ms": "statistics_interval_ms"}


def check_settings(rdkafka_config, **settings):
    """Check the consumers' int ``settings`` (each an int from 0 to 2**31 - 1, else
    TypeError naming it); returns ``rdkafka_config`` as a new dict (``{}`` for None), else
    TypeError."""
    for name, value in settings.items():
        check_int(name, value, 1 if name == "fetch_min_bytes" else 0, INT32_MAX)  # librdkafka's least: 1 byte
    return check_config("rdkafka_config", rdkafka_config)


def offset_pairs(method, partition_offsets):
    """``partition_offsets`` as a list of ``(partition, offset)`` pairs, else TypeError
    saying what ``method`` takes."""
    what = "%s takes partition_offsets: a list of (partition, offset) pairs" % method
    if isinstance(partition_offsets, (str, bytes, dict)):
        raise TypeError("%s, not %r" % (what, partition_offsets))
    try:
        pairs = list(partition_offsets)
    except TypeError:
        raise TypeError("%s, not %s" % (what, type(partition_offsets).__name__)) from None
    for pair in pairs:
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError("%s, but one is %r" % (what, pair))
    return pairs


def partition_id_of(partition, topic):
    """``partition`` itself (an integer of another type, numpy's say, as an int), or its id
    if it is a ``Partition``, which must be of ``topic`` (else UnknownPartitionError: its id
    would name another partition there)."""
    if not isinstance(partition, Partition):
        return integer(partition)
    if partition.topic.name != topic.name:
        raise UnknownPartitionError("%r is a partition of topic %s, not of this consumer's topic %s"
                                    % (partition, partition.topic.name.decode(), topic.name.decode()))
    return partition.id


def check_offset(value, logical_ok=True):
    """An offset argument: an int >= 0 (numpy's integers too), or (``logical_ok``) an
    ``OffsetType``; else ValueError."""
    value = integer(value)
    if isinstance(value, bool) or not isinstance(value, int) or value >= INT64_MAX or \
            (value < 0 and not (logical_ok and value in (-1, -2))):
        raise ValueError("invalid offset %r: use an int >= 0%s"
                         % (value, " or an OffsetType" if logical_ok else " (the next offset to read)"))
    return value


# librdkafka's codes for a partition whose topic is gone (error_cb, after metadata lost it)
_GONE = (errors.UNKNOWN_TOPIC_OR_PART, errors.UNKNOWN_TOPIC, errors.UNKNOWN_PARTITION)


class Consumer:
    """Reading a topic's partitions from a librdkafka consumer, with pykafka's offsets.

    Subclasses make the handle in ``start()`` (with :meth:`_open`) and say which partitions
    the consumer holds with :meth:`_set_partitions`; they drop a partition's fetched messages
    with :meth:`_drop_buffered` and forget it with :meth:`_forget`. The parameters are
    :class:`pyrdk.simpleconsumer.SimpleConsumer`'s.
    """

    _columns_ok = True  # consume_arrow may take a fetched batch into columns (see _fetch)

    def __init__(self, topic, cluster, consumer_group, fetch_message_max_bytes, auto_commit_enable,
                 auto_commit_interval_ms, queued_max_messages, fetch_min_bytes, fetch_error_backoff_ms,
                 fetch_wait_max_ms, offsets_channel_backoff_ms, offsets_commit_max_retries, auto_offset_reset,
                 consumer_timeout_ms, reset_offset_on_start, deserializer, reset_offset_on_fetch, group_id,
                 rdkafka_config, statistics_interval_ms, stats_callback):
        auto_commit_enable = check_bool("auto_commit_enable", auto_commit_enable)
        if auto_commit_enable and not consumer_group:
            raise ValueError("auto_commit_enable requires a consumer_group")
        self._consumer_timeout_ms = check_int("consumer_timeout_ms", consumer_timeout_ms, -1)
        self._auto_commit_interval_ms = check_int("auto_commit_interval_ms", auto_commit_interval_ms, 0)
        self._auto_offset_reset = check_auto_offset_reset(auto_offset_reset)
        if deserializer is not None and not callable(deserializer):
            raise TypeError("deserializer must be callable (value, partition_key) -> (value, key)")
        self._topic = topic
        self._cluster = cluster
        self._topic_name = topic.name.decode()
        self._consumer_group = consumer_group
        self._auto_commit_enable = auto_commit_enable
        self._reset_offset_on_start = check_bool("reset_offset_on_start", reset_offset_on_start)
        self._deserializer = deserializer
        rdkafka_config = check_settings(
            rdkafka_config, fetch_message_max_bytes=fetch_message_max_bytes, queued_max_messages=queued_max_messages,
            fetch_min_bytes=fetch_min_bytes, fetch_error_backoff_ms=fetch_error_backoff_ms,
            fetch_wait_max_ms=fetch_wait_max_ms, offsets_channel_backoff_ms=offsets_channel_backoff_ms,
            offsets_commit_max_retries=offsets_commit_max_retries)
        self._commit_retries = offsets_commit_max_retries
        self._commit_backoff_ms = offsets_channel_backoff_ms
        self._config = cluster.config_for("consumer")
        self._reset_offset_on_fetch = check_bool("reset_offset_on_fetch", reset_offset_on_fetch)
        self._config.update({
            "group.id": group_id,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": False,
            "auto.offset.reset": "earliest" if self._auto_offset_reset == OffsetType.EARLIEST else "latest",
            "fetch.message.max.bytes": fetch_message_max_bytes,
            "queued.min.messages": queued_max_messages,
            "fetch.min.bytes": fetch_min_bytes,
            "fetch.error.backoff.ms": fetch_error_backoff_ms,
            "fetch.wait.max.ms": fetch_wait_max_ms,
        })
        if librdkafka_runtime_version() >= 0x02010000:  # fetch.queue.backoff.ms: since 2.1.0
            self._config["fetch.queue.backoff.ms"] = 10
        self._stats_callback = cluster.statistics(self._config, statistics_interval_ms, stats_callback)
        self._config.update(rdkafka_config)
        conf.check(self._config, _ARGUMENTS, rdkafka_config)
        cluster.check_statistics(self._config, stats_callback)
        self._handle = None
        self._outage = None
        self._gone = None  # the KafkaException of a partition librdkafka reported gone (_on_error)
        self._running = False
        self._held = {}  # partition id -> Partition: the partitions this consumer reads
        self._core = consumer_core(self._held)
        self._calls = CallState()  # what consume() raises next: a deserializer's, a callback's
        self._paused = set()
        self._stash = {}  # paused partition id -> messages fetched but not returned
        self._unverified = {}  # partition id -> a next offset set from outside, not yet seen in range
        self._last_commit = time.monotonic()
        # held by stop(): a second stop() in another thread waits for the first, then finds the
        # consumer stopped (re-entrant: a stop() from a callback of this one's is refused by
        # Handle.check_close, not left waiting for itself)
        self._stop_lock = threading.RLock()

    @property
    def topic(self) -> Topic:
        return self._topic

    @property
    def partitions(self) -> dict[int, Partition]:
        """``{partition_id: Partition}`` this consumer reads."""
        return self._held

    # -- for subclasses ------------------------------------------------------------------------

    def _open(self, handle):
        """Read from ``handle`` (a consumer ``Handle``) from now on."""
        self._handle = handle
        self._core.clear()
        self._paused.clear()
        self._stash.clear()
        self._running = True
        self._last_commit = time.monotonic()

    def _close(self, consumer_close=True):
        """Stop reading: forget what was fetched and not returned, close the handle
        (``consumer_close``: with ``rd_kafka_consumer_close`` first)."""
        self._handle.check_close()
        self._running = False
        self._core.clear()
        self._stash.clear()
        self._handle.close(consumer_close)

    def _finish_interrupted_stop(self, consumer_close=True):
        """Once stopped: finish a close of the handle that an interrupt cut short (the next
        ``Handle.close`` does), else nothing."""
        if self._handle is not None and self._handle.closing:
            self._handle.close(consumer_close)

    def _set_partitions(self, partitions):
        """Hold ``partitions`` (``{id: Partition}``) from now on."""
        self._held = partitions
        self._core.partitions = partitions

    def _drop_buffered(self, pids):
        """Forget fetched, unreturned messages of ``pids``; returns those of the buffer."""
        for pid in pids:
            self._stash.pop(pid, None)
        return self._core.take_partitions(set(pids))

    def _forget(self, pids):
        """Forget the offsets and pause of partitions no longer held."""
        for pid in pids:
            self._core.forget(pid)
            self._paused.discard(pid)
            self._unverified.pop(pid, None)

    def _positions(self):
        """``{partition id: next offset to return, or None where unknown}``."""
        return self._core.next_offsets()

    def _start_offsets(self, handle, pids, reset=(), known=None, retry=True):
        """Where each of ``pids`` starts, as pykafka's consumers start: the group's committed
        offset; else ``known[pid]`` (where a restarted consumer was); else, and for every
        partition of ``reset``, ``auto_offset_reset``, looked up with ListOffsets. Sets the
        core's positions and returns ``({pid: start offset for rd_kafka_assign}, [(pid,
        offset)] to commit)``: with a group, the starts looked up (unless
        ``reset_offset_on_fetch=False``; always for ``reset``). ``retry``: retry the offset
        fetch as commits are (:meth:`_retrying`). A ListOffsets lookup that fails leaves the
        start to librdkafka (a logical offset; the position is then unknown)."""
        known = known or {}
        committed = {}
        if self._consumer_group:
            tps = [(self._topic_name, pid) for pid in pids if pid not in reset]
            if tps:
                answer = (self._retrying("offset fetch", self._committed, handle, tps) if retry
                          else self._committed(handle, tps))
                committed = {tp.partition: tp.offset for tp in answer}
        starts, lookups = {}, {}
        for pid in pids:
            if pid not in reset and committed.get(pid, -1) >= 0:
                starts[pid] = committed[pid]
                self._unverified[pid] = starts[pid]  # a commit may lie past the end of the log now
            elif pid not in reset and known.get(pid) is not None:
                starts[pid] = known[pid]
            else:
                lookups[pid] = int(self._auto_offset_reset)
        resolved = self._resolve(handle, lookups)
        starts.update(resolved)
        for pid in pids:
            self._core.set_next(pid, starts.get(pid))
            starts.setdefault(pid, logical(self._auto_offset_reset))
        commit = []
        if self._consumer_group:
            commit = sorted((pid, offset) for pid, offset in resolved.items()
                            if pid in reset or self._reset_offset_on_fetch)
        return starts, commit

    def _check_running(self):
        check_running(self._running)

    def start(self) -> None:
        """Start consuming (each subclass's own)."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop consuming (each subclass's own)."""
        raise NotImplementedError

    def __enter__(self: _C) -> _C:
        return self

    def __exit__(self, exc_type: Optional[type[BaseException]], exc_value: Optional[BaseException],
                 traceback: Any) -> None:
        stop_at_exit(self.stop, exc_type, "consumer")

    def __del__(self):
        # The handle's own __del__ frees librdkafka; nothing may block here.
        self._running = False

    # -- consuming -----------------------------------------------------------------------------

    def consume(self, block: bool = True, unblock_event: Optional[threading.Event] = None) -> Optional[common.Message]:
        """The next message, or None: when ``block`` is False and none is ready, when
        ``consumer_timeout_ms`` passes without one, or when ``unblock_event`` is set."""
        self._check_running()
        if unblock_event is not None and not callable(getattr(unblock_event, "is_set", None)):
            raise TypeError("unblock_event must be a threading.Event or None, not %r" % (unblock_event,))
        self._calls.check()
        msg = self._core.next()
        if msg is None:
            try:
                self._fill(block, unblock_event)
            except ConsumerStoppedException:
                if not self._closed_at_exit():
                    raise
                return None  # the exit closed it under this call (a daemon thread's): it ends quietly
            msg = self._core.next()
        if msg is not None and self._deserializer is not None:
            # A deserializer error reaches the caller; the message counts as consumed.
            msg.value, msg.partition_key = check_pair("deserializer", self._deserializer(msg.value, msg.partition_key))
        self._maybe_auto_commit()
        return msg

    def __iter__(self) -> Iterator[common.Message]:
        """The messages until ``consume()`` returns None. With neither a deserializer nor
        auto-commit to run, the core hands out the buffered messages directly (fetched a
        batch at a time) and calls ``consume()`` when it has none."""
        if self._deserializer is None and not self._auto_commit_enable:
            return self._core.iterator(self._consume_blocking)
        return iter(self._consume_blocking, None)

    def _consume_blocking(self):
        return self.consume(block=True)

    def _closed_at_exit(self):
        """Whether the exit hook closed the handle: a call of a daemon thread it cut short
        ends quietly, with nothing (as after pykafka's ``stop()``), instead of a traceback
        from a dying thread."""
        handle = self._handle
        return handle is not None and handle.closed_at_exit

    def _check_batch(self, max_messages: int, timeout_ms: int) -> None:
        self._check_running()
        check_int("max_messages", max_messages, 1)
        if max_messages > MAX_BATCH:
            raise ValueError("max_messages=%d is more than one call can take (at most %d)"
                             % (max_messages, MAX_BATCH))
        check_int("timeout_ms", timeout_ms, -1)
        self._calls.check()

    def consume_batch(self, max_messages: int = BATCH, timeout_ms: int = 1000) -> list[common.Message]:
        """Up to ``max_messages`` messages, waiting at most ``timeout_ms`` for the first
        (one ``rd_kafka_consume_batch_queue`` call per batch)."""
        self._check_batch(max_messages, timeout_ms)
        if not len(self._core):
            try:
                self._fetch(max_messages, timeout_ms)
            except ConsumerStoppedException:
                if not self._closed_at_exit():
                    raise
                return []  # as consume()
        if self._deserializer is None:  # the short way: nothing per message can fail
            out = self._core.take(max_messages)
        else:
            out = []
            for _ in range(max_messages):
                msg = self._core.next()
                if msg is None:
                    break
                try:
                    msg.value, msg.partition_key = check_pair("deserializer",
                                                              self._deserializer(msg.value, msg.partition_key))
                except BaseException as exc:  # a KeyboardInterrupt too: what is ready is not lost
                    if not out:
                        raise
                    self._calls.crash(exc)  # return what is ready; raise on the next call
                    break
                out.append(msg)
        if not out:
            self._check_running()  # stop() from another thread ended the wait: raise, as consume() does
        self._maybe_auto_commit()
        return out

    def consume_arrow(self, max_messages: int = BATCH, timeout_ms: int = 1000, headers: bool = False) -> Any:
        """What ``consume_batch(max_messages, timeout_ms)`` returns, as one
        ``pyarrow.RecordBatch`` (its columns: :mod:`pyrdk.core.arrow`), with the same offsets,
        auto-commit and errors. A batch fetched from librdkafka goes into the columns with no
        Python object per record; with ``headers`` (a ``headers`` column), messages already
        buffered by ``consume()``, paused partitions, or a broker-balanced group member (whose
        fetch may drop what a rebalance made stale), it goes through Messages. Needs pyarrow
        (``pip install 'pyrdk[arrow]'``), and a consumer without a deserializer (the columns
        hold the bytes as they came)."""
        headers = arrow.check_call(self._deserializer, headers)
        self._check_batch(max_messages, timeout_ms)
        try:
            if headers or len(self._core) or self._paused or not self._columns_ok:
                if not len(self._core):
                    self._fetch(max_messages, timeout_ms)
                batch = arrow.from_messages(self._core.take(max_messages), headers)
            else:
                batch = arrow.record_batch(self._fetch(max_messages, timeout_ms, self._core.add_columns))
        except ConsumerStoppedException:
            if not self._closed_at_exit():
                raise
            return arrow.from_messages([], headers)  # as consume()
        if not batch.num_rows:
            self._check_running()  # as consume_batch()
        self._maybe_auto_commit()
        return batch

    def _fill(self, block, unblock_event):
        if not block:
            self._fetch(BATCH, 0)
            return
        timeout = self._consumer_timeout_ms
        deadline = None if timeout < 0 else time.monotonic() + timeout / 1000.0
        first = True  # one fetch at least, as consume(block=False) makes: a timeout of 0 takes what is ready
        while not len(self._core):
            if unblock_event is not None and unblock_event.is_set():
                return
            remaining = SLICE_MS if deadline is None else int((deadline - time.monotonic()) * 1000)
            if remaining <= 0 and deadline is not None and not first:
                return
            first = False
            self._fetch(BATCH, min(SLICE_MS, max(remaining, 0)))

    def _fetch(self, max_messages, timeout_ms, columns=None):
        """One batch from librdkafka into the core's buffer (a paused partition's messages
        wait in the stash); error events are raised, retriable ones logged. With ``columns``
        (the core's ``add_columns``), the batch goes into columns instead, returned; an error
        that comes with some records is kept for the next call, so that they are not lost."""
        buffered = len(self._core)

        def keep(pointers):
            # A batch a KeyboardInterrupt cut off goes into the buffer, unless the buffer
            # has it already: the next call returns it. The pure core's add() runs Python code
            # that another interrupt can cut off too (all or nothing: its buffer takes the
            # messages at once), so the batch goes KEEP_CHUNK messages at a time, each taken
            # again until it is in; the interrupts meanwhile give way to the first, raised.
            # (One that lands between this loop's own statements still ends it: a window of
            # a few bytecodes per chunk, where it was the whole conversion.)
            if not columns and len(self._core) != buffered:
                return
            for start in range(0, len(pointers), KEEP_CHUNK):
                before = len(self._core)
                while True:
                    try:
                        self._core.add(pointers[start:start + KEEP_CHUNK])
                        break
                    except (KeyboardInterrupt, SystemExit):
                        if len(self._core) != before:
                            break
        try:
            made, errs = self._handle.consume_batch(max_messages, timeout_ms, columns or self._core.add, keep)
        except BaseException:
            self._stash_paused()
            raise
        count = arrow.rows(made) if columns else made
        if count:
            self._outage.since = None
            if not columns:
                self._stash_paused()
        for exc in errs:  # error events, then an exception a callback raised
            if isinstance(exc, KafkaException) and exc.retriable and not exc.fatal:
                log.warning("%s (librdkafka retries by itself)", exc)
            elif columns and count:
                self._calls.crash(exc)
            else:
                raise exc
        try:
            self._outage.check(self._handle)  # every broker unreachable for socket_timeout_ms
            if self._gone is not None:
                self._check_gone()
            if self._unverified:
                self._check_out_of_range()
        except Exception as exc:
            if not (columns and count):
                raise
            self._calls.crash(exc)
        return made

    def _on_error(self, exc):
        """The handle's ``error_cb``: a partition of the topic reported gone (librdkafka does
        at its first metadata answer without the topic, or, within
        ``topic.metadata.propagation.max.ms`` of its first look at the topic, once that has
        passed) is noted for :meth:`_check_gone`. The rest go to the outage clock
        (``BrokerOutage.on_error``)."""
        if exc.code in _GONE:
            self._gone = exc
            return
        self._outage.on_error(exc)

    def _check_gone(self):
        """Raise ``UnknownTopicOrPartition``, as pykafka's fetch does, if fresh metadata
        (``rd_kafka_metadata``) confirms what librdkafka reported: the topic, or a partition
        this consumer holds, is no longer in the cluster. One answer without the topic (a
        broker that has not loaded it yet) is not enough."""
        reported, self._gone = self._gone, None
        try:
            md = self._handle.metadata(self._topic_name, timeout_ms=self._cluster.timeout_ms)
        except KafkaException as exc:  # no answer: the outage clock sees to that
            log.info("%s: could not confirm that the topic is gone: %s", self._topic_name, exc)
            return
        tm = md.topics.get(self._topic_name)
        if tm is None or tm.error in (errors.UNKNOWN_TOPIC_OR_PART, errors.UNKNOWN_TOPIC_ID):
            gone = "topic %r is no longer in the cluster (deleted?)" % self._topic_name
        else:
            missing = sorted(set(self._held) - {p.id for p in tm.partitions})
            if not missing:
                return
            gone = "partitions %s of topic %r are no longer in the cluster" % (missing, self._topic_name)
        raise UnknownTopicOrPartition("%s: %s; stop() this consumer, and start one again once the topic exists"
                                      % (gone, reported), code=reported.code)

    def _stash_paused(self):
        """Move the paused partitions' buffered messages to the stash."""
        if self._paused:
            for msg in self._core.take_partitions(self._paused):
                self._stash.setdefault(msg.partition_id, []).append(msg)

    def _check_out_of_range(self):
        """Brokers answer a fetch past the end of a partition with OFFSET_OUT_OF_RANGE, and
        librdkafka moves to ``auto.offset.reset``; some (Tansu) answer with no records, and the
        consumer would wait there for ever. So a position set from outside (a committed
        offset, ``reset_offsets`` to an int, ``seek``) is checked against the high watermark
        until a message of the partition comes: past the end (by the last fetch response's
        watermark, confirmed with ListOffsets), the partition moves to ``auto_offset_reset``
        as pykafka's answer to OFFSET_OUT_OF_RANGE does (with ``auto.offset.reset=error`` in
        ``rdkafka_config``, ``OffsetOutOfRangeError`` is raised instead)."""
        positions = self._core.next_offsets()
        past = {}
        beyond = {}  # {pid: next offset} past the last fetch response's watermark: to confirm
        # Another thread's reset_offsets() or seek() may change _unverified while this one
        # waits for the watermarks below (the GIL is released): an entry is dropped only if it
        # still holds the offset checked.
        for pid, nxt in list(self._unverified.items()):
            if positions.get(pid) != nxt or pid not in self._held:
                self._forget_unverified(pid, nxt)  # a message came, or the partition moved on
                continue
            if pid in self._paused:
                continue
            try:
                high = self._handle.get_watermark_offsets(self._topic_name, pid)[1]
            except KafkaException as exc:
                log.info("could not check the end of %s [%d]: %s", self._topic_name, pid, exc)
                continue
            if high < 0:
                continue  # no fetch response for it yet
            if nxt > high:
                beyond[pid] = nxt
            else:
                self._forget_unverified(pid, nxt)
        # Confirmed in one ListOffsets lookup (rd_kafka_offsets_for_times), whatever the number
        # of partitions: one rd_kafka_query_watermark_offsets per partition, in turn, takes
        # longer than a consumer_timeout_ms for hundreds of them.
        try:
            found = self._handle.offsets_for_times([(self._topic_name, pid, OFFSET_END) for pid in sorted(beyond)],
                                                   self._cluster.timeout_ms, "list offsets") if beyond else []
        except KafkaException as exc:
            log.info("could not check the end of %s %s: %s", self._topic_name, sorted(beyond), exc)
            found = []
        for tp in found:
            nxt = beyond[tp.partition]
            if tp.error:
                log.info("could not check the end of %s [%d]: %s", self._topic_name, tp.partition,
                         errors_exception(tp.error, "list offsets"))
            elif nxt > tp.offset:
                past[tp.partition] = (nxt, tp.offset)
            else:
                self._forget_unverified(tp.partition, nxt)
        if not past:
            return
        where = ", ".join("[%d] at %d (log end %d)" % (pid, nxt, high) for pid, (nxt, high) in sorted(past.items()))
        if conf.to_str("auto.offset.reset", self._config.get("auto.offset.reset", "")) == "error":
            raise OffsetOutOfRangeError("%s: offsets past the end of the log: %s" % (self._topic_name, where))
        log.warning("%s: offsets past the end of the log: %s; moving to auto_offset_reset (%s)",
                    self._topic_name, where, self._auto_offset_reset.name)
        self.reset_offsets([(pid, self._auto_offset_reset) for pid in sorted(past)])

    def _forget_unverified(self, pid, nxt):
        """Stop checking ``pid`` against the end of the log, unless it moved meanwhile."""
        if self._unverified.get(pid) == nxt:
            del self._unverified[pid]

    # -- offsets -------------------------------------------------------------------------------

    @property
    def held_offsets(self) -> dict[int, int]:
        """``{partition_id: last offset returned}``, as pykafka reports it: the offset before
        the start where nothing was returned yet, and ``OffsetType.EARLIEST`` (-2) where that
        is -1 (see :func:`held_offset`). Every partition the consumer reads is there, also
        before ``start()`` (as ``OffsetType.EARLIEST``: nothing returned yet), as in pykafka."""
        positions = self._core.next_offsets()
        return {pid: held_offset(positions.get(pid)) for pid in sorted(set(positions) | set(self._held))}

    def _require_group(self, what):
        if not self._consumer_group:
            raise ValueError("%s needs a consumer_group" % what)

    def _maybe_auto_commit(self):
        """Auto-commit if it is due, after a call took its messages: a commit that fails is
        raised by the next call, so that the messages this one took (already counted as
        consumed, and committed by the next commit) are returned, not lost; a commit that
        succeeds meanwhile drops it."""
        if auto_commit_due(self._auto_commit_enable, self._last_commit, self._auto_commit_interval_ms):
            try:
                self.commit_offsets()
            except KafkaException as exc:
                self._calls.crash(exc, _AUTO_COMMIT)

    def commit_offsets(self, partition_offsets: Optional[Iterable[tuple[Union[Partition, int], Optional[int]]]] = None
                       ) -> None:
        """Commit offsets for the consumer group (``rd_kafka_commit``), with pykafka's metadata
        (``{"consumer_id": ..., "hostname": ...}``, see :meth:`_commit_metadata`).

        :param partition_offsets: ``(partition, offset)`` pairs to commit as given (an
            offset of None, as in pykafka: the partition's held offset + 1, where the
            position is known); default: every partition's held offset + 1 (the next to
            read), where the position is known
        """
        self._check_running()
        self._require_group("commit_offsets")
        if partition_offsets is None:
            offsets = [(pid, nxt) for pid, nxt in sorted(self._core.next_offsets().items()) if nxt is not None]
        else:
            offsets = self._offsets_to_commit_given(partition_offsets)
        self._last_commit = time.monotonic()
        self._commit(self._handle, offsets)
        self._calls.discard_about(_AUTO_COMMIT)  # what a failed auto-commit left is committed now

    def _offsets_to_commit_given(self, partition_offsets):
        """``[(pid, offset)]`` of commit_offsets' ``partition_offsets``, checked; None offsets
        are the partitions' positions (those without one are left out, as by default)."""
        pairs = [(self._partition_id(p), o) for p, o in offset_pairs("commit_offsets", partition_offsets)]
        positions = self._core.next_offsets() if any(o is None for _, o in pairs) else {}
        return [(pid, check_offset(positions[pid] if o is None else o, logical_ok=False))
                for pid, o in pairs if o is not None or positions.get(pid) is not None]

    def _commit(self, handle, offsets):
        """Commit ``[(pid, offset)]`` on ``handle``, retrying retriable errors."""
        if offsets:
            metadata = self._commit_metadata()
            self._retrying("commit", handle.commit, [TopicPartition(self._topic_name, pid, offset, metadata=metadata)
                                                     for pid, offset in offsets], False, self._cluster.timeout_ms)

    def _commit_metadata(self):
        """What each commit's metadata says: pykafka's JSON, with this consumer's id."""
        return commit_metadata(b"")

    def _retrying(self, what, call, *args):
        """``call(*args)``, retried up to ``offsets_commit_max_retries`` times on a retriable
        error, waiting ``i * offsets_channel_backoff_ms`` before retry ``i``, as pykafka. A
        timeout is raised at once: librdkafka retried within it already."""
        for attempt in range(self._commit_retries + 1):
            if attempt:
                time.sleep(attempt * self._commit_backoff_ms / 1000.0)
            try:
                return call(*args)
            except KafkaException as exc:
                if not exc.retriable or isinstance(exc, KafkaTimeoutError) or attempt == self._commit_retries:
                    raise
                log.warning("%s failed (%s), retrying in %d ms", what, exc,
                            (attempt + 1) * self._commit_backoff_ms)

    def group_metadata(self) -> GroupMetadata:
        """The consumer's group metadata (``rd_kafka_consumer_group_metadata``), for a
        transactional producer's ``send_offsets_to_transaction(offsets, group_metadata)``;
        a group member's carries its generation, so that the offsets of a member the group
        has left behind are refused."""
        self._check_running()
        self._require_group("group_metadata")
        return GroupMetadata.of_consumer(self._handle, self._consumer_group.decode())

    def fetch_offsets(self) -> list[tuple[int, OffsetFetchPartitionResponse]]:
        """The group's committed offsets (``rd_kafka_committed``) as pykafka's
        ``[(partition_id, OffsetFetchPartitionResponse(offset, metadata, err))]``, by
        partition; ``offset`` is -1 where none is committed, ``metadata`` the commit's (b""
        where none came back). Works on a consumer that is not running too (made with
        ``auto_start=False``: pykafka's lag recipe). It only reads: the consumer's positions
        and the group's offsets stay as they are."""
        self._require_group("fetch_offsets")
        pids = sorted(self._held)
        if not pids:
            return []
        tps = [(self._topic_name, pid) for pid in pids]
        if self._running:
            committed = self._retrying("offset fetch", self._committed, self._handle, tps)
        else:
            handle = self._offline_handle()
            try:
                committed = self._retrying("offset fetch", self._committed, handle, tps)
            finally:
                handle.close()
        return [(tp.partition, OffsetFetchPartitionResponse(tp.offset if tp.offset >= 0 else -1,
                                                            tp.metadata or b"", tp.error))
                for tp in committed]

    def _offline_handle(self):
        """A consumer handle of the consumer's configuration for offset calls made while it
        is not running (close it when done): it joins nothing and is assigned nothing."""
        return Handle("consumer", self._config, closed_exc=ConsumerStoppedException,
                      what="offsets of group %r" % self._consumer_group if self._consumer_group
                      else "offsets of topic %s" % self._topic_name)

    def _committed(self, handle, tps):
        """``handle.committed(tps)`` within ``socket_timeout_ms``; a partition's error is raised."""
        committed = handle.committed(tps, self._cluster.timeout_ms)
        for tp in committed:
            if tp.error:
                raise errors_exception(tp.error, "offset fetch of %s [%d]" % (tp.topic, tp.partition))
        return committed

    def reset_offsets(self, partition_offsets: Optional[Iterable[tuple[Union[Partition, int],
                                                                      Union[int, datetime.datetime]]]] = None) -> None:
        """Move partitions, as pykafka does: an int ``o`` makes ``o`` the last offset
        consumed (the next message is ``o + 1``; past the end of the log, the next fetch
        moves the partition to ``auto_offset_reset``); ``OffsetType.EARLIEST`` / ``LATEST``
        or a ``datetime`` move to the first message at or after that point (looked up with
        ListOffsets; a time after the last message moves to the end). Then commit the new
        positions of the partitions moved, if the consumer has a group. Nothing moves if an
        entry is invalid.

        :param partition_offsets: ``(partition, int | OffsetType | datetime)`` pairs;
            default: every partition to ``auto_offset_reset``
        """
        self._check_running()
        targets, explicit = self._reset_targets(partition_offsets, self._handle)
        self._move(targets, explicit)
        if self._consumer_group and targets:
            self.commit_offsets(sorted(targets.items()))

    def _reset_targets(self, partition_offsets, handle):
        """``({pid: next offset}, {pid: next offset given as an int})`` of reset_offsets'
        ``partition_offsets``, checked, with OffsetTypes and datetimes looked up through
        ``handle``."""
        if partition_offsets is None:
            partition_offsets = [(pid, self._auto_offset_reset) for pid in self._held]
        targets = {}  # partition id -> the next offset to read
        lookups = {}  # partition id -> ListOffsets timestamp (ms, or -2 / -1)
        for p, value in offset_pairs("reset_offsets", partition_offsets):
            pid = self._partition_id(p)
            value = integer(value)
            if isinstance(value, datetime.datetime):
                lookups[pid] = to_timestamp_ms(value)
            elif isinstance(value, int) and not isinstance(value, bool) and value in (-1, -2):
                lookups[pid] = int(value)
            elif isinstance(value, int) and not isinstance(value, bool) and 0 <= value < INT64_MAX - 1:
                targets[pid] = value + 1
                lookups.pop(pid, None)
                continue
            else:
                raise ValueError("invalid offset %r for partition %d: use an offset >= 0, an "
                                 "OffsetType or a datetime" % (value, pid))
            targets.pop(pid, None)
        # OffsetType and datetime are resolved with ListOffsets (as pykafka does), so the
        # position is known, held_offsets is right and the commit below records it.
        explicit = dict(targets)
        targets.update(self._list_offsets(lookups, handle))
        return targets, explicit

    def _move(self, targets, explicit):
        """Make ``targets`` (``{pid: offset}``) the next offsets read (``rd_kafka_seek_partitions``);
        those of ``explicit`` are checked against the end of the log at the next fetch."""
        if not targets:  # nothing to move (pykafka's reset_offsets([]), a member holding none)
            return
        self._drop_buffered(targets)
        self._handle.seek([(self._topic_name, pid, off) for pid, off in sorted(targets.items())])
        for pid, nxt in targets.items():
            self._core.set_next(pid, nxt)
            if pid in explicit:
                self._unverified[pid] = nxt
            else:
                self._unverified.pop(pid, None)

    def _resolve(self, handle, lookups):
        """``_list_offsets`` for a start position, or ``{}`` if the lookup fails (librdkafka
        then resolves the logical offset itself). A position known in advance is what keeps a
        ``seek`` right after ``start`` from being overtaken by librdkafka's own lookup."""
        if not lookups:
            return {}
        try:
            return self._list_offsets(lookups, handle)
        except KafkaException as exc:
            log.warning("could not look up the start offsets (%s); librdkafka will", exc)
            return {}

    def _list_offsets(self, lookups, handle=None):
        """``{pid: offset}`` for ``{pid: timestamp or OffsetType}``; a time after the last
        message resolves to the end of the partition. Asked through the consumer's own
        ``handle`` (``rd_kafka_offsets_for_times``), which serves on after the client is closed."""
        handle = handle or self._handle
        out = {}
        while lookups:
            results = handle.offsets_for_times(
                [(self._topic_name, pid, ts) for pid, ts in sorted(lookups.items())], self._cluster.timeout_ms)
            after_end = {}
            for tp in results:
                if tp.error:
                    raise OffsetRequestFailedError("offset lookup for partition %d failed: %s (error %d)"
                                                   % (tp.partition, errors.err2str(tp.error), tp.error))
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
        """The id of ``p``, a ``Partition`` of this consumer's topic or a partition id; else
        UnknownPartitionError (a ``Partition`` of another topic is no partition of this consumer, as in
        pykafka: its id would name another partition here)."""
        pid = partition_id_of(p, self._topic)
        if isinstance(pid, bool) or not isinstance(pid, int) or pid not in self._held:
            raise UnknownPartitionError("unknown partition %r for this consumer (it has %s)"
                                        % (p, sorted(self._held)))
        return pid

    # -- beyond pykafka ------------------------------------------------------------------------

    def highwater(self, partition: Union[Partition, int]) -> Optional[int]:
        """The partition's high watermark (the offset the next message produced will get) as
        the last fetch response for it said, or None before the first response
        (``rd_kafka_get_watermark_offsets``, no request; kafka-python's ``highwater``)."""
        self._check_running()
        pid = self._partition_id(partition)
        high = self._handle.get_watermark_offsets(self._topic_name, pid)[1]
        return high if high >= 0 else None

    def fetched_to(self, partition: Union[Partition, int]) -> int:
        """The offset after the last one librdkafka handed this consumer for ``partition``
        (``rd_kafka_position``; -1 when unknown): past the offsets that bring no message (a
        transaction's commit or abort marker, and to a read_committed consumer an aborted
        transaction's messages). It reaches the high watermark at the end of a partition
        whose last offset is a marker, where the last message's offset + 1 does not."""
        self._check_running()
        pid = self._partition_id(partition)
        return self._handle.position([(self._topic_name, pid)])[0].offset

    def seek(self, partition: Union[Partition, int], offset: int) -> None:
        """Make ``offset`` the next offset returned for ``partition`` (``rd_kafka_seek_partitions``);
        ``offset`` may also be an ``OffsetType``, looked up with ListOffsets."""
        self._check_running()
        pid = self._partition_id(partition)
        offset = check_offset(offset)
        if offset in (OffsetType.EARLIEST, OffsetType.LATEST):
            self._move(self._list_offsets({pid: int(offset)}), {})
        else:
            self._move({pid: offset}, {pid: offset})

    def pause(self, partitions: Optional[Iterable[Union[Partition, int]]] = None) -> None:
        """Stop fetching from these partitions (default: all) (``rd_kafka_pause_partitions``).
        Messages already fetched for them are held back until ``resume()``."""
        self._check_running()
        pids = self._pids(partitions)
        self._handle.pause([(self._topic_name, pid) for pid in pids])
        self._paused.update(pids)
        for msg in self._core.take_partitions(set(pids)):
            self._stash.setdefault(msg.partition_id, []).append(msg)

    def resume(self, partitions: Optional[Iterable[Union[Partition, int]]] = None) -> None:
        """Fetch again from paused partitions (``rd_kafka_resume_partitions``, then
        ``Handle.wake_fetcher`` for each leader's, so that fetching starts now)."""
        self._check_running()
        pids = self._pids(partitions)
        self._handle.resume([(self._topic_name, pid) for pid in pids])
        leaders: dict[Optional[int], int] = {}  # leader id -> the first of its partitions
        for pid in pids:
            leader = self._held[pid].leader
            leaders.setdefault(leader.id if leader is not None else None, pid)
        for pid in leaders.values():
            self._handle.wake_fetcher(self._topic_name, pid)
        for pid in pids:
            self._paused.discard(pid)
            # Held-back messages come before anything fetched for the partition from now on.
            self._core.extend(self._stash.pop(pid, ()))

    def stats(self) -> Optional[dict[str, Any]]:
        """The last statistics snapshot librdkafka sent (a dict, parsed from its JSON), or None
        before the first or without ``statistics_interval_ms``."""
        return self._handle.stats if self._handle is not None else None

    def _pids(self, partitions):
        return sorted(self._held) if partitions is None else [self._partition_id(p) for p in partitions]
