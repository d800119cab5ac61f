"""Consumed messages as a ``pyarrow.RecordBatch`` (``Consumer.consume_arrow``).

The columns (:func:`schema`): ``key`` and ``value`` (binary, null where the record has none;
``large_binary`` in a batch whose keys, values or topic names add up to more than 2 GiB),
``topic`` (string), ``partition`` (int32), ``offset`` (int64), ``timestamp`` (timestamp[ms,
UTC], the ``Message.timestamp``: -1 where the record has none), ``timestamp_type`` (int32,
librdkafka's numbering as ``Message.timestamp_type``: 0 none, 1 create time, 2 log append
time) and, when asked, ``headers`` (list of ``{key: string, value: binary}``, null where the
record has none).

The C core's ``add_columns`` hands over each column's buffers, filled from librdkafka's
messages with no Python object per record: :func:`from_columns` wraps them
(``pa.Array.from_buffers``, no copy). The pure core's hands over Messages, as do the
consumer's slower paths (headers, buffered messages): :func:`from_messages` builds the same
batch from them with ``pa.array``.

pyarrow is optional (``pip install 'pyrdk[arrow]'``): :func:`pyarrow` raises ImportError
naming the extra when it is missing.
"""
from pyrdk.common import check_bool
from pyrdk.exceptions import ConfigurationError


def pyarrow(method="consume_arrow"):
    """The ``pyarrow`` module, or ImportError saying that ``method`` needs it and how to install it."""
    try:
        import pyarrow as pa
    except ImportError as exc:
        raise ImportError("%s needs pyarrow: pip install 'pyrdk[arrow]' (%s)" % (method, exc)) from exc
    return pa


def check_call(deserializer, headers):
    """What every ``consume_arrow`` checks first: pyarrow is there, the consumer has no
    deserializer (the columns hold the bytes as they came), ``headers`` is a bool (returned;
    ``check_bool`` takes numpy's too)."""
    pyarrow()
    if deserializer is not None:
        raise ConfigurationError("consume_arrow returns the records' bytes and this consumer has a "
                                 "deserializer: use consume_batch, or a consumer without one")
    return check_bool("headers", headers)


def schema(headers=False, wide=False):
    """The batch's schema (``wide``: key, value and topic of the 64-bit-offset types)."""
    pa = pyarrow()
    binary = pa.large_binary() if wide else pa.binary()
    fields = [("key", binary), ("value", binary), ("topic", pa.large_string() if wide else pa.string()),
              ("partition", pa.int32()), ("offset", pa.int64()), ("timestamp", pa.timestamp("ms", tz="UTC")),
              ("timestamp_type", pa.int32())]
    if headers:
        fields.append(("headers", pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))))
    return pa.schema(fields)


def rows(made):
    """The number of records in what ``add_columns`` made."""
    return len(made) if isinstance(made, list) else made[0]


def from_columns(columns):
    """The RecordBatch of the C core's ``add_columns`` buffers: ``(rows, wide, key_nulls,
    key_valid, key_offsets, key_data, value_nulls, value_valid, value_offsets, value_data,
    topic_offsets, topic_data, partitions, offsets, timestamps, timestamp_types)``; each a
    bytes object (a validity bitmap None where nothing is null)."""
    pa = pyarrow()
    (n, wide, key_nulls, key_valid, key_offsets, key_data, value_nulls, value_valid, value_offsets, value_data,
     topic_offsets, topic_data, partitions, offsets, timestamps, types) = columns
    out = schema(wide=wide)

    def buf(data):
        return None if data is None else pa.py_buffer(data)

    def var(i, valid, offs, data, nulls):
        return pa.Array.from_buffers(out.field(i).type, n, [buf(valid), buf(offs), buf(data)], null_count=nulls)

    def fixed(i, data):
        return pa.Array.from_buffers(out.field(i).type, n, [None, buf(data)], null_count=0)

    arrays = [var(0, key_valid, key_offsets, key_data, key_nulls),
              var(1, value_valid, value_offsets, value_data, value_nulls),
              var(2, None, topic_offsets, topic_data, 0),
              fixed(3, partitions), fixed(4, offsets), fixed(5, timestamps), fixed(6, types)]
    return pa.RecordBatch.from_arrays(arrays, schema=out)


