"""Queue: an owned ``rd_kafka_queue_t`` (``rd_kafka_queue_new`` / ``_get_consumer``)."""
from pyrdk._ffi import ffi, lib


class Queue:
    """A librdkafka queue; ``poll_event`` returns an event the caller must destroy."""

    def __init__(self, rk, consumer=False):
        ptr = lib.rd_kafka_queue_get_consumer(rk) if consumer else lib.rd_kafka_queue_new(rk)
        # A consumer without group.id has no consumer queue: NULL.
        self._ptr = None if ptr == ffi.NULL else ptr

    def poll_event(self, timeout_ms):
        """``rd_kafka_queue_poll``: the next event, or NULL."""
        return lib.rd_kafka_queue_poll(self._ptr, timeout_ms)

    def consume_batch(self, array, size, timeout_ms):
        """``rd_kafka_consume_batch_queue`` into ``array``; the number of messages."""
        if self._ptr is None:
            raise ValueError("this consumer has no group.id, so no consumer queue to read")
        return lib.rd_kafka_consume_batch_queue(self._ptr, timeout_ms, array, size)

    def __len__(self):
        return lib.rd_kafka_queue_length(self._ptr) if self._ptr is not None else 0

    def yield_(self):
        """``rd_kafka_queue_yield``: wake a thread blocked on this queue."""
        if self._ptr is not None:
            lib.rd_kafka_queue_yield(self._ptr)

    def destroy(self):
        """``rd_kafka_queue_destroy``."""
        if self._ptr is not None:
            lib.rd_kafka_queue_destroy(self._ptr)
            self._ptr = None
