"""The consumer's core: a batch from librdkafka becomes Messages, handed out in order, each
partition's next offset counted as they go."""
import gc
import sys
import uuid

import pytest

from pyrdk import core
from pyrdk.aio.structs import ConsumerRecord, TopicPartition
from pyrdk.common import TimestampType
from pyrdk.rd.handle import _NO_POINTERS
from tests.rd import util


@pytest.fixture
def consumed(mock_cluster, handles):
    """``consumed(items, partitions=None)``: produce ``(partition, value, key, timestamp,
    headers)`` items to a new 2-partition topic on the mock cluster, then read them all into a
    fresh consumer core; returns ``(core, handle, topic)``."""
    def make(items, partitions=None):
        topic = "core-" + uuid.uuid4().hex[:10]
        mock_cluster.create_topic(topic, 2, 1)
        producer = handles("producer", {"bootstrap.servers": mock_cluster.bootstrap_servers})
        util.produce(producer, topic, items)
        consumer = handles("consumer", {"bootstrap.servers": mock_cluster.bootstrap_servers, "group.id": topic,
                                        "enable.partition.eof": False})
        consumer.assign([(topic, 0, 0), (topic, 1, 0)])
        the_core = core.consumer_core(partitions if partitions is not None else {0: "p0", 1: "p1"})
        util.wait_until(lambda: len(the_core) >= len(items), "the messages",
                        step=lambda: _fetch(consumer, the_core))
        return the_core, consumer, topic
    return make


def _fetch(consumer, the_core):
    count, errs = consumer.consume_batch(1000, 100, the_core.add)
    assert not errs
    return count


def test_fields_of_consumed_messages(consumed):
    headers = [("h", b"1"), ("h", b"2"), ("nul", None), ("empty", b""), ("ünï", "çødé".encode())]
    the_core, _, topic = consumed([(0, b"", b"", 1700000000123, None), (0, None, None, 1700000000124, headers),
                                   (0, b"v" * 100000, b"k", 1700000000125, None)])
    empty, null, big = the_core.take(10)
    assert all(isinstance(m, core.Message) for m in (empty, null, big))
    assert (empty.value, empty.partition_key, empty.headers) == (b"", b"", [])
    assert (null.value, null.partition_key, null.headers) == (None, None, headers)
    assert (big.value, big.partition_key) == (b"v" * 100000, b"k")
    assert [m.timestamp for m in (empty, null, big)] == [1700000000123, 1700000000124, 1700000000125]
    assert {m.timestamp_type for m in (empty, null, big)} == {TimestampType.CREATE_TIME}
    assert [m.offset for m in (empty, null, big)] == [0, 1, 2]
    assert {(m.topic, m.partition_id, m.partition) for m in (empty, null, big)} == {(topic, 0, "p0")}


def test_next_take_and_the_iterator_count_each_partitions_next_offset(consumed):
    items = [(i % 2, b"%d" % i, None, 0, None) for i in range(10)]
    the_core, _, _ = consumed(items)
    assert the_core.next_offsets() == {}
    first = the_core.next()
    assert the_core.next_offsets() == {first.partition_id: first.offset + 1}
    batch = the_core.take(3)
    assert len(batch) == 3 and len(the_core) == 6
    refills = []

    def refill():
        refills.append(1)
        return None
    rest = list(the_core.iterator(refill))
    assert len(rest) == 6 and refills == [1] and len(the_core) == 0
    assert the_core.next() is None and the_core.take(5) == []
    assert the_core.next_offsets() == {0: 5, 1: 5}
    handed = [first] + batch + rest
    for pid in (0, 1):  # in order within each partition
        assert [m.offset for m in handed if m.partition_id == pid] == list(range(5))


def test_the_iterator_hands_out_what_refill_returns_until_none(consumed):
    the_core, _, _ = consumed([(0, b"a", None, 0, None)])
    extra = iter([core.Message(b"from-refill"), None])
    assert [m.value for m in the_core.iterator(lambda: next(extra))] == [b"a", b"from-refill"]


