"""aiokafka's documentation, Examples, "Serialization and compression": the consumer.
(The docs import KafkaError from kafka-python's ``kafka.common``; here from pyrdk.aio.errors.)"""
import json
import asyncio
import os
from pyrdk.aio.errors import KafkaError  # noqa: F401  (imported, unused, in the docs too)
from pyrdk.aio import AIOKafkaConsumer

BOOTSTRAP_SERVERS = os.environ.get("BOOTSTRAP_SERVERS", "localhost:9092")


def deserializer(serialized):
    return json.loads(serialized)


async def consume():
    # consumer will decompress messages automatically
    # in accordance to compression type specified in producer
    consumer = AIOKafkaConsumer(
        'foobar',
        bootstrap_servers=BOOTSTRAP_SERVERS,
        value_deserializer=deserializer,
        auto_offset_reset='earliest')
    await consumer.start()
    data = await consumer.getmany(timeout_ms=10000)
    for tp, messages in data.items():
        for message in messages:
            print(type(message.value), message.value)
    await consumer.stop()

asyncio.run(consume())
