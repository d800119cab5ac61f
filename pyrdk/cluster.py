"""Cluster: brokers and topics from the cluster metadata, plus administration
(pykafka's ``Cluster``).

One producer-type ``rd_kafka_t`` serves metadata (``rd_kafka_metadata``), offset queries
(``rd_kafka_offsets_for_times``) and the Admin API; its base configuration is also the
base of every producer and consumer the cluster makes. A group's offsets are committed and
fetched by a short-lived consumer-type handle of that group.
"""
from __future__ import annotations

import collections
import collections.abc
import logging
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Optional, Union

from pyrdk.broker import Broker
from pyrdk.common import (GroupOffsetsResponse, OffsetCommitPartitionResponse, OffsetFetchPartitionResponse,
                          INT16_MAX, INT32_MAX, OffsetType, check_int, check_topic_name)
from pyrdk.exceptions import (GroupIdNotFoundError, InternalTopicExcluded, KafkaException, KafkaTimeoutError,
                              NoBrokersAvailableError, NonEmptyGroupError, SocketDisconnectedError, UnknownMemberId,
                              for_code)
from pyrdk.handlers import ThreadingHandler
from pyrdk.rd import admin, conf, errors
from pyrdk.rd.callbacks import security_failure
from pyrdk.rd.handle import Handle, librdkafka_runtime_version, stats_enabled
from pyrdk.rd.partitions import TopicPartition
from pyrdk.topic import Topic

if TYPE_CHECKING:
    from pyrdk.lag import PartitionLag

log = logging.getLogger(__name__)

GroupListing = collections.namedtuple("GroupListing", "group_id protocol_type")

# The states of a group with members.
_ACTIVE_STATES = ("Stable", "PreparingRebalance", "CompletingRebalance")

# Kafka codes that mean "the topic is being created, ask again".
_TOPIC_PENDING = (3, 5)  # UNKNOWN_TOPIC_OR_PART, LEADER_NOT_AVAILABLE


def to_str(name: Union[str, bytes], what: str = "topic name") -> str:
    """A topic or group name given as bytes or str, as str; ValueError for one with a NUL
    character, which librdkafka would cut short there (``delete_topics(["t\\0x"])`` must not
    delete topic "t")."""
    if isinstance(name, bytes):
        try:
            name = name.decode()
        except UnicodeDecodeError:
            raise ValueError("%s %r is not UTF-8" % (what, name)) from None
    elif not isinstance(name, str):
        raise TypeError("%s must be bytes or str, not %s" % (what, type(name).__name__))
    if "\0" in name:
        raise ValueError("%s %r holds a NUL character" % (what, name))
    return name


def _list_of(method, items, what, one=False, item="%r"):
    """``items`` as a list. One name (a str, bytes or Topic), or one request when ``one``
    says so, is refused rather than taken apart: ``delete_topics("abc")`` must not delete
    topics "a", "b" and "c". ``item`` makes the hint's list item of one name."""
    if one or isinstance(items, (str, bytes, Topic)):
        hint = item % (items,) if isinstance(items, (str, bytes, Topic)) else repr(items)
        raise TypeError("%s takes a list of %s, not one: use [%s]" % (method, what, hint))
    try:
        return list(items)
    except TypeError:
        raise TypeError("%s takes a list of %s, not %s" % (method, what, type(items).__name__)) from None


def _pair(method, item, what="(topic, partition) pairs"):
    """``(topic name (str), partition id)`` of a ``(topic, partition)`` pair, or TypeError
    naming ``method``."""
    if not isinstance(item, (tuple, list)) or len(item) != 2:
        raise TypeError("%s takes %s, not %r" % (method, what, item))
    topic, partition = item
    topic = to_str(topic.name if isinstance(topic, Topic) else topic)
    return topic, check_int("the partition of topic %r" % topic, partition, 0, INT32_MAX)


def _offsets_of(method, offsets):
    """``[((topic, partition), offset)]``, sorted, of a ``{(topic, partition): offset}`` dict, or
    TypeError naming ``method``."""
    if not isinstance(offsets, collections.abc.Mapping):
        raise TypeError("%s takes a dict {(topic, partition): offset}, not %r" % (method, offsets))
    items = sorted(((_pair(method, key, "a dict with (topic, partition) keys"), offset)
                    for key, offset in offsets.items()), key=lambda item: item[0])
    for (tp, first), (again, second) in zip(items, items[1:]):
        if tp == again:  # b"t" and "t" name one topic: librdkafka would refuse both, naming neither
            raise ValueError("%s: partition %d of topic %s is given twice (offsets %r and %r; a bytes and a "
                             "str name are one topic)" % (method, tp[1], tp[0], first, second))
    return items


def _refuse_twice(method, names, given="given"):
    """ValueError naming ``method`` and the topics ``names`` (str) hold more than once, a
    bytes and a str name being one topic: the brokers answer a name given twice in ways
    librdkafka cannot parse."""
    twice = sorted(name for name, count in collections.Counter(names).items() if count > 1)
    if twice:
        raise ValueError("%s: topic %s is %s twice (a bytes and a str name are one topic)"
                         % (method, ", ".join(twice), given))


