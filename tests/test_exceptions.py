"""pykafka's exception names and the code registry."""
import pytest

import pyrdk.exceptions as exc

PYKAFKA_NAMES = [
    "KafkaException", "NoBrokersAvailableError", "SocketDisconnectedError", "LeaderNotFoundError",
    "ProduceFailureError", "ConsumerStoppedException", "NoMessagesConsumedError",
    "MessageSetDecodeFailure", "ProducerQueueFullError", "ProducerStoppedException",
    "OffsetRequestFailedError", "PartitionOwnedError", "UnicodeException", "ProtocolClientError",
    "UnknownError", "OffsetOutOfRangeError", "InvalidMessageError", "UnknownTopicOrPartition",
    "InvalidMessageSize", "LeaderNotAvailable", "NotLeaderForPartition", "RequestTimedOut",
    "MessageSizeTooLarge", "OffsetMetadataTooLarge", "GroupLoadInProgress",
    "GroupCoordinatorNotAvailable", "NotCoordinatorForGroup", "InvalidTopic", "IllegalGeneration",
    "InconsistentGroupProtocol", "UnknownMemberId", "InvalidSessionTimeout", "RebalanceInProgress",
    "TopicAuthorizationFailed", "GroupAuthorizationFailed", "RdKafkaException",
    "RdKafkaStoppedException"]


@pytest.mark.parametrize("name", PYKAFKA_NAMES)
def test_pykafka_name_exists_under_kafka_exception(name):
    assert issubclass(getattr(exc, name), exc.KafkaException)


def test_protocol_errors_keep_pykafka_error_codes():
    assert exc.ERROR_CODES[1] is exc.OffsetOutOfRangeError
    assert exc.ERROR_CODES[10] is exc.MessageSizeTooLarge
    assert exc.MessageSizeTooLarge.ERROR_CODE == 10
    assert issubclass(exc.UnknownTopicOrPartition, exc.ProtocolClientError)


def test_for_code_never_fails():
    assert exc.for_code(3) is exc.UnknownTopicOrPartition
    assert exc.for_code(-188) is exc.UnknownTopicOrPartition  # librdkafka's _UNKNOWN_TOPIC
    assert exc.for_code(9999) is exc.UnknownError
    assert exc.for_code(-170) is exc.RdKafkaException


def test_instance_attributes():
    e = exc.KafkaTimeoutError("slow", code=-185, name="_TIMED_OUT", retriable=True)
    assert (e.code, e.name, e.retriable, e.fatal) == (-185, "_TIMED_OUT", True, False)
    owned = exc.PartitionOwnedError("p", "owned")
    assert owned.partition == "p"


def test_configuration_error_is_a_value_error():
    assert issubclass(exc.ConfigurationError, ValueError)


def test_call_state_raises_each_kept_exception_once_oldest_first():
    calls = exc.CallState()
    first, second = ValueError("first"), KeyError("second")
    calls.crash(first)
    calls.crash(second, item="it")
    assert len(calls) == 2 and calls
    for expected in (first, second):
        with pytest.raises(type(expected)) as info:
            calls.check()
        assert info.value is expected
    calls.check()  # nothing kept any more
    assert not calls


def test_call_state_combines_all_or_forgets_what_no_longer_holds():
    calls = exc.CallState()
    calls.crash(ValueError("a"), item=1)
    calls.crash(exc.PartitionOwnedError(None, "owned"))
    calls.crash(ValueError("b"), item=2)
    calls.discard(exc.PartitionOwnedError)
    with pytest.raises(RuntimeError, match="1, 2") as info:
        calls.check(combine=lambda pairs: RuntimeError(", ".join(str(item) for item, _ in pairs)))
    assert not calls and info.value
    calls.crash(ValueError("c"), item=3)
    assert [item for item, _ in calls.take()] == [3] and not calls