def test_set_next_forget_and_the_buffer_by_partition(consumed):
    the_core, _, _ = consumed([(i % 2, b"%d" % i, None, 0, None) for i in range(6)])
    the_core.set_next(7, None)
    the_core.set_next(1, 40)
    assert the_core.next_offsets() == {7: None, 1: 40}
    the_core.forget(7)
    assert the_core.next_offsets() == {1: 40}
    taken = the_core.take_partitions({1})
    assert [m.partition_id for m in taken] == [1, 1, 1] and len(the_core) == 3
    the_core.extend(taken)
    assert [m.partition_id for m in the_core.take(10)] == [0, 0, 0, 1, 1, 1]
    assert the_core.next_offsets() == {0: 3, 1: 3}
    the_core.extend(taken)
    the_core.clear()
    assert len(the_core) == 0 and the_core.next() is None


def test_partitions_name_each_messages_partition_and_may_change(consumed):
    the_core, consumer, _ = consumed([(0, b"a", None, 0, None)], partitions={})
    assert the_core.next().partition is None  # not in the dict
    the_core.partitions = {0: "zero"}
    assert the_core.partitions == {0: "zero"}


def test_a_message_made_in_the_place_of_a_freed_one_has_only_its_own_fields(consumed):
    """Freed Messages may be kept and made anew: one without a key or headers, consumed after
    one with them was freed, has neither."""
    the_core, _, _ = consumed([(0, b"first", b"k", 0, [("h", b"1")]), (0, b"second", None, 0, None)])
    first = the_core.next()
    assert (first.value, first.partition_key, first.headers) == (b"first", b"k", [("h", b"1")])
    del first
    second = the_core.next()
    assert (second.value, second.partition_key, second.headers, second.offset) == (b"second", None, [], 1)


def test_the_core_keeps_no_reference_to_what_it_hands_out(consumed):
    partition = object()
    partitions = {0: partition}
    before = sys.getrefcount(partition)
    the_core, _, _ = consumed([(0, b"v%d" % i, None, 0, None) for i in range(50)], partitions=partitions)
    assert sys.getrefcount(partition) == before + 50  # one per buffered Message
    msgs = the_core.take(25) + list(the_core.iterator(lambda: None))
    assert sys.getrefcount(partition) == before + 50 and len(msgs) == 50
    refs = [sys.getrefcount(m) for m in msgs]
    assert refs == [refs[0]] * 50  # each held by the list (and the call) only
    del msgs
    gc.collect()
    assert sys.getrefcount(partition) == before


@pytest.mark.c_core  # the pure-Python core's Messages are ordinary objects
def test_consumed_messages_are_left_out_of_the_cyclic_gc(consumed):
    """Made in C with nothing that leads back to them, so that a batch of them sets off no
    collections; a field given one that could lead back puts it under the collector."""
    the_core, _, _ = consumed([(0, b"v", b"k", 0, [("h", b"1")])])
    msg = the_core.next()
    assert not gc.is_tracked(msg)
    msg.value = [msg]
    assert gc.is_tracked(msg)


def test_the_buffer_keeps_its_order_as_it_grows_and_wraps_around():
    the_core = core.consumer_core({})
    made = [core.Message(b"%d" % i, partition_id=i % 3, offset=i) for i in range(1000)]
    handed = []
    for start in range(0, 1000, 150):  # fill past each size, taking some between
        the_core.extend(made[start:start + 150])
        handed.extend(the_core.take(40))
    assert len(the_core) == 1000 - len(handed)
    handed.extend(the_core.iterator(lambda: None))
    assert handed == made and len(the_core) == 0
    assert the_core.next_offsets() == {0: 1000, 1: 998, 2: 999}


