"""StormKafkaSpout over Storm's multi-lang protocol: the example topology's spout runs as a
real process, driven as Storm's ShellSpout drives it (pyrdk.testing.multilang), against
the session broker; and a fleet of such spouts in one group, one killed with SIGKILL."""
import os
import random
import signal
import sys
import threading
import time

import pytest

from pyrdk import KafkaClient
from pyrdk.partitioners import hashing_partitioner
from tests.fix_kafka import group_offsets, make_topic, unique_name
from pyrdk.testing.multilang import PATIENCE_S, ShellSpout

pytestmark = pytest.mark.kafka

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "storm_topology")
GROUP = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 500, "max_poll_interval_ms": 6000}


def produce_keyed(topic, count):
    """``count`` messages, value ``v<i>`` and key ``k<i>``: ``{(partition, offset): i}``."""
    with topic.get_producer(linger_ms=5, partitioner=hashing_partitioner) as producer:
        messages = [producer.produce(b"v%d" % i, partition_key=b"k%d" % i) for i in range(count)]
    return {(m.partition_id, m.offset): i for m, i in zip(messages, range(count))}


def start_spout(kafka_hosts, topic_name, group, tmp_path, name="spout", consumer="managed", task_id=3,
                client_options=None, **spout_options):
    """The example's EventSpout as a process (Storm task ``task_id``), configured through the
    topology config."""
    conf = {"topology.name": "event_counts", "pyrdk.hosts": kafka_hosts, "pyrdk.topic": topic_name,
            "pyrdk.consumer_group": group, "pyrdk.consumer": consumer,
            "pyrdk.spout_options": dict({"retry_backoff_ms": 10, "commit_interval_ms": 200}, **spout_options),
            "pyrdk.consumer_options": GROUP if consumer == "managed" else {},
            "pyrdk.client_options": client_options or {}}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(EXAMPLE, "src"), ROOT]))
    return ShellSpout([sys.executable, os.path.join(EXAMPLE, "src", "spouts", "events.py")], conf, env=env,
                      cwd=EXAMPLE, log_path=str(tmp_path / ("%s.log" % name)), task_id=task_id)


def test_the_spout_over_the_multilang_protocol_acks_fails_and_commits(kafka_hosts, client, topic_name, tmp_path):
    topic = make_topic(client, topic_name, 2)
    produced = produce_keyed(topic, 200)
    group = unique_name("storm")
    spout = start_spout(kafka_hosts, topic_name, group, tmp_path, max_retries=1)
    try:
        assert spout.activate() == []
        emitted = []
        deadline = time.monotonic() + PATIENCE_S
        while len(emitted) < 200:
            assert time.monotonic() < deadline, "only %d tuples emitted" % len(emitted)
            got = spout.next()
            assert len(got) <= 1  # one tuple per next, never blocking
            emitted.extend(got)
        # Fields as declared (key, value), ids [topic, partition, offset], each message once.
        assert all(values == ["k%d" % produced[(pid, off)], "v%d" % produced[(pid, off)]] and t == topic_name
                   for values, (t, pid, off) in emitted)
        assert sorted((pid, off) for _, (_, pid, off) in emitted) == sorted(produced)
        ids = [tuple_id for _, tuple_id in emitted]
        random.Random(7).shuffle(ids)
        failed = ids[:10]
        for tuple_id in ids[10:]:  # acks out of order
            assert spout.ack(tuple_id) == []
        for tuple_id in failed:
            spout.fail(tuple_id)
        replays = []
        deadline = time.monotonic() + PATIENCE_S
        while len(replays) < 10:
            assert time.monotonic() < deadline
            replays.extend(spout.next())
        assert sorted(tuple_id for _, tuple_id in replays) == sorted(failed)  # same ids again
        for _, tuple_id in replays[:5]:
            spout.ack(tuple_id)
        for _, tuple_id in replays[5:]:  # the second failure: max_retries=1, reported and skipped
            spout.fail(tuple_id)
        spout.deactivate()  # commits
        ends = {}
        for pid, off in produced:
            ends[pid] = max(ends.get(pid, 0), off + 1)
        assert group_offsets(topic, group.encode()) == ends
        assert spout.errors == []
        assert sum("giving up" in line for line in spout.logs) == 5
    finally:
        spout.close()
    assert spout.process.returncode == 2  # pystorm's exit when Storm goes away


