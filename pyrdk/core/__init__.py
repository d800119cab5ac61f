"""The hot-path core: the per-message work of producing and consuming, behind one interface
with two implementations.

``PYRDK_IMPL`` picks one when pyrdk is imported: ``c`` is the extension module ``pyrdk._core``
(``csrc/core/``; an ``ImportError`` if it cannot be imported), ``python`` is
:mod:`pyrdk.core.pure`, the readable reference on the cffi layer. Unset, the C core runs, or the
pure one with a ``RuntimeWarning`` when the C core cannot be imported. :data:`implementation`
says which runs. Both make the same ``Message`` objects, keep the same state and pass the same
tests; the C one makes no Python object per message that the reference does not make, and is
several times cheaper per message.

The producer's core (:func:`producer_core`), one per started ``Producer``:

- ``produce(value, key=None, timestamp=None, headers=None) -> Message``: the fast path. A
  message of bytes (or None) with no timestamp or headers, while ``divert`` is false and the
  handle is usable (open, and not a forked child's copy), gets a
  partition (round robin from a random start, or ``partitioner(partitions, key)``), a
  ``Message`` kept until its delivery report, and a place in its partition's queue; a queue
  of ``batch`` messages goes to librdkafka in one ``rd_kafka_produce_batch`` call. A queue
  that librdkafka's full queue refused, and every other call, goes to the general path:
  ``general(value, key, timestamp, headers)``.
- ``divert``: true sends every ``produce()`` to the general path (the producer sets it while
  it has something to raise, an outage, or once stopped).
- ``track(message) -> id`` and ``untrack(id) -> message or None``: the general path's Messages
  wait for their reports in the same table; ``id`` is the ``msg_opaque`` librdkafka reports.
- ``hand_off(stopping=False) -> int``: hand every queue to librdkafka (what a full queue
  refuses stays); the number still queued. After ``close()``, only when ``stopping``.
- ``deliver(ids, errs, partitions, offsets, timestamps) -> [(message, err)]``: a batch of
  delivery reports (memoryviews, as ``rd.callbacks`` drains them). Each delivered Message gets
  its ``partition_id``, ``offset`` (-1 when the broker told none) and ``timestamp`` and is no
  longer kept. Returns the failed ones with their error codes, and, with ``report_all``, the
  delivered ones with 0.
- ``refused() -> [(message, err)]``: the messages librdkafka refused at hand-off (for another
  reason than a full queue) since the last call, no longer kept; a refusal sets ``divert``.
- ``produce_batch(messages, block) -> (sent, err)`` or None: values (bytes), or ``(value,
  key)`` pairs, without Messages (``msg_id`` 0: their reports are counted in C), in one run of
  consecutive messages per partition from the next partition of the round robin; stops at the
  first refusal (err: a librdkafka code; ``block`` waits for room in a full queue instead).
  None, having sent nothing, when an item is not such a value or pair (the general path then
  says which). ``batch_sent`` counts the messages it sent.
- ``produce_arrow(columns, start, block) -> (next, err)`` or None: the rows of Arrow columns
  (``(rows, hashed, value, key, partition)``, each column its buffers as
  :func:`pyrdk.core.arrow.write_columns` gives them) from row ``start``, without Messages
  (``msg_id`` 0, counted as ``produce_batch``'s), each to its partition: the column's, else
  murmur2 of the key when ``hashed``, else one run per partition from the round robin's next
  step. Returns the row it stopped at and why (0: all went; ``__QUEUE_FULL`` once ``block``
  ms passed: call again from ``next``; ``MSG_SIZE_TOO_LARGE``; ``__UNKNOWN_PARTITION``); every
  row before ``next`` is queued. None when there are no partitions. The C core reads the
  buffers in place; the reference reads them row by row.
- ``take_all() -> [message]``: every Message still kept, no longer kept (``stop()`` reports
  them); ``close()``; ``len(core)``: the Messages kept; ``queued``: those in the queues;
  ``partitions``: ``[(id, Partition)]`` by id, settable when the topic grows.
  ``general(value, key, timestamp, headers, partition)`` gets the partitioner's choice when the
  fast path already asked for it (else None).

The consumer's core (:func:`consumer_core`), one per consumer:

- ``add(pointers) -> (count, error_positions)``: a batch from ``rd_kafka_consume_batch_queue``
  (a memoryview of ``rd_kafka_message_t *``) becomes Messages at the end of the buffer; the
  positions of the error events are for the caller.
- ``add_columns(pointers) -> (columns, error_positions)``: the same batch, each message counted
  as handed out and none buffered, as what :func:`pyrdk.core.arrow.record_batch` makes a
  ``pyarrow.RecordBatch`` of: the C core fills each column's buffers with no Python object per
  message, the reference makes a list of Messages.
- ``add_records(pointers, record, partition) -> (runs, error_positions)``: the same batch, each
  message counted as handed out and none buffered, as aiokafka's records made in one pass:
  ``runs`` is ``[[partition(topic, id), [record(...)]]]``, one run per stretch of one
  partition's messages, in order, ``record`` and ``partition`` the namedtuple classes
  ``ConsumerRecord`` and ``TopicPartition`` (:mod:`pyrdk.aio.structs`). A record's
  ``timestamp_type`` is librdkafka's less one (-1: none), its sizes -1 for None, its headers
  a tuple of pairs (aiokafka's) or ``()``; the C core leaves a record without headers untracked by the garbage
  collector, as CPython leaves a tuple of immutable fields.
- ``next() -> message or None``, ``take(max_messages) -> [message]``: the first buffered
  messages, each counted as handed out (its partition's next offset is its offset + 1).
- ``iterator(refill)``: the buffered messages, counted, then ``refill()`` when the buffer is
  empty; the iteration ends when ``refill()`` returns None.
- ``next_offsets() -> {partition id: next offset or None}`` for the partitions held (None:
  nothing handed out yet, start unknown), ``set_next(pid, offset or None)``, ``forget(pid)``.
- ``take_partitions(pids) -> [message]`` (out of the buffer, in order), ``extend(messages)``,
  ``clear()``, ``len(core)``; ``partitions``: ``{id: Partition}`` naming each Message's partition.

The asyncio producer's core (:func:`sender_core`), one per started ``AIOKafkaProducer``:

- ``add_topic(topic, rkt) -> index``: let ``send()`` produce to ``topic`` (its
  ``rd_kafka_topic_t`` address, from ``Handle.addresses()``); the topic's index, 1 to
  :data:`TOPIC_MASK` (0 once that many topics have one).
- ``send(topic, partition, value, key, msg_id) -> err``: one record (bytes or None) through
  ``rd_kafka_producev`` (copied), ``partition`` -1 for librdkafka's partitioner, ``msg_id``
  (> 0) its report's opaque; 0, or librdkafka's code refusing it (``MSG_SIZE_TOO_LARGE``
  above ``max_size``). A closed handle: ``PYRDK_ERR_CLOSED`` (C) or the Handle's refusal
  raised (Python); a topic not added: ``KeyError``.
- ``bind(pending, make, loop, yield_every)``: what ``send_record()`` works with: the
  producer's table (``{msg_id: future}``), the future maker (called ``make(loop=loop)``, or
  ``make()`` when ``loop`` is None) and how often to let the loop run (every ``yield_every``
  calls, > 1).
- ``send_record(topic, value, key) -> future, None or False``: ``send()``'s common record in
  one call. A str topic added with an index, a value and a key of bytes or None, within
  ``max_size``, an open handle: a new future, in ``pending`` under a new ``msg_id`` (the
  topic's index ``<< TOPIC_SHIFT``, the core's own sequence number below), and the record
  through ``rd_kafka_producev`` (librdkafka's partitioner). The C core leaves the future out
  of the cyclic GC while it is pending (held by the producer's table, it cannot be garbage;
  the GC's full collections would otherwise visit every pending future); ``deliver()`` and
  ``release(future)`` hand it back. (A producer dropped unstopped would keep its pending
  futures' cycles: its event loop's reader keeps it alive anyway until ``stop()``.) The C
  core, given the Handle's ``keep`` list, hands the value over without a copy and holds it
  until ``deliver()`` sees the record's report (or, freed first, puts it on the list); the
  reference has librdkafka copy it.
  None, having done nothing (a refused record leaves ``pending`` again), for every other
  record and for any refusal, a full queue too: the caller's general path takes it and says
  why. False, having done nothing, once every ``yield_every`` calls: the caller lets the loop
  run, then calls again (that call is never False). The general path's msg_ids have index 0,
  so that the two sequences never meet.
- ``deliver(pending, ids, errs, partitions, offsets, timestamps, metadata, partition) ->
  [(future, topic, err)]``: a batch of delivery reports into the futures of ``pending``
  (``{msg_id: (future, topic, timestamp_ms or None)}``, or ``{msg_id: future}`` where
  ``msg_id >> TOPIC_SHIFT`` is the topic's index: one object per record fewer for the cyclic
  GC to follow): each report's entry leaves ``pending``, its future back under the GC; a
  delivered record's future, unless done (cancelled), gets
  ``metadata(topic, partition id, partition(topic, partition id), offset, timestamp, 0,
  None)`` (``RecordMetadata``, ``TopicPartition``; the timestamp given to ``send()``, else
  the report's). Returns the failed ones, for the caller to fail with the exception it names.

The C core takes what this says and refuses the rest with a TypeError naming it, where the
reference would take any object: ``track`` and ``extend`` take Messages, ``partitions`` is a
dict (consumer) or ``(int id, Partition)`` pairs (producer), partition ids and offsets are
ints, ``add`` and ``deliver`` take memoryviews of the formats ``pyrdk.rd`` makes. It relies on
the GIL (a call lets other threads in only where it calls Python code -- the partitioner, the
general path, ``refill`` -- or waits in ``produce_batch``, which copies the list first), and
refuses to import on a free-threaded Python.
"""
from __future__ import annotations

