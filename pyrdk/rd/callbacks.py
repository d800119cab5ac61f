"""Trampolines from librdkafka's callbacks into Python.

1. Each ``Handle`` registers a ``Callbacks`` object under an integer id, kept in a C
   ``pyrdk_opaque_t`` passed to ``rd_kafka_conf_set_opaque``: no Python object pointer
   ever reaches C, so a late callback for a closed handle finds nothing and returns.
2. Delivery reports never enter Python from librdkafka: the C ``pyrdk_dr_msg_cb``
   appends them to a buffer in the opaque, without the GIL, and ``dispatch_reports``
   hands them to ``on_delivery`` in the thread that asks.
3. librdkafka calls the trampolines below from ``rd_kafka_poll``, ``rd_kafka_flush`` or
   ``rd_kafka_consumer_poll`` in the polling thread; log lines are routed to the main
   queue (``log.queue`` + ``rd_kafka_set_log_queue``) so they arrive there too.
4. A trampoline converts the C arguments to Python values and calls the handler.
   An exception is kept in the ``Callbacks``' :class:`pyrdk.exceptions.CallState` and
   raised by ``Handle`` after the C call returns, in the thread that called poll; one that
   escapes a trampoline (Ctrl-C at its first line) is kept there too, by cffi's
   ``onerror`` (``_keep_raised``).
5. Two run on librdkafka's own threads, where cffi takes the GIL for them: the OAUTHBEARER
   token refresh (on the background thread, ``rd_kafka_sasl_background_callbacks_enable``,
   so a token is fetched whether or not anyone polls; it runs ``oauth_cb`` in a thread of
   its own and waits for it only until the handle closes) and the TLS certificate check (on a
   broker thread, during the handshake; it only records why OpenSSL refused a certificate).
   A TLS or authentication failure is stored like a fatal error and raised by the next
   call, rather than retried for ever.
"""
from __future__ import annotations

import itertools
import logging
import re
import threading
import time

from pyrdk._ffi import ffi, lib, string
from pyrdk.exceptions import (NO_SASL_HINT, NOT_KAFKA_HTTP_HINT, PLAINTEXT_TO_TLS_HINT, AuthenticationError,
                              CallState, KafkaException, SslError)
from pyrdk.rd import errors, partitions

log = logging.getLogger("pyrdk.librdkafka")

_registry: dict[int, Callbacks] = {}
_ids = itertools.count(1)
_lock = threading.Lock()

REPORT_BATCH = 4096  # delivery reports moved out of C per drain

# syslog levels (librdkafka's) → logging levels
_LEVELS = {0: logging.CRITICAL, 1: logging.CRITICAL, 2: logging.CRITICAL, 3: logging.ERROR,
           4: logging.WARNING, 5: logging.INFO, 6: logging.INFO, 7: logging.DEBUG}


