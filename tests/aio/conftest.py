"""Fixtures of the asyncio tests: topics on the session broker, and consumer options for a
group that joins fast (Tansu holds a new member's JoinGroup until the rebalance timeout)."""
import pytest

from tests.fix_kafka import make_topic, unique_name

FAST_GROUP = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 500, "max_poll_interval_ms": 6000}


@pytest.fixture
def new_topic(client):
    """Make a fresh topic: ``new_topic(partitions=4)`` returns its name."""
    def make(partitions=4):
        name = unique_name("aio")
        make_topic(client, name, partitions)
        return name
    return make
