"""rd.callbacks: librdkafka's callbacks reach Python in the thread that polls, and an
exception raised in a handler comes back out of that poll."""
import json
import logging
import subprocess
import sys
import threading
import uuid

import pytest

from pyrdk.exceptions import (NO_SASL_HINT, NOT_KAFKA_HTTP_HINT, PLAINTEXT_TO_TLS_HINT, KafkaException,
                              MessageSizeTooLarge)
from pyrdk.rd import callbacks, partitions
from pyrdk.testing import free_port
from tests.rd import util


class Boom(Exception):
    pass


def _name(prefix):
    return "%s-%s" % (prefix, uuid.uuid4().hex[:10])


# -- the registry ----------------------------------------------------------------------------------

def test_each_callbacks_has_its_own_id_and_opaque():
    a, b = callbacks.Callbacks(), callbacks.Callbacks()
    try:
        assert a.id != b.id
        assert callbacks._lookup(a.opaque) is a
        assert callbacks._lookup(b.opaque) is b
    finally:
        a.unregister()
        b.unregister()


def test_unregister_forgets_and_is_idempotent():
    cbs = callbacks.Callbacks()
    cbs_id = cbs.id
    cbs.unregister()
    assert cbs_id not in callbacks._registry
    cbs.unregister()


def test_store_keeps_each_exception_until_reraise():
    cbs = callbacks.Callbacks()
    try:
        first, second = Boom("first"), Boom("second")
        cbs.store(first)
        cbs.store(second)
        for expected in (first, second):  # oldest first, each once
            with pytest.raises(Boom) as info:
                cbs.reraise()
            assert info.value is expected
        cbs.reraise()  # nothing stored any more
    finally:
        cbs.unregister()


def test_a_drain_before_any_report_moves_nothing():
    """pyrdk_reports_drain_columns() on an opaque whose report buffer was never allocated
    (no report yet): 0 reports, and no memmove() of the NULL buffer (undefined behaviour,
    which UndefinedBehaviorSanitizer reports)."""
    cbs = callbacks.Callbacks(on_deliveries=lambda *columns: pytest.fail("no report was buffered"))
    try:
        assert cbs.dispatch_reports() == 0
        assert cbs.dispatch_reports() == 0
    finally:
        cbs.unregister()


# -- delivery reports ------------------------------------------------------------------------------

@pytest.mark.mock
def test_delivery_reports_carry_id_partition_offset(mock_cluster, handles):
    topic = _name("dr")
    mock_cluster.create_topic(topic, 2, 1)
    reports = []
    producer = handles("producer", {"bootstrap.servers": mock_cluster.bootstrap_servers},
                       on_delivery=lambda *report: reports.append(report))
    for i in range(6):
        producer.produce(topic, i % 2, b"v%d" % i, None, 0, None, 100 + i)
    assert producer.flush(util.WAIT_S * 1000)
    assert sorted((r[0], r[2], r[3]) for r in reports) == [
        (100, 0, 0), (101, 1, 0), (102, 0, 1), (103, 1, 1), (104, 0, 2), (105, 1, 2)]
    assert all(r[1] is None for r in reports)


@pytest.mark.mock
def test_delivery_reports_wait_then_dispatch(mock_cluster, handles):
    topic = _name("drw")
    mock_cluster.create_topic(topic, 1, 1)
    reports = []
    producer = handles("producer", {"bootstrap.servers": mock_cluster.bootstrap_servers, "linger.ms": 0},
                       on_delivery=lambda *report: reports.append(report))
    producer.produce(topic, 0, b"v", None, 0, None, 7)
    util.wait_until(lambda: producer.wait_reports(200) > 0, "a buffered delivery report",
                    step=lambda: producer.poll(0, dispatch=False))
    assert reports == []  # buffered in C until dispatched
    assert producer.dispatch_reports() == 1
    assert [r[0] for r in reports] == [7]


