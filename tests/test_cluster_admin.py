"""Cluster administration beyond topics: consumer groups and their offsets, configs,
partitions and records, on the session broker (Tansu's gaps marked with ``tansu_gap``)."""
import pytest

from pyrdk import KafkaClient
from pyrdk.exceptions import GroupIdNotFoundError, KafkaException, NonEmptyGroupError
from tests.fix_kafka import commit, make_topic, running_member, tansu_gap, unique_name

pytestmark = pytest.mark.kafka

def test_group_offsets_are_listed_and_altered_while_the_group_is_stopped(client, topic, group_name):
    commit(topic, group_name, {0: 5, 1: 7})
    name = topic.name.decode()
    assert client.cluster.list_consumer_group_offsets(group_name) == {(name, 0): 5, (name, 1): 7}
    assert client.cluster.list_consumer_group_offsets(group_name, [(name, 1), (name, 2)]) == \
        {(name, 1): 7, (name, 2): -1001}
    client.cluster.alter_consumer_group_offsets(group_name, {(name, 0): 1, (name, 3): 2})
    assert client.cluster.list_consumer_group_offsets(group_name) == {(name, 0): 1, (name, 1): 7, (name, 3): 2}
    assert group_name.decode() in {g.group_id for g in client.cluster.list_consumer_groups()}
    description = client.cluster.describe_consumer_groups([group_name])[group_name.decode()]
    assert description.members == [] and description.state == "Empty"


def test_offsets_of_a_running_group_are_not_altered(client, topic, group_name):
    commit(topic, group_name, {0: 3})
    consumer = running_member(topic, group_name)
    try:
        with pytest.raises(NonEmptyGroupError) as info:
            client.cluster.alter_consumer_group_offsets(group_name, {(topic.name, 0): 0})
        assert "stop its members" in str(info.value)
    finally:
        consumer.stop()
    assert client.cluster.list_consumer_group_offsets(group_name)[(topic.name.decode(), 0)] == 3


@tansu_gap("DescribeGroups answers no members")
def test_a_running_group_is_described_with_its_members(client, topic, group_name):
    consumer = running_member(topic, group_name)
    try:
        member_id = consumer.member_id
        description = client.cluster.describe_consumer_groups([group_name])[group_name.decode()]
    finally:
        consumer.stop()
    assert description.state == "Stable"
    assert [m.member_id for m in description.members] == [member_id]
    assert sorted(p for _, p in description.members[0].assignment) == sorted(topic.partitions)


def test_delete_groups_forgets_their_offsets(client, topic, group_name):
    commit(topic, group_name, {0: 4})
    client.cluster.delete_groups([group_name])
    assert client.cluster.list_consumer_group_offsets(group_name) == {}
    assert group_name.decode() not in {g.group_id for g in client.cluster.list_consumer_groups()}


def test_an_empty_group_id_is_refused_before_anything_changes(client, topic, group_name):
    """No group is named "" (Tansu's DeleteGroups of "" deletes every group)."""
    commit(topic, group_name, {0: 2})
    with pytest.raises(ValueError, match="empty"):
        client.cluster.delete_groups([group_name, ""])
    with pytest.raises(ValueError, match="empty"):
        client.cluster.alter_consumer_group_offsets(b"", {(topic.name, 0): 1})
    assert client.cluster.list_consumer_group_offsets(group_name) == {(topic.name.decode(), 0): 2}


@pytest.mark.mock
def test_an_empty_group_id_is_refused_at_once_by_the_group_reads_too(mock_cluster):
    """The reads of one group name the empty id at once: librdkafka's mock cluster leaves them
    waiting socket_timeout_ms for a coordinator of "", then says only "Timed out"."""
    from pyrdk.protocol import PartitionOffsetCommitRequest, PartitionOffsetFetchRequest
    mock_cluster.create_topic("t", 1)
    with KafkaClient(hosts=mock_cluster.bootstrap_servers, socket_timeout_ms=3000) as client:
        cluster = client.cluster
        for call in (lambda: cluster.get_group_coordinator(""),
                     lambda: cluster.describe_consumer_groups(["g", b""]),
                     lambda: cluster.list_consumer_group_offsets(""),
                     lambda: cluster.consumer_lag(b""),
                     lambda: client.topics["t"].consumer_lag(""),
                     lambda: cluster.fetch_consumer_group_offsets("", [PartitionOffsetFetchRequest("t", 0)]),
                     lambda: cluster.commit_consumer_group_offsets(
                         "", [PartitionOffsetCommitRequest("t", 0, 1, 0, b"")])):
            with pytest.raises(ValueError, match="is empty: name the consumer group"):  # not a timeout
                call()


