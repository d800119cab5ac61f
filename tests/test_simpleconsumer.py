"""SimpleConsumer against a real broker (Tansu) and librdkafka's mock cluster.

pykafka's offset conventions are the contract here: ``held_offsets`` is the last offset
returned (``OffsetType.EARLIEST`` where that is -1), ``commit_offsets()`` commits held + 1,
a start from ``auto_offset_reset`` is committed at once with a group, ``reset_offsets`` with
an int ``o`` makes ``o`` the last consumed (the next message is ``o + 1``), ``seek(p, o)``
makes ``o`` the next one. Every test makes its own topic and group.
"""
import datetime
import gc
import json
import os
import socket
import sys
import threading
import time

import pytest

from pyrdk import KafkaClient
from pyrdk.common import OffsetType
from pyrdk.exceptions import (ConfigurationError, ConsumerStoppedException, GroupLoadInProgress,
                              KafkaException, KafkaTimeoutError, LeaderNotAvailable, NoBrokersAvailableError,
                              OffsetOutOfRangeError, UnknownMemberId,
                              UnicodeException, UnknownPartitionError, UnknownTopicOrPartition)
from pyrdk.rd.mock import ApiKey
from tests.fix_kafka import MANAGED, commit, make_topic, tansu_gap, unique_name
from tests.rd import util

# Upper bound on waiting for something that must happen; never asserted on.
PATIENCE_S = 30

TANSU_TIMESTAMP_GAP = ("ListOffsets by timestamp answers offset 0 for any time, "
                       "so a lookup by datetime cannot land on the right message")
MOCK_TIMESTAMP_GAP = ("librdkafka's mock cluster answers ListOffsets by timestamp with -1 "
                      "(no message) for any time: it has no lookup by time")


# -- helpers ---------------------------------------------------------------------------------------

def to_partition(pid):
    """A partitioner sending everything to partition ``pid``."""
    def partitioner(partitions, key):
        return next(p for p in partitions if p.id == pid)
    return partitioner


def produce(topic, values, partition=None, sync=False, **kwargs):
    """Produce ``values`` (to one partition if given) and wait for their delivery; returns
    the delivered Messages (with offsets). ``sync`` sends each message in its own request.
    ``kwargs`` go to every ``produce()`` call (keys, timestamps, headers)."""
    options = {"partitioner": to_partition(partition)} if partition is not None else {}
    factory = topic.get_sync_producer if sync else topic.get_producer
    with factory(linger_ms=5, **options) as producer:
        messages = [producer.produce(v, **kwargs) for v in values]
    for m in messages:
        assert m.offset >= 0, "message %r was not delivered" % (m.value,)
    return messages


def take(consumer, n):
    """Consume until ``n`` messages came back (or PATIENCE_S passed); returns them."""
    out = []
    give_up = threading.Event()
    timer = threading.Timer(PATIENCE_S, give_up.set)
    timer.start()
    try:
        while len(out) < n and not give_up.is_set():
            message = consumer.consume(unblock_event=give_up)
            if message is not None:
                out.append(message)
    finally:
        timer.cancel()
    return out


def drain(consumer):
    """Everything until ``consume()`` times out (the consumer needs a consumer_timeout_ms)."""
    return list(consumer)


def committed(consumer):
    return {pid: res.offset for pid, res in consumer.fetch_offsets()}


def offsets_by_partition(messages):
    out = {}
    for m in messages:
        out.setdefault(m.partition_id, []).append(m.offset)
    return out


def in_thread(target, *args):
    """Run ``target`` in a thread; returns (thread, box) where box gets 'result' or 'error'."""
    box = {}

    def run():
        try:
            box["result"] = target(*args)
        except BaseException as exc:  # handed to the test
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, box


@pytest.fixture
def mock_client(mock_cluster):
    c = KafkaClient(hosts=mock_cluster.bootstrap_servers, socket_timeout_ms=5000)
    yield c
    c.close()


def mock_topic(mock_cluster, mock_client, partitions=2):
    name = unique_name("topic")
    mock_cluster.create_topic(name, partitions)
    return mock_client.topics[name]


# -- iteration -------------------------------------------------------------------------------------

@pytest.mark.kafka
def test_deserializer_error_reaches_the_caller_and_loses_no_other_message(topic):
    produce(topic, [b"%d" % i for i in range(6)], partition=0)

    def deserializer(value, key):
        if value == b"2":
            raise ValueError("cannot decode 2")
        return int(value), key

    with topic.get_simple_consumer(consumer_timeout_ms=3000, deserializer=deserializer,
                                   partitions=[0]) as consumer:
        assert [consumer.consume().value for _ in range(2)] == [0, 1]
        with pytest.raises(ValueError, match="cannot decode 2"):
            consumer.consume()
        assert consumer.held_offsets[0] == 2  # the bad message counts as consumed
        assert consumer.consume().value == 3

    with topic.get_simple_consumer(consumer_timeout_ms=3000, deserializer=deserializer,
                                   partitions=[0]) as consumer:
        got = []
        while len(got) < 2:
            got += [m.value for m in consumer.consume_batch(10, 3000)]
        assert got == [0, 1]  # what was ready before the bad message comes back first
        with pytest.raises(ValueError, match="cannot decode 2"):
            consumer.consume_batch(10, 3000)
        rest = []
        while len(rest) < 3:
            rest += [m.value for m in consumer.consume_batch(10, 3000)]
        assert rest == [3, 4, 5]


@pytest.mark.mock
@pytest.mark.parametrize("raised", [KeyboardInterrupt, SystemExit])
def test_a_deserializer_that_raises_a_base_exception_loses_no_message_ready_before(mock_cluster, mock_client,
                                                                                    raised):
    """As with an Exception, consume_batch() returns the messages deserialized before the
    one a KeyboardInterrupt or SystemExit came from, then raises it (they were dropped,
    counted as consumed)."""
    topic = mock_topic(mock_cluster, mock_client, 1)
    produce(topic, [b"%d" % i for i in range(6)])

    def deserializer(value, key):
        if value == b"2":
            raise raised()
        return int(value), key

    with topic.get_simple_consumer(consumer_timeout_ms=PATIENCE_S * 1000, deserializer=deserializer) as consumer:
        got = []
        try:
            while len(got) < 2:
                got += [m.value for m in consumer.consume_batch(10, PATIENCE_S * 1000)]
        except raised:
            pytest.fail("raised before the messages deserialized ahead of it were returned: got %r" % got)
        assert got == [0, 1]
        with pytest.raises(raised):
            consumer.consume_batch(10, PATIENCE_S * 1000)
        rest = []
        while len(rest) < 3:
            rest += [m.value for m in consumer.consume_batch(10, PATIENCE_S * 1000)]
        assert rest == [3, 4, 5]


@pytest.mark.kafka
def test_iteration_returns_every_message_once_in_order_then_ends(topic):
    base_ts = int(time.time() * 1000) - 60000
    sent = []
    for pid in sorted(topic.partitions):
        sent += produce(topic, [b"%d-%d" % (pid, i) for i in range(15)], partition=pid,
                        partition_key=b"key-%d" % pid, timestamp=base_ts + pid,
                        headers=[("h", b"p%d" % pid)])

    def deserializer(value, key):
        return value.decode().upper(), key.decode()

    with topic.get_simple_consumer(consumer_timeout_ms=3000, deserializer=deserializer) as consumer:
        got = drain(consumer)

    assert len(got) == len(sent)
    assert sorted((m.partition_id, m.offset) for m in got) == \
        sorted((m.partition_id, m.offset) for m in sent)
    for pid, offsets in offsets_by_partition(got).items():
        assert offsets == list(range(15)), "partition %d out of order: %r" % (pid, offsets)
    for m in got:
        assert m.partition is topic.partitions[m.partition_id]
        index = m.offset
        assert m.value == "%d-%d" % (m.partition_id, index)  # deserialized: str
        assert m.partition_key == "key-%d" % m.partition_id
        assert m.timestamp == base_ts + m.partition_id
        assert m.headers == [("h", b"p%d" % m.partition_id)]
        assert m.topic == topic.name.decode()


@pytest.mark.kafka
def test_headers_come_back_whatever_the_value_length(topic):
    """Whether a consumed message has headers is read from its record, beside its value,
    whose length is written as a varint of one to three bytes: each side of each boundary,
    with headers and without."""
    lengths = [1, 63, 64, 8191, 8192, 300000]
    sent = [(b"v" * n, [("h", b"%d" % n)] if with_headers else [])
            for n in lengths for with_headers in (True, False)]
    with topic.get_producer(linger_ms=5, partitioner=to_partition(0)) as producer:
        for value, headers in sent:
            producer.produce(value, headers=headers)
    with topic.get_simple_consumer(partitions=[0], consumer_timeout_ms=1000) as consumer:
        got = [(m.value, m.headers) for m in consumer]
    assert [(len(v), h) for v, h in got] == [(len(v), h) for v, h in sent]


@pytest.mark.kafka
def test_held_offsets_are_the_last_returned(topic):
    produce(topic, [b"a", b"b", b"c"], partition=2)
    with topic.get_simple_consumer(consumer_timeout_ms=1000) as consumer:
        # pykafka's answer before the first message of a log starting at 0: EARLIEST
        assert consumer.held_offsets == {0: OffsetType.EARLIEST, 1: -2, 2: -2, 3: -2}
        got = take(consumer, 2)
        assert [m.offset for m in got] == [0, 1]
        assert consumer.held_offsets[2] == 1


@pytest.mark.kafka
def test_iteration_counts_every_message_handed_out(topic, group_name):
    """The iterator (C, the short way) marks a partition's run of messages once, at its end
    or when the offsets are read: held_offsets and commit_offsets() still see every message
    handed out, whether read at each message, at the end, or after a break."""
    for pid in (0, 1):
        produce(topic, [b"%d-%d" % (pid, i) for i in range(20)], partition=pid)
    with topic.get_simple_consumer(partitions=[0, 1], consumer_timeout_ms=1000) as consumer:
        got = list(consumer)
        assert consumer.held_offsets == {0: 19, 1: 19}
    with topic.get_simple_consumer(partitions=[0, 1], consumer_timeout_ms=1000) as consumer:
        last = {0: -2, 1: -2}
        for m in consumer:
            last[m.partition_id] = m.offset
            assert consumer.held_offsets == last
    assert last == {0: 19, 1: 19} and len(got) == 40
    with topic.get_simple_consumer(consumer_group=group_name, partitions=[0, 1],
                                   consumer_timeout_ms=1000) as first:
        part1 = []
        for m in first:
            part1.append(m)
            if len(part1) == 25:
                break
        first.commit_offsets()
    with topic.get_simple_consumer(consumer_group=group_name, partitions=[0, 1],
                                   consumer_timeout_ms=1000) as second:
        part2 = list(second)
    seen = sorted((m.partition_id, m.offset) for m in part1 + part2)
    assert seen == [(pid, i) for pid in (0, 1) for i in range(20)], "a message was lost or came twice"


# -- consumer_timeout_ms, block, unblock_event -----------------------------------------------------

@pytest.mark.kafka
def test_blocking_consume_waits_for_a_message_produced_later(topic):
    watchdog = threading.Event()
    timer = threading.Timer(PATIENCE_S, watchdog.set)
    timer.start()
    try:
        with topic.get_simple_consumer(consumer_timeout_ms=-1) as consumer:
            late = threading.Timer(0.5, produce, (topic, [b"late"]))
            late.start()
            message = consumer.consume(block=True, unblock_event=watchdog)
            late.join()
    finally:
        timer.cancel()
    assert not watchdog.is_set(), "consume() never returned the message"
    assert message is not None and message.value == b"late"


@pytest.mark.kafka
def test_unblock_event_ends_a_blocking_consume(topic):
    event = threading.Event()
    with topic.get_simple_consumer(consumer_timeout_ms=-1) as consumer:
        thread, box = in_thread(consumer.consume, True, event)
        threading.Timer(0.3, event.set).start()
        thread.join(PATIENCE_S)
        assert not thread.is_alive(), "consume() ignored unblock_event"
    assert box == {"result": None}


