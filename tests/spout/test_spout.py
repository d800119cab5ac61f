"""KafkaSpout, the framework-neutral core: on Tansu, over each kind of pyrdk consumer."""
import threading
import time

import pytest

from pyrdk import KafkaClient
from pyrdk.exceptions import ConsumerStoppedException
from pyrdk.spout import KafkaSpout, TupleId
from tests.fix_kafka import group_offsets, make_topic, unique_name
from tests.kafka_log import committed_records, read_partition
from tests.test_exactlyonce import run_commit_in_doubt

pytestmark = pytest.mark.kafka

PATIENCE_S = 60
GROUP = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 500, "max_poll_interval_ms": 6000}


def produce(topic, count):
    """``count`` messages ``m0``, ``m1``... (spread round robin over the partitions)."""
    with topic.get_producer(linger_ms=5) as producer:
        for i in range(count):
            producer.produce(b"m%d" % i)


def take(spout, count, patience_s=PATIENCE_S):
    """The next ``count`` tuples (bounded wait)."""
    out = []
    deadline = time.monotonic() + patience_s
    while len(out) < count:
        assert time.monotonic() < deadline, "only %d of %d tuples came" % (len(out), count)
        emitted = spout.next_tuple()
        if emitted is None:
            time.sleep(0.005)
        else:
            out.append(emitted)
    return out


def test_commits_only_the_contiguous_acked_prefix(client, topic_name, group_name):
    topic = make_topic(client, topic_name, 1)
    produce(topic, 10)
    with KafkaSpout(topic, group_name, consumer="simple", commit_interval_ms=60000) as spout:
        tuples = take(spout, 10)
        assert [t.id for t in tuples] == [TupleId(topic_name, 0, i) for i in range(10)]
        assert [t.message.value for t in tuples] == [b"m%d" % i for i in range(10)]
        for i in (0, 1, 3, 4, 9):  # out of order, with gaps
            assert spout.ack(tuples[i].id)
        assert spout.commit() == {0: 2}
        assert group_offsets(topic, group_name) == {0: 2}
        assert spout.ack(list(tuples[2].id))  # as a JSON round trip gives it back
        assert spout.commit() == {0: 5}
        assert spout.commit() == {}  # nothing moved
        for i in (5, 6, 7, 8):
            spout.ack(tuples[i].id)
        assert not spout.ack(tuples[8].id)  # twice: ignored
        assert spout.pending == 0
    assert group_offsets(topic, group_name) == {0: 10}  # close() commits
    # A new spout of the group starts after the last acked message: nothing is emitted.
    with KafkaSpout(topic, group_name, consumer="simple") as again:
        produce(topic, 1)
        assert take(again, 1)[0].id == TupleId(topic_name, 0, 10)


def test_next_tuple_from_two_threads_never_commits_past_a_tuple_not_acked(client, topic_name, group_name):
    """Two threads' next_tuple(): the first takes m0, the second m1 and tracks it before the
    first tracks m0. m0 after m1 looked like the consumer going back, and m1 (emitted) was
    dropped from tracking: acking m0 and m2 committed past m1, never acked."""
    topic = make_topic(client, topic_name, 1)
    produce(topic, 3)
    spout = KafkaSpout(topic, group_name, consumer="simple", commit_interval_ms=60000)
    try:
        consume = spout.consumer.consume
        first_taken, second_done = threading.Event(), threading.Event()

        def slow_first(*args, **kwargs):
            message = consume(*args, **kwargs)
            while message is None:
                time.sleep(0.005)
                message = consume(*args, **kwargs)
            if not first_taken.is_set():
                first_taken.set()
                second_done.wait(2)  # the second next_tuple() goes first, unless it waits its turn
            return message

        spout.consumer.consume = slow_first
        emitted = {}

        def next_tuple(name):
            emitted[name] = spout.next_tuple()
            if name == "second":
                second_done.set()

        first = threading.Thread(target=next_tuple, args=("first",))
        first.start()
        assert first_taken.wait(PATIENCE_S)
        second = threading.Thread(target=next_tuple, args=("second",))
        second.start()
        first.join(PATIENCE_S)
        second.join(PATIENCE_S)
        spout.consumer.consume = consume
        assert sorted(t.message.value for t in emitted.values()) == [b"m0", b"m1"]
        by_value = {t.message.value: t for t in emitted.values()}
        (third,) = take(spout, 1)
        assert spout.ack(by_value[b"m0"].id) and spout.ack(third.id)
        assert spout.commit() == {0: 1}  # m1 is not acked: nothing past it
        assert spout.ack(by_value[b"m1"].id)
        assert spout.commit() == {0: 3}
    finally:
        spout.close()


