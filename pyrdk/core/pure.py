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
TOPIC_MASK = 63  # SenderCore: a msg_id's low bits, the index of its topic (0: none)


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
        if self._partitioner is None:
            pid, partition = self._partitions[self._next_step() % len(self._partitions)]
        else:
            partition = self._partitioner([p for _, p in self._partitions], key)
            chosen = self._pid_of.get(id(partition))
            if chosen is None:  # not one of the topic's Partitions: the general path says what it is
                return self._general(value, key, timestamp, headers, partition)
            pid = chosen
        with self._lock:
            queue = self._queues.setdefault(pid, [])
            if len(queue) < self._batch and not self.divert:
                msg = Message(value, key, pid, partition=partition, topic=self._topic,
                              compression_type=self._compression)
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
        """Hand partition ``pid``'s queue to librdkafka, BATCH_AT_ONCE at a time. What a full
        queue refuses stays; another refusal fails the message (reported by deliver())."""
        queue = self._queues[pid]
        while queue:
            queued, err = self._handle.produce_batch(self._topic, pid, queue[:BATCH_AT_ONCE])
            del queue[:queued]
            if err == errors.QUEUE_FULL:
                return
            if err:
                msg_id = queue.pop(0)[2]
                self._refused.append((self._kept.pop(msg_id), err))
                self.divert = True  # the producer raises it from the general path

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
            count = len(self._partitions)
            run = -(-len(items) // count)  # each partition's share, consecutive
            first = self._next_step()
            sent, err = 0, 0
            waited = 0
            while sent < len(items):
                pid = self._partitions[(first + sent // run) % count][0]
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
                    done, err = self._handle.produce_batch(self._topic, pid,
                                                           [(v, k, 0) for v, k in items[sent:end]])
                if (sent + done) // POLL_EVERY != sent // POLL_EVERY:
                    self._handle.poll(0, dispatch=False)  # serve delivery reports as we go
                sent += done
                self.batch_sent += done
                if err == errors.QUEUE_FULL and waited < block_ms:
                    self._handle.flush(FULL_WAIT_MS)  # sends at once, whatever linger.ms says
                    waited += FULL_WAIT_MS
                    err = 0
                    continue
                if err:
                    break
            return sent, err

    def _produce_alone(self, pid: int, value: Optional[bytes], key: Optional[bytes]) -> tuple[int, int]:
        try:
            self._handle.produce(self._topic, pid, value, key, 0, None, 0)
        except KafkaException as exc:  # Handle.produce() raises with librdkafka's code; else UNKNOWN (-1)
            return 0, exc.code if exc.code is not None else -1
        return 1, 0


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
                                  -1 if value is None else len(value), msg.headers or ()))
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

    def add_topic(self, topic: str, rkt: int) -> int:
        self._topics[topic] = rkt
        if topic in self._names[1:]:
            return self._names.index(topic, 1)
        if len(self._names) > TOPIC_MASK:
            return 0
        self._names.append(topic)
        return len(self._names) - 1

    def send(self, topic: str, partition: int, value: Optional[bytes], key: Optional[bytes], msg_id: int,
             future: Any = None) -> int:
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
        return 0  # the future stays under the cyclic GC: Python cannot take it out

    def release(self, future: Any) -> None:
        pass  # send() left it under the cyclic GC

    def deliver(self, pending: dict[int, Any], ids: memoryview, errs: memoryview,
                partitions: memoryview, offsets: memoryview, timestamps: memoryview,
                metadata: Callable[..., tuple[Any, ...]],
                partition: Callable[..., tuple[Any, ...]]) -> list[tuple[Any, str, int]]:
        failed: list[tuple[Any, str, int]] = []
        for msg_id, err, pid, offset, timestamp in zip(ids, errs, partitions, offsets, timestamps):
            entry = pending.pop(msg_id, None)
            if entry is None:
                continue
            if type(entry) is not tuple and 0 < msg_id & TOPIC_MASK < len(self._names):
                fut, topic, timestamp_ms = entry, self._names[msg_id & TOPIC_MASK], None
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
