"""The asyncio producer's core: a record to librdkafka in one call, and a batch of delivery
reports resolved into the futures of the records sent."""
import asyncio
import gc
import uuid

import pytest

from pyrdk import core
from pyrdk.aio.structs import RecordMetadata, TopicPartition
from pyrdk.exceptions import ProducerStoppedException
from pyrdk.rd import errors
from tests.rd import util

pytestmark = pytest.mark.mock


@pytest.fixture
def sender(mock_cluster, handles):
    """``(core, handle, topic, pending, failed)``: a SenderCore on a producer of the mock
    cluster, its 2-partition topic added; the delivery reports resolve ``pending``'s futures
    and append the failed ones to ``failed``."""
    topic = "score-" + uuid.uuid4().hex[:10]
    mock_cluster.create_topic(topic, 2, 1)
    pending, failed = {}, []
    box = []
    handle = handles("producer", {"bootstrap.servers": mock_cluster.bootstrap_servers},
                     closed_exc=ProducerStoppedException,
                     on_deliveries=lambda *columns: failed.extend(
                         box[0].deliver(pending, *columns, RecordMetadata, TopicPartition)))
    the_core = core.sender_core(handle, 1000)
    box.append(the_core)
    assert the_core.add_topic(topic, handle.addresses(topic)[1]) == 1
    return the_core, handle, topic, pending, failed


def test_send_then_deliver_resolves_the_futures(sender):
    the_core, handle, topic, pending, failed = sender
    loop = asyncio.new_event_loop()
    try:
        futures = {}
        for seq, (partition, value, key) in enumerate([(0, b"a", None), (1, b"b", b"k"), (-1, None, b"k"),
                                                      (0, b"c", None)], 1):
            fut = futures[seq] = loop.create_future()
            if seq == 4:  # a timestamp given: the entry says the topic
                msg_id = seq
                pending[msg_id] = (fut, topic, 1700000000000)
            else:  # the future alone: the msg_id names the topic by its index
                msg_id = 1 << core.TOPIC_SHIFT | seq
                pending[msg_id] = fut
            assert the_core.send(topic, partition, value, key, msg_id) == 0
        cancelled = futures[1]
        cancelled.cancel()
        assert handle.flush(util.WAIT_S * 1000)
        handle.poll(0, dispatch=False)
        handle.dispatch_reports()
        assert pending == {} and failed == []
        got = {msg_id: fut.result() for msg_id, fut in futures.items() if msg_id != 1}
    finally:
        loop.close()
    assert cancelled.cancelled()
    for msg_id, md in got.items():
        assert type(md) is RecordMetadata and type(md.topic_partition) is TopicPartition
        assert md.topic == topic and md.topic_partition == (topic, md.partition) and md.offset >= 0
        assert md.timestamp_type == 0 and md.log_start_offset is None
    assert got[2].partition == 1 and got[4].partition == 0
    assert got[4].timestamp == 1700000000000  # the one given; the others the report's
    assert all(type(md.timestamp) is int for md in got.values())
    if core.implementation == "c":  # the C core leaves metadata of immutable fields out of the cyclic GC
        assert not any(gc.is_tracked(md) for md in got.values())