class Callbacks:
    """The Python side of one handle's callbacks; each handler is optional.

    - ``on_delivery(msg_id, exc, partition, offset, timestamp)``: one report at a time
    - ``on_deliveries(ids, errs, partitions, offsets, timestamps)``: a batch of reports at a
      time, five memoryviews of one length (``errs``: error codes, 0 for success); replaces
      ``on_delivery``
    - ``on_batch_failure(exc, partition, value, key)``: a message produced without an id
      (``msg_id`` 0: ``produce_batch()``'s) failed
    - ``on_error(exc)``            (default: log it; fatal errors are kept and raised)
    - ``on_stats(json_text)``
    - ``on_rebalance(kind, topic_partitions)``  kind is ``"assign"`` or ``"revoke"``; runs
      before librdkafka's assignment changes, and may return start offsets for an assignment
    - ``on_commit(exc, topic_partitions)``
    - ``oauth_cb(sasl_oauthbearer_config)``: returns ``(token, expiry)``, expiry in seconds
      since the epoch, or ``(token, expiry, principal, extensions)`` with extensions a dict
      (confluent-kafka's ``oauth_cb``); asked for by librdkafka's background thread, in a
      thread of its own that ``close()`` does not wait for

    ``calls`` keeps what a handler raised until the handle raises it.
    """

    def __init__(self, on_delivery=None, on_error=None, on_stats=None, on_rebalance=None,
                 on_commit=None, on_deliveries=None, on_batch_failure=None, oauth_cb=None):
        self.on_delivery = on_delivery
        self.on_deliveries = on_deliveries
        self.on_batch_failure = on_batch_failure
        self.on_error = on_error
        self.on_stats = on_stats
        self.on_rebalance = on_rebalance
        self.on_commit = on_commit
        self.oauth_cb = oauth_cb
        self.tls_refusal = None  # (reason, detail) of the last certificate OpenSSL refused
        self.last_error = None
        self.last_connection_error = None  # the last _TRANSPORT error: names broker and cause
        self.all_brokers_down = False  # librdkafka reported _ALL_BROKERS_DOWN (every broker failed once)
        self.last_failure = None  # the last connection failure librdkafka only logged (FAIL)
        self.last_fail_line = None  # that FAIL line's text, as the error event repeating it says it
        self.not_kafka = set()  # "host:port" of bootstrap addresses where an HTTP server answered
        self.tls = False
        self.tls_verify = False  # broker certificates are checked (enable.ssl.certificate.verification)
        self.tls_answered = False  # a broker sent its certificate (so TLS got an answer)
        self.sasl = False
        self.closing = False  # the handle is being destroyed: a token refresh stops waiting for oauth_cb
        self.oauth_since = None  # time.monotonic() when oauth_cb was called, while it has not returned
        self.oauth_expiry = None  # when the last token oauth_cb returned expires (seconds since the epoch)
        self.calls = CallState()
        with _lock:
            self.id = next(_ids)
            _registry[self.id] = self
        self.opaque = lib.pyrdk_opaque_new(self.id)
        self._columns = None
        self._failed = ffi.new("pyrdk_failed_t *")
        self._dispatch_lock = threading.Lock()

    def dispatch_reports(self, limit=None):
        """Hand every buffered delivery report to ``on_deliveries`` (a batch at a time) or
        ``on_delivery`` (one at a time), and every failure of a message produced without an
        id to ``on_batch_failure``; the number handled. With ``limit``, stop after that many
        batches of ``REPORT_BATCH`` reports (an event loop's callback stays short)."""
        handled = 0
        with self._dispatch_lock:  # one drain buffer per handle
            batches = 0
            while limit is None or batches < limit:
                if self.opaque is None:  # unregistered: the handle is gone
                    return handled
                n = self._drain()
                if n == 0:
                    break
                handled += n
                batches += 1
            while self.opaque is not None:
                try:
                    if not lib.pyrdk_failed_pop(self.opaque, self._failed):
                        break
                except BaseException:
                    # A KeyboardInterrupt as the pop returned: the failure it moved is in
                    # self._failed all the same (err is never 0 there; 0 once it is told).
                    if self._failed.err:
                        self._pop_failed()
                    raise
                handled += 1
                self._pop_failed()
            lost = lib.pyrdk_failed_lost(self.opaque) if self.opaque is not None else 0
            for _ in range(lost):  # out of memory in C: the failure is told, without details
                handled += 1
                self._batch_failure(KafkaException("a message could not be delivered; its details "
                                                   "were lost for want of memory"), -1, None, None)
        return handled

    def _pop_failed(self):
        """Tell the failure ``pyrdk_failed_pop`` moved into ``self._failed``, and free it."""
        f = self._failed
        try:
            value = ffi.unpack(f.value, f.value_len) if f.value != ffi.NULL else None
            key = ffi.unpack(f.key, f.key_len) if f.key != ffi.NULL else None
        finally:
            lib.pyrdk_failed_free(f)
            err, f.err = f.err, 0
        self._batch_failure(errors.exception(err), f.partition, value, key)

    def _batch_failure(self, exc, partition, value, key):
        if self.on_batch_failure is not None:
            try:
                self.on_batch_failure(exc, partition, value, key)
            except BaseException as error:
                self.store(error)

    def _drain(self):
        """Move up to REPORT_BATCH reports out of C (``pyrdk_reports_drain_columns``) and
        hand them over; the number moved."""
        if self._columns is None:
            self._columns = tuple(ffi.new(ctype, REPORT_BATCH) for ctype, _ in _COLUMNS)  # zeroed
        ids, errs, parts, offsets, timestamps = self._columns
        try:
            n = lib.pyrdk_reports_drain_columns(self.opaque, ids, errs, parts, offsets, timestamps, REPORT_BATCH)
        except BaseException:
            # A KeyboardInterrupt as the drain returned: the reports it moved out of C are in
            # the columns all the same, up to the first id 0 (an id is never 0, and the ids
            # a drain wrote are zeroed once handed over). Hand them over, then raise it.
            self._hand_over(next((i for i in range(REPORT_BATCH) if not ids[i]), REPORT_BATCH))
            raise
        if n == 0:
            return 0
        self._hand_over(n)
        return n

    def _hand_over(self, n):
        """Hand the first ``n`` reports of the columns to ``on_deliveries`` or ``on_delivery``,
        then zero their ids."""
        ids, errs, parts, offsets, timestamps = self._columns
        try:
            if self.on_deliveries is not None:
                self.on_deliveries(*(memoryview(ffi.buffer(column)).cast(fmt)[:n]
                                     for column, (_, fmt) in zip(self._columns, _COLUMNS)))
            elif self.on_delivery is not None:
                for i in range(n):
                    self._one(ids[i], errs[i], parts[i], offsets[i], timestamps[i])
        except BaseException as exc:
            self.store(exc)
        finally:
            ffi.memmove(ids, _ZERO_IDS, n * ffi.sizeof("uintptr_t"))

    def _one(self, msg_id, err, partition, offset, timestamp):
        try:
            self.on_delivery(msg_id, errors.exception(err) if err else None, partition, offset, timestamp)
        except BaseException as exc:
            self.store(exc)

    def wait_reports(self, timeout_ms):
        """Block (without the GIL) until a delivery report is buffered; the number buffered."""
        return lib.pyrdk_reports_wait(self.opaque, timeout_ms)

    def store(self, exc):
        """Keep an exception a handler raised until ``reraise``."""
        self.calls.crash(exc)

    def reraise(self):
        """Raise the oldest exception a handler raised, if any."""
        self.calls.check()

    def unregister(self):
        """Forget the handler and free the opaque (after ``rd_kafka_destroy``)."""
        with _lock:
            _registry.pop(self.id, None)
        with self._dispatch_lock:  # no drain may run on the opaque being freed
            opaque, self.opaque = self.opaque, None
        if opaque is not None:
            lib.pyrdk_opaque_destroy(opaque)


