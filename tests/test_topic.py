"""Topic and Partition: partitions, leaders, offset queries, factories."""
import copy
import datetime
import pickle

import pytest

from pyrdk import OffsetType, Partition
from pyrdk.producer import Producer
from pyrdk.simpleconsumer import SimpleConsumer
from tests.fix_kafka import tansu_gap

pytestmark = pytest.mark.kafka


def _produce_one_by_one(topic, count, partition_id):
    """Single-message batches: Tansu reports the high watermark right only then."""
    with topic.get_sync_producer(partitioner=lambda parts, key: topic.partitions[partition_id]) as p:
        for i in range(count):
            p.produce(b"m%d" % i)


def test_partitions_have_ids_leaders_and_topic(client, topic):
    assert sorted(topic.partitions) == [0, 1, 2, 3]
    for pid, partition in topic.partitions.items():
        assert isinstance(partition, Partition)
        assert partition.id == pid
        assert partition.topic is topic
        assert partition.leader in client.brokers.values()
        assert partition.replicas and partition.isr
    assert sorted(topic.partitions.values())[0].id == 0
    with pytest.raises(TypeError, match="not supported between"):
        sorted([0, topic.partitions[1]])


def test_offset_limits_follow_produced_messages(topic):
    assert {p: r.offset for p, r in topic.earliest_available_offsets().items()} == {0: [0], 1: [0], 2: [0], 3: [0]}
    assert {p: r.offset for p, r in topic.latest_available_offsets().items()} == {0: [0], 1: [0], 2: [0], 3: [0]}
    _produce_one_by_one(topic, 5, 2)
    assert topic.latest_available_offsets()[2].offset == [5]
    assert topic.latest_available_offsets()[2].err == 0
    partition = topic.partitions[2]
    assert partition.latest_available_offset() == 5
    assert partition.earliest_available_offset() == 0
    assert partition.fetch_offset_limit(OffsetType.EARLIEST) == [0]  # pykafka's: the list of offsets
    assert partition.fetch_offset_limit(OffsetType.LATEST)[0] == 5


def test_offset_answers_copy_and_pickle_as_pykafkas_namedtuple(topic):
    """pykafka's OffsetPartitionResponse is a namedtuple: a copy, a deep copy or a pickle
    (to hand lag figures to another process) is the same answer."""
    _produce_one_by_one(topic, 3, 1)
    answers = topic.latest_available_offsets()
    assert answers[1] == ([3], 0)
    for remade in (copy.copy(answers), copy.deepcopy(answers), pickle.loads(pickle.dumps(answers))):
        assert remade == answers
        assert (remade[1].offset, remade[1].err) == ([3], 0)
    assert answers[1]._asdict() == {"offset": [3], "err": 0}
    assert answers[1]._replace(err=3) == ([3], 3)


@tansu_gap("ListOffsets latest after a batched produce answers the last batch's base offset + 1, "
           "not the log end")
def test_latest_offset_after_a_batched_produce(topic):
    with topic.get_producer(linger_ms=50, partitioner=lambda parts, key: topic.partitions[1]) as p:
        for i in range(10):
            p.produce(b"m%d" % i)
    assert topic.partitions[1].latest_available_offset() == 10


@tansu_gap("ListOffsets by timestamp answers offset 0 whatever the time")
def test_fetch_offset_limits_by_timestamp(topic):
    _produce_one_by_one(topic, 3, 0)
    future = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
    assert topic.fetch_offset_limits(future)[0].offset == [-1]


def test_a_datetime_is_looked_up_at_its_nearest_ms_as_pykafka_and_written_rounded_down():
    # pykafka's lookups: round((dt - EPOCH).total_seconds() * 1000); its messages: int(...)
    from pyrdk.partition import to_timestamp_ms
    second = 1577836800000  # 2020-01-01T00:00:00Z
    naive = datetime.datetime(2020, 1, 1, 0, 0, 0, 999600)
    aware = datetime.datetime(2020, 1, 1, 5, 0, 0, 999600, tzinfo=datetime.timezone(datetime.timedelta(hours=5)))
    for when in (naive, aware):
        assert to_timestamp_ms(when) == second + 1000
        assert to_timestamp_ms(when, cut=True) == second + 999
    assert to_timestamp_ms(datetime.datetime(2020, 1, 1, 0, 0, 0, 1400)) == second + 1


