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
from __future__ import annotations

import abc
import datetime
import queue
import time
from typing import Any, NamedTuple, Optional, Union

from pyrdk import common
from pyrdk.common import (CompressionType, OffsetCommitPartitionResponse, OffsetFetchPartitionResponse,
                          OffsetPartitionResponse)

__all__ = ["CreateTopicRequest", "CreateTopicsRequest", "DeleteTopicsRequest", "Message",
           "OffsetCommitPartitionResponse", "OffsetFetchPartitionResponse", "OffsetPartitionResponse",
           "PartitionOffsetCommitRequest", "PartitionOffsetFetchRequest"]



class CreateTopicRequest(NamedTuple):
    """One topic to create: ``topic_name`` (bytes or str), ``num_partitions``,
    ``replication_factor``, ``replica_assignment`` (must be empty: pyrdk lets the brokers place
    replicas) and ``config_entries`` (``[(name, value)]``)."""
    topic_name: Union[str, bytes]
    num_partitions: int
    replication_factor: int
    replica_assignment: list[Any]
    config_entries: list[tuple[str, str]]


class PartitionOffsetCommitRequest(NamedTuple):
    """The offset to commit for one partition: ``topic_name``, ``partition_id``, ``offset``
    (the next offset the group reads), ``timestamp`` (kept for pykafka programs; Kafka keeps
    the commit's own time) and ``metadata`` (bytes or str, written into the commit and
    returned with the offset by ``fetch_consumer_group_offsets``)."""
    topic_name: Union[str, bytes]
    partition_id: int
    offset: int
    timestamp: int
    metadata: Union[bytes, str, None]


class PartitionOffsetFetchRequest(NamedTuple):
    """One partition whose committed offset to fetch."""
    topic_name: Union[str, bytes]
    partition_id: int


class CreateTopicsRequest:
    """Topics to create: ``topic_requests`` (``CreateTopicRequest``s) and ``timeout`` (ms);
    ``cluster.create_topics(request)`` takes it."""

    def __init__(self, topic_requests: list[CreateTopicRequest], timeout: int = 0) -> None:
        self.topic_requests = topic_requests
        self.timeout = timeout

    def __repr__(self):
        return "CreateTopicsRequest(%r, timeout=%r)" % (self.topic_requests, self.timeout)


class DeleteTopicsRequest:
    """Topics to delete: ``topics`` (names) and ``timeout`` (ms);
    ``cluster.delete_topics(request)`` takes it."""

    def __init__(self, topics: list[Union[str, bytes]], timeout: int = 0) -> None:
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


def _timestamp_ms(timestamp: Union[int, float, datetime.datetime, None], protocol_version: int) -> Optional[int]:
    if timestamp is None:
        if protocol_version > 0:  # pykafka: a v1 message made without a time is made now
            return int(time.time() * 1000)
        return None
    if isinstance(timestamp, datetime.datetime):
        if timestamp.tzinfo is not None:
            return int(timestamp.timestamp() * 1000)
        return int((timestamp - common.EPOCH).total_seconds() * 1000)  # naive: UTC, as pykafka
    if isinstance(timestamp, (int, float)) and not isinstance(timestamp, bool):
        return int(timestamp)  # a Message's timestamp is an int
    raise TypeError("timestamp must be ms since the epoch, a datetime or None, not %r" % (timestamp,))


class Message(common.Message, metaclass=_MessageType):
    """A message made by the program, with pykafka's constructor (``protocol_version`` 0 or
    1; a v1 message without ``timestamp`` gets the current time)."""
    __slots__ = ("protocol_version",)
    protocol_version: int  # 0 or 1, as made (a message read or produced is 1)

    def __init__(self, value: Any, partition_key: Any = None, compression_type: CompressionType = CompressionType.NONE,
                 offset: int = -1, partition_id: int = -1, produce_attempt: int = 0, protocol_version: int = 0,
                 timestamp: Union[int, float, datetime.datetime, None] = None,
                 delivery_report_q: Optional[queue.Queue[Any]] = None) -> None:
        if protocol_version not in (0, 1):
            raise ValueError("protocol_version must be 0 or 1, not %r" % (protocol_version,))
        super().__init__(value, partition_key=partition_key, partition_id=partition_id, offset=offset,
                         timestamp=_timestamp_ms(timestamp, protocol_version),
                         compression_type=compression_type, produce_attempt=produce_attempt,
                         delivery_report_q=delivery_report_q)
        self.protocol_version = protocol_version

    def __len__(self) -> int:
        """pykafka's: as :class:`pyrdk.common.Message`'s, but a v0 message has no timestamp field."""
        size = super().__len__()
        return size - 8 if self.protocol_version == 0 and self.timestamp else size


def __getattr__(name):
    raise AttributeError("pyrdk.protocol has no %s: librdkafka speaks Kafka's wire protocol, so pyrdk "
                         "keeps only the request classes programs build themselves (%s) and Message"
                         % (name, ", ".join(n for n in __all__ if n.endswith("Request"))))
