"""Reading one ``OffsetRange`` on an executor, as Arrow record batches in the schema of
Spark's Kafka source.

Runs in a Spark Python worker, which imports pyrdk there and makes its own ``KafkaClient``
and ``SimpleConsumer``s (librdkafka handles cannot travel between processes). As Spark's
Kafka source caches its consumers in the executor, a worker keeps them from task to task:
per set of ``kafka.*`` options a client, and per (topic, partition) a consumer, paused
between tasks (``rd_kafka_pause_partitions``: it fetches nothing while idle). A task takes
the client (its metadata refreshed, so that a topic deleted since is seen as now) and the
partition's consumer (its metadata refreshed too: it must not fetch a re-created topic by
its old id), moved to the range's start unless it is there already (the previous task read
up to it, as a stream's micro-batches do), resumed, and reads at most the range's rows. A
new client and consumer cost a task 30 to 100 ms (the first metadata request, the
consumer's handle, its first connection), a third or more of a task of 250,000 records of
100 B. A task that fails stops its consumer; a worker keeps at most ``MAX_CONSUMERS``
consumers (the least recently used is stopped first), closes what was unused for
``IDLE_SECONDS``, and everything at exit.
"""
import atexit
import logging
import os
import time
from typing import Any

from pyrdk.common import OffsetType
from pyrdk.exceptions import KafkaException, KafkaTimeoutError, UnknownTopicOrPartition
from pyrdk.spark.offsets import connect, consumer_config, report_data_loss

log = logging.getLogger(__name__)

ROWS_PER_BATCH = 10000
POLL_MS = 100
IDLE_SECONDS = 60  # a kept client or consumer unused this long is closed by the next task
MAX_CONSUMERS = 8  # consumers a worker keeps between tasks, whatever their options


def arrow_schema(include_headers):
    """The Arrow schema Spark expects for the source's rows (``pyrdk.spark.source.SCHEMA``)."""
    import pyarrow as pa
    fields = [("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()),
              ("partition", pa.int32()), ("offset", pa.int64()),
              ("timestamp", pa.timestamp("us", tz="UTC")), ("timestampType", pa.int32())]
    if include_headers:
        fields.append(("headers", pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))))
    return pa.schema(fields)


WIDE_SLICE = 1000  # rows of a batch of more than 2 GiB cast to 32-bit offsets at a time, at most
SLICE_BYTES = 0x7FFFFFFF  # bytes of each of a slice's key, value and topic, at most: 32-bit offsets


def wide_slices(batch):
    """``batch`` (key, value and topic of 64-bit offsets) in slices of at most ``WIDE_SLICE``
    rows whose keys, values and topic names each add up to at most ``SLICE_BYTES``."""
    import numpy as np
    import pyarrow.compute as pc
    ends = [np.concatenate(([0], np.cumsum(pc.binary_length(batch.column(i)).fill_null(0).to_numpy(),
                                            dtype=np.int64))) for i in range(3)]
    out, start = [], 0
    while start < batch.num_rows:
        stop = min(batch.num_rows, start + WIDE_SLICE)
        for end in ends:  # the last row whose bytes since start fit
            stop = min(stop, int(np.searchsorted(end, end[start] + SLICE_BYTES, side="right")) - 1)
        stop = max(stop, start + 1)
        out.append(batch.slice(start, stop - start))
        start = stop
    return out


def narrow(column, to):
    """A slice of a 64-bit-offset binary or string ``column`` cast to ``to`` (32-bit offsets):
    its offsets first made to start at 0 (pyarrow's cast refuses a slice whose offsets in the
    whole array pass 2 GiB) around the slice's own data, not copied."""
    import numpy as np
    import pyarrow as pa
    validity, offsets, data = column.buffers()
    offsets = np.frombuffer(offsets, np.int64, len(column) + 1, column.offset * 8)
    first, last = int(offsets[0]), int(offsets[-1])
    validity = column.is_valid().buffers()[1] if column.null_count else None  # from the slice's first row
    # an empty data buffer (every row null or empty) is kept: a binary array needs one
    data = data.slice(first, last - first) if data is not None else pa.py_buffer(b"")
    own = pa.Array.from_buffers(column.type, len(column), [validity, pa.py_buffer(offsets - first), data],
                                null_count=column.null_count)
    return own.cast(to)


