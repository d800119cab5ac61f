"""The names aiokafka's documentation imports, as ``pyrdk.aio`` submodules: a program that
replaces ``aiokafka`` by ``pyrdk.aio`` in its imports finds each one."""
import importlib
import subprocess
import sys

import pytest

# module -> the names the aiokafka docs (examples and API reference) import from it
DOCUMENTED = {
    "": ["AIOKafkaProducer", "AIOKafkaConsumer", "TopicPartition", "ConsumerRebalanceListener",
         "ConsumerRecord", "RecordMetadata", "OffsetAndMetadata", "OffsetAndTimestamp"],
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


def test_errors_are_pyrdks():
    import pyrdk.aio as aiokafka
    from pyrdk.exceptions import KafkaException
    assert issubclass(aiokafka.errors.NotCoordinatorError, aiokafka.errors.KafkaError)
    assert aiokafka.errors.KafkaError is KafkaException
    assert aiokafka.structs.TopicPartition is aiokafka.TopicPartition