@pytest.mark.mock
@pytest.mark.parametrize("call", ["flush", "poll"])
def test_exception_in_on_delivery_is_raised_in_the_polling_thread(mock_cluster, handles, call):
    topic = _name("drx")
    mock_cluster.create_topic(topic, 1, 1)
    seen = []

    def on_delivery(msg_id, exc, partition, offset, timestamp):
        seen.append((msg_id, threading.current_thread().name))
        raise Boom("from on_delivery %d" % msg_id)

    producer = handles("producer", {"bootstrap.servers": mock_cluster.bootstrap_servers, "linger.ms": 0},
                       on_delivery=on_delivery)
    producer.produce(topic, 0, b"a", None, 0, None, 1)
    producer.produce(topic, 0, b"b", None, 0, None, 2)
    outcome = []

    def polling_thread():
        try:
            if call == "flush":
                producer.flush(util.WAIT_S * 1000)
            else:
                util.wait_until(lambda: len(seen) == 2, "both delivery reports",
                                step=lambda: producer.poll(100))
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=polling_thread, name="the-poller")
    thread.start()
    thread.join(util.WAIT_S * 2)
    assert not thread.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], Boom)
    assert str(outcome[0]) == "from on_delivery 1"  # the oldest one first
    assert seen[0] == (1, "the-poller")
    # Each raised once: the next call raises the second, then polls are clean.
    with pytest.raises(Boom, match="from on_delivery 2"):
        producer.flush(util.WAIT_S * 1000)
    producer.flush(util.WAIT_S * 1000)
    producer.poll(0)


# -- errors, statistics ----------------------------------------------------------------------------

def test_on_error_gets_connection_failures(handles):
    errors_seen = []
    port = free_port()
    producer = handles("producer", {"bootstrap.servers": "127.0.0.1:%d" % port,
                                    "reconnect.backoff.ms": 10, "reconnect.backoff.max.ms": 50},
                       on_error=errors_seen.append)
    util.wait_until(lambda: errors_seen, "an error callback", step=lambda: producer.poll(100))
    exc = errors_seen[0]
    assert isinstance(exc, KafkaException)
    assert exc.name in ("_TRANSPORT", "_ALL_BROKERS_DOWN")
    assert producer.last_error is errors_seen[-1]
    assert any("127.0.0.1:%d" % port in str(e) for e in errors_seen)


def test_exception_in_on_error_is_raised_from_poll(handles):
    def on_error(exc):
        raise Boom(str(exc))

    producer = handles("producer", {"bootstrap.servers": "127.0.0.1:%d" % free_port()}, on_error=on_error)
    with pytest.raises(Boom):
        util.wait_until(lambda: False, "on_error to raise", step=lambda: producer.poll(100))


def test_without_on_error_errors_are_logged(handles, caplog):
    caplog.set_level(logging.WARNING, logger="pyrdk.librdkafka")
    producer = handles("producer", {"bootstrap.servers": "127.0.0.1:%d" % free_port()})
    util.wait_until(lambda: producer.last_error is not None, "an error event", step=lambda: producer.poll(100))
    assert any(r.name == "pyrdk.librdkafka" and r.levelno >= logging.WARNING
               and producer.name in r.getMessage() for r in caplog.records)


@pytest.mark.mock
def test_on_stats_gets_the_statistics_json(mock_cluster, handles):
    stats = []
    producer = handles("producer", {"bootstrap.servers": mock_cluster.bootstrap_servers,
                                    "statistics.interval.ms": 100}, on_stats=stats.append)
    util.wait_until(lambda: stats, "a statistics callback", step=lambda: producer.poll(100))
    doc = json.loads(stats[0])
    assert doc["name"] == producer.name
    assert doc["type"] == "producer"


# -- logging ---------------------------------------------------------------------------------------

