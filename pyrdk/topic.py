"""Topic: a topic's partitions, offset queries and the producer/consumer factories
(pykafka's ``Topic``)."""
from __future__ import annotations

import datetime
import threading
import warnings
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Optional, Union

from pyrdk.common import OffsetPartitionResponse, OffsetType, check_bool, integer
from pyrdk.exceptions import OffsetRequestFailedError
from pyrdk.partition import Partition, to_timestamp_ms
from pyrdk.rd import errors

if TYPE_CHECKING:
    from pyrdk.balancedconsumer import BalancedConsumer
    from pyrdk.cluster import Cluster
    from pyrdk.lag import PartitionLag
    from pyrdk.managedbalancedconsumer import ManagedBalancedConsumer
    from pyrdk.producer import Producer
    from pyrdk.simpleconsumer import SimpleConsumer


def _partition_ids(partitions: Any) -> list[int]:
    """``partitions`` as a list of partition ids, or TypeError saying it is not one."""
    try:
        ids = [integer(i) for i in partitions]
    except TypeError:
        ids = None
    if ids is None or isinstance(partitions, (str, bytes)) or \
            any(isinstance(i, bool) or not isinstance(i, int) or i < 0 for i in ids):
        raise TypeError("partitions must be a list of partition ids (ints >= 0), not %r" % (partitions,))
    return ids


