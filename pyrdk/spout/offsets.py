"""PartitionOffsets: the tuples of one partition a spout emitted and has not committed, and
the offset it may commit -- the end of the contiguous acked prefix.

Messages of a partition are emitted in offset order, so the entries are kept in that order.
The offset to commit is the first entry not acked, or, when every entry is acked, the one
after the last emitted. Offsets a spout never emitted (a transaction's control records, a
compacted key) are passed over, as nothing waits for them.
"""
import collections

PENDING = "pending"  # emitted (or waiting to be emitted again), not acked
ACKED = "acked"


class Entry:
    """One emitted message: its state, the times it failed, what to write for it when it
    is committed (exactly-once spouts), and the message while it may be emitted again."""
    __slots__ = ("offset", "message", "state", "failures", "outputs", "retry_at")

    def __init__(self, offset, message):
        self.offset = offset
        self.message = message
        self.state = PENDING
        self.failures = 0
        self.outputs = None
        self.retry_at = None  # time.monotonic() of the next emission after a fail, or None


class PartitionOffsets:
    """The uncommitted entries of one partition, in offset order.

    :param committed: the next offset to read as the spout knows it committed (None: unknown)
    """

    def __init__(self, committed=None):
        self._entries = collections.OrderedDict()  # offset -> Entry, in emission order
        self.unacked = 0
        self.committed = committed
        self.last_emitted = None

    def __len__(self):
        return len(self._entries)

    def get(self, offset):
        return self._entries.get(offset)

    def add(self, message):
        """Track a message just emitted; returns its Entry. A message at or before the last
        one emitted means the consumer went back: what was tracked from there is dropped."""
        offset = message.offset
        if self.last_emitted is not None and offset <= self.last_emitted:
            self.drop_from(offset)
        entry = Entry(offset, message)
        self._entries[offset] = entry
        self.unacked += 1
        self.last_emitted = offset
        return entry

    def drop_from(self, offset):
        """Forget the entries at ``offset`` and after."""
        for off in [o for o in self._entries if o >= offset]:
            if self._entries.pop(off).state == PENDING:
                self.unacked -= 1
        self.last_emitted = offset - 1  # the consumer reads from offset again

    def ack(self, entry, outputs=None):
        """Mark ``entry`` done; its message is no longer needed."""
        if entry.state == ACKED:
            return
        entry.state = ACKED
        entry.message = None
        entry.outputs = outputs
        entry.retry_at = None
        self.unacked -= 1

    def position(self):
        """The offset to commit: the first entry not acked, else the one after the last
        emitted; None if nothing was emitted."""
        for entry in self._entries.values():
            if entry.state != ACKED:
                return entry.offset
        return None if self.last_emitted is None else self.last_emitted + 1

    def prefix(self):
        """The acked entries before the first one not acked, in order."""
        out = []
        for entry in self._entries.values():
            if entry.state != ACKED:
                break
            out.append(entry)
        return out

    def committed_up_to(self, position):
        """``position`` is committed: forget the acked entries before it."""
        while self._entries:
            offset, entry = next(iter(self._entries.items()))
            if offset >= position or entry.state != ACKED:
                break
            self._entries.popitem(last=False)
        self.committed = position

    def pending(self):
        """The entries not acked."""
        return [entry for entry in self._entries.values() if entry.state != ACKED]
