"""A fleet of balanced-consumer members, each a real process, for fleet and crash tests.

Each member runs ``python -m tests.fleet SPEC`` and builds
``KafkaClient(hosts).topics[topic].get_balanced_consumer(group, **kwargs)`` from JSON-able
``kwargs`` (so the same harness drives ``managed=True`` and ``zookeeper_hosts=...``). It
consumes, writes every message it processes to ``<name>.processed`` (one
``partition offset key`` line, flushed to the OS before any commit, so a kill -9 loses
nothing written), commits after processing when asked to, and publishes the partitions it
holds (``consumer.partitions``):

- ``<name>.state``: ``{"version", "time", "status", "partitions", "processed", "member_id"}``
  (``member_id`` where the consumer has one), replaced atomically on every change;
  ``status`` is ``starting``, ``running``, ``stopped`` or ``failed`` (then ``error`` holds
  the traceback);
- ``<name>.history``: one JSON line per change of the held partitions;
- ``<name>.events``: with ``listener=True``, one JSON line per rebalance listener call
  (``{"event": "revoked" | "assigned", "partitions": [...]}``); the listener also updates
  the state file at once, so a revocation is published before the member rejoins.

The parent (:class:`Fleet`) starts, stops (SIGTERM: the member calls ``consumer.stop()``)
and kills (SIGKILL) members by pid, reads their states as one consistent snapshot, waits
(polling, bounded) for a condition on the owners and collects what was processed. Every
snapshot it takes is checked for a partition held by two live members; ``Fleet.violations``
keeps each one seen. A ``Fleet`` kills whatever is left at ``close()``, also on failure.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PATIENCE_S = 60  # upper bound on waiting for something that must happen; never asserted on
POLL_S = 0.05
SETTLE_S = 1.5  # how long a balanced fleet must stand still: three heartbeat intervals of the tests


# -- the member process ----------------------------------------------------------------------------

class _Member:
    """What runs in a member process: consume, process, record, commit."""

    def __init__(self, spec):
        self.spec = spec
        self.name = spec["name"]
        self.dir = spec["dir"]
        self.version = 0
        self.status = "starting"
        self.held = []
        self.member_id = None
        self.processed = 0
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.out = open(self._path("processed"), "a")
        self.history = open(self._path("history"), "a")
        self.events = open(self._path("events"), "a")
        self.consumer = None

    def _path(self, what):
        return os.path.join(self.dir, "%s.%s" % (self.name, what))

    def publish(self, partitions=None, status=None, error=None):
        """Replace the state file; append to the history when the partitions changed."""
        with self.lock:
            self._publish(partitions, status, error)

    def _publish(self, partitions=None, status=None, error=None):
        if status is not None:
            self.status = status
        changed = partitions is not None and sorted(partitions) != self.held
        if changed:
            self.held = sorted(partitions)
        self.version += 1
        now = time.time()
        self.member_id = self._member_id()
        state = {"version": self.version, "time": now, "status": self.status,
                 "partitions": self.held, "processed": self.processed, "pid": os.getpid(),
                 "member_id": self.member_id}
        if error is not None:
            state["error"] = error
        tmp = self._path("state.tmp")
        with open(tmp, "w") as f:
            json.dump(state, f)
        os.replace(tmp, self._path("state"))
        if changed:
            self.history.write(json.dumps({"time": now, "partitions": self.held}) + "\n")
            self.history.flush()

    def _member_id(self):
        """The group member id, where the consumer has one (``member_id``)."""
        try:
            return getattr(self.consumer, "member_id", None)
        except Exception:  # stopped, or not in a group yet
            return None

    # A kafka-python-style rebalance listener (managed consumer only).
    def on_partitions_revoked(self, revoked):
        self._event("revoked", revoked)
        self.publish(set(self.held) - set(_ids(revoked)))

    def on_partitions_assigned(self, assigned):
        self._event("assigned", assigned)
        self.publish(set(self.held) | set(_ids(assigned)))

    def _event(self, kind, partitions):
        self.events.write(json.dumps({"time": time.time(), "event": kind,
                                      "partitions": sorted(_ids(partitions))}) + "\n")
        self.events.flush()

    def _watch(self):
        """Publish ``consumer.partitions`` and the member id whenever they change (also
        between messages)."""
        while not self.stopping.wait(0.01):
            consumer = self.consumer
            if consumer is not None:
                # Read and publish under the lock, so that a listener's publish (revoked, on
                # librdkafka's thread) can never be overwritten by an older read.
                with self.lock:
                    try:
                        held = sorted(consumer.partitions)
                    except RuntimeError:  # changed while read by this thread: read again
                        continue
                    if held != self.held or self._member_id() != self.member_id:
                        self._publish(held)

    def run(self):
        from pyrdk import KafkaClient, SslConfig, membershipprotocol
        spec = self.spec
        kwargs = dict(spec["kwargs"])
        protocol = kwargs.get("membership_protocol")
        if isinstance(protocol, str) and hasattr(membershipprotocol, protocol):
            kwargs["membership_protocol"] = getattr(membershipprotocol, protocol)
        kwargs.setdefault("consumer_timeout_ms", 200)
        if spec["listener"]:
            kwargs["listener"] = self
        signal.signal(signal.SIGTERM, lambda *_: self.stopping.set())
        self.publish(status="starting")
        ssl_config = SslConfig(cafile=spec["ssl_cafile"]) if spec.get("ssl_cafile") else None
        client = KafkaClient(hosts=spec["hosts"], ssl_config=ssl_config)
        topic = client.topics[spec["topic"]]
        self.consumer = topic.get_balanced_consumer(spec["group"].encode(), **kwargs)
        self.publish(sorted(self.consumer.partitions), status="running")
        watcher = threading.Thread(target=self._watch, daemon=True)
        watcher.start()
        commit_every = spec["commit_every"]
        uncommitted = 0
        while not self.stopping.is_set():
            message = self.consumer.consume()
            if message is not None:
                self.out.write("%d %d %s\n" % (message.partition_id, message.offset,
                                               (message.partition_key or b"").decode()))
                if spec.get("flush_each"):
                    self.out.flush()
                self.processed += 1
                uncommitted += 1
                if spec["delay_ms"]:
                    time.sleep(spec["delay_ms"] / 1000.0)
            if uncommitted and commit_every and (message is None or uncommitted >= commit_every):
                self.out.flush()
                self.consumer.commit_offsets()
                uncommitted = 0
        self.out.flush()
        if commit_every and uncommitted:
            self.consumer.commit_offsets()
        self.consumer.stop()
        self.stopping.set()
        watcher.join()
        self.publish([], status="stopped")
        client.close()


def _ids(partitions):
    """Partition ids from a listener's argument: Partition objects, ids or (topic, id) pairs."""
    out = []
    for p in partitions:
        if isinstance(p, int):
            out.append(p)
        elif isinstance(p, tuple):
            out.append(p[1])
        else:
            out.append(p.id)
    return out


