"""ManagedBalancedConsumer: the broker group protocol, on Tansu and librdkafka's mock cluster.

Fleet tests run each member as a real process (tests/fleet.py) and sample every member's
assignment; a partition seen with two owners in one consistent snapshot is a violation.
Tansu holds a second JoinGroup until the rebalance timeout (``max.poll.interval.ms``), so
members here use short session and poll timeouts.
"""
import json
import socket
import threading
import time

import pytest

from pyrdk import KafkaClient
from pyrdk.common import OffsetType
from pyrdk.exceptions import ConfigurationError, UnicodeException
from pyrdk.managedbalancedconsumer import ManagedBalancedConsumer
from pyrdk.membershipprotocol import CooperativeStickyProtocol, RoundRobinProtocol
from pyrdk.partitioners import hashing_partitioner
from pyrdk.rd.mock import ApiKey
from tests.fix_kafka import make_topic, tansu_gap, unique_name
from tests.fleet import PATIENCE_S, Fleet
from tests.rd import util
from tests.test_simpleconsumer import in_thread, stop_cut_short

# Short timeouts so that crashes and rejoins settle in seconds (see the module docstring).
GROUP = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 500, "max_poll_interval_ms": 8000}
MANAGED = dict(GROUP, managed=True)
# Shorter still on the mock cluster, which keeps a member that lost its id until it times out.
FAST = {"session_timeout_ms": 3000, "heartbeat_interval_ms": 300, "max_poll_interval_ms": 3000}

UNKNOWN_MEMBER_ID = 25
REBALANCE_IN_PROGRESS = 27


# -- helpers ---------------------------------------------------------------------------------------

def produce_keyed(topic, count, start=0):
    """``count`` keyed messages; returns ``{(partition, offset): key}`` as delivered."""
    with topic.get_producer(linger_ms=5, partitioner=hashing_partitioner) as producer:
        messages = [producer.produce(b"v%d" % i, partition_key=b"k%d" % i)
                    for i in range(start, start + count)]
    assert all(m.offset >= 0 for m in messages)
    return {(m.partition_id, m.offset): m.partition_key.decode() for m in messages}


def mock_member(mock_cluster, mock_client, partitions, messages):
    """A topic of ``partitions`` on the mock cluster holding ``messages`` keyed messages, and
    a managed member (``FAST`` timeouts) of a group of its own on it: ``(topic, what
    produce_keyed returned, member)``."""
    name = unique_name("topic")
    mock_cluster.create_topic(name, partitions)
    topic = mock_client.topics[name]
    produced = produce_keyed(topic, messages)
    consumer = topic.get_balanced_consumer(b"g-" + name.encode(), managed=True,
                                           consumer_timeout_ms=PATIENCE_S * 1000, **FAST)
    return topic, produced, consumer


def assert_all_processed(fleet, produced):
    processed = fleet.distinct_processed()
    missing = sorted(set(produced) - set(processed))
    assert not missing, "%d messages never processed, e.g. %s" % (len(missing), missing[:5])
    wrong = [pos for pos in produced if processed[pos] != produced[pos]]
    assert not wrong, "messages processed with the wrong key: %s" % wrong[:5]


def holds(name, owners):
    return sorted(pid for pid, names in owners.items() if name in names)


@pytest.fixture
def fleet_on(kafka_hosts, tmp_path):
    """``fleet_on(topic_name, **options)``: a Fleet on the session broker, closed (every
    member killed by pid) at the end of the test."""
    fleets = []

    def make(topic_name, kwargs=MANAGED, hosts=kafka_hosts, **options):
        fleet = Fleet(hosts, topic_name, unique_name("group"), kwargs,
                      workdir=str(tmp_path / ("fleet%d" % len(fleets))), **options)
        fleets.append(fleet)
        return fleet

    yield make
    for fleet in fleets:
        fleet.close()


@pytest.fixture
def mock_client(mock_cluster):
    c = KafkaClient(hosts=mock_cluster.bootstrap_servers, socket_timeout_ms=5000)
    yield c
    c.close()


# -- fleets of processes on Tansu ------------------------------------------------------------------

@pytest.mark.kafka
@pytest.mark.slow
def test_fleet_processes_every_message_with_one_owner_per_partition_and_loses_none_on_restart(
        client, topic_name, fleet_on):
    topic = make_topic(client, topic_name, 6)
    produced = produce_keyed(topic, 30000)
    fleet = fleet_on(topic_name, commit_every=100, listener=True, delay_ms=1)
    fleet.start(3)
    fleet.wait_balanced(range(6))
    fleet.wait_processed(10000)
    for member in fleet.live():  # the whole fleet crashes mid-stream...
        fleet.kill(member)
    before_crash = len(fleet.distinct_processed())
    fleet.start(3)  # ...and comes back: it resumes from the commits
    fleet.wait_processed(len(produced))
    fleet.wait_balanced(range(6))
    fleet.stop_all()
    assert_all_processed(fleet, produced)
    assert before_crash < len(produced)  # the crash came mid-stream
    assert fleet.samples > 0 and fleet.violations == []


@pytest.mark.kafka
@pytest.mark.slow
def test_kill_9_of_a_member_hands_its_partitions_to_survivors_and_a_joiner_takes_a_share(
        client, topic_name, fleet_on):
    topic = make_topic(client, topic_name, 6)
    produced = produce_keyed(topic, 3000)
    fleet = fleet_on(topic_name)
    first, second, third = fleet.start(3)
    owners = fleet.wait_balanced(range(6))
    victim = holds(first.name, owners)
    assert victim
    fleet.kill(first)
    owners = fleet.wait_balanced(range(6), members=[second, third])
    assert set(holds(second.name, owners)) | set(holds(third.name, owners)) == set(range(6))
    joiner = fleet.start_member()
    fleet.wait_until(lambda o: holds(joiner.name, o), "the new member to take a share")
    owners = fleet.wait_balanced(range(6), members=[second, third, joiner])
    assert all(holds(m.name, owners) for m in (second, third, joiner))
    fleet.wait_processed(len(produced))
    assert_all_processed(fleet, produced)
    assert fleet.violations == []


@pytest.mark.kafka
@pytest.mark.slow
def test_a_member_beyond_the_partition_count_idles_then_takes_over(client, topic_name, fleet_on):
    topic = make_topic(client, topic_name, 2)
    produced = produce_keyed(topic, 200)
    # The listener publishes a revocation before the member rejoins, so no snapshot can catch
    # a partition already given to another member still listed by the one that let it go.
    fleet = fleet_on(topic_name, kwargs=dict(MANAGED, membership_protocol="RoundRobinProtocol"),
                     listener=True)
    members = fleet.start(3)
    owners = fleet.wait_balanced(range(2))
    idle = [m for m in members if not holds(m.name, owners)]
    assert len(idle) == 1
    leaving = next(m for m in members if holds(m.name, owners))
    fleet.stop(leaving)
    fleet.wait_until(lambda o: holds(idle[0].name, o), "the idle member to take over")
    fleet.wait_balanced(range(2))
    fleet.wait_processed(len(produced))
    assert_all_processed(fleet, produced)
    assert fleet.violations == []


