"""Streaming reads through the ``pyrdk`` source: micro-batches while data arrives,
``maxOffsetsPerTrigger``, new partitions, restart from the checkpoint, data loss."""
import pytest

from tests.fix_kafka import make_topic, unique_name
from tests.spark.test_read import records

pytestmark = [pytest.mark.spark, pytest.mark.kafka]


def stream(spark, hosts, **options):
    r = spark.readStream.format("pyrdk").option("kafka.bootstrap.servers", hosts)
    for key, value in options.items():
        r = r.option(key, value)
    return r.load()


def start(df, tmp_path):
    """Write the stream's (topic, partition, offset, value) to parquet files: a sink
    that keeps each micro-batch exactly once, so any duplicate comes from the source."""
    return (df.selectExpr("topic", "partition", "offset", "CAST(value AS STRING) AS value")
            .writeStream.format("parquet").option("path", str(tmp_path / "out"))
            .option("checkpointLocation", str(tmp_path / "checkpoint")).start())


def written(spark, tmp_path):
    rows = spark.read.parquet(str(tmp_path / "out")).collect()
    return sorted((r.topic, r.partition, r.offset) for r in rows)


def test_micro_batches_while_data_arrives_then_restart_from_the_checkpoint(spark, kafka_hosts, client,
                                                                         produce, tmp_path):
    name = unique_name("stream")
    make_topic(client, name, 2)
    produce(name, records(0, 60) + records(1, 40))
    options = dict(subscribe=name, startingOffsets="earliest", maxOffsetsPerTrigger="50")
    query = start(stream(spark, kafka_hosts, **options), tmp_path)
    try:
        query.processAllAvailable()
        produce(name, records(0, 30, first=60))  # arrives while the query runs
        query.processAllAvailable()
        sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    finally:
        query.stop()
    assert sum(sizes) == 130 and max(sizes) <= 50 and len(sizes) >= 3, sizes
    assert written(spark, tmp_path) == [(name, 0, o) for o in range(90)] + [(name, 1, o) for o in range(40)]

    produce(name, records(1, 25, first=40))  # arrives while the query is stopped
    query = start(stream(spark, kafka_hosts, **options), tmp_path)
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    assert written(spark, tmp_path) == [(name, 0, o) for o in range(90)] + [(name, 1, o) for o in range(65)]


def test_new_topics_of_a_pattern_are_read_from_their_start(spark, kafka_hosts, client, produce, tmp_path):
    prefix = unique_name("pattern")
    make_topic(client, prefix + "-a", 1)
    produce(prefix + "-a", records(0, 5))
    query = start(stream(spark, kafka_hosts, subscribePattern=prefix + "-.*", startingOffsets="earliest",
                         maxOffsetsPerTrigger="4"), tmp_path)
    try:
        query.processAllAvailable()
        make_topic(client, prefix + "-b", 2)
        produce(prefix + "-b", records(0, 3) + records(1, 4))
        query.processAllAvailable()
    finally:
        query.stop()
    a, b = prefix + "-a", prefix + "-b"
    assert written(spark, tmp_path) == ([(a, 0, o) for o in range(5)] + [(b, 0, o) for o in range(3)]
                                        + [(b, 1, o) for o in range(4)])


def test_starting_offsets_latest_reads_only_what_comes_after_the_start(spark, kafka_hosts, client, produce,
                                                                       tmp_path):
    name = unique_name("latest")
    make_topic(client, name, 1)
    produce(name, records(0, 10))
    query = start(stream(spark, kafka_hosts, subscribe=name), tmp_path)
    try:
        query.processAllAvailable()
        produce(name, records(0, 5, first=10))
        query.processAllAvailable()
    finally:
        query.stop()
    assert written(spark, tmp_path) == [(name, 0, o) for o in range(10, 15)]


def test_topic_recreated_under_a_stream_is_data_loss(spark, kafka_hosts, client, produce, tmp_path):
    name = unique_name("loss")
    make_topic(client, name, 1)
    produce(name, records(0, 10))
    options = dict(subscribe=name, startingOffsets="earliest")
    query = start(stream(spark, kafka_hosts, **options), tmp_path)
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    client.cluster.delete_topics([name])
    make_topic(client, name, 1)
    produce(name, records(0, 3, first=100))  # offsets 0..2: the checkpoint says 10

    query = start(stream(spark, kafka_hosts, **options), tmp_path)
    try:
        with pytest.raises(Exception) as info:
            query.processAllAvailable()
    finally:
        query.stop()
    assert "start offset 10 is beyond the end of the partition (3)" in str(info.value)
    assert "failOnDataLoss" in str(info.value)

    query = start(stream(spark, kafka_hosts, failOnDataLoss="false", **options), tmp_path)
    try:
        query.processAllAvailable()  # skips the lost range, as Spark's source does
        produce(name, records(0, 4, first=200))
        query.processAllAvailable()
    finally:
        query.stop()
    assert written(spark, tmp_path) == sorted([(name, 0, o) for o in range(10)] + [(name, 0, o) for o in range(3, 7)])


def test_available_now_reads_in_micro_batches_of_max_offsets_per_trigger(spark, kafka_hosts, client, produce,
                                                                          tmp_path):
    name = unique_name("now")
    make_topic(client, name, 1)
    produce(name, records(0, 50))
    df = stream(spark, kafka_hosts, subscribe=name, startingOffsets="earliest", maxOffsetsPerTrigger="20")
    query = (df.selectExpr("topic", "partition", "offset").writeStream.format("parquet")
             .option("path", str(tmp_path / "out")).option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(availableNow=True).start())
    try:
        query.awaitTermination(120)
        assert not query.isActive
        sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    finally:
        query.stop()
    assert sizes == [20, 20, 10]
    assert written(spark, tmp_path) == [(name, 0, o) for o in range(50)]


