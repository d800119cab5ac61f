"""KafkaClient: construction, bad input, unreachable brokers."""
import logging
import subprocess
import sys
import threading
import time

import pytest

import pyrdk
from pyrdk import KafkaClient
from pyrdk.cluster import Cluster
from pyrdk.exceptions import ConfigurationError, NoBrokersAvailableError
from pyrdk.rd.handle import Handle
from pyrdk.testing import free_port
from tests.rd.util import http_listener


@pytest.mark.kafka
def test_client_sees_brokers_and_topics(client, topic):
    assert client.brokers, "the metadata named no broker"
    broker = next(iter(client.brokers.values()))
    assert broker.host == b"127.0.0.1" and isinstance(broker.port, int)  # bytes, as pykafka's
    assert topic.name in client.topics
    assert client.cluster.brokers is client.brokers


@pytest.mark.kafka
def test_hosts_as_bytes_and_update_cluster(kafka_hosts, topic_name):
    with KafkaClient(hosts=kafka_hosts.encode()) as client, KafkaClient(hosts=kafka_hosts) as other:
        other.cluster.create_topics([(topic_name, 2, 1)])
        assert topic_name.encode() not in client.topics  # metadata from before the creation
        client.update_cluster()
        assert topic_name.encode() in client.topics


def test_unreachable_bootstrap_raises_within_socket_timeout():
    port = free_port()  # nothing listens there
    with pytest.raises(NoBrokersAvailableError) as info:
        KafkaClient(hosts="127.0.0.1:%d" % port, socket_timeout_ms=1500)
    message = str(info.value)
    assert "127.0.0.1:%d" % port in message
    assert "1500 ms" in message


@pytest.mark.parametrize("hosts, failure", [("127.0.0.1:{0},127.0.0.1:{1}", "Connection refused"),
                                             ("nosuchhost.invalid:9092", "Failed to resolve")])
def test_a_wrong_address_is_named_once_every_bootstrap_broker_failed(hosts, failure):
    """As pykafka, which tries each address once: not after socket_timeout_ms (here five
    minutes), but once librdkafka reported every bootstrap broker down."""
    hosts = hosts.format(free_port(), free_port())
    with pytest.raises(NoBrokersAvailableError) as info:
        KafkaClient(hosts=hosts, socket_timeout_ms=300000)
    message = str(info.value)
    assert message.startswith("no broker of %s could be reached in " % hosts), message
    assert failure in message and message.endswith(": check the address, and that a broker runs there"), message


def test_an_http_server_at_the_address_is_named_as_one():
    """librdkafka reads an HTTP server's "HTTP/1.1 400" as a response size of 1213486160 and
    says to raise receive.message.max.bytes; the error says what answered instead, and comes as
    a wrong address's does, not after socket_timeout_ms."""
    with http_listener() as (port, answered):
        with pytest.raises(NoBrokersAvailableError) as info:
            KafkaClient(hosts="127.0.0.1:%d" % port, socket_timeout_ms=300000)
        assert answered
    message = str(info.value)
    assert 'that size is the bytes "HTTP": a web server or proxy answered there' in message
    assert "could be reached in" in message  # a wrong address, told as soon as it is clear: not after 5 minutes


@pytest.mark.mock
@pytest.mark.parametrize("answered_before", [False, True])
def test_brokers_that_answered_before_are_waited_for_not_taken_for_a_wrong_address(mock_cluster, answered_before):
    """Once a client of this process had an answer from these brokers, their being down is
    an outage (a restart under a Spark stream), waited for up to socket_timeout_ms."""
    if answered_before:
        KafkaClient(hosts=mock_cluster.bootstrap_servers).close()
    for broker in (1, 2, 3):
        mock_cluster.broker_down(broker)
    with pytest.raises(NoBrokersAvailableError) as info:
        KafkaClient(hosts=mock_cluster.bootstrap_servers, socket_timeout_ms=3000)
    assert ("answered a metadata request within 3000 ms" if answered_before else "could be reached in") \
        in str(info.value)


@pytest.mark.mock
def test_a_broker_that_comes_up_late_and_answers_slowly_is_waited_for(mock_cluster):
    """Refused at first, then up but slow to answer (a broker starting): not a wrong address."""
    for broker in (1, 2, 3):
        mock_cluster.broker_down(broker)

    def up():
        time.sleep(0.1)
        for broker in (1, 2, 3):
            mock_cluster.set_broker_rtt(broker, 1500)
            mock_cluster.broker_up(broker)
    thread = threading.Thread(target=up)
    thread.start()
    try:
        with KafkaClient(hosts=mock_cluster.bootstrap_servers, socket_timeout_ms=30000) as client:
            assert len(client.brokers) == 3
    finally:
        thread.join()


