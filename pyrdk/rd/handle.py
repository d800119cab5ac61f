"""Handle: an owned ``rd_kafka_t``, producer or consumer.

Owns the handle from ``rd_kafka_new`` to ``rd_kafka_destroy``, its topic handles and
its consumer queue. Every call takes a use-guard, so ``close()`` from one thread waits
for calls in flight in others instead of freeing memory under them; after ``close()``
every call raises the exception class given at construction. Long waits are sliced
(``SLICE_MS``) so Ctrl-C and ``close()`` get through.
"""
from __future__ import annotations

import atexit
import collections
import itertools
import json
import logging
import os
import socket
import threading
import time
import weakref
from typing import Literal

from pyrdk._ffi import ffi, lib, sized, string
from pyrdk.common import weak_method
from pyrdk.exceptions import NO_TLS_ANSWER_HINT, ConfigurationError, KafkaException, for_code
from pyrdk.rd import callbacks, errors, message, partitions
from pyrdk.rd.conf import Conf, split_address, tls_file_problem, to_str
from pyrdk.rd.queue import Queue
from pyrdk.rd.topic import TopicHandle

log = logging.getLogger(__name__)

SLICE_MS = 100
# A new client's first metadata request fails this long after it began once every bootstrap
# broker has failed to connect (see Handle.unreachable), rather than at its whole timeout: a
# wrong address is named at once (as pykafka and aiokafka, which try each address once).
UNREACHABLE_MS = 2000
PROBE_S = 1.0  # how long Handle.unreachable's TCP connection to a bootstrap address may take
_answered: set[str] = set()  # the bootstrap.servers whose brokers have answered a metadata request here
EXIT_FLUSH_MS = 5000  # at exit, how long a producer left open gets to deliver what it holds
_SIZE_MAX = 2 ** 64 - 1
# A memoryview of pointers: unsigned ints of a pointer's size.
_POINTER_FORMAT: Literal["L", "Q"] = "L" if ffi.sizeof("void *") == ffi.sizeof("unsigned long") else "Q"
_NO_POINTERS = memoryview(b"").cast(_POINTER_FORMAT)

_live: weakref.WeakSet[Handle] = weakref.WeakSet()
_order = itertools.count()

BrokerMetadata = collections.namedtuple("BrokerMetadata", "id host port")
PartitionMetadata = collections.namedtuple("PartitionMetadata", "id error leader replicas isrs")
TopicMetadata = collections.namedtuple("TopicMetadata", "name error partitions")
Metadata = collections.namedtuple("Metadata", "brokers topics controller_id cluster_id")
LibrdkafkaVersion = collections.namedtuple("LibrdkafkaVersion", "runtime built_against library implementation")


class _Use:
    """The context manager behind ``Handle.use`` (a class: it is on every call's path).

    The count of uses goes up and down by thread, with no call between the steps: the
    interpreter raises KeyboardInterrupt (a signal's handler) only at a call, a function's
    start or a loop's end. One that lands after the count went up, in ``__enter__``, takes
    it down again; one at the very start of ``__exit__`` leaves the count up, and
    ``close()`` in that thread tells it from a call in progress (see there)."""
    __slots__ = ("_handle", "_closed_ok", "_quiet", "_thread")

    def __init__(self, handle, closed_ok, quiet):
        self._handle = handle
        self._closed_ok = closed_ok
        self._quiet = quiet
        self._thread = None

    def __enter__(self):
        h = self._handle
        me = threading.get_ident()
        if not h.owned:  # before the lock: a thread of the parent may have held it at fork()
            raise h.refusal(forked=True)
        try:
            with h._lock:  # the lock itself: a C context manager, with no function start to interrupt
                closed = h._closing or h._ptr is None
                if closed and not self._closed_ok:
                    raise h.refusal()
                if closed:
                    return None
                h._by_thread[me] += 1
                self._thread = me
        except BaseException as exc:
            if self._thread is not None:  # interrupted once counted: uncount it
                self.__exit__(type(exc), exc, exc.__traceback__)
            raise
        return h._ptr

    def __exit__(self, *exc_info):
        me = self._thread
        if me is not None:
            h = self._handle
            with h._lock:
                left = h._by_thread[me] - 1
                if left:
                    h._by_thread[me] = left
                else:
                    del h._by_thread[me]
                self._thread = None
                if not h._by_thread:
                    h._cond.notify_all()
            if exc_info[0] is None and not self._quiet:  # else it waits for the next call: never mask the one raised
                h._cbs.reraise()
        return False


class _Unanswered(Exception):
    """Some partitions of a ListOffsets request had no leader to ask (``code``): ``out``
    holds every partition's answer."""

    def __init__(self, code, out):
        super().__init__(code)
        self.code, self.out = code, out


def _refused(bootstrap, not_kafka=()):
    """Whether no address of ``bootstrap`` (``bootstrap.servers``: ``[protocol://]host[:port]``,
    port 9092 when none) accepts a TCP connection now: each refuses, does not resolve, does
    not answer within ``PROBE_S``, or is in ``not_kafka`` (``host:port``: an HTTP server
    answered there)."""
    for entry in bootstrap.split(","):
        _, host, port = split_address(entry.strip())
        port = "9092" if port is None else port
        if "%s:%s" % (host, port) in not_kafka:
            continue
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_S).close()
        except (OSError, ValueError):
            continue
        return False
    return True


def _parsed(md):
    """``Metadata`` of librdkafka's answer ``md``, which it destroys."""
    try:
        brokers = [BrokerMetadata(b.id, string(b.host), b.port) for b in (md.brokers[i] for i in range(md.broker_cnt))]
        topics = {}
        for i in range(md.topic_cnt):
            t = md.topics[i]
            parts = [PartitionMetadata(p.id, p.err, p.leader, [p.replicas[j] for j in range(p.replica_cnt)],
                                       [p.isrs[j] for j in range(p.isr_cnt)])
                     for p in (t.partitions[k] for k in range(t.partition_cnt))]
            topics[string(t.topic)] = TopicMetadata(string(t.topic), t.err, parts)
    finally:
        lib.rd_kafka_metadata_destroy(md)
    return Metadata(brokers, topics, None, None)


