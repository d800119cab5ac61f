"""Producer: pykafka 2.8's semantics on librdkafka.

Round trips run against the session's Tansu broker and are read back with confluent-kafka
(an independent client); delivery failures are injected with librdkafka's mock cluster.
"""
import array
import datetime
import gc
import inspect
import json
import queue
import sys
import threading
import time

import pytest

from pyrdk import CompressionType, KafkaClient, Message
from pyrdk.exceptions import (ConfigurationError, KafkaException, MessageSizeTooLarge, NoBrokersAvailableError,
                              ProduceFailureError, ProducerQueueFullError,
                              ProducerStoppedException, RequestTimedOut)
from pyrdk.partitioners import murmur2_partitioner
from pyrdk.producer import Producer
from pyrdk.rd.mock import ApiKey
from tests.fix_kafka import make_topic, tansu_gap, unique_name

# Kafka protocol error codes injected into Produce responses
REQUEST_TIMED_OUT = 7
MESSAGE_TOO_LARGE = 10
TOPIC_AUTHORIZATION_FAILED = 29

READ_DEADLINE_S = 60   # a bound for reading back, never asserted on
HANG_BOUND_S = 60      # a stop() that has not returned by then is hung (message.timeout.ms is 300 s)


# -- helpers -------------------------------------------------------------------------------------

def read_back(hosts, topic_name, n, num_partitions=4, stats=None):
    """Read ``n`` messages from the start of every partition with confluent-kafka.

    Returns confluent ``Message`` objects sorted by (partition, offset). With ``stats``
    (a list), librdkafka statistics JSON documents emitted after the read are appended.
    """
    import confluent_kafka as ck
    config = {"bootstrap.servers": hosts, "group.id": unique_name("readback"),
              "enable.auto.commit": False}
    if stats is not None:
        config.update({"statistics.interval.ms": 100, "stats_cb": lambda s: stats.append(json.loads(s))})
    consumer = ck.Consumer(config)
    try:
        consumer.assign([ck.TopicPartition(topic_name, p, ck.OFFSET_BEGINNING)
                         for p in range(num_partitions)])
        out = []
        deadline = time.monotonic() + READ_DEADLINE_S
        while len(out) < n and time.monotonic() < deadline:
            for m in consumer.consume(num_messages=max(1, n - len(out)), timeout=0.5):
                assert m.error() is None, m.error()
                out.append(m)
        if stats is not None:  # two more documents: the last one covers the whole read
            del stats[:]
            while len(stats) < 2 and time.monotonic() < deadline:
                out.extend(consumer.consume(num_messages=100, timeout=0.2))
        return sorted(out, key=lambda m: (m.partition(), m.offset()))
    finally:
        consumer.close()


def wait_until(predicate, what):
    deadline = time.monotonic() + READ_DEADLINE_S
    while not predicate():
        assert time.monotonic() < deadline, "gave up waiting for " + what
        time.sleep(0.02)


def drain_reports(producer):
    reports = []
    while True:
        try:
            reports.append(producer.get_delivery_report(block=False))
        except queue.Empty:
            return reports


def run_bounded(fn):
    """Run ``fn`` in a thread; returns (finished, result, exception)."""
    box = {}

    def target():
        try:
            box["result"] = fn()
        except BaseException as exc:  # handed to the test
            box["exc"] = exc
    th = threading.Thread(target=target, daemon=True)
    th.start()
    th.join(HANG_BOUND_S)
    return not th.is_alive(), box.get("result"), box.get("exc")


@pytest.fixture
def mock_client(mock_cluster):
    c = KafkaClient(hosts=mock_cluster.bootstrap_servers)
    yield c
    c.close()


@pytest.fixture
def mock_topic(mock_cluster, mock_client, topic_name):
    """A 4-partition topic on the mock cluster."""
    mock_cluster.create_topic(topic_name, 4)
    return mock_client.topics[topic_name]


def warm(producer):
    """One delivered message: metadata known and connections up before faults start."""
    msg = producer.produce(b"warm-up")
    producer.flush()
    assert msg.offset >= 0
    if producer._delivery_reports:
        assert producer.get_delivery_report(block=False) == (msg, None)


# -- produce / delivery against Tansu ------------------------------------------------------------

@pytest.mark.kafka
def test_produce_returns_the_message_and_flush_sets_offset_and_partition(topic, kafka_hosts, topic_name):
    producer = topic.get_producer(linger_ms=50)
    try:
        msgs = [producer.produce(b"value-%d" % i, partition_key=b"key-%d" % i) for i in range(12)]
        for i, msg in enumerate(msgs):
            assert isinstance(msg, Message)
            assert msg.value == b"value-%d" % i and msg.partition_key == b"key-%d" % i
            assert msg.topic == topic_name
            assert msg.partition_id in topic.partitions
        assert producer.flush() == 0
        assert len(producer) == 0
    finally:
        producer.stop()
    assert all(m.offset >= 0 for m in msgs)
    assert len({(m.partition_id, m.offset) for m in msgs}) == len(msgs)
    back = {(m.partition(), m.offset()): (m.key(), m.value()) for m in read_back(kafka_hosts, topic_name, 12)}
    assert back == {(m.partition_id, m.offset): (m.partition_key, m.value) for m in msgs}


@pytest.mark.kafka
def test_with_block_delivers_everything(topic, kafka_hosts, topic_name):
    with topic.get_producer() as producer:  # pykafka's defaults: linger_ms=5000
        msgs = [producer.produce(b"m-%04d" % i) for i in range(1000)]
    assert all(m.offset >= 0 for m in msgs)
    back = read_back(kafka_hosts, topic_name, 1000)
    assert sorted(m.value() for m in back) == sorted(m.value for m in msgs)
    assert {(m.partition(), m.offset()): m.value() for m in back} == \
        {(m.partition_id, m.offset): m.value for m in msgs}


@pytest.mark.kafka
@pytest.mark.parametrize("how", ["get_sync_producer", "sync=True"])
def test_sync_produce_returns_after_delivery(topic, how):
    first = lambda partitions, key: sorted(partitions)[0]  # noqa: E731
    producer = topic.get_sync_producer(partitioner=first) if how == "get_sync_producer" \
        else topic.get_producer(sync=True, partitioner=first)
    with producer:
        offsets = [producer.produce(b"sync-%d" % i).offset for i in range(5)]
        assert len(producer) == 0
    assert offsets == list(range(5))


@pytest.mark.kafka
@pytest.mark.parametrize("compression", list(CompressionType), ids=lambda c: c.name)
def test_compression_round_trip(client, kafka_hosts, topic_name, compression):
    topic = make_topic(client, topic_name, 1)
    values = [(b"%06d" % i) * 4000 for i in range(25)]  # 24 KB each, very compressible
    with topic.get_producer(compression=compression, linger_ms=20) as producer:
        msgs = [producer.produce(v, partition_key=b"k%d" % i) for i, v in enumerate(values)]
    assert {m.compression_type for m in msgs} == {compression}
    stats = []
    back = read_back(kafka_hosts, topic_name, len(values), num_partitions=1, stats=stats)
    assert [m.value() for m in back] == values
    assert [m.key() for m in back] == [b"k%d" % i for i in range(len(values))]
    # The bytes the consumer fetched show whether the batches were compressed on the wire.
    assert stats, "no statistics from the reading consumer"
    fetched = sum(b["rxbytes"] for b in stats[-1]["brokers"].values())
    payload = sum(map(len, values))
    if compression == CompressionType.NONE:
        assert fetched >= payload
    else:
        assert fetched < payload / 4


@pytest.mark.kafka
@pytest.mark.parametrize("acks", [0, 1, -1])
def test_required_acks(topic, kafka_hosts, topic_name, acks):
    with topic.get_producer(required_acks=acks, linger_ms=5) as producer:
        msgs = [producer.produce(b"acks-%d" % i) for i in range(20)]
        if acks == 0:
            # Read back before the producer closes its connection: with acks=0 a request
            # the broker has not read by then may be dropped with the connection.
            producer.flush()
            back = read_back(kafka_hosts, topic_name, 20)
    if acks == 0:  # the broker does not answer: no offsets (pykafka: -1)
        assert {m.offset for m in msgs} == {-1}
    else:
        assert all(m.offset >= 0 for m in msgs)
        back = read_back(kafka_hosts, topic_name, 20)
    assert sorted(m.value() for m in back) == sorted(m.value for m in msgs)


@pytest.mark.kafka
@pytest.mark.parametrize("acks", [1, -1])
def test_an_ack_timeout_of_zero_is_pykafkas_answer_at_once(topic, kafka_hosts, topic_name, acks):
    """pykafka takes ack_timeout_ms=0 (the broker answers without waiting for the replicas);
    librdkafka's least request.timeout.ms is 1, which it becomes."""
    with topic.get_producer(required_acks=acks, ack_timeout_ms=0, linger_ms=5) as producer:
        msgs = [producer.produce(b"at-once-%d" % i) for i in range(5)]
        assert producer._config["request.timeout.ms"] == 1
    assert all(m.offset >= 0 for m in msgs)
    back = read_back(kafka_hosts, topic_name, 5)
    assert sorted(m.value() for m in back) == sorted(m.value for m in msgs)


@pytest.mark.kafka
def test_linger_ms_holds_messages_until_flush(topic):
    with topic.get_producer(linger_ms=60000, delivery_reports=True) as producer:
        msg = producer.produce(b"lingering")
        with pytest.raises(queue.Empty):  # a minute of linger: nothing sent yet
            producer.get_delivery_report(timeout=1)
        assert len(producer) == 1
        producer.flush()
        assert producer.get_delivery_report(block=False) == (msg, None)
        assert msg.offset >= 0


@pytest.mark.kafka
def test_linger_ms_zero_sends_without_flush(topic):
    with topic.get_producer(linger_ms=0, delivery_reports=True) as producer:
        msg = producer.produce(b"now")
        assert producer.get_delivery_report(timeout=READ_DEADLINE_S) == (msg, None)
        assert msg.offset >= 0


@pytest.mark.kafka
@pytest.mark.parametrize("name", ["a\0b", b"a\0b"])
def test_a_header_name_holding_nul_is_refused_not_cut_short(topic, name):
    """librdkafka gives a consumer a header's name up to its first NUL: 'a\\0b' came back 'a'."""
    with topic.get_producer(delivery_reports=True) as producer:
        with pytest.raises(ValueError, match="holds a NUL character"):
            producer.produce(b"v", headers=[(name, b"x")])
        assert len(producer) == 0  # nothing queued