@pytest.mark.kafka
def test_unblock_event_not_an_event_is_a_type_error(topic):
    """Said at once, whether or not a message is buffered, not as a raw AttributeError."""
    produce(topic, [b"v"], partition=0)
    with topic.get_simple_consumer(consumer_timeout_ms=1000) as consumer:
        with pytest.raises(TypeError, match="unblock_event must be a threading.Event"):
            consumer.consume(unblock_event=5)
        assert consumer.consume().value == b"v"  # nothing taken by the refused call
        with pytest.raises(TypeError, match="unblock_event must be a threading.Event"):
            consumer.consume(unblock_event=5)


@pytest.mark.kafka
def test_non_blocking_consume_returns_none_when_nothing_is_there(topic):
    with topic.get_simple_consumer(consumer_timeout_ms=-1) as consumer:
        thread, box = in_thread(consumer.consume, False)
        thread.join(PATIENCE_S)
        assert not thread.is_alive(), "consume(block=False) blocked"
    assert box == {"result": None}


@pytest.mark.kafka
def test_non_blocking_consume_returns_messages_once_fetched(topic):
    produce(topic, [b"x"], partition=0)
    with topic.get_simple_consumer(consumer_timeout_ms=-1) as consumer:
        deadline = time.monotonic() + PATIENCE_S
        message = None
        while message is None and time.monotonic() < deadline:
            message = consumer.consume(block=False)
            time.sleep(0.01)
    assert message is not None and message.value == b"x"


@pytest.mark.kafka
@pytest.mark.parametrize("bad", ["1000", 1.5, None, True, -2])
def test_consumer_timeout_ms_must_be_an_int(topic, bad):
    with pytest.raises(TypeError, match="consumer_timeout_ms"):
        topic.get_simple_consumer(consumer_timeout_ms=bad)


@pytest.mark.kafka
def test_fetch_min_bytes_is_named_when_librdkafka_would_refuse_it(topic):
    with pytest.raises(TypeError, match="fetch_min_bytes must be an int >= 1"):
        topic.get_simple_consumer(fetch_min_bytes=0)


# -- partitions --------------------------------------------------------------------------------

@pytest.mark.kafka
def test_partition_subset_reads_only_those_partitions(topic):
    for pid in sorted(topic.partitions):
        produce(topic, [b"%d" % pid] * 5, partition=pid)
    chosen = [1, topic.partitions[3]]  # ids and Partition objects both work
    with topic.get_simple_consumer(partitions=chosen, consumer_timeout_ms=1000) as consumer:
        assert sorted(consumer.partitions) == [1, 3]
        got = drain(consumer)
    assert sorted(m.partition_id for m in got) == [1] * 5 + [3] * 5
    assert {m.value for m in got} == {b"1", b"3"}


@pytest.mark.kafka
@pytest.mark.parametrize("bad", [[4], [-1], [0, 99]])
def test_partition_out_of_range_is_a_value_error(topic, bad):
    with pytest.raises(ValueError, match="no partition"):
        topic.get_simple_consumer(partitions=bad)


@pytest.mark.kafka
def test_partitions_of_wrong_type_are_a_type_error(topic):
    with pytest.raises(TypeError):
        topic.get_simple_consumer(partitions=["0"])


# -- commits -----------------------------------------------------------------------------------

@pytest.mark.kafka
def test_commit_then_a_new_consumer_resumes_there(topic, group_name):
    sent = produce(topic, [b"m%d" % i for i in range(40)])
    with topic.get_simple_consumer(consumer_group=group_name, consumer_timeout_ms=1000) as first:
        part1 = take(first, 17)
        held = first.held_offsets
        first.commit_offsets()
        # commit_offsets() commits held + 1 (the next offset to read) for every partition; a
        # partition with nothing returned yet holds -2 (EARLIEST), and its commit is 0.
        assert committed(first) == {pid: (off + 1 if off >= 0 else 0) for pid, off in held.items()}
    with topic.get_simple_consumer(consumer_group=group_name, consumer_timeout_ms=1000) as second:
        part2 = drain(second)
    seen = [(m.partition_id, m.offset) for m in part1 + part2]
    assert len(seen) == len(set(seen)), "a message came twice"
    assert sorted(seen) == sorted((m.partition_id, m.offset) for m in sent), "a message was lost"
    # The second consumer starts right after what the first one held.
    for pid, offsets in offsets_by_partition(part2).items():
        assert offsets[0] == (held[pid] + 1 if held[pid] >= 0 else 0)


@pytest.mark.kafka
def test_explicit_commit_offsets_commits_as_given(topic, group_name):
    produce(topic, [b"v%d" % i for i in range(10)], partition=0)
    produce(topic, [b"w%d" % i for i in range(10)], partition=1)
    with topic.get_simple_consumer(consumer_group=group_name, partitions=[0, 1]) as consumer:
        consumer.commit_offsets([(0, 6), (topic.partitions[1], 2)])
        assert committed(consumer) == {0: 6, 1: 2}
    with topic.get_simple_consumer(consumer_group=group_name, partitions=[0, 1],
                                   consumer_timeout_ms=1000) as consumer:
        got = drain(consumer)
    assert offsets_by_partition(got) == {0: list(range(6, 10)), 1: list(range(2, 10))}


@pytest.mark.kafka
def test_commit_offsets_rejects_bad_offsets(topic, group_name):
    with topic.get_simple_consumer(consumer_group=group_name) as consumer:
        for bad in (-5, "3", 1.0, OffsetType.EARLIEST, OffsetType.LATEST):  # None: the position, as pykafka
            with pytest.raises(ValueError):
                consumer.commit_offsets([(0, bad)])
        with pytest.raises(KafkaException, match="unknown partition 7") as caught:  # as pykafka's
            consumer.commit_offsets([(7, 1)])
        assert isinstance(caught.value, ValueError)
        assert committed(consumer) == {0: 0, 1: 0, 2: 0, 3: 0}  # the start, committed by start()


@pytest.mark.kafka
def test_auto_commit_commits_while_consuming_and_at_stop(topic, group_name):
    produce(topic, [b"v%d" % i for i in range(20)], partition=0)
    consumer = topic.get_simple_consumer(consumer_group=group_name, partitions=[0],
                                         auto_commit_enable=True, auto_commit_interval_ms=1)
    try:
        take(consumer, 5)
        time.sleep(0.01)  # let the interval pass; the next consume() commits
        take(consumer, 1)
        # Committed during consumption, of what was returned: offsets 0..5 -> 6.
        assert committed(consumer) == {0: 6}
    finally:
        consumer.stop()
    reader = topic.get_simple_consumer(consumer_group=group_name, partitions=[0])
    assert committed(reader) == {0: 6}
    reader.stop()

    consumer = topic.get_simple_consumer(consumer_group=group_name, partitions=[0],
                                         auto_commit_enable=True, auto_commit_interval_ms=60000)
    assert [m.offset for m in take(consumer, 3)] == [6, 7, 8]
    consumer.stop()  # commits held + 1
    with topic.get_simple_consumer(consumer_group=group_name, partitions=[0]) as reader:
        assert committed(reader) == {0: 9}


@pytest.mark.kafka
def test_auto_commit_never_commits_messages_not_yet_returned(topic, group_name):
    produce(topic, [b"v%d" % i for i in range(200)], partition=0)
    consumer = topic.get_simple_consumer(consumer_group=group_name, partitions=[0],
                                         auto_commit_enable=True, auto_commit_interval_ms=0)
    got = take(consumer, 3)
    # Let librdkafka prefetch well past what was returned.
    time.sleep(0.5)
    consumer.stop()
    assert [m.offset for m in got] == [0, 1, 2]
    with topic.get_simple_consumer(consumer_group=group_name, partitions=[0]) as reader:
        assert committed(reader) == {0: 3}


@pytest.mark.kafka
def test_without_auto_commit_stop_commits_nothing(topic, group_name):
    produce(topic, [b"v%d" % i for i in range(5)], partition=0)
    with topic.get_simple_consumer(consumer_group=group_name, partitions=[0]) as consumer:
        take(consumer, 5)
    with topic.get_simple_consumer(consumer_group=group_name, partitions=[0], auto_start=False) as reader:
        assert committed(reader) == {0: 0}  # what start() committed; not the 5 messages read


@pytest.mark.kafka
def test_reset_offset_on_start_ignores_committed_offsets(topic, group_name):
    produce(topic, [b"v%d" % i for i in range(10)], partition=0)
    with topic.get_simple_consumer(consumer_group=group_name, partitions=[0]) as consumer:
        consumer.commit_offsets([(0, 7)])
    with topic.get_simple_consumer(consumer_group=group_name, partitions=[0],
                                   consumer_timeout_ms=1000) as consumer:
        assert [m.offset for m in drain(consumer)] == [7, 8, 9]
    with topic.get_simple_consumer(consumer_group=group_name, partitions=[0], consumer_timeout_ms=1000,
                                   reset_offset_on_start=True) as consumer:
        assert [m.offset for m in drain(consumer)] == list(range(10))


@pytest.mark.kafka
def test_auto_offset_reset_latest_starts_at_the_end_for_a_new_group(topic, group_name):
    # Sent one request per message: Tansu's latest offset is wrong after a batched produce
    # (it answers the last batch's base offset + 1), which is Tansu's gap, not the subject here.
    old = produce(topic, [b"old%d" % i for i in range(5)], partition=0, sync=True)
    with topic.get_simple_consumer(consumer_group=group_name, partitions=[0], consumer_timeout_ms=200,
                                   auto_offset_reset=OffsetType.LATEST) as consumer:
        # The consumer looks the end up asynchronously: produce probes until one comes back,
        # then everything after it must come back too.
        got = []
        deadline = time.monotonic() + PATIENCE_S
        while not got and time.monotonic() < deadline:
            produce(topic, [b"probe"], partition=0)
            got = drain(consumer)
        assert got, "no message produced after start() was read"
        produce(topic, [b"new%d" % i for i in range(5)], partition=0)
        got += take(consumer, 5)
    assert all(m.offset > old[-1].offset for m in got), "read a message older than start()"
    assert [m.value for m in got[-5:]] == [b"new%d" % i for i in range(5)]
    offsets = [m.offset for m in got]
    assert offsets == list(range(offsets[0], offsets[0] + len(offsets)))


@pytest.mark.kafka
def test_auto_offset_reset_is_validated(topic):
    with pytest.raises(ValueError, match="auto_offset_reset"):
        topic.get_simple_consumer(auto_offset_reset=0)


# -- pykafka's offset states ---------------------------------------------------------------------

def metadata_of(consumer):
    return {pid: res.metadata for pid, res in consumer.fetch_offsets()}


@pytest.mark.kafka
def test_a_new_group_starts_at_auto_offset_reset_and_commits_it(topic, group_name):
    # pykafka's start(): fetch_offsets() finds nothing committed, resets to auto_offset_reset
    # (ListOffsets: the offset found - 1) and commits that at once.
    produce(topic, [b"v%d" % i for i in range(5)], partition=0, sync=True)
    with topic.get_simple_consumer(consumer_group=group_name, partitions=[0, 1]) as consumer:
        assert consumer.held_offsets == {0: OffsetType.EARLIEST, 1: OffsetType.EARLIEST}
        assert committed(consumer) == {0: 0, 1: 0}
    other = unique_name("group").encode()
    with topic.get_simple_consumer(consumer_group=other, partitions=[0, 1],
                                   auto_offset_reset=OffsetType.LATEST) as consumer:
        assert consumer.held_offsets == {0: 4, 1: OffsetType.EARLIEST}  # log ends 5 and 0
        assert committed(consumer) == {0: 5, 1: 0}


@pytest.mark.kafka
def test_reset_offset_on_fetch_false_keeps_start_up_read_only(topic, group_name):
    produce(topic, [b"v%d" % i for i in range(3)], partition=0, sync=True)
    commit_first = topic.get_simple_consumer(consumer_group=group_name, partitions=[1], auto_start=False)
    assert committed(commit_first) == {1: -1}
    with topic.get_simple_consumer(consumer_group=group_name, partitions=[0, 1], consumer_timeout_ms=1000,
                                   reset_offset_on_fetch=False) as consumer:
        assert consumer.held_offsets == {0: -2, 1: -2}
        assert committed(consumer) == {0: -1, 1: -1}
        assert [m.offset for m in drain(consumer)] == [0, 1, 2]
        consumer.commit_offsets([(0, 2)])
    # Committed offsets are where it starts (pykafka 2.8 ignored them with
    # reset_offset_on_fetch=False and started at 0).
    with topic.get_simple_consumer(consumer_group=group_name, partitions=[0], consumer_timeout_ms=1000,
                                   reset_offset_on_fetch=False) as consumer:
        assert consumer.held_offsets == {0: 1}
        assert [m.offset for m in drain(consumer)] == [2]


