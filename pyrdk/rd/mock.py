"""MockCluster: librdkafka's in-process mock Kafka cluster (``rdkafka_mock.h``).

A test aid for fault injection: N brokers on loopback ports, request-error injection,
brokers down and up, leader moves, round-trip times. It does not support TLS,
CreateTopics, or ListOffsets by timestamp.
"""
import enum

from pyrdk._ffi import ffi, lib, string
from pyrdk.common import check_int
from pyrdk.exceptions import KafkaException
from pyrdk.rd import errors
from pyrdk.rd.handle import Handle


class ApiKey(enum.IntEnum):
    """Kafka protocol request keys, for ``push_request_errors``."""
    Produce = 0
    Fetch = 1
    ListOffsets = 2
    Metadata = 3
    OffsetCommit = 8
    OffsetFetch = 9
    FindCoordinator = 10
    JoinGroup = 11
    Heartbeat = 12
    LeaveGroup = 13
    SyncGroup = 14
    ApiVersions = 18
    InitProducerId = 22
    AddPartitionsToTxn = 24
    AddOffsetsToTxn = 25
    EndTxn = 26
    TxnOffsetCommit = 28


class MockCluster:
    """A mock cluster of ``num_brokers`` brokers (ids 1..N), owned by a private handle."""

    def __init__(self, num_brokers=3):
        check_int("num_brokers", num_brokers, 1)  # librdkafka makes a cluster of none, unreachable
        self._handle = Handle("producer", {"client.id": "pyrdk-mock"})
        with self._handle.use() as rk:
            self._ptr = lib.rd_kafka_mock_cluster_new(rk, num_brokers)
        if self._ptr == ffi.NULL:
            self._handle.close()
            raise RuntimeError("rd_kafka_mock_cluster_new failed")
        # librdkafka aborts if the owning handle goes first, whatever the order of GC.
        self._handle.before_destroy.append(self._destroy)
        self.num_brokers = num_brokers

    def _cluster(self):
        """The ``rd_kafka_mock_cluster_t``; KafkaException once the mock cluster is closed."""
        if self._ptr is None:
            raise KafkaException("the mock cluster is closed")
        return self._ptr

    @property
    def bootstrap_servers(self):
        """``rd_kafka_mock_cluster_bootstraps``: ``host:port,...`` to connect to."""
        return string(lib.rd_kafka_mock_cluster_bootstraps(self._cluster()))

    def create_topic(self, name, num_partitions=1, replication_factor=1):
        """``rd_kafka_mock_topic_create``."""
        # librdkafka aborts the process on a negative count, and makes a topic of no partitions or replicas
        num_partitions = check_int("num_partitions", num_partitions, 1)
        replication_factor = check_int("replication_factor", replication_factor, 1)
        errors.check(lib.rd_kafka_mock_topic_create(self._cluster(), name.encode(), num_partitions,
                                                    replication_factor), "mock topic create")

    def delete_topic(self, name):
        """``rd_kafka_mock_topic_delete`` (librdkafka 2.15.0): later requests naming the topic
        get UNKNOWN_TOPIC_OR_PART; ``create_topic`` makes it anew, with as many partitions as
        it is given (the mock cluster cannot add partitions to a topic)."""
        errors.check(lib.pyrdk_mock_topic_delete(self._cluster(), name.encode()), "mock topic delete")

    def decommission_broker(self, broker_id):
        """``rd_kafka_mock_broker_decommission`` (librdkafka 2.10.0): the broker leaves the
        cluster and its partitions move to the others."""
        errors.check(lib.pyrdk_mock_broker_decommission(self._cluster(), broker_id), "mock broker decommission")

    def push_request_errors(self, api_key, *codes):
        """``rd_kafka_mock_push_request_errors_array``: the next ``len(codes)`` requests of
        ``api_key`` fail with these codes, in order."""
        array = ffi.new("rd_kafka_resp_err_t[]", [int(c) for c in codes])
        lib.rd_kafka_mock_push_request_errors_array(self._cluster(), int(api_key), len(codes), array)

    def push_partition_request_errors(self, topic, partition, api_key, *codes):
        """``rd_kafka_mock_partition_push_request_errors`` (librdkafka 2.15.0): the next
        ``len(codes)`` requests of ``api_key`` (Produce or Fetch) that name this partition
        answer these codes for it, in order; the request's other partitions are not
        affected."""
        for code in codes:
            errors.check(lib.pyrdk_mock_partition_push_request_error(self._cluster(), topic.encode(), partition,
                                                                     int(api_key), int(code)),
                         "mock partition request errors")

    def clear_request_errors(self, api_key):
        """``rd_kafka_mock_clear_request_errors``."""
        lib.rd_kafka_mock_clear_request_errors(self._cluster(), int(api_key))

    def set_topic_error(self, topic, code):
        """``rd_kafka_mock_topic_set_error``: Metadata answers ``code`` for ``topic``."""
        lib.rd_kafka_mock_topic_set_error(self._cluster(), topic.encode(), int(code))

    def set_partition_leader(self, topic, partition, broker_id):
        """``rd_kafka_mock_partition_set_leader`` (-1: no leader)."""
        errors.check(lib.rd_kafka_mock_partition_set_leader(self._cluster(), topic.encode(), partition,
                                                            broker_id), "mock set leader")

    def broker_down(self, broker_id):
        """``rd_kafka_mock_broker_set_down``: disconnect and refuse connections (-1: all)."""
        errors.check(lib.rd_kafka_mock_broker_set_down(self._cluster(), broker_id), "mock broker down")

    def broker_up(self, broker_id):
        """``rd_kafka_mock_broker_set_up``."""
        errors.check(lib.rd_kafka_mock_broker_set_up(self._cluster(), broker_id), "mock broker up")

    def set_broker_rtt(self, broker_id, rtt_ms):
        """``rd_kafka_mock_broker_set_rtt``: delay every response of the broker."""
        errors.check(lib.rd_kafka_mock_broker_set_rtt(self._cluster(), broker_id, rtt_ms), "mock rtt")

    def set_coordinator(self, key_type, key, broker_id):
        """``rd_kafka_mock_coordinator_set``; ``key_type`` is ``"group"`` or ``"transaction"``."""
        errors.check(lib.rd_kafka_mock_coordinator_set(self._cluster(), key_type.encode(), key.encode(),
                                                       broker_id), "mock coordinator")

    def _destroy(self):
        if self._ptr is not None:
            ptr, self._ptr = self._ptr, None  # first: an interrupt after the call must not destroy it twice
            lib.rd_kafka_mock_cluster_destroy(ptr)

    def close(self):
        """``rd_kafka_mock_cluster_destroy``, then the owning handle."""
        self._handle.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
