"""Exactly-once consume-process-produce: a group consumer's offsets committed inside the
transaction of a transactional producer, so that outputs and the input they came from are
committed together, or not at all.

:class:`Processor` wires a :class:`pyrdk.managedbalancedconsumer.ManagedBalancedConsumer`
to a transactional :class:`pyrdk.producer.Producer`::

    processor = Processor(client.topics["in"], client.topics["out"], b"service", "service-1")
    processor.run(lambda message: [message.value.upper()])   # until processor.stop()

:func:`commit_in_transaction` is the transaction itself, which
:class:`pyrdk.spout.KafkaSpout` uses too when it writes outputs exactly once.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Optional, Union

from pyrdk.common import check_int, stop_at_exit
from pyrdk.exceptions import KafkaException

if TYPE_CHECKING:
    from pyrdk import common
    from pyrdk.producer import Producer
    from pyrdk.rd.transaction import GroupMetadata
    from pyrdk.topic import Topic

log = logging.getLogger(__name__)


def produce_output(producer: Producer, output: Any) -> None:
    """Produce one output: a value (bytes) or a ``(value, partition_key)`` pair."""
    if isinstance(output, tuple):
        if len(output) != 2:
            raise TypeError("an output is a value or a (value, partition_key) pair, not a tuple of %d"
                            % len(output))
        producer.produce(output[0], partition_key=output[1])
    else:
        producer.produce(output)


def check_outputs(producer: Producer, outputs: Any, what: str) -> list[Any]:
    """``outputs`` as a list, refused now rather than when their transaction is written: an
    iterable (not one value) of values or ``(value, partition_key)`` pairs, bytes (or None)
    unless ``producer`` has a serializer. ``what`` names them in the error."""
    if isinstance(outputs, (bytes, bytearray, memoryview, str)):
        raise TypeError("%s must be an iterable of outputs, not one %s value: put it in a list"
                        % (what, type(outputs).__name__))
    try:
        outputs = list(outputs)
    except TypeError:
        raise TypeError("%s must be an iterable of outputs (values or (value, partition_key) pairs), not %r"
                        % (what, outputs)) from None
    for output in outputs:
        if isinstance(output, tuple) and len(output) != 2:
            raise TypeError("%s: an output is a value or a (value, partition_key) pair, not a tuple of %d"
                            % (what, len(output)))
        value, key = output if isinstance(output, tuple) else (output, None)
        if producer._serializer is None and not all(v is None or isinstance(v, bytes) for v in (value, key)):
            raise TypeError("%s: an output's value and partition_key are bytes (the producer has no "
                            "serializer), not %r" % (what, output))
    return outputs


def commit_in_transaction(producer: Producer, outputs: Iterable[Any], offsets: list[tuple[str, int, int]],
                          group_metadata: GroupMetadata, timeout: Optional[float] = None) -> None:
    """One transaction: produce ``outputs`` (values or ``(value, partition_key)`` pairs)
    and commit ``offsets`` (``(topic, partition_id, next offset)``) for the group of
    ``group_metadata``; both are written, or neither (the transaction is aborted and the
    error raised: with ``fatal`` the producer is unusable, otherwise the same may be tried
    again)."""
    with producer.transaction(timeout):
        for output in outputs:
            produce_output(producer, output)
        if offsets:
            producer.send_offsets_to_transaction(offsets, group_metadata, timeout)


def _check_process(process):
    """Refuse a ``process`` that is not callable before a batch is consumed for it."""
    if not callable(process):
        raise TypeError("process must be callable: process(message) -> iterable of outputs, not %r" % (process,))


def _starts(batch: list[common.Message]) -> dict[int, int]:
    """``{partition id: the first offset of batch}``: where it is read again from."""
    starts: dict[int, int] = {}
    for message in batch:
        starts.setdefault(message.partition_id, message.offset)
    return starts


def raised_again(exc: KafkaException) -> bool:
    """Whether a transaction's error is raised rather than its batch read again: a fatal one
    (fenced), or one that is neither ``retriable`` (a timeout) nor ``txn_requires_abort`` (a
    rebalance, a failed delivery), which the same batch would meet again (an output larger
    than ``max_request_size``): read again, it would be aborted again, forever."""
    return exc.fatal or not (exc.retriable or exc.txn_requires_abort)


class Processor:
    """Consume a topic, process each message, and write what the processing returns to
    another topic, exactly once: each batch of messages, their outputs and the group's
    offsets after them are one transaction.

    :param input_topic: the :class:`pyrdk.topic.Topic` to read, as a member of ``consumer_group``
        (the broker's group protocol: ``get_balanced_consumer(managed=True)``)
    :param output_topic: the Topic to write to, with a producer of ``transactional_id``
    :param consumer_group: bytes or str
    :param transactional_id: one per instance of the service, kept across its restarts: a
        restarted instance fences the one it replaces and aborts its open transaction
    :param batch_size: the most messages in one transaction
    :param batch_timeout_ms: how long a batch waits for messages before it is committed
    :param consumer_kwargs: more arguments of the consumer (``isolation_level`` is
        ``read_committed``, as librdkafka's default, so aborted inputs are skipped)
    :param producer_kwargs: more arguments of the producer

    Before the group revokes partitions (inside ``consume_batch()``), the messages of those
    partitions not yet processed are dropped from the batch: their next owner reads them
    from the last committed transaction. A transaction that fails is aborted and its
    messages are read again; the error is raised too when it is fatal (another instance
    with the same ``transactional_id`` fenced this one: ``ProducerFenced``) or would come
    again with the same batch (neither ``retriable`` nor ``txn_requires_abort``: an output
    larger than ``max_request_size``, say).
    """

    def __init__(self, input_topic: Topic, output_topic: Topic, consumer_group: Union[str, bytes],
                 transactional_id: str, batch_size: int = 1000, batch_timeout_ms: int = 1000,
                 consumer_kwargs: Optional[dict[str, Any]] = None,
                 producer_kwargs: Optional[dict[str, Any]] = None) -> None:
        for name, value, method in (("input_topic", input_topic, "get_balanced_consumer"),
                                    ("output_topic", output_topic, "get_producer")):
            if not callable(getattr(value, method, None)):  # what the Processor calls: a Topic, or its wrapper
                raise TypeError("%s must be a pyrdk Topic (client.topics[name]), not %r" % (name, value))
        if not isinstance(transactional_id, str) or not transactional_id:
            # None would make a producer that is not transactional, refused only by init_transactions()
            raise TypeError("transactional_id must be a non-empty str, not %r" % (transactional_id,))
        for name, kwargs in (("consumer_kwargs", consumer_kwargs), ("producer_kwargs", producer_kwargs)):
            if kwargs is not None and not isinstance(kwargs, dict):
                raise TypeError("%s must be a dict of keyword arguments, not %r" % (name, kwargs))
        self._batch_size = check_int("batch_size", batch_size, 1)
        self._batch_timeout_ms = check_int("batch_timeout_ms", batch_timeout_ms, 0)
        consumer_kwargs = dict(consumer_kwargs or {})
        for name in ("auto_commit_enable", "pre_revoke_callback"):
            if consumer_kwargs.get(name):
                raise ValueError("%s: the Processor commits offsets in its transactions; leave it out" % name)
        consumer_kwargs.update(auto_commit_enable=False, pre_revoke_callback=self._on_revoke)
        self._topic_name = input_topic.name.decode()
        self._batch: list[common.Message] = []
        self._in_doubt: Optional[tuple[int, dict[int, int]]] = None  # a batch whose commit timed out
        self._stopping = threading.Event()
        self.producer = output_topic.get_producer(transactional_id=transactional_id, **(producer_kwargs or {}))
        try:
            self.producer.init_transactions()
            self.consumer = input_topic.get_balanced_consumer(consumer_group, managed=True, **consumer_kwargs)
        except BaseException:
            self.producer.stop()
            raise

    def _on_revoke(self, consumer, partition_ids):
        """Before partitions are revoked: drop their unprocessed messages from the batch;
        commit nothing (the last transaction committed their offsets)."""
        revoked = set(partition_ids)
        self._batch = [m for m in self._batch if m.partition_id not in revoked]
        return []

    def process_batch(self, process: Callable[[common.Message], Optional[Iterable[Any]]]) -> int:
        """Consume up to ``batch_size`` messages (waiting up to ``batch_timeout_ms``), call
        ``process(message)`` on each -- it returns an iterable of outputs, values or
        ``(value, partition_key)`` pairs -- and commit the outputs with the offsets after the
        messages in one transaction. Returns how many messages were committed (0 when the
        transaction was aborted: they are read again). When the last batch's commit timed
        out, this call finishes that commit instead (librdkafka resumes it). What the consumer
        raises while the batch is taken is raised, the messages taken before it read again."""
        _check_process(process)
        if self._in_doubt is not None:
            return self._finish_commit()
        self._batch = []
        deadline = time.monotonic() + self._batch_timeout_ms / 1000.0
        first = True  # one consume_batch() at least: a timeout of 0 takes what is ready
        try:
            while len(self._batch) < self._batch_size:
                remaining_ms = int((deadline - time.monotonic()) * 1000)
                if remaining_ms <= 0 and not first:
                    break
                first = False
                messages = self.consumer.consume_batch(self._batch_size - len(self._batch), max(remaining_ms, 0))
                self._batch.extend(messages)
        except BaseException:  # the consumer raised (a deserializer, a callback): what the batch took is read again
            batch, self._batch = self._batch, []
            self._rewind(_starts(batch))
            raise
        batch, self._batch = self._batch, []
        if not batch:
            return 0
        starts = _starts(batch)
        nexts: dict[int, int] = {}  # partition id -> the offset after the batch
        for message in batch:
            nexts[message.partition_id] = message.offset + 1
        try:
            outputs = [output for message in batch
                       for output in check_outputs(self.producer, process(message) or (), "process(message)")]
            commit_in_transaction(self.producer, outputs,
                                  [(self._topic_name, pid, nxt) for pid, nxt in sorted(nexts.items())],
                                  self.consumer.group_metadata())
        except KafkaException as exc:
            if self.producer.commit_in_doubt:  # it may yet commit: not read again until it is settled
                self._in_doubt = (len(batch), starts)
                log.warning("the commit of %d messages is unfinished (%s); the next batch finishes it", len(batch), exc)
                return 0
            self._rewind(starts)
            if raised_again(exc):
                raise
            log.warning("transaction aborted (%s); its %d messages are read again", exc, len(batch))
            return 0
        except BaseException:
            if self.producer.commit_in_doubt:  # interrupted in the commit: it may yet commit
                self._in_doubt = (len(batch), starts)
            else:
                self._rewind(starts)  # process() raised: its messages are read again
            raise
        return len(batch)

    def _finish_commit(self):
        """Call ``commit_transaction()`` again for the batch whose commit timed out: its
        messages count if it commits, and are read again if it ends aborted."""
        count, starts = self._in_doubt
        try:
            self.producer.commit_transaction()
        except KafkaException as exc:
            if self.producer.commit_in_doubt:
                log.warning("the commit of %d messages is still unfinished (%s)", count, exc)
                return 0
            self._in_doubt = None
            if exc.txn_requires_abort:
                try:
                    self.producer.abort_transaction()
                except KafkaException as abort_exc:  # a timeout: the next begin_transaction() finishes it
                    log.error("abort_transaction after an error failed: %s", abort_exc)
            self._rewind(starts)
            if raised_again(exc):
                raise
            log.warning("transaction aborted (%s); its %d messages are read again", exc, count)
            return 0
        self._in_doubt = None
        return count

    def _rewind(self, starts):
        """Read the messages of an aborted transaction again, in the partitions still held."""
        held = self.consumer.partitions
        for pid, offset in sorted(starts.items()):
            if pid in held:
                self.consumer.seek(pid, offset)

    def run(self, process: Callable[[common.Message], Optional[Iterable[Any]]],
            max_batches: Optional[int] = None) -> int:
        """Call :meth:`process_batch` until :meth:`stop` (or ``max_batches`` batches);
        returns how many messages were committed. A :meth:`stop` made before it starts ends it
        at once; the next one goes on."""
        _check_process(process)
        if max_batches is not None:
            check_int("max_batches", max_batches, 0)
        total = batches = 0
        while max_batches is None or batches < max_batches:
            if self._stopping.is_set():
                self._stopping.clear()  # this run() answered it
                break
            total += self.process_batch(process)
            batches += 1
        return total

    def stop(self) -> None:
        """Make :meth:`run` return after its current batch (from another thread, or from
        ``process``)."""
        self._stopping.set()

    def close(self) -> None:
        """Stop the consumer (leaving the group) and the producer."""
        try:
            self.consumer.stop()
        finally:
            self.producer.stop()

    def __enter__(self) -> Processor:
        return self

    def __exit__(self, exc_type: Optional[type[BaseException]], exc_value: Optional[BaseException],
                 traceback: Any) -> None:
        stop_at_exit(self.close, exc_type, "processor")  # the block's own exception stands