@pytest.mark.kafka
@pytest.mark.slow
def test_cooperative_sticky_revokes_only_the_partitions_that_move(client, topic_name, fleet_on):
    make_topic(client, topic_name, 6)
    fleet = fleet_on(topic_name, kwargs=dict(MANAGED, membership_protocol="CooperativeStickyProtocol"),
                     listener=True)
    first, second = fleet.start(2)
    before = fleet.wait_balanced(range(6))
    third = fleet.start_member()
    after = fleet.wait_until(lambda o: len(holds(third.name, o)) == 2 and all(len(v) == 1 for v in o.values())
                             and set(o) == set(range(6)), "the third member to get two partitions")
    for member in (first, second):
        kept = set(holds(member.name, before)) & set(holds(member.name, after))
        revoked = {p for event, parts in member.events() if event == "revoked" for p in parts}
        assert kept, "%s kept none of its partitions" % member.name
        assert revoked == set(holds(member.name, before)) - kept, \
            "%s revoked %s though it kept %s" % (member.name, sorted(revoked), sorted(kept))
    assert fleet.violations == []


# -- static membership ------------------------------------------------------------------------------

def settled(owners, members, partitions):
    """Every partition has one owner, and each member's listener has seen what it holds."""
    if set(owners) != set(partitions) or any(len(names) != 1 for names in owners.values()):
        return False
    for member in members:
        events = member.events()
        if not events or events[-1] != ("assigned", holds(member.name, owners)) or not events[-1][1]:
            return False
    return True


@pytest.mark.kafka
@pytest.mark.slow
def test_static_member_restarted_within_the_session_timeout_keeps_its_partitions(
        client, topic_name, fleet_on):
    make_topic(client, topic_name, 4)
    fleet = fleet_on(topic_name, listener=True)
    # The first member leads the group; the second, a follower, crashes (kill -9) and comes
    # back with its group.instance.id within the session timeout.
    leader = fleet.start_member("leader", group_instance_id="leader")
    fleet.wait_until(lambda o: settled(o, [leader], range(4)), "the leader to hold everything")
    follower = fleet.start_member("follower", group_instance_id="follower")
    owners = fleet.wait_until(lambda o: settled(o, [leader, follower], range(4)), "two members to settle")
    held = holds("follower", owners)
    member_id = follower.state()["member_id"]
    assert member_id
    fleet.kill(follower)
    back = fleet.start_member("follower", group_instance_id="follower")
    owners = fleet.wait_until(lambda o: settled(o, [leader, back], range(4)), "the follower to come back")
    assert holds("follower", owners) == held
    assert back.state()["member_id"] == member_id  # the broker knew the instance
    assert fleet.violations == []
    # Not asserted: that the leader sees no rebalance meanwhile. Tansu hands the member id
    # back but rebalances the group in about half of the runs; librdkafka's mock cluster
    # has no static membership.


# -- one consumer in this process -----------------------------------------------------------------

class Recorder:
    def __init__(self):
        self.events = []

    def on_partitions_revoked(self, partitions):
        self.events.append(("revoked", sorted(p.id for p in partitions)))

    def on_partitions_assigned(self, partitions):
        self.events.append(("assigned", sorted(p.id for p in partitions)))


def consume_n(consumer, n):
    out = []
    for message in consumer:
        out.append(message)
        if len(out) == n:
            break
    return out


@pytest.mark.kafka
@pytest.mark.slow  # seconds of group coordination or timeouts: the C pass runs it, make soak the pure one
def test_consume_commit_and_resume_from_the_commit(client, topic_name, group_name):
    topic = make_topic(client, topic_name, 2)
    produced = produce_keyed(topic, 20)
    listener = Recorder()
    with topic.get_balanced_consumer(group_name, managed=True, consumer_timeout_ms=PATIENCE_S * 1000,
                                     listener=listener, **GROUP) as consumer:
        assert isinstance(consumer, ManagedBalancedConsumer)
        first = consume_n(consumer, 10)
        assert sorted(consumer.partitions) == [0, 1]
        assert consumer.member_id
        consumer.commit_offsets()
        held = consumer.held_offsets
        assert all(held[p] == max(m.offset for m in first if m.partition_id == p)
                   for p in {m.partition_id for m in first})
    assert listener.events == [("assigned", [0, 1]), ("revoked", [0, 1])]
    with topic.get_balanced_consumer(group_name, managed=True, consumer_timeout_ms=PATIENCE_S * 1000,
                                     **GROUP) as consumer:
        rest = consumer.consume_batch(10, PATIENCE_S * 1000)
        while len(rest) < 10:
            rest.extend(consumer.consume_batch(10 - len(rest), PATIENCE_S * 1000))
    seen = [(m.partition_id, m.offset) for m in first + rest]
    assert sorted(seen) == sorted(produced)  # each once: the second member began at the commit



@pytest.mark.kafka
def test_held_offsets_is_none_before_the_first_assignment(client, topic_name, group_name):
    """As pykafka's (and the ZooKeeper consumer's): None until the group assigns partitions,
    then a dict; a program waits for its assignment on ``held_offsets is None``."""
    topic = make_topic(client, topic_name, 2)
    produce_keyed(topic, 4)
    consumer = topic.get_balanced_consumer(group_name, managed=True, auto_start=False,
                                           consumer_timeout_ms=PATIENCE_S * 1000, **GROUP)
    try:
        assert consumer.held_offsets is None
        consumer.start()
        first = consume_n(consumer, 1)
        held = consumer.held_offsets
        assert sorted(held) == [0, 1] and held[first[0].partition_id] == first[0].offset
    finally:
        consumer.stop()
    assert consumer.held_offsets == held  # after stop(): those held when it stopped
    consumer.start()  # a new membership: None again until its assignment (joining takes round trips)
    try:
        assert consumer.held_offsets is None
        consume_n(consumer, 1)
        assert sorted(consumer.held_offsets) == [0, 1]
    finally:
        consumer.stop()


