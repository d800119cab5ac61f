"""Queue: an owned ``rd_kafka_queue_t`` (``rd_kafka_queue_new`` / ``_get_consumer`` / ``_get_main``)."""
from pyrdk._ffi import ffi, lib


class Queue:
    """A librdkafka queue; ``poll_event`` returns an event the caller must destroy."""

    def __init__(self, rk, consumer=False, main=False):
        if main:
            ptr = lib.rd_kafka_queue_get_main(rk)
        else:
            ptr = lib.rd_kafka_queue_get_consumer(rk) if consumer else lib.rd_kafka_queue_new(rk)
        # A consumer without group.id has no consumer queue: NULL.
        self._ptr = None if ptr == ffi.NULL else ptr

    def poll_event(self, timeout_ms):
        """``rd_kafka_queue_poll``: the next event, or NULL."""
        return lib.rd_kafka_queue_poll(self._ptr, timeout_ms)

    def consume_batch(self, array, size, timeout_ms):
        """Up to ``size`` messages into ``array``; their number: those there now, else the
        first to come within ``timeout_ms`` and those there with it (``pyrdk_consume_ready``:
        ``rd_kafka_consume_batch_queue`` alone waits for ``size``)."""
        if self._ptr is None:
            raise ValueError("this consumer has no group.id, so no consumer queue to read")
        return lib.pyrdk_consume_ready(self._ptr, timeout_ms, array, size)

    def polled(self):
        """``rd_kafka_consume_batch_queue`` for no message: librdkafka counts it as the
        application's poll (its ``max.poll.interval.ms`` timer starts again) and serves nothing."""
        if self._ptr is not None:
            lib.rd_kafka_consume_batch_queue(self._ptr, 0, ffi.NULL, 0)

    def __len__(self):
        return lib.rd_kafka_queue_length(self._ptr) if self._ptr is not None else 0

    def yield_(self):
        """``rd_kafka_queue_yield``: wake a thread blocked on this queue."""
        if self._ptr is not None:
            lib.rd_kafka_queue_yield(self._ptr)

    def io_event_enable(self, fd, payload=b"1"):
        """``rd_kafka_queue_io_event_enable``: librdkafka writes ``payload`` to the file
        descriptor ``fd`` when an event is added to the queue (and not again until the queue is
        served); ``fd`` -1 stops it."""
        if self._ptr is not None:
            self._payload = payload  # alive while librdkafka may write it
            lib.rd_kafka_queue_io_event_enable(self._ptr, fd, payload, len(payload))

    def destroy(self):
        """``rd_kafka_queue_destroy``."""
        if self._ptr is not None:
            ptr, self._ptr = self._ptr, None  # first: an interrupt after the call must not destroy it twice
            lib.rd_kafka_queue_destroy(ptr)
