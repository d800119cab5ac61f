"""Plain data shared by every layer: Message, OffsetType, CompressionType, SslConfig,
pykafka's offset answers, and the check of int arguments.

Pure Python: this module imports without the compiled extension.
"""
from __future__ import annotations

import abc
import collections
import datetime
import enum
import logging
import math
import numbers
import os
import queue
import weakref
from collections.abc import Callable
from typing import Any, Optional, TypeVar, Union

INT16_MAX = (1 << 15) - 1
INT32_MAX = (1 << 31) - 1
INT64_MAX = (1 << 63) - 1
# librdkafka reads a message timestamp of 0 as 'now': the produce calls refuse it (%s: the argument's name)
ZERO_TIMESTAMP = ("%s 0 cannot be sent: librdkafka reads a timestamp of 0 as 'now'; give 1 ms or more, "
                  "or None for now")

_Int = TypeVar("_Int", bound=int)

log = logging.getLogger(__name__)


def stop_at_exit(stop: Any, exc_type: Optional[type[BaseException]], what: str) -> None:
    """The end of a ``with`` block: ``stop()``; when the block raised, a failure of
    ``stop()`` is logged and the block's own exception stands."""
    try:
        stop()
    except Exception:
        if exc_type is None:
            raise
        log.exception("error while stopping the %s after an exception", what)


def integer(value: Any) -> Any:
    """``value`` as an int if it is an integer of another type (numpy's, say; a bool is no
    integer here), else ``value`` unchanged, for the checks that take ints only. An int is
    told first: asking the ``numbers.Integral`` ABC about it took 4,500 instructions."""
    if not isinstance(value, (int, bool)) and isinstance(value, numbers.Integral):
        return int(value)
    return value


def weak_method(obj: Any, name: str, dropped: Optional[Callable[..., Any]]) -> Callable[..., Any]:
    """``obj.<name>`` as librdkafka's callbacks (whose registry lives as long as the handle)
    and a client's own threads call it, holding ``obj`` weakly, so that they do not keep a
    client the program let go of alive; once it is gone, ``dropped`` is called instead (None:
    nothing is)."""
    ref = weakref.ref(obj)

    def call(*args: Any) -> Any:
        live = ref()
        if live is None:
            return None if dropped is None else dropped(*args)
        return getattr(live, name)(*args)
    return call