@pytest.mark.kafka
def test_a_dropped_consumer_is_collected_and_its_handle_released(client, topic_name, group_name):
    """pykafka's consumers stop when collected: one the program lets go of without stop()
    must not be kept alive, with its librdkafka handle and threads, by its rebalance
    callback."""
    import gc
    import weakref
    topic = make_topic(client, topic_name, 2)
    produce_keyed(topic, 4)
    consumer = topic.get_balanced_consumer(group_name, managed=True, consumer_timeout_ms=PATIENCE_S * 1000,
                                           auto_offset_reset=OffsetType.EARLIEST, **GROUP)
    assert consumer.consume() is not None
    refs = weakref.ref(consumer), weakref.ref(consumer._handle)  # the handle's __del__ destroys it
    del consumer
    gc.collect()
    assert [ref() for ref in refs] == [None, None]

@pytest.mark.kafka
def test_post_rebalance_callback_sees_offsets_and_chooses_where_to_start(client, topic_name, group_name):
    topic = make_topic(client, topic_name, 1)
    produce_keyed(topic, 10)
    calls = []

    def post_rebalance(consumer, old_offsets, new_offsets):
        calls.append((old_offsets, new_offsets))
        return {0: 5}  # the last consumed: start at 6

    with topic.get_balanced_consumer(group_name, managed=True, consumer_timeout_ms=PATIENCE_S * 1000,
                                     post_rebalance_callback=post_rebalance, **GROUP) as consumer:
        assert consumer.consume().offset == 6
    assert calls == [({}, {0: OffsetType.EARLIEST})]  # pykafka's held offset before offset 0


class CommittingOnRevoke(Recorder):
    """Commits, as kafka-python's listeners do, the revoked partitions' work: offset 2 next."""
    consumer = None

    def __init__(self):
        super().__init__()
        self.failures = []

    def on_partitions_revoked(self, partitions):
        super().on_partitions_revoked(partitions)
        try:
            self.consumer.commit_offsets([(p, 2) for p in partitions])
        except Exception as exc:
            self.failures.append(exc)


@pytest.mark.kafka
@pytest.mark.slow  # seconds of group coordination or timeouts: the C pass runs it, make soak the pure one
def test_a_listener_commits_the_partitions_it_is_losing(client, topic_name, group_name):
    """on_partitions_revoked runs while the partitions are still held: a commit of them there
    is taken (it was refused as of an unknown partition), and the next owner starts after it."""
    topic = make_topic(client, topic_name, 2)
    produce_keyed(topic, 20)
    listener = CommittingOnRevoke()
    first = topic.get_balanced_consumer(group_name, managed=True, consumer_timeout_ms=200, listener=listener,
                                        auto_offset_reset=OffsetType.EARLIEST, **GROUP)
    listener.consumer = first
    second = None
    try:
        deadline = time.monotonic() + PATIENCE_S
        while first.consume() is None:
            assert time.monotonic() < deadline, "the first member got nothing"
        second = topic.get_balanced_consumer(group_name, managed=True, consumer_timeout_ms=200,
                                             auto_offset_reset=OffsetType.EARLIEST, **GROUP)
        got = None
        while got is None:
            assert time.monotonic() < deadline, "the second member got nothing"
            first.consume()
            got = second.consume()
        assert ("revoked", [0, 1]) in listener.events and listener.failures == []
        assert got.offset == 2  # where the listener's commit (taken as given, as pykafka's) said
    finally:
        first.stop()
        if second is not None:
            second.stop()


@pytest.mark.kafka
@pytest.mark.slow  # seconds of group coordination or timeouts: the C pass runs it, make soak the pure one
def test_a_listener_commits_at_stop(client, topic_name, group_name):
    """stop() tells the listener of the final revocation while the member may still commit,
    as before any other revocation: its commit is taken, and stop() raises nothing (before,
    the closing consumer refused it with ConsumerStoppedException, which stop() raised)."""
    topic = make_topic(client, topic_name, 1)
    produce_keyed(topic, 10)
    listener = CommittingOnRevoke()
    consumer = topic.get_balanced_consumer(group_name, managed=True, listener=listener, auto_commit_enable=False,
                                           auto_offset_reset=OffsetType.EARLIEST,
                                           consumer_timeout_ms=PATIENCE_S * 1000, **GROUP)
    listener.consumer = consumer
    try:
        assert consume_n(consumer, 1)[0].offset == 0
    finally:
        consumer.stop()
    assert listener.events == [("assigned", [0]), ("revoked", [0])] and listener.failures == []
    with topic.get_simple_consumer(consumer_group=group_name, partitions=[0]) as reader:
        assert [(pid, r.offset) for pid, r in reader.fetch_offsets()] == [(0, 2)]


class SlowOnRevoke(Recorder):
    """Holds the final revocation until a second stop() could have come in (``entered``)."""

    def __init__(self):
        super().__init__()
        self.entered = threading.Event()

    def on_partitions_revoked(self, partitions):
        super().on_partitions_revoked(partitions)
        if len(self.events) > 2:  # a second revocation: the other stop() came in meanwhile
            self.entered.set()
        else:
            self.entered.wait(0.5)


@pytest.mark.kafka
def test_two_threads_stopping_at_once_both_return_and_revoke_once(client, topic_name, group_name):
    """Two stop() calls at once (a signal handler's and the main loop's): the second waits for
    the first and finds the member stopped; the listener hears of one final revocation."""
    topic = make_topic(client, topic_name, 1)
    produce_keyed(topic, 3)
    listener = SlowOnRevoke()
    consumer = topic.get_balanced_consumer(group_name, managed=True, listener=listener,
                                           auto_offset_reset=OffsetType.EARLIEST,
                                           consumer_timeout_ms=PATIENCE_S * 1000, **GROUP)
    try:
        assert consume_n(consumer, 1)[0].offset == 0
        threads = [in_thread(consumer.stop) for _ in range(2)]
        for thread, _ in threads:
            thread.join(PATIENCE_S)
        assert [box.get("error") for _, box in threads] == [None, None]
        assert not any(thread.is_alive() for thread, _ in threads)
    finally:
        consumer.stop()
    assert listener.events == [("assigned", [0]), ("revoked", [0])]


@pytest.mark.kafka
@pytest.mark.parametrize("answer, first", [(OffsetType.LATEST, None), (100, 0)], ids=["latest", "past-the-end"])
def test_post_rebalance_callback_offsets_are_taken_as_reset_offsets_takes_them(client, topic_name, group_name,
                                                                               answer, first):
    """As pykafka, which hands them to reset_offsets(): LATEST is looked up (held offset:
    the last message) and committed, so the next member skips what this one did; an offset
    past the end of the log moves to auto_offset_reset (EARLIEST here)."""
    topic = make_topic(client, topic_name, 1)
    with topic.get_sync_producer() as producer:  # one by one: Tansu's log end after a batch is wrong
        for i in range(10):
            producer.produce(b"v%d" % i)
    with topic.get_balanced_consumer(group_name, managed=True, consumer_timeout_ms=500,
                                     auto_offset_reset=OffsetType.EARLIEST,
                                     post_rebalance_callback=lambda consumer, old, new: {0: answer},
                                     **GROUP) as consumer:
        deadline = time.monotonic() + PATIENCE_S
        if first is None:  # nothing to read: until the group's first assignment
            while consumer.held_offsets is None:
                assert time.monotonic() < deadline, "the member got no partition"
                assert consumer.consume() is None
            assert consumer.held_offsets == {0: 9}
            assert [(pid, r.offset) for pid, r in consumer.fetch_offsets()] == [(0, 10)]
        else:
            got = consumer.consume()
            while got is None:
                assert time.monotonic() < deadline, "the member read nothing"
                got = consumer.consume()
            assert got.offset == first


