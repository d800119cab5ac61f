"""Cluster: brokers and topics from the cluster metadata, plus administration
(pykafka's ``Cluster``).

One producer-type ``rd_kafka_t`` serves metadata (``rd_kafka_metadata``), offset queries
(``rd_kafka_offsets_for_times``) and the Admin API; its base configuration is also the
base of every producer and consumer the cluster makes.
"""
import collections
import logging
import time

from pyrdk.broker import Broker
from pyrdk.common import check_int
from pyrdk.exceptions import (KafkaException, KafkaTimeoutError, NoBrokersAvailableError,
                              SocketDisconnectedError, UnknownTopicOrPartition, for_code)
from pyrdk.rd import admin
from pyrdk.rd.callbacks import security_failure
from pyrdk.rd.handle import Handle
from pyrdk.topic import Topic

log = logging.getLogger(__name__)

GroupListing = collections.namedtuple("GroupListing", "group_id protocol_type")

# Kafka codes that mean "the topic is being created, ask again".
_TOPIC_PENDING = (3, 5)  # UNKNOWN_TOPIC_OR_PART, LEADER_NOT_AVAILABLE


def to_str(name, what="topic name"):
    """A topic or group name given as bytes or str, as str."""
    if isinstance(name, bytes):
        return name.decode()
    if isinstance(name, str):
        return name
    raise TypeError("%s must be bytes or str, not %s" % (what, type(name).__name__))


def _list_of(method, items, what, one=False):
    """``items`` as a list. One name (a str, bytes or Topic), or one request when ``one``
    says so, is refused rather than taken apart: ``delete_topics("abc")`` must not delete
    topics "a", "b" and "c"."""
    if one or isinstance(items, (str, bytes, Topic)):
        raise TypeError("%s takes a list of %s, not one: use [%r]" % (method, what, items))
    try:
        return list(items)
    except TypeError:
        raise TypeError("%s takes a list of %s, not %s" % (method, what, type(items).__name__)) from None


_REQUEST_SHAPE = "a (name, num_partitions, replication_factor[, config]) tuple"


def _topic_request(req):
    """``(name, num_partitions, replication_factor, config)`` of one ``create_topics``
    request: a ``(name, num_partitions, replication_factor[, config])`` tuple or an object
    with pykafka's ``CreateTopicRequest`` attributes."""
    if isinstance(req, (tuple, list)):
        if len(req) not in (3, 4):
            raise TypeError("a create_topics request is %s, not %r" % (_REQUEST_SHAPE, req))
        name, num_partitions, replication_factor = req[:3]
        config = req[3] if len(req) == 4 else None
    elif hasattr(req, "topic_name"):
        name, num_partitions = req.topic_name, req.num_partitions
        replication_factor = req.replication_factor
        config = dict(getattr(req, "config_entries", None) or [])
    else:
        raise TypeError("a create_topics request is %s or has pykafka's topic_name, num_partitions "
                        "and replication_factor, not %r" % (_REQUEST_SHAPE, req))
    for field, value in (("num_partitions", num_partitions), ("replication_factor", replication_factor)):
        check_int("%s of topic %r" % (field, name), value, -1)
        if value == 0:  # Kafka refuses 0 (INVALID_PARTITIONS), Tansu does not
            raise ValueError("%s of topic %r must be at least 1, or -1 for the broker's default, not 0"
                             % (field, name))
    if config is not None and not isinstance(config, dict):
        raise TypeError("the config of topic %r must be a dict {name: value}, not %r" % (name, config))
    return (to_str(name), num_partitions, replication_factor,
            {to_str(k, "config key"): to_str(v, "config value") if isinstance(v, bytes) else v
             for k, v in (config or {}).items()})