class Handle:
    """An ``rd_kafka_t`` of type ``kind`` (``"producer"`` or ``"consumer"``).

    ``config`` holds librdkafka properties, and may hold ``oauth_cb`` as confluent-kafka's
    configuration does: the OAUTHBEARER token callable (see ``Callbacks``).
    """

    def __init__(self, kind, config, callbacks_=None, closed_exc=KafkaException, what=None, stats_callback=None):
        self.kind = kind
        self._closed_exc = closed_exc
        self._what = what  # how refusals name it (default: its kind and name)
        self._cbs = callbacks_ or callbacks.Callbacks()
        self.stats = None  # the last statistics snapshot (statistics.interval.ms), parsed
        self._stats_callback = stats_callback
        self.stats_enabled = stats_enabled(config)  # whether librdkafka reports statistics
        if self.stats_enabled and self._cbs.on_stats is None:
            # weakly: the callbacks' registry lives until close(), and would keep a handle
            # its owner let go of (and its librdkafka threads and group membership) for ever
            self._cbs.on_stats = weak_method(self, "_on_stats", None)
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._by_thread = collections.defaultdict(int)  # calls in progress (use()), by thread ident
        self._closing = False
        self._taking = {}  # consume_batch() calls by thread: each destroys what it took
        self._close_pending = None  # (thread, consumer_close): a close() left to that thread's consume_batch()
        self._closer = None  # the thread in _finish_close(), while it is there
        self._consumer_closed = False  # rd_kafka_consumer_close was called
        self._commit_unanswered = False  # the last commit() timed out: librdkafka may wait on it for ever
        self.closed_at_exit = False  # closed by the exit hook, not by its owner
        self._topics = {}
        self._queue = None
        self._main = None  # the main queue, once watch() asks for a producer's events
        self._woken = False
        self.before_destroy = []  # callables run just before rd_kafka_destroy (e.g. mock cluster)
        # What librdkafka may still read in place (the C producer core's values): let go once
        # rd_kafka_destroy has returned.
        self.keep = []
        self._pid = os.getpid()
        self._created = next(_order)
        # The C side of the use count: per-message calls enter it instead of use().
        self._guard = ffi.new("pyrdk_guard_t *")
        config = dict(config)
        oauth_cb = config.pop("oauth_cb", None)
        protocol = to_str("security.protocol", config.get("security.protocol", "")).lower()  # bytes too
        tls = protocol in ("ssl", "sasl_ssl")
        conf = Conf({"log.queue": True})
        try:
            if oauth_cb is not None:
                if not callable(oauth_cb):
                    # its type only: what is given in its place may be the token itself
                    raise TypeError("oauth_cb must be a callable returning (token, expiry), not a %s"
                                    % type(oauth_cb).__name__)
                self._cbs.oauth_cb = oauth_cb
            for key, value in config.items():
                conf.set(key, value)
            self._bootstrap = conf.get("bootstrap.servers") or ""  # librdkafka's string (see unreachable)
            if kind == "producer" and conf.get("delivery.report.only.error") == "true":
                raise ConfigurationError("delivery.report.only.error=true is not supported: pyrdk counts a message "
                                         "without a delivery report as not delivered; drop the property")
            callbacks.install(conf, self._cbs, producer=(kind == "producer"), tls=tls,
                              sasl=protocol.startswith("sasl_"))
            buf = errors.errstr()
            rd_type = lib.RD_KAFKA_PRODUCER if kind == "producer" else lib.RD_KAFKA_CONSUMER
            ptr = lib.rd_kafka_new(rd_type, conf._ptr, buf, errors.ERRSTR_SIZE)
            if ptr == ffi.NULL:
                reason = string(buf)
                problem = tls_file_problem(config, reason)
                raise ConfigurationError("librdkafka could not create the %s: %s" % (
                    kind, reason if problem is None else "%s (%s)" % (problem, reason)))
            conf.take()  # rd_kafka_new owns it now
        except BaseException:
            self._cbs.unregister()
            raise
        finally:
            conf.destroy()
        self._ptr = ptr
        self.name = string(lib.rd_kafka_name(ptr))  # before anything may fail: _destroy() names it
        lib.rd_kafka_set_log_queue(ptr, ffi.NULL)  # log lines to the main queue, served by poll
        try:
            callbacks.started(ptr, self._cbs)
        except BaseException:
            self._destroy(0x8)  # RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE
            raise
        if kind == "consumer":
            lib.rd_kafka_poll_set_consumer(ptr)
            self._queue = Queue(ptr, consumer=True)
        _live.add(self)

    # -- lifetime -------------------------------------------------------------------------------

    def use(self, closed_ok=False, quiet=False):
        """Hold the handle open for the duration of one call into librdkafka:
        ``with handle.use() as rk:`` gives the ``rd_kafka_t *``. A closed handle raises, or
        gives None when ``closed_ok``. At its end, a callback's exception kept meanwhile is
        raised, unless ``quiet`` (a call that tears down: it waits for the next call)."""
        return _Use(self, closed_ok, quiet)

    def blocking(self, call, timeout_ms):
        """``call(rk)``, one of librdkafka's blocking calls, which nothing cuts short (it
        waits up to ``timeout_ms``), with the handle held open. Made in the main thread, where
        signals' handlers run, it runs in a thread of its own and is waited for in slices
        (``SLICE_MS``), so that Ctrl-C (KeyboardInterrupt) or another handler's exception gets
        through at once: the call then goes on to its end in that thread, its answer dropped
        (``close()`` waits for it, as for any call in flight). Elsewhere, or for a
        ``timeout_ms`` of a slice or less, it runs here."""
        if 0 <= timeout_ms <= SLICE_MS or threading.current_thread() is not threading.main_thread():
            with self.use() as rk:
                return call(rk)
        outcome = []
        done = threading.Event()

        def run():
            try:
                with self.use() as rk:
                    result = call(rk)
                outcome.append((result, None))  # after use() ends: it may raise what a callback kept
            except BaseException as exc:  # raised in the caller's thread
                outcome.append((None, exc))
            finally:
                done.set()
        threading.Thread(target=run, name="pyrdk-blocking-call", daemon=True).start()
        while not done.wait(SLICE_MS / 1000.0):
            pass
        result, exc = outcome[0]
        if exc is not None:
            raise exc
        return result

    def refusal(self, forked=False):
        """The exception for a call on this handle once it is closed, or from a child
        process forked after it was made."""
        what = self._described()
        if forked:
            return self._closed_exc("the %s was created in another process: librdkafka's threads "
                                    "do not survive fork(); create it after forking" % what)
        return self._closed_exc("the %s is closed" % what)

    def closed_while(self, what):
        """The exception for a wait (``what``: for a commit, an Admin API answer...) that
        ``close()`` from another thread ended."""
        return self._closed_exc("the %s closed while it waited for %s" % (self._described(), what))

    @property
    def closed(self):
        return self._closing or self._ptr is None

    @property
    def closing(self):
        return self._closing

    @property
    def usable(self):
        """Whether calls may use the handle: open, and made in this process."""
        return not self._closing and self._ptr is not None and self.owned

    @property
    def owned(self):
        """False in a child process forked after the handle was made."""
        return self._pid == os.getpid()

    @property
    def _users(self):
        """The number of calls in progress (``use()``), of every thread."""
        with self._lock:  # the dict changes under it otherwise
            return sum(self._by_thread.values())

    def _described(self):
        """How errors name the handle: its ``what``, else its kind and name."""
        return self._what or "%s %s" % (self.kind, getattr(self, "name", ""))

    def check_close(self):
        """Raise RuntimeError where ``close()`` may not run: in this thread, inside one of
        librdkafka's callbacks during a call on this handle (closing would free the handle
        under that call). Producers and consumers ask before their ``stop()`` changes
        anything."""
        if self._by_thread.get(threading.get_ident()) and callbacks.in_callback() and not self._closing:
            raise RuntimeError("stopping the %s from inside one of its own callbacks (a rebalance "
                               "listener, stats_callback): librdkafka is still in the call that runs "
                               "it; stop it after that call has returned" % self._described())

    def close(self, consumer_close=True):
        """Wait for calls in flight in other threads, then ``rd_kafka_consumer_close``
        (skipped when the last commit got no answer: it would wait for that commit) and
        ``rd_kafka_destroy``.

        A call this thread still counts is one a KeyboardInterrupt cut short in its last
        step (see ``_Use``), unless this thread is in one of librdkafka's callbacks, inside
        a call on this handle: there ``check_close()`` raises RuntimeError, and a close
        another thread began is left to it.

        A KeyboardInterrupt or SystemExit that a callback got meanwhile (a signal's handler
        runs in whatever Python code the main thread is in, and ``rd_kafka_consumer_close``
        serves callbacks there; a producer's close serves none in the caller's thread) is
        raised once the handle is destroyed: the program's stop is not lost with the handle.
        A close that an interrupt cut short (in its wait for other threads' calls) is
        finished by the next ``close()``, or at exit.

        The handle's lock is taken as itself, a C context manager, not through ``_cond``:
        an interrupt at the start of ``Condition.__exit__`` would leave it held."""
        me = threading.get_ident()
        mine = False  # whether this call marked itself as the closer (two stores, no call between)
        kept = len(self._cbs.calls)
        try:
            with self._lock:
                self.check_close()  # in a callback, raises unless another thread is closing
                if self._taking.get(me) and not self._closing:
                    # A signal's handler of this thread, run inside consume_batch() (as librdkafka
                    # returned a batch): the batch is that call's to destroy, and rd_kafka_destroy
                    # would wait for it for ever. That call closes the handle once done.
                    self._closing = True
                    lib.pyrdk_guard_close(self._guard)
                    self._close_pending = (me, consumer_close)
                    return
                own = self._by_thread.get(me, 0)
                if own and not callbacks.in_callback():  # none in progress: an interrupt cut their end short
                    log.debug("%s: %d call(s) cut short by an interrupt", self.name, own)
                    del self._by_thread[me]
                    self._cond.notify_all()
                if self._closing:
                    if self._ptr is None or self._closer is not None or self._close_pending is not None:
                        return  # closed, or closing in another call
                    if own and callbacks.in_callback():
                        return  # cut short before: a close() outside this callback finishes it
                self._closing = True
                lib.pyrdk_guard_close(self._guard)
                if not self.owned:
                    return  # the parent's handle: its threads are not here to stop
                self._closer = me
                mine = True
            self._finish_close(consumer_close)
        finally:
            if mine:
                self._closer = None
        stop = self._cbs.calls.pop((KeyboardInterrupt, SystemExit)) if len(self._cbs.calls) > kept else None
        if stop is not None:
            raise stop

    def _finish_close(self, consumer_close):
        """``close()`` once the handle is closing: wait for the calls in flight, then
        ``rd_kafka_consumer_close`` (once: a close finished after an interrupt does not repeat
        it) and ``rd_kafka_destroy``."""
        with self._lock:
            if self._queue is not None:
                self._queue.yield_()
            while self._users or lib.pyrdk_guard_users(self._guard):
                self._cond.wait(0.1 if self._users else 0.001)
        self._cbs.closing = True  # rd_kafka_consumer_close waits for no oauth_cb either
        if consumer_close and self._commit_unanswered:
            # rd_kafka_consumer_close waits for that commit, which a coordinator that hangs (its
            # connection open, nothing answered) never ends: the group rebalances once the
            # member's session times out instead.
            log.warning("%s: closed without leaving its group (rd_kafka_consumer_close), since a commit got no "
                        "answer: its partitions go to the others once its session times out", self._described())
            consumer_close = False
        if self.kind == "consumer" and consumer_close and not self._consumer_closed:
            self._consumer_closed = True  # no interrupt lands between this line and the call
            lib.rd_kafka_consumer_close(self._ptr)
        # without the flag rd_kafka_destroy closes the consumer anyway (and waits for its group)
        self._destroy(0 if consumer_close else 0x8)  # RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE

    def _destroy(self, flags):
        """Free what hangs off the handle, then ``rd_kafka_destroy_flags`` it, and only then
        the callbacks' opaque, which librdkafka's threads use until then. Each step may be
        repeated: one that raises (a KeyboardInterrupt as a hook starts) leaves the handle
        to ``__del__``, which destroys it."""
        for hook in self.before_destroy:
            hook()
        for queue in (self._queue, self._main):
            if queue is not None:
                queue.io_event_enable(-1)
                queue.destroy()
        for topic in list(self._topics.values()):
            topic.destroy()
        self._topics.clear()
        ptr, self._ptr = self._ptr, None
        self._cbs.closing = True  # a token refresh stops waiting for oauth_cb (see callbacks._ask_oauth_cb)
        try:
            lib.rd_kafka_destroy_flags(ptr, flags)  # no interrupt between the line above and this call
            self.keep.clear()
        finally:
            self._cbs.unregister()
            callbacks.repeats.flush(self.name)
        self._stats_stopped()

    def _stats_stopped(self):
        """Tell a ``stats_callback`` with ``stopped(name)`` (a
        :class:`pyrdk.metrics.PrometheusExporter`) that the handle sends no more statistics:
        its last snapshot predates what the close did (a consumer's last commit), and it
        reads no partition any more."""
        stopped = getattr(self._stats_callback, "stopped", None)
        if callable(stopped):
            try:
                stopped(self.name)
            except Exception:
                log.exception("the stats_callback of %s raised in stopped()", self.name)

    def __del__(self):
        # Last resort; never after fork() (the child does not own librdkafka's threads).
        if getattr(self, "_ptr", None) is not None and self.owned:
            self._closing = True
            lib.pyrdk_guard_close(self._guard)
            self.report_undelivered()  # nothing may wait here: what a producer still holds is lost
            self._destroy(0x8)  # RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE

    def flush_at_exit(self, timeout_ms):
        """At exit, before a producer left open is closed: ``rd_kafka_flush`` (up to
        ``timeout_ms``) what it still holds, then log what is left: nobody is there to be
        told. Its delivery reports stay in C: their owner (an event loop's futures) is gone."""
        if self.kind != "producer" or self._ptr is None:
            return
        with self.use(closed_ok=True) as rk:
            if rk is not None and lib.rd_kafka_outq_len(rk):
                lib.rd_kafka_flush(rk, timeout_ms)
        self.report_undelivered()

    def report_undelivered(self):
        """Log the messages a producer still holds as it is destroyed without its owner's
        ``stop()``: librdkafka drops them, and logs so only to a queue nobody serves any
        more. ``rd_kafka_outq_len`` counts them and the events waiting in the main queue
        (``rd_kafka_queue_length``), log lines included: those are not messages."""
        ptr = self._ptr
        if self.kind != "producer" or ptr is None:
            return
        main = lib.rd_kafka_queue_get_main(ptr)
        try:
            left = lib.rd_kafka_outq_len(ptr) - lib.rd_kafka_queue_length(main)
        finally:
            lib.rd_kafka_queue_destroy(main)
        if left > 0:
            log.error("the %s is destroyed with %d message(s) not delivered, or delivered but not yet reported: "
                      "those not delivered are lost; stop() a producer (await stop() for pyrdk.aio) before "
                      "letting it go or exiting", self._described(), left)

    def _on_stats(self, text):
        """librdkafka's statistics JSON (``stats_cb``): parsed once, kept as :attr:`stats` and
        handed to ``stats_callback``; an exception the callback raises is logged, not raised
        (it would otherwise come out of an unrelated ``produce()`` or ``consume()``), and so is
        a snapshot that cannot be parsed."""
        try:
            self.stats = _parse_stats(text, self.name)
        except ValueError as exc:
            log.warning("the statistics of %s could not be parsed, skipped: %s", self.name, exc)
            return
        if self._stats_callback is not None:
            try:
                self._stats_callback(self.stats)
            except Exception:
                log.exception("the stats_callback of %s raised", self.name)

    @property
    def last_error(self):
        """The last error librdkafka reported through ``error_cb`` (None if none)."""
        return self._cbs.last_error

    def unreachable(self, since):
        """Whether a wait for the bootstrap brokers that began at ``since`` (``time.monotonic()``)
        may end: ``UNREACHABLE_MS`` have passed, every bootstrap broker has failed to connect
        (librdkafka reported ``_ALL_BROKERS_DOWN`` through ``error_cb``), none has ever answered
        a client of this process (brokers down for a while, a restart under a Spark driver's
        stream, are waited for), and none accepts a TCP connection now but an HTTP server
        (:func:`_refused`; a broker that is starting, or a TLS or SASL listener a plaintext
        client fails at, does): most likely a wrong address. Blocks for up to ``PROBE_S`` per
        address."""
        return time.monotonic() - since >= UNREACHABLE_MS / 1000.0 and self._cbs.all_brokers_down and \
            self._bootstrap not in _answered and _refused(self._bootstrap, self._cbs.not_kafka)

    # -- polling -------------------------------------------------------------------------------

    def poll(self, timeout_ms=0, dispatch=True):
        """``rd_kafka_poll``: serve callbacks, then (unless ``dispatch`` is False) hand the
        buffered delivery reports to ``on_delivery``; the number of events served."""
        with self.use() as rk:
            served = lib.rd_kafka_poll(rk, timeout_ms)
        if dispatch:
            self.dispatch_reports()
        return served

    def watch(self, fd):
        """Have librdkafka write to ``fd`` when an event waits to be served
        (``rd_kafka_queue_io_event_enable``): on a consumer's queue (messages, rebalances,
        errors), on a producer's main queue (delivery reports, errors); -1 stops it. An event
        loop watches ``fd`` instead of a thread blocking in a poll. Stopping raises no
        callback's exception: a client's stop, or a failed start's clean-up, must go on."""
        with self.use(quiet=fd == -1) as rk:
            if self.kind == "consumer":
                queue = self._queue
                if queue is None:
                    raise ValueError("this consumer has no group.id, so no consumer queue to watch")
            else:
                if self._main is None:
                    self._main = Queue(rk, main=True)
                queue = self._main
            queue.io_event_enable(fd)

    def dispatch_reports(self, limit=None, reraise=True):
        """Hand the buffered delivery reports to ``on_delivery`` in this thread (at most
        ``limit`` batches of ``callbacks.REPORT_BATCH``); the number handled. It first waits
        for a dispatch under way in another thread (the poller's) to end. ``reraise``: raise
        the oldest exception a handler raised, if any (else it waits for the next call that
        does). In a child forked after the handle was made it raises the handle's
        exception: the parent's threads (a poller serving reports, librdkafka's) may have
        held the reports' locks at fork(), which nobody in the child would ever release."""
        if not self.owned:
            raise self.refusal(forked=True)
        handled = self._cbs.dispatch_reports(limit)
        if reraise:
            self._cbs.reraise()
        return handled

    def wait_reports(self, timeout_ms):
        """Block until a delivery report is buffered (or the timeout); the number buffered."""
        with self.use():
            return self._cbs.wait_reports(timeout_ms)

    def flush(self, timeout_ms):
        """``rd_kafka_flush`` in slices, dispatching delivery reports; True when every
        message is delivered or reported, False on timeout."""
        deadline = _deadline(timeout_ms)
        while True:
            with self.use() as rk:
                done = lib.rd_kafka_flush(rk, _slice(deadline)) == 0
            self.dispatch_reports()
            if done:
                return True
            if _remaining(deadline) <= 0:
                return False

    def outq_len(self):
        """``rd_kafka_outq_len``: messages and requests not yet delivered or reported."""
        with self.use() as rk:
            return lib.rd_kafka_outq_len(rk)

    def purge(self, in_flight=False):
        """``rd_kafka_purge``: fail queued (and optionally in-flight) messages with _PURGE_*."""
        flags = lib.RD_KAFKA_PURGE_F_QUEUE | (lib.RD_KAFKA_PURGE_F_INFLIGHT if in_flight else 0)
        with self.use() as rk:
            errors.check(lib.rd_kafka_purge(rk, flags), "purge")

    # -- producing -----------------------------------------------------------------------------

    def topic(self, name):
        """The cached ``rd_kafka_topic_t`` for ``name``."""
        handle = self._topics.get(name)
        if handle is None:
            with self.use() as rk:
                made = TopicHandle(rk, name)
                handle = self._topics.setdefault(name, made)
                if handle is not made:  # another thread made one first
                    made.destroy()
        return handle

    def produce(self, topic, partition, value, key, timestamp, headers, msg_id):
        """One message through ``rd_kafka_producev`` (copied); raises on a local refusal
        (``ProducerQueueFullError``, ``MessageSizeTooLarge``...). ``msg_id`` (> 0) comes back
        in the delivery report."""
        rkt = self.topic(topic)._ptr
        with self.use() as rk:
            self._produce(rk, rkt, topic, partition, value, key, timestamp, headers, msg_id)

    def produce_guarded(self, topic, partition, value, key, timestamp, headers, msg_id):
        """:meth:`produce` without the Python use-guard: ``pyrdk_produce`` enters the C guard
        itself, so a closed handle refuses the message there (for a caller on one thread,
        such as an event loop, that serves callbacks and their errors itself)."""
        rk = self._ptr
        topic_handle = self._topics.get(topic)
        if rk is None or topic_handle is None:
            return self.produce(topic, partition, value, key, timestamp, headers, msg_id)
        self._produce(rk, topic_handle._ptr, topic, partition, value, key, timestamp, headers, msg_id)

    def _produce(self, rk, rkt, topic, partition, value, key, timestamp, headers, msg_id):
        if value is not None:
            value = sized(value)
        if key is not None:
            key = sized(key)
        hdrs = message.headers_to_c(headers)  # pyrdk_produce owns them from here
        err = lib.pyrdk_produce(self._guard, rk, rkt, partition,
                                ffi.NULL if value is None else value,
                                0 if value is None else len(value),
                                ffi.NULL if key is None else key,
                                0 if key is None else len(key),
                                timestamp or 0, hdrs, msg_id, _SIZE_MAX)
        if err:
            self._raise_produce_error(err, topic, partition)

    def produce_batch(self, topic, partition, messages, errs=None):
        """``rd_kafka_produce_batch`` of ``(value, key, msg_id)`` triples to one partition
        (copied; ``msg_id`` 0: none, the report is only counted). Returns each message's
        error (0: queued). librdkafka goes on after a refusal: a message after a refused one
        may be queued. ``errs``, a list, gets the errors too, also when the call raises (a
        KeyboardInterrupt as librdkafka returns): ``errors.NOT_TRIED`` for the messages
        librdkafka did not get."""
        rkt = self.topic(topic)._ptr
        n = len(messages)
        array = ffi.new("rd_kafka_message_t[]", n)
        held = []  # the buffers the array points into, alive for the call
        for m, (value, key, msg_id) in zip(array, messages):
            m.err = errors.NOT_TRIED  # librdkafka sets every message's
            if value is not None:  # the buffer's length, not len(value): see pyrdk._ffi.sized
                held.append(ffi.from_buffer(value))
                m.payload, m.len = held[-1], len(held[-1])
            if key is not None:
                held.append(ffi.from_buffer(key))
                m.key, m.key_len = held[-1], len(held[-1])
            m._private = ffi.cast("void *", msg_id)
        try:
            with self.use():
                lib.rd_kafka_produce_batch(rkt, partition, lib.RD_KAFKA_MSG_F_COPY, array, n)
        finally:
            result = [m.err for m in array]
            if errs is not None:
                errs[:] = result
        return result

    def raise_produce_error(self, err, topic, partition):
        """Raise what librdkafka's refusal ``err`` of a message for ``topic`` means."""
        self._raise_produce_error(err, topic, partition)

    def addresses(self, topic):
        """``(rk, rkt, guard)``: the addresses of the ``rd_kafka_t``, of the topic handle of
        ``topic`` and of the use guard, for the C core (``pyrdk.core``), which keeps this
        Handle alive while it holds them and enters the guard before each use. ``topic`` None:
        no topic handle (its address 0)."""
        if self._ptr is None:
            raise self.refusal()
        rkt = ffi.NULL if topic is None else self.topic(topic)._ptr
        return tuple(int(ffi.cast("uintptr_t", p)) for p in (self._ptr, rkt, self._guard))

    def _raise_produce_error(self, err, topic, partition):
        """The refusal's exception; for ``_FATAL``, the producer's fatal error itself, with
        librdkafka's reason (:meth:`fatal_error`): its error event may not be served yet."""
        if err == lib.PYRDK_ERR_CLOSED:
            raise self.refusal(forked=not self.owned)
        what = "produce to %s [%d]" % (topic, partition) if partition >= 0 else "produce to %s" % topic
        fatal = self.fatal_error() if err == errors.FATAL else None
        if fatal is not None:
            raise errors.exception(fatal[0], what, reason=fatal[1], fatal=True)
        raise errors.exception(err, what)

    def fatal_error(self):
        """``rd_kafka_fatal_error``: ``(code, reason)`` of the producer's fatal error, or None
        (also once closed). It raises no callback's kept exception."""
        buf = errors.errstr()
        with self.use(closed_ok=True, quiet=True) as rk:
            err = lib.rd_kafka_fatal_error(rk, buf, errors.ERRSTR_SIZE) if rk is not None else 0
        return (err, string(buf)) if err else None

    def batch_outstanding(self, produced):
        """Of ``produced`` messages sent through :meth:`produce_batch`, how many have no
        delivery report yet."""
        with self.use(closed_ok=True) as rk:
            if rk is None or self._cbs.opaque is None:
                return 0
            return produced - lib.pyrdk_batch_done(self._cbs.opaque)

    # -- metadata and offsets ------------------------------------------------------------------

    def metadata(self, topic=None, timeout_ms=10000, all_topics=True):
        """``rd_kafka_metadata`` for all topics or one, as ``Metadata`` namedtuples (a
        blocking call: see :meth:`blocking`)."""
        def call(rk):
            rkt = self.topic(topic)._ptr if topic is not None else ffi.NULL
            out = ffi.new("const struct rd_kafka_metadata **")
            err = lib.rd_kafka_metadata(rk, 1 if (all_topics and topic is None) else 0, rkt, out, timeout_ms)
            return err, (_parsed(out[0]) if not err else None)
        err, md = self.blocking(call, timeout_ms)
        if err:
            raise self._with_reason(errors.exception(err, "metadata request"))
        _answered.add(self._bootstrap)
        return md

    def controller_id(self, timeout_ms=10000):
        """``rd_kafka_controllerid``: the controller broker's id, or -1 (a blocking call: see
        :meth:`blocking`)."""
        return self.blocking(lambda rk: lib.rd_kafka_controllerid(rk, timeout_ms), timeout_ms)

    def query_watermark_offsets(self, topic, partition, timeout_ms=10000):
        """``rd_kafka_query_watermark_offsets``: ``(low, high)`` from the partition leader (an
        unreachable leader: see :meth:`_waiting_for_leaders`)."""
        return self._waiting_for_leaders(lambda ms: self._watermarks(topic, partition, ms), [(topic, partition)],
                                         timeout_ms, "list offsets")

    def wake_fetcher(self, topic, partition):
        """Make the thread of ``partition``'s leader look at its partitions now: librdkafka
        starts fetching a resumed partition only at that look, up to a second later. A
        request to the leader does it: ``rd_kafka_query_watermark_offsets``, whose answer
        nobody waits for (a timeout of 0; librdkafka drops it)."""
        low = ffi.new("int64_t *")
        high = ffi.new("int64_t *")
        with self.use() as rk:
            lib.rd_kafka_query_watermark_offsets(rk, topic.encode(), partition, low, high, 0)

    def _watermarks(self, topic, partition, timeout_ms):
        low = ffi.new("int64_t *")
        high = ffi.new("int64_t *")
        err = self.blocking(lambda rk: lib.rd_kafka_query_watermark_offsets(rk, topic.encode(), partition, low, high,
                                                                            timeout_ms), timeout_ms)
        if err:
            raise self._with_reason(errors.exception(err, "list offsets for %s [%d]" % (topic, partition)))
        return low[0], high[0]

    def get_watermark_offsets(self, topic, partition):
        """``rd_kafka_get_watermark_offsets``: ``(low, high)`` as the last fetch response for the
        partition gave them, without a request; ``OFFSET_INVALID`` (-1001) before the first."""
        low = ffi.new("int64_t *")
        high = ffi.new("int64_t *")
        with self.use() as rk:
            err = lib.rd_kafka_get_watermark_offsets(rk, topic.encode(), partition, low, high)
        if err:
            raise errors.exception(err, "watermarks of %s [%d]" % (topic, partition))
        return low[0], high[0]

    def offsets_for_times(self, tps, timeout_ms=10000, what="offsets for times"):
        """``rd_kafka_offsets_for_times``: ``tps`` carry timestamps (ms) in place of offsets
        (an unreachable leader: see :meth:`_waiting_for_leaders`); ``what`` names the lookup
        in its errors."""
        def call(ms):
            out = self._query(lib.rd_kafka_offsets_for_times, tps, ms, what)
            # One partition's answer: a leader librdkafka does not know yet (a partition
            # added since its metadata was read) is waited for as the whole call's is.
            code = next((tp.error for tp in out if tp.error in _LEADER_UNANSWERED + _LEADER_MOVING), 0)
            if code:
                raise _Unanswered(code, out)
            return out
        return self._waiting_for_leaders(call, [(t, p) for t, p, _ in tps], timeout_ms, what)

    def _waiting_for_leaders(self, call, tps, timeout_ms, what):
        """``call(ms)``, a ListOffsets request of ``tps`` (``(topic, partition)``) within
        ``timeout_ms``. librdkafka answers ``_UNKNOWN_PARTITION`` at once while a partition's
        leader is unreachable or not yet in its metadata (and ``_DESTROY_BROKER`` or ``_TRANSPORT``
        for a request the lost leader took); for partitions the metadata has (asked again, which renews
        librdkafka's), that is retried within ``timeout_ms``, then raised as
        ``LeaderNotAvailable`` (``KafkaTimeoutError`` when the metadata request times out,
        ``NoBrokersAvailableError`` when no broker answers). A leader's retriable answer (a
        leader moving or elected, a request timed out on the broker: ``_LEADER_MOVING``) is
        retried the same way, then raised (the whole call's) or returned (a partition's)."""
        deadline = _deadline(timeout_ms)
        moving = None  # the last retriable answer: what a retry that timed out ends with
        known = []  # the metadata's last answer: whether it has every partition of tps

        def partitions_known():
            # The metadata asked with what is left of the deadline (a millisecond, perhaps): once
            # it has answered, one that runs out of time counts as its last answer.
            try:
                known[:] = [self._partitions_known(tps, deadline, timeout_ms, what)]
            except KafkaException as exc:
                if exc.code != errors.TIMED_OUT or not known:
                    raise
            return known[0]
        while True:
            try:
                return call(_ms_left(deadline))
            except _Unanswered as exc:  # some partitions' answers: theirs are the caller's to raise
                if not partitions_known():
                    return exc.out
                if exc.code in _LEADER_MOVING:
                    moving = exc
                if _remaining(deadline) <= 0:
                    if moving is not None:
                        return moving.out
                    raise _no_leader(tps, timeout_ms, what) from None
            except KafkaException as exc:
                if exc.code == errors.TIMED_OUT and moving is not None:  # the retry ran out of time
                    if isinstance(moving, _Unanswered):
                        return moving.out
                    raise moving
                if exc.code not in _LEADER_UNANSWERED + _LEADER_MOVING or not partitions_known():
                    raise
                if exc.code in _LEADER_MOVING:
                    moving = exc
                if _remaining(deadline) <= 0:
                    if moving is not None:
                        raise moving
                    raise _no_leader(tps, timeout_ms, what) from exc
            time.sleep(0.1)

    def _partitions_known(self, tps, deadline, timeout_ms, what):
        """Whether the metadata (asked before ``deadline``) has every partition of ``tps``.
        A metadata request that timed out times the call out (``KafkaTimeoutError``): librdkafka
        may have sent it to the lost leader itself, other brokers up."""
        try:
            md = self.metadata(timeout_ms=_ms_left(deadline))
        except KafkaException as exc:
            if exc.code == errors.TIMED_OUT:
                raise for_code(errors.TIMED_OUT)("%s: no answer within %d ms (%s)" % (what, timeout_ms, exc)) from exc
            if exc.code in (errors.TRANSPORT, errors.ALL_BROKERS_DOWN):
                raise for_code(errors.ALL_BROKERS_DOWN)("%s: no broker answered within %d ms (%s); calls work "
                                                        "again once one is" % (what, timeout_ms, exc)) from exc
            raise
        return all(t in md.topics and any(p.id == pid for p in md.topics[t].partitions) for t, pid in tps)

    def _query(self, fn, tps, timeout_ms, what):
        """Call ``fn(rk, list, timeout_ms)``, which fills in a partition list (see
        :meth:`blocking`); its entries (none for none: librdkafka calls an empty list invalid)."""
        if not tps:
            return []
        c_list = partitions.to_c(tps)
        err = self.blocking(lambda rk: fn(rk, c_list, timeout_ms), timeout_ms)
        if err:
            raise self._with_reason(errors.exception(err, what))
        return partitions.from_c(c_list)

    def _with_reason(self, exc):
        """Add the last connection error librdkafka reported (else the last connection
        failure it only logged, else its last error) to the message of a timeout or a
        transport failure. A producer first serves its pending
        error events (``rd_kafka_poll(rk, 0)``; its delivery reports stay buffered in C); a
        consumer's arrive with its messages."""
        if exc.code not in (errors.TIMED_OUT, errors.TRANSPORT, errors.ALL_BROKERS_DOWN):
            return exc
        if self.kind == "producer":
            with self.use(closed_ok=True) as rk:
                if rk is not None:
                    lib.rd_kafka_poll(rk, 0)
        return self.with_last_error(exc)

    def with_last_error(self, exc):
        """``exc`` with the last connection error librdkafka reported (else the last
        connection failure it only logged, with its hint, else its last error) added to its
        message, if any, or, for a TLS client no broker sent a certificate to, the hint that
        the listener may be plaintext; without serving anything (from a delivery report
        handler too). While ``oauth_cb`` has not returned and no token it returned before is
        still valid, librdkafka has no token to connect with: that is said instead."""
        cbs = self._cbs
        last = cbs.last_connection_error or cbs.last_failure or cbs.last_error
        since = cbs.oauth_since
        if since is not None and not (cbs.oauth_expiry is not None and cbs.oauth_expiry > time.time()):
            exc.args = ("%s (%s has not returned a token: it was called %d ms ago, and librdkafka connects to no "
                        "broker before it returns)" % (exc.args[0], callbacks.oauth_name(cbs),
                                                      (time.monotonic() - since) * 1000),)
        elif last is not None:
            exc.args = ("%s (last error: %s)" % (exc.args[0], last),)
        elif cbs.tls_verify and not cbs.tls_answered:
            exc.args = ("%s (%s)" % (exc.args[0], NO_TLS_ANSWER_HINT),)
        return exc

    def queued_reason(self, exc):
        """``exc``, a timeout or transport failure of a blocking call (``rd_kafka_committed``...)
        on a consumer that is neither assigned nor subscribed, after serving what that call
        left in its queue (``rd_kafka_consume_batch_queue``; no message can come): a TLS
        failure or refused login among those error events is raised in its place; else the
        last connection failure their log lines tell is added, as :meth:`_with_reason` does
        for a producer."""
        _, errs = self.consume_batch(1, 0)  # what the error handler keeps is raised from here
        failure = next((e for e in errs if callbacks.security_failure(e)), None)
        if failure is not None:
            return failure
        return exc if "(last error: " in str(exc) else self._with_reason(exc)

    # -- consuming -----------------------------------------------------------------------------

    def assign(self, tps):
        """``rd_kafka_assign`` ``(topic, partition, offset)`` tuples; None unassigns."""
        with self.use() as rk:
            errors.check(lib.rd_kafka_assign(rk, ffi.NULL if tps is None else partitions.to_c(tps)),
                         "assign")

    def assignment(self):
        """``rd_kafka_assignment``."""
        out = ffi.new("rd_kafka_topic_partition_list_t **")
        with self.use() as rk:
            errors.check(lib.rd_kafka_assignment(rk, out), "assignment")
        c_list = ffi.gc(out[0], lib.rd_kafka_topic_partition_list_destroy)
        return partitions.from_c(c_list)

    def subscribe(self, topics):
        """``rd_kafka_subscribe``."""
        with self.use() as rk:
            errors.check(lib.rd_kafka_subscribe(rk, partitions.to_c((t, -1) for t in topics)),
                         "subscribe")

    def unsubscribe(self):
        """``rd_kafka_unsubscribe``."""
        with self.use() as rk:
            errors.check(lib.rd_kafka_unsubscribe(rk), "unsubscribe")

    def commit(self, tps, asynchronous=False, timeout_ms=10000):
        """Commit explicit offsets (the next offset to read); per-partition errors are raised
        too. ``rd_kafka_commit_queue`` onto a queue of its own, waited on in slices for up to
        ``timeout_ms`` (``KafkaTimeoutError`` then: no coordinator answered), so that Ctrl-C
        and ``close()`` get through; ``asynchronous``: ``rd_kafka_commit`` without waiting."""
        c_list = partitions.to_c(tps)
        if asynchronous:
            with self.use() as rk:
                errors.check(lib.rd_kafka_commit(rk, c_list, 1), "commit offsets")
            return
        deadline = _deadline(timeout_ms)
        with self.use() as rk:
            queue = lib.rd_kafka_queue_new(rk)
            box = ffi.new("rd_kafka_event_t **")  # the event, also when a Ctrl-C ends the poll as it returns
            try:
                errors.check(lib.rd_kafka_commit_queue(rk, c_list, queue, ffi.NULL, ffi.NULL), "commit offsets")
                while box[0] == ffi.NULL and _remaining(deadline) > 0 and not self._closing:
                    lib.pyrdk_queue_poll(queue, _slice(deadline), box)
                event = box[0]
                if event == ffi.NULL:
                    if self._closing:
                        raise self._closed_exc("the %s closed while it committed offsets" % self._described())
                    self._commit_unanswered = True
                    raise self._with_reason(errors.exception(errors.TIMED_OUT, "commit offsets",
                                                             "no answer within %d ms" % timeout_ms))
                self._commit_unanswered = False  # answered: so was the one before, on the same connection
                err = lib.rd_kafka_event_error(event)
                if err:
                    raise errors.exception(err, "commit offsets", string(lib.rd_kafka_event_error_string(event)))
                results = partitions.from_c(lib.rd_kafka_event_topic_partition_list(event))
            finally:
                # Never left undestroyed: its partitions hold librdkafka's, and rd_kafka_destroy
                # would wait for them for ever.
                if box[0] != ffi.NULL:
                    lib.rd_kafka_event_destroy(box[0])
                lib.rd_kafka_queue_destroy(queue)
        for tp in results:
            errors.check(tp.error, "commit offset for %s [%d]" % (tp.topic, tp.partition))

    def offsets_store(self, tps):
        """``rd_kafka_offsets_store``: the offsets (the next to read) that auto-commit commits,
        for a consumer with ``enable.auto.offset.store=false``."""
        c_list = partitions.to_c(tps)
        with self.use() as rk:
            errors.check(lib.rd_kafka_offsets_store(rk, c_list), "store offsets")

    def committed(self, tps, timeout_ms=10000):
        """``rd_kafka_committed``: ``TopicPartition`` list with the committed offsets (-1001 if none).
        A coordinator that moved or is not ready (``_COORDINATOR_MOVING``, which librdkafka
        answers at once) is asked again within ``timeout_ms``, then its error raised."""
        deadline = _deadline(timeout_ms)
        moving = None
        while True:
            try:
                return self._query(lib.rd_kafka_committed, tps, _ms_left(deadline), "fetch committed offsets")
            except KafkaException as exc:
                if exc.code == errors.TIMED_OUT and moving is not None:  # the retry ran out of time
                    raise moving from exc
                if exc.code not in _COORDINATOR_MOVING or _remaining(deadline) <= 0.1:
                    raise
                moving = exc
            time.sleep(0.1)

    def position(self, tps):
        """``rd_kafka_position``: the next offset the consumer will return per partition."""
        c_list = partitions.to_c(tps)
        with self.use() as rk:
            errors.check(lib.rd_kafka_position(rk, c_list), "position")
        return partitions.from_c(c_list)

    def seek(self, tps, timeout_ms=10000):
        """``rd_kafka_seek_partitions`` to ``(topic, partition, offset)``; ``timeout_ms`` 0
        starts the seeks without waiting for them (their ``_IN_PROGRESS`` is no error)."""
        c_list = partitions.to_c(tps)
        with self.use() as rk:
            errors.raise_for_error(lib.rd_kafka_seek_partitions(rk, c_list, timeout_ms), "seek")
        for tp in partitions.from_c(c_list):
            if timeout_ms == 0 and tp.error == errors.IN_PROGRESS:
                continue
            errors.check(tp.error, "seek %s [%d] to %d" % (tp.topic, tp.partition, tp.offset))

    def pause(self, tps):
        """``rd_kafka_pause_partitions``."""
        with self.use() as rk:
            errors.check(lib.rd_kafka_pause_partitions(rk, partitions.to_c(tps)), "pause")

    def resume(self, tps):
        """``rd_kafka_resume_partitions``."""
        with self.use() as rk:
            errors.check(lib.rd_kafka_resume_partitions(rk, partitions.to_c(tps)), "resume")

    def polled(self):
        """Tell librdkafka the application polled, taking nothing (``Queue.polled``): for a
        consumer that hands out records it took from the queue before."""
        with self.use():
            if self._queue is not None:
                self._queue.polled()

    def consume_batch(self, max_messages, timeout_ms, add=None, keep=None):
        """``rd_kafka_consume_batch_queue`` on the consumer queue, in slices, until a batch
        comes (or ``timeout_ms`` passes, or ``close()``/``wake()`` ends the wait).

        ``add(pointers)`` takes the batch, a memoryview of its ``rd_kafka_message_t *`` as
        unsigned ints, and returns ``(made, error_positions)``: what it made of the messages,
        and the positions of the error events among them (by default
        :func:`pyrdk.rd.message.messages_of`, which makes a list of ``Message``). Returns
        ``(made, errors)``: ``made``, and the exceptions of the error
        events (end-of-partition events are dropped) followed by one a callback raised
        meanwhile. When no batch comes, ``add`` gets an empty one. The messages are destroyed
        once ``add`` returns.

        A KeyboardInterrupt as librdkafka returns a batch (where a Ctrl-C during the wait
        lands) is raised once ``keep`` (default: ``add``, whose result is then lost) has
        taken the batch and its messages are destroyed: the next call goes on after them, and
        ``close()`` is not held up by messages never destroyed. ``keep`` also gets the batch
        when ``add`` raises, before that is raised (it must tell whether ``add`` took the
        batch before it was cut short).
        """
        add = add or message.messages_of
        array = ffi.new("rd_kafka_message_t *[]", max_messages)  # NULLs
        me = threading.get_ident()
        self._taking[me] = self._taking.get(me, 0) + 1
        try:
            return self._consume_batch(array, max_messages, _deadline(timeout_ms), add, keep)
        finally:
            left = self._taking[me] - 1
            if left:
                self._taking[me] = left
            else:
                del self._taking[me]
            pending = self._close_pending
            if pending is not None and pending[0] == me and not left:  # a close() begun in this call
                self._closer = me  # before the pending close goes: no other close() takes it meanwhile
                self._close_pending = None
                try:
                    self._finish_close(pending[1])
                finally:
                    self._closer = None

    def _consume_batch(self, array, max_messages, deadline, add, keep):
        first = True
        while True:
            # After the first slice, a close() from another thread ends the wait: it may
            # come between two slices as well as during one.
            with self.use(closed_ok=not first) as rk:
                if rk is None:
                    return add(_NO_POINTERS)[0], []
                try:
                    n = self._queue.consume_batch(array, max_messages, _slice(deadline))
                except BaseException:
                    # Interrupted as librdkafka returned: its batch is in the array all the
                    # same, up to the first NULL.
                    n = next((i for i in range(max_messages) if array[i] == ffi.NULL), max_messages)
                    if n:
                        try:
                            (keep or add)(_pointers(array, n))
                        finally:
                            lib.pyrdk_batch_destroy(array, n)
                    raise
                if n != 0:
                    made, errs = self._convert(array, n, add, keep)
                    return made, errs + [exc for _, exc in self._cbs.calls.take()]
            first = False
            if _remaining(deadline) <= 0 or self._closing or self._woken:
                self._woken = False
                return add(_NO_POINTERS)[0], []

    def _convert(self, array, n, add, keep=None):
        if n < 0:
            return add(_NO_POINTERS)[0], [KafkaException("consume_batch_queue failed")]
        try:
            pointers = _pointers(array, n)
            try:
                made, positions = add(pointers)
            except BaseException:
                if keep is not None:  # add cut short (a KeyboardInterrupt): keep takes the batch
                    keep(pointers)
                raise
            errs = [message.error_of(array[i]) for i in positions if array[i].err != errors.PARTITION_EOF]
            return made, errs
        finally:
            lib.pyrdk_batch_destroy(array, n)

    def wake(self):
        """``rd_kafka_queue_yield``: return a blocked ``consume_batch`` early (or the next
        one, when none is blocked)."""
        with self._lock:  # close() destroys the queue only after it has set _closing
            self._woken = True
            if self._queue is not None and not self.closed:
                self._queue.yield_()

    def memberid(self):
        """``rd_kafka_memberid``: this consumer's group member id (None outside a group)."""
        with self.use() as rk:
            ptr = lib.rd_kafka_memberid(rk)
            if ptr == ffi.NULL:
                return None
            try:
                return string(ptr)
            finally:
                lib.rd_kafka_mem_free(rk, ptr)


