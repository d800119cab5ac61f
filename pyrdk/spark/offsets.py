"""Offset ranges: which partitions a query reads, and from which offset to which.

Planned on the driver with a ``KafkaClient``; an ``OffsetRange`` is plain data that Spark
sends to an executor. The end of a partition is its high watermark as a fetch response
gives it (``SimpleConsumer.highwater``), not the answer to a ListOffsets request: a broker
may answer that one from its index (Tansu answers the base offset of the last record batch
plus one), while a fetch always reports where the log ends.
"""
import collections
import logging
import re
import time

from pyrdk.client import KafkaClient
from pyrdk.common import OffsetType
from pyrdk.exceptions import ConfigurationError, KafkaException, KafkaTimeoutError
from pyrdk.spark.options import EARLIEST, LATEST

log = logging.getLogger(__name__)

# Where the driver polls for fetch responses (it never keeps the messages).
_POLL_MS = 50


class DataLossError(KafkaException):
    """Offsets the query must read are no longer in Kafka (deleted topic, offsets past the
    end or before the start of the log), and ``failOnDataLoss`` is true."""


class OffsetRange(collections.namedtuple("OffsetRange", "topic partition start end")):
    """The offsets ``[start, end)`` of one topic partition: one Spark input partition."""
    __slots__ = ()

    @property
    def size(self):
        return self.end - self.start


def connect(opts):
    """A ``KafkaClient`` for the options' brokers and ``kafka.``-prefixed properties."""
    return KafkaClient(hosts=opts.hosts, rdkafka_config=opts.rdkafka_config)


def consumer_config(opts):
    """librdkafka properties for a reading consumer: Spark's Kafka source reads
    uncommitted records (the Java client's default; librdkafka's is read_committed)."""
    return dict({"isolation.level": "read_uncommitted"}, **opts.rdkafka_config)


def report_data_loss(opts, message):
    """Raise ``DataLossError`` (``failOnDataLoss=true``) or log a warning."""
    if opts.fail_on_data_loss:
        raise DataLossError("%s. Some data may have been lost. If this is expected, set the option "
                            "'failOnDataLoss' to 'false' to go on without it." % message)
    log.warning("%s; going on without it (failOnDataLoss=false)", message)


def topic_partitions(client, subscription, strict):
    """``{topic: [partition ids]}`` the subscription covers now. With ``strict``, a topic or
    partition that does not exist is a ``ConfigurationError`` naming the option; without,
    it is left out (a stream notices it as deleted)."""
    kind, value = subscription
    client.update_cluster()
    known = {name.decode(): topic for name, topic in client.topics.items()}
    if kind == "subscribePattern":
        pattern = re.compile(value)
        return {name: sorted(topic.partitions) for name, topic in sorted(known.items())
                if pattern.fullmatch(name)}
    wanted = {name: None for name in value} if kind == "subscribe" else value
    missing = sorted(name for name in wanted if name not in known)
    if missing and strict:
        names = sorted(known)
        raise ConfigurationError("option '%s': no topic %s on %s (it has: %s)" % (
            kind, ", ".join(repr(m) for m in missing), client.cluster.rdkafka_config["bootstrap.servers"],
            ", ".join(names[:20]) + (", ..." if len(names) > 20 else "") if names else "no topics"))
    out = {}
    for name, pids in wanted.items():
        if name not in known:
            continue
        have = sorted(known[name].partitions)
        if pids is None:
            out[name] = have
            continue
        absent = [p for p in pids if p not in have]
        if absent and strict:
            raise ConfigurationError("option 'assign': topic %r has no partition %s (it has %s)"
                                     % (name, ", ".join(map(str, absent)), have))
        out[name] = [p for p in pids if p in have]
    return out


def _pairs(partitions):
    return [(name, pid) for name in sorted(partitions) for pid in partitions[name]]


def earliest_offsets(client, partitions):
    """``{(topic, partition): first offset in the log}`` (ListOffsets)."""
    out = {}
    for name, pids in sorted(partitions.items()):
        topic = client.topics.get(name)
        if topic is None or not pids:
            continue
        for pid, answer in topic.fetch_offset_limits(OffsetType.EARLIEST, partitions=pids).items():
            out[(name, pid)] = answer.offset[0]
    return out