@pytest.mark.kafka
@pytest.mark.parametrize("answer, error, message", [
    ({True: 5}, ValueError, "returned partition True, not one assigned"),  # not partition 1
    ([(0, 5)], TypeError, "must return {partition_id: offset} or None"),
    ("other", ValueError, "is a partition of topic .*, not of"),
], ids=["bool", "pairs", "other-topic"])
def test_post_rebalance_callback_answer_of_another_type_is_refused(client, topic_name, group_name,
                                                                     answer, error, message):
    topic = make_topic(client, topic_name, 2)
    if answer == "other":
        answer = {make_topic(client, topic_name + "-other", 2).partitions[1]: 5}
    with topic.get_balanced_consumer(group_name, managed=True, consumer_timeout_ms=PATIENCE_S * 1000,
                                     post_rebalance_callback=lambda consumer, old, new: answer, **GROUP) as consumer:
        with pytest.raises(error, match=message):
            consumer.consume()


class Failing(Recorder):
    def on_partitions_assigned(self, partitions):
        super().on_partitions_assigned(partitions)
        raise RuntimeError("callback failed")


def failing_post_rebalance(consumer, old_offsets, new_offsets):
    raise RuntimeError("callback failed")


@pytest.mark.kafka
def test_pykafkas_private_names_of_a_balanced_consumer(client, topic_name, group_name):
    """``_partitions`` (the set of Partitions held) and ``_raise_worker_exceptions()``, which
    pykafka's wait-for-rebalancing recipe uses on either balanced consumer."""
    topic = make_topic(client, topic_name, 2)
    with topic.get_balanced_consumer(group_name, managed=True, consumer_timeout_ms=200, **GROUP) as consumer:
        assert consumer._partitions == set()  # the group assigns partitions in a fetch
        deadline = time.monotonic() + PATIENCE_S
        while not consumer.partitions:
            assert time.monotonic() < deadline, "the member got no partition"
            consumer.consume(block=False)
            consumer._raise_worker_exceptions()  # nothing failed: nothing raised
        assert consumer._partitions == set(topic.partitions.values())
    assert consumer._partitions == set()


@pytest.mark.kafka
@pytest.mark.parametrize("callback", [{"listener": Failing()}, {"post_rebalance_callback": failing_post_rebalance}],
                         ids=["listener", "post_rebalance_callback"])
def test_a_callback_error_is_raised_by_consume_and_loses_no_message(client, topic_name, group_name, callback):
    topic = make_topic(client, topic_name, 1)
    produced = produce_keyed(topic, 10)
    with topic.get_balanced_consumer(group_name, managed=True, consumer_timeout_ms=PATIENCE_S * 1000,
                                     **callback, **GROUP) as consumer:
        with pytest.raises(RuntimeError, match="callback failed"):
            consume_n(consumer, 10)
        messages = consume_n(consumer, 10)
    assert sorted((m.partition_id, m.offset) for m in messages) == sorted(produced)


@pytest.mark.kafka
@pytest.mark.slow
@pytest.mark.parametrize("answer, error, message", [
    (5, TypeError, "pre_revoke_callback must return [(partition_id, offset), ...] or None, not 5"),
    ([(9, 1)], ValueError, "pre_revoke_callback returned offsets that cannot be committed"),
], ids=["not-pairs", "unknown-partition"])
def test_an_unusable_pre_revoke_answer_is_raised_and_the_revocation_still_happens(
        client, topic_name, group_name, answer, error, message):
    """The revocation goes on after the callback's answer is refused: the member lets go of
    the revoked partition instead of holding it beside its new owner."""
    topic = make_topic(client, topic_name, 2)
    produce_keyed(topic, 40)
    first = topic.get_balanced_consumer(group_name, managed=True, consumer_timeout_ms=100,
                                        pre_revoke_callback=lambda consumer, pids: answer, **GROUP)
    second = None
    raised = []
    try:
        while first.consume() is None:
            pass
        assert sorted(first.partitions) == [0, 1]
        second = topic.get_balanced_consumer(group_name, managed=True, consumer_timeout_ms=100, **GROUP)
        deadline = time.monotonic() + PATIENCE_S
        while time.monotonic() < deadline and not (raised and second.partitions and first.partitions):
            try:
                first.consume(block=False)
            except error as exc:
                raised.append(str(exc))
            second.consume(block=False)
        assert raised and message in raised[0]
        assert set(first.partitions) | set(second.partitions) == {0, 1}
        assert not set(first.partitions) & set(second.partitions)
    finally:
        for consumer in (first, second):
            if consumer is not None:
                try:
                    consumer.stop()
                except error:  # the callback answers the same at stop()
                    pass


@pytest.mark.kafka
def test_a_pre_revoke_answer_naming_a_partition_of_another_topic_is_refused(client, topic_name, group_name):
    """A Partition of another topic in the answer is no partition of this member: stop()
    raises the named error and commits nothing (its id would name this topic's partition)."""
    topic = make_topic(client, topic_name, 1)
    produce_keyed(topic, 10)
    answer = [(make_topic(client, topic_name + "-other", 1).partitions[0], 5)]
    consumer = topic.get_balanced_consumer(group_name, managed=True, consumer_timeout_ms=PATIENCE_S * 1000,
                                           auto_commit_enable=True, pre_revoke_callback=lambda consumer, pids: answer,
                                           **GROUP)
    assert consumer.consume().offset == 0
    with pytest.raises(ValueError, match="is a partition of topic .*, not of"):
        consumer.stop()
    with topic.get_balanced_consumer(group_name, managed=True, consumer_timeout_ms=PATIENCE_S * 1000,
                                     **GROUP) as consumer:
        assert consumer.consume().offset == 0  # offset 5 was not committed


class FailingOnRevoke(Recorder):
    def on_partitions_revoked(self, partitions):
        super().on_partitions_revoked(partitions)
        raise RuntimeError("callback failed")


def failing_pre_revoke(consumer, partition_ids):
    raise RuntimeError("callback failed")