def test_a_failed_tuple_is_emitted_again_then_skipped_and_reported(client, topic_name, group_name):
    topic = make_topic(client, topic_name, 1)
    produce(topic, 3)
    given_up = []
    with KafkaSpout(topic, group_name, consumer="simple", max_retries=2, retry_backoff_ms=10,
                    on_give_up=lambda message, failures: given_up.append((message.offset, failures))) as spout:
        first = take(spout, 3)
        spout.ack(first[0].id)
        spout.ack(first[2].id)
        assert spout.fail(first[1].id)
        assert not spout.fail(first[1].id)  # waiting for its replay: a second fail is ignored
        again = take(spout, 1)[0]
        assert (again.id, again.failures, again.message.value) == (first[1].id, 1, b"m1")
        assert spout.fail(again.id)
        replay = take(spout, 1)[0]
        assert replay.failures == 2
        assert spout.fail(replay.id)  # the third failure: given up, skipped
        assert given_up == [(1, 3)]
        assert spout.positions() == {0: 3}
        assert spout.stats["skipped"] == 1 and spout.stats["replayed"] == 2
    assert group_offsets(topic, group_name) == {0: 3}


def test_the_last_failure_goes_to_the_dead_letter_topic(client, topic_name, group_name):
    topic = make_topic(client, topic_name, 1)
    dead = make_topic(client, topic_name + "-dead", 1)
    with topic.get_producer(linger_ms=5) as producer:
        producer.produce(b"poison", partition_key=b"k", headers=[("origin", b"test")])
    with KafkaSpout(topic, group_name, consumer="simple", max_retries=0, dead_letter_topic=dead) as spout:
        emitted = take(spout, 1)[0]
        assert spout.fail(emitted.id)
        assert spout.stats["dead_lettered"] == 1
        assert spout.positions() == {0: 1}
    consumer = dead.get_simple_consumer(consumer_timeout_ms=PATIENCE_S * 1000)
    try:
        letter = consumer.consume()
    finally:
        consumer.stop()
    assert (letter.value, letter.partition_key) == (b"poison", b"k")
    assert dict(letter.headers) == {"origin": b"test", "spout.topic": topic_name.encode(), "spout.partition": b"0",
                                    "spout.offset": b"0", "spout.failures": b"1"}
    assert group_offsets(topic, group_name) == {0: 1}


def test_max_spout_pending_and_max_uncommitted_offsets_bound_what_is_tracked(client, topic_name, group_name):
    topic = make_topic(client, topic_name, 1)
    produce(topic, 50)
    with KafkaSpout(topic, group_name, consumer="simple", max_spout_pending=5, max_uncommitted_offsets=8) as spout:
        tuples = take(spout, 5)
        for _ in range(20):
            assert spout.next_tuple() is None  # 5 in flight: nothing new
        spout.ack(tuples[1].id)  # the first one stays in flight: the prefix is stuck at 0
        tuples += take(spout, 1)
        for t in tuples[2:]:
            spout.ack(t.id)
        tuples += take(spout, 2)  # 8 tracked: 1 in flight, 5 acked behind it, 2 new
        assert (spout.pending, spout.uncommitted) == (3, 8)
        for _ in range(20):
            assert spout.next_tuple() is None  # bounded by max_uncommitted_offsets
        spout.ack(tuples[0].id)
        assert spout.commit() == {0: 6}
        assert spout.uncommitted == 2
        assert len(take(spout, 3)) == 3