def from_messages(messages, headers=False):
    """The RecordBatch of ``messages`` (as :func:`from_columns` makes, for Messages)."""
    pa = pyarrow()
    out = schema(headers)
    if not messages:
        # pa.nulls, not pa.array: pa.array's first call imports pyarrow's pandas support,
        # which fails once the interpreter is exiting (a daemon thread's call the exit cut short)
        return pa.RecordBatch.from_arrays([pa.nulls(0, f.type) for f in out], schema=out)
    wide = any(sum(len(getattr(m, name) or b"") for m in messages) > 0x7FFFFFFF
               for name in ("value", "partition_key", "topic"))
    if wide:
        out = schema(headers, wide=True)
    columns = [[m.partition_key for m in messages], [m.value for m in messages], [m.topic for m in messages],
               [m.partition_id for m in messages], [m.offset for m in messages],
               [m.timestamp for m in messages], [m.timestamp_type for m in messages]]
    if headers:
        columns.append([[{"key": k, "value": v} for k, v in m.headers] if m.headers else None for m in messages])
    return pa.RecordBatch.from_arrays([pa.array(c, f.type) for c, f in zip(columns, out)], schema=out)


def record_batch(made):
    """The RecordBatch of what ``add_columns`` made (the C core's buffers, or Messages)."""
    return from_messages(made) if isinstance(made, list) else from_columns(made)


# -- writing: Producer.produce_arrow ---------------------------------------------------------

WRITE_COLUMNS = ("value", "key", "partition")


def record_batches(data):
    """The ``pyarrow.RecordBatch``es of ``data`` (a RecordBatch or a Table)."""
    pa = pyarrow("produce_arrow")
    if isinstance(data, pa.RecordBatch):
        return [data]
    if isinstance(data, pa.Table):  # an empty one has no batch: one of no rows, so its columns are checked
        return data.to_batches() or [pa.RecordBatch.from_pylist([], schema=data.schema)]
    raise TypeError("produce_arrow takes a pyarrow.RecordBatch or Table, not %s" % type(data).__name__)


def write_columns(batch):
    """``(rows, value, key, partition)``: what the core's ``produce_arrow`` reads of
    ``batch``, each column its buffers (key and partition None when absent or of the null
    type): ``(offset, validity, offsets, data, wide)`` for value and key, ``(offset,
    validity, data)`` of int32 for partition."""
    pa = pyarrow()
    names = batch.schema.names
    extra = [name for name in names if name not in WRITE_COLUMNS]
    if extra or "value" not in names or len(set(names)) != len(names):
        raise ValueError("produce_arrow takes the columns value (required), key and partition, each once; the "
                         "batch has %s" % ", ".join(names))
    key = batch.column("key") if "key" in names else None
    part = batch.column("partition") if "partition" in names else None
    key = None if key is None or pa.types.is_null(key.type) else _binary(key, "key")
    if part is not None and not pa.types.is_null(part.type):
        if not pa.types.is_integer(part.type):
            raise TypeError("column 'partition' must hold integers, not %s" % part.type)
        if part.type != pa.int32():
            try:
                part = part.cast(pa.int32())
            except pa.ArrowInvalid as exc:
                raise ValueError("column 'partition' holds a value that is no partition id: %s" % exc) from None
        valid, data = part.buffers()
        part = (part.offset, valid if part.null_count else None, data)
    else:
        part = None
    value = batch.column("value")
    if pa.types.is_null(value.type):  # none has a value
        value = value.cast(pa.binary())
    return batch.num_rows, _binary(value, "value"), key, part


def _binary(column, name):
    pa = pyarrow()
    t = column.type
    if not (pa.types.is_binary(t) or pa.types.is_string(t) or pa.types.is_large_binary(t)
            or pa.types.is_large_string(t)):
        raise TypeError("column '%s' must be binary or string, not %s" % (name, t))
    wide = pa.types.is_large_binary(t) or pa.types.is_large_string(t)
    try:  # every row's offsets, before any row is sent (as bytes: a string's UTF-8 is not read)
        column.view(pa.large_binary() if wide else pa.binary()).validate(full=True)
    except pa.ArrowInvalid as exc:
        raise ValueError("column '%s' has offsets outside its data, nothing of the batch was sent: %s"
                         % (name, exc)) from None
    valid, offsets, data = column.buffers()
    return (column.offset, valid if column.null_count else None,
            offsets if offsets is not None else bytes(8 if wide else 4), data if data is not None else b"", wide)
