"""Internal (double-underscore) topics: hidden by default, where looking one up is a
KeyError; usable with exclude_internal_topics=False. Needs KAFKA_HOSTS and TOPIC (a name
starting with "__", not existing yet)."""
import os

from pykafka import KafkaClient
from pykafka.protocol import CreateTopicRequest

name = os.environ["TOPIC"].encode()
client = KafkaClient(hosts=os.environ["KAFKA_HOSTS"])
try:
    client.topics[name]
except KeyError as exc:
    print("hidden:", exc)
else:
    raise AssertionError("an internal topic was not hidden")

insider = KafkaClient(hosts=os.environ["KAFKA_HOSTS"], exclude_internal_topics=False)
insider.cluster.controller_broker.create_topics([CreateTopicRequest(name, 1, 1, [], [])])
topic = insider.topics[name]
with topic.get_sync_producer() as producer:
    producer.produce(b"inside")
consumer = topic.get_simple_consumer(consumer_timeout_ms=3000)
values = [message.value for message in consumer]
consumer.stop()
print("read", values)
assert values == [b"inside"]
client.update_cluster()
assert name not in client.topics  # still hidden from the first client
print("OK")
