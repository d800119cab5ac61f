"""Produce keyed messages to a topic, read them back, commit: pyrdk's quick start.

    python examples/quickstart.py --hosts 127.0.0.1:9092 --topic events

The same program runs on pykafka 2.8 with ``import pykafka`` in place of ``import pyrdk``.
"""
import argparse

import pyrdk
from pyrdk import KafkaClient
from pyrdk.common import OffsetType


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", default="127.0.0.1:9092", help="bootstrap brokers")
    parser.add_argument("--topic", default="events")
    parser.add_argument("--count", type=int, default=100000)
    args = parser.parse_args()

    client = KafkaClient(hosts=args.hosts)
    topic = client.topics[args.topic]

    # Same key, same partition: each user's messages stay in order.
    with topic.get_producer(linger_ms=5, partitioner=pyrdk.partitioners.hashing_partitioner) as producer:
        for i in range(args.count):
            producer.produce(b"payload %d" % i, partition_key=b"user-%d" % (i % 50))

    consumer = topic.get_simple_consumer(consumer_group=b"quickstart",
                                         auto_offset_reset=OffsetType.EARLIEST,
                                         consumer_timeout_ms=1000)
    seen = 0
    for message in consumer:  # ends after 1 s without a message
        seen += 1
    consumer.commit_offsets()  # the next run of this group starts after these
    consumer.stop()
    print("read %d messages; committed %s" % (seen, consumer.held_offsets))


if __name__ == "__main__":
    main()
