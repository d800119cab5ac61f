"""aiokafka's documentation, Examples, "Group consumer": the consumer. (The docs define
``consume()`` without the parameters it is called with; they are added here.)"""
import sys
import asyncio
import os
from pyrdk.aio import AIOKafkaConsumer

BOOTSTRAP_SERVERS = os.environ.get("BOOTSTRAP_SERVERS", "localhost:9092")


async def consume(group_id, msg_cnt):
    consumer = AIOKafkaConsumer(
        'some-topic',
        group_id=group_id,
        bootstrap_servers=BOOTSTRAP_SERVERS,
        auto_offset_reset='earliest')
    await consumer.start()
    for _ in range(msg_cnt):
        msg = await consumer.getone()
        print(f"Message from partition [{msg.partition}]: {msg.value}")
    await consumer.stop()

if len(sys.argv) < 3:
    print("usage: consumer.py <group_id> <wait messages count>")
    sys.exit(1)
group_id = sys.argv[1]
msg_cnt = int(sys.argv[2])

asyncio.run(consume(group_id, msg_cnt))