# The report columns: their C type and memoryview format (ids, errs, partitions, offsets,
# timestamps).
_ZERO_IDS = bytes(REPORT_BATCH * ffi.sizeof("uintptr_t"))
_COLUMNS = (("uintptr_t[]", "L" if ffi.sizeof("uintptr_t") == ffi.sizeof("unsigned long") else "Q"),
            ("int[]", "i"), ("int32_t[]", "i"), ("int64_t[]", "q"), ("int64_t[]", "q"))


def _lookup(opaque):
    return _registry.get(lib.pyrdk_opaque_id(opaque))


_CLOSED_WHEN_UP = re.compile(r"\(after \d{1,3}ms in state UP\)")


def _note_failure(rk, syslog_level, text):
    """Keep a connection failure librdkafka logged (facility ``FAIL``) for the message of
    the timeout that follows, with its hint (:func:`_hinted`)."""
    cbs = _lookup(lib.rd_kafka_opaque(rk))
    if cbs is None or syslog_level > 6:
        return
    text = _THREAD.sub("", text, count=1)
    cbs.last_fail_line = text
    cbs.last_failure = _hinted(cbs, text)


_RESPONSE_SIZE = re.compile(r"Invalid response size (-?\d+)")
_HTTP_AS_SIZE = int.from_bytes(b"HTTP", "big")


def _hinted(cbs, text):
    """A connection failure's ``text`` (a line librdkafka logged, or the reason of its
    transport error), with a hint when an HTTP server answered, a plaintext connection failed
    at its first request (``APIVERSION_QUERY``) as a TLS listener fails it, or a connection
    without SASL was closed as soon as it was up."""
    match = _RESPONSE_SIZE.search(text)
    size = None if match is None else int(match.group(1))
    if size == _HTTP_AS_SIZE:
        broker = broker_of(text)
        if broker is not None and broker.endswith("/bootstrap"):
            cbs.not_kafka.add(broker.rpartition("/")[0])
        return text + NOT_KAFKA_HTTP_HINT
    if not cbs.tls and "in state APIVERSION_QUERY" in text and "security.protocol" not in text \
            and _as_tls_fails_it(text, size):
        return text + PLAINTEXT_TO_TLS_HINT
    if not cbs.sasl and _CLOSED_WHEN_UP.search(text):
        return text + NO_SASL_HINT
    return text


def _as_tls_fails_it(text, size):
    """Whether a plaintext connection's failure at its first request may be a TLS
    listener's answer: a reset or a close, or bytes read as a response ``size`` (None: the
    failure reports none) that begin as a TLS record does (0x15 an alert, 0x16 a handshake);
    not a timeout (a broker that hangs or never answers) nor other bytes."""
    if "timed out" in text.lower():
        return False
    return size is None or (size >> 24) & 0xFF in (0x15, 0x16)