@pytest.mark.kafka
def test_headers_and_timestamps_round_trip(topic, kafka_hosts, topic_name):
    aware = datetime.datetime(2021, 3, 4, 5, 6, 7, 891000, tzinfo=datetime.timezone.utc)
    naive = datetime.datetime(2020, 1, 2, 3, 4, 5, 678000)  # taken as UTC, as pykafka did
    cases = [
        (b"list", [("h1", b"v1"), ("h2", b""), ("h1", b"again")], 1600000000123),
        (b"dict", {"content-type": b"application/json", "trace": b"\x00\xff"}, aware),
        (b"none", None, naive),
        (b"str-value", [("s", "text")], None),
    ]
    expected_ts = {b"list": 1600000000123, b"dict": 1614834367891, b"none": 1577934245678}
    with topic.get_producer(linger_ms=5) as producer:
        before = int(time.time() * 1000)
        msgs = {value: producer.produce(value, headers=headers, timestamp=ts)
                for value, headers, ts in cases}
    for value, ts in expected_ts.items():
        assert msgs[value].timestamp == ts
    back = {m.value(): m for m in read_back(kafka_hosts, topic_name, len(cases))}
    assert back[b"list"].headers() == [("h1", b"v1"), ("h2", b""), ("h1", b"again")]
    assert sorted(back[b"dict"].headers()) == [("content-type", b"application/json"), ("trace", b"\x00\xff")]
    assert not back[b"none"].headers()
    assert back[b"str-value"].headers() == [("s", b"text")]
    for value, ts in expected_ts.items():
        assert back[value].timestamp() == (1, ts)  # CreateTime
    assert back[b"str-value"].timestamp()[1] >= before  # default: the produce time


class Claims(bytes):
    """bytes whose len() says more than they hold: librdkafka must copy what they hold."""

    def __len__(self):
        return 4096


@pytest.mark.kafka
def test_a_bytes_subclass_is_sent_as_its_bytes_whatever_its_len_says(topic, kafka_hosts, topic_name):
    with topic.get_producer(linger_ms=5) as producer:
        producer.produce(Claims(b"value"), partition_key=Claims(b"key"), headers=[("h", Claims(b"header"))])
        producer.produce_batch([(Claims(b"batch"), Claims(b"key"))])
    back = sorted((m.value(), m.key(), m.headers()) for m in read_back(kafka_hosts, topic_name, 2))
    assert back == [(b"batch", b"key", None), (b"value", b"key", [("h", b"header")])]
    partitions = list(topic.partitions.values())
    assert murmur2_partitioner(partitions, Claims(b"key")) is murmur2_partitioner(partitions, b"key")


@pytest.mark.kafka
def test_a_float_timestamp_is_taken_as_whole_ms(topic, kafka_hosts, topic_name):
    """pykafka took ``produce(timestamp=time.time() * 1000)`` and wrote int(timestamp)."""
    with topic.get_producer(linger_ms=5) as producer:
        msg = producer.produce(b"float", timestamp=1600000000123.75)
    assert msg.timestamp == 1600000000123
    (back,) = read_back(kafka_hosts, topic_name, 1)
    assert back.timestamp() == (1, 1600000000123)  # CreateTime


@pytest.mark.kafka
def test_a_timestamp_of_zero_is_refused_not_sent_as_now(topic):
    """librdkafka reads a timestamp of 0 as 'now': the epoch itself cannot be sent."""
    with topic.get_producer(linger_ms=5) as producer:
        for zero in (0, 0.5, datetime.datetime(1970, 1, 1)):
            with pytest.raises(ValueError, match="reads a timestamp of 0 as 'now'"):
                producer.produce(b"epoch", timestamp=zero)
        assert len(producer) == 0


@pytest.mark.kafka
def test_a_datetime_timestamp_is_cut_to_whole_ms(topic, kafka_hosts, topic_name):
    """pykafka wrote int(1000 * (dt - epoch).total_seconds()), as Message.set_timestamp does:
    a datetime 0.6 ms before a second is that second's 999th ms, not the next second."""
    naive = datetime.datetime(2020, 1, 1, 0, 0, 0, 999600)
    aware = datetime.datetime(2020, 1, 1, 5, 0, 0, 999999, tzinfo=datetime.timezone(datetime.timedelta(hours=5)))
    with topic.get_producer(linger_ms=5, partitioner=lambda parts, key: parts[0]) as producer:
        msgs = [producer.produce(b"v", timestamp=ts) for ts in (naive, aware)]
    assert [m.timestamp for m in msgs] == [1577836800999] * 2
    assert [m.timestamp() for m in read_back(kafka_hosts, topic_name, 2)] == [(1, 1577836800999)] * 2


@pytest.mark.kafka
def test_serializer_is_applied(topic, kafka_hosts, topic_name):
    def serializer(value, partition_key):
        return json.dumps(value, sort_keys=True).encode(), partition_key.encode()

    with topic.get_producer(serializer=serializer, linger_ms=5) as producer:
        msg = producer.produce({"b": [1, 2], "a": "x"}, partition_key="user-1")
    assert msg.value == b'{"a": "x", "b": [1, 2]}' and msg.partition_key == b"user-1"
    (back,) = read_back(kafka_hosts, topic_name, 1)
    assert (back.key(), back.value()) == (b"user-1", b'{"a": "x", "b": [1, 2]}')


@pytest.mark.kafka
def test_start_after_stop_produces_again(topic, kafka_hosts, topic_name):
    producer = topic.get_producer(linger_ms=5)
    first = producer.produce(b"first")
    producer.stop()
    producer.stop()  # twice is fine
    with pytest.raises(ProducerStoppedException):
        producer.produce(b"stopped")
    producer.start()
    second = producer.produce(b"second")
    producer.stop()
    assert first.offset >= 0 and second.offset >= 0
    assert sorted(m.value() for m in read_back(kafka_hosts, topic_name, 2)) == [b"first", b"second"]


@pytest.mark.kafka
@pytest.mark.parametrize("how", ["enable_idempotence", "rdkafka_config"])
def test_idempotent_producer_delivers(topic, kafka_hosts, topic_name, how):
    kwargs = {"enable_idempotence": True} if how == "enable_idempotence" \
        else {"rdkafka_config": {"enable.idempotence": "true"}}
    with topic.get_producer(linger_ms=5, **kwargs) as producer:
        msgs = [producer.produce(b"idem-%d" % i) for i in range(30)]
    assert all(m.offset >= 0 for m in msgs)
    assert sorted(m.value() for m in read_back(kafka_hosts, topic_name, 30)) == \
        sorted(m.value for m in msgs)


@pytest.mark.kafka
def test_enable_idempotence_reaches_librdkafka(topic):
    # librdkafka itself refuses idempotence without acks from all replicas.
    with pytest.raises(ConfigurationError, match="idempotence"):
        topic.get_producer(enable_idempotence=True, required_acks=0)


@pytest.mark.mock
def test_after_a_fatal_error_produce_raises_it_with_its_code_and_reason(mock_topic):
    """librdkafka refuses a message with ``_FATAL`` ("Local: Fatal error", not flagged fatal)
    once its idempotent producer has failed: what produce() raises is that fatal error."""
    from pyrdk._ffi import lib
    producer = mock_topic.get_producer(enable_idempotence=True, sync=True)
    try:
        producer.produce(b"before")
        with producer._handle.use() as rk:  # librdkafka's way to fail a producer in a test
            assert lib.rd_kafka_test_fatal_error(rk, 47, b"fabricated by the test") == 0
        for _ in range(2):  # the first may be the error event, the second is the refusal
            with pytest.raises(KafkaException) as info:
                producer.produce(b"after")
            assert (info.value.fatal, info.value.code, info.value.name) == (True, 47, "INVALID_PRODUCER_EPOCH")
            assert "fabricated by the test" in str(info.value)
    finally:
        try:
            producer.stop()
        except KafkaException as exc:  # the error event, if produce() raised the refusal first
            assert exc.code == 47, exc


# -- local refusals (mock cluster) ---------------------------------------------------------------

@pytest.mark.mock
def test_produce_refuses_non_bytes(mock_topic):
    with mock_topic.get_producer() as producer:
        for kwargs in ({"message": "text"}, {"message": 42}, {"message": [b"x"]},
                       {"message": b"v", "partition_key": "text"},
                       {"message": b"v", "partition_key": 7},
                       {"message": b"v", "timestamp": "yesterday"},
                       {"message": b"v", "timestamp": -5},
                       {"message": b"v", "headers": [("h", 5)]}):
            with pytest.raises(TypeError):
                producer.produce(**kwargs)
        assert len(producer) == 0
        assert producer.produce(None, partition_key=b"tombstone").value is None


@pytest.mark.mock
def test_message_over_max_request_size(mock_topic):
    with mock_topic.get_producer(max_request_size=1000) as producer:
        with pytest.raises(MessageSizeTooLarge):
            producer.produce(b"x" * 2000)
        with pytest.raises(MessageSizeTooLarge):  # key and value together
            producer.produce(b"x" * 600, partition_key=b"k" * 600)
        for timestamp in (None, 5):  # the short way and the general one
            with pytest.raises(MessageSizeTooLarge) as info:  # over it with librdkafka's overhead
                producer.produce(b"x" * 990, timestamp=timestamp)
            assert "990 bytes" in str(info.value) and "record overhead" in str(info.value)
        assert len(producer) == 0  # nothing queued
        small = producer.produce(b"x" * 100)
        assert producer.flush() == 0 and small.offset >= 0


@pytest.mark.mock
def test_message_over_max_request_size_is_reported_with_delivery_reports(mock_topic):
    """pykafka's producer returned the message and reported MessageSizeTooLarge in its
    delivery report (OwnedBroker.flush); a program draining the reports for failures must
    not get the exception from produce() instead."""
    with mock_topic.get_producer(max_request_size=1000, delivery_reports=True) as producer:
        big = producer.produce(b"x" * 2000)
        both = producer.produce(b"x" * 600, partition_key=b"k" * 600)  # key and value together
        overhead = producer.produce(b"x" * 990, timestamp=5)  # over it with librdkafka's overhead
        small = producer.produce(b"x" * 100)
        assert producer.flush() == 0
        reports = drain_reports(producer)
        assert [m for m, _ in reports] == [big, both, overhead, small]
        assert all(isinstance(exc, MessageSizeTooLarge) for _, exc in reports[:3]) and reports[3][1] is None
        assert "record overhead" in str(reports[2][1])
        assert big.value == b"x" * 2000 and big.partition_id in mock_topic.partitions
    for reports in (False, True):  # sync: raised, as pykafka's raises the report's exception
        with mock_topic.get_sync_producer(max_request_size=1000, delivery_reports=reports) as producer:
            with pytest.raises(MessageSizeTooLarge):
                producer.produce(b"x" * 2000)


@pytest.mark.mock
def test_produce_after_stop(mock_topic):
    producer = mock_topic.get_producer()
    producer.stop()
    producer.stop()
    with pytest.raises(ProducerStoppedException):
        producer.produce(b"late")
    with pytest.raises(ProducerStoppedException):
        producer.flush()


