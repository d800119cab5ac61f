"""Cluster: metadata, topic lookup and auto-creation, administration."""
import itertools
import sys
import threading

import pytest

from pyrdk import KafkaClient
from pyrdk.exceptions import (InternalTopicExcluded, KafkaException, TopicAlreadyExists,
                              UnknownTopicOrPartition)
from tests.fix_kafka import unique_name

pytestmark = pytest.mark.kafka


def test_create_and_delete_topics(client, topic_name):
    client.cluster.create_topics([(topic_name, 3, 1)])
    topic = client.topics[topic_name]
    assert sorted(topic.partitions) == [0, 1, 2]
    with pytest.raises(TopicAlreadyExists) as info:
        client.cluster.create_topics([(topic_name, 3, 1)])
    assert topic_name in str(info.value)
    client.cluster.delete_topics([topic_name])
    assert topic_name.encode() not in client.topics


def test_no_topics_to_create_or_delete_is_no_request(client):
    """As pykafka sends an empty request and gets an empty answer: a program that creates the
    topics it lacks may find it lacks none. librdkafka refuses an empty list."""
    before = sorted(client.topics)
    assert client.cluster.create_topics([]) is None
    assert client.cluster.delete_topics([]) is None
    assert sorted(client.topics) == before


def test_create_topics_accepts_pykafka_request_objects(client, topic_name):
    class CreateTopicRequest:  # the attributes of pykafka.protocol.CreateTopicRequest
        topic_name = b""
        num_partitions = 2
        replication_factor = 1
        config_entries = []
    req = CreateTopicRequest()
    req.topic_name = topic_name.encode()
    client.cluster.create_topics([req])
    assert sorted(client.topics[topic_name].partitions) == [0, 1]


def test_topic_lookup_by_str_and_bytes_returns_the_same_topic(client, topic):
    name = topic.name
    assert isinstance(name, bytes)
    assert client.topics[name] is client.topics[name.decode()]
    assert client.topics.get(name.decode()) is topic


def test_unknown_topic_is_created_where_the_broker_allows_it(client):
    """Tansu creates topics on metadata requests, as Kafka's auto.create.topics.enable."""
    name = unique_name("auto")
    topic = client.topics[name]
    assert topic.partitions, "an auto-created topic has partitions"


def test_topics_are_refreshed_in_one_thread_while_another_looks_one_up(client):
    """A balanced consumer refreshes the metadata in its own thread (``cluster.update()``)
    while the program looks up a new topic (``client.topics[name]``): both change the
    topics, neither may fail on the other's change."""
    prefix = unique_name("many")
    client.cluster.create_topics([("%s-%d" % (prefix, i), 1, 1) for i in range(100)])
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often: inside the scan of the topic names
    failures, done = [], threading.Event()

    def look_up():
        for i in itertools.count():
            if done.is_set():
                return
            try:
                client.topics["%s-new-%d" % (prefix, i)]
            except Exception as exc:
                failures.append(exc)
                return

    thread = threading.Thread(target=look_up)
    thread.start()
    try:
        for _ in range(100):
            client.update_cluster()
            for _ in range(10):  # a program's loops over the topics
                assert all(name == topic.name for name, topic in client.topics.items())
            assert all(isinstance(name, bytes) for name in client.topics)
            assert isinstance(client.topics.keys() & {b"x"}, set)  # still views, of a copy
    finally:
        done.set()
        thread.join()
        sys.setswitchinterval(interval)
    assert failures == []


@pytest.mark.mock
def test_unknown_topic_raises_where_the_broker_refuses(mock_cluster):
    name = unique_name("missing")
    mock_cluster.set_topic_error(name, 3)  # UNKNOWN_TOPIC_OR_PART, as a broker without auto-create
    with KafkaClient(hosts=mock_cluster.bootstrap_servers, socket_timeout_ms=2000) as client:
        with pytest.raises(UnknownTopicOrPartition) as info:
            client.topics[name]
        assert name in str(info.value)


@pytest.mark.mock
def test_a_topic_the_broker_refuses_is_not_called_unknown(mock_cluster):
    name = unique_name("denied")
    mock_cluster.set_topic_error(name, 29)  # TOPIC_AUTHORIZATION_FAILED: creating it would not help
    with KafkaClient(hosts=mock_cluster.bootstrap_servers, socket_timeout_ms=2000) as client:
        with pytest.raises(KafkaException) as info:
            client.topics[name]
    assert info.value.code == 29
    assert "the broker refused the metadata of topic %r: Broker: Topic authorization failed (error 29)" % name \
        == str(info.value)


