"""Broker loss mid-run, with real processes: a Tansu broker of the test's own, killed with
SIGKILL. Calls raise NoBrokersAvailableError within socket_timeout_ms (plus one metadata
request), nothing queued is dropped unreported, and the same objects work again once a
broker is back."""
import os
import signal
import time

import pytest

from pyrdk import KafkaClient
from pyrdk.exceptions import NoBrokersAvailableError, ProduceFailureError

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

SOCKET_TIMEOUT_MS = 2000
BOUND_S = 60  # a generous bound: reaching it means the call hung


def kill(broker):
    os.kill(broker.pid, signal.SIGKILL)
    broker.process.wait(10)


def restart(broker):
    """The same port again (Tansu keeps nothing in memory across the restart)."""
    broker.stop()
    broker.start()


def make_client(broker, name):
    client = KafkaClient(hosts=broker.bootstrap_servers, socket_timeout_ms=SOCKET_TIMEOUT_MS)
    client.cluster.create_topics([(name, 1, 1)])
    return client


def test_blocked_consume_raises_then_resumes_when_the_broker_returns(own_broker, topic_name):
    client = make_client(own_broker, topic_name)
    topic = client.topics[topic_name]
    with topic.get_sync_producer() as producer:
        producer.produce(b"before")
    consumer = topic.get_simple_consumer(consumer_timeout_ms=-1)  # would wait for ever
    try:
        assert consumer.consume().value == b"before"
        kill(own_broker)
        started = time.monotonic()
        with pytest.raises(NoBrokersAvailableError) as info:
            while time.monotonic() - started < BOUND_S:
                consumer.consume()
        assert own_broker.bootstrap_servers in str(info.value)
        restart(own_broker)
        with KafkaClient(hosts=own_broker.bootstrap_servers) as other:
            other.cluster.create_topics([(topic_name, 1, 1)])
            with other.topics[topic_name].get_sync_producer() as producer:
                producer.produce(b"after-0")
                producer.produce(b"after-1")
        # The new own_broker's log starts again at 0 (memory storage); the consumer goes on from
        # its own position, offset 1.
        messages = consumer.consume_batch(1, BOUND_S * 1000)
        assert [(m.offset, m.value) for m in messages] == [(1, b"after-1")]
    finally:
        consumer.stop()
        client.close()


def test_produce_raises_and_stop_reports_every_queued_message(own_broker, topic_name):
    client = make_client(own_broker, topic_name)
    topic = client.topics[topic_name]
    producer = topic.get_producer(linger_ms=60000, pending_timeout_ms=500)  # nothing leaves
    try:
        queued = [producer.produce(b"m%d" % i) for i in range(50)]
        kill(own_broker)
        started = time.monotonic()
        with pytest.raises(NoBrokersAvailableError):
            while time.monotonic() - started < BOUND_S:
                producer.produce(b"more")
                queued.append(None)  # produced before the outage was confirmed: also queued
                time.sleep(0.05)
        with pytest.raises(ProduceFailureError) as info:
            producer.stop()
        failed = [m for m, _ in info.value.failed]
        assert len(failed) == len(queued)
        assert all(m in failed for m in queued if m is not None)
    finally:
        producer.stop()
        client.close()
