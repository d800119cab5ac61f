"""Writes through the ``pyrdk`` sink (Spark's Kafka sink contract), read back with the source."""
import pytest

from pyrdk.common import OffsetType

from tests.fix_kafka import make_topic, unique_name
from tests.fix_spark import reader

pytestmark = [pytest.mark.spark, pytest.mark.kafka]


def consume_all(topic, count):
    """Every record of ``topic`` as ``(partition, key, value)``, read by a consumer until
    ``count`` came or nothing more does (5 s): the source plans its reads with the log end
    offsets, which Tansu reports short after batched writes (README: Known gaps)."""
    with topic.get_simple_consumer(auto_offset_reset=OffsetType.EARLIEST, consumer_timeout_ms=5000) as consumer:
        out = []
        for msg in consumer:
            out.append((msg.partition_id, msg.partition_key, msg.value))
            if len(out) >= count:
                break
        return out


def writer(df, hosts, **options):
    """``df.write.format("pyrdk").mode("append")`` (Spark refuses its default mode,
    ErrorIfExists, for Python data sources)."""
    w = df.write.format("pyrdk").mode("append").option("kafka.bootstrap.servers", hosts)
    for key, value in options.items():
        w = w.option(key, value)
    return w


def read_back(spark, hosts, topic):
    df = reader(spark, hosts, subscribe=topic, includeHeaders="true").load()
    return [(r.partition, r.offset, r.key, r.value, [tuple(h) for h in r.headers] if r.headers else None)
            for r in df.collect()]


def test_write_then_read_back_with_headers_and_partitions(spark, kafka_hosts, client):
    name = unique_name("sink")
    make_topic(client, name, 2)
    df = spark.createDataFrame(
        [("k%d" % i, "v%d" % i, i % 2, [("n", b"%d" % i)] if i % 3 else None) for i in range(40)],
        "key string, value string, partition int, headers array<struct<key: string, value: binary>>")
    writer(df.coalesce(1), kafka_hosts, topic=name).save()
    rows = read_back(spark, kafka_hosts, name)
    expected = [(p, n, b"k%d" % i, b"v%d" % i, [("n", b"%d" % i)] if i % 3 else None)
                for p in (0, 1) for n, i in enumerate(range(p, 40, 2))]
    assert rows == expected


def test_topic_column_and_binary_values(spark, kafka_hosts, client):
    a, b = unique_name("sink-a"), unique_name("sink-b")
    make_topic(client, a, 1)
    make_topic(client, b, 1)
    df = spark.createDataFrame([(a, b"\x00\x01"), (b, b"\xff"), (a, b"")], "topic string, value binary")
    writer(df.coalesce(1), kafka_hosts).save()
    assert read_back(spark, kafka_hosts, a) == [(0, 0, None, b"\x00\x01", None), (0, 1, None, b"", None)]
    assert read_back(spark, kafka_hosts, b) == [(0, 0, None, b"\xff", None)]


def test_stream_from_topic_to_topic(spark, kafka_hosts, client, tmp_path):
    source, sink = unique_name("from"), unique_name("to")
    make_topic(client, source, 2)
    make_topic(client, sink, 1)
    batch = spark.createDataFrame([("k%d" % i, "v%d" % i) for i in range(30)], "key string, value string")
    writer(batch, kafka_hosts, topic=source).save()
    query = (spark.readStream.format("pyrdk").option("kafka.bootstrap.servers", kafka_hosts)
             .option("subscribe", source).option("startingOffsets", "earliest").load()
             .selectExpr("key", "upper(CAST(value AS STRING)) AS value")
             .writeStream.format("pyrdk").option("kafka.bootstrap.servers", kafka_hosts).option("topic", sink)
             .queryName(unique_name("upper"))  # Spark hands it to the sink as an option
             .option("checkpointLocation", str(tmp_path / "checkpoint")).start())
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    assert sorted(r[3] for r in read_back(spark, kafka_hosts, sink)) == sorted(b"V%d" % i for i in range(30))