def end_offsets(client, opts, partitions):
    """``{(topic, partition): high watermark}`` from a fetch response for each partition.

    A consumer starts at the end of each partition; the first fetch response for it carries
    the high watermark. With ``kafka.isolation.level=read_committed`` the end is the last
    stable offset instead (before the first record of a transaction still open, which such
    a consumer cannot read yet), as the Java client's end offsets are. Waits at most
    ``kafkaConsumer.pollTimeoutMs``."""
    committed = str(consumer_config(opts).get("isolation.level")).lower() == "read_committed"
    out = {}
    for name, pids in sorted(partitions.items()):
        topic = client.topics.get(name)
        if topic is None or not pids:
            continue
        consumer = topic.get_simple_consumer(partitions=pids, auto_offset_reset=OffsetType.LATEST,
                                             queued_max_messages=1, rdkafka_config=consumer_config(opts),
                                             statistics_interval_ms=_POLL_MS if committed else None)
        try:
            deadline = time.monotonic() + opts.poll_timeout_ms / 1000.0
            ends = {}
            while len(ends) < len(pids):
                if time.monotonic() > deadline:
                    raise KafkaTimeoutError(
                        "no fetch response for topic %r partitions %s within kafkaConsumer.pollTimeoutMs=%d"
                        % (name, [pid for pid in pids if pid not in ends], opts.poll_timeout_ms))
                consumer.consume_batch(1000, _POLL_MS)
                for pid in pids:
                    end = _end(consumer, name, pid, committed)
                    if end is not None:
                        ends[pid] = end
            for pid in pids:
                out[(name, pid)] = ends[pid]
        finally:
            consumer.stop()
    return out


def _end(consumer, name, pid, committed):
    """The end of partition ``pid`` as a fetch response gave it, or None before one: the high
    watermark, or with ``committed`` the last stable offset, which librdkafka's statistics
    hold (``rd_kafka_get_watermark_offsets`` has only the high watermark)."""
    high = consumer.highwater(pid)
    if high is None or not committed:
        return high
    stats = consumer.stats() or {}
    partition = stats.get("topics", {}).get(name, {}).get("partitions", {}).get(str(pid), {})
    stable = partition.get("ls_offset", -1)
    return min(high, stable) if stable >= 0 else None


def resolve(client, spec, partitions, ends):
    """``{(topic, partition): offset}`` for an ``OffsetSpec``; ``ends`` are the end offsets."""
    tps = _pairs(partitions)
    if spec.kind == "latest":
        return {tp: ends[tp] for tp in tps}
    if spec.kind == "earliest":
        return earliest_offsets(client, partitions)
    if spec.kind == "offsets":
        _require_all(spec, tps)
        earliest = earliest_offsets(client, partitions) if EARLIEST in spec.value.values() else {}
        out = {}
        for tp in tps:
            offset = spec.value[tp]
            out[tp] = earliest[tp] if offset == EARLIEST else ends[tp] if offset == LATEST else offset
        return out
    if spec.kind == "timestamps":
        _require_all(spec, tps)
        wanted = {tp: spec.value[tp] for tp in tps}
    else:
        wanted = {tp: spec.value for tp in tps}
    out = {}
    answers = client.cluster.offsets_for_times([(t, p, ts) for (t, p), ts in sorted(wanted.items())]) if tps else []
    for answer in answers:
        tp = (answer.topic, answer.partition)
        if answer.error:
            raise KafkaException("option '%s': offset lookup for %s [%d] failed with error %d"
                                 % (spec.option, tp[0], tp[1], answer.error))
        if answer.offset >= 0:
            out[tp] = answer.offset
        elif spec.strategy == "latest":
            out[tp] = ends[tp]
        else:
            raise ConfigurationError(
                "option '%s': no record of %s [%d] has a timestamp at or after %d; set "
                "'startingOffsetsByTimestampStrategy' to 'latest' to start at the end instead"
                % (spec.option, tp[0], tp[1], wanted[tp]))
    return out


def _require_all(spec, tps):
    """Per-partition JSON must name exactly the partitions the subscription covers (as Spark)."""
    given, have = set(spec.value), set(tps)
    if given != have:
        missing = sorted(have - given)
        extra = sorted(given - have)
        raise ConfigurationError(
            "option '%s' must give every partition the query reads (-2: earliest, -1: latest)%s%s"
            % (spec.option,
               "; missing: %s" % ", ".join("%s [%d]" % tp for tp in missing) if missing else "",
               "; not subscribed or not existing: %s" % ", ".join("%s [%d]" % tp for tp in extra)
               if extra else ""))


