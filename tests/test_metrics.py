"""The Prometheus exporter (``pyrdk.metrics``), scraped over HTTP while a producer and a group
member run."""
import time
import urllib.request

import pytest

from pyrdk import KafkaClient
from pyrdk.testing import free_port
from tests.fix_kafka import MANAGED, fill, group_offsets, make_topic

pytestmark = pytest.mark.kafka

@pytest.fixture
def exporter():
    """An exporter on its own registry, served on a free loopback port; stopped after the test."""
    from prometheus_client import CollectorRegistry

    from pyrdk.metrics import PrometheusExporter
    exp = PrometheusExporter(registry=CollectorRegistry())
    port = free_port()
    server, thread = exp.start_http_server(port)
    exp.url = "http://127.0.0.1:%d/metrics" % port
    yield exp
    server.shutdown()
    server.server_close()
    thread.join(10)


def scrape(url):
    """``{(name, frozenset(labels.items())): value}`` of one scrape."""
    from prometheus_client.parser import text_string_to_metric_families
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(samples, name, **labels):
    matches = [v for (n, ls), v in samples.items() if n == name and set(labels.items()) <= ls]
    return matches[0] if matches else None


def until_scraped(url, condition, what, timeout_s=30, tick=None):
    """Scrape until ``condition(samples)``, calling ``tick()`` (a consumer serves its statistics
    when it is polled) in between; AssertionError naming ``what`` after ``timeout_s`` (a bound
    for a hung test, never a timing assertion)."""
    deadline = time.monotonic() + timeout_s
    while True:
        samples = scrape(url)
        if condition(samples):
            return samples
        assert time.monotonic() < deadline, "not scraped within %ds: %s (last scrape: %s)" % (
            timeout_s, what, sorted((n, sorted(ls), v) for (n, ls), v in samples.items() if "consumer" in n))
        if tick is not None:
            tick()
        time.sleep(0.1)


def test_scraped_figures_follow_producer_and_consumer(kafka_hosts, topic_name, group_name, exporter):
    with KafkaClient(hosts=kafka_hosts, statistics_interval_ms=100, stats_callback=exporter) as client:
        topic = make_topic(client, topic_name, 2)
        producer = topic.get_producer(linger_ms=5)
        try:
            for i in range(50):
                producer.produce(b"payload-%02d" % i)
            producer.flush()
            samples = until_scraped(
                exporter.url, lambda s: (value(s, "pyrdk_messages_sent_total", type="producer") or 0) >= 50,
                "50 messages sent")
            name = next(dict(ls)["client"] for (n, ls), v in samples.items()
                        if n == "pyrdk_messages_sent_total" and dict(ls)["type"] == "producer")
            assert value(samples, "pyrdk_bytes_sent_total", client=name) >= 50 * 10
            assert value(samples, "pyrdk_queue_messages", client=name) is not None
            assert value(samples, "pyrdk_broker_rtt_seconds", client=name, stat="p99") is not None
            assert value(samples, "pyrdk_delivery_latency_seconds", client=name, stage="queue",
                         stat="avg") is not None
        finally:
            producer.stop()

        consumer = topic.get_balanced_consumer(group_name, **MANAGED)
        try:
            read = 0
            deadline = time.monotonic() + 60
            while read < 50:
                assert time.monotonic() < deadline, "the member read %d of 50 messages in 60 s" % read
                read += consumer.consume() is not None
            consumer.commit_offsets()

            def caught_up(s):
                lags = [v for (n, ls), v in s.items() if n == "pyrdk_consumer_lag_messages"
                        and dict(ls)["topic"] == topic_name]
                return (value(s, "pyrdk_messages_received_total", type="consumer") or 0) >= 50 \
                    and len(lags) == 2 and sum(lags) == 0
            samples = until_scraped(exporter.url, caught_up, "the consumer's 50 messages and no lag",
                                    tick=lambda: consumer.consume(block=False))
            assert value(samples, "pyrdk_rebalances_total", type="consumer") >= 1
        finally:
            consumer.stop()