# Durations in librdkafka's lines ("after 0ms in state CONNECT") differ between repeats.
_DURATION = re.compile(r"\b\d+(?:\.\d+)?(?:ms|us|s)\b")
_THREAD = re.compile(r"^\[thrd:([^\]]*)\]: ")


def broker_of(text):
    """The broker a librdkafka line is about (``host:port/id``, as librdkafka names brokers),
    from its ``[thrd:...]`` prefix or its first word, or None."""
    m = _THREAD.match(text)
    if m and "/" in m.group(1) and ":" in m.group(1):
        return m.group(1)
    head = text[m.end() if m else 0:].split(": ", 1)[0]
    return head if " " not in head and "/" in head and ":" in head else None


class RepeatedLines:
    """librdkafka's log and error lines to the ``pyrdk.librdkafka`` logger, repeats collapsed:
    a line is logged the first time, then lines like it (same handle, level, facility and
    text but for durations) are counted, and one is logged with the count of those not logged
    once ``window_s`` has passed (``(seen N times in the last 6 s)``): the next such line, or
    the last one when any later line of librdkafka's comes or the handle is closed. Each
    record carries ``rdkafka_client`` (the handle's name), ``rdkafka_facility`` (None for an
    error event), ``rdkafka_broker`` (or None), ``rdkafka_level`` (syslog) and
    ``rdkafka_repeats`` (how many lines it stands for)."""

    def __init__(self, window_s=5.0, clock=time.monotonic):
        self.window_s = window_s
        self._clock = clock
        self._seen = {}  # key -> [time logged, repeats since, last record's arguments], oldest first
        self._lock = threading.Lock()

    def log(self, levelno, client, facility, text, syslog_level):
        """Log one line (or count it as a repeat)."""
        if not log.isEnabledFor(levelno):
            return
        key = (client, levelno, facility, _DURATION.sub("#", text))
        now = self._clock()
        with self._lock:
            due = self._expired(now, self._older(now, key))
            entry = self._seen.get(key)
            if entry is not None and now - entry[0] < self.window_s:
                entry[1] += 1
                entry[2] = (levelno, client, facility, text, syslog_level)
            else:  # the first such line, or the first after the window: with the ones not logged
                due.append((levelno, client, facility, text, syslog_level, entry[1] + 1 if entry else 0,
                            now - entry[0] if entry else 0))
                self._seen.pop(key, None)  # to the end: the entries stay in the order they were logged
                self._seen[key] = [now, 0, None]
        for args in due:
            self._emit(*args)

    def flush(self, client=None):
        """Log the pending counts (of one handle's lines, or of all) now."""
        with self._lock:
            due = self._expired(self._clock(), [k for k in self._seen if client is None or k[0] == client])
        for args in due:
            self._emit(*args)

    def _older(self, now, keep):
        """The keys but ``keep`` logged ``window_s`` or more ago: the first ones, as the entries
        are in the order they were logged (a scan of every entry at each line would make a
        flood of distinct lines, librdkafka's debug lines, quadratic)."""
        old = []
        for key, (when, _, _) in self._seen.items():
            if now - when < self.window_s:
                break
            if key != keep:
                old.append(key)
        return old

    def _expired(self, now, keys):
        """Pop the entries of ``keys``; the count lines to log for those with repeats."""
        out = []
        for key in keys:
            when, count, last = self._seen.pop(key)
            if count:
                out.append(last + (count, now - when))
        return out

    def _emit(self, levelno, client, facility, text, syslog_level, repeats, elapsed_s):
        message = "%s [%s] %s" % (client, facility, text) if facility else "%s: %s" % (client, text)
        if repeats:
            message += " (seen %d times in the last %.0f s)" % (repeats, max(elapsed_s, 1))
        log.log(levelno, "%s", message, extra={
            "rdkafka_client": client, "rdkafka_facility": facility, "rdkafka_broker": broker_of(text),
            "rdkafka_level": syslog_level, "rdkafka_repeats": max(1, repeats)})


repeats = RepeatedLines()

_running = threading.local()


def in_callback():
    """Whether this thread is in a trampoline below that calls a handler: from a poll, it
    is then inside that call on its handle (``Handle.close`` refuses to run there)."""
    return getattr(_running, "depth", 0) > 0


