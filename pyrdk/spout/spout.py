"""KafkaSpout: Storm's spout contract over a pyrdk consumer, at least once.

Each message is handed out by :meth:`KafkaSpout.next_tuple` with a tuple id ``(topic,
partition, offset)``; the topology calls :meth:`KafkaSpout.ack` or :meth:`KafkaSpout.fail`
with it later, in any order. Per partition the spout commits only the end of the contiguous
acked prefix (:mod:`pyrdk.spout.offsets`), so an offset is committed only when every message
before it was acked: after a crash, the next reader starts at the first message not acked,
and nothing is lost. Failed tuples are emitted again after a backoff, up to ``max_retries``
times; at the failure after that (the ``max_retries + 1``-th) they go to the dead-letter
topic, or are reported and skipped. With ``output_topic`` and ``transactional_id``, what the
acks carry is written to Kafka in the same transaction as the offsets
(:func:`pyrdk.exactlyonce.commit_in_transaction`).

Threads: ``next_tuple``, ``ack``, ``fail`` and ``commit`` are called from one thread (as
Storm does). The consumer's ``pre_revoke_callback`` may run in another (the ZooKeeper
consumer's coordinator); the spout's state is guarded by a lock that is never held while
the consumer is called. ``next_tuple`` calls from several threads take their turns: each
message is tracked before the next is taken, so they are tracked in the consumer's order.
"""
from __future__ import annotations

import collections
import heapq
import itertools
import logging
import operator
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple, Optional, Union

from pyrdk import common
from pyrdk.common import check_int, stop_at_exit
from pyrdk.exactlyonce import check_outputs, commit_in_transaction, raised_again
from pyrdk.exceptions import (ConsumerStoppedException, KafkaException, NoBrokersAvailableError, ProduceFailureError,
                              UnknownPartitionError)
from pyrdk.spout.offsets import ACKED, PENDING, Entry, PartitionOffsets
from pyrdk.topic import Topic

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from pyrdk.producer import Producer


class TupleId(NamedTuple):
    """A tuple's id: where its message is. JSON-serializable (as a list)."""
    topic: str
    partition: int
    offset: int


class SpoutTuple(NamedTuple):
    """What :meth:`KafkaSpout.next_tuple` hands out: the tuple id, the pyrdk ``Message``, and
    how many times it failed before (0: its first emission)."""
    id: TupleId
    message: common.Message
    failures: int


CONSUMERS = ("managed", "zookeeper", "simple")
# Back-pressure lasting this long pauses the consumer's partitions, which are polled on.
STALL_AFTER_S = 1.0
DEAD_LETTER_HEADERS = ("spout.topic", "spout.partition", "spout.offset", "spout.failures")


