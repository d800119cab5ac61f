"""ManagedBalancedConsumer: pykafka's balanced consumer coordinated by the broker's group
protocol, on librdkafka's group consumer (``rd_kafka_subscribe`` and the rebalance callback).

The broker picks the group's leader, the leader's librdkafka assigns partitions with the
``membership_protocol``'s strategy, and each member's rebalance callback runs in the thread
that calls ``consume()``. There the consumer, before partitions are revoked, commits the
offsets it holds for them (the last message it returned, + 1) and forgets the messages it
fetched but did not return; the next owner starts from that commit. With commit-after-process
(every message returned was processed before the next ``consume()``) nothing is lost and
nothing is handed to two members, across rebalances, crashes (from the last commit) and
restarts.

Everything else (consume, batches, offsets, deserializer) is :class:`pyrdk.consumer.Consumer`'s,
as for :class:`SimpleConsumer`, over the partitions the group gives this member.

When the group is rebalancing, a commit may be refused (``UNKNOWN_MEMBER_ID`` — Tansu answers
it in concurrent rebalances —, ``ILLEGAL_GENERATION``, ``REBALANCE_IN_PROGRESS``). The
consumer does not raise then: librdkafka rejoins the group by itself, and the refused
offsets become the start offsets (and are committed) if the member gets those partitions
back; otherwise their next owner starts from the last commit that succeeded (at least once).
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Optional, Union

from pyrdk.common import INT32_MAX, Message, OffsetType, check_bool, check_config, check_int, weak_method
from pyrdk.consumer import (BATCH, SLICE_MS, Consumer, check_group, check_isolation_level, commit_metadata,
                            held_offset, logical, partition_id_of)
from pyrdk.exceptions import (AssignmentLost, ConsumerStoppedException, IllegalGeneration, KafkaException,
                              MaxPollExceeded, RebalanceInProgress, UnknownMemberId)
from pyrdk.membershipprotocol import GroupMembershipProtocol, RangeProtocol
from pyrdk.partition import Partition
from pyrdk.rd import conf
from pyrdk.rd.callbacks import Callbacks
from pyrdk.rd.handle import Handle
from pyrdk.rd.partitions import OFFSET_INVALID

if TYPE_CHECKING:
    from pyrdk.cluster import Cluster
    from pyrdk.topic import Topic

log = logging.getLogger(__name__)

STRATEGIES = ("range", "roundrobin", "cooperative-sticky")
GROUP_PROTOCOLS = ("classic", "consumer")
# KIP-848's broker-side assignors for the membership protocols (group.remote.assignor)
REMOTE_ASSIGNORS = {"range": "range", "roundrobin": "uniform", "cooperative-sticky": "uniform"}
ZOOKEEPER_ONLY = ("zookeeper_connect", "zookeeper_hosts", "zookeeper",
                  "zookeeper_connection_timeout_ms")
# The group refuses a commit with these while it rebalances...
REBALANCING = (IllegalGeneration, UnknownMemberId, RebalanceInProgress)
# ...and these events tell a member it lost its assignment (it rejoins by itself).
REJOINING = REBALANCING + (MaxPollExceeded, AssignmentLost)


def _strategy(membership_protocol):
    """librdkafka's ``partition.assignment.strategy`` for a membership protocol or its name."""
    name = membership_protocol
    if isinstance(membership_protocol, GroupMembershipProtocol):
        name = membership_protocol.protocol_name
    if isinstance(name, bytes):
        name = name.decode()
    if not isinstance(name, str):
        raise TypeError("membership_protocol must be RangeProtocol, RoundRobinProtocol, "
                        "CooperativeStickyProtocol or one of %s, not %r" % (STRATEGIES, membership_protocol))
    if name not in STRATEGIES:
        raise ValueError("membership_protocol %r is not one librdkafka can assign with; use one of %s"
                         % (name, STRATEGIES))
    return name


