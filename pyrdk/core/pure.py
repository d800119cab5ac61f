"""The pure-Python core: the reference implementation of :mod:`pyrdk.core`'s interface, on the
cffi layer (:mod:`pyrdk.rd`).

Plain code, one step after another. The C core (``csrc/core/``) must do exactly what this
does; every producer and consumer test runs against both. A lock makes each producer call
atomic, as the GIL makes the C core's (they run no Python code but the partitioner's and the
general path's).
"""
from __future__ import annotations

import collections
import itertools
import threading
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Optional

from pyrdk.common import Message
from pyrdk.exceptions import KafkaException
from pyrdk.rd import errors
from pyrdk.rd.message import messages_of
from pyrdk.rd.topic import murmur2_partition

if TYPE_CHECKING:
    from pyrdk.common import CompressionType
    from pyrdk.rd.handle import Handle

# A pyrdk.partition.Partition: the core holds it for its Messages and never looks inside
# (nor may it import that module: tests/test_layering.py).
_Partition = Any

BATCH_AT_ONCE = 256  # the most messages handed to one rd_kafka_produce_batch call
# More than librdkafka's record overhead (RD_KAFKAP_MESSAGE_V2_MAX_OVERHEAD, 36 bytes): a
# message this close to max_size goes alone, so that librdkafka's own size check never
# refuses one inside a batch (which would refuse every one after it too).
SIZE_MARGIN = 64
FULL_WAIT_MS = 10  # produce_batch's wait for room in a full queue, at a time
POLL_EVERY = 1024  # produce_batch serves librdkafka's events every this many messages
TOPIC_MASK = 63  # SenderCore: the most topics with an index, named by a msg_id's bits from TOPIC_SHIFT up
TOPIC_SHIFT = 58  # (0: none); the bits below: a sequence number, consecutive slots of the producer's dict


def _size(data: Optional[bytes]) -> int:
    return 0 if data is None else len(data)


def _bytes_or_none(data: Any) -> bool:
    return data is None or type(data) is bytes


