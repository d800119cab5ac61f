"""aiokafka's records and partition names (``aiokafka.structs``), with aiokafka's field types."""
from __future__ import annotations

import collections
import types
from collections.abc import Sequence
from typing import TYPE_CHECKING, Generic, NamedTuple, Optional, TypeVar


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