@pytest.mark.timeout(300)
def test_a_spout_emits_nothing_while_no_broker_answers_and_lives_on(own_broker, tmp_path):
    """Every broker down past socket_timeout_ms: the consumer raises NoBrokersAvailableError,
    which ended the spout process (pystorm exits on an exception), and with it every task of
    a fleet at the first outage. The spout says so once and emits nothing meanwhile."""
    hosts = own_broker.bootstrap_servers
    name = unique_name("outage")
    with KafkaClient(hosts=hosts) as admin:
        produced = produce_keyed(make_topic(admin, name, 1), 3)
    spout = start_spout(hosts, name, unique_name("storm"), tmp_path, consumer="simple",
                        client_options={"socket_timeout_ms": 2000})
    try:
        spout.activate()
        emitted = []
        deadline = time.monotonic() + PATIENCE_S
        while len(emitted) < len(produced):
            assert time.monotonic() < deadline, "only %d tuples emitted" % len(emitted)
            emitted.extend(spout.next())
        for _, tuple_id in emitted:
            spout.ack(tuple_id)
        os.kill(own_broker.pid, signal.SIGKILL)
        own_broker.process.wait(10)
        deadline = time.monotonic() + PATIENCE_S
        while not any("emitting nothing until a broker answers" in line for line in spout.logs):
            assert time.monotonic() < deadline, spout.logs[-5:]
            assert spout.next() == [] and spout.alive
        assert [spout.next() for _ in range(3)] == [[], [], []] and spout.alive
    finally:
        spout.close()


def test_a_message_that_makes_no_tuple_fails_and_is_skipped_not_fatal(kafka_hosts, client, topic_name, tmp_path):
    """The default tuple is the key and value decoded as UTF-8: a value that is not fails as
    a tuple would (tried again, then reported and skipped); the spout goes on."""
    topic = make_topic(client, topic_name, 1)
    with topic.get_producer(linger_ms=5) as producer:
        for value in (b"ok0", b"\xff\xfe not UTF-8", b"ok2"):
            producer.produce(value)
    group = unique_name("storm")
    spout = start_spout(kafka_hosts, topic_name, group, tmp_path, consumer="simple", max_retries=1)
    try:
        assert spout.activate() == []
        emitted = []
        deadline = time.monotonic() + PATIENCE_S
        while len(emitted) < 2 or not any("giving up" in line for line in spout.logs):
            assert time.monotonic() < deadline and spout.alive, "emitted %r" % emitted
            emitted.extend(spout.next())
        assert [values[1] for values, _ in emitted] == ["ok0", "ok2"]
        for _, tuple_id in emitted:
            spout.ack(tuple_id)
        spout.deactivate()  # commits
        assert group_offsets(topic, group.encode()) == {0: 3}
    finally:
        spout.close()


def test_a_tuple_id_the_spout_did_not_emit_is_logged_not_fatal(kafka_hosts, client, topic_name, tmp_path):
    """Ids of another shape, and ids shaped as the spout's that it never emitted, answered
    already, or of another topic, are logged (as pystorm's spouts log an unknown id); JSON's
    true and false are no partition or offset numbers."""
    topic = make_topic(client, topic_name, 1)
    produce_keyed(topic, 2)
    group = unique_name("storm")
    spout = start_spout(kafka_hosts, topic_name, group, tmp_path, consumer="simple")
    try:
        assert spout.activate() == []
        emitted = []
        deadline = time.monotonic() + PATIENCE_S
        while len(emitted) < 2:
            assert time.monotonic() < deadline and spout.alive, "emitted %r" % emitted
            emitted.extend(spout.next())
        for bad in (None, "garbage", [topic_name, [0], 0], {"id": 1}):
            assert spout.ack(bad) == []
            assert spout.fail(bad) == []
        assert spout.alive
        for bad in ([topic_name, False, 1], [topic_name, 0, True]):  # would be partition 0, offset 1
            assert spout.ack(bad) == []
        assert sum("Received ack for a tuple ID" in line for line in spout.logs) == 6
        first = emitted[0][1]
        assert spout.ack(first) == []
        for unknown in ([topic_name, 0, 999], [topic_name, 7, 0], ["another-topic", 0, 0], first):
            assert spout.ack(unknown) == []
            assert spout.fail(unknown) == []
        assert sum("for an unknown tuple ID" in line for line in spout.logs) == 8
        assert spout.alive
        spout.deactivate()  # commits
        assert group_offsets(topic, group.encode()) == {0: 1}  # the second tuple was not acked
    finally:
        spout.close()


def test_exactly_once_spout_tasks_of_one_component_do_not_fence_each_other(kafka_hosts, client, topic_name,
                                                                           tmp_path):
    """Each task's transactional id gets its task id: two tasks with the topology's one
    transactional_id each commit their own transactions."""
    topic = make_topic(client, topic_name, 2)
    make_topic(client, topic_name + "-out", 1)
    produce_keyed(topic, 20)
    group = unique_name("storm-eos")
    options = dict(output_topic=topic_name + "-out", transactional_id=unique_name("tx"))
    spouts = [start_spout(kafka_hosts, topic_name, group, tmp_path, name="task%d" % task, consumer="simple",
                          task_id=task, **options) for task in (3, 4)]
    try:
        for spout in spouts:
            assert spout.activate() == []
        for spout in spouts:
            emitted = []
            deadline = time.monotonic() + PATIENCE_S
            while len(emitted) < 5:
                assert time.monotonic() < deadline and spout.alive, spout.errors
                emitted.extend(spout.next())
            for _, tuple_id in emitted:
                spout.ack(tuple_id)
            spout.deactivate()  # commits in a transaction
        for spout in spouts:
            spout.deactivate()
            assert spout.alive and spout.errors == []
    finally:
        for spout in spouts:
            spout.close()