def check_int(name: str, value: _Int, minimum: int, maximum: Optional[int] = None) -> _Int:
    """``value`` if it is an int (not a bool) of at least ``minimum`` (and at most
    ``maximum``) as an int (an integer of another type, numpy's say, converted), else
    TypeError naming ``name``."""
    value = integer(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum or \
            (maximum is not None and value > maximum):
        raise TypeError("%s must be an int >= %d%s, not %r"
                        % (name, minimum, "" if maximum is None else " and <= %d" % maximum, value))
    return value


def check_bool(name: str, value: Any) -> bool:
    """``value`` if it is a bool (0, 1 and None taken as pykafka and aiokafka take them: False,
    True, False), else TypeError naming ``name``: a string such as ``"false"`` is true to
    Python, and would turn the option on."""
    value = integer(value)
    if value is None:
        return False
    if value.__class__.__module__ == "numpy" and value.__class__.__name__ in ("bool", "bool_"):
        return bool(value)  # numpy's bool, as its ints are taken
    if value.__class__ is not bool and (value.__class__ is not int or value not in (0, 1)):
        raise TypeError("%s must be True or False, not %r" % (name, value))
    return bool(value)


def check_number(name, value, minimum):
    """``value`` if it is an int or a float (not a bool, not NaN) of at least ``minimum``,
    else TypeError naming ``name``; an integer of another type (numpy's) as an int."""
    value = integer(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= minimum:
        raise TypeError("%s must be a number >= %s, not %r" % (name, minimum, value))
    return value


def check_topic_name(name):
    """``name`` (str) if Kafka allows it as a topic name (1 to 249 of ``[a-zA-Z0-9._-]``,
    not ``.`` or ``..``), else ValueError saying so."""
    if not name or len(name) > 249 or name in (".", "..") or not set(name) <= _TOPIC_CHARS:
        raise ValueError("invalid topic name %r: use 1 to 249 ASCII letters, digits, '.', '_' or '-' "
                         "(and not '.' or '..')" % (name,))
    return name


_TOPIC_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def check_headers(headers):
    """``headers`` if they are ``(name, value)`` pairs (a list, a tuple or a dict) with str or
    bytes names and bytes, str or None values (str as UTF-8), else TypeError or ValueError
    naming ``headers``."""
    if headers is None:
        return None
    items = headers.items() if isinstance(headers, dict) else headers
    if isinstance(headers, (str, bytes)) or not isinstance(items, (list, tuple, type({}.items()))):
        raise TypeError("headers must be a list of (name, value) pairs or a dict {name: value}, not %r"
                        % (headers,))
    for item in items:
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise TypeError("headers must be (name, value) pairs, but one is %r" % (item,))
        name, value = item
        if not isinstance(name, (str, bytes)) or not (value is None or isinstance(value, (str, bytes))):
            raise TypeError("headers must be (str, bytes) pairs (a value may be None), got (%r, %r)"
                            % (name, value))
        for text in (name, value):
            if isinstance(text, str):
                try:
                    text.encode()
                except UnicodeEncodeError as exc:
                    raise ValueError("headers: %r cannot be encoded as UTF-8 (%s)" % (text, exc.reason)) from None
    return headers


def check_config(name, value):
    """``value`` (a dict of librdkafka properties) as a new dict, ``{}`` for None; else
    TypeError naming ``name``."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TypeError("%s must be a dict {librdkafka property: value}, not %s" % (name, type(value).__name__))
    return dict(value)


def check_pair(name, result):
    """``result`` of the callable ``name`` (a serializer or deserializer) if it is a
    ``(value, partition_key)`` pair, else TypeError saying what it returned."""
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise TypeError("the %s must return a (value, partition_key) pair, but returned %r" % (name, result))
    return result


class _IntEnum(enum.IntEnum):
    """An IntEnum whose ``str()`` (and so ``%s`` and ``format()``) is its int's, on every Python
    (IntEnum's own from Python 3.11 on), as pykafka's plain int constants print."""
    __str__ = int.__repr__


class OffsetType(_IntEnum):
    """Logical offsets, as pykafka (and the Kafka ListOffsets API) number them."""
    EARLIEST = -2
    LATEST = -1


class CompressionType(_IntEnum):
    """Producer compression codecs (librdkafka ``compression.codec``)."""
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def codec(self) -> str:
        """The librdkafka name of the codec."""
        return self.name.lower()


class TimestampType(_IntEnum):
    """What a message's timestamp means (``rd_kafka_timestamp_type_t``)."""
    NOT_AVAILABLE = 0
    CREATE_TIME = 1
    LOG_APPEND_TIME = 2


def _int_field(name: str, value: int, bits: int) -> int:
    """``value`` as a plain int for an integer field of ``bits`` signed bits (as the C
    Message stores it: an IntEnum member or another int subclass reads back as its int),
    else TypeError or OverflowError; an integer of another type (numpy's) is taken too."""
    value = integer(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("Message.%s must be an int, not %s" % (name, type(value).__name__))
    value = int.__index__(value)  # its int value, whatever methods a subclass overrides
    if not -(1 << (bits - 1)) <= value < (1 << (bits - 1)):
        raise OverflowError("Message.%s=%d does not fit in %d bits" % (name, value, bits))
    return value


EPOCH = datetime.datetime(1970, 1, 1)  # pykafka.common.EPOCH: naive, read as UTC
_EPOCH_UTC = EPOCH.replace(tzinfo=datetime.timezone.utc)


class Message(metaclass=abc.ABCMeta):
    """One Kafka message, produced or consumed (pykafka's ``Message``).

    ``value`` and ``partition_key`` are bytes (or whatever the serializer / deserializer
    made of them), ``timestamp`` is milliseconds since the epoch (None until a produced
    message's delivery report), ``headers`` a list of ``(name, value)`` pairs.

    This class is the pure-Python core's message; the C core's (``pyrdk._core.Message``) has
    the same fields and behaviour and counts as one (``isinstance(msg, Message)``). The
    integer fields (``partition_id``, ``offset``, ``timestamp``, ``timestamp_type``) take
    ints that fit 32 or 64 bits, as the C one stores them.
    """
    __slots__ = ("value", "partition_key", "partition", "topic", "_partition_id", "_offset", "_timestamp",
                 "_timestamp_type", "_headers", "_compression_type", "_produce_attempt", "_delivery_report_q")

    def __init__(self, value: Any, partition_key: Any = None, partition_id: int = -1, offset: int = -1,
                 timestamp: Optional[int] = None, headers: Optional[list[tuple[str, Optional[bytes]]]] = None,
                 partition: Any = None, topic: Optional[str] = None, timestamp_type: int = 0,
                 compression_type: CompressionType = CompressionType.NONE, produce_attempt: int = 0,
                 delivery_report_q: Optional[queue.Queue[Any]] = None) -> None:
        # Every integer checked before any field is set, as the C Message does: an __init__
        # that raises leaves a Message as it was; the integers are stored as they are.
        ints = (_int_field("partition_id", partition_id, 32), _int_field("offset", offset, 64),
                None if timestamp is None else _int_field("timestamp", timestamp, 64),
                _int_field("timestamp_type", timestamp_type, 32))
        self.value = value  # through a subclass's own property, if it has one
        self.partition_key = partition_key
        self._partition_id, self._offset, self._timestamp, self._timestamp_type = ints
        self.partition = partition
        self.topic = topic
        self._headers = headers
        self._compression_type = compression_type
        self._produce_attempt = produce_attempt
        self._delivery_report_q = delivery_report_q

    @classmethod
    def _unchecked(cls, value: Any, partition_key: Any, partition_id: int, offset: int, timestamp: Optional[int],
                   timestamp_type: int, headers: Optional[list[tuple[str, Optional[bytes]]]], partition: Any,
                   topic: Optional[str], compression_type: CompressionType = CompressionType.NONE) -> "Message":
        """``Message()`` without its checks, for the pure-Python core, whose integers are
        plain ints of their widths already (librdkafka's, or a topic's partition ids)."""
        msg = object.__new__(cls)
        msg.value, msg.partition_key, msg.partition, msg.topic = value, partition_key, partition, topic
        msg._partition_id, msg._offset, msg._timestamp, msg._timestamp_type = (partition_id, offset, timestamp,
                                                                             timestamp_type)
        msg._headers, msg._compression_type, msg._produce_attempt, msg._delivery_report_q = (
            headers, compression_type, 0, None)
        return msg

    @property
    def partition_id(self) -> int:
        return self._partition_id

    @partition_id.setter
    def partition_id(self, value: int) -> None:
        self._partition_id = _int_field("partition_id", value, 32)

    @property
    def offset(self) -> int:
        return self._offset

    @offset.setter
    def offset(self, value: int) -> None:
        self._offset = _int_field("offset", value, 64)

    @property
    def timestamp(self) -> Optional[int]:
        return self._timestamp

    @timestamp.setter
    def timestamp(self, value: Optional[int]) -> None:
        self._timestamp = None if value is None else _int_field("timestamp", value, 64)

    @property
    def timestamp_type(self) -> int:
        return self._timestamp_type

    @timestamp_type.setter
    def timestamp_type(self, value: int) -> None:
        self._timestamp_type = _int_field("timestamp_type", value, 32)

    @property
    def headers(self) -> list[tuple[str, Optional[bytes]]]:
        """``[(name, value)]`` (an empty list, made on first use, when there are none)."""
        headers = self._headers
        if headers is None:
            headers = self._headers = []
        return headers

    @headers.setter
    def headers(self, value: list[tuple[str, Optional[bytes]]]) -> None:
        self._headers = value

    @property
    def compression_type(self) -> CompressionType:
        """The producer's :class:`CompressionType`."""
        return self._compression_type

    @compression_type.setter
    def compression_type(self, value: CompressionType) -> None:
        self._compression_type = value

    @property
    def produce_attempt(self) -> int:
        return self._produce_attempt

    @produce_attempt.setter
    def produce_attempt(self, value: int) -> None:
        self._produce_attempt = value

    @property
    def delivery_report_q(self) -> Optional[queue.Queue[Any]]:
        """The queue :meth:`Producer.get_delivery_report` reads this message's report from."""
        return self._delivery_report_q

    @delivery_report_q.setter
    def delivery_report_q(self, value: Optional[queue.Queue[Any]]) -> None:
        self._delivery_report_q = value

    @property
    def key(self) -> Any:
        """Alias of ``partition_key``."""
        return self.partition_key

    @property
    def protocol_version(self) -> int:
        """pykafka's message format version: 1, a message with a timestamp (librdkafka reads
        and writes record batches of format 2, whose records all have one)."""
        return 1

    @property
    def timestamp_dt(self) -> Optional[datetime.datetime]:
        """``timestamp`` as a UTC datetime (None when the message has none); set from a
        datetime (naive: UTC), as pykafka's."""
        if not self.timestamp or self.timestamp < 0:
            return None
        return datetime.datetime.fromtimestamp(self.timestamp / 1000.0, datetime.timezone.utc)

    @timestamp_dt.setter
    def timestamp_dt(self, value: Optional[datetime.datetime]) -> None:
        if value is not None and not isinstance(value, datetime.datetime):
            raise TypeError("Message.timestamp_dt takes a datetime or None, not %r" % (value,))
        self._set_timestamp_from(value, "Message.timestamp_dt")

    def set_timestamp(self, ts: Union[int, float, datetime.datetime, None]) -> None:
        """pykafka's: set ``timestamp`` from ms since the epoch (an int, or a float cut to
        whole ms), a datetime (naive: UTC) or None."""
        self._set_timestamp_from(ts, "set_timestamp()")

    def _set_timestamp_from(self, ts, what):
        if isinstance(ts, datetime.datetime):
            epoch = EPOCH if ts.utcoffset() is None else _EPOCH_UTC
            ts = (ts - epoch) // datetime.timedelta(milliseconds=1)  # exact, rounded down
        elif isinstance(ts, float) and math.isfinite(ts):
            ts = int(ts)
        elif ts is not None and (isinstance(ts := integer(ts), bool) or not isinstance(ts, int)):
            raise TypeError("%s takes ms since the epoch (an int or a float), a datetime or None, not %r"
                            % (what, ts))
        self.timestamp = ts

    def __len__(self) -> int:
        """pykafka's: the message's size in the message format pykafka wrote (v1): a 14-byte
        header, the key, the value and, with a timestamp, 8 bytes for it."""
        value, key = self.value, self.partition_key
        return 14 + (0 if value is None else len(value)) + (0 if key is None else len(key)) + \
            (8 if self.timestamp else 0)

    def __bool__(self) -> bool:
        """A Message is true, whatever its length (a deserializer may make a value without one)."""
        return True

    def __delattr__(self, name: str, /) -> None:
        # A Message has every field, always (as the C one, which refuses this too); a
        # subclass's own attributes, and its own properties' deleters, are its business.
        if name in _FIELDS and getattr(type(self), name, None) is Message.__dict__.get(name):
            raise AttributeError("cannot delete Message.%s" % name)
        object.__delattr__(self, name)

    def __reduce__(self) -> tuple[Any, ...]:
        """``(type, constructor arguments)``, as the C core's Message pickles (with any
        protocol): the fields as stored, whatever properties a subclass puts in front of them,
        but ``partition`` and ``delivery_report_q``, which come back None: they are this
        process's live objects (the client's Partition, a producer's queue). An instance of a
        subclass is made anew by Message's own constructor, then gets the subclass's own
        ``__dict__`` and slots."""
        cls = type(self)
        args = tuple(None if name in _LIVE else _stored(self, Message, name) for name in _ARGUMENTS)
        if cls is Message:
            return cls, args
        slots = {}
        for klass in cls.__mro__[:cls.__mro__.index(Message)]:
            names = klass.__dict__.get("__slots__", ())
            for name in [names] if isinstance(names, str) else names:
                if name.startswith("__") and not name.endswith("__"):
                    name = "_%s%s" % (klass.__name__.lstrip("_"), name)  # mangled
                value = _stored(self, klass, name, _UNSET) if name not in ("__dict__", "__weakref__") else _UNSET
                if value is not _UNSET:
                    slots[name] = value
        state = getattr(self, "__dict__", None) or None
        if slots:
            state = (state, slots)
        return (_remade, (cls, args)) if state is None else (_remade, (cls, args), state)

    def __repr__(self) -> str:
        return "<pyrdk.Message topic=%r partition=%d offset=%d value=%r>" % (
            self.topic, self.partition_id, self.offset,
            self.value[:40] if isinstance(self.value, (bytes, str)) else self.value)


# Message's fields, which no Message is without.
_FIELDS = frozenset(("value", "partition_key", "partition_id", "offset", "timestamp", "headers", "partition", "topic",
                     "timestamp_type", "compression_type", "produce_attempt", "delivery_report_q", "key",
                     "timestamp_dt"))

# Message's constructor arguments, in order, as its slots name them.
_ARGUMENTS = ("value", "partition_key", "_partition_id", "_offset", "_timestamp", "_headers", "partition", "topic",
              "_timestamp_type", "_compression_type", "_produce_attempt", "_delivery_report_q")
_LIVE = ("partition", "_delivery_report_q")  # not pickled (see Message.__reduce__)


_UNSET = object()


def _remade(cls: type[Message], args: tuple[Any, ...]) -> Message:
    """An instance of ``cls``, a subclass of Message, made with Message's own constructor
    (the subclass's may take other arguments: ``pyrdk.protocol.Message``'s are pykafka's)."""
    msg = cls.__new__(cls)
    Message.__init__(msg, *args)
    return msg


def _stored(obj: Any, klass: type, name: str, default: Any = None) -> Any:
    """The value of ``klass``'s slot ``name`` in ``obj`` (``default`` when it is unset)."""
    try:
        return klass.__dict__[name].__get__(obj, klass)
    except AttributeError:
        return default


# A file path, as SslConfig takes it (and os.fsdecode reads it)
_Path = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]


class SslConfig:
    """TLS settings for ``KafkaClient(ssl_config=...)`` (pykafka's ``SslConfig``).

    Maps to librdkafka's ``security.protocol=ssl``, ``ssl.ca.location``,
    ``ssl.certificate.location``, ``ssl.key.location`` and ``ssl.key.password``.
    """

    def __init__(self, cafile: _Path, certfile: Optional[_Path] = None, keyfile: Optional[_Path] = None,
                 password: Optional[Union[str, bytes]] = None) -> None:
        for name, value in (("cafile", cafile), ("certfile", certfile), ("keyfile", keyfile)):
            if value is not None and not isinstance(value, (str, bytes, os.PathLike)):
                raise TypeError("SslConfig's %s must be a file path, not %r" % (name, value))
        if password is not None and not isinstance(password, (str, bytes)):
            raise TypeError("SslConfig's password must be a str or bytes, not %s" % type(password).__name__)
        self.cafile = cafile
        self.certfile = certfile
        self.keyfile = keyfile
        self.password = password

    def rdkafka_config(self) -> dict[str, str]:
        """The librdkafka properties for these settings (without ``cafile``, librdkafka
        verifies with the system's CA certificates; without ``keyfile``, the key is read from
        ``certfile``, as Python's ``load_cert_chain`` and so pykafka read it)."""
        config = {"security.protocol": "ssl"}
        for key, value in (("ssl.ca.location", self.cafile),
                           ("ssl.certificate.location", self.certfile),
                           ("ssl.key.location", self.keyfile if self.keyfile is not None else self.certfile),
                           ("ssl.key.password", self.password)):
            if value is not None:
                config[key] = os.fsdecode(value)
        return config


class OffsetPartitionResponse(collections.namedtuple("OffsetPartitionResponse", "offset err", defaults=(0,))):
    """pykafka's answer for one partition of an offset query: ``offset`` (a list) and ``err``.
    A namedtuple, as pykafka's: a copy, a deep copy or a pickle is the same answer."""
    __slots__ = ()


# pykafka's answers for one partition of a group's offset commit or fetch.
OffsetCommitPartitionResponse = collections.namedtuple("OffsetCommitPartitionResponse", "err")
OffsetFetchPartitionResponse = collections.namedtuple("OffsetFetchPartitionResponse",
                                                      "offset metadata err")


class GroupOffsetsResponse:
    """pykafka's ``OffsetCommitResponse`` / ``OffsetFetchResponse``: ``topics`` is
    ``{topic name (bytes): {partition id: OffsetCommitPartitionResponse or
    OffsetFetchPartitionResponse}}``."""

    def __init__(self, topics: dict[bytes, dict[int, Any]]) -> None:
        self.topics = topics

    def __repr__(self):
        return "<GroupOffsetsResponse topics=%r>" % (self.topics,)
