"""Reading one ``OffsetRange`` on an executor, as Arrow record batches in the schema of
Spark's Kafka source.

Runs in a Spark Python worker: it imports pyrdk there and opens its own ``KafkaClient``
and ``SimpleConsumer`` (librdkafka handles cannot travel between processes).
"""
import logging
import time

from pyrdk.common import OffsetType
from pyrdk.exceptions import KafkaTimeoutError
from pyrdk.spark.offsets import connect, consumer_config, report_data_loss

log = logging.getLogger(__name__)

ROWS_PER_BATCH = 10000
POLL_MS = 100


def arrow_schema(include_headers):
    """The Arrow schema Spark expects for the source's rows (``pyrdk.spark.source.SCHEMA``)."""
    import pyarrow as pa
    fields = [("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()),
              ("partition", pa.int32()), ("offset", pa.int64()),
              ("timestamp", pa.timestamp("us", tz="UTC")), ("timestampType", pa.int32())]
    if include_headers:
        fields.append(("headers", pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))))
    return pa.schema(fields)


class _Columns:
    """Column lists of the rows read so far, turned into a ``RecordBatch`` on demand."""

    def __init__(self, topic, partition, schema):
        self.topic, self.partition, self.schema = topic, partition, schema
        self.headers = "headers" in schema.names
        self.clear()

    def clear(self):
        self.keys, self.values, self.offsets = [], [], []
        self.timestamps, self.types, self.header_lists = [], [], []

    def __len__(self):
        return len(self.offsets)

    def add(self, messages):
        self.keys.extend([m.partition_key for m in messages])
        self.values.extend([m.value for m in messages])
        self.offsets.extend([m.offset for m in messages])
        # Kafka timestamps are ms; Spark's are µs. An untimed record (-1 ms) stays -1 ms, as
        # Spark shows it.
        self.timestamps.extend([m.timestamp * 1000 for m in messages])
        # librdkafka numbers timestamp types 0 (none), 1 (create), 2 (log append); Kafka's
        # Java client, and so Spark, -1, 0, 1.
        self.types.extend([m.timestamp_type - 1 for m in messages])
        if self.headers:
            self.header_lists.extend([[{"key": k, "value": v} for k, v in m.headers] if m.headers else None
                                      for m in messages])

    def batch(self):
        import pyarrow as pa
        n = len(self.offsets)
        columns = [pa.array(self.keys, pa.binary()), pa.array(self.values, pa.binary()),
                   pa.array([self.topic] * n, pa.string()), pa.array([self.partition] * n, pa.int32()),
                   pa.array(self.offsets, pa.int64()),
                   pa.array(self.timestamps, pa.timestamp("us", tz="UTC")),
                   pa.array(self.types, pa.int32())]
        if self.headers:
            columns.append(pa.array(self.header_lists, self.schema.field("headers").type))
        self.clear()
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)


def read_range(opts, offset_range):
    """Yield the records of ``offset_range`` in offset order, as ``pyarrow.RecordBatch``es."""
    topic_name, pid, start, end = offset_range
    client = connect(opts)
    try:
        topic = client.topics.get(topic_name)
        if topic is None or pid not in topic.partitions:
            report_data_loss(opts, "%s [%d] is gone (topic or partition deleted)" % (topic_name, pid))
            return
        consumer = topic.get_simple_consumer(partitions=[pid], auto_offset_reset=OffsetType.EARLIEST,
                                             rdkafka_config=consumer_config(opts))
        try:
            consumer.seek(pid, start)
            yield from _read(opts, topic, consumer, offset_range)
        finally:
            consumer.stop()
    finally:
        client.close()


def _read(opts, topic, consumer, offset_range):
    topic_name, pid, start, end = offset_range
    columns = _Columns(topic_name, pid, arrow_schema(opts.include_headers))
    wanted = start  # the next offset to read
    idle_since = time.monotonic()
    while wanted < end:
        messages = consumer.consume_batch(ROWS_PER_BATCH, POLL_MS)
        if not messages:
            high = consumer.highwater(pid)
            if high is not None and wanted >= high:
                report_data_loss(opts, "%s [%d]: offsets %d to %d are not in the partition any more "
                                       "(it ends at %d)" % (topic_name, pid, wanted, end, high))
                break
            if time.monotonic() - idle_since > opts.poll_timeout_ms / 1000.0:
                raise KafkaTimeoutError("%s [%d]: no record at offset %d or later within "
                                        "kafkaConsumer.pollTimeoutMs=%d (reading up to offset %d)"
                                        % (topic_name, pid, wanted, opts.poll_timeout_ms, end))
            continue
        idle_since = time.monotonic()
        if messages[0].offset < wanted:  # fetched before the seek took effect
            messages = [m for m in messages if m.offset >= wanted]
            if not messages:
                continue
        if wanted == start and messages[0].offset > start:
            # Reading started after the requested offset: an out-of-range start (the log
            # begins later now) moved the consumer to the start of the log.
            first = topic.partitions[pid].earliest_available_offset()
            if first > start:
                report_data_loss(opts, "%s [%d]: offsets %d to %d were deleted (the log starts at %d now)"
                                 % (topic_name, pid, start, min(first, end), first))
        if messages[-1].offset >= end:
            messages = [m for m in messages if m.offset < end]
            wanted = end
        if messages:
            columns.add(messages)
            wanted = max(wanted, messages[-1].offset + 1)
        if len(columns) >= ROWS_PER_BATCH:
            yield columns.batch()
    if len(columns):
        yield columns.batch()