def test_an_acked_prefix_that_fills_max_uncommitted_offsets_is_committed_at_once(client, topic_name, group_name):
    topic = make_topic(client, topic_name, 1)
    produce(topic, 10)
    with KafkaSpout(topic, group_name, consumer="simple", max_uncommitted_offsets=3,
                    commit_interval_ms=600000) as spout:
        tuples = take(spout, 3)
        for t in tuples:
            spout.ack(t.id)
        assert len(take(spout, 1)) == 1  # the acked three were committed, not waited on for the interval
        assert spout.uncommitted == 1 and spout.stats["commits"] == 1


def test_a_managed_member_commits_the_acked_prefix_before_its_partitions_are_revoked(
        client, topic_name, group_name):
    topic = make_topic(client, topic_name, 2)
    produce(topic, 40)
    first = KafkaSpout(topic, group_name, commit_interval_ms=60000, **GROUP)
    second = None
    try:
        tuples = take(first, 40)
        by_partition = {}
        for t in tuples:
            by_partition.setdefault(t.id.partition, []).append(t)
        for ts in by_partition.values():  # per partition: ack all but the third
            for t in ts[:2] + ts[3:]:
                first.ack(t.id)
        expected = {pid: ts[2].id.offset for pid, ts in by_partition.items()}
        second = KafkaSpout(topic, group_name, commit_interval_ms=60000, **GROUP)
        # Both members poll (as Storm calls next_tuple) until the group is split.
        deadline = time.monotonic() + PATIENCE_S
        early = []  # what the new owner emitted meanwhile
        while not (second.consumer.partitions and len(first.consumer.partitions) == 1):
            assert time.monotonic() < deadline, "the group did not rebalance"
            first.next_tuple()
            early.extend(t for t in [second.next_tuple()] if t is not None)
            time.sleep(0.005)
        assert first.stats["revoked_in_flight"] >= 2  # the unacked thirds, dropped
        committed_now = group_offsets(topic, group_name)
        assert all(committed_now[pid] == offset for pid, offset in expected.items())
        # A late ack of a revoked tuple is ignored, never committed by this member.
        moved = next(iter(second.consumer.partitions))
        assert not first.ack(by_partition[moved][2].id)
        # The new owner starts at the first unacked message of the partition it took.
        assert (early or take(second, 1))[0].id == TupleId(topic_name, moved, expected[moved])
    finally:
        for spout in (first, second):
            if spout is not None:
                spout.close()


def test_a_managed_member_held_back_longer_than_max_poll_interval_stays_in_its_group(
        client, topic_name, group_name, caplog):
    """Back-pressure pauses the partitions and polls on: the member is not dropped from the
    group (librdkafka's max.poll.interval.ms) however long the topology takes, and goes on
    from where it stopped, its unacked tuples still tracked."""
    topic = make_topic(client, topic_name, 1)
    produce(topic, 10)
    with KafkaSpout(topic, group_name, max_spout_pending=2, commit_interval_ms=60000, **GROUP) as spout:
        tuples = take(spout, 2)
        until = time.monotonic() + 2 * GROUP["max_poll_interval_ms"] / 1000.0
        while time.monotonic() < until:
            assert spout.next_tuple() is None  # held back: two in flight
            time.sleep(0.05)
        for t in tuples:
            assert spout.ack(t.id)
        for _ in range(8):
            tuples += take(spout, 1)
            assert spout.ack(tuples[-1].id)
        assert [t.id.offset for t in tuples] == list(range(10))
        assert spout.commit() == {0: 10}
    assert spout.stats["replayed"] == 0
    # librdkafka's MAXPOLL log ("... exceeded ...: leaving group"), served by the polls after it
    left = [r.getMessage() for r in caplog.records if "maximum poll interval" in r.getMessage()]
    assert left == []


