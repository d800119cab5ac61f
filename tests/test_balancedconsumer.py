"""BalancedConsumer against a real ZooKeeper and the Tansu broker: pykafka's znodes, safe
ownership, rebalances, session loss, and fleets of member processes (tests/fleet.py)."""
import subprocess
import sys
import threading
import time
from collections import namedtuple

import pytest

from pyrdk import KafkaClient, OffsetType, RoundRobinProtocol
from pyrdk.exceptions import ConfigurationError, PartitionOwnedError, UnicodeException
from pyrdk.partitioners import hashing_partitioner
from pyrdk.testing import free_port
from tests.fix_kafka import make_topic, unique_name
from tests.fix_zookeeper import start_zookeeper_server
from tests.fleet import PATIENCE_S, ROOT, Fleet

pytestmark = [pytest.mark.kafka, pytest.mark.zookeeper]

# Short sessions and backoffs keep the tests quick; ZooKeeperServer allows sessions of 400 ms.
FAST = dict(zookeeper_connection_timeout_ms=2000, rebalance_backoff_ms=200, consumer_timeout_ms=500)


def produce(topic, count, first=0):
    """``count`` messages keyed ``k<i>`` with value ``<i>``, spread by key hash."""
    with topic.get_producer(linger_ms=5, partitioner=hashing_partitioner) as producer:
        for i in range(first, first + count):
            producer.produce(b"%d" % i, partition_key=b"k%d" % i)


def drain(*consumers, idle_rounds=3):
    """Consume from each consumer in turn, each until it times out, until a whole round
    returns nothing ``idle_rounds`` times in a row; the values seen, as ints."""
    seen = []
    idle = 0
    while idle < idle_rounds:
        before = len(seen)
        for consumer in consumers:
            for message in consumer:
                seen.append(int(message.value))
        idle = 0 if len(seen) > before else idle + 1
    return seen


def until(condition, what, timeout_s=PATIENCE_S):
    """Poll ``condition()`` until true; AssertionError naming ``what`` after ``timeout_s``
    (a bound for a hung test, never a timing assertion)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("not reached within %ds: %s" % (timeout_s, what))
        time.sleep(0.05)


@pytest.fixture
def zk_client(kafka_hosts, zookeeper_chroot):
    """A KafkaClient whose zookeeper_hosts is the test's chroot."""
    c = KafkaClient(hosts=kafka_hosts, zookeeper_hosts=zookeeper_chroot)
    yield c
    c.close()


def owners_in_zookeeper(zk, group, topic_name):
    """``{partition id: [owner ids]}`` from the ownership znodes."""
    from kazoo.exceptions import NoNodeError
    path = "/consumers/%s/owners/%s" % (group, topic_name)
    owners = {}
    for name in zk.get_children(path):
        try:
            value, _ = zk.get("%s/%s" % (path, name))
        except NoNodeError:  # released between the two reads
            continue
        owners.setdefault(int(name.rsplit("-", 1)[1]), []).append(value.decode())
    return owners


# -- API and znode layout ----------------------------------------------------------------------

def test_factory_joins_with_pykafkas_znodes(zk_client, zk, topic_name, group_name):
    from pyrdk.balancedconsumer import BalancedConsumer
    topic = make_topic(zk_client, topic_name, 4)
    produce(topic, 400)
    consumer = topic.get_balanced_consumer(group_name, **FAST)
    try:
        assert isinstance(consumer, BalancedConsumer)
        assert sorted(consumer.partitions) == [0, 1, 2, 3]
        group = group_name.decode()
        me = consumer.consumer_id.decode()
        assert zk.get_children("/consumers/%s/ids" % group) == [me]
        assert zk.get("/consumers/%s/ids/%s" % (group, me))[0] == topic.name
        expected = {"%d-%d" % (p.leader.id, p.id) for p in topic.partitions.values()}
        owner_path = "/consumers/%s/owners/%s" % (group, topic_name)
        assert set(zk.get_children(owner_path)) == expected
        assert all(zk.get(owner_path + "/" + name)[0] == consumer.consumer_id for name in expected)
        assert sorted(drain(consumer)) == list(range(400))
        consumer.commit_offsets()
        committed = _committed(topic, group_name)
        assert all(committed[pid] == held + 1 for pid, held in consumer.held_offsets.items())
        held = consumer.held_offsets
    finally:
        consumer.stop()
    assert consumer.held_offsets == held  # as pykafka's: what the member held when it stopped
    assert zk.get_children("/consumers/%s/ids" % group) == []
    assert zk.get_children(owner_path) == []


def test_zookeeper_none_joins_through_the_clients_zookeeper_hosts(zk_client, zk, topic_name, group_name):
    """zookeeper=None is the default, no client given: as in pykafka, the member connects to
    the client's zookeeper_hosts, not to 127.0.0.1:2181 (another ZooKeeper, or none)."""
    topic = make_topic(zk_client, topic_name, 1)
    consumer = topic.get_balanced_consumer(group_name, zookeeper=None, **FAST)
    try:
        assert zk.get_children("/consumers/%s/ids" % group_name.decode()) == [consumer.consumer_id.decode()]
    finally:
        consumer.stop()


def test_a_stop_cut_short_by_ctrl_c_is_finished_by_the_next(zk_client, zk, topic_name, group_name):
    """A KeyboardInterrupt while stop() waits for the coordinator thread: the next stop()
    gives the partitions back (it returned at once, and the member kept them)."""
    class InterruptedJoin:
        def __init__(self, thread):
            self.thread, self.fired = thread, False

        def join(self, *args):
            if not self.fired:
                self.fired = True
                raise KeyboardInterrupt
            return self.thread.join(*args)

    topic = make_topic(zk_client, topic_name, 2)
    consumer = topic.get_balanced_consumer(group_name, **FAST)
    assert sorted(consumer.partitions) == [0, 1]
    consumer._worker = InterruptedJoin(consumer._worker)
    with pytest.raises(KeyboardInterrupt):
        consumer.stop()
    consumer.stop()
    group = group_name.decode()
    assert zk.get_children("/consumers/%s/ids" % group) == []
    assert zk.get_children("/consumers/%s/owners/%s" % (group, topic_name)) == []


