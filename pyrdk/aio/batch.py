"""aiokafka's ``BatchBuilder``: records a program gathers itself, for one partition, and hands
over whole with ``AIOKafkaProducer.send_batch()``.

librdkafka builds its own batches (``batch.size``, ``linger.ms``), so a BatchBuilder holds the
records until ``send_batch()`` hands them to librdkafka one after the other
(``rd_kafka_producev``, all to the chosen partition, none sent in between): they land in the
partition in order and at consecutive offsets. ``append()`` serializes the key and value
with the producer's serializers, as aiokafka's (0.11 on) does, and counts each record's size as
Kafka's record format (v2) writes it, so that a batch fills where aiokafka's does:
at ``max_batch_size`` bytes. The checks on a record's parts are the ones ``send()`` makes.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, Optional

from pyrdk.common import INT64_MAX, ZERO_TIMESTAMP, integer

BATCH_OVERHEAD = 61  # the header of a v2 record batch, in bytes


class BatchRecordMetadata(NamedTuple):
    """What ``BatchBuilder.append()`` returns: the record's ``offset`` within the batch (0 for the
    first), its ``size`` in bytes, its ``timestamp`` (ms) and ``crc`` (None, as aiokafka's)."""
    offset: int
    size: int
    timestamp: int
    crc: Optional[int]


def check_bytes(what, data, serialized=False):
    """``data`` as bytes (or None; a bytes subclass, bytearray or memoryview as the plain bytes
    it holds); TypeError for anything else, naming the serializer that made it when
    ``serialized``."""
    if data is None or data.__class__ is bytes:
        return data
    if isinstance(data, (bytes, bytearray, memoryview)):
        # A bytes subclass as the bytes it holds (whatever its __len__ or __bytes__ says), as
        # both cores take it: the C core's send() takes bytes only.
        return bytes(memoryview(data))
    if serialized:
        raise TypeError("%s_serializer returned %s: it must return bytes or None (e.g. end it with "
                        ".encode() when it makes a str)" % (what, type(data).__name__))
    raise TypeError("the %s must be bytes (or set %s_serializer), not %s" % (what, what, type(data).__name__))


def check_headers(headers):
    """``headers`` (an iterable of ``(str, bytes or None)`` pairs, lists too, as aiokafka
    unpacks them) as a list of tuples; TypeError for anything else."""
    headers = [tuple(item) if isinstance(item, list) else item for item in headers]
    for item in headers:
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)
                and (item[1] is None or isinstance(item[1], bytes))):
            raise TypeError("headers must be (str, bytes) pairs, not %r" % (item,))
        if "\0" in item[0]:  # refused at append(), not when send_batch() hands the batch over
            raise ValueError("header name %r holds a NUL character, which a consumer would not read back"
                             % item[0])
    return headers


def check_timestamp(timestamp_ms):
    """``timestamp_ms`` as an int (an integer of another type, numpy's, converted), or None."""
    timestamp_ms = integer(timestamp_ms)
    if timestamp_ms is not None and (not isinstance(timestamp_ms, int) or isinstance(timestamp_ms, bool)
                                     or not 0 <= timestamp_ms <= INT64_MAX):
        raise TypeError("timestamp_ms must be an int >= 0 and < 2**63 (ms since the epoch) or None, not %r"
                        % (timestamp_ms,))
    if timestamp_ms == 0:
        raise ValueError(ZERO_TIMESTAMP % "timestamp_ms")
    return timestamp_ms


def _varint(n):
    """The bytes of ``n`` as a zigzag varint (Kafka's record fields)."""
    n = (n << 1) ^ (n >> 63)
    size = 1
    while n >= 0x80:
        n >>= 7
        size += 1
    return size


def _blob(data):
    return _varint(-1) if data is None else _varint(len(data)) + len(data)


def record_size(offset_delta, timestamp_delta, key, value, headers):
    """The size of one record in a v2 batch: its length prefix, attributes, deltas, key,
    value and headers."""
    body = 1 + _varint(timestamp_delta) + _varint(offset_delta) + _blob(key) + _blob(value)
    body += _varint(len(headers))
    for name, data in headers:
        encoded = name.encode()
        body += _varint(len(encoded)) + len(encoded) + _blob(data)
    return _varint(body) + body


class BatchBuilder:
    """Records for one ``send_batch()``, up to ``batch_size`` bytes (the producer's
    ``max_batch_size``); made by ``AIOKafkaProducer.create_batch()``."""

    def __init__(self, batch_size: int, *, key_serializer: Optional[Callable[[Any], Optional[bytes]]] = None,
                 value_serializer: Optional[Callable[[Any], Optional[bytes]]] = None) -> None:
        self._batch_size = batch_size
        self._key_serializer = key_serializer
        self._value_serializer = value_serializer
        self._records: list[tuple[Any, Any, int, Any]] = []  # (value, key, timestamp_ms, headers)
        self._size = BATCH_OVERHEAD
        self._first_timestamp: Optional[int] = None
        self._closed = False

    def append(self, *, key: Any, value: Any, timestamp: Optional[int],
               headers: Optional[Iterable[tuple[str, Optional[bytes]]]] = None) -> Optional[BatchRecordMetadata]:
        """Add a record (``key`` and ``value`` bytes or None, or what the producer's serializers
        take; ``timestamp`` in ms or None for now, ``headers`` ``(str, bytes)`` pairs); its
        :class:`BatchRecordMetadata`, or None when the batch is closed or the record would
        take it past ``max_batch_size`` (the first record always fits)."""
        if self._closed:
            return None
        if self._key_serializer is not None:
            key = self._key_serializer(key)
        if self._value_serializer is not None:
            value = self._value_serializer(value)
        key = check_bytes("key", key, self._key_serializer is not None)
        value = check_bytes("value", value, self._value_serializer is not None)
        headers = check_headers(headers) if headers is not None else []
        timestamp = check_timestamp(timestamp)
        if timestamp is None:
            timestamp = int(time.time() * 1000)
        if self._first_timestamp is None:
            self._first_timestamp = timestamp
        offset = len(self._records)
        size = record_size(offset, timestamp - self._first_timestamp, key, value, headers)
        if self._records and self._size + size > self._batch_size:
            return None
        self._records.append((value, key, timestamp, headers or None))
        self._size += size
        return BatchRecordMetadata(offset, size, timestamp, None)

    def close(self) -> None:
        """Take no more records: ``append()`` returns None from now on."""
        self._closed = True

    def size(self) -> int:
        """The batch's size in bytes as Kafka's record format writes it."""
        return self._size

    def record_count(self) -> int:
        """How many records the batch holds."""
        return len(self._records)

    def _take(self):
        """Close the batch and give its records to ``send_batch()``."""
        self._closed = True
        return self._records


__all__ = ["BatchBuilder", "BatchRecordMetadata"]