def test_an_unreachable_bootstrap_is_waited_for_in_short_slices(monkeypatch):
    """Each rd_kafka_metadata blocks the calling thread, Ctrl-C included: while no broker is
    up, none may wait longer than the first slice."""
    waits = []
    metadata = Handle.metadata

    def recorded(self, topic=None, timeout_ms=10000, all_topics=True):
        waits.append(timeout_ms)
        return metadata(self, topic, timeout_ms, all_topics)

    monkeypatch.setattr(Handle, "metadata", recorded)
    with pytest.raises(NoBrokersAvailableError):
        KafkaClient(hosts="127.0.0.1:%d" % free_port(), socket_timeout_ms=2000)
    assert len(waits) > 1 and max(waits) <= Cluster.FIRST_SLICE_MS, waits


@pytest.mark.parametrize("kwargs, exc", [
    ({"hosts": 9092}, TypeError),
    ({"hosts": ""}, TypeError),
    ({"socket_timeout_ms": "1000"}, TypeError),
    ({"socket_timeout_ms": 0}, TypeError),
    ({"rdkafka_config": ["a"]}, TypeError),
    ({"use_greenlets": True}, ValueError),
])
def test_bad_constructor_arguments(kwargs, exc):
    args = {"hosts": "127.0.0.1:1", "socket_timeout_ms": 1000}
    args.update(kwargs)
    with pytest.raises(exc):
        KafkaClient(**args)


@pytest.mark.parametrize("kwargs, match", [
    ({"hosts": "127.0.0.1:\u0663"}, r"hosts: .* port from 1 to 65535"),  # an Arabic-Indic 3, read as port 0
    ({"hosts": "127.0.0.1 9092"}, r"hosts: .* port from 1 to 65535"),
    ({"hosts": "http://127.0.0.1:9092"}, r"names protocol 'http', not one of PLAINTEXT, SSL"),
    ({"hosts": "127.0.0.1:1,ssl://127.0.0.1:2"}, r"names protocol 'ssl', but security.protocol is plaintext"),
    ({"rdkafka_config": {"bootstrap.servers": "127.0.0.1:99999"}}, r"rdkafka_config\['bootstrap.servers'\]: .* port"),
    ({"rdkafka_config": {"metadata.broker.list": "127.0.0.1:0"}}, r"rdkafka_config\['metadata.broker.list'\]"),
])
def test_hosts_librdkafka_cannot_reach_are_refused_at_once(kwargs, match):
    """Each of these would have librdkafka connect to no broker, or to another port, until
    socket_timeout_ms passed."""
    args = {"hosts": "127.0.0.1:1", "socket_timeout_ms": 1000}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        KafkaClient(**args)


def test_hosts_may_name_the_security_protocol(kafka_hosts):
    with KafkaClient(hosts="PLAINTEXT://" + kafka_hosts) as client:
        assert client.brokers
    with KafkaClient(hosts="127.0.0.1:1", rdkafka_config={"bootstrap.servers": [kafka_hosts]}) as client:
        assert client.brokers


def test_unknown_config_key_names_key_and_value():
    with pytest.raises(ConfigurationError) as info:
        KafkaClient(hosts="127.0.0.1:1", rdkafka_config={"no.such.property": "42"})
    assert "no.such.property" in str(info.value) and "42" in str(info.value)


@pytest.mark.parametrize("value", [True, "1", "TRUE"])
def test_delivery_reports_of_errors_only_are_refused(kafka_hosts, topic, value):
    """With them librdkafka reports no success, and every delivered message would be
    counted as undelivered at stop()."""
    config = {"delivery.report.only.error": value}
    with pytest.raises(ConfigurationError, match="delivery.report.only.error=true is not supported"):
        KafkaClient(hosts=kafka_hosts, rdkafka_config=config)
    with pytest.raises(ConfigurationError, match="delivery.report.only.error=true is not supported"):
        topic.get_producer(rdkafka_config=config)


def test_bad_config_value_names_key_and_value():
    with pytest.raises(ConfigurationError) as info:
        KafkaClient(hosts="127.0.0.1:1", rdkafka_config={"socket.timeout.ms": "forever"})
    assert "socket.timeout.ms" in str(info.value) and "forever" in str(info.value)