@pytest.mark.kafka
@pytest.mark.parametrize("reset_to", [OffsetType.EARLIEST, OffsetType.LATEST])
def test_reset_offset_on_start_is_held_and_committed_at_once(topic, group_name, reset_to):
    produce(topic, [b"v%d" % i for i in range(6)], partition=0, sync=True)
    commit(topic, group_name, {0: 3})
    with topic.get_simple_consumer(consumer_group=group_name, partitions=[0], reset_offset_on_start=True,
                                   auto_offset_reset=reset_to) as consumer:
        if reset_to == OffsetType.EARLIEST:
            assert consumer.held_offsets == {0: OffsetType.EARLIEST} and committed(consumer) == {0: 0}
        else:
            assert consumer.held_offsets == {0: 5} and committed(consumer) == {0: 6}


@pytest.mark.kafka
def test_after_a_commit_fetch_offsets_is_held_offsets_plus_one(topic, group_name):
    produce(topic, [b"v%d" % i for i in range(8)], partition=2)
    with topic.get_simple_consumer(consumer_group=group_name, consumer_timeout_ms=1000) as consumer:
        take(consumer, 5)
        consumer.commit_offsets()
        held = consumer.held_offsets
        assert held[2] == 4 and held[0] == OffsetType.EARLIEST
        # pykafka's relation, partition by partition: committed - 1 is held (-1 is EARLIEST)
        assert {pid: held_of(offset) for pid, offset in committed(consumer).items()} == held


def held_of(committed_offset):
    return OffsetType.EARLIEST if committed_offset - 1 == -1 else committed_offset - 1


@pytest.mark.kafka
def test_fetch_offsets_before_start_reads_and_changes_nothing(topic, group_name):
    """pykafka's lag recipe: a consumer made with auto_start=False answers fetch_offsets(),
    and (unlike pykafka with reset_offset_on_fetch=True) commits nothing for the group."""
    commit(topic, group_name, {1: 7})
    consumer = topic.get_simple_consumer(consumer_group=group_name, auto_start=False)
    answer = consumer.fetch_offsets()
    assert [pid for pid, _ in answer] == [0, 1, 2, 3]
    assert [(res.offset, res.err) for _, res in answer] == [(-1, 0), (7, 0), (-1, 0), (-1, 0)]
    assert all(isinstance(res.metadata, bytes) for _, res in answer)
    assert committed(consumer) == {0: -1, 1: 7, 2: -1, 3: -1}
    # Not started: nothing returned yet from any partition, and fetch_offsets() moved none
    # (pykafka's would hold 6 for partition 1 now).
    assert consumer.held_offsets == {pid: OffsetType.EARLIEST for pid in range(4)}
    consumer.stop()  # a consumer never started stops quietly


@pytest.mark.mock
def test_held_offsets_are_plain_ints_as_pykafkas(mock_cluster, mock_client):
    """pykafka's OffsetType.EARLIEST was the int -2: held_offsets printed (or logged, or
    written with str()) reads {0: -2, 1: 0}, whatever the Python version."""
    topic = mock_topic(mock_cluster, mock_client, 2)
    produce(topic, [b"v"], partition=1)
    with topic.get_simple_consumer(consumer_timeout_ms=2000) as consumer:
        assert repr(consumer.held_offsets) == "{0: -2, 1: -2}"
        assert consumer.consume().offset == 0
        held = consumer.held_offsets
        assert repr(held) == "{0: -2, 1: 0}" and held[0] == OffsetType.EARLIEST
        assert all(type(o) is int for o in held.values())
        assert str(held[0]) == "-2" and "%s" % held[0] == "-2"


@pytest.mark.mock
def test_commits_carry_pykafkas_metadata(mock_cluster, mock_client):
    topic = mock_topic(mock_cluster, mock_client, 2)
    produce(topic, [b"v"], partition=0)
    group = unique_name("group").encode()
    # consumer_id= is ignored, as in pykafka 2.8 (deprecated since 2.7)
    with topic.get_simple_consumer(consumer_group=group, consumer_id=b"ignored", generation_id=3) as consumer:
        assert (consumer.consumer_id, consumer.generation_id) == (b"", -1)
        expected = json.dumps({"consumer_id": "", "hostname": socket.gethostname()}).encode()
        assert metadata_of(consumer) == {0: expected, 1: expected}  # the commit of the start
        consumer.consumer_id = b"worker-7"  # as a balanced consumer names its SimpleConsumer
        take(consumer, 1)
        consumer.commit_offsets()
        assert json.loads(metadata_of(consumer)[0]) == {"consumer_id": "worker-7",
                                                        "hostname": socket.gethostname()}


@pytest.mark.kafka
@tansu_gap("offset-commit metadata is not returned by OffsetFetch")
def test_commits_carry_pykafkas_metadata_on_the_broker(topic, group_name):
    with topic.get_simple_consumer(consumer_group=group_name, partitions=[0]) as consumer:
        assert json.loads(metadata_of(consumer)[0] or b"null") == {"consumer_id": "",
                                                                   "hostname": socket.gethostname()}


@pytest.mark.kafka
def test_owned_partitions_for_programs_that_read_them(topic):
    from pyrdk.simpleconsumer import OwnedPartition
    produce(topic, [b"v%d" % i for i in range(4)], partition=1)
    with topic.get_simple_consumer(partitions=[0, 1], consumer_timeout_ms=1000) as consumer:
        owned = consumer._partitions
        assert set(owned) == {topic.partitions[0], topic.partitions[1]}
        op = owned[topic.partitions[1]]
        assert isinstance(op, OwnedPartition) and op.partition is topic.partitions[1]
        assert (op.last_offset_consumed, op.next_offset) == (-1, 0)  # pykafka's initial values
        take(consumer, 3)
        assert (op.last_offset_consumed, op.next_offset) == (2, 3)  # a live view
        assert consumer._partitions_by_id[1] is op
        assert consumer._partitions_by_id[0].last_offset_consumed == -1


# -- reset_offsets -----------------------------------------------------------------------------

@pytest.mark.kafka
def test_reset_offsets_to_an_int_makes_it_the_last_consumed(topic, group_name):
    produce(topic, [b"v%d" % i for i in range(10)], partition=0)
    with topic.get_simple_consumer(consumer_group=group_name, partitions=[0],
                                   consumer_timeout_ms=1000) as consumer:
        assert len(take(consumer, 10)) == 10
        consumer.reset_offsets([(0, 3)])
        assert consumer.held_offsets[0] == 3
        assert committed(consumer) == {0: 4}  # reset commits when there is a group
        assert [m.offset for m in drain(consumer)] == list(range(4, 10))


@pytest.mark.kafka
@pytest.mark.parametrize("move", ["reset_offsets", "seek"])
def test_a_move_right_after_start_is_not_overtaken_by_the_start_offset(topic, group_name, move):
    # The start position (auto_offset_reset for a new group) must not land after the move.
    produce(topic, [b"v%d" % i for i in range(20)], partition=0)
    for _ in range(3):
        with topic.get_simple_consumer(consumer_group=unique_name("group"), partitions=[0],
                                       consumer_timeout_ms=1000) as consumer:
            if move == "seek":
                consumer.seek(0, 10)
            else:
                consumer.reset_offsets([(0, 9)])
            assert [m.offset for m in drain(consumer)] == list(range(10, 20))


@pytest.mark.kafka
def test_reset_offsets_drops_buffered_messages_of_the_partition(topic):
    produce(topic, [b"v%d" % i for i in range(50)], partition=0)
    with topic.get_simple_consumer(partitions=[0], consumer_timeout_ms=1000) as consumer:
        assert [m.offset for m in take(consumer, 2)] == [0, 1]  # the rest is prefetched
        consumer.reset_offsets([(topic.partitions[0], 39)])
        assert [m.offset for m in drain(consumer)] == list(range(40, 50))


@pytest.mark.kafka
def test_reset_offsets_of_no_partition_moves_nothing(topic, group_name):
    """As pykafka's: an empty list (a filter that left nothing) is no error, and nothing moves.
    librdkafka refuses a seek of no partitions."""
    produce(topic, [b"v%d" % i for i in range(4)], partition=0)
    with topic.get_simple_consumer(consumer_group=group_name, partitions=[0], consumer_timeout_ms=1000) as consumer:
        assert [m.offset for m in take(consumer, 2)] == [0, 1]
        consumer.reset_offsets([])
        assert [m.offset for m in drain(consumer)] == [2, 3]


@pytest.mark.kafka
def test_reset_offsets_to_earliest(topic, group_name):
    produce(topic, [b"v%d" % i for i in range(6)], partition=1)
    with topic.get_simple_consumer(consumer_group=group_name, partitions=[1],
                                   consumer_timeout_ms=1000) as consumer:
        assert len(take(consumer, 6)) == 6
        consumer.commit_offsets()
        consumer.reset_offsets([(1, OffsetType.EARLIEST)])
        assert committed(consumer) == {1: 0}
        assert [m.offset for m in drain(consumer)] == list(range(6))


@pytest.mark.kafka
def test_reset_offsets_default_is_auto_offset_reset_for_every_partition(topic):
    for pid in sorted(topic.partitions):
        produce(topic, [b"v"] * 3, partition=pid)
    with topic.get_simple_consumer(consumer_timeout_ms=1000) as consumer:
        assert len(take(consumer, 12)) == 12
        consumer.reset_offsets()
        assert sorted((m.partition_id, m.offset) for m in drain(consumer)) == \
            sorted((pid, o) for pid in topic.partitions for o in range(3))


@pytest.mark.kafka
def test_a_consumer_of_no_partitions_reads_nothing_as_pykafkas(topic, group_name):
    """``partitions=[]`` (a worker whose share of the partitions is none) is a consumer that
    reads nothing, as in pykafka; it raised ValueError."""
    produce(topic, [b"v"], partition=0)
    consumer = topic.get_simple_consumer(partitions=[], consumer_group=group_name, consumer_timeout_ms=300)
    try:
        assert consumer.consume() is None and list(consumer) == [] and consumer.consume_batch(10, 300) == []
        assert consumer.held_offsets == {}
        consumer.commit_offsets()
        consumer.reset_offsets()
    finally:
        consumer.stop()


@pytest.mark.kafka
def test_reset_offsets_to_latest(topic, group_name):
    # One request per message: see test_auto_offset_reset_latest_starts_at_the_end_for_a_new_group.
    produce(topic, [b"v%d" % i for i in range(5)], partition=0, sync=True)
    with topic.get_simple_consumer(consumer_group=group_name, partitions=[0],
                                   consumer_timeout_ms=1000) as consumer:
        assert len(take(consumer, 2)) == 2
        consumer.reset_offsets([(0, OffsetType.LATEST)])
        assert committed(consumer) == {0: 5}
        assert consumer.held_offsets[0] == 4
        assert drain(consumer) == []
        produce(topic, [b"after"], partition=0, sync=True)
        got = take(consumer, 1)
    assert [(m.offset, m.value) for m in got] == [(5, b"after")]


@pytest.mark.kafka
def test_reset_offsets_before_start_is_where_start_begins(topic):
    """pykafka's reset_offsets works on a consumer made with auto_start=False: start() then
    reads from there (without a group it keeps the offsets it holds)."""
    produce(topic, [b"v%d" % i for i in range(6)], partition=0)
    consumer = topic.get_simple_consumer(partitions=[0, 1], auto_start=False, consumer_timeout_ms=1000)
    consumer.reset_offsets([(0, 2), (topic.partitions[1], OffsetType.LATEST)])
    assert consumer.held_offsets == {0: 2, 1: OffsetType.EARLIEST}
    consumer.start()
    try:
        assert [(m.partition_id, m.offset) for m in drain(consumer)] == [(0, 3), (0, 4), (0, 5)]
    finally:
        consumer.stop()


