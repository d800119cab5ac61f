"""Consumer lag without joining the group (``Topic.consumer_lag``, ``Cluster.consumer_lag``),
for groups coordinated by the broker and by ZooKeeper, and offsets committed to ZooKeeper."""
import time

import pytest

from pyrdk import KafkaClient
from tests.fix_kafka import commit, fill, make_topic

pytestmark = pytest.mark.kafka

# A ZooKeeper-coordinated member that settles fast.
ZK_MEMBER = {"zookeeper_connection_timeout_ms": 4000, "consumer_timeout_ms": 200}


def test_topic_lag_per_partition(client, topic_name, group_name):
    topic = make_topic(client, topic_name, 3)
    fill(topic, {0: 5, 1: 3, 2: 0})
    commit(topic, group_name, {0: 2, 2: 0})
    lag = topic.consumer_lag(group_name)
    assert sorted(lag) == [0, 1, 2]
    assert (lag[0].committed, lag[0].log_end, lag[0].lag, lag[0].source) == (2, 5, 3, "kafka")
    assert (lag[1].committed, lag[1].log_start, lag[1].lag, lag[1].source) == (None, 0, 3, None), \
        "a partition without a commit lags by everything in it"
    assert (lag[2].committed, lag[2].lag) == (0, 0)
    assert all(row.owner is None for row in lag.values())


def test_cluster_lag_finds_the_topics_of_the_group(client, topic_name, group_name):
    first = make_topic(client, topic_name, 1)
    second = make_topic(client, topic_name + "-b", 2)
    untouched = make_topic(client, topic_name + "-c", 1)
    fill(first, {0: 4})
    fill(second, {0: 1, 1: 2})
    fill(untouched, {0: 1})
    commit(first, group_name, {0: 1})
    commit(second, group_name, {1: 2})
    lag = client.cluster.consumer_lag(group_name)
    assert sorted(lag) == [first.name, second.name]
    assert lag[first.name][0].lag == 3
    assert {pid: row.lag for pid, row in lag[second.name].items()} == {0: 1, 1: 0}
    only = client.cluster.consumer_lag(group_name, topics=[second.name])
    assert sorted(only) == [second.name]
    twice = client.cluster.consumer_lag(group_name, topics=[second.name, second.name.decode()])
    assert twice == only, "a topic named twice is read once"


def test_a_group_that_never_committed_lags_by_everything(client, topic_name, group_name):
    topic = make_topic(client, topic_name, 2)
    fill(topic, {0: 2, 1: 1})
    lag = topic.consumer_lag(group_name)
    assert sum(row.lag for row in lag.values()) == 3
    assert client.cluster.consumer_lag(group_name) == {}


@pytest.mark.zookeeper
def test_offsets_committed_to_zookeeper_fill_in_where_kafka_has_none(kafka_hosts, zookeeper_chroot,
                                                                     topic_name, group_name):
    """An old fleet's offsets under /consumers/<group>/offsets/<topic>/<partition>."""
    from kazoo.client import KazooClient
    with KafkaClient(hosts=kafka_hosts, zookeeper_hosts=zookeeper_chroot) as client:
        topic = make_topic(client, topic_name, 3)
        fill(topic, {0: 6, 1: 6, 2: 6})
        commit(topic, group_name, {0: 5})
        zk = KazooClient(zookeeper_chroot, timeout=10)
        zk.start(timeout=30)
        try:
            base = "/consumers/%s/offsets/%s" % (group_name.decode(), topic_name)
            zk.create(base + "/0", b"1", makepath=True)
            zk.create(base + "/1", b"4", makepath=True)
        finally:
            zk.stop()
            zk.close()
        lag = topic.consumer_lag(group_name)
        assert (lag[0].committed, lag[0].source) == (5, "kafka"), "the broker's offset wins"
        assert (lag[1].committed, lag[1].lag, lag[1].source) == (4, 2, "zookeeper")
        assert (lag[2].committed, lag[2].lag) == (None, 6)
        assert sorted(client.cluster.consumer_lag(group_name)) == [topic.name]
    with KafkaClient(hosts=kafka_hosts) as without_zookeeper:
        assert without_zookeeper.topics[topic_name].consumer_lag(group_name)[1].committed is None