def _admin_timeout(timeout, default):
    """``timeout`` (ms) of an Admin API request, ``default`` for 0; TypeError unless it is an
    int from 0 to librdkafka's bound of one hour."""
    return check_int("timeout (ms; 0 for socket_timeout_ms)", timeout, 0, 3600000) or default


def _config_value(name, value):
    """A topic or broker config value as Kafka reads it: a bool as ``true`` or ``false``, a
    list (``cleanup.policy``...) comma-separated; TypeError for what has no such form (str()
    would have written ``None``, ``False`` or ``['compact', 'delete']``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, (str, bytes)):
        return to_str(value, "the value of config %r" % (name,))
    if isinstance(value, (list, tuple)) and not any(isinstance(v, (list, tuple)) for v in value):
        return ",".join(_config_value(name, v) for v in value)
    raise TypeError("the value of config %r must be a str, bytes, int, float, bool or a list of them, not %r"
                    % (name, value))


_REQUEST_SHAPE = "a (name, num_partitions, replication_factor[, config]) tuple"


def _commit_metadata(metadata):
    """A commit's metadata as bytes (None or empty: none)."""
    if metadata is None or isinstance(metadata, bytes):
        return metadata or None
    if isinstance(metadata, str):
        return metadata.encode() or None
    raise TypeError("the metadata of a PartitionOffsetCommitRequest must be bytes or str, not %r" % (metadata,))


def _topic_request(req):
    """``(name, num_partitions, replication_factor, config)`` of one ``create_topics``
    request: a ``(name, num_partitions, replication_factor[, config])`` tuple or an object
    with pykafka's ``CreateTopicRequest`` attributes."""
    if hasattr(req, "topic_name"):  # pykafka's CreateTopicRequest (a namedtuple) or alike
        name, num_partitions = req.topic_name, req.num_partitions
        replication_factor = req.replication_factor
        config = dict(getattr(req, "config_entries", None) or [])
        if getattr(req, "replica_assignment", None):
            raise ValueError("topic %r: replica_assignment is not supported; give num_partitions and "
                             "replication_factor and let the brokers place the replicas" % (name,))
    elif isinstance(req, (tuple, list)):
        if len(req) not in (3, 4):
            raise TypeError("a create_topics request is %s, not %r" % (_REQUEST_SHAPE, req))
        name, num_partitions, replication_factor = req[:3]
        config = req[3] if len(req) == 4 else None
    else:
        raise TypeError("a create_topics request is %s or has pykafka's topic_name, num_partitions "
                        "and replication_factor, not %r" % (_REQUEST_SHAPE, req))
    for field, value in (("num_partitions", num_partitions), ("replication_factor", replication_factor)):
        check_int("%s of topic %r" % (field, name), value, -1, INT32_MAX if field == "num_partitions" else INT16_MAX)
        if value == 0:  # Kafka refuses 0 (INVALID_PARTITIONS), Tansu does not
            raise ValueError("%s of topic %r must be at least 1, or -1 for the broker's default, not 0"
                             % (field, name))
    check_topic_name(to_str(name))
    if config is not None and not isinstance(config, dict):
        raise TypeError("the config of topic %r must be a dict {name: value}, not %r" % (name, config))
    return (to_str(name), num_partitions, replication_factor,
            {to_str(k, "config key"): _config_value(k, v)
             for k, v in (config or {}).items()})


def _group_id(group: Any, what: str = "group id") -> str:
    """A group id for a call about one group: empty is no group's name, ValueError (a broker
    may take it for every group, as Tansu's DeleteGroups does; a group read of it may wait
    ``socket_timeout_ms`` for a coordinator, as librdkafka's mock cluster does; and no pyrdk
    consumer can have it)."""
    group = to_str(group, what)
    if not group:
        raise ValueError("%s is empty: name the consumer group" % what)
    return group


class BrokerOutage:
    """Turns librdkafka's ``_ALL_BROKERS_DOWN`` into ``NoBrokersAvailableError`` once no broker
    has been reachable for ``timeout_ms``, confirmed by a metadata request.

    librdkafka reconnects by itself, so an outage is only noted at first; producers and
    consumers call :meth:`check`, which raises after the timeout and forgets the outage as
    soon as a broker answers again.
    """
    CONFIRM_MS = 1000

    def __init__(self, hosts: Optional[str], timeout_ms: int) -> None:
        self._hosts = hosts
        self._timeout_s = timeout_ms / 1000.0
        self.since: Optional[float] = None  # time.monotonic() when the outage began

    def on_error(self, exc):
        """The ``error_cb`` handler of a producer or consumer: ``_ALL_BROKERS_DOWN`` starts the
        outage clock; a fatal error, a TLS failure (``SslError``) or a refused login
        (``AuthenticationError``) is raised (from the call that polled); the rest are
        transient, librdkafka recovers and logs them itself."""
        if isinstance(exc, NoBrokersAvailableError) and self.since is None:
            self.since = time.monotonic()
        if exc.fatal or security_failure(exc):
            raise exc
        log.debug("%s: %s", self._hosts, exc)

    def check(self, handle):
        """Raise ``NoBrokersAvailableError`` if the outage has lasted ``timeout_ms`` and no
        broker answers a metadata request now (``rd_kafka_metadata``, brokers only)."""
        if self.since is None or time.monotonic() - self.since < self._timeout_s:
            return
        try:
            handle.metadata(timeout_ms=self.CONFIRM_MS, all_topics=False)
        except (KafkaTimeoutError, SocketDisconnectedError, NoBrokersAvailableError) as exc:
            raise NoBrokersAvailableError(
                "no broker of %s has been reachable for %.0f s (%s); calls work again once one is"
                % (self._hosts, time.monotonic() - self.since, exc)) from exc
        self.since = None


