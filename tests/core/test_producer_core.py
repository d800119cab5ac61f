"""The producer's core: the fast path queues Messages per partition and hands them over,
the general path gets everything else, delivery reports fill the Messages in."""
import gc
import os
import sys
import uuid

import pytest

from pyrdk import core
from pyrdk.common import CompressionType
from pyrdk.exceptions import ProducerStoppedException
from pyrdk.rd import errors
from tests.rd import util


class _Rig:
    """A producer Handle on the mock cluster, a 2-partition topic and a core over them, with
    what the general path and the delivery reports got."""

    def __init__(self, mock_cluster, handles, batch=4, partitioner=None, max_size=1000, report_all=False):
        self.topic = "pcore-" + uuid.uuid4().hex[:10]
        mock_cluster.create_topic(self.topic, 2, 1)
        self.general, self.reports = [], []
        self.handle = handles("producer", {"bootstrap.servers": mock_cluster.bootstrap_servers},
                              closed_exc=ProducerStoppedException,
                              on_deliveries=lambda *columns: self.reports.extend(self.core.deliver(*columns)))
        self.partitions = [(0, "p0"), (1, "p1")]
        self.core = core.producer_core(self.handle, self.topic, self.partitions, partitioner, CompressionType.GZIP,
                                       max_size, batch, report_all, self._general)

    def _general(self, value, key, timestamp, headers, partition):
        self.general.append((value, key, timestamp, headers, partition))
        return "general"

    def flush(self):
        self.core.hand_off()
        assert self.handle.flush(util.WAIT_S * 1000)


@pytest.fixture
def rig(mock_cluster, handles):
    return lambda **kwargs: _Rig(mock_cluster, handles, **kwargs)


@pytest.mark.mock
def test_the_fast_path_queues_then_hands_over_and_reports_fill_messages_in(rig):
    r = rig()
    msgs = [r.core.produce(b"v%d" % i, b"k") for i in range(6)]
    assert all(isinstance(m, core.Message) for m in msgs) and r.general == []
    assert [m.partition_id for m in msgs] == [msgs[0].partition_id, 1 - msgs[0].partition_id] * 3
    assert {(m.partition, m.partition_id) for m in msgs} == {("p0", 0), ("p1", 1)}
    assert all((m.topic, m.offset, m.timestamp, m.compression_type) == (r.topic, -1, None, CompressionType.GZIP)
               for m in msgs)
    assert len(r.core) == 6 and r.core.queued == 6  # three per partition: under batch=4
    msgs.append(r.core.produce(b"v6"))
    assert r.core.queued == 3  # the fourth of a partition handed its queue over
    r.flush()
    assert r.core.queued == 0 and len(r.core) == 0 and r.reports == []
    assert sorted((m.partition_id, m.offset) for m in msgs) == [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 1),
                                                                (1, 2)][:len(msgs)] or \
        sorted(m.offset for m in msgs if m.partition_id == msgs[0].partition_id) == [0, 1, 2, 3]
    assert all(m.offset >= 0 and m.timestamp > 0 for m in msgs)


@pytest.mark.mock
@pytest.mark.parametrize("call", [
    lambda c: c.produce(b"v", None, 1700000000000), lambda c: c.produce(b"v", None, None, [("h", b"1")]),
    lambda c: c.produce("text"), lambda c: c.produce(b"v", bytearray(b"k")), lambda c: c.produce(b"x" * 990)],
    ids=["timestamp", "headers", "str", "bytearray-key", "near-max-size"])
def test_what_the_fast_path_does_not_take_goes_to_the_general_path(rig, call):
    r = rig()
    assert call(r.core) == "general"
    assert len(r.general) == 1 and r.general[0][4] is None and len(r.core) == 0


@pytest.mark.mock
def test_divert_sends_every_call_to_the_general_path(rig):
    r = rig()
    r.core.divert = True
    assert r.core.divert and r.core.produce(b"v", b"k") == "general"
    assert r.general == [(b"v", b"k", None, None, None)]
    r.core.divert = False
    assert r.core.produce(b"v") != "general"


@pytest.mark.mock
def test_a_partitioner_chooses_and_a_stranger_goes_to_the_general_path_with_it(rig):
    stranger = object()
    choices = iter(["p1", stranger])
    r = rig(partitioner=lambda partitions, key: next(choices))
    assert r.core.produce(b"v", b"k").partition_id == 1
    assert r.core.produce(b"v", b"k") == "general"
    assert r.general[-1][4] is stranger