def test_forget_drops_a_client(exporter):
    exporter({"name": "rdkafka#producer-99", "type": "producer", "txmsgs": 7})
    assert value(scrape(exporter.url), "pyrdk_messages_sent_total", client="rdkafka#producer-99") == 7
    exporter.forget("rdkafka#producer-99")
    assert value(scrape(exporter.url), "pyrdk_messages_sent_total", client="rdkafka#producer-99") is None


@pytest.mark.zookeeper
def test_a_consumer_replaced_at_a_rebalance_is_no_longer_exported(kafka_hosts, zookeeper_chroot, topic_name,
                                                                 group_name, exporter):
    """A ZooKeeper-coordinated member reads through a new librdkafka consumer after each
    rebalance: the one it replaced must not stay exported beside it (its lag, stale)."""
    member = dict(zookeeper_connection_timeout_ms=4000, consumer_timeout_ms=200, rebalance_backoff_ms=200)
    with KafkaClient(hosts=kafka_hosts, zookeeper_hosts=zookeeper_chroot) as client:
        topic = make_topic(client, topic_name, 2)
        first = topic.get_balanced_consumer(group_name, statistics_interval_ms=100, stats_callback=exporter,
                                            **member)
        second = None
        try:
            deadline = time.monotonic() + 60
            while sorted(first.partitions) != [0, 1] or first.stats() is None:
                assert time.monotonic() < deadline, "the member got no partitions and statistics in 60 s"
                first.consume(block=False)
            replaced = first.stats()["name"]
            assert value(scrape(exporter.url), "pyrdk_messages_received_total", client=replaced) is not None
            second = topic.get_balanced_consumer(group_name, **member)
            while len(first.partitions) != 1 or first.stats() is None or first.stats()["name"] == replaced:
                assert time.monotonic() < deadline, "the members did not share the partitions in 60 s"
                first.consume(block=False)
                second.consume(block=False)
            samples = scrape(exporter.url)
            assert value(samples, "pyrdk_messages_received_total", client=first.stats()["name"]) is not None
            assert value(samples, "pyrdk_messages_received_total", client=replaced) is None, \
                "the consumer replaced at the rebalance is still exported"
        finally:
            if second is not None:
                second.stop()
            first.stop()


def test_a_second_exporter_of_the_same_names_is_refused_when_registered():
    """Two exporters on one registry would serve every series twice, which a scrape of
    prometheus_client rejects: the second is refused at once, saying what to do."""
    from prometheus_client import CollectorRegistry

    from pyrdk.metrics import PrometheusExporter
    registry = CollectorRegistry()
    first = PrometheusExporter(registry=registry)
    with pytest.raises(ValueError, match="pyrdk_\\* metrics in this registry: pass that exporter"):
        PrometheusExporter(registry=registry)
    other = PrometheusExporter(registry=registry, namespace="other")
    first({"name": "p", "type": "producer", "txmsgs": 3})
    other({"name": "q", "type": "consumer", "rxmsgs": 4})
    from prometheus_client import generate_latest
    text = generate_latest(registry).decode()
    assert 'pyrdk_messages_sent_total{client="p",type="producer"} 3.0' in text
    assert 'other_messages_received_total{client="q",type="consumer"} 4.0' in text


def test_an_exporter_without_a_registry_refuses_to_serve_one():
    """``registry=None`` registers the exporter nowhere: its HTTP server served every scrape
    a 500 (None has no ``collect``), the traceback printed in the server's thread."""
    from pyrdk.metrics import PrometheusExporter
    exporter = PrometheusExporter(registry=None)
    with pytest.raises(ValueError, match="registry=None, so it has no registry to serve"):
        server, thread = exporter.start_http_server(free_port())
        server.shutdown()  # not reached with the fix: a server that answers every scrape with a 500
        server.server_close()


