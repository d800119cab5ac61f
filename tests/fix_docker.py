"""Apache Kafka in Docker for the whole suite, opt-in: with ``PYRDK_TEST_DOCKER=1``, the
``docker_kafka`` session fixture starts Confluent's ``cp-kafka`` image (Apache Kafka, with
its ZooKeeper in the same container) through testcontainers' kafka module, and
``kafka_hosts`` and ``zookeeper_hosts`` point at it instead of Tansu and the local
ZooKeeper. The Tansu-only xfails then run as plain tests and must pass.

Without a Docker engine that answers, the fixture fails every test that needs a broker and
says why; it never falls back to Tansu behind the person's back.
"""
import os

import pytest

from tests.conftest import server_unavailable

KAFKA_IMAGE = os.environ.get("PYRDK_TEST_KAFKA_IMAGE", "confluentinc/cp-kafka:7.6.0")
ZOOKEEPER_PORT = 2181


def docker_wanted():
    """True when ``PYRDK_TEST_DOCKER=1`` asks for Apache Kafka in Docker."""
    return os.environ.get("PYRDK_TEST_DOCKER") == "1"


def docker_engine_problem():
    """None when a Docker engine answers a ping, else what is wrong, in words."""
    try:
        import docker
    except ImportError:
        return "the docker and testcontainers packages are missing: pip install 'pyrdk[test]'"
    try:
        engine = docker.from_env(timeout=10)
        try:
            engine.ping()
        finally:
            engine.close()
    except Exception as exc:
        return ("no Docker engine answers (DOCKER_HOST=%s): %s"
                % (os.environ.get("DOCKER_HOST", "unset, so unix:///var/run/docker.sock"), exc))
    return None


class DockerKafka:
    """A started ``KafkaContainer``: ``bootstrap_servers`` and ``zookeeper_hosts``."""

    def __init__(self):
        from testcontainers.community.kafka import KafkaContainer
        self.container = KafkaContainer(KAFKA_IMAGE).with_exposed_ports(ZOOKEEPER_PORT)
        self.container.with_env("KAFKA_AUTO_CREATE_TOPICS_ENABLE", "true")

    def start(self):
        self.container.start(timeout=180)
        return self

    @property
    def bootstrap_servers(self):
        return self.container.get_bootstrap_server()

    @property
    def zookeeper_hosts(self):
        return "%s:%s" % (self.container.get_container_host_ip(),
                          self.container.get_exposed_port(ZOOKEEPER_PORT))

    def stop(self):
        self.container.stop()


@pytest.fixture(scope="session")
def docker_kafka():
    """The session's :class:`DockerKafka` with ``PYRDK_TEST_DOCKER=1``, else None."""
    if not docker_wanted():
        yield None
        return
    problem = docker_engine_problem()
    if problem is not None:
        server_unavailable("PYRDK_TEST_DOCKER=1 asks for Apache Kafka in Docker, but %s. Start a "
                           "Docker engine, or unset PYRDK_TEST_DOCKER to test against Tansu" % problem)
    kafka = DockerKafka()
    try:
        kafka.start()
    except Exception as exc:
        kafka.stop()
        server_unavailable("PYRDK_TEST_DOCKER=1: could not start %s with testcontainers: %s"
                           % (KAFKA_IMAGE, exc))
    try:
        yield kafka
    finally:
        kafka.stop()
