"""The built extension: it loads, the librdkafka it runs on is new enough, the loader's choice
can be overridden, and the exception registry agrees with ``rd_kafka_get_err_descs()``."""
import os
import re
import subprocess
import sys

import pytest

from pyrdk import _ffi, _loader, exceptions
from pyrdk.rd import errors

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The librdkafka names each registered class stands for.
EXPECTED_NAMES = {
    "BrokerNotAvailable": {"BROKER_NOT_AVAILABLE"},
    "ReplicaNotAvailable": {"REPLICA_NOT_AVAILABLE"},
    "StaleControllerEpoch": {"STALE_CTRL_EPOCH"},
    "RecordListTooLarge": {"RECORD_LIST_TOO_LARGE"},
    "NotEnoughReplicas": {"NOT_ENOUGH_REPLICAS"},
    "NotEnoughReplicasAfterAppend": {"NOT_ENOUGH_REPLICAS_AFTER_APPEND"},
    "InvalidRequiredAcks": {"INVALID_REQUIRED_ACKS"},
    "InvalidGroupId": {"INVALID_GROUP_ID"},
    "InvalidCommitOffsetSize": {"INVALID_COMMIT_OFFSET_SIZE"},
    "ClusterAuthorizationFailed": {"CLUSTER_AUTHORIZATION_FAILED"},
    "InvalidTimestamp": {"INVALID_TIMESTAMP"},
    "UnsupportedSaslMechanism": {"UNSUPPORTED_SASL_MECHANISM"},
    "IllegalSaslState": {"ILLEGAL_SASL_STATE"},
    "InvalidPartitions": {"INVALID_PARTITIONS"},
    "InvalidReplicationFactor": {"INVALID_REPLICATION_FACTOR"},
    "InvalidReplicaAssignment": {"INVALID_REPLICA_ASSIGNMENT"},
    "InvalidConfig": {"INVALID_CONFIG"},
    "NotController": {"NOT_CONTROLLER"},
    "InvalidRequest": {"INVALID_REQUEST"},
    "UnsupportedForMessageFormat": {"UNSUPPORTED_FOR_MESSAGE_FORMAT"},
    "PolicyViolation": {"POLICY_VIOLATION"},
    "MessageSetDecodeFailure": {"_BAD_MSG"},
    "RdKafkaStoppedException": {"_DESTROY"},
    "SocketDisconnectedError": {"_TRANSPORT"},
    "SslError": {"_SSL"},
    "AuthenticationError": {"_AUTHENTICATION"},
    "KafkaTimeoutError": {"_TIMED_OUT", "_MSG_TIMED_OUT"},
    "AssignmentLost": {"_ASSIGNMENT_LOST"},
    "MaxPollExceeded": {"_MAX_POLL_EXCEEDED"},
    "NoBrokersAvailableError": {"_ALL_BROKERS_DOWN"},
    "ProducerQueueFullError": {"_QUEUE_FULL"},
    "UnknownError": {"UNKNOWN"},
    "OffsetOutOfRangeError": {"OFFSET_OUT_OF_RANGE", "_AUTO_OFFSET_RESET"},
    "InvalidMessageError": {"INVALID_MSG"},
    "UnknownTopicOrPartition": {"UNKNOWN_TOPIC_OR_PART", "_UNKNOWN_TOPIC", "_UNKNOWN_PARTITION"},
    "InvalidMessageSize": {"INVALID_MSG_SIZE"},
    "LeaderNotAvailable": {"LEADER_NOT_AVAILABLE"},
    "NotLeaderForPartition": {"NOT_LEADER_FOR_PARTITION", "NOT_LEADER_OR_FOLLOWER"},
    "RequestTimedOut": {"REQUEST_TIMED_OUT"},
    "MessageSizeTooLarge": {"MSG_SIZE_TOO_LARGE"},
    "OffsetMetadataTooLarge": {"OFFSET_METADATA_TOO_LARGE"},
    "GroupLoadInProgress": {"COORDINATOR_LOAD_IN_PROGRESS", "GROUP_LOAD_IN_PROGRESS"},
    "GroupCoordinatorNotAvailable": {"COORDINATOR_NOT_AVAILABLE", "GROUP_COORDINATOR_NOT_AVAILABLE"},
    "NotCoordinatorForGroup": {"NOT_COORDINATOR", "NOT_COORDINATOR_FOR_GROUP"},
    "InvalidTopic": {"TOPIC_EXCEPTION"},
    "IllegalGeneration": {"ILLEGAL_GENERATION"},
    "InconsistentGroupProtocol": {"INCONSISTENT_GROUP_PROTOCOL"},
    "UnknownMemberId": {"UNKNOWN_MEMBER_ID"},
    "InvalidSessionTimeout": {"INVALID_SESSION_TIMEOUT"},
    "RebalanceInProgress": {"REBALANCE_IN_PROGRESS"},
    "TopicAuthorizationFailed": {"TOPIC_AUTHORIZATION_FAILED"},
    "GroupAuthorizationFailed": {"GROUP_AUTHORIZATION_FAILED"},
    "SaslAuthenticationFailed": {"SASL_AUTHENTICATION_FAILED"},
    "TopicAlreadyExists": {"TOPIC_ALREADY_EXISTS"},
    "NonEmptyGroupError": {"NON_EMPTY_GROUP"},
    "GroupIdNotFoundError": {"GROUP_ID_NOT_FOUND"},
    "TransactionStateError": {"_STATE"},
    "ProducerFenced": {"_FENCED", "PRODUCER_FENCED"},
    "InvalidProducerEpoch": {"INVALID_PRODUCER_EPOCH"},
    "InvalidTxnState": {"INVALID_TXN_STATE"},
    "ConcurrentTransactions": {"CONCURRENT_TRANSACTIONS"},
    "TransactionCoordinatorFenced": {"TRANSACTION_COORDINATOR_FENCED"},
    "TransactionalIdAuthorizationFailed": {"TRANSACTIONAL_ID_AUTHORIZATION_FAILED"},
    "OutOfOrderSequenceNumber": {"OUT_OF_ORDER_SEQUENCE_NUMBER"},
    "DuplicateSequenceNumber": {"DUPLICATE_SEQUENCE_NUMBER"},
    "InvalidProducerIdMapping": {"INVALID_PRODUCER_ID_MAPPING"},
    "InvalidTransactionTimeout": {"INVALID_TRANSACTION_TIMEOUT"},
    "SecurityDisabled": {"SECURITY_DISABLED"},
    "OperationNotAttempted": {"OPERATION_NOT_ATTEMPTED"},
    "KafkaStorageError": {"KAFKA_STORAGE_ERROR"},
    "LogDirNotFound": {"LOG_DIR_NOT_FOUND"},
    "UnknownProducerId": {"UNKNOWN_PRODUCER_ID"},
    "ReassignmentInProgress": {"REASSIGNMENT_IN_PROGRESS"},
    "DelegationTokenAuthDisabled": {"DELEGATION_TOKEN_AUTH_DISABLED"},
    "DelegationTokenNotFound": {"DELEGATION_TOKEN_NOT_FOUND"},
    "DelegationTokenOwnerMismatch": {"DELEGATION_TOKEN_OWNER_MISMATCH"},
    "DelegationTokenRequestNotAllowed": {"DELEGATION_TOKEN_REQUEST_NOT_ALLOWED"},
    "DelegationTokenAuthorizationFailed": {"DELEGATION_TOKEN_AUTHORIZATION_FAILED"},
    "DelegationTokenExpired": {"DELEGATION_TOKEN_EXPIRED"},
    "InvalidPrincipalType": {"INVALID_PRINCIPAL_TYPE"},
    "FetchSessionIdNotFound": {"FETCH_SESSION_ID_NOT_FOUND"},
    "InvalidFetchSessionEpoch": {"INVALID_FETCH_SESSION_EPOCH"},
    "ListenerNotFound": {"LISTENER_NOT_FOUND"},
    "MemberIdRequired": {"MEMBER_ID_REQUIRED"},
}


