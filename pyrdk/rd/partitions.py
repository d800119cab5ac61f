"""``rd_kafka_topic_partition_list_t`` ⇄ lists of ``TopicPartition``."""
import collections

from pyrdk._ffi import ffi, lib, string

TopicPartition = collections.namedtuple("TopicPartition", "topic partition offset error")
TopicPartition.__new__.__defaults__ = (lib.RD_KAFKA_OFFSET_INVALID, 0)

OFFSET_BEGINNING = lib.RD_KAFKA_OFFSET_BEGINNING
OFFSET_END = lib.RD_KAFKA_OFFSET_END
OFFSET_STORED = lib.RD_KAFKA_OFFSET_STORED
OFFSET_INVALID = lib.RD_KAFKA_OFFSET_INVALID


def to_c(tps):
    """A new list (freed with the returned cdata) from ``(topic, partition[, offset])`` tuples."""
    tps = list(tps)
    ptr = ffi.gc(lib.rd_kafka_topic_partition_list_new(max(len(tps), 1)),
                 lib.rd_kafka_topic_partition_list_destroy)
    for tp in tps:
        if not isinstance(tp[0], str):
            raise TypeError("topic names must be str, not %s: %r" % (type(tp[0]).__name__, tp[0]))
        elem = lib.rd_kafka_topic_partition_list_add(ptr, tp[0].encode(), tp[1])
        if len(tp) > 2 and tp[2] is not None:
            elem.offset = tp[2]
    return ptr


def from_c(ptr):
    """The entries of a C list as ``TopicPartition`` tuples."""
    return [TopicPartition(string(e.topic), e.partition, e.offset, e.err)
            for e in (ptr.elems[i] for i in range(ptr.cnt))]
