"""A worker pool built on the cluster's handler, as pykafka programs do: a balanced
consumer (with pykafka's old zookeeper_connect name) on a spawned thread hands messages to
the main thread through handler.Queue(). Needs KAFKA_HOSTS, ZOOKEEPER_HOSTS, TOPIC and GROUP."""
import os

from pykafka import KafkaClient
from pykafka.balancedconsumer import BalancedConsumer
from pykafka.handlers import ThreadingHandler

client = KafkaClient(hosts=os.environ["KAFKA_HOSTS"])
topic = client.topics[os.environ["TOPIC"]]
handler = client.cluster.handler
assert isinstance(handler, ThreadingHandler)

messages = handler.Queue()
done = handler.Event()
joined = handler.Event()
lock = handler.Lock()
consumed = []


def worker():
    consumer = topic.get_balanced_consumer(os.environ["GROUP"].encode(),
                                           zookeeper_connect=os.environ["ZOOKEEPER_HOSTS"],
                                           auto_commit_enable=True, consumer_timeout_ms=200)
    assert isinstance(consumer, BalancedConsumer)
    joined.set()
    while not done.is_set():
        for message in consumer:
            with lock:
                consumed.append(message.offset)
            messages.put(message.value)
    consumer.stop()


thread = handler.spawn(worker, name="worker")
assert joined.wait(60)
with topic.get_producer(linger_ms=10) as producer:
    for i in range(50):
        producer.produce(b"job %d" % i)
jobs = sorted(messages.get(timeout=60) for _ in range(50))
done.set()
thread.join(60)
handler.sleep(0.01)
print("jobs", len(jobs), "thread", thread.name)
assert jobs == sorted(b"job %d" % i for i in range(50)) and len(consumed) == 50
assert not thread.is_alive()
print("OK")
