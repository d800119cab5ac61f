"""The options of the ``pyrdk`` source and sink, read and checked as Spark's Kafka
connector reads them.

Spark hands options over as strings with lower-cased names. They are checked here, on
the driver, so that a bad option fails ``load()``, ``save()`` or ``start()`` with a
``ConfigurationError`` naming it before any task runs; what needs the cluster (does the
topic exist?) is checked when the driver plans the query.
"""
import difflib
import json
import re

from pyrdk.client import _bootstrap_servers, check_property
from pyrdk.exceptions import ConfigurationError

# Kafka properties Spark's connector refuses, and what to use instead.
_REFUSED_SOURCE = {
    "auto.offset.reset": "set the source option 'startingOffsets' instead",
    "enable.auto.commit": "the source commits no offsets: Spark's checkpoint holds them",
    "key.deserializer": "keys are always read as binary; cast the 'key' column",
    "value.deserializer": "values are always read as binary; cast the 'value' column",
    "interceptor.classes": "interceptors are not supported",
}
_PARTITIONED = ("a row goes to its 'partition' column's partition, else to murmur2 of its key (as in Spark's "
                "sink): give the DataFrame a 'partition' column to place rows otherwise")
_REFUSED_SINK = {
    "key.serializer": "keys are written as given; cast the 'key' column to string or binary",
    "value.serializer": "values are written as given; cast the 'value' column to string or binary",
    "interceptor.classes": "interceptors are not supported",
    "transactional.id": "the sink writes no transactions: each task's rows are written at least once",
    "partitioner": _PARTITIONED,
    "partitioner.class": _PARTITIONED,
}

# The options each side reads (lower-cased, as Spark hands them over), besides the
# ``kafka.``-prefixed librdkafka properties.
_READ_OPTIONS = (
    "subscribe", "subscribePattern", "assign", "startingOffsets", "endingOffsets",
    "startingTimestamp", "endingTimestamp", "startingOffsetsByTimestamp", "endingOffsetsByTimestamp",
    "startingOffsetsByTimestampStrategy", "failOnDataLoss", "includeHeaders", "minPartitions",
    "maxRecordsPerPartition", "maxOffsetsPerTrigger", "kafkaConsumer.pollTimeoutMs")
_WRITE_OPTIONS = ("topic",)
# What Spark itself adds to a streaming write's options (DataStreamWriter's extraOptions).
_SPARK_WRITE = ("checkpointLocation", "queryName")
# Spark's connector options with nothing to do here: librdkafka retries offset requests itself,
# and the source joins no consumer group.
_IGNORED = ("fetchOffset.numRetries", "fetchOffset.retryIntervalMs", "groupIdPrefix")
# Spark's connector options whose behaviour the source does not have.
_UNSUPPORTED = {
    "minoffsetspertrigger": "a micro-batch is not held back for more records",
    "maxtriggerdelay": "a micro-batch is not held back for more records",
    "path": "Kafka has no paths: name the topics with 'subscribe', 'subscribePattern' or 'assign' "
            "(a write: 'topic' or a 'topic' column), not as the argument of load(), save() or start()",
}

EARLIEST = -2
LATEST = -1


class OffsetSpec:
    """Where reading starts or ends: ``kind`` is ``"earliest"``, ``"latest"``,
    ``"offsets"`` (``value``: ``{(topic, partition): offset}``, -2 / -1 allowed),
    ``"timestamp"`` (``value``: ms for every partition) or ``"timestamps"``
    (``value``: ``{(topic, partition): ms}``)."""

    def __init__(self, kind, value=None, option=None, strategy="error"):
        self.kind = kind
        self.value = value
        self.option = option
        self.strategy = strategy

    def __repr__(self):
        return "OffsetSpec(%s, %r)" % (self.kind, self.value)


class ReadOptions:
    """The checked options of a read (batch or streaming); plain data, picklable."""

    def __init__(self, options, streaming):
        opts = _lower(options)
        _known_names(opts, _READ_OPTIONS)
        self.streaming = streaming
        self.hosts, self.rdkafka_config = kafka_params(opts, _REFUSED_SOURCE)
        self.subscription = _subscription(opts)
        self.starting = _offset_spec(opts, "starting", "latest" if streaming else "earliest", streaming)
        self.ending = _offset_spec(opts, "ending", "latest", streaming)  # batch only
        self.fail_on_data_loss = _bool(opts, "failondataloss", True)
        self.include_headers = _bool(opts, "includeheaders", False)
        self.min_partitions = _int(opts, "minpartitions", None, minimum=1)
        self.max_records_per_partition = _int(opts, "maxrecordsperpartition", None, minimum=1)
        self.max_offsets_per_trigger = _int(opts, "maxoffsetspertrigger", None, minimum=1)
        self.poll_timeout_ms = _int(opts, "kafkaconsumer.polltimeoutms", 120000, minimum=1)


