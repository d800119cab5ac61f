"""Batch reads through the ``pyrdk`` source: schema, content, ranges, splits, data loss, bad options."""
import datetime
import time

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
    # An end the program gave before the start is its mistake, not data loss.
    df = reader(spark, kafka_hosts, subscribe=filled, startingOffsets='{"%s": {"0": 7, "1": 0}}' % filled,
                endingOffsets='{"%s": {"0": 3, "1": -1}}' % filled).load()
    with pytest.raises(Exception, match="options 'startingOffsets' and 'endingOffsets'.*end at offset 3"):
        df.collect()


def test_an_end_past_the_log_is_data_loss_when_the_query_is_planned(spark, kafka_hosts, filled):
    ending = '{"%s": {"0": 1000000, "1": -1}}' % filled
    df = reader(spark, kafka_hosts, subscribe=filled, endingOffsets=ending, maxRecordsPerPartition="10").load()
    with pytest.raises(Exception) as info:
        df.rdd.getNumPartitions()  # plans the query, reads nothing
    assert "offsets 30 to 1000000 are not in the partition, which ends at 30" in str(info.value)
    assert "failOnDataLoss" in str(info.value)
    df = reader(spark, kafka_hosts, subscribe=filled, endingOffsets=ending, maxRecordsPerPartition="10",
                failOnDataLoss="false").load()
    assert df.rdd.getNumPartitions() == 5  # ranges of what the log has: 3 of partition 0, 2 of partition 1
    assert [(r.partition, r.offset) for r in df.collect()] == [(0, o) for o in range(30)] + [(1, o) for o in range(20)]


def test_deleted_topic_is_data_loss_when_the_range_runs(spark, kafka_hosts, client, filled):
    df = reader(spark, kafka_hosts, subscribe=filled)
    planned = reader(spark, kafka_hosts, subscribe=filled, endingOffsets='{"%s": {"0": 30, "1": 20}}' % filled)
    client.cluster.delete_topics([filled])
    make_topic(client, filled, 2)  # re-created empty: offsets 0..29 of partition 0 are gone
    with pytest.raises(Exception) as info:
        planned.load().collect()
    assert "are not in the partition, which ends at" in str(info.value) and "failOnDataLoss" in str(info.value)
    assert df.option("failOnDataLoss", "false").load().count() == 0


@tansu_gap("offsets-for-times answers offset 0 whatever the timestamp")
def test_starting_timestamp(spark, kafka_hosts, filled):
    df = reader(spark, kafka_hosts, subscribe=filled, startingTimestamp=str(T0 + 10 * 1000)).load()
    got = [(r.partition, r.offset) for r in df.collect()]
    assert got == [(0, o) for o in range(10, 30)] + [(1, o) for o in range(20)]


def test_an_ending_timestamp_no_record_reaches_ends_at_the_latest_offset(spark, mock_cluster):
    """librdkafka's mock cluster finds no offset for any timestamp: as in Spark's connector,
    an ending timestamp then means the latest offsets, and a starting one is refused."""
    from pyrdk.client import KafkaClient
    mock_cluster.create_topic("stamped", 2)
    hosts = mock_cluster.bootstrap_servers
    with KafkaClient(hosts=hosts) as client, client.topics["stamped"].get_producer(linger_ms=5) as producer:
        for i in range(6):
            producer.produce(b"v%d" % i, timestamp=T0 + i * 1000)
    for option, value in (("endingTimestamp", str(T0)),
                          ("endingOffsetsByTimestamp", '{"stamped": {"0": %d, "1": %d}}' % (T0, T0))):
        assert reader(spark, hosts, subscribe="stamped", **{option: value}).load().count() == 6
    with pytest.raises(Exception, match="option 'startingTimestamp': no record of stamped"):
        reader(spark, hosts, subscribe="stamped", startingTimestamp=str(T0)).load().collect()


