"""librdkafka's statistics: ``statistics_interval_ms`` and ``stats_callback`` on the client,
producers and consumers, and ``stats()`` for the last snapshot."""
import logging
import time

import pytest

from pyrdk import KafkaClient
from pyrdk.exceptions import ProducerStoppedException

pytestmark = pytest.mark.kafka


def until(condition, what, timeout_s=30):
    """Poll ``condition()``; AssertionError naming ``what`` after ``timeout_s`` (a bound for a
    hung test, never a timing assertion)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "not reached within %ds: %s" % (timeout_s, what)
        time.sleep(0.05)


def test_producer_and_consumer_keep_their_last_snapshot(topic):
    seen = []
    with topic.get_producer(linger_ms=5, statistics_interval_ms=100, stats_callback=seen.append) as producer:
        assert producer.stats() is None or producer.stats()["type"] == "producer"
        for i in range(20):
            producer.produce(b"%d" % i)
        producer.flush()
        until(lambda: (producer.stats() or {}).get("txmsgs", 0) >= 20, "a snapshot counting 20 messages")
        stats = producer.stats()
        assert isinstance(stats, dict) and stats["type"] == "producer"
        assert seen and all(isinstance(s, dict) for s in seen), "the callback gets parsed snapshots"
        assert any(s is stats for s in seen), "parsed once: stats() is a snapshot the callback got"
    consumer = topic.get_simple_consumer(consumer_timeout_ms=500, statistics_interval_ms=100)
    try:
        received = sum(1 for _ in consumer)
        until(lambda: (consumer.stats() or {}).get("rxmsgs", 0) >= received, "a snapshot counting the reads")
        assert received == 20
        assert consumer.stats()["type"] == "consumer"
    finally:
        consumer.stop()


def test_without_an_interval_there_are_no_statistics(topic):
    with topic.get_producer(linger_ms=5) as producer:
        producer.produce(b"x")
        producer.flush()
        time.sleep(0.3)
        assert producer.stats() is None


def test_the_clients_settings_are_the_default(kafka_hosts, topic_name):
    seen = []
    with KafkaClient(hosts=kafka_hosts, statistics_interval_ms=100, stats_callback=seen.append) as client:
        client.cluster.create_topics([(topic_name, 1, 1)])
        with client.topics[topic_name].get_producer(linger_ms=5) as producer:
            producer.produce(b"x")
            until(lambda: producer.stats() is not None, "a snapshot from the client's interval")
            names = {s["name"] for s in seen}
            assert producer.stats()["name"] in names
        quiet = client.topics[topic_name].get_producer(linger_ms=5, statistics_interval_ms=0)
        try:
            time.sleep(0.3)
            assert quiet.stats() is None, "statistics_interval_ms=0 turns them off"
        finally:
            quiet.stop()


def test_a_failing_callback_is_logged_not_raised(topic, caplog):
    def broken(stats):
        raise RuntimeError("broken callback")
    with caplog.at_level(logging.ERROR, logger="pyrdk"):
        with topic.get_producer(linger_ms=5, statistics_interval_ms=50, stats_callback=broken) as producer:
            producer.produce(b"x")
            until(lambda: producer.stats() is not None, "a snapshot")
            producer.produce(b"y")
    assert any("stats_callback" in r.getMessage() and r.exc_info for r in caplog.records)


def test_stopping_from_a_stats_callback_is_refused_and_changes_nothing(topic, caplog):
    """librdkafka runs the callback inside a poll of the producer: stop() there raises (logged,
    as any exception of the callback) before it changes anything, and works afterwards."""
    refused = []

    def stop_here(stats):
        try:
            producer.stop()
        except RuntimeError as exc:
            refused.append(exc)
            raise
    with caplog.at_level(logging.ERROR, logger="pyrdk"):
        producer = topic.get_producer(linger_ms=5, statistics_interval_ms=50, stats_callback=stop_here)
        until(lambda: refused, "a refused stop()")
    assert "from inside one of its own callbacks" in str(refused[0])
    producer.produce(b"still running")
    producer.stop()
    with pytest.raises(ProducerStoppedException):
        producer.produce(b"after stop")


def test_bad_statistics_arguments_are_named(kafka_hosts, topic):
    with pytest.raises(TypeError, match="statistics_interval_ms"):
        KafkaClient(hosts=kafka_hosts, statistics_interval_ms=-1)
    with pytest.raises(TypeError, match="stats_callback"):
        KafkaClient(hosts=kafka_hosts, stats_callback="not callable")
    with pytest.raises(TypeError, match="stats_callback"):
        topic.get_producer(stats_callback=42)


def test_a_callback_without_statistics_is_refused(client, topic, zookeeper_chroot):
    """A stats_callback given to one producer or consumer, with statistics off for it, would
    never be called: ValueError at once, naming statistics_interval_ms."""
    def seen(stats):
        pass
    with pytest.raises(ValueError, match="statistics_interval_ms"):
        topic.get_producer(stats_callback=seen)
    with pytest.raises(ValueError, match="statistics_interval_ms"):
        topic.get_simple_consumer(stats_callback=seen)
    with pytest.raises(ValueError, match="statistics_interval_ms"):
        topic.get_balanced_consumer(b"g", managed=True, stats_callback=seen)
    with pytest.raises(ValueError, match="statistics_interval_ms"):
        topic.get_balanced_consumer(b"g", zookeeper_hosts=zookeeper_chroot, stats_callback=seen)
    with pytest.raises(ValueError, match="statistics_interval_ms"):
        topic.get_producer(statistics_interval_ms=100, rdkafka_config={"statistics.interval.ms": 0},
                           stats_callback=seen)
    producer = topic.get_producer(rdkafka_config={"statistics.interval.ms": 100}, stats_callback=seen)
    producer.stop()


@pytest.mark.mock
@pytest.mark.parametrize("how", [{"statistics_interval_ms": 50}, {"rdkafka_config": {"statistics.interval.ms": 50}}],
                         ids=["statistics_interval_ms", "rdkafka_config"])
def test_a_client_callback_reaches_the_producers_that_turn_statistics_on(mock_cluster, how):
    """The client's stats_callback is the default of every producer and consumer it makes,
    also of those that turn statistics on themselves while the client's are off (one exporter,
    a few producers measured): not refused."""
    seen = []
    mock_cluster.create_topic("t", 1)
    with KafkaClient(hosts=mock_cluster.bootstrap_servers, stats_callback=seen.append) as client:
        with client.topics["t"].get_producer(**how) as producer:
            deadline = time.monotonic() + 10
            while not seen and time.monotonic() < deadline:
                producer.produce(b"x")
                producer.flush()
                time.sleep(0.05)
    assert seen


@pytest.mark.mock
@pytest.mark.parametrize("client_id", ['billing "eu"', "CORP\\svc"], ids=["quote", "backslash"])
def test_a_client_id_that_json_must_escape_still_gives_statistics(mock_cluster, client_id):
    """librdkafka writes client.id into its statistics JSON unescaped: the JSONDecodeError
    came out of produce() (and stop()), and no snapshot was ever handed over."""
    seen = []
    mock_cluster.create_topic("t", 1)
    with KafkaClient(hosts=mock_cluster.bootstrap_servers, rdkafka_config={"client.id": client_id}) as client:
        with client.topics["t"].get_producer(statistics_interval_ms=50, stats_callback=seen.append) as producer:
            def snapshot():
                producer.produce(b"x")
                producer.flush()
                return seen
            until(snapshot, "a statistics snapshot")
            assert producer.stats()["client_id"] == client_id
            assert seen[-1]["name"].startswith(client_id + "#producer-")
