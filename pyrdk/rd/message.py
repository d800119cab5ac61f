"""``rd_kafka_message_t`` → ``pyrdk.common.Message``, and headers both ways."""
from pyrdk._ffi import ffi, lib
from pyrdk.common import Message
from pyrdk.rd import errors

_tstype = ffi.new("rd_kafka_timestamp_type_t *")
_hdrs = ffi.new("rd_kafka_headers_t **")
_name = ffi.new("const char **")
_value = ffi.new("const void **")
_size = ffi.new("size_t *")


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


def _headers(rkmessage):
    # The GIL serialises use of the module-level out-parameters.
    if lib.rd_kafka_message_headers(rkmessage, _hdrs):
        return []
    out = []
    idx = 0
    while lib.rd_kafka_header_get_all(_hdrs[0], idx, _name, _value, _size) == 0:
        value = None if _value[0] == ffi.NULL else ffi.unpack(ffi.cast("char *", _value[0]), _size[0])
        out.append((ffi.string(_name[0]).decode("utf-8", "replace"), value))
        idx += 1
    return out


def from_c(rkmessage, topic):
    """A ``Message`` holding copies of the C message's fields (the caller destroys it)."""
    m = rkmessage
    value = ffi.unpack(ffi.cast("char *", m.payload), m.len) if m.payload != ffi.NULL else None
    key = ffi.unpack(ffi.cast("char *", m.key), m.key_len) if m.key != ffi.NULL else None
    timestamp = lib.rd_kafka_message_timestamp(m, _tstype)
    return Message(value, partition_key=key, partition_id=m.partition, offset=m.offset,
                   timestamp=timestamp, timestamp_type=_tstype[0], headers=_headers(m), topic=topic)


def error_of(rkmessage, topic_name=None):
    """The exception an error message carries."""
    context = topic_name
    if topic_name and rkmessage.partition >= 0:
        context = "%s [%d]" % (topic_name, rkmessage.partition)
    return errors.exception(rkmessage.err, context)