def test_read_committed_ends_before_an_open_transaction(spark, kafka_hosts, client, produce):
    name = unique_name("committed")
    topic = make_topic(client, name, 1)
    produce(name, records(0, 3))
    open_transaction = topic.get_producer(transactional_id="spark-" + name, linger_ms=5)
    try:
        open_transaction.begin_transaction()
        for i in range(4):
            open_transaction.produce(b"pending %d" % i)
        open_transaction.flush()
        committed = reader(spark, kafka_hosts, subscribe=name, **{"kafka.isolation.level": "read_committed",
                                                                  "kafkaConsumer.pollTimeoutMs": "10000"})
        assert [(r.offset, r.value) for r in committed.load().collect()] == [(o, b"v%d" % o) for o in range(3)]
        assert reader(spark, kafka_hosts, subscribe=name).load().count() == 7  # read_uncommitted, as Spark's
    finally:
        open_transaction.abort_transaction()
        open_transaction.stop()


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


def test_a_batch_of_64_bit_offsets_reaches_spark_in_slices_of_at_most_2_gib(monkeypatch):
    """A batch of more than 2 GiB goes to Spark in slices whose keys, values and topic names
    each fit 32-bit offsets, however few rows that takes (made small here: SLICE_BYTES lowered);
    a slice past the batch's first 2 GiB casts too (made here with offsets past 2 GiB, over
    memory never written but the slice's)."""
    import numpy as np
    import pyarrow as pa

    from pyrdk.core import arrow
    from pyrdk.spark import fetch
    monkeypatch.setattr(fetch, "SLICE_BYTES", 100, raising=False)
    sizes = [60, 30, 30, 90, 5, 100, 1]
    values = [bytes([65 + i]) * n for i, n in enumerate(sizes)]
    n = len(values)
    batch = pa.RecordBatch.from_arrays(
        [pa.array([None, b"k"] * 3 + [None], pa.large_binary()), pa.array(values, pa.large_binary()),
         pa.array(["t"] * n, pa.large_string()), pa.array([1] * n, pa.int32()), pa.array(range(n), pa.int64()),
         pa.array([T0] * n, pa.timestamp("ms", tz="UTC")), pa.array([1] * n, pa.int32())],
        schema=arrow.schema(wide=True))
    parts = fetch.to_spark(batch, fetch.arrow_schema(False))
    assert [p.num_rows for p in parts] == [2, 1, 2, 1, 1]  # 90, 30, 95, 100, 1 bytes of values
    table = pa.Table.from_batches(parts)
    assert table.column("value").to_pylist() == values
    assert table.column("key").to_pylist() == [None, b"k"] * 3 + [None]
    assert table.column("offset").to_pylist() == list(range(n))

    monkeypatch.setattr(fetch, "SLICE_BYTES", 0x7FFFFFFF)
    big = np.empty(2 ** 31 + 10, np.uint8)  # untouched but the last 10 bytes
    big[-10:] = np.frombuffer(b"abcdefghij", np.uint8)
    offsets = np.array([0, 2 ** 31, 2 ** 31 + 3, 2 ** 31 + 3, 2 ** 31 + 10], np.int64)
    column = pa.Array.from_buffers(pa.large_binary(), 4, [pa.array([True, True, False, True]).buffers()[1],
                                                         pa.py_buffer(offsets), pa.py_buffer(big)], null_count=1)
    narrowed = fetch.narrow(column.slice(1), pa.binary())
    assert narrowed.type == pa.binary()
    assert narrowed.to_pylist() == [b"abc", None, b"defghij"]


