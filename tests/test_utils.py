"""pyrdk.utils: pykafka's UTF-8 serializers and its compat names."""
import sys

import pytest

from pyrdk.utils import compat, deserialize_utf8, serialize_utf8


def test_serialize_utf8_encodes_str_and_keeps_bytes_and_none():
    assert serialize_utf8("caf\u00e9", "cl\u00e9") == (b"caf\xc3\xa9", b"cl\xc3\xa9")
    assert serialize_utf8(b"raw", None) == (b"raw", None)
    assert serialize_utf8(None, b"k") == (None, b"k")


def test_deserialize_utf8_decodes_and_keeps_none():
    assert deserialize_utf8(b"caf\xc3\xa9", b"cl\xc3\xa9") == ("caf\u00e9", "cl\u00e9")
    assert deserialize_utf8(None, None) == (None, None)


def test_bad_input_is_named():
    with pytest.raises(TypeError, match="serialize_utf8 takes str or bytes as the partition_key, not int"):
        serialize_utf8("v", 5)
    with pytest.raises(UnicodeDecodeError):
        deserialize_utf8(b"\xff", None)


def test_compat_names_pykafka_programs_import():
    assert compat.PY3 is True and compat.IS_PYPY in (True, False)
    assert list(compat.iteritems({"a": 1})) == [("a", 1)]
    assert list(compat.itervalues({"a": 1})) == [1] and list(compat.iterkeys({"a": 1})) == ["a"]
    assert compat.get_bytes("caf\u00e9") == b"caf\xc3\xa9" and compat.get_bytes(b"x") == b"x"
    assert compat.get_bytes(5) == 5
    assert compat.get_string(b"caf\xc3\xa9") == "caf\u00e9" and compat.get_string(5) == "5"
    assert compat.get_string(b"\xff") == b"\xff"  # left as it is, as pykafka does
    assert compat.get_bytes("\ud800") == "\ud800"  # a lone surrogate cannot be encoded
    assert compat.range is range and compat.buffer is memoryview
    queue = compat.Queue()
    with pytest.raises(compat.Empty):
        queue.get_nowait()
    assert compat.Semaphore(2).acquire(blocking=False)


@pytest.mark.kafka
def test_serializers_on_a_producer_and_a_consumer(topic):
    with topic.get_producer(serializer=serialize_utf8, linger_ms=5) as producer:
        producer.produce("\u65e5\u672c", partition_key="\u00e9")
    consumer = topic.get_simple_consumer(deserializer=deserialize_utf8, consumer_timeout_ms=3000)
    messages = list(consumer)
    consumer.stop()
    assert [(m.value, m.partition_key) for m in messages] == [("\u65e5\u672c", "\u00e9")]


TEXT = b"The man in black fled across the desert, and the gunslinger followed."


def test_compression_gzip_round_trips_and_is_gzip():
    import gzip

    from pyrdk.utils import compression
    for data in (TEXT, TEXT * 5000, b""):
        encoded = compression.encode_gzip(data)
        assert encoded != data
        assert compression.decode_gzip(encoded) == data
        assert gzip.decompress(encoded) == data


CODECS = [
    ("snappy", ("snappy",), "python-snappy"),
    ("snappy_xerial", ("snappy",), "python-snappy"),
    ("lz4", ("lz4.frame",), "lz4"),
    ("lz4_old_kafka", ("lz4.frame", "xxhash"), "lz4"),
]


def _codec(codec):
    from pyrdk.utils import compression
    name = codec.replace("_xerial", "")
    encode = getattr(compression, "encode_" + name)
    if codec == "snappy_xerial":
        encode = lambda data: compression.encode_snappy(data, xerial_compatible=True, xerial_blocksize=64)  # noqa: E731
    return encode, getattr(compression, "decode_" + name)


@pytest.mark.parametrize("codec, modules, package", CODECS)
def test_compression_codecs_round_trip(codec, modules, package):
    """pykafka's snappy and LZ4 codecs, on python-snappy, lz4 and xxhash (the test extra)."""
    encode, decode = _codec(codec)
    for data in (TEXT, TEXT * 5000, b""):
        encoded = encode(data)
        assert encoded != data
        assert decode(encoded) == data


def test_compression_frames_are_the_libraries():
    """What the codecs write, the libraries read, and the other way round: snappy's raw format,
    xerial's blocks each a snappy block, an LZ4 frame; the old-Kafka LZ4 frame differs from the
    standard one in its header checksum alone."""
    import struct

    import lz4.frame
    import snappy

    from pyrdk.utils import compression
    assert snappy.decompress(compression.encode_snappy(TEXT)) == TEXT
    assert compression.decode_snappy(snappy.compress(TEXT)) == TEXT
    framed = compression.encode_snappy(TEXT * 3, xerial_compatible=True, xerial_blocksize=100)
    assert framed.startswith(b"\x82SNAPPY\x00")
    blocks, cursor = [], 16
    while cursor < len(framed):
        (size,) = struct.unpack_from("!i", framed, cursor)
        blocks.append(snappy.decompress(framed[cursor + 4:cursor + 4 + size]))
        cursor += 4 + size
    assert [len(b) for b in blocks] == [100, 100, len(TEXT * 3) - 200] and b"".join(blocks) == TEXT * 3
    assert lz4.frame.decompress(compression.encode_lz4(TEXT)) == TEXT
    assert compression.decode_lz4(lz4.frame.compress(TEXT)) == TEXT
    old = compression.encode_lz4_old_kafka(TEXT)
    with pytest.raises(RuntimeError):  # its header checksum is not the standard one
        lz4.frame.decompress(old)
    assert compression.decode_lz4_old_kafka(old) == TEXT


@pytest.mark.parametrize("codec, modules, package", CODECS)
def test_compression_codec_without_its_package_names_it(codec, modules, package, monkeypatch):
    """Where its package is missing, a codec raises ImportError saying what to install."""
    encode, _ = _codec(codec)
    for module in modules:
        monkeypatch.setitem(sys.modules, module, None)  # import then fails, as for a missing package
    with pytest.raises(ImportError, match="pip install " + package):
        encode(TEXT)