@pytest.mark.mock
@pytest.mark.parametrize("config, key, value", [
    ({"no.such.property": "1"}, "no.such.property", "1"),
    ({"linger.ms": "soon"}, "linger.ms", "soon"),
    ({"compression.codec": "brotli"}, "compression.codec", "brotli"),
])
def test_bad_rdkafka_config(mock_topic, config, key, value):
    with pytest.raises(ConfigurationError) as info:
        mock_topic.get_producer(rdkafka_config=config)
    assert key in str(info.value) and value in str(info.value)
    assert isinstance(info.value, ValueError)


@pytest.mark.mock
@pytest.mark.parametrize("kwargs, name", [
    ({"pending_timeout_ms": None}, "pending_timeout_ms"),
    ({"pending_timeout_ms": "5000"}, "pending_timeout_ms"),
    ({"pending_timeout_ms": -2}, "pending_timeout_ms"),
    ({"max_request_size": -1}, "max_request_size"),
    ({"max_request_size": 0}, "max_request_size"),
    ({"max_request_size": 1.5}, "max_request_size"),
    ({"max_request_size": 10 ** 10}, "max_request_size"),  # more than librdkafka's message.max.bytes takes
])
def test_bad_producer_argument_is_refused_before_anything_is_queued(mock_topic, kwargs, name):
    # Unchecked, they would fail later: stop() with a TypeError before its flush, or
    # every produce() with an OverflowError.
    with pytest.raises(TypeError, match="^%s must be an int >= " % name):
        mock_topic.get_producer(**kwargs)


@pytest.mark.mock
def test_delivery_reports_disabled(mock_topic):
    with mock_topic.get_producer() as producer:
        with pytest.raises(KafkaException, match="Delivery-reporting is disabled"):
            producer.get_delivery_report(block=False)


@pytest.mark.mock
def test_get_delivery_report_of_a_sync_producer_says_why_there_is_none(mock_topic):
    """delivery_reports=True is ignored with sync=True (as pykafka documents): the error says
    so, not to pass the delivery_reports=True the program passed."""
    with mock_topic.get_producer(sync=True, delivery_reports=True) as producer:
        with pytest.raises(KafkaException, match=r"a sync producer \(sync=True\) has no delivery reports"):
            producer.get_delivery_report(block=False)


@pytest.mark.mock
def test_no_delivery_report_is_queue_empty(mock_topic):
    with mock_topic.get_producer(delivery_reports=True) as producer:
        with pytest.raises(queue.Empty):
            producer.get_delivery_report(block=False)
        with pytest.raises(queue.Empty):
            producer.get_delivery_report(timeout=0.1)
        for bad in ("1", -1, [1]):
            with pytest.raises(TypeError, match=r"get_delivery_report\(timeout\) must be a number >= 0"):
                producer.get_delivery_report(timeout=bad)


# -- delivery failures (mock cluster error injection) --------------------------------------------

@pytest.mark.mock
@pytest.mark.parametrize("code, exc_class", [(REQUEST_TIMED_OUT, RequestTimedOut),
                                             (MESSAGE_TOO_LARGE, MessageSizeTooLarge)])
def test_sync_produce_raises_the_delivery_error(mock_cluster, mock_topic, code, exc_class):
    with mock_topic.get_sync_producer(max_retries=0) as producer:
        assert producer.produce(b"ok").offset >= 0
        mock_cluster.push_request_errors(ApiKey.Produce, code)
        with pytest.raises(exc_class) as info:
            producer.produce(b"refused")
        assert info.value.code == code
        assert len(producer) == 0
        assert producer.produce(b"ok again").offset >= 0  # still usable


@pytest.mark.mock
def test_sync_produce_retries_a_retriable_error(mock_cluster, mock_topic):
    with mock_topic.get_sync_producer(max_retries=3, retry_backoff_ms=10) as producer:
        mock_cluster.push_request_errors(ApiKey.Produce, REQUEST_TIMED_OUT)
        assert producer.produce(b"retried").offset >= 0


@pytest.mark.mock
def test_delivery_reports_success_and_failure(mock_cluster, mock_topic):
    with mock_topic.get_producer(max_retries=0, linger_ms=0, delivery_reports=True) as producer:
        mock_cluster.push_request_errors(ApiKey.Produce, MESSAGE_TOO_LARGE)
        bad = producer.produce(b"bad")
        msg, exc = producer.get_delivery_report(timeout=READ_DEADLINE_S)
        assert msg is bad
        assert isinstance(exc, MessageSizeTooLarge) and exc.code == MESSAGE_TOO_LARGE
        assert bad.offset == -1
        good = producer.produce(b"good")
        assert producer.get_delivery_report(timeout=READ_DEADLINE_S) == (good, None)
        assert good.offset >= 0


@pytest.mark.mock
def test_delivery_reports_are_per_thread(mock_topic):
    with mock_topic.get_producer(linger_ms=0, delivery_reports=True) as producer:
        produced = threading.Event()
        may_read = threading.Event()
        box = {}

        def other_thread():
            box["msgs"] = [producer.produce(b"from-thread-%d" % i) for i in range(3)]
            produced.set()
            may_read.wait(READ_DEADLINE_S)
            box["reports"] = [producer.get_delivery_report(timeout=READ_DEADLINE_S) for _ in range(3)]
            try:
                producer.get_delivery_report(block=False)
            except queue.Empty:
                box["then_empty"] = True

        th = threading.Thread(target=other_thread)
        th.start()
        produced.wait(READ_DEADLINE_S)
        mine = producer.produce(b"from-main")
        producer.flush()  # every report is dispatched now, into its thread's queue
        assert drain_reports(producer) == [(mine, None)]
        may_read.set()
        th.join(READ_DEADLINE_S)
        assert sorted(box["reports"], key=lambda r: r[0].value) == [(m, None) for m in box["msgs"]]
        assert box["then_empty"]


@pytest.mark.mock
@pytest.mark.parametrize("surfaces_on", ["produce", "produce_batch", "flush", "stop", "with"])
def test_failed_delivery_without_reports_raises_later(mock_cluster, mock_topic, surfaces_on):
    producer = mock_topic.get_producer(max_retries=0, linger_ms=0)
    try:
        mock_cluster.push_request_errors(ApiKey.Produce, MESSAGE_TOO_LARGE)
        bad = producer.produce(b"bad")
        with pytest.raises(ProduceFailureError) as info:
            if surfaces_on == "produce":
                wait_until(lambda: len(producer) == 0, "the delivery report")
                producer.produce(b"next")
            elif surfaces_on == "produce_batch":
                wait_until(lambda: len(producer) == 0, "the delivery report")
                producer.produce_batch([b"next", b"and next"])
            elif surfaces_on == "flush":
                producer.flush()
            elif surfaces_on == "stop":
                producer.stop()
            else:
                with producer:
                    pass
        assert len(info.value.failed) == 1
        msg, exc = info.value.failed[0]
        assert msg is bad and isinstance(exc, MessageSizeTooLarge)
        assert isinstance(info.value.__cause__, MessageSizeTooLarge)
        if surfaces_on in ("produce", "produce_batch", "flush"):  # reported once, and the producer goes on
            good = producer.produce(b"good")
            assert producer.flush() == 0 and good.offset >= 0
    finally:
        producer.stop()
    if surfaces_on.startswith("produce"):  # raised once the call's own messages were queued: none lost
        queued = [b"next"] if surfaces_on == "produce" else [b"next", b"and next"]
        assert info.value.produced == len(queued)
        assert "had queued its %d message(s)" % len(queued) in str(info.value)
        got = read_back(mock_cluster.bootstrap_servers, mock_topic.name.decode(), len(queued) + 1)
        assert sorted(m.value() for m in got) == sorted(queued + [b"good"])


# -- a full queue --------------------------------------------------------------------------------

def fill_while_down(mock_cluster, producer):
    """With the broker down, produce until ProducerQueueFullError (the producer's queue
    holds 5); then bring the broker back and flush. Returns the Messages queued."""
    mock_cluster.broker_down(-1)
    queued = []
    with pytest.raises(ProducerQueueFullError):
        for i in range(50):
            queued.append(producer.produce(b"q-%d" % i))
    assert len(queued) == 5 and len(producer) == 5
    mock_cluster.broker_up(-1)
    assert producer.flush(READ_DEADLINE_S) == 0
    return queued


@pytest.mark.mock
def test_the_short_way_refuses_as_the_general_one(mock_cluster, mock_topic):
    """Without delivery reports, serializer or sync, produce() sends in one C call
    (send_message): a refused message raises, is not counted, and the rest still get their
    offsets."""
    with mock_topic.get_producer(max_queued_messages=5, block_on_queue_full=False, linger_ms=0,
                                 max_request_size=1000) as producer:
        warm(producer)
        with pytest.raises(MessageSizeTooLarge):
            producer.produce(b"x" * 600, partition_key=b"k" * 600)
        assert len(producer) == 0
        queued = fill_while_down(mock_cluster, producer)
        assert all(m.offset >= 0 and m.topic == mock_topic.name.decode() for m in queued)
        assert [m.value for m in queued] == [b"q-%d" % i for i in range(5)]


@pytest.mark.mock
@pytest.mark.parametrize("linger_ms", [0, 5000], ids=["short", "buffered"])
def test_the_short_way_leaves_no_reference_behind(mock_topic, linger_ms):
    """send_message, the buffered way and the delivery reports applied in C count references
    by hand: once every message is delivered or refused, and dropped, what it held is back
    to its count."""
    value, key, too_large = (bytes(bytearray(b)) for b in (b"v" * 50, b"k" * 8, b"x" * 2000))
    held = [value, key, too_large] + list(mock_topic.partitions.values())
    with mock_topic.get_producer(linger_ms=linger_ms, max_request_size=1000) as producer:
        warm(producer)
        gc.collect()  # garbage of earlier tests may still name them
        before = [sys.getrefcount(o) for o in held]
        for _ in range(500):
            producer.produce(value, partition_key=key)
            with pytest.raises(MessageSizeTooLarge):
                producer.produce(too_large)
        assert producer.flush() == 0 and len(producer) == 0
        gc.collect()
        assert [sys.getrefcount(o) for o in held] == before


@pytest.mark.mock
def test_queue_full_raises_without_blocking(mock_cluster, mock_topic):
    with mock_topic.get_producer(max_queued_messages=5, block_on_queue_full=False, linger_ms=0,
                                 delivery_reports=True) as producer:
        warm(producer)
        queued = fill_while_down(mock_cluster, producer)
        reports = drain_reports(producer)
        assert sorted(reports, key=lambda r: r[0].value) == [(m, None) for m in queued]
        assert all(m.offset >= 0 for m in queued)


