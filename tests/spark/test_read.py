"""Batch reads through the ``pyrdk`` source: schema, content, ranges, splits, data loss, bad options."""
import datetime

import pytest

from tests.fix_kafka import make_topic, tansu_gap, unique_name
from tests.fix_spark import reader

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

T0 = 1700000000000  # ms


def records(partition, count, first=0, headers=True):
    """``count`` records for ``partition``: key k<i>, value v<i>, a header on odd i,
    timestamps T0 + i seconds."""
    return [(partition, b"k%d" % i, b"v%d" % i,
             [("n", b"%d" % i), ("p", b"%d" % partition)] if headers and i % 2 else None, T0 + i * 1000)
            for i in range(first, first + count)]


@pytest.fixture
def filled(client, produce):
    """A topic with 2 partitions: 30 records in partition 0, 20 in partition 1."""
    name = unique_name("spark")
    make_topic(client, name, 2)
    produce(name, records(0, 30))
    produce(name, records(1, 20, first=100))
    return name


def test_schema_and_exact_content_in_partition_order(spark, kafka_hosts, filled):
    df = reader(spark, kafka_hosts, subscribe=filled, includeHeaders="true").load()
    assert df.schema.simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,timestamp:timestamp,"
        "timestampType:int,headers:array<struct<key:string,value:binary>>>")
    rows = df.collect()
    expected = [(p, i - first, b"k%d" % i, b"v%d" % i) for p, first, n in ((0, 0, 30), (1, 100, 20))
                for i in range(first, first + n)]
    assert [(r.partition, r.offset, r.key, r.value) for r in rows] == expected
    assert {r.topic for r in rows} == {filled}
    assert {r.timestampType for r in rows} == {0}  # CreateTime
    first = rows[0]
    assert first.timestamp == datetime.datetime(2023, 11, 14, 22, 13, 20)  # T0, in the session's UTC
    assert first.headers is None  # null, not an empty array, as Spark's source
    assert [tuple(h) for h in rows[1].headers] == [("n", b"1"), ("p", b"0")]
    assert "headers" not in reader(spark, kafka_hosts, subscribe=filled).load().columns


def test_offset_ranges_from_json(spark, kafka_hosts, filled):
    df = reader(spark, kafka_hosts, subscribe=filled,
                startingOffsets='{"%s": {"0": 5, "1": -2}}' % filled,
                endingOffsets='{"%s": {"0": 8, "1": -1}}' % filled).load()
    got = [(r.partition, r.offset) for r in df.collect()]
    assert got == [(0, 5), (0, 6), (0, 7)] + [(1, o) for o in range(20)]


def test_assign_and_pattern(spark, kafka_hosts, filled):
    df = reader(spark, kafka_hosts, assign='{"%s": [1]}' % filled).load()
    assert [r.offset for r in df.select("offset").collect()] == list(range(20))
    df = reader(spark, kafka_hosts, subscribePattern=filled[:-4] + "....").load()
    assert df.count() == 50


def test_min_partitions_splits_ranges_without_changing_the_rows(spark, kafka_hosts, filled):
    df = reader(spark, kafka_hosts, subscribe=filled, minPartitions="5").load()
    assert df.rdd.getNumPartitions() == 5  # partition 0: 3 ranges of 10, partition 1: 2 of 10
    rows = df.collect()
    assert [(r.partition, r.offset) for r in rows] == [(0, o) for o in range(30)] + [(1, o) for o in range(20)]


def test_start_beyond_the_end_is_data_loss(spark, kafka_hosts, filled):
    starting = '{"%s": {"0": 50, "1": 0}}' % filled
    df = reader(spark, kafka_hosts, subscribe=filled, startingOffsets=starting).load()
    with pytest.raises(Exception) as info:
        df.collect()
    assert "start offset 50 is beyond the end of the partition (30)" in str(info.value)
    assert "failOnDataLoss" in str(info.value)
    df = reader(spark, kafka_hosts, subscribe=filled, startingOffsets=starting, failOnDataLoss="false").load()
    assert [(r.partition, r.offset) for r in df.collect()] == [(1, o) for o in range(20)]