@pytest.mark.mock
def test_track_untrack_and_deliver_for_the_general_paths_messages(rig):
    r = rig(report_all=True)
    msg = core.Message(b"v", partition_id=0, topic=r.topic)
    msg_id = r.core.track(msg)
    assert len(r.core) == 1 and r.core.untrack(msg_id) is msg and r.core.untrack(msg_id) is None
    msg_id = r.core.track(msg)
    r.handle.produce(r.topic, 0, b"v", None, 0, None, msg_id)
    r.flush()
    assert r.reports == [(msg, 0)] and msg.offset == 0 and len(r.core) == 0


@pytest.mark.mock
def test_a_refusal_at_hand_off_is_told_by_refused_and_sets_divert(mock_cluster, rig):
    r = rig(batch=1)
    r.core.partitions = [(5, "nowhere")]  # librdkafka knows the topic has no partition 5
    r.handle.metadata(r.topic)
    msg = r.core.produce(b"v")
    assert r.core.divert and r.core.refused() == [(msg, errors.UNKNOWN_PARTITION)]
    assert r.core.refused() == [] and len(r.core) == 0


@pytest.mark.mock
def test_close_stops_handing_over_except_when_stopping_and_take_all_returns_the_rest(rig):
    r = rig(batch=100)
    msgs = [r.core.produce(b"v%d" % i) for i in range(3)]
    r.core.close()
    assert r.core.divert and r.core.produce(b"late") == "general"
    assert r.core.hand_off() == 3 and r.core.hand_off(True) == 0
    assert sorted(r.core.take_all(), key=lambda m: m.value) == msgs
    assert len(r.core) == 0


@pytest.mark.mock
def test_produce_batch_spreads_runs_over_the_partitions_and_counts_what_it_sent(rig):
    r = rig()
    assert r.core.produce_batch([b"a", b"b", (b"c", b"k"), (b"d", None)], 0) == (4, 0)
    assert r.core.produce_batch([], 0) == (0, 0)
    assert r.core.batch_sent == 4 and len(r.core) == 0
    assert r.core.produce_batch([b"ok", "text"], 0) is None  # the general path says what is wrong
    assert r.core.produce_batch([b"ok", (b"v", b"k", b"x")], 0) is None
    assert r.core.batch_sent == 4
    assert r.core.produce_batch([b"ok", b"x" * 1001, b"never"], 0) == (1, errors.MSG_SIZE_TOO_LARGE)
    assert r.core.batch_sent == 5
    r.flush()
    assert r.handle.batch_outstanding(r.core.batch_sent) == 0


@pytest.mark.mock
def test_the_fast_path_refuses_in_a_forked_child(rig):
    r = rig(batch=1)
    r.core.produce(b"warm")
    pid = os.fork()
    if pid == 0:  # the child: the handle is the parent's
        code = 1
        try:
            code = 0 if r.core.produce(b"in the child") == "general" else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert r.core.produce(b"parent") != "general"


@pytest.mark.mock
@pytest.mark.parametrize("batch", [1, 64])
def test_the_core_keeps_no_reference_behind(rig, batch):
    r = rig(batch=batch)
    value, key = (bytes(bytearray(b)) for b in (b"v" * 50, b"k" * 8))
    before = [sys.getrefcount(o) for o in (value, key)]
    for _ in range(500):
        r.core.produce(value, key)
    assert r.core.produce_batch([(value, key)] * 100, 0) == (100, 0)
    r.flush()
    assert len(r.core) == 0
    assert [sys.getrefcount(o) for o in (value, key)] == before


@pytest.mark.mock
def test_produce_takes_its_arguments_by_keyword_too(rig):
    r = rig()
    msg = r.core.produce(value=b"v", key=b"k")
    assert (msg.value, msg.partition_key) == (b"v", b"k")
    assert r.core.produce(b"v", timestamp=5) == "general" and r.general[-1] == (b"v", None, 5, None, None)
    with pytest.raises(TypeError):
        r.core.produce(b"v", nonsense=1)


@pytest.mark.mock
def test_produce_batch_sends_a_message_near_max_size_alone_and_refuses_with_no_partition(rig):
    r = rig(max_size=1000)
    assert r.core.produce_batch([b"a", b"x" * 950, (b"b", b"k")] * 2, 0) == (6, 0)
    r.core.partitions = []
    assert r.core.produce_batch([b"a"], 0) is None
    assert r.core.batch_sent == 6
    r.core.partitions = [(0, "p0"), (1, "p1")]
    r.flush()
    assert r.handle.batch_outstanding(r.core.batch_sent) == 0


