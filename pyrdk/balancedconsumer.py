"""BalancedConsumer: members of a consumer group split a topic's partitions through
ZooKeeper (pykafka's ``BalancedConsumer``, kazoo for ZooKeeper, a ``SimpleConsumer`` for
the partitions held).

The znodes are pykafka's, so pyrdk and pykafka members can share a group:

- ``/consumers/<group>/ids/<hostname>:<uuid4>``: one ephemeral node per member; its value
  is the topic name.
- ``/consumers/<group>/owners/<topic>/<leader id>-<partition id>``: one ephemeral node per
  owned partition; its value is the owner's id.

Offsets are committed to Kafka under the group, as pykafka does.

How a member keeps ownership safe:

1. A coordinator thread does every ZooKeeper write. Watches (group members, ownership
   nodes) and connection-state changes only wake it up.
2. A rebalance lists the members whose id node names this topic, and runs the membership
   protocol's ``decide_partitions`` on them (pykafka's range or round-robin). Before the
   member gives a partition up, it stops reading it and commits the offsets of the
   messages the program is done with. Then it deletes the node, but only if the node
   belongs to its own session. A node holding its id that it does not count as held (a
   delete ZooKeeper did not answer in time) is deleted too.
3. To claim its partitions, a member reads the ownership nodes and the version of their
   parent. If a node of partition ``p`` exists, whatever leader id its name holds, ``p`` is
   taken (``PartitionOwnedError``: retried at once, then after ``rebalance_backoff_ms``,
   growing). The member creates its nodes for the others in transactions of up to 200
   nodes, each with a write to the parent at the version it read (then at the version its
   last transaction left). If another member claimed anything in between, the transaction
   fails and the member looks again. So two pyrdk members never hold nodes for one
   partition, not even under different leader ids. (pykafka's node names embed the leader
   id, so after a leader change two pykafka members can own one partition under two
   names.) pykafka members skip that transaction: a pyrdk member gives way when a pykafka
   member's node for its partition is older (a lower ``czxid``) than its own. pykafka on
   Python 3 makes its nodes under ``owners/b'<topic>'`` (it formats the bytes topic name
   into the path): those count too.
4. Messages are handed out only under a lease. Every third of the session timeout, the
   coordinator checks that the session is the one that created the ownership nodes and that
   each node still holds this member's id. The lease then runs for half the session timeout
   from the moment the check was sent. ZooKeeper cannot expire the session before that
   moment plus the session timeout. When the connection is lost, the lease ends at once.
   While there is no lease, ``consume()`` waits instead of handing out messages.
5. If the session expired, its ephemeral nodes are gone. The member stops reading,
   registers again in the new session and rebalances. If ZooKeeper itself restarts, the
   member waits for the session to come back and goes on where it was.
6. The message last returned by ``consume()`` counts as done once the program calls
   ``consume()`` or ``commit_offsets()`` again. Commits made at a rebalance or at ``stop()``
   never go past a message the program still holds. So with commit-after-process,
   partitions moving between members lose nothing.
"""
from __future__ import annotations

import datetime
import logging
import socket
import threading
import time
import uuid
import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Optional, Union

try:
    from kazoo.client import KazooClient, KazooState
    from kazoo.exceptions import KazooException, NodeExistsError, NoNodeError
    from kazoo.handlers.threading import KazooTimeoutError
    from kazoo.recipe.watchers import ChildrenWatch
except ImportError as exc:
    raise ImportError("BalancedConsumer needs kazoo: pip install 'pyrdk[zookeeper]' (%s)" % exc) from exc

from pyrdk.common import OffsetType, check_bool, check_int, stop_at_exit
from pyrdk.consumer import (BATCH, MAX_BATCH, auto_commit_due, check_auto_offset_reset, check_running,
                            check_settings, partition_id_of)
from pyrdk.core import arrow
from pyrdk.exceptions import (CallState, ConsumerStoppedException, KafkaException, PartitionOwnedError,
                              UnicodeException)
from pyrdk.membershipprotocol import GroupMembershipProtocol, RangeProtocol
from pyrdk.rd.handle import Handle
from pyrdk.rd.transaction import GroupMetadata
from pyrdk.simpleconsumer import SimpleConsumer
from pyrdk.zookeeper import check_connect_string, check_kazoo_interface, partition_of, pykafka_owner_dir

if TYPE_CHECKING:
    from pyrdk import common
    from pyrdk.cluster import Cluster
    from pyrdk.partition import Partition
    from pyrdk.topic import Topic

log = logging.getLogger(__name__)

__all__ = ["BalancedConsumer", "ZooKeeperUnavailableError"]

SLICE_MS = 100  # longest wait of consume() between checks of lease, rebalance and timeout
METADATA_CHECK_S = 10  # how often the partitions and leaders of the topic are re-read
CLAIM_ATTEMPTS = 20  # claims in a row that other members' claims may interrupt
CLAIMS_PER_TRANSACTION = 200  # ownership nodes created in one ZooKeeper transaction (far below jute.maxbuffer)


if hasattr(time, "CLOCK_BOOTTIME"):
    def _lease_clock():
        """Seconds on a clock that goes on while the machine sleeps (Linux ``CLOCK_BOOTTIME``),
        so a lease taken before a suspend has run out after it, as the session has."""
        return time.clock_gettime(time.CLOCK_BOOTTIME)
else:
    _lease_clock = time.monotonic


class ZooKeeperUnavailableError(KafkaException, KazooTimeoutError):
    """ZooKeeper did not answer within ``zookeeper_connection_timeout_ms``. It is also
    kazoo's ``KazooTimeoutError``, which pykafka raised here."""


def _group_name(consumer_group):
    if isinstance(consumer_group, bytes):
        try:
            consumer_group = consumer_group.decode("ascii")
        except UnicodeDecodeError:
            raise UnicodeException("consumer_group %r is not ASCII" % (consumer_group,)) from None
    if not isinstance(consumer_group, str):
        raise TypeError("consumer_group must be bytes or str, not %s" % type(consumer_group).__name__)
    if (not consumer_group or "/" in consumer_group or consumer_group in (".", "..")
            or any(c < " " or c == "\x7f" for c in consumer_group)):
        raise ValueError("consumer_group %r cannot name a ZooKeeper node: use a non-empty name "
                         "without '/' or control characters" % consumer_group)
    try:
        return consumer_group.encode("ascii")
    except UnicodeEncodeError:
        raise UnicodeException("consumer_group %r is not ASCII" % consumer_group) from None


def _forget_statistics(consumer):
    """A consumer replaced at a rebalance sends no more statistics: a ``stats_callback`` with
    ``forget(name)`` (a :class:`pyrdk.metrics.PrometheusExporter`) drops its last snapshot,
    which would otherwise be exported beside its successor's for ever (its partitions' lag,
    stale), under a handle name the program never sees."""
    forget = getattr(consumer._stats_callback, "forget", None)
    if callable(forget) and consumer._handle is not None:
        forget(consumer._handle.name)