def _member_main(spec_path):
    with open(spec_path) as f:
        spec = json.load(f)
    member = _Member(spec)
    try:
        member.run()
    except BaseException:
        member.publish(status="failed", error=traceback.format_exc())
        raise


# -- the parent side -------------------------------------------------------------------------------

class Member:
    """A member process as the parent sees it."""

    def __init__(self, fleet, name, process):
        self.fleet = fleet
        self.name = name
        self.process = process
        self.terminated = False

    @property
    def pid(self):
        return self.process.pid

    @property
    def alive(self):
        return self.process.poll() is None

    def state(self):
        """The last published state (``{}`` before the first)."""
        try:
            with open(self.fleet.path(self.name, "state")) as f:
                return json.load(f)
        except (FileNotFoundError, ValueError):
            return {}

    @property
    def partitions(self):
        return set(self.state().get("partitions", ()))

    def events(self):
        """The listener calls so far: ``[(event, [partition ids])]``."""
        return [(e["event"], e["partitions"]) for e in _jsonl(self.fleet.path(self.name, "events"))]

    def history(self):
        """Every set of partitions held, in order: ``[(time, [partition ids])]``."""
        return [(h["time"], h["partitions"]) for h in _jsonl(self.fleet.path(self.name, "history"))]

    def processed(self):
        """``[(partition, offset, key)]`` in the order processed."""
        out = []
        try:
            with open(self.fleet.path(self.name, "processed")) as f:
                for line in f:
                    parts = line.rstrip("\n").split(" ", 2)
                    if len(parts) == 3:  # a line cut by kill -9 is not a processed message
                        out.append((int(parts[0]), int(parts[1]), parts[2]))
        except FileNotFoundError:
            pass
        return out

    def log(self):
        try:
            with open(self.fleet.path(self.name, "log"), errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def __repr__(self):
        return "<member %s pid=%d %s>" % (self.name, self.pid, "alive" if self.alive else "exited")


class Fleet:
    """Balanced-consumer members of one group on one topic, as real processes.

    :param hosts: bootstrap servers
    :param topic: topic name (str)
    :param group: consumer group (str)
    :param kwargs: JSON-able keyword arguments for ``get_balanced_consumer`` (for example
        ``{"managed": True}`` or ``{"zookeeper_hosts": "..."}``); ``membership_protocol`` may
        be the name of a protocol in ``pyrdk.membershipprotocol``
    :param commit_every: commit after this many processed messages and when idle (0: never)
    :param listener: pass a recording rebalance listener (``listener=``, managed consumer)
    :param delay_ms: sleep after each message (to keep a fleet busy while it rebalances)
    :param flush_each: write each processed message down at once, not just before a commit,
        so that a member killed between two commits shows what it processed and will be
        processed again (the duplicates a kill makes)
    :param ssl_cafile: connect over TLS, trusting this CA (``SslConfig(cafile=...)``)
    """

    def __init__(self, hosts, topic, group, kwargs=None, commit_every=100, listener=False,
                 delay_ms=0, workdir=None, flush_each=False, ssl_cafile=None):
        self.hosts = hosts
        self.topic = topic
        self.group = group
        self.kwargs = dict(kwargs or {})
        self.commit_every = commit_every
        self.listener = listener
        self.delay_ms = delay_ms
        self.flush_each = flush_each
        self.ssl_cafile = ssl_cafile
        self._tmp = None
        if workdir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="pyrdk-fleet-")
            workdir = self._tmp.name
        os.makedirs(workdir, exist_ok=True)
        self.dir = workdir
        self.members = []
        self.violations = []  # (time, {partition: [members]}) for each double owner seen
        self.samples = 0
        self._count = 0

    def path(self, name, what):
        return os.path.join(self.dir, "%s.%s" % (name, what))

    # -- members -------------------------------------------------------------------------------

    def start_member(self, name=None, **overrides):
        """Start a member process; ``overrides`` replace entries of the consumer kwargs."""
        self._count += 1
        name = name or "m%d" % self._count
        if any(m.name == name and m.alive for m in self.members):
            raise ValueError("member %s is still running" % name)
        spec = {"name": name, "dir": self.dir, "hosts": self.hosts, "topic": self.topic,
                "group": self.group, "kwargs": dict(self.kwargs, **overrides),
                "commit_every": self.commit_every, "listener": self.listener,
                "delay_ms": self.delay_ms, "flush_each": self.flush_each, "ssl_cafile": self.ssl_cafile}
        for what in ("state", "history", "events"):  # a restarted name starts afresh
            if os.path.exists(self.path(name, what)):
                os.remove(self.path(name, what))
        spec_path = self.path(name, "spec")
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
        from pyrdk.testing import _die_with_parent
        with open(self.path(name, "log"), "ab") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "tests.fleet", spec_path], cwd=ROOT, env=env,
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
        member = Member(self, name, process)
        self.members.append(member)
        return member

    def start(self, n):
        """Start ``n`` members; returns them."""
        return [self.start_member() for _ in range(n)]

    def kill(self, member):
        """SIGKILL the member and reap it."""
        if member.alive:
            os.kill(member.pid, signal.SIGKILL)
        member.process.wait(PATIENCE_S)

    def stop(self, member):
        """Stop the member gracefully (SIGTERM: it calls ``consumer.stop()`` and exits);
        AssertionError if it does not exit cleanly within PATIENCE_S."""
        self._terminate(member)
        try:
            code = member.process.wait(PATIENCE_S)
        except subprocess.TimeoutExpired:
            self.kill(member)
            raise AssertionError("member %s did not stop within %ds:\n%s"
                                 % (member.name, PATIENCE_S, member.log()))
        assert code == 0, "member %s exited with %s:\n%s" % (member.name, code, member.log())

    def stop_all(self):
        """Stop every live member gracefully, all at once (they leave together)."""
        live = self.live()
        for member in live:
            self._terminate(member)
        for member in live:
            self.stop(member)

    @staticmethod
    def _terminate(member):
        """One SIGTERM (a second one could hit the member's interpreter while it exits)."""
        if member.alive and not member.terminated:
            member.terminated = True
            os.kill(member.pid, signal.SIGTERM)

    def live(self):
        return [m for m in self.members if m.alive]

    def close(self):
        """Kill every member still running (by pid) and remove the work directory."""
        for member in self.members:
            if member.alive:
                os.kill(member.pid, signal.SIGKILL)
        for member in self.members:
            try:
                member.process.wait(PATIENCE_S)
            except subprocess.TimeoutExpired:
                pass
        if self._tmp is not None:
            self._tmp.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- observing -----------------------------------------------------------------------------

    def snapshot(self):
        """``{member name: state}`` of the live members, read as one consistent cut: two
        reads in a row that agree on every version (so at one instant between them, every
        member held what its state says)."""
        while True:
            first = self._read_live()
            second = self._read_live()
            if {n: s.get("version") for n, s in first.items()} == \
                    {n: s.get("version") for n, s in second.items()}:
                return second

    def _read_live(self):
        return {m.name: m.state() for m in self.members if m.alive}

    def owners(self):
        """``{partition: [live members holding it]}`` from one snapshot; records a violation
        when a partition has two owners."""
        owners = {}
        for name, state in sorted(self.snapshot().items()):
            for pid in state.get("partitions", ()):
                owners.setdefault(pid, []).append(name)
        self.samples += 1
        doubles = {pid: names for pid, names in owners.items() if len(names) > 1}
        if doubles:
            self.violations.append((time.time(), doubles))
        return owners

    def check_failures(self):
        """AssertionError if a member failed or exited on its own."""
        for member in self.members:
            state = member.state()
            if state.get("status") == "failed":
                raise AssertionError("member %s failed:\n%s" % (member.name, state.get("error")))
            code = member.process.poll()
            if code not in (None, 0, -signal.SIGKILL):
                raise AssertionError("member %s exited with %s:\n%s" % (member.name, code, member.log()))

    def wait_until(self, condition, what, timeout_s=PATIENCE_S):
        """Sample the owners until ``condition(owners)`` is true; AssertionError naming
        ``what`` (and the last owners seen) if it is not within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while True:
            self.check_failures()
            owners = self.owners()
            if condition(owners):
                return owners
            if time.monotonic() > deadline:
                raise AssertionError("not reached within %ds: %s; owners: %s; members: %s"
                                     % (timeout_s, what, owners, self.members))
            time.sleep(POLL_S)

    def wait_balanced(self, partitions, members=None, timeout_s=PATIENCE_S):
        """Wait until each of ``partitions`` has exactly one owner, all among ``members``
        (default: the live members), every such member is running, and the owners and
        member ids have stood still for SETTLE_S.

        A balanced view can be the end of one generation while the next is already under
        way (a member whose join came late): the members learn of it at their next
        heartbeat and revoke (eager) before they rejoin, which changes the owners. A member
        stopped at that point, on a loaded machine, once left a partition seen with two
        owners. Standing still for longer than a heartbeat interval rules that out."""
        last = [None, 0.0]  # what was seen balanced (owners, member ids), and since when

        def balanced(owners):
            names = {m.name for m in (members if members is not None else self.live())}
            states = [m.state() for m in self.live()]
            if not (all(s.get("status") == "running" for s in states) and set(owners) == set(partitions)
                    and all(len(o) == 1 and o[0] in names for o in owners.values())):
                last[0] = None
                return False
            seen = (owners, sorted(str(s.get("member_id")) for s in states))
            if seen != last[0]:
                last[:] = [seen, time.monotonic()]
            return time.monotonic() - last[1] >= SETTLE_S
        return self.wait_until(balanced, "each of %s held by exactly one member, for %.1fs"
                               % (sorted(partitions), SETTLE_S), timeout_s)

    def wait_processed(self, count, timeout_s=PATIENCE_S):
        """Wait (sampling owners) until the members processed ``count`` distinct messages."""
        return self.wait_until(lambda owners: len(self.distinct_processed()) >= count,
                               "%d distinct messages processed" % count, timeout_s)

    def processed(self):
        """Every processed message, ``[(partition, offset, key, member)]``, over all members
        that ever ran (restarted names included once)."""
        out = []
        for name in sorted({m.name for m in self.members}):
            member = next(m for m in self.members if m.name == name)
            out.extend((p, o, k, name) for p, o, k in member.processed())
        return out

    def distinct_processed(self):
        """``{(partition, offset): key}`` of every processed message."""
        return {(p, o): k for p, o, k, _ in self.processed()}


def _jsonl(path):
    try:
        with open(path) as f:
            return [json.loads(line) for line in f if line.endswith("\n")]
    except FileNotFoundError:
        return []


if __name__ == "__main__":
    _member_main(sys.argv[1])
