"""What pykafka programs ask of ZooKeeper, against a real ZooKeeper server: brokers found
under /brokers/ids (``KafkaClient(zookeeper_hosts=...)`` without ``hosts``), a
``zookeeper=`` client that only has KazooClient's interface, and ``zookeeper_connect``,
pykafka's old name of ``zookeeper_hosts``."""
import json
from contextlib import nullcontext

import pytest

from pyrdk import KafkaClient
from pyrdk.connection import SslConfig
from pyrdk.exceptions import NoBrokersAvailableError
from pyrdk.partitioners import hashing_partitioner
from pyrdk.testing import free_port
from tests.fix_kafka import make_topic

pytestmark = pytest.mark.zookeeper

FAST = dict(zookeeper_connection_timeout_ms=2000, rebalance_backoff_ms=200, consumer_timeout_ms=500)


def register(zk, broker_id, **info):
    """A broker's ephemeral registration node, holding Kafka's JSON."""
    zk.create("/brokers/ids/%s" % broker_id, json.dumps(info).encode(), ephemeral=True, makepath=True)


def kafka_registration(host, port):
    """What Kafka 2.x writes for a broker with one PLAINTEXT listener."""
    return dict(listener_security_protocol_map={"PLAINTEXT": "PLAINTEXT"},
                endpoints=["PLAINTEXT://%s:%s" % (host, port)], jmx_port=-1, features={}, host=host,
                timestamp="1700000000000", port=int(port), version=5)


# -- brokers from ZooKeeper --------------------------------------------------------------------

def test_brokers_are_read_as_kafka_registers_them(zk, zookeeper_chroot):
    from pyrdk.zookeeper import brokers_from_zookeeper
    register(zk, 2, **kafka_registration("10.0.0.2", 9092))
    # named listeners only (host and port are then null and -1): the PLAINTEXT one is used
    register(zk, 10, listener_security_protocol_map={"REPLICATION": "SSL", "CLIENTS": "PLAINTEXT"},
             endpoints=["REPLICATION://10.0.0.10:9094", "CLIENTS://10.0.0.10:9092"], host=None, port=-1,
             version=5)
    register(zk, 1, listener_security_protocol_map={"SSL": "SSL"}, endpoints=["SSL://10.0.0.1:9093"],
             host=None, port=-1, version=4)  # no listener for PLAINTEXT clients
    register(zk, 3, host="10.0.0.3", port=9092, version=1)  # Kafka 0.8: host and port only
    zk.create("/brokers/ids/4", b"not json")
    assert brokers_from_zookeeper(zookeeper_chroot) == "10.0.0.2:9092,10.0.0.3:9092,10.0.0.10:9092"
    assert brokers_from_zookeeper(zookeeper_chroot, "ssl") == "10.0.0.1:9093,10.0.0.10:9094"



