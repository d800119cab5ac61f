"""rd.partitions: ``rd_kafka_topic_partition_list_t`` ⇄ ``TopicPartition`` lists."""
import pytest

from pyrdk.rd import partitions
from pyrdk.rd.partitions import TopicPartition


def test_offset_constants_are_librdkafkas():
    assert (partitions.OFFSET_BEGINNING, partitions.OFFSET_END, partitions.OFFSET_STORED,
            partitions.OFFSET_INVALID) == (-2, -1, -1000, -1001)


def test_topic_partition_defaults():
    tp = TopicPartition("t", 3)
    assert (tp.topic, tp.partition, tp.offset, tp.error) == ("t", 3, partitions.OFFSET_INVALID, 0)


def test_round_trip_keeps_order_and_offsets():
    tps = [("a", 0, 5), ("a", 1, partitions.OFFSET_BEGINNING), ("b", 7, 123456789012)]
    back = partitions.from_c(partitions.to_c(tps))
    assert back == [TopicPartition(t, p, o, 0) for t, p, o in tps]


def test_missing_or_none_offset_stays_invalid():
    back = partitions.from_c(partitions.to_c([("t", 0), ("t", 1, None)]))
    assert [tp.offset for tp in back] == [partitions.OFFSET_INVALID] * 2


def test_accepts_topic_partition_tuples_and_generators():
    back = partitions.from_c(partitions.to_c(TopicPartition("t", i, i * 10) for i in range(3)))
    assert [(tp.partition, tp.offset) for tp in back] == [(0, 0), (1, 10), (2, 20)]


def test_empty_list():
    c_list = partitions.to_c([])
    assert c_list.cnt == 0
    assert partitions.from_c(c_list) == []


def test_unicode_topic_names():
    back = partitions.from_c(partitions.to_c([("tøpic-ü", 0, 1)]))
    assert back[0].topic == "tøpic-ü"


def test_many_entries():
    tps = [("t", i, i) for i in range(1000)]
    assert [tp.offset for tp in partitions.from_c(partitions.to_c(tps))] == list(range(1000))


@pytest.mark.parametrize("tp", [(b"bytes-topic", 0), (5, 0), (None, 0)])
def test_non_str_topic_is_a_type_error(tp):
    with pytest.raises(TypeError):
        partitions.to_c([tp])


@pytest.mark.parametrize("tp", [("t", "0"), ("t", 0, "5"), ("t", None)])
def test_non_int_partition_or_offset_is_a_type_error(tp):
    with pytest.raises(TypeError):
        partitions.to_c([tp])


@pytest.mark.parametrize("tp, exc, match", [
    (("t", "0"), TypeError,
     r"the partition of t must be an int from 0 to 2147483647 \(or -1: none in particular\), not '0'"),
    (("t", True), TypeError, "the partition of t must be an int"),
    (("t", 1 << 31), TypeError, "the partition of t must be an int"),
    (("t", 0, "5"), TypeError, r"the offset of t \[0\] must be an int, not '5'"),
    (("t", 0, 1 << 63), TypeError, r"the offset of t \[0\] must be an int"),
    (("t\0x", 0), ValueError, "NUL character"),
])
def test_a_bad_entry_is_named_in_the_error(tp, exc, match):
    with pytest.raises(exc, match=match):
        partitions.to_c([("ok", 0, 1), tp])


def test_metadata_round_trip():
    back = partitions.from_c(partitions.to_c([TopicPartition("t", 0, 5, metadata=b'{"a": 1}'),
                                              ("t", 1, 6, 0, b""), ("t", 2, 7)]))
    assert [tp.metadata for tp in back] == [b'{"a": 1}', None, None]


def test_metadata_of_a_bytes_subclass_is_its_bytes_whatever_its_len_says():
    class Claims(bytes):
        def __len__(self):
            return 4096  # librdkafka must get the 4 bytes held, not 4096

    back = partitions.from_c(partitions.to_c([TopicPartition("t", 0, 5, metadata=Claims(b"meta"))]))
    assert [tp.metadata for tp in back] == [b"meta"]


def test_metadata_must_be_bytes():
    with pytest.raises(TypeError, match="metadata"):
        partitions.to_c([TopicPartition("t", 0, 5, metadata="text")])
