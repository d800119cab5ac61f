"""Plain data: Message, OffsetType, CompressionType, SslConfig, and the check of boolean options."""
import datetime

import numpy as np
import pytest

from pyrdk import CompressionType, Message, OffsetType, SslConfig
from pyrdk.common import TimestampType, check_bool


def test_pykafka_numbers():
    assert (OffsetType.EARLIEST, OffsetType.LATEST) == (-2, -1)
    assert [int(c) for c in CompressionType] == [0, 1, 2, 3, 4]
    assert CompressionType.LZ4.codec == "lz4"


def test_the_constants_print_as_their_numbers():
    """As pykafka's int constants print, on every Python."""
    assert (str(OffsetType.EARLIEST), "%s" % CompressionType.GZIP, "{}".format(TimestampType.CREATE_TIME)) == \
        ("-2", "1", "1")
    assert repr(OffsetType.LATEST) == "<OffsetType.LATEST: -1>"


def test_message_fields_and_timestamp_dt():
    m = Message(b"v", partition_key=b"k", partition_id=3, offset=7, timestamp=1_700_000_000_000,
                headers=[("h", b"x")])
    assert (m.value, m.key, m.partition_id, m.offset) == (b"v", b"k", 3, 7)
    assert m.timestamp_dt == datetime.datetime(2023, 11, 14, 22, 13, 20, tzinfo=datetime.timezone.utc)
    assert Message(b"v").timestamp_dt is None
    assert "offset=7" in repr(m)


def test_ssl_config_maps_to_librdkafka_properties():
    config = SslConfig(cafile="/ca.pem", certfile="/c.pem", keyfile="/k.pem", password=b"pw").rdkafka_config()
    assert config == {"security.protocol": "ssl", "ssl.ca.location": "/ca.pem",
                      "ssl.certificate.location": "/c.pem", "ssl.key.location": "/k.pem",
                      "ssl.key.password": "pw"}


def test_a_boolean_option_takes_what_pykafka_would_and_refuses_a_string():
    """pykafka and aiokafka test a boolean option for truth: 0, 1 and None mean what they say
    there, but a string such as "false" from a configuration file is true, and turned the
    option on. pyrdk refuses it, and anything else that is not a clear truth value."""
    for value, expected in ((True, True), (False, False), (1, True), (0, False), (None, False),
                            (np.int64(1), True), (np.True_, True), (np.False_, False)):
        assert check_bool("sync", value) is expected
    for bad in ("false", "true", "", b"0", 2, -1, 0.0, [], object()):
        with pytest.raises(TypeError, match="^sync must be True or False, not "):
            check_bool("sync", bad)
