"""``pyrdk produce``, ``consume`` and ``tail``: records in from stdin or a file, out to stdout."""
import base64
import json
import os
import struct
import sys
import time

import click

from pyrdk.cli.common import (CommandError, GroupName, OffsetSpec, UntilInterrupted, decode, emit_json, one_line,
                              pass_env)
from pyrdk.common import OffsetType
from pyrdk.exceptions import KafkaException
from pyrdk.partitioners import murmur2_partitioner

# -- produce -----------------------------------------------------------------------------------------


def _lines(stream):
    for line in stream:
        yield line[:-1] if line.endswith(b"\n") else line


def _length_prefixed(stream):
    """Records framed as a 4-byte big-endian length and that many bytes."""
    while True:
        head = stream.read(4)
        if not head:
            return
        if len(head) < 4:
            raise CommandError("the input ends inside a record's 4-byte length")
        size, = struct.unpack(">I", head)
        body = stream.read(size)
        if len(body) < size:
            raise CommandError("the input ends inside a record of %d bytes (%d read)" % (size, len(body)))
        yield body


def _headers(items):
    out = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise click.BadParameter("%r is not NAME=VALUE" % item, param_hint="--header")
        out.append((name, value.encode()))
    return out


def _progress(total_bytes):
    """A rich progress bar on stderr when it is a terminal, else None."""
    if not sys.stderr.isatty():
        return None
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TransferSpeedColumn
    return Progress(TextColumn("[progress.description]{task.description}"), BarColumn(),
                    TextColumn("{task.fields[count]:,} messages"), TransferSpeedColumn(),
                    console=Console(stderr=True), transient=True)


@click.command("produce")
@click.argument("topic")
@click.option("--file", "path", type=click.Path(exists=True, dir_okay=False, allow_dash=True), default="-",
              show_default=True, help="Where the records come from (- for stdin).")
@click.option("--format", "fmt", type=click.Choice(["lines", "length-prefixed"]), default="lines", show_default=True,
              help="One record per line, or each after its 4-byte big-endian length.")
@click.option("--key-separator", default=None, metavar="SEP",
              help="Split each record at the first SEP into key and value (keys pick partitions as Java does).")
@click.option("--header", "headers", multiple=True, metavar="NAME=VALUE", help="A header on every record; repeatable.")
@click.option("--partition", type=click.IntRange(min=0), default=None, help="Produce to this partition only.")
@click.option("--json", "as_json", is_flag=True, help="Print the final count as JSON.")
@pass_env
def produce(env, topic, path, fmt, key_separator, headers, partition, as_json):
    """Produce records read from stdin or --file to TOPIC; print how many were delivered."""
    if key_separator == "":
        raise CommandError("--key-separator must not be empty: leave it out to produce records without keys")
    t = env.topic(topic)
    if partition is not None and partition not in t.partitions:
        raise CommandError("topic %s has no partition %d (it has %d)" % (topic, partition, len(t.partitions)))
    header_list = _headers(headers) or None
    sep = None if key_separator is None else key_separator.encode()
    partitioner = murmur2_partitioner if partition is None else (lambda parts, key=None: t.partitions[partition])
    stream = click.open_file(path, "rb")
    total = os.fstat(stream.fileno()).st_size if path != "-" else None
    records = _lines(stream) if fmt == "lines" else _length_prefixed(stream)
    progress = _progress(total)
    count, stopped = 0, False
    producer = t.get_producer(linger_ms=5, partitioner=partitioner, max_request_size=10 * 1024 * 1024,
                              rdkafka_config=env.producer_config())
    try:
        try:
            task = progress.add_task("producing to %s" % topic, total=total, count=0) if progress else None
            if progress:
                progress.start()
            done = 0
            for record in records:
                key = None
                if sep is not None:
                    key, found, value = record.partition(sep)
                    if not found:
                        key, value = None, record
                else:
                    value = record
                try:
                    producer.produce(value, partition_key=key, headers=header_list)
                except KafkaException as exc:  # the records before it are sent: say how many
                    raise CommandError("%s (record %d; the %d before it were produced)"
                                       % (one_line(exc), count + 1, count)) from exc
                count += 1
                done += len(record) + (1 if fmt == "lines" else 4)
                if progress and count % 1000 == 0:
                    progress.update(task, completed=done, count=count)
            if progress:
                progress.update(task, completed=done, count=count)
        finally:
            if progress:
                progress.stop()
            if stream is not sys.stdin.buffer:
                stream.close()
            producer.stop()  # waits for the deliveries; raises ProduceFailureError listing failures
            stopped = True
    except KeyboardInterrupt:  # Ctrl-C: exit 130, once what was read before it is delivered (stop())
        if stopped:
            click.echo("interrupted: produced %d messages to %s" % (count, topic), err=True)
        else:  # a Ctrl-C in stop() itself: what it had not delivered yet is unknown
            click.echo("interrupted: %d messages handed to the producer for %s, their delivery not confirmed"
                       % (count, topic), err=True)
        raise
    if as_json:
        emit_json({"topic": topic, "produced": count})
    else:
        click.echo("produced %d messages to %s" % (count, topic))


