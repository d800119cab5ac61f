"""pykafka's kafka-tools lag printer: latest offsets against the group's committed ones,
read by a consumer that is never started. Needs KAFKA_HOSTS, TOPIC (two partitions,
empty) and GROUP."""
import os

from pykafka import KafkaClient
from pykafka.utils.compat import iteritems

client = KafkaClient(hosts=os.environ["KAFKA_HOSTS"])
topic = client.topics[os.environ["TOPIC"]]
group = os.environ["GROUP"].encode()
with topic.get_producer(partitioner=lambda partitions, key: partitions[int(key) % 2],
                        linger_ms=10) as producer:
    for i in range(20):
        producer.produce(b"message %d" % i, partition_key=b"%d" % i)

# One member of the group has read five messages of partition 0 and committed.
reader = topic.get_simple_consumer(consumer_group=group, partitions=[topic.partitions[0]])
for _ in range(5):
    reader.consume()
reader.commit_offsets()
reader.stop()


def fetch_consumer_lag(client, topic, consumer_group):
    latest_offsets = topic.latest_available_offsets()
    consumer = topic.get_simple_consumer(consumer_group=consumer_group,
                                         auto_start=False,
                                         reset_offset_on_fetch=False)
    current_offsets = consumer.fetch_offsets()
    return {p_id: (latest_offsets[p_id].offset[0], res.offset)
            for p_id, res in current_offsets}


lag_info = fetch_consumer_lag(client, topic, group)
for partition, (latest, current) in sorted(iteritems(lag_info)):
    print("partition", partition, "lag", latest - current, "latest", latest, "current", current)
total = sum(latest - current for latest, current in lag_info.values())
print("Total lag: {:,} messages.".format(total))
# Partition 1 has no committed offset: Kafka says -1, so its lag is latest + 1.
assert lag_info == {0: (10, 5), 1: (10, -1)}
print("OK")