class TopicDict(dict):
    """``{name (bytes): Topic}``, filled from metadata; an unknown name is looked up on
    the broker, which creates it where ``auto.create.topics.enable`` allows."""

    def __init__(self, cluster: Cluster, exclude_internal_topics: bool) -> None:
        super().__init__()
        self._cluster = cluster
        self._exclude_internal = exclude_internal_topics

    def __getitem__(self, key: Union[str, bytes]) -> Topic:
        key = to_str(key).encode()
        try:
            return super().__getitem__(key)
        except KeyError:
            return self._cluster._fetch_topic(key.decode())

    # As a dict (pykafka's was one): anything but a topic name is no key of it.
    @staticmethod
    def _name(key):
        try:
            return to_str(key).encode()  # anything but str or bytes: TypeError
        except (TypeError, ValueError):
            return None

    def __contains__(self, key: object) -> bool:
        name = self._name(key)
        return name is not None and super().__contains__(name)

    def get(self, key: object, default: Any = None) -> Any:
        name = self._name(key)
        return default if name is None else super().get(name, default)

    # Iteration goes over a copy, taken at one go (dict's own items, in C): a refresh in
    # another thread (a balanced consumer's) may add or drop a topic while a program's loop runs.
    def _copy(self):
        return dict(dict.items(self))

    def __iter__(self):
        return iter(self._copy())

    def keys(self):
        return self._copy().keys()

    def values(self):
        return self._copy().values()

    def items(self):
        return self._copy().items()

    def excluded(self, name):
        return self._exclude_internal and name.startswith("__")

    def sync(self, topics, complete):
        """Add or update the topics in ``topics`` (``TopicMetadata`` by name); with
        ``complete``, drop those the metadata no longer lists. Threads may sync at once (a
        balanced consumer refreshes the metadata in its own): the names are taken at one go,
        and one dropped meanwhile is no error. A new topic is added only if no other thread
        added it meanwhile (``setdefault``, at one go): a Topic a lookup returned must stay the
        one the refreshes update."""
        for name, tm in topics.items():
            if tm.error or self.excluded(name):
                continue
            key = name.encode()
            topic = super().get(key)
            if topic is None:
                new = Topic(self._cluster, tm)
                topic = super().setdefault(key, new)
                if topic is new:
                    continue
            topic.update(tm)
        if complete:
            for key in [k for k in list(self) if k.decode() not in topics]:
                super().pop(key, None)


