"""Writes through the ``pyrdk`` sink (Spark's Kafka sink contract), read back with the source."""
import pytest

from tests.fix_kafka import make_topic, unique_name
from tests.fix_spark import reader

pytestmark = [pytest.mark.spark, pytest.mark.kafka]


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
    with pytest.raises(Exception, match="needs a 'value' column"):
        writer(df.select("key"), kafka_hosts, topic=name).save()
    with pytest.raises(Exception, match="column 'key' must be of type string or binary, not integer"):
        writer(df.selectExpr("n AS key", "value"), kafka_hosts, topic=name).save()
    with pytest.raises(Exception, match="use mode\\('append'\\)"):
        writer(df, kafka_hosts, topic=name).mode("overwrite").save()
    with pytest.raises(Exception, match="'kafka.value.serializer' is not supported"):
        writer(df, kafka_hosts, topic=name, **{"kafka.value.serializer": "x"}).save()
    with pytest.raises(Exception, match="column 'partition' holds 7, but the topic has partitions \\[0\\]"):
        writer(df.selectExpr("value", "7 AS partition"), kafka_hosts, topic=name).save()
    assert read_back(spark, kafka_hosts, name) == []