@pytest.mark.mock
def test_log_lines_reach_the_pyrdk_librdkafka_logger(mock_cluster, handles, caplog):
    caplog.set_level(logging.DEBUG, logger="pyrdk.librdkafka")
    topic = _name("log")
    mock_cluster.create_topic(topic, 1, 1)
    producer = handles("producer", {"bootstrap.servers": mock_cluster.bootstrap_servers, "debug": "broker"})
    util.produce(producer, topic, [(0, b"v", None, 0, None)])
    lines = [r for r in caplog.records if r.name == "pyrdk.librdkafka" and producer.name in r.getMessage()]
    assert lines, "no librdkafka log line was logged"
    assert any(r.levelno == logging.DEBUG for r in lines)
    # "<handle name> [<facility>] <text>"
    assert all(r.getMessage().startswith(producer.name + " [") for r in lines)


@pytest.mark.mock
def test_consumer_log_lines_arrive_with_consume_batch(mock_cluster, handles, caplog):
    caplog.set_level(logging.DEBUG, logger="pyrdk.librdkafka")
    topic = _name("clog")
    mock_cluster.create_topic(topic, 1, 1)
    consumer = handles("consumer", {"bootstrap.servers": mock_cluster.bootstrap_servers, "group.id": topic,
                                    "debug": "consumer"})
    consumer.assign([(topic, 0, partitions.OFFSET_BEGINNING)])
    util.wait_until(lambda: any(consumer.name in r.getMessage() for r in caplog.records),
                    "a consumer log line", step=lambda: consumer.consume_batch(10, 100))


class _InterruptOnce(logging.Handler):
    """Raises KeyboardInterrupt from the first log line it gets, as Ctrl-C does when its
    signal's handler runs while the main thread logs a line a poll served."""

    def __init__(self):
        super().__init__()
        self.fired = False

    def emit(self, record):
        if not self.fired:
            self.fired = True
            raise KeyboardInterrupt