@pytest.mark.kafka
def test_reset_and_commit_offsets_before_start_commit_for_the_group(topic, group_name):
    """pykafka's reset_offsets and commit_offsets commit on a consumer not started yet."""
    # One request per message: see test_auto_offset_reset_latest_starts_at_the_end_for_a_new_group.
    produce(topic, [b"v%d" % i for i in range(6)], partition=0, sync=True)
    consumer = topic.get_simple_consumer(consumer_group=group_name, partitions=[0, 1], auto_start=False,
                                         consumer_timeout_ms=1000)
    consumer.reset_offsets([(0, OffsetType.LATEST)])
    assert committed(consumer) == {0: 6, 1: -1}
    consumer.commit_offsets([(0, 4), (1, 0)])
    assert committed(consumer) == {0: 4, 1: 0}
    consumer.start()
    try:
        assert [m.offset for m in drain(consumer)] == [4, 5]
    finally:
        consumer.stop()


def _reset_to_datetime(topic, group):
    base = int(time.time() * 1000) - 3600 * 1000
    for i in range(10):  # timestamps base, base + 1 s, ...
        produce(topic, [b"v%d" % i], partition=0, timestamp=base + i * 1000)
    when = datetime.datetime.fromtimestamp((base + 4500) / 1000.0, datetime.timezone.utc)
    with topic.get_simple_consumer(consumer_group=group, partitions=[0],
                                   consumer_timeout_ms=1000) as consumer:
        assert len(take(consumer, 10)) == 10
        consumer.reset_offsets([(0, when)])
        # The first message at or after base + 4.5 s is offset 5.
        assert consumer.held_offsets[0] == 4
        assert committed(consumer) == {0: 5}
        assert [m.offset for m in drain(consumer)] == [5, 6, 7, 8, 9]


@pytest.mark.kafka
@tansu_gap(TANSU_TIMESTAMP_GAP)
def test_reset_offsets_to_a_datetime(topic, group_name):
    _reset_to_datetime(topic, group_name)


@pytest.mark.mock
@pytest.mark.xfail(reason=MOCK_TIMESTAMP_GAP, strict=True, raises=AssertionError)
def test_reset_offsets_to_a_datetime_on_the_mock_cluster(mock_cluster, mock_client):
    _reset_to_datetime(mock_topic(mock_cluster, mock_client), unique_name("group").encode())


def _reset_to_future_datetime(topic, group):
    produce(topic, [b"v%d" % i for i in range(4)], partition=0)
    later = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)
    with topic.get_simple_consumer(consumer_group=group, partitions=[0],
                                   consumer_timeout_ms=1000) as consumer:
        assert len(take(consumer, 1)) == 1
        consumer.reset_offsets([(0, later)])
        # No message at or after that time: the partition moves to its end.
        assert drain(consumer) == []
        produce(topic, [b"after"], partition=0)
        assert [m.value for m in take(consumer, 1)] == [b"after"]


@pytest.mark.mock
def test_reset_offsets_to_a_datetime_after_the_last_message_moves_to_the_end(mock_cluster, mock_client):
    # The mock cluster answers -1 ("no message at or after") for every time, which is the
    # right answer for a time after the last message.
    _reset_to_future_datetime(mock_topic(mock_cluster, mock_client), unique_name("group").encode())


@pytest.mark.kafka
@tansu_gap(TANSU_TIMESTAMP_GAP)
def test_reset_offsets_to_a_datetime_after_the_last_message_moves_to_the_end_tansu(topic, group_name):
    _reset_to_future_datetime(topic, group_name)


@pytest.mark.kafka
def test_reset_offsets_rejects_bad_offsets_without_moving(topic, group_name):
    produce(topic, [b"v%d" % i for i in range(6)], partition=0)
    with topic.get_simple_consumer(consumer_group=group_name, partitions=[0, 1],
                                   consumer_timeout_ms=1000) as consumer:
        assert [m.offset for m in take(consumer, 2)] == [0, 1]
        for bad in ("3", -3, -1000, 2.5, None, True, b"1"):
            with pytest.raises(ValueError, match="offset"):
                consumer.reset_offsets([(1, 0), (0, bad)])
        assert consumer.held_offsets == {0: 1, 1: -2}
        assert committed(consumer) == {0: 0, 1: 0}
        assert [m.offset for m in drain(consumer)] == [2, 3, 4, 5]


@pytest.mark.kafka
def test_reset_offsets_rejects_unknown_partitions_without_moving(topic, group_name):
    produce(topic, [b"v%d" % i for i in range(4)], partition=0)
    with topic.get_simple_consumer(consumer_group=group_name, partitions=[0, 1],
                                   consumer_timeout_ms=1000) as consumer:
        assert [m.offset for m in take(consumer, 1)] == [0]
        for bad in (2, 99, "0"):
            with pytest.raises(KafkaException, match="partition"):  # pykafka's: a KafkaException
                consumer.reset_offsets([(0, 0), (bad, 0)])
        assert consumer.held_offsets == {0: 0, 1: -2}
        assert committed(consumer) == {0: 0, 1: 0}
        assert [m.offset for m in drain(consumer)] == [1, 2, 3]


@pytest.mark.kafka
def test_commit_offsets_with_none_commits_the_partitions_position(topic, group_name):
    """pykafka's commit_offsets([(partition, None)]): that partition's held offset + 1."""
    produce(topic, [b"v%d" % i for i in range(6)], partition=1)
    with topic.get_simple_consumer(consumer_group=group_name, partitions=[0, 1, 2],
                                   consumer_timeout_ms=1000) as consumer:
        assert [m.offset for m in take(consumer, 4)] == [0, 1, 2, 3]
        consumer.commit_offsets([(0, 1)])
        consumer.commit_offsets((p, None) for p in [topic.partitions[1], 2])  # a generator: read once
        assert committed(consumer) == {0: 1, 1: 4, 2: 0}


@pytest.mark.kafka
def test_numpy_integers_are_partition_ids_and_offsets(topic, group_name):
    """Ids and offsets read from numpy (or pandas) arrays are integers too, not unknown partitions."""
    np = pytest.importorskip("numpy")
    produce(topic, [b"v%d" % i for i in range(4)], partition=1, sync=True)
    assert topic.fetch_offset_limits(np.int64(OffsetType.LATEST), partitions=[np.int32(1)])[1].offset == [4]
    with topic.get_simple_consumer(consumer_group=group_name, partitions=[np.int64(1)],
                                   consumer_timeout_ms=1000) as consumer:
        assert sorted(consumer.partitions) == [1]
        consumer.commit_offsets([(np.int64(1), np.int64(2))])
        assert committed(consumer) == {1: 2}
        consumer.reset_offsets([(np.int32(1), np.int64(0))])
        assert consumer.held_offsets == {1: 0}
        consumer.seek(np.uint8(1), np.int64(3))
        assert [m.offset for m in drain(consumer)] == [3]
        with pytest.raises(UnknownPartitionError, match="unknown partition"):
            consumer.commit_offsets([(np.int64(2), 1)])
        with pytest.raises(ValueError, match="invalid offset"):
            consumer.commit_offsets([(1, np.float64(2))])


@pytest.mark.kafka
def test_numpy_integers_are_the_int_settings_of_producers_and_consumers(topic, group_name):
    """Settings read from numpy (or pandas) are integers too: the int keywords of
    get_producer, get_simple_consumer and get_balanced_consumer take them as ints."""
    np = pytest.importorskip("numpy")
    with topic.get_producer(linger_ms=np.int64(5), max_queued_messages=np.int32(1000),
                            min_queued_messages=np.int64(10), max_request_size=np.int64(100000),
                            pending_timeout_ms=np.int64(30000), partitioner=to_partition(1)) as producer:
        producer.produce(b"v")
    with topic.get_simple_consumer(partitions=[1], consumer_timeout_ms=np.int64(10000),
                                   fetch_message_max_bytes=np.int64(1 << 20),
                                   queued_max_messages=np.uint16(1000)) as consumer:
        assert consumer.consume().value == b"v"
    consumer = topic.get_balanced_consumer(group_name, **dict(MANAGED, consumer_timeout_ms=np.int64(10000),
                                                              session_timeout_ms=np.int32(6000),
                                                              fetch_message_max_bytes=np.int64(1 << 20)))
    try:
        assert consumer.consume().value == b"v"
    finally:
        consumer.stop()


@pytest.mark.kafka
def test_partitions_of_another_topic_are_refused(client, topic, group_name):
    """A Partition names its topic: one of another topic is no partition of this consumer
    (pykafka's KafkaException), not the partition of the same id here."""
    other = make_topic(client, unique_name(), 4)
    with pytest.raises(ValueError, match="not of"):
        topic.get_simple_consumer(partitions=[other.partitions[1]])
    produce(topic, [b"v%d" % i for i in range(4)], partition=1)
    with topic.get_simple_consumer(consumer_group=group_name, consumer_timeout_ms=1000) as consumer:
        assert len(take(consumer, 4)) == 4
        before = committed(consumer)
        for call in (lambda: consumer.commit_offsets([(other.partitions[1], 3)]),
                     lambda: consumer.reset_offsets([(other.partitions[1], 0)]),
                     lambda: consumer.seek(other.partitions[1], 0),
                     lambda: consumer.pause([other.partitions[1]])):
            with pytest.raises(UnknownPartitionError, match="is a partition of topic %s, not of" % other.name.decode()):
                call()
        assert committed(consumer) == before
        assert drain(consumer) == []


@pytest.mark.kafka
@pytest.mark.parametrize("reset_to", [OffsetType.EARLIEST, OffsetType.LATEST])
def test_reset_offsets_past_the_end_moves_to_auto_offset_reset(topic, group_name, reset_to):
    """A position past the end ends, at the next consume(), where auto_offset_reset says (Tansu
    answers such a fetch with no records rather than OFFSET_OUT_OF_RANGE: the consumer sees it
    from the high watermark), and that position is committed, as pykafka's reset does."""
    produce(topic, [b"v%d" % i for i in range(5)], partition=0, sync=True)
    with topic.get_simple_consumer(consumer_group=group_name, partitions=[0], consumer_timeout_ms=1000,
                                   auto_offset_reset=reset_to) as consumer:
        consumer.reset_offsets([(0, 99)])
        assert consumer.held_offsets == {0: 99} and committed(consumer) == {0: 100}
        if reset_to == OffsetType.EARLIEST:
            assert [m.offset for m in take(consumer, 5)] == [0, 1, 2, 3, 4]
        else:
            assert drain(consumer) == []
            assert consumer.held_offsets == {0: 4} and committed(consumer) == {0: 5}
            produce(topic, [b"after"], partition=0, sync=True)
            assert [(m.offset, m.value) for m in take(consumer, 1)] == [(5, b"after")]


@pytest.mark.kafka
@pytest.mark.parametrize("error", ["error", b"error"])  # librdkafka takes bytes values too
def test_past_the_end_raises_with_auto_offset_reset_error(topic, error):
    produce(topic, [b"v%d" % i for i in range(3)], partition=0, sync=True)
    with topic.get_simple_consumer(partitions=[0], consumer_timeout_ms=-1,
                                   rdkafka_config={"auto.offset.reset": error}) as consumer:
        assert len(take(consumer, 3)) == 3
        consumer.seek(0, 50)
        watchdog = threading.Event()
        timer = threading.Timer(PATIENCE_S, watchdog.set)
        timer.start()
        try:
            with pytest.raises(OffsetOutOfRangeError, match="past the end"):
                consumer.consume(unblock_event=watchdog)
        finally:
            timer.cancel()


