"""Interoperability with confluent-kafka (the reference librdkafka client) through a real
broker (Tansu): what pyrdk writes, confluent-kafka reads, and the other way round —
keys, values, headers and timestamps, under every compression codec."""
import time

import pytest

from pyrdk import CompressionType
from tests.fix_kafka import make_topic
from tests.test_producer import READ_DEADLINE_S, read_back

pytestmark = pytest.mark.kafka

CODECS = list(CompressionType)
BASE_TS = 1700000000000


def records(tag):
    """``(key, value, headers, timestamp)`` covering the awkward cases."""
    out = [
        (b"k-plain", b"plain value " + tag, [("h", b"v")], BASE_TS + 1),
        (None, b"no key " + tag, [], BASE_TS + 2),
        (b"k-empty", b"", [("empty", b"")], BASE_TS + 3),
        (b"k-tombstone", None, [], BASE_TS + 4),
        (b"k-binary", bytes(range(256)) * 4, [("bin", bytes(range(256))), ("bin", b"\x00")], BASE_TS + 5),
        (b"k-big", b"z" * 200000, [], BASE_TS + 6),
        ("ünï-key".encode(), "ünïcødé välüe".encode(), [("ünï", "hé".encode())], BASE_TS + 7),
    ]
    out += [(b"k-%d" % i, b"bulk %d " % i + tag, [("seq", b"%d" % i)], BASE_TS + 100 + i)
            for i in range(50)]
    return out


@pytest.mark.parametrize("compression", CODECS, ids=lambda c: c.name)
def test_pyrdk_produces_confluent_consumes(client, kafka_hosts, topic_name, compression):
    topic = make_topic(client, topic_name, 3)
    sent = records(b"pyrdk")
    with topic.get_producer(compression=compression, linger_ms=10) as producer:
        msgs = [producer.produce(value, partition_key=key, headers=headers, timestamp=ts)
                for key, value, headers, ts in sent]
    assert all(m.offset >= 0 for m in msgs)
    back = read_back(kafka_hosts, topic_name, len(sent), num_partitions=3)
    assert len(back) == len(sent)
    by_position = {(m.partition(), m.offset()): m for m in back}
    for (key, value, headers, ts), msg in zip(sent, msgs):
        got = by_position[(msg.partition_id, msg.offset)]
        assert got.key() == key
        assert got.value() == value
        assert (got.headers() or []) == headers
        assert got.timestamp() == (1, ts)  # (TIMESTAMP_CREATE_TIME, ms)


@pytest.mark.parametrize("compression", CODECS, ids=lambda c: c.name)
def test_confluent_produces_pyrdk_consumes(client, kafka_hosts, topic_name, compression):
    import confluent_kafka as ck
    topic = make_topic(client, topic_name, 3)
    sent = records(b"confluent")
    delivered = {}

    def on_delivery(index):
        def report(err, msg):
            assert err is None, err
            delivered[(msg.partition(), msg.offset())] = index
        return report

    producer = ck.Producer({"bootstrap.servers": kafka_hosts, "linger.ms": 10,
                            "compression.type": compression.codec})
    for i, (key, value, headers, ts) in enumerate(sent):
        # keyless messages are spread by hand so every partition is read
        producer.produce(topic_name, value=value, key=key, headers=headers or None, timestamp=ts,
                         partition=i % 3, on_delivery=on_delivery(i))
    assert producer.flush(READ_DEADLINE_S) == 0
    assert len(delivered) == len(sent)
    expected = {position: sent[index] for position, index in delivered.items()}

    consumer = topic.get_simple_consumer(consumer_timeout_ms=500)
    got = {}
    deadline = time.monotonic() + READ_DEADLINE_S
    try:
        while len(got) < len(sent) and time.monotonic() < deadline:
            for m in consumer:
                got[(m.partition_id, m.offset)] = (m.partition_key, m.value, m.headers, m.timestamp)
                assert m.timestamp_type == 1  # CreateTime
                assert m.topic == topic_name
    finally:
        consumer.stop()
    assert got == expected