@pytest.mark.mock
def test_queue_full_blocks_until_the_broker_is_back(mock_cluster, mock_topic):
    with mock_topic.get_producer(max_queued_messages=5, block_on_queue_full=True, linger_ms=0,
                                 delivery_reports=True) as producer:
        warm(producer)
        mock_cluster.broker_down(-1)
        queued = [producer.produce(b"q-%d" % i) for i in range(5)]
        box = {}

        def blocked():
            try:
                box["msg"] = producer.produce(b"waited")
                box["reports"] = [producer.get_delivery_report(timeout=READ_DEADLINE_S)]
            except BaseException as exc:  # handed to the test
                box["exc"] = exc

        th = threading.Thread(target=blocked)
        th.start()
        th.join(1.0)
        assert th.is_alive(), "produce() should wait for room while the queue is full: %r" % box
        mock_cluster.broker_up(-1)
        th.join(READ_DEADLINE_S)
        assert not th.is_alive() and "exc" not in box
        assert box["reports"] == [(box["msg"], None)]
        producer.flush()
        assert sorted(drain_reports(producer), key=lambda r: r[0].value) == [(m, None) for m in queued]
        assert all(m.offset >= 0 for m in queued + [box["msg"]])


@pytest.mark.mock
def test_flush_raises_no_brokers_with_the_core_holding_what_a_full_queue_refused(mock_cluster, mock_client,
                                                                                  topic_name):
    """flush() (no timeout) during an outage, with the core's queues holding messages that
    librdkafka's full queue refused: NoBrokersAvailableError once socket_timeout_ms has passed,
    not a wait for room that only message.timeout.ms (300 s) makes."""
    client = KafkaClient(hosts=mock_cluster.bootstrap_servers, socket_timeout_ms=1000)
    try:
        mock_cluster.create_topic(topic_name, 4)
        producer = client.topics[topic_name].get_producer(max_queued_messages=5, pending_timeout_ms=300)
        warm(producer)
        mock_cluster.broker_down(-1)
        msgs = [producer.produce(b"q-%d" % i) for i in range(40)]
        wait_until(lambda: producer._core.queued == 35, "the poller's hand-off of 5")
        finished, _, exc = run_bounded(producer.flush)
        assert finished, "flush() waited on the outage"
        assert isinstance(exc, NoBrokersAvailableError)
        finished, _, exc = run_bounded(producer.stop)
        assert finished and isinstance(exc, ProduceFailureError)
        assert sorted(m.value for m, _ in exc.failed) == sorted(m.value for m in msgs)
    finally:
        client.close()


# -- stop() with a broker that never comes back ---------------------------------------------------

@pytest.mark.mock
@pytest.mark.parametrize("fault", ["down", "slow"])
def test_stop_with_a_dead_broker_reports_every_message(mock_cluster, mock_topic, fault):
    producer = mock_topic.get_producer(linger_ms=0, pending_timeout_ms=300)
    warm(producer)
    if fault == "down":
        mock_cluster.broker_down(-1)
    else:  # requests go out and are never answered in time: in flight at stop()
        mock_cluster.set_broker_rtt(-1, 600000)
    msgs = [producer.produce(b"lost-%d" % i) for i in range(20)]
    finished, _, exc = run_bounded(producer.stop)
    assert finished, "stop() did not return"
    assert isinstance(exc, ProduceFailureError)
    assert sorted(m.value for m, _ in exc.failed) == sorted(m.value for m in msgs)
    assert all(isinstance(e, KafkaException) for _, e in exc.failed)
    assert all(m.offset == -1 for m in msgs)
    mock_cluster.set_broker_rtt(-1, 0)


@pytest.mark.mock
@pytest.mark.parametrize("fault", ["down", "slow"])
def test_stop_with_a_dead_broker_and_delivery_reports(mock_cluster, mock_topic, fault):
    producer = mock_topic.get_producer(linger_ms=0, pending_timeout_ms=300, delivery_reports=True)
    warm(producer)
    if fault == "down":
        mock_cluster.broker_down(-1)
    else:
        mock_cluster.set_broker_rtt(-1, 600000)
    msgs = [producer.produce(b"lost-%d" % i) for i in range(20)]
    finished, _, exc = run_bounded(producer.stop)
    assert finished, "stop() did not return"
    assert exc is None  # told through the reports instead
    reports = drain_reports(producer)
    assert sorted(m.value for m, _ in reports) == sorted(m.value for m in msgs)
    assert all(isinstance(e, KafkaException) for _, e in reports)
    mock_cluster.set_broker_rtt(-1, 0)


@pytest.mark.mock
@pytest.mark.parametrize("pending_timeout_ms", [300, 0])
@pytest.mark.parametrize("call", ["produce_batch", "produce_arrow", "produce"])
def test_stop_ends_a_call_waiting_on_a_full_queue_and_reports_what_it_queued(mock_cluster, mock_topic, monkeypatch,
                                                                              call, pending_timeout_ms):
    """stop() while a call waits for room in a full queue (every broker down): the call ends
    with ProducerStoppedException, and each message it queued (``produced``) is reported at
    stop(); none is handed to librdkafka after stop()'s purge, to be dropped unreported."""
    import pyrdk.producer
    deliver = pyrdk.producer._deliver_or_purge

    def deliver_then_linger(*args):
        deliver(*args)
        time.sleep(0.5)  # a call still waiting hands over what the purge made room for
    producer = mock_topic.get_producer(linger_ms=0, pending_timeout_ms=pending_timeout_ms, max_queued_messages=20)
    warm(producer)
    mock_cluster.broker_down(-1)
    values = [b"v-%d" % i for i in range(60)]
    box, told = {}, []

    def produce():
        try:
            if call == "produce_batch":
                box["queued"] = producer.produce_batch(values)
            elif call == "produce_arrow":
                import pyarrow as pa
                box["queued"] = producer.produce_arrow(pa.record_batch([pa.array(values, pa.binary())],
                                                                       names=["value"]))
            else:
                for value in values:
                    try:
                        producer.produce(value)
                    except ProduceFailureError as failure:  # raised once the message is queued
                        told.extend(m.value for m, _ in failure.failed)
                    box["queued"] = box.get("queued", 0) + 1
        except BaseException as exc:  # handed to the test
            box["exc"] = exc
    th = threading.Thread(target=produce)
    th.start()
    wait_until(lambda: producer._entering, "the call waiting on the full queue")
    time.sleep(0.2)
    monkeypatch.setattr(pyrdk.producer, "_deliver_or_purge", deliver_then_linger)
    finished, _, exc = run_bounded(producer.stop)
    th.join(HANG_BOUND_S)
    assert finished and not th.is_alive()
    assert isinstance(box.get("exc"), ProducerStoppedException), box
    queued = getattr(box["exc"], "produced", box.get("queued", 0))
    assert isinstance(exc, ProduceFailureError)
    told.extend(m.value for m, _ in exc.failed)
    assert sorted(told) == sorted(values[:queued])


@pytest.mark.mock
def test_a_stop_cut_short_by_ctrl_c_leaves_its_failures_to_the_next_stop(mock_cluster, mock_topic, monkeypatch,
                                                                           caplog):
    """A Ctrl-C while stop() waits for the broker: the messages it closes over are logged, and
    the next stop() raises them (it returned at once, and nobody was ever told)."""
    import pyrdk.producer

    def interrupted(*args):
        raise KeyboardInterrupt
    producer = mock_topic.get_producer(linger_ms=0)
    warm(producer)
    mock_cluster.broker_down(-1)
    msgs = [producer.produce(b"lost-%d" % i) for i in range(20)]
    monkeypatch.setattr(pyrdk.producer, "_deliver_or_purge", interrupted)
    with pytest.raises(KeyboardInterrupt):
        producer.stop()
    assert "cut short: 20 message(s) not delivered, which the next stop() raises" in caplog.text
    with pytest.raises(ProduceFailureError) as info:
        producer.stop()
    assert sorted(m.value for m, _ in info.value.failed) == sorted(m.value for m in msgs)
    producer.stop()  # told once


@pytest.mark.mock
def test_a_stop_called_while_stop_delivers_returns_and_takes_nothing_from_it(mock_cluster, mock_topic, monkeypatch):
    """A stop() inside stop() (a SIGTERM handler's, as the first flushes) returns at once: it
    neither raises the failures kept meanwhile nor cuts the delivery short."""
    import pyrdk.producer
    deliver = pyrdk.producer._deliver_or_purge
    nested = []

    def stop_inside(*args):
        wait_until(lambda: producer._failures, "the failure kept")  # by the poller thread, as stop() began
        nested.append(producer.stop())
        return deliver(*args)
    producer = mock_topic.get_producer(max_retries=0, linger_ms=0,
                                       partitioner=lambda parts, key: parts[1] if key == b"bad" else parts[0])
    warm(producer)
    mock_cluster.set_broker_rtt(-1, 1000)  # in flight as stop() begins
    # The error is partition 1's alone: the good messages, on partition 0, cannot take it.
    mock_cluster.push_partition_request_errors(mock_topic.name.decode(), 1, ApiKey.Produce, MESSAGE_TOO_LARGE)
    good = [producer.produce(b"good-%d" % i) for i in range(3)]
    bad = producer.produce(b"bad", partition_key=b"bad")
    monkeypatch.setattr(pyrdk.producer, "_deliver_or_purge", stop_inside)
    with pytest.raises(ProduceFailureError) as info:
        producer.stop()
    assert nested == [None]
    assert [m for m, _ in info.value.failed] == [bad]
    assert all(m.offset >= 0 for m in good)


@pytest.mark.mock
def test_sync_produce_to_a_dead_broker_times_out(mock_cluster, mock_topic):
    from pyrdk.exceptions import KafkaTimeoutError
    producer = mock_topic.get_sync_producer(pending_timeout_ms=300)
    producer.produce(b"ok")
    mock_cluster.broker_down(-1)
    finished, _, exc = run_bounded(lambda: producer.produce(b"lost"))
    assert finished and isinstance(exc, KafkaTimeoutError)
    assert isinstance(exc, ProduceFailureError)  # what pykafka's sync produce() raised on its timeout
    finished, _, exc = run_bounded(producer.stop)
    assert finished
    # the message the timeout was about is still reported at stop(), not dropped
    assert isinstance(exc, ProduceFailureError) and [m.value for m, _ in exc.failed] == [b"lost"]


@pytest.mark.mock
def test_sync_produce_with_pending_timeout_ms_0_waits_once_for_the_report(mock_topic):
    """pending_timeout_ms=0 (stop() waits for nothing) still lets a sync produce() wait for
    its report once, up to a second, as pykafka's one get_delivery_report(timeout=1) did: a
    broker that answers at once is not a timeout (a wait of one 100 ms poll was, for the
    first message of a loaded machine)."""
    with mock_topic.get_sync_producer(pending_timeout_ms=0) as producer:
        msgs = [producer.produce(b"sync-%d" % i) for i in range(3)]
        assert all(m.offset >= 0 for m in msgs)
        assert len(producer) == 0