@pytest.mark.mock
def test_no_reference_is_kept_behind_by_any_method(rig):
    chosen = []

    def partitioner(partitions, key):
        chosen.append(partitions[-1])
        return partitions[-1]
    r = rig(batch=2, partitioner=partitioner, report_all=True)
    value, key = (bytes(bytearray(b)) for b in (b"v" * 50, b"k" * 8))
    partition = object()  # not interned, unlike "p1"
    r.core.partitions = [(0, "p0"), (1, partition)]
    objects = (value, key, partitioner, r._general, partition)
    before = [sys.getrefcount(o) for o in objects]
    for _ in range(3):
        r.core.produce(value, key)
        r.core.produce(value, key, 5)  # the general path
        msg = core.Message(value, key, 0)
        r.core.untrack(r.core.track(msg))
        r.core.track(msg)
        r.core.produce_batch([(value, key), value], 0)
        r.core.partitions, r.core.divert = r.core.partitions, r.core.divert
        r.flush()
        r.core.refused()
        r.core.take_all()
        r.reports.clear()
        r.general.clear()
        del msg
    r.core.produce(value, key)
    r.core.close()
    r.core.take_all()
    chosen.clear()
    assert [sys.getrefcount(o) for o in objects] == before


@pytest.mark.mock
def test_messages_the_program_let_go_of_are_still_reported(mock_cluster, handles):
    """A failed delivery, and stop(), report every message, held by the program or not."""
    topic = "pcore-" + uuid.uuid4().hex[:10]
    mock_cluster.create_topic(topic, 2, 1)
    reports = []
    handle = handles("producer", {"bootstrap.servers": mock_cluster.bootstrap_servers, "linger.ms": 60000},
                     on_deliveries=lambda *columns: reports.extend(the_core.deliver(*columns)))
    the_core = core.producer_core(handle, topic, [(0, "p0"), (1, "p1")], None, CompressionType.LZ4, 1000, 1, False,
                                  lambda *args: "general")
    for i in range(3000):  # more than the C core's table holds at first
        the_core.produce(b"v%d" % i, b"k")
    held = the_core.produce(b"held")
    assert len(the_core) == 3001 and the_core.queued == 0
    handle.purge()  # fails them all, still in librdkafka's queue
    assert handle.flush(util.WAIT_S * 1000)
    assert len(reports) == 3001 and len(the_core) == 0
    assert {err for _, err in reports} == {errors.PURGE_QUEUE}
    assert sorted(m.value for m, _ in reports) == sorted([b"v%d" % i for i in range(3000)] + [b"held"])
    assert any(m is held for m, _ in reports)
    assert all((m.partition_key, m.topic, m.compression_type, m.partition) ==
               (None if m is held else b"k", topic, CompressionType.LZ4, "p%d" % m.partition_id) for m, _ in reports)
    the_core = core.producer_core(handle, topic, [(0, "p0")], None, CompressionType.NONE, 1000, 100, False,
                                  lambda *args: "general")
    for i in range(5):
        the_core.produce(b"w%d" % i)
    the_core.close()
    taken = the_core.take_all()
    assert sorted(m.value for m in taken) == [b"w%d" % i for i in range(5)] and len(the_core) == 0
    assert {(m.partition_id, m.partition, m.offset) for m in taken} == {(0, "p0", -1)}


@pytest.mark.mock
def test_a_finalizer_that_produces_while_failed_messages_are_made_anew_loses_none(mock_cluster, handles):
    """Reports of messages the program let go of make each Message anew; making one may run
    a collection, and a finalizer may produce meanwhile, which grows the core's table."""
    topic = "pcore-" + uuid.uuid4().hex[:10]
    mock_cluster.create_topic(topic, 2, 1)
    reports, fired = [], []
    handle = handles("producer", {"bootstrap.servers": mock_cluster.bootstrap_servers, "linger.ms": 60000},
                     on_deliveries=lambda *columns: reports.extend(the_core.deliver(*columns)))
    the_core = core.producer_core(handle, topic, [(0, "p0"), (1, "p1")], None, CompressionType.NONE, 1000, 1, False,
                                  lambda *args: "general")
    values = [b"v%d" % i for i in range(3000)]
    later = [b"later%d" % i for i in range(6000)]
    for value in values:
        the_core.produce(value)

    def produce_more():
        if not fired and len(the_core) < 2500:  # inside deliver(): some of them made anew already
            fired.append(True)
            for value in later:
                the_core.produce(value)
        elif not fired:
            util.collect_then(produce_more)

    handle.purge()
    threshold = gc.get_threshold()
    gc.collect()
    util.collect_then(produce_more)
    try:
        handle.poll(util.WAIT_S * 1000)  # serves the purge's reports
    finally:
        gc.set_threshold(*threshold)
    assert fired
    handle.purge()
    assert handle.flush(util.WAIT_S * 1000)
    assert sorted(m.value for m, _ in reports) == sorted(values + later)
    assert {err for _, err in reports} == {errors.PURGE_QUEUE} and len(the_core) == 0


