"""Counting what faults do to numbered messages.

A :class:`Ledger` follows every message a producer is given (value ``<run>-<number>``):
its delivery report (delivered at an offset, or failed with an exception), or none at all
(silent). :func:`read_log` reads a topic back from the start, and :meth:`Ledger.counts`
compares the two:

- ``lost``: delivered, but not in the log;
- ``duplicated``: in the log more than once (each extra copy counts);
- ``silent``: never reported, delivered or failed, once the producer stopped;
- ``failed``: reported failed (told to the program, so not silent).

:class:`FaultSchedule` runs ``(seconds, what, action)`` steps on a thread while a producer
runs, and :func:`produce_for` drives a producer for a while, collecting its reports as it
goes. Each scenario prints its counts (:func:`report`, collected into the session summary by
tests/reliability/conftest.py).
"""
import collections
import queue
import threading
import time
import uuid

from pyrdk.common import OffsetType
from pyrdk.exceptions import KafkaException, NoBrokersAvailableError

PATIENCE_S = 60  # bound on waiting for something that must happen; never asserted on

Counts = collections.namedtuple("Counts", "produced delivered failed silent in_log lost duplicated")

REPORTS = []  # (scenario, line) printed in the session summary


class Ledger:
    """The fate of the messages one producer was given."""

    def __init__(self, name):
        self.name = name
        self.run = uuid.uuid4().hex[:8]
        self.produced = 0
        self.delivered = {}  # number -> (partition, offset)
        self.delivered_at = {}  # number -> time.monotonic() when its report was read
        self.failed = {}  # number -> exception
        self.reported_twice = 0
        self.refused = 0  # produce() calls that raised NoBrokersAvailableError
        self.fatal = None  # the fatal error that ended the producing (produce_for's fatal_ok)

    def value(self, number):
        return b"%s-%d" % (self.run.encode(), number)

    def number(self, value):
        """The number of one of this ledger's values, else None."""
        run, _, number = value.partition(b"-")
        return int(number) if run == self.run.encode() and number.isdigit() else None

    def record(self, message, exc):
        number = self.number(message.value)
        if number in self.delivered or number in self.failed:
            self.reported_twice += 1
        if exc is None:
            self.delivered[number] = (message.partition_id, message.offset)
            self.delivered_at[number] = time.monotonic()
        else:
            self.failed[number] = exc

    def drain(self, producer, block_s=0):
        """Record every delivery report waiting for this thread (waiting up to ``block_s``
        for the first)."""
        while True:
            try:
                message, exc = producer.get_delivery_report(block=block_s > 0, timeout=block_s or None)
            except queue.Empty:
                return
            block_s = 0
            self.record(message, exc)

    def failure_kinds(self):
        """``{exception name: count}`` of the failures reported, as one short string."""
        kinds = collections.Counter(getattr(e, "name", None) or type(e).__name__ for e in self.failed.values())
        return ",".join("%s:%d" % kv for kv in sorted(kinds.items())) or "-"

    def counts(self, log_values, since=None):
        """:class:`Counts` against the values read from the log. With ``since`` (a
        ``time.monotonic()``), only deliveries reported after it count as ``lost`` when
        missing: the earlier ones were kept by a broker that has gone since."""
        seen = collections.Counter(n for n in (self.number(v) for v in log_values) if n is not None)
        reported = set(self.delivered) | set(self.failed)
        expected = [n for n in self.delivered if since is None or self.delivered_at[n] >= since]
        return Counts(
            produced=self.produced, delivered=len(self.delivered), failed=len(self.failed),
            silent=sum(1 for n in range(self.produced) if n not in reported),
            in_log=len(seen), lost=sum(1 for n in expected if n not in seen),
            duplicated=sum(c - 1 for c in seen.values()))

    def delivered_since(self, moment):
        """How many deliveries were reported at or after ``moment``."""
        return sum(1 for at in self.delivered_at.values() if at >= moment)

    def delivered_before(self, moment):
        """How many deliveries were reported before ``moment`` (a ``time.monotonic()``)."""
        return sum(1 for at in self.delivered_at.values() if at < moment)