@pytest.mark.mock
def test_sync_produce_with_pending_timeout_ms_minus_1_waits_for_ever(mock_cluster, mock_topic):
    """-1 waits for the report however long it comes (1.5 s here), where the least wait of a
    sync produce() (a second, SYNC_WAIT_MS) was taken for its bound."""
    with mock_topic.get_sync_producer(pending_timeout_ms=-1) as producer:
        warm(producer)
        for broker in (1, 2, 3):
            mock_cluster.set_broker_rtt(broker, 1500)
        try:
            msg = producer.produce(b"slow")
        finally:
            for broker in (1, 2, 3):
                mock_cluster.set_broker_rtt(broker, 0)
        assert msg.offset >= 0


# -- threads ---------------------------------------------------------------------------------------

@pytest.mark.mock
def test_stop_while_other_threads_read_reports(mock_topic):
    # Other threads draining reports while stop() destroys the handle must neither crash
    # nor turn into spurious failures (the report buffer is freed under them).
    for _ in range(25):
        producer = mock_topic.get_producer(linger_ms=0, delivery_reports=True, pending_timeout_ms=0)
        done = threading.Event()
        errors = []

        def spin():
            while not done.is_set():
                try:
                    producer.get_delivery_report(block=False)
                except queue.Empty:
                    pass
                except BaseException as exc:  # handed to the test
                    errors.append(exc)
                    return
        threads = [threading.Thread(target=spin) for _ in range(3)]
        for th in threads:
            th.start()
        for i in range(20):
            producer.produce(b"x%d" % i)
        try:
            producer.stop()
        finally:
            done.set()
            for th in threads:
                th.join()
        assert errors == []


@pytest.mark.mock
def test_produce_from_many_threads(mock_cluster, mock_client, topic_name):
    mock_cluster.create_topic(topic_name, 4)
    topic = mock_client.topics[topic_name]
    with topic.get_producer(linger_ms=1, delivery_reports=True) as producer:
        results = {}

        def work(n):
            msgs = [producer.produce(b"t%d-%d" % (n, i)) for i in range(200)]
            producer.flush()
            results[n] = (msgs, [producer.get_delivery_report(timeout=READ_DEADLINE_S)
                                 for _ in range(200)])
        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    for msgs, reports in results.values():
        assert sorted(reports, key=lambda r: r[0].value) == sorted(((m, None) for m in msgs),
                                                                   key=lambda r: r[0].value)
    assert len(results) == 4


def test_producer_signature_matches_pykafka():
    import inspect
    params = inspect.signature(Producer).parameters
    expected = dict(cluster=inspect.Parameter.empty, topic=inspect.Parameter.empty, partitioner=None,
                    compression=CompressionType.NONE, max_retries=3, retry_backoff_ms=100,
                    required_acks=1, ack_timeout_ms=10000, max_queued_messages=100000,
                    min_queued_messages=70000, linger_ms=5000, queue_empty_timeout_ms=0,
                    block_on_queue_full=True, max_request_size=1000012, sync=False,
                    delivery_reports=False, pending_timeout_ms=5000, auto_start=True, serializer=None)
    assert list(params)[:len(expected)] == list(expected)
    assert {k: params[k].default for k in expected} == expected


@pytest.mark.mock
def test_auto_start_false(mock_topic):
    producer = mock_topic.get_producer(auto_start=False)
    with pytest.raises(ProducerStoppedException):
        producer.produce(b"not started")
    producer.start()
    producer.produce(b"started")
    producer.stop()


@pytest.mark.kafka
@tansu_gap("the topic's max.message.bytes is not enforced")
def test_broker_refuses_a_message_over_the_topics_max_message_bytes(client, topic_name):
    client.cluster.create_topics([(topic_name, 1, 1, {"max.message.bytes": "1000"})])
    topic = client.topics[topic_name]
    with topic.get_sync_producer(max_retries=0) as producer:
        assert producer.produce(b"small").offset >= 0
        with pytest.raises(MessageSizeTooLarge) as info:
            producer.produce(b"x" * 5000)  # under max_request_size, over the topic's limit
        assert info.value.code == MESSAGE_TOO_LARGE


@pytest.mark.kafka
def test_a_producer_never_stopped_still_delivers_at_exit(kafka_hosts, client, topic_name):
    """pykafka's defaults linger 5 s; a program that exits without stop() loses nothing."""
    import subprocess
    import sys
    import textwrap
    make_topic(client, topic_name, 4)
    program = textwrap.dedent("""
        from pyrdk import KafkaClient
        client = KafkaClient(hosts=%r)
        producer = client.topics[%r].get_producer()
        for i in range(200):
            producer.produce(b"left %%d" %% i)
    """) % (kafka_hosts, topic_name)
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    values = sorted(m.value() for m in read_back(kafka_hosts, topic_name, 200))
    assert values == sorted(b"left %d" % i for i in range(200))


@pytest.mark.mock
@pytest.mark.slow  # seconds of a process exiting: the C pass runs it, make soak the pure one
def test_exit_with_a_producer_that_waits_for_ever_and_no_broker_is_bounded():
    """pending_timeout_ms=-1 lets the program's own stop() wait for ever; the stop pyrdk
    makes at exit on the program's behalf must not hang the exit for message.timeout.ms
    (5 minutes) when no broker answers: it waits a bounded time and logs what is lost."""
    import subprocess
    import textwrap
    program = textwrap.dedent("""
        import logging
        from pyrdk import KafkaClient
        from pyrdk.rd.mock import MockCluster
        logging.basicConfig()
        cluster = MockCluster(1)
        cluster.create_topic("t", 1)
        producer = KafkaClient(hosts=cluster.bootstrap_servers).topics["t"].get_producer(
            linger_ms=1, pending_timeout_ms=-1)
        producer.produce(b"warm-up")
        assert producer.flush() == 0
        cluster.broker_down(1)
        for i in range(10):
            producer.produce(b"lost %d" % i)
    """)
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=HANG_BOUND_S)
    assert result.returncode == 0, result.stderr
    assert "10 message(s) could not be delivered" in result.stderr


def let_go(producer):
    """Drop the test's reference to a started ``producer``: returns a weak reference to it,
    its poller thread and its handle."""
    import weakref
    return weakref.ref(producer), producer._poller, producer._handle


@pytest.mark.kafka
@pytest.mark.parametrize("how", ["fast", "general"])
def test_a_dropped_producer_is_collected_and_delivers_what_it_left(topic, kafka_hosts, topic_name, how):
    """pykafka stops a Producer that is garbage collected; a service that makes one per call
    and never stops it must not keep a librdkafka handle, its threads and its poller per
    call, nor lose what lingered."""
    producer = topic.get_producer(linger_ms=5000, **({"serializer": lambda v, k: (v, k)} if how == "general" else {}))
    for i in range(100):
        producer.produce(b"left %d" % i)
    producer.produce_batch([b"batch %d" % i for i in range(50)])
    ref, poller, handle = let_go(producer)
    del producer
    wait_until(lambda: gc.collect() is not None and ref() is None, "the producer to be collected")
    poller.join(HANG_BOUND_S)
    assert not poller.is_alive() and handle.closed
    values = sorted(m.value() for m in read_back(kafka_hosts, topic_name, 150))
    assert values == sorted([b"left %d" % i for i in range(100)] + [b"batch %d" % i for i in range(50)])


@pytest.mark.mock
def test_a_dropped_producer_logs_what_it_could_not_deliver(mock_cluster, mock_topic, caplog):
    producer = mock_topic.get_producer(linger_ms=5000, pending_timeout_ms=100)
    warm(producer)
    mock_cluster.broker_down(-1)
    for i in range(10):
        producer.produce(b"lost %d" % i)
    ref, poller, handle = let_go(producer)
    del producer
    wait_until(lambda: gc.collect() is not None and ref() is None, "the producer to be collected")
    poller.join(HANG_BOUND_S)
    assert not poller.is_alive() and handle.closed
    lost = [r for r in caplog.records if r.name == "pyrdk.producer" and r.levelname == "ERROR"]
    assert len(lost) == 1 and "10 message(s) could not be delivered" in lost[0].getMessage()


class _Owner:
    """An object that holds its producer and gives it one of its own methods (the partitioner,
    or the stats_callback)."""

    def __init__(self, topic, what):
        given = {"partitioner": self.pick} if what == "partitioner" else \
            {"stats_callback": self.took, "statistics_interval_ms": 50}
        self.producer = topic.get_producer(linger_ms=5000, **given)

    def pick(self, partitions, key):
        return partitions[-1]

    def took(self, stats):
        pass


@pytest.mark.mock
@pytest.mark.parametrize("what", ["partitioner", "stats_callback"])
def test_a_dropped_producer_whose_callable_holds_it_is_collected(mock_topic, what):
    """A producer whose partitioner (stats_callback) is a bound method of the object that
    holds it: the core and the handle hold the callable through the producer, weakly, so the
    program letting the object go lets the producer go, and its poller stops it."""
    owner = _Owner(mock_topic, what)
    msg = owner.producer.produce(b"left", b"k")
    ref, poller, handle = let_go(owner.producer)
    del owner
    wait_until(lambda: gc.collect() is not None and ref() is None, "the producer to be collected")
    poller.join(HANG_BOUND_S)
    assert not poller.is_alive() and handle.closed
    assert msg.offset >= 0  # delivered by the poller as it stopped the producer


@pytest.mark.mock
def test_a_bound_method_of_a_temporary_object_stays_the_partitioner_and_stats_callback(mock_topic):
    """Held through the producer, a callable the producer alone holds lives as long as it."""
    class Picker:
        def pick(self, partitions, key):
            return partitions[-1]
    seen = []

    class Counter:
        def add(self, stats):
            seen.append(stats)
    producer = mock_topic.get_producer(partitioner=Picker().pick, stats_callback=Counter().add,
                                       statistics_interval_ms=50, linger_ms=5)
    try:
        gc.collect()
        msgs = [producer.produce(b"%d" % i, b"k") for i in range(10)]
        producer.flush()
        assert [m.partition_id for m in msgs] == [3] * 10 and all(m.offset >= 0 for m in msgs)
        wait_until(lambda: seen, "a statistics snapshot")
    finally:
        producer.stop()


# -- produce_batch ----------------------------------------------------------------------------------

@pytest.mark.kafka
def test_produce_batch_delivers_values_and_keys(topic, kafka_hosts, topic_name):
    values = [b"v-%04d" % i for i in range(500)]
    pairs = [(b"p-%04d" % i, b"k-%d" % i if i % 3 else None) for i in range(300)]
    with topic.get_producer(linger_ms=10) as producer:
        assert producer.produce_batch(values) == 500
        assert producer.produce_batch(iter(pairs)) == 300
        assert producer.produce_batch([]) == 0
        assert producer.flush() == 0 and len(producer) == 0
    back = read_back(kafka_hosts, topic_name, 800)
    assert sorted((m.value(), m.key()) for m in back) == \
        sorted([(v, None) for v in values] + pairs)
    assert len({m.partition() for m in back}) > 1  # spread like random_partitioner