def test_topic_name_of_wrong_type_is_a_type_error(client):
    with pytest.raises(TypeError):
        client.topics[42]


def test_topics_answer_in_and_get_as_a_dict_does(client, topic_name):
    """pykafka's topics were a dict: anything but a known name is not in it."""
    client.topics[topic_name]
    for key in (None, 42, ("t",), "t\0x", b"t\0x", b"\xff", "no-such-topic-" + topic_name):
        assert key not in client.topics
        assert client.topics.get(key) is None and client.topics.get(key, 7) == 7
    assert topic_name in client.topics and topic_name.encode() in client.topics
    assert client.topics.get(topic_name).name == topic_name.encode()


def test_internal_topics_are_excluded(client):
    assert not any(name.startswith(b"__") for name in client.topics)
    with pytest.raises(UnknownTopicOrPartition):
        client.topics["__consumer_offsets"]
    with pytest.raises(KeyError, match="exclude_internal_topics=False") as info:  # pykafka's KeyError
        client.topics[b"__pyrdk_anything"]
    assert isinstance(info.value, InternalTopicExcluded)
    assert "__pyrdk_anything" not in client.topics and client.topics.get(b"__pyrdk_anything") is None


def test_internal_topics_can_be_made_and_used_when_not_excluded(kafka_hosts):
    name = "__" + unique_name("internal")
    with KafkaClient(hosts=kafka_hosts, exclude_internal_topics=False) as insider, \
            KafkaClient(hosts=kafka_hosts) as outsider:
        insider.cluster.create_topics([(name, 2, 1)])
        topic = insider.topics[name]
        assert sorted(topic.partitions) == [0, 1] and name.encode() in insider.topics
        with topic.get_sync_producer() as producer:
            producer.produce(b"inside", partition_key=b"k")
        consumer = topic.get_simple_consumer(consumer_timeout_ms=3000)
        assert [m.value for m in consumer] == [b"inside"]
        consumer.stop()
        outsider.update_cluster()
        assert name.encode() not in outsider.topics  # in the metadata, hidden by this client
        with pytest.raises(KeyError):
            outsider.topics[name]
        insider.cluster.delete_topics([name])


def test_controller_and_group_coordinator_are_known_brokers(client, group_name):
    assert client.cluster.controller_broker in client.brokers.values()
    coordinator = client.cluster.get_group_coordinator(group_name)
    assert coordinator.id in client.brokers


def test_list_and_describe_groups(client, topic, group_name):
    consumer = topic.get_simple_consumer(consumer_group=group_name, consumer_timeout_ms=100)
    try:
        consumer.commit_offsets([(0, 0)])
        groups = client.cluster.list_groups()
        assert group_name in groups
        assert groups[group_name].group_id == group_name
        described = client.cluster.describe_groups([group_name])
        assert described[group_name].group_id == group_name.decode()
        assert described[group_name].error == 0
    finally:
        consumer.stop()


def test_get_managed_group_descriptions_describes_the_groups_listed(client, topic, group_name):
    """pykafka's Cluster.get_managed_group_descriptions(), which kafka-tools calls."""
    consumer = topic.get_simple_consumer(consumer_group=group_name, consumer_timeout_ms=100)
    try:
        consumer.commit_offsets([(0, 0)])
        described = client.cluster.get_managed_group_descriptions()
        assert set(described) == set(client.cluster.list_groups())
        assert described[group_name].group_id == group_name.decode()
        assert described[group_name].error == 0
    finally:
        consumer.stop()


def test_broker_admin_methods_delegate_to_cluster(client, topic_name):
    broker = next(iter(client.brokers.values()))
    broker.create_topics([(topic_name, 1, 1)])
    assert topic_name.encode() in client.topics
    assert broker.connected
    broker.delete_topics([topic_name])
    assert topic_name.encode() not in client.topics


@pytest.mark.parametrize("one", ["name", "bytes", "topic"])
def test_delete_topics_refuses_one_name_and_deletes_nothing(client, topic, one):
    arg = {"name": topic.name.decode(), "bytes": topic.name, "topic": topic}[one]
    with pytest.raises(TypeError, match=r"delete_topics takes a list of topic names, not one: use \["):
        client.cluster.delete_topics(arg)  # not topics "t", "o", "p", ... one per character
    client.update_cluster()
    assert topic.name in client.topics


