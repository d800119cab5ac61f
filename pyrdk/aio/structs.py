"""aiokafka's records and partition names (``aiokafka.structs``)."""
import collections
import dataclasses
from typing import Any, Optional, Sequence, Tuple

TopicPartition = collections.namedtuple("TopicPartition", "topic partition")
"""A topic and a partition id."""

OffsetAndMetadata = collections.namedtuple("OffsetAndMetadata", "offset metadata")
"""An offset to commit (the next to read) with its metadata (a str)."""

OffsetAndTimestamp = collections.namedtuple("OffsetAndTimestamp", "offset timestamp")
"""What ``offsets_for_times()`` found: the first offset at or after a time, and its time."""

RecordMetadata = collections.namedtuple(
    "RecordMetadata", "topic partition topic_partition offset timestamp timestamp_type log_start_offset")
"""Where a sent record was written (the result of ``send()``'s future). ``timestamp`` is -1
unless the broker sets it (LogAppendTime, ``timestamp_type`` 1); ``log_start_offset`` is None:
librdkafka does not report it."""


@dataclasses.dataclass(slots=True)
class ConsumerRecord:
    """A record ``getone()``/``getmany()`` return, with aiokafka's fields. ``timestamp_type`` is
    0 for CreateTime, 1 for LogAppendTime; ``checksum`` is always None."""
    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: Optional[Any]
    value: Optional[Any]
    checksum: Optional[int]
    serialized_key_size: int
    serialized_value_size: int
    headers: Sequence[Tuple[str, bytes]]


__all__ = ["ConsumerRecord", "OffsetAndMetadata", "OffsetAndTimestamp", "RecordMetadata", "TopicPartition"]
