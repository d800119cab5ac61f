"""pyrdk.testing.ZooKeeperServer: a real server that restarts on the same port and data."""
import os

import pytest

from pyrdk.testing import ZooKeeperServer

pytestmark = pytest.mark.zookeeper


def test_sessions_and_ephemeral_nodes_survive_a_restart():
    from kazoo.client import KazooClient, KazooState
    with ZooKeeperServer() as server:
        zk = KazooClient(server.hosts, timeout=5)
        zk.start(timeout=30)
        try:
            session = zk.client_id
            zk.create("/member", b"x", ephemeral=True)
            port = server.port
            server.restart()
            assert server.port == port
            zk.retry(zk.get, "/member")  # waits for the reconnection
            assert zk.state == KazooState.CONNECTED
            assert zk.client_id == session
            assert zk.get("/member")[1].ephemeralOwner == session[0]
        finally:
            zk.stop()
            zk.close()
    assert server.pid is None


def test_the_session_fixture_answers(zookeeper_chroot):
    from kazoo.client import KazooClient
    zk = KazooClient(zookeeper_chroot, timeout=5)
    zk.start(timeout=30)
    try:
        zk.create("/a/b", b"v", makepath=True)
        assert zk.get("/a/b")[0] == b"v"
    finally:
        zk.stop()
        zk.close()


def test_dev_cluster_runs_zookeeper_for_balanced_consumers():
    from kazoo.client import KazooClient

    from pyrdk.testing import DevCluster
    with DevCluster(zookeeper=True) as cluster:
        zk = KazooClient(cluster.zookeeper_hosts, timeout=5)
        zk.start(timeout=30)
        try:
            assert zk.get_children("/") == ["zookeeper"]
        finally:
            zk.stop()
            zk.close()
        data_dir = cluster.zookeeper.data_dir
    assert cluster.zookeeper.pid is None and cluster.broker.pid is None
    assert not os.path.exists(data_dir)
    assert DevCluster(zookeeper=False).zookeeper_hosts is None