class BrokerOutage:
    """Turns librdkafka's ``_ALL_BROKERS_DOWN`` into ``NoBrokersAvailableError`` once no broker
    has been reachable for ``timeout_ms``, confirmed by a metadata request.

    librdkafka reconnects by itself, so an outage is only noted at first; producers and
    consumers call :meth:`check`, which raises after the timeout and forgets the outage as
    soon as a broker answers again.
    """
    CONFIRM_MS = 1000

    def __init__(self, hosts, timeout_ms):
        self._hosts = hosts
        self._timeout_s = timeout_ms / 1000.0
        self.since = None

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

    def __init__(self, cluster, exclude_internal_topics):
        super().__init__()
        self._cluster = cluster
        self._exclude_internal = exclude_internal_topics

    def __getitem__(self, key):
        key = to_str(key).encode()
        try:
            return super().__getitem__(key)
        except KeyError:
            return self._cluster._fetch_topic(key.decode())

    def __contains__(self, key):
        return super().__contains__(to_str(key).encode())

    def get(self, key, default=None):
        return super().get(to_str(key).encode(), default)

    def excluded(self, name):
        return self._exclude_internal and name.startswith("__")

    def sync(self, topics, complete):
        """Add or update the topics in ``topics`` (``TopicMetadata`` by name); with
        ``complete``, drop those the metadata no longer lists."""
        for name, tm in topics.items():
            if tm.error or self.excluded(name):
                continue
            key = name.encode()
            topic = super().get(key)
            if topic is None:
                super().__setitem__(key, Topic(self._cluster, tm))
            else:
                topic.update(tm)
        if complete:
            for key in [k for k in self.keys() if k.decode() not in topics]:
                super().__delitem__(key)