@pytest.mark.kafka
@pytest.mark.parametrize("moved_to", [OffsetType.EARLIEST, 99])
def test_reset_offsets_from_another_thread_while_consume_checks_the_end_of_the_log(topic, moved_to):
    """consume() checks a position set from outside against the end of the log, reading each
    partition's watermark with the GIL released; a reset_offsets() from another thread then
    (pykafka's way to rewind a running consumer) is honoured: consume() raises no KeyError for
    the entry that reset dropped (EARLIEST), and does not drop the one it set (99, past the
    end: it is checked in turn, and moves to auto_offset_reset)."""
    produce(topic, [b"v%d" % i for i in range(5)], partition=0, sync=True)
    with topic.get_simple_consumer(partitions=[0], consumer_timeout_ms=5000,
                                   auto_offset_reset=OffsetType.EARLIEST) as consumer:
        assert len(take(consumer, 5)) == 5  # the last fetch response gave the watermark
        consumer.reset_offsets([(0, 1)])  # explicit: checked against the end at the next fetch
        handle = consumer._handle
        watermarks = handle.get_watermark_offsets
        moved = []

        def meanwhile(topic_name, pid):
            if not moved:  # another thread moves the partition while this one waits
                mover = threading.Thread(target=consumer.reset_offsets, args=([(pid, moved_to)],))
                mover.start()
                mover.join()
                moved.append(pid)
            return watermarks(topic_name, pid)
        handle.get_watermark_offsets = meanwhile
        message = consumer.consume()
        assert moved == [0]
        assert message is not None and message.offset == 0


# -- seek, pause / resume, batches -------------------------------------------------------------

@pytest.mark.kafka
def test_seek_makes_the_offset_the_next_one(topic):
    produce(topic, [b"v%d" % i for i in range(20)], partition=0)
    with topic.get_simple_consumer(partitions=[0], consumer_timeout_ms=1000) as consumer:
        assert [m.offset for m in take(consumer, 3)] == [0, 1, 2]
        consumer.seek(0, 15)
        assert [m.offset for m in drain(consumer)] == list(range(15, 20))
        consumer.seek(topic.partitions[0], OffsetType.EARLIEST)
        assert [m.offset for m in take(consumer, 2)] == [0, 1]
        assert consumer.held_offsets[0] == 1
        with pytest.raises(UnknownPartitionError):
            consumer.seek(3, 0)
        with pytest.raises(ValueError):
            consumer.seek(0, -7)


@pytest.mark.kafka
def test_highwater_is_the_end_of_the_log_from_a_fetch(topic):
    # One batch of 30: a ListOffsets answer may lag it (Tansu's does), a fetch response may not.
    produce(topic, [b"v%d" % i for i in range(30)], partition=0)
    with topic.get_simple_consumer(partitions=[0, 1], auto_offset_reset=OffsetType.LATEST) as consumer:
        deadline = time.monotonic() + PATIENCE_S
        while None in (consumer.highwater(0), consumer.highwater(1)) and time.monotonic() < deadline:
            consumer.consume_batch(100, 50)
        assert (consumer.highwater(0), consumer.highwater(1)) == (30, 0)
        with pytest.raises(UnknownPartitionError):
            consumer.highwater(7)


@pytest.mark.kafka
def test_paused_partition_yields_nothing_until_resumed(topic):
    produce(topic, [b"a%d" % i for i in range(30)], partition=0)
    produce(topic, [b"b%d" % i for i in range(30)], partition=1)
    with topic.get_simple_consumer(partitions=[0, 1], consumer_timeout_ms=1000) as consumer:
        first = take(consumer, 1)  # the rest of both partitions is likely prefetched now
        time.sleep(0.3)
        consumer.pause([0])
        while_paused = drain(consumer)
        produce(topic, [b"a-more"], partition=0)
        while_paused += drain(consumer)
        consumer.resume([topic.partitions[0]])
        after = drain(consumer)
    assert all(m.partition_id == 1 for m in while_paused), \
        "got %r from a paused partition" % [m.offset for m in while_paused if m.partition_id == 0]
    everything = offsets_by_partition(first + while_paused + after)
    assert everything == {0: list(range(31)), 1: list(range(30))}


@pytest.mark.kafka
def test_one_iterator_follows_pause_and_seek_made_while_it_runs(topic):
    """The iterator (C, the short way) holds the consumer's buffer: pause() and seek() change
    it in place, and held_offsets counts exactly the messages handed out so far."""
    produce(topic, [b"a%d" % i for i in range(30)], partition=0)
    produce(topic, [b"b%d" % i for i in range(30)], partition=1)
    with topic.get_simple_consumer(partitions=[0, 1], consumer_timeout_ms=1000) as consumer:
        it = iter(consumer)
        first = [next(it) for _ in range(3)]
        held = consumer.held_offsets
        for pid in (0, 1):
            mine = [m.offset for m in first if m.partition_id == pid]
            assert held[pid] == (mine[-1] if mine else -2)
        consumer.pause([0])
        consumer.seek(1, 10)
        rest = list(it)
    assert all(m.partition_id == 1 for m in rest), "a paused partition's message came out"
    assert [m.offset for m in rest] == list(range(10, 30))


@pytest.mark.kafka
def test_pause_and_resume_everything(topic):
    produce(topic, [b"v%d" % i for i in range(5)], partition=3)
    with topic.get_simple_consumer(consumer_timeout_ms=1000) as consumer:
        consumer.pause()
        assert drain(consumer) == []
        consumer.resume()
        # librdkafka's broker thread fetches a resumed partition at its next look at its idle
        # ones, up to a second later: longer than consumer_timeout_ms on a loaded machine
        assert [m.offset for m in take(consumer, 5)] == list(range(5))
        assert drain(consumer) == []


@pytest.mark.kafka
def test_consume_batch(topic):
    produce(topic, [b"v%d" % i for i in range(25)], partition=0)
    with topic.get_simple_consumer(partitions=[0]) as consumer:
        got = []
        deadline = time.monotonic() + PATIENCE_S
        while len(got) < 25 and time.monotonic() < deadline:
            batch = consumer.consume_batch(max_messages=10, timeout_ms=1000)
            assert isinstance(batch, list)
            assert len(batch) <= 10
            got += batch
        assert [m.offset for m in got] == list(range(25))
        assert consumer.held_offsets[0] == 24
        assert consumer.consume_batch(max_messages=10, timeout_ms=200) == []


@pytest.mark.kafka
def test_consumed_messages_leave_no_reference_behind(topic):
    """Consumed Messages are made in C, which counts references by hand: once every one is
    dropped, from iteration and from consume_batch, the Partitions they named are back to
    their counts."""
    produce(topic, [b"v%d" % i for i in range(200)], partition_key=b"k", headers=[("h", b"1")])
    partitions = list(topic.partitions.values())
    with topic.get_simple_consumer(consumer_timeout_ms=1000) as consumer:
        gc.collect()  # garbage of earlier tests may still name them
        before = [sys.getrefcount(p) for p in partitions]
        got = 0
        for message in consumer:
            assert message.headers == [("h", b"1")] and message.partition_key == b"k"
            got += 1
            if got == 100:
                break
        del message
        while True:
            batch = consumer.consume_batch(50, 1000)
            if not batch:
                break
            got += len(batch)
        del batch
        assert got == 200
        gc.collect()
        assert [sys.getrefcount(p) for p in partitions] == before


@pytest.mark.kafka
def test_consume_batch_and_consume_share_one_position(topic):
    produce(topic, [b"v%d" % i for i in range(10)], partition=0)
    with topic.get_simple_consumer(partitions=[0], consumer_timeout_ms=1000) as consumer:
        got = take(consumer, 2)
        deadline = time.monotonic() + PATIENCE_S
        while len(got) < 10 and time.monotonic() < deadline:
            got += consumer.consume_batch(max_messages=3, timeout_ms=500)
        assert [m.offset for m in got] == list(range(10))


# -- stop / start ------------------------------------------------------------------------------

@pytest.mark.kafka
def test_consume_after_stop_raises(topic, group_name):
    consumer = topic.get_simple_consumer(consumer_group=group_name)
    consumer.stop()
    consumer.stop()  # twice is fine
    for call in (consumer.consume, lambda: consumer.consume(block=False), consumer.commit_offsets,
                 lambda: consumer.consume_batch(5, 10),
                 lambda: consumer.seek(0, 0), consumer.reset_offsets, consumer.pause):
        with pytest.raises(ConsumerStoppedException):
            call()
    with pytest.raises(ConsumerStoppedException):
        next(iter(consumer))
    # Reading the group's offsets needs no running consumer, as in pykafka.
    assert committed(consumer) == {0: 0, 1: 0, 2: 0, 3: 0}


@pytest.mark.kafka
@pytest.mark.parametrize("call", ["consume", "consume_batch", "consume_arrow"])
def test_stop_from_another_thread_ends_a_blocked_consume(topic, group_name, call):
    """Each way of waiting for messages raises when another thread stops the consumer,
    rather than returning nothing as if the wait had timed out."""
    consumer = topic.get_simple_consumer(consumer_group=group_name, consumer_timeout_ms=-1,
                                         auto_commit_enable=True)
    wait = {"consume": lambda: consumer.consume(True),
            "consume_batch": lambda: consumer.consume_batch(10, timeout_ms=-1),
            "consume_arrow": lambda: consumer.consume_arrow(10, timeout_ms=-1)}[call]
    thread, box = in_thread(wait)
    time.sleep(0.3)  # let it block
    assert thread.is_alive()
    consumer.stop()
    thread.join(PATIENCE_S)
    assert not thread.is_alive(), "%s() stayed blocked after stop()" % call
    assert isinstance(box.get("error"), ConsumerStoppedException), box


@pytest.mark.kafka
def test_stop_from_another_thread_ends_iteration(topic):
    produce(topic, [b"v"] * 3, partition=0)
    consumer = topic.get_simple_consumer(partitions=[0], consumer_timeout_ms=-1)
    seen = []

    def loop():
        for m in consumer:
            seen.append(m)

    thread, box = in_thread(loop)
    deadline = time.monotonic() + PATIENCE_S
    while len(seen) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    consumer.stop()
    thread.join(PATIENCE_S)
    assert not thread.is_alive()
    assert len(seen) == 3
    assert isinstance(box.get("error"), ConsumerStoppedException), box


@pytest.mark.kafka
def test_two_threads_stopping_at_once_both_return_and_commit_once(topic, group_name):
    """Two stop() calls at once (a signal handler's and the main loop's): the second waits for
    the first and finds the consumer stopped. Both went on to commit, and the first one's
    close then destroyed the handle under the second, which raised ConsumerStoppedException."""
    produce(topic, [b"v%d" % i for i in range(3)], partition=0)
    consumer = topic.get_simple_consumer(consumer_group=group_name, partitions=[0], auto_commit_enable=True)
    take(consumer, 3)
    commits = []
    second_in = threading.Event()
    commit_offsets = consumer.commit_offsets

    def counted(*args, **kwargs):
        commits.append(threading.current_thread().name)
        if len(commits) == 2:
            second_in.set()
        else:
            second_in.wait(0.5)  # the other stop() comes in meanwhile, or waits for this one
        return commit_offsets(*args, **kwargs)
    consumer.commit_offsets = counted
    threads = [in_thread(consumer.stop) for _ in range(2)]
    for thread, _ in threads:
        thread.join(PATIENCE_S)
    assert [box.get("error") for _, box in threads] == [None, None]
    assert len(commits) == 1
    assert committed(topic.get_simple_consumer(consumer_group=group_name, partitions=[0], auto_start=False)) \
        == {0: 3}


@pytest.mark.kafka
def test_context_manager_stops(topic):
    with topic.get_simple_consumer() as consumer:
        pass
    with pytest.raises(ConsumerStoppedException):
        consumer.consume(block=False)


@pytest.mark.kafka
def test_auto_start_false_then_start(topic):
    produce(topic, [b"v"], partition=0)
    consumer = topic.get_simple_consumer(partitions=[0], auto_start=False, consumer_timeout_ms=1000)
    with pytest.raises(ConsumerStoppedException):
        consumer.consume()
    consumer.start()
    consumer.start()  # twice is fine
    try:
        assert [m.offset for m in take(consumer, 1)] == [0]
    finally:
        consumer.stop()


@pytest.mark.kafka
def test_held_offsets_name_every_partition_before_start(topic):
    """As pykafka's (and as ``_partitions_by_id`` says): nothing returned yet from any of them."""
    consumer = topic.get_simple_consumer(partitions=[1, 3], auto_start=False)
    assert consumer.held_offsets == {1: OffsetType.EARLIEST, 3: OffsetType.EARLIEST}
    assert {pid: op.last_offset_consumed for pid, op in consumer._partitions_by_id.items()} == {1: -1, 3: -1}