def _keep_raised(exc_type, exc, tb):
    """cffi's ``onerror`` for every trampoline: what escaped one (a signal's handler run at
    its very first line, before its own ``try``: where Ctrl-C raises KeyboardInterrupt when
    the signal came while the main thread was in librdkafka) is kept in the handle's
    CallState, as a handler's exception is, instead of being printed and lost. The handle
    is found from ``rk``, each callback's first argument, in the trampoline's frame."""
    local = tb.tb_frame.f_locals if tb is not None else {}
    rk = local["rk"] if "rk" in local else (local.get("args") or (None,))[0]
    cbs = _lookup(lib.rd_kafka_opaque(rk)) if isinstance(rk, ffi.CData) else None
    if cbs is None:
        raise exc  # no handle to keep it: cffi prints it
    cbs.store(exc)


def _calls_handlers(trampoline):
    """The trampoline, counting this thread in it while it runs (``in_callback``)."""
    def run(*args):
        _running.depth = getattr(_running, "depth", 0) + 1
        try:
            return trampoline(*args)
        finally:
            _running.depth -= 1
    run.__name__, run.__doc__ = trampoline.__name__, trampoline.__doc__
    return run


@ffi.def_extern(onerror=_keep_raised)
@_calls_handlers
def _pyrdk_error_cb(rk, err, reason, opaque):
    cbs = _lookup(opaque)
    if cbs is None:
        return
    try:
        fatal = err == errors.FATAL
        if fatal:
            buf = errors.errstr()
            err = lib.rd_kafka_fatal_error(rk, buf, errors.ERRSTR_SIZE)
            reason = buf
        text = string(reason)
        # a transport error is the failure of a connection, as the FAIL line librdkafka logs
        # (which one comes last depends on its threads): with the same hint
        exc = _tls_error(cbs, err, text) or errors.exception(
            err, reason=_hinted(cbs, text) if err == errors.TRANSPORT else text, fatal=fatal)
        cbs.last_error = exc
        if err == errors.TRANSPORT:
            cbs.last_connection_error = exc
        elif err == errors.ALL_BROKERS_DOWN:
            cbs.all_brokers_down = True
        if cbs.on_error is not None:
            cbs.on_error(exc)
        elif fatal or security_failure(exc):
            cbs.store(exc)
        elif text != cbs.last_fail_line:  # else the FAIL line just logged said it
            repeats.log(logging.WARNING, string(lib.rd_kafka_name(rk)), None, str(exc), 4)
    except BaseException as exc:
        cbs.store(exc)


@ffi.def_extern(onerror=_keep_raised)
def _pyrdk_log_cb(rk, level, fac, buf):
    """Log a line of librdkafka's, served by a poll (``log.queue``). What raises here (a
    logging handler, or a signal's handler: Ctrl-C in the main thread) is kept for the
    caller by ``_keep_raised``, never dropped."""
    client, facility, text = string(lib.rd_kafka_name(rk)), string(fac), string(buf)
    if facility == "FAIL":
        _note_failure(rk, level, text)
    repeats.log(_LEVELS.get(level, logging.DEBUG), client, facility, text, level)


@ffi.def_extern(onerror=_keep_raised)
@_calls_handlers
def _pyrdk_stats_cb(rk, json, json_len, opaque):
    cbs = _lookup(opaque)
    if cbs is not None and cbs.on_stats is not None:
        try:
            cbs.on_stats(ffi.unpack(json, json_len).decode())
        except BaseException as exc:
            cbs.store(exc)
    return 0  # librdkafka frees the JSON


DEFERRED = object()
"""What an ``on_rebalance`` handler returns to assign or revoke later itself (eager protocol)."""


@ffi.def_extern(onerror=_keep_raised)
@_calls_handlers
def _pyrdk_rebalance_cb(rk, err, c_partitions, opaque, done):
    """Tell the handler, then assign or revoke (``rd_kafka_assign`` or the incremental pair),
    and set ``done[0]``: ``pyrdk_rebalance_cb``, the C function librdkafka calls, does it
    when an interrupt cut this off before.

    The handler runs first, while revoked partitions are still assigned (so it can commit
    their offsets); for an assignment it may return the same partitions as
    ``(topic, partition, offset)`` entries to assign at those start offsets. The assignment
    or revocation happens even when the handler raises. Under the eager protocol the handler
    may return :data:`DEFERRED`: it will call ``rd_kafka_assign`` itself later (librdkafka's
    group waits for that call), as an asyncio consumer does after awaiting its listener."""
    cbs = _lookup(opaque)
    cooperative = string(lib.rd_kafka_rebalance_protocol(rk)) == "COOPERATIVE"
    assign = err == errors.ASSIGN_PARTITIONS
    chosen = None
    if cbs is not None and cbs.on_rebalance is not None:
        try:
            chosen = cbs.on_rebalance("assign" if assign else "revoke", partitions.from_c(c_partitions))
        except BaseException as exc:
            cbs.store(exc)
            chosen = None
    if chosen is DEFERRED and not cooperative:
        done[0] = 1
        return
    if chosen is DEFERRED:
        chosen = None
    try:
        c_list = c_partitions if chosen is None or not assign else partitions.to_c(chosen)
        if cooperative:
            change = lib.rd_kafka_incremental_assign if assign else lib.rd_kafka_incremental_unassign
            result = change(rk, c_list)
        else:
            result = lib.rd_kafka_assign(rk, c_list if assign else ffi.NULL)
        done[0] = 1  # an interrupt before this: pyrdk_rebalance_cb changes it (twice is harmless)
        if cooperative:
            errors.raise_for_error(result)
        else:
            errors.check(result)
    except BaseException as exc:
        if cbs is not None:
            cbs.store(exc)


