"""SimpleConsumer: pykafka's consumer of explicit partitions, on librdkafka's consumer
(``rd_kafka_assign`` + ``rd_kafka_consume_batch_queue``).

librdkafka prefetches into its queue; the consumer takes batches from it into the core's
buffer and hands messages out one by one (:class:`pyrdk.consumer.Consumer` does the reading
and keeps pykafka's offsets).

:class:`OwnedPartition` is a compatibility shim: pykafka's per-partition state, as programs
written for pykafka read it from ``consumer._partitions``.
"""
from __future__ import annotations

import datetime
import itertools
import logging
import uuid
import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Optional, Union

from pyrdk.common import OffsetType, check_bool, check_config, weak_method
from pyrdk.consumer import Consumer, check_group, check_isolation_level, commit_metadata, partition_id_of
from pyrdk.exceptions import (ConsumerStoppedException, KafkaException, KafkaTimeoutError, NoBrokersAvailableError,
                              SocketDisconnectedError)
from pyrdk.partition import Partition
from pyrdk.rd.callbacks import Callbacks
from pyrdk.rd.handle import Handle

if TYPE_CHECKING:
    from pyrdk.cluster import Cluster
    from pyrdk.topic import Topic

__all__ = ["OwnedPartition", "SimpleConsumer"]

log = logging.getLogger(__name__)

MAGIC_OFFSETS = [OffsetType.EARLIEST, OffsetType.LATEST]  # pykafka's name: the offsets that are not offsets


