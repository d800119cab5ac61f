"""What the C core (``pyrdk._core``) does beyond the interface: Messages kept for reuse, headers
parsed on first use, Messages left out of the cyclic GC until they could be in a cycle, clear
refusals of what it cannot read, and librdkafka's functions bound when it is imported."""
import asyncio
import gc
import pickle
import struct
import subprocess
import sys
import uuid
import weakref

import pytest

from pyrdk import core
from pyrdk.aio.structs import ConsumerRecord, RecordMetadata, TopicPartition
from pyrdk.common import CompressionType
from tests.rd import util

pytestmark = pytest.mark.c_core


@pytest.fixture
def consumed(mock_cluster, handles):
    """``consumed(items)``: ``(partition, value, key, timestamp, headers)`` items produced to a new
    one-partition topic, then read into a fresh C consumer core; returns ``(core, consumer, topic)``."""
    def make(items):
        topic = "ccore-" + uuid.uuid4().hex[:10]
        mock_cluster.create_topic(topic, 1, 1)
        util.produce(handles("producer", {"bootstrap.servers": mock_cluster.bootstrap_servers}), topic, items)
        consumer = handles("consumer", {"bootstrap.servers": mock_cluster.bootstrap_servers, "group.id": topic})
        consumer.assign([(topic, 0, 0)])
        the_core = core.consumer_core({0: "p0"})
        util.wait_until(lambda: len(the_core) >= len(items), "the messages",
                        step=lambda: consumer.consume_batch(1000, 100, the_core.add))
        return the_core, consumer, topic
    return make


def test_freed_messages_are_made_anew(consumed):
    the_core, consumer, topic = consumed([(0, b"%d" % i, None, 0, None) for i in range(100)])
    first = the_core.take(100)
    addresses = {id(m) for m in first}
    del first
    consumer.seek([(topic, 0, 0)])
    util.wait_until(lambda: len(the_core) >= 100, "the messages again",
                    step=lambda: consumer.consume_batch(1000, 100, the_core.add))
    again = the_core.take(100)
    assert {id(m) for m in again} == addresses
    assert [(m.offset, m.value) for m in again] == [(i, b"%d" % i) for i in range(100)]


def test_headers_are_read_on_first_use_and_survive_pickling(consumed):
    headers = [("h", b"1"), ("ünï", None)]
    the_core, _, _ = consumed([(0, b"v", b"k", 1700000000000, headers), (0, b"w", None, 1700000000001, headers)])
    first, second = the_core.take(2)
    assert not gc.is_tracked(first) and not gc.is_tracked(second)
    copy = pickle.loads(pickle.dumps(first))  # reads them
    assert copy.headers == headers and first.headers == headers
    assert gc.is_tracked(first)  # a list of its own now
    assert not gc.is_tracked(second)
    assert second.headers == headers
    second.headers = [("other", b"2")]
    assert pickle.loads(pickle.dumps(second)).headers == [("other", b"2")]


def test_a_message_is_tracked_once_a_field_could_lead_back_to_it(consumed):
    the_core, _, _ = consumed([(0, b"v", None, 0, None)] * 4)
    plain, with_tuple, with_dict, with_message = the_core.take(4)
    plain.value, plain.topic, plain.offset = b"other", "t", 5
    with_tuple.value = (1, "a", b"b")
    gc.collect()  # untracks the tuple, which holds nothing that could lead back
    with_tuple.partition_key = with_tuple.value
    assert not any(gc.is_tracked(m) for m in (plain, with_tuple))
    with_dict.value = {}  # untracked now, but it may hold the Message later
    with_message.value = with_dict
    assert gc.is_tracked(with_dict) and gc.is_tracked(with_message)


def test_value_and_key_are_members_written_through_the_message_s_setter(consumed):
    """The interpreter reads a member straight from the object; writes still go through the
    Message's own setter, which puts it under the collector and refuses a deletion."""
    assert all(type(vars(core.Message)[name]).__name__ == "member_descriptor" for name in ("value", "partition_key"))
    the_core, _, _ = consumed([(0, b"v", b"k", 0, None)])
    msg = the_core.next()
    assert (msg.value, msg.partition_key, msg.key) == (b"v", b"k", b"k")
    box = {}
    msg.partition_key = box
    assert gc.is_tracked(msg) and msg.key is box
    for name in ("value", "partition_key"):
        with pytest.raises(AttributeError, match="cannot delete"):
            delattr(msg, name)
    with pytest.raises(AttributeError):
        msg.key = b"alias"  # read-only, as it was
    assert (msg.value, msg.key) == (b"v", box)


