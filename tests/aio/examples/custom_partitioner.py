"""aiokafka's documentation, Examples, "Custom partitioner": the producer."""
import asyncio
import os
import random
from pyrdk.aio import AIOKafkaProducer

BOOTSTRAP_SERVERS = os.environ.get("BOOTSTRAP_SERVERS", "localhost:9092")


def my_partitioner(key, all_partitions, available_partitions):
    if key == b'first':
        return all_partitions[0]
    elif key == b'last':
        return all_partitions[-1]
    return random.choice(all_partitions)


async def produce_one(producer, key, value):
    future = await producer.send('foobar', value, key=key)
    resp = await future
    print("%s produced in partition: %i"%(value.decode(), resp.partition))


async def produce_task():
    producer = AIOKafkaProducer(
        bootstrap_servers=BOOTSTRAP_SERVERS,
        partitioner=my_partitioner)

    await producer.start()
    await produce_one(producer, b'last', b'1')
    await produce_one(producer, b'some', b'2')
    await produce_one(producer, b'first', b'3')
    await producer.stop()

asyncio.run(produce_task())
