"""A worker of a fleet: start it as many times as you want workers; each one joins the
consumer group and processes its share of the topic's partitions.

    python examples/worker_fleet.py --hosts 127.0.0.1:9092 --zookeeper 127.0.0.1:2181 \\
        --topic events --group workers          # ZooKeeper-coordinated (BalancedConsumer)
    python examples/worker_fleet.py --managed --hosts 127.0.0.1:9092 \\
        --topic events --group workers          # the broker's group protocol

Workers that join or leave (or crash) make the others rebalance. Each message is processed,
then committed in batches (commit after process: nothing is lost, a crash may repeat up to
--commit-every messages). Ctrl-C or SIGTERM stops a worker cleanly: it commits and leaves.
"""
import argparse
import collections
import signal
import sys

from pyrdk import KafkaClient
from pyrdk.common import OffsetType


def process(message):
    """The work: here, nothing but counting. Replace with yours."""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", default="127.0.0.1:9092", help="bootstrap brokers")
    parser.add_argument("--zookeeper", default="127.0.0.1:2181",
                        help="ZooKeeper connect string, host:port[,...][/chroot]")
    parser.add_argument("--managed", action="store_true",
                        help="use the broker's group protocol instead of ZooKeeper")
    parser.add_argument("--topic", default="events")
    parser.add_argument("--group", default="workers")
    parser.add_argument("--roundrobin", action="store_true",
                        help="deal partitions round-robin instead of in ranges")
    parser.add_argument("--commit-every", type=int, default=100, metavar="N")
    parser.add_argument("--idle-exit-ms", type=int, default=-1, metavar="MS",
                        help="exit after MS without a message, counted from the first time the "
                             "worker holds partitions (default: run until stopped)")
    args = parser.parse_args()

    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))

    client = KafkaClient(hosts=args.hosts)
    topic = client.topics[args.topic]
    options = dict(auto_offset_reset=OffsetType.EARLIEST, consumer_timeout_ms=500)
    if args.roundrobin:
        from pyrdk import RoundRobinProtocol
        options["membership_protocol"] = RoundRobinProtocol
    if not args.managed:
        options["zookeeper_hosts"] = args.zookeeper
    consumer = topic.get_balanced_consumer(args.group.encode(), managed=args.managed, **options)

    counts = collections.Counter()
    held = None
    uncommitted = 0
    idle_ms = 0
    assigned = False  # idle time counts from the first assignment, which may take seconds
    try:
        while not stopping:
            message = consumer.consume()
            if sorted(consumer.partitions) != held:
                held = sorted(consumer.partitions)
                assigned = assigned or bool(held)
                print("holding partitions %s" % held, flush=True)
            if message is None:
                idle_ms += 500 if assigned else 0
                if 0 <= args.idle_exit_ms <= idle_ms:
                    break
            else:
                idle_ms = 0
                process(message)
                counts[message.partition_id] += 1
                uncommitted += 1
            if uncommitted and (message is None or uncommitted >= args.commit_every):
                consumer.commit_offsets()
                uncommitted = 0
        if uncommitted:
            consumer.commit_offsets()
    except KeyboardInterrupt:
        pass  # a message interrupted half-way is not committed: the group sees it again
    finally:
        consumer.stop()
        client.close()
    print("processed %d messages %s" % (sum(counts.values()),
                                        dict(sorted(counts.items()))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
