"""``pyrdk bench``: a quick produce and consume throughput probe against any cluster."""
import time
import uuid

import click

from pyrdk.cli.common import CommandError, emit_json, pass_env, table


def _bar(what, total):
    import sys
    if not sys.stderr.isatty():
        return None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
    progress = Progress(TextColumn(what), BarColumn(), MofNCompleteColumn(), console=Console(stderr=True),
                        transient=True)
    progress.start()
    return progress, progress.add_task(what, total=total)


def _step(bar, done):
    if bar is not None:
        bar[0].update(bar[1], completed=done)


def _end(bar):
    if bar is not None:
        bar[0].stop()


@click.command("bench")
@click.option("--messages", type=click.IntRange(min=1), default=100000, show_default=True)
@click.option("--size", type=click.IntRange(min=1), default=100, show_default=True, help="Bytes per message.")
@click.option("--partitions", type=click.IntRange(min=1), default=4, show_default=True,
              help="Partitions of the topic made for the run.")
@click.option("--topic", default=None, help="Use this existing topic instead of a new one (its messages stay).")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@pass_env
def bench(env, messages, size, partitions, topic, as_json):
    """Produce --messages of --size bytes and read them back; msgs/s and MB/s of each."""
    cluster = env.client.cluster
    made = topic is None
    name = topic or "pyrdk-bench-%s" % uuid.uuid4().hex[:12]
    if made:
        cluster.create_topics([(name, partitions, -1)])
    t = env.topic(name)
    results = []
    try:
        value = b"x" * size
        chunk = 10000
        # Where this run's messages start: the log end before it (a topic given may hold others).
        before = {} if made else {pid: r.offset[0] for pid, r in t.latest_available_offsets().items()}
        bar = _bar("producing", messages)
        producer = t.get_producer(linger_ms=5, min_queued_messages=10000, rdkafka_config=env.producer_config())
        try:
            start = time.perf_counter()
            sent = 0
            while sent < messages:
                n = min(chunk, messages - sent)
                producer.produce_batch([value] * n)
                sent += n
                _step(bar, sent)
            producer.flush()
            results.append(("produce", messages, time.perf_counter() - start))
        finally:
            _end(bar)
            producer.stop()
        consumer = t.get_simple_consumer(consumer_timeout_ms=5000, rdkafka_config=env.consumer_config())
        bar = _bar("consuming", messages)
        try:
            for p in t.partitions.values() if not made else ():  # read only this run's messages
                consumer.seek(p, before[p.id])
            start = time.perf_counter()
            got = 0
            while got < messages:
                batch = consumer.consume_batch(10000, timeout_ms=5000)
                if not batch:
                    raise CommandError("read %d of %d messages back: nothing came for 5 s" % (got, messages))
                got += len(batch)
                _step(bar, got)
            results.append(("consume", got, time.perf_counter() - start))
        finally:
            _end(bar)
            consumer.stop()
    finally:
        if made:
            cluster.delete_topics([name])
    rows = [(phase, n, round(s, 3), int(n / s), round(n * size / s / 1e6, 1)) for phase, n, s in results]
    if as_json:
        emit_json({"topic": name, "size": size, "results": [
            {"phase": p, "messages": n, "seconds": s, "msgs_per_s": r, "mb_per_s": mb} for p, n, s, r, mb in rows]})
    else:
        table(["phase", "messages", "seconds", "msgs/s", "MB/s"], rows,
              title="%d messages of %d bytes, topic %s%s" % (messages, size, name, " (deleted)" if made else ""))
