"""Wakeup: librdkafka's queue signals a pipe (``rd_kafka_queue_io_event_enable``), the event
loop watches the pipe (``loop.add_reader``). No thread, no polling timer: the loop wakes when
librdkafka has something (delivery reports, fetched messages, a rebalance, an error) and the
callback serves it without blocking (librdkafka calls with a zero timeout)."""
import os


class Wakeup:
    """Call ``on_ready()`` on ``loop`` when librdkafka adds an event to the queue of
    ``handle`` (a producer's main queue, a consumer's queue) while it is empty, once per
    serving. ``on_ready`` must serve the queue: one it leaves holding events stays silent
    until it is emptied. It is called once as the watch starts, too: events queued before
    (a broker that refused the first connection as ``rd_kafka_new`` returned) wrote
    nothing, and would keep the queue silent for ever."""

    def __init__(self, loop, handle, on_ready):
        self._loop = loop
        self._handle = handle
        self._on_ready = on_ready
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)  # librdkafka must never block writing to it
        try:
            loop.add_reader(self._read, self._readable)
        except BaseException:
            self._close_fds()
            raise
        try:  # last: librdkafka must never write to the fds once closed (the next file reuses them)
            handle.watch(self._write)
        except BaseException:
            loop.remove_reader(self._read)
            self._close_fds()
            raise
        os.write(self._write, b"1")  # serve what was queued before the watch

    def _readable(self):
        try:
            while os.read(self._read, 4096):
                pass
        except BlockingIOError:
            pass
        self._on_ready()

    def close(self):
        """Stop watching (``rd_kafka_queue_io_event_enable`` with -1) and close the pipe."""
        if self._read is None:
            return
        if not self._loop.is_closed():  # a closed loop has let go of its readers
            self._loop.remove_reader(self._read)
        if self._handle.usable:
            self._handle.watch(-1)
        self._close_fds()

    def __del__(self):
        # Collected unclosed: its client was let go of without stop() and its loop, which holds
        # the reader while open, is closed (close() then leaves the reader alone).
        if getattr(self, "_read", None) is not None:  # not when __init__ failed before the pipe
            self.close()

    def _close_fds(self):
        for fd in (self._read, self._write):
            os.close(fd)
        self._read = self._write = None
