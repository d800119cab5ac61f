"""pykafka's ``pykafka.utils``: the serializers programs pass to producers and consumers,
and ``compat``.

    from pyrdk.utils import serialize_utf8, deserialize_utf8
    producer = topic.get_producer(serializer=serialize_utf8)
    consumer = topic.get_simple_consumer(deserializer=deserialize_utf8)
"""
from pyrdk.utils import compat

__all__ = ["compat", "deserialize_utf8", "serialize_utf8"]


def _encode(what, text):
    if text is None or isinstance(text, bytes):
        return text
    if not isinstance(text, str):
        raise TypeError("serialize_utf8 takes str or bytes as the %s, not %s" % (what, type(text).__name__))
    return text.encode("utf-8")


def serialize_utf8(value, partition_key):
    """``(value, partition_key)`` with each str encoded as UTF-8; bytes and None pass as
    they are (``Producer(serializer=serialize_utf8)``)."""
    return _encode("value", value), _encode("partition_key", partition_key)


def deserialize_utf8(value, partition_key):
    """``(value, partition_key)`` decoded from UTF-8 to str; None passes as it is
    (``SimpleConsumer(deserializer=deserialize_utf8)``). Bytes that are not UTF-8 raise
    ``UnicodeDecodeError``."""
    return (None if value is None else value.decode("utf-8"),
            None if partition_key is None else partition_key.decode("utf-8"))
