"""Transactions: librdkafka's transactional producer API on a producer ``Handle``
(``rd_kafka_init_transactions`` ... ``rd_kafka_abort_transaction``), and
:class:`GroupMetadata`, the consumer group metadata sent with offsets.

Each call raises what librdkafka's ``rd_kafka_error_t`` says, through
:func:`pyrdk.rd.errors.raise_for_error`, with its ``retriable``, ``fatal`` and
``txn_requires_abort`` flags. The blocking calls wait up to their timeout (the GIL
released); a timeout raises ``KafkaTimeoutError`` with ``retriable``. Commit and abort,
which librdkafka resumes when they are made again after a timeout, wait in slices
(``TXN_SLICE_MS``, which is also their least wait) in the main thread, so that Ctrl-C gets
through; init waits in one call (made again, it may return the error of an attempt
librdkafka is still retrying), so Ctrl-C waits for its end.
"""
import threading
import time

from pyrdk._ffi import ffi, lib
from pyrdk.exceptions import KafkaException
from pyrdk.rd import errors, partitions

# A slice of a commit or abort, and the least one: each slice first asks librdkafka's main
# thread to begin the call, and if that times out, librdkafka forgets the call is under way
# (it is no longer resumable) and later takes the EndTxn answer for an abort's, aborting the
# process at its own assertion ("CommittingTransaction -> AbortedNotAcked"). A slice of 0 ms
# always times out there; one of half a second does not, short of a stalled machine.
TXN_SLICE_MS = 500

class GroupMetadata:
    """An owned ``rd_kafka_consumer_group_metadata_t``: the group (and, for a member of a
    group, its generation and member id) that ``send_offsets_to_transaction`` commits for.
    Freed by :meth:`close` or when collected."""

    def __init__(self, ptr, group_id):
        if ptr == ffi.NULL:
            raise KafkaException("librdkafka has no consumer group metadata for %r" % group_id)
        self._ptr = ffi.gc(ptr, lib.rd_kafka_consumer_group_metadata_destroy)
        self.group_id = group_id

    @classmethod
    def of_consumer(cls, handle, group_id):
        """The metadata of a consumer ``Handle`` (``rd_kafka_consumer_group_metadata``):
        with the member's generation, so that the coordinator refuses the offsets of a
        member the group has left behind."""
        with handle.use() as rk:
            return cls(lib.rd_kafka_consumer_group_metadata(rk), group_id)

    @classmethod
    def for_group(cls, group_id):
        """Metadata naming only the group (``rd_kafka_consumer_group_metadata_new``), for
        consumers that are not members of a group (assigned partitions)."""
        if isinstance(group_id, bytes):
            group_id = group_id.decode()
        if not isinstance(group_id, str) or not group_id:
            raise TypeError("group_id must be a non-empty str or bytes, not %r" % (group_id,))
        return cls(lib.rd_kafka_consumer_group_metadata_new(group_id.encode()), group_id)

    def close(self):
        """``rd_kafka_consumer_group_metadata_destroy`` (also done when collected)."""
        ptr, self._ptr = self._ptr, None
        if ptr is not None:
            ffi.release(ptr)

    def __repr__(self):
        return "<pyrdk.rd.transaction.GroupMetadata (group_id=%s)>" % self.group_id


def init_transactions(handle, timeout_ms):
    """``rd_kafka_init_transactions``: get the producer id and epoch of its
    ``transactional.id``, fencing any older producer of the same id and completing its
    open transaction."""
    _call(handle, lib.rd_kafka_init_transactions, timeout_ms, "init_transactions")


def begin_transaction(handle):
    """``rd_kafka_begin_transaction`` (local: no request is sent)."""
    with handle.use() as rk:
        errors.raise_for_error(lib.rd_kafka_begin_transaction(rk), "begin_transaction")


def send_offsets(handle, offsets, group_metadata, timeout_ms):
    """``rd_kafka_send_offsets_to_transaction``: commit ``offsets`` (``(topic, partition,
    next offset to read)`` tuples) for ``group_metadata``'s group as part of the transaction."""
    c_list = partitions.to_c(offsets)
    ptr = group_metadata._ptr
    if ptr is None:
        raise ValueError("the GroupMetadata is closed")
    _call(handle, lambda rk, ms: lib.rd_kafka_send_offsets_to_transaction(rk, c_list, ptr, ms),
            timeout_ms, "send_offsets_to_transaction")


def commit_transaction(handle, timeout_ms):
    """``rd_kafka_commit_transaction``: flush what was produced, then commit."""
    _call(handle, lib.rd_kafka_commit_transaction, timeout_ms, "commit_transaction", resumable=True)


def abort_transaction(handle, timeout_ms):
    """``rd_kafka_abort_transaction``: purge what is queued, then abort."""
    _call(handle, lib.rd_kafka_abort_transaction, timeout_ms, "abort_transaction", resumable=True)


def _call(handle, call, timeout_ms, what, resumable=False):
    """``call(rk, timeout_ms)``, raising its error. Only a ``resumable`` call made in the
    main thread (where Ctrl-C lands) is cut into slices: librdkafka goes on with it in the
    background when it times out, and resumes it when it is made again (others, made
    again, may return the error of an attempt it is still retrying by itself). A resumable
    call waits ``TXN_SLICE_MS`` at least, and so does each slice, the last one included."""
    if resumable and 0 <= timeout_ms < TXN_SLICE_MS:
        timeout_ms = TXN_SLICE_MS  # a retry with what is left of a deadline may have 0 ms
    if not resumable or timeout_ms < 2 * TXN_SLICE_MS or threading.current_thread() is not threading.main_thread():
        with handle.use() as rk:
            errors.raise_for_error(call(rk, timeout_ms), what)
        return
    deadline = time.monotonic() + timeout_ms / 1000.0
    while True:
        left_ms = int(max(0, (deadline - time.monotonic()) * 1000))
        # the rest, but never less than TXN_SLICE_MS: a slice that returned late leaves less
        slice_ms = TXN_SLICE_MS if left_ms >= 2 * TXN_SLICE_MS else max(left_ms, TXN_SLICE_MS)
        with handle.use() as rk:
            error = call(rk, slice_ms)
        if error != ffi.NULL and lib.rd_kafka_error_code(error) == errors.TIMED_OUT and slice_ms < left_ms:
            lib.rd_kafka_error_destroy(error)  # under way in the background: resumed by the next slice
            continue
        errors.raise_for_error(error, what)
        return
