"""``consume_arrow``: a consumed batch as a ``pyarrow.RecordBatch``, against the session's real
broker (Tansu). The records and offsets must be those ``consume_batch`` gives on the same data,
on either core (the C one fills the columns from librdkafka's messages, the reference builds
them from Messages)."""
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

from pyrdk.common import OffsetType
from pyrdk.exceptions import ConfigurationError
from tests.fix_kafka import MANAGED, group_offsets, make_topic
from tests.test_simpleconsumer import produce, to_partition

PATIENCE = 200  # calls of consume_arrow / consume_batch before giving up; never asserted on


def read_all(consume, count):
    """Call ``consume()`` until ``count`` records came; the list of what it returned."""
    out, got = [], 0
    for _ in range(PATIENCE):
        batch = consume()
        got += batch.num_rows if isinstance(batch, pa.RecordBatch) else len(batch)
        out.append(batch)
        if got >= count:
            return out
    raise AssertionError("only %d of %d records came" % (got, count))


def rows_of(messages):
    return [(m.partition_key, m.value, m.topic, m.partition_id, m.offset, m.timestamp, m.timestamp_type)
            for m in messages]


def rows_of_table(batches):
    table = pa.Table.from_batches(batches)
    columns = ["key", "value", "topic", "partition", "offset", "timestamp", "timestamp_type"]
    data = [table.column(c).cast(pa.int64()).to_pylist() if c == "timestamp" else table.column(c).to_pylist()
            for c in columns]
    return list(zip(*data))


@pytest.fixture
def filled(client, topic_name):
    """A 2-partition topic holding 40 records: keys null on every third, a null value (a
    tombstone) on the fifth, values of 0 to 39 bytes."""
    topic = make_topic(client, topic_name, 2)
    for pid in (0, 1):
        values = [b"v" * i if i != 5 else None for i in range(pid, 40, 2)]
        keys = [None if i % 3 == 0 else b"k%d" % i for i in range(pid, 40, 2)]
        with topic.get_producer(linger_ms=20, partitioner=to_partition(pid)) as producer:
            for value, key in zip(values, keys):
                producer.produce(value, partition_key=key)
    return topic


def consumer(topic, **kwargs):
    kwargs.setdefault("auto_offset_reset", OffsetType.EARLIEST)
    return topic.get_simple_consumer(**kwargs)


def test_same_records_and_offsets_as_consume_batch(filled):
    with consumer(filled) as arrow_reader, consumer(filled) as list_reader:
        batches = read_all(lambda: arrow_reader.consume_arrow(1000, 200), 40)
        lists = read_all(lambda: list_reader.consume_batch(1000, 200), 40)
        got = sorted(rows_of_table(batches), key=lambda r: (r[3], r[4]))
        want = sorted(rows_of([m for batch in lists for m in batch]), key=lambda r: (r[3], r[4]))
        assert got == want
        assert len(got) == 40
        assert arrow_reader.held_offsets == list_reader.held_offsets == {0: 19, 1: 19}
        assert batches[0].schema.names == ["key", "value", "topic", "partition", "offset", "timestamp",
                                           "timestamp_type"]
        assert batches[0].schema.field("timestamp").type == pa.timestamp("ms", tz="UTC")
        table = pa.Table.from_batches(batches)
        assert table.column("key").null_count == 14  # i % 3 == 0 for i in 0..39
        assert table.column("value").null_count == 1
        assert table.column("topic").to_pylist() == [filled.name.decode()] * 40
        # what comes after the last record: an empty batch of the same schema, at the timeout
        empty = arrow_reader.consume_arrow(10, 0)
        assert empty.num_rows == 0 and empty.schema == batches[0].schema


def test_headers_column(client, topic_name):
    topic = make_topic(client, topic_name, 1)
    produce(topic, [b"a", b"b"], partition=0, headers=[("h1", b"x"), ("h2", None)])
    produce(topic, [b"c"], partition=0)
    with consumer(topic) as reader:
        batches = read_all(lambda: reader.consume_arrow(10, 200, headers=True), 3)
    table = pa.Table.from_batches(batches)
    assert table.column("value").to_pylist() == [b"a", b"b", b"c"]
    assert table.column("headers").to_pylist() == [
        [{"key": "h1", "value": b"x"}, {"key": "h2", "value": None}],
        [{"key": "h1", "value": b"x"}, {"key": "h2", "value": None}], None]