@pytest.mark.parametrize("suffix", ["\0", "\0junk"])
def test_a_name_with_a_nul_character_is_refused_and_deletes_nothing(client, topic, suffix):
    name = topic.name.decode() + suffix  # librdkafka would read only up to the NUL: the topic
    with pytest.raises(ValueError, match="NUL character"):
        client.cluster.delete_topics([name])
    with pytest.raises(ValueError, match="NUL character"):
        client.cluster.delete_topics([name.encode()])
    with pytest.raises(ValueError, match="NUL character"):
        client.topics[name]
    with pytest.raises(ValueError, match="NUL character"):
        client.cluster.alter_configs({"retention.ms": "1\0"}, topic=topic)
    client.update_cluster()
    assert topic.name in client.topics


@pytest.mark.parametrize("reqs, exc, match", [
    (("{}", 1, 1), TypeError, r"takes a list of requests, not one: use \[\("),
    ("{}", TypeError, r"takes a list of requests, not one: use \[\('.*', num_partitions, replication_factor\)\]"),
    (["{}"], TypeError, r"request is a \(name, num_partitions, replication_factor\[, config\]\) tuple"),
    ([("{}", 1)], TypeError, "request is a .* tuple, not"),
    ([("{}", "4", 1)], TypeError, "num_partitions of topic '.*' must be an int"),
    ([("{}", True, 1)], TypeError, "num_partitions of topic '.*' must be an int"),
    ([("{}", 0, 1)], ValueError, "num_partitions of topic '.*' must be at least 1, or -1"),
    ([("{}", 1, 0)], ValueError, "replication_factor of topic '.*' must be at least 1, or -1"),
    ([("{}", 1, 1, "retention.ms=1")], TypeError, "config of topic '.*' must be a dict"),
    ([("{}-ok", 1, 1), ("{}", 0, 1)], ValueError, "num_partitions"),
    (5, TypeError, "takes a list of requests, not int"),
])
def test_create_topics_refuses_malformed_requests_and_creates_nothing(client, topic_name, reqs, exc, match):
    def named(item):
        if isinstance(item, str):
            return item.format(topic_name)
        return type(item)(named(x) for x in item) if isinstance(item, (tuple, list)) else item
    with pytest.raises(exc, match=match):
        client.cluster.create_topics(named(reqs))
    client.update_cluster()
    assert not [name for name in client.topics if name.startswith(topic_name.encode())]


def test_a_closed_client_says_so_and_makes_no_more_producers_or_consumers(kafka_hosts, topic_name, group_name):
    client = KafkaClient(hosts=kafka_hosts)
    client.cluster.create_topics([(topic_name, 1, 1)])
    topic = client.topics[topic_name]
    producer = topic.get_sync_producer()
    client.close()
    for call in (client.update_cluster, lambda: client.topics[unique_name()], topic.get_producer,
                 topic.get_simple_consumer, lambda: topic.get_balanced_consumer(group_name, managed=True)):
        with pytest.raises(KafkaException, match="^the KafkaClient is closed$"):
            call()
    try:
        assert producer.produce(b"made before close").offset == 0
    finally:
        producer.stop()


@pytest.mark.mock
def test_mock_cluster_has_three_brokers_and_leaders(mock_cluster):
    name = unique_name("mock")
    mock_cluster.create_topic(name, 6, 3)
    with KafkaClient(hosts=mock_cluster.bootstrap_servers) as client:
        assert sorted(client.brokers) == [1, 2, 3]
        topic = client.topics[name]
        assert len(topic.partitions) == 6
        for partition in topic.partitions.values():
            assert partition.leader in client.brokers.values()
            assert len(partition.replicas) == 3
            assert partition.leader in partition.isr
        mock_cluster.set_partition_leader(name, 0, 3)
        client.update_cluster()
        assert topic.partitions[0].leader.id == 3


