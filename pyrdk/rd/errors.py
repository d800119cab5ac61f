"""The funnels from librdkafka's error shapes to pyrdk exceptions.

``check(err)`` for every ``rd_kafka_resp_err_t`` return, ``raise_for_error(error)``
for every ``rd_kafka_error_t *``, ``errstr()`` for the buffers of ``rd_kafka_new`` and
``rd_kafka_conf_set``. Messages are librdkafka's own (``rd_kafka_err2str``).
"""
from pyrdk._ffi import ffi, lib, string
from pyrdk.exceptions import for_code

ERRSTR_SIZE = 512

# Codes used by name elsewhere in pyrdk.
NO_ERROR = lib.RD_KAFKA_RESP_ERR_NO_ERROR
PARTITION_EOF = lib.RD_KAFKA_RESP_ERR__PARTITION_EOF
TIMED_OUT = lib.RD_KAFKA_RESP_ERR__TIMED_OUT
MSG_TIMED_OUT = lib.RD_KAFKA_RESP_ERR__MSG_TIMED_OUT
QUEUE_FULL = lib.RD_KAFKA_RESP_ERR__QUEUE_FULL
NOT_TRIED = lib.RD_KAFKA_RESP_ERR__BEGIN  # a message rd_kafka_produce_batch never looked at (no error of its own)
TRANSPORT = lib.RD_KAFKA_RESP_ERR__TRANSPORT
ALL_BROKERS_DOWN = lib.RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN
UNKNOWN_TOPIC_OR_PART = 3  # RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART (not in the cdef)
UNKNOWN_TOPIC_ID = 100  # RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_ID (not in the cdef)
UNKNOWN_TOPIC = lib.RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC
UNKNOWN_PARTITION = lib.RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION
ASSIGN_PARTITIONS = lib.RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS
REVOKE_PARTITIONS = lib.RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS
NO_OFFSET = lib.RD_KAFKA_RESP_ERR__NO_OFFSET
PURGE_QUEUE = lib.RD_KAFKA_RESP_ERR__PURGE_QUEUE
PURGE_INFLIGHT = lib.RD_KAFKA_RESP_ERR__PURGE_INFLIGHT
FATAL = lib.RD_KAFKA_RESP_ERR__FATAL
MSG_SIZE_TOO_LARGE = lib.RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE
LEADER_NOT_AVAILABLE = 5  # RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE (not in the cdef)
SSL = lib.RD_KAFKA_RESP_ERR__SSL
AUTHENTICATION = lib.RD_KAFKA_RESP_ERR__AUTHENTICATION
IN_PROGRESS = -178  # RD_KAFKA_RESP_ERR__IN_PROGRESS (not in the cdef)
DESTROY_BROKER = -137  # RD_KAFKA_RESP_ERR__DESTROY_BROKER (not in the cdef): a request cut off by a lost broker
PARTIAL = -158  # RD_KAFKA_RESP_ERR__PARTIAL (not in the cdef): some brokers did not answer
CLOSED = lib.PYRDK_ERR_CLOSED  # pyrdk's own: the handle is closed (csrc/pyrdk_guard.h)

# Local codes that are transient by nature.
_RETRIABLE = {TIMED_OUT, MSG_TIMED_OUT, QUEUE_FULL, TRANSPORT, ALL_BROKERS_DOWN}


def err2str(err):
    """librdkafka's description of a code (``rd_kafka_err2str``)."""
    return string(lib.rd_kafka_err2str(err), "")


def err2name(err):
    """librdkafka's name of a code (``rd_kafka_err2name``)."""
    return string(lib.rd_kafka_err2name(err), "")


def exception(err, context=None, reason=None, retriable=None, fatal=None, txn_requires_abort=False):
    """The pyrdk exception for code ``err``, its message prefixed by ``context``."""
    message = reason or err2str(err)
    if context:
        message = "%s: %s" % (context, message)
    cls = for_code(err)
    if retriable is None:
        retriable = cls.retriable or err in _RETRIABLE
    return cls(message, code=err, name=err2name(err), retriable=retriable,
               fatal=bool(fatal) or cls.fatal, txn_requires_abort=txn_requires_abort)


def check(err, context=None):
    """Raise the exception for a non-zero ``rd_kafka_resp_err_t``."""
    if err:
        raise exception(err, context)


def raise_for_error(error, context=None, destroy=True):
    """Raise the exception an ``rd_kafka_error_t *`` describes, with its flags
    (``retriable``, ``fatal``, ``txn_requires_abort``), and free it (no-op for NULL)."""
    if error == ffi.NULL:
        return
    try:
        exc = exception(lib.rd_kafka_error_code(error), context,
                        reason=string(lib.rd_kafka_error_string(error)),
                        retriable=bool(lib.rd_kafka_error_is_retriable(error)),
                        fatal=bool(lib.rd_kafka_error_is_fatal(error)),
                        txn_requires_abort=bool(lib.rd_kafka_error_txn_requires_abort(error)))
    finally:
        if destroy:
            lib.rd_kafka_error_destroy(error)
    raise exc


def errstr():
    """A buffer for functions that report through ``char *errstr, size_t errstr_size``."""
    return ffi.new("char[]", ERRSTR_SIZE)


def error_descriptions():
    """Every code librdkafka knows, as ``(code, name, description)`` (``rd_kafka_get_err_descs``)."""
    descs = ffi.new("const struct rd_kafka_err_desc **")
    count = ffi.new("size_t *")
    lib.rd_kafka_get_err_descs(descs, count)
    return [(descs[0][i].code, string(descs[0][i].name), string(descs[0][i].desc, ""))
            for i in range(count[0]) if descs[0][i].name != ffi.NULL]