def test_a_partition_given_up_at_a_rebalance_is_not_exported(exporter):
    """librdkafka's statistics keep a revoked partition (``desired`` false, fetch stopped)
    with the lag it had then: exported, it stood beside the lag of the member reading it now,
    frozen, as if this consumer still read it."""
    partitions = {"0": {"partition": 0, "desired": True, "fetch_state": "active", "consumer_lag": 3},
                  "1": {"partition": 1, "desired": False, "fetch_state": "stopped", "consumer_lag": 40},
                  "-1": {"partition": -1, "desired": False, "fetch_state": "none", "consumer_lag": -1}}
    exporter({"name": "rdkafka#consumer-98", "type": "consumer", "topics": {"t": {"partitions": partitions}}})
    samples = scrape(exporter.url)
    client = "rdkafka#consumer-98"
    assert value(samples, "pyrdk_consumer_lag_messages", client=client, partition="0") == 3
    assert value(samples, "pyrdk_consumer_lag_messages", client=client, partition="1") is None


@pytest.mark.parametrize("namespace", [None, b"x", "", "9lives", "my-app"])
def test_a_namespace_that_is_no_metric_name_prefix_is_refused(namespace):
    """prometheus_client escapes such a name into another (None_messages_sent_total, b_x__...),
    which no dashboard looks for."""
    from prometheus_client import CollectorRegistry
    from pyrdk.metrics import PrometheusExporter
    registry = CollectorRegistry()
    with pytest.raises(ValueError, match="namespace must be a Prometheus metric name prefix"):
        PrometheusExporter(registry=registry, namespace=namespace)
    assert list(registry.collect()) == []  # nothing registered


def _lag_series(samples, client):
    return {dict(ls)["partition"]: v for (n, ls), v in samples.items()
            if n == "pyrdk_consumer_lag_messages" and dict(ls)["client"] == client}


@pytest.mark.parametrize("kind", ["simple", "managed", pytest.param("zookeeper", marks=pytest.mark.zookeeper)])
def test_a_stopped_consumer_exports_no_lag(request, kafka_hosts, topic_name, group_name, exporter, kind):
    """A consumer's last snapshot predates what it committed before it stopped (its
    commit_offsets(), or the auto-commit of stop()), here a lag of 3 on each partition read
    and committed to the end. A stopped consumer reads no partition, so it exports no lag;
    its counters stay."""
    zookeeper = request.getfixturevalue("zookeeper_chroot") if kind == "zookeeper" else None
    with KafkaClient(hosts=kafka_hosts, zookeeper_hosts=zookeeper, statistics_interval_ms=100,
                     stats_callback=exporter) as client:
        topic = make_topic(client, topic_name, 4)
        fill(topic, {pid: 3 for pid in range(4)})
        if kind == "simple":
            consumer = topic.get_simple_consumer(group_name, consumer_timeout_ms=200)
        elif kind == "managed":
            consumer = topic.get_balanced_consumer(group_name, auto_commit_enable=True, **MANAGED)
        else:
            consumer = topic.get_balanced_consumer(group_name, zookeeper_connection_timeout_ms=4000,
                                                   consumer_timeout_ms=200, rebalance_backoff_ms=200,
                                                   auto_commit_enable=True)
        try:
            read = 0
            deadline = time.monotonic() + 60
            while read < 12:
                assert time.monotonic() < deadline, "the consumer read %d of 12 messages in 60 s" % read
                read += consumer.consume(block=False) is not None
            until_scraped(exporter.url, lambda s: len(_lag_series(s, (consumer.stats() or {}).get("name"))) == 4,
                          "the lag of the 4 partitions", tick=lambda: consumer.consume(block=False))
            name = consumer.stats()["name"]
            if kind == "simple":
                consumer.commit_offsets()
        finally:
            consumer.stop()
        assert group_offsets(topic, group_name) == {pid: 3 for pid in range(4)}  # all committed
        samples = scrape(exporter.url)
        assert _lag_series(samples, name) == {}
        assert value(samples, "pyrdk_messages_received_total", client=name) >= 12
