"""The C core when Python code runs in the middle of one of its calls: a collection's
finalizer (before Python 3.12, at any allocation of a GC-tracked object), a partitioner, an
``__index__`` or a ``__bool__``, may call the same core again. Each method reads its state
again after such a point, or holds what it uses: nothing crashes, nothing is lost or handed
out twice."""
import gc
import sys
import uuid

import pytest

from pyrdk import core
from pyrdk.aio.structs import ConsumerRecord, TopicPartition
from pyrdk.common import CompressionType
from tests.rd import util

pytestmark = pytest.mark.c_core

_held = []


def _drain_free_lists():
    """Empty CPython's free lists of lists, dicts and tuples, so that the next one made is a
    new GC-tracked allocation (and so may collect)."""
    _held.append([[] for _ in range(200)])
    _held.append([{} for _ in range(200)])
    for size in range(1, 20):
        _held.append([tuple(range(i, i + size)) for i in range(2000)])


@pytest.fixture
def at_collection():
    """``at_collection(act, nth=1)``: run ``act()`` from a finalizer at the ``nth``
    collection from now (one at each GC-tracked allocation: the method called next and its
    arguments are made before this is armed); the threshold is put back after the test. From
    Python 3.12 the cyclic GC runs only between bytecodes, never inside a C function's
    allocation: there the tests that use this are skipped."""
    if sys.version_info >= (3, 12):
        pytest.skip("the cyclic GC does not run at an allocation inside a C call from Python 3.12")
    threshold = gc.get_threshold()
    gc.collect()

    def arm(act, nth=1):
        seen, fired = [], []

        def action():
            seen.append(1)
            if len(seen) == nth:
                fired.append(True)
                act()
            else:
                _drain_free_lists()
                util.collect_then(action)
        _drain_free_lists()
        util.collect_then(action)
        return fired
    yield arm
    gc.set_threshold(*threshold)
    _held.clear()


@pytest.fixture
def producer(mock_cluster, handles):
    """``producer(partitioner=None, batch=1000)``: a producer core over a 2-partition topic on
    the mock cluster, and its handle."""
    def make(partitioner=None, batch=1000):
        topic = "reentry-" + uuid.uuid4().hex[:10]
        mock_cluster.create_topic(topic, 2, 1)
        handle = handles("producer", {"bootstrap.servers": mock_cluster.bootstrap_servers, "linger.ms": 60000})
        the_core = core.producer_core(handle, topic, [(0, "p0"), (1, "p1")], partitioner, CompressionType.NONE,
                                      10000, batch, False, lambda *args: "general")
        return the_core, handle
    return make


@pytest.mark.mock
@pytest.mark.parametrize("partitions", [[], [(i, "q%d" % i) for i in range(4096)]])
def test_partitions_changed_while_the_partitioners_list_is_made(producer, at_collection, partitions):
    seen = []

    def partitioner(parts, key):
        seen.append(list(parts))
        return parts[0]
    the_core, _ = producer(partitioner)
    produce = the_core.produce
    fired = at_collection(lambda: setattr(the_core, "partitions", partitions))
    result = produce(b"v")
    gc.set_threshold(700)
    assert fired
    if result == "general":  # the table changed under it: the general path decides
        assert seen == []
    else:
        assert seen and all(p is not None for p in seen[0])


@pytest.mark.mock
def test_partitions_emptied_while_produce_batch_copies_its_list(producer, at_collection):
    the_core, _ = producer()
    produce_batch, values = the_core.produce_batch, [b"v%d" % i for i in range(10)]
    fired = at_collection(lambda: setattr(the_core, "partitions", []))
    result = produce_batch(values, 5)  # block_ms > 0: the list is copied
    gc.set_threshold(700)
    assert fired and result is None  # no partition left: the general path says so


@pytest.mark.mock
def test_partitions_emptied_while_produce_arrow_reads_its_arguments(producer):
    the_core, _ = producer()

    class Wide:
        def __bool__(self):
            the_core.partitions = []
            return False
    rows = 4
    offsets = b"".join(i.to_bytes(4, "little") for i in range(rows + 1))
    assert the_core.produce_arrow((rows, False, (0, None, offsets, b"abcd", Wide()), None, None), 0, 0) is None


@pytest.mark.mock
@pytest.mark.parametrize("method", ["refused", "take_all"])
def test_refused_called_again_while_a_new_list_is_made(producer, at_collection, method):
    the_core, _ = producer()
    inner, call = [], getattr(the_core, method)
    nth = 2 if method == "take_all" else 1  # take_all() makes its own list first
    fired = at_collection(lambda: inner.append(the_core.refused()), nth)
    outer = call()
    made_after = ["a", "new", "list"]
    gc.set_threshold(700)
    assert fired and inner[0] is not outer and inner[0] is not made_after
    assert inner[0] == [] and outer == [] and the_core.refused() == []


@pytest.mark.mock
def test_a_message_produced_while_take_all_makes_messages_anew_is_not_left_queued(producer, at_collection):
    the_core, _ = producer()
    the_core.produce(b"early")  # let go of at once: take_all() makes it anew
    kept = [core.Message(b"") for _ in range(3000)]  # no Message to reuse: each is a new allocation
    late, take_all = [], the_core.take_all
    fired = at_collection(lambda: late.append(the_core.produce(b"late")), 2)
    out = take_all()
    gc.set_threshold(700)
    assert fired and b"early" in [m.value for m in out]
    assert (len(the_core), the_core.queued) == (0, 0)
    del kept