def test_buffered_messages_come_first_and_auto_commit_counts_the_batch(filled, client):
    group = b"arrow-group-" + filled.name[-8:]
    with consumer(filled, consumer_group=group, auto_commit_enable=True, auto_commit_interval_ms=0) as reader:
        first = reader.consume()  # the rest of its fetched batch stays buffered in the core
        assert first is not None
        batches = [reader.consume_arrow(1000, 200)]
        assert batches[0].num_rows >= 1
        assert batches[0].column("offset")[0].as_py() == first.offset + 1
        batches += read_all(lambda: reader.consume_arrow(1000, 200), 39 - batches[0].num_rows)
        assert sum(b.num_rows for b in batches) == 39
        held = reader.held_offsets
    assert held == {0: 19, 1: 19}
    with filled.get_simple_consumer(consumer_group=group) as again:
        assert {pid: r.offset for pid, r in again.fetch_offsets()} == {0: 20, 1: 20}


def test_a_managed_group_member_reads_the_same_through_messages(filled):
    """A broker-balanced member takes its batches through Messages (a rebalance during a fetch
    may make some stale), to the same records and commits."""
    group = b"arrow-managed-" + filled.name[-8:]
    with filled.get_balanced_consumer(group, auto_offset_reset=OffsetType.EARLIEST, **MANAGED) as member:
        batches = read_all(lambda: member.consume_arrow(1000, 200), 40)
        member.commit_offsets()
    assert sorted(pa.Table.from_batches(batches).column("offset").to_pylist()) == sorted(list(range(20)) * 2)
    assert group_offsets(filled, group) == {0: 20, 1: 20}


def test_an_empty_topic_gives_an_empty_batch_at_the_timeout(client, topic_name):
    topic = make_topic(client, topic_name, 1)
    with consumer(topic) as reader:
        batch = reader.consume_arrow(100, 300)
    assert batch.num_rows == 0
    assert batch.schema.names[:2] == ["key", "value"]


def test_bad_arguments(filled):
    with consumer(filled) as reader:
        with pytest.raises(TypeError, match="max_messages"):
            reader.consume_arrow(0)
        with pytest.raises(ValueError, match="max_messages"):
            reader.consume_arrow(10 ** 9)
        with pytest.raises(TypeError, match="timeout_ms"):
            reader.consume_arrow(10, "soon")
        with pytest.raises(TypeError, match="headers"):
            reader.consume_arrow(10, 0, headers="yes")
    with consumer(filled, deserializer=lambda value, key: (value, key)) as reader:
        with pytest.raises(ConfigurationError, match="deserializer"):
            reader.consume_arrow(10, 0)


def test_headers_takes_numpy_bools_as_the_other_flags_do(filled):
    """numpy's bools (a pandas column's, say) are True and False, as ``check_bool`` takes them."""
    import numpy as np
    with consumer(filled) as reader:
        assert "headers" in reader.consume_arrow(10, 5000, headers=np.True_).schema.names
        assert "headers" not in reader.consume_arrow(10, 5000, headers=np.False_).schema.names