@pytest.mark.kafka
@pytest.mark.slow
@pytest.mark.parametrize("callback", [{"listener": FailingOnRevoke()},
                                      {"pre_revoke_callback": failing_pre_revoke, "auto_commit_enable": True}],
                         ids=["listener", "pre_revoke_callback"])
def test_a_callback_error_during_stop_is_raised_by_stop(client, topic_name, group_name, callback):
    topic = make_topic(client, topic_name, 1)
    produce_keyed(topic, 10)
    consumer = topic.get_balanced_consumer(group_name, managed=True, consumer_timeout_ms=PATIENCE_S * 1000,
                                           **callback, **GROUP)
    assert consumer.consume().offset == 0
    with pytest.raises(RuntimeError, match="callback failed"):
        consumer.stop()
    consumer.stop()  # stopped: nothing more to raise
    consumer.start()
    assert consumer.consume() is not None  # the old error is not raised after a restart
    with pytest.raises(RuntimeError, match="callback failed"):
        consumer.stop()


@pytest.mark.kafka
@pytest.mark.slow  # seconds of group coordination or timeouts: the C pass runs it, make soak the pure one
def test_stop_commits_held_offsets_only_with_auto_commit(client, topic_name, group_name):
    topic = make_topic(client, topic_name, 1)
    produce_keyed(topic, 10)

    def first_offsets(n, **kwargs):
        with topic.get_balanced_consumer(group_name, managed=True, consumer_timeout_ms=PATIENCE_S * 1000,
                                         **kwargs, **GROUP) as consumer:
            return [m.offset for m in consume_n(consumer, n)]

    assert first_offsets(3) == [0, 1, 2]  # not committed at stop...
    assert first_offsets(3, auto_commit_enable=True) == [0, 1, 2]  # ...this one is
    assert first_offsets(1) == [3]


@pytest.mark.kafka
@pytest.mark.slow  # seconds of group coordination or timeouts: the C pass runs it, make soak the pure one
def test_reset_offset_on_start_ignores_the_commit_and_commits_the_reset(client, topic_name, group_name):
    topic = make_topic(client, topic_name, 1)
    produce_keyed(topic, 10)
    with topic.get_balanced_consumer(group_name, managed=True, consumer_timeout_ms=PATIENCE_S * 1000,
                                     **GROUP) as consumer:
        consume_n(consumer, 5)
        consumer.commit_offsets()
    with topic.get_balanced_consumer(group_name, managed=True, consumer_timeout_ms=PATIENCE_S * 1000,
                                     reset_offset_on_start=True, auto_offset_reset=OffsetType.EARLIEST,
                                     **GROUP) as consumer:
        assert consumer.consume().offset == 0
    with topic.get_balanced_consumer(group_name, managed=True, consumer_timeout_ms=PATIENCE_S * 1000,
                                     **GROUP) as consumer:
        assert consumer.consume().offset == 0  # the reset was committed at once, as pykafka does


@pytest.mark.mock
@pytest.mark.slow  # socket_timeout_ms for the commit, then the wait: the C pass runs it, make soak the pure one
def test_stop_after_a_commit_a_hung_coordinator_never_answered_returns(mock_cluster):
    """A coordinator that hangs (its connection open, nothing answered): stop()'s commit
    raises KafkaTimeoutError after socket_timeout_ms, and rd_kafka_consumer_close waited on
    that commit for as long as the coordinator hung (minutes here), well past the session.
    The member is closed without leaving the group: it times out of it instead."""
    client = KafkaClient(hosts=mock_cluster.bootstrap_servers, socket_timeout_ms=1000)
    name = unique_name("topic")
    group = "g-" + name
    mock_cluster.create_topic(name, 1)
    mock_cluster.set_coordinator("group", group, 1)
    consumer = client.topics[name].get_balanced_consumer(group.encode(), managed=True, auto_commit_enable=True,
                                                         consumer_timeout_ms=100, **FAST)
    stopper = None
    try:
        deadline = time.monotonic() + PATIENCE_S
        while not consumer.partitions and time.monotonic() < deadline:
            consumer.consume(block=False)
        assert consumer.partitions, "no assignment"
        mock_cluster.set_broker_rtt(1, 600000)
        stopper, box = in_thread(consumer.stop)
        stopper.join(PATIENCE_S)
        assert not stopper.is_alive(), "stop() waits on the hung coordinator"
        assert "error" not in box, box  # the commit's timeout is logged, as stop() logs it
        assert consumer._handle.closed
    finally:
        mock_cluster.set_broker_rtt(1, 0)
        if stopper is None:
            consumer.stop()
        client.close()


# -- Tansu's UNKNOWN_MEMBER_ID, reproduced on the mock cluster --------------------------------------

@pytest.mark.mock
def test_stop_again_finishes_a_stop_a_ctrl_c_cut_short_and_leaves_the_group(mock_cluster, mock_client):
    """A member whose stop() Ctrl-C cut short kept its partitions until max.poll.interval.ms:
    the second stop() does the rd_kafka_consumer_close that leaves the group."""
    _, _, consumer = mock_member(mock_cluster, mock_client, 1, 5)
    try:
        consume_n(consumer, 5)
        handle = stop_cut_short(consumer)
        with util.profiled(util.CCalls("rd_kafka_consumer_close")) as closes:
            consumer.stop()
        assert len(closes) == 1 and handle._ptr is None
    finally:
        consumer.stop()


@pytest.mark.mock
@pytest.mark.slow  # seconds of group coordination or timeouts: the C pass runs it, make soak the pure one
def test_unknown_member_id_is_recovered_without_losing_or_repeating_messages(mock_cluster, mock_client):
    topic, produced, consumer = mock_member(mock_cluster, mock_client, 2, 200)
    try:
        seen = [(m.partition_id, m.offset) for m in consume_n(consumer, 50)]
        mock_cluster.push_request_errors(ApiKey.OffsetCommit, UNKNOWN_MEMBER_ID)
        mock_cluster.push_request_errors(ApiKey.Heartbeat, UNKNOWN_MEMBER_ID)
        consumer.commit_offsets()  # refused: kept, not raised
        seen += [(m.partition_id, m.offset) for m in consume_n(consumer, len(produced) - 50)]
        assert sorted(seen) == sorted(produced)  # every message once
        ends = {}
        for pid, offset in produced:
            ends[pid] = max(ends.get(pid, -1), offset + 1)

        def committed():
            name = topic.name.decode()
            return {tp.partition: tp.offset for tp in consumer._handle.committed([(name, 0), (name, 1)])}

        consumer.commit_offsets()  # perhaps refused again while the member rejoins...
        deadline = time.monotonic() + PATIENCE_S
        while committed() != ends and time.monotonic() < deadline:
            assert consumer.consume_batch(10, 100) == []
        assert committed() == ends  # ...and then committed once it is back
    finally:
        consumer.stop()