class Cluster:
    """The brokers and topics of one Kafka cluster."""
    FIRST_SLICE_MS = 250

    def __init__(self, rdkafka_config, socket_timeout_ms=30000, exclude_internal_topics=True,
                 zookeeper_hosts=None):
        self.rdkafka_config = dict(rdkafka_config)
        self.zookeeper_hosts = zookeeper_hosts  # the default of balanced consumers
        self._timeout_ms = socket_timeout_ms
        self._handle = Handle("producer", self.rdkafka_config, what="KafkaClient")
        self._brokers = {}
        self._topics = TopicDict(self, exclude_internal_topics)
        try:
            self.update()
        except BaseException:
            self._handle.close()
            raise

    @property
    def brokers(self):
        """``{broker_id: Broker}``."""
        return self._brokers

    @property
    def topics(self):
        """``{name: Topic}`` (a ``TopicDict``)."""
        return self._topics

    def _metadata(self, topic=None):
        """``rd_kafka_metadata`` within ``socket_timeout_ms``, asked in growing slices (from
        ``FIRST_SLICE_MS``) with error callbacks served between them, so that a TLS failure
        (``SslError``) or a refused login (``AuthenticationError``) is raised as soon as
        librdkafka reports it instead of after the whole timeout."""
        deadline = time.monotonic() + self._timeout_ms / 1000.0
        slice_ms = self.FIRST_SLICE_MS
        while True:
            remaining_ms = max(1, int((deadline - time.monotonic()) * 1000))
            try:
                md = self._handle.metadata(topic, timeout_ms=min(slice_ms, remaining_ms))
            except (KafkaTimeoutError, SocketDisconnectedError, NoBrokersAvailableError) as exc:
                self._handle.poll(0)  # serves error callbacks: raises what one of them kept
                if remaining_ms <= slice_ms:
                    raise NoBrokersAvailableError(
                        "no broker of %s answered a metadata request within %d ms (%s)"
                        % (self.rdkafka_config.get("bootstrap.servers"), self._timeout_ms, exc)) from exc
                slice_ms *= 2
                continue
            self._handle.poll(0)  # serve log lines and error callbacks
            return md

    def _update_brokers(self, brokers):
        for bm in brokers:
            broker = self._brokers.get(bm.id)
            if broker is None or (broker.host, broker.port) != (bm.host, bm.port):
                self._brokers[bm.id] = Broker(bm.id, bm.host, bm.port, self)
        for gone in set(self._brokers) - {bm.id for bm in brokers}:
            del self._brokers[gone]

    def update(self):
        """Refresh brokers and topics from the cluster metadata (``rd_kafka_metadata``)."""
        md = self._metadata()
        self._update_brokers(md.brokers)
        self._topics.sync(md.topics, complete=True)

    def _fetch_topic(self, name):
        """Look up one topic by name, letting the broker create it if it does so; retries
        while the topic is being created, for up to ``socket_timeout_ms``."""
        if self._topics.excluded(name):
            raise UnknownTopicOrPartition("%r is an internal topic (exclude_internal_topics=True)" % name)
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
            if code not in _TOPIC_PENDING or time.monotonic() + delay > deadline:
                raise for_code(code)("Unknown topic %r: the broker answered error %d and does not "
                                     "create topics on demand; create it first" % (name, code),
                                     code=code)
            time.sleep(delay)
            delay = min(delay * 2, 1.0)

    @property
    def controller_broker(self):
        """The controller ``Broker`` (``rd_kafka_controllerid``), or None if unknown."""
        return self._brokers.get(self._handle.controller_id(self._timeout_ms))

    def get_group_coordinator(self, consumer_group):
        """The ``Broker`` coordinating ``consumer_group`` (``rd_kafka_DescribeConsumerGroups``)."""
        bm = admin.group_coordinator(self._handle, to_str(consumer_group, "consumer_group"),
                                     self._timeout_ms)
        if bm is None:
            raise KafkaException("no coordinator found for group %r" % consumer_group)
        broker = self._brokers.get(bm.id)
        return broker if broker is not None else Broker(bm.id, bm.host, bm.port, self)

    get_offset_manager = get_group_coordinator  # pykafka < 2.3 name

    def create_topics(self, topic_reqs, timeout=0):
        """Create topics (``rd_kafka_CreateTopics``); raise the first error.

        :param topic_reqs: ``(name, num_partitions, replication_factor[, config])`` tuples, or
            objects with pykafka's ``topic_name``, ``num_partitions``, ``replication_factor``
            and ``config_entries`` attributes
        :param timeout: ms to wait (0: ``socket_timeout_ms``)
        """
        one = isinstance(topic_reqs, tuple) and bool(topic_reqs) and isinstance(topic_reqs[0], (str, bytes))
        reqs = [_topic_request(req) for req in _list_of("create_topics", topic_reqs, "requests", one)]
        results = admin.create_topics(self._handle, reqs, timeout or self._timeout_ms)
        self._raise_first(results)
        self.update()

    def delete_topics(self, topics, timeout=0):
        """Delete topics by name (``rd_kafka_DeleteTopics``); raise the first error."""
        names = [to_str(t.name if isinstance(t, Topic) else t)
                 for t in _list_of("delete_topics", topics, "topic names")]
        results = admin.delete_topics(self._handle, names, timeout or self._timeout_ms)
        self._raise_first(results)
        self.update()

    @staticmethod
    def _raise_first(results):
        for exc in results.values():
            if exc is not None:
                raise exc

    def list_groups(self):
        """``{group_id (bytes): GroupListing(group_id, protocol_type)}`` (``rd_kafka_list_groups``)."""
        groups = admin.list_groups(self._handle, None, self._timeout_ms)
        return {g.group_id.encode(): GroupListing(g.group_id.encode(), (g.protocol_type or "").encode())
                for g in groups}

    def describe_groups(self, group_ids):
        """``{group_id (bytes): GroupInfo}`` with state, protocol and members
        (``rd_kafka_list_groups`` for each group)."""
        out = {}
        for group in group_ids:
            for info in admin.list_groups(self._handle, to_str(group, "group id"), self._timeout_ms):
                out[info.group_id.encode()] = info
        return out

    def broker_outage(self):
        """A :class:`BrokerOutage` for a producer or consumer of this cluster."""
        return BrokerOutage(self.rdkafka_config.get("bootstrap.servers"), self._timeout_ms)

    def offsets_for_times(self, tps):
        """``rd_kafka_offsets_for_times`` for ``(topic, partition, timestamp)`` tuples."""
        try:
            return self._handle.offsets_for_times(tps, self._timeout_ms)
        finally:
            self._handle.poll(0)

    def close(self):
        """Close the metadata handle."""
        self._handle.close()

    def check_open(self):
        """Raise ``KafkaException`` once the client is closed: it makes no more producers
        or consumers."""
        if self._handle.closed:
            raise self._handle.refusal()

    def __repr__(self):
        return "<pyrdk.cluster.Cluster at %#x (hosts=%s)>" % (
            id(self), self.rdkafka_config.get("bootstrap.servers"))