def test_a_batch_of_64_bit_offsets_with_no_key_reaches_spark(monkeypatch):
    """A batch of more than 2 GiB of records without keys (or with empty values): a column
    whose data buffer is empty casts to 32-bit offsets too, slice by slice."""
    import pyarrow as pa

    from pyrdk.core import arrow
    from pyrdk.spark import fetch
    monkeypatch.setattr(fetch, "SLICE_BYTES", 2)
    n = 4
    for keys, values in [([None] * n, [b"v%d" % i for i in range(n)]), ([b"k"] * n, [b""] * n)]:
        batch = pa.RecordBatch.from_arrays(
            [pa.array(keys, pa.large_binary()), pa.array(values, pa.large_binary()),
             pa.array(["t"] * n, pa.large_string()), pa.array([1] * n, pa.int32()), pa.array(range(n), pa.int64()),
             pa.array([T0] * n, pa.timestamp("ms", tz="UTC")), pa.array([1] * n, pa.int32())],
            schema=arrow.schema(wide=True))
        parts = fetch.to_spark(batch, fetch.arrow_schema(False))
        assert len(parts) > 1
        table = pa.Table.from_batches(parts)
        assert table.column("key").to_pylist() == keys
        assert table.column("value").to_pylist() == values


def read_rows(opts, name, pid, start, end):
    """``(offset, value)`` of the records ``read_range`` yields for ``[start, end)``, in this
    process (as a Spark Python worker runs it)."""
    import pyarrow as pa

    from pyrdk.spark.fetch import read_range
    from pyrdk.spark.offsets import OffsetRange
    batches = list(read_range(opts, OffsetRange(name, pid, start, end)))
    if not batches:
        return []
    table = pa.Table.from_batches(batches)
    return list(zip(table.column("offset").to_pylist(), table.column("value").to_pylist()))


@pytest.fixture
def handles_made(monkeypatch):
    """The kinds of the librdkafka handles made (a client's is a "producer"; clear it to count
    from there), with no client or consumer kept from before."""
    from pyrdk.rd.handle import Handle
    from pyrdk.spark import fetch
    made = []
    init = Handle.__init__

    def counting(self, kind, *args, **kwargs):
        made.append(kind)
        init(self, kind, *args, **kwargs)

    fetch.close_kept()
    monkeypatch.setattr(Handle, "__init__", counting)
    yield made
    fetch.close_kept()


def test_a_worker_keeps_its_client_and_consumers_from_range_to_range(kafka_hosts, client, produce, handles_made,
                                                                     monkeypatch):
    """Ranges read one after the other in one Python worker share the client of their options
    and, per partition, the consumer the previous range left paused: adjacent ranges read on
    without a seek, overlapping and earlier ones seek; a failed range stops its consumer; at
    most MAX_CONSUMERS are kept, and what was unused for IDLE_SECONDS is closed."""
    from pyrdk.spark import fetch
    from pyrdk.spark.offsets import DataLossError
    from pyrdk.spark.options import ReadOptions
    name = unique_name("kept")
    make_topic(client, name, 2)
    produce(name, records(0, 30) + records(1, 20, first=100))
    handles_made.clear()
    options = {"kafka.bootstrap.servers": kafka_hosts, "subscribe": name}
    opts = ReadOptions(options, streaming=False)
    v = [(o, b"v%d" % o) for o in range(30)]
    assert read_rows(opts, name, 0, 0, 10) == v[0:10]
    assert read_rows(opts, name, 0, 10, 25) == v[10:25]  # adjacent
    assert read_rows(opts, name, 0, 5, 12) == v[5:12]  # overlapping: back
    assert read_rows(opts, name, 1, 0, 20) == [(o, b"v%d" % (o + 100)) for o in range(20)]
    assert read_rows(opts, name, 0, 20, 30) == v[20:30]  # forward
    headers = ReadOptions(dict(options, includeHeaders="true"), streaming=False)  # the same kafka.* options
    assert read_rows(headers, name, 0, 28, 30) == v[28:30]
    assert handles_made == ["producer", "consumer", "consumer"]  # one client, a consumer per partition

    with pytest.raises(DataLossError, match="offsets 30 to 35 are not in the partition, which ends at 30"):
        read_rows(opts, name, 0, 30, 35)  # past the end: the task fails ...
    assert read_rows(opts, name, 0, 0, 3) == v[0:3]  # ... and stops its consumer
    # A kept consumer's high watermark may be older than the task: a new consumer confirmed
    # the end before the task failed; then the next task made a new one.
    assert handles_made[3:] == ["consumer", "consumer"]

    monkeypatch.setattr(fetch, "MAX_CONSUMERS", 1)
    assert read_rows(opts, name, 0, 3, 6) == v[3:6]  # keeps partition 0's, stops partition 1's
    assert read_rows(opts, name, 1, 0, 1) == [(0, b"v100")]
    assert handles_made[5:] == ["consumer"]
    monkeypatch.setattr(fetch, "IDLE_SECONDS", -1)
    assert read_rows(opts, name, 1, 1, 2) == [(1, b"v101")]
    assert handles_made[6:] == ["producer", "consumer"]  # all was idle: closed


