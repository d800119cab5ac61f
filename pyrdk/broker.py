"""Broker: one Kafka broker as the cluster metadata names it (pykafka's ``Broker``)."""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Optional, Union

from pyrdk.common import GroupOffsetsResponse
from pyrdk.exceptions import KafkaException

if TYPE_CHECKING:
    from pyrdk.cluster import Cluster


class Broker:
    """A broker: ``id``, ``host``, ``port``. Group, offset and topic administration is routed
    by librdkafka to the right broker, so these methods delegate to the cluster."""

    def __init__(self, id_: int, host: str, port: int, cluster: Optional[Cluster] = None) -> None:
        self._id = id_
        self._host = host
        self._port = port
        self._cluster = cluster

    @property
    def id(self) -> int:
        return self._id

    @property
    def host(self) -> bytes:
        """The host name or address the metadata gives, as bytes: pykafka's ``Broker.host``
        came from the metadata response as bytes (``b"127.0.0.1"``)."""
        return self._host.encode()

    @property
    def port(self) -> int:
        return self._port

    @property
    def connected(self) -> bool:
        """True while the broker is in the cluster's metadata."""
        return self._cluster is not None and self._cluster.brokers.get(self._id) is self

    def _owner(self) -> Cluster:
        if self._cluster is None:
            raise KafkaException("Broker %d was made without a cluster: use one of client.brokers" % self._id)
        return self._cluster

    def list_groups(self) -> dict[bytes, Any]:
        """See :meth:`pyrdk.cluster.Cluster.list_groups`."""
        return self._owner().list_groups()

    def describe_groups(self, group_ids: Iterable[Union[str, bytes]]) -> dict[bytes, Any]:
        """See :meth:`pyrdk.cluster.Cluster.describe_groups`."""
        return self._owner().describe_groups(group_ids)

    def create_topics(self, topic_reqs: Any, timeout: int = 0) -> None:
        """See :meth:`pyrdk.cluster.Cluster.create_topics`."""
        return self._owner().create_topics(topic_reqs, timeout=timeout)

    def delete_topics(self, topics: Iterable[Union[str, bytes]], timeout: int = 0) -> None:
        """See :meth:`pyrdk.cluster.Cluster.delete_topics`."""
        return self._owner().delete_topics(topics, timeout=timeout)

    def commit_consumer_group_offsets(self, consumer_group: Union[str, bytes], consumer_group_generation_id: Any,
                                      consumer_id: Any, preqs: Iterable[Any]) -> GroupOffsetsResponse:
        """See :meth:`pyrdk.cluster.Cluster.commit_consumer_group_offsets`: each request's
        ``metadata`` is written into its commit. The offsets are committed from outside the
        group: ``consumer_group_generation_id`` and ``consumer_id`` are not sent (librdkafka
        takes them from a member's own session)."""
        return self._owner().commit_consumer_group_offsets(consumer_group, preqs)

    def fetch_consumer_group_offsets(self, consumer_group: Union[str, bytes],
                                     preqs: Iterable[Any]) -> GroupOffsetsResponse:
        """See :meth:`pyrdk.cluster.Cluster.fetch_consumer_group_offsets`."""
        return self._owner().fetch_consumer_group_offsets(consumer_group, preqs)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Broker) and (self._id, self._host, self._port) == (
            other._id, other._host, other._port)

    def __hash__(self) -> int:
        return hash((self._id, self._host, self._port))

    def __repr__(self) -> str:
        return "<pyrdk.broker.Broker at %#x (host=%r, port=%d, id=%d)>" % (
            id(self), self.host, self._port, self._id)
