"""The dev-cluster demo: ``python -m pyrdk.testing.demo``.

Starts a :class:`~pyrdk.testing.DevCluster`, creates a topic with 4 partitions, produces
300,000 messages through pyrdk's pykafka API (``Topic.get_producer``), consumes them back
with ``Topic.get_simple_consumer``, prints both throughputs, and exits non-zero unless every
message arrived exactly once. ``--hosts`` runs it against another cluster instead.
"""
import argparse
import sys
import time

import pyrdk
from pyrdk.common import OffsetType
from pyrdk.testing import DevCluster

ID_WIDTH = 10


class _Progress:
    """A tqdm bar, or a line every tenth of the way when tqdm is not installed."""

    def __init__(self, total, desc):
        self.total, self.desc, self.done, self._next = total, desc, 0, total // 10
        try:
            from tqdm import tqdm
        except ImportError:
            self._bar = None
        else:
            self._bar = tqdm(total=total, desc=desc, unit="msg", unit_scale=True, file=sys.stderr,
                             mininterval=0.5)

    def update(self, n):
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
        elif self.done >= self._next:
            print("%s: %d/%d" % (self.desc, self.done, self.total), file=sys.stderr, flush=True)
            self._next = self.done + max(self.total // 10, 1)

    def close(self):
        if self._bar is not None:
            self._bar.close()


def payload(i, size):
    """Message ``i``: its id in ``ID_WIDTH`` digits, padded to ``size`` bytes."""
    head = b"%0*d" % (ID_WIDTH, i)
    return head + b"." * max(size - len(head), 0)


def rate(count, nbytes, seconds):
    seconds = max(seconds, 1e-9)
    return "%d msgs in %.2f s: %.0f msgs/s, %.1f MB/s" % (count, seconds, count / seconds,
                                                           nbytes / seconds / 1e6)


def produce(topic, count, size):
    """Produce ``count`` messages (``Producer.produce``); the bytes sent and the seconds taken."""
    progress = _Progress(count, "produce")
    nbytes = 0
    start = time.monotonic()
    try:
        with topic.get_producer(linger_ms=5) as producer:
            step = 1000
            for first in range(0, count, step):
                for i in range(first, min(first + step, count)):
                    key = b"key-%d" % (i % 64)
                    value = payload(i, size)
                    producer.produce(value, partition_key=key)
                    nbytes += len(value) + len(key)
                progress.update(min(step, count - first))
        # Leaving the with block stops the producer, which waits for every delivery.
    finally:
        progress.close()
    return nbytes, time.monotonic() - start


class Tally:
    """How often each message id was seen, and the messages the demo did not produce."""

    def __init__(self, count):
        self.seen = bytearray(count)
        self.stray = 0
        self.received = 0
        self.nbytes = 0

    def add(self, messages):
        for message in messages:
            value = message.value
            self.nbytes += len(value) + len(message.partition_key or b"")
            try:
                i = int(value[:ID_WIDTH])
            except ValueError:
                i = -1
            if 0 <= i < len(self.seen):
                self.seen[i] = min(self.seen[i] + 1, 255)
            else:
                self.stray += 1
        self.received += len(messages)

    def problems(self):
        """Missing ids, duplicated ids, stray messages (empty when all is well)."""
        missing = [i for i, n in enumerate(self.seen) if n == 0]
        duplicated = [i for i, n in enumerate(self.seen) if n > 1]
        found = []
        if missing:
            found.append("%d messages missing (first ids: %s)" % (len(missing), missing[:10]))
        if duplicated:
            found.append("%d messages duplicated (first ids: %s)" % (len(duplicated), duplicated[:10]))
        if self.stray:
            found.append("%d messages that the demo did not produce" % self.stray)
        return found


def consume(topic, count, idle_timeout_ms=5000):
    """Read the topic back from the start (``SimpleConsumer.consume_batch``); a ``Tally`` and
    the seconds taken. Stops once ``count`` messages arrived (then drains what follows, to
    catch duplicates), or after ``idle_timeout_ms`` without a message."""
    tally = Tally(count)
    progress = _Progress(count, "consume")
    start = time.monotonic()
    try:
        with topic.get_simple_consumer(consumer_group=b"demo",
                                       auto_offset_reset=OffsetType.EARLIEST,
                                       consumer_timeout_ms=idle_timeout_ms) as consumer:
            last = time.monotonic()
            while tally.received < count and (time.monotonic() - last) * 1000 <= idle_timeout_ms:
                batch = consumer.consume_batch(10000, 500)
                if batch:
                    last = time.monotonic()
                    tally.add(batch)
                    progress.update(len(batch))
            elapsed = time.monotonic() - start
            while tally.received >= count:
                extra = consumer.consume_batch(10000, 1000)
                if not extra:
                    break
                tally.add(extra)
    finally:
        progress.close()
    return tally, elapsed


def run(hosts, topic_name, count, size, partitions):
    """Create the topic, produce, consume, report; the process exit status."""
    client = pyrdk.KafkaClient(hosts=hosts)
    try:
        client.cluster.create_topics([(topic_name, partitions, 1)])
        topic = client.topics[topic_name.encode()]
        print("topic %s: %d partitions on %s (librdkafka %s)"
              % (topic_name, len(topic.partitions), hosts, pyrdk.librdkafka_version().runtime))
        nbytes, seconds = produce(topic, count, size)
        print("produced", rate(count, nbytes, seconds))
        tally, seconds = consume(topic, count)
        print("consumed", rate(tally.received, tally.nbytes, seconds))
    finally:
        client.close()
    problems = tally.problems()
    for problem in problems:
        print("FAILED:", problem, file=sys.stderr)
    if not problems:
        print("OK: all %d messages arrived exactly once" % count)
    return 1 if problems else 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m pyrdk.testing.demo", description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=300000, help="how many (default 300000)")
    parser.add_argument("--size", type=int, default=100, help="value size in bytes (default 100)")
    parser.add_argument("--partitions", type=int, default=4, help="partitions of the topic (default 4)")
    parser.add_argument("--topic", default="demo", help="topic name (default demo)")
    parser.add_argument("--hosts", help="use this cluster instead of starting a DevCluster")
    args = parser.parse_args(argv)
    if args.messages < 1 or args.size < ID_WIDTH or args.partitions < 1:
        parser.error("--messages and --partitions must be positive, --size at least %d" % ID_WIDTH)
    if args.hosts:
        return run(args.hosts, args.topic, args.messages, args.size, args.partitions)
    cluster = DevCluster()
    cluster.start()
    try:
        print("dev cluster on", cluster.hosts)
        return run(cluster.hosts, args.topic, args.messages, args.size, args.partitions)
    finally:
        cluster.stop()


if __name__ == "__main__":
    sys.exit(main())