@pytest.mark.kafka
def test_start_after_stop_continues_where_it_was(topic):
    produce(topic, [b"v%d" % i for i in range(10)], partition=0)
    consumer = topic.get_simple_consumer(partitions=[0], consumer_timeout_ms=1000)
    assert [m.offset for m in take(consumer, 4)] == [0, 1, 2, 3]
    consumer.stop()
    consumer.start()
    try:
        assert consumer.held_offsets[0] == 3
        assert [m.offset for m in drain(consumer)] == list(range(4, 10))
    finally:
        consumer.stop()


@pytest.mark.kafka
def test_start_after_stop_with_a_group_resumes_at_the_committed_offset(topic, group_name):
    produce(topic, [b"v%d" % i for i in range(10)], partition=0)
    consumer = topic.get_simple_consumer(consumer_group=group_name, partitions=[0],
                                         consumer_timeout_ms=1000, auto_commit_enable=True)
    assert [m.offset for m in take(consumer, 4)] == [0, 1, 2, 3]
    consumer.stop()  # commits 4
    consumer.start()
    try:
        assert [m.offset for m in drain(consumer)] == list(range(4, 10))
    finally:
        consumer.stop()


def stop_cut_short(consumer):
    """``consumer.stop()``, cut short by Ctrl-C while it waits for a call of another thread
    on its handle (in ``Condition.wait``); the handle is then closing, not destroyed."""
    handle = consumer._handle
    entered, release = threading.Event(), threading.Event()

    def call():
        with handle.use():
            entered.set()
            release.wait(PATIENCE_S)

    thread = threading.Thread(target=call)
    thread.start()
    try:
        assert entered.wait(PATIENCE_S)
        with util.profiled(util.InterruptAsItReturns("acquire")) as interrupt, pytest.raises(KeyboardInterrupt):
            consumer.stop()
        assert interrupt.fired and handle.closing and handle._ptr is not None
    finally:
        release.set()
        thread.join(PATIENCE_S)
    return handle


@pytest.mark.mock
def test_stop_again_finishes_a_stop_a_ctrl_c_cut_short(mock_cluster, mock_client):
    """The second stop() destroys the handle (it did nothing, and librdkafka's threads lived
    on until the exit hook)."""
    consumer = mock_topic(mock_cluster, mock_client, 1).get_simple_consumer(consumer_timeout_ms=100)
    handle = stop_cut_short(consumer)
    consumer.stop()
    assert handle._ptr is None


@pytest.mark.mock
@pytest.mark.parametrize("how", ["consume", "consume_batch", "consume_arrow"])
def test_a_ctrl_c_as_a_batch_arrives_loses_no_message_and_stop_returns(mock_cluster, mock_client, how):
    """A KeyboardInterrupt as pyrdk_consume_ready (rd_kafka_consume_batch_queue's) returns a
    batch: the batch is kept for the next call, and stop() returns (it hung for ever in
    rd_kafka_destroy, on messages never destroyed, and the batch was skipped)."""
    topic = mock_topic(mock_cluster, mock_client, 1)
    produce(topic, [b"%d" % i for i in range(20)])
    consumer = topic.get_simple_consumer(consumer_timeout_ms=PATIENCE_S * 1000)
    interrupt = util.InterruptAsItReturns("pyrdk_consume_ready")
    sys.setprofile(interrupt)
    try:
        with pytest.raises(KeyboardInterrupt):
            if how == "consume_arrow":
                consumer.consume_arrow(100, PATIENCE_S * 1000)
            else:
                getattr(consumer, how)()
    finally:
        sys.setprofile(None)
    assert interrupt.fired
    assert [m.value for m in take(consumer, 20)] == [b"%d" % i for i in range(20)]
    thread, box = in_thread(consumer.stop)
    thread.join(PATIENCE_S)
    assert not thread.is_alive() and "error" not in box


@pytest.mark.mock
@pytest.mark.parametrize("how", ["consume", "consume_batch", "consume_arrow"])
def test_stop_from_a_signal_handler_as_a_batch_arrives_closes_once_the_batch_is_taken(mock_cluster, mock_client,
                                                                                         how):
    """A signal's handler that stops the consumer (a SIGTERM handler of a worker), run as
    pyrdk_consume_ready returns a batch: where the handler of a signal that came
    during the wait runs. The call ends and the handle is destroyed once the batch is taken
    (rd_kafka_destroy waited for ever for the batch's messages, still that call's)."""
    topic = mock_topic(mock_cluster, mock_client, 1)
    produce(topic, [b"%d" % i for i in range(20)])
    consumer = topic.get_simple_consumer(consumer_timeout_ms=PATIENCE_S * 1000)
    fired = []

    def handler(frame, event, arg):
        if event == "c_return" and getattr(arg, "__name__", None) == "pyrdk_consume_ready" and not fired:
            fired.append(True)
            consumer.stop()

    def run():
        sys.setprofile(handler)
        try:
            if how == "consume_arrow":
                return consumer.consume_arrow(100, PATIENCE_S * 1000)
            return getattr(consumer, how)()
        finally:
            sys.setprofile(None)

    thread, box = in_thread(run)
    thread.join(PATIENCE_S)
    assert fired and not thread.is_alive(), "the call never returned"
    assert not consumer._running and consumer._handle._ptr is None  # rd_kafka_destroy'ed
    assert isinstance(box.get("error"), (type(None), ConsumerStoppedException)), box


@pytest.mark.mock
def test_a_ctrl_c_while_a_batch_becomes_messages_loses_none_and_repeats_none(mock_cluster, mock_client):
    """A KeyboardInterrupt while the core takes a fetched batch in (the pure core makes its
    Messages one by one; the C core's add() may be done when it lands, as it returns): the
    batch is in the buffer once, for the next call. (The pure core dropped it.)"""
    from pyrdk import core
    topic = mock_topic(mock_cluster, mock_client, 1)
    produce(topic, [b"%d" % i for i in range(20)])
    consumer = topic.get_simple_consumer(consumer_timeout_ms=PATIENCE_S * 1000)
    fired = []

    def interrupt(frame, event, arg):
        name = getattr(arg, "__name__", None)
        if event == "c_return" and not fired and (
                (name == "add" and frame.f_code.co_name == "_convert")  # the C core's add() returns
                or (name == "rd_kafka_message_timestamp" and core.implementation == "python")):
            fired.append(name)
            raise KeyboardInterrupt
    sys.setprofile(interrupt)
    try:
        with pytest.raises(KeyboardInterrupt):
            consumer.consume()
    finally:
        sys.setprofile(None)
    assert fired
    assert [m.value for m in take(consumer, 20)] == [b"%d" % i for i in range(20)]
    assert consumer.consume(block=False) is None
    consumer.stop()


class InterruptedCore:
    """A consumer's core whose add() a KeyboardInterrupt cuts off ``times`` times in a row:
    before it takes the batch in, the last time after it did."""

    def __init__(self, core, times):
        self._core, self._times, self.fired = core, times, 0

    def __getattr__(self, name):
        return getattr(self._core, name)

    def __len__(self):
        return len(self._core)

    def add(self, pointers):
        if self.fired < self._times:
            self.fired += 1
            if self.fired == self._times:
                self._core.add(pointers)
            raise KeyboardInterrupt
        return self._core.add(pointers)


@pytest.mark.mock
@pytest.mark.parametrize("times", [2, 3, 5])
def test_more_ctrl_cs_while_a_cut_off_batch_is_kept_lose_none_and_repeat_none(mock_cluster, mock_client, times):
    """Ctrl-C after Ctrl-C while the batch the first one cut off is kept for the next call
    (the pure core's add() is Python code a signal can cut off too): the batch is in the
    buffer once. (The pure core dropped it at the second.)"""
    topic = mock_topic(mock_cluster, mock_client, 1)
    produce(topic, [b"%d" % i for i in range(20)])
    consumer = topic.get_simple_consumer(consumer_timeout_ms=PATIENCE_S * 1000)
    consumer._core = interrupted = InterruptedCore(consumer._core, times)
    with pytest.raises(KeyboardInterrupt):
        consumer.consume_batch(20, PATIENCE_S * 1000)
    assert interrupted.fired == times
    assert [m.value for m in take(consumer, 20)] == [b"%d" % i for i in range(20)]
    assert consumer.consume(block=False) is None
    consumer.stop()


# -- misuse and errors -------------------------------------------------------------------------

@pytest.mark.kafka
def test_offsets_need_a_consumer_group(topic):
    with topic.get_simple_consumer() as consumer:
        with pytest.raises(ValueError, match="consumer_group"):
            consumer.commit_offsets()
        with pytest.raises(ValueError, match="consumer_group"):
            consumer.commit_offsets([(0, 1)])
        with pytest.raises(ValueError, match="consumer_group"):
            consumer.fetch_offsets()
    with pytest.raises(ValueError, match="consumer_group"):
        topic.get_simple_consumer(auto_commit_enable=True)


@pytest.mark.kafka
@pytest.mark.parametrize("bad", [42, 1.5, ["g"]])
def test_consumer_group_of_wrong_type(topic, bad):
    with pytest.raises(TypeError, match="consumer_group"):
        topic.get_simple_consumer(consumer_group=bad)


@pytest.mark.kafka
@pytest.mark.parametrize("bad", [b"\xff", "g\udc80"])
def test_consumer_group_that_is_not_utf8_text_is_named(topic, bad):
    with pytest.raises(UnicodeException, match="consumer_group .* is not UTF-8"):
        topic.get_simple_consumer(consumer_group=bad)


@pytest.mark.kafka
def test_consumer_group_as_str_is_accepted(topic, group_name):
    produce(topic, [b"v"], partition=0)
    with topic.get_simple_consumer(consumer_group=group_name.decode(), partitions=[0]) as consumer:
        take(consumer, 1)
        consumer.commit_offsets()
        assert committed(consumer) == {0: 1}


@pytest.mark.kafka
def test_unknown_rdkafka_config_key(topic):
    with pytest.raises(ConfigurationError, match="no.such.property"):
        topic.get_simple_consumer(rdkafka_config={"no.such.property": 1})


@pytest.mark.kafka
def test_bad_rdkafka_config_value(topic):
    with pytest.raises(ConfigurationError, match="fetch.wait.max.ms"):
        topic.get_simple_consumer(rdkafka_config={"fetch.wait.max.ms": "soon"})


@pytest.mark.kafka
@pytest.mark.parametrize("key", [b"fetch.wait.max.ms", 5])
def test_rdkafka_config_key_not_a_str_names_the_key(topic, key):
    """As the producer and the client say it, not Python's 'keywords must be strings'."""
    with pytest.raises(TypeError, match="rdkafka_config keys must be str .*%r" % (key,)):
        topic.get_simple_consumer(rdkafka_config={key: 10})


@pytest.mark.mock
def test_unknown_topic_raises(mock_cluster):
    # Tansu creates any topic a metadata request names, so only the mock cluster can say no.
    name = unique_name("nope")
    mock_cluster.set_topic_error(name, 3)  # UNKNOWN_TOPIC_OR_PARTITION
    # The lookup retries code 3 (a topic being created) for up to socket_timeout_ms.
    with KafkaClient(hosts=mock_cluster.bootstrap_servers, socket_timeout_ms=1000) as client:
        with pytest.raises(UnknownTopicOrPartition, match=name):
            client.topics[name]


@pytest.mark.mock
def test_offset_out_of_range_with_auto_offset_reset_error_raises(mock_cluster, mock_client):
    topic = mock_topic(mock_cluster, mock_client, 1)
    produce(topic, [b"v%d" % i for i in range(5)], partition=0)
    with topic.get_simple_consumer(rdkafka_config={"auto.offset.reset": "error"},
                                   consumer_timeout_ms=-1) as consumer:
        assert [m.offset for m in take(consumer, 5)] == list(range(5))
        consumer.seek(0, 1000)  # past the end: the broker answers OFFSET_OUT_OF_RANGE
        watchdog = threading.Event()
        timer = threading.Timer(PATIENCE_S, watchdog.set)
        timer.start()
        try:
            with pytest.raises(OffsetOutOfRangeError):
                consumer.consume(unblock_event=watchdog)
        finally:
            timer.cancel()


