"""The names aiokafka's documentation imports, as ``pyrdk.aio`` submodules: a program that
replaces ``aiokafka`` by ``pyrdk.aio`` in its imports finds each one."""
import importlib
import subprocess
import sys

import pytest

# module -> the names the aiokafka docs (examples and API reference) import from it
DOCUMENTED = {
    "": ["AIOKafkaProducer", "AIOKafkaConsumer", "TopicPartition", "ConsumerRebalanceListener",
         "ConsumerRecord", "RecordMetadata", "OffsetAndMetadata", "OffsetAndTimestamp",
         "ConsumerStoppedError", "IllegalOperation"],  # the two errors aiokafka's package exports too
    "producer": ["AIOKafkaProducer"],
    "consumer": ["AIOKafkaConsumer"],
    "helpers": ["create_ssl_context"],
    "abc": ["ConsumerRebalanceListener", "AbstractTokenProvider"],
    "structs": ["TopicPartition", "ConsumerRecord", "RecordMetadata", "OffsetAndMetadata", "OffsetAndTimestamp"],
    "errors": ["KafkaError", "KafkaTimeoutError", "OffsetOutOfRangeError", "ConsumerStoppedError",
               "ProducerClosed", "IllegalStateError", "CommitFailedError", "RecordTooLargeError",
               "RequestTimedOutError", "TopicAuthorizationFailedError", "ProducerFenced", "InvalidTxnState",
               "UnsupportedVersionError", "NotCoordinatorError", "CoordinatorNotAvailableError",
               "CoordinatorLoadInProgressError", "NotCoordinatorForGroupError",
               "TransactionIdAuthorizationFailed", "TransactionCoordinatorFenced",
               "SaslAuthenticationFailed", "NonEmptyGroup"],
}


@pytest.mark.parametrize("module", sorted(DOCUMENTED))
def test_documented_names_exist(module):
    mod = importlib.import_module("pyrdk.aio" + ("." + module if module else ""))
    missing = [name for name in DOCUMENTED[module] if not hasattr(mod, name)]
    assert not missing, "pyrdk.aio%s lacks %s" % ("." + module if module else "", missing)


@pytest.mark.parametrize("first", ["helpers", "producer", "errors"])
def test_submodules_import_first(first):
    # "from aiokafka.helpers import create_ssl_context" as the first import of a program
    order = [first] + [m for m in ("errors", "structs", "helpers", "producer", "consumer", "abc") if m != first]
    code = "; ".join("from pyrdk.aio.%s import %s" % (m, DOCUMENTED[m][0]) for m in order)
    subprocess.run([sys.executable, "-c", code], check=True)


# aiokafka 0.14's broker errors beyond the documented ones, with their Kafka error codes: an
# "except aiokafka.errors.UnknownProducerId" must name a class, and catch what pyrdk raises
BROKER_ERRORS = {
    "OutOfOrderSequenceNumber": 45, "DuplicateSequenceNumber": 46, "InvalidProducerIdMapping": 49,
    "InvalidTransactionTimeout": 50, "SecurityDisabled": 54, "OperationNotAttempted": 55,
    "KafkaStorageError": 56, "LogDirNotFound": 57, "UnknownProducerId": 59,
    "ReassignmentInProgress": 60, "DelegationTokenAuthDisabled": 61, "DelegationTokenNotFound": 62,
    "DelegationTokenOwnerMismatch": 63, "DelegationTokenRequestNotAllowed": 64,
    "DelegationTokenAuthorizationFailed": 65, "DelegationTokenExpired": 66,
    "InvalidPrincipalType": 67, "FetchSessionIdNotFound": 70, "InvalidFetchSessionEpoch": 71,
    "ListenerNotFound": 72, "MemberIdRequired": 79,
}


@pytest.mark.parametrize("name,code", sorted(BROKER_ERRORS.items()))
def test_aiokafka_broker_errors_exist(name, code):
    from pyrdk import exceptions
    from pyrdk.aio import errors
    cls = getattr(errors, name)
    assert exceptions.for_code(code) is cls
    assert issubclass(cls, errors.BrokerResponseError)
    assert cls.errno == code  # aiokafka's broker errors carry their Kafka error code as errno


def test_errno_is_kafkas_error_code_as_in_aiokafka():
    """``errno`` as aiokafka's errors have it: Kafka's error code, on the class and on what is
    raised; None for a client-side error (librdkafka's negative codes)."""
    from pyrdk import exceptions
    from pyrdk.aio import errors
    assert errors.UnknownTopicOrPartitionError.errno == 3
    assert errors.RequestTimedOutError.errno == 7
    assert errors.KafkaError.errno is None and errors.KafkaTimeoutError.errno is None
    assert exceptions.for_code(29)("denied", code=29).errno == 29
    assert exceptions.for_code(-185)("timed out", code=-185).errno is None
    # Kafka's UNKNOWN_SERVER_ERROR is -1: aiokafka's UnknownError.errno
    assert errors.UnknownError.errno == -1
    assert exceptions.for_code(-1)("unknown", code=-1).errno == -1


def test_the_rest_of_aiokafkas_structs_and_errors_names():
    from pyrdk import exceptions
    from pyrdk.aio import errors, structs
    assert structs.BrokerMetadata._fields == ("nodeId", "host", "port", "rack")
    assert structs.PartitionMetadata._fields == ("topic", "partition", "leader", "replicas", "isr", "error")
    assert errors.kafka_errors[16] is errors.NotCoordinatorError  # Kafka's NOT_COORDINATOR
    assert all(exceptions.for_code(code) is cls for code, cls in errors.kafka_errors.items())


def test_metadata_empty_broker_list():
    from pyrdk.aio import errors
    assert errors.MetadataEmptyBrokerList is errors.NoBrokersAvailable


def test_errors_are_pyrdks():
    import pyrdk.aio as aiokafka
    from pyrdk.exceptions import KafkaException
    assert issubclass(aiokafka.errors.NotCoordinatorError, aiokafka.errors.KafkaError)
    assert aiokafka.errors.KafkaError is KafkaException
    assert aiokafka.structs.TopicPartition is aiokafka.TopicPartition
