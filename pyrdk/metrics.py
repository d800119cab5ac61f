"""A Prometheus exporter fed by librdkafka's statistics (``pip install 'pyrdk[metrics]'``).

    from pyrdk.metrics import PrometheusExporter
    exporter = PrometheusExporter()            # registers with prometheus_client's registry
    exporter.start_http_server(9308)           # or let your own /metrics endpoint serve it
    client = KafkaClient(hosts, statistics_interval_ms=5000, stats_callback=exporter)

Every producer and consumer made from ``client`` then hands its snapshots to the exporter,
which serves the last one of each (labelled ``client`` with librdkafka's handle name, and
``type``) at every scrape:

- ``pyrdk_messages_sent_total``, ``pyrdk_bytes_sent_total``, ``pyrdk_messages_received_total``,
  ``pyrdk_bytes_received_total``: messages and their bytes out and in (``txmsgs``,
  ``txmsg_bytes``, ``rxmsgs``, ``rxmsg_bytes``)
- ``pyrdk_queue_messages``, ``pyrdk_queue_bytes``: messages waiting in the producer queue
  for delivery (``msg_cnt``, ``msg_size``)
- ``pyrdk_delivery_latency_seconds{broker, stage, stat}``: a produced message's way to the
  broker in three stages, each over the last statistics window (``stat`` is ``avg``,
  ``p50`` or ``p99``): ``queue`` from ``produce()`` to a request (``int_latency``),
  ``request`` waiting to be sent (``outbuf_latency``), and ``rtt`` until the broker answered
- ``pyrdk_broker_rtt_seconds{broker, stat}``: request round trips, producers and consumers
- ``pyrdk_consumer_lag_messages{topic, partition}``: messages from the group's committed
  offset to the end of each partition the consumer reads (``consumer_lag``): it falls as
  the consumer commits, not as it reads (in the next snapshot, which the consumer's polls
  serve); a stopped consumer reads none
- ``pyrdk_rebalances_total``: rebalances of a group-protocol member (``cgrp.rebalance_cnt``;
  a ZooKeeper member's consumer is replaced at each of its rebalances, and counts none)

librdkafka measures latencies in microseconds; they are exported in seconds. A stopped
producer or consumer keeps its last figures until :meth:`PrometheusExporter.forget`, but for
the lag of the partitions a consumer read (see :meth:`PrometheusExporter.stopped`); the
consumer a ZooKeeper-coordinated balanced consumer replaces at each rebalance is forgotten
then.
"""
import re
import threading

try:
    from prometheus_client import REGISTRY
    from prometheus_client import start_http_server as _start_http_server
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
except ImportError as exc:
    raise ImportError("pyrdk.metrics needs prometheus_client: pip install 'pyrdk[metrics]' (%s)" % exc) from exc

_TOTALS = (("messages_sent", "txmsgs", "Messages sent to brokers"),
           ("bytes_sent", "txmsg_bytes", "Bytes of message payload sent to brokers"),
           ("messages_received", "rxmsgs", "Messages received from brokers"),
           ("bytes_received", "rxmsg_bytes", "Bytes of message payload received from brokers"))
_QUEUE = (("queue_messages", "msg_cnt", "Messages waiting in the producer queue"),
          ("queue_bytes", "msg_size", "Bytes of the messages waiting in the producer queue"))
_STAGES = (("queue", "int_latency"), ("request", "outbuf_latency"), ("rtt", "rtt"))
_STATS = ("avg", "p50", "p99")