def test_any_partition_id_keeps_its_next_offset():
    """Ids far above the topic's (and negative ones, as a Message may say) count as any other."""
    the_core = core.consumer_core({})
    the_core.extend([core.Message(b"a", partition_id=70000, offset=4), core.Message(b"b", partition_id=-1, offset=0),
                     core.Message(b"c", partition_id=2 ** 31 - 1, offset=9), core.Message(b"d", partition_id=40000,
                                                                                           offset=1)])
    the_core.take(4)
    the_core.set_next(3, None)
    the_core.set_next(100000, 7)
    assert the_core.next_offsets() == {70000: 5, -1: 1, 2 ** 31 - 1: 10, 40000: 2, 3: None, 100000: 7}
    for pid in (70000, -1, 3, 5, 123456):  # forgetting one not held is no error
        the_core.forget(pid)
    assert the_core.next_offsets() == {2 ** 31 - 1: 10, 40000: 2, 100000: 7}
    assert [m.value for m in the_core.take_partitions({70000})] == []


def test_the_iterator_stays_ended_once_refill_returned_none():
    the_core = core.consumer_core({})
    refills = []
    it = the_core.iterator(lambda: refills.append(1))
    assert list(it) == [] and refills == [1]
    the_core.extend([core.Message(b"late")])
    assert list(it) == [] and refills == [1] and len(the_core) == 1


