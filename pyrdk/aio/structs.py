"""aiokafka's records and partition names (``aiokafka.structs``)."""
import collections

TopicPartition = collections.namedtuple("TopicPartition", "topic partition")
"""A topic and a partition id."""

OffsetAndMetadata = collections.namedtuple("OffsetAndMetadata", "offset metadata")
"""An offset to commit (the next to read) with its metadata (a str)."""

OffsetAndTimestamp = collections.namedtuple("OffsetAndTimestamp", "offset timestamp")
"""What ``offsets_for_times()`` found: the first offset at or after a time, and that time (the one
asked for: librdkafka does not give the found record's, which aiokafka's has)."""

RecordMetadata = collections.namedtuple(
    "RecordMetadata", "topic partition topic_partition offset timestamp timestamp_type log_start_offset")
"""Where a sent record was written (the result of ``send()``'s future). ``timestamp`` is -1
unless the broker sets it (LogAppendTime, ``timestamp_type`` 1); ``log_start_offset`` is None:
librdkafka does not report it."""


ConsumerRecord = collections.namedtuple(
    "ConsumerRecord", "topic partition offset timestamp timestamp_type key value checksum "
    "serialized_key_size serialized_value_size headers")
ConsumerRecord.__doc__ = """A record ``getone()``/``getmany()`` return, with aiokafka's fields
(a namedtuple where aiokafka has a dataclass: made several times faster). ``timestamp_type``
is 0 for CreateTime, 1 for LogAppendTime; ``checksum`` is always None."""


__all__ = ["ConsumerRecord", "OffsetAndMetadata", "OffsetAndTimestamp", "RecordMetadata", "TopicPartition"]