def test_a_kept_consumer_reads_what_the_partition_holds_now(kafka_hosts, client, produce, handles_made):
    """A kept consumer drops what librdkafka fetched ahead when its task ends: after new
    records, or after the topic was deleted and re-created with other records, the next range
    reads what the partition holds now; a partition gone since is data loss."""
    from pyrdk.spark.offsets import DataLossError
    from pyrdk.spark.options import ReadOptions
    name = unique_name("kept")
    make_topic(client, name, 2)
    produce(name, records(0, 30))
    opts = ReadOptions({"kafka.bootstrap.servers": kafka_hosts, "subscribe": name,
                        "kafkaConsumer.pollTimeoutMs": "20000"}, streaming=False)
    handles_made.clear()
    assert read_rows(opts, name, 0, 0, 30) == [(o, b"v%d" % o) for o in range(30)]  # up to the end
    produce(name, records(0, 10, first=30))
    assert read_rows(opts, name, 0, 30, 40) == [(o, b"v%d" % o) for o in range(30, 40)]
    assert read_rows(opts, name, 0, 5, 10) == [(o, b"v%d" % o) for o in range(5, 10)]  # 10..39 fetched ahead
    # After the last fetch of the kept consumer returned (at the log end the broker holds it
    # up to fetch.wait.max.ms, 100 ms): a fetch that Tansu answers for a topic deleted
    # meanwhile crashes librdkafka (README: Known gaps).
    time.sleep(1)
    client.cluster.delete_topics([name])
    make_topic(client, name, 1)
    produce(name, [(0, None, b"new%d" % i, None, T0) for i in range(20)])
    assert read_rows(opts, name, 0, 10, 20) == [(o, b"new%d" % o) for o in range(10, 20)]
    with pytest.raises(DataLossError, match=r"\[1\] is gone"):
        read_rows(opts, name, 1, 0, 5)
    assert [kind for kind in handles_made if kind == "consumer"] == ["consumer"]  # the one kept


def test_a_range_ending_in_a_transaction_marker_is_read_to_its_end(kafka_hosts, client):
    """A transaction's commit marker takes an offset and brings no record: a range up to the
    log end (after it) ends with the last record, not at pollTimeoutMs."""
    from pyrdk.spark import fetch
    from pyrdk.spark.options import ReadOptions
    name = unique_name("txn")
    topic = make_topic(client, name, 1)
    producer = topic.get_producer(transactional_id=name, linger_ms=5)
    try:
        with producer.transaction():
            for i in range(5):
                producer.produce(b"v%d" % i)
    finally:
        producer.stop()
    end = topic.partitions[0].latest_available_offset()
    assert end == 6  # 5 records and the marker
    opts = ReadOptions({"kafka.bootstrap.servers": kafka_hosts, "subscribe": name,
                        "kafkaConsumer.pollTimeoutMs": "10000"}, streaming=False)
    try:  # (it used to wait for the marker's record until pollTimeoutMs, then fail the task)
        assert read_rows(opts, name, 0, 0, end) == [(o, b"v%d" % o) for o in range(5)]
        assert read_rows(opts, name, 0, 5, end) == []  # the kept consumer: nothing but the marker left
    finally:
        fetch.close_kept()