def _pointers(array, n):
    """The first ``n`` pointers of ``array`` as a memoryview of unsigned ints."""
    return memoryview(ffi.buffer(array, n * ffi.sizeof("void *"))).cast(_POINTER_FORMAT)


def _parse_stats(text, name):
    """librdkafka's statistics JSON as a dict. librdkafka writes its handle ``name``
    (``client.id#kind-N``) and ``client.id`` into it unescaped: a ``"`` or ``\\`` in
    ``client.id`` makes it invalid JSON, so those two values are written again, escaped,
    when it does not parse."""
    try:
        return json.loads(text)
    except ValueError:
        client_id = name.rpartition("#")[0]
        raw = '"name": "%s", "client_id": "%s", ' % (name, client_id)
        if raw not in text:
            raise
        escaped = '"name": %s, "client_id": %s, ' % (json.dumps(name), json.dumps(client_id))
        return json.loads(text.replace(raw, escaped, 1))


def stats_enabled(config):
    """Whether ``statistics.interval.ms`` in ``config`` asks for statistics."""
    value = config.get("statistics.interval.ms", 0)
    try:
        return int(value) > 0
    except (TypeError, ValueError):
        return False  # rd_kafka_conf_set refuses it with a ConfigurationError


def _forked():
    """In a child after fork(): the per-message calls refuse the parent's handles."""
    for handle in list(_live):
        lib.pyrdk_guard_close(handle._guard)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