@ffi.def_extern(onerror=_keep_raised)
@_calls_handlers
def _pyrdk_offset_commit_cb(rk, err, offsets, opaque):
    cbs = _lookup(opaque)
    if cbs is None or cbs.on_commit is None:
        return
    try:
        cbs.on_commit(errors.exception(err) if err else None,
                      partitions.from_c(offsets) if offsets != ffi.NULL else [])
    except BaseException as exc:
        cbs.store(exc)


_TLS_ALERT = re.compile(r"SSL routines::([^:]*alert[^:]*): SSL alert number (\d+)")


def _tls_error(cbs, err, reason):
    """The ``SslError`` for an error callback, with its ``reason``: why OpenSSL refused the
    broker's certificate (kept by ``_pyrdk_ssl_verify_cb``), or the TLS alert the broker
    ended the session with (a broker that requires a client certificate sends one; after a
    TLS 1.3 handshake librdkafka reports it as a transport failure). None for any other
    error."""
    if err == errors.SSL and cbs.tls_refusal is not None:
        short, detail = cbs.tls_refusal
    elif err in (errors.SSL, errors.TRANSPORT) and _TLS_ALERT.search(reason):
        alert = _TLS_ALERT.search(reason)
        short = alert.group(1)
        detail = ("the broker ended the TLS session with alert %s (%s): it refused this "
                  "client's certificate, or wants one" % (alert.group(2), short))
    else:
        return None
    exc = errors.exception(errors.SSL, reason="%s; %s" % (detail, reason))
    exc.reason = short
    return exc


def security_failure(exc):
    """True for a TLS or authentication failure: a configuration that will not mend itself,
    raised at once rather than retried for ever."""
    return isinstance(exc, (SslError, AuthenticationError))


def _c_text(what, text, source):
    """``text`` as the bytes of a C string, or ValueError: librdkafka would read a NUL as the
    end of it. ``source``: what returned it, as errors name it (:func:`oauth_name`)."""
    try:
        data = text.encode()
    except UnicodeEncodeError:
        data = None
    if data is None or b"\0" in data:
        shown = repr(text) if what == "principal" else "<%d characters, not shown>" % len(text)
        raise ValueError("the %s %s returns must be UTF-8 text without NUL characters, not %s"
                         % (what, source, shown))
    return data


def _described(value):
    """What an ``oauth_cb`` returned, as an error may tell it: its type and size, never its
    text (a token returned alone is the secret itself)."""
    if isinstance(value, str):
        return "a str of %d characters" % len(value)
    if isinstance(value, (bytes, tuple, list, dict)):
        return "a %s of %d %s" % (type(value).__name__, len(value), "bytes" if isinstance(value, bytes) else "items")
    return "a %s" % type(value).__name__


_MAX_EXPIRY = 2 ** 63 // 1000  # seconds whose ms fit librdkafka's int64_t


