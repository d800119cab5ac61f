"""AIOKafkaConsumer: aiokafka's consumer on a librdkafka consumer.

librdkafka fetches on its own threads into the consumer queue, which signals a pipe the event
loop watches (:class:`pyrdk.aio.wakeup.Wakeup`); the loop's callback wakes ``getmany()``, which
takes a batch without blocking (``rd_kafka_consume_batch_queue`` with a zero timeout, through
:mod:`pyrdk.core`). Rebalances are served the same way: under the eager protocol the
consumer leaves the assignment to itself (:data:`pyrdk.rd.callbacks.DEFERRED`), awaits the
listener's ``on_partitions_revoked``, unassigns, awaits ``on_partitions_assigned``, then
assigns, from the offsets the listener seeked to. Offsets are stored (``rd_kafka_offsets_store``) only for records
handed to the program and for the program's seeks, so auto-commit never commits a record not
returned, unless a seek moved past it (as aiokafka, which commits the positions).

The few blocking librdkafka calls of the control path (commit, committed, offset lookups,
metadata, ``rd_kafka_consumer_close``) run on the loop's default executor.
"""
from __future__ import annotations

import asyncio
import collections
import contextvars
import copy
import functools
import itertools
import logging
import re
import ssl
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Optional, Union

from pyrdk.aio import conf
from pyrdk.aio.client import Client
from pyrdk.aio.abc import AbstractTokenProvider, ConsumerRebalanceListener
from pyrdk.aio.errors import (CommitFailedError, ConsumerStoppedError, IllegalOperation, IllegalStateError,
                              KafkaError)
from pyrdk.aio.structs import ConsumerRecord, OffsetAndTimestamp, TopicPartition, offsets_to_commit, topic_partition
from pyrdk.aio.wakeup import Wakeup
from pyrdk.common import check_bool, integer, weak_method
from pyrdk.core import consumer_core
from pyrdk.core import implementation as core_implementation
from pyrdk.exceptions import (ConfigurationError, GroupAuthorizationFailed, IllegalGeneration, OffsetOutOfRangeError,
                              RdKafkaException, RebalanceInProgress, TopicAuthorizationFailed, UnknownMemberId)
from pyrdk.rd.callbacks import DEFERRED, Callbacks, security_failure
from pyrdk.rd.handle import Handle, librdkafka_runtime_version
from pyrdk.rd import admin as rd_admin
from pyrdk.rd import errors as rd_errors
from pyrdk.rd.partitions import OFFSET_BEGINNING, OFFSET_END, OFFSET_INVALID

log = logging.getLogger(__name__)

# Records taken from librdkafka per rd_kafka_consume_batch_queue call, made into records in one
# loop step: about half a millisecond of work with the C core (several with the Python one).
BATCH = 2048 if core_implementation == "c" else 256
# A partition with more than HOLD_MAX records in the buffer (a program's getmany(*partitions)
# asks for others) is no longer fetched (rd_kafka_pause_partitions) until getmany() has
# taken it below HOLD_MAX / 2: what a program does not ask for cannot fill the memory.
HOLD_MAX = 4 * BATCH
POLLED_EVERY_S = 1.0  # getmany() from the buffer tells librdkafka of the poll at most this often
_numbers = itertools.count(1)
# While a rebalance listener's method runs, [consumer] in its task's context, which the tasks it
# starts meanwhile (asyncio.wait_for(), create_task()) copy; emptied once the method returns.
_in_listener_of: contextvars.ContextVar[list[Any]] = contextvars.ContextVar("_in_listener_of", default=[])
_monotonic = time.monotonic
ASSIGNORS = {"RoundRobinPartitionAssignor": "roundrobin", "RangePartitionAssignor": "range",
             "roundrobin": "roundrobin", "range": "range"}  # eager ones: the listener runs before the change
RESETS = {"earliest": "earliest", "latest": "latest", "none": "error"}
# ConsumerRecord._make, faster: a deserialized record is the core's with its key and value replaced.
_record = functools.partial(tuple.__new__, ConsumerRecord)


class _Undeserializable:
    """A record the key or value deserializer raised on, in the buffer in its place: the
    getmany() that reaches it raises ``error`` (the records before it are returned first),
    and the record counts as consumed."""
    __slots__ = ("record", "error")

    def __init__(self, record, error):
        self.record, self.error = record, error

    @property
    def offset(self):
        return self.record.offset


# How often librdkafka reports its statistics to a read_committed consumer, whose
# last_stable_offset() reads the partitions' ls_offset there (librdkafka has no other API for it).
LSO_STATISTICS_INTERVAL_MS = 1000
# Kafka's internal topics (is_internal in its metadata, which librdkafka does not pass on):
# left out of topics(), and of pattern subscriptions with exclude_internal_topics, as aiokafka does.
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


def _assignor(strategy):
    names = []
    for item in strategy if isinstance(strategy, (list, tuple)) else (strategy,):
        name = item if isinstance(item, str) else getattr(item, "name", None) or getattr(item, "__name__", "")
        if name not in ASSIGNORS:
            raise ConfigurationError("partition_assignment_strategy: %r is not one librdkafka has "
                                     "(RoundRobinPartitionAssignor, RangePartitionAssignor)" % (item,))
        names.append(ASSIGNORS[name])
    return ",".join(names)


def _posix_pattern(pattern: Union[str, re.Pattern[str]]) -> str:
    """``subscribe()``'s ``pattern`` as the text librdkafka matches topic names with (``regcomp``,
    POSIX extended syntax); a ValueError (``ConfigurationError``, as aiokafka's ``ValueError``)
    for one Python's ``re`` cannot compile, and for Python syntax POSIX rejects or reads
    otherwise, which would fail the subscription unclearly or match other topics silently:
    flags of a compiled pattern, ``(?...)`` groups, ``\\d`` and ``\\D``, and a backslash
    before a letter inside ``[...]`` (a literal backslash there)."""
    if not isinstance(pattern, str):
        if isinstance(pattern, re.Pattern) and isinstance(pattern.pattern, str) and pattern.flags & ~re.UNICODE:
            raise ConfigurationError("subscribe(): librdkafka matches the pattern's text only, without the flags "
                                     "of %r: write what they do into the pattern" % (pattern,))
        pattern = getattr(pattern, "pattern", pattern)
    if not isinstance(pattern, str) or not pattern:
        raise TypeError("pattern must be a non-empty str or a compiled str pattern, not %r" % (pattern,))
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ConfigurationError("subscribe(): pattern %r is not a valid regular expression: %s"
                                 % (pattern, exc)) from None
    unsupported, i, bracket = None, 0, False
    while i < len(pattern) and unsupported is None:
        c, following = pattern[i], pattern[i + 1:i + 2]
        if c == "\\":
            if following in ("d", "D") or (bracket and following.isalpha()):
                unsupported = "\\" + following + (" inside [...]" if bracket else "")
            i += 2
            continue
        if bracket:
            if c == "]" and pattern[i - 1] != "[" and pattern[i - 2:i] != "[^":
                bracket = False
        elif c == "[":
            bracket = True
        elif c == "(" and following == "?":
            unsupported = "(?...)"
        i += 1
    if unsupported is not None:
        raise ConfigurationError("subscribe(): librdkafka matches topic names with POSIX extended regular "
                                 "expressions, which have no %s as Python's (pattern %r): use [0-9] for \\d, "
                                 "plain (...) groups, no escapes inside [...]" % (unsupported, pattern))
    return pattern