@pytest.mark.mock
@pytest.mark.parametrize("reset_offset_on_fetch", [True, False])
def test_offset_out_of_range_resets(mock_cluster, mock_client, reset_offset_on_fetch):
    # pykafka resets an out-of-range partition to auto_offset_reset whatever
    # reset_offset_on_fetch says (that only concerns fetch_offsets()).
    topic = mock_topic(mock_cluster, mock_client, 1)
    produce(topic, [b"v%d" % i for i in range(5)], partition=0)
    with topic.get_simple_consumer(consumer_timeout_ms=1000,  # EARLIEST
                                   reset_offset_on_fetch=reset_offset_on_fetch) as consumer:
        assert [m.offset for m in take(consumer, 5)] == list(range(5))
        consumer.seek(0, 1000)
        assert [m.offset for m in drain(consumer)] == list(range(5))


@pytest.mark.mock
def test_commit_retries_retriable_errors(mock_cluster, mock_client):
    topic = mock_topic(mock_cluster, mock_client, 1)
    produce(topic, [b"v%d" % i for i in range(3)], partition=0)
    group = unique_name("group").encode()
    with topic.get_simple_consumer(consumer_group=group, offsets_channel_backoff_ms=10,
                                   offsets_commit_max_retries=0) as consumer:
        take(consumer, 3)
        # More COORDINATOR_LOAD_IN_PROGRESS answers than librdkafka retries by itself.
        mock_cluster.push_request_errors(ApiKey.OffsetCommit, *[14] * 20)
        with pytest.raises(GroupLoadInProgress):
            consumer.commit_offsets()
        mock_cluster.clear_request_errors(ApiKey.OffsetCommit)
        assert committed(consumer) == {0: 0}  # the start, committed by start()
    with topic.get_simple_consumer(consumer_group=group, offsets_channel_backoff_ms=10,
                                   offsets_commit_max_retries=5, auto_offset_reset=OffsetType.EARLIEST,
                                   reset_offset_on_start=True) as consumer:
        take(consumer, 3)
        # Each attempt eats at least one error: the sixth attempt at the latest succeeds.
        mock_cluster.push_request_errors(ApiKey.OffsetCommit, *[14] * 4)
        consumer.commit_offsets()
        assert committed(consumer) == {0: 3}


@pytest.mark.mock
def test_commit_does_not_retry_other_errors(mock_cluster, mock_client):
    topic = mock_topic(mock_cluster, mock_client, 1)
    produce(topic, [b"v"], partition=0)
    group = unique_name("group").encode()
    with topic.get_simple_consumer(consumer_group=group, offsets_channel_backoff_ms=10) as consumer:
        take(consumer, 1)
        mock_cluster.push_request_errors(ApiKey.OffsetCommit, 25)  # UNKNOWN_MEMBER_ID
        with pytest.raises(UnknownMemberId):
            consumer.commit_offsets()
        consumer.commit_offsets()  # the next one goes through
        assert committed(consumer) == {0: 1}


def auto_committing_consumer(mock_cluster, mock_client, count):
    """A consumer of a new one-partition topic of ``count`` messages that auto-commits after
    every call and does not retry a failed commit."""
    topic = mock_topic(mock_cluster, mock_client, 1)
    produce(topic, [b"v%d" % i for i in range(count)], partition=0)
    return topic.get_simple_consumer(consumer_group=unique_name("group").encode(), consumer_timeout_ms=3000,
                                     auto_commit_enable=True, auto_commit_interval_ms=0,
                                     offsets_commit_max_retries=0)


@pytest.mark.mock
@pytest.mark.parametrize("call", ["consume", "consume_batch"])
def test_an_auto_commit_that_fails_loses_no_message(mock_cluster, mock_client, call):
    """An auto-commit runs after a call took its messages: when it fails, the error is raised
    by the next call and the messages taken are returned, not lost (the next commit
    commits past them)."""
    with auto_committing_consumer(mock_cluster, mock_client, 6) as consumer:
        got = [m.offset for m in take(consumer, 2)]
        mock_cluster.push_request_errors(ApiKey.OffsetCommit, 25)  # UNKNOWN_MEMBER_ID: not retried
        raised = []
        while len(got) < 6 and len(raised) < 2:
            try:
                taken = [consumer.consume()] if call == "consume" else consumer.consume_batch(2, 3000)
            except UnknownMemberId as exc:
                raised.append(exc)
                continue
            if not taken or taken[0] is None:
                break  # nothing more comes
            got += [m.offset for m in taken]
        assert len(raised) == 1
        assert got == list(range(6))
        consumer.commit_offsets()
        assert committed(consumer) == {0: 6}


@pytest.mark.mock
def test_a_failed_auto_commit_is_not_raised_after_a_commit_succeeded(mock_cluster, mock_client):
    """The kept error of a failed auto-commit is dropped by a commit that succeeds before the
    next call: its offsets are committed then, and raising it would report a stale failure."""
    with auto_committing_consumer(mock_cluster, mock_client, 4) as consumer:
        assert consumer.consume().offset == 0
        mock_cluster.push_request_errors(ApiKey.OffsetCommit, 25)  # UNKNOWN_MEMBER_ID: not retried
        assert consumer.consume().offset == 1  # its auto-commit failed: kept
        consumer.commit_offsets()  # succeeds: offset 2 committed
        assert committed(consumer) == {0: 2}
        assert consumer.consume().offset == 2  # not the stale UnknownMemberId


@pytest.mark.mock
def test_a_commit_with_every_broker_down_fails_within_its_timeout(mock_cluster):
    """No coordinator answers: commit_offsets() raises within socket_timeout_ms."""
    client = KafkaClient(hosts=mock_cluster.bootstrap_servers, socket_timeout_ms=3000)
    topic = mock_topic(mock_cluster, client, 1)
    produce(topic, [b"v%d" % i for i in range(3)], partition=0)
    consumer = topic.get_simple_consumer(consumer_group=unique_name("group").encode(), offsets_commit_max_retries=0)
    take(consumer, 3)
    mock_cluster.broker_down(-1)
    try:
        started = time.monotonic()
        with pytest.raises(KafkaTimeoutError, match="commit offsets"):
            consumer.commit_offsets()
        assert time.monotonic() - started < PATIENCE_S
    finally:
        mock_cluster.broker_up(-1)
        consumer.stop()
        client.close()


@pytest.mark.mock
@pytest.mark.slow  # seconds of group coordination or timeouts: the C pass runs it, make soak the pure one
def test_reset_offsets_while_the_leader_is_down_names_it_and_works_once_it_is_back(mock_cluster):
    """librdkafka answers a ListOffsets lookup whose leader is unreachable with a local
    UNKNOWN_PARTITION at once: reset_offsets raises LeaderNotAvailable (or, when the request
    waited on the leader, KafkaTimeoutError) within socket_timeout_ms
    (NoBrokersAvailableError with every broker down), not
    UnknownTopicOrPartition for a partition that exists."""
    client = KafkaClient(hosts=mock_cluster.bootstrap_servers, socket_timeout_ms=2000)
    name = unique_name("topic")
    mock_cluster.create_topic(name, 1)
    mock_cluster.set_partition_leader(name, 0, 2)
    topic = client.topics[name]
    produce(topic, [b"v%d" % i for i in range(3)], partition=0)
    consumer = topic.get_simple_consumer(consumer_timeout_ms=PATIENCE_S * 1000)
    try:
        assert [m.value for m in take(consumer, 3)] == [b"v0", b"v1", b"v2"]
        mock_cluster.broker_down(2)
        with pytest.raises((LeaderNotAvailable, KafkaTimeoutError), match="offsets for times"):
            consumer.reset_offsets([(0, OffsetType.EARLIEST)])
        mock_cluster.broker_down(-1)
        with pytest.raises((NoBrokersAvailableError, KafkaTimeoutError)):
            consumer.reset_offsets([(0, OffsetType.EARLIEST)])
        mock_cluster.broker_up(-1)
        consumer.reset_offsets([(0, OffsetType.EARLIEST)])
        assert [m.value for m in take(consumer, 3)] == [b"v0", b"v1", b"v2"]
    finally:
        mock_cluster.broker_up(-1)
        consumer.stop()
        client.close()


@pytest.mark.mock
@pytest.mark.slow  # seconds of group coordination or timeouts: the C pass runs it, make soak the pure one
def test_fetch_offsets_waits_socket_timeout_ms_for_a_slow_coordinator(mock_cluster):
    """fetch_offsets() is bounded by socket_timeout_ms, as commit_offsets() is, not by a
    fixed 10 s: a cluster slower than that but within the timeout answers."""
    client = KafkaClient(hosts=mock_cluster.bootstrap_servers, socket_timeout_ms=60000)
    topic = mock_topic(mock_cluster, client, 1)
    group = unique_name("group").encode()
    consumer = topic.get_simple_consumer(consumer_group=group, auto_start=False)
    for broker_id in range(1, mock_cluster.num_brokers + 1):
        mock_cluster.set_broker_rtt(broker_id, 3000)  # a new handle's requests take 12 s and more in all
    try:
        assert consumer.fetch_offsets() == [(0, (-1, b"", 0))]
    finally:
        client.close()


@pytest.mark.kafka
@pytest.mark.slow  # a broker of its own, hung for socket_timeout_ms: the C pass runs it, make soak the pure one
def test_stop_with_a_hung_broker_raises_the_commit_timeout_and_returns():
    """A broker that hangs (SIGSTOP: its connections stay open, nothing answers): stop()'s
    commit raises KafkaTimeoutError after socket_timeout_ms and the consumer is closed. It
    waited in rd_kafka_consumer_close for as long as the broker hung, for a coordinator its
    timed-out commit still waited on, though a SimpleConsumer has no group to leave."""
    import signal
    from pyrdk.testing import TansuBroker
    broker = TansuBroker().start()
    client = None
    try:
        client = KafkaClient(hosts=broker.bootstrap_servers, socket_timeout_ms=2000)
        topic = make_topic(client, unique_name(), 1)
        produce(topic, [b"v0", b"v1"], partition=0)
        consumer = topic.get_simple_consumer(consumer_group=unique_name("group").encode(), auto_commit_enable=True,
                                             auto_commit_interval_ms=600000, consumer_timeout_ms=PATIENCE_S * 1000)
        assert len(take(consumer, 2)) == 2
        os.kill(broker.pid, signal.SIGSTOP)
        thread, box = in_thread(consumer.stop)
        thread.join(PATIENCE_S)
        assert not thread.is_alive(), "stop() still waits on the hung broker"
        assert isinstance(box.get("error"), KafkaTimeoutError), box
        assert consumer._handle.closed
    finally:
        os.kill(broker.pid, signal.SIGCONT)
        if client is not None:
            client.close()
        broker.stop()


@pytest.mark.mock
def test_a_with_blocks_own_exception_stands_when_stop_fails_too(mock_cluster, mock_client):
    topic = mock_topic(mock_cluster, mock_client, 1)
    produce(topic, [b"v%d" % i for i in range(3)], partition=0)
    consumer = topic.get_simple_consumer(consumer_group=unique_name("group").encode(), auto_commit_enable=True,
                                         auto_commit_interval_ms=600000, offsets_commit_max_retries=0)
    take(consumer, 3)
    mock_cluster.push_request_errors(ApiKey.OffsetCommit, 25)  # the commit at stop() fails
    with pytest.raises(ValueError, match="the block's own"):
        with consumer:
            raise ValueError("the block's own")
    assert not consumer._running


@pytest.mark.mock
@pytest.mark.parametrize("timeout_ms", [0, 1])
def test_a_consumer_timeout_of_zero_still_takes_what_is_ready(mock_cluster, mock_client, timeout_ms):
    topic = mock_topic(mock_cluster, mock_client, 1)
    produce(topic, [b"v%d" % i for i in range(10)], partition=0)
    with topic.get_simple_consumer(consumer_timeout_ms=timeout_ms, auto_offset_reset=OffsetType.EARLIEST) as consumer:
        got = []
        deadline = time.monotonic() + PATIENCE_S
        while len(got) < 10 and time.monotonic() < deadline:
            got.extend(m.value for m in consumer)  # each pass ends at the first empty fetch
        assert got == [b"v%d" % i for i in range(10)]


