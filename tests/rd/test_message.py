"""rd.message: ``rd_kafka_message_t`` → ``Message``, and ``rd_kafka_headers_t`` both ways."""
import uuid

import pytest

from pyrdk._ffi import ffi, lib
from pyrdk.common import Message, TimestampType
from pyrdk.exceptions import UnknownTopicOrPartition
from pyrdk.rd import errors, message
from tests.rd import util


def _headers_back(hdrs):
    """Read a C header list back (``rd_kafka_header_get_all``), then free it."""
    name, value, size = ffi.new("const char **"), ffi.new("const void **"), ffi.new("size_t *")
    out = []
    try:
        for idx in range(lib.rd_kafka_header_cnt(hdrs)):
            assert lib.rd_kafka_header_get_all(hdrs, idx, name, value, size) == 0
            out.append((ffi.string(name[0]).decode(),
                        None if value[0] == ffi.NULL else ffi.unpack(ffi.cast("char *", value[0]), size[0])))
    finally:
        lib.rd_kafka_headers_destroy(hdrs)
    return out


@pytest.mark.parametrize("headers", [None, [], {}])
def test_no_headers_is_null(headers):
    assert message.headers_to_c(headers) == ffi.NULL


def test_headers_to_c_pairs():
    hdrs = message.headers_to_c([("a", b"1"), (b"b", "2"), ("a", b"3"), ("nul", None), ("e", b"")])
    assert _headers_back(hdrs) == [("a", b"1"), ("b", b"2"), ("a", b"3"), ("nul", None), ("e", b"")]


def test_headers_to_c_dict():
    assert _headers_back(message.headers_to_c({"x": b"1", "y": b"2"})) == [("x", b"1"), ("y", b"2")]


@pytest.mark.parametrize("headers", [[("a", 1)], [(1, b"x")], [("a", b"ok"), ("b", 2.5)]])
def test_bad_header_types_are_type_errors(headers):
    with pytest.raises(TypeError):
        message.headers_to_c(headers)


def test_error_of_names_topic_and_partition():
    m = ffi.new("rd_kafka_message_t *")
    m.err = errors.UNKNOWN_PARTITION
    m.partition = 3
    exc = message.error_of(m, "events")
    assert isinstance(exc, UnknownTopicOrPartition)
    assert str(exc) == "events [3]: Local: Unknown partition"
    m.partition = -1
    assert str(message.error_of(m, "events")) == "events: Local: Unknown partition"


def test_fields_survive_a_broker(brokers, handles):
    """Null vs empty value and key, repeated and null headers, create time, as a broker returns
    them (``rd_kafka_producev`` there, ``rd_kafka_consume_batch_queue`` back)."""
    topic = "msg-" + uuid.uuid4().hex[:10]
    brokers.create_topic(topic)
    producer = handles("producer", {"bootstrap.servers": brokers.hosts})
    ts = 1700000000123
    headers = [("h", b"1"), ("h", b"2"), ("nul", None), ("empty", b""), ("ünï", "çødé".encode())]
    util.produce(producer, topic, [
        (0, b"", b"", ts, None),
        (0, None, None, ts + 1, headers),
        (0, b"v" * 100000, b"k", ts + 2, None),
    ])
    consumer = handles("consumer", {"bootstrap.servers": brokers.hosts, "group.id": topic})
    consumer.assign([(topic, 0, 0)])
    empty, null, big = util.consume(consumer, 3)
    assert all(isinstance(m, Message) for m in (empty, null, big))
    assert (empty.value, empty.partition_key, empty.headers) == (b"", b"", [])
    assert (null.value, null.partition_key) == (None, None)
    assert null.headers == headers
    assert (big.value, big.partition_key) == (b"v" * 100000, b"k")
    assert [m.timestamp for m in (empty, null, big)] == [ts, ts + 1, ts + 2]
    assert {m.timestamp_type for m in (empty, null, big)} == {TimestampType.CREATE_TIME}
    assert [m.offset for m in (empty, null, big)] == [0, 1, 2]
    assert {(m.topic, m.partition_id) for m in (empty, null, big)} == {(topic, 0)}


@pytest.mark.mock
def test_two_threads_reading_headers_never_see_each_others(mock_cluster):
    """Two consumers converting batches with headers at once (cffi releases the GIL in
    every C call) each get their own messages' headers."""
    import threading
    from pyrdk.rd.handle import Handle
    topics = {"left": b"L", "right": b"R"}
    producer = Handle("producer", {"bootstrap.servers": mock_cluster.bootstrap_servers, "linger.ms": 5})
    for topic, mark in topics.items():
        mock_cluster.create_topic(topic, 1)
        for i in range(3000):
            producer.produce(topic, 0, mark, None, 0, [("mark", mark)] * 3, i + 1)
    assert producer.flush(30000)
    producer.close()
    wrong = []
    counts = {}

    def read(topic, mark):
        consumer = Handle("consumer", {"bootstrap.servers": mock_cluster.bootstrap_servers,
                                       "group.id": topic, "enable.partition.eof": False})
        try:
            consumer.assign([(topic, 0, -2)])
            seen = 0
            while seen < 3000:
                msgs, errs = consumer.consume_batch(500, 1000)
                assert not errs
                seen += len(msgs)
                wrong.extend(m.headers for m in msgs if m.headers != [("mark", mark)] * 3)
            counts[topic] = seen
        finally:
            consumer.close()

    threads = [threading.Thread(target=read, args=item) for item in topics.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert counts == {"left": 3000, "right": 3000}
    assert wrong == []


def test_a_batch_of_values_and_a_batch_of_two_topics(brokers, handles):
    """``messages_of`` names each message's topic: one topic, then two whose messages may
    share a batch."""
    first, second = ("two-" + uuid.uuid4().hex[:10] for _ in range(2))
    for topic in (first, second):
        brokers.create_topic(topic)
    producer = handles("producer", {"bootstrap.servers": brokers.hosts})
    util.produce(producer, first, [(0, b"a%d" % i, None, 0, None) for i in range(3)])
    util.produce(producer, second, [(0, b"b%d" % i, None, 0, None) for i in range(3)])
    consumer = handles("consumer", {"bootstrap.servers": brokers.hosts, "group.id": first})
    consumer.assign([(first, 0, 0)])
    only = util.consume(consumer, 3)
    assert [(m.topic, m.value, m.offset, m.partition_key, m.headers) for m in only] == \
        [(first, b"a%d" % i, i, None, []) for i in range(3)]
    assert all(m.timestamp > 0 and m.timestamp_type == TimestampType.CREATE_TIME for m in only)
    consumer.assign([(first, 0, 0), (second, 0, 0)])
    both = util.consume(consumer, 6)
    assert sorted((m.topic, m.value) for m in both) == \
        sorted([(first, b"a%d" % i) for i in range(3)] + [(second, b"b%d" % i) for i in range(3)])