def test_bad_writes_name_what_to_fix(spark, kafka_hosts, client):
    name = unique_name("sink")
    make_topic(client, name, 1)
    df = spark.createDataFrame([("k", "v", 1)], "key string, value string, n int")
    with pytest.raises(Exception, match="set the option 'topic' or give the DataFrame a 'topic' column"):
        writer(df, kafka_hosts).save()
    with pytest.raises(Exception, match="a row's 'topic' is empty and the option 'topic' is not set"):
        writer(df.selectExpr("value", "'' AS topic"), kafka_hosts).save()
    with pytest.raises(Exception, match="needs a 'value' column"):
        writer(df.select("key"), kafka_hosts, topic=name).save()
    with pytest.raises(Exception, match="column 'key' must be of type string or binary, not integer"):
        writer(df.selectExpr("n AS key", "value"), kafka_hosts, topic=name).save()
    with pytest.raises(Exception, match="use mode\\('append'\\)"):
        writer(df, kafka_hosts, topic=name).mode("overwrite").save()
    with pytest.raises(Exception, match="'kafka.value.serializer' is not supported"):
        writer(df, kafka_hosts, topic=name, **{"kafka.value.serializer": "x"}).save()
    with pytest.raises(Exception, match="'kafka.transactional.id' is not supported: the sink writes no transactions"):
        writer(df, kafka_hosts, topic=name, **{"kafka.transactional.id": "x"}).save()
    with pytest.raises(Exception, match="column 'partition' holds 7, but the topic has partitions \\[0\\]"):
        writer(df.selectExpr("value", "7 AS partition"), kafka_hosts, topic=name).save()
    assert read_back(spark, kafka_hosts, name) == []


def test_values_alone_go_in_batches_and_a_failed_one_fails_the_write(spark, kafka_hosts, client):
    """A DataFrame of values alone, to one topic: each Arrow batch Spark hands the writer goes
    to Kafka in one produce_batch call."""
    name = unique_name("sink")
    topic = make_topic(client, name, 2)
    df = spark.createDataFrame([("v%d" % i,) for i in range(300)], "value string")
    writer(df.repartition(2), kafka_hosts, topic=name).save()
    rows = consume_all(topic, 300)
    assert sorted(r[2] for r in rows) == sorted(b"v%d" % i for i in range(300))
    assert {r[0] for r in rows} == {0, 1} and {r[1] for r in rows} == {None}
    too_big = spark.createDataFrame([(b"x" * 2000000,)], "value binary")
    with pytest.raises(Exception, match="(?i)too large|max_request_size|message.max.bytes"):
        writer(too_big, kafka_hosts, topic=name).save()
    assert len(consume_all(topic, 301)) == 300


def test_arrow_batches_to_one_topic_go_through_produce_arrow_others_row_by_row(kafka_hosts, client):
    """The writer's two paths, without Spark: rows to one topic without headers through
    ``produce_arrow`` (the C core reads the Arrow buffers; murmur2 of the key, else the
    partition column), rows for several topics or with headers through ``produce`` (the
    row partitioner's producer); every row delivered once, where its key or partition says."""
    import pyarrow as pa

    from pyrdk.rd.topic import murmur2_partition
    from pyrdk.spark.options import WriteOptions
    from pyrdk.spark.produce import _Sink, close_kept
    name, other = unique_name("sink"), unique_name("sink-b")
    topic = make_topic(client, name, 2)
    make_topic(client, other, 1)
    sink = _Sink(WriteOptions({"kafka.bootstrap.servers": kafka_hosts}))
    try:
        sink.batch(pa.record_batch({"topic": [name] * 50, "value": [b"v%d" % i for i in range(50)]}))
        sink.batch(pa.record_batch({"topic": [name] * 10, "value": ["w%d" % i for i in range(10)],
                                    "key": [b"same"] * 5 + [None] * 5, "partition": [None] * 5 + [1] * 5}))
        assert list(sink.producers) == [(name, True)]
        sink.batch(pa.record_batch({"topic": [name, other], "value": [b"x", b"y"], "key": [b"kx", None]}))
        assert list(sink.producers) == [(name, True), (name, False), (other, False)]
        sink.finish()
    finally:
        sink.close()
    assert sink.count == 62
    # A finished task's client and producers serve the next task with the same options.
    again = _Sink(WriteOptions({"kafka.bootstrap.servers": kafka_hosts}))
    assert again.client is sink.client and again.producers is sink.producers
    again.close()  # not finished: closed, not kept
    fresh = _Sink(WriteOptions({"kafka.bootstrap.servers": kafka_hosts}))
    assert fresh.client is not sink.client
    fresh.close()
    close_kept()
    with topic.get_simple_consumer(auto_offset_reset=OffsetType.EARLIEST) as consumer:
        batches = []
        while sum(b.num_rows for b in batches) < 61 and len(batches) < 100:
            batches.append(consumer.consume_arrow(100, 200))
    table = pa.Table.from_batches(batches)
    assert sorted(table.column("value").to_pylist()) == sorted([b"v%d" % i for i in range(50)] +
                                                               [b"w%d" % i for i in range(10)] + [b"x"])
    where = {v: (k, p) for k, v, p in zip(*(table.column(c).to_pylist() for c in ("key", "value", "partition")))}
    assert [where[b"w%d" % i] for i in range(10)] == \
        [(b"same", murmur2_partition(b"same", 2))] * 5 + [(None, 1)] * 5
    assert where[b"x"] == (b"kx", murmur2_partition(b"kx", 2))
    assert consume_all(client.topics[other], 1) == [(0, None, b"y")]