import os
import random
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any, Optional, Union

from pyrdk import _loader, common
from pyrdk.core import pure
from pyrdk.core.pure import _Partition
from pyrdk.rd import handle as rd_handle

if TYPE_CHECKING:
    from pyrdk import _core

# The two implementations of each core (the interface: this module's docs, and pyrdk/_core.pyi).
ProducerCore = Union["_core.ProducerCore", pure.ProducerCore]
ConsumerCore = Union["_core.ConsumerCore", pure.ConsumerCore]
SenderCore = Union["_core.SenderCore", pure.SenderCore]

_CHOICES = ("c", "python")


def _message(*args: Any) -> common.Message:
    """A pickled C-core Message, loaded as a Message of this process's core: one pickled where
    the C core runs loads where the pure-Python one does too (a pure one pickles as
    ``pyrdk.common.Message``, which both load)."""
    return Message(*args)


def _choose() -> tuple[str, Optional[ModuleType]]:
    """The implementation ``PYRDK_IMPL`` asks for, and its module (None for ``python``)."""
    wanted = os.environ.get("PYRDK_IMPL", "").strip().lower() or None
    if wanted is not None and wanted not in _CHOICES:
        raise ImportError("PYRDK_IMPL=%r: use 'c' or 'python'" % os.environ["PYRDK_IMPL"])
    if wanted == "python":
        return "python", None
    # pyrdk._core calls librdkafka, to which it is not linked: the library must be open (with
    # RTLD_GLOBAL) before it is imported. pyrdk.rd.handle's import has opened it; load() says so.
    library = _loader.load()
    try:
        from pyrdk import _core
    except ImportError as exc:
        if "undefined symbol" in str(exc):
            exc = ImportError("%s: the librdkafka opened (%s, from %s) lacks a function of the rdkafka.h the "
                              "C core was built against" % (exc, *library))
        if wanted == "c":
            raise ImportError("PYRDK_IMPL=c, but pyrdk's C core cannot be imported: %s" % exc) from exc
        warnings.warn("pyrdk's C core cannot be imported (%s); the pure-Python core runs instead "
                      "(set PYRDK_IMPL=python to choose it)" % exc, RuntimeWarning, stacklevel=3)
        return "python", None
    _core.setup(common.CompressionType.NONE, _message)
    return "c", _core