class ManagedBalancedConsumer(Consumer):
    """A member of a consumer group balanced by the broker (pykafka 2.8's signature, and
    ``topic.get_balanced_consumer(consumer_group, managed=True, **kwargs)``).

    :param consumer_group: bytes or str (``group.id``)
    :param membership_protocol: ``RangeProtocol`` (default), ``RoundRobinProtocol``,
        ``CooperativeStickyProtocol``, or the name ``"range"``, ``"roundrobin"`` or
        ``"cooperative-sticky"`` (``partition.assignment.strategy``). With
        cooperative-sticky, a rebalance revokes only the partitions that move.
    :param heartbeat_interval_ms: ``heartbeat.interval.ms``
    :param session_timeout_ms: ``session.timeout.ms``: a member silent this long leaves the
        group (pykafka sent 30000, its default)
    :param max_poll_interval_ms: ``max.poll.interval.ms``: a member that does not call
        ``consume()`` this long leaves the group; it is also the rebalance timeout the
        broker waits for members to rejoin
    :param group_instance_id: ``group.instance.id``, static membership: a member that
        comes back with the same id within ``session_timeout_ms`` gets its partitions back
        without a rebalance (and ``stop()`` does not leave the group)
    :param post_rebalance_callback: as pykafka: ``(consumer, old_offsets, new_offsets)``
        called when partitions are assigned, with ``held_offsets`` before the rebalance and
        the new partitions' held offsets at their start (as pykafka reports them: the
        committed offset - 1, or ``auto_offset_reset``'s offset - 1; -2 for -1);
        it may return ``{partition_id: offset}`` to start from instead (``offset`` is the
        last consumed one, or an ``OffsetType``). Its exceptions are raised by ``consume()``.
    :param listener: an object with ``on_partitions_revoked(partitions)`` (called before
        they are revoked, after their offsets are committed) and
        ``on_partitions_assigned(partitions)`` (called once they are assigned), as in
        kafka-python; ``partitions`` is a list of :class:`Partition`. Called in the
        thread that calls ``consume()``; their exceptions are raised there.
    :param isolation_level: ``isolation.level``: ``"read_committed"`` (the default, as
        librdkafka's) or ``"read_uncommitted"``
    :param pre_revoke_callback: ``f(consumer, partition_ids) -> [(partition_id, offset)]``
        or None, called before a rebalance revokes partitions (and at ``stop()`` with
        auto-commit), in place of committing their held offsets: the member commits the
        pairs it returns (each offset the next one to read; ``[]`` commits nothing), or, for
        None, the held offsets as usual. For programs that finish messages out of order,
        such as :class:`pyrdk.spout.KafkaSpout`. Called in the thread that calls
        ``consume()``; its exceptions are raised there (nothing is committed then).
    :param group_protocol: ``"classic"`` (default: JoinGroup and SyncGroup, the leader's
        librdkafka assigns) or ``"consumer"``, Kafka 4's consumer group protocol (KIP-848,
        ``group.protocol=consumer``): the broker assigns, with ``group.remote.assignor``
        ``"range"`` for ``RangeProtocol`` and ``"uniform"`` for the others; rebalances
        are incremental; ``heartbeat_interval_ms`` and ``session_timeout_ms`` are then the
        broker's (``group.consumer.*``) and these two arguments are not sent.
        ``rdkafka_config={"group.protocol": "consumer"}`` chooses it too.
    :param rdkafka_config: any librdkafka properties, applied last
    :param statistics_interval_ms: ``statistics.interval.ms`` (None: the client's); see ``stats()``
    :param stats_callback: called with each statistics snapshot, a dict (None: the client's)

    The other parameters are :class:`pyrdk.simpleconsumer.SimpleConsumer`'s. ``auto_commit_enable`` commits
    every ``auto_commit_interval_ms`` and at ``stop()``; held offsets are committed before
    a rebalance revokes partitions whatever its value, as pykafka does.
    ``num_consumer_fetchers``, ``rebalance_max_retries``, ``rebalance_backoff_ms``,
    ``compacted_topic`` and ``use_rdkafka`` are accepted and unused: librdkafka fetches
    and rejoins by itself.

    The group is joined in the background: ``partitions`` fills in during ``consume()``.
    """

    _columns_ok = False  # a rebalance during a fetch may make some of the batch stale: _fetch drops them

    def __init__(self, topic: Topic, cluster: Cluster, consumer_group: Union[str, bytes],
                 fetch_message_max_bytes: int = 1024 * 1024, num_consumer_fetchers: int = 1,
                 auto_commit_enable: bool = False, auto_commit_interval_ms: int = 60 * 1000,
                 queued_max_messages: int = 2000, fetch_min_bytes: int = 1, fetch_error_backoff_ms: int = 500,
                 fetch_wait_max_ms: int = 100, offsets_channel_backoff_ms: int = 1000,
                 offsets_commit_max_retries: int = 5, auto_offset_reset: OffsetType = OffsetType.EARLIEST,
                 consumer_timeout_ms: int = -1, rebalance_max_retries: int = 5, rebalance_backoff_ms: int = 2 * 1000,
                 auto_start: bool = True, reset_offset_on_start: bool = False,
                 post_rebalance_callback: Optional[Callable[[Any, dict[int, int], dict[int, int]], Any]] = None,
                 use_rdkafka: Any = False, compacted_topic: bool = True, heartbeat_interval_ms: int = 3000,
                 membership_protocol: GroupMembershipProtocol = RangeProtocol,
                 deserializer: Optional[Callable[[Any, Any], tuple[Any, Any]]] = None,
                 reset_offset_on_fetch: bool = True, session_timeout_ms: int = 30000,
                 max_poll_interval_ms: int = 300000, group_instance_id: Optional[str] = None, listener: Any = None,
                 isolation_level: str = "read_committed",
                 pre_revoke_callback: Optional[Callable[[Any, list[int]], Iterable[tuple[int, int]]]] = None,
                 rdkafka_config: Optional[dict[str, Any]] = None, statistics_interval_ms: Optional[int] = None,
                 stats_callback: Optional[Callable[[dict[str, Any]], None]] = None, group_protocol: str = "classic",
                 **kwargs: Any) -> None:
        zookeeper = sorted(k for k in kwargs if k in ZOOKEEPER_ONLY)
        if zookeeper:
            raise ValueError("%s: ZooKeeper options do not apply to the managed consumer "
                             "(managed=True: the broker coordinates the group); drop them, or "
                             "use managed=False for ZooKeeper" % ", ".join(zookeeper))
        if kwargs:
            raise TypeError("ManagedBalancedConsumer got unexpected keyword arguments: %s"
                            % ", ".join(sorted(kwargs)))
        if not isinstance(consumer_group, (bytes, str)) or not consumer_group:
            raise TypeError("consumer_group must be a non-empty bytes or str, not %r" % (consumer_group,))
        consumer_group = check_group(consumer_group)
        if post_rebalance_callback is not None and not callable(post_rebalance_callback):
            raise TypeError("post_rebalance_callback must be callable (consumer, old_offsets, new_offsets)")
        if listener is not None and not (callable(getattr(listener, "on_partitions_revoked", None))
                                         and callable(getattr(listener, "on_partitions_assigned", None))):
            raise TypeError("listener must have on_partitions_revoked(partitions) and "
                            "on_partitions_assigned(partitions) methods")
        if pre_revoke_callback is not None and not callable(pre_revoke_callback):
            raise TypeError("pre_revoke_callback must be callable (consumer, partition_ids) -> offsets")
        if group_instance_id is not None and (not isinstance(group_instance_id, str) or not group_instance_id):
            raise TypeError("group_instance_id must be a non-empty str, not %r" % (group_instance_id,))
        rdkafka_config = check_config("rdkafka_config", rdkafka_config)
        for name, value in (("heartbeat_interval_ms", heartbeat_interval_ms),
                            ("session_timeout_ms", session_timeout_ms),
                            ("max_poll_interval_ms", max_poll_interval_ms)):
            check_int(name, value, 1, INT32_MAX)
        # as librdkafka's string (bytes as any property's value): "b'classic'" is no protocol
        group_protocol = conf.to_str("group.protocol", rdkafka_config.get("group.protocol", group_protocol))
        if group_protocol not in GROUP_PROTOCOLS:
            raise ValueError("group_protocol must be one of %s, not %r" % (GROUP_PROTOCOLS, group_protocol))
        strategy = _strategy(membership_protocol)
        if group_protocol == "consumer":  # the broker assigns and times the session (KIP-848)
            config = {"group.protocol": "consumer", "group.remote.assignor": REMOTE_ASSIGNORS[strategy],
                      "max.poll.interval.ms": max_poll_interval_ms}
        else:
            config = {
                "partition.assignment.strategy": strategy,
                "heartbeat.interval.ms": heartbeat_interval_ms,
                "session.timeout.ms": session_timeout_ms,
                "max.poll.interval.ms": max_poll_interval_ms,
            }
        config["isolation.level"] = check_isolation_level(isolation_level)
        if group_instance_id is not None:
            config["group.instance.id"] = group_instance_id
        config.update(rdkafka_config)
        super().__init__(
            topic, cluster, consumer_group, fetch_message_max_bytes, auto_commit_enable,
            auto_commit_interval_ms, queued_max_messages, fetch_min_bytes, fetch_error_backoff_ms,
            fetch_wait_max_ms, offsets_channel_backoff_ms, offsets_commit_max_retries, auto_offset_reset,
            consumer_timeout_ms, reset_offset_on_start, deserializer, reset_offset_on_fetch,
            consumer_group.decode(), config, statistics_interval_ms, stats_callback)
        self._post_rebalance_callback = post_rebalance_callback
        self._pre_revoke_callback = pre_revoke_callback
        self._listener = listener
        self._started: set[int] = set()  # partitions assigned since start(): reset_offset_on_start is done
        self._refused: dict[int, int] = {}  # partition id -> next offset whose commit the group refused
        self._revoked: set[int] = set()  # partitions revoked during the current fetch
        self._before: Optional[dict[int, int]] = None  # held_offsets when the current rebalance began
        self._ever_assigned = False  # the group gave this member an assignment once: held_offsets is a dict
        self._stopped_held: Optional[dict[int, int]] = None  # held_offsets when stop() began
        self._told_at_stop = False
        self._assigned: list[Partition] = []  # assigned partitions whose listener call is due
        # {partition id: start offset} to commit once assigned: the starts looked up or chosen, and
        # refused offsets that became starts -- those only, never the positions of partitions kept
        # through a cooperative rebalance (past messages the program has not finished)
        self._commit_due: dict[int, int] = {}
        self._metadata: Optional[tuple[str, bytes]] = None  # (member id, commit metadata naming it)
        self._join_timeout_ms = session_timeout_ms  # how long after start() iteration waits for the first assignment
        # consume() polls librdkafka at least this often while it hands out buffered messages
        # (a third of max.poll.interval.ms, rdkafka_config's if it gives one)
        self._poll_every_s = int(conf.to_str("max.poll.interval.ms", config["max.poll.interval.ms"])) / 3000.0
        self._polled_at = 0.0  # time.monotonic() of the last poll of librdkafka (_fetch)
        self._join_deadline = 0.0
        if check_bool("auto_start", auto_start):
            self.start()

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        """Create the librdkafka consumer and join the group (``rd_kafka_subscribe``)."""
        if self._running:
            return
        self._outage = self._cluster.broker_outage()
        handle = Handle("consumer", self._config,
                        # the callbacks' registry must not keep a consumer the program let go of
                        Callbacks(on_error=weak_method(self, "_on_error", None),
                                  on_rebalance=weak_method(self, "_on_rebalance", None)),
                        closed_exc=ConsumerStoppedException, stats_callback=self._stats_callback)
        try:
            handle.subscribe([self._topic_name])
        except BaseException:
            handle.close()
            raise
        self._forget(list(self._core.next_offsets()))
        self._set_partitions({})
        self._started.clear()
        self._stopped_held = None
        self._told_at_stop = False  # stop() told the listener of the final revocation
        self._ever_assigned = False  # held_offsets is None again until this membership's assignment
        self._join_deadline = time.monotonic() + self._join_timeout_ms / 1000.0
        self._open(handle)

    def stop(self) -> None:
        """Commit held offsets if auto-commit is on (as SimpleConsumer does), call the
        listener's ``on_partitions_revoked`` (it may still commit), then leave the group and
        close the consumer (``rd_kafka_consumer_close``; not when its last commit got no
        answer, and with ``group_instance_id`` the member stays in the group until its
        session times out).
        What ``pre_revoke_callback`` or the listener raised meanwhile is raised here, once
        the consumer is closed. Once stopped, it finishes a close an interrupt cut short
        (the member then leaves the group), else does nothing (another thread's stop()
        meanwhile is waited for)."""
        with self._stop_lock:
            if not self._running:
                self._finish_interrupted_stop()
                return
            self._handle.check_close()  # not from inside a callback: before anything changes
            self._stopped_held = self.held_offsets  # the final revocation drops them
            try:
                if self._auto_commit_enable:
                    self._commit_held(sorted(self._core.next_offsets()), "stop")
            finally:
                # The listener hears of the final revocation now, while the consumer may still
                # commit, as it could before any other revocation; the closing handle cannot.
                self._told_at_stop = True
                self._notify_assigned_safely()
                try:
                    self._tell_revoked(sorted(self._held))
                except BaseException as exc:
                    self._calls.crash(exc)
                try:
                    self._close()  # serves the final revocation
                finally:  # a Ctrl-C its callbacks met is raised once the handle is closed: after this
                    self._set_partitions({})
                    self._forget(list(self._core.next_offsets()))
            kept = self._calls.take()  # no consume() follows: what the callbacks raised is raised here
            for _, also in kept[1:]:
                log.error("%r: a callback also raised while it stopped: %r", self, also)
            if kept:
                raise kept[0][1]

    def __iter__(self) -> Iterator[Message]:
        """As the consumer's, once the group has given this member its first assignment since
        ``start()`` (waited for until ``session_timeout_ms`` after ``start()``): pykafka's
        ``start()`` returned once the member had joined, so a new member's loop with a
        ``consumer_timeout_ms`` did not end, empty, while the group was forming. Each message
        comes from ``consume()``, which polls librdkafka while it hands out buffered ones."""
        self._check_running()
        if self._consumer_timeout_ms >= 0:
            while not self._ever_assigned and not len(self._core) and time.monotonic() < self._join_deadline:
                self._fetch(BATCH, SLICE_MS)
        return iter(self._consume_blocking, None)  # not the core's iterator, which polls nothing

    def _commit_metadata(self):
        """pykafka's commit metadata, naming this member by its id in the group."""
        member = self._handle.memberid() or ""
        if self._metadata is None or self._metadata[0] != member:
            self._metadata = (member, commit_metadata(member))
        return self._metadata[1]

    @property
    def _partitions(self):
        """pykafka's shorthand: the set of ``Partition`` this member reads now (a
        compatibility shim, as the ZooKeeper consumer's)."""
        return set(self.partitions.values())

    def _raise_worker_exceptions(self):
        """Raise what the rebalance callbacks met, as ``consume()`` would (pykafka's name, which
        its wait-for-rebalancing recipe calls on every member)."""
        self._calls.check()

    @property
    def held_offsets(self) -> Optional[dict[int, int]]:  # type: ignore[override]
        """``{partition_id: last offset returned}`` of the partitions held, or None before the
        group's first assignment to this member since ``start()``; after ``stop()``, those
        held when it stopped (as pykafka's, and the ZooKeeper consumer's)."""
        if not self._running and self._stopped_held is not None:
            return dict(self._stopped_held)
        return super().held_offsets if self._ever_assigned else None

    @property
    def member_id(self) -> Optional[str]:
        """This member's id in the group (``rd_kafka_memberid``); None before it joined."""
        self._check_running()
        return self._handle.memberid() or None

    # -- rebalancing ---------------------------------------------------------------------------

    def _on_rebalance(self, kind, tps):
        """The rebalance callback's handler; runs before librdkafka's assignment changes.
        It never raises into librdkafka: an error (a listener's, say) is held and raised by
        ``consume()`` once the messages fetched with it are safe in the buffer."""
        pids = sorted(tp.partition for tp in tps if tp.topic == self._topic_name)
        try:
            if self._before is None:
                self._before = self.held_offsets
            if kind == "revoke":
                self._revoke(pids)
                return None
            return self._assign(pids)
        except BaseException as exc:
            self._calls.crash(exc)
            return None

    def _revoke(self, pids):
        closing = self._handle.closing
        self._notify_assigned_safely()
        if not closing:
            self._commit_held(pids, "revocation")
        try:
            if not (closing and self._told_at_stop):
                self._tell_revoked(pids)
        finally:
            self._drop_buffered(pids)
            self._revoked.update(pids)
            self._unpause(pids)
            self._set_partitions({pid: p for pid, p in self._held.items() if pid not in pids})
            self._forget(pids)

    def _unpause(self, pids):
        """End the program's pause of those of ``pids`` it paused, as they leave the assignment
        (``rd_kafka_resume_partitions``): librdkafka keeps a partition's pause across
        assignments, where pyrdk's lasts only while the partition stays (``_forget`` drops
        it). Left paused, a partition assigned to this member again would never be fetched,
        with nothing to say so (a spout's back-pressure pauses its partitions)."""
        paused = [pid for pid in pids if pid in self._paused]
        if paused:
            try:
                self._handle.resume([(self._topic_name, pid) for pid in paused])
            except KafkaException as exc:  # not known to librdkafka: nothing paused there
                log.debug("resume of partitions leaving the assignment: %s", exc)

    def _assign(self, pids):
        """Take ``pids``; returns their start offsets for ``rd_kafka_assign``."""
        known = self._topic.partitions
        if any(pid not in known for pid in pids):  # the topic grew: asked through the consumer's
            # own handle, which serves on after the client is closed
            try:
                self._cluster.refresh_topic(self._topic, self._handle)
            except KafkaException as exc:
                log.warning("could not refresh the partitions of topic %s (%s)", self._topic_name, exc)
            known = self._topic.partitions
            missing = [pid for pid in pids if pid not in known]
            if missing:  # librdkafka reads them all the same: held, their leader unknown for now
                log.warning("partitions %s of topic %s are assigned but not in its metadata yet; their "
                            "leader is unknown until a later refresh", missing, self._topic_name)
                known = dict(known)
                known.update((pid, Partition(self._topic, pid, None, [], [])) for pid in missing)
        refused = self._take_refused(pids)
        fresh = [pid for pid in pids if pid not in refused]
        reset = [pid for pid in fresh if self._reset_offset_on_start and pid not in self._started]
        try:
            # As pykafka's member starts a SimpleConsumer: committed offsets, else
            # auto_offset_reset looked up and committed (once assigned, below). The offset
            # fetch is retried as SimpleConsumer.start() retries it: librdkafka's own, left to
            # it below, leaves a partition it fails for unfetched until it is unassigned.
            starts, commit = self._start_offsets(self._handle, fresh, reset=reset)
        except KafkaException as exc:
            log.warning("could not read the committed offsets (%s); librdkafka starts the partitions", exc)
            starts = {pid: logical(self._auto_offset_reset) if pid in reset else OFFSET_INVALID for pid in fresh}
            commit = []
            for pid in fresh:
                self._core.set_next(pid, None)
        for pid in refused:
            starts[pid] = refused[pid]
            self._core.set_next(pid, refused[pid])
        self._commit_due.update(commit)  # committed once assigned
        self._commit_due.update(refused)
        partitions = dict(self._held)
        for pid in pids:
            partitions[pid] = known[pid]
            self._started.add(pid)
        self._set_partitions(partitions)
        self._ever_assigned = True
        before, self._before = self._before or {}, None
        self._assigned.extend(known[pid] for pid in pids)
        if self._post_rebalance_callback is not None:
            try:
                self._call_post_rebalance(before, starts)
            except BaseException as exc:
                self._calls.crash(exc)
        return [(self._topic_name, pid, starts[pid]) for pid in pids]

    def _take_refused(self, pids):
        """``{pid: start}`` for the partitions of ``pids`` whose last commit was refused:
        the refused offset, unless another member committed a later one meanwhile. The
        other refused offsets are dropped: their partitions moved on."""
        refused = {pid: self._refused[pid] for pid in pids if pid in self._refused}
        self._refused.clear()
        if refused:
            try:
                committed = self._handle.committed([(self._topic_name, pid) for pid in sorted(refused)])
            except KafkaException as exc:
                log.warning("could not read committed offsets (%s); starting from the refused ones", exc)
                committed = []
            for tp in committed:
                refused[tp.partition] = max(refused[tp.partition], tp.offset)
        return refused

    def _call_post_rebalance(self, before, starts):
        """pykafka's post_rebalance_callback, given the new partitions' held offsets as
        pykafka reports them; the offsets it returns become start offsets, as pykafka's
        ``reset_offsets`` makes them: an ``OffsetType`` looked up with ListOffsets, an offset
        past the end of the log moved to ``auto_offset_reset``, and each committed once assigned."""
        positions = self._core.next_offsets()
        new = {pid: held_offset(positions.get(pid)) for pid in starts}
        chosen = self._post_rebalance_callback(self, before, new)
        if chosen and not isinstance(chosen, dict):
            raise TypeError("post_rebalance_callback must return {partition_id: offset} or None, not %r" % (chosen,))
        moved, lookups = {}, {}
        for pid, offset in (chosen or {}).items():
            pid = partition_id_of(pid, self._topic)  # a Partition of another topic is refused
            if isinstance(pid, bool) or pid not in starts:
                raise ValueError("post_rebalance_callback returned partition %r, not one assigned "
                                 "to this member (%s)" % (pid, sorted(starts)))
            if offset in (OffsetType.EARLIEST, OffsetType.LATEST):
                lookups[pid] = int(offset)
            elif isinstance(offset, int) and not isinstance(offset, bool) and offset >= -1:
                moved[pid] = offset + 1
            else:
                raise ValueError("post_rebalance_callback returned offset %r for partition %d: use "
                                 "the last consumed offset or an OffsetType" % (offset, pid))
        for pid, nxt in moved.items():
            self._unverified[pid] = nxt  # past the end of the log: moved at the next fetch
        moved.update(self._resolve(self._handle, lookups))
        for pid in lookups:
            self._unverified.pop(pid, None)  # looked up: within the log (not the start checked before)
            if pid not in moved:  # the lookup failed: librdkafka resolves it, the position unknown
                moved[pid] = logical(lookups[pid])
        for pid, start in moved.items():
            starts[pid] = start
            self._core.set_next(pid, start if start >= 0 else None)
        # committed once assigned, as pykafka's reset_offsets commits
        self._commit_due.update((pid, start) for pid, start in moved.items() if start >= 0)

    def _notify_assigned_safely(self):
        """The listener's due ``on_partitions_assigned`` call before a revocation (assigned
        before revoked, always); what it raises is raised by the next ``consume()``."""
        try:
            self._notify_assigned()
        except BaseException as exc:
            self._calls.crash(exc)

    def _tell_revoked(self, pids):
        """The listener's ``on_partitions_revoked`` of those of ``pids`` held: still held,
        so it may commit them, as kafka-python's."""
        revoked = [self._held[pid] for pid in pids if pid in self._held]
        if self._listener is not None and revoked:
            self._listener.on_partitions_revoked(revoked)

    def _notify_assigned(self):
        assigned, self._assigned = self._assigned, []
        if self._listener is not None and assigned:
            self._listener.on_partitions_assigned(assigned)

    def consume(self, block: bool = True, unblock_event: Optional[threading.Event] = None) -> Optional[Message]:
        """As the consumer's; librdkafka is polled meanwhile, even while buffered messages are
        handed out, so that a member calling it keeps its place in the group (see
        ``max_poll_interval_ms``)."""
        self._serve_group()
        return super().consume(block, unblock_event)

    def _check_batch(self, max_messages: int, timeout_ms: int) -> None:
        super()._check_batch(max_messages, timeout_ms)
        self._serve_group()

    def _serve_group(self):
        """Poll librdkafka (a fetch that waits for nothing and takes one message at most) if
        it was not polled for a third of ``max_poll_interval_ms``, even with messages
        buffered. librdkafka's ``max.poll.interval.ms`` counts from its last poll, and a
        consume() that hands out a buffered message polls nothing: a member working through
        its buffer (up to a batch of BATCH messages) keeps its place in the group this way,
        and rebalance callbacks run while the buffer lasts."""
        if self._running and len(self._core) and time.monotonic() - self._polled_at >= self._poll_every_s:
            try:
                self._fetch(1, 0)
            except ConsumerStoppedException:
                if not self._closed_at_exit():
                    raise

    def _fetch(self, max_messages, timeout_ms):
        """Consumer's fetch, minus what a rebalance during it made stale: messages of
        partitions revoked meanwhile (fetched before the revocation; if the partition came
        back, it is rewound to the first of them). A callback's error is raised once the
        messages fetched with it are safe in the buffer."""
        self._polled_at = time.monotonic()
        self._revoked = set()
        try:
            super()._fetch(max_messages, timeout_ms)
        except REJOINING as exc:
            log.warning("%s; the member rejoins the group", exc)
        finally:
            if self._revoked:
                self._drop_stale(self._revoked)
        if self._commit_due:
            due, self._commit_due = self._commit_due, {}
            due = [(pid, offset) for pid, offset in sorted(due.items()) if pid in self._held]
            if due:
                self.commit_offsets(due)
        self._notify_assigned()
        self._calls.check()

    def _drop_stale(self, revoked):
        rewind = {}
        for msg in self._drop_buffered(revoked):
            if msg.partition_id in self._held:
                rewind[msg.partition_id] = min(msg.offset, rewind.get(msg.partition_id, msg.offset))
        if rewind:
            self._handle.seek([(self._topic_name, pid, offset) for pid, offset in sorted(rewind.items())])

    # -- offsets -------------------------------------------------------------------------------

    def commit_offsets(self, partition_offsets: Optional[Iterable[tuple[Union[Partition, int], Optional[int]]]] = None
                       ) -> None:
        """Commit offsets for the group (``rd_kafka_commit``), as SimpleConsumer does. A
        commit the group refuses because it is rebalancing is kept for after the rejoin
        (see the module's documentation) instead of raised."""
        if partition_offsets is not None and self._running:  # once: a generator is read once
            partition_offsets = self._offsets_to_commit_given(partition_offsets)
        try:
            super().commit_offsets(partition_offsets)
        except REBALANCING as exc:
            self._keep_refused(partition_offsets, exc)

    def _commit_held(self, pids, why):
        """Commit the held offsets of ``pids`` (or what ``pre_revoke_callback`` chooses)
        before they go; never raises, so the revocation goes on: a broker or group error is
        logged (the next owner then starts from the last commit), and what the callback
        raised, or offsets it chose that cannot be committed, are kept for the caller's next
        call (nothing is committed then)."""
        try:
            offsets = self._offsets_to_commit(pids)
        except BaseException as exc:
            self._calls.crash(exc)
            return
        if not offsets:
            return
        try:
            Consumer.commit_offsets(self, offsets)
        except REBALANCING as exc:
            self._keep_refused(offsets, exc)
        except (TypeError, ValueError) as exc:  # only the callback's pairs can be refused so
            error = ValueError("pre_revoke_callback returned offsets that cannot be committed "
                               "(%s): %s" % (offsets, exc))
            error.__cause__ = exc
            self._calls.crash(error)
        except KafkaException as exc:
            log.warning("commit before %s failed (%s); the next owner starts from the last "
                        "committed offsets", why, exc)

    def _offsets_to_commit(self, pids):
        """``[(pid, next offset)]`` to commit before ``pids`` go: the callback's choice, or
        the held offsets. Raises what the callback raised, TypeError for an answer that is
        not pairs, or ValueError for a ``Partition`` of another topic in it."""
        if self._pre_revoke_callback is not None:
            chosen = self._pre_revoke_callback(self, list(pids))
            if chosen is not None:
                try:
                    pairs = [(p, offset) for p, offset in chosen]
                except (TypeError, ValueError):
                    raise TypeError("pre_revoke_callback must return [(partition_id, offset), ...] "
                                    "or None, not %r" % (chosen,)) from None
                return [(partition_id_of(p, self._topic), offset) for p, offset in pairs]
        held = self._core.next_offsets()
        return [(pid, held[pid]) for pid in pids if held.get(pid) is not None]

    def _keep_refused(self, partition_offsets, exc):
        if partition_offsets is None:
            partition_offsets = [(pid, nxt) for pid, nxt in self._core.next_offsets().items() if nxt is not None]
        for p, offset in partition_offsets:
            self._refused[getattr(p, "id", p)] = offset
        log.warning("commit refused while the group rebalances (%s); kept for after the rejoin", exc)

    def __repr__(self) -> str:
        return "<pyrdk.managedbalancedconsumer.ManagedBalancedConsumer at %#x (topic=%s, " \
               "consumer_group=%s)>" % (id(self), self._topic_name, self._consumer_group)
