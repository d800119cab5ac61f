"""The common pykafka recipe for reading the last N messages of a topic: rewind each
OwnedPartition of consumer._partitions from its last_offset_consumed. Needs KAFKA_HOSTS
and TOPIC (two partitions, empty)."""
import math
import os
from itertools import islice

from pykafka import KafkaClient
from pykafka.common import OffsetType

client = KafkaClient(hosts=os.environ["KAFKA_HOSTS"])
topic = client.topics[os.environ["TOPIC"]]
with topic.get_producer(partitioner=lambda partitions, key: partitions[int(key) % 2],
                        linger_ms=10) as producer:
    for i in range(20):
        producer.produce(b"message %d" % i, partition_key=b"%d" % i)

consumer = topic.get_simple_consumer(auto_offset_reset=OffsetType.LATEST,
                                     reset_offset_on_start=True)
LAST_N_MESSAGES = 4
# how many messages should we get from the end of each partition?
MAX_PARTITION_REWIND = int(math.ceil(LAST_N_MESSAGES / len(consumer._partitions)))
# find the beginning of the range we care about for each partition
offsets = [(p, op.last_offset_consumed - MAX_PARTITION_REWIND)
           for p, op in consumer._partitions.items()]
# if we want to rewind before the beginning of the partition, limit to beginning
offsets = [(p, (o if o > -1 else -2)) for p, o in offsets]
# reset the consumer's offsets
consumer.reset_offsets(offsets)
last = sorted((m.partition_id, m.offset) for m in islice(consumer, LAST_N_MESSAGES))
consumer.stop()
print("last", last)
assert last == [(0, 8), (0, 9), (1, 8), (1, 9)]
print("OK")