def test_a_cycle_through_a_dict_stored_untracked_is_collected(consumed):
    class Sentinel:
        pass
    the_core, _, _ = consumed([(0, b"v", None, 0, None)])
    msg = the_core.next()
    box = {}
    msg.value = box
    sentinel = Sentinel()
    box["msg"], box["sentinel"] = msg, sentinel
    ref = weakref.ref(sentinel)
    del msg, box, sentinel
    gc.collect()
    assert ref() is None


@pytest.mark.parametrize("call,words", [
    (lambda c: c.add(memoryview(b"abcdefgh")), "format 'LQ'"),
    (lambda c: c.add([1, 2]), "memoryview"),
    (lambda c: c.extend([b"not a message"]), "Messages, not bytes"),
    (lambda c: c.set_next("0", 1), "must be an int"),
    (lambda c: c.set_next(0, 1.5), "int or None"),
    (lambda c: c.iterator(None), "callable"),
    (lambda c: c.add_records(memoryview(b""), tuple, TopicPartition), "record must be a namedtuple class of 11"),
    (lambda c: c.add_records(memoryview(b""), ConsumerRecord, ConsumerRecord), "partition must be a namedtuple"),
    (lambda c: c.add_records([1], ConsumerRecord, TopicPartition), "memoryview"),
    (lambda c: setattr(c, "partitions", [(0, "p0")]), "a dict"),
])
def test_the_consumer_core_refuses_what_it_cannot_read(call, words):
    with pytest.raises(TypeError, match=words):
        call(core.consumer_core({}))


def test_the_consumer_core_refuses_a_null_pointer():
    with pytest.raises(ValueError, match="NULL at position 0"):
        core.consumer_core({}).add(memoryview(bytes(8)).cast("L" if struct.calcsize("L") == 8 else "Q"))


@pytest.fixture
def producer_core(mock_cluster, handles):
    handle = handles("producer", {"bootstrap.servers": mock_cluster.bootstrap_servers})
    topic = "ccore-" + uuid.uuid4().hex[:10]
    mock_cluster.create_topic(topic, 1, 1)
    return core.producer_core(handle, topic, [(0, "p0")], None, CompressionType.NONE, 1000, 4, False,
                              lambda *args: "general")


@pytest.mark.parametrize("call,words", [
    (lambda c: c.deliver(*[memoryview(b"")] * 5), "ids must be a one-dimensional memoryview of format 'LQ'"),
    (lambda c: c.deliver(memoryview(bytes(8)).cast("Q"), *[memoryview(b"")] * 4), "errs"),
    (lambda c: c.deliver(1, 2), "takes 5 arguments"),
    (lambda c: c.track(object()), "takes a Message"),
    (lambda c: setattr(c, "partitions", [("0", "p0")]), "ids ints"),
    (lambda c: setattr(c, "partitions", [(-1, "p0")]), "ids ints"),
    (lambda c: c.produce(), "1 to 4 arguments"),
    (lambda c: c.hand_off(True, False), "takes one argument"),
])
def test_the_producer_core_refuses_what_it_cannot_read(producer_core, call, words):
    with pytest.raises(TypeError, match=words):
        call(producer_core)


def test_the_producer_core_wants_real_addresses(producer_core):
    with pytest.raises(ValueError, match="rk must be a non-zero address"):
        type(producer_core)(None, 0, 1, 1, "t", [], None, CompressionType.NONE, 100, 1, False, print, 0)


def test_a_librdkafka_function_missing_fails_the_import_not_a_call(tmp_path):
    """Loaded without librdkafka and with lazy binding asked for, the module still refuses
    to load, naming the function (it is linked with -z now). The file is the one this Python
    imported: a checkout may hold a build for each Python version."""
    from pyrdk import _core
    path = _core.__file__
    script = ("import importlib.util, os, sys\n"
              "sys.setdlopenflags(os.RTLD_LAZY)\n"
              "spec = importlib.util.spec_from_file_location('pyrdk._core', %r)\n"
              "importlib.util.module_from_spec(spec)\n" % path)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert "ImportError" in out.stderr and "undefined symbol: rd_kafka_" in out.stderr