class BalancedConsumer:
    """A member of a consumer group that splits a topic's partitions with the other members
    through ZooKeeper (pykafka 2.8's signature and defaults).

    :param topic: the :class:`pyrdk.topic.Topic` to consume
    :param cluster: its :class:`pyrdk.cluster.Cluster`
    :param consumer_group: the group's name (bytes or ASCII str); offsets are committed
        to Kafka under it
    :param auto_commit_enable: commit every ``auto_commit_interval_ms`` (on the consuming
        thread) the offsets of the messages the program is done with
    :param queued_max_messages: messages prefetched per partition (``queued.min.messages``)
    :param auto_offset_reset: where a partition without a committed offset starts
    :param consumer_timeout_ms: ms ``consume()`` waits for a message before returning None
        (and iteration ends); -1 waits for ever
    :param rebalance_max_retries: how many attempts a rebalance makes to claim a partition
        another member still owns before ``consume()`` raises ``PartitionOwnedError``
        (the consumer goes on retrying after that)
    :param rebalance_backoff_ms: the first retry comes at once, the next after this pause,
        growing by as much each time (0, 2, 4, 6 s by default)
    :param zookeeper_connection_timeout_ms: the ZooKeeper session timeout, and the bound on
        connecting: ``start()`` raises ``ZooKeeperUnavailableError`` after it (with
        ``zookeeper=``, the client's session timeout if that is shorter)
    :param zookeeper_hosts: ZooKeeper connect string (``host:port,...[/chroot]``)
    :param zookeeper_connect: deprecated name of ``zookeeper_hosts`` (a
        ``DeprecationWarning``); wins when given, as in pykafka
    :param zookeeper: a started ``kazoo.client.KazooClient``, or any object with its
        interface (see ``pyrdk.zookeeper.KAZOO_METHODS``), to use instead (not stopped by
        ``stop()``)
    :param auto_start: join the group at once
    :param reset_offset_on_start: start the first partitions held from
        ``auto_offset_reset`` even where offsets are committed
    :param post_rebalance_callback: ``f(consumer, old_offsets, new_offsets)`` called after
        each change of the partitions held, with ``{partition_id: held offset}`` before and
        after; it may return ``{partition_id: offset}`` to reset to
    :param membership_protocol: ``RangeProtocol`` (default) or ``RoundRobinProtocol``
    :param deserializer: ``(value, partition_key) -> (value, partition_key)``
    :param isolation_level: ``"read_committed"`` (the default, as librdkafka's) or
        ``"read_uncommitted"`` (``isolation.level``)
    :param pre_revoke_callback: ``f(consumer, partition_ids) -> [(partition_id, offset)]``
        or None, called before this member stops reading partitions (a rebalance, ``stop()``),
        in place of committing what the program is done with: the member commits the pairs
        it returns (each offset the next one to read; ``[]`` commits nothing), or, for None,
        what it would have. It is also called when the member lost partitions (its ZooKeeper
        session expired); nothing is committed then. For programs that finish messages out
        of order, such as :class:`pyrdk.spout.KafkaSpout`. Called in the coordinator thread
        (or the one that calls ``stop()``); its exceptions are raised by ``consume()``.
    :param rdkafka_config: librdkafka properties for the consumers of the held partitions
    :param statistics_interval_ms: ``statistics.interval.ms`` (None: the client's); see ``stats()``
    :param stats_callback: called with each statistics snapshot, a dict (None: the client's)

    The other parameters go to the :class:`pyrdk.simpleconsumer.SimpleConsumer` that reads
    the held partitions. ``num_consumer_fetchers``, ``compacted_topic`` and
    ``use_rdkafka`` are accepted and ignored, as in pyrdk's SimpleConsumer.
    """

    def __init__(self, topic: Topic, cluster: Cluster, consumer_group: Union[str, bytes],
                 fetch_message_max_bytes: int = 1024 * 1024, num_consumer_fetchers: int = 1,
                 auto_commit_enable: bool = False, auto_commit_interval_ms: int = 60 * 1000,
                 queued_max_messages: int = 2000, fetch_min_bytes: int = 1, fetch_error_backoff_ms: int = 500,
                 fetch_wait_max_ms: int = 100, offsets_channel_backoff_ms: int = 1000,
                 offsets_commit_max_retries: int = 5, auto_offset_reset: OffsetType = OffsetType.EARLIEST,
                 consumer_timeout_ms: int = -1, rebalance_max_retries: int = 5, rebalance_backoff_ms: int = 2 * 1000,
                 zookeeper_connection_timeout_ms: int = 6 * 1000, zookeeper_connect: Optional[str] = None,
                 zookeeper_hosts: str = "127.0.0.1:2181", zookeeper: Any = None, auto_start: bool = True,
                 reset_offset_on_start: bool = False,
                 post_rebalance_callback: Optional[Callable[[Any, dict[int, int], dict[int, int]], Any]] = None,
                 use_rdkafka: Any = False, compacted_topic: bool = False,
                 membership_protocol: GroupMembershipProtocol = RangeProtocol,
                 deserializer: Optional[Callable[[Any, Any], tuple[Any, Any]]] = None,
                 reset_offset_on_fetch: bool = True, isolation_level: str = "read_committed",
                 pre_revoke_callback: Optional[Callable[[Any, list[int]], Iterable[tuple[int, int]]]] = None,
                 rdkafka_config: Optional[dict[str, Any]] = None, statistics_interval_ms: Optional[int] = None,
                 stats_callback: Optional[Callable[[dict[str, Any]], None]] = None) -> None:
        self._consumer_group = _group_name(consumer_group)
        self._topic = topic
        self._cluster = cluster
        self._consumer_timeout_ms = check_int("consumer_timeout_ms", consumer_timeout_ms, -1)
        self._auto_commit_enable = check_bool("auto_commit_enable", auto_commit_enable)
        self._auto_commit_interval_ms = check_int("auto_commit_interval_ms", auto_commit_interval_ms, 0)
        rdkafka_config = check_settings(
            rdkafka_config, fetch_message_max_bytes=fetch_message_max_bytes, queued_max_messages=queued_max_messages,
            fetch_min_bytes=fetch_min_bytes, fetch_error_backoff_ms=fetch_error_backoff_ms,
            fetch_wait_max_ms=fetch_wait_max_ms, offsets_channel_backoff_ms=offsets_channel_backoff_ms,
            offsets_commit_max_retries=offsets_commit_max_retries)
        statistics = cluster.config_for("consumer")  # what each consumer it reads through will have
        cluster.statistics(statistics, statistics_interval_ms)
        statistics.update(rdkafka_config)
        cluster.check_statistics(statistics, stats_callback)  # here, not in a rebalance later
        self._rebalance_max_retries = check_int("rebalance_max_retries", rebalance_max_retries, 0)
        self._rebalance_backoff_ms = check_int("rebalance_backoff_ms", rebalance_backoff_ms, 0)
        self._session_timeout_ms = check_int("zookeeper_connection_timeout_ms",
                                             zookeeper_connection_timeout_ms, 1)
        if zookeeper_connect is not None:
            warnings.warn("zookeeper_connect is deprecated (since pykafka 2.7): use zookeeper_hosts",
                          DeprecationWarning, stacklevel=2)
        self._zookeeper_hosts = zookeeper_connect or zookeeper_hosts
        if zookeeper is None and (not isinstance(self._zookeeper_hosts, str) or not self._zookeeper_hosts):
            raise TypeError("zookeeper_hosts must be a 'host:port,...' string, not %r"
                            % (self._zookeeper_hosts,))
        if zookeeper is None:
            check_connect_string(self._zookeeper_hosts)
        if zookeeper is not None:
            check_kazoo_interface(zookeeper)
            # The session is the given client's: the lease must not outlast a shorter one.
            given_ms = getattr(zookeeper, "_session_timeout", None)  # KazooClient's, in ms
            if isinstance(given_ms, int) and 0 < given_ms < self._session_timeout_ms:
                self._session_timeout_ms = given_ms
        if not isinstance(membership_protocol, GroupMembershipProtocol):
            raise TypeError("membership_protocol must be RangeProtocol or RoundRobinProtocol "
                            "(a GroupMembershipProtocol), not %r" % (membership_protocol,))
        if post_rebalance_callback is not None and not callable(post_rebalance_callback):
            raise TypeError("post_rebalance_callback must be callable")
        if pre_revoke_callback is not None and not callable(pre_revoke_callback):
            raise TypeError("pre_revoke_callback must be callable (consumer, partition_ids) -> offsets")
        self._pre_revoke_callback = pre_revoke_callback
        self._membership_protocol = membership_protocol
        self._post_rebalance_callback = post_rebalance_callback
        self._reset_offset_on_start = check_bool("reset_offset_on_start", reset_offset_on_start)
        self._simple_kwargs: dict[str, Any] = dict(
            fetch_message_max_bytes=fetch_message_max_bytes, queued_max_messages=queued_max_messages,
            fetch_min_bytes=fetch_min_bytes, fetch_error_backoff_ms=fetch_error_backoff_ms,
            fetch_wait_max_ms=fetch_wait_max_ms, offsets_channel_backoff_ms=offsets_channel_backoff_ms,
            offsets_commit_max_retries=offsets_commit_max_retries, auto_offset_reset=auto_offset_reset,
            deserializer=deserializer, reset_offset_on_fetch=reset_offset_on_fetch,
            isolation_level=isolation_level, rdkafka_config=rdkafka_config,
            statistics_interval_ms=statistics_interval_ms, stats_callback=stats_callback)
        check_auto_offset_reset(auto_offset_reset)
        # The SimpleConsumer a rebalance makes checks them; one made now (with no handle until
        # started) checks them here, not in the coordinator thread of a member that joins idle.
        SimpleConsumer(topic, cluster, consumer_group=self._consumer_group, auto_start=False,
                       **self._simple_kwargs)

        self._consumer_id = ("%s:%s" % (socket.gethostname(), uuid.uuid4())).encode()
        group = self._consumer_group.decode()
        self._ids_path = "/consumers/%s/ids" % group
        self._path_self = "%s/%s" % (self._ids_path, self._consumer_id.decode())
        self._topic_path = "/consumers/%s/owners/%s" % (group, topic.name.decode())
        # where pykafka members on Python 3 create their ownership nodes (read and watched;
        # this member creates the directory alone, as pykafka does)
        self._pykafka_topic_path = "/consumers/%s/owners/%s" % (group, pykafka_owner_dir(topic.name))

        self._zookeeper = zookeeper
        self._owns_zookeeper = zookeeper is None
        # the connection state listener start() adds; taken off a KazooClient the program
        # gave at stop(), else one is left there per member for the life of that client
        self._listener = None
        self._running = False
        self._stop_pending = False  # a stop() began and has not given the partitions back
        # held by stop() once the coordinator thread has ended: a second stop() in another
        # thread waits for the first, then finds the partitions given back (two at once both
        # ended the ZooKeeper session, and kazoo refused the second's close: "Cannot close
        # connection until it is stopped")
        self._stop_lock = threading.RLock()
        self._worker: Optional[threading.Thread] = None
        self._calls = CallState()  # what the coordinator thread met, raised by consume()
        self._stopping = threading.Event()
        self._wakeup = threading.Event()  # a watch or a state change: look at the group again
        self._reasons: set[str] = set()  # why it was woken: "members", "owners", "state"
        self._reasons_lock = threading.Lock()
        self._failures = 0  # rebalances in a row that could not claim every partition decided
        self._retry_at: Optional[float] = None  # time.monotonic() of the next rebalance attempt, after a failure
        # The thread that last called consume(): its end frees the partitions.
        self._reader: Optional[threading.Thread] = None
        self._aside = False  # the member left the group because that thread ended
        self._left = False  # ...and ZooKeeper has no node of it any more
        self._unblock = threading.Event()  # set while the coordinator needs the consumer
        self._lock = threading.RLock()  # guards _consumer and what consume() hands out
        self._consumer: Optional[SimpleConsumer] = None  # the SimpleConsumer of the partitions held
        self._metadata_handle: Optional[Handle] = None  # the coordinator's (see _topic_changed)
        # held_offsets of the consumer last closed: the next post_rebalance_callback's old offsets
        self._last_held: dict[int, int] = {}
        self._generation = 0  # bumped each time _consumer changes
        self._owned: dict[int, str] = {}  # partition id -> ownership node path, in session _session
        self._session: Optional[int] = None  # ZooKeeper session id the ownership nodes belong to
        self._lease_until = 0.0  # _lease_clock() time until which the nodes are ours
        self._blocked: set[int] = set()  # partitions decided for this member but owned by another
        self._unfinished: dict[int, int] = {}  # partition id -> offset of a message handed out, not done with
        self._paused: set[int] = set()  # partitions paused by the program, while held
        # (generation, [messages]) fetched when the lease had lapsed
        self._held_back: Optional[tuple[int, list[common.Message]]] = None
        self._first_consumer = True
        self._last_commit = time.monotonic()
        self._layout: Any = None  # the topic's partitions and leaders at the last rebalance
        if check_bool("auto_start", auto_start):
            self.start()

    # -- properties ----------------------------------------------------------------------------

    @property
    def topic(self) -> Topic:
        return self._topic

    @property
    def partitions(self) -> dict[int, Partition]:
        """``{partition_id: Partition}`` this member reads now: empty while a rebalance
        runs or while ZooKeeper cannot confirm its ownership."""
        consumer = self._consumer
        if consumer is None or self._unblock.is_set() or not self._leased():
            return {}
        return dict(consumer.partitions)

    @property
    def _partitions(self):
        """pykafka's shorthand: the set of ``Partition`` this member reads now."""
        return set(self.partitions.values())

    @property
    def held_offsets(self) -> Optional[dict[int, int]]:
        """``{partition_id: last offset returned}`` of the partitions held, or None while
        none are; after ``stop()``, those the member held when it stopped (as pykafka's)."""
        with self._lock:
            if self._consumer is not None:
                return self._consumer.held_offsets
            return dict(self._last_held) if self._stopping.is_set() else None

    @property
    def consumer_id(self) -> bytes:
        """This member's id in ZooKeeper (bytes, ``<hostname>:<uuid4>``)."""
        return self._consumer_id

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        """Connect to ZooKeeper, join the group and take this member's share of the
        partitions."""
        if self._running:
            return
        if self._zookeeper is None:
            self._zookeeper = self._connect()
        elif not self._zookeeper.connected:
            raise ZooKeeperUnavailableError("the KazooClient given as zookeeper= is not connected")
        zk = self._zookeeper
        self._stopping.clear()
        self._running = True
        try:
            if zk.chroot and zk.exists("/") is None:
                raise ValueError("the chroot %s of zookeeper_hosts does not exist in ZooKeeper: "
                                 "create it first" % zk.chroot)
            zk.ensure_path(self._topic_path)
            zk.ensure_path(self._pykafka_topic_path)  # as pykafka's start(), so that it can be watched
            zk.ensure_path(self._ids_path)
            self._session = zk.client_id[0]
            self._register()
            self._listener = self._state_listener()
            zk.add_listener(self._listener)
            self._set_watches()
            self._renew()
            done = self._rebalance()
            if done is None:
                self._wake("state")  # no confirmed session yet: the coordinator thread retries
            elif not done:
                self._failed_claims(set())  # the coordinator thread retries, as it backs off
        except BaseException:
            self.stop()
            raise
        # The thread holds the consumer weakly: one the program lets go of without stop() is
        # collected, and the thread then gives its place in the group up (see _coordinate).
        self._worker = threading.Thread(target=_coordinate, args=(weakref.ref(self), self._stopping, self._wakeup,
                                                                  self._leftovers()),
                                        daemon=True, name="pyrdk-balancedconsumer-%s" % self._consumer_group.decode())
        self._worker.start()

    def _connect(self):
        """A started KazooClient whose session timeout is ``zookeeper_connection_timeout_ms``."""
        timeout_s = self._session_timeout_ms / 1000.0
        zk = KazooClient(self._zookeeper_hosts, timeout=timeout_s)
        try:
            zk.start(timeout=timeout_s)
        except KazooTimeoutError:
            raise ZooKeeperUnavailableError(
                "ZooKeeper at %s did not answer within zookeeper_connection_timeout_ms=%d: check "
                "zookeeper_hosts and that ZooKeeper runs (or pass managed=True to balance through the "
                "brokers' group protocol, without ZooKeeper)" % (self._zookeeper_hosts,
                                                                 self._session_timeout_ms)) from None
        return zk

    def stop(self) -> None:
        """Stop consuming, commit the offsets of the messages the program is done with (with
        ``auto_commit_enable``, the message last returned included, as pykafka commits),
        give the partitions back and leave the group (the ZooKeeper session ends, unless the
        KazooClient was given). A stop() a Ctrl-C cut short is finished by the next one."""
        if self._running:
            if self._auto_commit_enable:
                self._unfinished.clear()
            self._running = False
            self._stop_pending = True  # until the group has its partitions back
            self._stopping.set()
            self._wakeup.set()
        elif not self._stop_pending:
            return
        worker = self._worker
        if worker is not None and worker is not threading.current_thread():
            worker.join()
        # Not held while joining: a stop() from a callback in the coordinator thread must not
        # wait for the stop() that waits for that thread.
        with self._stop_lock:
            if self._stop_pending:  # else another thread's stop() finished it meanwhile
                self._finish_stop()

    def _finish_stop(self):
        """stop() once the coordinator thread has ended: close the consumer (committing),
        then end the session or delete the member's nodes. Needs ``_stop_lock``."""
        self._worker = None
        metadata_handle = self._metadata_handle
        if metadata_handle is not None:
            metadata_handle.close()
        self._metadata_handle = None
        zk = self._zookeeper
        try:
            with self._consumer_turn():
                self._close_consumer(commit=True, forget=False)  # stopped: its figures stay, as documented
        finally:
            self._lease_until = 0.0
            if self._owns_zookeeper:
                # Ending the session deletes its ephemeral nodes, after reading has stopped.
                self._zookeeper = None
                if zk is not None:  # else a stop() cut short ended it
                    zk.stop()
                    zk.close()
            else:
                if self._listener is not None:
                    zk.remove_listener(self._listener)
                self._delete_now_or_later(list(self._owned.values()) + [self._path_self])
            self._owned.clear()
            self._listener = None
            self._stop_pending = False

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        stop_at_exit(self.stop, exc_type, "consumer")

    def __del__(self):
        # Only what cannot block: the coordinator thread, woken, finds the consumer gone and
        # gives its place in the group up.
        wakeup = getattr(self, "_wakeup", None)
        if wakeup is not None:
            self._running = False
            wakeup.set()

    def _check_running(self):
        check_running(self._running)

    def _raise_worker_exceptions(self):
        """Raise, once each, the errors the coordinator thread met (PartitionOwnedError, an
        exception of post_rebalance_callback...)."""
        self._calls.check()

    # -- consuming -----------------------------------------------------------------------------

    def consume(self, block: bool = True) -> Optional[common.Message]:
        """The next message of a partition this member holds, or None: when ``block`` is
        False and none is ready, or when ``consumer_timeout_ms`` passes without one.

        While a rebalance runs, or while ZooKeeper cannot confirm that this member still
        owns its partitions, no message is handed out and ``consume()`` waits.
        """
        batch = self._consume(1, block, self._consumer_timeout_ms)
        return batch[0] if batch else None

    def consume_batch(self, max_messages: int = BATCH, timeout_ms: int = 1000) -> list[common.Message]:
        """Up to ``max_messages`` messages of the partitions this member holds, waiting at most
        ``timeout_ms`` (-1: for ever) for the first, as
        :meth:`pyrdk.simpleconsumer.SimpleConsumer.consume_batch`; none while a rebalance
        runs or ZooKeeper cannot confirm the ownership. Every message returned counts as
        finished at the next ``consume()``, ``consume_batch()`` or ``commit_offsets()``."""
        check_int("max_messages", max_messages, 1)
        if max_messages > MAX_BATCH:
            raise ValueError("max_messages=%d is more than one call can take (at most %d)"
                             % (max_messages, MAX_BATCH))
        return self._consume(max_messages, True, check_int("timeout_ms", timeout_ms, -1))

    def consume_arrow(self, max_messages=BATCH, timeout_ms=1000, headers=False):
        """``consume_batch(max_messages, timeout_ms)`` as one ``pyarrow.RecordBatch`` (the
        columns of :mod:`pyrdk.core.arrow`), built from its Messages; needs pyarrow and a
        consumer without a deserializer, as
        :meth:`pyrdk.simpleconsumer.SimpleConsumer.consume_arrow`."""
        headers = arrow.check_call(self._simple_kwargs["deserializer"], headers)
        return arrow.from_messages(self.consume_batch(max_messages, timeout_ms), headers)

    def _consume(self, max_messages, block, timeout_ms):
        self._check_running()
        self._unfinished.clear()  # the program is done with the messages returned before
        self._raise_worker_exceptions()
        self._maybe_auto_commit()
        deadline = None if timeout_ms < 0 else time.monotonic() + timeout_ms / 1000.0
        while True:
            self._note_reader()
            batch = self._next_messages(max_messages, block)
            if batch or not block:
                return batch
            if deadline is not None and time.monotonic() >= deadline:
                return []
            self._check_running()
            self._raise_worker_exceptions()

    def __iter__(self) -> Iterator[common.Message]:
        while True:
            message = self.consume(block=True)
            if message is None:
                return
            yield message

    def _next_messages(self, max_messages, block):
        """Up to ``max_messages`` messages, waiting a slice at most; none without the lease."""
        if self._unblock.is_set() or self._consumer is None or not self._leased():
            if block:
                self._stopping.wait(SLICE_MS / 1000.0)
            return []
        with self._lock:
            consumer = self._consumer
            if consumer is None:
                return []
            held, self._held_back = self._held_back, None
            if held is not None and held[0] == self._generation:
                batch, rest = held[1][:max_messages], held[1][max_messages:]
                if rest:
                    self._held_back = (self._generation, rest)
            elif max_messages == 1:
                message = consumer.consume(block=block, unblock_event=self._unblock)
                batch = [message] if message is not None else []
            else:
                batch = consumer.consume_batch(max_messages, SLICE_MS if block else 0)
            if not batch:
                return []
            if not self._leased() or self._unblock.is_set():
                # Fetched as the lease ran out: keep them until ownership is confirmed.
                kept = self._held_back[1] if self._held_back is not None else []
                self._held_back = (self._generation, batch + kept)
                return []
            for message in batch:
                self._unfinished.setdefault(message.partition_id, message.offset)
            return batch

    def _leased(self):
        return _lease_clock() < self._lease_until

    # -- offsets -------------------------------------------------------------------------------

    def commit_offsets(self, partition_offsets: Optional[Iterable[tuple[Union[Partition, int], Optional[int]]]] = None
                       ) -> None:
        """Commit offsets for the group (``rd_kafka_commit``).

        :param partition_offsets: ``(partition, offset)`` pairs to commit as given; default:
            each held partition's held offset + 1, the messages last returned included
            (nothing, while this member holds no partition: a rebalance committed what the
            program had finished with before it gave the partitions up)
        """
        self._check_running()
        self._raise_worker_exceptions()
        with self._lock:
            if partition_offsets is None:
                self._unfinished.clear()
                self._commit_done()
                return
            if self._consumer is None:
                raise KafkaException("cannot commit offsets: this member holds no partitions now")
            self._consumer.commit_offsets(partition_offsets=partition_offsets)
            self._last_commit = time.monotonic()

    def group_metadata(self) -> GroupMetadata:
        """The group's metadata for a transactional producer's
        ``send_offsets_to_transaction(offsets, group_metadata)``
        (``rd_kafka_consumer_group_metadata_new``: the group alone; ZooKeeper, not the
        broker, knows the members)."""
        self._check_running()
        return GroupMetadata.for_group(self._consumer_group)

    def reset_offsets(self, partition_offsets: Optional[Iterable[tuple[Union[Partition, int],
                                                                      Union[int, datetime.datetime]]]] = None) -> None:
        """Move held partitions as :meth:`SimpleConsumer.reset_offsets` does, and commit
        the new positions."""
        self._check_running()
        self._raise_worker_exceptions()
        with self._lock:
            if self._consumer is None:
                raise ConsumerStoppedException("this member holds no partitions to reset")
            self._held_back = None
            self._unfinished.clear()
            self._consumer.reset_offsets(partition_offsets=partition_offsets)

    # -- seek, pause, resume -------------------------------------------------------------------

    def seek(self, partition: Union[Partition, int], offset: int) -> None:
        """Make ``offset`` the next offset returned for a held ``partition``, as
        :meth:`pyrdk.simpleconsumer.SimpleConsumer.seek` does (nothing is committed)."""
        self._check_running()
        with self._lock:
            consumer = self._held_consumer("seek")
            consumer.seek(partition, offset)
            pid = partition_id_of(partition, self._topic)
            if self._held_back is not None:
                kept = [m for m in self._held_back[1] if m.partition_id != pid]
                self._held_back = (self._held_back[0], kept) if kept else None

    def pause(self, partitions: Optional[Iterable[Union[Partition, int]]] = None) -> None:
        """Stop fetching from these held partitions (default: all held), as
        :meth:`pyrdk.simpleconsumer.SimpleConsumer.pause` does. The pause lasts while this
        member holds them, across rebalances, until :meth:`resume`."""
        self._check_running()
        with self._lock:
            consumer = self._held_consumer("pause")
            # ids (consumer.pause() refuses anything else before they are kept)
            pids: list[Any] = sorted(consumer.partitions) if partitions is None else \
                [partition_id_of(p, self._topic) for p in partitions]
            consumer.pause(pids)
            self._paused.update(pids)

    def resume(self, partitions: Optional[Iterable[Union[Partition, int]]] = None) -> None:
        """Fetch again from paused partitions (default: all)."""
        self._check_running()
        with self._lock:
            pids = sorted(self._paused) if partitions is None else \
                [partition_id_of(p, self._topic) for p in partitions]
            consumer = self._consumer
            if consumer is not None:
                consumer.resume([pid for pid in pids if pid in consumer.partitions])
            self._paused.difference_update(pids)

    def _held_consumer(self, what):
        if self._consumer is None:
            raise KafkaException("cannot %s: this member holds no partitions now" % what)
        return self._consumer

    def _maybe_auto_commit(self):
        if auto_commit_due(self._auto_commit_enable, self._last_commit, self._auto_commit_interval_ms):
            with self._lock:
                self._commit_done()

    def _commit_done(self):
        """Commit, for each held partition, the offset after the last message the program
        is done with (a message handed out or held back is not done). Needs ``_lock``."""
        consumer = self._consumer
        self._last_commit = time.monotonic()
        if consumer is None:
            return
        not_done = dict(self._unfinished)
        if self._held_back is not None and self._held_back[0] == self._generation:
            for message in self._held_back[1]:
                not_done[message.partition_id] = min(message.offset,
                                                     not_done.get(message.partition_id, message.offset))
        offsets = [(pid, min(nxt, not_done.get(pid, nxt)))
                   for pid, nxt in sorted(consumer._positions().items()) if nxt is not None]
        if offsets:
            consumer.commit_offsets(partition_offsets=offsets)

    # -- the consumer of the held partitions ---------------------------------------------------

    def _consumer_turn(self):
        """Make ``consume()`` step aside, and hold ``_lock``."""
        return _ConsumerTurn(self)

    def _close_consumer(self, commit, forget=True):
        """Stop reading the held partitions, first committing what the program is done with
        (if ``commit``); the consumer's statistics are forgotten (``forget``: it is replaced,
        see ``_forget_statistics``). Needs the consumer turn."""
        consumer = self._consumer
        if consumer is None:
            return
        self._last_held = consumer.held_offsets
        try:
            offsets = self._revoke_offsets(consumer)
            if commit:
                try:
                    if offsets is None:
                        self._commit_done()
                    elif offsets:
                        consumer.commit_offsets(partition_offsets=offsets)
                except (TypeError, ValueError):  # the callback's answer refused: the program's error
                    raise
                except KafkaException as exc:
                    log.warning("%s: could not commit before giving partitions up: %s",
                                self._consumer_id, exc)
        finally:
            self._consumer = None
            self._generation += 1
            self._held_back = None
            consumer.stop()
            if forget:
                _forget_statistics(consumer)

    def _revoke_offsets(self, consumer):
        """What ``pre_revoke_callback`` chooses to commit for the partitions of ``consumer``
        (None: no callback, or it chose what the program is done with)."""
        if self._pre_revoke_callback is None:
            return None
        try:
            return self._pre_revoke_callback(self, sorted(consumer.partitions))
        except Exception as exc:
            log.exception("pre_revoke_callback raised")
            self._calls.crash(exc)
            return []

    def _install_consumer(self):
        """Read exactly the partitions owned in ZooKeeper, replacing the consumer if the
        set changed; then ``post_rebalance_callback``."""
        wanted = set(self._owned)
        current = self._consumer
        if set(current.partitions if current is not None else ()) == wanted:
            return
        with self._consumer_turn():
            self._replace_consumer(wanted)

    def _replace_consumer(self, wanted):
        current = self._consumer
        # As pykafka: the offsets the previous consumer held, also when a rebalance closed it
        # before giving its partitions up.
        old_offsets = current.held_offsets if current is not None else self._last_held
        self._close_consumer(commit=True)
        if self._stopping.is_set():
            return  # stop() began meanwhile: no new consumer, nor a rebalance to report
        if not wanted:
            log.info("%s holds no partition of %s", self._consumer_id, self._topic.name)
            new_offsets, self._last_held = {}, {}
        else:
            consumer = SimpleConsumer(
                self._topic, self._cluster, consumer_group=self._consumer_group,
                partitions=sorted(wanted), consumer_timeout_ms=SLICE_MS, auto_commit_enable=False,
                reset_offset_on_start=self._reset_offset_on_start and self._first_consumer,
                auto_start=False, **self._simple_kwargs)
            consumer.consumer_id = self._consumer_id  # as pykafka: named in the commit metadata
            consumer.start()
            self._paused.intersection_update(wanted)
            if self._paused:
                consumer.pause(sorted(self._paused))
            self._consumer = consumer
            self._first_consumer = False
            self._generation += 1
            new_offsets = self._consumer.held_offsets
            log.info("%s now reads partitions %s of %s", self._consumer_id, sorted(wanted),
                     self._topic.name)
        if self._post_rebalance_callback is not None:
            try:
                reset = self._post_rebalance_callback(self, old_offsets, new_offsets)
            except Exception as exc:
                log.exception("post_rebalance_callback raised")
                self._calls.crash(exc)
                return
            if reset and not isinstance(reset, dict):
                raise TypeError("post_rebalance_callback must return {partition_id: offset} or None, "
                                "not %s" % type(reset).__name__)
            if reset and self._consumer is not None:
                # as given: keys may be ids and Partitions, which do not sort together
                self._consumer.reset_offsets(partition_offsets=list(reset.items()))

    # -- ZooKeeper -----------------------------------------------------------------------------

    def _zk(self):
        zk = self._zookeeper
        if zk is None:
            raise ConsumerStoppedException("the consumer is stopped")
        return zk

    def _wait(self, async_result):
        """The result of a kazoo ``*_async`` call, waiting at most a session timeout."""
        return async_result.get(timeout=self._session_timeout_ms / 1000.0)

    def _register(self):
        """Create this member's id node (value: the topic name) in the current session,
        replacing one an older session of this member left."""
        zk = self._zk()
        try:
            self._wait(zk.create_async(self._path_self, self._topic.name, ephemeral=True))
        except NoNodeError:
            self._make_paths()
            self._wait(zk.create_async(self._path_self, self._topic.name, ephemeral=True))
        except NodeExistsError:
            stat = self._wait(zk.exists_async(self._path_self))
            if stat is not None and stat.ephemeralOwner == self._session:
                return
            self._delete_if_ours(self._path_self, any_session=True)
            self._wait(zk.create_async(self._path_self, self._topic.name, ephemeral=True))
        log.info("%s joined group %s for topic %s", self._consumer_id, self._consumer_group,
                 self._topic.name)

    def _make_paths(self):
        """Create the group's ids and owners nodes again, and watch them again: someone
        deleted them (``rmr /consumers/<group>``), which ended the watches on them too."""
        zk = self._zk()
        log.warning("%s: the nodes of group %s were deleted from ZooKeeper; making them again",
                    self._consumer_id, self._consumer_group)
        for path in (self._topic_path, self._pykafka_topic_path, self._ids_path):
            try:
                self._wait(zk.create_async(path, b"", makepath=True))
            except NodeExistsError:
                pass
        self._set_watches()

    def _children(self, path):
        try:
            return self._wait(self._zk().get_children_async(path))
        except NoNodeError:
            return []

    def _get_many(self, paths):
        """``{path: (value, stat)}`` of the nodes that exist."""
        zk = self._zk()
        pending = [(path, zk.get_async(path)) for path in paths]
        out = {}
        for path, result in pending:
            try:
                out[path] = self._wait(result)
            except NoNodeError:
                pass
        return out

    def _get_participants(self):
        """The sorted ids (bytes) of the members consuming this topic."""
        nodes = self._get_many(["%s/%s" % (self._ids_path, c) for c in self._children(self._ids_path)])
        return sorted(path.rsplit("/", 1)[1].encode() for path, (value, _) in nodes.items()
                      if value == self._topic.name)

    def _owner_nodes(self, pids, children=None):
        """``{pid: [(czxid, path, value, stat)]}``: the ownership nodes of the partitions
        ``pids`` that have any, whatever leader id their names hold, oldest first; those
        pykafka members on Python 3 made under ``owners/b'<topic>'`` included. ``children``:
        the names under the owners node, when already read."""
        if children is None:
            children = self._children(self._topic_path)
        paths = ["%s/%s" % (self._topic_path, c) for c in children if partition_of(c) in pids]
        paths += ["%s/%s" % (self._pykafka_topic_path, c) for c in self._children(self._pykafka_topic_path)
                  if partition_of(c) in pids]
        out = {}
        for path, (value, stat) in self._get_many(paths).items():
            out.setdefault(partition_of(path.rsplit("/", 1)[1]), []).append((stat.czxid, path, value, stat))
        return {pid: sorted(nodes) for pid, nodes in out.items()}

    def _path_from_partition(self, partition):
        leader = partition.leader
        return "%s/%s-%d" % (self._topic_path, leader.id if leader is not None else None, partition.id)

    def _claim(self, partitions):
        """Own ``partitions`` in ZooKeeper; returns ``{pid: reason}`` of those it could not
        (another member owns them).

        The nodes are created in transactions, each with a write to the owners node at the
        version read with its children (then the version the last transaction left): if
        another pyrdk member claimed anything in between, the transaction fails and the claim
        looks again. So two pyrdk members never create nodes for one partition, even under
        different leader ids. A few round trips serve a whole rebalance, whatever the number
        of partitions. If a ZooKeeper call fails, the nodes it created and did not record in
        ``_owned`` are deleted before the error goes on (``stop()`` deletes only the nodes in
        ``_owned``)."""
        if not partitions:
            return {}
        created = {}  # pid -> node created, not yet recorded in _owned nor deleted
        try:
            return self._create_owner_nodes(partitions, created)
        except BaseException:
            self._delete_now_or_later(created.values())
            raise

    def _create_owner_nodes(self, partitions, created):
        """``_claim``'s work: it adds each transaction's nodes to ``created`` as it sends it
        (ZooKeeper may apply a transaction whose answer is lost), takes them out again if
        the transaction fails, and moves each node out once recorded in ``_owned`` or deleted."""
        zk = self._zk()
        wanted = {p.id: p for p in partitions}
        blocked = {}
        self._wait(zk.sync_async(self._topic_path))  # see other members' latest nodes
        for _ in range(CLAIM_ATTEMPTS):
            if not wanted:
                break
            try:
                children, parent = self._wait(zk.get_children_async(self._topic_path, include_data=True))
            except NoNodeError:
                self._make_paths()
                continue
            stale = False
            for pid, nodes in self._owner_nodes(set(wanted), children).items():
                for _, node, value, stat in nodes:
                    if value != self._consumer_id:
                        blocked[pid] = "partition %d is owned by %s (%s)" % (pid, value.decode(errors="replace"), node)
                        del wanted[pid]
                        break
                    if stat.ephemeralOwner == self._session:
                        self._owned[pid] = node
                        del wanted[pid]
                        break
                    self._delete_if_ours(node, any_session=True)  # left by an older session of ours
                    stale = True
            if stale:
                continue
            version, pids = parent.version, sorted(wanted)
            for first in range(0, len(pids), CLAIMS_PER_TRANSACTION):
                chunk = pids[first:first + CLAIMS_PER_TRANSACTION]
                tx = zk.transaction()
                tx.set_data(self._topic_path, b"", version=version)
                paths = [self._path_from_partition(wanted[pid]) for pid in chunk]
                for path in paths:
                    tx.create(path, self._consumer_id, ephemeral=True)
                created.update(zip(chunk, paths))
                results = self._wait(tx.commit_async())
                taken = [(pid, path) for pid, path, result in zip(chunk, paths, results[1:])
                         if isinstance(result, NodeExistsError)]
                for pid, path in taken:
                    blocked[pid] = "partition %d is owned (%s)" % (pid, path)
                    del wanted[pid]
                if taken or any(isinstance(r, Exception) for r in results):
                    for pid in chunk:  # none was created
                        del created[pid]
                    break  # BadVersionError: another member claimed a partition meanwhile; look again
                version = results[0].version
                for pid in chunk:
                    del wanted[pid]
        for pid in wanted:
            blocked[pid] = "partition %d: other members kept claiming partitions while this one tried" % pid
        # pykafka members create their nodes without that transaction: the older node wins.
        if created:
            nodes = self._owner_nodes(set(created))
            for pid, path in sorted(created.items()):
                oldest = nodes.get(pid, [(None, "?")])[0][1]
                if oldest == path:
                    self._owned[pid] = path
                else:
                    self._delete_if_ours(path)
                    blocked[pid] = "partition %d was claimed first as %s" % (pid, oldest)
                del created[pid]
        return blocked

    def _delete_if_ours(self, path, any_session=False):
        """Delete ``path`` if it holds this member's id (and, unless ``any_session``,
        belongs to the current session); checked and deleted at one node version."""
        zk = self._zk()
        try:
            value, stat = self._wait(zk.get_async(path))
        except NoNodeError:
            return
        if path != self._path_self and value != self._consumer_id:
            return
        if not any_session and stat.ephemeralOwner != self._session:
            return
        try:
            self._wait(zk.delete_async(path, version=stat.version))
        except NoNodeError:
            pass

    def _delete_now_or_later(self, paths):
        """Delete the nodes ``paths`` that hold this member's id in the current session
        (``_delete_if_ours``); if ZooKeeper does not answer, the rest are deleted once the
        session reconnects."""
        zk, left = self._zookeeper, list(paths)
        if zk is None:
            return  # stopped: the session ended, and its ephemeral nodes with it
        try:
            while left:
                self._delete_if_ours(left[0])
                left.pop(0)
        except (KazooException, KazooTimeoutError) as exc:
            log.warning("could not remove %s's nodes from ZooKeeper now: %s; they are deleted "
                        "once the session reconnects", self._consumer_id, exc)
            if zk.client_id is None or zk.client_id[0] == self._session:
                # kazoo sends these once connected again in this session (client_id is None
                # until then); if the session expired it fails them, and the session's
                # ephemeral nodes are gone with it.
                for path in left:
                    zk.delete_async(path)

    def _delete_owned(self, pids):
        for pid in pids:
            path = self._owned.pop(pid, None)
            if path is not None:
                self._delete_if_ours(path)

    def _delete_strays(self):
        """Delete the ownership nodes that hold this member's id but are not in ``_owned``:
        left by a delete or a claim ZooKeeper did not answer in time while the session
        lived on, or by an older session. No other member could ever claim them."""
        owned = set(self._owned.values())
        paths = ["%s/%s" % (self._topic_path, c) for c in self._children(self._topic_path)]
        for path, (value, _) in self._get_many([p for p in paths if p not in owned]).items():
            if value == self._consumer_id:
                log.info("%s: deleting %s, a node of its own it no longer held", self._consumer_id, path)
                self._delete_if_ours(path, any_session=True)

    # -- the coordinator -----------------------------------------------------------------------

    def _state_listener(self):
        ref = weakref.ref(self)

        def listener(state):
            consumer = ref()
            if consumer is None or not consumer._running:
                return True  # kazoo removes a listener that returns True
            if state != KazooState.CONNECTED:
                consumer._lease_until = 0.0  # ownership cannot be confirmed now
            consumer._wake("state")
            return False
        return listener

    def _set_watches(self):
        ref = weakref.ref(self)

        def members_changed(children):
            consumer = ref()
            if consumer is None or not consumer._running:
                return False  # tells ChildrenWatch to stop watching
            consumer._wake("members")

        def owners_changed(children):
            consumer = ref()
            if consumer is None or not consumer._running:
                return False
            if consumer._blocked:
                consumer._wake("owners")  # a partition this member waits for may be free

        ChildrenWatch(self._zookeeper, self._ids_path, members_changed)
        ChildrenWatch(self._zookeeper, self._topic_path, owners_changed)
        ChildrenWatch(self._zookeeper, self._pykafka_topic_path, owners_changed)

    def _wake(self, reason):
        """Wake the coordinator thread, saying why."""
        with self._reasons_lock:
            self._reasons.add(reason)
            self._wakeup.set()

    def _woken(self):
        """The reasons the coordinator was woken for since it last looked (and clear them)."""
        with self._reasons_lock:
            reasons, self._reasons = self._reasons, set()
            self._wakeup.clear()
        return reasons

    def _leftovers(self):
        """What the coordinator thread needs to give this member's place in the group up
        once the program has let go of it without ``stop()``; nothing of the consumer itself."""
        return _Leftovers(self._zookeeper, self._owns_zookeeper, self._owned, self._path_self, self._consumer_id,
                          self._listener)

    def _coordinate_once(self, renew_every, next_renew, next_metadata):
        """One turn of the coordinator thread (see :func:`_coordinate`), once woken or due:
        rebalance when woken or when a retry is due, renew the lease every third of the
        session timeout, re-read the topic's metadata now and then, and leave the group while
        the thread reading this member has ended. Returns the next ``(next_renew,
        next_metadata)``, or None once the consumer is stopped."""
        reasons = self._woken()
        now = time.monotonic()
        retry_due = self._retry_at is not None and now >= self._retry_at
        try:
            reader = self._reader_gone()
            if reader is not None:
                self._step_aside(reader)
            if self._aside:
                if not self._left:
                    self._leave()  # ZooKeeper failed it before: again
                return time.monotonic() + renew_every, next_metadata  # out of the group until consume()
            rebalance = bool(reasons) or retry_due
            if now >= next_metadata:
                next_metadata = now + METADATA_CHECK_S
                rebalance |= self._topic_changed()
            if self._renew():
                rebalance = True
            next_renew = time.monotonic() + renew_every
            if not rebalance:
                return next_renew, next_metadata
            done = self._rebalance()
            if done is None:  # no confirmed session now: try again shortly
                self._retry_at = time.monotonic() + min(renew_every, 1.0)
                return next_renew, next_metadata
            if done:
                self._retry_at, self._failures = None, 0
                self._calls.discard(PartitionOwnedError)  # every partition is claimed now
                return next_renew, next_metadata
            if not retry_due and reasons <= {"owners"} and self._retry_at is not None:
                return next_renew, next_metadata  # a freed partition was claimed by another: the schedule stands
            self._failed_claims(reasons)
        except (KazooException, KazooTimeoutError) as exc:
            # Connection trouble: the lease runs out by itself; try again shortly.
            log.info("%s: ZooKeeper: %r; retrying", self._consumer_id, exc)
            self._retry_at = time.monotonic() + min(renew_every, 1.0)
            next_renew = self._retry_at
        except ConsumerStoppedException:
            return None
        except Exception as exc:
            log.exception("%s: rebalance failed", self._consumer_id)
            self._calls.crash(exc)
            self._retry_at = time.monotonic() + max(self._rebalance_backoff_ms / 1000.0, 0.1)
        return next_renew, next_metadata

    def _failed_claims(self, reasons):
        """A rebalance could not claim every partition decided for this member: retry as
        pykafka does, after ``(n - 1) * rebalance_backoff_ms`` following the n-th failure in a
        row (0, 2, 4, 6 s with the defaults), and raise ``PartitionOwnedError`` from
        ``consume()`` at the ``rebalance_max_retries``-th; then go on retrying. A change of
        the group's members starts the count again (pykafka starts a new rebalance)."""
        if "members" in reasons:
            self._failures = 0
        self._failures += 1
        backoff_s = self._rebalance_backoff_ms / 1000.0
        if self._failures >= max(self._rebalance_max_retries, 1):
            blocked = sorted(self._blocked)
            exc = PartitionOwnedError(
                self._topic.partitions.get(blocked[0]),  # None: gone from the topic (deleted, made again)
                "partitions %s are still owned by other members after %d attempts; retrying"
                % (blocked, self._failures))
            log.warning("%s", exc)
            if not self._calls:  # one is enough while it goes on
                self._calls.crash(exc)
            delay_s = (self._failures - 1) * backoff_s
            self._failures = 0
        else:
            delay_s = (self._failures - 1) * backoff_s
        self._retry_at = time.monotonic() + delay_s

    # -- the thread that reads -----------------------------------------------------------------

    def _note_reader(self):
        """Called by consume(): remember the thread that reads, and rejoin the group if the
        member left it because the thread that read before had ended."""
        self._reader = threading.current_thread()
        if self._aside:
            self._aside = False
            log.info("%s: a thread reads again; joining the group", self._consumer_id)
            self._wake("members")

    def _reader_gone(self):
        """The thread that last called ``consume()``, if it has ended."""
        reader = self._reader
        return reader if reader is not None and not reader.is_alive() and not self._aside else None

    def _step_aside(self, reader):
        """The thread that read this member has ended (an exception out of ``consume()``
        killed it, say): give the partitions back, after committing what it finished, and
        leave the group, so that other members read them; ``consume()`` joins again."""
        log.warning("%s: the thread that read partitions %s (%s) has ended; leaving the group until "
                    "consume() is called again", self._consumer_id, sorted(self._owned), reader.name)
        self._aside = True
        self._reader = None
        self._left = False
        self._leave()

    def _leave(self):
        """Stop reading and delete this member's nodes (those a delete ZooKeeper did not
        answer left too): what ``_step_aside`` does, again until it is done."""
        self._lease_until = 0.0
        with self._consumer_turn():
            self._close_consumer(commit=True)
        self._delete_owned(list(self._owned))
        self._delete_strays()
        self._blocked = set()
        self._retry_at, self._failures = None, 0
        self._delete_if_ours(self._path_self)
        self._left = True

    def _renew(self):
        """Confirm the ownership nodes belong to this session and extend the lease; give up
        partitions whose node is gone. True when a rebalance is needed."""
        zk = self._zk()
        if zk.state != KazooState.CONNECTED:
            self._lease_until = 0.0
            return False
        sent = _lease_clock()
        session = zk.client_id[0] if zk.client_id else None
        if session != self._session:
            # The old session expired and its ephemeral nodes with it.
            log.warning("%s: ZooKeeper session expired; joining again", self._consumer_id)
            self._lease_until = 0.0
            with self._consumer_turn():
                self._close_consumer(commit=False)
            self._owned.clear()
            self._session = session
            self._register()
            return True
        nodes = self._get_many([self._path_self] + list(self._owned.values()))
        lost = [pid for pid, path in self._owned.items()
                if path not in nodes or nodes[path][0] != self._consumer_id
                or nodes[path][1].ephemeralOwner != session]
        me = nodes.get(self._path_self)
        if zk.client_id is None or zk.client_id[0] != session:
            return False  # the answers may come from another session
        if lost:
            log.warning("%s lost partitions %s in ZooKeeper", self._consumer_id, sorted(lost))
            with self._consumer_turn():
                self._close_consumer(commit=False)
            for pid in lost:
                self._owned.pop(pid)
        if me is None or me[1].ephemeralOwner != session:
            self._register()
            lost.append(None)
        self._lease_until = sent + self._session_timeout_ms / 2000.0
        return bool(lost)

    def _topic_changed(self):
        """Re-read the topic's metadata (that topic's alone: the cluster's may be large);
        True if its partitions or leaders changed (pykafka's assignment depends on both).
        Through a handle of the coordinator's own (made at the first check, closed by
        ``stop()``), which outlives a closed client, and which never asks the broker to
        create the topic: the client's would re-create a topic deleted under a consumer."""
        try:
            if self._metadata_handle is None:
                self._metadata_handle = Handle("producer", dict(self._cluster.metadata_config(),
                                                                **{"allow.auto.create.topics": False}),
                                               what="metadata of %s" % self._consumer_id.decode())
            self._cluster.refresh_topic(self._topic, self._metadata_handle)
        except KafkaException as exc:
            log.info("%s: metadata refresh failed: %s", self._consumer_id, exc)
            return False
        return self._current_layout() != self._layout

    def _current_layout(self):
        return tuple((pid, p.leader.id if p.leader is not None else None)
                     for pid, p in sorted(self._topic.partitions.items()))

    def _rebalance(self):
        """Decide this member's partitions, give up the others (after committing) and
        claim the new ones. True when every partition decided for it is owned, False when
        some are still owned by others, None without a confirmed ZooKeeper session."""
        if not self._leased() and not self._renew_now():
            return None
        self._layout = self._current_layout()
        participants = self._get_participants()
        if self._consumer_id not in participants:
            self._register()
            participants = sorted(participants + [self._consumer_id])
        decided = {p.id for p in self._membership_protocol.decide_partitions(
            participants, self._topic.partitions, self._consumer_id)}
        give_up = set(self._owned) - decided
        if give_up:
            with self._consumer_turn():
                self._close_consumer(commit=True)
            self._delete_owned(give_up)
        self._delete_strays()
        wanted, blocked = [], set()
        for pid in sorted(decided - set(self._owned)):
            partition = self._topic.partitions.get(pid)
            if partition is None:  # the topic shrank since (a refresh in another thread): decided again
                log.info("%s: partition %d is gone from topic %s", self._consumer_id, pid, self._topic.name.decode())
                blocked.add(pid)
            else:
                wanted.append(partition)
        for pid, reason in sorted(self._claim(wanted).items()):
            log.info("%s: %s", self._consumer_id, reason)
            blocked.add(pid)
        self._blocked = blocked
        if self._renew():  # nodes lost since they were read (deleted, the session expired)
            self._wake("lost")  # ...are claimed again at the coordinator's next turn
        if not self._leased():
            return None
        self._install_consumer()
        return not blocked

    def _renew_now(self):
        self._renew()
        return self._leased()

    def stats(self) -> Optional[dict[str, Any]]:
        """The last statistics snapshot of the consumer of the partitions held (see
        :meth:`pyrdk.simpleconsumer.SimpleConsumer.stats`), or None."""
        consumer = self._consumer
        return consumer.stats() if consumer is not None else None

    def __repr__(self) -> str:
        return "<pyrdk.balancedconsumer.BalancedConsumer at %#x (consumer_group=%s)>" % (
            id(self), self._consumer_group.decode())