def test_without_pyarrow_the_error_names_the_extra():
    code = ("import sys; sys.modules['pyarrow'] = None\n"
            "from pyrdk.core import arrow\n"
            "try:\n    arrow.pyarrow()\nexcept ImportError as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "consume_arrow needs pyarrow: pip install 'pyrdk[arrow]'" in out
    code = ("import sys; sys.modules['pyarrow'] = None\n"
            "from pyrdk.core import arrow\n"
            "try:\n    arrow.record_batches([b'v'])\nexcept ImportError as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "produce_arrow needs pyarrow: pip install 'pyrdk[arrow]'" in out


# -- Producer.produce_arrow ------------------------------------------------------------------------

def rows_to_write(n):
    """``n`` rows: null keys on every fourth, a partition on every fifth, empty values on
    every seventh that has a key and a null value (a tombstone) on the 30th: each (key,
    value) pair once."""
    keys = [None if i % 4 == 0 else b"k%d" % i for i in range(n)]
    parts = [i % 3 if i % 5 == 0 else None for i in range(n)]
    values = [None if i == 30 else b"" if i % 7 == 0 and i % 4 else b"v%d" % i for i in range(n)]
    return keys, parts, values


def landed(topic, count):
    """``{(key, value): partition}`` of every record of ``topic``, and each partition's
    ``(key, value)`` pairs in offset order."""
    with consumer(topic) as reader:
        table = pa.Table.from_batches(read_all(lambda: reader.consume_arrow(1000, 200), count))
    rows = list(zip(table.column("key").to_pylist(), table.column("value").to_pylist(),
                    table.column("partition").to_pylist(), table.column("offset").to_pylist()))
    assert len(rows) == count
    by_partition = {p: [(k, v) for k, v, q, _ in sorted(rows, key=lambda r: r[3]) if q == p]
                    for p in {r[2] for r in rows}}
    return {(k, v): p for k, v, p, _ in rows}, by_partition


def test_produce_arrow_lands_every_row_with_its_key_partition_and_value(client, topic_name):
    from pyrdk.partitioners import murmur2_partitioner
    from pyrdk.rd.topic import murmur2_partition
    topic = make_topic(client, topic_name, 3)
    keys, parts, values = rows_to_write(610)
    batch = pa.record_batch({"value": pa.array(values, pa.binary()), "key": pa.array(keys, pa.binary()),
                             "partition": pa.array(parts, pa.int32())})
    # A sliced batch (its arrays start at an offset), then a Table of string columns in two chunks.
    second = pa.Table.from_batches([pa.record_batch({"value": ["s%d" % i for i in range(n, n + 5)],
                                                     "key": ["sk%d" % i for i in range(n, n + 5)]})
                                    for n in (0, 5)])
    with topic.get_producer(partitioner=murmur2_partitioner, linger_ms=5) as producer:
        assert producer.produce_arrow(batch.slice(10)) == 600
        assert producer.produce_arrow(second) == 10
        assert producer.produce_arrow(batch.slice(0, 0)) == 0
    where, order = landed(topic, 610)
    for i in range(10, 610):
        key, value = keys[i], values[i]
        expected = parts[i] if parts[i] is not None else murmur2_partition(key, 3) if key is not None else None
        assert (key, value) in where, i
        if expected is not None:
            assert where[key, value] == expected, i
    for i in range(10):
        assert where[b"sk%d" % i, b"s%d" % i] == murmur2_partition(b"sk%d" % i, 3)
    wrote = [(keys[i], values[i]) for i in range(10, 610)]
    for pid, got in order.items():  # each partition holds its rows in the batch's order
        mine = [pair for pair in got if pair in set(wrote)]
        assert mine == [pair for pair in wrote if pair in set(mine)], pid
    assert set(where.values()) == {0, 1, 2}


def test_produce_arrow_spreads_rows_and_the_general_path_writes_the_same(client, topic_name):
    """The default partitioner spreads rows without a partition in one run per partition;
    with delivery reports every row goes through the general path, with the same result."""
    topic = make_topic(client, topic_name, 2)
    batch = pa.record_batch({"value": [b"v%d" % i for i in range(100)], "key": [b"k"] * 50 + [None] * 50})
    with topic.get_producer(linger_ms=5) as producer:
        assert producer.produce_arrow(batch) == 100
    with topic.get_producer(delivery_reports=True, linger_ms=5) as producer:
        assert producer.produce_arrow(pa.record_batch({"value": [b"w%d" % i for i in range(20)],
                                                       "partition": [1] * 20})) == 20
        assert all(producer.get_delivery_report()[1] is None for _ in range(20))
    where, order = landed(topic, 120)
    first = [v for _, v in order[0]]
    assert first == [b"v%d" % i for i in range(50)] or first == [b"v%d" % i for i in range(50, 100)]
    assert [v for _, v in order[1] if v.startswith(b"w")] == [b"w%d" % i for i in range(20)]


def test_produce_arrow_refuses_what_it_cannot_send_and_names_it(client, topic_name):
    from pyrdk.exceptions import MessageSizeTooLarge
    topic = make_topic(client, topic_name, 1)
    with topic.get_producer(linger_ms=5) as producer:
        with pytest.raises(ValueError, match="holds 7, but the topic has partitions \\[0\\]") as caught:
            producer.produce_arrow(pa.record_batch({"value": [b"a", b"b"], "partition": [0, 7]}))
        assert caught.value.produced == 1
        with pytest.raises(MessageSizeTooLarge, match="max_request_size") as caught:
            producer.produce_arrow(pa.record_batch({"value": [b"c", b"x" * 2000000]}))
        assert caught.value.produced == 1
        with pytest.raises(ValueError, match="the batch has value, headers"):
            producer.produce_arrow(pa.record_batch({"value": [b"a"], "headers": [b"h"]}))
        with pytest.raises(ValueError, match="each once; the batch has value, key, key"):
            producer.produce_arrow(pa.RecordBatch.from_arrays([pa.array([b"a"])] * 3, ["value", "key", "key"]))
        with pytest.raises(TypeError, match="column 'key' must be binary or string, not int64"):
            producer.produce_arrow(pa.record_batch({"value": [b"a"], "key": [1]}))
        with pytest.raises(TypeError, match="RecordBatch or Table, not list"):
            producer.produce_arrow([b"a"])
        with pytest.raises(TypeError, match="column 'value' must be binary or string, not int64"):
            producer.produce_arrow(pa.table({"value": pa.array([], pa.int64())}))  # no rows: checked all the same
        assert producer.produce_arrow(pa.table({"value": pa.array([], pa.binary())})) == 0
        with pytest.raises(ValueError, match="column 'partition' holds a value that is no partition id") as caught:
            producer.produce_arrow(pa.record_batch({"value": [b"a"], "partition": pa.array([2 ** 40])}))
        assert caught.value.produced == 0
        # A table of two batches: produced counts the first batch's rows too.
        table = pa.Table.from_batches([pa.record_batch({"value": [b"d", b"e"], "partition": [0, 0]}),
                                       pa.record_batch({"value": [b"f", b"g"], "partition": [0, 7]})])
        with pytest.raises(ValueError, match="holds 7") as caught:
            producer.produce_arrow(table)
        assert caught.value.produced == 3
        # Offsets outside the data in row 600 (an array made from raw buffers, which pyarrow
        # does not check): the batch is refused before its first row is sent.
        offsets = np.arange(0, 8 * 1001, 8, dtype=np.int32)
        offsets[601] = 10 ** 9
        data = pa.py_buffer(b"".join(b"v%07d" % i for i in range(1000)))
        broken = pa.Array.from_buffers(pa.binary(), 1000, [None, pa.py_buffer(offsets), data])
        with pytest.raises(ValueError, match="column 'value' has offsets outside its data, nothing of the batch "
                                             "was sent: .*slot 601") as caught:
            producer.produce_arrow(pa.record_batch({"value": broken}))
        assert caught.value.produced == 0
        # A value column of the null type: every row without a value.
        assert producer.produce_arrow(pa.table({"value": pa.array([None, None])})) == 2
    with topic.get_producer(serializer=lambda v, k: (v, k)) as producer:
        with pytest.raises(ConfigurationError, match="serializer"):
            producer.produce_arrow(pa.record_batch({"value": [b"a"]}))
    _, by_partition = landed(topic, 7)
    assert by_partition[0] == [(None, b"a"), (None, b"c"), (None, b"d"), (None, b"e"), (None, b"f"),
                               (None, None), (None, None)]


def test_produce_arrow_waits_for_room_in_a_full_queue_and_keeps_the_order(client, topic_name):
    """A queue of 50 messages and 3,000 rows: the rows a full queue refused are offered again,
    in their order, until every one is queued."""
    topic = make_topic(client, topic_name, 2)
    values = [b"v%d" % i for i in range(3000)]
    with topic.get_producer(max_queued_messages=50, linger_ms=1) as producer:
        assert producer.produce_arrow(pa.record_batch({"value": values, "partition": [i % 2 for i in range(3000)]})) \
            == 3000
    _, order = landed(topic, 3000)
    assert [v for _, v in order[0]] == values[0::2] and [v for _, v in order[1]] == values[1::2]