class Cluster:
    """The brokers and topics of one Kafka cluster."""
    FIRST_SLICE_MS = 250

    def __init__(self, rdkafka_config: dict[str, Any], socket_timeout_ms: int = 30000,
                 exclude_internal_topics: bool = True, zookeeper_hosts: Optional[str] = None,
                 stats_callback: Optional[Callable[[dict[str, Any]], None]] = None) -> None:
        self.rdkafka_config = dict(rdkafka_config)
        self.zookeeper_hosts = zookeeper_hosts  # the default of balanced consumers
        self.handler = ThreadingHandler()  # for programs that use pykafka's cluster.handler
        self.stats_callback = stats_callback  # the default of producers and consumers
        self._timeout_ms = socket_timeout_ms
        self._handle = Handle("producer", self.metadata_config(), what="KafkaClient")
        self._brokers: dict[int, Broker] = {}
        self._topics = TopicDict(self, exclude_internal_topics)
        try:
            self._update(first=True)
        except BaseException:
            self._handle.close()
            raise

    def config_for(self, kind: str) -> dict[str, Any]:
        """A copy of ``rdkafka_config`` for a handle of ``kind`` ("producer" or "consumer"):
        without the properties librdkafka reads only in the other kind, which it would
        ignore with a CONFWARN (``pyrdk.rd.conf.for_kind``)."""
        return conf.for_kind(self.rdkafka_config, kind)

    def metadata_config(self) -> dict[str, Any]:
        """The configuration of a handle that only asks for metadata and offsets: polled only
        now and then, it keeps no statistics."""
        return {k: v for k, v in self.config_for("producer").items() if k != "statistics.interval.ms"}

    @property
    def closed(self) -> bool:
        """True once the client is closed (``KafkaClient.close()``)."""
        return self._handle.closed

    @property
    def brokers(self) -> dict[int, Broker]:
        """``{broker_id: Broker}``."""
        return self._brokers

    @property
    def topics(self) -> TopicDict:
        """``{name: Topic}`` (a ``TopicDict``)."""
        return self._topics

    def _metadata(self, topic=None, first=False):
        """``rd_kafka_metadata`` within ``socket_timeout_ms``, asked in slices of
        ``FIRST_SLICE_MS`` with error callbacks served between them, so that a TLS failure
        (``SslError``) or a refused login (``AuthenticationError``) is raised as soon as
        librdkafka reports it instead of after the whole timeout, and Ctrl-C gets through.
        A slice grows (doubles) only when a request went out and its answer was late
        (``KafkaTimeoutError``): while no broker is up, the wait for one stays short. The
        ``first`` request of the client gives up early if the bootstrap brokers are
        unreachable (``Handle.unreachable``)."""
        start = time.monotonic()
        deadline = start + self._timeout_ms / 1000.0
        slice_ms = self.FIRST_SLICE_MS
        while True:
            remaining_ms = max(1, int((deadline - time.monotonic()) * 1000))
            try:
                md = self._handle.metadata(topic, timeout_ms=min(slice_ms, remaining_ms))
            except (KafkaTimeoutError, SocketDisconnectedError, NoBrokersAvailableError) as exc:
                self._handle.poll(0)  # serves error callbacks: raises what one of them kept
                hosts = self.rdkafka_config.get("bootstrap.servers")
                if first and self._handle.unreachable(start):
                    raise NoBrokersAvailableError(
                        "no broker of %s could be reached in %d ms (%s): check the address, and that a broker "
                        "runs there" % (hosts, (time.monotonic() - start) * 1000, exc)) from exc
                if remaining_ms <= slice_ms:
                    raise NoBrokersAvailableError("no broker of %s answered a metadata request within %d ms (%s)"
                                                  % (hosts, self._timeout_ms, exc)) from exc
                if isinstance(exc, KafkaTimeoutError):
                    slice_ms *= 2
                continue
            self._handle.poll(0)  # serve log lines and error callbacks
            return md

    def _update_brokers(self, brokers):
        """Take the brokers of fresh metadata. A change comes in a new dict: a refresh in
        another thread (a producer's poller, a balanced consumer's) must not change the one a
        program's loop goes through."""
        old = self._brokers
        new = {bm.id: old[bm.id] if bm.id in old and (old[bm.id]._host, old[bm.id].port) == (bm.host, bm.port)
               else Broker(bm.id, bm.host, bm.port, self) for bm in brokers}
        if new != old or any(new[i] is not old[i] for i in new):
            self._brokers = new

    def update(self) -> None:
        """Refresh brokers and topics from the cluster metadata (``rd_kafka_metadata``)."""
        self._update()

    def _update(self, first=False):
        md = self._metadata(first=first)
        self._update_brokers(md.brokers)
        self._topics.sync(md.topics, complete=True)

    def refresh_topic(self, topic: Topic, handle: Optional[Handle] = None, timeout_ms: Optional[int] = None) -> bool:
        """Take ``topic``'s partitions and leaders, and the brokers, from a metadata request
        of that topic alone (``rd_kafka_metadata``), through the client's handle or
        ``handle``: a producer's or consumer's own, which outlives a closed client (within
        ``timeout_ms``, by default ``socket_timeout_ms``). False if the answer does not list
        the topic (deleted, or being created); a failed request raises."""
        name = topic.name.decode()
        md = self._metadata(name) if handle is None else \
            handle.metadata(name, timeout_ms=timeout_ms or self._timeout_ms, all_topics=False)
        tm = md.topics.get(name)
        if tm is None or tm.error or not tm.partitions:
            return False
        self._update_brokers(md.brokers)
        topic.update(tm)
        return True

    def _fetch_topic(self, name):
        """Look up one topic by name, letting the broker create it if it does so; retries
        while the topic is being created, for up to ``socket_timeout_ms``."""
        if self._topics.excluded(name):
            raise InternalTopicExcluded("%r is an internal topic, hidden by exclude_internal_topics=True: "
                                        "make the KafkaClient with exclude_internal_topics=False to use it"
                                        % name)
        deadline = time.monotonic() + self._timeout_ms / 1000.0
        delay = 0.05
        while True:
            md = self._metadata(name)
            tm = md.topics.get(name)
            if tm is not None and not tm.error and tm.partitions:
                self._update_brokers(md.brokers)
                self._topics.sync({name: tm}, complete=False)
                return dict.__getitem__(self._topics, name.encode())
            code = tm.error if tm is not None else 3
            if code not in _TOPIC_PENDING:  # not missing: refused (authorization, an invalid name...)
                raise for_code(code)("the broker refused the metadata of topic %r: %s (error %d)"
                                     % (name, errors.err2str(code), code), code=code)
            if time.monotonic() + delay > deadline:
                raise for_code(code)("Unknown topic %r: the broker answered error %d and does not "
                                     "create topics on demand; create it first" % (name, code),
                                     code=code)
            time.sleep(delay)
            delay = min(delay * 2, 1.0)

    @property
    def controller_broker(self) -> Optional[Broker]:
        """The controller ``Broker`` (``rd_kafka_controllerid``), or None if unknown."""
        return self._brokers.get(self._handle.controller_id(self._timeout_ms))

    def get_group_coordinator(self, consumer_group: Union[str, bytes]) -> Broker:
        """The ``Broker`` coordinating ``consumer_group`` (``rd_kafka_DescribeConsumerGroups``)."""
        bm = admin.group_coordinator(self._handle, _group_id(consumer_group, "consumer_group"),
                                     self._timeout_ms)
        if bm is None:
            raise KafkaException("no coordinator found for group %r" % consumer_group)
        broker = self._brokers.get(bm.id)
        return broker if broker is not None else Broker(bm.id, bm.host, bm.port, self)

    get_offset_manager = get_group_coordinator  # pykafka < 2.3 name

    def create_topics(self, topic_reqs: Any, timeout: int = 0) -> None:
        """Create topics (``rd_kafka_CreateTopics``); raise the first error.

        :param topic_reqs: ``(name, num_partitions, replication_factor[, config])`` tuples, or
            objects with pykafka's ``topic_name``, ``num_partitions``, ``replication_factor``
            and ``config_entries`` attributes (``pyrdk.protocol.CreateTopicRequest``), or one
            ``pyrdk.protocol.CreateTopicsRequest`` holding them and a timeout
        :param timeout: ms to wait (0: ``socket_timeout_ms``)
        """
        if hasattr(topic_reqs, "topic_requests"):  # a CreateTopicsRequest
            timeout = timeout or topic_reqs.timeout
            topic_reqs = topic_reqs.topic_requests
        one = hasattr(topic_reqs, "topic_name") or (
            isinstance(topic_reqs, tuple) and bool(topic_reqs) and isinstance(topic_reqs[0], (str, bytes)))
        timeout = _admin_timeout(timeout, self._timeout_ms)
        reqs = [_topic_request(req) for req in _list_of("create_topics", topic_reqs, "requests", one,
                                                           "(%r, num_partitions, replication_factor)")]
        _refuse_twice("create_topics", [r[0] for r in reqs], "requested")
        if not reqs:  # as pykafka's empty request; librdkafka refuses an empty list
            return
        results = admin.create_topics(self._handle, reqs, timeout)
        self._raise_first(results)
        self.update()

    def delete_topics(self, topics: Iterable[Union[str, bytes]], timeout: int = 0) -> None:
        """Delete topics by name (``rd_kafka_DeleteTopics``); raise the first error.

        :param topics: names (bytes or str) or ``Topic``s, or one
            ``pyrdk.protocol.DeleteTopicsRequest`` holding names and a timeout
        :param timeout: ms to wait (0: ``socket_timeout_ms``)
        """
        if not isinstance(topics, (list, tuple)) and hasattr(topics, "topics") and \
                hasattr(topics, "timeout"):  # a DeleteTopicsRequest
            timeout = timeout or topics.timeout
            topics = topics.topics
        timeout = _admin_timeout(timeout, self._timeout_ms)
        # each once (b"t" and "t" are one topic): the brokers answer a name given twice in ways
        # librdkafka cannot parse
        names = list(dict.fromkeys(to_str(t.name if isinstance(t, Topic) else t)
                                   for t in _list_of("delete_topics", topics, "topic names")))
        if not names:  # as pykafka's empty request; librdkafka refuses an empty list
            return
        results = admin.delete_topics(self._handle, names, timeout)
        self._raise_first(results)
        self.update()

    def _group_handle(self, consumer_group):
        """A consumer-type handle of ``consumer_group`` that joins nothing: it only commits and
        fetches the group's offsets. Close it after use. A closed client makes none
        (``KafkaException``), as it makes no producer or consumer."""
        self.check_open()
        config = self.config_for("consumer")
        config.update({"group.id": _group_id(consumer_group, "consumer_group"),
                       "enable.auto.commit": False,
                       # how long librdkafka holds a commit that finds no coordinator (and
                       # rd_kafka_destroy waits for it): socket_timeout_ms, as the commit's wait
                       "session.timeout.ms": min(self._timeout_ms, 3600000),
                       "heartbeat.interval.ms": max(1, min(3000, self._timeout_ms // 3))})
        if librdkafka_runtime_version() >= 0x02040000:  # group.protocol: since 2.4.0
            config["group.protocol"] = "classic"  # a handle that joins nothing: the one with that setting
        return Handle("consumer", config, what="offsets of group %r" % consumer_group)

    def commit_consumer_group_offsets(self, consumer_group: Union[str, bytes],
                                      preqs: Iterable[Any]) -> GroupOffsetsResponse:
        """Commit offsets for ``consumer_group`` (``rd_kafka_commit`` from outside the group,
        as pykafka's kafka-tools does); raise the first error.

        :param preqs: objects with pykafka's ``PartitionOffsetCommitRequest`` attributes
            ``topic_name``, ``partition_id``, ``offset`` (the next offset to read) and
            ``metadata`` (bytes or str, written into the commit; may be absent)
        :returns: pykafka's ``OffsetCommitResponse`` shape: ``.topics[name][partition].err``
        """
        tps = []
        for req in _list_of("commit_consumer_group_offsets", preqs, "PartitionOffsetCommitRequests",
                            one=hasattr(preqs, "topic_name")):
            check_int("the offset of %s [%s]" % (req.topic_name, req.partition_id), req.offset, 0)
            tps.append(TopicPartition(to_str(req.topic_name), check_int("partition_id", req.partition_id, 0),
                                      req.offset, metadata=_commit_metadata(getattr(req, "metadata", None))))
        topics: dict[bytes, dict[int, Any]] = {}
        if tps:
            handle = self._group_handle(consumer_group)
            try:
                handle.commit(tps, timeout_ms=self._timeout_ms)
            finally:
                handle.close()
        for tp in tps:
            topics.setdefault(tp.topic.encode(), {})[tp.partition] = OffsetCommitPartitionResponse(0)
        return GroupOffsetsResponse(topics)

    def fetch_consumer_group_offsets(self, consumer_group: Union[str, bytes],
                                     preqs: Iterable[Any]) -> GroupOffsetsResponse:
        """The offsets ``consumer_group`` committed (``rd_kafka_committed``).

        :param preqs: objects with pykafka's ``PartitionOffsetFetchRequest`` attributes
            ``topic_name`` and ``partition_id``
        :returns: pykafka's ``OffsetFetchResponse`` shape: ``.topics[name][partition]`` is an
            ``OffsetFetchPartitionResponse(offset, metadata, err)``; ``offset`` is -1 where the
            group committed none, ``metadata`` the commit's (bytes; b"" if none came back)
        """
        tps = [(to_str(req.topic_name), check_int("partition_id", req.partition_id, 0))
               for req in _list_of("fetch_consumer_group_offsets", preqs, "PartitionOffsetFetchRequests",
                                   one=hasattr(preqs, "topic_name"))]
        topics: dict[bytes, dict[int, Any]] = {}
        if tps:
            handle = self._group_handle(consumer_group)
            try:
                committed = handle.committed(tps, self._timeout_ms)
            finally:
                handle.close()
            for tp in committed:
                topics.setdefault(tp.topic.encode(), {})[tp.partition] = OffsetFetchPartitionResponse(
                    tp.offset if tp.offset >= 0 else -1, tp.metadata or b"", tp.error)
        return GroupOffsetsResponse(topics)

    @staticmethod
    def _raise_first(results):
        for exc in results.values():
            if exc is not None:
                raise exc

    def list_groups(self) -> dict[bytes, Any]:
        """``{group_id (bytes): GroupListing(group_id, protocol_type)}`` (``rd_kafka_list_groups``)."""
        groups = admin.list_groups(self._handle, None, self._timeout_ms)
        return {g.group_id.encode(): GroupListing(g.group_id.encode(), (g.protocol_type or "").encode())
                for g in groups}

    def describe_groups(self, group_ids: Iterable[Union[str, bytes]]) -> dict[bytes, Any]:
        """``{group_id (bytes): GroupInfo}`` with state, protocol and members
        (``rd_kafka_list_groups`` for each group)."""
        out = {}
        for group in _list_of("describe_groups", group_ids, "group ids"):
            for info in admin.list_groups(self._handle, to_str(group, "group id"), self._timeout_ms):
                out[info.group_id.encode()] = info
        return out

    def get_managed_group_descriptions(self) -> dict[bytes, Any]:
        """pykafka's ``{group_id (bytes): GroupInfo}`` of every group the brokers list: what
        :meth:`describe_groups` says of the groups of :meth:`list_groups`."""
        groups = list(self.list_groups())
        return self.describe_groups(groups) if groups else {}

    # -- groups ----------------------------------------------------------------------------------

    def list_consumer_groups(self) -> list[Any]:
        """Every group the brokers coordinate, as ``GroupListing(group_id, is_simple, state)``
        (``rd_kafka_ListConsumerGroups``)."""
        return admin.list_consumer_groups(self._handle, self._timeout_ms)

    def describe_consumer_groups(self, group_ids: Iterable[Union[str, bytes]]) -> dict[str, Any]:
        """``{group_id (str): GroupDescription}``: state, assignor, coordinator and members with
        their assignments (``rd_kafka_DescribeConsumerGroups``)."""
        names = [_group_id(g) for g in _list_of("describe_consumer_groups", group_ids, "group ids")]
        return admin.describe_consumer_groups(self._handle, names, self._timeout_ms) if names else {}

    def delete_groups(self, group_ids: Iterable[Union[str, bytes]]) -> None:
        """Delete consumer groups and their committed offsets (``rd_kafka_DeleteGroups``); the
        groups must have no members. Raises the first error."""
        names = [_group_id(g) for g in _list_of("delete_groups", group_ids, "group ids")]
        self._raise_first(admin.delete_groups(self._handle, names, self._timeout_ms))

    def list_consumer_group_offsets(self, consumer_group: Union[str, bytes],
                                    partitions: Optional[Iterable[tuple[Union[str, bytes], int]]] = None
                                    ) -> dict[tuple[str, int], int]:
        """``{(topic, partition): offset}`` that ``consumer_group`` committed (the next offset
        it will read; -1001 where it committed none), for ``(topic, partition)`` pairs or, with
        None, every partition it committed (``rd_kafka_ListConsumerGroupOffsets``)."""
        group = _group_id(consumer_group, "consumer_group")
        tps = None if partitions is None else list(dict.fromkeys(  # each once: librdkafka refuses duplicates
            _pair("list_consumer_group_offsets", item)
            for item in _list_of("list_consumer_group_offsets", partitions, "(topic, partition) pairs")))
        if tps == []:
            return {}
        return {(tp.topic, tp.partition): tp.offset
                for tp in admin.list_group_offsets(self._handle, group, tps, self._timeout_ms)}

    def alter_consumer_group_offsets(self, consumer_group: Union[str, bytes],
                                     offsets: dict[tuple[Union[str, bytes], int], int]) -> None:
        """Commit ``{(topic, partition): offset}`` (the next offset to read) for a group that is
        not running (``rd_kafka_AlterConsumerGroupOffsets``). A group with members raises
        ``NonEmptyGroupError`` before anything is written."""
        group = _group_id(consumer_group, "consumer_group")
        items = _offsets_of("alter_consumer_group_offsets", offsets)
        for (topic, partition), offset in items:
            check_int("offset of %s [%s]" % (topic, partition), offset, 0)
        description = self._group_description(group)
        if description is not None and (description.members or description.state in _ACTIVE_STATES):
            raise NonEmptyGroupError("group %r is running (state %s, %d member(s)): stop its members before "
                                     "altering its offsets" % (group, description.state, len(description.members)))
        try:
            admin.alter_group_offsets(self._handle, group, [(t, p, o) for (t, p), o in items],
                                      self._timeout_ms)
        except UnknownMemberId as exc:  # what Kafka answers for a group with members
            raise NonEmptyGroupError("group %r is running: stop its members before altering its offsets (%s)"
                                     % (group, exc)) from exc

    def _group_description(self, group):
        try:
            return self.describe_consumer_groups([group]).get(group)
        except GroupIdNotFoundError:
            return None

    def consumer_lag(self, consumer_group: Union[str, bytes], topics: Optional[Iterable[Union[str, bytes]]] = None
                     ) -> dict[bytes, dict[int, PartitionLag]]:
        """``{topic (bytes): {partition id: PartitionLag}}`` of ``consumer_group``, without
        joining it: committed offset, log start and end, lag, owner (see :mod:`pyrdk.lag`).
        ``topics`` (names) limits it; None takes every topic the group has offsets, members or
        znodes for. With the client's ``zookeeper_hosts``, offsets committed to ZooKeeper and
        pykafka's ownership znodes are read too."""
        from pyrdk.lag import consumer_lag  # which checks the group and the topics
        return consumer_lag(self, consumer_group, topics, self.zookeeper_hosts)

    # -- topics and records ------------------------------------------------------------------------

    def list_topics(self, include_internal: bool = False) -> list[bytes]:
        """The names (bytes) of every topic, fresh from the metadata; internal ones (``__``...)
        only with ``include_internal``."""
        md = self._metadata()
        return sorted(name.encode() for name, tm in md.topics.items()
                      if not tm.error and (include_internal or not name.startswith("__")))

    def create_partitions(self, topic_totals: Iterable[tuple[Union[str, bytes, Topic], int]], timeout: int = 0) -> None:
        """Grow topics to ``[(name, total partition count)]`` (``rd_kafka_CreatePartitions``);
        raise the first error."""
        reqs = []
        timeout = _admin_timeout(timeout, self._timeout_ms)
        for item in _list_of("create_partitions", topic_totals, "(topic, total) pairs", item="(%r, total)"):
            if not isinstance(item, (tuple, list)) or len(item) != 2:
                raise TypeError("create_partitions takes (topic, total) pairs, not %r" % (item,))
            name, total = item
            reqs.append((to_str(name.name if isinstance(name, Topic) else name), check_int("total", total, 1)))
        _refuse_twice("create_partitions", [r[0] for r in reqs])
        self._raise_first(admin.create_partitions(self._handle, reqs, timeout))
        self.update()

    def delete_records(self, offsets: dict[tuple[Union[str, bytes], int], int],
                       timeout: int = 0) -> dict[tuple[str, int], int]:
        """Delete the records before ``{(topic, partition): offset}`` (``rd_kafka_DeleteRecords``);
        ``OffsetType.LATEST`` deletes all. Returns ``{(topic, partition): new log start}``."""
        timeout = _admin_timeout(timeout, self._timeout_ms)
        tps = []
        for (topic, partition), offset in _offsets_of("delete_records", offsets):
            if offset != OffsetType.LATEST:
                check_int("offset of %s [%s]" % (topic, partition), offset, 0)
            tps.append((topic, partition, offset))
        if not tps:
            return {}
        return {(tp.topic, tp.partition): tp.offset
                for tp in admin.delete_records(self._handle, tps, timeout)}

    # -- configs -------------------------------------------------------------------------------

    def _resource(self, topic, broker):
        """``("topic", name)`` or ``("broker", id)``; a broker id the cluster does not have (in
        fresh metadata) is a ValueError: librdkafka would wait socket_timeout_ms for it."""
        if (topic is None) == (broker is None):
            raise TypeError("name exactly one of topic= or broker=")
        if topic is not None:
            return "topic", to_str(topic.name if isinstance(topic, Topic) else topic)
        check_int("broker", broker, 0)
        if broker not in self._brokers:
            self.update()
            if broker not in self._brokers:
                raise ValueError("broker=%d: the cluster has no such broker (its brokers: %s)"
                                 % (broker, ", ".join(str(b) for b in sorted(self._brokers)) or "none"))
        return "broker", str(broker)

    def describe_configs(self, topic: Union[str, bytes, Topic, None] = None,
                         broker: Optional[int] = None) -> dict[str, Any]:
        """``{name: ConfigEntry(name, value, source, is_default, is_read_only, is_sensitive)}``
        of one topic or broker (``rd_kafka_DescribeConfigs``)."""
        spec = self._resource(topic, broker)
        entries = admin.describe_configs(self._handle, [spec], self._timeout_ms)
        return {e.name: e for e in next(iter(entries.values()), [])}

    def alter_configs(self, changes: dict[str, Optional[str]], topic: Union[str, bytes, Topic, None] = None,
                      broker: Optional[int] = None) -> None:
        """Change some configs of one topic or broker and leave the others as they are
        (``rd_kafka_IncrementalAlterConfigs``): ``changes`` maps names to new values, or to
        None to return to the default."""
        spec = self._resource(topic, broker)
        if not isinstance(changes, dict) or not changes:
            raise TypeError("changes must be a non-empty dict {name: value or None}, not %r" % (changes,))
        entries = [(to_str(k, "config name"), "delete" if v is None else "set",
                    None if v is None else _config_value(k, v))
                   for k, v in sorted(changes.items())]
        admin.incremental_alter_configs(self._handle, [spec + (entries,)], self._timeout_ms)

    def statistics(self, config, statistics_interval_ms=None, stats_callback=None):
        """Set ``statistics.interval.ms`` in a producer's or consumer's ``config`` and return
        the ``stats_callback`` its handle gets; None takes the client's."""
        if statistics_interval_ms is not None:
            config["statistics.interval.ms"] = check_int("statistics_interval_ms", statistics_interval_ms, 0)
        if stats_callback is not None and not callable(stats_callback):
            raise TypeError("stats_callback must be callable (stats dict) -> None, not %r" % (stats_callback,))
        return stats_callback or self.stats_callback

    @staticmethod
    def check_statistics(config, stats_callback):
        """A ``stats_callback`` given to one producer or consumer is called with librdkafka's
        statistics: with them off in its final ``config`` (``statistics_interval_ms`` 0 there
        and on the client, none in ``rdkafka_config``) it would never be; ValueError."""
        if stats_callback is not None and not stats_enabled(config):
            raise ValueError("stats_callback is called with librdkafka's statistics, which are off: give "
                             "statistics_interval_ms > 0 too (or on the KafkaClient)")

    @property
    def timeout_ms(self) -> int:
        """``socket_timeout_ms``: the bound on every request of the cluster."""
        return self._timeout_ms

    def broker_outage(self):
        """A :class:`BrokerOutage` for a producer or consumer of this cluster."""
        return BrokerOutage(self.rdkafka_config.get("bootstrap.servers"), self._timeout_ms)

    def offsets_for_times(self, tps):
        """``rd_kafka_offsets_for_times`` for ``(topic, partition, timestamp)`` tuples, within
        ``socket_timeout_ms`` (see :meth:`pyrdk.rd.handle.Handle.offsets_for_times`)."""
        try:
            return self._handle.offsets_for_times(tps, self._timeout_ms)
        finally:
            self._handle.poll(0)

    def close(self) -> None:
        """Close the metadata handle."""
        self._handle.close()

    def check_open(self) -> None:
        """Raise ``KafkaException`` once the client is closed: it makes no more producers
        or consumers."""
        if self._handle.closed:
            raise self._handle.refusal()

    def __repr__(self):
        return "<pyrdk.cluster.Cluster at %#x (hosts=%s)>" % (
            id(self), self.rdkafka_config.get("bootstrap.servers"))
