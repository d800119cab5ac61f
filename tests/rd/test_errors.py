"""rd.errors: the funnels from ``rd_kafka_resp_err_t`` and ``rd_kafka_error_t *`` to exceptions."""
import pytest

from pyrdk import exceptions
from pyrdk._ffi import ffi, lib
from pyrdk.rd import errors, partitions


def test_check_passes_no_error():
    assert errors.check(errors.NO_ERROR) is None
    assert errors.check(0, "context") is None


@pytest.mark.parametrize("code,cls", [
    (errors.TIMED_OUT, exceptions.KafkaTimeoutError),
    (errors.MSG_TIMED_OUT, exceptions.KafkaTimeoutError),
    (errors.QUEUE_FULL, exceptions.ProducerQueueFullError),
    (errors.TRANSPORT, exceptions.SocketDisconnectedError),
    (errors.ALL_BROKERS_DOWN, exceptions.NoBrokersAvailableError),
    (errors.UNKNOWN_TOPIC, exceptions.UnknownTopicOrPartition),
    (errors.MSG_SIZE_TOO_LARGE, exceptions.MessageSizeTooLarge),
    (-196, exceptions.RdKafkaException),  # _FAIL
])
def test_check_raises_the_registered_class(code, cls):
    with pytest.raises(cls) as info:
        errors.check(code, "doing something")
    exc = info.value
    assert exc.code == code
    assert exc.name == errors.err2name(code)
    assert str(exc) == "doing something: %s" % errors.err2str(code)


def test_exception_without_context_is_librdkafka_text():
    exc = errors.exception(errors.TIMED_OUT)
    assert str(exc) == "Local: Timed out"
    assert exc.name == "_TIMED_OUT"


def test_exception_with_a_reason_keeps_it_verbatim():
    exc = errors.exception(errors.TRANSPORT, "metadata", reason="Connect to ipv4#127.0.0.1:1 failed")
    assert str(exc) == "metadata: Connect to ipv4#127.0.0.1:1 failed"
    assert exc.code == errors.TRANSPORT


@pytest.mark.parametrize("code", [errors.TIMED_OUT, errors.MSG_TIMED_OUT, errors.QUEUE_FULL,
                                  errors.TRANSPORT, errors.ALL_BROKERS_DOWN])
def test_transient_local_codes_are_retriable(code):
    assert errors.exception(code).retriable is True


def test_retriable_and_fatal_overrides():
    exc = errors.exception(errors.MSG_SIZE_TOO_LARGE)
    assert (exc.retriable, exc.fatal) == (False, False)
    exc = errors.exception(errors.MSG_SIZE_TOO_LARGE, retriable=True, fatal=True)
    assert (exc.retriable, exc.fatal) == (True, True)


def test_class_defaults_are_not_changed_by_instances():
    errors.exception(errors.MSG_SIZE_TOO_LARGE, retriable=True, fatal=True)
    assert exceptions.MessageSizeTooLarge.retriable is False
    assert exceptions.MessageSizeTooLarge.fatal is False


def test_err2str_and_err2name():
    assert errors.err2name(errors.TIMED_OUT) == "_TIMED_OUT"
    assert errors.err2str(errors.TIMED_OUT) == "Local: Timed out"
    assert errors.err2name(36) == "TOPIC_ALREADY_EXISTS"


def test_raise_for_error_null_is_a_no_op():
    assert errors.raise_for_error(ffi.NULL) is None


def test_raise_for_error_reads_and_frees_a_real_error(handles):
    # rd_kafka_incremental_assign on a producer answers with an rd_kafka_error_t.
    producer = handles("producer", {})
    with producer.use() as rk:
        error = lib.rd_kafka_incremental_assign(rk, partitions.to_c([("t", 0)]))
        assert error != ffi.NULL
        code = lib.rd_kafka_error_code(error)
        text = ffi.string(lib.rd_kafka_error_string(error)).decode()
        with pytest.raises(exceptions.KafkaException) as info:
            errors.raise_for_error(error, "incremental assign")
    exc = info.value
    assert exc.code == code and exc.name == errors.err2name(code)
    assert str(exc) == "incremental assign: %s" % text
    assert exc.fatal is False and exc.retriable is False


def test_errstr_buffer():
    buf = errors.errstr()
    assert ffi.sizeof(buf) == errors.ERRSTR_SIZE


def test_error_descriptions():
    descs = errors.error_descriptions()
    codes = [code for code, _, _ in descs]
    names = [name for _, name, _ in descs]
    assert len(codes) == len(set(codes))
    assert len(names) == len(set(names))
    assert (errors.TIMED_OUT, "_TIMED_OUT", "Local: Timed out") in descs
    assert (10, "MSG_SIZE_TOO_LARGE", "Broker: Message size too large") in descs