def to_spark(batch, schema):
    """A ``consume_arrow`` batch in Spark's schema (a list of batches): Kafka's ms timestamps
    as Spark's µs (an untimed record's -1 ms stays -1 ms, as Spark shows it), librdkafka's
    timestamp types (0 none, 1 create, 2 log append) as the Java client's (-1, 0, 1), and
    binary columns of 32-bit offsets."""
    import pyarrow as pa
    import pyarrow.compute as pc
    if batch.schema.field("value").type == pa.binary():
        parts = [(batch, batch.columns[:3])]
    else:  # more than 2 GiB in one batch: Spark's binary columns take less
        parts = [(part, [narrow(part.column(0), pa.binary()), narrow(part.column(1), pa.binary()),
                         narrow(part.column(2), pa.string())])
                 for part in wide_slices(batch)]
    out = []
    for part, columns in parts:
        columns = list(columns) + [part.column(3), part.column(4),
                                   part.column(5).cast(pa.timestamp("us", tz="UTC")),
                                   pc.subtract(part.column(6), pa.scalar(1, pa.int32()))]
        if "headers" in schema.names:
            columns.append(part.column("headers"))
        out.append(pa.RecordBatch.from_arrays(columns, schema=schema))
    return out


class _Kept:
    """A worker's client for one set of ``kafka.*`` options and the consumers it keeps for
    the next task, paused, by (topic name, partition id)."""

    consumers: dict[tuple[str, int], tuple[Any, float]]  # -> (consumer, last used)

    def __init__(self, opts):
        self.client = connect(opts)
        self.consumers = {}
        self.tasks = 0  # tasks reading with the client now
        self.used = time.monotonic()


# (process id, bootstrap servers, rdkafka config) -> _Kept
_cached: dict[tuple[Any, ...], _Kept] = {}


def _take(opts):
    """The kept ``_Kept`` of ``opts``, its metadata refreshed (``KafkaClient.update_cluster``),
    or a new one; first closes what was unused for ``IDLE_SECONDS``."""
    now = time.monotonic()
    pid = os.getpid()
    for key, kept in list(_cached.items()):
        if key[0] != pid:  # a forked worker's copy: the handles are its parent's
            del _cached[key]
            continue
        for tp, (consumer, used) in list(kept.consumers.items()):
            if now - used > IDLE_SECONDS:
                del kept.consumers[tp]
                _stop(consumer)
        if not kept.tasks and not kept.consumers and now - kept.used > IDLE_SECONDS:
            del _cached[key]
            kept.client.close()
    key = (pid, opts.hosts, repr(sorted(opts.rdkafka_config.items())))
    kept = _cached.get(key)
    if kept is None:
        kept = _cached[key] = _Kept(opts)  # its client just read the metadata
    else:
        kept.client.update_cluster()
    kept.tasks += 1
    kept.used = now
    return kept


def _keep(kept, tp, consumer):
    """Keep ``consumer`` of ``tp`` for the next task, paused; stops the least recently used
    consumers beyond ``MAX_CONSUMERS``."""
    now = time.monotonic()
    old = kept.consumers.pop(tp, None)
    if old is not None:
        _stop(old[0])
    try:
        consumer.pause()  # rd_kafka_pause_partitions: librdkafka drops what it fetched ahead
    except KafkaException as exc:
        log.info("could not pause a consumer to keep it: %s", exc)
        _stop(consumer)
        return
    kept.consumers[tp] = (consumer, now)
    kept.used = now
    held = sorted(((used, k, t) for k in _cached.values() for t, (_, used) in k.consumers.items()),
                  key=lambda entry: entry[0])
    for _, k, t in held[:max(0, len(held) - MAX_CONSUMERS)]:
        _stop(k.consumers.pop(t)[0])


