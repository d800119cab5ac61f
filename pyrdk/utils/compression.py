"""pykafka's ``pykafka.utils.compression``: the codecs of Kafka messages as functions on bytes,
for programs that compress or decompress payloads themselves. pyrdk's producers and consumers
never call them (librdkafka compresses); gzip is the standard library's, snappy needs
``python-snappy``, LZ4 ``lz4`` (and the old-Kafka LZ4 framing ``xxhash`` too), as pykafka's
did. A codec whose package is missing raises ``ImportError`` naming it.
"""
import gzip
import io
import struct

__all__ = ["decode_gzip", "decode_lz4", "decode_lz4_old_kafka", "decode_snappy", "encode_gzip", "encode_lz4",
           "encode_lz4_old_kafka", "encode_snappy"]

# The stream header of xerial's snappy-java (Kafka's Java client writes it): a marker byte,
# "SNAPPY\0", then the format version and the oldest compatible one (both 1).
_XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack("!ii", 1, 1)
_LZ4_HEADER = 7  # magic (4), FLG, BD, header checksum; plus 8 with the content size bit


def _module(name, package):
    import importlib
    try:
        return importlib.import_module(name)
    except ImportError:
        raise ImportError("this codec needs %s: pip install %s" % (package, package)) from None


def encode_gzip(buff):
    """``buff`` gzip-compressed."""
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb") as f:
        f.write(buff)
    return out.getvalue()


def decode_gzip(buff):
    """``buff`` gzip-decompressed."""
    with gzip.GzipFile(fileobj=io.BytesIO(buff), mode="rb") as f:
        return f.read()


def encode_snappy(buff, xerial_compatible=False, xerial_blocksize=32 * 1024):
    """``buff`` snappy-compressed; with ``xerial_compatible``, in xerial's framing: the header,
    then each ``xerial_blocksize`` bytes of ``buff`` compressed on its own, after its
    compressed length (big-endian int32)."""
    snappy = _module("snappy", "python-snappy")
    buff = bytes(buff)
    if not xerial_compatible:
        return snappy.compress(buff)
    blocks = [_XERIAL_HEADER]
    for start in range(0, len(buff), xerial_blocksize):
        block = snappy.compress(buff[start:start + xerial_blocksize])
        blocks.append(struct.pack("!i", len(block)) + block)
    return b"".join(blocks)


def _is_xerial(buff):
    return len(buff) >= len(_XERIAL_HEADER) and bytes(buff[:len(_XERIAL_HEADER)]) == _XERIAL_HEADER


def decode_snappy(buff):
    """``buff`` snappy-decompressed, in xerial's framing or without."""
    snappy = _module("snappy", "python-snappy")
    buff = bytes(buff)
    if not _is_xerial(buff):
        return snappy.decompress(buff)
    out, cursor = [], len(_XERIAL_HEADER)
    while cursor < len(buff):
        (size,) = struct.unpack_from("!i", buff, cursor)
        cursor += 4
        out.append(snappy.decompress(buff[cursor:cursor + size]))
        cursor += size
    return b"".join(out)


def encode_lz4(buff):
    """``buff`` in an LZ4 frame of independent blocks (Kafka reads no linked blocks)."""
    return _module("lz4.frame", "lz4").compress(bytes(buff), block_linked=False)


def decode_lz4(buff):
    """``buff`` decompressed from an LZ4 frame."""
    return _module("lz4.frame", "lz4").decompress(bytes(buff))


def _header_checksum(data):
    """The frame header checksum byte: the second byte of xxh32 of ``data``."""
    return _module("xxhash", "xxhash").xxh32(data).digest()[-2:-1]


def encode_lz4_old_kafka(buff):
    """``buff`` in the LZ4 frame Kafka 0.8 and 0.9 read: no content size, and the header
    checksum computed over the magic number too, as those brokers (wrongly) did."""
    data = bytearray(encode_lz4(buff))
    flg = data[4]
    body = data[_LZ4_HEADER + (8 if flg & 0x08 else 0):]
    header = data[:_LZ4_HEADER - 1]
    header[4] = flg & ~0x08
    return bytes(header) + _header_checksum(bytes(header)) + bytes(body)


def decode_lz4_old_kafka(buff):
    """``buff`` decompressed from an LZ4 frame made by Kafka 0.8 or 0.9 (see
    :func:`encode_lz4_old_kafka`): its header checksum is put right first."""
    buff = bytes(buff)
    end = _LZ4_HEADER + (8 if buff[4] & 0x08 else 0)
    return decode_lz4(buff[:end - 1] + _header_checksum(buff[4:end - 1]) + buff[end:])
