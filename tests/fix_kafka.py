"""The ``kafka_hosts`` session fixture: a Tansu broker started for the session, or the
cluster named by ``PYRDK_TEST_BROKERS``; plus per-test topic names and clients."""
import os
import uuid

import pytest

from tests.conftest import server_unavailable


@pytest.fixture(scope="session")
def kafka_hosts(docker_kafka):
    """Bootstrap servers of a real Kafka-compatible broker: Apache Kafka in Docker with
    ``PYRDK_TEST_DOCKER=1`` (tests/fix_docker.py), the cluster of ``PYRDK_TEST_BROKERS``, or
    a Tansu broker started for the session."""
    if docker_kafka is not None:
        yield docker_kafka.bootstrap_servers
        return
    external = os.environ.get("PYRDK_TEST_BROKERS")
    if external:
        yield external
        return
    from pyrdk.testing import TansuBroker
    broker = TansuBroker()
    try:
        broker.start()
    except Exception as exc:
        server_unavailable("could not start the Tansu broker: %s" % exc)
    try:
        yield broker.bootstrap_servers
    finally:
        broker.stop()


@pytest.fixture
def own_broker():
    """A Tansu broker of the test's own (a ``pyrdk.testing.TansuBroker``), which it may kill,
    restart or fill with what the session's broker must not hold; stopped by pid at the end
    whatever happens."""
    from pyrdk.testing import TansuBroker
    broker = TansuBroker().start()
    yield broker
    broker.stop()


def on_tansu():
    """True unless the tests run against another cluster (``PYRDK_TEST_BROKERS``, or Apache
    Kafka in Docker with ``PYRDK_TEST_DOCKER=1``)."""
    return not os.environ.get("PYRDK_TEST_BROKERS") and os.environ.get("PYRDK_TEST_DOCKER") != "1"


def tansu_gap(reason):
    """xfail a test that shows a known gap of Tansu: on Tansu it must fail its assertion,
    on any other broker it must pass."""
    return pytest.mark.xfail(on_tansu(), reason="Tansu: " + reason, strict=True,
                             raises=(AssertionError, pytest.fail.Exception))


def unique_name(prefix="t"):
    return "%s-%s" % (prefix, uuid.uuid4().hex[:12])


@pytest.fixture
def topic_name():
    """A topic name no other test uses."""
    return unique_name("topic")


@pytest.fixture
def group_name():
    """A consumer group name no other test uses."""
    return unique_name("group").encode()


@pytest.fixture
def client(kafka_hosts):
    """A KafkaClient on the session broker."""
    from pyrdk import KafkaClient
    c = KafkaClient(hosts=kafka_hosts)
    yield c
    c.close()


def make_topic(client, name, partitions=4):
    """Create ``name`` with ``partitions`` partitions and return ``client.topics[name]``."""
    client.cluster.create_topics([(name, partitions, 1)])
    return client.topics[name]


def group_offsets(topic, group):
    """``{partition: committed offset}`` of consumer group ``group`` (bytes) on ``topic`` (-1: none)."""
    consumer = topic.get_simple_consumer(group)
    try:
        return {pid: r.offset for pid, r in consumer.fetch_offsets()}
    finally:
        consumer.stop()


@pytest.fixture
def topic(client, topic_name):
    """A fresh topic with 4 partitions on the session broker."""
    return make_topic(client, topic_name, 4)


# -- consumer groups -----------------------------------------------------------------------------

# A managed group member that joins fast: Tansu holds a new member's JoinGroup until the
# rebalance timeout (max_poll_interval_ms).
MANAGED = {"managed": True, "session_timeout_ms": 6000, "heartbeat_interval_ms": 500,
           "max_poll_interval_ms": 8000, "consumer_timeout_ms": 200}


def fill(topic, counts):
    """Produce ``counts[pid]`` messages ``m<i>`` to each partition, one per produce request
    (Tansu's ListOffsets misreports the log end after a batch of several)."""
    with topic.get_sync_producer(partitioner=lambda partitions, key: partitions[int(key)]) as producer:
        for pid, n in counts.items():
            for i in range(n):
                producer.produce(b"m%d" % i, partition_key=b"%d" % pid)


def commit(topic, group, offsets):
    """Commit ``{partition id: next offset}`` for ``group``, as a pyrdk consumer does (one of
    these partitions only: starting commits the start of a partition without an offset)."""
    consumer = topic.get_simple_consumer(consumer_group=group, partitions=sorted(offsets))
    try:
        consumer.commit_offsets([(topic.partitions[pid], offset) for pid, offset in offsets.items()])
    finally:
        consumer.stop()


def running_member(topic, group):
    """A managed consumer of ``group`` that holds partitions: the group is running. Stop it."""
    import time
    consumer = topic.get_balanced_consumer(group, **MANAGED)
    deadline = time.monotonic() + 60
    while not consumer.partitions:
        if time.monotonic() > deadline:
            consumer.stop()
            raise AssertionError("the managed consumer got no partition in 60 s")
        consumer.consume(block=False)
    return consumer
