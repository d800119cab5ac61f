"""The core's Message: pykafka's fields, made by either implementation, freed completely."""
import datetime
import gc
import os
import pickle
import sys
import weakref

import pytest

import pyrdk
from pyrdk import core
from pyrdk.common import CompressionType, TimestampType

Message = core.Message


def test_the_core_says_which_implementation_runs():
    assert core.implementation in ("c", "python")
    assert pyrdk.implementation == core.implementation
    assert pyrdk.librdkafka_version().implementation == core.implementation


def test_the_c_core_runs_unless_the_python_one_is_asked_for():
    """A C core that failed to build or to import would only be warned about at run time."""
    if os.environ.get("PYRDK_IMPL", "").strip().lower() != "python":
        assert core.implementation == "c"
    else:
        assert core.implementation == "python"


def test_a_message_is_a_pyrdk_message_with_pykafka_defaults():
    msg = Message(b"v")
    assert isinstance(msg, pyrdk.common.Message) and isinstance(msg, pyrdk.Message)
    assert (msg.value, msg.partition_key, msg.key, msg.partition_id, msg.offset, msg.timestamp) == \
        (b"v", None, None, -1, -1, None)
    assert (msg.partition, msg.topic, msg.timestamp_type, msg.headers) == (None, None, 0, [])
    assert (msg.compression_type, msg.produce_attempt, msg.delivery_report_q) == (CompressionType.NONE, 0, None)
    assert msg.timestamp_dt is None


def test_protocol_version_is_1_and_pykafkas_own_message_keeps_what_it_was_made_with():
    msg = Message(b"v")
    assert msg.protocol_version == 1
    with pytest.raises(AttributeError):
        msg.protocol_version = 0
    assert pyrdk.protocol.Message(b"v").protocol_version == 0  # pykafka's default
    assert pyrdk.protocol.Message(b"v", protocol_version=1).protocol_version == 1


def test_fields_are_settable_and_keyword_arguments_work():
    msg = Message(b"v", partition_key=b"k", partition_id=3, offset=10, timestamp=1700000000000,
                  headers=[("h", b"1")], topic="t", timestamp_type=1, compression_type=CompressionType.GZIP)
    assert (msg.key, msg.partition_id, msg.offset, msg.headers, msg.topic) == (b"k", 3, 10, [("h", b"1")], "t")
    assert msg.timestamp_dt == datetime.datetime(2023, 11, 14, 22, 13, 20, tzinfo=datetime.timezone.utc)
    assert msg.compression_type == CompressionType.GZIP and msg.timestamp_type == TimestampType.CREATE_TIME
    msg.value, msg.partition_key, msg.offset, msg.timestamp = {"any": "object"}, "text", 2 ** 62, None
    msg.headers, msg.produce_attempt = [("x", None)], 2
    assert (msg.value, msg.partition_key, msg.offset, msg.timestamp) == ({"any": "object"}, "text", 2 ** 62, None)
    assert (msg.headers, msg.produce_attempt) == ([("x", None)], 2)
    msg.headers = None  # none: an empty list again, as the constructor's default
    assert msg.headers == []
    assert "offset=%d" % 2 ** 62 in repr(msg)


@pytest.mark.parametrize("field,value", [("offset", "1"), ("partition_id", 2 ** 40), ("offset", 2 ** 70),
                                         ("timestamp", 1.5), ("timestamp_type", None)])
def test_integer_fields_refuse_what_is_not_an_int_that_fits(field, value):
    msg = Message(b"v")
    with pytest.raises((TypeError, OverflowError, ValueError)):
        setattr(msg, field, value)


def test_len_is_pykafkas_size_of_the_message_and_a_message_is_always_true():
    """pykafka's ``len(message)``: a 14-byte header, the key, the value and 8 bytes for a
    timestamp; a value without a length (from a deserializer) still leaves the message true."""
    assert len(Message(b"abc", partition_key=b"k")) == 18
    assert len(Message(b"abc", partition_key=b"k", timestamp=1700000000000)) == 26
    assert len(Message(None)) == 14 and len(Message("h\u00e9llo")) == 19
    unsized = Message(5)
    assert unsized and bool(unsized) is True
    with pytest.raises(TypeError):
        len(unsized)
    assert len(pyrdk.protocol.Message(b"abc")) == 17  # v0: no timestamp field
    assert len(pyrdk.protocol.Message(b"abc", protocol_version=1)) == 25