implementation, _c = _choose()
"""``"c"`` or ``"python"``: the core in use."""

TOPIC_MASK: int = _c.TOPIC_MASK if _c is not None else pure.TOPIC_MASK
"""SenderCore: the most topics with an index (``msg_id >> TOPIC_SHIFT``; 0: none)."""

TOPIC_SHIFT: int = _c.TOPIC_SHIFT if _c is not None else pure.TOPIC_SHIFT
"""SenderCore: a ``msg_id``'s bits from here up name its topic's index; the bits below are a
sequence number, so that ids in sequence take consecutive slots of the producer's dict."""

Message: type[common.Message] = _c.Message if _c is not None else pure.Message
"""The class of the messages the core makes."""
if Message is not common.Message:
    common.Message.register(Message)  # isinstance(msg, pyrdk.Message) holds for both


def librdkafka_version() -> rd_handle.LibrdkafkaVersion:
    """The running and the built-against librdkafka, where the running one came from, and
    the core that runs (``implementation``)."""
    return rd_handle.librdkafka_version(implementation)


def producer_core(handle: rd_handle.Handle, topic: str, partitions: list[tuple[int, _Partition]],
                  partitioner: Optional[Callable[[list[_Partition], Any], _Partition]],
                  compression: common.CompressionType, max_size: int, batch: int, report_all: bool,
                  general: Callable[..., common.Message]) -> ProducerCore:
    """A new producer core for ``topic`` on the producer ``Handle`` (see the module's docs); its
    round robin starts at a random partition."""
    start = random.randrange(1 << 16)
    if _c is not None:
        return _c.ProducerCore(handle, *handle.addresses(topic), topic, partitions, partitioner, compression,
                               max_size, batch, report_all, general, start, handle.keep)
    return pure.ProducerCore(handle, topic, partitions, partitioner, compression, max_size, batch,
                             report_all, general, start)


def sender_core(handle: rd_handle.Handle, max_size: int) -> SenderCore:
    """A new asyncio producer core on the producer ``Handle`` (see the module's docs), refusing
    a record whose value and key are larger than ``max_size`` bytes."""
    if _c is not None:
        rk, _, guard = handle.addresses(None)
        return _c.SenderCore(handle, rk, guard, max_size, handle.keep)
    return pure.SenderCore(handle, max_size)


def consumer_core(partitions: dict[int, _Partition]) -> ConsumerCore:
    """A new consumer core, its Messages naming ``partitions[id]`` (a dict) as their partition."""
    if _c is not None:
        return _c.ConsumerCore(partitions)
    return pure.ConsumerCore(partitions)
