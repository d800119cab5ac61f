"""aiokafka's documentation, Examples, "Group consumer": the producer."""
import sys
import asyncio
import os
from pyrdk.aio import AIOKafkaProducer

BOOTSTRAP_SERVERS = os.environ.get("BOOTSTRAP_SERVERS", "localhost:9092")


async def produce(value, partition):
    producer = AIOKafkaProducer(bootstrap_servers=BOOTSTRAP_SERVERS)

    await producer.start()
    await producer.send('some-topic', value, partition=partition)
    await producer.stop()

if len(sys.argv) != 3:
    print("usage: producer.py <partition> <message>")
    sys.exit(1)
value = sys.argv[2].encode()
partition = int(sys.argv[1])

asyncio.run(produce(value, partition))
