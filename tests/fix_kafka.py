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


@pytest.fixture
def topic(client, topic_name):
    """A fresh topic with 4 partitions on the session broker."""
    return make_topic(client, topic_name, 4)
