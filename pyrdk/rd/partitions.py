"""``rd_kafka_topic_partition_list_t`` ⇄ lists of ``TopicPartition``.

``metadata`` is the commit metadata of an entry (bytes, or None): written into the entry's
``metadata`` field, in memory from librdkafka's allocator (``rd_kafka_mem_malloc``), which the
list frees with it; read back from what ``rd_kafka_committed`` filled in.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

from pyrdk._ffi import ffi, lib, string


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
        if not isinstance(tp[0], str):
            raise TypeError("topic names must be str, not %s: %r" % (type(tp[0]).__name__, tp[0]))
        elem = lib.rd_kafka_topic_partition_list_add(ptr, tp[0].encode(), tp[1])
        if len(tp) > 2 and tp[2] is not None:
            elem.offset = tp[2]
        if len(tp) > 4 and tp[4]:
            _set_metadata(elem, tp[4])
    return ptr


def _set_metadata(elem, data):
    if not isinstance(data, bytes):
        raise TypeError("commit metadata must be bytes, not %s: %r" % (type(data).__name__, data))
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