@pytest.fixture
def interrupt_on_log():
    logger = logging.getLogger("pyrdk.librdkafka")
    handler, level = _InterruptOnce(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


def test_an_interrupt_while_a_log_line_is_served_reaches_the_caller(handles, interrupt_on_log):
    """A `lag --watch` that Ctrl-C did not end: the log trampoline dropped what it raised."""
    producer = handles("producer", {"bootstrap.servers": "127.0.0.1:%d" % free_port(), "debug": "generic"})
    with pytest.raises(KeyboardInterrupt):
        util.wait_until(lambda: False, "a log line", step=lambda: producer.poll(100))
    assert interrupt_on_log.fired


@pytest.mark.parametrize("trampoline", ["_pyrdk_log_cb", "_pyrdk_error_cb", "_pyrdk_stats_cb"])
def test_an_interrupt_at_the_first_line_of_a_trampoline_reaches_the_caller(handles, trampoline, capfd):
    """A Ctrl-C that came while the main thread was in rd_kafka_poll is raised at the first
    line of the callback librdkafka calls next, before the trampoline's own ``try``: cffi
    printed it ("Exception ignored from cffi callback") and the program ran on."""
    producer = handles("producer", {"bootstrap.servers": "127.0.0.1:%d" % free_port(), "debug": "generic",
                                    "statistics.interval.ms": 100}, on_stats=lambda _: None)
    with util.profiled(util.InterruptAsItStarts(trampoline)) as interrupt, pytest.raises(KeyboardInterrupt):
        util.wait_until(lambda: False, "a call of " + trampoline, step=lambda: producer.poll(100))
    assert interrupt.fired
    assert "cffi callback" not in capfd.readouterr().err


def test_an_interrupt_while_the_consumer_closes_is_raised_once_it_is_closed(handles, interrupt_on_log):
    """``rd_kafka_consumer_close`` serves the log lines of the group's leaving in the caller's
    thread: what a callback got there outlives the handle."""
    consumer = handles("consumer", {"bootstrap.servers": "127.0.0.1:%d" % free_port(), "group.id": _name("cl"),
                                    "debug": "cgrp"})
    consumer.subscribe([_name("cl")])
    with pytest.raises(KeyboardInterrupt):
        consumer.close()
    assert interrupt_on_log.fired and consumer.closed


_SIGINT_IN_A_POLL = """
import logging, os, signal, sys, threading, time
from pyrdk.rd.callbacks import Callbacks
from pyrdk.rd.handle import Handle
logger = logging.getLogger("pyrdk.librdkafka")
logger.setLevel(logging.DEBUG)
logger.propagate = False
logger.addHandler(logging.NullHandler())
handle = Handle("producer", {"bootstrap.servers": sys.argv[1], "debug": "generic,broker"}, Callbacks())
for _ in range(10):
    threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT)).start()
    deadline = time.monotonic() + 10
    try:
        while time.monotonic() < deadline:
            handle.poll(1000)  # in librdkafka as the signal comes; the poll serves log lines
        print("lost", flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
handle.close()
"""


def test_a_real_ctrl_c_during_a_poll_that_serves_log_lines_reaches_the_caller():
    """The signal's handler runs at the first bytecode of the log trampoline the poll calls,
    before any ``try`` in it: cffi printed that KeyboardInterrupt and dropped it (a `lag
    --watch` that SIGINT did not end), unless its ``onerror`` keeps it."""
    proc = subprocess.run([sys.executable, "-c", _SIGINT_IN_A_POLL, "127.0.0.1:%d" % free_port()],
                          capture_output=True, text=True, timeout=300, preexec_fn=util.default_sigint)
    assert (proc.returncode, proc.stdout.split()) == (0, ["interrupted"] * 10), proc.stderr[-3000:]


# -- consumer callbacks ----------------------------------------------------------------------------

@pytest.mark.mock
def test_exception_in_on_rebalance_is_raised_from_consume_batch(mock_cluster, handles):
    topic = _name("reb")
    mock_cluster.create_topic(topic, 1, 1)

    def on_rebalance(kind, tps):
        raise Boom(kind)

    consumer = handles("consumer", {"bootstrap.servers": mock_cluster.bootstrap_servers, "group.id": topic},
                       on_rebalance=on_rebalance)
    consumer.subscribe([topic])
    with pytest.raises(Boom, match="assign"):
        util.wait_until(lambda: False, "on_rebalance to raise", step=lambda: consumer.consume_batch(10, 100))
    # The assignment went through although the handler raised.
    assert [(tp.topic, tp.partition) for tp in consumer.assignment()] == [(topic, 0)]


@pytest.mark.mock
def test_on_commit_reports_an_asynchronous_commit(mock_cluster, handles):
    topic = _name("commit")
    mock_cluster.create_topic(topic, 1, 1)
    commits = []
    consumer = handles("consumer", {"bootstrap.servers": mock_cluster.bootstrap_servers, "group.id": topic,
                                    "enable.auto.commit": False},
                       on_commit=lambda exc, tps: commits.append((exc, tps)))
    consumer.assign([(topic, 0, 0)])
    consumer.commit([(topic, 0, 5)], asynchronous=True)
    util.wait_until(lambda: commits, "the commit callback", step=lambda: consumer.consume_batch(10, 100))
    exc, tps = commits[0]
    assert exc is None
    assert [(tp.topic, tp.partition, tp.offset) for tp in tps] == [(topic, 0, 5)]


@pytest.mark.mock
def test_delivery_failure_reaches_on_delivery(mock_cluster, handles):
    from pyrdk.rd.mock import ApiKey
    topic = _name("drf")
    mock_cluster.create_topic(topic, 1, 1)
    reports = []
    producer = handles("producer", {"bootstrap.servers": mock_cluster.bootstrap_servers,
                                    "message.send.max.retries": 0},
                       on_delivery=lambda *report: reports.append(report))
    producer.metadata(topic)
    mock_cluster.push_request_errors(ApiKey.Produce, 10)
    util.produce(producer, topic, [(0, b"v", None, 0, None)])
    (msg_id, exc, _partition, offset, _ts), = reports
    assert isinstance(exc, MessageSizeTooLarge) and exc.code == 10
    assert offset < 0


@pytest.mark.mock
@pytest.mark.parametrize("c_function", ["pyrdk_reports_drain_columns", "pyrdk_failed_pop"])
def test_an_interrupt_as_reports_leave_c_loses_none(mock_cluster, handles, c_function):
    """Reports moved out of C by a call that a KeyboardInterrupt ends as it returns are
    handed over before it is raised: none is lost (a delivered message would be told failed
    at stop(), a failed produce_batch() message never)."""
    from pyrdk.rd.mock import ApiKey
    topic = _name("dri")
    mock_cluster.create_topic(topic, 1, 1)
    delivered, failed = [], []
    producer = handles("producer", {"bootstrap.servers": mock_cluster.bootstrap_servers, "linger.ms": 0,
                                    "message.send.max.retries": 0},
                       on_deliveries=lambda ids, *_: delivered.extend(ids.tolist()),
                       on_batch_failure=lambda exc, partition, value, key: failed.append((value, exc.code)))
    producer.metadata(topic)
    if c_function == "pyrdk_failed_pop":
        mock_cluster.push_request_errors(ApiKey.Produce, 10)
        assert producer.produce_batch(topic, 0, [(b"v", None, 0)]) == [0]
        expected = 1
    else:
        for msg_id in (1, 2, 3):
            producer.produce(topic, 0, b"v", None, 0, None, msg_id)
        expected = 3
    util.wait_until(lambda: producer.wait_reports(0) >= expected or producer.batch_outstanding(1) == 0,
                    "the delivery reports", step=lambda: producer.poll(100, dispatch=False))
    interrupt = util.InterruptAsItReturns(c_function)
    sys.setprofile(interrupt)
    try:
        with pytest.raises(KeyboardInterrupt):
            producer.dispatch_reports()
    finally:
        sys.setprofile(None)
    assert interrupt.fired
    producer.dispatch_reports()
    if c_function == "pyrdk_failed_pop":
        assert failed == [(b"v", 10)]
    else:
        assert delivered == [1, 2, 3]


# -- repeated lines --------------------------------------------------------------------------------

class Clock:
    """A clock the test moves by hand (the lines' timing is what is under test)."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def _lines(caplog):
    return [r for r in caplog.records if r.name == "pyrdk.librdkafka"]


def test_repeated_lines_are_logged_once_then_counted(caplog):
    caplog.set_level(logging.DEBUG, logger="pyrdk.librdkafka")
    clock = Clock()
    lines = callbacks.RepeatedLines(window_s=5, clock=clock)
    text = "[thrd:127.0.0.1:9/bootstrap]: 127.0.0.1:9/bootstrap: Connect failed (after %dms in state CONNECT)"
    for i in range(40):  # 40 lines in 4 s, their durations differing
        clock.now = i * 0.1
        lines.log(logging.ERROR, "rdkafka#producer-1", "FAIL", text % i, 3)
    assert len(_lines(caplog)) == 1, "repeats within the window are counted, not logged"
    first = _lines(caplog)[0]
    assert (first.rdkafka_client, first.rdkafka_facility, first.rdkafka_broker, first.rdkafka_level,
            first.rdkafka_repeats) == ("rdkafka#producer-1", "FAIL", "127.0.0.1:9/bootstrap", 3, 1)
    assert first.getMessage() == "rdkafka#producer-1 [FAIL] " + text % 0
    clock.now = 5.5
    lines.log(logging.ERROR, "rdkafka#producer-1", "FAIL", text % 99, 3)
    count = _lines(caplog)[1]
    assert count.rdkafka_repeats == 40, "the 39 lines not logged, and this one"
    assert count.getMessage().endswith("(after 99ms in state CONNECT) (seen 40 times in the last 6 s)")
    clock.now = 6.0
    lines.log(logging.ERROR, "rdkafka#producer-1", "FAIL", text % 100, 3)
    lines.log(logging.INFO, "rdkafka#producer-1", "OTHER", "another line", 6)
    assert len(_lines(caplog)) == 3, "a different line is logged at once"
    lines.flush("rdkafka#producer-1")
    assert _lines(caplog)[-1].rdkafka_repeats == 1 and "seen 1 times" in _lines(caplog)[-1].getMessage()
    lines.flush()
    assert len(_lines(caplog)) == 4, "nothing is pending after a flush"


def test_a_pending_count_is_logged_with_a_later_line_of_another_kind(caplog):
    caplog.set_level(logging.DEBUG, logger="pyrdk.librdkafka")
    clock = Clock()
    lines = callbacks.RepeatedLines(window_s=5, clock=clock)
    for _ in range(3):
        lines.log(logging.WARNING, "rdkafka#consumer-2", None, "1/1 brokers are down", 4)
    clock.now = 7
    lines.log(logging.INFO, "rdkafka#consumer-2", "CONF", "something else", 6)
    messages = [r.getMessage() for r in _lines(caplog)]
    assert messages == ["rdkafka#consumer-2: 1/1 brokers are down",
                        "rdkafka#consumer-2: 1/1 brokers are down (seen 2 times in the last 7 s)",
                        "rdkafka#consumer-2 [CONF] something else"]


def test_lines_below_the_loggers_level_cost_nothing(caplog):
    caplog.set_level(logging.ERROR, logger="pyrdk.librdkafka")
    lines = callbacks.RepeatedLines(window_s=5, clock=Clock())
    lines.log(logging.DEBUG, "rdkafka#producer-1", "PROTOCOL", "chatter", 7)
    assert _lines(caplog) == [] and lines.flush() is None


def test_an_unreachable_broker_is_not_a_flood(handles, caplog):
    """The real thing: librdkafka retries a closed port every few ms; its line is logged once,
    with its facility and broker, and the repeats are counted when the handle closes."""
    caplog.set_level(logging.INFO, logger="pyrdk.librdkafka")
    port = free_port()
    failures = []
    producer = handles("producer", {"bootstrap.servers": "127.0.0.1:%d" % port,
                                    "reconnect.backoff.ms": 1, "reconnect.backoff.max.ms": 5},
                       on_error=failures.append)

    def ask():
        try:
            producer.metadata(timeout_ms=50, all_topics=False)  # makes librdkafka connect again
        except KafkaException:
            pass
        producer.poll(0)
    util.wait_until(lambda: len(failures) >= 20, "20 connection failures", step=ask)
    producer.close()
    fail = [r for r in _lines(caplog) if getattr(r, "rdkafka_facility", None) == "FAIL"]
    assert fail, "the connection failure was logged"
    assert fail[0].rdkafka_broker == "127.0.0.1:%d/bootstrap" % port
    assert sum(r.rdkafka_repeats for r in fail) > len(fail), "the repeats were counted"
    assert any("seen" in r.getMessage() for r in fail)


def test_a_connection_failure_is_logged_once_not_again_as_its_error_event(handles, caplog):
    """librdkafka tells a failed connection twice, as a FAIL line and as an error event of the
    same text: without on_error, the event is not logged again."""
    caplog.set_level(logging.INFO, logger="pyrdk.librdkafka")
    port = free_port()
    producer = handles("producer", {"bootstrap.servers": "127.0.0.1:%d" % port})
    util.wait_until(lambda: producer._cbs.last_connection_error is not None, "a connection failure",
                    step=lambda: producer.poll(100))
    producer.close()
    said = "127.0.0.1:%d/bootstrap: Connect to" % port
    fail = [r for r in _lines(caplog) if r.rdkafka_facility == "FAIL" and said in r.getMessage()]
    events = [r for r in _lines(caplog) if r.rdkafka_facility is None and said in r.getMessage()]
    assert fail, "the connection failure was logged"
    assert events == [], "the error event repeated the FAIL line: %s" % [r.getMessage() for r in events]


class _CountingDict(dict):
    """A dict counting the entries its iterations visit."""
    visited = 0

    def _count(self, iterator):
        for item in iterator:
            self.visited += 1
            yield item

    def __iter__(self):
        return self._count(super().__iter__())

    def items(self):
        return self._count(super().items())


def test_a_flood_of_distinct_lines_costs_each_line_a_constant_amount_of_work(caplog):
    """librdkafka's debug lines (``debug=all``) differ from one another by offsets and ids:
    within the window each is a new entry, and logging one must not visit every entry kept
    (quadratic: 20000 lines took seconds of the polling thread)."""
    caplog.set_level(logging.DEBUG, logger="pyrdk.librdkafka")
    clock = Clock()
    lines = callbacks.RepeatedLines(window_s=5, clock=clock)
    lines._seen = _CountingDict()
    for i in range(2000):
        clock.now = i * 0.001
        lines.log(logging.DEBUG, "rdkafka#consumer-1", "FETCH", "fetch t [0] at offset %d" % i, 7)
    assert len(_lines(caplog)) == 2000, "each distinct line is logged"
    assert lines._seen.visited < 4 * 2000, "entries visited per line grow with the entries kept"
    clock.now = 10.0
    lines.log(logging.DEBUG, "rdkafka#consumer-1", "FETCH", "fetch t [0] at offset 0", 7)
    assert len(lines._seen) == 1, "the lines of the window past are forgotten"


@pytest.mark.parametrize("reason, hint", [
    ("127.0.0.1:9/bootstrap: Send failed: Broken pipe (after 0ms in state UP)", NO_SASL_HINT),
    ("127.0.0.1:9/bootstrap: Disconnected: connection reset by peer (after 1ms in state APIVERSION_QUERY)",
     PLAINTEXT_TO_TLS_HINT),
    ("127.0.0.1:9/bootstrap: Receive failed: Invalid response size 352518912 (0..1000000000): increase "
     "receive.message.max.bytes (after 2ms in state APIVERSION_QUERY)", PLAINTEXT_TO_TLS_HINT),
    ("127.0.0.1:9/bootstrap: ApiVersionRequest failed: Local: Timed out: probably due to broker version < "
     "0.10 (see api.version.request configuration) (after 5006ms in state APIVERSION_QUERY)", ""),
    ("127.0.0.1:9/bootstrap: Receive failed: Invalid response size 1213486160 (0..1000000000): increase "
     "receive.message.max.bytes (after 2ms in state APIVERSION_QUERY)", NOT_KAFKA_HTTP_HINT),
], ids=["sasl", "tls-reset", "tls-alert", "hung-broker", "http"])
def test_a_transport_error_carries_the_hint_of_the_failure_it_reports(handles, reason, hint):
    """librdkafka reports a connection's failure as a FAIL line and, often, as a transport
    error too, whichever comes last on a loaded machine: the error carries the same hint into
    the timeout's message (a SASL listener closing a plaintext client's connection as it came
    up, seen as a failed send; a TLS listener resetting it at its first request, or answering
    with an alert, read as a size of 0x15...). A broker that hangs gets no TLS hint (it told
    users of a plaintext broker to turn TLS on), and an endpoint answering "HTTP..." is named
    as one."""
    from pyrdk._ffi import ffi, lib
    from pyrdk.rd import errors
    handle = handles("producer", {"bootstrap.servers": "127.0.0.1:%d" % free_port()})
    with handle.use() as rk:  # as librdkafka calls it, from a poll
        callbacks._pyrdk_error_cb(rk, errors.TRANSPORT, ffi.new("char[]", reason.encode()), lib.rd_kafka_opaque(rk))
    exc = handle.with_last_error(KafkaException("metadata request timed out"))
    assert str(exc) == "metadata request timed out (last error: %s)" % (reason + hint)
