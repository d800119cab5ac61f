"""What pykafka's kafka-tools does, written the same way: create a topic with a
CreateTopicRequest, reset a group's offsets with PartitionOffsetCommitRequests sent to the
group coordinator, read them back with PartitionOffsetFetchRequests, delete the topic.
Needs KAFKA_HOSTS, TOPIC (not existing yet) and GROUP."""
import os
import time

from pykafka import KafkaClient
from pykafka.protocol import (CreateTopicRequest, PartitionOffsetCommitRequest,
                              PartitionOffsetFetchRequest)
from pykafka.utils.compat import iteritems

client = KafkaClient(hosts=os.environ["KAFKA_HOSTS"])
name = os.environ["TOPIC"].encode()
group = os.environ["GROUP"].encode()

assert name not in client.topics
topic_req = CreateTopicRequest(name, 3, 1, [], [])
client.cluster.controller_broker.create_topics([topic_req], 10000)
client.update_cluster()
topic = client.topics[name]
print("Partitions:", len(topic.partitions))
assert len(topic.partitions) == 3

with topic.get_sync_producer() as producer:
    for i in range(9):
        producer.produce(b"message %d" % i)

# kafka-tools reset_offsets <topic> <group> latest
offsets = topic.latest_available_offsets()
tmsp = int(time.time() * 1000)
reqs = [PartitionOffsetCommitRequest(topic.name, partition_id, res.offset[0], tmsp, b"kafka-tools")
        for partition_id, res in iteritems(offsets)]
broker = client.cluster.get_group_coordinator(group)
broker.commit_consumer_group_offsets(group, 1, b"kafka-tools", reqs)

response = broker.fetch_consumer_group_offsets(
    group, [PartitionOffsetFetchRequest(topic.name, p) for p in topic.partitions])
committed = {p: r.offset for p, r in iteritems(response.topics[topic.name])}
latest = {p: r.offset[0] for p, r in iteritems(offsets)}
print("committed", sorted(committed.items()), "latest", sorted(latest.items()))
assert committed == latest and sum(latest.values()) == 9

# A consumer of the group goes on from there: only what is produced after.
consumer = topic.get_simple_consumer(consumer_group=group, consumer_timeout_ms=3000)
with topic.get_sync_producer() as producer:
    producer.produce(b"after the reset")
values = [message.value for message in consumer]
consumer.stop()
print("read", values)
assert values == [b"after the reset"]

client.cluster.controller_broker.delete_topics([name], 10000)
client.update_cluster()
assert name not in client.topics
print("OK")