@pytest.fixture(scope="module")
def descs():
    """``{code: (name, description)}`` from the running librdkafka, without the range markers
    ``_BEGIN`` and ``_END`` (which are not errors)."""
    return {code: (name, desc) for code, name, desc in errors.error_descriptions()
            if name not in ("_BEGIN", "_END")}


# -- the extension and the library it runs on ------------------------------------------------------

def test_extension_loads_the_chosen_library():
    assert _ffi.lib.rd_kafka_version() == _ffi.RUNTIME_VERSION
    assert _ffi.LIBRARY_PATH
    assert _ffi.LIBRARY_SOURCE in ("$PYRDK_LIBRDKAFKA", "the confluent-kafka wheel", "the system")


def test_versions_are_sane():
    assert _ffi.BUILD_VERSION >= 0x01000000
    assert _ffi.RUNTIME_VERSION >= _ffi.BUILD_VERSION
    assert re.fullmatch(r"\d+\.\d+\.\d+", _ffi.version_str(_ffi.BUILD_VERSION))
    runtime = _ffi.string(_ffi.lib.rd_kafka_version_str())
    assert runtime.startswith(_ffi.version_str(_ffi.RUNTIME_VERSION))


def test_version_str():
    assert _ffi.version_str(0x020002ff) == "2.0.2"
    assert _ffi.version_str(0x021001ff) == "2.16.1"


