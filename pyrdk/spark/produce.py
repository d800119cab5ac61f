"""Writing rows to Kafka from an executor, under the contract of Spark's Kafka sink.

Columns: ``value`` (string or binary, required), ``key`` (string or binary), ``topic``
(string; the ``topic`` option overrides it), ``partition`` (int; null lets the
partitioner choose: murmur2 of the key as the Java client does, random without a key) and
``headers`` (``array<struct<key: string, value: binary>>``). Other columns are ignored.

Each task produces with an idempotent producer per topic, then waits for every delivery;
a failed delivery fails the task, and Spark runs it again: rows are written at least
once, and a retried task may write some twice.
"""
from pyrdk.client import KafkaClient
from pyrdk.exceptions import ConfigurationError
from pyrdk.partitioners import murmur2_partitioner

STRING_OR_BINARY = ("string", "binary")


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


def write_rows(opts, rows):
    """Produce ``rows`` (Spark ``Row``s), wait for every delivery; the number written.
    Raises (failing the task) if a row could not be delivered."""
    client = KafkaClient(hosts=opts.hosts, rdkafka_config=opts.rdkafka_config)
    producers = {}
    partitioner = _RowPartitioner()
    count = 0
    try:
        for row in rows:
            fields = row.asDict()
            topic_name = opts.topic or fields.get("topic")
            if not topic_name:
                raise ConfigurationError("a row has a null 'topic' and the option 'topic' is not set")
            producer = producers.get(topic_name)
            if producer is None:
                producer = producers[topic_name] = client.topics[topic_name].get_producer(
                    partitioner=partitioner, enable_idempotence=True, linger_ms=5,
                    pending_timeout_ms=-1,  # librdkafka's message.timeout.ms bounds each delivery
                    rdkafka_config=opts.rdkafka_config)
            headers = fields.get("headers")
            partitioner.partition = fields.get("partition")
            producer.produce(_bytes(fields["value"], "value"), partition_key=_bytes(fields.get("key"), "key"),
                             headers=[(h["key"], _bytes(h["value"], "headers.value")) for h in headers]
                             if headers else None)
            count += 1
        # Stopping waits for every delivery and raises ProduceFailureError for any failed one.
        while producers:
            producers.popitem()[1].stop()
    finally:
        for producer in producers.values():
            try:
                producer.stop()
            except Exception:  # already failing; the first error is the one to report
                pass
        client.close()
    return count
