"""Broker: one Kafka broker as the cluster metadata names it (pykafka's ``Broker``)."""


class Broker:
    """A broker: ``id``, ``host``, ``port``. Group, offset and topic administration is routed
    by librdkafka to the right broker, so these methods delegate to the cluster."""

    def __init__(self, id_, host, port, cluster=None):
        self._id = id_
        self._host = host
        self._port = port
        self._cluster = cluster

    @property
    def id(self):
        return self._id

    @property
    def host(self):
        return self._host

    @property
    def port(self):
        return self._port

    @property
    def connected(self):
        """True while the broker is in the cluster's metadata."""
        return self._cluster is not None and self._cluster.brokers.get(self._id) is self

    def list_groups(self):
        """See :meth:`pyrdk.cluster.Cluster.list_groups`."""
        return self._cluster.list_groups()

    def describe_groups(self, group_ids):
        """See :meth:`pyrdk.cluster.Cluster.describe_groups`."""
        return self._cluster.describe_groups(group_ids)

    def create_topics(self, topic_reqs, timeout=0):
        """See :meth:`pyrdk.cluster.Cluster.create_topics`."""
        return self._cluster.create_topics(topic_reqs, timeout=timeout)

    def delete_topics(self, topics, timeout=0):
        """See :meth:`pyrdk.cluster.Cluster.delete_topics`."""
        return self._cluster.delete_topics(topics, timeout=timeout)

    def commit_consumer_group_offsets(self, consumer_group, consumer_group_generation_id, consumer_id,
                                      preqs):
        """See :meth:`pyrdk.cluster.Cluster.commit_consumer_group_offsets`: each request's
        ``metadata`` is written into its commit. The offsets are committed from outside the
        group: ``consumer_group_generation_id`` and ``consumer_id`` are not sent (librdkafka
        takes them from a member's own session)."""
        return self._cluster.commit_consumer_group_offsets(consumer_group, preqs)

    def fetch_consumer_group_offsets(self, consumer_group, preqs):
        """See :meth:`pyrdk.cluster.Cluster.fetch_consumer_group_offsets`."""
        return self._cluster.fetch_consumer_group_offsets(consumer_group, preqs)

    def __eq__(self, other):
        return isinstance(other, Broker) and (self._id, self._host, self._port) == (
            other._id, other._host, other._port)

    def __hash__(self):
        return hash((self._id, self._host, self._port))

    def __repr__(self):
        return "<pyrdk.broker.Broker at %#x (host=%s, port=%d, id=%d)>" % (
            id(self), self._host, self._port, self._id)