@pytest.mark.zookeeper
def test_lag_of_a_running_zookeeper_group_names_the_owners(kafka_hosts, zookeeper_chroot, topic_name,
                                                           group_name):
    with KafkaClient(hosts=kafka_hosts, zookeeper_hosts=zookeeper_chroot) as client:
        topic = make_topic(client, topic_name, 2)
        fill(topic, {0: 3, 1: 3})
        consumer = topic.get_balanced_consumer(group_name, **ZK_MEMBER)
        try:
            deadline = time.monotonic() + 60
            while sorted(consumer.partitions) != [0, 1]:
                assert time.monotonic() < deadline, "the member did not get both partitions in 60 s"
                consumer.consume(block=False)
            message = consumer.consume()
            consumer.commit_offsets()
            lag = topic.consumer_lag(group_name)
            me = consumer.consumer_id.decode()
        finally:
            consumer.stop()
    assert {row.owner for row in lag.values()} == {me}
    assert lag[message.partition_id].committed == message.offset + 1
    assert sum(row.lag for row in lag.values()) == 5


def test_the_lag_function_takes_a_list_of_topics_not_one_name(client, topic_name, group_name):
    """``pyrdk.lag.consumer_lag(cluster, group, "qz")`` refuses one name, as
    ``Cluster.consumer_lag`` does, rather than reading the lag of the topics "q" and "z"."""
    from pyrdk.lag import consumer_lag
    topic = make_topic(client, topic_name, 1)
    fill(topic, {0: 2})
    commit(topic, group_name, {0: 1})
    for topics in (topic_name, topic_name.encode()):
        with pytest.raises(TypeError, match="consumer_lag takes a list of topic names, not one"):
            consumer_lag(client.cluster, group_name, topics)
    with pytest.raises(TypeError, match="topic name must be bytes or str, not int"):
        consumer_lag(client.cluster, group_name, [5])
    with pytest.raises(TypeError, match="a pyrdk Cluster \\(client.cluster\\)"):
        consumer_lag(client, group_name, [topic_name])
    lag = consumer_lag(client.cluster, group_name, [topic_name.encode(), topic])
    assert list(lag) == [topic.name] and (lag[topic.name][0].committed, lag[topic.name][0].lag) == (1, 1)


def test_lag_of_an_unknown_topic_creates_no_topic(client, topic_name, group_name):
    from pyrdk.exceptions import UnknownTopicOrPartition
    with pytest.raises(UnknownTopicOrPartition, match="unknown topic"):
        client.cluster.consumer_lag(group_name, topics=[topic_name])
    assert topic_name.encode() not in client.cluster.list_topics(), "a lag is a read: it creates no topic"


@pytest.mark.zookeeper
def test_offsets_in_zookeeper_of_a_topic_gone_since_are_left_out(kafka_hosts, zookeeper_chroot, topic_name,
                                                                 group_name):
    """An old fleet's offsets outlive its topics: the lag skips those, and creates none."""
    from kazoo.client import KazooClient
    gone = topic_name + "-gone"
    zk = KazooClient(zookeeper_chroot, timeout=10)
    zk.start(timeout=30)
    try:
        zk.create("/consumers/%s/offsets/%s/0" % (group_name.decode(), gone), b"7", makepath=True)
        zk.create("/consumers/%s/offsets/%s/0" % (group_name.decode(), topic_name), b"1", makepath=True)
    finally:
        zk.stop()
        zk.close()
    with KafkaClient(hosts=kafka_hosts, zookeeper_hosts=zookeeper_chroot) as client:
        topic = make_topic(client, topic_name, 1)
        fill(topic, {0: 3})
        lag = client.cluster.consumer_lag(group_name)
        assert sorted(lag) == [topic.name]
        assert lag[topic.name][0].lag == 2
        assert gone.encode() not in client.cluster.list_topics(), "a lag is a read: it creates no topic"


def test_lag_reads_the_partitions_a_topic_has_now_not_those_the_client_knew(client, kafka_hosts, topic_name,
                                                                             group_name):
    """A lag watched for a while (``pyrdk lag --watch``) through one client: a topic deleted
    since is unknown, and one made again with more partitions is read with all of them (the
    client's known topics left out the partitions added, and the offsets committed there)."""
    from pyrdk.exceptions import UnknownTopicOrPartition
    fill(make_topic(client, topic_name, 1), {0: 1})
    assert sorted(client.cluster.consumer_lag(group_name, [topic_name])[topic_name.encode()]) == [0]
    with KafkaClient(hosts=kafka_hosts) as admin:
        admin.cluster.delete_topics([topic_name])
        with pytest.raises(UnknownTopicOrPartition, match="unknown topic"):
            client.cluster.consumer_lag(group_name, [topic_name])
        deadline = time.monotonic() + 60  # Kafka deletes a topic in the background
        while True:
            try:
                topic = make_topic(admin, topic_name, 3)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        fill(topic, {0: 1, 1: 2, 2: 3})
        commit(topic, group_name, {2: 1})
    lag = client.cluster.consumer_lag(group_name)[topic_name.encode()]
    assert sorted(lag) == [0, 1, 2]
    assert [(lag[p].committed, lag[p].lag) for p in (0, 1, 2)] == [(None, 1), (None, 2), (1, 2)]