@pytest.mark.zookeeper
def test_a_zookeeper_member_commits_the_acked_prefix_before_it_gives_partitions_up(
        client, topic_name, group_name, zookeeper_chroot):
    topic = make_topic(client, topic_name, 2)
    produce(topic, 20)
    options = dict(consumer="zookeeper", zookeeper_hosts=zookeeper_chroot, commit_interval_ms=60000)
    first = KafkaSpout(topic, group_name, **options)
    second = None
    try:
        tuples = take(first, 20)
        for t in tuples:
            if t.id.offset != 1:
                first.ack(t.id)
        second = KafkaSpout(topic, group_name, **options)
        deadline = time.monotonic() + PATIENCE_S
        while not (second.consumer.partitions and len(first.consumer.partitions) == 1):
            assert time.monotonic() < deadline, "the group did not rebalance"
            for spout in (first, second):
                spout.next_tuple()
            time.sleep(0.01)
        assert group_offsets(topic, group_name) == {0: 1, 1: 1}
        # The member replaces its consumer of both partitions: both unacked tuples are dropped
        # (the partition it keeps is read again from the commit).
        assert first.stats["revoked_in_flight"] == 2
        moved = next(iter(second.consumer.partitions))
        assert not first.ack(TupleId(topic_name, moved, 1))  # the partition went: ignored
    finally:
        for spout in (first, second):
            if spout is not None:
                spout.close()


def test_exactly_once_output_is_committed_with_the_offsets(client, topic_name, group_name):
    topic = make_topic(client, topic_name, 1)
    out = make_topic(client, topic_name + "-out", 1)
    produce(topic, 6)
    options = dict(consumer="simple", output_topic=out, transactional_id=unique_name("spout"),
                   commit_interval_ms=60000)
    with KafkaSpout(topic, group_name, outputs=lambda m: [m.value.upper()], **options) as spout:
        tuples = take(spout, 6)
        spout.ack(tuples[0].id, outputs=[b"first", (b"keyed", b"k")])
        for t in tuples[2:]:
            spout.ack(t.id)
        assert spout.commit() == {0: 1}
        spout.ack(tuples[1].id)
        assert spout.commit() == {0: 6}
        with pytest.raises(ValueError, match="managed"):
            KafkaSpout(topic, group_name, **dict(options, consumer="zookeeper"))
    leader = out.partitions[0].leader
    records, still_open = committed_records(read_partition(leader.host, leader.port, topic_name + "-out", 0))
    assert [(r.value, r.key) for r in records] == [(b"first", None), (b"keyed", b"k")] + [
        (b"M%d" % i, None) for i in range(1, 6)]
    assert still_open == []
    assert group_offsets(topic, group_name) == {0: 6}


def test_exactly_once_outputs_that_cannot_be_written_are_refused_at_the_ack(client, topic_name, group_name):
    topic = make_topic(client, topic_name, 1)
    out = make_topic(client, topic_name + "-out", 1)
    produce(topic, 2)
    with KafkaSpout(topic, group_name, consumer="simple", output_topic=out, transactional_id=unique_name("spout"),
                    commit_interval_ms=60000) as spout:
        first, second = take(spout, 2)
        # One value instead of a list of them, text, a triple: refused now, not at every commit.
        for bad in (b"one value", "text", ["text"], [(b"v", b"k", b"x")], 5):
            with pytest.raises(TypeError, match="outputs"):
                spout.ack(first.id, outputs=bad)
        assert spout.pending == 2
        spout.ack(first.id, outputs=[b"first"])
        spout.ack(second.id, outputs=[(b"second", b"k")])
        assert spout.commit() == {0: 2}
    leader = out.partitions[0].leader
    records, _ = committed_records(read_partition(leader.host, leader.port, topic_name + "-out", 0))
    assert [(r.value, r.key) for r in records] == [(b"first", None), (b"second", b"k")]


def test_an_exactly_once_output_that_fails_every_commit_is_raised_not_retried_forever(
        client, topic_name, group_name):
    """An acked output larger than max_request_size aborts each transaction that writes it:
    commit() raises it, where it logged a warning and tried the same commit again at every
    commit, forever, its offsets never committed."""
    from pyrdk.exceptions import MessageSizeTooLarge
    topic = make_topic(client, topic_name, 1)
    out = make_topic(client, topic_name + "-out", 1)
    produce(topic, 2)
    with KafkaSpout(topic, group_name, consumer="simple", output_topic=out, transactional_id=unique_name("spout"),
                    commit_interval_ms=60000, producer_kwargs={"max_request_size": 2000}) as spout:
        first, second = take(spout, 2)
        spout.ack(first.id, outputs=[b"x" * 5000])
        with pytest.raises(MessageSizeTooLarge, match="larger than max_request_size=2000"):
            spout.commit()
        with pytest.raises(MessageSizeTooLarge):  # the outputs are kept: no commit past them
            spout.close()
    assert group_offsets(topic, group_name) == {0: 0}  # nothing committed past the first tuple


