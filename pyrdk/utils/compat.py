"""pykafka's ``pykafka.utils.compat``: the Python 2/3 names pykafka programs import from it,
as their Python 3 selves.

    from pyrdk.utils.compat import iteritems, get_bytes, PY3
"""
import platform
import queue
import sys
import threading

__all__ = ["PY3", "IS_PYPY", "Empty", "Queue", "Semaphore", "buffer", "get_bytes", "get_string",
           "iteritems", "iterkeys", "itervalues", "range"]

PY3 = sys.version_info[0] >= 3
IS_PYPY = platform.python_implementation() == "PyPy"

Queue = queue.Queue
Empty = queue.Empty
Semaphore = threading.Semaphore
range = range
buffer = memoryview


def iteritems(d, **kwargs):
    """``iter(d.items())``."""
    return iter(d.items(**kwargs))


def itervalues(d, **kwargs):
    """``iter(d.values())``."""
    return iter(d.values(**kwargs))


def iterkeys(d, **kwargs):
    """``iter(d.keys())``."""
    return iter(d.keys(**kwargs))


def get_bytes(value):
    """A str encoded as UTF-8 (left as it is if it cannot be); anything else as it is."""
    if isinstance(value, str):
        try:
            return value.encode("utf-8")
        except UnicodeError:
            return value
    return value


def get_string(value):
    """Bytes decoded from UTF-8 (left as they are if they are not UTF-8); anything else
    as ``str(value)``."""
    if isinstance(value, (bytes, bytearray)):
        try:
            return value.decode("utf-8")
        except UnicodeError:
            return value
    return str(value)
