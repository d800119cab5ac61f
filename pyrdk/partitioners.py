"""Partitioners: callables ``(partitions, key) -> Partition`` for the Producer (pykafka's).

``HashingPartitioner`` keeps pykafka's default hash (SHA-1 of the key), so keys land where
a pykafka producer put them; ``Murmur2Partitioner`` places keys where the Java client and
librdkafka's ``murmur2`` partitioner do (``rd_kafka_msg_partitioner_murmur2``).
"""
from __future__ import annotations

import hashlib
import itertools
import random
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Optional

from pyrdk.rd.topic import murmur2_partition

if TYPE_CHECKING:
    from pyrdk.partition import Partition

__all__ = ["BasePartitioner", "RandomPartitioner", "random_partitioner", "HashingPartitioner",
           "hashing_partitioner", "GroupHashingPartitioner", "Murmur2Partitioner",
           "murmur2_partitioner"]


def _sha1_hash(key):
    if not isinstance(key, (bytes, bytearray, memoryview)):
        raise TypeError("HashingPartitioner hashes bytes keys, not %s" % type(key).__name__)
    return int(hashlib.sha1(key).hexdigest(), 16)


def _require_callable(hash_func):
    if not callable(hash_func):
        raise TypeError("hash_func must be a callable bytes -> int, not %r" % (hash_func,))


def _require_partitions(partitions):
    if not partitions:
        raise ValueError("there are no partitions to choose from")


def _require_key(key):
    if key is None:
        raise ValueError("key cannot be `None` when using a hashing partitioner")


class BasePartitioner:
    """Base class for class-based partitioners."""

    def __call__(self, partitions: Sequence[Partition], key: Any = None) -> Partition:
        raise NotImplementedError("subclasses must define their own partitioner")


class RandomPartitioner(BasePartitioner):
    """Spread messages over all partitions, ignoring the key (a counter, not random, to
    save cycles; the starting point is random so producers do not move in lockstep)."""

    def __init__(self) -> None:
        self._counter = itertools.count(random.randrange(1 << 16))

    def __call__(self, partitions: Sequence[Partition], key: Any = None) -> Partition:
        _require_partitions(partitions)
        return partitions[next(self._counter) % len(partitions)]


random_partitioner = RandomPartitioner()


class HashingPartitioner(BasePartitioner):
    """The same key always goes to the same partition while the partition count holds.

    :param hash_func: ``bytes -> int``; the default (SHA-1) is stable across processes
        and is pykafka's, unlike Python's salted ``hash``.
    """

    def __init__(self, hash_func: Optional[Callable[[Any], int]] = None) -> None:
        if hash_func is not None:
            _require_callable(hash_func)
        self.hash_func = hash_func if hash_func is not None else _sha1_hash

    def __call__(self, partitions: Sequence[Partition], key: Any) -> Partition:  # type: ignore[override]  # a key is required
        return self._sorted_call(sorted(partitions), key)

    def _sorted_call(self, partitions: Sequence[Partition], key: Any) -> Partition:
        """``__call__`` for partitions already sorted by id (a producer's, see ``_presorted``)."""
        _require_key(key)
        _require_partitions(partitions)
        return partitions[abs(self.hash_func(key)) % len(partitions)]


hashing_partitioner = HashingPartitioner()


class GroupHashingPartitioner(BasePartitioner):
    """The same key goes to one of a consistent group of ``group_size`` partitions.

    :param hash_func: ``bytes -> int`` (required, as in pykafka)
    :param group_size: how many partitions share a key, between 1 and the partition count
    """

    def __init__(self, hash_func: Callable[[Any], int], group_size: int = 1) -> None:
        if hash_func is None:
            raise ValueError("hash_func must be specified when using GroupHashingPartitioner")
        _require_callable(hash_func)
        if isinstance(group_size, bool) or not isinstance(group_size, int):
            raise TypeError("group_size must be an int >= 1, not %r" % (group_size,))
        if group_size < 1:
            raise ValueError("group_size cannot be < 1 when using GroupHashingPartitioner")
        self.hash_func = hash_func
        self.group_size = group_size

    def __call__(self, partitions: Sequence[Partition], key: Any) -> Partition:  # type: ignore[override]  # a key is required
        return self._sorted_call(sorted(partitions), key)

    def _sorted_call(self, partitions: Sequence[Partition], key: Any) -> Partition:
        """``__call__`` for partitions already sorted by id (a producer's, see ``_presorted``)."""
        _require_key(key)
        if self.group_size > len(partitions):
            raise ValueError("group_size cannot be > available partitions")
        return partitions[abs(self.hash_func(key) + random.randrange(self.group_size)) % len(partitions)]


class Murmur2Partitioner(BasePartitioner):
    """Place keys as the Java client does (murmur2, ``toPositive(hash) % count``);
    messages without a key are spread like ``RandomPartitioner``."""

    def __init__(self) -> None:
        self._random = RandomPartitioner()

    def __call__(self, partitions: Sequence[Partition], key: Any = None) -> Partition:
        if key is None:
            return self._random(partitions)
        return self._sorted_call(sorted(partitions), key)

    def _sorted_call(self, partitions: Sequence[Partition], key: Any = None) -> Partition:
        """``__call__`` for partitions already sorted by id (a producer's, see ``_presorted``)."""
        if key is None:
            return self._random(partitions)
        _require_partitions(partitions)
        if not isinstance(key, bytes):
            if not isinstance(key, (bytearray, memoryview)):
                raise TypeError("Murmur2Partitioner hashes bytes keys, not %s" % type(key).__name__)
            key = bytes(key)
        return partitions[murmur2_partition(key, len(partitions))]


murmur2_partitioner = Murmur2Partitioner()


def _presorted(partitioner: Callable[..., Any]) -> Callable[..., Any]:
    """What a producer calls, with its partitions sorted by id, in place of ``partitioner``:
    the hashing partitioners of this module skip their sort (a Python ``__lt__`` per
    partition, at every keyed message: 0.8 ms a message at 5000 partitions against 7 us at
    10); any other partitioner (a subclass too, which may choose otherwise) is itself."""
    if type(partitioner) in (HashingPartitioner, GroupHashingPartitioner, Murmur2Partitioner):
        return partitioner._sorted_call  # type: ignore[attr-defined]
    return partitioner