def _oauth_token(result, source):
    """``(token, lifetime_ms, principal, [key, value, ...])`` from what an ``oauth_cb``
    returned, as bytes for librdkafka; TypeError or ValueError saying what is wrong with it,
    naming ``source`` (:func:`oauth_name`)."""
    if not isinstance(result, (tuple, list)) or len(result) not in (2, 3, 4):
        raise TypeError("%s must return (token, expiry) or (token, expiry, principal, "
                        "extensions), not %s" % (source, _described(result)))
    token, expiry = result[0], result[1]
    principal = result[2] if len(result) > 2 else ""
    extensions = result[3] if len(result) > 3 else None
    if isinstance(token, bytes):
        token = token.decode()
    if not isinstance(token, str) or not token:
        raise TypeError("the token %s returns must be a non-empty str, not %s" % (source, _described(token)))
    if isinstance(expiry, bool) or not isinstance(expiry, (int, float)) or not 0 < expiry < _MAX_EXPIRY:
        raise TypeError("the expiry %s returns must be seconds since the epoch (a finite int or "
                        "float > 0), not %r" % (source, expiry))
    if not isinstance(principal, str):
        raise TypeError("the principal %s returns must be a str, not %r" % (source, principal))
    if extensions is not None and not isinstance(extensions, dict):
        raise TypeError("the extensions %s returns must be a dict, not %r" % (source, extensions))
    flat = []
    for key, value in (extensions or {}).items():
        flat += [_c_text("extensions", str(key), source), _c_text("extensions", str(value), source)]
    return _c_text("token", token, source), int(expiry * 1000), _c_text("principal", principal, source), flat


def oauth_name(cbs):
    """What the errors call the token source: ``oauth_cb``, or the ``name`` of the callable
    given as one (``pyrdk.aio``'s ``sasl_oauth_token_provider``)."""
    return getattr(cbs.oauth_cb, "name", "oauth_cb")


def _set_token(rk, returned, source):
    """Hand what ``oauth_cb`` (``source``, as errors name it) returned to
    ``rd_kafka_oauthbearer_set_token``: None, or the ``AuthenticationError`` saying what is
    wrong with it."""
    try:
        token, lifetime_ms, principal, extensions = _oauth_token(returned, source)
    except (TypeError, ValueError) as exc:
        return AuthenticationError(str(exc), code=errors.AUTHENTICATION)
    keep = [ffi.new("char[]", item) for item in extensions]
    buf = errors.errstr()
    err = lib.rd_kafka_oauthbearer_set_token(
        rk, token, lifetime_ms, principal, ffi.new("const char *[]", keep) if keep else ffi.NULL, len(keep),
        buf, errors.ERRSTR_SIZE)
    if not err:
        return None
    return AuthenticationError("librdkafka refused the token from %s: %s" % (source, string(buf)),
                               code=errors.AUTHENTICATION)


class _OauthCbAbandoned(Exception):
    """The handle closed while ``oauth_cb`` still ran: its answer is no longer wanted."""


OAUTH_SLICE_S = 0.1  # how often a token refresh waiting for oauth_cb looks whether the handle closes


def _ask_oauth_cb(cbs, config):
    """What ``oauth_cb(config)`` returns (or raises), called in a thread of its own and waited
    for in slices: ``rd_kafka_destroy`` joins the background thread this runs on, so an
    ``oauth_cb`` that blocks (an identity provider that never answers) would hold ``close()``
    for as long. Once the handle closes (``cbs.closing``), raise ``_OauthCbAbandoned`` and
    leave the call to end on its own."""
    outcome = []
    done = threading.Event()

    def run():
        try:
            outcome.append((cbs.oauth_cb(config), None))
        except BaseException as exc:
            outcome.append((None, exc))
        finally:
            done.set()
    threading.Thread(target=run, name="pyrdk-oauth_cb", daemon=True).start()
    while not done.wait(OAUTH_SLICE_S):
        if cbs.closing:
            raise _OauthCbAbandoned()
    returned, exc = outcome[0]
    if exc is not None:
        raise exc
    return returned


@ffi.def_extern(onerror=_keep_raised)
def _pyrdk_oauthbearer_cb(rk, config, opaque):
    """Ask ``oauth_cb`` for a token (``rd_kafka_oauthbearer_set_token``); when it raises or
    returns garbage, tell librdkafka (``rd_kafka_oauthbearer_set_token_failure``) and keep an
    ``AuthenticationError`` for the next call."""
    cbs = _lookup(opaque)
    if cbs is None or cbs.oauth_cb is None:
        lib.rd_kafka_oauthbearer_set_token_failure(rk, b"no oauth_cb")
        return
    try:
        try:
            cbs.oauth_since = time.monotonic()
            try:
                returned = _ask_oauth_cb(cbs, string(config) if config != ffi.NULL else None)
            finally:
                cbs.oauth_since = None
        except _OauthCbAbandoned:
            lib.rd_kafka_oauthbearer_set_token_failure(rk, b"the client closed while oauth_cb ran")
            return
        except BaseException as exc:
            error = AuthenticationError("%s raised %s: %s" % (oauth_name(cbs), type(exc).__name__, exc),
                                        code=errors.AUTHENTICATION)
            error.__cause__ = exc
        else:
            error = _set_token(rk, returned, oauth_name(cbs))
            if error is None:
                cbs.oauth_expiry = returned[1]  # librdkafka connects with it while the next one is asked for
                return
        cbs.store(error)
        lib.rd_kafka_oauthbearer_set_token_failure(rk, str(error).encode())
    except BaseException as exc:  # on librdkafka's thread: never let it escape
        cbs.store(exc)