@pytest.mark.mock
def test_values_librdkafka_may_still_read_live_until_the_handle_is_destroyed(mock_cluster, handles):
    """The C core hands its queues over without RD_KAFKA_MSG_F_COPY: a value let go of before
    its delivery report waits on the Handle's keep list until rd_kafka_destroy has returned.
    The pure core has librdkafka copy, and keeps nothing."""
    topic = "pcore-" + uuid.uuid4().hex[:10]
    mock_cluster.create_topic(topic, 1, 1)
    handle = handles("producer", {"bootstrap.servers": mock_cluster.bootstrap_servers, "linger.ms": 60000})
    the_core = core.producer_core(handle, topic, [(0, "p0")], None, CompressionType.NONE, 1000, 1, False,
                                  lambda *args: "general")
    values = [bytes(bytearray(b"value %d" % i)) for i in range(10)]  # not shared with anything else
    for value in values:
        the_core.produce(value)
    assert the_core.queued == 0 and len(the_core) == 10  # lingering in librdkafka's queue
    the_core.close()
    assert sorted(m.value for m in the_core.take_all()) == sorted(values)
    assert sorted(handle.keep) == (sorted(values) if core.implementation == "c" else [])
    before = [sys.getrefcount(v) for v in values]
    handle.close()
    assert handle.keep == []
    assert [sys.getrefcount(v) for v in values] == [n - (core.implementation == "c") for n in before]


@pytest.mark.mock
def test_produce_arrow_reads_the_buffers_and_names_what_is_wrong_with_them(rig):
    import pyarrow as pa

    from pyrdk.core.arrow import write_columns
    r = rig(max_size=1000)
    rows, value, key, part = write_columns(pa.record_batch({
        "value": [b"a", None, b"", b"x" * 950, b"b"], "key": [b"k", None, None, None, b"k2"],
        "partition": pa.array([1, None, 0, None, None], pa.int32())}))
    assert r.core.produce_arrow((rows, True, value, key, part), 0, 0) == (5, 0)
    assert r.core.batch_sent == 5 and len(r.core) == 0
    big = write_columns(pa.record_batch({"value": [b"a", b"x" * 1001, b"never"]}))
    assert r.core.produce_arrow((3, False) + big[1:], 0, 0) == (1, errors.MSG_SIZE_TOO_LARGE)
    wrong = write_columns(pa.record_batch({"value": [b"a", b"b"], "partition": pa.array([0, 5], pa.int32())}))
    assert r.core.produce_arrow((2, False) + wrong[1:], 0, 0) == (1, errors.UNKNOWN_PARTITION)
    assert r.core.produce_arrow((2, False) + wrong[1:], 2, 0) == (2, 0)
    assert r.core.batch_sent == 7
    with pytest.raises(ValueError, match="the value validity buffer holds 1 bytes, the rows need 13"):
        r.core.produce_arrow((100, False, value, None, None), 0, 0)
    plain = write_columns(pa.record_batch({"value": [b"a"]}))[1]
    with pytest.raises(ValueError, match="the value offsets buffer holds 8 bytes, the rows need 404"):
        r.core.produce_arrow((100, False, plain, None, None), 0, 0)
    offsets = pa.array([0, 99], pa.int32()).buffers()[1]
    with pytest.raises(ValueError, match="row 0 of the value column has offsets 0..99 outside its 2 bytes"):
        r.core.produce_arrow((1, False, (0, None, offsets, b"ab", False), None, None), 0, 0)
    with pytest.raises(TypeError, match="the value offsets buffer must support the buffer protocol, not int"):
        r.core.produce_arrow((1, False, (0, None, 5, b"", False), None, None), 0, 0)
    with pytest.raises(TypeError, match="the key column must be \\(offset, validity, offsets, data, wide\\)"):
        r.core.produce_arrow((1, False, value, "x", None), 0, 0)
    for offset in (-1, 2 ** 58, 2 ** 70):
        with pytest.raises(ValueError, match="offset, the rows and start must be ints >= 0 and below 2\\*\\*58"):
            r.core.produce_arrow((1, False, (offset,) + value[1:], None, None), 0, 0)
    with pytest.raises(ValueError, match="below 2\\*\\*58"):
        r.core.produce_arrow((2 ** 62, False, value, None, None), 0, 0)
    with pytest.raises(ValueError, match="start 6 is past the 5 rows"):
        r.core.produce_arrow((rows, True, value, key, part), 6, 0)
    assert r.core.batch_sent == 7
    r.core.partitions = []
    assert r.core.produce_arrow((rows, True, value, key, part), 0, 0) is None
    r.core.partitions = [(0, "p0"), (1, "p1")]
    r.flush()
    assert r.handle.batch_outstanding(r.core.batch_sent) == 0