@pytest.mark.mock
def test_broker_host_is_bytes_as_pykafkas(mock_cluster):
    """pykafka's Broker.host came from the metadata response as bytes (b"127.0.0.1"); a
    program written for it decodes it, or formats it as pykafka's repr shows it."""
    with KafkaClient(hosts=mock_cluster.bootstrap_servers) as client:
        for broker in client.brokers.values():
            assert isinstance(broker.host, bytes)
            host, port = mock_cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
            assert broker.host.decode() == host
            assert "(host=%r, port=%d, id=%d)" % (broker.host, broker.port, broker.id) in repr(broker)
        kept = dict(client.brokers)
        client.update_cluster()  # the same brokers are kept, not made again
        assert all(client.brokers[i] is b for i, b in kept.items())


@pytest.mark.mock
def test_a_broker_leaving_during_a_loop_over_the_brokers(mock_cluster):
    """A refresh in another thread (a producer's poller) may drop a broker while a program
    goes through ``client.brokers``: the loop goes on over what it began with."""
    name = unique_name("mock")
    mock_cluster.create_topic(name, 6, 2)
    with KafkaClient(hosts=mock_cluster.bootstrap_servers) as client:
        topic = client.topics[name]
        kept = client.brokers[1]
        mock_cluster.decommission_broker(2)
        seen = []
        for broker_id in client.brokers:
            seen.append(broker_id)
            client.update_cluster()
        assert seen == [1, 2, 3] and sorted(client.brokers) == [1, 3]
        assert client.brokers is client.cluster.brokers and client.brokers[1] is kept
        assert {p.leader.id for p in topic.partitions.values()} <= {1, 3}




# -- pykafka's request objects and group offsets -----------------------------------------------

def test_pykafkas_create_and_delete_requests_through_the_controller(client, topic_name):
    from pyrdk.protocol import CreateTopicRequest, CreateTopicsRequest, DeleteTopicsRequest
    controller = client.cluster.controller_broker
    controller.create_topics([CreateTopicRequest(topic_name.encode(), 3, 1, [], [(b"retention.ms", b"60000")])])
    assert sorted(client.topics[topic_name].partitions) == [0, 1, 2]
    client.cluster.create_topics(CreateTopicsRequest([CreateTopicRequest(topic_name + "-2", 1, 1, [], [])],
                                                     timeout=10000))
    assert (topic_name + "-2").encode() in client.topics
    client.cluster.delete_topics(DeleteTopicsRequest([topic_name.encode(), topic_name + "-2"], timeout=10000))
    assert topic_name.encode() not in client.topics and (topic_name + "-2").encode() not in client.topics


def test_a_replica_assignment_or_a_lone_request_is_refused(client, topic_name):
    from pyrdk.protocol import CreateTopicRequest
    with pytest.raises(ValueError, match="replica_assignment is not supported"):
        client.cluster.create_topics([CreateTopicRequest(topic_name, -1, -1, [(0, [1])], [])])
    with pytest.raises(TypeError, match="takes a list of requests, not one"):
        client.cluster.create_topics(CreateTopicRequest(topic_name, 1, 1, [], []))
    client.update_cluster()
    assert topic_name.encode() not in client.topics


def test_group_offsets_committed_and_fetched_with_pykafkas_requests(client, topic, group_name):
    from pyrdk.protocol import PartitionOffsetCommitRequest, PartitionOffsetFetchRequest
    with topic.get_sync_producer() as producer:
        for i in range(8):
            producer.produce(b"%d" % i, partition_key=b"%d" % i)
    latest = {p: r.offset[0] for p, r in topic.latest_available_offsets().items()}
    broker = client.cluster.get_group_coordinator(group_name)
    reqs = [PartitionOffsetCommitRequest(topic.name, p, o, 0, b"kafka-tools") for p, o in latest.items()
            if p != 3]
    response = broker.commit_consumer_group_offsets(group_name, 1, b"kafka-tools", reqs)
    assert response.topics == {topic.name: {p: (0,) for p in latest if p != 3}}
    fetched = broker.fetch_consumer_group_offsets(
        group_name, [PartitionOffsetFetchRequest(topic.name, p) for p in sorted(topic.partitions)])
    assert {p: r.offset for p, r in fetched.topics[topic.name].items()} == {**latest, 3: -1}
    assert all(r.err == 0 for r in fetched.topics[topic.name].values())
    # a consumer of the group starts where the commit says
    consumer = topic.get_simple_consumer(consumer_group=group_name, partitions=[0], consumer_timeout_ms=500)
    assert list(consumer) == []
    assert [(p, r.offset, r.err) for p, r in consumer.fetch_offsets()] == [(0, latest[0], 0)]
    consumer.stop()