@pytest.mark.kafka
def test_a_shared_config_gives_each_kind_of_client_its_own_properties(kafka_hosts, topic, caplog):
    """A client-wide rdkafka_config holds producer and consumer properties alike: each
    handle gets those of its kind (and the common ones), so librdkafka warns of none."""
    shared = {"sticky.partitioning.linger.ms": 7, "fetch.max.bytes": 2000000, "group.id": "shared",
              "client.id": "shared-client"}
    client = KafkaClient(hosts=kafka_hosts, rdkafka_config=shared)
    with caplog.at_level(logging.WARNING, logger="pyrdk"):
        client.update_cluster()
        producer = client.topics[topic.name].get_producer()
        producer.produce(b"m")
        producer.stop()
        consumer = client.topics[topic.name].get_simple_consumer(consumer_timeout_ms=1000)
        assert [m.value for m in consumer] == [b"m"]
        consumer.stop()
    assert not [r.getMessage() for r in caplog.records if "CONFWARN" in r.getMessage()]
    assert producer._config["sticky.partitioning.linger.ms"] == 7 and producer._config["client.id"] == "shared-client"
    assert "fetch.max.bytes" not in producer._config and "group.id" not in producer._config
    assert consumer._config["fetch.max.bytes"] == 2000000 and consumer._config["client.id"] == "shared-client"
    assert "sticky.partitioning.linger.ms" not in consumer._config
    # Given to the producer itself, a consumer property still reaches librdkafka, which warns.
    with caplog.at_level(logging.WARNING, logger="pyrdk"):
        producer = client.topics[topic.name].get_producer(rdkafka_config={"fetch.max.bytes": 2000000})
        producer.produce(b"n")
        producer.stop()
    assert any("CONFWARN" in r.getMessage() and "fetch.max.bytes" in r.getMessage() for r in caplog.records)


def test_librdkafka_version_names_runtime_and_headers():
    version = pyrdk.librdkafka_version()
    assert version.runtime.count(".") == 2 and version.built_against.count(".") == 2
    assert tuple(map(int, version.runtime.split("."))) >= tuple(map(int, version.built_against.split(".")))


PYKAFKA_PROGRAM = """
from pykafka import KafkaClient
from pykafka.common import OffsetType
from pykafka.partitioners import hashing_partitioner
client = KafkaClient(hosts=HOSTS)
topic = client.topics[TOPIC]
with topic.get_producer(linger_ms=5, partitioner=hashing_partitioner) as producer:
    for i in range(20000):
        producer.produce(b"payload %d" % i, partition_key=b"user-%d" % (i % 50))
consumer = topic.get_simple_consumer(consumer_group=b"g", auto_offset_reset=OffsetType.EARLIEST,
                                     consumer_timeout_ms=1000)
seen = set()
for message in consumer:
    seen.add(message.value)
consumer.commit_offsets()
assert seen == {b"payload %d" % i for i in range(20000)}, len(seen)
print("OK", len(seen))
"""


@pytest.mark.kafka
@pytest.mark.parametrize("preamble", [
    # "import pyrdk as pykafka", then the program's own names through that module
    "import pyrdk as pykafka\nKafkaClient = pykafka.KafkaClient\nOffsetType = pykafka.common.OffsetType\n"
    "hashing_partitioner = pykafka.partitioners.hashing_partitioner\n",
    # one call, and the program's "from pykafka ... import" lines work unchanged
    "import pyrdk\npyrdk.install_as_pykafka()\n",
], ids=["import-as", "install_as_pykafka"])
def test_a_pykafka_program_runs_on_pyrdk(kafka_hosts, topic_name, preamble):
    """A pykafka 2.8 program, unchanged but for its first lines, in a fresh interpreter."""
    program = PYKAFKA_PROGRAM
    if preamble.startswith("import pyrdk as pykafka"):
        program = "\n".join(line for line in program.splitlines() if not line.startswith("from pykafka"))
    program = "HOSTS = %r\nTOPIC = %r\n" % (kafka_hosts, topic_name) + preamble + program
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "OK 20000" in result.stdout


def test_reconnect_backoff_is_the_java_clients_unless_given(kafka_hosts, topic):
    """pyrdk's one changed librdkafka default, for every handle of the client and for pyrdk.aio;
    a value given in rdkafka_config wins."""
    from pyrdk.aio import AIOKafkaConsumer, AIOKafkaProducer
    with KafkaClient(hosts=kafka_hosts) as client:
        producer = client.topics[topic.name].get_producer()
        consumer = client.topics[topic.name].get_simple_consumer()
        assert producer._config["reconnect.backoff.ms"] == consumer._config["reconnect.backoff.ms"] == 50
        producer.stop()
        consumer.stop()
    with KafkaClient(hosts=kafka_hosts, rdkafka_config={"reconnect.backoff.ms": 200}) as client:
        assert client.topics[topic.name].get_producer(auto_start=False)._config["reconnect.backoff.ms"] == 200
    for given, expected in ((None, 50), ({"reconnect.backoff.ms": 200}, 200)):
        for client_class in (AIOKafkaProducer, AIOKafkaConsumer):
            assert client_class(bootstrap_servers=kafka_hosts, rdkafka_config=given)._config["reconnect.backoff.ms"] \
                == expected