def test_deleted_topic_is_data_loss_when_the_range_runs(spark, kafka_hosts, client, filled):
    df = reader(spark, kafka_hosts, subscribe=filled)
    planned = reader(spark, kafka_hosts, subscribe=filled, endingOffsets='{"%s": {"0": 30, "1": 20}}' % filled)
    client.cluster.delete_topics([filled])
    make_topic(client, filled, 2)  # re-created empty: offsets 0..29 of partition 0 are gone
    with pytest.raises(Exception) as info:
        planned.load().collect()
    assert "are not in the partition any more" in str(info.value) and "failOnDataLoss" in str(info.value)
    assert df.option("failOnDataLoss", "false").load().count() == 0


@tansu_gap("offsets-for-times answers offset 0 whatever the timestamp")
def test_starting_timestamp(spark, kafka_hosts, filled):
    df = reader(spark, kafka_hosts, subscribe=filled, startingTimestamp=str(T0 + 10 * 1000)).load()
    got = [(r.partition, r.offset) for r in df.collect()]
    assert got == [(0, o) for o in range(10, 30)] + [(1, o) for o in range(20)]


def test_bad_options_fail_at_load_naming_the_option(spark, kafka_hosts, filled):
    with pytest.raises(Exception, match="'subscribe' and 'assign'"):
        reader(spark, kafka_hosts, subscribe=filled, assign='{"%s": [0]}' % filled).load()
    with pytest.raises(Exception, match="'startingOffsets' is not valid JSON"):
        reader(spark, kafka_hosts, subscribe=filled, startingOffsets='{"x": ').load()


def test_unknown_topic_and_partition_name_the_option(spark, kafka_hosts):
    missing = unique_name("missing")
    with pytest.raises(Exception) as info:
        reader(spark, kafka_hosts, subscribe=missing).load().collect()
    assert "option 'subscribe': no topic '%s'" % missing in str(info.value)
    with pytest.raises(Exception) as info:
        reader(spark, kafka_hosts, assign='{"%s": [0]}' % missing).load().collect()
    assert "option 'assign': no topic" in str(info.value)


def test_offsets_json_must_cover_every_partition(spark, kafka_hosts, filled):
    df = reader(spark, kafka_hosts, subscribe=filled, startingOffsets='{"%s": {"0": 1}}' % filled).load()
    with pytest.raises(Exception) as info:
        df.collect()
    assert "option 'startingOffsets' must give every partition" in str(info.value)
    assert "missing: %s [1]" % filled in str(info.value)


def test_a_batch_of_64_bit_offsets_reaches_spark_in_32_bit_parts():
    """consume_arrow makes a batch of more than 2 GiB large_binary; Spark's columns are binary.
    (Made here small, with the large types, rather than with 2 GiB of records.)"""
    import pyarrow as pa

    from pyrdk.core import arrow
    from pyrdk.spark.fetch import WIDE_SLICE, arrow_schema, to_spark
    n = WIDE_SLICE + 5
    wide = arrow.schema(wide=True)
    batch = pa.RecordBatch.from_arrays(
        [pa.array([None] + [b"k"] * (n - 1), pa.large_binary()), pa.array([b"v%d" % i for i in range(n)],
                                                                           pa.large_binary()),
         pa.array(["t"] * n, pa.large_string()), pa.array([1] * n, pa.int32()), pa.array(range(n), pa.int64()),
         pa.array([-1] + [T0] * (n - 1), pa.timestamp("ms", tz="UTC")), pa.array([0] + [1] * (n - 1), pa.int32())],
        schema=wide)
    parts = to_spark(batch, arrow_schema(False))
    assert [p.num_rows for p in parts] == [WIDE_SLICE, 5]
    table = pa.Table.from_batches(parts)
    assert table.schema == arrow_schema(False)
    assert table.column("value").to_pylist() == [b"v%d" % i for i in range(n)]
    assert table.column("key")[0].as_py() is None
    assert table.column("timestamp").cast(pa.int64()).to_pylist()[:2] == [-1000, T0 * 1000]
    assert table.column("timestampType").to_pylist()[:2] == [-1, 0]