def test_set_timestamp_and_timestamp_dt_set_the_timestamp_as_pykafka():
    msg = Message(b"v")
    msg.set_timestamp(datetime.datetime(2021, 3, 4, 5, 6, 7, 891000, tzinfo=datetime.timezone.utc))
    assert msg.timestamp == 1614834367891  # exact: no float in between
    msg.set_timestamp(datetime.datetime(2020, 1, 2, 3, 4, 5, 678999))  # naive: UTC; rounded down
    assert msg.timestamp == 1577934245678
    msg.set_timestamp(datetime.datetime(2020, 1, 1, 1, tzinfo=datetime.timezone(datetime.timedelta(hours=1))))
    assert msg.timestamp == 1577836800000
    msg.set_timestamp(datetime.datetime(1969, 12, 31, 23, 59, 59, 999500))
    assert msg.timestamp == -1
    msg.set_timestamp(1600000000123.9)  # pykafka took floats (time.time() * 1000)
    assert msg.timestamp == 1600000000123
    msg.set_timestamp(None)
    assert msg.timestamp is None
    msg.timestamp_dt = datetime.datetime(2020, 1, 1)
    assert msg.timestamp == 1577836800000
    assert msg.timestamp_dt == datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)
    for bad in ("1", True, float("nan")):
        with pytest.raises(TypeError, match=r"set_timestamp\(\) takes ms since the epoch"):
            msg.set_timestamp(bad)
    with pytest.raises(TypeError, match="timestamp_dt takes a datetime"):
        msg.timestamp_dt = 1577836800000
    with pytest.raises(AttributeError):
        del msg.timestamp_dt
    assert msg.timestamp == 1577836800000


def test_numpy_integers_are_a_messages_ints_and_timestamps():
    """Values read from numpy (or pandas) arrays are integers too, as elsewhere in pyrdk."""
    np = pytest.importorskip("numpy")
    msg = Message(b"v", partition_id=np.int32(1), offset=np.int64(5))
    msg.set_timestamp(np.int64(1600000000123))
    msg.partition_id = np.uint8(2)
    assert (msg.partition_id, msg.offset, msg.timestamp) == (2, 5, 1600000000123)
    assert all(type(v) is int for v in (msg.partition_id, msg.offset, msg.timestamp))
    with pytest.raises(TypeError, match="Message.offset must be an int"):
        msg.offset = np.float64(5)


def test_a_message_pickles():
    msg = Message(b"v", partition_key=b"k", partition_id=1, offset=5, timestamp=7, headers=[("h", b"1")],
                  topic="t", timestamp_type=1)
    copy = pickle.loads(pickle.dumps(msg))
    assert type(copy) is type(msg)
    assert (copy.value, copy.partition_key, copy.partition_id, copy.offset, copy.timestamp, copy.headers,
            copy.topic, copy.timestamp_type) == (b"v", b"k", 1, 5, 7, [("h", b"1")], "t", 1)


_DUMP = ("import pickle, sys, pyrdk\n"
         "sys.stdout.buffer.write(pickle.dumps(pyrdk.core.Message(b'v', partition_key=b'k', offset=5, timestamp=7,\n"
         "                                                        headers=[('h', b'1')])))")
_LOAD = ("import pickle, sys, pyrdk\n"
         "m = pickle.loads(sys.stdin.buffer.read())\n"
         "print(type(m).__module__, isinstance(m, pyrdk.Message), m.value, m.partition_key, m.offset, m.timestamp,\n"
         "      m.headers, m.compression_type)")


@pytest.mark.parametrize("source, target", [("c", "python"), ("python", "c")])
def test_a_message_pickled_where_one_core_runs_loads_where_the_other_does(source, target):
    """A C-core Message pickles through pyrdk.core, which makes it again as the loading
    process's core's (it loaded as a pyrdk._core.Message, no pyrdk.Message, where the
    pure-Python core ran); a pure-Python one pickles as pyrdk.common.Message, which both load."""
    import subprocess

    def run(code, impl, data=None):
        return subprocess.run([sys.executable, "-c", code], input=data, capture_output=True, check=True, timeout=60,
                              env=dict(os.environ, PYRDK_IMPL=impl)).stdout
    fields = run(_LOAD, target, run(_DUMP, source)).decode().strip().split(None, 2)
    expected_module = "pyrdk.common" if "python" in (source, target) else "pyrdk._core"
    assert fields == [expected_module, "True", "b'v' b'k' 5 7 [('h', b'1')] 0"]  # compression_type NONE


def test_an_init_that_raises_leaves_the_message_as_it_was():
    msg = Message(b"v", offset=4)
    with pytest.raises(TypeError, match="timestamp"):
        msg.__init__(b"w", partition_id=3, timestamp="1")
    assert (msg.value, msg.partition_id, msg.offset, msg.timestamp) == (b"v", -1, 4, None)


