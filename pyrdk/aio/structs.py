"""aiokafka's records and partition names (``aiokafka.structs``), with aiokafka's field types."""
from __future__ import annotations

import collections
import types
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, Optional, TypeVar

from pyrdk.common import integer


class TopicPartition(NamedTuple):
    """A topic and a partition id."""
    topic: str
    partition: int


class BrokerMetadata(NamedTuple):
    """A broker's id, address and rack (None if it has none)."""
    nodeId: int
    host: str
    port: int
    rack: Optional[str]


class PartitionMetadata(NamedTuple):
    """A partition's leader, replicas and in-sync replicas (broker ids), and its error (None if
    none)."""
    topic: str
    partition: int
    leader: int
    replicas: list[int]
    isr: list[int]
    error: Optional[BaseException]


class OffsetAndMetadata(NamedTuple):
    """An offset to commit (the next to read) with its metadata (a str)."""
    offset: int
    metadata: str


def topic_partition(tp: Any, what: str = "partition") -> TopicPartition:
    """``tp`` (a TopicPartition, or a ``(topic, partition)`` pair) as a TopicPartition of a
    non-empty str topic and an int partition (numpy's integers too); else TypeError: a
    bytes topic would name no topic the client knows, a bool would be taken as partition 1."""
    if isinstance(tp, tuple) and len(tp) == 2:
        topic, partition = tp[0], integer(tp[1])
        if isinstance(topic, str) and topic and isinstance(partition, int) and not isinstance(partition, bool):
            return tp if type(tp) is TopicPartition and type(tp[1]) is int else TopicPartition(topic, partition)
    if isinstance(tp, TopicPartition):
        raise TypeError("%s must be a TopicPartition(topic, partition) of a topic name (a non-empty str) and a "
                        "partition id (an int), not %r" % (what, tp))
    raise TypeError("%s must be a TopicPartition, not %r" % (what, tp))


def offsets_to_commit(offsets: Any) -> list[tuple[str, int, int, int, Optional[bytes]]]:
    """``(topic, partition, offset, 0, metadata or None)`` entries for librdkafka from
    aiokafka's ``{TopicPartition: offset, (offset, metadata) or OffsetAndMetadata}``, checked
    as aiokafka's commit() and send_offsets_to_transaction() check them: ValueError for an
    empty dict or a bad offset, TypeError for a key or metadata of the wrong type."""
    if not isinstance(offsets, Mapping) or not offsets:
        raise ValueError("offsets must be a non-empty dict {TopicPartition: offset or (offset, "
                         "metadata)}, not %r" % (offsets,))
    entries = []
    for tp, value in offsets.items():
        tp = topic_partition(tp, "an offsets key")
        meta = ""
        if isinstance(value, (tuple, list)):  # (offset, metadata), OffsetAndMetadata
            if len(value) != 2:
                raise ValueError("offsets values must be offset or (offset, metadata), not %r" % (value,))
            value, meta = value
        value = integer(value)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError("offset for %s [%d] must be an int >= 0, not %r" % (tp.topic, tp.partition, value))
        if not isinstance(meta, str):
            raise TypeError("commit metadata must be a str, not %r" % (meta,))
        entries.append((tp.topic, tp.partition, value, 0, meta.encode() or None))
    return entries


class OffsetAndTimestamp(NamedTuple):
    """What ``offsets_for_times()`` found: the first offset at or after a time, and that time (the one
    asked for: librdkafka does not give the found record's, which aiokafka's has)."""
    offset: int
    timestamp: Optional[int]


class RecordMetadata(NamedTuple):
    """Where a sent record was written (the result of ``send()``'s future). ``timestamp`` is -1
    unless the broker sets it (LogAppendTime, ``timestamp_type`` 1); ``log_start_offset`` is None:
    librdkafka does not report it."""
    topic: str
    partition: int
    topic_partition: TopicPartition
    offset: int
    timestamp: Optional[int]
    timestamp_type: int
    log_start_offset: Optional[int]


KT = TypeVar("KT")
VT = TypeVar("VT")

if TYPE_CHECKING:
    class ConsumerRecord(NamedTuple, Generic[KT, VT]):
        """aiokafka's ``ConsumerRecord[KT, VT]``: the key's and the value's types are what the
        deserializers return (bytes without them)."""
        topic: str
        partition: int
        offset: int
        timestamp: int
        timestamp_type: int
        key: Optional[KT]
        value: Optional[VT]
        checksum: Optional[int]
        serialized_key_size: int
        serialized_value_size: int
        headers: Sequence[tuple[str, bytes]]
else:
    # A namedtuple the core makes in C (Python 3.9 and 3.10 have no generic NamedTuple), which
    # takes ConsumerRecord[bytes, bytes] as aiokafka's generic class does.
    ConsumerRecord = collections.namedtuple(
        "ConsumerRecord", "topic partition offset timestamp timestamp_type key value checksum "
        "serialized_key_size serialized_value_size headers")
    ConsumerRecord.__class_getitem__ = classmethod(types.GenericAlias)
ConsumerRecord.__doc__ = """A record ``getone()``/``getmany()`` return, with aiokafka's fields
(a namedtuple where aiokafka has a dataclass: made several times faster). ``timestamp_type``
is 0 for CreateTime, 1 for LogAppendTime; ``checksum`` is always None."""


__all__ = ["BrokerMetadata", "ConsumerRecord", "OffsetAndMetadata", "OffsetAndTimestamp", "PartitionMetadata",
           "RecordMetadata", "TopicPartition"]