@pytest.fixture
def sender_core(mock_cluster, handles):
    handle = handles("producer", {"bootstrap.servers": mock_cluster.bootstrap_servers})
    the_core = core.sender_core(handle, 1000)
    the_core.add_topic("t", handle.addresses("t")[1])
    return the_core


_columns = [memoryview(b"")] * 5


@pytest.mark.parametrize("call,words", [
    (lambda c: c.send("t", 0, "text", None, 1), "the value must be bytes or None, not str"),
    (lambda c: c.send("t", 0, b"x", 5, 1), "the key must be bytes or None, not int"),
    (lambda c: c.send("t", "0", b"x", None, 1), "partition must be an int"),
    (lambda c: c.add_topic(b"t", 1), "topic must be a str"),
    (lambda c: c.deliver([], *_columns, RecordMetadata, TopicPartition), "pending must be a dict"),
    (lambda c: c.deliver({}, *_columns, RecordMetadata, TopicPartition), "ids must be a one-dimensional"),
    (lambda c: c.deliver({}, *_columns, dict, TopicPartition), "metadata must be a namedtuple class"),
    (lambda c: c.bind([], dict, None, 256), "pending must be a dict"),
    (lambda c: c.bind({}, 5, None, 256), "make must be callable"),
])
def test_the_sender_core_refuses_what_it_cannot_read(sender_core, call, words):
    with pytest.raises(TypeError, match=words):
        call(sender_core)


@pytest.mark.parametrize("call,words", [
    (lambda c: c.send("t", 0, b"x", None, 0), "msg_id must be an int > 0"),
    (lambda c: c.send("t", -2, b"x", None, 1), "partition must be -1 or a partition id"),
    (lambda c: c.add_topic("u", 0), "non-zero address"),
    (lambda c: c.bind({}, dict, None, 1), "yield_every must be an int > 1"),
])
def test_the_sender_core_refuses_bad_values(sender_core, call, words):
    with pytest.raises(ValueError, match=words):
        call(sender_core)


def test_the_sender_core_refuses_a_keep_list_of_another_type(mock_cluster, handles):
    handle = handles("producer", {"bootstrap.servers": mock_cluster.bootstrap_servers})
    rk, _, guard = handle.addresses(None)
    with pytest.raises(TypeError, match="keep must be a list or None, not int"):
        core._c.SenderCore(handle, rk, guard, 10, 5)


def test_send_record_holds_the_value_librdkafka_reads_in_place(mock_cluster, handles):
    """send_record() hands the value to librdkafka without a copy: it holds it until the
    record's delivery report, or, let go before (the core freed), on the Handle's keep list."""
    pending, cores = {}, []
    handle = handles("producer", {"bootstrap.servers": mock_cluster.bootstrap_servers},
                     on_deliveries=lambda *columns: cores[0].deliver(pending, *columns, RecordMetadata,
                                                                     TopicPartition))
    loop = asyncio.new_event_loop()
    try:
        for table in (pending, {}):
            cores.append(core.sender_core(handle, 1 << 20))
            cores[-1].add_topic("t", handle.addresses("t")[1])
            cores[-1].bind(table, loop.create_future, None, 1 << 20)
        delivered, dropped = bytes(bytearray(b"delivered")), bytes(bytearray(b"dropped"))
        counts = sys.getrefcount(delivered), sys.getrefcount(dropped)
        fut = cores[0].send_record("t", delivered, None)
        many = [b"value-%d" % i for i in range(3000)]  # the ring of held values grows twice
        assert all(cores[0].send_record("t", value, None) is not None for value in many)
        assert {sys.getrefcount(value) for value in many} == {4}  # the list's, the loop's, the call's, held
        assert cores[1].send_record("t", dropped, b"k") is not None
        assert (sys.getrefcount(delivered), sys.getrefcount(dropped)) == (counts[0] + 1, counts[1] + 1)
        cores.pop()  # freed with its record in flight: the value waits on the keep list
        gc.collect()
        assert handle.keep == [dropped]
        assert handle.flush(util.WAIT_S * 1000)
        handle.poll(0, dispatch=False)
        handle.dispatch_reports()
        assert fut.result().offset >= 0
    finally:
        loop.close()
    assert sys.getrefcount(delivered) == counts[0] and {sys.getrefcount(value) for value in many} == {3}
    handle.close()
    assert handle.keep == [] and sys.getrefcount(dropped) == counts[1]


def test_send_record_needs_bind_first(sender_core):
    with pytest.raises(RuntimeError, match="bind"):
        sender_core.send_record("t", b"x", None)
