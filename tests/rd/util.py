"""Helpers for the rd tests: waiting for an outcome, producing and consuming N messages, a
child process that Ctrl-C reaches, an HTTP server where a broker was expected."""
import contextlib
import gc
import signal
import socket
import sys
import threading
import time

import pytest

# Generous bounds on how long to wait for an outcome; never asserted as timings.
WAIT_S = 30


def wait_until(predicate, what, step=None, timeout_s=WAIT_S):
    """Call ``step()`` (e.g. a poll) until ``predicate()`` is true; fail naming ``what``."""
    deadline = time.monotonic() + timeout_s
    while True:
        if step is not None:
            step()
        if predicate():
            return
        if time.monotonic() > deadline:
            pytest.fail("gave up waiting for %s" % what)
        if step is None:
            time.sleep(0.05)


class _Trigger:
    """Cyclic garbage whose finalizer runs ``action`` (no dict: freeing one gives no dict back
    to CPython's free list, and the class is made once, not at each arming)."""
    __slots__ = ("action", "cycle")

    def __del__(self):
        self.action()


def collect_then(action):
    """Run ``action`` from a finalizer at the next collection of the cyclic GC, made to come
    at the next allocation of a GC-tracked object: the caller puts the threshold back
    (``gc.set_threshold(*threshold)``) once the code under test has run."""
    trigger = _Trigger()
    trigger.action = action
    trigger.cycle = trigger
    del trigger
    gc.set_threshold(1)


class InterruptAsItReturns:
    """A profile function (``sys.setprofile``) raising KeyboardInterrupt once, as the C
    function ``name`` returns: where a Ctrl-C's handler runs when the signal comes during that
    call."""

    def __init__(self, name):
        self.name, self.fired = name, False

    def __call__(self, frame, event, arg):
        if event == "c_return" and getattr(arg, "__name__", None) == self.name and not self.fired:
            self.fired = True
            raise KeyboardInterrupt


class InterruptAsItStarts:
    """A profile function (``sys.setprofile``) raising KeyboardInterrupt once, at the start
    of the Python function ``name``: where a Ctrl-C's handler runs when the signal came while
    the thread was in librdkafka and librdkafka then calls that function back."""

    def __init__(self, name):
        self.name, self.fired = name, False

    def __call__(self, frame, event, arg):
        if event == "call" and frame.f_code.co_name == self.name and not self.fired:
            self.fired = True
            raise KeyboardInterrupt


class CCalls(list):
    """A profile function (``sys.setprofile``) listing the calls of the C function ``name``."""

    def __init__(self, name):
        super().__init__()
        self.name = name

    def __call__(self, frame, event, arg):
        if event == "c_call" and getattr(arg, "__name__", None) == self.name:
            self.append(arg)


@contextlib.contextmanager
def profiled(profile):
    """``sys.setprofile(profile)`` for the block; the profile function is what it gives."""
    sys.setprofile(profile)
    try:
        yield profile
    finally:
        sys.setprofile(None)


def default_sigint():
    """``preexec_fn`` of a child that a test sends SIGINT: a shell's background job (``make
    test &``) runs with SIGINT ignored, its children inherit that, and Python then installs
    no KeyboardInterrupt handler. The child gets the default back, as under a terminal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def consume(handle, count, timeout_s=WAIT_S):
    """``count`` messages from a consumer ``Handle`` (``consume_batch``); fails on error events."""
    got = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count and time.monotonic() < deadline:
        msgs, errs = handle.consume_batch(count - len(got), 500)
        assert not errs, errs
        got.extend(msgs)
    assert len(got) == count, "consumed %d of %d messages" % (len(got), count)
    return got


def produce(handle, topic, items, timeout_ms=WAIT_S * 1000):
    """Produce ``(partition, value, key, timestamp, headers)`` items with ids 1..N, then flush."""
    for msg_id, (partition, value, key, timestamp, headers) in enumerate(items, 1):
        handle.produce(topic, partition, value, key, timestamp, headers, msg_id)
    assert handle.flush(timeout_ms), "flush timed out"


@contextlib.contextmanager
def http_listener():
    """A port on 127.0.0.1 where a web server answers whatever it reads with "HTTP/1.1 400" and
    keeps the connection open (a keep-alive server, or a proxy): the address a client was
    wrongly given. Yields ``(port, answered)``, the connections it answered."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    answered, done = [], threading.Event()

    def answer_http():
        while not done.is_set():
            try:
                conn, _ = listener.accept()
            except socket.timeout:
                continue
            answered.append(conn)
            try:
                conn.recv(4096)
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            except OSError:
                pass

    thread = threading.Thread(target=answer_http, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], answered
    finally:
        done.set()
        thread.join(10)
        listener.close()
        for conn in answered:
            conn.close()