@atexit.register
def close_kept():
    """Stop every kept consumer and close the kept clients."""
    while _cached:
        kept = _cached.popitem()[1]
        for consumer, _ in kept.consumers.values():
            _stop(consumer)
        kept.client.close()


def _stop(consumer):
    try:
        consumer.stop()
    except Exception as exc:  # a consumer given up on; nothing depends on it
        log.info("could not stop a consumer: %s", exc)


def read_range(opts, offset_range):
    """Yield the records of ``offset_range`` in offset order, as ``pyarrow.RecordBatch``es."""
    topic_name, pid, start, end = offset_range
    kept = _take(opts)
    try:
        topic = kept.client.topics.get(topic_name)
        if topic is None or pid not in topic.partitions:
            gone = kept.consumers.pop((topic_name, pid), None)
            if gone is not None:
                _stop(gone[0])
            report_data_loss(opts, "%s [%d] is gone (topic or partition deleted)" % (topic_name, pid))
            return
        reading = _Reading(kept, opts, topic, pid, start)
        done = False
        try:
            yield from _read(opts, topic, reading, offset_range)
            done = True
        except GeneratorExit:  # the task wants no more rows: the consumer is sound
            done = True
            raise
        finally:
            if done:
                _keep(kept, (topic_name, pid), reading.consumer)
            else:
                _stop(reading.consumer)
    finally:
        kept.tasks -= 1


class _Reading:
    """The consumer a task reads a partition with: the kept one, resumed, or a new one."""

    def __init__(self, kept, opts, topic, pid, start):
        self.opts, self.topic, self.pid = opts, topic, pid
        self.client = kept.client
        name = topic.name.decode()
        consumer, _ = kept.consumers.pop((name, pid), (None, 0))
        if consumer is not None and consumer.topic is not topic:  # the topic went and came back
            _stop(consumer)
            consumer = None
        self.reused = consumer is not None
        if consumer is None:
            self.consumer = self._new(start)
            return
        self.consumer = consumer
        try:
            # librdkafka fetches by topic id: a consumer must hear of a topic re-created since
            # before it fetches again (Tansu's answer to a fetch of the old id crashes
            # librdkafka), so it asks for the topic's metadata first (rd_kafka_metadata).
            consumer._handle.metadata(name, timeout_ms=kept.client.cluster.timeout_ms)
            held = consumer.held_offsets.get(pid, -1)
            if held < 0 or held + 1 != start:
                consumer.seek(pid, start)  # while paused: the resumed fetch starts there
            consumer.resume()  # rd_kafka_resume_partitions; fetching starts now
        except BaseException:
            _stop(consumer)
            raise

    def _new(self, start):
        consumer = self.topic.get_simple_consumer(partitions=[self.pid], auto_offset_reset=OffsetType.EARLIEST,
                                                  rdkafka_config=consumer_config(self.opts))
        try:
            consumer.seek(self.pid, start)
        except BaseException:
            _stop(consumer)
            raise
        return consumer

    def renew(self, offset):
        """Read on with a new consumer from ``offset``: a kept consumer's high watermark
        may date from before this task, until the first fetch response since."""
        log.info("%s [%d]: a new consumer confirms the end of the partition",
                 self.topic.name.decode(), self.pid)
        _stop(self.consumer)
        self.consumer = self._new(offset)
        self.reused = False

    def gone(self):
        """Whether the cluster's metadata no longer lists the partition (its topic deleted,
        or lost by a broker restarted meanwhile); False if the metadata cannot be had."""
        try:
            self.client.update_cluster()
        except KafkaException as exc:
            log.info("%s [%d]: no metadata: %s", self.topic.name.decode(), self.pid, exc)
            return False
        topic = self.client.topics.get(self.topic.name.decode())
        return topic is None or self.pid not in topic.partitions


def _position(consumer, topic_name, pid):
    """``consumer.fetched_to(pid)`` (-1 when unknown): after an empty ``consume_arrow()``,
    the next offset that may bring a record."""
    try:
        return consumer.fetched_to(pid)
    except KafkaException as exc:
        log.info("%s [%d]: no position: %s", topic_name, pid, exc)
        return -1