def test_a_with_blocks_own_exception_stands_when_close_fails_too(client, topic_name, group_name, caplog):
    """The block's exception is what the program must see; close()'s failure (here its last
    commit's, an output too large) is logged, as a consumer's or producer's ``with`` does.
    It replaced the block's exception, which then only showed as its ``__context__``."""
    import logging
    from pyrdk.exceptions import MessageSizeTooLarge
    topic = make_topic(client, topic_name, 1)
    out = make_topic(client, topic_name + "-out", 1)
    produce(topic, 1)
    with caplog.at_level(logging.ERROR, logger="pyrdk.common"):
        with pytest.raises(ValueError, match="the block's own"):
            with KafkaSpout(topic, group_name, consumer="simple", output_topic=out,
                            transactional_id=unique_name("spout"), commit_interval_ms=60000,
                            producer_kwargs={"max_request_size": 2000}) as spout:
                first, = take(spout, 1)
                spout.ack(first.id, outputs=[b"x" * 5000])
                raise ValueError("the block's own")
    assert any(isinstance(r.exc_info[1], MessageSizeTooLarge) for r in caplog.records if r.exc_info)
    with pytest.raises(ConsumerStoppedException):  # closed all the same
        spout.next_tuple()


# In a child process: librdkafka may abort it (see run_commit_in_doubt).
_COMMIT_IN_DOUBT = """
from pyrdk import KafkaClient
from pyrdk.rd.mock import MockCluster
from pyrdk.spout import KafkaSpout
from tests.spout.test_spout import produce, take
from tests.test_exactlyonce import slow_commits
mock_cluster = MockCluster(3)
for name in ("in", "out"):
    mock_cluster.create_topic(name, 1, 1)
    mock_cluster.set_partition_leader(name, 0, 2)
mock_cluster.set_coordinator("transaction", "spout", 1)  # the one made slow
client = KafkaClient(hosts=mock_cluster.bootstrap_servers, socket_timeout_ms=5000)
produce(client.topics["in"], 5)
spout = KafkaSpout(client.topics["in"], b"spouts", consumer="simple", output_topic=client.topics["out"],
                   transactional_id="spout", outputs=lambda m: [m.value.upper()], commit_interval_ms=60000,
                   producer_kwargs={"transaction_timeout_ms": 3000, "linger_ms": 5,
                                    "rdkafka_config": {"socket.timeout.ms": 3000}})
try:
    for emitted in take(spout, 5):
        spout.ack(emitted.id)
    slow_commits(spout._producer, mock_cluster, 1, 4000)
    print(spout.commit())  # timed out: it may yet commit
    mock_cluster.set_broker_rtt(1, 0)
    print(spout.commit())  # finished, not written again
    print(spout.commit())
finally:
    spout.close()
consumer = client.topics["out"].get_simple_consumer(consumer_timeout_ms=2000)
print(sorted(m.value for m in consumer))
consumer.stop()
client.close()
mock_cluster.close()
"""


@pytest.mark.mock
def test_an_exactly_once_commit_that_timed_out_is_finished_by_the_next_commit():
    assert run_commit_in_doubt(_COMMIT_IN_DOUBT) == "{}\n{0: 5}\n{}\n%r\n" % [b"M%d" % i for i in range(5)]