@atexit.register
def _close_live_handles():
    """At exit, close what the program left open, newest first, and finish a close an
    interrupt cut short, so that no librdkafka thread outlives the interpreter's own
    teardown. A Ctrl-C met meanwhile is raised once every handle is closed."""
    stop = None
    for handle in sorted(_live, key=lambda h: -h._created):
        if handle._ptr is not None and handle.owned:
            try:
                if not handle.closing:
                    handle.flush_at_exit(EXIT_FLUSH_MS)
                    handle.closed_at_exit = True
                handle.close(consumer_close=False)
            except Exception:  # exiting anyway; never mask the program's own outcome
                pass
            except BaseException as exc:  # the others are closed first
                stop = stop or exc
    if stop is not None:
        raise stop


def librdkafka_runtime_version():
    """``rd_kafka_version()`` of the running library, as an int (``0x020a01ff``)."""
    return lib.rd_kafka_version()


def librdkafka_version(implementation):
    """The running and the built-against librdkafka, where the running one came from, and
    which core (``implementation``) runs on it."""
    from pyrdk._ffi import BUILD_VERSION, LIBRARY_PATH, version_str
    return LibrdkafkaVersion(string(lib.rd_kafka_version_str()), version_str(BUILD_VERSION), LIBRARY_PATH,
                             implementation)