def test_kafka_properties_that_alias_the_producers_own_are_applied(spark, kafka_hosts, client):
    """``kafka.acks=all`` and ``kafka.compression.type`` are aliases of properties the producer
    sets from its arguments (request.required.acks, compression.codec); the option given must
    win, not fail the task (acks) or be ignored (compression)."""
    from pyrdk.rd.conf import Conf
    from pyrdk.spark.options import WriteOptions
    from pyrdk.spark.produce import _Sink
    name = unique_name("sink")
    topic = make_topic(client, name, 1)
    options = {"kafka.acks": "all", "kafka.compression.type": "gzip", "kafka.retries": "7"}
    df = spark.createDataFrame([("v%d" % i,) for i in range(10)], "value string")
    writer(df.coalesce(1), kafka_hosts, topic=name, **options).save()
    assert sorted(r[2] for r in consume_all(topic, 10)) == sorted(b"v%d" % i for i in range(10))
    sink = _Sink(WriteOptions(dict(options, **{"kafka.bootstrap.servers": kafka_hosts})))
    conf = Conf()
    try:
        for key, value in sink.producer(name, arrow=True)._config.items():
            conf.set(key, value)
        assert (conf.get("compression.codec"), conf.get("acks"), conf.get("retries")) == ("gzip", "-1", "7")
    finally:
        conf.destroy()
        sink.close()


def test_kafka_message_max_bytes_sets_the_largest_row(spark, kafka_hosts, client):
    """``kafka.message.max.bytes`` is the largest row the sink writes, above librdkafka's
    default (1000012) as below it, and a row over it fails the task naming that limit."""
    name = unique_name("sink")
    topic = make_topic(client, name, 1)
    big = spark.createDataFrame([(b"x" * 1500000,)], "value binary")
    writer(big, kafka_hosts, topic=name, **{"kafka.message.max.bytes": "2000000"}).save()
    assert [len(r[2]) for r in consume_all(topic, 1)] == [1500000]
    small = spark.createDataFrame([(b"y" * 5000,)], "value binary")
    with pytest.raises(Exception, match="5000 bytes is larger than rdkafka_config's message.max.bytes=2000\\b"):
        writer(small, kafka_hosts, topic=name, **{"kafka.message.max.bytes": "2000"}).save()
    assert len(consume_all(topic, 2)) == 1


def test_kafka_acks_1_and_more_in_flight_write_without_idempotence(spark, kafka_hosts, client):
    """As the Java producer of Spark's sink, options that conflict with idempotence (acks=1,
    more than 5 requests in flight) turn it off instead of failing every task."""
    name = unique_name("sink")
    topic = make_topic(client, name, 1)
    df = spark.createDataFrame([("v%d" % i,) for i in range(10)], "value string").coalesce(1)
    writer(df, kafka_hosts, topic=name, **{"kafka.acks": "1"}).save()
    writer(df, kafka_hosts, topic=name, **{"kafka.max.in.flight.requests.per.connection": "10"}).save()
    writer(df, kafka_hosts, topic=name, **{"kafka.retries": "0"}).save()
    assert sorted(r[2] for r in consume_all(topic, 30)) == sorted([b"v%d" % i for i in range(10)] * 3)