# OpenSSL's X509_V_ERR_* codes that a misconfiguration gives, with what they mean here.
_X509_REASONS = {
    2: "unable to get issuer certificate (unknown CA)",
    9: "certificate is not yet valid",
    10: "certificate has expired",
    18: "self-signed certificate (unknown CA)",
    19: "self-signed certificate in certificate chain (unknown CA)",
    20: "unable to get local issuer certificate (unknown CA)",
    21: "unable to verify the first certificate (unknown CA)",
    23: "certificate revoked",
    26: "unsupported certificate purpose",
    62: "hostname mismatch",
    64: "IP address mismatch (hostname mismatch)",
}


@ffi.def_extern(onerror=_keep_raised)
def _pyrdk_ssl_verify_cb(rk, broker_name, broker_id, x509_error, depth, buf, size, errstr,
                         errstr_size, opaque):
    """Keep OpenSSL's verdict on a broker certificate (``x509_error``, 0: valid), and note
    why it refused one, for the ``SslError`` that follows."""
    code = x509_error[0]
    cbs = _lookup(opaque)
    if cbs is not None:
        cbs.tls_answered = True
    if code == 0:
        if depth == 0 and cbs is not None:  # the broker's own certificate passed: forget an older refusal
            cbs.tls_refusal = None
        return 1
    try:
        reason = _X509_REASONS.get(code, "X509 verification error %d" % code)
        detail = "the certificate of %s at depth %d was refused: %s (X509 error %d)" % (
            string(broker_name), depth, reason, code)
        if cbs is not None:
            cbs.tls_refusal = (reason, detail)
        text = detail.encode()[:errstr_size - 1]
        ffi.memmove(errstr, text + b"\0", len(text) + 1)
    except BaseException:  # on a broker thread: never raise
        pass
    return 0


def install(conf, cbs, producer, tls=False, sasl=False):
    """Point a ``Conf`` at these trampolines and at ``cbs`` (``rd_kafka_conf_set_*_cb``);
    with ``tls``, check broker certificates through ``_pyrdk_ssl_verify_cb`` too.
    ``sasl``: the connections authenticate (for the hints of ``_note_failure``)."""
    ptr = conf._ptr
    lib.rd_kafka_conf_set_opaque(ptr, cbs.opaque)
    cbs.tls = tls
    cbs.tls_verify = tls and conf.get("enable.ssl.certificate.verification") != "false"
    cbs.sasl = sasl
    lib.rd_kafka_conf_set_error_cb(ptr, lib._pyrdk_error_cb)
    lib.rd_kafka_conf_set_log_cb(ptr, lib._pyrdk_log_cb)
    if cbs.on_stats is not None:
        lib.rd_kafka_conf_set_stats_cb(ptr, lib._pyrdk_stats_cb)
    if producer:
        lib.rd_kafka_conf_set_dr_msg_cb(ptr, lib.pyrdk_dr_msg_cb)
    else:
        lib.rd_kafka_conf_set_rebalance_cb(ptr, lib.pyrdk_rebalance_cb)
        if cbs.on_commit is not None:
            lib.rd_kafka_conf_set_offset_commit_cb(ptr, lib._pyrdk_offset_commit_cb)
    if cbs.oauth_cb is not None:
        lib.rd_kafka_conf_set_oauthbearer_token_refresh_cb(ptr, lib._pyrdk_oauthbearer_cb)
        lib.rd_kafka_conf_enable_sasl_queue(ptr, 1)
    if tls:
        lib.rd_kafka_conf_set_ssl_cert_verify_cb(ptr, lib._pyrdk_ssl_verify_cb)


def started(rk, cbs):
    """After ``rd_kafka_new``: serve the OAUTHBEARER token refresh on librdkafka's background
    thread (``rd_kafka_sasl_background_callbacks_enable``)."""
    if cbs.oauth_cb is not None:
        errors.raise_for_error(lib.rd_kafka_sasl_background_callbacks_enable(rk),
                               "enable OAUTHBEARER token refresh")