@tansu_gap("deleting a group that does not exist succeeds")
def test_deleting_an_unknown_group_raises(client):
    try:
        client.cluster.delete_groups([unique_name("nosuch")])
    except GroupIdNotFoundError:
        return
    pytest.fail("DeleteGroups of an unknown group did not raise GroupIdNotFoundError")


def test_group_calls_take_lists(client, group_name):
    with pytest.raises(TypeError, match="list"):
        client.cluster.delete_groups(group_name)
    with pytest.raises(TypeError, match="list"):
        client.cluster.describe_consumer_groups("g")
    for one in (group_name, group_name.decode()):  # not groups "g", "r", "o", ... one per character
        with pytest.raises(TypeError, match=r"describe_groups takes a list of group ids, not one: use \["):
            client.cluster.describe_groups(one)
    with pytest.raises(TypeError, match="offset"):
        client.cluster.alter_consumer_group_offsets(group_name, {("t", 0): -5})


@pytest.mark.parametrize("call, match", [
    (lambda c, t, g: c.list_consumer_group_offsets(g, [(t, "0")]), r"the partition of topic '.*' must be an int"),
    (lambda c, t, g: c.list_consumer_group_offsets(g, [(t, 0, 1)]), r"takes \(topic, partition\) pairs, not"),
    (lambda c, t, g: c.alter_consumer_group_offsets(g, {(t, "0"): 1}), "the partition of topic"),
    (lambda c, t, g: c.alter_consumer_group_offsets(g, [(t, 0, 1)]), r"takes a dict \{\(topic, partition\): offset\}"),
    (lambda c, t, g: c.delete_records({(t, "0"): 1}), "the partition of topic"),
    (lambda c, t, g: c.delete_records({t: 1}), r"takes a dict with \(topic, partition\) keys, not"),
    (lambda c, t, g: c.delete_records([(t, 0, 1)]), r"takes a dict \{\(topic, partition\): offset\}"),
    (lambda c, t, g: c.create_partitions([(t,)]), r"takes \(topic, total\) pairs, not"),
    (lambda c, t, g: c.create_partitions(t), r"pairs, not one: use \[\('.*', total\)\]"),
    (lambda c, t, g: c.create_partitions([(t, 8)], timeout="10"), r"timeout \(ms; 0 for .*\) must be an int"),
    (lambda c, t, g: c.delete_topics([t], timeout=-5), r"timeout .* must be an int >= 0"),
    (lambda c, t, g: c.create_topics([(t + "-new", 1, 1)], timeout=1 << 40), r"timeout .* <= 3600000"),
])
def test_malformed_arguments_are_named_and_change_nothing(client, topic, group_name, call, match):
    with pytest.raises(TypeError, match=match):
        call(client.cluster, topic.name.decode(), group_name)
    client.update_cluster()
    assert topic.name in client.topics and len(topic.partitions) == 4
    assert topic.name + b"-new" not in client.cluster.list_topics()
    assert client.cluster.list_consumer_group_offsets(group_name) == {}


def test_list_topics_shows_internal_ones_on_request(client, topic):
    internal = "__" + unique_name("internal")
    client.cluster.create_topics([(internal, 1, 1)])
    listed = client.cluster.list_topics()
    assert topic.name in listed and internal.encode() not in listed
    assert internal.encode() in client.cluster.list_topics(include_internal=True)


def test_topic_configs_are_altered_incrementally(client, topic):
    client.cluster.alter_configs({"retention.ms": 3600000}, topic=topic.name)
    client.cluster.alter_configs({"cleanup.policy": "compact"}, topic=topic)
    configs = client.cluster.describe_configs(topic=topic.name)
    assert configs["retention.ms"].value == "3600000", "the earlier change was kept"
    assert configs["cleanup.policy"].value == "compact"
    client.cluster.alter_configs({"retention.ms": None}, topic=topic.name)
    configs = client.cluster.describe_configs(topic=topic.name)
    assert "retention.ms" not in configs or configs["retention.ms"].value != "3600000"
    assert configs["cleanup.policy"].value == "compact"


