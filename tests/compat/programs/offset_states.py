"""held_offsets and fetch_offsets() in the states pykafka programs look at: after a reset
on start to LATEST and to EARLIEST, after consuming and committing, after reset_offsets
to an OffsetType. Needs KAFKA_HOSTS, TOPIC (one partition, empty) and GROUP."""
import os

from pykafka import KafkaClient
from pykafka.common import OffsetType

client = KafkaClient(hosts=os.environ["KAFKA_HOSTS"])
topic = client.topics[os.environ["TOPIC"]]
group = os.environ["GROUP"].encode()
with topic.get_sync_producer() as producer:
    for i in range(10):
        producer.produce(b"message %d" % i)


def committed(consumer):
    return [(p, res.offset) for p, res in consumer.fetch_offsets()]


consumer = topic.get_simple_consumer(consumer_group=group, auto_offset_reset=OffsetType.LATEST,
                                     reset_offset_on_start=True)
print("latest", consumer.held_offsets, committed(consumer))
assert consumer.held_offsets == {0: 9}  # the available offset - 1
assert committed(consumer) == [(0, 10)]  # the reset is committed at once
consumer.stop()

consumer = topic.get_simple_consumer(consumer_group=group, auto_offset_reset=OffsetType.EARLIEST,
                                     reset_offset_on_start=True)
print("earliest", consumer.held_offsets, committed(consumer))
assert consumer.held_offsets == {0: OffsetType.EARLIEST}  # -1 is reported as EARLIEST
assert committed(consumer) == [(0, 0)]
message = consumer.consume()
consumer.commit_offsets()
print("consumed", message.offset, consumer.held_offsets, committed(consumer))
assert consumer.held_offsets == {0: 0} and committed(consumer) == [(0, 1)]
consumer.reset_offsets([(topic.partitions[0], OffsetType.LATEST)])
print("reset", consumer.held_offsets, committed(consumer))
assert consumer.held_offsets == {0: 9} and committed(consumer) == [(0, 10)]
consumer.stop()
print("OK")
