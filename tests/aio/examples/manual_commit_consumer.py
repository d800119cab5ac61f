"""aiokafka's documentation, Examples, "Manual commit": the consumer.
(The docs import KafkaError from kafka-python's ``kafka.common``; here from pyrdk.aio.errors.)"""
import json  # noqa: F401  (imported, unused, in the docs too)
import asyncio
import os
from pyrdk.aio.errors import KafkaError  # noqa: F401
from pyrdk.aio import AIOKafkaConsumer

BOOTSTRAP_SERVERS = os.environ.get("BOOTSTRAP_SERVERS", "localhost:9092")


async def consume():
    consumer = AIOKafkaConsumer(
        'foobar',
        bootstrap_servers=BOOTSTRAP_SERVERS,
        auto_offset_reset='earliest',
        group_id="some-consumer-group",
        enable_auto_commit=False)
    await consumer.start()
    # we want to consume 10 messages from "foobar" topic
    # and commit after that
    for _ in range(10):
        msg = await consumer.getone()  # noqa: F841
        await consumer.commit()

    await consumer.stop()

asyncio.run(consume())
