"""``python -m pyrdk.testing``: a development cluster a program can connect to, stopped by
SIGTERM (twice in a row too) with its broker."""
import os
import signal
import socket
import subprocess
import sys

import pytest

from pyrdk import KafkaClient
from pyrdk.testing import TansuBroker, free_port


def test_runs_a_broker_on_the_port_given_until_sigterm():
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "pyrdk.testing", "--port", str(port), "--no-zookeeper"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "hosts=127.0.0.1:%d\n" % port
        assert proc.stdout.readline() == "running; Ctrl-C stops it\n"
        with KafkaClient(hosts="127.0.0.1:%d" % port) as client:
            assert [b.port for b in client.brokers.values()] == [port]
        os.kill(proc.pid, signal.SIGTERM)
        os.kill(proc.pid, signal.SIGTERM)  # the second may not cut the broker's stop short
        assert proc.wait(60) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    with socket.socket() as s:  # the broker is gone with it
        assert s.connect_ex(("127.0.0.1", port)) != 0


def test_a_port_taken_is_an_error_not_a_cluster_that_seems_to_run():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "pyrdk.testing", "--port", str(port), "--no-zookeeper"],
                              capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "port %d is taken" % port in done.stderr, done
    assert "running" not in done.stdout


def test_a_broker_whose_port_another_process_holds_is_not_taken_for_started():
    """The new server's own listener, not whatever accepts connections on its port: a port
    another process took between free_port() and the bind (two test sessions picked the
    same) made a test talk to that other server, and stop the idle one."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        broker = TansuBroker(port=taken.getsockname()[1])
        with pytest.raises(RuntimeError, match="another process listens there"):
            broker.start(timeout_s=30)
    assert broker.pid is None  # stopped by start()


def test_each_session_of_make_test_picks_ports_from_a_block_of_its_own(monkeypatch):
    """make test runs three pytest sessions side by side: with PYRDK_PORT_BLOCK=I/3 each picks
    from its own third, so none takes the port another's broker is down from for a restart."""
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        top = int(f.read().split()[0])
    low, third = top // 2, (top - top // 2) // 3
    for index in range(3):
        monkeypatch.setenv("PYRDK_PORT_BLOCK", "%d/3" % index)
        ports = [free_port() for _ in range(30)]
        assert all(low + index * third <= p < low + (index + 1) * third for p in ports), (index, ports)
    monkeypatch.setenv("PYRDK_PORT_BLOCK", "3/3")  # no such block: the whole range, as without it
    assert all(low <= free_port() < top for _ in range(30))


def test_free_ports_are_below_the_range_outgoing_connections_take_theirs_from():
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        ephemeral_start = int(f.read().split()[0])
    ports = [free_port() for _ in range(50)]
    assert all(ephemeral_start // 2 <= p < ephemeral_start for p in ports), ports
    assert len(set(ports)) > 1  # at random: two test runs side by side do not walk the same ports
    with socket.socket() as s:
        s.bind(("127.0.0.1", ports[0]))  # free indeed


def test_starting_a_running_broker_again_keeps_the_one_process():
    """start() on a broker that runs left it running with no pid to stop it by: a second
    Tansu was spawned over it (and failed on the taken port), and stop() stopped neither."""
    broker = TansuBroker()
    first = None
    try:
        broker.start()
        first = broker.process
        assert broker.start() is broker
        assert broker.process is first
        broker.stop()
        assert first.poll() is not None  # stopped with the broker, not left behind
    finally:
        broker.stop()
        if first is not None and first.poll() is None:
            first.kill()
            first.wait()


def test_a_broker_that_cannot_be_run_leaves_no_log_file_open(monkeypatch):
    monkeypatch.setenv("PYRDK_TANSU", os.devnull)  # not an executable
    broker = TansuBroker()
    with pytest.raises(OSError):
        broker.start()
    broker.stop()
    assert broker.pid is None and broker._log.closed
