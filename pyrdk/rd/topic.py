"""TopicHandle: an owned ``rd_kafka_topic_t`` (``rd_kafka_topic_new``)."""
from pyrdk._ffi import ffi, lib, sized


class TopicHandle:
    """A producer's handle on one topic; destroyed before its ``rd_kafka_t``."""

    def __init__(self, rk, name):
        self.name = name
        self._ptr = lib.rd_kafka_topic_new(rk, name.encode(), ffi.NULL)
        if self._ptr == ffi.NULL:
            raise ValueError("librdkafka refused topic name %r" % name)

    def destroy(self):
        """``rd_kafka_topic_destroy``."""
        if self._ptr is not None:
            ptr, self._ptr = self._ptr, None  # first: an interrupt after the call must not destroy it twice
            lib.rd_kafka_topic_destroy(ptr)


def murmur2_partition(key, partition_count):
    """``rd_kafka_msg_partitioner_murmur2``: the partition the Java client picks for ``key``."""
    if partition_count <= 0:  # the C function divides by it (SIGFPE)
        raise ValueError("partition_count must be > 0, not %r" % (partition_count,))
    key = sized(key)
    return lib.rd_kafka_msg_partitioner_murmur2(ffi.NULL, key, len(key), partition_count,
                                                ffi.NULL, ffi.NULL)