def test_take_partitions_asks_the_container_and_keeps_the_others_in_order():
    the_core = core.consumer_core({})
    made = [core.Message(b"%d" % i, partition_id=i % 4, offset=i // 4) for i in range(40)]
    the_core.extend(made)
    assert the_core.take_partitions([1, 3]) == [m for m in made if m.partition_id in (1, 3)]
    assert the_core.take_partitions(range(0)) == []
    assert the_core.take(100) == [m for m in made if m.partition_id in (0, 2)]


@pytest.mark.parametrize("change", ["grow", "empty"])
def test_take_partitions_survives_a_container_that_changes_the_buffer(change):
    """``in`` runs Python code, which may add to the buffer or empty it: each message still
    ends up taken or buffered, once (the pure core's deque refuses the change)."""
    the_core = core.consumer_core({})
    made = [core.Message(b"%d" % i, partition_id=i % 4, offset=i // 4) for i in range(40)]
    added = [core.Message(b"added%d" % i, partition_id=9, offset=i) for i in range(5000)]
    the_core.extend(made)

    class Changing:
        asked = False

        def __contains__(self, pid):
            if not self.asked:
                self.asked = True
                if change == "grow":
                    the_core.extend(added)
                else:
                    the_core.clear()
            return pid in (1, 3)

    try:
        taken = the_core.take_partitions(Changing())
    except RuntimeError:
        assert core.implementation == "python"
        taken = []
    rest = the_core.take(10 ** 6)
    assert all(m.partition_id in (1, 3) for m in taken)
    everything = taken + rest
    assert len({id(m) for m in everything}) == len(everything)
    assert {id(m) for m in everything} == ({id(m) for m in made + added} if change == "grow" else set())


def test_take_takes_what_is_left_when_a_collection_empties_the_buffer():
    """Making the list may run a collection, and a finalizer may empty the buffer (as a
    consumer's stop() does from another thread)."""
    the_core = core.consumer_core({})
    the_core.extend([core.Message(b"%d" % i, partition_id=0, offset=i) for i in range(10)])
    threshold = gc.get_threshold()
    gc.collect()
    util.collect_then(the_core.clear)
    try:
        taken = the_core.take(5)
    finally:
        gc.set_threshold(*threshold)
    assert len(taken) + len(the_core) <= 10 and all(isinstance(m, core.Message) for m in taken)
    assert len(taken) == 5 or len(the_core) == 0


def test_the_next_offset_after_the_largest_offset_is_no_overflow():
    the_core = core.consumer_core({})
    the_core.extend([core.Message(b"last", partition_id=3, offset=2 ** 63 - 1)])
    the_core.take(1)
    assert the_core.next_offsets()[3] >= 2 ** 63 - 1


@pytest.mark.mock
def test_a_finalizer_that_adds_while_a_batch_becomes_messages_loses_none(mock_cluster, handles):
    """Making a Message may run a collection, and a finalizer may add to the buffer (as a
    consumer's resume() does) while add() fills it."""
    topic = "core-" + uuid.uuid4().hex[:10]
    mock_cluster.create_topic(topic, 2, 1)
    producer = handles("producer", {"bootstrap.servers": mock_cluster.bootstrap_servers})
    values = [b"m%d" % i for i in range(400)]
    util.produce(producer, topic, [(i % 2, v, None, 0, None) for i, v in enumerate(values)])
    consumer = handles("consumer", {"bootstrap.servers": mock_cluster.bootstrap_servers, "group.id": topic,
                                    "enable.partition.eof": False})
    consumer.assign([(topic, 0, 0), (topic, 1, 0)])
    the_core = core.consumer_core({0: "p0", 1: "p1"})
    # more than the room add() made for its batch (a ring of 512 for up to 400) leaves
    added = [core.Message(b"added%d" % i, partition_id=9, offset=i) for i in range(300)]
    held = [core.Message(b"") for _ in range(3000)]  # the C core's free list is empty: each Message is a new object
    fired = []

    def add_more():
        if not fired and len(the_core):  # inside add(): some of the batch made
            fired.append(True)
            the_core.extend(added)
        elif not fired:
            util.collect_then(add_more)

    threshold = gc.get_threshold()
    gc.collect()
    util.collect_then(add_more)
    try:
        util.wait_until(lambda: fired, "the finalizer", step=lambda: _fetch(consumer, the_core))
    finally:
        gc.set_threshold(*threshold)
    util.wait_until(lambda: len(the_core) >= 700, "the rest", step=lambda: _fetch(consumer, the_core))
    everything = the_core.take(10 ** 6)
    assert len({id(m) for m in everything}) == len(everything) == 700
    assert sorted(m.value for m in everything) == sorted(values + [m.value for m in added])
    del held


def test_no_reference_is_kept_behind_by_any_method():
    partition, refill = object(), (lambda: None)
    partitions = {0: partition}
    the_core = core.consumer_core(partitions)
    msgs = [core.Message(b"v", partition_id=0, offset=i, partition=partition) for i in range(10)]
    before = [sys.getrefcount(o) for o in (partition, partitions, refill)]
    for _ in range(3):
        the_core.extend(msgs)
        the_core.set_next(5, 1)
        the_core.forget(5)
        the_core.next_offsets()
        the_core.take_partitions({0})
        the_core.extend(msgs)
        the_core.next()
        the_core.take(3)
        list(the_core.iterator(refill))
        the_core.extend(msgs)
        the_core.clear()
        the_core.partitions = partitions
    assert [sys.getrefcount(o) for o in (partition, partitions, refill)] == before
    assert len({sys.getrefcount(m) for m in msgs}) == 1  # each held by the list only


def test_names_looked_up_per_call_are_not_left_in_the_type_cache():
    """CPython 3.11's type attribute cache keeps the last name each of its slots was asked
    for: a fresh string per lookup stayed alive there, one per slot it landed in, each
    displacing the None the empty slot held. (From 3.12 None's count does not move.)"""
    the_core = core.consumer_core({})
    junk = [None] * 64
    gc.collect()
    sys._clear_type_cache()  # every slot holds None again
    before = sys.getrefcount(None)
    for i in range(100000):
        junk[i % 64] = b"x" * (i % 59 + 1)  # moves where the next small string lands
        the_core.add_records(_NO_POINTERS, ConsumerRecord, TopicPartition)
    junk[:] = [None] * 64
    gc.collect()
    assert sys.getrefcount(None) - before > -50  # before the fix: -700 or so


def test_add_columns_fills_arrow_columns_and_counts_each_partitions_next_offset(mock_cluster, handles):
    """``add_columns``: a batch straight into the columns of a RecordBatch (no Message kept in
    the buffer), null keys and values as nulls, every record counted as handed out."""
    import pyarrow as pa
    from pyrdk.core import arrow
    topic = "core-" + uuid.uuid4().hex[:10]
    mock_cluster.create_topic(topic, 2, 1)
    producer = handles("producer", {"bootstrap.servers": mock_cluster.bootstrap_servers})
    items = [(i % 2, None if i == 3 else b"v" * i, None if i % 3 == 0 else b"k%d" % i, 1700000000000 + i, None)
             for i in range(12)]
    util.produce(producer, topic, items)
    consumer = handles("consumer", {"bootstrap.servers": mock_cluster.bootstrap_servers, "group.id": topic,
                                    "enable.partition.eof": False})
    consumer.assign([(topic, 0, 0), (topic, 1, 0)])
    the_core = core.consumer_core({0: "p0", 1: "p1"})
    batches = []

    def step():
        made, errs = consumer.consume_batch(1000, 100, the_core.add_columns)
        assert not errs
        batches.append(arrow.record_batch(made))
    util.wait_until(lambda: sum(b.num_rows for b in batches) >= len(items), "the messages", step=step)
    assert len(the_core) == 0
    assert the_core.next_offsets() == {0: 6, 1: 6}
    table = pa.Table.from_batches(batches)
    assert table.schema == arrow.schema()
    got = sorted(zip(table.column("partition").to_pylist(), table.column("offset").to_pylist(),
                     table.column("value").to_pylist(), table.column("key").to_pylist(),
                     table.column("timestamp").cast(pa.int64()).to_pylist(), table.column("topic").to_pylist(),
                     table.column("timestamp_type").to_pylist()))
    assert got == sorted((p, i // 2, v, k, ts, topic, int(TimestampType.CREATE_TIME)) for i, (p, v, k, ts, _)
                         in enumerate(items))
    assert table.column("key").null_count == 4 and table.column("value").null_count == 1


def test_add_records_makes_aiokafka_records_in_runs_of_one_partition(mock_cluster, handles):
    """``add_records``: a batch straight into aiokafka's ConsumerRecords (no Message kept in the
    buffer), in runs of one partition's, every record counted as handed out."""
    topic = "core-" + uuid.uuid4().hex[:10]
    mock_cluster.create_topic(topic, 2, 1)
    producer = handles("producer", {"bootstrap.servers": mock_cluster.bootstrap_servers})
    items = [(i % 2, None if i == 3 else b"v" * i, None if i % 3 == 0 else b"k%d" % i, 1700000000000 + i,
              [("h", b"x%d" % i), ("n", None)] if i == 4 else None) for i in range(12)]
    util.produce(producer, topic, items)
    consumer = handles("consumer", {"bootstrap.servers": mock_cluster.bootstrap_servers, "group.id": topic,
                                    "enable.partition.eof": False})
    consumer.assign([(topic, 0, 0), (topic, 1, 0)])
    the_core = core.consumer_core({0: "p0", 1: "p1"})
    runs = []

    def step():
        made, errs = consumer.consume_batch(1000, 100, lambda p: the_core.add_records(p, ConsumerRecord,
                                                                                      TopicPartition))
        assert not errs
        runs.extend(made)
    util.wait_until(lambda: sum(len(r) for _, r in runs) >= len(items), "the messages", step=step)
    assert len(the_core) == 0
    assert the_core.next_offsets() == {0: 6, 1: 6}
    for tp, records in runs:
        assert type(tp) is TopicPartition and tp.topic == topic
        assert [r.partition for r in records] == [tp.partition] * len(records)
        assert [r.offset for r in records] == list(range(records[0].offset, records[0].offset + len(records)))
    got = sorted(r for _, records in runs for r in records)
    assert all(type(r) is ConsumerRecord for r in got)
    want = sorted(ConsumerRecord(topic, p, i // 2, ts, 0, k, v, None, -1 if k is None else len(k),
                                 -1 if v is None else len(v), tuple(h) if h else ())  # aiokafka's tuple
                  for i, (p, v, k, ts, h) in enumerate(items))
    assert got == want
    if core.implementation == "c":  # the C core leaves the records of immutable fields out of the cyclic GC
        assert [gc.is_tracked(r) for r in got] == [bool(r.headers) for r in got]
