"""The ``zookeeper_hosts`` session fixture: a ZooKeeper server started for the session, or
the one named by ``PYRDK_TEST_ZOOKEEPER``; plus a chroot per test and a kazoo client on it."""
import os
import uuid

import pytest

from tests.conftest import server_unavailable


@pytest.fixture(scope="session")
def zookeeper_server(docker_kafka):
    """The session's :class:`pyrdk.testing.ZooKeeperServer`, or None when the tests use an
    external ZooKeeper (``PYRDK_TEST_ZOOKEEPER``) or the one in the Kafka container
    (``PYRDK_TEST_DOCKER=1``)."""
    if os.environ.get("PYRDK_TEST_ZOOKEEPER") or docker_kafka is not None:
        yield None
        return
    server = start_zookeeper_server("the ZooKeeper server")
    try:
        yield server
    finally:
        server.close()


def start_zookeeper_server(what):
    """A started :class:`pyrdk.testing.ZooKeeperServer`; a failure to start is a test
    failure naming ``what`` (see ``server_unavailable``)."""
    from pyrdk.testing import ZooKeeperServer
    server = ZooKeeperServer()
    try:
        server.start()
    except Exception as exc:
        server.close()
        server_unavailable("could not start %s: %s" % (what, exc))
    return server


@pytest.fixture(scope="session")
def zookeeper_hosts(zookeeper_server, docker_kafka):
    """Connect string of a real ZooKeeper server."""
    if docker_kafka is not None:
        return docker_kafka.zookeeper_hosts
    return os.environ.get("PYRDK_TEST_ZOOKEEPER") or zookeeper_server.hosts


@pytest.fixture
def zookeeper_chroot(zookeeper_hosts):
    """A connect string with a chroot no other test uses (``hosts/pyrdk-test-<uuid>``);
    the chroot exists, and is removed after the test."""
    from kazoo.client import KazooClient
    from kazoo.exceptions import NoNodeError, NotEmptyError
    chroot = "/pyrdk-test-%s" % uuid.uuid4().hex[:12]
    zk = KazooClient(zookeeper_hosts, timeout=10)
    zk.start(timeout=30)
    try:
        zk.ensure_path(chroot)
        yield zookeeper_hosts + chroot
        try:
            zk.delete(chroot, recursive=True)
        except (NoNodeError, NotEmptyError):  # a member's session is still closing
            pass
    finally:
        zk.stop()
        zk.close()


@pytest.fixture
def zk(zookeeper_chroot):
    """A started kazoo client on the test's chroot, to look at and meddle with the znodes."""
    from kazoo.client import KazooClient
    client = KazooClient(zookeeper_chroot, timeout=10)
    client.start(timeout=30)
    yield client
    client.stop()
    client.close()