class SimpleConsumer(Consumer):
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
    :param reset_offset_on_start: start from ``auto_offset_reset`` even with committed
        offsets (and commit that start at once, with a group)
    :param deserializer: ``(value, partition_key) -> (value, partition_key)``
    :param reset_offset_on_fetch: with a group, commit the start of a partition that has
        no committed offset at once (pykafka's start-up ``fetch_offsets()``); False keeps
        start-up read-only. (An out-of-range fetch moves to ``auto_offset_reset`` either
        way, as in pykafka; ``rdkafka_config={"auto.offset.reset": "error"}`` makes it raise
        ``OffsetOutOfRangeError``.)
    :param isolation_level: ``isolation.level``: ``"read_committed"`` (the default, as
        librdkafka's: messages of open or aborted transactions are not returned) or
        ``"read_uncommitted"``
    :param rdkafka_config: any librdkafka properties, applied last
    :param statistics_interval_ms: ``statistics.interval.ms`` (None: the client's); see :meth:`stats`
    :param stats_callback: called with each statistics snapshot, a dict (None: the client's)

    pyrdk sets ``fetch.queue.backoff.ms=10``: librdkafka's default (1000) stalls a fast
    consumer each time its prefetch queue fills. ``num_consumer_fetchers`` and
    ``compacted_topic`` are accepted and ignored (librdkafka fetches per broker and reads
    compacted topics as any other), as are ``generation_id`` and ``consumer_id``, which
    pykafka 2.8 ignored too (its :attr:`consumer_id` property names the consumer in the
    commit metadata).
    """

    def __init__(self, topic: Topic, cluster: Cluster, consumer_group: Union[str, bytes, None] = None,
                 partitions: Optional[Iterable[Union[Partition, int]]] = None,
                 fetch_message_max_bytes: int = 1024 * 1024, num_consumer_fetchers: int = 1,
                 auto_commit_enable: bool = False, auto_commit_interval_ms: int = 60 * 1000,
                 queued_max_messages: int = 100000, fetch_min_bytes: int = 1, fetch_error_backoff_ms: int = 500,
                 fetch_wait_max_ms: int = 100, offsets_channel_backoff_ms: int = 1000,
                 offsets_commit_max_retries: int = 5, auto_offset_reset: OffsetType = OffsetType.EARLIEST,
                 consumer_timeout_ms: int = -1, auto_start: bool = True, reset_offset_on_start: bool = False,
                 compacted_topic: bool = False, generation_id: int = -1, consumer_id: bytes = b"",
                 deserializer: Optional[Callable[[Any, Any], tuple[Any, Any]]] = None,
                 reset_offset_on_fetch: bool = True, isolation_level: str = "read_committed",
                 rdkafka_config: Optional[dict[str, Any]] = None, use_rdkafka: Any = None,
                 statistics_interval_ms: Optional[int] = None,
                 stats_callback: Optional[Callable[[dict[str, Any]], None]] = None) -> None:
        if consumer_group is not None:
            consumer_group = check_group(consumer_group)
        # Without a consumer group librdkafka still needs a group.id to assign; pyrdk never
        # commits under this one.
        group_id = (consumer_group or ("pyrdk-simple-%s" % uuid.uuid4().hex).encode()).decode()
        # session.timeout.ms is also how long librdkafka holds a commit no coordinator takes
        # (and rd_kafka_consumer_close waits for it); a consumer that joins no group needs no
        # session: the commit then ends with the wait for it, socket_timeout_ms.
        rdkafka_config = {"isolation.level": check_isolation_level(isolation_level),
                          "session.timeout.ms": cluster.timeout_ms,
                          **check_config("rdkafka_config", rdkafka_config)}
        super().__init__(
            topic, cluster, consumer_group, fetch_message_max_bytes, auto_commit_enable,
            auto_commit_interval_ms, queued_max_messages, fetch_min_bytes, fetch_error_backoff_ms,
            fetch_wait_max_ms, offsets_channel_backoff_ms, offsets_commit_max_retries, auto_offset_reset,
            consumer_timeout_ms, reset_offset_on_start, deserializer, reset_offset_on_fetch, group_id,
            rdkafka_config, statistics_interval_ms, stats_callback)
        self._generation_id = -1  # pykafka 2.8 ignores both arguments (deprecated since 2.7)
        self._consumer_id = b""
        self._metadata = commit_metadata(self._consumer_id)
        self._owned_partitions: dict[int, OwnedPartition] = {}  # for _partitions
        self._set_partitions(self._select_partitions(partitions))
        if check_bool("auto_start", auto_start):
            self.start()

    @property
    def consumer_id(self) -> bytes:
        """The id written into the metadata of each commit (pykafka's; b"" unless set, as a
        balanced consumer sets it for the consumer of its partitions)."""
        return self._consumer_id

    @consumer_id.setter
    def consumer_id(self, value: bytes) -> None:
        self._consumer_id = value
        self._metadata = commit_metadata(value)

    @property
    def generation_id(self) -> int:
        """pykafka's generation id of group requests (kept, not sent: librdkafka commits as a
        consumer outside the group's generations)."""
        return self._generation_id

    @generation_id.setter
    def generation_id(self, value: int) -> None:
        self._generation_id = value

    def _commit_metadata(self):
        return self._metadata

    # -- pykafka's private state, for programs that read it ------------------------------------

    @property
    def _partitions(self):
        """pykafka's ``{Partition: OwnedPartition}`` (a compatibility shim: live views of this
        consumer's positions; see :class:`OwnedPartition`)."""
        return {op.partition: op for op in self._partitions_by_id.values()}

    @property
    def _partitions_by_id(self):
        """pykafka's ``{partition_id: OwnedPartition}`` (a compatibility shim)."""
        owned = self._owned_partitions
        for pid in list(owned):
            if pid not in self._held or owned[pid].partition is not self._held[pid]:
                del owned[pid]
        for pid, partition in self._held.items():
            if pid not in owned:
                owned[pid] = OwnedPartition(partition, self)
        return dict(sorted(owned.items()))

    @property
    def partition_cycle(self):
        """pykafka's ``itertools.cycle`` over the consumer's ``OwnedPartition`` objects, in
        partition order (a compatibility shim: pyrdk hands out messages from librdkafka's queue,
        not partition by partition). The same iterator each time, as pykafka's attribute was;
        assigning another replaces it."""
        cycle = getattr(self, "_partition_cycle", None)
        if cycle is None:
            cycle = self._partition_cycle = itertools.cycle(list(self._partitions_by_id.values()))
        return cycle

    @partition_cycle.setter
    def partition_cycle(self, value):
        self._partition_cycle = value

    def _select_partitions(self, partitions):
        everything = self._topic.partitions
        if partitions is None:
            return dict(everything)
        if isinstance(partitions, (str, bytes, Partition)) or not hasattr(partitions, "__iter__"):
            raise TypeError("partitions must be a list of Partition objects or ids, not %r" % (partitions,))
        chosen = {}
        for p in partitions:
            pid = partition_id_of(p, self._topic)
            if isinstance(pid, bool) or not isinstance(pid, int):
                raise TypeError("partitions must be Partition objects or ids, not %r" % (p,))
            if pid not in everything:
                raise ValueError("topic %s has no partition %d (it has %s)"
                                 % (self._topic_name, pid, sorted(everything)))
            chosen[pid] = everything[pid]
        return chosen

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        """Create the librdkafka consumer and assign the partitions at their start offsets,
        as pykafka's start does: the committed offset; else, after a ``stop()``, the offset
        after the last one returned; else (and always with ``reset_offset_on_start``)
        ``auto_offset_reset``, looked up with ListOffsets and, with a group, committed at
        once (see :class:`pyrdk.consumer.Consumer`)."""
        if self._running:
            return
        self._outage = self._cluster.broker_outage()
        handle = Handle("consumer", self._config, Callbacks(on_error=weak_method(self, "_on_error", None)),
                        closed_exc=ConsumerStoppedException, stats_callback=self._stats_callback)
        try:
            pids = sorted(self._held)
            before = self._core.next_offsets()  # after a stop(): where it was
            try:
                starts, commit = self._start_offsets(handle, pids, reset=pids if self._reset_offset_on_start else (),
                                                     known=before)
            except (KafkaTimeoutError, SocketDisconnectedError, NoBrokersAvailableError) as exc:
                # The error events of the connections are in the queue, not served yet: a
                # refused certificate or login is what to raise, not the timeout it caused.
                reason = handle.queued_reason(exc)
                if reason is exc:
                    raise
                raise reason from None
            handle.assign([(self._topic_name, pid, offset) for pid, offset in sorted(starts.items())])
        except BaseException:
            handle.close()
            raise
        self._open(handle)
        try:
            self._commit(handle, commit)
        except KafkaException as exc:  # as pykafka: the consumer starts all the same
            log.warning("could not commit the start offsets %s: %s", commit, exc)

    def stop(self) -> None:
        """Commit held offsets if auto-commit is on, then destroy the consumer
        (``rd_kafka_destroy`` without ``rd_kafka_consumer_close``: it has no group
        membership to leave and commits nothing more, and its wait for a coordinator a
        commit still waits on, one that hangs, had no end). Once stopped, it finishes a
        close an interrupt cut short, else does nothing (another thread's stop() meanwhile
        is waited for)."""
        with self._stop_lock:
            if not self._running:
                self._finish_interrupted_stop(consumer_close=False)
                return
            try:
                if self._auto_commit_enable:
                    self.commit_offsets()
            finally:
                self._close(consumer_close=False)

    # -- offsets of a consumer not started yet --------------------------------------------------

    def _before_first_start(self):
        """Whether the consumer was made with ``auto_start=False`` and not started since."""
        return not self._running and self._handle is None

    def reset_offsets(self, partition_offsets: Optional[Iterable[tuple[Union[Partition, int],
                                                                      Union[int, datetime.datetime]]]] = None) -> None:
        """See :meth:`pyrdk.consumer.Consumer.reset_offsets`. As in pykafka, it also works
        before the first ``start()`` (``auto_start=False``): the partitions are moved where
        ``start()`` begins (OffsetTypes and datetimes looked up, and with a group the new
        positions committed, through a handle of its own). A stopped consumer raises
        ``ConsumerStoppedException``."""
        if not self._before_first_start():
            return super().reset_offsets(partition_offsets)
        handle = self._offline_handle()
        try:
            targets, explicit = self._reset_targets(partition_offsets, handle)
            for pid, nxt in targets.items():
                self._core.set_next(pid, nxt)
                if pid in explicit:
                    self._unverified[pid] = nxt  # checked against the end of the log once started
                else:
                    self._unverified.pop(pid, None)
            if self._consumer_group and targets:
                self._commit(handle, sorted(targets.items()))
        finally:
            handle.close()

    def commit_offsets(self, partition_offsets: Optional[Iterable[tuple[Union[Partition, int], Optional[int]]]] = None
                       ) -> None:
        """See :meth:`pyrdk.consumer.Consumer.commit_offsets`. As in pykafka, it also works
        before the first ``start()`` (``auto_start=False``), through a handle of its own; a
        stopped consumer raises ``ConsumerStoppedException``."""
        if not self._before_first_start():
            return super().commit_offsets(partition_offsets)
        self._require_group("commit_offsets")
        if partition_offsets is None:
            offsets = [(pid, nxt) for pid, nxt in sorted(self._core.next_offsets().items()) if nxt is not None]
        else:
            offsets = self._offsets_to_commit_given(partition_offsets)
        if not offsets:
            return
        handle = self._offline_handle()
        try:
            self._commit(handle, offsets)
        finally:
            handle.close()

    def __repr__(self) -> str:
        return "<pyrdk.simpleconsumer.SimpleConsumer at %#x (topic=%s, consumer_group=%s)>" % (
            id(self), self._topic_name, self._consumer_group)


class OwnedPartition:
    """pykafka's ``OwnedPartition``, a compatibility shim: one partition of a
    :class:`SimpleConsumer` as programs written for pykafka read it from
    ``consumer._partitions`` (``{Partition: OwnedPartition}``) or
    ``consumer._partitions_by_id``. A live view of the consumer's position:

    - ``partition``: the :class:`pyrdk.partition.Partition`;
    - ``last_offset_consumed``: the last offset returned, -1 before offset 0 (pykafka's
      value; ``held_offsets`` reports that as ``OffsetType.EARLIEST``);
    - ``next_offset``: the next offset ``consume()`` returns (``last_offset_consumed + 1``).

    To move a partition, use ``consumer.reset_offsets`` (pykafka's recipes do).
    """

    def __init__(self, partition: Partition, consumer: SimpleConsumer) -> None:
        self.partition = partition
        self._consumer = weakref.ref(consumer)

    @property
    def last_offset_consumed(self) -> int:
        consumer = self._consumer()
        nxt = consumer._positions().get(self.partition.id) if consumer is not None else None
        return -1 if nxt is None else nxt - 1

    @property
    def next_offset(self) -> int:
        return self.last_offset_consumed + 1

    def __repr__(self):
        return "<pyrdk.simpleconsumer.OwnedPartition (partition=%d, last_offset_consumed=%d)>" % (
            self.partition.id, self.last_offset_consumed)