def _deadline(timeout_ms):
    return None if timeout_ms is None or timeout_ms < 0 else time.monotonic() + timeout_ms / 1000.0


def _remaining(deadline):
    return float("inf") if deadline is None else deadline - time.monotonic()


# A ListOffsets answer of a leader librdkafka cannot reach: unknown (_UNKNOWN_PARTITION), or
# lost with the request under way (_DESTROY_BROKER, or _TRANSPORT when its connection failed).
_LEADER_UNANSWERED = (errors.UNKNOWN_PARTITION, errors.DESTROY_BROKER, errors.TRANSPORT)
# A leader's ListOffsets answer that asking again (with fresh metadata) cures: LEADER_NOT_AVAILABLE,
# NOT_LEADER_FOR_PARTITION, REQUEST_TIMED_OUT, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH.
_LEADER_MOVING = (errors.LEADER_NOT_AVAILABLE, 6, 7, 74, 75)


# An OffsetFetch answer that asking again cures: COORDINATOR_LOAD_IN_PROGRESS,
# COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR (librdkafka looks the coordinator up again).
_COORDINATOR_MOVING = (14, 15, 16)


def _no_leader(tps, timeout_ms, what):
    """``LeaderNotAvailable`` for ``tps`` (``(topic, partition)``) after ``timeout_ms``."""
    return for_code(errors.LEADER_NOT_AVAILABLE)(
        "%s: no leader of %s answered within %d ms; calls work again once the leaders are back"
        % (what, ", ".join(sorted({"%s [%d]" % tp for tp in tps})), timeout_ms))


def _ms_left(deadline):
    """The milliseconds left before ``deadline`` for one librdkafka call: at least 1; -1 (no
    limit) for no deadline."""
    return -1 if deadline is None else max(1, int(_remaining(deadline) * 1000))


def _slice(deadline):
    return int(max(0, min(SLICE_MS, _remaining(deadline) * 1000)))
