"""A client that knows only ZooKeeper, as pykafka allowed: the brokers come from
/brokers/ids. Needs ZOOKEEPER_HOSTS (where the brokers registered) and TOPIC."""
import os

from pykafka import KafkaClient

client = KafkaClient(zookeeper_hosts=os.environ["ZOOKEEPER_HOSTS"])
print("brokers", sorted(client.brokers))
topic = client.topics[os.environ["TOPIC"]]
with topic.get_sync_producer() as producer:
    producer.produce(b"found through ZooKeeper")
consumer = topic.get_simple_consumer(consumer_timeout_ms=3000)
values = [message.value for message in consumer]
consumer.stop()
print("read", values)
assert values == [b"found through ZooKeeper"]
print("OK")
