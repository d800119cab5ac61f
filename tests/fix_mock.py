"""The ``mock_cluster`` fixture: librdkafka's in-process mock cluster of 3 brokers."""
import pytest


@pytest.fixture
def mock_cluster():
    """A fresh mock cluster per test (fault injection must not leak between tests)."""
    from pyrdk.rd.mock import MockCluster
    cluster = MockCluster(3)
    yield cluster
    cluster.close()
