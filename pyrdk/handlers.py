"""Concurrency handlers (pykafka's ``pykafka.handlers``): the threading toolkit a program
reaches through ``client.cluster.handler``.

pykafka ran its own network workers on a handler; librdkafka runs its own threads, so pyrdk's
handler serves only the programs that use it (``handler.Event()``, ``handler.Queue()``,
``handler.spawn(worker)``, ``handler.Lock()``, ``handler.sleep(s)``). Only threads are
offered: ``GEventHandler`` has no librdkafka equivalent, and pykafka's ``RequestHandler``
and ``ResponseFuture`` served its socket protocol, which librdkafka replaces.

Pure Python: this module imports nothing from pyrdk.
"""
import itertools
import queue
import socket
import threading
import time

__all__ = ["Handler", "ThreadingHandler"]

_UNSUPPORTED = {
    "GEventHandler": "librdkafka runs native threads; pyrdk has no gevent handler",
    "RequestHandler": "librdkafka owns the broker connections and their request queues",
    "ResponseFuture": "librdkafka owns the broker connections and their request queues",
}


def __getattr__(name):
    if name in _UNSUPPORTED:
        raise AttributeError("pyrdk.handlers has no %s: %s" % (name, _UNSUPPORTED[name]))
    raise AttributeError("module 'pyrdk.handlers' has no attribute %r" % name)


class Handler:
    """Base class of handlers: makes the workers that do a program's work."""

    def spawn(self, target, *args, **kwargs):
        """Start a worker running ``target`` and return it."""
        raise NotImplementedError("subclasses of Handler define spawn()")


class ThreadingHandler(Handler):
    """A handler on native threads: ``Event``, ``Lock``, ``RLock``, ``Semaphore`` and
    ``Queue`` are the ``threading`` / ``queue`` classes, ``spawn`` starts a daemon thread."""
    Queue = queue.Queue
    QueueEmptyError = queue.Empty
    Event = threading.Event
    Lock = threading.Lock
    RLock = threading.RLock
    Semaphore = threading.Semaphore
    Socket = socket
    SockErr = OSError
    GaiError = socket.gaierror

    _spawned = itertools.count()

    def sleep(self, seconds=0):
        """``time.sleep``."""
        time.sleep(seconds)

    def spawn(self, target, *args, **kwargs):
        """Start a daemon thread running ``target(*args)`` and return it; ``kwargs`` go to
        ``threading.Thread`` (``name``, ``args``, ``kwargs``), as in pykafka, which prefixes
        the ``name`` with a counter of the threads it spawned."""
        number = next(self._spawned)
        if "name" in kwargs:
            kwargs["name"] = "%d: %s" % (number, kwargs["name"])
        if args:
            if "args" in kwargs:
                raise TypeError("spawn() takes the target's arguments either positionally or "
                                "as args=, not both")
            kwargs["args"] = args
        thread = threading.Thread(target=target, **kwargs)
        thread.daemon = True
        thread.start()
        return thread