def test_a_write_whose_brokers_are_gone_fails_not_waits_for_the_message_timeout(spark):
    """A Python worker keeps a finished task's producers; when every broker is gone before its
    next task, that task fails with NoBrokersAvailableError after socket_timeout_ms, as produce()
    does, instead of waiting librdkafka's message.timeout.ms (5 minutes) in its flush."""
    from pyrdk import KafkaClient
    from pyrdk.testing import TansuBroker
    broker = TansuBroker()
    try:
        broker.start()
        with KafkaClient(hosts=broker.bootstrap_servers) as client:
            make_topic(client, "gone", 1)
        df = spark.createDataFrame([("v%d" % i,) for i in range(5)], "value string").coalesce(1)
        writer(df, broker.bootstrap_servers, topic="gone").save()
        broker.stop()
        with pytest.raises(Exception, match="NoBrokersAvailableError"):
            writer(df, broker.bootstrap_servers, topic="gone").save()
    finally:
        broker.stop()


def test_stream_in_complete_mode_writes_the_whole_result(spark, kafka_hosts, client, tmp_path):
    """As Spark's Kafka sink, a streaming aggregation goes to Kafka in outputMode("complete"),
    which Spark hands the writer as overwrite: each micro-batch writes the whole result."""
    source, sink = unique_name("from"), unique_name("to")
    make_topic(client, source, 1)
    topic = make_topic(client, sink, 1)
    writer(spark.createDataFrame([("a",), ("b",), ("a",)], "value string").coalesce(1), kafka_hosts,
           topic=source).save()
    query = (spark.readStream.format("pyrdk").option("kafka.bootstrap.servers", kafka_hosts)
             .option("subscribe", source).option("startingOffsets", "earliest").load()
             .groupBy("value").count().selectExpr("value AS key", "CAST(count AS STRING) AS value")
             .writeStream.format("pyrdk").outputMode("complete").option("kafka.bootstrap.servers", kafka_hosts)
             .option("topic", sink).option("checkpointLocation", str(tmp_path / "checkpoint")).start())
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    assert sorted((r[1], r[2]) for r in consume_all(topic, 2)) == [(b"a", b"2"), (b"b", b"1")]


def test_rows_of_a_partition_stay_in_order_across_the_writers_two_paths(spark, kafka_hosts, client):
    """Arrow batches to one topic go through produce_arrow's producer, batches naming several
    topics through another one; a task's rows of one key (one partition) must reach Kafka in
    the DataFrame's order all the same, as from the one producer of Spark's sink."""
    name, other = unique_name("sink"), unique_name("sink-b")
    topic = make_topic(client, name, 1)
    make_topic(client, other, 1)
    # Batches of 2 rows: [name, name], [name, other], [name, name], [name, other]...
    rows = [("k", "v%02d" % i, other if i % 4 == 3 else name) for i in range(16)]
    df = spark.createDataFrame(rows, "key string, value string, topic string").coalesce(1)
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "2")
    try:
        writer(df, kafka_hosts).save()
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    assert [r[2] for r in consume_all(topic, 12)] == [b"v%02d" % i for i in range(16) if i % 4 != 3]


def test_a_kafka_partitioner_is_refused_not_ignored(spark, kafka_hosts, client):
    """Rows go to the 'partition' column, else murmur2 of the key (produce_arrow hands librdkafka
    each row's partition): librdkafka's 'partitioner' property would be ignored, and Spark's
    'partitioner.class' names a Java class, so both are refused."""
    name = unique_name("sink")
    topic = make_topic(client, name, 4)
    df = spark.createDataFrame([("k%d" % i, "v") for i in range(20)], "key string, value string")
    for option in ("kafka.partitioner", "kafka.partitioner.class"):
        with pytest.raises(Exception, match="'%s' is not supported: a row goes to its 'partition' column" % option):
            writer(df, kafka_hosts, topic=name, **{option: "fnv1a"}).save()
    assert consume_all(topic, 1) == []