@pytest.mark.parametrize("field", ["value", "partition_key", "partition", "topic", "offset", "headers", "key"])
def test_a_message_s_fields_cannot_be_deleted(field):
    msg = Message(b"v", partition_key=b"k", topic="t")
    with pytest.raises(AttributeError):
        delattr(msg, field)
    assert repr(msg) == "<pyrdk.Message topic='t' partition=-1 offset=-1 value=b'v'>" and msg.key == b"k"
    plain = _Slotted(b"v")
    plain.extra = 1
    del plain.extra  # a subclass's own


class _Big(int):
    def __index__(self):
        return 0


def test_integer_fields_read_back_as_plain_ints():
    msg = Message(b"v", partition_id=CompressionType.GZIP, offset=_Big(2 ** 40), timestamp=_Big(7),
                  timestamp_type=TimestampType.LOG_APPEND_TIME)
    msg.partition_id = CompressionType.ZSTD
    fields = (msg.partition_id, msg.offset, msg.timestamp, msg.timestamp_type)
    assert fields == (4, 2 ** 40, 7, 2) and {type(field) for field in fields} == {int}


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_a_message_pickles_with_every_protocol(protocol):
    msg = Message(b"v", partition_key=b"k", offset=5, timestamp=7, headers=[("h", None)],
                  compression_type=CompressionType.GZIP, produce_attempt=2)
    copy = pickle.loads(pickle.dumps(msg, protocol))
    assert (copy.value, copy.partition_key, copy.offset, copy.timestamp, copy.headers, copy.compression_type,
            copy.produce_attempt) == (b"v", b"k", 5, 7, [("h", None)], CompressionType.GZIP, 2)


class _Plain(Message):
    pass


class _Slotted(Message):
    __slots__ = ("extra",)


class _Finalized(Message):
    finalized = 0

    def __del__(self):
        type(self).finalized += 1


@pytest.mark.parametrize("cls", [_Plain, _Slotted])
def test_an_instance_of_a_subclass_pickles_with_its_own_fields(cls):
    msg = cls(b"v", partition_key=b"k", offset=3, timestamp=None, compression_type=CompressionType.ZSTD)
    msg.extra = ["own"]
    copy = pickle.loads(pickle.dumps(msg))
    assert type(copy) is cls and copy.extra == ["own"]
    assert (copy.value, copy.partition_key, copy.offset, copy.timestamp) == (b"v", b"k", 3, None)
    assert copy.compression_type is CompressionType.ZSTD and copy.headers == []


class _OwnValue(Message):
    __slots__ = ("given",)

    @property
    def value(self):
        return ("own", self.given)

    @value.setter
    def value(self, value):
        self.given = value


class _OwnKey(Message):
    __slots__ = ("given_key",)

    @property
    def partition_key(self):
        return ("own", self.given_key)

    @partition_key.setter
    def partition_key(self, key):
        self.given_key = key


def test_a_subclass_s_own_value_property_is_what_sets_and_reads_it():
    msg = _OwnValue(b"v")
    assert msg.value == ("own", b"v") and msg.given == b"v"  # the constructor sets it through the property
    msg.value = b"w"
    assert msg.value == ("own", b"w") and msg.given == b"w"
    keyed = _OwnKey(b"v", b"k")
    assert keyed.given_key == b"k" and keyed.partition_key == keyed.key == ("own", b"k")
    plain = _Plain(b"v", partition_key=b"k")
    plain.value, plain.partition_key = b"x", b"y"  # the Message's own fields, through its setter
    assert (plain.value, plain.partition_key, plain.key) == (b"x", b"y", b"y")


class _OwnPlace(Message):
    """A subclass keeping topic and partition in properties of its own."""

    @property
    def topic(self):
        return ("own", self.__dict__.get("given_topic"))

    @topic.setter
    def topic(self, topic):
        self.__dict__["given_topic"] = topic

    @property
    def partition(self):
        return ("own", self.__dict__.get("given_partition"))

    @partition.setter
    def partition(self, partition):
        self.__dict__["given_partition"] = partition


@pytest.mark.parametrize("protocol", [0, pickle.HIGHEST_PROTOCOL])
def test_a_subclass_s_own_topic_and_partition_properties_are_what_the_constructor_sets(protocol):
    """As pyrdk.common.Message's constructor sets them (``self.topic = topic``): through a
    subclass's own properties, and so pickled and loaded again."""
    msg = _OwnPlace(b"v", topic="t", partition="p")
    assert (msg.given_topic, msg.given_partition) == ("t", "p")
    assert (msg.topic, msg.partition) == (("own", "t"), ("own", "p"))
    assert repr(msg) == "<pyrdk.Message topic=('own', 't') partition=-1 offset=-1 value=b'v'>"
    copy = pickle.loads(pickle.dumps(msg, protocol))
    assert type(copy) is _OwnPlace and (copy.given_topic, copy.topic) == ("t", ("own", "t"))