@pytest.mark.mock
@pytest.mark.slow  # two waits of the dead-letter producer's pending_timeout_ms (5 s)
def test_a_dead_letter_the_broker_never_took_fails_no_close_and_its_tuple_is_read_again(mock_cluster):
    """fail() gives up waiting for the dead letter (its leader is down) and keeps the tuple to
    emit again, uncommitted; close() then logs the letter librdkafka drops, instead of raising
    ProduceFailureError for a tuple nothing lost."""
    for name, leader in (("in", 1), ("dead", 3)):
        mock_cluster.create_topic(name, 1, 1)
        mock_cluster.set_partition_leader(name, 0, leader)
    client = KafkaClient(hosts=mock_cluster.bootstrap_servers, socket_timeout_ms=5000)
    try:
        produce(client.topics["in"], 3)
        spout = KafkaSpout(client.topics["in"], b"g", consumer="simple", max_retries=0,
                           dead_letter_topic=client.topics["dead"])
        emitted = take(spout, 3)
        assert spout.ack(emitted[1].id) and spout.ack(emitted[2].id)
        mock_cluster.broker_down(3)
        assert spout.fail(emitted[0].id)
        assert spout.stats["dead_lettered"] == 0
        spout.close()
        assert group_offsets(client.topics["in"], b"g") == {0: 0}  # read again from the failed tuple
    finally:
        client.close()


@pytest.mark.mock
@pytest.mark.slow  # socket_timeout_ms for the last commit, then the close: the C pass runs it, make soak the pure one
def test_close_with_a_hung_group_coordinator_returns(mock_cluster):
    """The group's coordinator hangs (its connection open, nothing answered): close()'s
    commit is logged as failed after socket_timeout_ms, and the managed consumer's stop()
    then waited in rd_kafka_consumer_close for that commit as long as the coordinator hung."""
    mock_cluster.create_topic("in", 1, 1)
    mock_cluster.set_coordinator("group", "g", 1)
    client = KafkaClient(hosts=mock_cluster.bootstrap_servers, socket_timeout_ms=1000)
    closer = None
    try:
        produce(client.topics["in"], 3)
        spout = KafkaSpout(client.topics["in"], b"g", session_timeout_ms=3000, heartbeat_interval_ms=300,
                           max_poll_interval_ms=3000)
        for emitted in take(spout, 3):
            spout.ack(emitted.id)
        mock_cluster.set_broker_rtt(1, 600000)
        closer = threading.Thread(target=spout.close, daemon=True)
        closer.start()
        closer.join(PATIENCE_S)
        assert not closer.is_alive(), "close() waits on the hung coordinator"
    finally:
        mock_cluster.set_broker_rtt(1, 0)
        if closer is None:
            spout.close()
        client.close()


def test_bad_arguments_are_refused(client, topic_name, group_name):
    topic = make_topic(client, topic_name, 1)
    with pytest.raises(ValueError, match="consumer"):
        KafkaSpout(topic, group_name, consumer="kazoo")
    with pytest.raises(ValueError, match="auto_commit_enable"):
        KafkaSpout(topic, group_name, consumer="simple", auto_commit_enable=True)
    with pytest.raises(ValueError, match="output_topic and transactional_id"):
        KafkaSpout(topic, group_name, consumer="simple", transactional_id="x")
    with pytest.raises(TypeError, match="max_spout_pending"):
        KafkaSpout(topic, group_name, consumer="simple", max_spout_pending=0)
    for no_group in (None, b"", ""):  # it committed nothing, then stalled at max_uncommitted_offsets
        with pytest.raises(ValueError, match="the spout needs a consumer_group"):
            KafkaSpout(topic, no_group, consumer="simple")
    for name, bad in (("topic", topic_name), ("topic", None), ("dead_letter_topic", topic_name),
                      ("output_topic", topic_name)):
        args = dict(topic=topic, dead_letter_topic=None, output_topic=None, transactional_id="x")
        args[name] = bad
        if name != "output_topic":
            args.pop("transactional_id")
        with pytest.raises(TypeError, match="%s must be a pyrdk Topic" % name):
            KafkaSpout(consumer_group=group_name, consumer="simple", **args)
    spout = KafkaSpout(topic, group_name, consumer="simple")
    with pytest.raises(TypeError, match="tuple id"):
        spout.ack("not an id")
    with pytest.raises(TypeError, match="tuple id"):
        spout.fail("abc")  # three characters, which would unpack as one
    for bad in ([topic_name, [0], 0], [topic_name, 0, {}], (topic_name, 0, "0"), (topic_name, None, 0)):
        with pytest.raises(TypeError, match="tuple id"):  # JSON from a multi-lang process can hold anything
            spout.ack(bad)
        with pytest.raises(TypeError, match="tuple id"):
            spout.fail(bad)
    with pytest.raises(ValueError, match="exactly-once"):
        spout.ack((topic_name, 0, 0), outputs=[b"x"])
    assert not spout.ack(("another-topic", 0, 0))
    spout.close()
    for call in (spout.next_tuple, spout.commit, lambda: spout.ack((topic_name, 0, 0))):
        with pytest.raises(ConsumerStoppedException, match="spout is closed: make a new one"):
            call()
    spout.close()  # a second close does nothing