def test_two_threads_stopping_at_once_both_return(zk_client, zk, topic_name, group_name):
    """stop() in two threads at once: each returns, and the member has left the group (both
    ended the ZooKeeper session, and kazoo refused the second close: "Cannot close connection
    until it is stopped")."""
    topic = make_topic(zk_client, topic_name, 2)
    for _ in range(5):
        consumer = topic.get_balanced_consumer(group_name, **FAST)
        assert sorted(consumer.partitions) == [0, 1]
        raised = []

        def stop():
            try:
                consumer.stop()
            except Exception as exc:
                raised.append(exc)

        threads = [threading.Thread(target=stop) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(PATIENCE_S)
        assert not any(thread.is_alive() for thread in threads)
        assert raised == []
        group = group_name.decode()
        assert zk.get_children("/consumers/%s/ids" % group) == []
        assert zk.get_children("/consumers/%s/owners/%s" % (group, topic_name)) == []


def test_shares_the_group_with_a_member_registered_as_pykafka_does(zk_client, zk, topic_name,
                                                                    group_name):
    """A pykafka member's znodes (id node valued with the topic name, owner nodes valued
    with its id): the pyrdk member counts it in, takes only its own range share, and takes
    the rest once the pykafka member's nodes go."""
    from pyrdk.membershipprotocol import decide_partitions_range
    topic = make_topic(zk_client, topic_name, 4)
    group = group_name.decode()
    other = b"pykafka-host:00000000-0000-0000-0000-000000000000"
    other_path = "/consumers/%s/ids/%s" % (group, other.decode())
    zk.create(other_path, topic.name, ephemeral=True, makepath=True)
    consumer = topic.get_balanced_consumer(group_name, **FAST)
    try:
        mine = {p.id for p in decide_partitions_range([other, consumer.consumer_id], topic.partitions,
                                                      consumer.consumer_id)}
        theirs = set(topic.partitions) - mine
        owner_path = "/consumers/%s/owners/%s" % (group, topic_name)
        for pid in theirs:
            p = topic.partitions[pid]
            zk.create("%s/%d-%d" % (owner_path, p.leader.id, pid), other, ephemeral=True)
        until(lambda: set(consumer.partitions) == mine, "the pyrdk member holds its share")
        owners = owners_in_zookeeper(zk, group, topic_name)
        assert {pid: o[0].encode() for pid, o in owners.items()} == dict(
            [(pid, consumer.consumer_id) for pid in mine] + [(pid, other) for pid in theirs])
        zk.delete(other_path)
        for pid in theirs:
            p = topic.partitions[pid]
            zk.delete("%s/%d-%d" % (owner_path, p.leader.id, pid))
        until(lambda: set(consumer.partitions) == set(topic.partitions), "it takes the rest")
    finally:
        consumer.stop()


def test_gives_way_to_a_pykafka_member_on_python_3(zk_client, zk, topic_name, group_name):
    """pykafka on Python 3 formats the topic name, bytes, into its ownership path
    ('/consumers/{group}/owners/{topic}'.format(topic=b"t")): its nodes are under
    ``owners/b'<topic>'``. A pyrdk member joining while such a member still owns every
    partition (before its rebalance) must wait for the nodes of its share to go, not read
    those partitions alongside it."""
    from pyrdk.membershipprotocol import decide_partitions_range
    topic = make_topic(zk_client, topic_name, 4)
    group = group_name.decode()
    other = b"pykafka-host:00000000-0000-0000-0000-000000000000"
    zk.create("/consumers/%s/ids/%s" % (group, other.decode()), topic.name, ephemeral=True, makepath=True)
    pykafka_path = "/consumers/%s/owners/%s" % (group, str(topic.name))
    assert pykafka_path.endswith("/b'%s'" % topic_name)
    nodes = {pid: "%s/%d-%d" % (pykafka_path, p.leader.id, pid) for pid, p in topic.partitions.items()}
    for path in nodes.values():
        zk.create(path, other, ephemeral=True, makepath=True)
    consumer = topic.get_balanced_consumer(group_name, **FAST)
    try:
        mine = {p.id for p in decide_partitions_range([other, consumer.consumer_id], topic.partitions,
                                                      consumer.consumer_id)}
        time.sleep(1)
        assert consumer.partitions == {}  # the pykafka member still owns them all
        for pid in mine:  # its rebalance gives this member's share up
            zk.delete(nodes[pid])
        until(lambda: set(consumer.partitions) == mine, "the pyrdk member takes its share")
    finally:
        consumer.stop()


def test_wakes_when_a_pykafka_member_on_python_3_lets_go(zk_client, zk, topic_name, group_name):
    """A member waiting for partitions a pykafka member on Python 3 owns (nodes under
    ``owners/b'<topic>'``) is woken when those nodes go, as for nodes under
    ``owners/<topic>``: it does not sit out its backoff (here 10 minutes) first."""
    from pyrdk.membershipprotocol import decide_partitions_range
    topic = make_topic(zk_client, topic_name, 4)
    group = group_name.decode()
    other = b"pykafka-host:00000000-0000-0000-0000-000000000000"
    zk.create("/consumers/%s/ids/%s" % (group, other.decode()), topic.name, ephemeral=True, makepath=True)
    pykafka_path = "/consumers/%s/owners/%s" % (group, str(topic.name))
    nodes = {pid: "%s/%d-%d" % (pykafka_path, p.leader.id, pid) for pid, p in topic.partitions.items()}
    for path in nodes.values():
        zk.create(path, other, ephemeral=True, makepath=True)
    consumer = topic.get_balanced_consumer(group_name, rebalance_backoff_ms=600000, rebalance_max_retries=100,
                                           zookeeper_connection_timeout_ms=2000, consumer_timeout_ms=500)
    try:
        mine = {p.id for p in decide_partitions_range([other, consumer.consumer_id], topic.partitions,
                                                      consumer.consumer_id)}
        until(lambda: consumer._retry_at is not None and consumer._retry_at - time.monotonic() > 60,
              "the member backs off")
        assert consumer.partitions == {}
        for pid in mine:
            zk.delete(nodes[pid])
        until(lambda: set(consumer.partitions) == mine, "the pyrdk member takes its share")
    finally:
        consumer.stop()


def _committed(topic, group):
    consumer = topic.get_simple_consumer(consumer_group=group, auto_start=False)
    return {pid: r.offset for pid, r in consumer.fetch_offsets()}


def test_offsets_are_committed_in_kafka_and_resumed(zk_client, topic_name, group_name):
    topic = make_topic(zk_client, topic_name, 2)
    produce(topic, 100)
    with topic.get_balanced_consumer(group_name, **FAST) as consumer:
        first = [int(consumer.consume().value) for _ in range(30)]
        consumer.commit_offsets()
    with topic.get_balanced_consumer(group_name, **FAST) as consumer:
        rest = drain(consumer)
    assert sorted(first + rest) == list(range(100))


def test_with_an_external_kazoo_client(kafka_hosts, zk, topic_name, group_name):
    with KafkaClient(hosts=kafka_hosts) as client:
        topic = make_topic(client, topic_name, 2)
        produce(topic, 50)
        consumer = topic.get_balanced_consumer(group_name, zookeeper=zk, **FAST)
        try:
            assert sorted(drain(consumer)) == list(range(50))
        finally:
            consumer.stop()
        assert zk.connected  # a client given is not stopped
        assert zk.get_children("/consumers/%s/ids" % group_name.decode()) == []


def test_members_leave_no_state_listener_on_an_external_kazoo_client(kafka_hosts, zk, topic_name, group_name):
    """A service that makes and stops members on one KazooClient for weeks: each stop()
    takes its connection state listener off that client, as it would be left there (one per
    member, never called while the connection stays up) for the life of the client."""
    with KafkaClient(hosts=kafka_hosts) as client:
        topic = make_topic(client, topic_name, 2)
        produce(topic, 10)
        def members_listeners():  # kazoo's ChildrenWatch adds listeners of its own: not counted
            return [f for f in zk.state_listeners
                    if getattr(f, "__qualname__", "").startswith("BalancedConsumer._state_listener")]
        for _ in range(3):
            consumer = topic.get_balanced_consumer(group_name, zookeeper=zk, **FAST)
            try:
                assert consumer.consume() is not None
            finally:
                consumer.stop()
        assert members_listeners() == []


def test_the_lease_never_outlasts_the_session_of_a_given_kazoo_client(kafka_hosts, zookeeper_chroot, topic_name,
                                                                       group_name):
    """A KazooClient given with a session shorter than zookeeper_connection_timeout_ms: the
    lease is half the session that ZooKeeper expires, else a member frozen past its session
    (its nodes gone, its partitions claimed by another) handed out messages on waking."""
    from kazoo.client import KazooClient

    from pyrdk.balancedconsumer import _lease_clock
    zk = KazooClient(zookeeper_chroot, timeout=1.0)
    zk.start(timeout=30)
    try:
        with KafkaClient(hosts=kafka_hosts) as client:
            topic = make_topic(client, topic_name, 1)
            consumer = topic.get_balanced_consumer(group_name, zookeeper=zk, zookeeper_connection_timeout_ms=6000)
            try:
                assert sorted(consumer.partitions) == [0]
                for _ in range(20):
                    assert consumer._lease_until - _lease_clock() <= 0.5  # half of the 1 s session
                    time.sleep(0.1)
                assert sorted(consumer.partitions) == [0]  # renewed in time: no gap in the lease
            finally:
                consumer.stop()
    finally:
        zk.stop()
        zk.close()


@pytest.mark.parametrize("own_kazoo", [True, False], ids=["own-kazoo", "kazoo-given"])
def test_a_dropped_member_is_collected_and_leaves_the_group(kafka_hosts, zookeeper_chroot, zk, topic_name,
                                                            group_name, own_kazoo):
    """pykafka's consumers stop when collected: a member the program lets go of without
    stop() must not be kept alive by its coordinator thread, holding its partitions in
    ZooKeeper (and its librdkafka handle) for the life of the process. The thread holds it
    only during a turn (a renewal of its lease, say), which may be under way as it is let
    go of."""
    import gc
    import weakref
    with KafkaClient(hosts=kafka_hosts, zookeeper_hosts=zookeeper_chroot) as client:
        topic = make_topic(client, topic_name, 2)
        produce(topic, 10)
        consumer = topic.get_balanced_consumer(group_name, **(FAST if own_kazoo else dict(FAST, zookeeper=zk)))
        assert consumer.consume() is not None
        ids = "/consumers/%s/ids" % group_name.decode()
        assert len(zk.get_children(ids)) == 1 and len(owners_in_zookeeper(zk, group_name.decode(), topic_name)) == 2
        ref, worker = weakref.ref(consumer), consumer._worker
        del consumer
        until(lambda: gc.collect() >= 0 and ref() is None, "the dropped member to be collected")
        worker.join(PATIENCE_S)
        assert not worker.is_alive()
        until(lambda: zk.get_children(ids) == [] and owners_in_zookeeper(zk, group_name.decode(), topic_name) == {},
              "the dropped member's nodes to go")

@pytest.mark.slow
def test_stop_with_an_external_kazoo_client_while_zookeeper_is_down_frees_the_nodes_later(
        kafka_hosts, topic_name, group_name):
    """stop() cannot delete the nodes while ZooKeeper is down; the given client's session
    outlives the outage, and the nodes go once it is connected again: they would keep the
    partitions from every other member for as long as that session lives."""
    from kazoo.client import KazooClient, KazooState
    server = start_zookeeper_server("a ZooKeeper server of its own")
    with server, KafkaClient(hosts=kafka_hosts) as client:
        topic = make_topic(client, topic_name, 2)
        # the server's longest session (maxSessionTimeout): the outage, the stop and the
        # server's restart take far less, on a loaded machine too
        zk = KazooClient(server.hosts, timeout=60)
        zk.start(timeout=30)
        try:
            consumer = topic.get_balanced_consumer(group_name, zookeeper=zk, **FAST)
            assert sorted(consumer.partitions) == [0, 1]
            session = zk.client_id
            server.stop()
            consumer.stop()
            server.start()
            until(lambda: zk.state == KazooState.CONNECTED, "the client is connected again")
            assert zk.client_id == session
            group = group_name.decode()
            until(lambda: owners_in_zookeeper(zk, group, topic_name) == {}
                  and zk.get_children("/consumers/%s/ids" % group) == [], "the member's nodes are gone")
        finally:
            zk.stop()
            zk.close()


def test_round_robin_protocol_and_idle_extra_member(zk_client, topic_name, group_name):
    topic = make_topic(zk_client, topic_name, 2)
    consumers = [topic.get_balanced_consumer(group_name, membership_protocol=RoundRobinProtocol,
                                             **FAST) for _ in range(3)]
    try:
        until(lambda: sorted(len(c.partitions) for c in consumers) == [0, 1, 1],
              "two members hold one partition each, the third idles")
        idle = next(c for c in consumers if not c.partitions)
        busy = [c for c in consumers if c.partitions]
        busy[0].stop()
        until(lambda: len(idle.partitions) == 1 and len(busy[1].partitions) == 1
              and set(idle.partitions) | set(busy[1].partitions) == {0, 1},
              "the idle member takes over the stopped member's partition")
    finally:
        for c in consumers:
            c.stop()


def test_post_rebalance_callback_sees_offsets_and_may_reset(zk_client, topic_name, group_name):
    topic = make_topic(zk_client, topic_name, 1)
    produce(topic, 20)
    calls = []

    def callback(consumer, old_offsets, new_offsets):
        calls.append((old_offsets, new_offsets))
        return {0: 9}  # the last offset consumed: go on at 10

    with topic.get_balanced_consumer(group_name, post_rebalance_callback=callback, **FAST) as consumer:
        assert calls == [({}, {0: OffsetType.EARLIEST})]  # pykafka's held offset before offset 0
        assert sorted(drain(consumer)) == list(range(10, 20))


def test_post_rebalance_callback_may_key_by_ids_and_partitions(zk_client, topic_name, group_name):
    """Ids and Partition objects in one answer (they do not sort together)."""
    topic = make_topic(zk_client, topic_name, 2)
    produce(topic, 20)
    answer = {1: 4, topic.partitions[0]: 2}
    with topic.get_balanced_consumer(group_name, post_rebalance_callback=lambda c, old, new: answer,
                                     **FAST) as consumer:
        assert consumer.held_offsets == {0: 2, 1: 4}


def test_post_rebalance_callback_gets_the_offsets_held_before_the_rebalance(zk_client, topic_name, group_name):
    """As pykafka: ``old_offsets`` are the held offsets of the consumer the rebalance
    replaced, though the member closed it before giving partitions up."""
    topic = make_topic(zk_client, topic_name, 2)
    produce(topic, 20)
    calls = []

    def callback(consumer, old_offsets, new_offsets):
        calls.append((dict(old_offsets), dict(new_offsets)))

    with topic.get_balanced_consumer(group_name, post_rebalance_callback=callback, **FAST) as first:
        drain(first)
        held = first.held_offsets
        assert sorted(held) == [0, 1] and calls == [({}, {0: OffsetType.EARLIEST, 1: OffsetType.EARLIEST})]
        with topic.get_balanced_consumer(group_name, **FAST) as second:
            until(lambda: len(first.partitions) == 1 and len(second.partitions) == 1,
                  "the two members hold one partition each")
            assert len(calls) == 2
            assert calls[1][0] == held
            assert calls[1][1] == {pid: held[pid] for pid in first.partitions}


def test_post_rebalance_callback_returning_pairs_is_named(zk_client, zk, topic_name, group_name):
    """The callback returns a dict; pairs, as reset_offsets() takes them, are a TypeError
    naming it: from start() for the first rebalance, from consume() for the later ones."""
    topic = make_topic(zk_client, topic_name, 2)
    pairs = lambda consumer, old_offsets, new_offsets: sorted(new_offsets.items())  # noqa: E731
    with pytest.raises(TypeError, match="post_rebalance_callback must return"):
        topic.get_balanced_consumer(group_name, post_rebalance_callback=pairs, **FAST)
    calls = []

    def first_fine(consumer, old_offsets, new_offsets):
        calls.append(new_offsets)
        return None if len(calls) == 1 else pairs(consumer, old_offsets, new_offsets)

    with topic.get_balanced_consumer(group_name, post_rebalance_callback=first_fine, **FAST) as consumer:
        zk.create("/consumers/%s/ids/other" % group_name.decode(), topic.name, ephemeral=True)
        with pytest.raises(TypeError, match="post_rebalance_callback must return"):
            drain(consumer, idle_rounds=40)


def test_reset_offset_on_start(zk_client, topic_name, group_name):
    topic = make_topic(zk_client, topic_name, 1)
    produce(topic, 10)
    with topic.get_balanced_consumer(group_name, **FAST) as consumer:
        assert len(drain(consumer)) == 10
        consumer.commit_offsets()
    with topic.get_balanced_consumer(group_name, **FAST) as consumer:
        assert drain(consumer) == []
    with topic.get_balanced_consumer(group_name, reset_offset_on_start=True,
                                     auto_offset_reset=OffsetType.EARLIEST, **FAST) as consumer:
        assert len(drain(consumer)) == 10


def test_kazoo_is_imported_only_for_the_balanced_consumer():
    check = ("import sys, pyrdk; assert 'kazoo' not in sys.modules; "
             "pyrdk.BalancedConsumer; assert 'kazoo' in sys.modules")
    subprocess.run([sys.executable, "-c", check], check=True, cwd=ROOT)


# -- bad input ---------------------------------------------------------------------------------

@pytest.mark.parametrize("group,error", [(42, TypeError), (None, TypeError), ("", ValueError),
                                          ("a/b", ValueError), ("gr\u00fcppe", UnicodeException),
                                          ("a\x00b", ValueError), (b"a\nb", ValueError), ("a\x7f", ValueError)])
def test_bad_consumer_group_is_named(zk_client, topic_name, group, error):
    topic = make_topic(zk_client, topic_name, 1)
    with pytest.raises(error, match="consumer_group"):
        topic.get_balanced_consumer(group, **FAST)


def test_unreachable_zookeeper_is_a_clear_error(kafka_hosts, topic_name, group_name):
    from kazoo.handlers.threading import KazooTimeoutError

    from pyrdk.balancedconsumer import ZooKeeperUnavailableError
    nobody = "127.0.0.1:%d" % free_port()
    with KafkaClient(hosts=kafka_hosts) as client:
        topic = make_topic(client, topic_name, 1)
        with pytest.raises(ZooKeeperUnavailableError, match="zookeeper_connection_timeout_ms=500") as info:
            topic.get_balanced_consumer(group_name, zookeeper_hosts=nobody,
                                        zookeeper_connection_timeout_ms=500)
        assert nobody in str(info.value) and "or pass managed=True" in str(info.value)
        assert isinstance(info.value, KazooTimeoutError)  # what pykafka raised


def test_missing_chroot_is_named(zk_client, zookeeper_chroot, topic_name, group_name):
    topic = make_topic(zk_client, topic_name, 1)
    with pytest.warns(UserWarning), pytest.raises(ValueError, match="chroot .*/missing"):
        topic.get_balanced_consumer(group_name, zookeeper_hosts=zookeeper_chroot + "/missing", **FAST)


def test_bad_arguments_are_named(zk_client, topic_name, group_name):
    topic = make_topic(zk_client, topic_name, 1)
    with pytest.raises(TypeError, match="membership_protocol"):
        topic.get_balanced_consumer(group_name, membership_protocol="range")
    with pytest.raises(TypeError, match="zookeeper_hosts"):
        topic.get_balanced_consumer(group_name, zookeeper_hosts=5)
    with pytest.raises(TypeError, match="rebalance_backoff_ms"):
        topic.get_balanced_consumer(group_name, rebalance_backoff_ms="2s")
    # The member's SimpleConsumer options are checked at once too: a member that joins idle
    # made its consumer (and raised) only once it claimed a partition, which then stayed unread.
    with pytest.raises(ConfigurationError, match="fetch.max.wait.ms"):
        topic.get_balanced_consumer(group_name, auto_start=False, rdkafka_config={"fetch.max.wait.ms": 50})
    with pytest.raises(ValueError, match="isolation_level"):
        topic.get_balanced_consumer(group_name, auto_start=False, isolation_level="bogus")


# -- rebalancing -------------------------------------------------------------------------------

def test_blocked_consume_wakes_up_for_a_rebalance(zk_client, topic_name, group_name):
    topic = make_topic(zk_client, topic_name, 2)
    kwargs = dict(FAST, consumer_timeout_ms=-1, rebalance_max_retries=2)
    first = topic.get_balanced_consumer(group_name, **kwargs)
    got = []
    reader = threading.Thread(target=lambda: got.append(first.consume()), daemon=True)
    reader.start()
    second = None
    try:
        time.sleep(0.3)  # let it block in consume()
        second = topic.get_balanced_consumer(group_name, **kwargs)
        until(lambda: len(first.partitions) == 1 and len(second.partitions) == 1,
              "the blocked member gives a partition to the new one")
        produce(topic, 50)
        reader.join(PATIENCE_S)
        assert got and got[0] is not None and got[0].partition_id in first.partitions
    finally:
        first.stop()
        if second is not None:
            second.stop()


@pytest.mark.parametrize("leader_id", ["own", 999], ids=["same-name", "other-leader-id"])
def test_partition_owned_elsewhere_waits_then_raises_after_retries(zk_client, zk, topic_name,
                                                                    group_name, leader_id):
    """A foreign ownership node, under the name this member would use or under another
    leader id (as after a leader change), keeps the partition from it."""
    topic = make_topic(zk_client, topic_name, 2)
    produce(topic, 40)
    partition = topic.partitions[1]
    name = "%s-1" % (partition.leader.id if leader_id == "own" else leader_id)
    path = "/consumers/%s/owners/%s/%s" % (group_name.decode(), topic_name, name)
    zk.create(path, b"someone-else", ephemeral=True, makepath=True)
    consumer = topic.get_balanced_consumer(group_name, rebalance_max_retries=2, **dict(
        FAST, rebalance_backoff_ms=50))
    try:
        assert sorted(consumer.partitions) == [0]
        with pytest.raises(PartitionOwnedError) as info:
            drain(consumer, idle_rounds=40)
        assert info.value.partition.id == 1
        assert set(owners_in_zookeeper(zk, group_name.decode(), topic_name)[1]) == {"someone-else"}
        zk.delete(path)
        until(lambda: sorted(consumer.partitions) == [0, 1], "the member claims the freed partition")
        assert len(drain(consumer)) > 0
    finally:
        consumer.stop()


def test_nodes_left_with_a_members_id_are_deleted_at_its_next_rebalance(zk_client, zk, topic_name,
                                                                        group_name):
    """Ownership nodes holding a member's id that the member does not count as held (a
    delete ZooKeeper did not answer in time leaves one behind, as would an older session
    of it) are deleted when it rebalances: the member the partition is decided for gets it."""
    topic = make_topic(zk_client, topic_name, 2)
    owners = "/consumers/%s/owners/%s" % (group_name.decode(), topic_name)
    first = topic.get_balanced_consumer(group_name, **FAST)
    second = None
    try:
        assert sorted(first.partitions) == [0, 1]
        for pid in (0, 1):  # under another leader id: not the nodes it holds
            zk.create("%s/999-%d" % (owners, pid), first.consumer_id, ephemeral=True)
        second = topic.get_balanced_consumer(group_name, **FAST)
        until(lambda: len(first.partitions) == 1 and len(second.partitions) == 1,
              "the second member claims its share")
        assert all(len(o) == 1 for o in owners_in_zookeeper(zk, group_name.decode(), topic_name).values())
    finally:
        first.stop()
        if second is not None:
            second.stop()


def test_a_member_claims_many_partitions_in_a_few_zookeeper_transactions(zk_client, zk, topic_name,
                                                                          group_name):
    """A rebalance creates its ownership nodes in transactions of up to 200 nodes each, not
    one partition at a time: a member alone on 450 partitions claims them all in 3."""
    topic = make_topic(zk_client, topic_name, 450)
    transactions = []
    transaction = zk.transaction

    def counted():
        transactions.append(transaction())
        return transactions[-1]

    zk.transaction = counted
    consumer = topic.get_balanced_consumer(group_name, zookeeper=zk, **FAST)
    try:
        until(lambda: sorted(consumer.partitions) == list(range(450)), "the member holds every partition")
        owners = owners_in_zookeeper(zk, group_name.decode(), topic_name)
        assert owners == {pid: [consumer.consumer_id.decode()] for pid in range(450)}
        assert len(transactions) == 3
    finally:
        consumer.stop()


@pytest.mark.parametrize("applied", [False, True], ids=["not-sent", "answer-lost"])
def test_a_claim_cut_short_by_zookeeper_leaves_no_nodes(zk_client, zk, topic_name, group_name, applied):
    """The connection fails at the second of three transactions of a claim, before it is
    sent or after ZooKeeper applied it (its answer lost): start() raises, and the nodes the
    claim created go with it, though the session of the KazooClient given lives on; they
    would keep those partitions from every other member."""
    from kazoo.exceptions import ConnectionLoss
    topic = make_topic(zk_client, topic_name, 450)
    transactions = []
    transaction = zk.transaction

    def failing_second():
        transactions.append(transaction())
        if len(transactions) == 2:
            commit = transactions[-1].commit_async

            def commit_async():
                if applied:
                    commit().get(timeout=60)
                raise ConnectionLoss()
            transactions[-1].commit_async = commit_async
        return transactions[-1]

    zk.transaction = failing_second
    with pytest.raises(ConnectionLoss):
        topic.get_balanced_consumer(group_name, zookeeper=zk, **FAST)
    del zk.transaction
    assert len(transactions) == 2
    assert owners_in_zookeeper(zk, group_name.decode(), topic_name) == {}
    consumer = topic.get_balanced_consumer(group_name, zookeeper=zk, **FAST)
    try:
        until(lambda: sorted(consumer.partitions) == list(range(450)), "another member takes every partition")
    finally:
        consumer.stop()


def test_a_node_lost_between_the_claim_and_the_lease_is_claimed_again(zk_client, zk, topic_name, group_name,
                                                                       monkeypatch):
    """An ownership node deleted after the claim read it and before the lease renewal that
    ends the rebalance: the member gives the partition up and claims it again at its next
    turn, as no watch would wake it (it waits for no partition), and no other member would
    ever read the partition."""
    from pyrdk import balancedconsumer
    topic = make_topic(zk_client, topic_name, 4)
    claim = balancedconsumer.BalancedConsumer._claim
    deleted = []
    armed = threading.Event()

    def claim_then_delete(self, partitions):
        blocked = claim(self, partitions)
        if armed.is_set() and partitions and not deleted:
            deleted.append(min(self._owned))
            zk.delete(self._owned[deleted[0]])
        return blocked

    monkeypatch.setattr(balancedconsumer.BalancedConsumer, "_claim", claim_then_delete)
    first = topic.get_balanced_consumer(group_name, **FAST)
    second = None
    try:
        until(lambda: sorted(first.partitions) == [0, 1, 2, 3], "the first member holds every partition")
        second = topic.get_balanced_consumer(group_name, **FAST)
        until(lambda: len(first.partitions) == 2 and len(second.partitions) == 2, "the members split the topic")
        armed.set()
        second.stop()  # the first claims the second's partitions; one of its nodes is deleted then
        until(lambda: deleted, "a node of the first member deleted as its claim ends")
        until(lambda: sorted(first.partitions) == [0, 1, 2, 3]
              and sorted(owners_in_zookeeper(zk, group_name.decode(), topic_name)) == [0, 1, 2, 3],
              "the first member claims partition %d again" % deleted[0])
    finally:
        first.stop()
        if second is not None:
            second.stop()


def delete_tree(zk, path):
    """Delete ``path`` and everything under it in one transaction: ``rmr``, without the
    race with a member making its nodes again in between."""
    def walk(node):
        for child in zk.get_children(node):
            yield from walk("%s/%s" % (node, child))
        yield node
    tx = zk.transaction()
    for node in walk(path):
        tx.delete(node)
    assert not any(isinstance(r, Exception) for r in tx.commit())


def test_a_member_makes_the_groups_nodes_again_after_someone_deleted_them(zk_client, zk, topic_name,
                                                                           group_name):
    """``rmr /consumers/<group>`` under a running member: it registers and claims again,
    and watches the group again, so it still sees members come and go."""
    topic = make_topic(zk_client, topic_name, 2)
    owners = "/consumers/%s/owners/%s" % (group_name.decode(), topic_name)
    first = topic.get_balanced_consumer(group_name, **FAST)
    second = None
    try:
        assert sorted(first.partitions) == [0, 1]
        delete_tree(zk, "/consumers/%s" % group_name.decode())
        until(lambda: sorted(first.partitions) == [0, 1] and zk.exists(owners) is not None
              and len(zk.get_children(owners)) == 2, "the member owns its partitions again")
        second = topic.get_balanced_consumer(group_name, **FAST)
        until(lambda: len(first.partitions) == 1 and len(second.partitions) == 1, "the two share")
        second.stop()
        until(lambda: sorted(first.partitions) == [0, 1], "the first takes the partition given back")
    finally:
        first.stop()
        if second is not None:
            second.stop()


def test_members_started_together_back_off_instead_of_raising(zk_client, topic_name, group_name):
    """Members joining at once claim partitions the others still hold, and each change of the
    ownership nodes wakes them: pykafka's backoff (0, 2, 4, 6 s with the defaults) gives the
    owners time to let go, so no PartitionOwnedError comes out of consume(), and every
    message is read once the group settles."""
    topic = make_topic(zk_client, topic_name, 8)
    produce(topic, 400)
    kwargs = dict(zookeeper_connection_timeout_ms=2000, consumer_timeout_ms=500)  # pykafka's backoff
    members, errors, seen = [], [], []
    lock = threading.Lock()

    def member():
        consumer = topic.get_balanced_consumer(group_name, auto_commit_enable=True,
                                               auto_commit_interval_ms=100, **kwargs)
        with lock:
            members.append(consumer)
        try:
            deadline = time.monotonic() + PATIENCE_S
            while time.monotonic() < deadline and len(seen) < 400:
                for message in consumer:
                    with lock:
                        seen.append(int(message.value))
        except PartitionOwnedError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=member, daemon=True) for _ in range(4)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(PATIENCE_S + 30)
        assert errors == [], "a member gave up claiming: %s" % errors
        assert sorted(set(seen)) == list(range(400))
    finally:
        for consumer in members:
            consumer.stop()