def check_order(opts, starts, until):
    """A batch read's ending offsets given as JSON may not come before its starting ones:
    ``ConfigurationError`` naming both options (a log end before the start, on the other
    hand, is data loss: see :func:`ranges`)."""
    if opts.ending.kind != "offsets":
        return
    for (topic, pid), given in sorted(opts.ending.value.items()):
        start, end = starts.get((topic, pid)), until.get((topic, pid))
        if given >= 0 and start is not None and end is not None and end < start:
            raise ConfigurationError("options '%s' and '%s': %s [%d] would end at offset %d, before it starts "
                                     "(%d)" % (opts.starting.option, opts.ending.option, topic, pid, end, start))


def within_the_log(opts, until, ends):
    """``until`` with every end past its partition's end (an ``endingOffsets`` beyond the
    log) brought back to that end, as data loss (``report_data_loss``): found when the query
    is planned, so that no range covers offsets the log does not have (which
    ``maxRecordsPerPartition`` would cut into that many tasks)."""
    out = dict(until)
    for tp, end in sorted(until.items()):
        log_end = ends.get(tp)
        if log_end is not None and end > log_end:
            report_data_loss(opts, "%s [%d]: offsets %d to %d are not in the partition, which ends at %d "
                                   "(an endingOffsets past its end, or truncated)"
                             % (tp[0], tp[1], log_end, end, log_end))
            out[tp] = log_end
    return out


def ranges(opts, starts, ends):
    """``OffsetRange`` per partition in ``ends``; a partition whose end lies before its
    start (offsets beyond the log, or a topic deleted and re-created) is data loss, and a
    partition gone from ``ends`` too. Empty ranges are dropped."""
    out = []
    for tp in sorted(set(starts) - set(ends)):
        report_data_loss(opts, "%s [%d] is gone (topic or partition deleted)" % tp)
    for tp in sorted(ends):
        start, end = starts.get(tp), ends[tp]
        if start is None:
            continue
        if end < start:
            report_data_loss(opts, "%s [%d]: the start offset %d is beyond the end of the partition "
                                   "(%d): either the start offset was set past the end, or the topic was "
                                   "deleted and re-created" % (tp[0], tp[1], start, end))
            continue
        if end > start:
            out.append(OffsetRange(tp[0], tp[1], start, end))
    return out


def split(offset_ranges, min_partitions=None, max_records=None):
    """Split large ranges: into at least ``min_partitions`` ranges in all, each partition's
    share proportional to its size (Spark's ``minPartitions``), and into pieces of at most
    ``max_records`` offsets (``maxRecordsPerPartition``)."""
    out = list(offset_ranges)
    if min_partitions and len(out) < min_partitions:
        total = sum(r.size for r in out)
        pieces = []
        for r in out:
            parts = max(int(r.size * min_partitions / float(total) + 0.5), 1) if total else 1
            pieces.extend(_cut(r, parts))
        out = pieces
    if max_records:
        out = [piece for r in out for piece in _cut(r, -(-r.size // max_records))]
    return [r for r in out if r.size > 0]


def _cut(r, parts):
    """``r`` in ``parts`` contiguous ranges of near-equal size, and never an empty one: at
    most one per offset, however large ``minPartitions`` is."""
    parts = max(min(parts, r.size), 1)
    bounds = [r.start + r.size * i // parts for i in range(parts + 1)]
    return [OffsetRange(r.topic, r.partition, a, b) for a, b in zip(bounds, bounds[1:])]


def rate_limit(starts, ends, limit):
    """Ends that read at most about ``limit`` offsets past ``starts`` in all, shared in
    proportion to each partition's backlog; a partition with a backlog gets at least one."""
    backlog = {tp: ends[tp] - starts[tp] for tp in ends if tp in starts and ends[tp] > starts[tp]}
    total = sum(backlog.values())
    if total <= limit:
        return dict(ends)
    capped = dict(ends)
    for tp, size in backlog.items():
        share = limit * size / float(total)
        capped[tp] = min(ends[tp], starts[tp] + max(int(share), 1))
    return capped


def to_json(offsets):
    """Spark's offset JSON shape: ``{"topic": {"0": 23}}``."""
    out = {}
    for (topic, pid), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(pid)] = offset
    return out


def from_json(data):
    """``{(topic, partition): offset}`` from Spark's offset JSON shape."""
    return {(topic, int(pid)): offset for topic, parts in (data or {}).items() for pid, offset in parts.items()}