def test_a_cooperative_member_assigned_a_partition_never_committed_commits_nothing_past_unacked_tuples(
        client, topic_name, group_name):
    """With cooperative-sticky the spout keeps its partition when another member leaves; the
    partition it gains has no committed offset, so its start offset is committed -- that one
    only: the kept partition's position (past tuples emitted and not acked) is not committed."""
    group = dict(GROUP, membership_protocol="cooperative-sticky")
    topic = make_topic(client, topic_name, 2)
    other = topic.get_balanced_consumer(group_name, managed=True, reset_offset_on_fetch=False, **group)
    spout = None
    try:
        deadline = time.monotonic() + PATIENCE_S
        while not other.partitions:
            assert time.monotonic() < deadline
            other.consume(block=False)
            time.sleep(0.02)
        spout = KafkaSpout(topic, group_name, consumer="managed", commit_interval_ms=600000, **group)
        while not (spout.consumer.partitions and other.partitions
                   and len(spout.consumer.partitions) + len(other.partitions) == 2):
            assert time.monotonic() < deadline, "no assignment of one partition each"
            other.consume(block=False)
            spout.next_tuple()
            time.sleep(0.02)
        mine = sorted(spout.consumer.partitions)[0]
        produce(topic, 20)  # ten in each partition
        tuples = take(spout, 10)
        assert {t.id.partition for t in tuples} == {mine}
        other.stop()  # the spout gets the other partition, never committed
        while len(spout.consumer.partitions) < 2 or group_offsets(topic, group_name).get(1 - mine, -1) < 0:
            assert time.monotonic() < deadline, "the spout did not take the other partition"
            spout.next_tuple()
            time.sleep(0.02)
        assert spout.stats["acked"] == 0
        assert group_offsets(topic, group_name)[mine] <= 0  # not past its first tuple, never acked
    finally:
        other.stop()
        if spout is not None:
            spout.close()


@pytest.mark.mock
def test_an_exactly_once_commit_during_an_outage_is_tried_again_not_raised_from_ack(mock_cluster):
    """Every broker down past socket_timeout_ms: the transaction's produce raises
    NoBrokersAvailableError, neither retriable nor txn_requires_abort, but no error of its
    outputs: the commit is logged and tried again, where ack() raised it (and a Storm task
    ended on it)."""
    for name in ("in", "out"):
        mock_cluster.create_topic(name, 1, 1)
    client = KafkaClient(hosts=mock_cluster.bootstrap_servers, socket_timeout_ms=2000)
    try:
        produce(client.topics["in"], 2)
        spout = KafkaSpout(client.topics["in"], b"g", consumer="simple", output_topic=client.topics["out"],
                           transactional_id="outage", commit_interval_ms=100,
                           producer_kwargs={"transaction_timeout_ms": 3000, "linger_ms": 5})
        first, second = take(spout, 2)
        assert spout.ack(first.id, outputs=[b"o0"]) and spout.commit() == {0: 1}
        for broker in (1, 2, 3):
            mock_cluster.broker_down(broker)
        time.sleep(2.5)  # past socket_timeout_ms
        assert spout.ack(second.id, outputs=[b"o1"])
        assert spout.commit() == {}  # logged, tried again later
    finally:
        client.close()