def test_owner_churn_does_not_use_up_the_retries(zk_client, zk, topic_name, group_name):
    """Ownership nodes coming and going wake a member that waits for a partition; such early
    looks do not count as pykafka's retries, so PartitionOwnedError comes only after the
    backoff ran its course (here it does not: the partition is freed first)."""
    topic = make_topic(zk_client, topic_name, 2)
    produce(topic, 40)
    owners = "/consumers/%s/owners/%s" % (group_name.decode(), topic_name)
    taken = "%s/%d-1" % (owners, topic.partitions[1].leader.id)
    zk.create(taken, b"someone-else", ephemeral=True, makepath=True)
    consumer = topic.get_balanced_consumer(group_name, rebalance_max_retries=3, rebalance_backoff_ms=2000,
                                           zookeeper_connection_timeout_ms=2000, consumer_timeout_ms=10)
    try:
        assert sorted(consumer.partitions) == [0]
        for i in range(30):  # thirty wake-ups, each a claim that fails
            zk.create("%s/churn-%d" % (owners, i), b"x", ephemeral=True)
            zk.delete("%s/churn-%d" % (owners, i))
            consumer.consume(block=False)
        zk.delete(taken)
        until(lambda: sorted(consumer.partitions) == [0, 1], "the member claims the freed partition")
        assert len(drain(consumer)) > 0
    finally:
        consumer.stop()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # the dying worker
