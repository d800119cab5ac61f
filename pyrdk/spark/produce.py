"""Writing rows to Kafka from an executor, under the contract of Spark's Kafka sink.

Columns: ``value`` (string or binary, required), ``key`` (string or binary), ``topic``
(string; the ``topic`` option overrides it), ``partition`` (int; null lets the
partitioner choose: murmur2 of the key as the Java client does, random without a key) and
``headers`` (``array<struct<key: string, value: binary>>``). Other columns are ignored.

Spark hands a task Arrow record batches (or Rows, on a PySpark without Arrow writers): a
batch to one topic without headers goes to ``Producer.produce_arrow`` in one call, whose C
core reads the ``value``, ``key`` and ``partition`` columns' Arrow buffers and hands every row
to ``rd_kafka_produce_batch`` with no Python object per row; rows with a ``topic`` column
naming several topics, or with headers, are produced one by one from the batch's column lists
(``to_pylist``).

Each task produces with idempotent producers per topic (unless ``kafka.acks``,
``kafka.max.in.flight.requests.per.connection`` or ``kafka.retries`` conflict with it, as
with the Java producer), then waits for every delivery; a failed delivery fails the task, and Spark runs
it again: rows are written at least once, and a retried task may write some twice.

As Spark's Kafka sink caches its producers in the executor, a Python worker keeps its client
and producers (one set per ``kafka.*`` options) for the next task it runs: a new idempotent
producer waits about half a second for its producer id (librdkafka asks again 500 ms after a
first try without a connected broker), which was most of a task's time. A task that fails
closes them; a set unused for ``IDLE_SECONDS`` is closed by the next task.
"""
import atexit
import os
import time
from typing import Any

from pyrdk.client import KafkaClient
from pyrdk.exceptions import ConfigurationError
from pyrdk.partitioners import murmur2_partitioner

STRING_OR_BINARY = ("string", "binary")
IDLE_SECONDS = 60

# (process id, bootstrap servers, rdkafka config) -> [(client, producers, partitioner, last used)]
_cached: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}


def check_schema(schema, opts):
    """Raise ``ConfigurationError`` unless ``schema`` (a Spark ``StructType``) fits the sink."""
    types = {f.name: f.dataType.typeName() for f in schema.fields}
    if "value" not in types:
        raise ConfigurationError("the DataFrame written to Kafka needs a 'value' column (string or "
                                 "binary); it has: %s" % ", ".join(types))
    for name, allowed in (("value", STRING_OR_BINARY), ("key", STRING_OR_BINARY), ("topic", ("string",)),
                          ("partition", ("integer",)), ("headers", ("array",))):
        if name in types and types[name] not in allowed:
            raise ConfigurationError("column '%s' must be of type %s, not %s"
                                     % (name, " or ".join(allowed), types[name]))
    if "headers" in types:
        element = schema["headers"].dataType.elementType
        names = [(f.name, f.dataType.typeName()) for f in getattr(element, "fields", [])]
        if names != [("key", "string"), ("value", "binary")]:
            raise ConfigurationError("column 'headers' must be array<struct<key: string, value: binary>>, "
                                     "not %s" % schema["headers"].dataType.simpleString())
    if opts.topic is None and "topic" not in types:
        raise ConfigurationError("no topic to write to: set the option 'topic' or give the DataFrame a "
                                 "'topic' column")


def _bytes(value, column):
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise TypeError("column '%s' holds %s; cast it to string or binary" % (column, type(value).__name__))


def _idempotence(config):
    """Whether the producers are idempotent: yes, as the Java producer Spark's sink uses, unless
    the ``kafka.`` options conflict with it (acks other than all, more than 5 requests in
    flight, no retries) and do not ask for it; ``kafka.enable.idempotence`` itself is applied
    last and wins."""
    acks = str(config.get("acks", config.get("request.required.acks", "all"))).strip().lower()
    in_flight = str(config.get("max.in.flight.requests.per.connection", config.get("max.in.flight", 5))).strip()
    retries = str(config.get("retries", config.get("message.send.max.retries", 1))).strip()
    return acks in ("all", "-1") and (not in_flight.isdigit() or int(in_flight) <= 5) and retries != "0"


class _RowPartitioner:
    """The ``partition`` column of the row being produced, else murmur2 of the key."""

    def __init__(self):
        self.partition = None

    def __call__(self, partitions, key=None):
        if self.partition is None:
            return murmur2_partitioner(partitions, key)
        for p in partitions:
            if p.id == self.partition:
                return p
        raise ConfigurationError("column 'partition' holds %d, but the topic has partitions %s"
                                 % (self.partition, sorted(p.id for p in partitions)))