class AIOKafkaConsumer(Client):
    """aiokafka's ``AIOKafkaConsumer``: its arguments and defaults, mapped to librdkafka
    properties (``rdkafka_config`` adds or overrides any). Without a ``group_id`` the consumer
    uses a private group of its own (librdkafka needs one for its queue) and refuses commits,
    as aiokafka does."""

    def __init__(self, *topics: str, loop: Optional[asyncio.AbstractEventLoop] = None,
                 bootstrap_servers: Union[str, Sequence[str]] = "localhost", client_id: str = "aiokafka-0.8.0",
                 group_id: Optional[str] = None, key_deserializer: Optional[Callable[[bytes], Any]] = None,
                 value_deserializer: Optional[Callable[[bytes], Any]] = None, fetch_max_wait_ms: int = 500,
                 fetch_max_bytes: int = 52428800, fetch_min_bytes: int = 1, max_partition_fetch_bytes: int = 1048576,
                 request_timeout_ms: int = 40000, retry_backoff_ms: int = 100, auto_offset_reset: str = "latest",
                 enable_auto_commit: bool = True, auto_commit_interval_ms: int = 5000, check_crcs: bool = True,
                 metadata_max_age_ms: int = 300000,
                 partition_assignment_strategy: Union[Any, Sequence[Any]] = ("RoundRobinPartitionAssignor",),
                 max_poll_interval_ms: int = 300000, rebalance_timeout_ms: Optional[int] = None,
                 session_timeout_ms: int = 10000, heartbeat_interval_ms: int = 3000, consumer_timeout_ms: int = 200,
                 max_poll_records: Optional[int] = None, ssl_context: Optional[ssl.SSLContext] = None,
                 security_protocol: str = "PLAINTEXT", api_version: str = "auto", exclude_internal_topics: bool = True,
                 connections_max_idle_ms: Optional[int] = 540000, isolation_level: str = "read_uncommitted",
                 sasl_mechanism: str = "PLAIN", sasl_plain_password: Optional[str] = None,
                 sasl_plain_username: Optional[str] = None, sasl_kerberos_service_name: str = "kafka",
                 sasl_kerberos_domain_name: Optional[str] = None,
                 sasl_oauth_token_provider: Optional[AbstractTokenProvider] = None,
                 rdkafka_config: Optional[Mapping[str, Any]] = None) -> None:
        if auto_offset_reset not in RESETS:
            raise ValueError("auto_offset_reset must be 'earliest', 'latest' or 'none', not %r"
                             % (auto_offset_reset,))
        if isolation_level not in ("read_uncommitted", "read_committed"):
            raise ValueError("isolation_level must be 'read_uncommitted' or 'read_committed', not %r"
                             % (isolation_level,))
        if max_poll_records is not None and (not isinstance(max_poll_records, int) or max_poll_records < 1):
            raise ValueError("max_poll_records must be an int >= 1 or None, not %r" % (max_poll_records,))
        if group_id is not None and (not isinstance(group_id, str) or not group_id):
            raise TypeError("group_id must be a non-empty str or None, not %r" % (group_id,))
        for name, fn in (("key_deserializer", key_deserializer), ("value_deserializer", value_deserializer)):
            if fn is not None and not callable(fn):
                raise TypeError("%s must be callable, not %r" % (name, fn))
        self._group_id = group_id
        self._key_deserializer = key_deserializer
        self._value_deserializer = value_deserializer
        self._max_poll_records = max_poll_records
        self._request_timeout_ms = request_timeout_ms
        self._metadata_max_age_ms = metadata_max_age_ms
        self._auto_offset_reset = auto_offset_reset
        self._auto_commit = check_bool("enable_auto_commit", enable_auto_commit) and group_id is not None
        self._exclude_internal = check_bool("exclude_internal_topics", exclude_internal_topics)
        self._config = conf.common(bootstrap_servers, client_id, metadata_max_age_ms, request_timeout_ms,
                                   retry_backoff_ms, security_protocol, ssl_context, connections_max_idle_ms,
                                   sasl_mechanism, sasl_plain_username, sasl_plain_password,
                                   sasl_kerberos_service_name, sasl_oauth_token_provider, rdkafka_config)
        self._config.update({
            "group.id": group_id or "pyrdk-aio-%s" % uuid.uuid4().hex,
            "auto.offset.reset": RESETS[auto_offset_reset],
            "enable.auto.commit": self._auto_commit,
            "auto.commit.interval.ms": auto_commit_interval_ms,
            "enable.auto.offset.store": False,
            "fetch.wait.max.ms": fetch_max_wait_ms,
            "fetch.max.bytes": fetch_max_bytes,
            "fetch.min.bytes": fetch_min_bytes,
            "max.partition.fetch.bytes": max_partition_fetch_bytes,
            "check.crcs": check_bool("check_crcs", check_crcs),
            "session.timeout.ms": session_timeout_ms,
            "heartbeat.interval.ms": heartbeat_interval_ms,
            "max.poll.interval.ms": max_poll_interval_ms,
            "isolation.level": isolation_level,
            "partition.assignment.strategy": _assignor(partition_assignment_strategy),
        })
        poll, session = integer(max_poll_interval_ms), integer(session_timeout_ms)
        if isinstance(poll, int) and isinstance(session, int) and 0 < poll < session:
            # librdkafka refuses a max.poll.interval.ms under session.timeout.ms; aiokafka
            # takes it, and a member is not dropped before its session times out anyway
            self._config["max.poll.interval.ms"] = session
        if librdkafka_runtime_version() >= 0x02010000:
            # librdkafka's default (1000 ms, since 2.1.0) stalls a consumer that empties its
            # prefetch queue faster than the broker fills it, as getmany() does.
            self._config["fetch.queue.backoff.ms"] = 10
        self._read_committed = isolation_level == "read_committed"
        if self._read_committed:
            self._config["statistics.interval.ms"] = LSO_STATISTICS_INTERVAL_MS
        self._config.update(rdkafka_config or {})
        conf.check(self._config, rdkafka_config)
        self._auto_commit_interval_s = int(self._config["auto.commit.interval.ms"]) / 1000.0
        self._handle: Any = None  # a pyrdk.rd.handle.Handle once started
        self._wakeup: Any = None
        self._loop: Any = None
        self._core: Any = None
        self._buffer: collections.deque[Any] = collections.deque()  # [TopicPartition, [ConsumerRecord]] runs
        self._buffered = 0  # records in the buffer
        self._counts: collections.Counter[TopicPartition] = collections.Counter()  # its records in the buffer
        self._held: set[TopicPartition] = set()  # paused in librdkafka for their buffered records (HOLD_MAX)
        self._poll_due = 0.0  # when getmany() next tells librdkafka of a poll (POLLED_EVERY_S)
        self._positions: dict[TopicPartition, int] = {}  # next offset, for the records returned
        self._polled: dict[TopicPartition, int] = {}  # when records of it last came from librdkafka (ms)
        self._paused: set[TopicPartition] = set()
        self._assigned: list[TopicPartition] = []  # the TopicPartitions last given to rd_kafka_assign
        self._fresh: set[TopicPartition] = set()  # assigned, nothing returned yet: a seek restarts them by assign
        # unsubscribe() left the group: librdkafka's commits would carry the generation it had
        # there (rd_kafka_cgrp_leave resets the member id only), which the coordinator refuses,
        # so commits go without a member (_commit_outside()) until the next subscribe()
        self._left_group = False
        self._leaving: dict[TopicPartition, int] = {}  # positions of partitions given up, for that auto-commit
        self._committed_here: dict[TopicPartition, int] = {}  # what that auto-commit last committed
        self._commit_due: Optional[asyncio.Event] = None  # wakes _auto_commit_loop() before its interval
        self._auto_committing: Optional[asyncio.Task[None]] = None  # the task of _auto_commit_loop()
        self._committing = threading.Lock()  # one commit without a member at a time, in order
        self._waiters: set[asyncio.Future[None]] = set()
        self._subscribed = False
        self._subscription_names: list[str] = []
        self._pattern: Optional[re.Pattern[str]] = None  # a pattern subscription's, compiled
        self._manual = False
        self._assigned_all = False  # subscribed without a group: every partition assigned
        self._following: Optional[asyncio.Task[None]] = None  # the task of _follow_partitions()
        self._listener: Optional[ConsumerRebalanceListener] = None
        self._rebalances: collections.deque[tuple[str, list[TopicPartition]]] = collections.deque()
        self._rebalancing: Optional[asyncio.Task[None]] = None  # the task running the listener
        self._revoke_told = False  # the listener was told of the revocation before the next assignment
        # the group's partitions assigned since the last unsubscribe(): a revocation tells the
        # listener of those only (one given to subscribe() after unsubscribe() never held the
        # old subscription's partitions, whose revocation librdkafka may report after it)
        self._held_since_subscribe: set[TopicPartition] = set()
        self._left_out: set[TopicPartition] = set()  # internal topics' partitions of the group's last assignment
        self._assigning: Optional[dict[TopicPartition, int]] = None  # while on_partitions_assigned runs: its seeks
        self._errors: collections.deque[KafkaError] = collections.deque()
        # auto_offset_reset="none": partitions librdkafka stopped for want of an offset, and
        # the error, which every getmany() of them raises (as aiokafka's) until a seek or a new
        # assignment, instead of waiting for records that cannot come
        self._unpositioned: dict[TopicPartition, KafkaError] = {}
        self._may_fail = False  # the buffer may hold an _Undeserializable
        self._closed = False
        self._stopping = False
        self._metadata: dict[str, set[int]] = {}  # topic -> set of partition ids, from the last metadata request
        self._unanswered: set[str] = set()  # topics the last metadata request answered with an error
        # the task of a metadata request for topics assigned that it lacked
        self._refreshing: Optional[asyncio.Task[None]] = None
        # subscribe() or assign() called before start() (the constructor's topics are the first
        # subscribe()), which start() calls once it has the metadata, as aiokafka's allows
        self._before_start: Optional[Callable[[], None]] = None
        if topics:
            self._before_start = functools.partial(self.subscribe, topics=list(topics))
            self._subscribed, self._subscription_names = True, list(topics)

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        """Create the librdkafka consumer (``rd_kafka_new``), watch its queue, load the
        cluster's metadata, and subscribe to the topics given to the constructor. If the
        metadata does not come (``SslError`` or ``AuthenticationError`` as soon as
        librdkafka reports one), or start() is cancelled, the consumer is closed again and the
        error raised: a later start() starts it anew."""
        if self._closed:
            raise ConsumerStoppedError("the consumer is stopped; make a new one")
        if self._handle is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._core = consumer_core({})
        self._bind_token_provider()
        handle = Handle("consumer", self._config, Callbacks(on_rebalance=weak_method(self, "_on_rebalance", None)),
                        closed_exc=ConsumerStoppedError, what="consumer")
        try:
            self._wakeup = Wakeup(self._loop, handle, self._on_ready)
        except BaseException:
            handle.close(consumer_close=False)
            raise
        self._handle = handle
        try:
            await self._refresh_metadata(first=True)
        except BaseException as exc:  # nothing may go on reconnecting; start() may be called again
            self._wakeup.close()
            self._handle = None
            self._errors.clear()
            if isinstance(exc, Exception):
                handle.close(consumer_close=False)
            else:  # cancelled: the metadata request may still run in its thread, which close() waits for
                self._loop.run_in_executor(None, functools.partial(handle.close, consumer_close=False))
            raise
        if self._before_start is not None:
            call, self._before_start = self._before_start, None
            self._subscribed = self._manual = False
            call()

    async def stop(self) -> None:
        """Leave the group and close (``rd_kafka_consumer_close``, which commits the offsets
        of the records returned when auto-commit is on, then ``rd_kafka_destroy``). Waits at
        most ``request_timeout_ms``; a pending ``getmany()`` raises ``ConsumerStoppedError``.
        Cancelled, it lets the close go on in the background and drops the buffered records."""
        if self._handle is None or self._closed:  # stopped, or never started: start() may still start it,
            return  # as aiokafka's may (a start() that failed closed what it had made)
        self._stopping = True
        self._closed = True
        foreign = self._foreign_loop()  # started in another loop: its tasks and futures are that loop's
        if self._rebalancing is not None and not self._rebalancing.done() and not foreign:
            # From within the listener (its task, or one it started, as asyncio.wait_for()
            # does), its task must not be cancelled: the listener's stop() would raise
            # CancelledError, leaving the close unawaited; _run_rebalances() ends once the
            # listener returns (self._closed).
            if self._rebalancing is not asyncio.current_task() and self not in _in_listener_of.get():
                self._rebalancing.cancel()
            self._rebalances.clear()
            try:  # the group waits for the assignment the listener's task was to make
                self._handle.assign(None)
            except KafkaError as exc:
                log.debug("unassign at stop: %s", exc)
        for task in (self._refreshing, self._following):
            if task is not None and not foreign:
                task.cancel()
        self._wakeup.close()
        for fut in self._waiters if not foreign else ():
            if not fut.done():
                fut.set_result(None)
        if self._subscribed:
            try:
                self._handle.unsubscribe()
            except KafkaError as exc:
                log.debug("unsubscribe at stop: %s", exc)
        last = []
        if self._auto_commit and (self._left_group or self._leaving):
            last = self._due()
            if self._auto_committing is not None and not foreign:
                self._auto_committing.cancel()  # a commit it started goes on: _commit_outside() waits for it
        close = asyncio.get_running_loop().run_in_executor(None, self._close, last)
        try:
            await asyncio.wait_for(asyncio.shield(close), self._request_timeout_ms / 1000.0)
        except asyncio.TimeoutError:
            log.warning("rd_kafka_consumer_close took longer than request_timeout_ms; it goes on "
                        "in the background")
        finally:  # cancelled too: the close goes on in the background, the buffer goes now
            self._clear()

    def _close(self, last):
        """Commit ``last`` (auto-commit's entries after unsubscribe() left the group, see
        commit()), then ``Handle.close`` (``rd_kafka_consumer_close``): in the executor."""
        if last:
            try:
                self._commit_outside(last)
            except KafkaError as exc:
                log.warning("auto-commit of %s at stop: %s", last, exc)
        self._handle.close()

    def __aiter__(self) -> AIOKafkaConsumer:
        return self

    async def __anext__(self) -> ConsumerRecord[Any, Any]:
        try:
            return await self.getone()
        except ConsumerStoppedError:
            if not self._closed:  # never started: a mistake to tell, not the end of the records
                raise
            raise StopAsyncIteration from None

    def _check_running(self):
        if self._closed:
            raise ConsumerStoppedError("the consumer is stopped")
        if self._handle is None:
            raise ConsumerStoppedError("the consumer is not started: await start() first (or use async with)")

    # -- subscription and assignment -----------------------------------------------------------

    def subscribe(self, topics: Iterable[str] = (), pattern: Union[str, re.Pattern[str], None] = None,
                  listener: Optional[ConsumerRebalanceListener] = None) -> None:
        """Join the group for ``topics`` (a list of str) or a regex ``pattern``
        (``rd_kafka_subscribe``); ``listener`` is told of each rebalance. Without a
        ``group_id``, topics the last metadata knows are assigned whole at once
        (``rd_kafka_assign``), as aiokafka does; others (and patterns) join a private group.
        Before ``start()``, as in aiokafka, ``start()`` subscribes."""
        if self._closed:
            self._check_running()
        if self._manual:
            raise IllegalStateError("subscribe() after assign(): call unsubscribe() first")
        if bool(topics) == bool(pattern):  # a ValueError, as aiokafka's
            raise ConfigurationError("subscribe() takes topics or a pattern (one of them)")
        if listener is not None and not isinstance(listener, ConsumerRebalanceListener):
            raise TypeError("listener must be a ConsumerRebalanceListener, not %r" % (listener,))
        if pattern is not None:
            pattern = _posix_pattern(pattern)
            names = [pattern if pattern.startswith("^") else "^" + pattern]
        else:
            if isinstance(topics, str):
                raise TypeError("topics must be a list of str, not a str: subscribe(topics=[%r])" % topics)
            names = list(topics)
            for name in names:
                if not isinstance(name, str) or not name:
                    raise TypeError("topic names must be non-empty str, not %r" % (name,))
        if self._handle is None:  # the names read, not topics: a generator is read once
            self._before_start = functools.partial(self.subscribe, names if pattern is None else topics, pattern,
                                                   listener)
            self._subscribed, self._subscription_names = True, names
            self._pattern = None if pattern is None else re.compile(names[0])
            return
        self._listener = listener
        known = self._metadata
        if self._group_id is None and pattern is None and all(known.get(name) for name in names):
            # As aiokafka's consumer without a group: every partition of the topics, at once
            # (rd_kafka_assign); librdkafka's subscription would join a group first.
            tps = [TopicPartition(name, p) for name in names for p in sorted(known[name])]
            self._handle.assign([(tp.topic, tp.partition) for tp in tps])
            self._assigned, self._fresh = tps, set(tps)
            self._unpositioned.clear()
            self._assigned_all = True
            self._restart()
            if self._following is None or self._following.done():
                self._following = self._loop.create_task(self._follow_partitions())
        else:
            if self._assigned_all:
                self._handle.assign(None)
                self._assigned_all = False
                self._assigned, self._fresh = [], set()
                self._restart()  # the records and positions of the partitions given up go
            try:
                self._handle.subscribe(names)
            except RdKafkaException as exc:
                if pattern is None:
                    raise
                raise ConfigurationError("subscribe(): librdkafka refused the pattern %r (%s): it takes POSIX "
                                         "extended regular expressions" % (names[0], exc)) from None
        self._subscription_names = names
        self._pattern = None if pattern is None else re.compile(names[0])
        self._subscribed = True
        self._left_group = False  # a member again: librdkafka's commits carry its generation

    def subscription(self) -> set[str]:
        """The topics subscribed to, as a set: for a pattern, as aiokafka's, the topics it
        matches (of the last metadata, and those assigned)."""
        if not self._subscribed:
            return set()
        if self._pattern is None:
            return set(self._subscription_names)
        return {name for name in self._metadata if self._pattern.match(name) and not self._hidden(name)} | \
            ({tp.topic for tp in self.assignment()} if self._handle is not None else set())

    def unsubscribe(self) -> None:
        """Leave the group's assignment (``rd_kafka_unsubscribe``) or drop the manual one."""
        if self._handle is None and not self._closed:  # before start(): what start() was to do
            self._before_start = None
            self._subscribed = self._manual = False
            return
        self._check_running()
        if self._manual:
            self._note_leaving()
            self._handle.assign(None)
            self._manual = False
        elif self._assigned_all:
            self._handle.assign(None)
            self._subscribed = self._assigned_all = False
        elif self._subscribed:
            # aiokafka's unsubscribe() drops the listener with the subscription: the revocation
            # librdkafka reports for it is not the listener's
            self._listener = None
            self._held_since_subscribe = set()
            self._handle.unsubscribe()
            self._subscribed = False
            self._left_group = self._group_id is not None
            self._committed_here = {}
        self._clear()
        self._positions.clear()
        self._unpause(self._paused)
        self._assigned, self._fresh = [], set()
        self._unpositioned.clear()
        self._drop_offset_errors()  # of partitions given up: no longer the program's

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Read ``partitions`` (TopicPartitions), from the committed offsets or
        ``auto_offset_reset`` (``rd_kafka_assign``); replaces the previous assignment, whose
        partitions assigned again start anew too (unpaused), as in aiokafka. Before
        ``start()``, as in aiokafka, ``start()`` assigns them."""
        if self._closed:
            self._check_running()
        if self._subscribed:
            raise IllegalStateError("assign() after subscribe(): call unsubscribe() first")
        tps = [topic_partition(tp) for tp in partitions]
        if self._handle is None:
            self._before_start = functools.partial(self.assign, tps)
            self._manual = True
            return
        self._note_leaving()
        self._handle.assign([(tp.topic, tp.partition) for tp in tps])
        self._learn_topics(tps)
        self._assigned, self._fresh = tps, set(tps)
        self._unpositioned.clear()
        self._drop_offset_errors()
        self._manual = True
        self._restart()
        if self._left_group and self._auto_commit and (self._auto_committing is None or self._auto_committing.done()):
            self._commit_due = asyncio.Event()
            self._auto_committing = self._loop.create_task(self._auto_commit_loop())

    def _restart(self):
        """After an ``rd_kafka_assign`` of the program's: librdkafka starts every partition of
        the new assignment at its committed offset (or auto_offset_reset), those assigned
        before too, as aiokafka's new assignments do; what was fetched before, the positions
        and the pauses are those of the previous assignment."""
        self._clear()
        self._positions.clear()
        self._unpause(self._paused)

    async def _follow_partitions(self):
        """Subscribed by name without a group: every ``metadata_max_age_ms`` the metadata is
        asked again, and the assignment follows the topics' partitions (ones added are
        assigned, from ``auto_offset_reset``; those of a topic deleted go), as aiokafka's
        consumer without a group assigns every partition at each metadata update. The others
        go on from their positions."""
        while self._assigned_all and not self._closed:
            await asyncio.sleep(self._metadata_max_age_ms / 1000.0)
            try:
                await self._refresh_metadata()
            except KafkaError as exc:  # asked again at the next turn
                log.debug("metadata for the topics subscribed: %s", exc)
                continue
            if not self._assigned_all or self._closed:
                return
            tps = [TopicPartition(name, p) for name in self._subscription_names  # an error keeps a topic's
                   for p in (sorted(self._metadata.get(name, ())) if name not in self._unanswered
                             else [tp.partition for tp in self._assigned if tp.topic == name])]
            if set(tps) == set(self._assigned):
                continue
            wanted = set(tps)
            kept = {tp: self._known_position(tp) for tp in self._assigned if tp in wanted}
            gone = [tp for tp in self._assigned if tp not in kept]
            self._clear()
            self._handle.assign([(tp.topic, tp.partition, kept.get(tp)) for tp in tps])
            self._unpause(gone)
            for tp in gone:
                self._positions.pop(tp, None)
                self._unpositioned.pop(tp, None)
            self._drop_offset_errors(set(gone))
            self._fresh = (self._fresh & set(kept)) | {tp for tp in tps if tp not in kept}
            self._assigned = tps
            self._wake()

    def _unpause(self, tps):
        """End the program's pause of those of ``tps`` it paused, as they leave the assignment
        (``rd_kafka_resume_partitions``): librdkafka keeps a partition's pause across
        assignments, aiokafka's next assignment of it starts unpaused."""
        tps = [tp for tp in tps if tp in self._paused]
        if tps:
            try:
                self._handle.resume([(tp.topic, tp.partition) for tp in tps])
            except KafkaError as exc:  # not known to librdkafka: nothing paused
                log.debug("resume of a partition leaving the assignment: %s", exc)
            self._paused.difference_update(tps)

    def assignment(self) -> set[TopicPartition]:
        """The set of TopicPartitions assigned (``rd_kafka_assignment``)."""
        self._check_running()
        if self._assigning is not None:  # on_partitions_assigned runs before rd_kafka_assign
            return set(self._assigned)
        return {TopicPartition(tp.topic, tp.partition) for tp in self._handle.assignment()}

    def _check_assigned(self, tps):
        assigned = self.assignment()
        for tp in tps:
            if tp not in assigned:
                raise IllegalStateError("%s [%d] is not assigned to this consumer" % (tp.topic, tp.partition))

    def _drop(self, chosen):
        """Drop the buffered records of the partitions ``chosen(tp)`` picks."""
        if self._buffer:
            kept = [run for run in self._buffer if not chosen(run[0])]
            self._buffer = collections.deque(kept)
            self._buffered = sum(len(run[1]) for run in kept)
            self._counts = collections.Counter()
            for tp, records in kept:
                self._counts[tp] += len(records)
        self._release()

    def _clear(self):
        self._buffer.clear()
        self._buffered = 0
        self._counts.clear()
        self._may_fail = False
        self._release()

    def _hold(self, tps):
        """Stop fetching ``tps`` (``rd_kafka_pause_partitions``) while their buffered records
        wait for a getmany() that asks for them; not the program's pause (``paused()``)."""
        tps = [tp for tp in tps if tp not in self._held and tp not in self._paused]
        if tps:
            try:
                self._handle.pause([(tp.topic, tp.partition) for tp in tps])
            except KafkaError as exc:  # revoked meanwhile: the buffer bound waits for the next fill
                log.debug("pause of a partition's fetch: %s", exc)
                return
            self._held.update(tps)

    def _release(self):
        """Fetch again (``rd_kafka_resume_partitions``) the partitions :meth:`_hold` stopped
        whose buffered records are down to HOLD_MAX / 2."""
        tps = [tp for tp in self._held if self._counts[tp] <= HOLD_MAX // 2]
        if tps:
            self._held.difference_update(tps)
            if self._handle is not None and self._handle.usable:
                try:
                    self._resume(tps)
                except KafkaError as exc:  # no longer assigned: nothing to fetch
                    log.debug("resume of a partition's fetch: %s", exc)

    def _resume(self, tps):
        """``rd_kafka_resume_partitions``, then ``Handle.wake_fetcher`` for each, so that
        fetching starts now rather than up to a second later."""
        self._handle.resume([(tp.topic, tp.partition) for tp in tps])
        for tp in tps:
            self._handle.wake_fetcher(tp.topic, tp.partition)

    # -- rebalances ----------------------------------------------------------------------------

    def _on_rebalance(self, kind, tps):
        """librdkafka's rebalance callback, from a consume call on the loop: record it, and
        (eager protocol) leave the assignment to :meth:`_run_rebalances`."""
        if self._stopping:
            return None  # closing: librdkafka assigns (unassigns) in the callback itself
        tps = [TopicPartition(tp.topic, tp.partition) for tp in tps]
        if kind == "revoke" and not self._manual:  # what the assignment left out, whatever the subscription is now
            gone = set(tps)
            self._drop(lambda tp: tp in gone)
            self._drop_offset_errors(gone)  # another member positions them now
            tps = [tp for tp in tps if tp not in self._left_out]
            self._left_out = set()
        else:
            self._left_out = {tp for tp in tps if self._hidden(tp.topic)}
            tps = [tp for tp in tps if tp not in self._left_out]
        self._rebalances.append((kind, tps))
        if self._rebalancing is None or self._rebalancing.done():
            self._rebalancing = self._loop.create_task(self._run_rebalances())
        return DEFERRED

    def _hidden(self, topic):
        """Whether ``topic`` is an internal topic a pattern subscription leaves out, as
        aiokafka's does with ``exclude_internal_topics``: librdkafka's pattern matches them too,
        so the partitions of them the group gives this member are not assigned, and not read."""
        return topic in INTERNAL_TOPICS and self._exclude_internal and self._pattern is not None

    async def _run_rebalances(self):
        while self._rebalances and not self._closed:
            kind, tps = self._rebalances.popleft()
            listener = self._listener
            if self._manual:
                self._left_subscription(kind)
            elif kind == "revoke":
                told, self._held_since_subscribe = self._held_since_subscribe & set(tps), set()
                if listener is not None:
                    await _call(self, listener.on_partitions_revoked, told, "on_partitions_revoked")
                if self._closed:  # the listener called stop(): it closed the consumer
                    return
                if self._manual:  # unsubscribe() and assign() meanwhile
                    self._left_subscription(kind)
                    continue
                self._revoke_told = listener is not None
                if self._handle.usable:
                    self._handle.assign(None)
                    self._unpause(tps)
                self._assigned, self._fresh = [], set()
                self._unpositioned.clear()
                for tp in tps:
                    self._positions.pop(tp, None)
                    self._paused.discard(tp)
            else:
                self._assigned, self._fresh = tps, set(tps)
                self._held_since_subscribe = set(tps)
                self._unpositioned.clear()
                starts = {}
                if listener is not None and not self._revoke_told:
                    # A first assignment: aiokafka tells the listener of the (empty) revocation
                    # that precedes every assignment of the eager protocol; librdkafka has none.
                    await _call(self, listener.on_partitions_revoked, set(), "on_partitions_revoked")
                    if self._closed:
                        return
                    if self._manual:
                        continue
                self._revoke_told = False
                if listener is not None:
                    # The listener's seeks become the start offsets of the assignment: given
                    # none, librdkafka looks the committed offsets up at once, and resets (or,
                    # with auto_offset_reset="none", fails) the partitions without one.
                    self._assigning = starts
                    try:
                        await _call(self, listener.on_partitions_assigned, set(tps), "on_partitions_assigned")
                    finally:
                        self._assigning = None
                if self._closed:  # the listener called stop(): it closed the consumer
                    return
                if self._manual:  # unsubscribe() and assign() meanwhile: its rd_kafka_assign answered librdkafka
                    continue
                if self._handle.usable:
                    self._handle.assign([(tp.topic, tp.partition, starts.get(tp)) for tp in tps])
                    # the listener's seeks, stored now that librdkafka has the partitions (it
                    # refused them before): auto-commit commits them, as seek() says
                    self._store([(tp.topic, tp.partition, offset) for tp, offset in starts.items()
                                 if tp in self._assigned and offset >= 0 and self._positions.get(tp) == offset])
                self._learn_topics(tps)
        self._wake()

    def _left_subscription(self, kind):
        """A rebalance of the subscription the program has left for ``assign()`` (unsubscribe()
        then assign(), as aiokafka's IllegalStateError tells): the program's assignment stays.
        Its ``rd_kafka_assign`` answered an assignment librdkafka waited for; a revocation
        (librdkafka's of the unsubscribe(), served after the assign()) still waits for an
        unassign, which is made, and the program's partitions are assigned again at once,
        at their positions (what was fetched is fetched again)."""
        if kind != "revoke" or not self._handle.usable:
            return
        kept = [(tp.topic, tp.partition, self._known_position(tp)) for tp in self._assigned]
        self._clear()
        self._handle.assign(None)
        self._handle.assign(kept)
        self._wake()

    # -- fetching ------------------------------------------------------------------------------

    def _on_ready(self):
        """The pipe said the consumer queue has events: wake the getmany() calls waiting, or,
        when none waits, serve the queue (so that rebalances and errors are served) into the
        buffer, up to a bound."""
        if self._waiters:
            self._wake()
        elif self._buffered < BATCH:
            self._fill()

    def _wake(self):
        for fut in self._waiters:
            if not fut.done():
                fut.set_result(None)

    def _fill(self):
        """Take what librdkafka has (``rd_kafka_consume_batch_queue``, zero timeout) into the
        buffer: the core makes the ConsumerRecords, in runs of one partition's; True if
        anything came."""
        if not self._handle.usable:
            return False
        try:
            runs, errs = self._handle.consume_batch(BATCH, 0, self._add)
        except KafkaError as exc:  # a callback's (a TLS or login failure): for getmany(), not the loop
            self._errors.append(_as_aiokafkas(exc))
            return True
        raised = False
        for err in errs:
            if isinstance(err, (OffsetOutOfRangeError, TopicAuthorizationFailed, GroupAuthorizationFailed)) \
                    or getattr(err, "fatal", False) or security_failure(err):
                self._errors.append(_as_aiokafkas(err))
                raised = True
                if isinstance(err, OffsetOutOfRangeError) and self._auto_offset_reset == "none" and \
                        getattr(err, "topic", None) and err.partition >= 0:
                    self._unpositioned[TopicPartition(err.topic, err.partition)] = err
            else:
                log.warning("consumer: %s", err)
        if not runs:
            return raised
        kd, vd = self._key_deserializer, self._value_deserializer
        count = 0
        now = int(time.time() * 1000)
        counts = self._counts
        full = []
        for run in runs:
            records = run[1]
            count += len(records)
            self._polled[run[0]] = now
            counts[run[0]] += len(records)
            if counts[run[0]] > HOLD_MAX:
                full.append(run[0])
            if kd is not None or vd is not None:
                run[1] = self._deserialized(records, kd, vd)
        self._buffer.extend(runs)
        self._buffered += count
        if full:
            self._hold(full)
        return True

    def _deserialized(self, records, kd, vd):
        """The records with their key and value deserialized; one a deserializer raised on
        stays in its place as an _Undeserializable."""
        def one(r):
            return _record(r[:5] + (kd(r[5]) if kd is not None else r[5],
                                    vd(r[6]) if vd is not None else r[6]) + r[7:])
        try:
            return [one(r) for r in records]
        except Exception:  # again, one by one
            out = []
            for r in records:
                try:
                    out.append(one(r))
                except Exception as exc:
                    out.append(_Undeserializable(r, exc))
            self._may_fail = True
            return out

    def _add(self, pointers):
        return self._core.add_records(pointers, ConsumerRecord, TopicPartition)

    def _take(self, partitions, max_records):
        """Up to ``max_records`` buffered records of ``partitions`` (all when empty), not
        paused, grouped by partition; their positions advanced and stored for commit."""
        out = {}
        if not self._buffer:
            return out
        wanted = set(partitions) if partitions else None
        paused = self._paused
        room = max_records
        kept = collections.deque()
        runs = self._buffer
        failed = None  # (tp, the _Undeserializable this call raises)
        while runs and room > 0:
            run = runs.popleft()
            tp, records = run
            if (wanted is not None and tp not in wanted) or tp in paused:
                kept.append(run)
                continue
            cut = min(room, len(records))
            bad = None
            if self._may_fail:
                bad = next((i for i in range(cut) if records[i].__class__ is _Undeserializable), None)
                if bad == 0 and out:  # raised by the next call, after what this one returns
                    kept.append(run)
                    break
                if bad is not None:
                    cut = bad or 1  # the records before it, or (first in line) itself
            if cut < len(records):
                run[1] = records[cut:]
                kept.append(run)
            room -= cut
            if bad == 0:
                failed = (tp, records[0])
                break
            have = out.get(tp)
            if have is None:
                out[tp] = records[:cut] if cut < len(records) else records
            else:
                have.extend(records[:cut])
            if bad is not None:
                break
        if kept:
            kept.extend(runs)
            self._buffer = kept
        self._buffered -= max_records - room
        if not self._buffered:
            self._may_fail = False
        consumed = [(tp, records[-1].offset + 1) for tp, records in out.items()]
        counts = self._counts
        for tp, records in out.items():
            counts[tp] -= len(records)
        if failed is not None:
            consumed.append((failed[0], failed[1].offset + 1))
            counts[failed[0]] -= 1
        if self._held:
            self._release()
        if consumed:
            stored = []
            for tp, nxt in consumed:
                self._fresh.discard(tp)
                self._positions[tp] = nxt
                stored.append((tp.topic, tp.partition, nxt))
            self._store(stored)
        if failed is not None:
            raise failed[1].error
        return out

    def _error_for(self, partitions):
        """The first error waiting that a getmany() of ``partitions`` (all when empty) raises,
        taken from the queue: one of no partition, or of one it asks for (as aiokafka's raises
        a partition's error only to a call that asks for the partition)."""
        for exc in self._errors:
            topic, partition = getattr(exc, "topic", None), getattr(exc, "partition", -1)
            if not partitions or not topic or partition is None or partition < 0 or \
                    TopicPartition(topic, partition) in partitions:
                self._errors.remove(exc)
                return exc
        return None

    def _store(self, stored):
        """With auto-commit, ``rd_kafka_offsets_store`` the positions ``[(topic, partition,
        offset)]``: what librdkafka commits next (and at close). Not once unsubscribe()
        left the group: :meth:`_auto_commit_loop` commits the positions then."""
        if self._auto_commit and stored and not self._left_group:
            try:
                self._handle.offsets_store(stored)
            except KafkaError as exc:  # a partition revoked meanwhile: not ours to commit
                log.debug("offsets_store: %s", exc)

    async def _get(self, partitions, timeout_ms, max_records):
        self._check_running()
        self._check_loop()
        partitions = [topic_partition(tp) for tp in partitions]
        deadline = None if timeout_ms is None else self._loop.time() + timeout_ms / 1000.0
        # A loop of getmany() calls must let other tasks run: here, before anything is taken,
        # so that a cancellation at this await loses no record.
        await asyncio.sleep(0)
        while True:
            self._check_running()
            if self._rebalancing is not None and not self._rebalancing.done():
                if self in _in_listener_of.get():
                    # the listener's own call would wait for the listener to return: forever
                    raise IllegalStateError("getmany() and getone() cannot be called from within the rebalance "
                                            "listener: the records of the new assignment come after it returns; "
                                            "read them in the task that calls getmany()")
                # Waited on, not awaited: stop() cancels the listener's task, which is no
                # cancellation of this one. A slow listener holds the call up to its
                # timeout_ms only, as aiokafka's getmany() returns {} at its timeout.
                remaining = None if deadline is None else deadline - self._loop.time()
                if remaining is not None and remaining <= 0:
                    return {}
                await asyncio.wait((self._rebalancing,), timeout=remaining)
                continue
            if self._errors:
                exc = self._error_for(partitions)
                if exc is not None:
                    raise exc
            out = self._take(partitions, max_records)
            if out:
                now = _monotonic()
                if now >= self._poll_due:  # a call to consume, as aiokafka's max_poll_interval_ms counts them
                    self._poll_due = now + POLLED_EVERY_S
                    self._handle.polled()
                return out
            if self._fill():
                continue
            for tp, exc in self._unpositioned.items():  # librdkafka fetches nothing of them
                if (not partitions or tp in partitions) and tp not in self._paused:
                    raise copy.copy(exc).with_traceback(None)  # a new one each time: no traceback grows
            self._check_running()
            remaining = None if deadline is None else deadline - self._loop.time()
            if remaining is not None and remaining <= 0:
                return {}
            fut = self._loop.create_future()
            self._waiters.add(fut)
            try:
                await asyncio.wait((fut,), timeout=remaining)
            finally:
                self._waiters.discard(fut)
            self._check_running()

    async def getmany(self, *partitions: TopicPartition, timeout_ms: float = 0, max_records: Optional[int] = None
                      ) -> dict[TopicPartition, list[ConsumerRecord[Any, Any]]]:
        """``{TopicPartition: [ConsumerRecord]}``: what is fetched, waiting up to ``timeout_ms``
        for something when nothing is; at most ``max_records`` (default ``max_poll_records``).
        Cancelling it loses nothing: records leave the buffer only when it returns them."""
        if not isinstance(timeout_ms, (int, float)) or not timeout_ms >= 0:  # NaN too: it would never time out
            raise ValueError("timeout_ms must be a number >= 0, not %r" % (timeout_ms,))
        if max_records is None:
            max_records = self._max_poll_records or (1 << 62)
        elif not isinstance(max_records, int) or max_records < 1:
            raise ValueError("max_records must be an int >= 1 or None, not %r" % (max_records,))
        return await self._get(partitions, timeout_ms, max_records)

    async def getone(self, *partitions: TopicPartition) -> ConsumerRecord[Any, Any]:
        """The next record (of ``partitions``, if given), waiting for one."""
        out = await self._get(partitions, None, 1)
        return next(iter(out.values()))[0]

    # -- offsets -------------------------------------------------------------------------------

    async def commit(self, offsets: Optional[Mapping[TopicPartition, Union[int, tuple[int, str]]]] = None) -> None:
        """Commit ``offsets`` (``{TopicPartition: offset or (offset, metadata)}``, the next
        offsets to read), by default the positions of the records returned
        (``rd_kafka_commit``), waiting up to ``request_timeout_ms`` for the answer.

        After ``unsubscribe()`` left the group (then ``assign()``), the consumer commits as
        one outside the group, as aiokafka's does: ``rd_kafka_AlterConsumerGroupOffsets``
        (generation -1, no member id; librdkafka's own commits would carry the generation
        it had in the group, which the coordinator refuses), for auto-commit too
        (:meth:`_auto_commit_loop`). The coordinator takes such commits while the group has no
        member only: else ``CommitFailedError``."""
        self._check_running()
        if self._group_id is None:
            raise IllegalOperation("commit() needs a group_id")
        if offsets is None:
            assigned = self.assignment()
            entries: list[tuple[str, int, int, int, Optional[bytes]]] = [
                (tp.topic, tp.partition, off, 0, None) for tp, off in self._positions.items() if tp in assigned]
        else:
            entries = offsets_to_commit(offsets)
            self._check_assigned([TopicPartition(t, p) for t, p, *_ in entries])
        if not entries:
            return
        if self._left_group:
            await self._blocking(self._commit_outside, entries)
            return
        try:
            await self._blocking(self._handle.commit, entries, False, self._request_timeout_ms)
        except (IllegalGeneration, UnknownMemberId, RebalanceInProgress) as exc:
            raise CommitFailedError("commit failed: the group rebalanced (%s)" % exc) from exc

    def _commit_outside(self, entries):
        """Commit ``entries`` (``(topic, partition, offset, 0, metadata)``) as a client outside
        the group (``rd_kafka_AlterConsumerGroupOffsets``), one such commit at a time so that
        they reach the coordinator in order; what auto-commit committed is noted. A group with
        members refuses it: ``CommitFailedError``."""
        with self._committing:
            try:
                rd_admin.alter_group_offsets(self._handle, self._group_id, entries, self._request_timeout_ms)
            except (IllegalGeneration, UnknownMemberId, RebalanceInProgress) as exc:
                raise CommitFailedError(
                    "commit failed: this consumer left group %r (unsubscribe()) for a manual assignment and "
                    "commits as a client outside the group, which the coordinator refused (%s): it takes such "
                    "commits only while the group has no member; give the manual assignment a group_id of its own"
                    % (self._group_id, exc)) from exc
            for topic, partition, offset, *_ in entries:
                self._committed_here[TopicPartition(topic, partition)] = offset

    def _note_leaving(self):
        """With auto-commit, after unsubscribe() left the group: the positions of the manual
        assignment given up, which :meth:`_auto_commit_loop` commits at once (as librdkafka
        commits the stored offsets of the partitions it unassigns)."""
        if self._left_group and self._auto_commit and self._manual:
            self._leaving.update((tp, self._positions[tp]) for tp in self._assigned if tp in self._positions)
            if self._leaving and self._commit_due is not None:
                self._commit_due.set()

    def _due(self):
        """The entries auto-commit commits now, after unsubscribe() left the group: the
        positions of the partitions given up, then of the manual assignment, that it did not
        commit yet."""
        due, self._leaving = self._leaving, {}
        if self._manual:
            due.update((tp, self._positions[tp]) for tp in self._assigned if tp in self._positions)
        return [(tp.topic, tp.partition, offset, 0, None) for tp, offset in due.items()
                if self._committed_here.get(tp) != offset]

    async def _auto_commit_loop(self):
        """Auto-commit while unsubscribe() has left the group (librdkafka's commits are
        refused, and the positions are not stored there): every ``auto_commit_interval_ms``,
        and at once for a manual assignment given up, the positions not committed yet
        (:meth:`_commit_outside`); a failure is logged, as librdkafka's are. stop() commits the
        last ones."""
        while not self._closed and (self._left_group or self._leaving):
            due = self._commit_due
            assert due is not None
            try:
                await asyncio.wait_for(due.wait(), self._auto_commit_interval_s)
            except asyncio.TimeoutError:
                pass
            due.clear()
            entries = self._due()
            if entries and not self._closed:
                try:
                    await self._blocking(self._commit_outside, entries)
                except KafkaError as exc:
                    log.warning("auto-commit of %s: %s", entries, exc)

    async def committed(self, partition: TopicPartition) -> Optional[int]:
        """The group's committed offset of ``partition`` (``rd_kafka_committed``), or None.
        Asked again within ``request_timeout_ms`` while the coordinator answers that it moved,
        is not available or loads the group (``Handle.committed``), as aiokafka's retries them."""
        self._check_running()
        if self._group_id is None:
            raise IllegalOperation("committed() needs a group_id")
        tp = topic_partition(partition)
        found = await self._blocking(self._handle.committed, [(tp.topic, tp.partition)], self._request_timeout_ms)
        offset = found[0].offset
        return offset if offset >= 0 else None

    async def position(self, partition: TopicPartition) -> int:
        """The offset of the next record ``getmany()`` returns for ``partition``."""
        self._check_running()
        tp = topic_partition(partition)
        self._check_assigned([tp])
        pos = self._known_position(tp)
        if pos is not None:
            return pos
        if self._group_id is not None:
            committed = await self.committed(tp)
            if committed is not None:
                return committed
        if self._auto_offset_reset == "none":  # no position until a seek: the error getmany() raises
            exc: Any = self._unpositioned.get(tp)
            if exc is None:
                exc = OffsetOutOfRangeError("%s [%d]: no committed offset to start from and auto_offset_reset is "
                                            "'none': seek() to an offset first" % (tp.topic, tp.partition))
                exc.topic, exc.partition, exc.offset = tp.topic, tp.partition, OFFSET_INVALID
                exc = _as_aiokafkas(exc)
            raise exc
        low, high = await self._blocking(self._handle.query_watermark_offsets, tp.topic, tp.partition,
                                         self._request_timeout_ms)
        return low if self._auto_offset_reset == "earliest" else high

    def _known_position(self, tp):
        """The offset of the next record of ``tp`` to return, as far as it is known here: its
        position, its first buffered record, or librdkafka's position; else None."""
        if tp in self._positions:
            return self._positions[tp]
        for run_tp, records in self._buffer:
            if run_tp == tp:
                return records[0].offset
        pos = self._handle.position([(tp.topic, tp.partition)])[0].offset
        return pos if pos >= 0 else None

    def seek(self, partition: TopicPartition, offset: int) -> None:
        """Read ``partition`` from ``offset`` next (``rd_kafka_seek_partitions``, not waited on);
        with auto-commit, the offset is what is committed next, as aiokafka commits positions."""
        self._check_running()
        tp = topic_partition(partition)
        offset = integer(offset)
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise ValueError("offset must be an int >= 0, not %r" % (offset,))
        self._seek({tp: offset})
        self._positions[tp] = offset
        self._store([(tp.topic, tp.partition, offset)])

    def _seek(self, offsets):
        """``rd_kafka_seek_partitions`` to ``{TopicPartition: offset}``, not waited on; if a
        partition is assigned and not read yet, all are assigned again instead, these at their
        offsets (librdkafka's start at the committed offset would override a seek made before it)."""
        tps = list(offsets)
        self._check_assigned(tps)
        chosen = set(tps)
        self._drop(lambda tp: tp in chosen)
        for tp in tps:
            self._positions.pop(tp, None)
            self._unpositioned.pop(tp, None)
        self._drop_offset_errors(chosen)
        if self._assigning is not None:  # from on_partitions_assigned: where the assignment starts
            self._assigning.update(offsets)
        elif chosen & self._fresh:
            self._clear()  # every partition restarts at its position (or its start)
            self._unpositioned.clear()
            self._drop_offset_errors()
            self._handle.assign([(tp.topic, tp.partition, offsets[tp] if tp in chosen else self._positions.get(tp))
                                 for tp in self._assigned])
        else:
            self._handle.seek([(tp.topic, tp.partition, offset) for tp, offset in offsets.items()], 0)

    def _drop_offset_errors(self, tps=None):
        """Forget the ``OffsetOutOfRangeError`` waiting in ``self._errors`` for ``tps`` (all
        when None): a seek or a new assignment gives the partitions a position, so the
        error of the one they had before is no longer the program's (aiokafka's seek drops it)."""
        if self._errors:
            self._errors = collections.deque(
                exc for exc in self._errors
                if not (isinstance(exc, OffsetOutOfRangeError) and getattr(exc, "topic", None) and
                        (tps is None or TopicPartition(exc.topic, exc.partition) in tps)))

    def _chosen(self, partitions):
        tps = [topic_partition(tp) for tp in partitions] if partitions else sorted(self.assignment())
        return tps

    async def seek_to_beginning(self, *partitions: TopicPartition) -> bool:
        """Read from the oldest offset (of all assigned partitions by default); True once
        the partitions are there, as aiokafka's."""
        return await self._seek_to(partitions, OFFSET_BEGINNING)

    async def seek_to_end(self, *partitions: TopicPartition) -> bool:
        """Read from the end: only records produced from now on; True once the partitions
        are there, as aiokafka's."""
        return await self._seek_to(partitions, OFFSET_END)

    async def _seek_to(self, partitions, logical):
        """Seek to the first (``logical`` OFFSET_BEGINNING) or end (OFFSET_END) offsets, looked
        up first, all in one request (``rd_kafka_offsets_for_times``, which takes them as
        times), as aiokafka's seek_to_*() resolve them before they return: ``position()`` tells
        the offset, and a record produced after the call is read (librdkafka would resolve
        OFFSET_END later, past it). False if a partition was revoked meanwhile."""
        self._check_running()
        tps = self._chosen(partitions)
        self._check_assigned(tps)
        if not tps:
            return True
        found = await self._blocking(self._handle.offsets_for_times,
                                     [(tp.topic, tp.partition, logical) for tp in tps], self._request_timeout_ms)
        self._check_running()
        offsets = {}
        for f in found:
            if f.error:
                raise rd_errors.exception(f.error, "list offsets for %s [%d]" % (f.topic, f.partition))
            offsets[TopicPartition(f.topic, f.partition)] = f.offset if f.offset >= 0 else logical
        assigned = self.assignment()
        kept = {tp: offset for tp, offset in offsets.items() if tp in assigned}
        if kept:
            self._seek(kept)
            known = {tp: offset for tp, offset in kept.items() if offset >= 0}
            self._positions.update(known)
            self._store([(tp.topic, tp.partition, offset) for tp, offset in known.items()])
        return len(kept) == len(offsets)

    async def seek_to_committed(self, *partitions: TopicPartition) -> dict[TopicPartition, Optional[int]]:
        """Read from the committed offsets; ``{TopicPartition: committed offset or None}``."""
        self._check_running()
        if self._group_id is None:
            raise IllegalOperation("seek_to_committed() needs a group_id")
        tps = self._chosen(partitions)
        self._check_assigned(tps)
        out = {}
        for tp in tps:
            offset = await self.committed(tp)
            out[tp] = offset
            if offset is not None:
                self.seek(tp, offset)
        return out

    def highwater(self, partition: TopicPartition) -> Optional[int]:
        """The partition's end offset as the last fetch told it (``rd_kafka_get_watermark_offsets``),
        or None before any fetch; of a partition not assigned, ``IllegalStateError`` (aiokafka's
        asserts it is assigned), as ``last_stable_offset()`` and ``last_poll_timestamp()``."""
        self._check_running()
        tp = topic_partition(partition)
        self._check_assigned([tp])
        high = self._handle.get_watermark_offsets(tp.topic, tp.partition)[1]
        return high if high >= 0 else None

    def last_poll_timestamp(self, partition: TopicPartition) -> Optional[int]:
        """When records of the partition last came from librdkafka's queue, in ms since the
        epoch, or None before any came (librdkafka does not tell when a fetch brought nothing)."""
        self._check_running()
        tp = topic_partition(partition)
        self._check_assigned([tp])
        return self._polled.get(tp)

    def last_stable_offset(self, partition: TopicPartition) -> Optional[int]:
        """The partition's last stable offset (the first offset of a transaction still open)
        as the last fetch told it, or None before any fetch. A read_uncommitted consumer gets
        -1, as in aiokafka. librdkafka reports it only in its statistics (``ls_offset``): a
        read_committed consumer asks for them every ``LSO_STATISTICS_INTERVAL_MS`` (1 s;
        ``rdkafka_config={"statistics.interval.ms": ...}`` changes it), so the value is up to
        that old."""
        self._check_running()
        tp = topic_partition(partition)
        self._check_assigned([tp])
        if not self._read_committed:
            return -1 if self.highwater(tp) is not None else None
        stats = self._handle.stats
        if stats is None:
            if not self._handle.stats_enabled:
                raise IllegalOperation("last_stable_offset() reads librdkafka's statistics: leave "
                                       "statistics.interval.ms above 0 in rdkafka_config")
            return None
        try:
            offset = stats["topics"][tp.topic]["partitions"][str(tp.partition)]["ls_offset"]
        except (KeyError, TypeError):
            return None
        return offset if offset >= 0 else None

    async def beginning_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """``{TopicPartition: first offset}``, in one lookup (``rd_kafka_offsets_for_times``)."""
        return await self._watermarks(partitions, OFFSET_BEGINNING)

    async def end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """``{TopicPartition: last offset + 1}``, in one lookup (``rd_kafka_offsets_for_times``)."""
        return await self._watermarks(partitions, OFFSET_END)

    async def _watermarks(self, partitions, logical):
        """The first (``logical`` OFFSET_BEGINNING) or end (OFFSET_END) offsets of
        ``partitions``, all in one ListOffsets lookup (``rd_kafka_offsets_for_times``, which
        takes them as times), whatever the number of partitions (one
        ``rd_kafka_query_watermark_offsets`` per partition takes minutes for a thousand)."""
        self._check_running()
        tps = list(dict.fromkeys(topic_partition(tp) for tp in partitions))
        if not tps:
            return {}
        found = await self._blocking(self._handle.offsets_for_times,
                                     [(tp.topic, tp.partition, logical) for tp in tps], self._request_timeout_ms,
                                     "list offsets")
        out = {}
        for f in found:
            if f.error:
                raise rd_errors.exception(f.error, "list offsets for %s [%d]" % (f.topic, f.partition))
            out[TopicPartition(f.topic, f.partition)] = f.offset
        return {tp: out[tp] for tp in tps}

    async def offsets_for_times(self, timestamps: Mapping[TopicPartition, int]
                                ) -> dict[TopicPartition, Optional[OffsetAndTimestamp]]:
        """``{TopicPartition: OffsetAndTimestamp or None}``: the first offset at or after each
        time (ms) (``rd_kafka_offsets_for_times``), with that time: librdkafka does not tell the
        found record's, which aiokafka gives."""
        self._check_running()
        entries = []
        for tp, ts in timestamps.items():
            tp = topic_partition(tp)
            ts = integer(ts)
            if not isinstance(ts, int) or isinstance(ts, bool) or ts < 0:
                raise ValueError("the timestamp for %s [%d] must be an int >= 0 (ms), not %r"
                                 % (tp.topic, tp.partition, ts))
            entries.append((tp.topic, tp.partition, ts))
        found = await self._blocking(self._handle.offsets_for_times, entries, self._request_timeout_ms)
        wanted = dict(((t, p), ts) for t, p, ts in entries)
        return {TopicPartition(f.topic, f.partition):
                (OffsetAndTimestamp(f.offset, wanted[(f.topic, f.partition)]) if f.offset >= 0 else None)
                for f in found}

    # -- flow control and metadata -------------------------------------------------------------

    def pause(self, *partitions: TopicPartition) -> None:
        """Stop fetching ``partitions`` (``rd_kafka_pause_partitions``); ``getmany()`` returns
        none of their records until :meth:`resume`."""
        self._check_running()
        tps = [topic_partition(tp) for tp in partitions]
        self._check_assigned(tps)
        self._handle.pause([(tp.topic, tp.partition) for tp in tps])
        self._paused.update(tps)
        self._held.difference_update(tps)  # the program's pause now: resume() ends it

    def resume(self, *partitions: TopicPartition) -> None:
        """Fetch ``partitions`` again (``rd_kafka_resume_partitions``)."""
        self._check_running()
        tps = [topic_partition(tp) for tp in partitions]
        self._check_assigned(tps)  # as pause() and aiokafka's resume()
        self._resume(tps)
        self._paused.difference_update(tps)
        self._held.difference_update(tps)
        self._wake()

    def paused(self) -> set[TopicPartition]:
        """The set of partitions paused."""
        return set(self._paused)

    async def _refresh_metadata(self, first=False):
        """The cluster's topics and their partition ids, from ``rd_kafka_metadata`` within
        ``request_timeout_ms`` (``Client._fetch_metadata``; ``first``: start()'s)."""
        md = await self._fetch_metadata(self._request_timeout_ms, first)
        self._metadata = {name: {p.id for p in t.partitions} for name, t in md.topics.items() if not t.error}
        self._unanswered = {name for name, t in md.topics.items() if t.error}
        return self._metadata

    def _raise_security_failure(self):
        """Serve the queue (its error events) and raise a TLS failure or refused login among them."""
        self._fill()
        failure = next((exc for exc in self._errors if security_failure(exc)), None)
        if failure is not None:
            self._errors.remove(failure)
            raise failure from None

    async def topics(self) -> set[str]:
        """The names of the cluster's topics (``rd_kafka_metadata``) but its internal ones, as
        aiokafka's, whatever ``exclude_internal_topics`` says."""
        self._check_running()
        return set(await self._refresh_metadata()) - INTERNAL_TOPICS

    def _learn_topics(self, tps):
        """Ask the metadata again in the background (``rd_kafka_metadata``) when ``tps``, now
        assigned, are of topics it lacks (made since), as aiokafka's consumer does for the
        topics it reads: ``partitions_for_topic()`` tells them then."""
        if any(tp.topic not in self._metadata for tp in tps) and \
                (self._refreshing is None or self._refreshing.done()):
            self._refreshing = self._loop.create_task(self._refresh_quietly({tp.topic for tp in tps}))

    async def _refresh_quietly(self, topics):
        """Refresh the metadata; then, after an ``assign()``, ask for each of ``topics`` it
        still lacks on its own (a cluster leaves a topic the client may not describe out of
        its answer for every topic): one the client may not read raises
        ``TopicAuthorizationFailedError`` from ``getmany()``, as aiokafka's fetcher passes it
        on, where librdkafka, which never fetches it, says nothing."""
        try:
            await self._refresh_metadata()
            for name in sorted(topics - set(self._metadata)) if self._manual else ():
                found = (await self._blocking(self._handle.metadata, name, self._request_timeout_ms)).topics.get(name)
                if found is not None and found.error == TopicAuthorizationFailed.code:
                    self._errors.append(rd_errors.exception(found.error, "topic %r" % name))
                    self._wake()
        except KafkaError as exc:  # the next assignment asks again
            log.debug("metadata for the topics assigned: %s", exc)

    def partitions_for_topic(self, topic: str) -> Optional[set[int]]:
        """The partition ids of ``topic`` as the last metadata told them (asked again when a
        topic it lacked is assigned), or None."""
        self._check_running()
        return self._metadata.get(topic)


def _as_aiokafkas(exc):
    """``exc`` with aiokafka's ``args``: an ``OffsetOutOfRangeError`` carries
    ``{TopicPartition: offset}`` first (then pyrdk's message), as aiokafka's does."""
    if isinstance(exc, OffsetOutOfRangeError) and getattr(exc, "topic", None) and exc.partition >= 0:
        exc.args = ({TopicPartition(exc.topic, exc.partition): exc.offset},) + exc.args
    return exc


async def _call(consumer, fn, arg, what):
    """Call a listener's method (awaited when it is a coroutine function); what it raises is
    logged, as aiokafka does, so that the rebalance goes on. Meanwhile ``_in_listener_of``
    tells the consumer's calls that they come from the listener."""
    running = [consumer]
    token = _in_listener_of.set(running)
    try:
        result = fn(arg)
        if asyncio.iscoroutine(result):
            await result
    except asyncio.CancelledError:
        # stop()'s cancel (it closes the consumer first), or one of the task itself, which
        # Python 3.11 tells (Task.cancelling); before 3.11, the task's own cancel, a loop's
        # shutdown, is taken for the listener's: the rebalance goes on to its (bounded) end
        cancelling = getattr(asyncio.current_task(), "cancelling", None)
        if consumer._closed or (cancelling is not None and cancelling()):
            raise
        # Not stop()'s: a future the listener awaited was cancelled. Raised on, it would end the
        # rebalance's task before rd_kafka_assign, and the consumer would wait for an
        # assignment forever, without an error; aiokafka's listener errors are logged.
        log.error("the rebalance listener's %s raised CancelledError (the consumer did not cancel it); "
                  "the rebalance goes on", what, exc_info=True)
    except Exception:
        log.exception("the rebalance listener's %s raised", what)
    finally:
        running.clear()  # tasks the method started and left running are no longer the listener's
        _in_listener_of.reset(token)


__all__ = ["AIOKafkaConsumer"]