class _ConsumerTurn:
    """``with consumer._consumer_turn():`` wakes a blocked ``consume()`` and holds the lock."""

    def __init__(self, consumer):
        self._consumer = consumer

    def __enter__(self):
        self._consumer._unblock.set()
        self._consumer._lock.acquire()

    def __exit__(self, *exc):
        self._consumer._lock.release()
        self._consumer._unblock.clear()


class _Leftovers:
    """What the coordinator thread of a member the program let go of without ``stop()``
    needs to give its place in the group up."""

    def __init__(self, zookeeper, owns_zookeeper, owned, path_self, consumer_id, listener):
        self.zookeeper = zookeeper
        self.listener = listener  # its connection state listener (holds the consumer weakly)
        self.owns_zookeeper = owns_zookeeper
        self.owned = owned  # the consumer's own dict: partition id -> ownership node path
        self.path_self = path_self
        self.consumer_id = consumer_id

    def release(self):
        """End the member's ZooKeeper session, which deletes its nodes, or, on a KazooClient
        the program gave, delete the nodes that are still its own. Its partitions go to the
        other members; nothing is committed (``stop()`` commits)."""
        log.warning("%s: the consumer was dropped without stop(): leaving the group without committing",
                    self.consumer_id)
        zk = self.zookeeper
        try:
            if self.owns_zookeeper:
                zk.stop()
                zk.close()
                return
            zk.remove_listener(self.listener)
            session = zk.client_id[0] if zk.client_id else None  # an expired one's nodes are gone
            for path in list(self.owned.values()) + [self.path_self]:
                try:
                    value, stat = zk.get(path)
                    if (path == self.path_self or value == self.consumer_id) and stat.ephemeralOwner == session:
                        zk.delete(path, version=stat.version)
                except NoNodeError:
                    pass
        except (KazooException, KazooTimeoutError) as exc:
            log.warning("%s: could not leave the group in ZooKeeper (%s); its nodes go with its session",
                        self.consumer_id, exc)


def _coordinate(ref, stopping, wakeup, leftovers):
    """A BalancedConsumer's coordinator thread: each time it is woken or a renewal, retry or
    metadata check is due, one :meth:`BalancedConsumer._coordinate_once`. It holds the
    consumer weakly (``ref``): once the program has let go of it without ``stop()``,
    ``leftovers`` gives its place in the group up."""
    consumer = ref()
    if consumer is None:
        leftovers.release()
        return
    renew_every = consumer._session_timeout_ms / 3000.0
    next_renew = time.monotonic() + renew_every
    next_metadata = time.monotonic() + METADATA_CHECK_S
    while not stopping.is_set():
        if consumer is None:
            leftovers.release()
            return
        retry_at = consumer._retry_at
        consumer = None
        due = [next_renew, next_metadata] + ([retry_at] if retry_at is not None else [])
        wakeup.wait(max(0.0, min(due) - time.monotonic()))
        if stopping.is_set():
            return
        consumer = ref()
        if consumer is None:
            continue
        turn = consumer._coordinate_once(renew_every, next_renew, next_metadata)
        if turn is None:
            return
        next_renew, next_metadata = turn