class _Sink:
    """One write task's producers (one per topic, idempotent) and the rows it queued."""

    def __init__(self, opts):
        self.opts = opts
        self.key = (os.getpid(), opts.hosts, repr(sorted((opts.rdkafka_config or {}).items())))
        kept = _take(self.key)
        if kept is None:
            kept = KafkaClient(hosts=opts.hosts, rdkafka_config=opts.rdkafka_config), {}, _RowPartitioner()
        self.client, self.producers, self.partitioner = kept
        self.count = 0
        self.finished = False
        self.arrow = {}  # topic -> whether its last rows went through produce_arrow's producer

    def producer(self, topic_name, arrow=False):
        """The producer for ``topic_name``: by the ``partition`` column, else murmur2 of the
        key; ``arrow``: the one ``produce_arrow`` uses (murmur2 in C, rows with neither spread).
        Switching between the two flushes the other first: a partition's rows stay in order."""
        if self.arrow.get(topic_name, arrow) != arrow:
            self.producers[topic_name, not arrow].flush()
        producer = self.producers.get((topic_name, arrow))
        if producer is None:
            producer = self.producers[topic_name, arrow] = self.client.topics[topic_name].get_producer(
                enable_idempotence=_idempotence(self.opts.rdkafka_config), required_acks=-1, linger_ms=5,
                pending_timeout_ms=-1,  # librdkafka's message.timeout.ms bounds each delivery
                rdkafka_config=self.opts.rdkafka_config,
                partitioner=murmur2_partitioner if arrow else self.partitioner)
        self.arrow[topic_name] = arrow
        return producer

    def row(self, value, key, topic_name, partition, headers):
        topic_name = self.opts.topic or topic_name
        if not topic_name:
            raise ConfigurationError("a row's 'topic' is %s and the option 'topic' is not set"
                                     % ("null" if topic_name is None else "empty"))
        self.partitioner.partition = partition
        if headers and any(h is None for h in headers):
            raise ValueError("a row's 'headers' holds a null element: each must be a (key, value) struct")
        self.producer(topic_name).produce(
            _bytes(value, "value"), partition_key=_bytes(key, "key"),
            headers=[(h["key"], _bytes(h["value"], "headers.value")) for h in headers] if headers else None)
        self.count += 1

    def batch(self, batch):
        """A ``pyarrow.RecordBatch`` of the DataFrame. Rows to one topic without headers: their
        ``value``, ``key`` and ``partition`` columns in one ``produce_arrow`` call, which reads
        the Arrow buffers in C (no Python object per row); else row by row from the columns'
        lists."""
        import pyarrow as pa
        import pyarrow.compute as pc
        n = batch.num_rows
        columns = {name: _column(batch, name) for name in ("value", "key", "topic", "partition", "headers")}
        topic = columns["topic"]
        single = self.opts.topic or (topic is not None and not topic.null_count and pc.count_distinct(topic).as_py()
                                     == 1 and topic[0].as_py())
        if n and single and columns["value"] is not None and columns["headers"] is None:
            names = [name for name in ("value", "key", "partition") if columns[name] is not None]
            self.count += self.producer(single, arrow=True).produce_arrow(
                pa.RecordBatch.from_arrays([columns[name] for name in names], names))
            return
        lists = [columns[name].to_pylist() if columns[name] is not None else [None] * n
                 for name in ("value", "key", "topic", "partition", "headers")]
        for value, key, topic_name, partition, headers in zip(*lists):
            self.row(value, key, topic_name, partition, headers)

    def finish(self):
        """Wait for every delivery (``Producer.flush``): ``ProduceFailureError`` for any failed one."""
        for producer in self.producers.values():
            producer.flush()
        self.finished = True

    def close(self):
        """Keep the client and producers for the next task once finished, else close them."""
        if self.finished:
            _cached.setdefault(self.key, []).append((self.client, self.producers, self.partitioner, time.monotonic()))
            return
        _close(self.client, self.producers, purge=True)


def _take(key):
    """A kept ``(client, producers, partitioner)`` for ``key``, or None; closes those idle
    for ``IDLE_SECONDS``."""
    now = time.monotonic()
    for k in list(_cached):
        kept = _cached[k]
        while kept and now - kept[0][3] > IDLE_SECONDS:
            _close(*kept.pop(0)[:2])
        if not kept:
            del _cached[k]
    kept = _cached.get(key)
    return kept.pop()[:3] if kept else None


@atexit.register
def close_kept():
    """Close every kept client and its producers."""
    while _cached:
        for kept in _cached.popitem()[1]:
            _close(*kept[:2])


def _close(client, producers, purge=False):
    """Stop the producers and close the client; ``purge``: a failed task's, whose rows left
    undelivered are dropped at once (Spark runs the task again), not waited for."""
    for producer in producers.values():
        if purge:
            producer._pending_timeout_ms = 0
        try:
            producer.stop()
        except Exception:  # already failing; the first error is the one to report
            pass
    client.close()


def _column(batch, name):
    """Column ``name`` of ``batch``, or None: absent, or null in every row."""
    if name not in batch.schema.names:
        return None
    column = batch.column(name)
    if column.null_count == len(column) and name != "value":
        return None
    return column


def write_rows(opts, rows):
    """Produce ``rows`` (Spark ``Row``s), wait for every delivery; the number written.
    Raises (failing the task) if a row could not be delivered."""
    sink = _Sink(opts)
    try:
        for row in rows:
            fields = row.asDict()
            sink.row(fields["value"], fields.get("key"), fields.get("topic"), fields.get("partition"),
                     fields.get("headers"))
        sink.finish()
    finally:
        sink.close()
    return sink.count


def write_batches(opts, batches):
    """Produce the rows of ``batches`` (``pyarrow.RecordBatch``es), wait for every delivery;
    the number written. Raises (failing the task) if a row could not be delivered."""
    sink = _Sink(opts)
    try:
        for batch in batches:
            sink.batch(batch)
        sink.finish()
    finally:
        sink.close()
    return sink.count