class KafkaSpout:
    """A framework-neutral reliable spout over one topic.

    :param topic: the :class:`pyrdk.topic.Topic` to read
    :param consumer_group: bytes or str: offsets are committed under it
    :param consumer: which pyrdk consumer reads: ``"managed"`` (the broker's group
        protocol, :class:`pyrdk.managedbalancedconsumer.ManagedBalancedConsumer`),
        ``"zookeeper"`` (pykafka's :class:`pyrdk.balancedconsumer.BalancedConsumer`) or
        ``"simple"`` (:class:`pyrdk.simpleconsumer.SimpleConsumer`, every partition or
        ``partitions=[...]``)
    :param max_spout_pending: the most tuples emitted and not yet acked (in flight or
        waiting to be emitted again); ``next_tuple`` emits nothing new beyond it
    :param max_uncommitted_offsets: the most tuples tracked and not yet committed, acked
        ones waiting behind an older one included (default: 10 × ``max_spout_pending``); it
        bounds memory when one tuple stays unacked
    :param max_retries: how many times a failed tuple is emitted again (None: for ever)
    :param retry_backoff_ms: the wait before the first replay, doubled at each failure...
    :param max_retry_backoff_ms: ...up to this
    :param dead_letter_topic: a Topic where a tuple goes after its last failure (its
        value, key and headers, plus the headers ``spout.topic``, ``spout.partition``,
        ``spout.offset`` and ``spout.failures``); its offset is committed past once the
        dead letter is written. Without it, the policy is **report and skip**: the tuple is
        logged as an error (logger ``pyrdk.spout``), ``on_give_up(message, failures)`` is
        called, and its offset is committed past as if it had been acked.
    :param on_give_up: ``f(message, failures)`` called for each tuple given up (after a
        dead letter is written, or when it is skipped)
    :param commit_interval_ms: how often the acked prefix is committed (also at
        :meth:`commit`, :meth:`close`, and before partitions are revoked)
    :param output_topic: with ``transactional_id``: a Topic where the outputs given to
        :meth:`ack` (or made by ``outputs``) are written exactly once, in the transaction
        that commits the offsets past their tuple (``consumer`` ``"managed"`` or ``"simple"``)
    :param transactional_id: the output producer's ``transactional_id`` (one per spout
        instance, kept across its restarts)
    :param outputs: ``f(message) -> iterable`` of values or ``(value, partition_key)``
        pairs: the outputs of a tuple acked without any
    :param producer_kwargs: more arguments of the output producer
    :param consumer_kwargs: the consumer's own arguments (``zookeeper_hosts``,
        ``max_poll_interval_ms``, ``partitions``...); ``auto_commit_enable`` is refused:
        the spout commits
    """

    def __init__(self, topic: Topic, consumer_group: Union[str, bytes], consumer: str = "managed",
                 max_spout_pending: int = 1000, max_uncommitted_offsets: Optional[int] = None,
                 max_retries: Optional[int] = 5, retry_backoff_ms: int = 100, max_retry_backoff_ms: int = 10000,
                 dead_letter_topic: Optional[Topic] = None,
                 on_give_up: Optional[Callable[[common.Message, int], Any]] = None, commit_interval_ms: int = 1000,
                 output_topic: Optional[Topic] = None, transactional_id: Optional[str] = None,
                 outputs: Optional[Callable[[common.Message], Iterable[Any]]] = None,
                 producer_kwargs: Optional[dict[str, Any]] = None, **consumer_kwargs: Any) -> None:
        if consumer not in CONSUMERS:
            raise ValueError("consumer must be one of %s, not %r" % (", ".join(CONSUMERS), consumer))
        if not consumer_group or not isinstance(consumer_group, (str, bytes)):
            raise ValueError("the spout needs a consumer_group (a non-empty str or bytes) to commit the acked "
                             "offsets under, not %r" % (consumer_group,))
        for name, value in (("topic", topic), ("dead_letter_topic", dead_letter_topic), ("output_topic", output_topic)):
            if (value is not None or name == "topic") and not isinstance(value, Topic):
                raise TypeError("%s must be a pyrdk Topic (client.topics[name]), not %r" % (name, value))
        if consumer_kwargs.get("auto_commit_enable") or "pre_revoke_callback" in consumer_kwargs:
            raise ValueError("the spout commits the acked offsets itself: leave auto_commit_enable and "
                             "pre_revoke_callback out")
        self._max_pending = check_int("max_spout_pending", max_spout_pending, 1)
        self._max_uncommitted = check_int("max_uncommitted_offsets", max_uncommitted_offsets, 1) \
            if max_uncommitted_offsets is not None else 10 * self._max_pending
        self._max_retries = None if max_retries is None else check_int("max_retries", max_retries, 0)
        self._backoff_ms = check_int("retry_backoff_ms", retry_backoff_ms, 0)
        self._max_backoff_ms = check_int("max_retry_backoff_ms", max_retry_backoff_ms, 0)
        self._commit_interval_ms = check_int("commit_interval_ms", commit_interval_ms, 0)
        for name, fn in (("on_give_up", on_give_up), ("outputs", outputs)):
            if fn is not None and not callable(fn):
                raise TypeError("%s must be callable" % name)
        if (output_topic is None) != (transactional_id is None):
            raise ValueError("an exactly-once spout needs both output_topic and transactional_id")
        if output_topic is None and outputs is not None:
            raise ValueError("outputs needs output_topic and transactional_id")
        if output_topic is not None and consumer == "zookeeper":
            raise ValueError("exactly-once output needs consumer='managed' (or 'simple'): a ZooKeeper "
                             "member cannot tell a revocation from a lost session, nor be fenced")
        self._on_give_up = on_give_up
        self._outputs = outputs
        self._topic_name = topic.name.decode()
        self._lock = threading.RLock()
        # held by next_tuple() from taking a message to tracking it: two threads' messages
        # tracked out of the consumer's order looked like the consumer going back, and the
        # later one, emitted all the same, was dropped from tracking: committed past unacked
        self._next_lock = threading.Lock()
        self._partitions: dict[int, PartitionOffsets] = {}
        self._retries: list[tuple[float, int, int, Entry]] = []  # a heap of (retry_at, seq, partition id, Entry)
        self._seq = itertools.count()
        self._revocations = 0  # pre_revoke_callback calls so far
        self._pressed_since: Optional[float] = None  # when the current back-pressure began
        self._stalled: set[int] = set()  # partitions the back-pressure paused
        self._stalled_at = 0  # _revocations when they were paused
        self._last_commit = time.monotonic()
        self._closed = False
        # emitted, replayed, acked, failed, dead_lettered, skipped...
        self.stats: collections.Counter[str] = collections.Counter()
        self._producer: Optional[Producer] = None
        # what a transaction whose commit timed out commits: {pid: (PartitionOffsets, position, outputs)}
        self._in_doubt: Optional[dict[int, tuple[PartitionOffsets, int, list[Any]]]] = None
        self._dead_letters: Optional[Producer] = None
        try:
            if output_topic is not None:
                self._producer = output_topic.get_producer(transactional_id=transactional_id,
                                                           **(producer_kwargs or {}))
                self._producer.init_transactions()
            if dead_letter_topic is not None:
                self._dead_letters = dead_letter_topic.get_sync_producer(enable_idempotence=True)
            self.consumer = self._make_consumer(topic, consumer_group, consumer, consumer_kwargs)
        except BaseException:
            self._stop_producers()
            raise

    def _make_consumer(self, topic, consumer_group, kind, kwargs):
        kwargs = dict(kwargs, auto_commit_enable=False)
        if kind == "simple":
            return topic.get_simple_consumer(consumer_group, **kwargs)
        return topic.get_balanced_consumer(consumer_group, managed=(kind == "managed"),
                                           pre_revoke_callback=self._on_revoke, **kwargs)

    # -- what Storm calls ------------------------------------------------------------------------

    def next_tuple(self) -> Optional[SpoutTuple]:
        """The next tuple to emit, or None; never waits. A failed tuple whose backoff is over
        comes first (the same id again); a new message only while fewer than
        ``max_spout_pending`` tuples are unacked and fewer than ``max_uncommitted_offsets``
        are tracked."""
        self._check_open()
        self._maybe_commit()
        with self._next_lock:
            return self._next_tuple()

    def _next_tuple(self):
        with self._lock:
            replay = self._due_replay()
            if replay is not None:
                return replay
            pressed = self.pending >= self._max_pending
            full = not pressed and self.uncommitted >= self._max_uncommitted
            revocations = self._revocations
        # Acked tuples count against max_uncommitted_offsets until committed: commit the acked
        # prefix now, rather than at the interval, when that makes room.
        if pressed or (full and (not self.commit() or self.uncommitted >= self._max_uncommitted)):
            message = self._press()
            if message is None:
                return None
            return self._track(message, revocations)
        if self._pressed_since is not None:
            self._release()
        message = self.consumer.consume(block=False)
        if message is None:
            return None
        return self._track(message, revocations)

    def _press(self):
        """Back-pressure: nothing new is taken. Once it has lasted STALL_AFTER_S, the
        consumer's partitions are paused (``rd_kafka_pause_partitions``) and the consumer is
        polled on, so that a group member keeps its place in the group (librdkafka's
        ``max.poll.interval.ms``) and serves rebalances while the topology catches up. The
        poll returns a message only from a partition assigned during it: that one is
        emitted."""
        now = time.monotonic()
        if self._pressed_since is None:
            self._pressed_since = now
        if now - self._pressed_since < STALL_AFTER_S:
            return None
        consumer = self.consumer
        if self._stalled_at != self._revocations:  # a rebalance may have undone the pauses
            self._stalled, self._stalled_at = set(), self._revocations
        fresh = sorted(set(consumer.partitions) - self._stalled)
        if fresh:
            try:
                consumer.pause(fresh)
            except (ValueError, KafkaException) as exc:  # the assignment changed meanwhile: next call
                log.debug("back-pressure pause: %s", exc)
                return None
            self._stalled.update(fresh)
        return consumer.consume(block=False)

    def _release(self):
        """The back-pressure is over: resume what :meth:`_press` paused."""
        self._pressed_since = None
        stalled, self._stalled = self._stalled, set()
        held = [pid for pid in sorted(stalled) if pid in self.consumer.partitions]
        if held:
            try:
                self.consumer.resume(held)
            except (ValueError, KafkaException) as exc:  # revoked meanwhile: nothing to resume
                log.debug("back-pressure resume: %s", exc)

    def _due_replay(self):
        now = time.monotonic()
        while self._retries and self._retries[0][0] <= now:
            _, _, pid, entry = heapq.heappop(self._retries)
            part = self._partitions.get(pid)
            if part is None or part.get(entry.offset) is not entry or entry.state != PENDING \
                    or entry.retry_at is None:
                continue  # revoked, or dropped since
            entry.retry_at = None
            self.stats["replayed"] += 1
            return SpoutTuple(TupleId(self._topic_name, pid, entry.offset), entry.message, entry.failures)
        return None

    def _track(self, message, revocations):
        """Start tracking a message the consumer just returned. If partitions were revoked
        meanwhile (in another thread, or inside ``consume()``), the message counts only if
        the consumer still holds its partition at that message; otherwise its partition is
        read again from the last commit, and the message is dropped here."""
        while True:
            with self._lock:
                if self._revocations == revocations:
                    return self._emit(message)
                revocations = self._revocations
            held = self.consumer.held_offsets or {}
            with self._lock:
                if self._revocations != revocations:
                    continue
                if held.get(message.partition_id) != message.offset:
                    self.stats["stale"] += 1
                    return None
                return self._emit(message)

    def _emit(self, message):
        pid = message.partition_id
        part = self._partitions.get(pid)
        if part is None:
            part = self._partitions[pid] = PartitionOffsets()
        part.add(message)
        self.stats["emitted"] += 1
        return SpoutTuple(TupleId(self._topic_name, pid, message.offset), message, 0)

    def ack(self, tuple_id: Union[TupleId, Iterable[Any]], outputs: Optional[Iterable[Any]] = None) -> bool:
        """The topology is done with the tuple. ``outputs`` (exactly-once spouts): values or
        ``(value, partition_key)`` pairs to write when its offset is committed. An id the
        spout does not track (acked already, or of a partition revoked since) is ignored;
        returns whether the ack counted."""
        self._check_open()
        pid, offset = self._locate(tuple_id)
        if outputs is not None and self._producer is None:
            raise ValueError("ack(outputs=...) needs an exactly-once spout (output_topic and transactional_id)")
        with self._lock:
            part, entry = self._entry(pid, offset)
            if entry is None or entry.state == ACKED:
                self.stats["ignored"] += 1
                return False
            if self._producer is not None:
                what = "ack(outputs=...)"
                if outputs is None and self._outputs is not None:
                    outputs, what = self._outputs(entry.message), "outputs(message)"
                outputs = check_outputs(self._producer, () if outputs is None else outputs, what)
            part.ack(entry, outputs)
            self.stats["acked"] += 1
        self._maybe_commit()
        return True

    def fail(self, tuple_id: Union[TupleId, Iterable[Any]]) -> bool:
        """The tuple failed (or timed out): emit it again after a backoff, or, at its
        ``max_retries + 1``-th failure, write it to the dead-letter topic or report and skip it.
        Returns whether the fail counted (an unknown or acked id is ignored)."""
        self._check_open()
        pid, offset = self._locate(tuple_id)
        with self._lock:
            part, entry = self._entry(pid, offset)
            if entry is None or entry.state == ACKED or entry.retry_at is not None:
                self.stats["ignored"] += 1
                return False
            entry.failures += 1
            self.stats["failed"] += 1
            if self._max_retries is None or entry.failures <= self._max_retries:
                self._schedule(pid, entry, entry.failures)
                return True
            message, failures = entry.message, entry.failures
        self._give_up(pid, entry, message, failures)
        return True

    def _schedule(self, pid, entry, failures):
        delay_ms = min(self._max_backoff_ms, self._backoff_ms * (2 ** min(failures - 1, 30)))
        entry.retry_at = time.monotonic() + delay_ms / 1000.0
        heapq.heappush(self._retries, (entry.retry_at, next(self._seq), pid, entry))

    def _give_up(self, pid, entry, message, failures):
        """After the last failure: the dead-letter topic, or the report-and-skip policy."""
        if self._dead_letters is not None:
            headers = list(message.headers or []) + list(zip(DEAD_LETTER_HEADERS, (
                self._topic_name.encode(), b"%d" % pid, b"%d" % message.offset, b"%d" % failures)))
            try:
                self._dead_letters.produce(message.value, partition_key=message.partition_key, headers=headers)
            except KafkaException as exc:
                log.warning("could not write %s [%d] offset %d to the dead-letter topic (%s); it is emitted "
                            "again later", self._topic_name, pid, message.offset, exc)
                with self._lock:
                    if self._entry(pid, message.offset)[1] is entry:
                        self._schedule(pid, entry, failures)
                return
            what = "dead_lettered"
        else:
            log.error("giving up %s [%d] offset %d after %d failures: skipped (report-and-skip policy; "
                      "configure dead_letter_topic to keep such messages)", self._topic_name, pid,
                      message.offset, failures)
            what = "skipped"
        with self._lock:
            part, current = self._entry(pid, message.offset)
            if current is entry:
                part.ack(entry, [] if self._producer is not None else None)
                self.stats[what] += 1
        if self._on_give_up is not None:
            self._on_give_up(message, failures)

    def _locate(self, tuple_id):
        try:
            if isinstance(tuple_id, (str, bytes)):  # three characters would unpack
                raise TypeError
            topic, pid, offset = tuple_id
            if isinstance(pid, bool) or isinstance(offset, bool):  # JSON's true and false are no ints here
                raise TypeError
            pid, offset = operator.index(pid), operator.index(offset)  # ints: keys of the tracking dicts
        except (TypeError, ValueError):
            raise TypeError("a tuple id is (topic, partition, offset), as next_tuple() gave it, not %r"
                            % (tuple_id,)) from None
        if topic != self._topic_name:
            return None, None
        return pid, offset

    def _entry(self, pid, offset):
        part = self._partitions.get(pid)
        return (part, part.get(offset)) if part is not None else (None, None)

    # -- committing -----------------------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Tuples emitted and not acked (in flight, or waiting to be emitted again)."""
        return sum(part.unacked for part in self._partitions.values())

    @property
    def uncommitted(self) -> int:
        """Tuples tracked: not acked, or acked and not yet committed."""
        return sum(len(part) for part in self._partitions.values())

    def positions(self) -> dict[int, int]:
        """``{partition id: the offset the acked prefix reaches}``: what :meth:`commit` commits."""
        with self._lock:
            return {pid: pos for pid, pos in ((pid, part.position()) for pid, part in self._partitions.items())
                    if pos is not None}

    def _maybe_commit(self):
        if (time.monotonic() - self._last_commit) * 1000 >= self._commit_interval_ms:
            self.commit()

    def commit(self) -> dict[int, int]:
        """Commit, for each partition, the end of its contiguous acked prefix (the first
        offset not acked), where it moved. Returns the offsets committed,
        ``{partition id: offset}``; a failed commit is logged and tried again later (an
        exactly-once commit that timed out is finished first). An exactly-once commit whose
        error would come again with the same outputs is raised (``fatal``, or neither
        ``retriable`` nor ``txn_requires_abort``: an output larger than ``max_request_size``;
        not ``NoBrokersAvailableError``, which ends with the outage).
        Raises ``ConsumerStoppedException`` once the spout is closed (``close()`` commits last)."""
        self._check_open()
        self._last_commit = time.monotonic()
        finished: dict[int, int] = {}
        if self._in_doubt is not None:
            finished = self._finish_commit()
            if self._in_doubt is not None:
                return {}
        held = set(self.consumer.partitions)
        with self._lock:
            due: dict[int, tuple[PartitionOffsets, int, list[Any]]] = {}
            for pid, part in self._partitions.items():
                pos = part.position()
                if pid in held and pos is not None and (part.committed is None or pos > part.committed):
                    due[pid] = (part, pos, [out for entry in part.prefix() if entry.offset < pos
                                            for out in (entry.outputs or ())])
        if not due:
            return finished
        offsets = [(pid, pos) for pid, (_, pos, _) in sorted(due.items())]
        # A revocation between here and the commit can make this commit an older offset than
        # the one committed at the revocation: messages are read twice then, never lost.
        try:
            self._commit(offsets, [out for pid in sorted(due) for out in due[pid][2]])
        except UnknownPartitionError as exc:  # a partition went meanwhile (revoked in another thread)
            log.info("commit of %s skipped: %s", offsets, exc)
            return finished
        except KafkaException as exc:
            if exc.fatal or (self._producer is not None and not self._producer.commit_in_doubt
                             and raised_again(exc) and not isinstance(exc, NoBrokersAvailableError)):
                raise  # the same outputs would fail again, forever (an outage ends: tried again later)
            if self._producer is not None and self._producer.commit_in_doubt:
                self._in_doubt = due
                log.warning("commit of %s unfinished (%s); finished at the next commit", offsets, exc)
            else:
                log.warning("commit of %s failed (%s); tried again later", offsets, exc)
            return finished
        finished.update(self._committed(due))
        return finished

    def _committed(self, due):
        """The commit of ``due`` succeeded: forget what it committed."""
        with self._lock:
            for pid, (part, pos, _) in due.items():
                if self._partitions.get(pid) is part:
                    part.committed_up_to(pos)
        self.stats["commits"] += 1
        return {pid: pos for pid, (_, pos, _) in sorted(due.items())}

    def _finish_commit(self):
        """Call ``commit_transaction()`` again for the exactly-once commit that timed out
        (librdkafka resumes it); returns what it committed. If it ends aborted, its acked
        tuples are still tracked with their outputs: the next commit writes them."""
        due, self._in_doubt = self._in_doubt, None
        try:
            self._producer.commit_transaction()
        except KafkaException as exc:
            if exc.fatal:
                raise
            if self._producer.commit_in_doubt:
                self._in_doubt = due
                log.warning("commit still unfinished (%s)", exc)
                return {}
            if exc.txn_requires_abort:
                try:
                    self._producer.abort_transaction()
                except KafkaException as abort_exc:  # a timeout: the next begin_transaction() finishes it
                    log.error("abort_transaction after an error failed: %s", abort_exc)
            log.warning("the unfinished commit ended aborted (%s); committed again later", exc)
            return {}
        return self._committed(due)

    def _commit(self, offsets, outputs):
        if self._producer is None:
            self.consumer.commit_offsets(offsets)
        else:
            commit_in_transaction(self._producer, outputs,
                                  [(self._topic_name, pid, pos) for pid, pos in offsets],
                                  self.consumer.group_metadata())

    def _on_revoke(self, consumer, partition_ids):
        """The consumer's ``pre_revoke_callback``: the partitions go (or went): drop their
        tuples (late acks and fails are ignored from now on) and hand back the end of their
        acked prefix for the consumer to commit -- or commit it in a transaction with its
        outputs, for an exactly-once spout."""
        if self._in_doubt is not None:  # settled first: what it commits is not written again
            self._finish_commit()
        with self._lock:
            self._revocations += 1
            offsets, outputs = [], []
            for pid in partition_ids:
                part = self._partitions.pop(pid, None)
                if part is None:
                    continue
                self.stats["revoked_in_flight"] += part.unacked
                pos = part.position()
                if pos is not None and (part.committed is None or pos > part.committed):
                    offsets.append((pid, pos))
                    outputs.extend(out for entry in part.prefix() for out in (entry.outputs or ()))
        if self._producer is None or not offsets:
            return offsets
        try:
            self._commit(offsets, outputs)
        except KafkaException as exc:
            if exc.fatal:
                raise
            if self._producer.commit_in_doubt and self._in_doubt is None:  # its partitions are gone
                self._in_doubt = {}
            log.warning("commit before the revocation of %s failed (%s); their next owner reads from "
                        "the last commit", [pid for pid, _ in offsets], exc)
        return []

    # -- lifecycle ------------------------------------------------------------------------------

    def _check_open(self):
        if self._closed:
            raise ConsumerStoppedException("the spout is closed: make a new one to read again")

    def close(self) -> None:
        """Commit the acked prefix, then stop the consumer (leaving its group, unless its
        last commit got no answer) and the producers. Unacked tuples are emitted again by
        whoever reads their partitions next."""
        if self._closed:
            return
        try:
            self.commit()
        finally:
            self._closed = True
            try:
                self.consumer.stop()
            finally:
                self._stop_producers()

    def _stop_producers(self):
        try:
            if self._producer is not None:
                self._producer.stop()
        finally:
            if self._dead_letters is not None:
                try:
                    self._dead_letters.stop()
                except ProduceFailureError as exc:
                    # Only a dead letter fail() gave up waiting for can fail here: its tuple
                    # was kept to be emitted again, uncommitted, so nothing is lost.
                    log.warning("dead letters not written (%s): their tuples were not committed past and "
                                "are read again", exc)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        stop_at_exit(self.close, exc_type, "spout")  # the block's own exception stands

    def __repr__(self):
        return "<pyrdk.spout.KafkaSpout at %#x (topic=%s, pending=%d)>" % (id(self), self._topic_name,
                                                                           self.pending)