class Topic:
    """A Kafka topic: ``name`` (bytes, as in pykafka) and ``partitions`` ({id: Partition})."""

    def __init__(self, cluster: Cluster, topic_metadata: Any) -> None:
        self._cluster = cluster
        self._name = topic_metadata.name.encode()
        self._partitions: dict[int, Partition] = {}
        self._update_lock = threading.Lock()
        self.update(topic_metadata)

    @property
    def name(self) -> bytes:
        return self._name

    @property
    def partitions(self) -> dict[int, Partition]:
        """``{partition_id: Partition}``."""
        return self._partitions

    def update(self, metadata: Any) -> None:
        """Take partitions, leaders and replicas from a fresh ``TopicMetadata``; partitions it
        no longer lists (the topic was deleted and re-created with fewer) are dropped, as in
        pykafka. Partitions added or dropped come in a new dict: a refresh in another thread
        (a producer's poller, a balanced consumer's) must not change the one a program's loop
        goes through. Refreshes in several threads take turns: each would make its own
        Partition for a new id, and the Partition a program took from one dict would be
        refreshed no more once another thread's dict replaced it."""
        with self._update_lock:
            brokers = self._cluster.brokers
            ids = {pm.id for pm in metadata.partitions}
            partitions = self._partitions
            if ids != set(partitions):
                partitions = {pid: p for pid, p in partitions.items() if pid in ids}
            for pm in metadata.partitions:
                partition = partitions.get(pm.id)
                if partition is None:
                    partitions[pm.id] = partition = Partition(self, pm.id, None, [], [])
                partition.update(brokers, pm)
            self._partitions = partitions

    # -- factories -----------------------------------------------------------------------------

    def get_producer(self, use_rdkafka: Any = None, **kwargs: Any) -> Producer:
        """A :class:`pyrdk.producer.Producer` for this topic (``use_rdkafka`` is ignored)."""
        from pyrdk.producer import Producer
        self._cluster.check_open()
        return Producer(self._cluster, self, **kwargs)

    def get_sync_producer(self, use_rdkafka: Any = None, **kwargs: Any) -> Producer:
        """A Producer whose ``produce`` waits for each message's delivery (``sync=True``)."""
        kwargs["sync"] = True
        return self.get_producer(**kwargs)

    def get_simple_consumer(self, consumer_group: Optional[Union[str, bytes]] = None, use_rdkafka: Any = None,
                            **kwargs: Any) -> SimpleConsumer:
        """A :class:`pyrdk.simpleconsumer.SimpleConsumer` for this topic."""
        from pyrdk.simpleconsumer import SimpleConsumer
        self._cluster.check_open()
        return SimpleConsumer(self, self._cluster, consumer_group=consumer_group, **kwargs)

    def get_balanced_consumer(self, consumer_group: Union[str, bytes], managed: bool = False,
                              **kwargs: Any) -> Union[BalancedConsumer, ManagedBalancedConsumer]:
        """A balanced consumer: a :class:`pyrdk.balancedconsumer.BalancedConsumer`
        coordinated through ZooKeeper (by default at the client's ``zookeeper_hosts``;
        ``zookeeper_connect``, pykafka's deprecated name, is taken as ``zookeeper_hosts``
        with a ``DeprecationWarning``), or with ``managed=True`` a
        :class:`pyrdk.managedbalancedconsumer.ManagedBalancedConsumer` on the broker's group
        protocol."""
        self._cluster.check_open()
        if check_bool("managed", managed):
            from pyrdk.managedbalancedconsumer import ManagedBalancedConsumer
            return ManagedBalancedConsumer(self, self._cluster, consumer_group, **kwargs)
        from pyrdk.balancedconsumer import BalancedConsumer
        connect = kwargs.pop("zookeeper_connect", None)
        if connect is not None:  # pykafka's name up to 2.6: it wins, as in pykafka
            warnings.warn("zookeeper_connect is deprecated (since pykafka 2.7): use zookeeper_hosts",
                          DeprecationWarning, stacklevel=2)
            kwargs["zookeeper_hosts"] = connect
        zookeeper_hosts = self._cluster.zookeeper_hosts
        if zookeeper_hosts and "zookeeper_hosts" not in kwargs and kwargs.get("zookeeper") is None:
            kwargs["zookeeper_hosts"] = zookeeper_hosts
        return BalancedConsumer(self, self._cluster, consumer_group, **kwargs)

    # -- offsets -------------------------------------------------------------------------------

    def fetch_offset_limits(self, offsets_before: Union[int, datetime.datetime], max_offsets: int = 1,
                            partitions: Optional[Iterable[int]] = None) -> dict[int, OffsetPartitionResponse]:
        """Offsets per partition for ``offsets_before``: ``OffsetType.EARLIEST``, ``LATEST``,
        or a timestamp (ms or datetime; the first offset at or after it).

        Returns ``{partition_id: OffsetPartitionResponse(offset=[o], err=0)}``
        (``rd_kafka_offsets_for_times``; ``max_offsets`` > 1 is not supported by Kafka
        since 0.10.1 and only one offset is returned).
        """
        timestamp = to_timestamp_ms(offsets_before)
        ids = sorted(self._partitions) if partitions is None else _partition_ids(partitions)
        results = self._cluster.offsets_for_times([(self._name.decode(), i, timestamp) for i in ids])
        out = {}
        for tp in results:
            if tp.error:
                raise OffsetRequestFailedError("offset request for %s [%d] failed: %s (error %d)"
                                               % (tp.topic, tp.partition, errors.err2str(tp.error), tp.error))
            out[tp.partition] = OffsetPartitionResponse([tp.offset], 0)
        return out

    def earliest_available_offsets(self) -> dict[int, OffsetPartitionResponse]:
        """``{partition_id: OffsetPartitionResponse}`` of the first offset in each partition."""
        return self.fetch_offset_limits(OffsetType.EARLIEST)

    def latest_available_offsets(self) -> dict[int, OffsetPartitionResponse]:
        """``{partition_id: OffsetPartitionResponse}`` of the next offset in each partition."""
        return self.fetch_offset_limits(OffsetType.LATEST)

    def consumer_lag(self, consumer_group: Union[str, bytes]) -> dict[int, PartitionLag]:
        """``{partition id: PartitionLag}`` of ``consumer_group`` on this topic, without joining
        the group: committed offset, log start and end, lag and owner
        (see :meth:`pyrdk.cluster.Cluster.consumer_lag`)."""
        return self._cluster.consumer_lag(consumer_group, [self._name]).get(self._name, {})

    def __repr__(self) -> str:
        return "<pyrdk.topic.Topic at %#x (name=%s)>" % (id(self), self._name)