def produce_for(producer, ledger, seconds, pace=200, schedule=None, fatal_ok=False):
    """Produce numbered messages for ``seconds`` (``pace`` per 0.1 s at most), recording
    the reports as they come; with ``schedule`` (a :class:`FaultSchedule`), run it alongside
    and keep producing until it is done. Then stop the producer and record the rest.

    With ``fatal_ok``, a fatal error of the producer, from ``produce()`` or ``stop()``, is an
    outcome, not a failure of the test (kept in ``ledger.fatal``): the producer can do
    nothing more, and what it was given is still reported, delivered or failed. An
    idempotent producer gets one when its broker comes back without its producer id while a
    batch was in flight: librdkafka cannot retry that batch without risking a duplicate."""
    started = time.monotonic()
    if schedule is not None:
        schedule.start()
    try:
        while time.monotonic() - started < seconds or (schedule is not None and not schedule.done):
            tick = time.monotonic()
            for _ in range(pace):
                try:
                    producer.produce(ledger.value(ledger.produced), partition_key=b"%d" % ledger.produced)
                except NoBrokersAvailableError:  # told to the program: not produced
                    ledger.refused += 1
                    break
                except KafkaException as exc:
                    if not (fatal_ok and exc.fatal):
                        raise
                    ledger.fatal = ledger.fatal or exc  # told to the program: not produced
                    break
                ledger.produced += 1
            ledger.drain(producer)
            time.sleep(max(0.0, 0.1 - (time.monotonic() - tick)))
    finally:
        if schedule is not None:
            schedule.join()
    try:
        producer.stop()
    except KafkaException as exc:
        if not (fatal_ok and exc.fatal):
            raise
        ledger.fatal = ledger.fatal or exc
    ledger.drain(producer)


PRODUCERS = {
    "idempotent": dict(enable_idempotence=True, required_acks=-1),
    "plain": dict(required_acks=1),
}


def produce_side_by_side(topics, seconds, schedule, pending_timeout_ms=60000, idempotent_fatal_ok=False):
    """An idempotent and a plain producer (``PRODUCERS``), each on its topic of ``topics``
    (``{kind: Topic}``) and on a thread of its own, through ``schedule``, which runs alongside
    the idempotent one (and the two produce for ``seconds`` at least); their ledgers. Both
    retry far longer than the faults last (``max_retries``). ``idempotent_fatal_ok`` is
    :func:`produce_for`'s ``fatal_ok`` for the idempotent one."""
    ledgers = {kind: Ledger(kind) for kind in PRODUCERS}
    errors = []

    def drive(kind):
        try:
            producer = topics[kind].get_producer(delivery_reports=True, linger_ms=5, max_retries=1000,
                                                 pending_timeout_ms=pending_timeout_ms, **PRODUCERS[kind])
            produce_for(producer, ledgers[kind], seconds, schedule=schedule if kind == "idempotent" else None,
                        fatal_ok=idempotent_fatal_ok and kind == "idempotent")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=drive, args=(kind,)) for kind in PRODUCERS]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return ledgers


def read_log(topic, expected, consumer_timeout_ms=2000):
    """Every value in ``topic``, read from the start with a simple consumer: until at least
    ``expected`` values (the messages delivered) were read and nothing more came for
    ``consumer_timeout_ms``, or until nothing came for ``consumer_timeout_ms`` after
    ``PATIENCE_S``."""
    values = []
    consumer = topic.get_simple_consumer(auto_offset_reset=OffsetType.EARLIEST, reset_offset_on_start=True,
                                         consumer_timeout_ms=consumer_timeout_ms)
    deadline = time.monotonic() + PATIENCE_S
    try:
        while True:
            batch = consumer.consume_batch(10000, consumer_timeout_ms)
            values.extend(m.value for m in batch)
            if not batch and (len(values) >= expected or time.monotonic() > deadline):
                return values
    finally:
        consumer.stop()


class FaultSchedule(threading.Thread):
    """Runs ``(at_seconds, what, action)`` steps in order on its own thread; ``log`` keeps
    ``(seconds, what)`` of each step run, ``times`` when each ended, ``error`` the exception
    of one that raised.

    The thread stays alive after the last step until :meth:`close`: a server an action
    starts gets SIGTERM when the thread that started it ends (``PR_SET_PDEATHSIG`` follows
    the thread), so it must outlive what the test does with that server."""

    def __init__(self, steps):
        super().__init__(daemon=True)
        self.steps = sorted(steps, key=lambda s: s[0])
        self.log = []
        self.times = {}  # what -> time.monotonic() when its action returned
        self.error = None
        self.done = False
        self._finished = threading.Event()
        self._release = threading.Event()

    def run(self):
        started = time.monotonic()
        try:
            for at, what, action in self.steps:
                time.sleep(max(0.0, at - (time.monotonic() - started)))
                action()
                self.times[what] = time.monotonic()
                self.log.append((round(self.times[what] - started, 2), what))
        except BaseException as exc:
            self.error = exc
        finally:
            self.done = True
            self._finished.set()
        self._release.wait()

    def join(self, timeout=None):
        """Wait for the last step (not for the thread); raise what a step raised."""
        self._finished.wait(PATIENCE_S if timeout is None else timeout)
        if self.error is not None:
            raise self.error

    def close(self):
        """Let the thread end."""
        self._release.set()
        if self.is_alive():
            super().join(PATIENCE_S)


def report(scenario, **figures):
    """Print one scenario's figures (and keep them for the session summary)."""
    line = "%-52s %s" % (scenario, "  ".join("%s=%s" % kv for kv in figures.items()))
    REPORTS.append(line)
    print(line)
    return line


def report_counts(scenario, counts, **extra):
    return report(scenario, **counts._asdict(), **extra)