@pytest.mark.kafka
def test_consumed_and_produced_messages_pickle_without_the_clients_live_objects(topic):
    """A program hands messages to other processes (multiprocessing) by pickling them: the
    record's fields travel, the client's Partition and a producer's queue (locks) do not."""
    import pickle
    produced = produce(topic, [b"a", b"b"], partition=2, partition_key=b"k", headers=[("h", b"1")])
    consumer = topic.get_simple_consumer(consumer_timeout_ms=PATIENCE_S * 1000)
    try:
        consumed = [consumer.consume() for _ in range(2)]
    finally:
        consumer.stop()
    assert all(m.partition is topic.partitions[2] for m in consumed)
    for msg in consumed + produced:
        copy = pickle.loads(pickle.dumps(msg))
        fields = ("value", "partition_key", "partition_id", "offset", "timestamp", "headers", "topic")
        assert [getattr(copy, f) for f in fields] == [getattr(msg, f) for f in fields]
        assert copy.partition is None and copy.delivery_report_q is None
    assert [(m.value, m.partition_id, m.offset) for m in consumed] == [(b"a", 2, 0), (b"b", 2, 1)]


@pytest.mark.kafka
def test_consumed_and_produced_messages_have_pykafkas_protocol_version_1(topic):
    """pykafka gives every message read from or produced to a broker of 0.10 or later
    ``protocol_version`` 1 (a message with a timestamp); programs read it."""
    produced = produce(topic, [b"a"], partition=0)
    consumer = topic.get_simple_consumer(consumer_timeout_ms=PATIENCE_S * 1000)
    try:
        consumed = consumer.consume()
    finally:
        consumer.stop()
    assert consumed.value == b"a" and consumed.timestamp > 0
    assert (consumed.protocol_version, produced[0].protocol_version) == (1, 1)


def test_offsets_are_reset_after_the_client_is_closed(kafka_hosts, topic_name):
    """A consumer made before ``KafkaClient.close()`` goes on: its ListOffsets lookups go
    through its own handle."""
    client = KafkaClient(hosts=kafka_hosts)
    topic = make_topic(client, topic_name, 1)
    with topic.get_sync_producer() as producer:
        producer.produce(b"m0")
    consumer = topic.get_simple_consumer(consumer_timeout_ms=5000)
    try:
        client.close()
        consumer.reset_offsets([(0, OffsetType.LATEST)])
        assert consumer.held_offsets == {0: 0}
        consumer.seek(0, OffsetType.EARLIEST)
        assert consumer.consume().value == b"m0"
    finally:
        consumer.stop()


@pytest.mark.mock
def test_stop_after_a_commit_no_coordinator_took_waits_no_session(mock_cluster):
    """librdkafka holds a commit that finds no coordinator for session.timeout.ms (45 s by
    default), and rd_kafka_consumer_close waits for it: a SimpleConsumer, which joins no
    group, has its session.timeout.ms at socket_timeout_ms, so that the commit ends with the
    wait for it, and stop() right after does not wait for the session."""
    client = KafkaClient(hosts=mock_cluster.bootstrap_servers, socket_timeout_ms=1000)
    topic = mock_topic(mock_cluster, client)
    produce(topic, [b"a", b"b"])
    consumer = topic.get_simple_consumer(consumer_group=unique_name("group").encode(), consumer_timeout_ms=100)
    stopper = None
    try:
        assert consumer.consume() is not None
        mock_cluster.broker_down(-1)
        while consumer._handle.last_error is None:  # the coordinator is gone: the commit waits for one
            try:
                consumer.consume()
            except KafkaException:
                pass
        with pytest.raises(KafkaTimeoutError):
            consumer.commit_offsets()
        stopper = threading.Thread(target=consumer.stop, daemon=True)
        stopper.start()
        stopper.join(20)  # well under the default session of 45 s
        assert not stopper.is_alive(), "stop() waited for librdkafka's session.timeout.ms"
    finally:
        if stopper is None:
            consumer.stop()
        client.close()


@pytest.mark.mock
@pytest.mark.parametrize("kind", ["simple", "managed"])
@pytest.mark.parametrize("callback", [False, True])
def test_a_dropped_consumer_with_statistics_is_collected_and_its_handle_released(mock_cluster, mock_client, kind,
                                                                                 callback):
    """With statistics on, the callbacks' registry (alive until the handle is closed) holds
    the handle weakly: a consumer let go of without stop() is collected with its handle (whose
    __del__ destroys it), its stats_callback a method of the object holding it or not."""
    import weakref
    topic = mock_topic(mock_cluster, mock_client)

    class Owner:
        def __init__(self):
            given = {"stats_callback": self.took} if callback else {}
            self.consumer = topic.get_simple_consumer(consumer_timeout_ms=100, statistics_interval_ms=50, **given) \
                if kind == "simple" else topic.get_balanced_consumer(
                    unique_name("group"), managed=True, consumer_timeout_ms=100, statistics_interval_ms=50, **given)

        def took(self, stats):
            pass
    owner = Owner()
    assert owner.consumer.consume() is None
    refs = weakref.ref(owner.consumer), weakref.ref(owner.consumer._handle)
    del owner
    gc.collect()
    assert [ref() for ref in refs] == [None, None]


@pytest.mark.mock
@pytest.mark.parametrize("kind", ["simple", "managed"])
@pytest.mark.parametrize("how", ["consume", "iterate"])
def test_a_call_blocked_in_a_daemon_thread_ends_quietly_at_exit(kind, how):
    """A daemon thread blocked in consume() (or iterating) as the program exits: the exit
    closes the consumer under it, and the call returns None (the iteration ends), as after
    pykafka's stop(); no ConsumerStoppedException traceback from a dying thread."""
    import subprocess
    import textwrap
    program = textwrap.dedent("""
        import atexit, threading
        ended = threading.Event()
        atexit.register(ended.wait, 60)  # registered first, runs last: after pyrdk's exit hook
        from pyrdk import KafkaClient
        from pyrdk.rd.mock import MockCluster
        cluster = MockCluster(1)
        cluster.create_topic("t", 2)
        topic = KafkaClient(hosts=cluster.bootstrap_servers).topics["t"]
        consumer = topic.get_simple_consumer(consumer_timeout_ms=-1) if %(kind)r == "simple" else \\
            topic.get_balanced_consumer(b"g", managed=True, consumer_timeout_ms=-1)
        started = threading.Event()

        def run():
            try:
                started.set()
                if %(how)r == "consume":
                    print("consume returned", consumer.consume())
                else:
                    print("iterated", list(consumer))
            finally:
                ended.set()

        threading.Thread(target=run, daemon=True).start()
        started.wait()
    """) % {"kind": kind, "how": how}
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert result.stdout == ("consume returned None\n" if how == "consume" else "iterated []\n")


@pytest.mark.mock
@pytest.mark.parametrize("impl", ["c", "python"])
@pytest.mark.parametrize("kind", ["simple", "managed"])
@pytest.mark.parametrize("how", ["consume_batch", "consume_arrow"])
def test_a_batch_call_of_a_daemon_thread_at_exit_ends_quietly(how, kind, impl):
    """A daemon thread's consume_batch() (consume_arrow()) called as the exit closes the
    consumer, as a loop of them makes its next call: as consume(), it returns nothing (an
    empty list, an empty RecordBatch of the usual columns), with no ConsumerStoppedException
    traceback from a dying thread; on either core."""
    import subprocess
    import textwrap
    if how == "consume_arrow":
        pytest.importorskip("pyarrow")
    program = textwrap.dedent("""
        import atexit, threading
        ended, closed = threading.Event(), threading.Event()
        atexit.register(ended.wait, 60)  # registered first, runs last
        atexit.register(closed.set)  # runs right after pyrdk's exit hook closed the consumer
        from pyrdk import KafkaClient
        from pyrdk.rd.mock import MockCluster
        cluster = MockCluster(1)
        cluster.create_topic("t", 2)
        topic = KafkaClient(hosts=cluster.bootstrap_servers).topics["t"]
        consumer = topic.get_simple_consumer(consumer_timeout_ms=-1) if %(kind)r == "simple" else \\
            topic.get_balanced_consumer(b"g", managed=True, consumer_timeout_ms=-1)

        def run():
            try:
                closed.wait()
                got = getattr(consumer, %(how)r)(timeout_ms=-1)
                print("returned", got if isinstance(got, list) else (got.num_rows, got.schema.names))
            finally:
                ended.set()

        threading.Thread(target=run, daemon=True).start()
    """) % {"kind": kind, "how": how}
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60,
                            env=dict(os.environ, PYRDK_IMPL=impl))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    columns = ["key", "value", "topic", "partition", "offset", "timestamp", "timestamp_type"]
    assert result.stdout == ("returned []\n" if how == "consume_batch" else "returned (0, %r)\n" % columns)


@pytest.mark.mock
def test_partition_cycle_as_pykafkas(mock_cluster, mock_client):
    """pykafka's SimpleConsumer.partition_cycle: an itertools.cycle over its OwnedPartitions."""
    topic = mock_topic(mock_cluster, mock_client, 3)
    consumer = topic.get_simple_consumer(auto_start=False)
    owned = [next(consumer.partition_cycle) for _ in range(4)]
    assert [op.partition.id for op in owned] == [0, 1, 2, 0]
    assert owned[0] is owned[3] and owned[0].partition is topic.partitions[0]
    assert owned[1].last_offset_consumed == -1


@pytest.mark.mock
@pytest.mark.parametrize("kind", ["simple", "managed"])
def test_a_consumer_whose_topic_is_deleted_raises_unknown_topic_or_partition(mock_cluster, mock_client, kind):
    """As pykafka's fetch does, instead of waiting in silence for messages that cannot come:
    librdkafka reports the partitions gone (within ``topic.metadata.propagation.max.ms`` of
    its first look at the topic, once that has passed: 1 s here, 30 s by default), and fresh
    metadata confirms it."""
    topic = mock_topic(mock_cluster, mock_client, 2)
    produce(topic, [b"v%d" % i for i in range(4)])
    config = {"topic.metadata.propagation.max.ms": 1000}
    if kind == "simple":
        consumer = topic.get_simple_consumer(consumer_timeout_ms=PATIENCE_S * 1000, rdkafka_config=config)
    else:
        consumer = topic.get_balanced_consumer(unique_name("group").encode(), managed=True,
                                               consumer_timeout_ms=PATIENCE_S * 1000,
                                               auto_offset_reset=OffsetType.EARLIEST, rdkafka_config=config)
    with consumer:
        assert sorted(m.value for m in take(consumer, 4)) == [b"v0", b"v1", b"v2", b"v3"]
        mock_cluster.delete_topic(topic.name.decode())
        with pytest.raises(UnknownTopicOrPartition, match="is no longer in the cluster"):
            consumer.consume()  # waits for the error (or PATIENCE_S)


@pytest.mark.mock
def test_reset_offsets_of_many_partitions_past_the_end_checks_their_ends_in_one_lookup(mock_cluster, mock_client):
    """Positions set past the end of many partitions are confirmed against the log ends in one
    ListOffsets lookup, not one rd_kafka_query_watermark_offsets per partition in turn: over
    300 partitions of the mock cluster those took 21 s, past consumer_timeout_ms, and the
    iteration ended having returned none of the messages auto_offset_reset moved back to."""
    topic = mock_topic(mock_cluster, mock_client, partitions=300)
    with topic.get_producer(linger_ms=5) as producer:
        producer.produce_batch([b"v%d" % i for i in range(600)])
    with topic.get_simple_consumer(consumer_timeout_ms=2000, auto_offset_reset=OffsetType.EARLIEST) as consumer:
        assert len(take(consumer, 600)) == 600  # the fetch responses gave the watermarks
        handle = consumer._handle
        calls = []
        one, many = handle.query_watermark_offsets, handle.offsets_for_times

        def query_watermark_offsets(*args, **kwargs):
            calls.append("watermarks")
            return one(*args, **kwargs)

        def offsets_for_times(*args, **kwargs):
            calls.append("lookup")
            return many(*args, **kwargs)

        handle.query_watermark_offsets, handle.offsets_for_times = query_watermark_offsets, offsets_for_times
        consumer.reset_offsets([(pid, 99) for pid in topic.partitions])
        again = drain(consumer)
        assert sorted((m.partition_id, m.offset) for m in again) == \
            sorted((pid, offset) for pid in topic.partitions for offset in range(2))
        # the check's lookup, and reset_offsets()'s to EARLIEST: not one per partition
        assert "watermarks" not in calls and calls.count("lookup") <= 2