def test_send_record_takes_the_common_record_in_one_call(sender):
    the_core, handle, topic, pending, failed = sender
    loop = asyncio.new_event_loop()
    try:
        the_core.bind(pending, asyncio.Future, loop, 4)
        taken = []
        for value, key in [(b"a", None), (b"b", b"k"), (None, b"k")]:
            fut = the_core.send_record(topic, value, key)
            assert isinstance(fut, asyncio.Future) and fut.get_loop() is loop and not fut.done()
            assert gc.is_tracked(fut) == (core.implementation == "python")
            taken.append(fut)
        assert the_core.send_record(topic, b"d", None) is False  # the 4th call: nothing done, yield
        taken.append(the_core.send_record(topic, b"d", None))  # the next takes it
        ids = list(pending)
        assert [pending[i] for i in ids] == taken
        # the topic's index in the high bits, consecutive sequence numbers below
        assert [i >> core.TOPIC_SHIFT for i in ids] == [1] * 4
        assert [i & ((1 << core.TOPIC_SHIFT) - 1) for i in ids] == [1, 2, 3, 4]
        # anything else is the general path's, with nothing done
        for args in [("elsewhere", b"x", None), (topic, bytearray(b"x"), None), (topic, b"x", "k"),
                     (type("Name", (str,), {})(topic), b"x", None), (topic, b"x" * 1001, None)]:
            assert the_core.send_record(*args) is None
        assert len(pending) == 4
        other = asyncio.new_event_loop()
        try:  # a loop of another kind: its create_future(), called without arguments
            the_core.bind(pending, other.create_future, None, 4)
            fut = the_core.send_record(topic, b"e", None)
            assert fut.get_loop() is other
            taken.append(fut)
        finally:
            other.close()
        assert handle.flush(util.WAIT_S * 1000)
        handle.poll(0, dispatch=False)
        handle.dispatch_reports()
        assert pending == {} and failed == []
        results = [fut.result() for fut in taken]
    finally:
        loop.close()
    assert [type(md) for md in results] == [RecordMetadata] * 5
    assert all(md.topic == topic and md.offset >= 0 for md in results)
    assert all(gc.is_tracked(fut) for fut in taken)  # deliver() handed each back
    handle.close()
    assert the_core.send_record(topic, b"x", None) is None  # a closed handle: the general path says so
    assert pending == {}


def test_add_topic_gives_each_topic_an_index_while_there_are_some(sender):
    the_core, handle, topic, pending, failed = sender
    assert core.TOPIC_MASK == 63 and core.TOPIC_SHIFT == 58
    rkt = handle.addresses(topic)[1]
    assert the_core.add_topic(topic, rkt) == 1  # again: the same
    assert [the_core.add_topic("t%d" % i, rkt) for i in range(63)] == list(range(2, 64)) + [0]


def test_refusals_come_back_as_codes_and_failures_as_the_futures_to_fail(sender):
    the_core, handle, topic, pending, failed = sender
    assert the_core.send(topic, 0, b"x" * 1001, None, 1) == errors.MSG_SIZE_TOO_LARGE
    with pytest.raises(KeyError, match="add_topic"):
        the_core.send("elsewhere", 0, b"x", None, 3)
    loop = asyncio.new_event_loop()
    try:
        fut = loop.create_future()
        pending[4] = (fut, topic, None)
        assert the_core.send(topic, 0, b"x", None, 4) == 0
        handle.purge(in_flight=True)  # its report says _PURGE_QUEUE
        handle.poll(0, dispatch=False)
        handle.dispatch_reports()
    finally:
        loop.close()
    assert failed == [(fut, topic, errors.PURGE_QUEUE)] and not fut.done() and pending == {}


def test_release_hands_a_pending_future_back_to_the_gc(sender):
    the_core, handle, topic, pending, failed = sender
    loop = asyncio.new_event_loop()
    try:
        the_core.bind(pending, asyncio.Future, loop, 4)
        fut = the_core.send_record(topic, b"x", None)
        assert gc.is_tracked(fut) == (core.implementation == "python")
        the_core.release(fut)
        assert gc.is_tracked(fut)
        the_core.release(fut)  # again: nothing to do
        assert gc.is_tracked(fut)
        assert the_core.send_record(topic, b"x" * 1001, None) is None  # refused: no future made
        assert list(pending.values()) == [fut]
    finally:
        handle.purge(in_flight=True)
        loop.close()


def test_a_closed_handle_refuses(sender):
    the_core, handle, topic, pending, failed = sender
    handle.close()
    if core.implementation == "c":
        assert the_core.send(topic, 0, b"x", None, 1) == -10000  # PYRDK_ERR_CLOSED
    else:
        with pytest.raises(ProducerStoppedException):
            the_core.send(topic, 0, b"x", None, 1)
