"""Programs written for pykafka 2.8 as its docs and its users write them (tests/compat/programs/),
run unmodified after ``pyrdk.install_as_pykafka()`` (tests/compat/run.py) against the test
broker and ZooKeeper. Each program checks its own output and prints OK; the tests check
the exit status and what the program printed."""
import hashlib
import json
import os
import subprocess
import sys
import time

import pytest

from tests.fix_kafka import make_topic, on_tansu, tansu_gap, unique_name

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")

pytestmark = pytest.mark.kafka


def run_program(name, **env):
    """Run ``programs/<name>`` under ``tests.compat.run`` with ``env`` added to the
    environment; its stdout and stderr. It must exit 0 and print OK last."""
    full_env = dict(os.environ, **{key: str(value) for key, value in env.items()})
    result = subprocess.run([sys.executable, "-m", "tests.compat.run", os.path.join(PROGRAMS, name)],
                            cwd=ROOT, env=full_env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, "%s failed:\n%s\n%s" % (name, result.stdout, result.stderr)
    assert result.stdout.splitlines()[-1] == "OK", result.stdout
    return result.stdout, result.stderr


def lines_starting(out, word):
    return [line.split()[1:] for line in out.splitlines() if line.startswith(word + " ")]


@pytest.mark.zookeeper
def test_getting_started_and_consumer_patterns(client, kafka_hosts, zookeeper_chroot, topic_name,
                                               group_name):
    make_topic(client, topic_name, 1)
    out, err = run_program("getting_started.py", KAFKA_HOSTS=kafka_hosts, ZOOKEEPER_HOSTS=zookeeper_chroot,
                           TOPIC=topic_name, GROUP=group_name.decode())
    assert ["0 b'test message 0'", "1 b'test message 1'", "2 b'test message 4'",
            "3 b'test message 9'"] == [line for line in out.splitlines() if "test message" in line
                                       and not line.startswith("balanced")]
    # zookeeper_connect works, and says it is pykafka's old name, pointing at the program's line
    assert "getting_started.py" in err and "DeprecationWarning: zookeeper_connect is deprecated" in err


def test_utf8_serializers_and_compat_helpers(client, kafka_hosts, topic_name):
    make_topic(client, topic_name, 3)
    out, _ = run_program("utf8_serializers.py", KAFKA_HOSTS=kafka_hosts, TOPIC=topic_name)
    assert "PY3 True count 40" in out
    assert "caf\u00e9" in out  # str back, decoded


def test_kafka_tools_admin_requests(kafka_hosts, topic_name, group_name):
    out, _ = run_program("kafka_tools_admin.py", KAFKA_HOSTS=kafka_hosts, TOPIC=topic_name,
                         GROUP=group_name.decode())
    assert "Partitions: 3" in out
    assert "read [b'after the reset']" in out


@pytest.mark.zookeeper
def test_worker_on_the_cluster_handler(client, kafka_hosts, zookeeper_chroot, topic_name, group_name):
    make_topic(client, topic_name, 2)
    out, err = run_program("handler_worker.py", KAFKA_HOSTS=kafka_hosts, ZOOKEEPER_HOSTS=zookeeper_chroot,
                           TOPIC=topic_name, GROUP=group_name.decode())
    assert lines_starting(out, "jobs") == [["50", "thread", "0:", "worker"]]  # pykafka's thread name
    assert "DeprecationWarning: zookeeper_connect is deprecated" in err


def register_brokers(zk, kafka_hosts):
    """Register each broker of ``kafka_hosts`` under /brokers/ids as Kafka does: an ephemeral
    node per broker id holding Kafka's JSON (listeners, endpoints, host and port)."""
    for broker_id, address in enumerate(kafka_hosts.split(",")):
        host, port = address.strip().rsplit(":", 1)
        info = {"listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
                "endpoints": ["PLAINTEXT://%s:%s" % (host, port)], "jmx_port": -1, "features": {},
                "host": host, "timestamp": str(int(time.time() * 1000)), "port": int(port), "version": 5}
        zk.create("/brokers/ids/%d" % broker_id, json.dumps(info).encode(), ephemeral=True, makepath=True)


@pytest.mark.zookeeper
def test_client_finds_the_brokers_in_zookeeper(client, kafka_hosts, zookeeper_chroot, topic_name):
    from kazoo.client import KazooClient
    make_topic(client, topic_name, 1)
    zk = KazooClient(zookeeper_chroot, timeout=10)
    zk.start(timeout=30)
    try:
        register_brokers(zk, kafka_hosts)
        out, _ = run_program("zookeeper_discovery.py", ZOOKEEPER_HOSTS=zookeeper_chroot, TOPIC=topic_name)
    finally:
        zk.stop()
        zk.close()
    assert "read [b'found through ZooKeeper']" in out


def test_internal_topics_hidden_then_used(kafka_hosts):
    name = "__" + unique_name("internal")
    out, _ = run_program("internal_topics.py", KAFKA_HOSTS=kafka_hosts, TOPIC=name)
    assert "hidden:" in out and "exclude_internal_topics" in out
    assert "read [b'inside']" in out


def pykafka_hashing_placement(partition_ids, key):
    """Where pykafka 2.8 put ``key``: its Producer hands ``list(topic.partitions.values())``
    to the partitioner, and ``HashingPartitioner`` sorts them (by id, ``Partition.__lt__``)
    and takes ``abs(int(sha1(key).hexdigest(), 16)) % len(partitions)``."""
    ordered = sorted(partition_ids)
    return ordered[abs(int(hashlib.sha1(key).hexdigest(), 16)) % len(ordered)]


@pytest.mark.parametrize("partitions", [1, 5, 7])
def test_hashing_partitioner_places_keys_where_pykafka_did(client, kafka_hosts, topic_name, partitions):
    topic = make_topic(client, topic_name, partitions)
    out, _ = run_program("keyed_placement.py", KAFKA_HOSTS=kafka_hosts, TOPIC=topic_name)
    ids = sorted(topic.partitions)
    # pykafka passed its metadata's order; librdkafka's metadata, and so pyrdk's, is by id
    assert lines_starting(out, "order") == [[str(i) for i in ids]]
    placed = lines_starting(out, "placed")
    assert len(placed) == 200
    for key, partition_id in placed:
        assert int(partition_id) == pykafka_hashing_placement(ids, key.encode()), key
    if partitions > 1:
        assert len({p for _, p in placed}) == partitions  # the check is not vacuous


# -- recipes on pykafka's offset semantics and private names --------------------------------------

TANSU_LATEST_GAP = ("ListOffsets answers the last batch's base offset + 1 as the log end after a "
                    "batched produce (these programs produce in batches)")


@pytest.fixture(params=["tansu", "mock"])
def any_broker(request, client, kafka_hosts):
    """``(hosts, make_topic(name, partitions))`` of the test broker, and of librdkafka's mock
    cluster, whose ListOffsets answers the log end right (Tansu's does not after a batch)."""
    if request.param == "tansu":
        if on_tansu():
            request.applymarker(tansu_gap(TANSU_LATEST_GAP))
        yield kafka_hosts, lambda name, partitions: make_topic(client, name, partitions)
        return
    mock_cluster = request.getfixturevalue("mock_cluster")
    yield mock_cluster.bootstrap_servers, mock_cluster.create_topic


@pytest.mark.mock
def test_last_n_messages_recipe(any_broker, topic_name):
    hosts, create = any_broker
    create(topic_name, 2)
    out, _ = run_program("last_n_messages.py", KAFKA_HOSTS=hosts, TOPIC=topic_name)
    assert "last [(0, 8), (0, 9), (1, 8), (1, 9)]" in out


@pytest.mark.mock
def test_consumer_lag_printer(any_broker, topic_name, group_name):
    hosts, create = any_broker
    create(topic_name, 2)
    out, _ = run_program("consumer_lag.py", KAFKA_HOSTS=hosts, TOPIC=topic_name, GROUP=group_name.decode())
    assert "Total lag: 16 messages." in out


def test_offset_states(client, kafka_hosts, topic_name, group_name):
    make_topic(client, topic_name, 1)
    run_program("offset_states.py", KAFKA_HOSTS=kafka_hosts, TOPIC=topic_name, GROUP=group_name.decode())


def test_wait_all(client, kafka_hosts, topic_name):
    make_topic(client, topic_name, 2)
    out, _ = run_program("wait_all.py", KAFKA_HOSTS=kafka_hosts, TOPIC=topic_name)
    assert "delivered before stop 100" in out


def test_managed_consumer_iterates_once_joined(client, kafka_hosts, topic_name, group_name):
    make_topic(client, topic_name, 2)
    out, _ = run_program("managed_iteration.py", KAFKA_HOSTS=kafka_hosts, TOPIC=topic_name,
                         GROUP=group_name.decode())
    assert "managed [b'test message 0', b'test message 1', b'test message 2', b'test message 3']" in out