def mock_delete_records(mock_cluster, topic, pid, before):
    """Delete the records of ``topic [pid]`` before offset ``before`` in librdkafka's mock
    cluster (``rd_kafka_mock_partition_delete_records``, called through ctypes)."""
    import ctypes

    import pyrdk
    from pyrdk._ffi import ffi
    function = ctypes.CDLL(pyrdk.librdkafka_version().library).rd_kafka_mock_partition_delete_records
    function.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32, ctypes.c_int64]
    function.restype = ctypes.c_int
    assert function(int(ffi.cast("uintptr_t", mock_cluster._cluster())), topic.encode(), pid, before) == 0


def test_a_range_deleted_up_to_the_end_of_the_log_is_data_loss_not_a_timeout(mock_cluster):
    """Records deleted from a range's start up to the end of the log (retention, say): the
    consumer starts again at the log's start, past the range, and no record comes; the task
    reports the data loss (or, with failOnDataLoss=false, ends with what it read), as with
    records after the range."""
    from pyrdk.client import KafkaClient
    from pyrdk.spark import fetch
    from pyrdk.spark.offsets import DataLossError
    from pyrdk.spark.options import ReadOptions
    mock_cluster.create_topic("deleted", 1)
    hosts = mock_cluster.bootstrap_servers
    with KafkaClient(hosts=hosts) as client, client.topics["deleted"].get_producer(linger_ms=5) as producer:
        for i in range(10):
            producer.produce(b"v%d" % i)
    options = {"kafka.bootstrap.servers": hosts, "subscribe": "deleted", "kafkaConsumer.pollTimeoutMs": "10000"}
    strict = ReadOptions(options, streaming=False)
    lenient = ReadOptions(dict(options, failOnDataLoss="false"), streaming=False)
    try:
        assert read_rows(strict, "deleted", 0, 0, 3) == [(o, b"v%d" % o) for o in range(3)]
        mock_delete_records(mock_cluster, "deleted", 0, 10)
        with pytest.raises(DataLossError, match=r"offsets 3 to 10 were deleted \(the log starts at 10 now\)"):
            read_rows(strict, "deleted", 0, 3, 10)  # the kept consumer, at offset 3
        assert read_rows(lenient, "deleted", 0, 0, 10) == []  # a new consumer
        with pytest.raises(DataLossError, match="offsets 0 to 10 were deleted"):
            read_rows(strict, "deleted", 0, 0, 10)
    finally:
        fetch.close_kept()


def test_a_user_schema_is_refused_naming_the_fixed_one(spark, kafka_hosts, client, filled, tmp_path):
    """As Spark's Kafka source ("has a fixed schema and cannot be set with a custom one"): a
    schema given with .schema() is refused when the query is planned, naming what to do, even
    where there is nothing to read (a range's rows would not fit it: wrong columns, or on a
    Spark that does not check Arrow types, key and value swapped)."""
    empty = unique_name("empty")
    make_topic(client, empty, 1)
    swapped = ("value binary, key binary, topic string, partition int, offset bigint, timestamp timestamp, "
               "timestampType int")
    for name in (filled, empty):
        for schema in ("value binary, key binary", swapped):
            df = spark.read.format("pyrdk").schema(schema).option("kafka.bootstrap.servers", kafka_hosts) \
                .option("subscribe", name).load()
            with pytest.raises(Exception, match="the pyrdk source has a fixed schema"):
                df.collect()
    query = (spark.readStream.format("pyrdk").schema(swapped).option("kafka.bootstrap.servers", kafka_hosts)
             .option("subscribe", empty).load().writeStream.format("memory")
             .queryName(unique_name("q").replace("-", "_"))
             .option("checkpointLocation", str(tmp_path / "checkpoint")).start())
    try:
        with pytest.raises(Exception, match="the pyrdk source has a fixed schema"):
            query.processAllAvailable()
    finally:
        query.stop()
    # The source's own schema, given explicitly, is its schema: taken.
    same = reader(spark, kafka_hosts, subscribe=filled, includeHeaders="true").load().schema
    assert spark.read.format("pyrdk").schema(same).option("kafka.bootstrap.servers", kafka_hosts) \
        .option("subscribe", filled).option("includeHeaders", "true").load().count() == 50