def test_fleet_of_spouts_loses_nothing_when_one_is_killed(kafka_hosts, client, topic_name, tmp_path):
    """Several spout processes in one group; the driver (Storm) acks and fails tuples out of
    order; one spout is killed with SIGKILL mid-run and another started. Every message is
    acked at least once; duplicates come only from partitions that changed owner."""
    topic = make_topic(client, topic_name, 4)
    produced = produce_keyed(topic, 4000)
    group = unique_name("storm-fleet")
    max_uncommitted = 400
    options = dict(max_spout_pending=100, max_uncommitted_offsets=max_uncommitted, max_retries=None)
    rng = random.Random(11)
    spouts = {}
    pools = {}  # spout name -> [tuple ids in flight]
    owners = {}  # partition -> name of the spout that emitted it last
    transitions = 0  # times a partition was emitted by another spout than before
    last = {}  # partition -> the last offset emitted for the first time or read again
    rewinds = 0  # times a partition was read again from before its last offset (from a commit)
    failed_ids = {}  # spout name -> ids it failed, whose replay is due
    acked = []  # (partition, offset) of every ack sent, duplicates included
    failed = 0

    starting = {}  # name -> (thread, [the spout once started]) of a spout process starting

    def start(name):
        """A spout process started in a thread, as Storm starts a task while the others run:
        its start (a Python process importing pyrdk, the handshake) takes seconds on a
        loaded machine, and a driver waiting for it sent the running spouts no ``next`` --
        for longer than max_poll_interval_ms, so that they left the group (librdkafka's
        MAXPOLL) and it rebalanced for nothing."""
        box = []
        thread = threading.Thread(target=lambda: box.append(
            start_spout(kafka_hosts, topic_name, group, tmp_path, name=name, **options)), daemon=True)
        thread.start()
        starting[name] = (thread, box)

    def take_started():
        for name, (thread, box) in list(starting.items()):
            if not thread.is_alive():
                del starting[name]
                assert box, "spout %s did not start (see %s.log)" % (name, name)
                spouts[name] = box[0]
                box[0].activate()
                pools[name] = []
                failed_ids[name] = set()

    start("a")
    start("b")
    killed = restarted = False
    deadline = time.monotonic() + 4 * PATIENCE_S
    try:
        while len(set(acked)) < len(produced):
            assert time.monotonic() < deadline, "%d of %d messages acked" % (len(set(acked)), len(produced))
            take_started()
            if not spouts:
                time.sleep(0.01)
            for name, spout in list(spouts.items()):
                for _, tuple_id in spout.next():
                    pid, offset = tuple_id[1], tuple_id[2]
                    if owners.get(pid, name) != name:
                        transitions += 1
                    owners[pid] = name
                    if tuple(tuple_id) in failed_ids[name]:
                        failed_ids[name].discard(tuple(tuple_id))  # a replay
                    else:
                        if offset <= last.get(pid, -1):
                            rewinds += 1
                        last[pid] = offset
                    pools[name].append(tuple_id)
                pool = pools[name]
                while len(pool) > rng.randint(0, 30):  # answer some, out of order
                    tuple_id = pool.pop(rng.randrange(len(pool)))
                    if rng.random() < 0.1:
                        spout.fail(tuple_id)
                        failed_ids[name].add(tuple(tuple_id))
                        failed += 1
                    else:
                        spout.ack(tuple_id)
                        acked.append((tuple_id[1], tuple_id[2]))
            if not killed and len(set(acked)) >= len(produced) // 3 and len(owners) == 4:
                spouts.pop("a").kill()  # its tuples in flight are never answered
                pools.pop("a")
                killed = True
            if killed and not restarted and len(set(acked)) >= len(produced) // 2:
                start("c")
                restarted = True
        for spout in spouts.values():
            spout.deactivate()
    finally:
        for thread, box in starting.values():
            thread.join(PATIENCE_S)
            spouts.update(("starting%d" % i, spout) for i, spout in enumerate(box))
        for spout in spouts.values():
            spout.close()
    lost = set(produced) - set(acked)
    duplicates = len(acked) - len(set(acked))
    print("\nspout fleet: %d messages, %d acks, %d fails, lost %d, duplicates %d, %d changes of owner, "
          "%d partitions read again from a commit" % (len(produced), len(acked), failed, len(lost), duplicates,
                                                      transitions, rewinds))
    assert killed and restarted
    assert not lost
    # A partition read again from its commit re-emits at most what its previous reader
    # tracked uncommitted: max_uncommitted_offsets.
    assert duplicates <= rewinds * max_uncommitted