@pytest.mark.mock
def test_group_offsets_carry_their_metadata(mock_cluster):
    """A PartitionOffsetCommitRequest's metadata is written into the commit and read back
    (librdkafka's mock cluster keeps it; Tansu does not return it)."""
    from pyrdk.protocol import PartitionOffsetCommitRequest, PartitionOffsetFetchRequest
    name = unique_name("mock")
    mock_cluster.create_topic(name, 2)
    group = unique_name("group").encode()
    with KafkaClient(hosts=mock_cluster.bootstrap_servers) as client:
        broker = next(iter(client.brokers.values()))  # the mock cluster answers no DescribeGroups
        broker.commit_consumer_group_offsets(group, -1, b"", [
            PartitionOffsetCommitRequest(name, 0, 3, 0, b'{"consumer_id": "tools"}'),
            PartitionOffsetCommitRequest(name, 1, 4, 0, "as str")])
        fetched = broker.fetch_consumer_group_offsets(group, [PartitionOffsetFetchRequest(name, p) for p in (0, 1)])
        assert fetched.topics[name.encode()] == {0: (3, b'{"consumer_id": "tools"}', 0), 1: (4, b"as str", 0)}
        with pytest.raises(TypeError, match="metadata"):
            broker.commit_consumer_group_offsets(group, -1, b"", [PartitionOffsetCommitRequest(name, 0, 3, 0, 5)])


def test_group_offset_requests_are_checked(client, topic, group_name):
    from pyrdk.protocol import PartitionOffsetCommitRequest, PartitionOffsetFetchRequest
    broker = client.cluster.get_group_coordinator(group_name)
    with pytest.raises(TypeError, match="takes a list of PartitionOffsetCommitRequests, not one"):
        broker.commit_consumer_group_offsets(group_name, -1, b"", PartitionOffsetCommitRequest(
            topic.name, 0, 1, 0, b""))
    with pytest.raises(TypeError, match="offset of .* must be an int >= 0"):
        broker.commit_consumer_group_offsets(group_name, -1, b"", [PartitionOffsetCommitRequest(
            topic.name, 0, -5, 0, b"")])
    with pytest.raises(TypeError, match="takes a list of PartitionOffsetFetchRequests, not one"):
        broker.fetch_consumer_group_offsets(group_name, PartitionOffsetFetchRequest(topic.name, 0))
    assert broker.fetch_consumer_group_offsets(group_name, []).topics == {}


@pytest.mark.mock
def test_group_offsets_of_a_coordinator_that_is_down_fail_within_socket_timeout(mock_cluster):
    """A commit from outside the group that no coordinator answers raises KafkaTimeoutError
    after ``socket_timeout_ms`` and returns then: librdkafka held it for ``session.timeout.ms``
    (45 s), and the group handle's close waited for it."""
    import time

    from pyrdk.exceptions import KafkaTimeoutError
    from pyrdk.protocol import PartitionOffsetCommitRequest
    name = unique_name("mock")
    mock_cluster.create_topic(name, 1)
    group = unique_name("group")
    mock_cluster.set_coordinator("group", group, 2)
    with KafkaClient(hosts=mock_cluster.bootstrap_servers, socket_timeout_ms=2000) as client:
        client.cluster.commit_consumer_group_offsets(group, [PartitionOffsetCommitRequest(name, 0, 3, 0, b"")])
        mock_cluster.broker_down(2)
        start = time.monotonic()
        with pytest.raises(KafkaTimeoutError, match="within 2000 ms"):
            client.cluster.commit_consumer_group_offsets(group, [PartitionOffsetCommitRequest(name, 0, 4, 0, b"")])
        assert time.monotonic() - start < 20  # not the 45 s of librdkafka's hold and the close after it
        mock_cluster.broker_up(2)


@pytest.mark.mock
def test_group_offsets_from_a_client_configured_for_the_consumer_group_protocol(mock_cluster):
    """The handle that commits and fetches a group's offsets from outside it joins nothing: a
    client whose rdkafka_config chooses KIP-848's protocol (for its managed consumers) uses it."""
    from pyrdk.protocol import PartitionOffsetCommitRequest, PartitionOffsetFetchRequest
    name = unique_name("mock")
    mock_cluster.create_topic(name, 1)
    group = unique_name("group")
    with KafkaClient(hosts=mock_cluster.bootstrap_servers, socket_timeout_ms=3000,
                     rdkafka_config={"group.protocol": "consumer"}) as client:
        client.cluster.commit_consumer_group_offsets(group, [PartitionOffsetCommitRequest(name, 0, 3, 0, b"")])
        fetched = client.cluster.fetch_consumer_group_offsets(group, [PartitionOffsetFetchRequest(name, 0)])
        assert fetched.topics[name.encode()][0].offset == 3


