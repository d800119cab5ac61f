"""aiokafka's documentation, Examples, "Using SSL with aiokafka". The certificate files and
the key's password come from the environment (the docs' values by default); the docs import
TopicPartition from kafka-python's ``kafka.common``, here from pyrdk.aio."""
import asyncio
import os
from pyrdk.aio import AIOKafkaProducer, AIOKafkaConsumer
from pyrdk.aio.helpers import create_ssl_context
from pyrdk.aio import TopicPartition

BOOTSTRAP_SERVERS = os.environ.get("BOOTSTRAP_SERVERS", "localhost:9093")

context = create_ssl_context(
    cafile=os.environ.get("CAFILE", "./ca-cert"),  # CA used to sign certificate.
                                                   # `CARoot` of JKS store container
    certfile=os.environ.get("CERTFILE", "./cert-signed"),  # Signed certificate
    keyfile=os.environ.get("KEYFILE", "./cert-key"),  # Private Key file of `certfile` certificate
    password=os.environ.get("KEY_PASSWORD", "123123")
)


async def produce_and_consume():
    # Produce
    producer = AIOKafkaProducer(
        bootstrap_servers=BOOTSTRAP_SERVERS,
        security_protocol="SSL", ssl_context=context)

    await producer.start()
    try:
        msg = await producer.send_and_wait(
            'my_topic', b"Super Message", partition=0)
    finally:
        await producer.stop()

    consumer = AIOKafkaConsumer(
        "my_topic", bootstrap_servers=BOOTSTRAP_SERVERS,
        security_protocol="SSL", ssl_context=context)
    await consumer.start()
    try:
        consumer.seek(TopicPartition('my_topic', 0), msg.offset)
        fetch_msg = await consumer.getone()
    finally:
        await consumer.stop()

    print("Success", msg, fetch_msg)

if __name__ == "__main__":
    asyncio.run(produce_and_consume())
