"""rd.admin: ``rd_kafka_CreateTopics``, ``rd_kafka_DeleteTopics``, ``rd_kafka_list_groups`` and
``rd_kafka_DescribeConsumerGroups`` against a real broker."""
import threading
import uuid

import pytest

from pyrdk.exceptions import KafkaException, MessageSizeTooLarge, TopicAlreadyExists
from pyrdk.rd import admin, partitions
from tests.fix_kafka import tansu_gap
from tests.rd import util

pytestmark = pytest.mark.kafka


def _name(prefix):
    return "%s-%s" % (prefix, uuid.uuid4().hex[:10])


@pytest.fixture
def producer(kafka_hosts, handles):
    return handles("producer", {"bootstrap.servers": kafka_hosts})


def test_create_then_delete(producer):
    topic = _name("adm")
    assert admin.create_topics(producer, [(topic, 3, 1, None)]) == {topic: None}
    parts = producer.metadata().topics[topic].partitions
    assert sorted(p.id for p in parts) == [0, 1, 2]
    assert admin.delete_topics(producer, [topic]) == {topic: None}
    util.wait_until(lambda: topic not in producer.metadata().topics, "the topic to disappear")


def test_create_several_at_once(producer):
    names = [_name("many") for _ in range(3)]
    result = admin.create_topics(producer, [(n, i + 1, 1, None) for i, n in enumerate(names)])
    assert result == {n: None for n in names}
    topics = producer.metadata().topics
    assert [len(topics[n].partitions) for n in names] == [1, 2, 3]


def test_create_existing_topic_reports_topic_already_exists(producer):
    topic = _name("dup")
    assert admin.create_topics(producer, [(topic, 1, 1, None)]) == {topic: None}
    result = admin.create_topics(producer, [(topic, 1, 1, None)])
    exc = result[topic]
    assert isinstance(exc, TopicAlreadyExists)
    assert (exc.code, exc.name) == (36, "TOPIC_ALREADY_EXISTS")
    assert str(exc).startswith(topic + ": ")


def test_create_with_config(producer):
    topic = _name("cfg")
    assert admin.create_topics(producer, [(topic, 1, 1, {"retention.ms": 3600000,
                                                          "cleanup.policy": "delete"})]) == {topic: None}


def test_invalid_partition_count_is_refused_locally(producer):
    with pytest.raises(ValueError, match="cannot create topic"):
        admin.create_topics(producer, [(_name("bad"), -5, 1, None)])


def test_delete_unknown_topic_is_reported(producer):
    topic = _name("ghost")
    result = admin.delete_topics(producer, [topic])
    assert isinstance(result[topic], KafkaException)
    assert result[topic].code == 3  # UNKNOWN_TOPIC_OR_PART


@tansu_gap("the topic's max.message.bytes is not enforced")
def test_topic_max_message_bytes_is_enforced(producer, kafka_hosts, handles):
    topic = _name("maxb")
    assert admin.create_topics(producer, [(topic, 1, 1, {"max.message.bytes": 2000})]) == {topic: None}
    reports = []
    sender = handles("producer", {"bootstrap.servers": kafka_hosts, "message.send.max.retries": 0},
                     on_delivery=lambda *report: reports.append(report))
    util.produce(sender, topic, [(0, b"x" * 20000, None, 0, None)])
    (_msg_id, exc, *_), = reports
    assert isinstance(exc, MessageSizeTooLarge)


def _member(kafka_hosts, handles, topic, group):
    """A consumer that is a member of ``group`` (it has committed an offset for ``topic``)."""
    consumer = handles("consumer", {"bootstrap.servers": kafka_hosts, "group.id": group,
                                    "enable.auto.commit": False})
    consumer.assign([(topic, 0, 0)])
    consumer.commit([(topic, 0, 0)])
    return consumer


def test_group_coordinator(producer, kafka_hosts, handles):
    topic = _name("coord")
    assert admin.create_topics(producer, [(topic, 1, 1, None)]) == {topic: None}
    group = _name("grp")
    consumer = _member(kafka_hosts, handles, topic, group)
    coordinator = admin.group_coordinator(consumer, group)
    brokers = {(b.id, b.host, b.port) for b in producer.metadata().brokers}
    assert (coordinator.id, coordinator.host, coordinator.port) in brokers


def test_list_groups_sees_a_group(producer, kafka_hosts, handles):
    topic = _name("lg")
    assert admin.create_topics(producer, [(topic, 1, 1, None)]) == {topic: None}
    group = _name("grp")
    consumer = _member(kafka_hosts, handles, topic, group)
    consumer.subscribe([topic])
    util.wait_until(lambda: group in {g.group_id for g in admin.list_groups(consumer)},
                    "the group to be listed", step=lambda: consumer.consume_batch(10, 100))
    (info,) = admin.list_groups(consumer, group)
    assert info.group_id == group
    assert info.error == 0
    assert info.broker.port > 0
    assert info.protocol_type == "consumer"
    if info.members:
        assert consumer.memberid() in {m.member_id for m in info.members}


def test_list_groups_of_an_unknown_group(producer):
    groups = admin.list_groups(producer, _name("nobody"))
    assert all(g.members == [] for g in groups)


def test_committed_offsets_of_a_group(producer, kafka_hosts, handles):
    topic = _name("cmt")
    assert admin.create_topics(producer, [(topic, 2, 1, None)]) == {topic: None}
    group = _name("grp")
    consumer = _member(kafka_hosts, handles, topic, group)
    consumer.commit([(topic, 0, 7), (topic, 1, 3)])
    other = handles("consumer", {"bootstrap.servers": kafka_hosts, "group.id": group})
    committed = other.committed([(topic, 0), (topic, 1)])
    assert [(tp.partition, tp.offset) for tp in committed] == [(0, 7), (1, 3)]
    assert all(tp.offset != partitions.OFFSET_INVALID for tp in committed)


def test_close_from_another_thread_ends_a_pending_request(producer):
    """DescribeConfigs of a broker the cluster does not have waits for that broker until the
    request times out (10 minutes here): close() ends the wait, rather than waiting for it."""
    outcome = []

    def describe():
        try:
            outcome.append(admin.describe_configs(producer, [("broker", "987654")], timeout_ms=600000))
        except BaseException as exc:
            outcome.append(exc)

    waiting = threading.Thread(target=describe, daemon=True)
    waiting.start()
    util.wait_until(lambda: producer._users > 0, "the request to be waited for")
    closing = threading.Thread(target=producer.close, daemon=True)
    closing.start()
    closing.join(util.WAIT_S)
    waiting.join(util.WAIT_S)
    assert not closing.is_alive() and not waiting.is_alive(), "close() waited for the request to time out"
    assert len(outcome) == 1 and isinstance(outcome[0], KafkaException), outcome
    assert "closed while it waited for describe configs" in str(outcome[0])