@pytest.mark.mock
@pytest.mark.parametrize("code", [15, 16])  # COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
def test_an_offset_fetch_that_fails_at_assignment_is_retried_and_the_member_reads_from_the_commit(
        mock_cluster, mock_client, code):
    """The committed offsets read when partitions are assigned are retried as
    SimpleConsumer.start() retries them: left to librdkafka after one failure, the partition
    stayed assigned and was never fetched, with nothing raised."""
    name = unique_name("topic")
    mock_cluster.create_topic(name, 1)
    topic = mock_client.topics[name]
    produce_keyed(topic, 10)
    group = b"g-" + name.encode()
    with topic.get_simple_consumer(consumer_group=group, reset_offset_on_fetch=False) as simple:
        simple.commit_offsets([(0, 5)])
    mock_cluster.push_request_errors(ApiKey.OffsetFetch, code, code, code)
    consumer = topic.get_balanced_consumer(group, managed=True, consumer_timeout_ms=PATIENCE_S * 1000,
                                           offsets_channel_backoff_ms=10, **FAST)
    try:
        assert [m.offset for m in consume_n(consumer, 5)] == [5, 6, 7, 8, 9]
    finally:
        consumer.stop()


@pytest.mark.mock
@pytest.mark.slow  # seconds of group coordination or timeouts: the C pass runs it, make soak the pure one
def test_a_refused_commit_of_a_generator_is_kept(mock_cluster, mock_client):
    """The offsets given as a generator (read once) are what is kept for after the rejoin,
    not the empty rest of it."""
    topic, _, consumer = mock_member(mock_cluster, mock_client, 2, 40)
    try:
        consume_n(consumer, 10)
        mock_cluster.push_request_errors(ApiKey.OffsetCommit, UNKNOWN_MEMBER_ID)
        consumer.commit_offsets(pair for pair in [(0, 3), (topic.partitions[1], 4)])  # refused: kept
        assert consumer._refused == {0: 3, 1: 4}
    finally:
        consumer.stop()


@pytest.mark.mock
@pytest.mark.slow  # seconds of group coordination or timeouts: the C pass runs it, make soak the pure one
def test_a_member_too_slow_for_max_poll_interval_rejoins_and_goes_on(mock_cluster, mock_client):
    topic, produced, consumer = mock_member(mock_cluster, mock_client, 1, 20)
    try:
        first = consume_n(consumer, 5)
        consumer.commit_offsets()
        time.sleep(4.5)  # longer than max_poll_interval_ms: the member leaves the group
        rest = consume_n(consumer, 15)  # no exception: it rejoined
        assert sorted((m.partition_id, m.offset) for m in first + rest) == sorted(produced)
    finally:
        consumer.stop()


@pytest.mark.mock
@pytest.mark.slow  # seconds of group coordination or timeouts: the C pass runs it, make soak the pure one
def test_a_partition_paused_when_revoked_is_read_again_when_assigned_again(mock_cluster, mock_client):
    """A pause lasts while the partition stays: one revoked and assigned again starts
    unpaused (``paused()`` forgot it at the revocation). librdkafka keeps the pause across
    assignments, so unless it is resumed as it goes, the partition assigned again was never
    fetched -- the spout's back-pressure pause left a partition unread for ever."""
    name = unique_name("topic")
    mock_cluster.create_topic(name, 1)
    topic = mock_client.topics[name]
    produced = produce_keyed(topic, 10)
    listener = Recorder()
    events = listener.events
    consumer = topic.get_balanced_consumer(b"g-" + name.encode(), managed=True, listener=listener,
                                           consumer_timeout_ms=PATIENCE_S * 1000, **FAST)
    try:
        first = consume_n(consumer, 3)
        consumer.pause([0])
        mock_cluster.push_request_errors(ApiKey.Heartbeat, REBALANCE_IN_PROGRESS)  # the member rejoins
        rest = []
        deadline = time.monotonic() + PATIENCE_S
        while len(events) < 3:
            assert time.monotonic() < deadline, events
            rest += consumer.consume_batch(10, 100)  # nothing while paused; then the new assignment's
        assert events == [("assigned", [0]), ("revoked", [0]), ("assigned", [0])]
        if len(rest) < 7:
            rest += consume_n(consumer, 7 - len(rest))  # from the start offset, as any new assignment
        assert sorted((m.partition_id, m.offset) for m in first + rest) == sorted(produced)
    finally:
        consumer.stop()


@pytest.mark.mock
@pytest.mark.slow  # seconds of group coordination or timeouts: the C pass runs it, make soak the pure one
@pytest.mark.parametrize("how", ["consume", "iterate", "consume-rdkafka_config"])
def test_a_member_calling_consume_keeps_its_place_while_it_works_through_its_buffer(mock_cluster, mock_client, how):
    """consume() handed out buffered messages (a fetch takes up to BATCH) without polling
    librdkafka, whose max.poll.interval.ms counts from its last poll: a member taking a
    message every 0.2 s, well within max_poll_interval_ms, lost its assignment once the
    buffer lasted longer than that (a spout fleet rebalanced over and over under load). So
    did one iterating the consumer (``for message in consumer``, pykafka's loop). The
    interval is librdkafka's property when ``rdkafka_config`` gives it."""
    name = unique_name("topic")
    mock_cluster.create_topic(name, 1)
    topic = mock_client.topics[name]
    produced = produce_keyed(topic, 100)
    listener, options = Recorder(), dict(FAST)
    events = listener.events
    if how == "consume-rdkafka_config":  # the argument's default (300 s) would poll every 100 s
        options["rdkafka_config"] = {"max.poll.interval.ms": options.pop("max_poll_interval_ms")}
    consumer = topic.get_balanced_consumer(b"g-" + name.encode(), managed=True, listener=listener,
                                           consumer_timeout_ms=PATIENCE_S * 1000, **options)
    try:
        got = consume_n(consumer, 1)
        member = consumer.member_id
        deadline = time.monotonic() + 2 * FAST["max_poll_interval_ms"] / 1000.0
        messages = iter(consumer)
        while time.monotonic() < deadline:  # twice max_poll_interval_ms, the buffer never empty
            assert len(consumer._core), "the buffer ran out: the test proves nothing"
            time.sleep(0.2)
            got.append(next(messages) if how == "iterate" else consumer.consume(block=False))
        assert consumer.member_id == member  # librdkafka did not make it leave the group
        got += consume_n(consumer, len(produced) - len(got))
        assert consumer.consume_batch(10, 0) == []  # serves what librdkafka has queued
        assert events == [("assigned", [0])]  # never revoked
        assert [(m.partition_id, m.offset) for m in got] == sorted(produced)
    finally:
        consumer.stop()


