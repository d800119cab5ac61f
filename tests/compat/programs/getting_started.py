"""pykafka's "Getting Started" and "Consumer Patterns" pages, as a user types them
(Python 3: the values are bytes). Needs KAFKA_HOSTS, ZOOKEEPER_HOSTS, TOPIC (one
partition, empty) and GROUP in the environment."""
import os

from pykafka import KafkaClient
from pykafka.common import OffsetType

client = KafkaClient(hosts=os.environ["KAFKA_HOSTS"])
print("topics:", len(client.topics))
topic = client.topics[os.environ["TOPIC"].encode()]

with topic.get_producer() as producer:
    for i in range(4):
        producer.produce(("test message %d" % i ** 2).encode())

consumer = topic.get_simple_consumer(consumer_timeout_ms=5000)
for message in consumer:
    if message is not None:
        print(message.offset, message.value)
consumer.stop()

# Setting the initial offset: a new group starts from auto_offset_reset...
group = os.environ["GROUP"].encode()
consumer = topic.get_simple_consumer(consumer_group=group,
                                     auto_offset_reset=OffsetType.EARLIEST,
                                     reset_offset_on_start=False)
first = [consumer.consume().offset for _ in range(2)]
consumer.commit_offsets()
consumer.stop()
# ...an existing one from the offset after the last committed...
consumer_2 = topic.get_simple_consumer(consumer_group=group, consumer_timeout_ms=5000)
second = [message.offset for message in consumer_2]
consumer_2.stop()
# ...unless reset_offset_on_start says otherwise.
consumer_3 = topic.get_simple_consumer(consumer_group=group,
                                       auto_offset_reset=OffsetType.EARLIEST,
                                       reset_offset_on_start=True,
                                       consumer_timeout_ms=5000)
third = [message.offset for message in consumer_3]
consumer_3.stop()
print("offsets", first, second, third)
assert (first, second, third) == ([0, 1], [2, 3], [0, 1, 2, 3])

balanced_consumer = topic.get_balanced_consumer(
    consumer_group=b"testgroup",
    auto_commit_enable=True,
    zookeeper_connect=os.environ["ZOOKEEPER_HOSTS"],
    consumer_timeout_ms=5000,
)
values = sorted(message.value for message in balanced_consumer)
balanced_consumer.stop()
print("balanced", values)
assert values == [b"test message 0", b"test message 1", b"test message 4", b"test message 9"]
print("OK")