def _log_start(consumer, topic_name, pid):
    """The partition's first offset as the consumer's last fetch response gave it
    (``rd_kafka_get_watermark_offsets``, no request; -1 when unknown): a consumer whose
    offset was deleted starts again there (``auto.offset.reset`` earliest)."""
    try:
        return consumer._handle.get_watermark_offsets(topic_name, pid)[0]
    except KafkaException as exc:
        log.info("%s [%d]: no low watermark: %s", topic_name, pid, exc)
        return -1


def _report_gone(opts, topic_name, pid, wanted, end):
    report_data_loss(opts, "%s [%d] is gone (topic or partition deleted) with offsets %d to %d unread"
                     % (topic_name, pid, wanted, end))


def _read(opts, topic, reading, offset_range):
    import pyarrow.compute as pc
    topic_name, pid, start, end = offset_range
    schema = arrow_schema(opts.include_headers)
    wanted = start  # the next offset to read
    idle_since = time.monotonic()
    fresh = not reading.reused  # the consumer's high watermark is of this task's fetches
    while wanted < end:
        # At most the rows left: the consumer then stops at ``end``, where a stream's next
        # micro-batch starts, and the next task reads on without a seek.
        try:
            batch = reading.consumer.consume_arrow(min(ROWS_PER_BATCH, end - wanted), POLL_MS,
                                                   headers=opts.include_headers)
        except UnknownTopicOrPartition:  # librdkafka saw the topic go from the metadata
            _report_gone(opts, topic_name, pid, wanted, end)
            break
        if not batch.num_rows:
            if _position(reading.consumer, topic_name, pid) >= end:
                break  # the rest of the range holds no record (a transaction's marker, say)
            low = _log_start(reading.consumer, topic_name, pid)
            if low > wanted:  # deleted: the consumer reads on from the log's start, if before the end
                report_data_loss(opts, "%s [%d]: offsets %d to %d were deleted (the log starts at %d now)"
                                 % (topic_name, pid, wanted, min(low, end), low))
                if low >= end:
                    break
                wanted = low
                continue
            high = reading.consumer.highwater(pid)
            if high is not None and wanted >= high and not fresh:
                reading.renew(wanted)
                fresh = True
                continue
            if high is not None and wanted >= high:
                report_data_loss(opts, "%s [%d]: offsets %d to %d are not in the partition, which ends at "
                                       "%d (truncated, or an endingOffsets past its end)"
                                 % (topic_name, pid, wanted, end, high))
                break
            if time.monotonic() - idle_since > opts.poll_timeout_ms / 1000.0:
                if reading.gone():
                    _report_gone(opts, topic_name, pid, wanted, end)
                    break
                raise KafkaTimeoutError("%s [%d]: no record at offset %d or later within "
                                        "kafkaConsumer.pollTimeoutMs=%d (reading up to offset %d)"
                                        % (topic_name, pid, wanted, opts.poll_timeout_ms, end))
            continue
        idle_since = time.monotonic()
        offsets = batch.column("offset")  # ascending: one partition's
        if offsets[0].as_py() < wanted:  # fetched before the seek took effect
            batch = batch.slice(pc.sum(pc.less(offsets, wanted)).as_py())
            if not batch.num_rows:
                continue
            offsets = batch.column("offset")
        fresh = True
        first = offsets[0].as_py()
        if wanted == start and first > start:
            # Reading started after the requested offset: an out-of-range start (the log
            # begins later now) moved the consumer to the start of the log.
            earliest = topic.partitions[pid].earliest_available_offset()
            if earliest > start:
                report_data_loss(opts, "%s [%d]: offsets %d to %d were deleted (the log starts at %d now)"
                                 % (topic_name, pid, start, min(earliest, end), earliest))
        if offsets[-1].as_py() >= end:
            batch = batch.slice(0, pc.sum(pc.less(offsets, end)).as_py())
            wanted = end
        if batch.num_rows:
            wanted = max(wanted, batch.column("offset")[-1].as_py() + 1)
            yield from to_spark(batch, schema)
