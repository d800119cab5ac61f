"""SimpleConsumer: pykafka's consumer of explicit partitions, on librdkafka's consumer
(``rd_kafka_assign`` + ``rd_kafka_consume_batch_queue``).

librdkafka prefetches into its queue; the consumer takes batches from it into the core's
buffer and hands messages out one by one (:class:`pyrdk.consumer.Consumer` does the reading
and keeps pykafka's offsets).
"""
import uuid

from pyrdk.common import OffsetType
from pyrdk.consumer import Consumer, check_isolation_level, logical
from pyrdk.exceptions import ConsumerStoppedException
from pyrdk.partition import Partition
from pyrdk.rd.callbacks import Callbacks
from pyrdk.rd.handle import Handle
from pyrdk.rd.partitions import OFFSET_INVALID


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
    :param reset_offset_on_start: start from ``auto_offset_reset`` even with committed offsets
    :param deserializer: ``(value, partition_key) -> (value, partition_key)``
    :param reset_offset_on_fetch: False makes an out-of-range fetch raise
        ``OffsetOutOfRangeError`` instead of resetting (``auto.offset.reset=error``)
    :param isolation_level: ``isolation.level``: ``"read_committed"`` (the default, as
        librdkafka's: messages of open or aborted transactions are not returned) or
        ``"read_uncommitted"``
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
                 isolation_level="read_committed", rdkafka_config=None, use_rdkafka=None,
                 statistics_interval_ms=None, stats_callback=None):
        if consumer_group is not None and not isinstance(consumer_group, (bytes, str)):
            raise TypeError("consumer_group must be bytes or str, not %s" % type(consumer_group).__name__)
        if isinstance(consumer_group, str):
            consumer_group = consumer_group.encode()
        # Without a consumer group librdkafka still needs a group.id to assign; pyrdk never
        # commits under this one.
        group_id = (consumer_group or ("pyrdk-simple-%s" % uuid.uuid4().hex).encode()).decode()
        rdkafka_config = dict({"isolation.level": check_isolation_level(isolation_level)}, **(rdkafka_config or {}))
        super().__init__(
            topic, cluster, consumer_group, fetch_message_max_bytes, auto_commit_enable,
            auto_commit_interval_ms, queued_max_messages, fetch_min_bytes, fetch_error_backoff_ms,
            fetch_wait_max_ms, offsets_channel_backoff_ms, offsets_commit_max_retries, auto_offset_reset,
            consumer_timeout_ms, reset_offset_on_start, deserializer, reset_offset_on_fetch, group_id,
            rdkafka_config, statistics_interval_ms, stats_callback)
        self._generation_id = generation_id
        self._consumer_id = consumer_id
        self._set_partitions(self._select_partitions(partitions))
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

    def start(self):
        """Create the librdkafka consumer and assign the partitions at their start offsets:
        the committed offset; else, after a ``stop()``, the offset after the last one
        returned; else (and always with ``reset_offset_on_start``) ``auto_offset_reset``,
        looked up with ListOffsets."""
        if self._running:
            return
        self._outage = self._cluster.broker_outage()
        handle = Handle("consumer", self._config, Callbacks(on_error=self._outage.on_error),
                        closed_exc=ConsumerStoppedException, stats_callback=self._stats_callback)
        try:
            committed = {}
            if self._consumer_group and not self._reset_offset_on_start:
                committed = {tp.partition: tp.offset for tp in handle.committed(
                    [(self._topic_name, pid) for pid in self._partitions])}
            starts = {}
            before = self._core.next_offsets()  # after a stop(): where it was
            for pid in sorted(self._partitions):
                offset = committed.get(pid, OFFSET_INVALID)
                if offset < 0 and not self._reset_offset_on_start and before.get(pid) is not None:
                    offset = before[pid]  # restarted: go on from where it was
                starts[pid] = offset
                self._core.set_next(pid, offset if offset >= 0 else None)  # None: nothing returned yet
            starts.update(self._resolve({pid: int(self._auto_offset_reset)
                                         for pid, offset in starts.items() if offset < 0}))
            start_logical = logical(self._auto_offset_reset)
            handle.assign([(self._topic_name, pid, offset if offset >= 0 else start_logical)
                           for pid, offset in sorted(starts.items())])
        except BaseException:
            handle.close()
            raise
        self._open(handle)

    def stop(self):
        """Commit held offsets if auto-commit is on, then close the consumer
        (``rd_kafka_consumer_close``, ``rd_kafka_destroy``)."""
        if not self._running:
            return
        try:
            if self._auto_commit_enable:
                self.commit_offsets()
        finally:
            self._close()

    def __repr__(self):
        return "<pyrdk.simpleconsumer.SimpleConsumer at %#x (topic=%s, consumer_group=%s)>" % (
            id(self), self._topic_name, self._consumer_group)
