"""rd.mock: librdkafka's mock cluster (``rd_kafka_mock_*``) and the faults it injects."""
import uuid

import pytest

from pyrdk.exceptions import KafkaException, KafkaTimeoutError, MessageSizeTooLarge, RequestTimedOut
from pyrdk.rd.mock import ApiKey, MockCluster
from tests.rd import util

pytestmark = pytest.mark.mock


def _topic(mock_cluster, partitions=1, replication=1):
    name = "mock-" + uuid.uuid4().hex[:10]
    mock_cluster.create_topic(name, partitions, replication)
    return name


def _producer(handles, mock_cluster, reports, **config):
    config = dict({"bootstrap.servers": mock_cluster.bootstrap_servers, "linger.ms": 0}, **config)
    return handles("producer", config, on_delivery=lambda *report: reports.append(report))


def _leader(handle, topic, partition=0):
    return handle.metadata(topic, all_topics=False).topics[topic].partitions[partition].leader


def test_bootstrap_servers_lists_every_broker(mock_cluster):
    servers = mock_cluster.bootstrap_servers.split(",")
    assert len(servers) == mock_cluster.num_brokers == 3
    for server in servers:
        host, port = server.rsplit(":", 1)
        assert host == "127.0.0.1" and int(port) > 0


def test_api_keys_are_the_protocols():
    assert (ApiKey.Produce, ApiKey.Fetch, ApiKey.ListOffsets, ApiKey.Metadata) == (0, 1, 2, 3)
    assert (ApiKey.OffsetCommit, ApiKey.FindCoordinator, ApiKey.JoinGroup) == (8, 10, 11)
    assert (ApiKey.ApiVersions, ApiKey.InitProducerId) == (18, 22)


def test_create_topic_shows_in_metadata(mock_cluster, handles):
    topic = _topic(mock_cluster, partitions=5, replication=3)
    producer = handles("producer", {"bootstrap.servers": mock_cluster.bootstrap_servers})
    parts = producer.metadata(topic, all_topics=False).topics[topic].partitions
    assert len(parts) == 5
    assert all(sorted(p.replicas) == [1, 2, 3] for p in parts)


def test_create_topic_twice_is_an_error(mock_cluster):
    topic = _topic(mock_cluster)
    with pytest.raises(KafkaException, match="mock topic create"):
        mock_cluster.create_topic(topic, 1, 1)


def test_a_closed_mock_cluster_says_so():
    cluster = MockCluster(1)
    cluster.close()
    for call in (lambda: cluster.bootstrap_servers, lambda: cluster.create_topic("t"),
                 lambda: cluster.push_request_errors(ApiKey.Produce, 6), lambda: cluster.broker_down(1),
                 lambda: cluster.set_topic_error("t", 3)):
        with pytest.raises(KafkaException, match="the mock cluster is closed"):
            call()


@pytest.mark.parametrize("num_brokers", [0, -1, "3"])
def test_a_cluster_of_no_brokers_is_refused(num_brokers):
    with pytest.raises(TypeError, match="num_brokers must be an int >= 1"):
        MockCluster(num_brokers)


@pytest.mark.parametrize("counts, refused", [((0, 1), "num_partitions"), ((1, 0), "replication_factor"),
                                             ((-1, 1), "num_partitions"), ((1, -1), "replication_factor")])
def test_a_topic_of_no_partitions_or_replicas_is_refused(mock_cluster, counts, refused):
    """A negative count made librdkafka abort the process (``rd_calloc``); 0 made a topic
    without partitions or without a leader."""
    with pytest.raises(TypeError, match="%s must be an int >= 1" % refused):
        mock_cluster.create_topic("refused", *counts)
    mock_cluster.create_topic("refused", 1, 1)  # nothing was created


def test_context_manager_and_close_twice():
    with MockCluster(1) as cluster:
        assert len(cluster.bootstrap_servers.split(",")) == 1
    cluster.close()


def test_produce_errors_reach_the_delivery_report(mock_cluster, handles):
    """Two injected MSG_SIZE_TOO_LARGE answers fail two messages (no retries); the third goes
    through."""
    topic = _topic(mock_cluster)
    reports = []
    producer = _producer(handles, mock_cluster, reports, **{"message.send.max.retries": 0})
    producer.metadata(topic)
    mock_cluster.push_request_errors(ApiKey.Produce, 10, 10)
    for msg_id in (1, 2, 3):
        producer.produce(topic, 0, b"m%d" % msg_id, None, 0, None, msg_id)
        assert producer.flush(util.WAIT_S * 1000)
    by_id = {r[0]: r for r in reports}
    assert sorted(by_id) == [1, 2, 3]
    for msg_id in (1, 2):
        exc = by_id[msg_id][1]
        assert isinstance(exc, MessageSizeTooLarge)
        assert (exc.code, exc.name) == (10, "MSG_SIZE_TOO_LARGE")
        assert by_id[msg_id][3] < 0
    assert by_id[3][1] is None and by_id[3][3] == 0


def test_retriable_produce_error_without_retries_fails(mock_cluster, handles):
    topic = _topic(mock_cluster)
    reports = []
    producer = _producer(handles, mock_cluster, reports, **{"message.send.max.retries": 0})
    producer.metadata(topic)
    mock_cluster.push_request_errors(ApiKey.Produce, 7)  # REQUEST_TIMED_OUT
    util.produce(producer, topic, [(0, b"v", None, 0, None)])
    (_msg_id, exc, *_), = reports
    assert isinstance(exc, RequestTimedOut)
    assert exc.retriable


