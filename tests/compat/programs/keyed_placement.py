"""Keyed messages with pykafka's hashing_partitioner, through a partitioner that logs
what it is given. Prints the partition ids the partitioner saw, in order, then one line
per consumed message: key and partition. Needs KAFKA_HOSTS and TOPIC."""
import os

from pykafka import KafkaClient
from pykafka.partitioners import hashing_partitioner

client = KafkaClient(hosts=os.environ["KAFKA_HOSTS"])
topic = client.topics[os.environ["TOPIC"]]
orders = set()


def logging_partitioner(partitions, key):
    orders.add(tuple(p.id for p in partitions))
    return hashing_partitioner(partitions, key)


with topic.get_producer(partitioner=logging_partitioner, linger_ms=10) as producer:
    for i in range(200):
        producer.produce(b"v", partition_key=b"user-%d" % i)
assert len(orders) == 1
print("order", " ".join(str(i) for i in orders.pop()))
consumer = topic.get_simple_consumer(consumer_timeout_ms=5000)
count = 0
for message in consumer:
    print("placed", message.partition_key.decode(), message.partition_id)
    count += 1
consumer.stop()
assert count == 200
print("OK")