class ProducerCore:
    """The producer's core (see :mod:`pyrdk.core`)."""

    def __init__(self, handle: Handle, topic: str, partitions: Iterable[tuple[int, _Partition]],
                 partitioner: Optional[Callable[[list[_Partition], Any], _Partition]], compression: CompressionType,
                 max_size: int, batch: int, report_all: bool, general: Callable[..., Message], start: int) -> None:
        self._handle = handle
        self._topic = topic
        self.partitions = partitions
        self._partitioner = partitioner
        self._compression = compression
        self._max_size = max_size
        self._batch = batch
        self._report_all = report_all
        self._general = general
        self._counter = start  # the round robin's next step
        self._arrow_first = 0  # produce_arrow's step for the batch it is in
        self.divert = False
        self._closed = False
        self._kept: dict[int, Message] = {}  # id -> Message, until its delivery report
        self._ids = itertools.count(1)
        # partition id -> [(value, key, id)] waiting for librdkafka
        self._queues: dict[int, list[tuple[Optional[bytes], Optional[bytes], int]]] = {}
        self._refused: list[tuple[Message, int]] = []  # refused at hand-off, for the next deliver()
        self.batch_sent = 0
        self._lock = threading.RLock()

    @property
    def partitions(self) -> list[tuple[int, _Partition]]:
        """``[(id, Partition)]``, by id."""
        return self._partitions

    @partitions.setter
    def partitions(self, pairs: Iterable[tuple[int, _Partition]]) -> None:
        self._partitions = list(pairs)
        # the partitioner's argument, copied per message (in C) rather than made anew (in Python)
        self._members = [p for _, p in self._partitions]
        # by identity, as the C core looks them up: only the topic's own Partition objects
        # take the fast path (and a partitioner's unhashable answer is no TypeError here)
        self._pid_of = {id(partition): pid for pid, partition in self._partitions}

    def __len__(self) -> int:
        return len(self._kept)

    @property
    def queued(self) -> int:
        return sum(len(q) for q in self._queues.values())

    def _next_step(self) -> int:
        step = self._counter
        self._counter += 1
        return step

    # -- produce() -----------------------------------------------------------------------------

    def produce(self, value: Any, key: Any = None, timestamp: Any = None, headers: Any = None) -> Message:
        if self.divert or timestamp is not None or headers is not None or not _bytes_or_none(value) \
                or not _bytes_or_none(key) or _size(value) + _size(key) + SIZE_MARGIN > self._max_size \
                or not self._partitions or not self._handle.usable:
            return self._general(value, key, timestamp, headers, None)
        partitions = self._partitions  # once: the poller may put a new list in its place meanwhile
        if self._partitioner is None:
            pid, partition = partitions[self._next_step() % len(partitions)]
        else:
            partition = self._partitioner(self._members.copy(), key)
            chosen = self._pid_of.get(id(partition))
            if chosen is None:  # not one of the topic's Partitions: the general path says what it is
                return self._general(value, key, timestamp, headers, partition)
            pid = chosen
        with self._lock:
            queue = self._queues.setdefault(pid, [])
            if len(queue) < self._batch and not self.divert:
                msg = Message._unchecked(value, key, pid, -1, None, 0, None, partition, self._topic, self._compression)
                msg_id = next(self._ids)
                self._kept[msg_id] = msg
                queue.append((value, key, msg_id))
                if len(queue) >= self._batch:
                    self._hand_off(pid)
                return msg
        # librdkafka's queue was full at the last hand-off (or the producer stopped meanwhile).
        return self._general(value, key, timestamp, headers, partition)

    def track(self, msg: Message) -> int:
        with self._lock:
            msg_id = next(self._ids)
            self._kept[msg_id] = msg
            return msg_id

    def untrack(self, msg_id: int) -> Optional[Message]:
        with self._lock:
            return self._kept.pop(msg_id, None)

    def hand_off(self, stopping: bool = False) -> int:
        with self._lock:
            if not self._closed or stopping:
                for pid in list(self._queues):
                    self._hand_off(pid)
            return self.queued

    def _hand_off(self, pid: int) -> None:
        """Hand partition ``pid``'s queue to librdkafka, BATCH_AT_ONCE at a time. Every
        message it took leaves the queue, also one after a refused one (never handed twice);
        what a full queue refuses stays, in order; another refusal fails the message
        (reported by refused()). Also when the call raises (a KeyboardInterrupt as
        librdkafka returns): what librdkafka did not get stays."""
        queue = self._queues[pid]
        while queue:
            errs: list[int] = []
            stays = []
            try:
                self._handle.produce_batch(self._topic, pid, queue[:BATCH_AT_ONCE], errs)
            finally:
                for item, err in zip(queue, errs):
                    if err in (errors.QUEUE_FULL, errors.NOT_TRIED):
                        stays.append(item)
                    elif err:
                        self._refused.append((self._kept.pop(item[2]), err))
                        self.divert = True  # the producer raises it from the general path
                queue[:len(errs)] = stays
            if stays:
                return

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self.divert = True

    # -- delivery reports ----------------------------------------------------------------------

    def refused(self) -> list[tuple[Message, int]]:
        with self._lock:
            out, self._refused = self._refused, []
            return out

    def deliver(self, ids: memoryview, errs: memoryview, partitions: memoryview, offsets: memoryview,
                timestamps: memoryview) -> list[tuple[Message, int]]:
        with self._lock:
            out = []
            for msg_id, err, partition, offset, timestamp in zip(ids, errs, partitions, offsets, timestamps):
                msg = self._kept.pop(msg_id, None)
                if msg is None:
                    continue
                if err:
                    if partition >= 0:
                        msg.partition_id = partition
                    out.append((msg, err))
                    continue
                msg.partition_id = partition
                # With required_acks=0 the broker tells nothing: librdkafka reports an
                # invalid offset (-1001...); pykafka's Message says -1.
                msg.offset = offset if offset >= 0 else -1
                msg.timestamp = timestamp
                if self._report_all:
                    out.append((msg, 0))
            return out

    def take_all(self) -> list[Message]:
        with self._lock:
            self._queues.clear()
            kept, self._kept = self._kept, {}
            refused, self._refused = self._refused, []
            return [msg for msg, _ in refused] + list(kept.values())

    # -- produce_batch() -----------------------------------------------------------------------

    def produce_batch(self, messages: Iterable[Any], block_ms: int) -> Optional[tuple[int, int]]:
        items = []
        for item in messages:
            if type(item) is tuple and len(item) == 2 and type(item[0]) is bytes and _bytes_or_none(item[1]):
                items.append(item)
            elif type(item) is bytes:
                items.append((item, None))
            else:
                return None  # the general path says what is wrong with it
        if not items:
            return 0, 0
        if not self._partitions:
            return None  # nowhere to send them: the general path says so
        with self._lock:
            partitions = self._partitions  # once: the poller may put a new list in its place meanwhile
            count = len(partitions)
            run = -(-len(items) // count)  # each partition's share, consecutive
            first = self._next_step()
            sent, err = 0, 0
            waited = 0
            while sent < len(items):
                pid = partitions[(first + sent // run) % count][0]
                end = min(len(items), (sent // run + 1) * run, sent + BATCH_AT_ONCE)
                value, key = items[sent]
                if _size(value) + _size(key) > self._max_size:
                    err = errors.MSG_SIZE_TOO_LARGE
                    break
                if _size(value) + _size(key) + SIZE_MARGIN > self._max_size:
                    done, err = self._produce_alone(pid, value, key)
                else:
                    end = next((i for i in range(sent, end)
                                if _size(items[i][0]) + _size(items[i][1]) + SIZE_MARGIN > self._max_size), end)
                    done, err, waited = self._produce_run(pid, items[sent:end], block_ms, waited)
                if (sent + done) // POLL_EVERY != sent // POLL_EVERY:
                    self._handle.poll(0, dispatch=False)  # serve delivery reports as we go
                sent += done
                if err == errors.QUEUE_FULL and waited < block_ms:
                    self._handle.flush(FULL_WAIT_MS)  # sends at once, whatever linger.ms says
                    waited += FULL_WAIT_MS
                    err = 0
                    continue
                if err:
                    break
            return sent, err

    def _produce_run(self, pid: int, items: list[tuple[Optional[bytes], Optional[bytes]]], block_ms: int,
                     waited: int) -> tuple[int, int, int]:
        """``items`` to partition ``pid``, offering again what a full queue refused (it
        refuses every message after the first it refuses) while ``waited < block_ms``.
        ``(done, err, waited)``: how many, from the first, are all queued, and the refusal of
        the next. Another refusal stops at once (a message taken after it is queued, though
        not counted in ``done``)."""
        left = list(range(len(items)))
        while True:
            try:
                errs = self._handle.produce_batch(self._topic, pid, [(items[i][0], items[i][1], 0) for i in left])
            except KafkaException as exc:  # a closed handle's refusal, told as the C core tells it
                if exc.code is not None:
                    raise
                return left[0], errors.CLOSED, waited
            refused: list[tuple[int, int]] = []
            for i, err in zip(left, errs):
                if not err:
                    self.batch_sent += 1
                else:
                    refused.append((i, err))
            if not refused:
                return len(items), 0, waited
            other = next((err for _, err in refused if err != errors.QUEUE_FULL), 0)
            if other or waited >= block_ms:
                return refused[0][0], other or errors.QUEUE_FULL, waited
            self._handle.flush(FULL_WAIT_MS)  # sends at once, whatever linger.ms says
            waited += FULL_WAIT_MS
            left = [i for i, _ in refused]

    def _produce_alone(self, pid: int, value: Optional[bytes], key: Optional[bytes]) -> tuple[int, int]:
        try:
            self._handle.produce(self._topic, pid, value, key, 0, None, 0)
        except KafkaException as exc:  # Handle.produce() raises with librdkafka's code, or a closed handle's refusal
            return 0, exc.code if exc.code is not None else errors.CLOSED
        self.batch_sent += 1
        return 1, 0

    # -- produce_arrow() -----------------------------------------------------------------------

    def produce_arrow(self, columns: tuple[Any, ...], start: int, block_ms: int) -> Optional[tuple[int, int]]:
        if type(columns) is not tuple or len(columns) != 5:
            raise TypeError("produce_arrow: columns must be (rows, hashed, value, key, partition)")
        rows, hashed, value, key, part = columns
        _check_offset(rows)
        _check_offset(start)
        if not self._partitions:
            return None  # nowhere to send them: the caller says so
        if not 0 <= start <= rows:
            raise ValueError("produce_arrow: start %d is past the %d rows" % (start, rows))
        values = _BinaryColumn(value, rows, "value")
        keys = _BinaryColumn(key, rows, "key") if key is not None else None
        parts = _IntColumn(part, rows) if part is not None else None
        with self._lock:
            pids = [pid for pid, _ in self._partitions]
            if start == 0:
                self._arrow_first = self._next_step()
            run = -(-rows // len(pids))  # each partition's share, consecutive, as in produce_batch
            waited = 0
            for row in range(start, rows):
                v = values.cell(row)
                k = keys.cell(row) if keys is not None else None
                if _size(v) + _size(k) > self._max_size:
                    return row, errors.MSG_SIZE_TOO_LARGE
                pid = parts.cell(row) if parts is not None else None
                if pid is None:
                    if hashed and k is not None:
                        pid = pids[murmur2_partition(k, len(pids))]
                    else:
                        pid = pids[(self._arrow_first + row // run) % len(pids)]
                elif pid not in pids:
                    return row, errors.UNKNOWN_PARTITION
                while True:  # offered again while a full queue refuses it, for block_ms at most
                    done, err = self._produce_alone(pid, v, k)
                    if err != errors.QUEUE_FULL or waited >= block_ms:
                        break
                    self._handle.flush(FULL_WAIT_MS)  # sends at once, whatever linger.ms says
                    waited += FULL_WAIT_MS
                if err:
                    return row, err
                if (row + 1) % POLL_EVERY == 0:
                    self._handle.poll(0, dispatch=False)  # serve delivery reports as we go
                if waited > block_ms and row + 1 < rows:
                    return row + 1, errors.QUEUE_FULL  # the caller serves and calls again
            return rows, 0


class _BinaryColumn:
    """An Arrow binary column from its buffers, ``(offset, validity, offsets, data, wide)``."""

    def __init__(self, column: tuple[Any, ...], rows: int, name: str) -> None:
        if type(column) is not tuple or len(column) != 5:
            raise TypeError("produce_arrow: the %s column must be (offset, validity, offsets, data, wide)" % name)
        offset, valid, offsets, data, wide = column
        _check_offset(offset)
        self._offset, self._name = offset, name
        self._valid = _need(valid, (offset + rows + 7) // 8, name + " validity") if valid is not None else None
        width = 8 if wide else 4
        self._offsets = _need(offsets, (offset + rows + 1) * width, name + " offsets").cast("q" if wide else "i")
        self._data = _need(data, 0, name + " data")

    def cell(self, row: int) -> Optional[bytes]:
        """Row ``row``'s bytes, or None where it is null."""
        i = self._offset + row
        if self._valid is not None and not self._valid[i >> 3] >> (i & 7) & 1:
            return None
        start, end = self._offsets[i], self._offsets[i + 1]
        if start < 0 or end < start or end > len(self._data):
            raise ValueError("produce_arrow: row %d of the %s column has offsets %d..%d outside its %d bytes of data"
                             % (row, self._name, start, end, len(self._data)))
        return bytes(self._data[start:end])


class _IntColumn:
    """An Arrow int32 column from its buffers, ``(offset, validity, data)``."""

    def __init__(self, column: tuple[Any, ...], rows: int) -> None:
        if type(column) is not tuple or len(column) != 3:
            raise TypeError("produce_arrow: the partition column must be (offset, validity, data)")
        offset, valid, data = column
        _check_offset(offset)
        self._offset = offset
        self._valid = _need(valid, (offset + rows + 7) // 8, "partition validity") if valid is not None else None
        self._data = _need(data, (offset + rows) * 4, "partition data").cast("i")

    def cell(self, row: int) -> Optional[int]:
        i = self._offset + row
        if self._valid is not None and not self._valid[i >> 3] >> (i & 7) & 1:
            return None
        return int(self._data[i])


def _check_offset(offset: Any) -> None:
    if type(offset) is not int or not 0 <= offset < 2 ** 58:
        raise ValueError("produce_arrow: a column's offset, the rows and start must be ints >= 0 and below 2**58")


def _need(buffer: Any, size: int, what: str) -> memoryview:
    """The bytes of ``buffer``, at least ``size`` of them."""
    try:
        view = memoryview(buffer).cast("B")
    except TypeError:
        raise TypeError("produce_arrow: the %s buffer must support the buffer protocol, not %s"
                        % (what, type(buffer).__name__)) from None
    if len(view) < size:
        raise ValueError("produce_arrow: the %s buffer holds %d bytes, the rows need %d" % (what, len(view), size))
    return view

class ConsumerCore:
    """The consumer's core (see :mod:`pyrdk.core`)."""

    def __init__(self, partitions: dict[int, _Partition]) -> None:
        self.partitions = partitions
        self._buffer: collections.deque[Message] = collections.deque()
        self._next: dict[int, Optional[int]] = {}  # partition id -> the next offset to hand out (None: not known yet)

    def __len__(self) -> int:
        return len(self._buffer)

    def add(self, pointers: memoryview) -> tuple[int, list[int]]:
        made, positions = messages_of(pointers, self.partitions)
        self._buffer.extend(made)
        return len(made), positions

    def add_columns(self, pointers: memoryview) -> tuple[list[Message], list[int]]:
        made, positions = messages_of(pointers, self.partitions)
        for msg in made:  # counted as handed out, none buffered
            self._next[msg.partition_id] = msg.offset + 1
        return made, positions

    def add_records(self, pointers: memoryview, record: Callable[..., tuple[Any, ...]],
                    partition: Callable[..., tuple[Any, ...]]) -> tuple[list[list[Any]], list[int]]:
        made, positions = messages_of(pointers, None)
        runs: list[list[Any]] = []
        records: list[tuple[Any, ...]] = []
        for msg in made:  # counted as handed out, none buffered
            if not runs or msg.partition_id != runs[-1][0][1] or msg.topic != runs[-1][0][0]:
                records = []
                runs.append([partition(msg.topic, msg.partition_id), records])
            key, value, tstype = msg.partition_key, msg.value, msg.timestamp_type
            records.append(record(msg.topic, msg.partition_id, msg.offset, msg.timestamp, tstype - 1 if tstype else -1,
                                  key, value, None, -1 if key is None else len(key),
                                  -1 if value is None else len(value), tuple(msg.headers) if msg.headers else ()))
            self._next[msg.partition_id] = msg.offset + 1
        return runs, positions

    def next(self) -> Optional[Message]:
        if not self._buffer:
            return None
        msg = self._buffer.popleft()
        self._next[msg.partition_id] = msg.offset + 1
        return msg

    def take(self, max_messages: int) -> list[Message]:
        out: list[Message] = []
        while len(out) < max_messages:
            msg = self.next()
            if msg is None:
                break
            out.append(msg)
        return out

    def iterator(self, refill: Callable[[], Optional[Message]]) -> Iterator[Message]:
        while True:
            msg = self.next()
            if msg is None:
                msg = refill()
                if msg is None:
                    return
            yield msg

    def next_offsets(self) -> dict[int, Optional[int]]:
        return dict(self._next)

    def set_next(self, pid: int, offset: Optional[int]) -> None:
        self._next[pid] = offset

    def forget(self, pid: int) -> None:
        self._next.pop(pid, None)

    def take_partitions(self, pids: Collection[int]) -> list[Message]:
        taken = [m for m in self._buffer if m.partition_id in pids]
        if taken:
            kept = [m for m in self._buffer if m.partition_id not in pids]
            self._buffer.clear()
            self._buffer.extend(kept)
        return taken

    def extend(self, messages: Iterable[Message]) -> None:
        self._buffer.extend(messages)

    def clear(self) -> None:
        self._buffer.clear()


class SenderCore:
    """The asyncio producer's core (see :mod:`pyrdk.core`)."""

    def __init__(self, handle: Handle, max_size: int) -> None:
        self._handle = handle
        self._max_size = max_size
        self._topics: dict[str, int] = {}
        self._names: list[str] = [""]  # the topic of each index add_topic() gave ([0]: none)
        self._indexes: dict[str, int] = {}  # topic -> its index, for the topics that have one
        self._pending: Optional[dict[int, Any]] = None  # bind()'s
        self._make: Callable[..., Any] = lambda: None
        self._loop: Any = None
        self._yield_every = 0
        self._seq = 0  # send_record()'s last sequence number (a msg_id's bits below TOPIC_SHIFT)
        self._calls = 0

    def add_topic(self, topic: str, rkt: int) -> int:
        self._topics[topic] = rkt
        if topic in self._indexes:
            return self._indexes[topic]
        if len(self._names) > TOPIC_MASK:
            return 0
        self._names.append(topic)
        self._indexes[topic] = len(self._names) - 1
        return len(self._names) - 1

    def send(self, topic: str, partition: int, value: Optional[bytes], key: Optional[bytes], msg_id: int) -> int:
        if topic not in self._topics:
            raise KeyError("send(): topic %r was not added (add_topic())" % (topic,))
        if _size(value) + _size(key) > self._max_size:
            return errors.MSG_SIZE_TOO_LARGE
        try:
            self._handle.produce_guarded(topic, partition, value, key, None, None, msg_id)
        except KafkaException as exc:  # librdkafka's refusal; a closed handle's refusal goes on up
            if exc.code is None:
                raise
            return exc.code
        return 0

    def bind(self, pending: dict[int, Any], make: Callable[..., Any], loop: Any, yield_every: int) -> None:
        if type(pending) is not dict:
            raise TypeError("bind(): pending must be a dict, not %s" % type(pending).__name__)
        if not callable(make):
            raise TypeError("bind(): make must be callable, not %s" % type(make).__name__)
        if type(yield_every) is not int or yield_every <= 1:
            raise ValueError("bind(): yield_every must be an int > 1, not %r" % (yield_every,))
        self._pending, self._make, self._loop, self._yield_every = pending, make, loop, yield_every

    def send_record(self, topic: str, value: Optional[bytes], key: Optional[bytes]) -> Any:
        if self._pending is None:
            raise RuntimeError("send_record(): bind() the producer's table first")
        if type(topic) is not str or not _bytes_or_none(value) or not _bytes_or_none(key):
            return None
        index = self._indexes.get(topic)
        if index is None or _size(value) + _size(key) > self._max_size or not self._handle.usable:
            return None
        self._calls += 1
        if self._calls % self._yield_every == 0:
            return False  # nothing done: let the loop run, then call again
        fut = self._make() if self._loop is None else self._make(loop=self._loop)
        self._seq += 1
        msg_id = index << TOPIC_SHIFT | self._seq
        self._pending[msg_id] = fut
        try:
            self._handle.produce_guarded(topic, -1, value, key, None, None, msg_id)
        except KafkaException:  # not taken: the general path tries it again and says why
            del self._pending[msg_id]
            return None
        return fut  # it stays under the cyclic GC: Python cannot take it out

    def release(self, future: Any) -> None:
        pass  # send_record() left it under the cyclic GC

    def deliver(self, pending: dict[int, Any], ids: memoryview, errs: memoryview,
                partitions: memoryview, offsets: memoryview, timestamps: memoryview,
                metadata: Callable[..., tuple[Any, ...]],
                partition: Callable[..., tuple[Any, ...]]) -> list[tuple[Any, str, int]]:
        failed: list[tuple[Any, str, int]] = []
        for msg_id, err, pid, offset, timestamp in zip(ids, errs, partitions, offsets, timestamps):
            entry = pending.pop(msg_id, None)
            if entry is None:
                continue
            if type(entry) is not tuple and 0 < msg_id >> TOPIC_SHIFT < len(self._names):
                fut, topic, timestamp_ms = entry, self._names[msg_id >> TOPIC_SHIFT], None
            else:
                fut, topic, timestamp_ms = entry
            if fut.done():  # cancelled by the program: nothing to tell
                continue
            if err:
                failed.append((fut, topic, err))
                continue
            fut.set_result(metadata(topic, pid, partition(topic, pid), offset,
                                    timestamp if timestamp_ms is None else timestamp_ms, 0, None))
        return failed
