"""rd.message: ``rd_kafka_message_t`` → ``Message``, and ``rd_kafka_headers_t`` both ways."""
import collections
import gc
import pickle
import sys
import uuid
import weakref

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
    """``unpack_batch`` names each message's topic: one topic, then two whose messages may
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


def test_consumed_messages_are_left_out_of_the_cyclic_gc(brokers, handles):
    """Made in C with nothing that leads back to them, so that a batch of them sets off no
    collections; they are still ordinary Messages."""
    topic = "gc-" + uuid.uuid4().hex[:10]
    brokers.create_topic(topic)
    producer = handles("producer", {"bootstrap.servers": brokers.hosts})
    util.produce(producer, topic, [(0, b"v", b"k", 0, [("h", b"1")])])
    consumer = handles("consumer", {"bootstrap.servers": brokers.hosts, "group.id": topic})
    consumer.assign([(topic, 0, 0)])
    msg, = util.consume(consumer, 1)
    assert not gc.is_tracked(msg)
    copy = pickle.loads(pickle.dumps(msg))
    assert (copy.value, copy.partition_key, copy.headers, copy.offset, copy.topic) == \
        (b"v", b"k", [("h", b"1")], 0, topic)


def test_a_message_made_in_the_place_of_a_freed_one_has_only_its_own_fields(brokers, handles):
    """Freed Messages are kept and made anew: one without a key or headers, consumed after
    one with them was freed, has neither."""
    topic = "reuse-" + uuid.uuid4().hex[:10]
    brokers.create_topic(topic)
    producer = handles("producer", {"bootstrap.servers": brokers.hosts})
    util.produce(producer, topic, [(0, b"first", b"k", 0, [("h", b"1")]), (0, b"second", None, 0, None)])
    consumer = handles("consumer", {"bootstrap.servers": brokers.hosts, "group.id": topic})
    consumer.assign([(topic, 0, 0)])
    first, = util.consume(consumer, 1)
    assert (first.value, first.partition_key, first.headers) == (b"first", b"k", [("h", b"1")])
    del first
    second, = util.consume(consumer, 1)
    assert (second.value, second.partition_key, second.headers, second.offset) == (b"second", None, [], 1)


class _Plain(Message):
    pass


class _Slotted(Message):
    __slots__ = ("extra",)


class _Finalized(Message):
    finalized = 0

    def __del__(self):
        type(self).finalized += 1


@pytest.mark.parametrize("cls", [Message, _Plain, _Slotted, _Finalized])
def test_freeing_a_message_or_an_instance_of_a_subclass_releases_every_field(cls):
    """Message's tp_dealloc (``message_dealloc``) clears its slots, and a subclass's own
    slots, dict, weak references and ``__del__`` still get their due."""
    field = object()
    before, type_refs = sys.getrefcount(field), sys.getrefcount(cls)
    msgs = [cls(field, partition_key=field, headers=field) for _ in range(3000)]
    if cls is _Plain:
        msgs[0].extra = field
        ref = weakref.ref(msgs[0])
    if cls is _Slotted:
        msgs[0].extra = field
    del msgs
    assert (sys.getrefcount(field), sys.getrefcount(cls)) == (before, type_refs)
    if cls is _Plain:
        assert ref() is None
    if cls is _Finalized:
        assert cls.finalized == 3000


def test_a_del_set_on_message_runs_and_may_keep_the_message():
    kept = []
    Message.__del__ = lambda self: kept.append(self) if self.value == b"keep" else None
    try:
        Message(b"drop")
        Message(b"keep")
    finally:
        del Message.__del__
    assert [m.value for m in kept] == [b"keep"]


def test_a_long_chain_of_messages_is_freed_without_exhausting_the_c_stack():
    chain = None
    for _ in range(1000000):  # deep enough to overflow an 8 MB stack by recursion
        chain = Message(chain)
    del chain  # the trashcan frees it a level at a time, not by recursion


def test_a_message_in_a_reference_cycle_is_still_collected():
    holder = _Plain(None)
    holder.value = Message(holder)
    ref = weakref.ref(holder)
    del holder
    gc.collect()
    assert ref() is None


class _OwnMessage(Message):
    __slots__ = ()


def test_mark_next_gives_each_partition_the_offset_after_its_last_message():
    msgs = [Message(b"", partition_id=0, offset=5), Message(b"", partition_id=0, offset=6),
            Message(b"", partition_id=1, offset=7), Message(b"", partition_id=300, offset=1),
            Message(b"", partition_id=300, offset=2), Message(b"", partition_id=0, offset=9)]
    next_offsets = {1: 3, 2: 4}
    message.mark_next(msgs, next_offsets)
    assert next_offsets == {0: 10, 1: 8, 2: 4, 300: 3}
    others = [_OwnMessage(b"", partition_id=0, offset=1), Message(b"", partition_id=0, offset=2)]
    message.mark_next(others, next_offsets)  # not all Messages: through their attributes
    assert next_offsets[0] == 3
    with pytest.raises(AttributeError):
        message.mark_next([object()], next_offsets)


def test_pack_values_joins_bytes_and_gives_their_sizes():
    joined, lengths = message.pack_values([b"ab", b"", b"cde"])
    assert joined == b"abcde"
    assert list(ffi.from_buffer("size_t[]", lengths)) == [2, 0, 3]
    assert message.pack_values([]) == (b"", b"")
    assert message.pack_values([b"a", bytearray(b"b")]) is None  # not bytes: the Python way
    with pytest.raises(TypeError):
        message.pack_values((b"a",))


def test_the_c_functions_keep_no_reference_to_what_they_are_given():
    """pyrdk_messages.c counts references by hand: after the iterator, mark_last, mark_next
    and pack_values are done, every Message, offset and value is back to its count."""
    msgs = [Message(b"", partition_id=i % 2, offset=10 ** 12 + i) for i in range(6)]
    offsets = [m.offset for m in msgs]
    values = [bytes(bytearray(b"v%d" % i)) for i in range(3)]  # objects of their own
    before = [sys.getrefcount(o) for o in msgs + offsets + values]
    last, marked = [None], {}
    handed_out = list(message.buffer_iterator(collections.deque(msgs), marked, lambda: None, last))
    assert handed_out == msgs
    del handed_out
    message.mark_last(last, marked)  # the iterator holds its last message until this
    assert last == [None] and marked == {0: 10 ** 12 + 5, 1: 10 ** 12 + 6}
    next_offsets = {}
    message.mark_next(msgs, next_offsets)
    assert next_offsets == {0: 10 ** 12 + 5, 1: 10 ** 12 + 6}
    assert message.pack_values(values)[0] == b"v0v1v2"
    assert [sys.getrefcount(o) for o in msgs + offsets + values] == before