def test_fetch_offset_limits_rejects_bad_values(topic):
    with pytest.raises(TypeError):
        topic.fetch_offset_limits("latest")
    with pytest.raises(ValueError):
        topic.fetch_offset_limits(-7)
    for partitions in (0, "0", [0, "1"], [True], [-1]):
        with pytest.raises(TypeError, match="partitions must be a list of partition ids"):
            topic.fetch_offset_limits(OffsetType.LATEST, partitions=partitions)
    assert list(topic.fetch_offset_limits(OffsetType.LATEST, partitions=(p for p in [2, 0]))) == [2, 0]


def test_factories_make_producers_and_consumers(topic):
    producer = topic.get_producer(use_rdkafka=True)
    sync = topic.get_sync_producer()
    consumer = topic.get_simple_consumer(consumer_timeout_ms=10, use_rdkafka=False)
    try:
        assert isinstance(producer, Producer) and isinstance(sync, Producer)
        assert sync._sync and not producer._sync
        assert isinstance(consumer, SimpleConsumer)
    finally:
        producer.stop()
        sync.stop()
        consumer.stop()


@pytest.mark.mock
def test_offsets_of_partitions_a_producer_learned_of(mock_cluster, topic_name):
    """A producer's refresh adds partitions to the Topic that the client's own librdkafka
    metadata does not have yet: their offsets are asked for all the same."""
    import time

    from pyrdk import KafkaClient
    mock_cluster.create_topic(topic_name, 2)
    with KafkaClient(hosts=mock_cluster.bootstrap_servers) as client:
        topic = client.topics[topic_name]
        assert sorted(topic.latest_available_offsets()) == [0, 1]
        config = {"topic.metadata.refresh.interval.ms": 200, "allow.auto.create.topics": False}
        with topic.get_producer(rdkafka_config=config):
            mock_cluster.delete_topic(topic_name)  # made anew with more: the mock cannot add partitions
            mock_cluster.create_topic(topic_name, 4)
            deadline = time.monotonic() + 30
            while len(topic.partitions) < 4:
                assert time.monotonic() < deadline, "the producer never saw the new partitions"
                time.sleep(0.05)
        assert {pid: r.offset[0] for pid, r in topic.latest_available_offsets().items()} == {0: 0, 1: 0, 2: 0, 3: 0}


@pytest.mark.mock
def test_a_refresh_during_a_loop_over_the_partitions_leaves_the_loop_alone(mock_cluster, topic_name):
    """Producers and balanced consumers refresh the Topic in their own threads: partitions
    added meanwhile must not break a program's loop over ``topic.partitions``."""
    from pyrdk import KafkaClient
    mock_cluster.create_topic(topic_name, 2)
    with KafkaClient(hosts=mock_cluster.bootstrap_servers) as client:
        topic = client.topics[topic_name]
        first = topic.partitions[0]
        mock_cluster.delete_topic(topic_name)  # made anew with more: the mock cannot add partitions
        mock_cluster.create_topic(topic_name, 4)
        seen = []
        for partition in topic.partitions.values():
            seen.append(partition.id)
            client.update_cluster()
        assert seen == [0, 1] and sorted(topic.partitions) == [0, 1, 2, 3]
        assert topic.partitions[0] is first  # the same Partition objects, renewed


@pytest.mark.mock
@pytest.mark.parametrize("code", [5, 6, 7])  # LEADER_NOT_AVAILABLE, NOT_LEADER_FOR_PARTITION, REQUEST_TIMED_OUT
def test_offsets_are_asked_again_while_a_leader_moves(mock_cluster, topic_name, code):
    """A leader's retriable ListOffsets answer (an election, a leader that moved, a request timed
    out on the broker) is asked again with fresh metadata, as pykafka retried it; one that
    lasts is raised, named, within ``socket_timeout_ms``."""
    import time

    from pyrdk import KafkaClient
    from pyrdk.exceptions import KafkaException
    from pyrdk.rd.errors import err2str
    from pyrdk.rd.mock import ApiKey
    mock_cluster.create_topic(topic_name, 3, 2)
    with KafkaClient(hosts=mock_cluster.bootstrap_servers, socket_timeout_ms=2000) as client:
        topic = client.topics[topic_name]
        mock_cluster.push_request_errors(ApiKey.ListOffsets, code, code)
        assert {pid: r.offset for pid, r in topic.latest_available_offsets().items()} == {0: [0], 1: [0], 2: [0]}
        mock_cluster.push_request_errors(ApiKey.ListOffsets, code)
        assert topic.partitions[1].earliest_available_offset() == 0
        mock_cluster.push_request_errors(ApiKey.ListOffsets, *[code] * 1000)
        start = time.monotonic()
        with pytest.raises(KafkaException, match=err2str(code)):
            topic.latest_available_offsets()
        assert time.monotonic() - start < 5