def test_a_member_whose_reading_thread_died_leaves_the_group(zk_client, topic_name, group_name):
    """A worker thread that dies (an exception out of consume(), say) leaves its member
    holding partitions nothing reads: the member gives them back and leaves the group; a
    new call to consume() joins again."""
    topic = make_topic(zk_client, topic_name, 4)
    produce(topic, 200)
    orphan = topic.get_balanced_consumer(group_name, **FAST)
    other = topic.get_balanced_consumer(group_name, **FAST)
    try:
        until(lambda: len(orphan.partitions) == 2 and len(other.partitions) == 2, "two members share")
        read = []

        def worker():
            read.append(orphan.consume())
            raise RuntimeError("the worker dies")

        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
        assert read and read[0] is not None
        until(lambda: len(other.partitions) == 4 and not orphan.partitions,
              "the other member takes the orphaned partitions")
        rest = drain(other)
        # The message the dead worker got was finished (it called nothing after): its
        # partition's commit may include it, but every other message is read.
        assert set(rest) | {int(read[0].value)} == set(range(200))
        joined = threading.Thread(target=lambda: orphan.consume())
        joined.start()
        joined.join()
        until(lambda: len(orphan.partitions) == 2 and len(other.partitions) == 2, "it joins again")
    finally:
        orphan.stop()
        other.stop()


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_member_whose_reading_thread_died_while_zookeeper_was_down_leaves_once_it_is_back(
        kafka_hosts, topic_name, group_name):
    """The member's nodes cannot be deleted while ZooKeeper is down; its session (a given
    client's, of 30 s) outlives the outage, and the member deletes them once ZooKeeper is
    back, instead of keeping its share from the other member for good."""
    from kazoo.client import KazooClient
    server = start_zookeeper_server("a ZooKeeper server of its own")
    with server, KafkaClient(hosts=kafka_hosts) as client:
        topic = make_topic(client, topic_name, 4)
        produce(topic, 200)
        zk = KazooClient(server.hosts, timeout=30)
        zk.start(timeout=30)
        orphan = topic.get_balanced_consumer(group_name, zookeeper=zk, **FAST)
        other = topic.get_balanced_consumer(group_name, zookeeper_hosts=server.hosts, **FAST)
        try:
            until(lambda: len(orphan.partitions) == 2 and len(other.partitions) == 2, "two members share")
            dies = threading.Event()
            worker = threading.Thread(target=lambda: (orphan.consume(), dies.wait()))
            worker.start()
            server.stop()
            dies.set()
            worker.join()
            # The member notices within a third of its session timeout, and its deletes
            # time out after one: ZooKeeper is still down then.
            time.sleep(FAST["zookeeper_connection_timeout_ms"] * 1.5 / 1000.0)
            server.start()
            until(lambda: len(other.partitions) == 4, "the other member takes the orphaned partitions")
            assert orphan._retry_at is None  # nothing left to retry: the coordinator waits
        finally:
            orphan.stop()
            other.stop()
            zk.stop()
            zk.close()


