"""Fixtures for the rd tests: handles closed at teardown, and the same test on the mock
cluster and on a real broker."""
import pytest

from pyrdk.rd import admin
from pyrdk.rd.callbacks import Callbacks
from pyrdk.rd.handle import Handle


@pytest.fixture
def handles():
    """``handles(kind, config, closed_exc=None, **handlers)``: a ``Handle`` with a fresh
    ``Callbacks(**handlers)``, closed (newest first) after the test.

    Request it after ``mock_cluster`` so the handles close before the cluster goes away.
    """
    made = []

    def make(kind, config, closed_exc=None, **handlers):
        kwargs = {} if closed_exc is None else {"closed_exc": closed_exc}
        handle = Handle(kind, config, Callbacks(**handlers), **kwargs)
        made.append(handle)
        return handle

    yield make
    for handle in reversed(made):
        if not handle.closed:
            handle.close()


class Brokers:
    """Where a test produces and consumes: ``hosts`` and ``create_topic(name, partitions)``."""

    def __init__(self, kind, hosts, create_topic):
        self.kind = kind
        self.hosts = hosts
        self.create_topic = create_topic


def _admin_create(hosts):
    def create_topic(name, partitions=1):
        handle = Handle("producer", {"bootstrap.servers": hosts})
        try:
            result = admin.create_topics(handle, [(name, partitions, 1, None)])
        finally:
            handle.close()
        assert result == {name: None}
    return create_topic


@pytest.fixture(params=[pytest.param("mock", marks=pytest.mark.mock),
                        pytest.param("kafka", marks=pytest.mark.kafka)])
def brokers(request):
    """The same test on librdkafka's mock cluster and on the session's real broker (Tansu).

    Request it before ``handles``, so handles close before a mock cluster goes away.
    """
    if request.param == "mock":
        cluster = request.getfixturevalue("mock_cluster")
        return Brokers("mock", cluster.bootstrap_servers,
                       lambda name, partitions=1: cluster.create_topic(name, partitions, 1))
    hosts = request.getfixturevalue("kafka_hosts")
    return Brokers("kafka", hosts, _admin_create(hosts))
