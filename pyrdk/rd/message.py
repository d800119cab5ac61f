"""Messages between librdkafka and ``pyrdk.common.Message``: consumed batches converted and
produced messages sent in C (``csrc/pyrdk_messages.c``), headers both ways."""
from pyrdk._ffi import ffi, lib, string
from pyrdk.common import Message
from pyrdk.rd import errors

_functions = {}  # the Python functions of pyrdk_messages.c
if lib.pyrdk_messages_init(ffi.cast("void *", id(Message)), ffi.cast("void *", id(_functions))) != 0:
    raise ImportError("pyrdk.common.Message lacks a slot that pyrdk_messages_init fills")
send_message = _functions["send_message"]
buffer_iterator = _functions["buffer_iterator"]
mark_last = _functions["mark_last"]
pack_values = _functions["pack_values"]
buffered_produce = _functions["buffered_produce"]
pending_table = _functions["pending_table"]


def unpack_batch(array, n, partitions=None):
    """The ``n`` C messages of ``array`` as ``(messages, errors)``: ``pyrdk_messages_append``
    makes the Messages in C, each one's ``partition`` being ``partitions.get(partition_id)``
    when given; error events become exceptions, end-of-partition events are dropped. The
    caller destroys the C messages."""
    msgs, errs = [], []
    out, parts = ffi.cast("void *", id(msgs)), ffi.cast("void *", id(partitions))
    i = 0
    while i < n:
        done = lib.pyrdk_messages_append(array + i, n - i, out, parts)
        if done < 0:
            raise MemoryError("out of memory while converting a batch of %d messages" % n)
        i += done
        if i < n:  # an error event
            if array[i].err != errors.PARTITION_EOF:
                errs.append(error_of(array[i], _topic_name(array[i])))
            i += 1
    return msgs, errs


def mark_next(msgs, next_offsets):
    """For each partition among ``msgs``, set ``next_offsets[partition_id]`` to the offset
    after its last message there (``pyrdk_messages_mark_next``)."""
    if lib.pyrdk_messages_mark_next(ffi.cast("void *", id(msgs)), ffi.cast("void *", id(next_offsets))):
        for msg in msgs:  # an item without an int offset: this raises what is wrong
            next_offsets[msg.partition_id] = msg.offset + 1


def _topic_name(rkmessage):
    return string(lib.rd_kafka_topic_name(rkmessage.rkt)) if rkmessage.rkt != ffi.NULL else None


def headers_to_c(headers):
    """A new ``rd_kafka_headers_t`` from ``(name, value)`` pairs or a dict (None if empty)."""
    if not headers:
        return ffi.NULL
    items = headers.items() if isinstance(headers, dict) else headers
    hdrs = lib.rd_kafka_headers_new(len(items))
    try:
        for name, value in items:
            if isinstance(name, str):
                name = name.encode()
            if isinstance(value, str):
                value = value.encode()
            if not isinstance(name, bytes) or not (value is None or isinstance(value, bytes)):
                raise TypeError("headers must be (str, bytes) pairs, got (%r, %r)" % (name, value))
            if value is None:
                lib.rd_kafka_header_add(hdrs, name, len(name), ffi.NULL, 0)
            else:
                lib.rd_kafka_header_add(hdrs, name, len(name), value, len(value))
    except BaseException:
        lib.rd_kafka_headers_destroy(hdrs)
        raise
    return hdrs


def error_of(rkmessage, topic_name=None):
    """The exception an error message carries."""
    context = topic_name
    if topic_name and rkmessage.partition >= 0:
        context = "%s [%d]" % (topic_name, rkmessage.partition)
    return errors.exception(rkmessage.err, context)