def test_stop_during_a_rebalance_starts_no_consumer_for_the_partitions_kept(zk_client, zk, topic_name,
                                                                            group_name):
    """stop() called while the member gives a partition up (its commit can take a socket
    timeout while Kafka is down) ends the rebalance there: no consumer is started, and no
    rebalance reported, for partitions the member is about to give back."""
    topic = make_topic(zk_client, topic_name, 2)
    revoking, release = threading.Event(), threading.Event()
    reported = []

    def pre_revoke(consumer, pids):
        revoking.set()
        release.wait(PATIENCE_S)

    consumer = topic.get_balanced_consumer(group_name, pre_revoke_callback=pre_revoke,
                                           post_rebalance_callback=lambda c, old, new: reported.append(new),
                                           **FAST)
    stopper = threading.Thread(target=consumer.stop)
    try:
        assert [sorted(new) for new in reported] == [[0, 1]]
        zk.create("/consumers/%s/ids/other" % group_name.decode(), topic.name, ephemeral=True)
        until(revoking.is_set, "the member gives a partition up")
        stopper.start()
        until(consumer._stopping.is_set, "stop() has begun")
        release.set()
        stopper.join()
    finally:
        release.set()
        consumer.stop()
    assert [sorted(new) for new in reported] == [[0, 1]]


