"""pykafka's ``pykafka.protocol``: the request classes programs build themselves, and
``Message``.

librdkafka speaks the wire protocol, so these are plain data with pykafka's constructors and
attributes (no ``get_bytes``), taken by pyrdk's admin and offset calls where pykafka's were::

    client.cluster.controller_broker.create_topics([CreateTopicRequest(b"t", 3, 1, [], [])])
    client.cluster.controller_broker.delete_topics([b"t"])
    broker = client.cluster.get_group_coordinator(b"group")
    broker.commit_consumer_group_offsets(b"group", -1, b"", [
        PartitionOffsetCommitRequest(b"t", 0, 42, int(time.time() * 1000), b"")])
    broker.fetch_consumer_group_offsets(b"group", [PartitionOffsetFetchRequest(b"t", 0)])

``Message`` is the type of every message pyrdk's producers and consumers hand out
(``isinstance(message, Message)`` holds for them, as in pykafka), with pykafka's constructor.
"""
import abc
import collections
import datetime
import time

from pyrdk import common
from pyrdk.common import (CompressionType, OffsetCommitPartitionResponse, OffsetFetchPartitionResponse,
                          OffsetPartitionResponse)

__all__ = ["CreateTopicRequest", "CreateTopicsRequest", "DeleteTopicsRequest", "Message",
           "OffsetCommitPartitionResponse", "OffsetFetchPartitionResponse", "OffsetPartitionResponse",
           "PartitionOffsetCommitRequest", "PartitionOffsetFetchRequest"]

CreateTopicRequest = collections.namedtuple(
    "CreateTopicRequest", "topic_name num_partitions replication_factor replica_assignment config_entries")
CreateTopicRequest.__doc__ = """One topic to create: ``topic_name`` (bytes or str),
``num_partitions``, ``replication_factor``, ``replica_assignment`` (must be empty: pyrdk lets
the brokers place replicas) and ``config_entries`` (``[(name, value)]``)."""

PartitionOffsetCommitRequest = collections.namedtuple(
    "PartitionOffsetCommitRequest", "topic_name partition_id offset timestamp metadata")
PartitionOffsetCommitRequest.__doc__ = """The offset to commit for one partition: ``topic_name``,
``partition_id``, ``offset`` (the next offset the group reads), ``timestamp`` (kept for pykafka
programs; Kafka keeps the commit's own time) and ``metadata`` (bytes or str, written into the
commit and returned with the offset by ``fetch_consumer_group_offsets``)."""

PartitionOffsetFetchRequest = collections.namedtuple("PartitionOffsetFetchRequest", "topic_name partition_id")
PartitionOffsetFetchRequest.__doc__ = """One partition whose committed offset to fetch."""


class CreateTopicsRequest:
    """Topics to create: ``topic_requests`` (``CreateTopicRequest``s) and ``timeout`` (ms);
    ``cluster.create_topics(request)`` takes it."""

    def __init__(self, topic_requests, timeout=0):
        self.topic_requests = topic_requests
        self.timeout = timeout

    def __repr__(self):
        return "CreateTopicsRequest(%r, timeout=%r)" % (self.topic_requests, self.timeout)


class DeleteTopicsRequest:
    """Topics to delete: ``topics`` (names) and ``timeout`` (ms);
    ``cluster.delete_topics(request)`` takes it."""

    def __init__(self, topics, timeout=0):
        self.topics = topics
        self.timeout = timeout

    def __repr__(self):
        return "DeleteTopicsRequest(%r, timeout=%r)" % (self.topics, self.timeout)


class _MessageType(abc.ABCMeta):
    """Makes every ``pyrdk.common.Message`` (what producers and consumers hand out, whichever
    core made it) an instance of ``protocol.Message``, as pykafka's were."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, common.Message)

    def __subclasscheck__(cls, subclass):
        # By the class tree alone: common.Message's own check asks its subclasses, this one
        # among them, in turn.
        return type.__subclasscheck__(common.Message, subclass)


_EPOCH = datetime.datetime(1970, 1, 1)


def _timestamp_ms(timestamp, protocol_version):
    if timestamp is None:
        if protocol_version > 0:  # pykafka: a v1 message made without a time is made now
            return int(time.time() * 1000)
        return None
    if isinstance(timestamp, datetime.datetime):
        if timestamp.tzinfo is not None:
            return int(timestamp.timestamp() * 1000)
        return int((timestamp - _EPOCH).total_seconds() * 1000)  # naive: UTC, as pykafka
    if isinstance(timestamp, (int, float)) and not isinstance(timestamp, bool):
        return timestamp
    raise TypeError("timestamp must be ms since the epoch, a datetime or None, not %r" % (timestamp,))


class Message(common.Message, metaclass=_MessageType):
    """A message made by the program, with pykafka's constructor (``protocol_version`` 0 or
    1; a v1 message without ``timestamp`` gets the current time)."""
    __slots__ = ("protocol_version",)

    def __init__(self, value, partition_key=None, compression_type=CompressionType.NONE, offset=-1,
                 partition_id=-1, produce_attempt=0, protocol_version=0, timestamp=None,
                 delivery_report_q=None):
        if protocol_version not in (0, 1):
            raise ValueError("protocol_version must be 0 or 1, not %r" % (protocol_version,))
        super().__init__(value, partition_key=partition_key, partition_id=partition_id, offset=offset,
                         timestamp=_timestamp_ms(timestamp, protocol_version),
                         compression_type=compression_type, produce_attempt=produce_attempt,
                         delivery_report_q=delivery_report_q)
        self.protocol_version = protocol_version


def __getattr__(name):
    raise AttributeError("pyrdk.protocol has no %s: librdkafka speaks Kafka's wire protocol, so pyrdk "
                         "keeps only the request classes programs build themselves (%s) and Message"
                         % (name, ", ".join(n for n in __all__ if n.endswith("Request"))))