@pytest.mark.kafka
def test_produce_batch_gives_each_partition_one_run_of_the_batch(topic, kafka_hosts, topic_name):
    values = [b"v-%04d" % i for i in range(400)]
    with topic.get_producer(linger_ms=10) as producer:
        producer.produce_batch(values)
        producer.produce_batch([b"next"])
    back = read_back(kafka_hosts, topic_name, 401)
    runs = {}
    for m in back:
        runs.setdefault(m.partition(), []).append(m.value())
    first = [p for p, run in runs.items() if run[0] == b"v-0000"][0]
    for i in range(4):  # 100 consecutive values each, from the batch's first partition on
        assert runs[(first + i) % 4][:100] == values[i * 100:(i + 1) * 100]
    assert runs[(first + 1) % 4][100:] == [b"next"]  # the next batch starts one further


@pytest.mark.kafka
def test_produce_batch_keeps_order_in_long_runs_and_near_the_size_limit(topic, kafka_hosts, topic_name):
    """Runs of 500 (handed to librdkafka in parts), with values so near max_request_size
    that they go one at a time, land in order, with their keys."""
    pairs = [(b"%04d" % i + (b"." * 950 if i % 97 == 0 else b""), b"k-%d" % i if i % 2 else None)
             for i in range(2000)]
    with topic.get_producer(linger_ms=10, max_request_size=1000) as producer:
        assert producer.produce_batch(pairs) == 2000
    back = read_back(kafka_hosts, topic_name, 2000)
    runs = {}
    for m in back:
        runs.setdefault(m.partition(), []).append((m.value(), m.key()))
    assert sorted(runs.values()) == [pairs[i * 500:(i + 1) * 500] for i in range(4)]


@pytest.mark.kafka
def test_produce_batch_goes_through_the_partitioner_and_serializer(topic, kafka_hosts, topic_name):
    from pyrdk.partitioners import hashing_partitioner
    producer = topic.get_producer(partitioner=hashing_partitioner, linger_ms=10,
                                  serializer=lambda v, k: (v.encode(), k and k.encode()))
    try:
        assert producer.produce_batch([("a", "key-1"), ("b", "key-2"), ("c", "key-1")]) == 3
        producer.flush()
    finally:
        producer.stop()
    back = read_back(kafka_hosts, topic_name, 3)
    by_key = {}
    for m in back:
        by_key.setdefault(m.key(), set()).add(m.partition())
    assert sorted(m.value() for m in back) == [b"a", b"b", b"c"]
    assert len(by_key[b"key-1"]) == 1  # one key, one partition


@pytest.mark.mock
def test_produce_batch_refuses_bad_messages(mock_topic):
    with mock_topic.get_producer(max_request_size=1000) as producer:
        with pytest.raises(TypeError) as info:
            producer.produce_batch([b"ok", "text"])
        assert "bytes" in str(info.value) and info.value.produced == 1
        with pytest.raises(TypeError) as info:
            producer.produce_batch([(b"a", b"k", b"extra")])
        assert "pairs" in str(info.value)
        with pytest.raises(TypeError):  # 2 items of 4 bytes: never taken as 2 bytes
            producer.produce_batch([memoryview(array.array("i", [1, 2]))])
        with pytest.raises(MessageSizeTooLarge) as info:
            producer.produce_batch([b"small", b"x" * 2000, b"never"])
        assert info.value.produced == 1 and "max_request_size=1000" in str(info.value)
        with pytest.raises(TypeError, match="takes a list of values .* not int"):
            producer.produce_batch(42)

        def failing():
            yield b"first"
            raise TypeError("the program's own error")
        with pytest.raises(TypeError, match="the program's own error"):  # as it is; nothing queued
            producer.produce_batch(failing())
    with pytest.raises(ProducerStoppedException):
        producer.produce_batch([b"late"])


@pytest.mark.mock
def test_produce_batch_stops_at_a_message_librdkafka_finds_too_large(mock_topic):
    """Under max_request_size, but over it with librdkafka's per-record overhead: refused,
    and nothing after it is sent."""
    with mock_topic.get_producer(max_request_size=1000) as producer:
        with pytest.raises(MessageSizeTooLarge) as info:
            producer.produce_batch([b"a", b"b", b"c", b"d", b"x" * 990] + [b"after"] * 7)  # runs of 3
        assert info.value.produced == 4 and "record overhead" in str(info.value)
    assert sum(r.offset[0] for r in mock_topic.latest_available_offsets().values()) == 4


@pytest.mark.mock
@pytest.mark.parametrize("surfaces_on", ["flush", "stop"])
def test_produce_batch_failure_is_raised_with_the_value(mock_cluster, mock_topic, surfaces_on):
    producer = mock_topic.get_producer(max_retries=0, linger_ms=0)
    try:
        warm(producer)
        mock_cluster.push_request_errors(ApiKey.Produce, MESSAGE_TOO_LARGE)
        producer.produce_batch([(b"bad", b"key")])
        with pytest.raises(ProduceFailureError) as info:
            producer.flush() if surfaces_on == "flush" else producer.stop()
        [(msg, exc)] = info.value.failed
        assert (msg.value, msg.partition_key) == (b"bad", b"key") and isinstance(exc, MessageSizeTooLarge)
        assert msg.partition_id in mock_topic.partitions
    finally:
        producer.stop()


@pytest.mark.mock
def test_produce_arrow_failure_is_raised_with_the_row(mock_cluster, mock_topic):
    """A row of produce_arrow() the broker refuses: ProduceFailureError at flush(), with a
    Message of its value, key and partition, as produce_batch()'s."""
    import pyarrow as pa
    with mock_topic.get_producer(max_retries=0, linger_ms=0) as producer:
        warm(producer)
        mock_cluster.push_request_errors(ApiKey.Produce, MESSAGE_TOO_LARGE)
        assert producer.produce_arrow(pa.record_batch({"value": [b"bad"], "key": [b"key"],
                                                       "partition": pa.array([1], pa.int32())})) == 1
        with pytest.raises(ProduceFailureError) as info:
            producer.flush()
        [(msg, exc)] = info.value.failed
        assert (msg.value, msg.partition_key, msg.partition_id) == (b"bad", b"key", 1)
        assert isinstance(exc, MessageSizeTooLarge)


@pytest.mark.mock
@pytest.mark.parametrize("call, how", [("produce_batch", "core"), ("produce_arrow", "core"), ("produce_batch", "each"),
                                       ("produce_arrow", "each"), ("produce_arrow", "chunks")])
def test_a_call_whose_own_messages_fail_meanwhile_returns_and_the_next_raises_them(mock_cluster, mock_topic, call,
                                                                                    how):
    """Deliveries of a call's own messages that fail while the call runs (here while it waits
    for room in a full queue) are raised by the next call, not by it: it raises only what
    failed before it began ("which are not among them", its error says), and a program that
    re-sends what its call did not queue plus ``failed`` sends each message once. So too
    when the call sends its messages one at a time (``each``: a partitioner of the
    program's) or a Table's record batches one after the other (``chunks``), where each
    message or record batch raised the failures of the ones before it."""
    import pyarrow as pa
    values = [b"m-%d" % i for i in range(50)]
    kwargs = {"partitioner": lambda partitions, key: partitions[0]} if how == "each" else {}
    with mock_topic.get_producer(max_retries=0, linger_ms=0, max_queued_messages=5, **kwargs) as producer:
        warm(producer)
        mock_cluster.push_request_errors(ApiKey.Produce, MESSAGE_TOO_LARGE, MESSAGE_TOO_LARGE, MESSAGE_TOO_LARGE)
        if call == "produce_batch":
            given = values
        elif how == "chunks":
            given = pa.Table.from_batches([pa.record_batch({"value": values[i:i + 5]}) for i in range(0, 50, 5)])
        else:
            given = pa.record_batch({"value": values})
        assert getattr(producer, call)(given) == 50
        with pytest.raises(ProduceFailureError) as info:
            producer.flush()
        failed = [msg.value for msg, _ in info.value.failed]
        assert failed and len(set(failed)) == len(failed) and set(failed) <= set(values)
        producer.flush()
    assert sum(r.offset[0] for r in mock_topic.latest_available_offsets().values()) == 1 + 50 - len(failed)


@pytest.mark.mock
@pytest.mark.parametrize("headers", [None, [("h", b"1")]], ids=["fast-path", "general-path"])
def test_produce_with_a_full_queue_and_no_broker_raises(mock_cluster, topic_name, headers):
    """block_on_queue_full waits for room, but not on lost brokers: once none has been
    reachable for socket_timeout_ms, produce() raises NoBrokersAvailableError (as it does
    with room in the queue) rather than wait until message.timeout.ms frees the queue."""
    mock_cluster.create_topic(topic_name, 2)
    client = KafkaClient(hosts=mock_cluster.bootstrap_servers, socket_timeout_ms=1000)
    producer = client.topics[topic_name].get_producer(max_queued_messages=5, linger_ms=0, pending_timeout_ms=0)
    try:
        warm(producer)
        mock_cluster.broker_down(-1)
        finished, _, exc = run_bounded(lambda: [producer.produce(b"x", headers=headers) for _ in range(50)])
        assert finished, "produce() waited for room for ever"
        assert isinstance(exc, NoBrokersAvailableError)
        with pytest.raises(ProduceFailureError):  # what was queued is reported, not dropped
            producer.stop()
    finally:
        producer.stop()
        client.close()


@pytest.mark.mock
@pytest.mark.parametrize("call,size", [("produce_batch", 10), ("produce_arrow", 10), ("produce_arrow", 960)],
                         ids=["batch", "rows", "rows-sent-alone"])
def test_many_messages_with_a_full_queue_and_no_broker_raise(mock_cluster, topic_name, call, size):
    """librdkafka's queue full and no broker reachable: produce_batch() and produce_arrow()
    raise NoBrokersAvailableError once socket_timeout_ms has passed, a row near
    max_request_size (handed over alone) as the others, rather than waiting for room that
    never comes; ``produced`` counts the messages queued before it."""
    import pyarrow as pa
    mock_cluster.create_topic(topic_name, 2)
    client = KafkaClient(hosts=mock_cluster.bootstrap_servers, socket_timeout_ms=1000)
    producer = client.topics[topic_name].get_producer(max_queued_messages=5, linger_ms=0, max_request_size=1000,
                                                      pending_timeout_ms=0)
    values = [b"x" * size] * 50
    try:
        warm(producer)
        mock_cluster.broker_down(-1)
        finished, _, exc = run_bounded(lambda: producer.produce_batch(values) if call == "produce_batch"
                                       else producer.produce_arrow(pa.record_batch({"value": values})))
        assert finished, "%s() waited for room for ever" % call
        assert isinstance(exc, NoBrokersAvailableError) and exc.produced == 5
        with pytest.raises(ProduceFailureError) as info:  # what was queued is reported, not dropped
            producer.stop()
        assert len(info.value.failed) == 5
    finally:
        producer.stop()
        client.close()