@pytest.mark.parametrize("auto_commit", [True, False])
def test_stop_commits_as_pykafka(zk_client, topic_name, group_name, auto_commit):
    """With auto-commit, stop() commits the message last returned as done (pykafka's
    SimpleConsumer.stop() commits held + 1); without, it commits what the program finished
    (the last message returned is not finished until the next call)."""
    topic = make_topic(zk_client, topic_name, 1)
    produce(topic, 10)
    consumer = topic.get_balanced_consumer(group_name, auto_commit_enable=auto_commit,
                                           auto_commit_interval_ms=60000, **FAST)
    got = [consumer.consume() for _ in range(3)]
    consumer.stop()
    assert [m.offset for m in got] == [0, 1, 2]
    assert _committed(topic, group_name) == {0: 3 if auto_commit else 2}


def test_consume_batch_seek_pause_and_resume(zk_client, topic_name, group_name):
    topic = make_topic(zk_client, topic_name, 2)
    with topic.get_producer(linger_ms=5, partitioner=lambda parts, key: parts[int(key)]) as producer:
        for i in range(20):
            producer.produce(b"%d" % i, partition_key=b"%d" % (i % 2))
    with topic.get_balanced_consumer(group_name, **FAST) as consumer:
        batch = []
        deadline = time.monotonic() + PATIENCE_S
        while len(batch) < 20 and time.monotonic() < deadline:
            batch += consumer.consume_batch(max_messages=7, timeout_ms=500)
        assert sorted(int(m.value) for m in batch) == list(range(20))
        assert consumer.consume_batch(5, timeout_ms=200) == []
        consumer.seek(topic.partitions[0], 8)  # partition 0 holds 0, 2, ..., 18 at offsets 0..9
        consumer.pause([1])
        consumer.seek(1, 0)
        again = consumer.consume_batch(100, timeout_ms=1000)
        assert sorted((m.partition_id, m.offset) for m in again) == [(0, 8), (0, 9)]
        assert consumer.consume_batch(100, timeout_ms=300) == []  # partition 1 is paused
        consumer.resume()
        assert sorted(m.offset for m in consumer.consume_batch(100, timeout_ms=1000)) == list(range(10))
        with pytest.raises((TypeError, ValueError)):
            consumer.consume_batch(0)
        with pytest.raises(ValueError):
            consumer.pause([5])
        other = make_topic(zk_client, topic_name + "-other", 2)
        for call in (consumer.pause, consumer.resume):  # not partition 1 of this topic
            with pytest.raises(ValueError, match="is a partition of topic %s, not of" % other.name.decode()):
                call([other.partitions[1]])
    # stop() commits what the program finished: the last batch (partition 1's) is not
    assert _committed(topic, group_name) == {0: 10, 1: 0}


