"""``rd_kafka_topic_partition_list_t`` ⇄ lists of ``TopicPartition``.

``metadata`` is the commit metadata of an entry (bytes, or None): written into the entry's
``metadata`` field, in memory from librdkafka's allocator (``rd_kafka_mem_malloc``), which the
list frees with it; read back from what ``rd_kafka_committed`` filled in.
"""
from __future__ import annotations

import operator
from typing import NamedTuple, Optional

from pyrdk._ffi import ffi, lib, sized, string
from pyrdk.common import INT32_MAX, INT64_MAX


class TopicPartition(NamedTuple):
    """One entry of a partition list (``rd_kafka_topic_partition_t``)."""
    topic: str
    partition: int
    offset: int = lib.RD_KAFKA_OFFSET_INVALID
    error: int = 0
    metadata: Optional[bytes] = None

OFFSET_BEGINNING = lib.RD_KAFKA_OFFSET_BEGINNING
OFFSET_END = lib.RD_KAFKA_OFFSET_END
OFFSET_STORED = lib.RD_KAFKA_OFFSET_STORED
OFFSET_INVALID = lib.RD_KAFKA_OFFSET_INVALID


def to_c(tps):
    """A new list (freed with the returned cdata) from ``(topic, partition[, offset[, error[,
    metadata]]])`` tuples (``TopicPartition`` among them)."""
    tps = list(tps)
    ptr = ffi.gc(lib.rd_kafka_topic_partition_list_new(max(len(tps), 1)),
                 lib.rd_kafka_topic_partition_list_destroy)
    for tp in tps:
        topic, partition = tp[0], tp[1]
        offset = tp[2] if len(tp) > 2 else None
        if not isinstance(topic, str):
            raise TypeError("topic names must be str, not %s: %r" % (type(topic).__name__, topic))
        if "\0" in topic:
            raise ValueError("topic name %r holds a NUL character" % (topic,))
        if not _is_int(partition, -1, INT32_MAX):
            raise TypeError("the partition of %s must be an int from 0 to %d (or -1: none in particular), not %r"
                            % (topic, INT32_MAX, partition))
        if offset is not None and not _is_int(offset, -INT64_MAX - 1, INT64_MAX):
            raise TypeError("the offset of %s [%d] must be an int, not %r" % (topic, partition, offset))
        elem = lib.rd_kafka_topic_partition_list_add(ptr, topic.encode(), partition)
        if offset is not None:
            elem.offset = offset
        if len(tp) > 4 and tp[4]:
            _set_metadata(elem, tp[4])
    return ptr


def _is_int(value, low, high):
    """Whether ``value`` is an int (or has ``__index__``, as numpy's), not a bool, from
    ``low`` to ``high``."""
    if isinstance(value, bool):
        return False
    try:
        return low <= operator.index(value) <= high
    except TypeError:
        return False


def _set_metadata(elem, data):
    if not isinstance(data, bytes):
        raise TypeError("commit metadata must be bytes, not %s: %r" % (type(data).__name__, data))
    data = sized(data)
    buf = lib.rd_kafka_mem_malloc(ffi.NULL, len(data))
    if buf == ffi.NULL:
        raise MemoryError("rd_kafka_mem_malloc(%d) failed" % len(data))
    ffi.memmove(buf, data, len(data))
    elem.metadata = buf
    elem.metadata_size = len(data)


def _metadata(elem):
    if elem.metadata == ffi.NULL or not elem.metadata_size:
        return None
    return ffi.unpack(ffi.cast("char *", elem.metadata), elem.metadata_size)


def from_c(ptr):
    """The entries of a C list as ``TopicPartition`` tuples."""
    return [TopicPartition(string(e.topic), e.partition, e.offset, e.err, _metadata(e))
            for e in (ptr.elems[i] for i in range(ptr.cnt))]