@pytest.mark.mock
def test_a_message_librdkafka_takes_after_a_refused_one_is_never_handed_over_twice(mock_cluster, handles):
    """rd_kafka_produce_batch goes on after a refusal other than a full queue: with
    librdkafka's message.max.bytes under the core's max size, the second of four messages is
    refused while the two after it are taken. Those leave the core's queue and the refused
    one is told by refused(): the partition ends up with the other three, each once."""
    topic = "pcore-" + uuid.uuid4().hex[:10]
    mock_cluster.create_topic(topic, 1, 1)
    reports = []
    handle = handles("producer", {"bootstrap.servers": mock_cluster.bootstrap_servers, "linger.ms": 60000,
                                  "message.max.bytes": 1000},
                     on_deliveries=lambda *columns: reports.extend(the_core.deliver(*columns)))
    the_core = core.producer_core(handle, topic, [(0, "p0")], None, CompressionType.NONE, 100000, 4, True,
                                  lambda *args: "general")
    values = [b"a" * 500, b"b" * 5000, b"c", b"d"]
    msgs = [the_core.produce(value) for value in values]
    assert the_core.queued == 0 and the_core.divert
    assert the_core.refused() == [(msgs[1], errors.MSG_SIZE_TOO_LARGE)]
    assert handle.flush(util.WAIT_S * 1000) and the_core.hand_off() == 0 and len(the_core) == 0
    assert sorted((m.offset, m.value) for m, err in reports if not err) == [(0, b"a" * 500), (1, b"c"), (2, b"d")]
    assert handle.query_watermark_offsets(topic, 0) == (0, 3)


@pytest.mark.mock
def test_an_interrupt_as_librdkafka_takes_a_queue_hands_none_over_twice(rig):
    """A KeyboardInterrupt as rd_kafka_produce_batch returns: the messages it took leave the
    core's queue all the same, and the next hand-off does not send them again. (The C core's
    hand-off calls librdkafka with no Python call in between: nothing can interrupt it there.)"""
    r = rig()
    msgs = [r.core.produce(b"v%d" % i) for i in range(4)]
    assert r.core.queued == 4
    interrupt = util.InterruptAsItReturns("rd_kafka_produce_batch")
    sys.setprofile(interrupt)
    try:
        r.core.hand_off()
    except KeyboardInterrupt:
        pass
    finally:
        sys.setprofile(None)
    assert interrupt.fired or core.implementation == "c"
    r.flush()
    assert len(r.core) == 0 and r.reports == [] and all(m.offset >= 0 for m in msgs)
    assert sum(r.handle.query_watermark_offsets(r.topic, pid)[1] for pid in (0, 1)) == 4


@pytest.mark.mock
def test_a_closed_handle_is_told_as_closed_by_produce_batch_and_produce_arrow(rig):
    """Once the handle is closed (stop() in another thread), produce_batch() and
    produce_arrow() say so with errors.CLOSED, from which the producer raises
    ProducerStoppedException with the rows queued before (the pure core said -1, an
    'Unknown broker error', or raised without them)."""
    import pyarrow as pa

    from pyrdk.core.arrow import write_columns
    r = rig(max_size=1000)
    r.handle.close()
    columns = write_columns(pa.record_batch({"value": [b"a", b"b"]}))
    assert r.core.produce_arrow((columns[0], False) + columns[1:], 0, 0) == (0, errors.CLOSED)
    assert r.core.produce_batch([b"a", b"b"], 0) == (0, errors.CLOSED)
    assert r.core.produce_batch([b"x" * 990], 0) == (0, errors.CLOSED)  # near max_size: sent alone
    with pytest.raises(ProducerStoppedException):
        r.handle.raise_produce_error(errors.CLOSED, r.topic, -1)
