"""KafkaClient: the entry point, holding the cluster (pykafka's ``KafkaClient``).

    from pyrdk import KafkaClient
    client = KafkaClient(hosts="127.0.0.1:9092")
    topic = client.topics["events"]
"""
import logging

from pyrdk.cluster import Cluster
from pyrdk.common import check_int

log = logging.getLogger(__name__)

DEFAULT_HOSTS = "127.0.0.1:9092"


class KafkaClient:
    """A connection to a Kafka cluster.

    :param hosts: comma-separated ``host:port`` bootstrap brokers (``bootstrap.servers``);
        default: the brokers registered in ZooKeeper when ``zookeeper_hosts`` is given (as
        pykafka), else ``127.0.0.1:9092``
    :param zookeeper_hosts: ZooKeeper connect string (``host:port,...[/chroot]``): the default
        of ``get_balanced_consumer``, and where the brokers are found without ``hosts``
        (``/brokers/ids``, read once with kazoo)
    :param socket_timeout_ms: network timeout (``socket.timeout.ms``) and the bound on
        metadata requests: an unreachable cluster raises ``NoBrokersAvailableError`` then
    :param offsets_channel_socket_timeout_ms: accepted for pykafka compatibility
    :param use_greenlets: not supported (librdkafka uses native threads)
    :param exclude_internal_topics: hide topics whose names start with ``__``
    :param source_address: not supported by librdkafka; a non-empty value is logged and ignored
    :param ssl_config: a :class:`pyrdk.common.SslConfig`
    :param broker_version: ignored (librdkafka negotiates API versions)
    :param statistics_interval_ms: how often librdkafka's statistics reach the producers and
        consumers made from this client (``statistics.interval.ms``; 0, the default, for never):
        their ``stats()`` gives the last snapshot, a dict
    :param stats_callback: called with each snapshot (a dict) of those producers and consumers,
        in the thread that polls them (pass a :class:`pyrdk.metrics.PrometheusExporter` to
        export them)
    :param rdkafka_config: any librdkafka properties, applied last
    """

    def __init__(self, hosts=None, zookeeper_hosts=None, socket_timeout_ms=30 * 1000,
                 offsets_channel_socket_timeout_ms=10 * 1000, use_greenlets=False,
                 exclude_internal_topics=True, source_address="", ssl_config=None,
                 broker_version="0.9.0", rdkafka_config=None, statistics_interval_ms=0, stats_callback=None):
        check_int("socket_timeout_ms", socket_timeout_ms, 1)
        check_int("statistics_interval_ms", statistics_interval_ms, 0)
        if stats_callback is not None and not callable(stats_callback):
            raise TypeError("stats_callback must be callable (stats dict) -> None, not %r" % (stats_callback,))
        if rdkafka_config is not None and not isinstance(rdkafka_config, dict):
            raise TypeError("rdkafka_config must be a dict, not %s" % type(rdkafka_config).__name__)
        if zookeeper_hosts is not None and (not isinstance(zookeeper_hosts, str) or not zookeeper_hosts.strip()):
            raise TypeError("zookeeper_hosts must be a non-empty 'host:port,...[/chroot]' string, not %r"
                            % (zookeeper_hosts,))
        if hosts is None:
            hosts = DEFAULT_HOSTS
            if zookeeper_hosts:
                from pyrdk.zookeeper import brokers_from_zookeeper
                protocol = (rdkafka_config or {}).get("security.protocol",
                                                      "ssl" if ssl_config is not None else "plaintext")
                hosts = brokers_from_zookeeper(zookeeper_hosts, protocol, socket_timeout_ms)
        if isinstance(hosts, bytes):
            hosts = hosts.decode()
        if not isinstance(hosts, str) or not hosts.strip():
            raise TypeError("hosts must be a non-empty 'host:port,...' string, not %r" % (hosts,))
        if use_greenlets:
            raise ValueError("use_greenlets=True is not supported: librdkafka runs its own threads")
        if source_address:
            log.warning("source_address=%r is ignored: librdkafka cannot bind a source address",
                        source_address)
        self._zookeeper_connect = zookeeper_hosts
        self._socket_timeout_ms = socket_timeout_ms
        self._offsets_channel_socket_timeout_ms = offsets_channel_socket_timeout_ms
        config = {"bootstrap.servers": ",".join(h.strip() for h in hosts.split(",")),
                  "socket.timeout.ms": socket_timeout_ms}
        if statistics_interval_ms:
            config["statistics.interval.ms"] = statistics_interval_ms
        if ssl_config is not None:
            config.update(ssl_config.rdkafka_config())
        config.update(rdkafka_config or {})
        self.cluster = Cluster(config, socket_timeout_ms=socket_timeout_ms,
                               exclude_internal_topics=exclude_internal_topics,
                               zookeeper_hosts=zookeeper_hosts, stats_callback=stats_callback)
        self._handler = self.cluster.handler
        self.brokers = self.cluster.brokers
        self.topics = self.cluster.topics

    def update_cluster(self):
        """Refresh known brokers and topics."""
        self.cluster.update()

    def close(self):
        """Release the cluster's librdkafka handle. Producers and consumers made before go on
        until they are stopped; the client makes no more (``KafkaException``)."""
        self.cluster.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "<pyrdk.client.KafkaClient at %#x (hosts=%s)>" % (
            id(self), self.cluster.rdkafka_config.get("bootstrap.servers"))
