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


WIDE_SLICE = 1000  # rows of a batch of more than 2 GiB cast to 32-bit offsets at a time


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
        parts = [(part, [part.column(0).cast(pa.binary()), part.column(1).cast(pa.binary()),
                         part.column(2).cast(pa.string())])
                 for part in (batch.slice(i, WIDE_SLICE) for i in range(0, batch.num_rows, WIDE_SLICE))]
    out = []
    for part, columns in parts:
        columns = list(columns) + [part.column(3), part.column(4),
                                   part.column(5).cast(pa.timestamp("us", tz="UTC")),
                                   pc.subtract(part.column(6), pa.scalar(1, pa.int32()))]
        if "headers" in schema.names:
            columns.append(part.column("headers"))
        out.append(pa.RecordBatch.from_arrays(columns, schema=schema))
    return out


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
    import pyarrow.compute as pc
    topic_name, pid, start, end = offset_range
    schema = arrow_schema(opts.include_headers)
    wanted = start  # the next offset to read
    idle_since = time.monotonic()
    while wanted < end:
        batch = consumer.consume_arrow(ROWS_PER_BATCH, POLL_MS, headers=opts.include_headers)
        if not batch.num_rows:
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
        offsets = batch.column("offset")  # ascending: one partition's
        if offsets[0].as_py() < wanted:  # fetched before the seek took effect
            batch = batch.slice(pc.sum(pc.less(offsets, wanted)).as_py())
            if not batch.num_rows:
                continue
            offsets = batch.column("offset")
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
