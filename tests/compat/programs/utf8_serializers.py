"""Producing and consuming str with pykafka's UTF-8 serializers, and the py2/3 helpers
of pykafka.utils.compat. Needs KAFKA_HOSTS and TOPIC (three partitions, empty)."""
import os
from collections import defaultdict

from pykafka import KafkaClient
from pykafka.partitioners import hashing_partitioner
from pykafka.utils import deserialize_utf8, serialize_utf8
from pykafka.utils.compat import PY3, get_bytes, get_string, iteritems, range

client = KafkaClient(hosts=os.environ["KAFKA_HOSTS"])
topic = client.topics[get_bytes(os.environ["TOPIC"])]

words = [u"caf\u00e9", u"na\u00efve", u"\u65e5\u672c", u"plain"]
with topic.get_producer(serializer=serialize_utf8, partitioner=hashing_partitioner,
                        linger_ms=10) as producer:
    for i in range(40):
        producer.produce(u"%s %d" % (words[i % 4], i), partition_key=words[i % 4])

consumer = topic.get_simple_consumer(deserializer=deserialize_utf8, consumer_timeout_ms=5000)
by_key = defaultdict(set)
count = 0
for message in consumer:
    assert isinstance(message.value, str) and isinstance(message.partition_key, str)
    assert message.value.startswith(message.partition_key)
    by_key[message.partition_key].add(message.partition_id)
    count += 1
consumer.stop()
for key, partitions in sorted(iteritems(by_key)):
    print(get_string(get_bytes(key)), sorted(partitions))
    assert len(partitions) == 1  # one key, one partition
print("PY3", PY3, "count", count)
assert PY3 and count == 40 and set(by_key) == set(words)
print("OK")
