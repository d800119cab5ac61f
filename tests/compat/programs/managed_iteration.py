"""A managed balanced consumer (pykafka's README: ``managed=True``) read with a short
``consumer_timeout_ms``: pykafka's start() returned once the member had joined the group,
so the loop sees the topic's messages however long the group takes to form. Needs
KAFKA_HOSTS, TOPIC (two partitions, empty) and GROUP."""
import os

from pykafka import KafkaClient

client = KafkaClient(hosts=os.environ["KAFKA_HOSTS"])
topic = client.topics[os.environ["TOPIC"]]
with topic.get_sync_producer() as producer:
    for i in range(4):
        producer.produce(b"test message %d" % i)

consumer = topic.get_balanced_consumer(consumer_group=os.environ["GROUP"].encode(), managed=True,
                                       consumer_timeout_ms=1000)
values = sorted(message.value for message in consumer)
consumer.stop()
print("managed", values)
assert values == [b"test message %d" % i for i in range(4)]
print("OK")