def check_stream(options):
    """A streaming read runs until it is stopped: ``ConfigurationError`` naming an
    ``endingOffsets``, ``endingOffsetsByTimestamp`` or ``endingTimestamp`` option, which only
    a batch read takes (Spark's Kafka source refuses them in streaming queries too)."""
    opts = _lower(options)
    given = [name for name in ("endingOffsets", "endingOffsetsByTimestamp", "endingTimestamp")
             if opts.get(name.lower()) is not None]  # given at all, even empty (as Spark)
    if given:
        raise ConfigurationError("option %s is not valid in a streaming query, which reads until it is "
                                 "stopped: remove it, or read with spark.read for a batch query"
                                 % " and ".join("'%s'" % name for name in given))


class WriteOptions:
    """The checked options of a write (batch or streaming); plain data, picklable."""

    def __init__(self, options):
        opts = _lower(options)
        _known_names(opts, _WRITE_OPTIONS, _SPARK_WRITE)
        self.hosts, self.rdkafka_config = kafka_params(opts, _REFUSED_SINK)
        self.topic = opts.get("topic") or None


def _lower(options):
    return {str(k).lower(): v for k, v in dict(options or {}).items()}


def _known_names(opts, names, spark=()):
    """``ConfigurationError`` for an option that is neither one of ``names`` (nor of
    ``spark``'s and ``_IGNORED``, taken as well) nor a ``kafka.`` property: a misspelt
    ``startingOffsets`` would otherwise read from the default."""
    known = {name.lower(): name for name in names}
    taken = {name.lower() for name in names + spark + _IGNORED}
    for key in opts:
        if key.startswith("kafka.") or key in taken:
            continue
        if key in _UNSUPPORTED:
            raise ConfigurationError("option '%s' is not supported: %s" % (key, _UNSUPPORTED[key]))
        close = difflib.get_close_matches(key, list(known), n=1)
        raise ConfigurationError("unknown option '%s'%s: the options are %s, and librdkafka properties "
                                 "prefixed with 'kafka.'" % (key, " (did you mean '%s'?)" % known[close[0]]
                                                              if close else "", ", ".join(names)))


def kafka_params(opts, refused):
    """``(bootstrap servers, {librdkafka property: value})`` from the ``kafka.``-prefixed options."""
    hosts = (opts.get("kafka.bootstrap.servers") or "").strip()
    if not hosts:
        raise ConfigurationError("option 'kafka.bootstrap.servers' is required: the brokers to connect "
                                 "to, as 'host:port,host:port'")
    config = {}
    for key, value in opts.items():
        if not key.startswith("kafka.") or key == "kafka.bootstrap.servers":
            continue
        name = key[len("kafka."):]
        if name in refused:
            raise ConfigurationError("option 'kafka.%s' is not supported: %s" % (name, refused[name]))
        config[name] = value
        try:  # what rd_kafka_conf_set refuses, here so that load() and save() name the option
            check_property(name, value)
        except (ConfigurationError, TypeError) as exc:
            raise ConfigurationError("option 'kafka.%s': %s" % (name, exc)) from None
    try:  # what KafkaClient checks, here so that load() and save() name the option
        _bootstrap_servers(hosts, "option 'kafka.bootstrap.servers'", config.get("security.protocol"))
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(str(exc)) from None
    return hosts, config


def _subscription(opts):
    """``("subscribe", [topics])``, ``("subscribePattern", regex)`` or
    ``("assign", {topic: [partitions]})``: exactly one must be given."""
    given = [name for name in ("subscribe", "subscribePattern", "assign") if opts.get(name.lower())]
    if len(given) != 1:
        raise ConfigurationError(
            "exactly one of the options 'subscribe', 'subscribePattern' or 'assign' must be set, "
            "but %s" % ("none is" if not given else " and ".join("'%s'" % g for g in given) + " are"))
    kind = given[0]
    raw = opts[kind.lower()]
    if kind == "subscribe":
        topics = [t.strip() for t in raw.split(",") if t.strip()]
        if not topics:
            raise ConfigurationError("option 'subscribe' names no topic: give 'topic1,topic2'")
        return kind, sorted(set(topics))
    if kind == "subscribePattern":
        try:
            return kind, re.compile(raw).pattern
        except re.error as exc:
            raise ConfigurationError("option 'subscribePattern' is not a valid regular expression "
                                     "(%r: %s)" % (raw, exc)) from None
    parsed = _json(raw, "assign", 'e.g. {"topicA": [0, 1], "topicB": [2]}')
    if not isinstance(parsed, dict) or not parsed or not all(
            isinstance(ps, list) and ps and all(_is_int(p) and p >= 0 for p in ps) for ps in parsed.values()):
        raise ConfigurationError("option 'assign' must map topics to lists of partition numbers, "
                                 'e.g. {"topicA": [0, 1], "topicB": [2]}, not %r' % raw)
    return kind, {topic: sorted(set(ps)) for topic, ps in parsed.items()}


