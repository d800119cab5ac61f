"""``rd_kafka_message_t`` → ``pyrdk.common.Message``, and headers both ways."""
from itertools import repeat

from pyrdk._ffi import ffi, lib, string
from pyrdk.common import Message
from pyrdk.rd import errors

_F_VALUE, _F_KEY, _F_HEADERS, _F_ERROR = lib.PYRDK_F_VALUE, lib.PYRDK_F_KEY, lib.PYRDK_F_HEADERS, lib.PYRDK_F_ERROR
_F_TOPICS = lib.PYRDK_F_TOPICS
_new_uncleared = ffi.new_allocator(should_clear_after_alloc=False)  # for buffers C fills at once


class Reader:
    """Converts C messages to ``Message``; its out-parameters are reused from one message to
    the next, so one ``Reader`` serves one thread (cffi releases the GIL in every C call)."""

    def __init__(self):
        self._tstype = ffi.new("rd_kafka_timestamp_type_t *")
        self._hdrs = ffi.new("rd_kafka_headers_t **")
        self._name = ffi.new("const char **")
        self._value = ffi.new("const void **")
        self._size = ffi.new("size_t *")

    def headers(self, rkmessage):
        """``rd_kafka_message_headers`` as ``[(name, value)]``."""
        if lib.rd_kafka_message_headers(rkmessage, self._hdrs):
            return []
        out = []
        idx = 0
        while lib.rd_kafka_header_get_all(self._hdrs[0], idx, self._name, self._value, self._size) == 0:
            value = None if self._value[0] == ffi.NULL else \
                ffi.unpack(ffi.cast("char *", self._value[0]), self._size[0])
            out.append((ffi.string(self._name[0]).decode("utf-8", "replace"), value))
            idx += 1
        return out

    def message(self, rkmessage, topic):
        """A ``Message`` holding copies of the C message's fields (the caller destroys it)."""
        m = rkmessage
        value = ffi.unpack(ffi.cast("char *", m.payload), m.len) if m.payload != ffi.NULL else None
        key = ffi.unpack(ffi.cast("char *", m.key), m.key_len) if m.key != ffi.NULL else None
        timestamp = lib.rd_kafka_message_timestamp(m, self._tstype)
        return Message(value, partition_key=key, partition_id=m.partition, offset=m.offset,
                       timestamp=timestamp, timestamp_type=self._tstype[0], headers=self.headers(m),
                       topic=topic)


def unpack_batch(array, n, partitions=None):
    """The ``n`` C messages of ``array`` as ``(messages, errors)``, in one pass over C
    (``pyrdk_batch_unpack``): values and keys are sliced out of one buffer, each message's
    ``partition`` is ``partitions.get(partition_id)`` when given. End-of-partition events
    are dropped. The caller destroys the C messages."""
    size = lib.pyrdk_batch_data_size(array, n)
    data = _new_uncleared("char[]", size or 1)
    cols = [ffi.new(t, n) for t in ("size_t[]", "size_t[]", "int32_t[]", "int64_t[]", "int64_t[]",
                                    "int[]", "int[]")]
    summary = lib.pyrdk_batch_unpack(array, n, data, *cols)
    value_ends, key_ends, pids, offsets, timestamps, tstypes, flags = cols
    value_ends, pids, offsets, timestamps, tstypes = (
        ffi.unpack(c, n) for c in (value_ends, pids, offsets, timestamps, tstypes))
    blob = ffi.buffer(data, size)  # slices of it are bytes: one copy per value
    objects = repeat(None) if partitions is None else map(partitions.get, pids)
    if summary == _F_VALUE:  # the common case: values only, of one topic
        starts = [0]
        starts += value_ends[:-1]
        topic = _topic_name(array[0])
        # Message.__new__ and the slots set here, as Message.__init__ would: a third cheaper.
        new, msgs = Message.__new__, []
        append = msgs.append
        for start, end, pid, offset, ts, tstype, obj in zip(starts, value_ends, pids, offsets, timestamps,
                                                             tstypes, objects):
            m = new(Message)
            m.value = blob[start:end]
            m.partition_key = None
            m.partition_id = pid
            m.offset = offset
            m.timestamp = ts
            m.partition = obj
            m.topic = topic
            m.timestamp_type = tstype
            m._headers = None
            append(m)
        return msgs, []
    key_ends, flags = ffi.unpack(key_ends, n), ffi.unpack(flags, n)
    starts = [0]
    starts += key_ends[:-1]
    values = [blob[a:b] for a, b in zip(starts, value_ends)]
    if summary & _F_TOPICS:
        topics = [_topic_name(array[i]) for i in range(n)]
    else:
        topics = repeat(_topic_name(array[0]))
    msgs, errs = [], []
    reader = None
    for i, (value, pid, offset, ts, tstype, f, obj, topic) in enumerate(
            zip(values, pids, offsets, timestamps, tstypes, flags, objects, topics)):
        if f & _F_ERROR:
            if array[i].err != errors.PARTITION_EOF:
                errs.append(error_of(array[i], topic))
            continue
        headers = None
        if f & _F_HEADERS:
            reader = reader or Reader()
            headers = reader.headers(array[i])
        key = blob[value_ends[i]:key_ends[i]] if f & _F_KEY else None
        msgs.append(Message(value if f & _F_VALUE else None, key, pid, offset, ts, headers, obj, topic,
                            tstype))
    return msgs, errs


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