# -- consume and tail --------------------------------------------------------------------------------

def _format(fmt, topic):
    if fmt == "value":
        return lambda m: decode(m.value)
    if fmt == "kv":
        return lambda m: "%s\t%s" % (decode(m.partition_key), decode(m.value))

    def as_json(m):
        doc = {"topic": topic, "partition": m.partition_id, "offset": m.offset,
               "timestamp": m.timestamp}
        for name, data in (("key", m.partition_key), ("value", m.value)):
            try:
                doc[name] = None if data is None else data.decode("utf-8")
            except UnicodeDecodeError:
                doc[name + "_base64"] = base64.b64encode(data).decode()
        doc["headers"] = [[k, _header_value(v)] for k, v in (m.headers or [])]
        return json.dumps(doc)
    return as_json


def _header_value(data):
    """A header's value in JSON: its text, null for none, or ``{"base64": ...}`` for bytes
    that are not UTF-8 (a list of [name, value] pairs keeps a name given twice, and both
    values, as Kafka does)."""
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode()}


def _unfinished(consumer, counts):
    """The partitions not read to their end yet: those whose fetch has not told the high
    watermark, or whose messages read (``counts``: per partition) do not reach it while
    librdkafka's fetch has not passed it either (the last offsets may be a transaction's
    marker, which brings no message)."""
    held = consumer.held_offsets
    out = []
    for pid in sorted(consumer.partitions):
        high = consumer.highwater(pid)
        if high is None or (counts.get(pid) and held.get(pid, -1) + 1 < high and consumer.fetched_to(pid) < high):
            out.append(pid)
    return out


def _handled_offsets(consumer, unhandled):
    """What to commit after a Ctrl-C: ``(partition id, offset)`` pairs, the offset of each
    partition's first message in ``unhandled`` (taken from the consumer, not printed), or
    None (its position) for a partition with none there."""
    first = {}
    for m in unhandled:
        first.setdefault(m.partition_id, m.offset)
    return [(pid, first.get(pid)) for pid in sorted(consumer.partitions)]