def test_ending_options_fail_a_stream_naming_them(spark, kafka_hosts, client, tmp_path):
    name = unique_name("ending")
    make_topic(client, name, 1)
    for option, value in (("endingOffsets", "latest"), ("endingTimestamp", "1700000000000"),
                          ("endingOffsetsByTimestamp", '{"%s": {"0": 1700000000000}}' % name)):
        query = start(stream(spark, kafka_hosts, subscribe=name, **{option: value}), tmp_path / option)
        try:
            with pytest.raises(Exception) as info:
                query.processAllAvailable()
        finally:
            query.stop()
        assert "option '%s' is not valid in a streaming query" % option in str(info.value)


def test_max_records_per_partition_splits_a_micro_batch_as_a_batch_read(kafka_hosts, client, produce):
    """maxRecordsPerPartition (Spark: 'Query type: streaming and batch') cuts a micro-batch's
    ranges too, as it cuts a batch read's."""
    from pyrdk.spark.options import ReadOptions
    from pyrdk.spark.source import KafkaBatchReader, KafkaStreamReader
    name = unique_name("split")
    make_topic(client, name, 1)
    produce(name, records(0, 50))
    options = {"kafka.bootstrap.servers": kafka_hosts, "subscribe": name, "startingOffsets": "earliest",
               "maxRecordsPerPartition": "10"}
    batch = KafkaBatchReader(ReadOptions(options, streaming=False)).partitions()
    reader = KafkaStreamReader(ReadOptions(options, streaming=True))
    try:
        start = reader.initialOffset()
        micro = reader.partitions(start, reader.latestOffset(start, None))
    finally:
        reader.stop()
    cuts = [(0, 10), (10, 20), (20, 30), (30, 40), (40, 50)]
    assert [(p.value.start, p.value.end) for p in batch] == cuts
    assert [(p.value.start, p.value.end) for p in micro] == cuts


# Either kafkaConsumer.pollTimeoutMs passes first (the metadata then says the partition is
# gone), or librdkafka's topic.metadata.propagation.max.ms does (the consumer then raises
# UnknownTopicOrPartition): 30 s by default, under the default pollTimeoutMs (120 s).
LOST_HOW = {"poll-timeout": {"kafkaConsumer.pollTimeoutMs": "3000"},
            "topic-gone": {"kafkaConsumer.pollTimeoutMs": "120000", "kafka.topic.metadata.propagation.max.ms": "1000"}}


@pytest.mark.parametrize("fail_on_data_loss", ["false", "true"])
@pytest.mark.parametrize("how", sorted(LOST_HOW))
def test_a_partition_lost_while_a_task_reads_it_is_data_loss_not_a_timeout(own_broker, fail_on_data_loss, how):
    """The broker restarted while a task reads, without the topic (Tansu keeps its log in
    memory; on Kafka, a topic deleted meanwhile): the task reports the partition gone, as the
    next micro-batch's planning would, not "no record ... within kafkaConsumer.pollTimeoutMs"
    nor the consumer's UnknownTopicOrPartition; with failOnDataLoss=false it ends with the
    rows read before."""
    from pyrdk import KafkaClient
    from pyrdk.spark import fetch
    from pyrdk.spark.offsets import DataLossError, OffsetRange
    from pyrdk.spark.options import ReadOptions
    name = unique_name("lost")
    with KafkaClient(hosts=own_broker.bootstrap_servers) as client:
        with make_topic(client, name, 1).get_producer(linger_ms=50) as producer:
            for _ in range(50000):
                producer.produce(b"x" * 50)
    opts = ReadOptions({"kafka.bootstrap.servers": own_broker.bootstrap_servers, "subscribe": name,
                        "failOnDataLoss": fail_on_data_loss,
                        # fetch a little at a time: the restart comes before the range is fetched
                        "kafka.fetch.max.bytes": "20000", "kafka.max.partition.fetch.bytes": "20000",
                        "kafka.message.max.bytes": "10000", "kafka.queued.max.messages.kbytes": "64",
                        **LOST_HOW[how]}, streaming=True)
    batches = fetch.read_range(opts, OffsetRange(name, 0, 0, 50000))
    try:
        read = next(batches).column("offset").to_pylist()
        own_broker.stop()
        own_broker.start()
        if fail_on_data_loss == "true":
            with pytest.raises(DataLossError, match=r"%s \[0\] is gone .* offsets \d+ to 50000 unread" % name):
                for batch in batches:
                    read += batch.column("offset").to_pylist()
        else:
            for batch in batches:
                read += batch.column("offset").to_pylist()
        assert read == list(range(len(read))) and len(read) < 50000
    finally:
        batches.close()
        fetch.close_kept()


def test_available_now_ends_where_a_new_query_starts_at_least(kafka_hosts, client, produce):
    """Spark prepares Trigger.AvailableNow (the ends to stop at) before it asks a new query for
    its start: records that arrive in between put startingOffsets=latest past those ends, which
    is no data loss. As Spark's Kafka source (which takes the ends after the start), the query
    stops at the ends of its start at least."""
    from pyrdk.spark.options import ReadOptions
    from pyrdk.spark.source import KafkaStreamReader
    name = unique_name("now")
    make_topic(client, name, 1)
    produce(name, records(0, 10))
    reader = KafkaStreamReader(ReadOptions({"kafka.bootstrap.servers": kafka_hosts, "subscribe": name},
                                           streaming=True))
    try:
        reader.prepareForTriggerAvailableNow()
        produce(name, records(0, 5, first=10))
        start = reader.initialOffset()
        end = reader.latestOffset(start, None)
        assert start == end == {name: {"0": 15}}
        assert reader.partitions(start, end) == []
    finally:
        reader.stop()