@pytest.mark.mock
def test_offsets_of_a_partition_without_a_leader_wait_for_its_election(mock_cluster, topic_name):
    """A partition whose leader is being elected (LEADER_NOT_AVAILABLE) gets its offsets once
    it has one, within ``socket_timeout_ms``; without one by then, the error is raised, named."""
    import threading
    import time

    from pyrdk import KafkaClient
    from pyrdk.exceptions import LeaderNotAvailable, OffsetRequestFailedError
    mock_cluster.create_topic(topic_name, 2, 2)
    with KafkaClient(hosts=mock_cluster.bootstrap_servers, socket_timeout_ms=3000) as client:
        topic = client.topics[topic_name]
        mock_cluster.set_partition_leader(topic_name, 0, -1)
        elect = threading.Timer(0.5, mock_cluster.set_partition_leader, (topic_name, 0, 2))
        elect.start()
        try:
            assert topic.partitions[0].latest_available_offset() == 0
        finally:
            elect.join()
        mock_cluster.set_partition_leader(topic_name, 0, -1)
        start = time.monotonic()
        with pytest.raises(OffsetRequestFailedError, match=r"\[0\] failed: .*Leader not available"):
            topic.latest_available_offsets()
        assert time.monotonic() - start > 2.5  # waited for it: socket_timeout_ms
        # The metadata asked again and again while it waits may run out of time at the end
        # (here the brokers become slower than socket_timeout_ms; on a loaded machine the last
        # request may have a millisecond left): the wait ends as without it, not as a timeout.
        slow = threading.Timer(1.0, lambda: [mock_cluster.set_broker_rtt(b, 5000) for b in (1, 2, 3)])
        slow.start()
        try:
            with pytest.raises(LeaderNotAvailable, match=r"no leader of .* \[0\] answered within 3000 ms"):
                topic.partitions[0].latest_available_offset()
        finally:
            slow.join()
            for broker in (1, 2, 3):
                mock_cluster.set_broker_rtt(broker, 0)


@pytest.mark.mock
def test_offsets_follow_a_leader_that_moved(mock_cluster, topic_name):
    """The old leader of a partition that moved answers NOT_LEADER_FOR_PARTITION (or
    FENCED_LEADER_EPOCH): the offsets are asked of the new one, without update_cluster()."""
    from pyrdk import KafkaClient
    mock_cluster.create_topic(topic_name, 3, 3)
    with KafkaClient(hosts=mock_cluster.bootstrap_servers, socket_timeout_ms=3000) as client:
        topic = client.topics[topic_name]
        for broker_id in (1, 2, 3, 1, 2, 3):
            assert sorted(topic.latest_available_offsets()) == [0, 1, 2]
            mock_cluster.set_partition_leader(topic_name, 0, broker_id)
            assert topic.partitions[0].latest_available_offset() == 0
            assert topic.fetch_offset_limits(OffsetType.EARLIEST)[0].offset == [0]


@pytest.mark.mock
def test_partitions_added_by_two_refreshes_at_once_are_made_once(mock_cluster, topic_name, monkeypatch):
    """Two threads refreshing a Topic whose partitions grew (a producer's poller and the
    program's update_cluster()) make one Partition per new id: a Partition the program took
    from one refresh's dict is the one later refreshes update, not one another dict replaced."""
    import threading

    import pyrdk.topic
    from pyrdk import KafkaClient
    made, entered, go = [], threading.Event(), threading.Event()

    class SlowPartition(pyrdk.topic.Partition):
        def __init__(self, *args):
            super().__init__(*args)
            made.append(self)
            if len(made) == 1:  # the first refresh's first new partition: the other refresh runs meanwhile
                entered.set()
                go.wait(10)

    mock_cluster.create_topic(topic_name, 2, 3)
    with KafkaClient(hosts=mock_cluster.bootstrap_servers, socket_timeout_ms=3000) as client:
        topic = client.topics[topic_name]
        mock_cluster.delete_topic(topic_name)  # made anew with more: the mock cannot add partitions
        mock_cluster.create_topic(topic_name, 4, 3)
        monkeypatch.setattr(pyrdk.topic, "Partition", SlowPartition)
        first = threading.Thread(target=client.update_cluster)
        first.start()
        assert entered.wait(10)
        second = threading.Thread(target=client.update_cluster)
        second.start()
        second.join(1)
        taken = topic.partitions.get(3)  # what a program's loop over the partitions holds meanwhile
        go.set()
        first.join()
        second.join()
        partition = topic.partitions[3]
        assert taken is None or taken is partition
        leader = partition.leader.id
        mock_cluster.set_partition_leader(topic_name, 3, leader % 3 + 1)
        client.update_cluster()
        assert partition.leader.id == leader % 3 + 1
