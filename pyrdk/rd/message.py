"""Messages between librdkafka and ``pyrdk.common.Message``: ``rd_kafka_message_t`` read into
a Message field by field (the pure-Python core's way; the C core reads them in C), headers
both ways (``rd_kafka_message_headers``, ``rd_kafka_headers_new``)."""
from pyrdk._ffi import ffi, lib, sized, string
from pyrdk.common import Message
from pyrdk.rd import errors


def messages_of(pointers, partitions=None):
    """``(messages, error_positions)`` for a batch: a ``Message`` for each ``rd_kafka_message_t *``
    of ``pointers`` (unsigned ints) that is not an error event, its ``partition`` taken from the
    ``partitions`` dict when given; and the positions of the error events."""
    made, positions = [], []
    topics = {}  # rd_kafka_topic_t address -> name, looked up once per batch
    tstype = ffi.new("rd_kafka_timestamp_type_t *")  # out-parameters, one set per batch
    hdrs = ffi.new("rd_kafka_headers_t **")
    for i, address in enumerate(pointers):
        m = ffi.cast("rd_kafka_message_t *", address)
        if m.err:
            positions.append(i)
            continue
        rkt = int(ffi.cast("uintptr_t", m.rkt))
        topic = topics.get(rkt)
        if topic is None:
            topic = topics[rkt] = _topic_name(m)
        made.append(message_of(m, topic, partitions.get(m.partition) if partitions else None, tstype, hdrs))
    return made, positions


def message_of(m, topic, partition, tstype, hdrs):
    """A ``Message`` with the fields of the ``rd_kafka_message_t *`` ``m`` (``tstype`` and
    ``hdrs``: out-parameters for ``rd_kafka_message_timestamp`` and ``rd_kafka_message_headers``)."""
    timestamp = lib.rd_kafka_message_timestamp(m, tstype)
    return Message._unchecked(ffi.unpack(ffi.cast("char *", m.payload), m.len) if m.payload != ffi.NULL else None,
                              ffi.unpack(ffi.cast("char *", m.key), m.key_len) if m.key != ffi.NULL else None,
                              m.partition, m.offset, timestamp, tstype[0], headers_of(m, hdrs), partition, topic)


def headers_of(m, hdrs):
    """``rd_kafka_message_headers`` (into the out-parameter ``hdrs``) as ``[(name, value)]``,
    or None when there are none."""
    if lib.rd_kafka_message_headers(m, hdrs) != errors.NO_ERROR:
        return None
    name, value, size = ffi.new("const char **"), ffi.new("const void **"), ffi.new("size_t *")
    out = []
    i = 0
    while lib.rd_kafka_header_get_all(hdrs[0], i, name, value, size) == errors.NO_ERROR:
        out.append((string(name[0]), ffi.unpack(ffi.cast("char *", value[0]), size[0])
                    if value[0] != ffi.NULL else None))
        i += 1
    return out


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
            if b"\0" in name:  # librdkafka hands a consumer the name up to its first NUL
                raise ValueError("header name %r holds a NUL character, which a consumer would not read back" % name)
            name = sized(name)
            if value is None:
                lib.rd_kafka_header_add(hdrs, name, len(name), ffi.NULL, 0)
            else:
                value = sized(value)
                lib.rd_kafka_header_add(hdrs, name, len(name), value, len(value))
    except BaseException:
        lib.rd_kafka_headers_destroy(hdrs)
        raise
    return hdrs


def error_of(rkmessage, topic_name=None):
    """The exception an error event carries (named after its topic and partition)."""
    topic = context = topic_name or _topic_name(rkmessage)
    if context and rkmessage.partition >= 0:
        context = "%s [%d]" % (context, rkmessage.partition)
    exc = errors.exception(rkmessage.err, context)
    # where it happened, for callers that report it their own way (pyrdk.aio's OffsetOutOfRangeError)
    exc.topic, exc.partition, exc.offset = topic, rkmessage.partition, rkmessage.offset
    return exc