def test_config_values_are_written_as_kafka_reads_them(client, topic_name):
    client.cluster.create_topics([(topic_name, 1, 1, {"cleanup.policy": ["compact", "delete"],
                                                      "unclean.leader.election.enable": False})])
    configs = client.cluster.describe_configs(topic=topic_name)
    assert configs["cleanup.policy"].value == "compact,delete"  # not "['compact', 'delete']"
    assert configs["unclean.leader.election.enable"].value == "false"  # not "False"
    client.cluster.alter_configs({"cleanup.policy": ("delete",), "unclean.leader.election.enable": True},
                                 topic=topic_name)
    configs = client.cluster.describe_configs(topic=topic_name)
    assert configs["cleanup.policy"].value == "delete"
    assert configs["unclean.leader.election.enable"].value == "true"
    for value in ({"a": 1}, object()):
        with pytest.raises(TypeError, match="the value of config 'retention.ms' must be"):
            client.cluster.alter_configs({"retention.ms": value}, topic=topic_name)
    with pytest.raises(TypeError, match="the value of config 'retention.ms' must be"):
        client.cluster.create_topics([(topic_name + "-none", 1, 1, {"retention.ms": None})])
    assert (topic_name + "-none").encode() not in client.cluster.list_topics()


def test_config_calls_name_one_resource(client, topic):
    with pytest.raises(TypeError, match="exactly one"):
        client.cluster.describe_configs()
    with pytest.raises(TypeError, match="exactly one"):
        client.cluster.describe_configs(topic=topic.name, broker=0)
    with pytest.raises(TypeError, match="non-empty dict"):
        client.cluster.alter_configs({}, topic=topic.name)


@pytest.fixture
def quick_client(kafka_hosts):
    """A client with a short request timeout, for calls the broker may leave unanswered."""
    c = KafkaClient(hosts=kafka_hosts, socket_timeout_ms=3000)
    yield c
    c.close()


def test_configs_of_a_broker_the_cluster_lacks_are_refused_at_once(quick_client):
    unknown = max(quick_client.brokers) + 1000
    for call in (lambda: quick_client.cluster.describe_configs(broker=unknown),
                 lambda: quick_client.cluster.alter_configs({"log.retention.hours": "1"}, broker=unknown)):
        with pytest.raises(ValueError, match="broker=%d: the cluster has no such broker \\(its brokers: %d" %
                           (unknown, min(quick_client.brokers))):
            call()


@tansu_gap("DescribeConfigs of a broker is not answered")
def test_broker_configs_are_described(quick_client):
    broker_id = sorted(quick_client.brokers)[0]
    try:
        configs = quick_client.cluster.describe_configs(broker=broker_id)
    except KafkaException as exc:
        pytest.fail("DescribeConfigs of broker %d failed: %s" % (broker_id, exc))
    assert "log.retention.hours" in configs or "num.partitions" in configs


@tansu_gap("CreatePartitions is not supported")
def test_create_partitions_grows_a_topic(quick_client, topic_name):
    make_topic(quick_client, topic_name, 2)
    try:
        quick_client.cluster.create_partitions([(topic_name, 3)])
    except KafkaException as exc:
        pytest.fail("CreatePartitions failed: %s" % exc)
    assert sorted(quick_client.topics[topic_name].partitions) == [0, 1, 2]


def test_a_partition_named_twice_with_bytes_and_str_is_refused_by_name(client, topic, group_name):
    """b"t" and "t" are one topic: the partition is given twice, which librdkafka refuses
    without naming it; nothing is written. Where naming one twice means it once (a read, a
    deletion), it is taken once."""
    name = topic.name.decode()
    for call in (lambda offsets: client.cluster.delete_records(offsets),
                 lambda offsets: client.cluster.alter_consumer_group_offsets(group_name, offsets)):
        with pytest.raises(ValueError, match="partition 1 of topic %s is given twice" % name):
            call({(topic.name, 1): 1, (name, 1): 2, (name, 0): 0})
    assert topic.partitions[1].earliest_available_offset() == 0
    assert client.cluster.list_consumer_group_offsets(group_name) == {}
    assert client.cluster.list_consumer_group_offsets(group_name, [(topic.name, 1), (name, 1)]) == {(name, 1): -1001}
    with pytest.raises(ValueError, match="topic %s-new is requested twice" % name):
        client.cluster.create_topics([(name + "-new", 1, 1), ((name + "-new").encode(), 2, 1)])
    with pytest.raises(ValueError, match="topic %s is given twice" % name):
        client.cluster.create_partitions([(topic.name, 3), (name, 3)])
    client.cluster.delete_topics([topic.name, name])  # once
    assert name.encode() not in client.cluster.list_topics()


@tansu_gap("DeleteRecords closes the connection")
def test_delete_records_moves_the_log_start(quick_client, topic_name):
    topic = make_topic(quick_client, topic_name, 1)
    with topic.get_sync_producer() as producer:
        for i in range(5):
            producer.produce(b"%d" % i)
    try:
        starts = quick_client.cluster.delete_records({(topic_name, 0): 3})
    except KafkaException as exc:
        pytest.fail("DeleteRecords failed: %s" % exc)
    assert starts == {(topic_name, 0): 3}
    assert topic.partitions[0].earliest_available_offset() == 3