@pytest.mark.mock
@pytest.mark.parametrize("how", ["add", "add_records"])
def test_another_topics_batch_added_while_a_batch_becomes_messages(mock_cluster, handles, at_collection, how):
    """The batch's topic name is held while its Messages are made: a finalizer that adds a
    batch of another topic replaces the name the core keeps."""
    names = ["reentry-a-" + uuid.uuid4().hex[:10], "reentry-b-" + uuid.uuid4().hex[:10]]
    consumers = []
    for name in names:
        mock_cluster.create_topic(name, 1, 1)
        producer = handles("producer", {"bootstrap.servers": mock_cluster.bootstrap_servers})
        util.produce(producer, name, [(0, b"m%d" % i, None, 0, None) for i in range(5)])
        consumer = handles("consumer", {"bootstrap.servers": mock_cluster.bootstrap_servers, "group.id": name,
                                        "enable.partition.eof": False})
        consumer.assign([(name, 0, 0)])
        consumers.append(consumer)
    the_core = core.consumer_core({0: "p0"})
    got, fired = [], []

    def add(pointers):
        if not fired:  # the outer call: the other topic's batch comes at its 2nd (3rd) collection,
            # at the positions' list, then the first Message (add_records(): and the runs' list)
            fired.append(at_collection(lambda: consumers[1].consume_batch(10, 5000, add), 2 if how == "add" else 3))
        made = the_core.add(pointers) if how == "add" else the_core.add_records(pointers, ConsumerRecord,
                                                                                   TopicPartition)
        got.append(made)
        return made

    kept = [core.Message(b"") for _ in range(3000)]  # no Message to reuse: each is a new allocation
    consumers[0].consume_batch(10, 5000, add)
    gc.set_threshold(700)
    assert fired[0] and len(got) == 2
    if how == "add":
        topics = [m.topic for m in the_core.take(100)]
    else:
        runs = got[1][0]  # the outer call's, which returned last
        topics = [tp.topic for tp, _ in runs] + [r.topic for _, records in runs for r in records]
    assert topics and set(topics) <= set(names)
    del kept


def test_the_buffer_emptied_while_take_counts_a_far_partition(at_collection):
    the_core = core.consumer_core({})
    the_core.extend([core.Message(b"%d" % i, partition_id=100000 + i, offset=i) for i in range(10)])
    take = the_core.take
    fired = at_collection(the_core.clear, 2)  # the list made, then the first far partition counted
    out = take(10)
    gc.set_threshold(700)
    assert fired and len(out) <= 10 and len(the_core) == 0


@pytest.mark.mock
@pytest.mark.parametrize("how", ["read", "set"])
def test_headers_touched_while_they_are_made(mock_cluster, handles, at_collection, how):
    headers = [("name-%03d" % i, b"value-%03d" % i * 4) for i in range(64)]
    topic = "reentry-" + uuid.uuid4().hex[:10]
    mock_cluster.create_topic(topic, 1, 1)
    util.produce(handles("producer", {"bootstrap.servers": mock_cluster.bootstrap_servers}), topic,
                 [(0, b"v", None, 0, headers)])
    consumer = handles("consumer", {"bootstrap.servers": mock_cluster.bootstrap_servers, "group.id": topic,
                                    "enable.partition.eof": False})
    consumer.assign([(topic, 0, 0)])
    the_core = core.consumer_core({0: "p0"})
    util.wait_until(lambda: len(the_core) >= 1, "the message",
                    step=lambda: consumer.consume_batch(10, 100, the_core.add))
    msg = the_core.take(1)[0]
    inner = []
    fired = at_collection(lambda: inner.append(msg.headers) if how == "read" else setattr(msg, "headers", None))
    got = msg.headers
    gc.set_threshold(700)
    assert got == headers
    assert not fired or how == "set" or inner == [headers]


def test_fields_set_while_a_message_is_reduced(at_collection):
    class Payload:
        def __init__(self, tag):
            self.tag = tag

        def __eq__(self, other):
            return isinstance(other, Payload) and other.tag == self.tag
    msg = core.Message(Payload("value"), partition_key=Payload("key"), partition=Payload("partition"),
                       topic=Payload("topic"))

    def reset():
        msg.value = msg.partition_key = msg.partition = msg.topic = None
    fired = at_collection(reset)
    _, args = msg.__reduce__()
    gc.set_threshold(700)
    assert fired
    assert (args[0], args[1], args[7]) == (Payload("value"), Payload("key"), Payload("topic"))
    assert args[6] is None  # the partition is not pickled (a client's live object)


@pytest.mark.mock
def test_the_core_bound_again_while_it_makes_a_future(mock_cluster, handles):
    topic = "reentry-" + uuid.uuid4().hex[:10]
    mock_cluster.create_topic(topic, 1, 1)
    handle = handles("producer", {"bootstrap.servers": mock_cluster.bootstrap_servers, "linger.ms": 60000})
    the_core = core.sender_core(handle, 1000)
    the_core.add_topic(topic, handle.addresses(topic)[1])
    dicts = []

    class Future:
        def __new__(cls, loop=None):
            the_core.bind({}, Future, None, 1000)  # lets go of the {"loop": loop} it was called with
            dicts.append({"bogus": 1})
            return object.__new__(cls)

        def __init__(self, loop=None):
            self.loop = loop
    loop = object()
    pending = {}
    the_core.bind(pending, Future, loop, 1000)
    fut = the_core.send_record(topic, b"v", None)
    assert isinstance(fut, Future) and fut.loop is loop
    the_core.release(fut)