class _OwnConstructor(Message):
    def __init__(self, value, note):
        super().__init__(value, offset=3)
        self.note = note


@pytest.mark.parametrize("protocol", [0, pickle.HIGHEST_PROTOCOL])
def test_an_instance_of_a_subclass_with_its_own_constructor_pickles(protocol):
    copy = pickle.loads(pickle.dumps(_OwnConstructor(b"v", "mine"), protocol))
    assert type(copy) is _OwnConstructor and (copy.value, copy.offset, copy.note) == (b"v", 3, "mine")


def test_a_subclass_s_repr_shows_what_its_own_properties_give():
    assert repr(_OwnValue(b"v", topic="t", offset=3)) == \
        "<pyrdk.Message topic='t' partition=-1 offset=3 value=('own', b'v')>"
    assert repr(_Plain(b"x" * 50)) == "<pyrdk.Message topic=None partition=-1 offset=-1 value=%r>" % (b"x" * 40)


class _TextPlace(Message):
    """A subclass whose partition_id and offset properties give text."""

    @property
    def partition_id(self):
        return self.__dict__.get("text", "7")

    @property
    def offset(self):
        return 3.9


def test_a_subclass_s_repr_takes_numbers_only_as_pyrdk_common_message_s():
    """The repr's "%d" takes a number (a float cut to an int), never text, even text of digits."""
    msg = _TextPlace(b"v")
    with pytest.raises(TypeError, match="number is required, not str"):
        repr(msg)
    msg.__dict__["text"] = "seven"
    with pytest.raises(TypeError, match="number is required, not str"):
        repr(msg)
    msg.__dict__["text"] = 2.5
    assert repr(msg) == "<pyrdk.Message topic=None partition=2 offset=3 value=b'v'>"


@pytest.mark.parametrize("protocol", [0, pickle.HIGHEST_PROTOCOL])
def test_a_subclass_s_own_value_property_pickles_what_it_was_given(protocol):
    copy = pickle.loads(pickle.dumps(_OwnValue(b"v", offset=3), protocol))
    assert type(copy) is _OwnValue and (copy.given, copy.value, copy.offset) == (b"v", ("own", b"v"), 3)
    keyed = pickle.loads(pickle.dumps(_OwnKey(b"v", b"k"), protocol))
    assert (keyed.value, keyed.given_key, keyed.key) == (b"v", b"k", ("own", b"k"))


def test_compression_type_defaults_to_pyrdks_member():
    assert Message(b"v").compression_type is CompressionType.NONE
    assert pickle.loads(pickle.dumps(Message(b"v"))).compression_type is CompressionType.NONE


@pytest.mark.parametrize("cls", [Message, _Plain, _Slotted, _Finalized])
def test_freeing_a_message_or_an_instance_of_a_subclass_releases_every_field(cls):
    """Message's deallocation clears its fields, and a subclass's own slots, dict, weak
    references and ``__del__`` still get their due."""
    field = object()
    gc.collect()  # garbage of earlier tests may hold Messages
    before, type_refs = sys.getrefcount(field), sys.getrefcount(cls)
    msgs = [cls(field, partition_key=field, headers=field, partition=field, topic=field) for _ in range(3000)]
    if cls is _Plain:
        msgs[0].extra = field
        ref = weakref.ref(msgs[0])
    if cls is _Slotted:
        msgs[0].extra = field
    del msgs
    gc.collect()
    assert (sys.getrefcount(field), sys.getrefcount(cls)) == (before, type_refs)
    if cls is _Plain:
        assert ref() is None
    if cls is _Finalized:
        assert cls.finalized == 3000


def test_a_long_chain_of_messages_is_freed_without_exhausting_the_c_stack():
    chain = None
    for _ in range(1000000):  # deep enough to overflow an 8 MB stack by recursion
        chain = Message(chain)
    del chain  # freed a level at a time, not by recursion


@pytest.mark.parametrize("field", ["value", "partition_key", "headers", "partition", "delivery_report_q"])
def test_a_message_in_a_reference_cycle_is_still_collected(field):
    holder = _Plain(None)
    setattr(holder, field, Message(holder))
    ref = weakref.ref(holder)
    del holder
    gc.collect()
    assert ref() is None