def _offset_spec(opts, which, default, streaming):
    """The starting or ending point: ``<which>Timestamp`` wins over
    ``<which>OffsetsByTimestamp``, which wins over ``<which>Offsets`` (Spark's precedence).
    A partition with no record at or after an ending timestamp ends at its latest offset (as
    in Spark); for a starting one, ``startingOffsetsByTimestampStrategy`` says. An option given
    empty is a bad value, as in Spark, not the default."""
    strategy = (opts.get("startingoffsetsbytimestampstrategy") or "error").lower()
    if strategy not in ("error", "latest"):
        raise ConfigurationError("option 'startingOffsetsByTimestampStrategy' must be 'error' or "
                                 "'latest', not %r" % strategy)
    if which == "ending":
        strategy = "latest"
    name = which + "Timestamp"
    if opts.get(name.lower()) is not None:
        raw = str(opts[name.lower()])
        if not re.fullmatch(r"\d+", raw.strip()):
            raise ConfigurationError("option '%s' must be a timestamp in ms since the epoch, not %r"
                                     % (name, raw))
        return OffsetSpec("timestamp", int(raw), name, strategy)
    name = which + "OffsetsByTimestamp"
    if opts.get(name.lower()) is not None:
        return OffsetSpec("timestamps", _partition_json(opts[name.lower()], name, timestamps=True),
                          name, strategy)
    name = which + "Offsets"
    raw = opts.get(name.lower())
    raw = default if raw is None else str(raw).strip()
    if raw.lower() in ("earliest", "latest"):
        kind = raw.lower()
        if which == "starting" and kind == "latest" and not streaming:
            raise ConfigurationError("option 'startingOffsets' cannot be 'latest' in a batch query "
                                     "(it would read nothing): use 'earliest' or per-partition JSON")
        if which == "ending" and kind == "earliest":
            raise ConfigurationError("option 'endingOffsets' cannot be 'earliest': use 'latest' or "
                                     "per-partition JSON")
        return OffsetSpec(kind, None, name)
    offsets = _partition_json(raw, name)
    if which == "starting" and not streaming and any(o == LATEST for o in offsets.values()):
        raise ConfigurationError("option 'startingOffsets' cannot use -1 (latest) in a batch query "
                                 "(that partition would read nothing): use -2 (earliest) or an offset")
    if which == "ending" and any(o == EARLIEST for o in offsets.values()):
        raise ConfigurationError("option 'endingOffsets' cannot use -2 (earliest): use -1 (latest) "
                                 "or an offset")
    return OffsetSpec("offsets", offsets, name)


def _partition_json(raw, name, timestamps=False):
    """``{(topic, partition): int}`` from Spark's ``{"topic": {"0": 23, "1": -1}}``."""
    example = '{"topicA": {"0": 1700000000000}}' if timestamps else \
        '{"topicA": {"0": 23, "1": -1}, "topicB": {"0": -2}} (-2: earliest, -1: latest)'
    parsed = _json(raw, name, "e.g. " + example)
    out = {}
    ok = isinstance(parsed, dict) and bool(parsed)
    for topic, parts in (parsed.items() if ok else ()):
        if not isinstance(parts, dict) or not parts:
            ok = False
            break
        for p, value in parts.items():
            if not (isinstance(p, str) and p.isascii() and p.isdigit() and _is_int(value)) or \
                    value < (0 if timestamps else EARLIEST):
                ok = False
                break
            out[(topic, int(p))] = value
    if not ok:
        raise ConfigurationError("option '%s' must be %sJSON mapping each topic to {partition: %s}, e.g. "
                                 "%s; got %r" % (name, "" if timestamps else "'earliest', 'latest' or ",
                                                 "timestamp" if timestamps else "offset", example, raw))
    return out


def _json(raw, name, example):
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise ConfigurationError("option '%s' is not valid JSON (%s): %r; %s" % (name, exc, raw, example)) from None


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _bool(opts, key, default):
    raw = opts.get(key)
    if raw is None:
        return default
    value = str(raw).strip().lower()
    if value not in ("true", "false"):
        raise ConfigurationError("option '%s' must be 'true' or 'false', not %r" % (_spelling(key), raw))
    return value == "true"


def _int(opts, key, default, minimum):
    raw = opts.get(key)
    if raw is None:
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = None
    if value is None or value < minimum:
        raise ConfigurationError("option '%s' must be an integer >= %d, not %r" % (_spelling(key), minimum, raw))
    return value


_SPELLING = {name.lower(): name for name in (
    "failOnDataLoss", "includeHeaders", "minPartitions", "maxRecordsPerPartition",
    "maxOffsetsPerTrigger", "kafkaConsumer.pollTimeoutMs")}


def _spelling(key):
    """The option's name as Spark's documentation writes it (Spark lower-cases names)."""
    return _SPELLING.get(key, key)
