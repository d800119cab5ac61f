"""pyrdk.protocol: pykafka's request classes and Message, with pykafka's constructors."""
import datetime
import pickle

import pytest

from pyrdk import common, protocol
from pyrdk.protocol import (CreateTopicRequest, DeleteTopicsRequest, Message, PartitionOffsetCommitRequest,
                            PartitionOffsetFetchRequest)


def test_request_classes_have_pykafkas_fields():
    assert CreateTopicRequest._fields == ("topic_name", "num_partitions", "replication_factor",
                                          "replica_assignment", "config_entries")
    assert PartitionOffsetCommitRequest._fields == ("topic_name", "partition_id", "offset", "timestamp",
                                                    "metadata")
    assert PartitionOffsetFetchRequest(b"t", 3) == (b"t", 3)
    with pytest.raises(TypeError):
        CreateTopicRequest(b"t", 1, 1)  # pykafka requires all five
    req = DeleteTopicsRequest([b"a"], timeout=5)
    assert (req.topics, req.timeout) == ([b"a"], 5)
    assert protocol.CreateTopicsRequest([]).timeout == 0


def test_message_has_pykafkas_constructor_and_attributes():
    m = Message(b"v", b"k", common.CompressionType.GZIP, 7, 2, 1)
    assert (m.value, m.partition_key, m.compression_type, m.offset, m.partition_id, m.produce_attempt) == (
        b"v", b"k", common.CompressionType.GZIP, 7, 2, 1)
    assert (m.protocol_version, m.timestamp, m.partition, m.delivery_report_q) == (0, None, None, None)
    assert Message(b"v", timestamp=datetime.datetime(1970, 1, 1, 0, 0, 1)).timestamp == 1000  # naive: UTC
    aware = datetime.datetime(1970, 1, 1, 1, 0, 1, tzinfo=datetime.timezone(datetime.timedelta(hours=1)))
    assert Message(b"v", timestamp=aware).timestamp == 1000
    assert Message(b"v", timestamp=1500.7).timestamp == 1500  # ms as a float: the int field takes its whole ms
    assert Message(b"v", protocol_version=1).timestamp > 0  # a v1 message without a time is made now
    with pytest.raises(ValueError, match="protocol_version must be 0 or 1"):
        Message(b"v", protocol_version=2)
    with pytest.raises(TypeError, match="timestamp must be"):
        Message(b"v", timestamp="yesterday")


@pytest.mark.parametrize("protocol_number", range(pickle.HIGHEST_PROTOCOL + 1))
def test_a_message_made_with_pykafkas_constructor_pickles(protocol_number):
    m = Message(b"v", b"k", common.CompressionType.GZIP, 7, 2, 1, protocol_version=1, timestamp=1234)
    copy = pickle.loads(pickle.dumps(m, protocol_number))
    assert type(copy) is Message
    assert (copy.value, copy.partition_key, copy.compression_type, copy.offset, copy.partition_id,
            copy.produce_attempt, copy.protocol_version, copy.timestamp) == (
        b"v", b"k", common.CompressionType.GZIP, 7, 2, 1, 1, 1234)


def test_every_pyrdk_message_is_a_protocol_message():
    assert isinstance(common.Message(b"x"), Message) and issubclass(common.Message, Message)
    assert isinstance(Message(b"x"), common.Message)
    assert not isinstance(b"x", Message)


def test_what_pyrdk_has_not_is_named():
    with pytest.raises(AttributeError, match="pyrdk.protocol has no FetchRequest: librdkafka speaks"):
        protocol.FetchRequest


@pytest.mark.kafka
def test_consumed_messages_are_protocol_messages(topic):
    with topic.get_sync_producer() as producer:
        produced = producer.produce(b"v")
    consumer = topic.get_simple_consumer(consumer_timeout_ms=3000)
    messages = list(consumer)
    consumer.stop()
    assert isinstance(produced, Message) and [isinstance(m, Message) for m in messages] == [True]
