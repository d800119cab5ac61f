"""Waiting for a producer's queued messages without stopping it, with pykafka's
Producer._wait_all(). Needs KAFKA_HOSTS and TOPIC."""
import os

from pykafka import KafkaClient

client = KafkaClient(hosts=os.environ["KAFKA_HOSTS"])
topic = client.topics[os.environ["TOPIC"]]
producer = topic.get_producer(linger_ms=100)
for i in range(100):
    producer.produce(b"message %d" % i)
producer._wait_all()
consumer = topic.get_simple_consumer(consumer_timeout_ms=3000)
count = sum(1 for _ in consumer)
consumer.stop()
producer.stop()
print("delivered before stop", count)
assert count == 100
print("OK")
