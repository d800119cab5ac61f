"""``KafkaDataSource``: the ``pyrdk`` format, a PySpark Python data source for Kafka.

Where each part runs: the data source, the readers' planning (``partitions``,
``latestOffset``...) and the writers' ``commit`` run on the driver; ``read`` and
``write`` run in executors' Python workers, which open their own pyrdk clients. Readers
and writers hold only plain data (the checked options, offset ranges), so Spark can
pickle them.
"""
import logging

from pyspark.sql.datasource import (DataSource, DataSourceReader, DataSourceStreamReader,
                                    DataSourceStreamWriter, DataSourceWriter, InputPartition,
                                    WriterCommitMessage)
from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, LongType, StringType, StructField,
                               StructType, TimestampType)

from pyrdk.exceptions import ConfigurationError
from pyrdk.spark import offsets
from pyrdk.spark.fetch import read_range
from pyrdk.spark.options import ReadOptions, WriteOptions, check_stream
from pyrdk.spark.produce import check_schema, write_batches, write_rows

try:  # Spark hands these writers Arrow record batches instead of Rows
    from pyspark.sql.datasource import DataSourceArrowWriter
except ImportError:
    DataSourceArrowWriter = DataSourceWriter  # type: ignore[misc,assignment]  # Spark without Arrow writers
try:
    from pyspark.sql.datasource import DataSourceStreamArrowWriter
except ImportError:
    DataSourceStreamArrowWriter = DataSourceStreamWriter  # type: ignore[misc,assignment]  # Spark without Arrow writers
try:  # Spark >= 4.2: Trigger.AvailableNow may then honour maxOffsetsPerTrigger
    from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow
except ImportError:
    SupportsTriggerAvailableNow = object  # type: ignore[misc,assignment]  # the mix-in of Spark >= 4.2 only

log = logging.getLogger(__name__)

SCHEMA = StructType([
    StructField("key", BinaryType()),
    StructField("value", BinaryType()),
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("offset", LongType()),
    StructField("timestamp", TimestampType()),
    StructField("timestampType", IntegerType()),
])
HEADERS = StructField("headers", ArrayType(StructType([StructField("key", StringType()),
                                                       StructField("value", BinaryType())])))


def schema(include_headers):
    """The rows' schema: Spark's Kafka source's, with ``headers`` when ``includeHeaders``."""
    return StructType(SCHEMA.fields + [HEADERS]) if include_headers else SCHEMA


class KafkaDataSource(DataSource):
    """Kafka through pyrdk, with the options and schema of Spark's Kafka connector:
    ``spark.read.format("pyrdk").option("kafka.bootstrap.servers", ...)``."""

    @classmethod
    def name(cls):
        return "pyrdk"

    def schema(self):
        # Checks the options now, so that load() fails on a bad one (what only a batch query
        # refuses, such as startingOffsets=latest, fails when the query runs).
        return schema(ReadOptions(self.options, streaming=True).include_headers)

    def reader(self, schema):
        opts = ReadOptions(self.options, streaming=False)
        _check_read_schema(schema, opts)
        return KafkaBatchReader(opts)

    def streamReader(self, schema):
        check_stream(self.options)
        opts = ReadOptions(self.options, streaming=True)
        _check_read_schema(schema, opts)
        return KafkaStreamReader(opts)

    def writer(self, schema, overwrite):
        return KafkaBatchWriter(_write_options(self.options, schema, overwrite))

    def streamWriter(self, schema, overwrite):
        # overwrite: outputMode("complete"), which Spark's Kafka sink takes too (it truncates
        # nothing: each micro-batch writes the whole result again)
        return KafkaStreamWriter(_write_options(self.options, schema, False))


def _check_read_schema(given, opts):
    """``ConfigurationError`` for a schema given with ``.schema()`` that is not the source's own:
    its Arrow batches have the fixed columns, which such a schema would take by position or
    refuse in the first task with rows (as Spark's Kafka source, refused when the query is planned)."""
    fixed = schema(opts.include_headers)
    if given is not None and [(f.name, f.dataType) for f in given.fields] != \
            [(f.name, f.dataType) for f in fixed.fields]:
        raise ConfigurationError("the pyrdk source has a fixed schema (%s) and takes no other: remove "
                                 ".schema(%s), and select or cast the columns after load()"
                                 % (fixed.simpleString(), given.simpleString()))


def _write_options(options, schema, overwrite):
    if overwrite:
        raise ConfigurationError("Kafka topics can only be appended to: use mode('append'), not "
                                 "mode('overwrite')")
    opts = WriteOptions(options)
    check_schema(schema, opts)
    return opts


def _read(opts, partition):
    if partition.value is None:  # Spark's stand-in when there is nothing to read
        return iter(())
    return read_range(opts, partition.value)