@pytest.mark.mock
@pytest.mark.parametrize("code", [15, 16])  # COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
def test_group_offsets_are_fetched_again_while_the_coordinator_moves(mock_cluster, code):
    """An OffsetFetch answered by a coordinator that moved or is not ready is asked again, as
    pykafka's fetch retried it (librdkafka answers it at once); one that lasts is raised, named,
    within ``socket_timeout_ms``."""
    import time

    from pyrdk.protocol import PartitionOffsetCommitRequest, PartitionOffsetFetchRequest
    from pyrdk.rd.mock import ApiKey
    name = unique_name("mock")
    mock_cluster.create_topic(name, 1)
    group = unique_name("group")
    with KafkaClient(hosts=mock_cluster.bootstrap_servers, socket_timeout_ms=2000) as client:
        client.cluster.commit_consumer_group_offsets(group, [PartitionOffsetCommitRequest(name, 0, 3, 0, b"")])
        mock_cluster.push_request_errors(ApiKey.OffsetFetch, code, code)
        fetched = client.cluster.fetch_consumer_group_offsets(group, [PartitionOffsetFetchRequest(name, 0)])
        assert fetched.topics[name.encode()][0].offset == 3
        mock_cluster.push_request_errors(ApiKey.OffsetFetch, *[code] * 1000)
        start = time.monotonic()
        with pytest.raises(KafkaException, match="(?i)coordinator"):
            client.cluster.fetch_consumer_group_offsets(group, [PartitionOffsetFetchRequest(name, 0)])
        assert time.monotonic() - start < 15  # socket_timeout_ms 2 s, not librdkafka's own waits


@pytest.mark.mock
def test_a_topic_looked_up_while_a_refresh_adds_it_is_the_one_kept(mock_cluster, monkeypatch):
    """A refresh in another thread that adds a topic a lookup added meanwhile keeps the
    lookup's Topic: replacing it would leave the program's Topic out of every later refresh,
    with its leaders as they were."""
    import pyrdk.cluster
    name = unique_name("mock")
    made, entered, go = [], threading.Event(), threading.Event()

    class SlowTopic(pyrdk.cluster.Topic):
        def __init__(self, *args):
            super().__init__(*args)
            made.append(self)
            if len(made) == 1:  # the refresh's: the lookup runs meanwhile
                entered.set()
                go.wait(10)

    with KafkaClient(hosts=mock_cluster.bootstrap_servers, socket_timeout_ms=3000) as client:
        mock_cluster.create_topic(name, 1, 3)
        monkeypatch.setattr(pyrdk.cluster, "Topic", SlowTopic)
        refresh = threading.Thread(target=client.update_cluster)
        refresh.start()
        try:
            assert entered.wait(10)
            topic = client.topics[name]
        finally:
            go.set()
            refresh.join()
        assert client.topics[name] is topic
        leader = topic.partitions[0].leader.id
        mock_cluster.set_partition_leader(name, 0, leader % 3 + 1)
        client.update_cluster()
        assert topic.partitions[0].leader.id == leader % 3 + 1


@pytest.mark.mock
def test_a_closed_client_neither_commits_nor_fetches_group_offsets(mock_cluster):
    """Group offsets go through a handle made for each call: a closed client makes none and
    says it is closed, as its other admin calls do."""
    from pyrdk.protocol import PartitionOffsetCommitRequest, PartitionOffsetFetchRequest
    name = unique_name("mock")
    mock_cluster.create_topic(name, 1)
    client = KafkaClient(hosts=mock_cluster.bootstrap_servers, socket_timeout_ms=3000)
    broker = client.brokers[1]
    client.close()
    for call in (lambda: client.cluster.commit_consumer_group_offsets("g", [PartitionOffsetCommitRequest(
                     name, 0, 3, 0, b"")]),
                 lambda: broker.fetch_consumer_group_offsets("g", [PartitionOffsetFetchRequest(name, 0)])):
        with pytest.raises(KafkaException, match="^the KafkaClient is closed$"):
            call()