def test_retriable_produce_errors_are_retried(mock_cluster, handles):
    topic = _topic(mock_cluster)
    reports = []
    producer = _producer(handles, mock_cluster, reports,
                         **{"message.send.max.retries": 5, "retry.backoff.ms": 10})
    producer.metadata(topic)
    mock_cluster.push_request_errors(ApiKey.Produce, 7, 7)
    util.produce(producer, topic, [(0, b"v", None, 0, None)])
    (_msg_id, exc, _partition, offset, _ts), = reports
    assert exc is None and offset == 0


def test_clear_request_errors(mock_cluster, handles):
    topic = _topic(mock_cluster)
    reports = []
    producer = _producer(handles, mock_cluster, reports, **{"message.send.max.retries": 0})
    producer.metadata(topic)
    mock_cluster.push_request_errors(ApiKey.Produce, 10, 10, 10)
    mock_cluster.clear_request_errors(ApiKey.Produce)
    util.produce(producer, topic, [(0, b"v", None, 0, None)])
    assert [r[1] for r in reports] == [None]


def test_broker_down_then_up(mock_cluster, handles):
    topic = _topic(mock_cluster)
    reports = []
    producer = _producer(handles, mock_cluster, reports)
    leader = _leader(producer, topic)
    mock_cluster.broker_down(leader)
    producer.produce(topic, 0, b"while down", None, 0, None, 1)
    assert producer.flush(1000) is False  # undeliverable while the leader is down
    assert reports == []
    util.wait_until(lambda: producer.last_error is not None, "the connection error",
                    step=lambda: producer.poll(100))
    assert "Connect" in str(producer.last_error) or "Disconnected" in str(producer.last_error)
    mock_cluster.broker_up(leader)
    assert producer.flush(util.WAIT_S * 1000)
    (msg_id, exc, _partition, offset, _ts), = reports
    assert (msg_id, exc, offset) == (1, None, 0)


def test_all_brokers_down_times_out_a_metadata_request(mock_cluster, handles):
    producer = handles("producer", {"bootstrap.servers": mock_cluster.bootstrap_servers})
    producer.metadata()
    mock_cluster.broker_down(-1)
    with pytest.raises(KafkaException) as info:
        producer.metadata(timeout_ms=1000)
    assert info.value.retriable
    mock_cluster.broker_up(-1)
    util.wait_until(lambda: _metadata_ok(producer), "metadata after the brokers came back")


def _metadata_ok(handle):
    try:
        handle.metadata(timeout_ms=1000)
    except KafkaException:
        return False
    return True


def test_set_partition_leader(mock_cluster, handles):
    topic = _topic(mock_cluster, partitions=2, replication=3)
    reports = []
    producer = _producer(handles, mock_cluster, reports)
    for broker_id in (1, 2, 3):
        mock_cluster.set_partition_leader(topic, 0, broker_id)
        assert _leader(producer, topic) == broker_id
        util.produce(producer, topic, [(0, b"to %d" % broker_id, None, 0, None)])
    assert [(r[1], r[3]) for r in reports] == [(None, 0), (None, 1), (None, 2)]
    mock_cluster.set_partition_leader(topic, 1, -1)
    assert _leader(producer, topic, 1) == -1


def test_broker_rtt_beyond_the_timeout_times_out(mock_cluster, handles):
    producer = handles("producer", {"bootstrap.servers": mock_cluster.bootstrap_servers})
    producer.metadata()
    for broker_id in (1, 2, 3):
        mock_cluster.set_broker_rtt(broker_id, 5000)
    with pytest.raises(KafkaException) as info:
        producer.metadata(timeout_ms=300)
    # Usually _TIMED_OUT; _TRANSPORT when librdkafka gives up on the slow connection first.
    assert isinstance(info.value, KafkaTimeoutError) or info.value.name == "_TRANSPORT"
    for broker_id in (1, 2, 3):
        mock_cluster.set_broker_rtt(broker_id, 0)
    util.wait_until(lambda: _metadata_ok(producer), "metadata once the RTT is back to 0")


def test_topic_error_in_metadata(mock_cluster, handles):
    topic = _topic(mock_cluster)
    producer = handles("producer", {"bootstrap.servers": mock_cluster.bootstrap_servers})
    mock_cluster.set_topic_error(topic, 5)  # LEADER_NOT_AVAILABLE
    assert producer.metadata(topic, all_topics=False).topics[topic].error == 5
    mock_cluster.set_topic_error(topic, 0)
    assert producer.metadata(topic, all_topics=False).topics[topic].error == 0


def test_group_coordinator_can_be_moved(mock_cluster, handles):
    topic = _topic(mock_cluster)
    group = "grp-" + topic
    mock_cluster.set_coordinator("group", group, 2)
    events = []
    consumer = handles("consumer", {"bootstrap.servers": mock_cluster.bootstrap_servers, "group.id": group},
                       on_rebalance=lambda kind, tps: events.append(kind))
    consumer.subscribe([topic])
    util.wait_until(lambda: events, "the assignment", step=lambda: consumer.consume_batch(10, 100))
    assert events[0] == "assign"