@pytest.mark.mock
def test_produce_batch_with_a_full_queue(mock_cluster, mock_topic):
    with mock_topic.get_producer(max_queued_messages=5, block_on_queue_full=False, linger_ms=0) as producer:
        warm(producer)
        mock_cluster.broker_down(-1)
        with pytest.raises(ProducerQueueFullError) as info:
            producer.produce_batch([b"q-%d" % i for i in range(50)])
        assert info.value.produced == 5 and len(producer) == 5
        # what to do about it, named in the producer's arguments
        assert "max_queued_messages=5" in str(info.value) and "block_on_queue_full=True" in str(info.value)
        assert info.value.code == -184 and info.value.retriable
        mock_cluster.broker_up(-1)
        assert producer.flush(READ_DEADLINE_S) == 0 and len(producer) == 0


@pytest.mark.mock
@pytest.mark.parametrize("batch", [False, True])
def test_stop_while_another_thread_produces(mock_topic, batch):
    producer = mock_topic.get_producer(linger_ms=0)
    outcome = {"count": 0}

    def produce_until_stopped():
        try:
            while True:
                outcome["count"] += producer.produce_batch([b"x"] * 100) if batch else bool(producer.produce(b"x"))
        except ProducerStoppedException as exc:
            outcome["exc"] = exc
    th = threading.Thread(target=produce_until_stopped, daemon=True)
    th.start()
    wait_until(lambda: outcome["count"] > 1000, "messages produced")
    finished, _, exc = run_bounded(producer.stop)
    th.join(HANG_BOUND_S)
    assert finished and exc is None and not th.is_alive()
    assert isinstance(outcome["exc"], ProducerStoppedException)


@pytest.mark.mock
@pytest.mark.parametrize("callback", ["serializer", "partitioner"])
def test_stop_from_produces_own_serializer_or_partitioner_does_not_wait_for_itself(mock_topic, callback):
    """stop() waits for the produce() calls of other threads; one called by a produce()'s own
    serializer or partitioner cannot wait for that call, which is waiting for it."""
    box = {}

    def stop_then(result):
        box["producer"].stop()
        return result
    kwargs = {"serializer": lambda value, key: stop_then((value, key))} if callback == "serializer" \
        else {"partitioner": lambda partitions, key: stop_then(partitions[0]), "delivery_reports": True}
    producer = box["producer"] = mock_topic.get_producer(pending_timeout_ms=-1, **kwargs)
    finished, _, exc = run_bounded(lambda: producer.produce(b"x"))
    assert finished and isinstance(exc, ProducerStoppedException)
    with pytest.raises(ProducerStoppedException):
        producer.produce(b"y")


@pytest.mark.mock
@pytest.mark.parametrize("call", ["produce_batch", "produce_arrow"])
def test_stop_waits_for_a_produce_batch_or_arrow_under_way_in_another_thread(mock_topic, call):
    """stop() flushes what the produce_batch() and produce_arrow() calls under way in other
    threads queue, as for produce(): it waits for them. (It went on: what such a call handed
    to librdkafka after stop()'s flush was destroyed with the handle, neither delivered nor
    reported, though the call returned it as queued.)"""
    import pyarrow as pa
    producer = mock_topic.get_producer(linger_ms=0, pending_timeout_ms=-1)
    warm(producer)
    in_call, go = threading.Event(), threading.Event()
    hand_off = producer._hand_off

    def paused_hand_off(*args, **kwargs):  # the call's first step, before the core queues anything
        if kwargs.get("producing") and threading.current_thread().name == "batch":
            in_call.set()
            go.wait(HANG_BOUND_S)
        return hand_off(*args, **kwargs)
    producer._hand_off = paused_hand_off
    values = [b"%d" % i for i in range(100)]
    outcome = {}

    def produce():
        try:
            outcome["queued"] = producer.produce_batch(values) if call == "produce_batch" else \
                producer.produce_arrow(pa.record_batch({"value": pa.array(values, pa.binary())}))
        except BaseException as exc:
            outcome["exc"] = exc
    worker = threading.Thread(target=produce, name="batch", daemon=True)
    worker.start()
    assert in_call.wait(HANG_BOUND_S)
    stopper = threading.Thread(target=producer.stop, daemon=True)
    stopper.start()
    stopper.join(0.5)
    stopping_waited = stopper.is_alive()
    go.set()
    worker.join(HANG_BOUND_S)
    stopper.join(HANG_BOUND_S)
    assert not worker.is_alive() and not stopper.is_alive()
    assert stopping_waited, "stop() did not wait for the call under way"
    assert outcome == {"queued": 100}
    assert sum(p.latest_available_offset() for p in mock_topic.partitions.values()) == 101  # and warm()'s


@pytest.mark.mock
def test_a_produce_batch_as_stop_begins_does_not_reopen_the_fast_path(mock_topic):
    """While stop() runs, a produce_batch() of another thread (it looks at the producer's
    state before its running check) must not let produce() queue in the stopped core again:
    such a message was refused at stop() as never delivered, or handed over after stop()'s
    flush, though produce() had returned it."""
    producer = mock_topic.get_producer(linger_ms=0)
    warm(producer)
    stopping, go = threading.Event(), threading.Event()
    wait_entered = producer._wait_entered

    def paused_wait_entered(timeout_ms):  # stop()'s step after it closed the core
        stopping.set()
        go.wait(HANG_BOUND_S)
        return wait_entered(timeout_ms)
    producer._wait_entered = paused_wait_entered
    stopper, outcome = threading.Thread(target=lambda: outcome.append(run_bounded(producer.stop)), daemon=True), []

    def values():  # read by produce_batch() after its running check
        stopper.start()
        assert stopping.wait(HANG_BOUND_S)
        yield b"batch"
    try:
        with pytest.raises(ProducerStoppedException):
            producer.produce_batch(values())
        with pytest.raises(ProducerStoppedException):
            producer.produce(b"late")
    finally:
        go.set()
        stopper.join(HANG_BOUND_S)
    assert outcome == [(True, None, None)]  # nothing failed


# -- produce()'s buffered way --------------------------------------------------------------------

@pytest.mark.kafka
def test_buffered_produce_keeps_each_partitions_order(topic, kafka_hosts, topic_name):
    """produce()'s messages wait in their partition's queue before librdkafka. One that goes
    alone (near max_request_size, or with a timestamp) and produce_batch() hand the queues
    over first, and stop() hands over the rest: each partition's messages land in the order
    they were produced, and none is left behind."""
    sent = []
    with topic.get_producer(max_request_size=1000) as producer:
        for i in range(3000):
            value = b"%05d" % i
            if i % 101 == 0:
                sent.append(producer.produce(value + b"." * 950))
            elif i % 37 == 0:
                sent.append(producer.produce(value, timestamp=1700000000000))
            elif i % 499 == 0:
                producer.produce_batch([value])
            else:
                sent.append(producer.produce(value))
    # each landed in the partition its Message names
    assert all(m.offset >= 0 and m.partition_id == m.partition.id for m in sent)
    back = read_back(kafka_hosts, topic_name, 3000)
    by_partition = {}
    for m in back:
        by_partition.setdefault(m.partition(), []).append(int(m.value()[:5]))
    assert sorted(i for seq in by_partition.values() for i in seq) == list(range(3000))
    assert all(seq == sorted(seq) for seq in by_partition.values())


@pytest.mark.kafka
def test_produce_is_the_class_method_on_every_path(topic):
    """produce() is Producer.produce, started or not, whichever path a message takes: the
    fast one is the core's, called from it, never a callable put on the instance."""
    producer = topic.get_producer(auto_start=False)
    try:
        for _ in range(2):
            producer.start()
            assert "produce" not in vars(producer)
            assert producer.produce.__func__ is Producer.produce
            params = inspect.signature(producer.produce).parameters.values()  # pykafka's, annotated
            assert [(p.name, p.default) for p in params] == [
                ("message", inspect.Parameter.empty), ("partition_key", None), ("timestamp", None), ("headers", None)]
            producer.produce(b"fast")
            producer.produce(b"general", timestamp=1700000000000)
            producer.stop()
            assert "produce" not in vars(producer)
    finally:
        producer.stop()


@pytest.mark.kafka
def test_buffered_messages_go_out_without_flush(topic):
    """Fewer messages than fill a partition's queue are handed over by the poller thread,
    within linger_ms: they are delivered with no flush()."""
    with topic.get_producer(linger_ms=20) as producer:
        msgs = [producer.produce(b"tick-%d" % i) for i in range(3)]
        wait_until(lambda: all(m.offset >= 0 for m in msgs), "delivery without flush()")


@pytest.mark.mock
def test_buffered_message_refused_at_hand_off_is_reported(mock_cluster, mock_topic, topic_name):
    """A buffered message librdkafka refuses when it is handed over (here: the topic is in
    error) is a failed delivery, raised as ProduceFailureError with its Message."""
    with mock_topic.get_producer() as producer:
        warm(producer)
        mock_cluster.set_topic_error(topic_name, TOPIC_AUTHORIZATION_FAILED)

        def refused_at_once():  # a message that goes alone: librdkafka knows the error
            producer._handle.metadata(topic_name)
            try:
                producer.produce(b"probe", timestamp=1700000000000)
            except KafkaException:
                return True
            producer.flush()  # a delivered probe, or a ProduceFailureError
        wait_until(refused_at_once, "librdkafka to see the topic's error")
        msgs = [producer.produce(b"f-%d" % i) for i in range(3)]
        with pytest.raises(ProduceFailureError) as info:
            producer.flush()
        assert sorted((m for m, _ in info.value.failed), key=lambda m: m.value) == msgs
        assert {type(exc).__name__ for _, exc in info.value.failed} == {"TopicAuthorizationFailed"}
        assert len(producer) == 0 and all(m.offset == -1 for m in msgs)
        mock_cluster.set_topic_error(topic_name, 0)


@pytest.mark.mock
def test_stop_while_another_thread_produces_buffered_messages(mock_topic):
    """stop() hands over what is buffered: every message produce() returned is delivered,
    and the producing thread then gets ProducerStoppedException."""
    producer = mock_topic.get_producer()
    produced, outcome = [], {}

    def produce_until_stopped():
        try:
            while True:
                produced.append(producer.produce(b"x"))
        except ProducerStoppedException as exc:
            outcome["exc"] = exc
    th = threading.Thread(target=produce_until_stopped, daemon=True)
    th.start()
    wait_until(lambda: len(produced) > 1000, "messages produced")
    finished, _, exc = run_bounded(producer.stop)
    th.join(HANG_BOUND_S)
    assert finished and exc is None and not th.is_alive()
    assert isinstance(outcome["exc"], ProducerStoppedException)
    assert all(m.offset >= 0 for m in produced)