class PrometheusExporter:
    """A ``prometheus_client`` collector of the last statistics snapshot of every producer and
    consumer that calls it (pass it as ``stats_callback``)."""

    def __init__(self, registry=REGISTRY, namespace="pyrdk"):
        if not isinstance(namespace, str) or not re.fullmatch(r"[a-zA-Z_:][a-zA-Z0-9_:]*", namespace):
            # prometheus_client would escape it into another name (None_..., b_x__...)
            raise ValueError("namespace must be a Prometheus metric name prefix (letters, digits, _ and :, "
                             "not starting with a digit), not %r" % (namespace,))
        self._namespace = namespace
        self._snapshots = {}
        self._lock = threading.Lock()
        self._registry = registry
        if registry is not None:
            try:
                registry.register(self)
            except ValueError as exc:  # prometheus_client's "Duplicated timeseries"
                raise ValueError("another collector exports the %s_* metrics in this registry: pass that "
                                 "exporter to every client as stats_callback, or give this one its own "
                                 "namespace or registry" % namespace) from exc

    def __call__(self, stats):
        """Take one snapshot (the dict a ``stats_callback`` gets)."""
        with self._lock:
            self._snapshots[stats.get("name", "")] = stats

    def forget(self, name):
        """Stop exporting the client ``name`` (librdkafka's handle name, the ``client`` label)."""
        with self._lock:
            self._snapshots.pop(name, None)

    def stopped(self, name):
        """The client ``name`` was stopped (its handle destroyed, so no snapshot follows):
        its partitions' lag is exported no more, since it reads none and its last snapshot
        predates what its stop committed; the other figures stay until :meth:`forget`."""
        with self._lock:
            stats = self._snapshots.get(name)
            if stats is not None and "topics" in stats:
                self._snapshots[name] = {key: v for key, v in stats.items() if key != "topics"}

    def start_http_server(self, port, addr="127.0.0.1"):
        """Serve the registry at ``http://addr:port/metrics`` from a daemon thread (on the
        loopback interface by default, where prometheus_client's listens on every one); returns
        prometheus_client's ``(server, thread)`` (``server.shutdown()`` stops it)."""
        if self._registry is None:  # else every scrape would fail (HTTP 500) in the server's thread
            raise ValueError("this exporter was made with registry=None, so it has no registry to serve: "
                             "give it one (PrometheusExporter(registry=...)) or serve the registry you "
                             "registered it with")
        return _start_http_server(port, addr=addr, registry=self._registry)

    def _name(self, name):
        return "%s_%s" % (self._namespace, name)

    def describe(self):
        """The metric families, without samples (``Collector.describe``): a registry refuses a
        second exporter of the same names when it is registered, not at a scrape."""
        return list(self._families([]))

    def collect(self):
        """The metric families of the snapshots taken so far (``Collector.collect``)."""
        with self._lock:
            snapshots = list(self._snapshots.values())
        return self._families(snapshots)

    def _families(self, snapshots):
        base = ["client", "type"]
        totals = {key: CounterMetricFamily(self._name(name), doc, labels=base) for name, key, doc in _TOTALS}
        queue = {key: GaugeMetricFamily(self._name(name), doc, labels=base) for name, key, doc in _QUEUE}
        latency = GaugeMetricFamily(self._name("delivery_latency_seconds"),
                                    "A produced message's way to the broker, by stage, over the last window",
                                    labels=base + ["broker", "stage", "stat"])
        rtt = GaugeMetricFamily(self._name("broker_rtt_seconds"), "Broker request round-trip time",
                                labels=base + ["broker", "stat"])
        lag = GaugeMetricFamily(self._name("consumer_lag_messages"),
                                "Messages between the group's committed offset and the end of the partition",
                                labels=base + ["topic", "partition"])
        rebalances = CounterMetricFamily(self._name("rebalances"), "Rebalances of the group member",
                                         labels=base)
        for stats in snapshots:
            ids = [str(stats.get("name", "")), str(stats.get("type", ""))]
            for key, family in totals.items():
                family.add_metric(ids, stats.get(key, 0))
            if stats.get("type") == "producer":
                for key, family in queue.items():
                    family.add_metric(ids, stats.get(key, 0))
            for broker in stats.get("brokers", {}).values():
                if broker.get("nodeid", -1) < 0:  # a bootstrap connection, not a broker
                    continue
                name = "%s/%s" % (broker.get("nodename", ""), broker["nodeid"])
                for stage, key in _STAGES:
                    window = broker.get(key) or {}
                    if not window.get("cnt"):
                        continue
                    for stat in _STATS:
                        value = window.get(stat, 0) / 1e6
                        if stage == "rtt":
                            rtt.add_metric(ids + [name, stat], value)
                        if stats.get("type") == "producer":
                            latency.add_metric(ids + [name, stage, stat], value)
            for topic, t in stats.get("topics", {}).items():
                for pid, p in t.get("partitions", {}).items():
                    # not a partition given up at a rebalance ("desired" false): librdkafka keeps
                    # its last lag, frozen, beside the figure of the member that reads it now
                    if int(pid) >= 0 and p.get("desired", True) and p.get("consumer_lag", -1) >= 0:
                        lag.add_metric(ids + [topic, str(pid)], p["consumer_lag"])
            if "cgrp" in stats:
                rebalances.add_metric(ids, stats["cgrp"].get("rebalance_cnt", 0))
        yield from totals.values()
        yield from queue.values()
        yield latency
        yield rtt
        yield lag
        yield rebalances