class KafkaBatchReader(DataSourceReader):
    """A batch read: one input partition per offset range."""

    def __init__(self, opts):
        self._opts = opts

    def partitions(self):
        opts = self._opts
        with offsets.connect(opts) as client:
            parts = offsets.topic_partitions(client, opts.subscription, strict=True)
            ends = offsets.end_offsets(client, opts, parts)
            starts = offsets.resolve(client, opts.starting, parts, ends)
            until = offsets.resolve(client, opts.ending, parts, ends)
        offsets.check_order(opts, starts, until)
        until = offsets.within_the_log(opts, until, ends)
        ranges = offsets.ranges(opts, starts, until)
        ranges = offsets.split(ranges, opts.min_partitions, opts.max_records_per_partition)
        return [InputPartition(r) for r in ranges]

    def read(self, partition):
        return _read(self._opts, partition)


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """A streaming read. The stream offset is Spark's ``{"topic": {"partition": offset}}``,
    the next offset to read per partition; Spark's checkpoint keeps it, so a restarted
    query goes on exactly where it stopped. Partitions that appear later start at their
    earliest offset.

    ``latestOffset(start, limit)`` takes Spark 4.2's admission control (``limit`` comes
    from ``maxOffsetsPerTrigger``); Spark 4.0 and 4.1 call it without arguments, and the
    limit then counts from the end of the previous micro-batch this reader planned. With
    ``trigger(availableNow=True)`` on Spark 4.2 and later, the query reads up to the ends
    the partitions had when it started, in micro-batches of ``maxOffsetsPerTrigger``.
    """

    def __init__(self, opts):
        self._opts = opts
        self._client = None
        self._last = None  # the last offsets planned, for Spark 4.0 / 4.1
        self._target = None  # the ends to stop at, under Trigger.AvailableNow

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_client"] = None  # librdkafka handles stay in the driver's process
        return state

    def _connect(self):
        if self._client is None:
            self._client = offsets.connect(self._opts)
        return self._client

    def _ends(self):
        client = self._connect()
        parts = offsets.topic_partitions(client, self._opts.subscription, strict=False)
        return parts, offsets.end_offsets(client, self._opts, parts)

    def initialOffset(self):
        client = self._connect()
        parts = offsets.topic_partitions(client, self._opts.subscription, strict=True)
        ends = offsets.end_offsets(client, self._opts, parts)
        self._last = offsets.resolve(client, self._opts.starting, parts, ends)
        if self._target is not None:  # prepared before the start (Spark does): its ends may come before it
            self._target = ends
        return offsets.to_json(self._last)

    def getDefaultReadLimit(self):
        from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows  # Spark >= 4.2
        limit = self._opts.max_offsets_per_trigger
        return ReadAllAvailable() if limit is None else ReadMaxRows(limit)

    def prepareForTriggerAvailableNow(self):
        self._target = self._ends()[1]

    def latestOffset(self, start=None, limit=None):
        parts, ends = self._ends()
        if self._target is not None:  # nothing that came after the query started
            ends = {tp: min(end, self._target[tp]) for tp, end in ends.items() if tp in self._target}
        if start is not None:
            begin = offsets.from_json(start)
            max_rows = getattr(limit, "max_rows", None)
        else:
            begin = self._last
            max_rows = self._opts.max_offsets_per_trigger
        if max_rows is not None and begin is not None:
            new = {name: [pid for pid in pids if (name, pid) not in begin] for name, pids in parts.items()}
            begin = dict(begin)
            begin.update(offsets.earliest_offsets(self._connect(), new))
            ends = offsets.rate_limit(begin, ends, max_rows)
        return offsets.to_json(ends)

    def partitions(self, start, end):
        begin, until = offsets.from_json(start), offsets.from_json(end)
        self._last = until
        new = {}
        for topic, pid in until:
            if (topic, pid) not in begin:
                new.setdefault(topic, []).append(pid)
        if new:  # appeared since the last micro-batch: read from their start
            begin.update(offsets.earliest_offsets(self._connect(), new))
        ranges = offsets.ranges(self._opts, begin, until)
        return [InputPartition(r) for r in offsets.split(ranges, self._opts.min_partitions,
                                                           self._opts.max_records_per_partition)]

    def read(self, partition):
        return _read(self._opts, partition)

    def commit(self, end):
        pass  # Spark's checkpoint holds the offsets; nothing is committed to Kafka

    def stop(self):
        if self._client is not None:
            self._client.close()
            self._client = None


class Written(WriterCommitMessage):
    """What a write task reports to the driver: how many rows it wrote."""

    def __init__(self, count):
        self.count = count


def _write(opts, iterator, arrow):
    """Arrow record batches where this Spark hands them (its Arrow writer classes), else Rows."""
    return Written((write_batches if arrow else write_rows)(opts, iterator))


class KafkaBatchWriter(DataSourceArrowWriter):
    """A batch write (``df.write.format("pyrdk")``, append only)."""

    _arrow = DataSourceArrowWriter is not DataSourceWriter

    def __init__(self, opts):
        self._opts = opts

    def write(self, iterator):
        return _write(self._opts, iterator, self._arrow)

    def commit(self, messages):
        log.info("wrote %d rows to Kafka", sum(m.count for m in messages if m is not None))

    def abort(self, messages):
        log.warning("write to Kafka failed; %d rows of the tasks that succeeded were written",
                    sum(m.count for m in messages if m is not None))


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    """A streaming write (``df.writeStream.format("pyrdk")``): every micro-batch as a batch
    write; a micro-batch that Spark runs again after a failure is written again."""

    _arrow = DataSourceStreamArrowWriter is not DataSourceStreamWriter

    def __init__(self, opts):
        self._opts = opts

    def write(self, iterator):
        return _write(self._opts, iterator, self._arrow)

    def commit(self, messages, batchId):
        log.info("micro-batch %d: wrote %d rows to Kafka", batchId,
                 sum(m.count for m in messages if m is not None))

    def abort(self, messages, batchId):
        log.warning("micro-batch %d: write to Kafka failed", batchId)
