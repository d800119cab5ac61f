"""A partition's log as the broker stores it, read with the Kafka protocol itself (Fetch v4,
read_uncommitted), and the records a read_committed reader must see, worked out from the
transaction markers in the log.

librdkafka (like every client) filters aborted transactions with the list of aborted
transactions a Fetch response carries; Tansu always sends that list empty, so its
read_committed readers see aborted records too. The markers are in the log all the same:
a transactional batch of producer P is committed when the next control batch of P in the
partition is a COMMIT marker, aborted when it is an ABORT marker, and still open when none
follows. This module reads the batches and the markers, so tests can check what a correct
read_committed reader would see, on any broker.
"""
import socket
import struct

FETCH = 1
FETCH_VERSION = 4
TRANSACTIONAL = 0x10
CONTROL = 0x20
ABORT, COMMIT = 0, 1


class Record:
    __slots__ = ("offset", "key", "value", "producer_id", "transactional")

    def __init__(self, offset, key, value, producer_id, transactional):
        self.offset = offset
        self.key = key
        self.value = value
        self.producer_id = producer_id
        self.transactional = transactional


def _varint(buf, pos):
    shift = result = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


def _bytes(buf, pos):
    length, pos = _varint(buf, pos)
    if length < 0:
        return None, pos
    return bytes(buf[pos:pos + length]), pos + length


def _recv(sock, size):
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        data.extend(chunk)
    return bytes(data)


def _fetch(sock, correlation_id, topic, partition, offset, max_bytes=4 * 1024 * 1024):
    """One Fetch v4 request; ``(error_code, high_watermark, records bytes)``."""
    name = topic.encode()
    body = struct.pack(">iiiib", -1, 100, 1, max_bytes, 0)  # replica, max wait, min bytes, max bytes, read_uncommitted
    body += struct.pack(">ih", 1, len(name)) + name + struct.pack(">iiqi", 1, partition, offset, max_bytes)
    client = b"pyrdk-test-log"
    header = struct.pack(">hhih", FETCH, FETCH_VERSION, correlation_id, len(client)) + client
    request = header + body
    sock.sendall(struct.pack(">i", len(request)) + request)
    size = struct.unpack(">i", _recv(sock, 4))[0]
    resp = _recv(sock, size)
    pos = 4 + 4  # correlation id, throttle time
    (topics,) = struct.unpack_from(">i", resp, pos)
    pos += 4
    assert topics == 1
    (name_len,) = struct.unpack_from(">h", resp, pos)
    pos += 2 + name_len
    (partitions,) = struct.unpack_from(">i", resp, pos)
    pos += 4
    assert partitions == 1
    _, error, high, _, aborted = struct.unpack_from(">ihqqi", resp, pos)
    pos += 4 + 2 + 8 + 8 + 4
    pos += max(aborted, 0) * 16
    (records_len,) = struct.unpack_from(">i", resp, pos)
    pos += 4
    return error, high, resp[pos:pos + max(records_len, 0)]


def _batches(data):
    """``(base offset, attributes, producer id, [records], control type or None)`` of each
    whole batch in ``data``; the last offset read."""
    pos = 0
    out = []
    while pos + 12 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        if pos + 12 + length > len(data):
            break  # cut short by max_bytes: fetched again from its offset
        batch = data[pos + 12:pos + 12 + length]
        _, magic, _, attributes, last_delta, _, _, producer_id, _, _, count = struct.unpack_from(
            ">ibIhiqqqhii", batch, 0)
        assert magic == 2, "record batch of magic %d" % magic
        assert attributes & 0x07 == 0, "compressed batches are not read here"
        rpos = 4 + 1 + 4 + 2 + 4 + 8 + 8 + 8 + 2 + 4 + 4
        records = []
        control = None
        for _ in range(count):
            _, rpos = _varint(batch, rpos)  # length
            rpos += 1  # attributes
            _, rpos = _varint(batch, rpos)  # timestamp delta
            delta, rpos = _varint(batch, rpos)
            key, rpos = _bytes(batch, rpos)
            value, rpos = _bytes(batch, rpos)
            headers, rpos = _varint(batch, rpos)
            for _ in range(headers):
                _, rpos = _bytes(batch, rpos)
                _, rpos = _bytes(batch, rpos)
            if attributes & CONTROL:
                control = struct.unpack(">hh", key)[1]
            else:
                records.append(Record(base + delta, key, value, producer_id, bool(attributes & TRANSACTIONAL)))
        out.append((base, attributes, producer_id, records, control))
        pos += 12 + length
        last = base + last_delta
    return out, (last if out else None)


def read_partition(host, port, topic, partition, timeout_s=30):
    """Every batch of the partition from offset 0 to its high watermark, as
    ``(base offset, attributes, producer id, [Record], control type or None)``."""
    out = []
    offset = 0
    with socket.create_connection((host, port), timeout=timeout_s) as sock:
        for correlation_id in range(1, 1000000):
            error, high, data = _fetch(sock, correlation_id, topic, partition, offset)
            assert error == 0, "fetch of %s [%d] at %d: error %d" % (topic, partition, offset, error)
            if offset >= high:
                return out
            batches, last = _batches(data)
            assert batches, "no whole batch at %s [%d] offset %d below the high watermark %d" % (
                topic, partition, offset, high)
            out.extend(batches)  # each fetch starts at a batch's base offset
            offset = last + 1
    return out


def high_watermark(host, port, topic, partition, timeout_s=30):
    """The partition's high watermark, as a Fetch response gives it (the log end)."""
    with socket.create_connection((host, port), timeout=timeout_s) as sock:
        error, high, _ = _fetch(sock, 1, topic, partition, 0, max_bytes=1)
    assert error == 0, "fetch of %s [%d]: error %d" % (topic, partition, error)
    return high


def committed_records(batches):
    """The records a read_committed reader must see: non-transactional ones, and those of
    transactions whose next marker is COMMIT. Returns ``(records, open_records)``: open ones
    are of transactions with no marker yet."""
    decided = {}  # index of a transactional batch -> its fate
    waiting = {}  # producer id -> indexes of its batches with no marker yet
    for index, (_, attributes, producer_id, _, control) in enumerate(batches):
        if control is not None:
            for i in waiting.pop(producer_id, []):
                decided[i] = control
        elif attributes & TRANSACTIONAL:
            waiting.setdefault(producer_id, []).append(index)
    committed, still_open = [], []
    for index, (_, attributes, _, records, control) in enumerate(batches):
        if control is not None:
            continue
        if not attributes & TRANSACTIONAL or decided.get(index) == COMMIT:
            committed.extend(records)
        elif index not in decided:
            still_open.extend(records)
    return committed, still_open