def _read(env, topic, start, count, group, commit, fmt, partitions, follow):
    """Print the records; without ``follow``, end at the end of each partition, or with an
    error once --timeout-ms passes with no record and some partition not read to its end
    (its leader down, say)."""
    t = env.topic(topic)
    missing = sorted(set(partitions) - set(t.partitions))
    if missing:
        raise CommandError("topic %s has no partition %s (it has %d)" % (topic, missing, len(t.partitions)))
    if start is None:
        start = "committed" if group else "earliest"
    kwargs = {"partitions": list(partitions) if partitions else None,
              "auto_offset_reset": OffsetType.LATEST if start == "latest" else OffsetType.EARLIEST,
              "reset_offset_on_start": start in ("earliest", "latest")}
    if group and not commit:
        # Read-only: the group's offsets are read (a start from them commits nothing), or not
        # needed at all (another start, which a consumer of the group would commit at once).
        group = group if start == "committed" else None
        kwargs["reset_offset_on_fetch"] = False
    consumer = t.get_simple_consumer(consumer_group=group.encode() if group else None,
                                     rdkafka_config=env.consumer_config(), **kwargs)
    line = _format(fmt, topic)
    out = sys.stdout
    read, counts = 0, {}
    with UntilInterrupted() as until:
        try:
            if not isinstance(start, str):  # an offset or a datetime, for every partition read
                if isinstance(start, int):
                    for p in consumer.partitions.values():
                        consumer.seek(p, start)  # the next offset read (reset_offsets takes the last one read)
                else:
                    consumer.reset_offsets([(p, start) for p in consumer.partitions.values()])
            # A partition whose log ends before --from OFFSET moves to auto_offset_reset, its start:
            # what it holds below OFFSET was not asked for.
            below = start if isinstance(start, int) else None
            last = time.monotonic()  # of the last record
            stuck = []  # partitions with neither a record nor their end within --timeout-ms
            # The last batch and how many of its messages were handled: a Ctrl-C in the middle
            # of a batch commits only those (the consumer's positions are past the whole batch).
            batch, handled = [], 0
            while count is None or read < count:
                until.check()
                # One assignment: a Ctrl-C inside consume_batch() finds the last batch all handled.
                batch, handled = consumer.consume_batch(min(1000, count - read) if count else 1000, timeout_ms=200), 0
                for m in batch:
                    counts[m.partition_id] = counts.get(m.partition_id, 0) + 1
                    if below is None or m.offset >= below:
                        out.write(line(m) + "\n")
                        read += 1
                    handled += 1
                if batch:
                    out.flush()
                    last = time.monotonic()
                elif not follow:
                    unfinished = _unfinished(consumer, counts)
                    if not unfinished:
                        break
                    if time.monotonic() - last > env.timeout_ms / 1000.0:
                        stuck = unfinished
                        break
            if group and commit:
                consumer.commit_offsets()  # what was printed
            if stuck:
                raise CommandError("topic %s partition(s) %s: no record and no end of the partition within "
                                   "--timeout-ms=%d (is the partition's leader down?)" % (topic, stuck, env.timeout_ms))
        except BrokenPipeError:  # the reader went away (| head): done, quietly
            sys.stdout = open(os.devnull, "w")
        except KeyboardInterrupt:
            if group and commit:
                consumer.commit_offsets(_handled_offsets(consumer, batch[handled:]))
        finally:
            consumer.stop()


read_options = [
    click.argument("topic"),
    click.option("--count", type=click.IntRange(min=1), default=None, help="Stop after COUNT messages."),
    click.option("--group", type=GroupName(), default=None,
                 help="Read as this consumer group: start from its committed offsets (unless --from) and commit "
                      "what was read."),
    click.option("--commit/--no-commit", default=True, show_default=True, help="With --group: commit at the end."),
    click.option("--format", "fmt", type=click.Choice(["value", "kv", "json"]), default="value", show_default=True,
                 help="value; key<TAB>value; or JSON with topic, partition, offset, timestamp, key, value and "
                      "headers (a list of [name, value] pairs, in the record's order)."),
    click.option("--partition", "partitions", type=int, multiple=True, help="Only this partition; repeatable."),
]


def _with(options):
    def decorate(f):
        for option in reversed(options):
            f = option(f)
        return f
    return decorate


@click.command("consume")
@_with(read_options)
@click.option("--from", "start", type=OffsetSpec(), default=None,
              help="earliest, latest, an offset or an ISO datetime [default: the group's offsets, else earliest].")
@click.option("--follow", is_flag=True, help="Keep waiting for new messages at the end (Ctrl-C stops).")
@pass_env
def consume(env, topic, count, group, commit, fmt, partitions, start, follow):
    """Print TOPIC's messages from --from to the end of each partition (or --count)."""
    _read(env, topic, start, count, group, commit, fmt, partitions, follow)


@click.command("tail")
@_with(read_options)
@click.option("--from", "start", type=OffsetSpec(), default="latest", show_default=True,
              help="earliest, latest, an offset or an ISO datetime.")
@pass_env
def tail(env, topic, count, group, commit, fmt, partitions, start):
    """Print TOPIC's new messages as they come, until Ctrl-C (or --count)."""
    _read(env, topic, start, count, group, commit, fmt, partitions, True)


COMMANDS = [produce, consume, tail]