@pytest.mark.parametrize("protocol", ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"])
def test_client_without_hosts_connects_to_the_listener_of_its_protocol(zk, zookeeper_chroot, tls_certs, protocol):
    """A SASL client found its brokers through the SSL or PLAINTEXT listener (the protocol
    was taken from ssl_config alone, not from security_protocol), whose broker never
    answers its SASL handshake."""
    ports = {name: free_port() for name in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")}
    register(zk, 0, listener_security_protocol_map={name: name for name in ports},
             endpoints=["%s://127.0.0.1:%d" % item for item in ports.items()], host="127.0.0.1",
             port=ports["PLAINTEXT"], version=5)
    kwargs = {"security_protocol": protocol}
    if protocol.endswith("SSL"):
        kwargs["ssl_config"] = SslConfig(cafile=tls_certs.ca.certfile)
    if protocol.startswith("SASL"):
        kwargs.update(sasl_mechanism="SCRAM-SHA-256", sasl_plain_username="u", sasl_plain_password="p")
    with pytest.raises(NoBrokersAvailableError) as info:  # nothing listens on the ports
        KafkaClient(zookeeper_hosts=zookeeper_chroot, socket_timeout_ms=500, **kwargs)
    assert "no broker of 127.0.0.1:%d " % ports[protocol] in str(info.value)


@pytest.mark.kafka
def test_client_without_hosts_finds_the_brokers_in_zookeeper(zk, zookeeper_chroot, kafka_hosts, topic_name):
    for broker_id, address in enumerate(kafka_hosts.split(",")):
        register(zk, broker_id, **kafka_registration(*address.strip().rsplit(":", 1)))
    with KafkaClient(zookeeper_hosts=zookeeper_chroot) as client:
        assert client.cluster.rdkafka_config["bootstrap.servers"] == kafka_hosts.replace(" ", "")
        assert client.brokers and client.cluster.zookeeper_hosts == zookeeper_chroot
        topic = make_topic(client, topic_name, 2)
        with topic.get_sync_producer() as producer:
            producer.produce(b"via zookeeper")
        consumer = topic.get_simple_consumer(consumer_timeout_ms=3000)
        assert [m.value for m in consumer] == [b"via zookeeper"]
        consumer.stop()


def test_no_registered_broker_is_a_clear_error(zookeeper_chroot):
    with pytest.raises(NoBrokersAvailableError, match="/brokers/ids") as info:
        KafkaClient(zookeeper_hosts=zookeeper_chroot)
    assert zookeeper_chroot in str(info.value) and "give hosts" in str(info.value)


def test_unreachable_zookeeper_is_a_clear_error():
    nobody = "127.0.0.1:%d" % free_port()
    with pytest.raises(NoBrokersAvailableError, match="did not answer within 500 ms") as info:
        KafkaClient(zookeeper_hosts=nobody, socket_timeout_ms=500)
    assert nobody in str(info.value)


@pytest.mark.kafka
def test_hosts_given_are_used_without_asking_zookeeper(kafka_hosts):
    nobody = "127.0.0.1:%d" % free_port()  # would fail if it were asked
    with KafkaClient(hosts=kafka_hosts, zookeeper_hosts=nobody) as client:
        assert client.brokers and client.cluster.zookeeper_hosts == nobody


@pytest.mark.parametrize("value", [5, b"127.0.0.1:2181", ""])
def test_zookeeper_hosts_must_be_a_connect_string(value):
    with pytest.raises(TypeError, match="zookeeper_hosts must be a non-empty"):
        KafkaClient(hosts="127.0.0.1:1", zookeeper_hosts=value)


BAD_CONNECT_STRINGS = ["127.0.0.1:abc", "127.0.0.1:99999", "127.0.0.1:2181,", ":", "zk..example:2181",
                       "a" * 64 + ".example:2181"]


@pytest.mark.parametrize("value", BAD_CONNECT_STRINGS)
def test_a_connect_string_kazoo_cannot_read_is_named(value):
    with pytest.raises(ValueError, match="zookeeper_hosts %r is not a 'host:port" % value):
        KafkaClient(zookeeper_hosts=value)


@pytest.mark.kafka
@pytest.mark.parametrize("value", BAD_CONNECT_STRINGS)
def test_the_balanced_consumer_names_a_connect_string_kazoo_cannot_read(client, topic_name, group_name, value):
    topic = make_topic(client, topic_name, 1)
    for connect in [dict(zookeeper_hosts=value), dict(zookeeper_connect=value)]:
        with pytest.warns(DeprecationWarning) if "zookeeper_connect" in connect else nullcontext(), \
                pytest.raises(ValueError, match="zookeeper_hosts %r is not a 'host:port" % value):
            topic.get_balanced_consumer(group_name, auto_start=False, **connect)


# -- zookeeper= with KazooClient's interface ---------------------------------------------------

class Wrapped:
    """What programs pass as zookeeper=: their own object around a KazooClient."""

    def __init__(self, zk, without=()):
        self._zk = zk
        self._without = without

    def __getattr__(self, name):
        if name in self._without:
            raise AttributeError(name)
        return getattr(self._zk, name)


@pytest.mark.kafka
def test_an_object_with_kazoos_interface_is_accepted(client, zk, topic_name, group_name):
    topic = make_topic(client, topic_name, 2)
    with topic.get_producer(linger_ms=5, partitioner=hashing_partitioner) as producer:
        for i in range(30):
            producer.produce(b"%d" % i, partition_key=b"%d" % i)
    with topic.get_balanced_consumer(group_name, zookeeper=Wrapped(zk), **FAST) as consumer:
        assert sorted(consumer.partitions) == [0, 1]
        assert sorted(int(m.value) for m in consumer) == list(range(30))
        assert zk.get_children("/consumers/%s/ids" % group_name.decode()) == [consumer.consumer_id.decode()]
    assert zk.connected


def test_each_missing_part_of_the_interface_is_named(zk):
    from pyrdk.zookeeper import KAZOO_ATTRIBUTES, KAZOO_METHODS, check_kazoo_interface
    assert check_kazoo_interface(zk) is zk
    for name in KAZOO_METHODS + KAZOO_ATTRIBUTES:
        with pytest.raises(TypeError, match="KazooClient or have its interface; Wrapped has no %r" % name):
            check_kazoo_interface(Wrapped(zk, without=(name,)))
    wrapped = Wrapped(zk)
    wrapped.transaction = "not a method"
    with pytest.raises(TypeError, match="Wrapped.transaction is not callable"):
        check_kazoo_interface(wrapped)


@pytest.mark.kafka
def test_the_balanced_consumer_names_what_zookeeper_lacks(client, zk, topic_name, group_name):
    topic = make_topic(client, topic_name, 1)
    with pytest.raises(TypeError, match="has no 'create_async'"):
        topic.get_balanced_consumer(group_name, zookeeper=Wrapped(zk, without=("create_async",)), **FAST)
    with pytest.raises(TypeError, match="zookeeper must be a kazoo.client.KazooClient"):
        topic.get_balanced_consumer(group_name, zookeeper="127.0.0.1:2181", **FAST)


# -- zookeeper_connect, pykafka's old name -----------------------------------------------------

@pytest.mark.kafka
def test_zookeeper_connect_is_taken_over_the_clients_zookeeper_hosts(kafka_hosts, zk, zookeeper_chroot,
                                                                      topic_name, group_name):
    nobody = "127.0.0.1:%d" % free_port()
    with KafkaClient(hosts=kafka_hosts, zookeeper_hosts=nobody) as client:
        topic = make_topic(client, topic_name, 1)
        with pytest.warns(DeprecationWarning, match="zookeeper_connect is deprecated") as record:
            consumer = topic.get_balanced_consumer(group_name, zookeeper_connect=zookeeper_chroot, **FAST)
        try:
            assert [w.filename for w in record] == [__file__]  # points at the caller's line
            assert zk.get_children("/consumers/%s/ids" % group_name.decode()) == [consumer.consumer_id.decode()]
        finally:
            consumer.stop()


@pytest.mark.kafka
def test_zookeeper_connect_wins_over_zookeeper_hosts_as_in_pykafka(client, zk, zookeeper_chroot, topic_name,
                                                                   group_name):
    from pyrdk.balancedconsumer import BalancedConsumer
    topic = make_topic(client, topic_name, 1)
    nobody = "127.0.0.1:%d" % free_port()
    with pytest.warns(DeprecationWarning) as record:
        consumer = BalancedConsumer(topic, client.cluster, group_name, zookeeper_connect=zookeeper_chroot,
                                    zookeeper_hosts=nobody, **FAST)
    try:
        assert [w.filename for w in record] == [__file__]
        assert sorted(consumer.partitions) == [0]
    finally:
        consumer.stop()


@pytest.mark.parametrize("name", ["", ".", "..", "a/../b", "workers/ids"])
def test_a_group_name_no_znode_can_have_is_no_zookeeper_group(zk, zookeeper_chroot, name):
    """``workers/ids`` is a node of group ``workers``, not a group; ``..`` and the like are
    names kazoo refuses: none is a ZooKeeper-coordinated group."""
    from pyrdk.zookeeper import GroupZnodes
    zk.create("/consumers/workers/ids/m1", b"events", makepath=True)
    zk.create("/consumers/workers/offsets/events/0", b"3", makepath=True)
    with GroupZnodes(zookeeper_chroot) as groups:
        assert groups.exists("workers") and groups.offsets("workers", "events") == {0: 3}
        assert not groups.exists(name)
        assert (groups.members(name), groups.topics(name), groups.owners(name, "events"),
                groups.offsets(name, "events")) == ({}, [], {}, {})


def test_owners_made_by_pykafka_on_python_3_are_named(zk, zookeeper_chroot):
    """pykafka on Python 3 keeps a topic's ownership nodes under ``owners/b'<topic>'``: they
    name the owners of ``<topic>``, which is one topic of the group, not two."""
    from pyrdk.zookeeper import GroupZnodes
    zk.create("/consumers/g/ids/pk:1", b"events", ephemeral=True, makepath=True)
    zk.create("/consumers/g/owners/b'events'/111-0", b"pk:1", ephemeral=True, makepath=True)
    zk.create("/consumers/g/owners/events/111-1", b"rdk:2", ephemeral=True, makepath=True)
    with GroupZnodes(zookeeper_chroot) as groups:
        assert groups.topics("g") == ["events"]
        assert groups.owners("g", "events") == {0: "pk:1", 1: "rdk:2"}