@pytest.mark.slow  # seconds of group coordination or timeouts: the C pass runs it, make soak the pure one
def test_forced_session_expiry_never_leaves_two_owners(zk_client, zk, topic_name, group_name):
    """Close one member's ZooKeeper session from outside: it stops reading at once, joins
    again in a new session, and the two members go on consuming without ever both holding
    a partition."""
    from kazoo.client import KazooClient
    topic = make_topic(zk_client, topic_name, 4)
    produce(topic, 2000)
    group = group_name.decode()
    a = topic.get_balanced_consumer(group_name, **FAST)
    b = topic.get_balanced_consumer(group_name, **FAST)
    seen = []
    samples = []
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            held_a, held_b = set(a.partitions), set(b.partitions)
            samples.append((held_a & held_b, owners_in_zookeeper(zk, group, topic_name)))
            time.sleep(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        until(lambda: len(a.partitions) == 2 and len(b.partitions) == 2, "two partitions each")
        seen += drain(a, b, idle_rounds=1)
        old_session = a._zookeeper.client_id
        thief = KazooClient(zk_client.cluster.zookeeper_hosts, client_id=old_session, timeout=2)
        thief.start(timeout=30)
        thief.stop()  # closing the session expires it for the member too
        thief.close()
        until(lambda: a._zookeeper.client_id != old_session and len(a.partitions) == 2
              and len(b.partitions) == 2, "the member is back in a new session")
        produce(topic, 2000, first=2000)
        seen += drain(a, b)
    finally:
        stop.set()
        sampler.join()
        a.stop()
        b.stop()
    assert set(seen) == set(range(4000))
    assert samples and all(not both for both, _ in samples)
    assert all(len(owners) <= 1 for _, zk_owners in samples for owners in zk_owners.values())


def _first_half(leaders):
    """The partitions the first of two members takes under pykafka's range split, for
    ``{partition id: leader id}`` of topic "moving"."""
    from pyrdk.membershipprotocol import decide_partitions_range
    Named = namedtuple("Named", "id name")  # what the protocol reads of a partition
    Part = namedtuple("Part", "id topic leader")
    parts = [Part(pid, Named(None, "moving"), Named(leader, None)) for pid, leader in leaders.items()]
    return {p.id for p in decide_partitions_range(["a", "b"], parts, "a")}


@pytest.mark.mock
def test_leader_changes_move_partitions_without_two_owners(mock_cluster, zk, zookeeper_chroot,
                                                           group_name, monkeypatch):
    """pykafka's order, and its node names, depend on the leaders: moving leaders makes
    the members (each with its own client, so its own view of the metadata) swap
    partitions, and never makes two of them own one."""
    from pyrdk import balancedconsumer
    from pyrdk.membershipprotocol import decide_partitions_range
    monkeypatch.setattr(balancedconsumer, "METADATA_CHECK_S", 0.3)
    mock_cluster.create_topic("moving", 6, 3)
    clients = [KafkaClient(hosts=mock_cluster.bootstrap_servers, zookeeper_hosts=zookeeper_chroot)
               for _ in range(2)]
    members = [c.topics["moving"].get_balanced_consumer(group_name, **FAST) for c in clients]
    group = group_name.decode()
    ids = [m.consumer_id for m in members]

    def settled():
        held = [set(m.partitions) for m in members]
        expected = [{p.id for p in decide_partitions_range(ids, clients[0].topics["moving"].partitions, i)}
                    for i in ids]
        return held == expected

    with ZooKeeperSampler(zk, group, "moving") as sampler:
        try:
            until(settled, "the members hold what pykafka's range decides")
            before = [set(m.partitions) for m in members]
            leaders = {pid: p.leader.id for pid, p in clients[0].topics["moving"].partitions.items()}
            # The mock cluster places leaders at random, and some moves keep pykafka's
            # split as it is: take the first of these moves that changes it.
            moves = ({pid: 1 + (leader + shift - 1) % 3 if pid % 2 == odd else leader
                      for pid, leader in leaders.items()} for odd in (1, 0) for shift in (1, 2))
            moved = next(m for m in moves if _first_half(m) != _first_half(leaders))
            for pid, leader in moved.items():
                mock_cluster.set_partition_leader("moving", pid, leader)
            until(lambda: all({pid: p.leader.id for pid, p in c.topics["moving"].partitions.items()}
                              == moved for c in clients)
                  and [set(m.partitions) for m in members] != before and settled(),
                  "the members swap partitions for the new leaders")
            both = set(members[0].partitions) & set(members[1].partitions)
        finally:
            for m in members:
                m.stop()
            for c in clients:
                c.close()
    assert both == set()
    assert sampler.samples and sampler.doubles == []


@pytest.mark.mock
def test_partitions_added_after_the_client_is_closed_are_taken(mock_cluster, zookeeper_chroot, group_name,
                                                               monkeypatch):
    """A consumer made before ``KafkaClient.close()`` goes on, and still learns its topic's
    new partitions (through a metadata handle of its own)."""
    from pyrdk import balancedconsumer
    monkeypatch.setattr(balancedconsumer, "METADATA_CHECK_S", 0.3)
    mock_cluster.create_topic("growing", 2)
    client = KafkaClient(hosts=mock_cluster.bootstrap_servers, zookeeper_hosts=zookeeper_chroot)
    member = client.topics["growing"].get_balanced_consumer(
        group_name, rdkafka_config={"allow.auto.create.topics": False}, **FAST)
    try:
        until(lambda: sorted(member.partitions) == [0, 1], "the member holds the topic's partitions")
        client.close()
        mock_cluster.delete_topic("growing")  # made anew with more: the mock cannot add partitions
        mock_cluster.create_topic("growing", 4)
        until(lambda: sorted(member.partitions) == [0, 1, 2, 3], "the member holds the new partitions too")
    finally:
        member.stop()


@pytest.mark.mock
def test_the_coordinator_does_not_recreate_a_deleted_topic(mock_cluster, zookeeper_chroot, group_name, monkeypatch):
    """Re-reading its topic's metadata, the coordinator must not ask the broker to create
    the topic (the client's handle, a producer's, would): a topic deleted under a consumer
    stays deleted, as with pykafka, whose consumers read the whole cluster's metadata."""
    from pyrdk import balancedconsumer
    monkeypatch.setattr(balancedconsumer, "METADATA_CHECK_S", 0.3)
    mock_cluster.create_topic("deleted", 2)
    with KafkaClient(hosts=mock_cluster.bootstrap_servers, zookeeper_hosts=zookeeper_chroot) as client:
        checks = []
        refresh_topic = client.cluster.refresh_topic
        monkeypatch.setattr(client.cluster, "refresh_topic", lambda *args: checks.append(refresh_topic(*args)))
        member = client.topics["deleted"].get_balanced_consumer(group_name, **FAST)
        try:
            until(lambda: sorted(member.partitions) == [0, 1], "the member holds the topic's partitions")
            mock_cluster.delete_topic("deleted")
            after = len(checks) + 1  # the check under way may have asked before the deletion
            until(lambda: len(checks) > after, "the coordinator to check the topic again")
            assert checks[-1] is False  # not listed: gone
        finally:
            member.stop()
    with KafkaClient(hosts=mock_cluster.bootstrap_servers) as fresh:
        assert b"deleted" not in fresh.topics.keys()


@pytest.mark.mock
def test_the_coordinator_reads_its_topics_metadata_alone(mock_cluster, zookeeper_chroot, group_name,
                                                         monkeypatch):
    """Every few seconds the coordinator re-reads its topic's partitions and leaders: the
    metadata of that topic, not the whole cluster's (thousands of topics take a large part
    of a second to read)."""
    from pyrdk import balancedconsumer
    monkeypatch.setattr(balancedconsumer, "METADATA_CHECK_S", 0.3)
    mock_cluster.create_topic("alone", 2, 3)
    with KafkaClient(hosts=mock_cluster.bootstrap_servers, zookeeper_hosts=zookeeper_chroot) as client:
        topic = client.topics["alone"]
        whole = []
        monkeypatch.setattr(client.cluster, "update", lambda: whole.append("update"))
        member = topic.get_balanced_consumer(group_name, **FAST)
        try:
            until(lambda: sorted(member.partitions) == [0, 1], "the member holds the topic's partitions")
            leader = topic.partitions[0].leader.id
            mock_cluster.set_partition_leader("alone", 0, 1 + leader % 3)
            until(lambda: topic.partitions[0].leader.id != leader, "the coordinator sees the new leader")
        finally:
            member.stop()
        assert whole == []


# -- fleets of member processes ----------------------------------------------------------------

MEMBER = dict(zookeeper_connection_timeout_ms=2000, rebalance_backoff_ms=200,
              rebalance_max_retries=50, consumer_timeout_ms=200)


def wait_even(fleet, partitions):
    """Wait until each partition has one owner and every live member holds its share (the
    rebalancing is over, not just passing through a state where each partition is owned)."""
    def even(owners):
        counts = [sum(1 for o in owners.values() if o == [m.name]) for m in fleet.live()]
        return max(counts) - min(counts) <= 1
    fleet.wait_balanced(partitions)
    return fleet.wait_until(lambda owners: sorted(owners) == sorted(partitions)
                            and all(len(o) == 1 for o in owners.values()) and even(owners),
                            "each member holds its share of %s" % sorted(partitions))


def fleet_for(kafka_hosts, zookeeper_hosts, topic_name, **kwargs):
    return Fleet(kafka_hosts, topic_name, unique_name("fleet"),
                 dict(MEMBER, zookeeper_hosts=zookeeper_hosts), **kwargs)


class ZooKeeperSampler:
    """Reads the ownership znodes every few ms on its own thread; ``doubles`` lists each
    sample where a partition had two owner nodes."""

    def __init__(self, zk, group, topic_name):
        self._zk, self._group, self._topic = zk, group, topic_name
        self.samples = []
        self.doubles = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        from kazoo.exceptions import KazooException
        while not self._stop.wait(0.02):
            try:
                owners = owners_in_zookeeper(self._zk, self._group, self._topic)
            except KazooException:
                continue  # ZooKeeper is restarting
            self.samples.append(owners)
            if any(len(o) > 1 for o in owners.values()):
                self.doubles.append(owners)

    def __enter__(self):
        self._zk.ensure_path("/consumers/%s/owners/%s" % (self._group, self._topic))
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


@pytest.mark.slow
def test_fleet_of_three_splits_six_partitions_and_loses_nothing_across_a_restart(
        kafka_hosts, zk_client, zk, zookeeper_chroot, topic_name):
    total = 30000
    topic = make_topic(zk_client, topic_name, 6)
    produce(topic, total)
    # 1 ms of "work" per message keeps the fleet busy long enough to sample it often.
    with fleet_for(kafka_hosts, zookeeper_chroot, topic_name, commit_every=100, delay_ms=1) as fleet, \
            ZooKeeperSampler(zk, fleet.group, topic_name) as sampler:
        fleet.start(3)
        wait_even(fleet, range(6))
        stable_from = len(sampler.samples)
        fleet.wait_until(lambda owners: len(fleet.distinct_processed()) >= total // 3,
                         "a third of the messages processed")
        stable = sampler.samples[stable_from:]
        for member in fleet.live():  # a full restart, the hard way: kill -9 every member...
            fleet.kill(member)
        first_run = len(fleet.distinct_processed())
        fleet.start(3)  # ...and a new fleet goes on from the offsets committed after processing
        fleet.wait_balanced(range(6))
        fleet.wait_processed(total)
        fleet.stop_all()
        processed = fleet.processed()
    keys = {k for _, _, k, _ in processed}
    assert keys == {"k%d" % i for i in range(total)}, "every message is processed at least once"
    assert fleet.samples > 0 and fleet.violations == [], "no partition read by two members at once"
    assert sampler.doubles == [], "no partition with two owner nodes in ZooKeeper"
    unbalanced = [s for s in stable if sorted(s) != list(range(6)) or any(len(o) != 1 for o in s.values())]
    assert len(stable) > 10 and unbalanced == [], "one owner per partition while the fleet is stable"
    assert first_run < total  # the second fleet really had work left...
    assert len(processed) < total + first_run  # ...and did not start from scratch


@pytest.mark.slow
def test_killed_member_is_replaced_and_a_newcomer_takes_its_share(
        kafka_hosts, zk_client, zk, zookeeper_chroot, topic_name):
    topic = make_topic(zk_client, topic_name, 6)
    produce(topic, 3000)
    with fleet_for(kafka_hosts, zookeeper_chroot, topic_name) as fleet, \
            ZooKeeperSampler(zk, fleet.group, topic_name) as sampler:
        members = fleet.start(3)
        wait_even(fleet, range(6))
        victim = members[1]
        fleet.kill(victim)  # kill -9: its session expires, its nodes go
        survivors = [m for m in members if m is not victim]
        fleet.wait_balanced(range(6), members=survivors)
        newcomer = fleet.start_member()
        owners = wait_even(fleet, range(6))
        assert sum(1 for o in owners.values() if o == [newcomer.name]) == 2
        produce(topic, 3000, first=3000)
        fleet.wait_processed(6000)
        processed = fleet.processed()
    assert {k for _, _, k, _ in processed} == {"k%d" % i for i in range(6000)}
    assert fleet.violations == [] and sampler.doubles == []


@pytest.mark.slow
def test_extra_member_idles_then_takes_over(kafka_hosts, zk_client, zookeeper_chroot, topic_name):
    topic = make_topic(zk_client, topic_name, 2)
    with fleet_for(kafka_hosts, zookeeper_chroot, topic_name) as fleet:
        members = fleet.start(3)
        owners = wait_even(fleet, range(2))
        idle = [m for m in members if all(o != [m.name] for o in owners.values())]
        assert len(idle) == 1
        leaving = next(m for m in members if m is not idle[0])
        fleet.stop(leaving)
        owners = wait_even(fleet, range(2))
        assert [idle[0].name] in owners.values()
        produce(topic, 500)
        fleet.wait_processed(500)
    assert fleet.violations == []


@pytest.mark.slow
def test_zookeeper_restart_does_not_stop_the_fleet(kafka_hosts, zk_client, topic_name):
    """The fleet's own ZooKeeper server goes down and comes back on the same port and data:
    sessions survive, members pause while ownership is unconfirmed and then go on."""
    from kazoo.client import KazooClient
    topic = make_topic(zk_client, topic_name, 6)
    produce(topic, 3000)
    server = start_zookeeper_server("a ZooKeeper server of its own")
    with server:
        zk = KazooClient(server.hosts, timeout=10)
        zk.start(timeout=30)
        try:
            with fleet_for(kafka_hosts, server.hosts, topic_name) as fleet, \
                    ZooKeeperSampler(zk, fleet.group, topic_name) as sampler:
                fleet.start(3)
                fleet.wait_balanced(range(6))
                fleet.wait_processed(3000)
                server.stop()
                time.sleep(1)  # down for half a session timeout
                server.start()
                fleet.wait_balanced(range(6))
                produce(topic, 3000, first=3000)
                fleet.wait_processed(6000)
                assert all(m.alive for m in fleet.members)
                processed = fleet.processed()
        finally:
            zk.stop()
            zk.close()
    assert {k for _, _, k, _ in processed} == {"k%d" % i for i in range(6000)}
    assert fleet.violations == [] and sampler.doubles == []


def test_consume_arrow_gives_consume_batchs_messages_as_columns(zk_client, topic_name, group_name):
    topic = make_topic(zk_client, topic_name, 2)
    produce(topic, 100)
    values = []
    with topic.get_balanced_consumer(group_name, **FAST) as consumer:
        deadline = time.monotonic() + 60
        while len(values) < 100 and time.monotonic() < deadline:
            values += consumer.consume_arrow(50, 200).column("value").to_pylist()
        consumer.commit_offsets()
    assert sorted(int(v) for v in values) == list(range(100))
    assert sum(_committed(topic, group_name).values()) == 100  # each partition's next offset: its count


def test_partitions_gone_between_deciding_and_claiming_are_decided_again(zk_client, topic_name, group_name):
    """The topic is re-created with fewer partitions, and a refresh in another thread sees
    it, after this member decided its partitions and before it claimed them: the partitions
    gone are not claimed (no KeyError raised by consume()), and the next rebalance decides
    on the partitions the topic has now."""
    from pyrdk.membershipprotocol import GroupMembershipProtocol, decide_partitions_range
    topic = make_topic(zk_client, topic_name, 4)
    shrunk = []

    def decide_then_shrink(participants, partitions, consumer_id):
        decided = decide_partitions_range(participants, partitions, consumer_id)
        if not shrunk:  # as a refresh by another thread (a producer's poller) would, in between
            shrunk.append(True)
            zk_client.cluster.delete_topics([topic_name])
            deadline = time.monotonic() + PATIENCE_S
            while True:
                try:
                    zk_client.cluster.create_topics([(topic_name, 2, 1)])
                    break
                except Exception:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
            until(lambda: zk_client.cluster.refresh_topic(topic) and len(topic.partitions) == 2,
                  "the topic is seen with 2 partitions")
        return decided

    protocol = GroupMembershipProtocol("consumer", "range", b"", decide_then_shrink)
    consumer = topic.get_balanced_consumer(group_name, membership_protocol=protocol, **FAST)
    try:
        until(lambda: consumer.consume(block=False) is None and sorted(consumer.partitions) == [0, 1],
              "the member holds the 2 partitions left")
    finally:
        consumer.stop()