def test_librdkafka_version_names_runtime_build_and_library():
    import pyrdk
    version = pyrdk.librdkafka_version()
    assert version.runtime == _ffi.string(_ffi.lib.rd_kafka_version_str())
    assert version.built_against == _ffi.version_str(_ffi.BUILD_VERSION)
    assert version.library == _ffi.LIBRARY_PATH


# -- the loader --------------------------------------------------------------------------------------

def test_candidates_honour_the_environment(monkeypatch, tmp_path):
    path = str(tmp_path / "librdkafka.so.1")
    monkeypatch.setenv("PYRDK_LIBRDKAFKA", path)
    assert _loader.candidates() == [(path, "$PYRDK_LIBRDKAFKA")]


def test_candidates_default_order(monkeypatch):
    monkeypatch.delenv("PYRDK_LIBRDKAFKA", raising=False)
    found = _loader.candidates()
    assert found[-1] == ("librdkafka.so.1", "the system")
    wheel = [path for path, where in found if where == "the confluent-kafka wheel"]
    assert wheel, "confluent-kafka is a dependency: its bundled librdkafka should be found"
    assert all(os.path.basename(p).startswith("librdkafka") for p in wheel)


def test_missing_library_is_a_clear_import_error(tmp_path):
    missing = str(tmp_path / "nowhere" / "librdkafka.so.1")
    code = ("import sys\n"
            "try:\n"
            "    import pyrdk._ffi\n"
            "except ImportError as exc:\n"
            "    print(exc)\n"
            "    sys.exit(3)\n")
    env = dict(os.environ, PYRDK_LIBRDKAFKA=missing,
               PYTHONPATH=os.pathsep.join([ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(
                   os.pathsep) if p]))
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    message = proc.stdout
    assert missing in message
    assert "PYRDK_LIBRDKAFKA" in message
    assert "pip install confluent-kafka" in message


# -- the error registry ------------------------------------------------------------------------------

def test_every_registered_code_is_known_to_librdkafka(descs):
    unknown = sorted(code for code in exceptions._BY_CODE if code not in descs)
    assert not unknown, "codes librdkafka does not know: %s" % unknown


def test_registered_classes_match_librdkafka_names(descs):
    wrong = []
    for code, cls in sorted(exceptions._BY_CODE.items()):
        expected = EXPECTED_NAMES.get(cls.__name__)
        assert expected is not None, "add %s to EXPECTED_NAMES" % cls.__name__
        if descs[code][0] not in expected:
            wrong.append("%d → %s, but librdkafka calls %d %s" % (code, cls.__name__, code,
                                                                   descs[code][0]))
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("code,cls,name", [
    (10, exceptions.MessageSizeTooLarge, "MSG_SIZE_TOO_LARGE"),
    (-185, exceptions.KafkaTimeoutError, "_TIMED_OUT"),
    (-192, exceptions.KafkaTimeoutError, "_MSG_TIMED_OUT"),
    (36, exceptions.TopicAlreadyExists, "TOPIC_ALREADY_EXISTS"),
    (3, exceptions.UnknownTopicOrPartition, "UNKNOWN_TOPIC_OR_PART"),
    (-187, exceptions.NoBrokersAvailableError, "_ALL_BROKERS_DOWN"),
    (-184, exceptions.ProducerQueueFullError, "_QUEUE_FULL"),
])
def test_named_codes(code, cls, name, descs):
    assert exceptions.for_code(code) is cls
    assert descs[code][0] == name
    exc = errors.exception(code)
    assert type(exc) is cls
    assert (exc.code, exc.name) == (code, name)
    assert str(exc) == descs[code][1]


def test_for_code_covers_every_librdkafka_code(descs):
    for code, (name, desc) in descs.items():
        cls = exceptions.for_code(code)
        assert issubclass(cls, exceptions.KafkaException), (code, name, cls)
        exc = errors.exception(code, "context")
        assert isinstance(exc, cls)
        assert exc.code == code and exc.name == name
        assert str(exc) == "context: %s" % desc
        assert isinstance(exc.retriable, bool) and isinstance(exc.fatal, bool)


def test_unknown_codes_still_get_a_class():
    assert exceptions.for_code(-12345) is exceptions.RdKafkaException
    assert exceptions.for_code(12345) is exceptions.UnknownError
    assert errors.exception(12345).code == 12345


def test_protocol_classes_carry_broker_codes():
    for code, cls in exceptions._BY_CODE.items():
        if issubclass(cls, exceptions.ProtocolClientError):
            assert cls.ERROR_CODE >= -1 and cls.ERROR_CODE == cls.code
        else:
            assert code < -1, "%s has the broker code %d but is not a ProtocolClientError" % (
                cls.__name__, code)
    assert all(code >= -1 for code in exceptions.ERROR_CODES)