@pytest.mark.kafka
def test_buffered_produce_from_many_threads_through_a_full_queue(topic, kafka_hosts, topic_name):
    """Four threads share the queues while librdkafka's own is often full (1,000 messages):
    every message lands once, and each thread's messages keep their order in each partition."""
    with topic.get_producer(max_queued_messages=1000) as producer:
        def work(n):
            for i in range(5000):
                producer.produce(b"%d-%05d" % (n, i))
        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(HANG_BOUND_S)
        assert not any(th.is_alive() for th in threads)
    back = read_back(kafka_hosts, topic_name, 20000)
    seen = {}
    for m in back:
        n, i = m.value().split(b"-")
        seen.setdefault((m.partition(), n), []).append(int(i))
    assert sorted(i for seq in seen.values() for i in seq) == sorted(list(range(5000)) * 4)
    assert all(seq == sorted(seq) for seq in seen.values())


@pytest.mark.mock
def test_buffered_message_failure_is_raised_with_its_message(mock_cluster, mock_topic):
    """Messages that waited in their partition's queue and then failed are raised as
    ProduceFailureError with the Messages produce() returned."""
    producer = mock_topic.get_producer(max_retries=0)
    try:
        warm(producer)
        mock_cluster.push_request_errors(ApiKey.Produce, *[MESSAGE_TOO_LARGE] * 20)  # every request
        sent = [producer.produce(b"gone-%d" % i, partition_key=b"key-%d" % i) for i in range(10)]
        assert len(producer) == 10
        with pytest.raises(ProduceFailureError) as info:
            producer.flush()
        failed = sorted(info.value.failed, key=lambda f: f[0].value)
        assert [m for m, _ in failed] == sent
        assert all(isinstance(exc, MessageSizeTooLarge) for _, exc in failed)
        assert all(m.partition is mock_topic.partitions[m.partition_id] for m, _ in failed)
        assert len(producer) == 0
    finally:
        producer.stop()


@pytest.mark.mock
@pytest.mark.parametrize("fault", ["down", "slow"])
def test_stop_with_a_dead_broker_reports_queued_messages(mock_cluster, mock_topic, fault):
    """With librdkafka's queue full (five messages, queued or in flight), the others wait in
    their partition's queue: stop() reports each one, with the rest."""
    producer = mock_topic.get_producer(max_queued_messages=5, pending_timeout_ms=300)
    warm(producer)
    if fault == "down":
        mock_cluster.broker_down(-1)
    else:
        mock_cluster.set_broker_rtt(-1, 600000)
    values = [b"lost-%d" % i for i in range(20)]
    for value in values:
        producer.produce(value)
    wait_until(lambda: producer._core.queued == 15, "the poller to fill librdkafka's queue")
    assert len(producer) == 20
    finished, _, exc = run_bounded(producer.stop)
    assert finished, "stop() did not return"
    assert isinstance(exc, ProduceFailureError)
    assert sorted(m.value for m, _ in exc.failed) == sorted(values)
    assert all(isinstance(e, KafkaException) for _, e in exc.failed)
    mock_cluster.set_broker_rtt(-1, 0)


# -- pykafka's private names -----------------------------------------------------------------------

@pytest.mark.kafka
def test_wait_all_delivers_what_lingers_without_stopping(topic, kafka_hosts, topic_name):
    with topic.get_producer(linger_ms=60000) as producer:  # a minute of linger
        sent = [producer.produce(b"w%d" % i) for i in range(50)]
        producer._wait_all()
        assert len(producer) == 0 and all(m.offset >= 0 for m in sent)
        back = read_back(kafka_hosts, topic_name, 50)
        assert sorted(m.value() for m in back) == sorted(m.value for m in sent)
    producer._wait_all()  # stopped: nothing is pending


@pytest.mark.mock
def test_wait_all_raises_failed_deliveries(mock_cluster, mock_topic):
    producer = mock_topic.get_producer(max_retries=0, linger_ms=60000)
    try:
        warm(producer)
        mock_cluster.push_request_errors(ApiKey.Produce, *[MESSAGE_TOO_LARGE] * 20)  # every request
        sent = [producer.produce(b"gone-%d" % i) for i in range(5)]
        with pytest.raises(ProduceFailureError) as info:
            producer._wait_all()
        assert sorted(m.value for m, _ in info.value.failed) == sorted(m.value for m in sent)
    finally:
        producer.stop()


@pytest.mark.kafka
def test_owned_brokers_for_programs_that_read_them(topic):
    from pyrdk.producer import OwnedBroker
    with topic.get_producer(linger_ms=60000) as producer:
        owned = producer._owned_brokers
        leaders = {p.leader.id for p in topic.partitions.values()}
        assert set(owned) == leaders and all(isinstance(o, OwnedBroker) for o in owned.values())
        broker = next(iter(owned.values()))
        assert broker.running and not broker.message_is_pending()
        producer.produce(b"lingering")
        assert broker.message_is_pending() and broker.messages_pending == 1
        producer._wait_all()
        assert not broker.message_is_pending()
    assert not broker.running


def grow_mock_topic(mock_cluster, topic, partitions):
    """The mock cluster cannot add partitions: the topic is made anew with more."""
    name = topic.name.decode()
    mock_cluster.delete_topic(name)
    mock_cluster.create_topic(name, partitions)


def end_offsets(mock_cluster, topic):
    """``{partition id: end offset}`` of ``topic``, read by a new client."""
    with KafkaClient(hosts=mock_cluster.bootstrap_servers) as client:
        return {pid: r.offset[0] for pid, r in client.topics[topic.name].latest_available_offsets().items()}


# A producer of the mock cluster must not create the topic on its own between its deletion
# and its new creation.
NO_AUTO_CREATE = {"allow.auto.create.topics": False}


@pytest.mark.mock
@pytest.mark.parametrize("partitioner", [None, lambda partitions, key: partitions[-1]], ids=["default", "last"])
def test_partitions_added_to_a_running_producers_topic_are_produced_to(mock_cluster, mock_client, topic_name,
                                                                       partitioner):
    mock_cluster.create_topic(topic_name, 2)
    topic = mock_client.topics[topic_name]
    config = dict(NO_AUTO_CREATE, **{"topic.metadata.refresh.interval.ms": 200})
    with topic.get_producer(partitioner=partitioner, linger_ms=10, rdkafka_config=config) as producer:
        warm(producer)
        grow_mock_topic(mock_cluster, topic, 4)
        wait_until(lambda: len(topic.partitions) == 4, "the producer to see the new partitions")
        for i in range(40):
            producer.produce(b"m%d" % i)
    ends = end_offsets(mock_cluster, topic)
    assert ends[3] > 0 and (partitioner is not None or ends[2] > 0), ends


@pytest.mark.mock
def test_properties_given_as_bytes_are_read_as_librdkafka_reads_them(mock_cluster, mock_client, topic_name):
    """rdkafka_config takes bytes values as librdkafka's strings: linger.ms as bytes must not
    fail start() with float()'s ValueError, nor topic.metadata.refresh.interval.ms as bytes
    be dropped for the 5-minute default."""
    mock_cluster.create_topic(topic_name, 2)
    topic = mock_client.topics[topic_name]
    config = dict(NO_AUTO_CREATE, **{"linger.ms": b"10", "topic.metadata.refresh.interval.ms": b"200"})
    with topic.get_producer(rdkafka_config=config) as producer:
        warm(producer)
        grow_mock_topic(mock_cluster, topic, 4)
        wait_until(lambda: len(topic.partitions) == 4, "the producer to see the new partitions")


@pytest.mark.mock
@pytest.mark.parametrize("sync", [False, True], ids=["core", "general"])
def test_produce_arrow_to_a_partition_added_since_the_last_refresh(mock_cluster, mock_client, topic_name, sync):
    import pyarrow as pa
    mock_cluster.create_topic(topic_name, 2)
    topic = mock_client.topics[topic_name]
    with topic.get_producer(sync=sync, linger_ms=10, rdkafka_config=NO_AUTO_CREATE) as producer:
        warm(producer)
        grow_mock_topic(mock_cluster, topic, 4)
        batch = pa.record_batch({"value": [b"a", b"b"], "partition": pa.array([1, 3], pa.int32())})
        assert producer.produce_arrow(batch) == 2
    ends = end_offsets(mock_cluster, topic)
    assert ends[1] == 1 and ends[3] == 1, ends
@pytest.mark.mock
def test_stop_does_not_wait_for_ever_on_a_general_produce_behind_queued_messages(mock_topic):
    """A general-path produce() (here: a timestamp) that passed its running check as stop()
    closes the core, with fast-path messages still in the core's queues: it must not wait for
    those queues to empty, which only stop() does once that produce() is over."""
    def partitioner(partitions, key):
        if key == b"slow":
            time.sleep(0.5)  # stop() begins meanwhile
        return partitions[0]
    producer = mock_topic.get_producer(partitioner=partitioner, pending_timeout_ms=-1)  # the core holds messages
    warm(producer)
    box = {}

    def general():
        try:
            box["msg"] = producer.produce(b"general", partition_key=b"slow", timestamp=int(time.time() * 1000))
        except BaseException as exc:  # handed to the test
            box["exc"] = exc
    th = threading.Thread(target=general)
    th.start()
    wait_until(lambda: producer._entering, "the general produce() under way")
    fast = [producer.produce(b"fast-%d" % i) for i in range(3)]
    assert producer._core.queued == 3
    finished, _, exc = run_bounded(producer.stop)
    assert finished, "stop() and the general produce() wait for each other"
    th.join(HANG_BOUND_S)
    assert exc is None
    assert all(m.offset >= 0 for m in fast)
    assert isinstance(box.get("exc"), ProducerStoppedException) or box["msg"].offset >= 0, box


@pytest.mark.mock
def test_stop_reports_what_a_full_queue_kept_in_the_core_as_never_sent(mock_cluster, mock_topic):
    """Messages the core still holds at stop() because librdkafka's queue was full were never
    sent: their reports say purged from the queue, not "may have been delivered"."""
    from pyrdk.rd.errors import PURGE_QUEUE
    producer = mock_topic.get_producer(max_queued_messages=5, pending_timeout_ms=300)
    warm(producer)
    mock_cluster.broker_down(-1)
    msgs = [producer.produce(b"q-%d" % i) for i in range(40)]
    wait_until(lambda: producer._core.queued == 35, "the poller's hand-off of 5")
    finished, _, exc = run_bounded(producer.stop)
    assert finished and isinstance(exc, ProduceFailureError)
    assert sorted(m.value for m, _ in exc.failed) == sorted(m.value for m in msgs)
    assert [e.code for _, e in exc.failed] == [PURGE_QUEUE] * 40, [str(e) for _, e in exc.failed][-1]