# -- bad input ------------------------------------------------------------------------------------

@pytest.mark.kafka
def test_zookeeper_options_with_managed_true_are_refused_by_name(topic, group_name):
    with pytest.raises(ValueError, match="zookeeper_connect, zookeeper_hosts: ZooKeeper options"):
        topic.get_balanced_consumer(group_name, managed=True, zookeeper_hosts="127.0.0.1:2181",
                                    zookeeper_connect="127.0.0.1:2181")


@pytest.mark.kafka
@pytest.mark.parametrize("group", [None, 42, b"", ["g"]])
def test_consumer_group_of_the_wrong_type_is_a_type_error(topic, group):
    with pytest.raises(TypeError, match="consumer_group must be a non-empty bytes or str"):
        topic.get_balanced_consumer(group, managed=True)


@pytest.mark.kafka
@pytest.mark.parametrize("group", [b"\xff", "g\udc80"])
def test_consumer_group_that_is_not_utf8_text_is_named(topic, group):
    with pytest.raises(UnicodeException, match="consumer_group .* is not UTF-8"):
        topic.get_balanced_consumer(group, managed=True)


@pytest.mark.kafka
def test_unknown_rdkafka_config_key_is_named(topic, group_name):
    with pytest.raises(ConfigurationError, match="no.such.property"):
        topic.get_balanced_consumer(group_name, managed=True, rdkafka_config={"no.such.property": 1})


@pytest.mark.kafka
def test_membership_protocols_map_to_assignment_strategies(topic, group_name):
    for protocol, strategy in ((RoundRobinProtocol, "roundrobin"), (CooperativeStickyProtocol, "cooperative-sticky"),
                               ("range", "range")):
        consumer = topic.get_balanced_consumer(group_name, managed=True, membership_protocol=protocol,
                                               auto_start=False)
        assert consumer._config["partition.assignment.strategy"] == strategy
    with pytest.raises(ValueError, match="'sticky' is not one librdkafka can assign with"):
        topic.get_balanced_consumer(group_name, managed=True, membership_protocol="sticky")
    with pytest.raises(ValueError, match="managed=True"):
        CooperativeStickyProtocol.decide_partitions(["a"], topic.partitions, "a")


@pytest.mark.kafka
def test_unknown_keyword_is_a_type_error(topic, group_name):
    with pytest.raises(TypeError, match="unexpected keyword arguments: no_such_option"):
        topic.get_balanced_consumer(group_name, managed=True, no_such_option=1)


# -- Kafka 4's consumer group protocol (KIP-848) ---------------------------------------------------

def read_all(consumers, n):
    """Consume from each in turn until ``n`` messages came back (bounded); the messages."""
    got = []
    deadline = time.monotonic() + PATIENCE_S
    while len(got) < n and time.monotonic() < deadline:
        for consumer in consumers:
            got.extend(consumer.consume_batch(100, 100))
    return got


@pytest.mark.mock
def test_consumer_group_protocol_splits_the_partitions(mock_cluster, mock_client):
    """group_protocol="consumer" (librdkafka's mock cluster speaks KIP-848): the broker
    assigns, incrementally, and none of the classic-only properties is sent."""
    name = unique_name("topic")
    mock_cluster.create_topic(name, 4)
    topic = mock_client.topics[name]
    with topic.get_producer(linger_ms=5) as producer:
        for i in range(40):
            producer.produce(b"%d" % i)
    group = unique_name("group").encode()
    first = topic.get_balanced_consumer(group, managed=True, group_protocol="consumer")
    assert first._config["group.protocol"] == "consumer" and first._config["group.remote.assignor"] == "range"
    assert not {"session.timeout.ms", "heartbeat.interval.ms", "partition.assignment.strategy"} & set(first._config)
    second = None
    try:
        got = read_all([first], 20)
        second = topic.get_balanced_consumer(group, managed=True, group_protocol="consumer")
        deadline = time.monotonic() + PATIENCE_S
        while (len(first.partitions), len(second.partitions)) != (2, 2) and time.monotonic() < deadline:
            got.extend(first.consume_batch(100, 50) + second.consume_batch(100, 50))
        assert sorted(list(first.partitions) + list(second.partitions)) == [0, 1, 2, 3]
        got.extend(read_all([first, second], 40 - len(got)))
        assert sorted(int(m.value) for m in got) == list(range(40)), "a message was lost or came twice"
        first.commit_offsets()
        assert all(json.loads(res.metadata)["consumer_id"] == first.member_id
                   for _, res in first.fetch_offsets())
    finally:
        first.stop()
        if second is not None:
            second.stop()


def test_group_protocol_is_checked_and_read_from_rdkafka_config(topic, group_name):
    consumer = topic.get_balanced_consumer(group_name, managed=True, auto_start=False,
                                           rdkafka_config={"group.protocol": "consumer"})
    assert "session.timeout.ms" not in consumer._config
    for given in ({"rdkafka_config": {"group.protocol": b"consumer"}}, {"group_protocol": b"consumer"}):
        consumer = topic.get_balanced_consumer(group_name, managed=True, auto_start=False, **given)
        assert "session.timeout.ms" not in consumer._config  # bytes, as any property's value
    with pytest.raises(ValueError, match="group_protocol"):
        topic.get_balanced_consumer(group_name, managed=True, group_protocol="zookeeper")


@pytest.mark.kafka
@tansu_gap("the consumer group protocol (KIP-848, ConsumerGroupHeartbeat) assigns no partition")
@pytest.mark.slow  # seconds of group coordination or timeouts: the C pass runs it, make soak the pure one
def test_consumer_group_protocol_on_the_broker(client, topic_name, group_name):
    topic = make_topic(client, topic_name, 2)
    produce_keyed(topic, 4)
    with topic.get_balanced_consumer(group_name, managed=True, group_protocol="consumer") as consumer:
        got = []
        deadline = time.monotonic() + 20  # a bound: Tansu never assigns
        while len(got) < 4 and time.monotonic() < deadline:
            got.extend(consumer.consume_batch(10, 200))
        assert len(got) == 4


# -- commit metadata -------------------------------------------------------------------------------

@pytest.mark.mock
def test_commits_name_the_member_in_their_metadata(mock_cluster, mock_client):
    name = unique_name("topic")
    mock_cluster.create_topic(name, 1)
    topic = mock_client.topics[name]
    with topic.get_producer(linger_ms=5) as producer:
        producer.produce(b"v")
    with topic.get_balanced_consumer(unique_name("group").encode(), managed=True, **FAST) as consumer:
        assert consumer.consume_batch(1, PATIENCE_S * 1000)
        consumer.commit_offsets()
        [(pid, res)] = consumer.fetch_offsets()
        assert res.offset == 1
        assert json.loads(res.metadata) == {"consumer_id": consumer.member_id, "hostname": socket.gethostname()}


