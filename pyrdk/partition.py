"""Partition: one partition of a topic, its leader and replicas (pykafka's ``Partition``)."""
from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, Optional, Union

from pyrdk.common import INT64_MAX, OffsetType, integer

if TYPE_CHECKING:
    from pyrdk.broker import Broker
    from pyrdk.topic import Topic


_EPOCH_UTC = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def to_timestamp_ms(value: Union[int, datetime.datetime], cut: bool = False) -> int:
    """An ``OffsetType``, a ms timestamp or a ``datetime`` as the int ListOffsets takes: a
    datetime (naive: UTC) to the nearest ms, as pykafka's offset lookups, or with ``cut``
    rounded down, as pykafka wrote a message's timestamp."""
    if isinstance(value, datetime.datetime):
        if value.utcoffset() is None:
            value = value.replace(tzinfo=datetime.timezone.utc)
        since, one_ms = value - _EPOCH_UTC, datetime.timedelta(milliseconds=1)
        ms = since // one_ms if cut else round(since / one_ms)
        if ms < 0:
            raise ValueError("the timestamp %r is before 1970: Kafka timestamps are ms since the epoch" % (value,))
        return ms
    value = integer(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("expected an OffsetType, a timestamp in ms or a datetime, not %r" % (value,))
    if value < 0 and value not in (OffsetType.EARLIEST, OffsetType.LATEST):
        raise ValueError("%d is neither an OffsetType nor a timestamp" % value)
    if value > INT64_MAX:
        raise ValueError("the timestamp %d is too large: ms since the epoch fit in 64 bits" % value)
    return value


class Partition:
    """A topic partition: ``id``, ``leader``, ``replicas``, ``isr``, ``topic``."""

    def __init__(self, topic: Topic, id_: int, leader: Optional[Broker], replicas: list[Broker],
                 isr: list[Broker]) -> None:
        self._topic = topic
        self._id = id_
        self._leader = leader
        self._replicas = replicas
        self._isr = isr

    @property
    def id(self) -> int:
        return self._id

    @property
    def topic(self) -> Topic:
        return self._topic

    @property
    def leader(self) -> Optional[Broker]:
        """The leader ``Broker`` (None during an election)."""
        return self._leader

    @property
    def replicas(self) -> list[Broker]:
        return self._replicas

    @property
    def isr(self) -> list[Broker]:
        """The in-sync replicas, a list of ``Broker``."""
        return self._isr

    def fetch_offset_limit(self, offsets_before: Union[int, datetime.datetime],
                           max_offsets: int = 1) -> list[int]:
        """The offsets ``Topic.fetch_offset_limits`` finds for this partition, as pykafka's
        returns them: a list (``fetch_offset_limit(OffsetType.LATEST)[0]``)."""
        return self._topic.fetch_offset_limits(offsets_before, max_offsets, partitions=[self._id])[self._id].offset

    def earliest_available_offset(self) -> int:
        """The first offset still in the log (``rd_kafka_offsets_for_times`` with -2)."""
        return self.fetch_offset_limit(OffsetType.EARLIEST)[0]

    def latest_available_offset(self) -> int:
        """The offset the next message will get (``rd_kafka_offsets_for_times`` with -1)."""
        return self.fetch_offset_limit(OffsetType.LATEST)[0]

    def update(self, brokers: dict[int, Broker], metadata: Any) -> None:
        """Take leader, replicas and ISR from a fresh ``PartitionMetadata``."""
        self._leader = brokers.get(metadata.leader)
        self._replicas = [brokers[b] for b in metadata.replicas if b in brokers]
        self._isr = [brokers[b] for b in metadata.isrs if b in brokers]

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Partition):
            return NotImplemented  # Python's TypeError, not an AttributeError from here
        return self._id < other._id

    def __repr__(self) -> str:
        return "<pyrdk.partition.Partition at %#x (topic=%r, id=%d)>" % (
            id(self), self._topic.name, self._id)