@pytest.mark.mock
@pytest.mark.slow  # seconds of group coordination: the C pass runs it, make soak the pure one
def test_partitions_added_after_the_client_is_closed_are_assigned(mock_cluster, mock_client):
    """The group's new partitions are looked up through the consumer's own handle: a consumer
    made before ``KafkaClient.close()`` goes on."""
    name = unique_name("topic")
    mock_cluster.create_topic(name, 2)
    topic = mock_client.topics[name]
    config = {"topic.metadata.refresh.interval.ms": 300, "allow.auto.create.topics": False}
    consumer = topic.get_balanced_consumer(b"g-" + name.encode(), managed=True, consumer_timeout_ms=100,
                                           rdkafka_config=config, **FAST)
    try:
        deadline = time.monotonic() + PATIENCE_S
        while sorted(consumer.partitions) != [0, 1]:
            assert time.monotonic() < deadline, "the member was never given the topic's partitions"
            consumer.consume(block=False)
        mock_client.close()
        mock_cluster.delete_topic(name)  # made anew with more: the mock cannot add partitions
        mock_cluster.create_topic(name, 4)
        deadline = time.monotonic() + PATIENCE_S * 2
        while sorted(consumer.partitions) != [0, 1, 2, 3]:
            assert time.monotonic() < deadline, "the new partitions were never assigned"
            consumer.consume(block=False)
    finally:
        consumer.stop()


@pytest.mark.kafka
@pytest.mark.slow  # seconds of group coordination: the C pass runs it, make soak the pure one
def test_a_member_left_running_at_exit_is_not_closed_by_the_exit(kafka_hosts, client, topic_name, group_name):
    """At exit pyrdk closes a consumer left running without the consumer close (which would
    wait for the group, up to seconds, as the process ends): ``rd_kafka_destroy`` is told
    not to do it either, so the member leaves no LeaveGroup and stays until its session
    times out, as a killed one does."""
    import subprocess
    import sys
    import textwrap
    make_topic(client, topic_name, 2)
    program = textwrap.dedent("""
        from pyrdk import KafkaClient
        consumer = KafkaClient(hosts=%r).topics[%r].get_balanced_consumer(
            %r, managed=True, consumer_timeout_ms=100, session_timeout_ms=8000,
            max_poll_interval_ms=8000)  # Tansu holds the JoinGroup that long
        while not consumer.partitions:
            consumer.consume()
        print(consumer.member_id)
    """) % (kafka_hosts, topic_name, group_name)
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    member = result.stdout.strip()
    info = client.cluster.describe_groups([group_name])[group_name]
    assert [m.member_id for m in info.members] == [member]


@pytest.mark.mock
@pytest.mark.parametrize("refresh", ["fails", "does not list them"])
def test_partitions_assigned_beyond_the_known_metadata_are_held_and_read(mock_cluster, mock_client, monkeypatch,
                                                                         refresh):
    """The topic grew (here: re-created with more partitions) since its metadata was read,
    and the refresh asked for at the assignment fails or does not list the new partitions:
    librdkafka reads them all the same, so the member holds them too (no KeyError raised
    by consume(), no message of a partition the member does not know)."""
    from pyrdk.exceptions import KafkaException
    name = unique_name("topic")
    mock_cluster.create_topic(name, 2)
    topic = mock_client.topics[name]
    mock_cluster.delete_topic(name)
    mock_cluster.create_topic(name, 4)

    def refresh_topic(*args, **kwargs):
        if refresh == "fails":
            raise KafkaException("the metadata request failed")
        return False  # as when the answer does not list the topic

    monkeypatch.setattr(mock_client.cluster, "refresh_topic", refresh_topic)
    with KafkaClient(hosts=mock_cluster.bootstrap_servers).topics[name].get_sync_producer(
            partitioner=lambda partitions, key: partitions[int(key)]) as producer:
        for pid in range(4):
            producer.produce(b"m%d" % pid, partition_key=b"%d" % pid)
    consumer = topic.get_balanced_consumer(b"g-" + name.encode(), managed=True, auto_offset_reset=OffsetType.EARLIEST,
                                           consumer_timeout_ms=PATIENCE_S * 1000, **FAST)
    try:
        messages = consume_n(consumer, 4)
        assert sorted((m.partition_id, m.partition.id, m.value) for m in messages) == \
            [(pid, pid, b"m%d" % pid) for pid in range(4)]
        assert sorted(consumer.partitions) == [0, 1, 2, 3]
    finally:
        consumer.stop()


_CTRL_C_AS_THE_REVOKE_CALLBACK_BEGINS = """
import sys
from pyrdk import KafkaClient
from pyrdk.rd.mock import MockCluster
cluster = MockCluster(1)
cluster.create_topic("t", 2)
client = KafkaClient(hosts=cluster.bootstrap_servers, socket_timeout_ms=5000)
topic = client.topics["t"]
consumer = topic.get_balanced_consumer(b"g", managed=True, consumer_timeout_ms=100, %s)
while not consumer.partitions:
    consumer.consume()


def interrupt(frame, event, arg):  # a SIGINT pending as librdkafka calls back raises here
    trampoline = frame.f_locals.get("trampoline") if event == "call" and frame.f_code.co_name == "run" else None
    if getattr(trampoline, "__name__", None) == "_pyrdk_rebalance_cb":
        raise KeyboardInterrupt


sys.setprofile(interrupt)
try:
    consumer.stop()  # rd_kafka_consumer_close revokes through the rebalance callback
except KeyboardInterrupt:
    print("interrupted", flush=True)
sys.setprofile(None)
print("stopped", consumer.partitions, consumer._handle._ptr, flush=True)
client.close()
cluster.close()
"""


@pytest.mark.mock
def test_a_ctrl_c_as_the_revoke_callback_begins_does_not_hang_stop():
    """A KeyboardInterrupt at the first bytecode of the rebalance callback (a Ctrl-C pending
    during rd_kafka_consumer_close), before any of it ran: the C callback around it revokes
    the partitions itself (librdkafka waited for ever for that, and stop() never returned),
    and stop() raises the interrupt once the consumer is closed (cffi printed it, and the
    program ran on)."""
    import subprocess
    import sys
    script = _CTRL_C_AS_THE_REVOKE_CALLBACK_BEGINS % ", ".join("%s=%r" % item for item in FAST.items())
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        out, err = proc.communicate(timeout=PATIENCE_S * 2)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (proc.returncode, out) == (0, "interrupted\nstopped {} None\n"), err
    assert "cffi callback" not in err
