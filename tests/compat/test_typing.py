"""pyrdk's type hints (``py.typed``) accept what its calls accept in the programs pykafka
users write: mypy checks a typical one, bytes and str names alike; and an aiokafka program on
``pyrdk.aio`` passes ``mypy --strict``, as it does on aiokafka's own types."""
import os
import textwrap

import pytest

PROGRAM = '''
import datetime
import pathlib
from pyrdk import KafkaClient, OffsetType, SslConfig

client = KafkaClient(hosts=b"127.0.0.1:9092")  # bytes, as Python 2 programs wrote it
client2 = KafkaClient(hosts="127.0.0.1:9092", zookeeper_hosts="127.0.0.1:2181")
topic = client.topics[b"events"]
assert client.topics["events"] is topic
with topic.get_producer(linger_ms=10, min_queued_messages=1) as producer:
    producer.produce(b"v", partition_key=b"k", timestamp=datetime.datetime(2020, 1, 1))
    producer.produce(b"v", timestamp=1700000000000.5)
consumer = topic.get_simple_consumer(consumer_group="g", partitions=[topic.partitions[0], 1],
                                     auto_offset_reset=OffsetType.LATEST, consumer_timeout_ms=100)
message = consumer.consume()
if message is not None:
    consumer.commit_offsets([(topic.partitions[0], message.offset + 1)])
consumer.reset_offsets([(0, OffsetType.EARLIEST), (topic.partitions[0], datetime.datetime(2020, 1, 1))])
consumer.seek(topic.partitions[0], 3)
offsets: dict[int, int] = consumer.held_offsets
topic.fetch_offset_limits(datetime.datetime(2020, 1, 1), partitions=[0])
balanced = topic.get_balanced_consumer(b"g", managed=True)
ssl = SslConfig(cafile=pathlib.Path("/etc/ca.pem"), certfile=b"/etc/cert.pem", keyfile="/etc/key.pem",
                password=b"secret")
'''

AIO_PROGRAM = '''
import asyncio
import json
from typing import Any

import pyrdk.aio as aiokafka
from pyrdk.aio import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, TopicPartition
from pyrdk.aio.errors import CommitFailedError, KafkaError, KafkaTimeoutError
from pyrdk.aio.helpers import create_ssl_context
from pyrdk.aio.structs import ConsumerRecord, OffsetAndMetadata, RecordMetadata


class Listener(ConsumerRebalanceListener):
    def __init__(self, consumer: AIOKafkaConsumer) -> None:
        self.consumer = consumer

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        await self.consumer.commit()

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        for tp in assigned:
            committed = await self.consumer.committed(tp)
            if committed is not None:
                self.consumer.seek(tp, committed)


def serializer(value: dict[str, Any]) -> bytes:
    return json.dumps(value).encode()


async def produce() -> None:
    context = create_ssl_context(cafile="ca.pem", certfile="cert.pem", keyfile="key.pem", password="secret")
    producer = aiokafka.AIOKafkaProducer(bootstrap_servers=["localhost:9092"], security_protocol="SSL",
                                         ssl_context=context, value_serializer=serializer, acks="all",
                                         enable_idempotence=True, compression_type="gzip", linger_ms=5)
    await producer.start()
    try:
        fut: asyncio.Future[RecordMetadata] = await producer.send("topic", {"a": 1}, key=b"k")
        md = await fut
        print(md.offset, md.partition, md.topic_partition.topic, md.timestamp)
        md = await producer.send_and_wait("topic", {"b": 2}, partition=0, timestamp_ms=1,
                                          headers=[("h", b"v")])
        partitions: set[int] = await producer.partitions_for("topic")
        batch = producer.create_batch()
        meta = batch.append(key=None, value=b"v", timestamp=None)
        if meta is not None:
            print(meta.offset, meta.size, batch.record_count(), batch.size())
        batch.close()
        batch_fut = await producer.send_batch(batch, "topic", partition=min(partitions))
        print((await batch_fut).offset)
        await producer.flush()
    except KafkaTimeoutError as exc:
        print(exc)
    finally:
        await producer.stop()


async def transact() -> None:
    async with AIOKafkaProducer(bootstrap_servers="localhost:9092", transactional_id="t") as producer:
        async with producer.transaction():
            await producer.send("topic", b"v")
            await producer.send_offsets_to_transaction({TopicPartition("in", 0): 5}, "group")
        await producer.begin_transaction()
        await producer.commit_transaction()
        await producer.begin_transaction()
        await producer.abort_transaction()


async def consume() -> None:
    consumer = AIOKafkaConsumer("topic", bootstrap_servers="localhost:9092", group_id="g",
                                enable_auto_commit=False, auto_offset_reset="earliest",
                                key_deserializer=lambda k: k.decode() if k else None,
                                value_deserializer=lambda v: json.loads(v))
    await consumer.start()
    try:
        consumer.subscribe(["topic"], listener=Listener(consumer))
        consumer.subscribe(pattern="^top.*")
        record: ConsumerRecord[str, dict[str, int]] = await consumer.getone()
        assert record.value is not None
        print(record.topic, record.partition, record.offset, record.key, record.value["a"], record.timestamp,
              record.headers)
        batches: dict[TopicPartition, list[ConsumerRecord[bytes, bytes]]] = await consumer.getmany(
            timeout_ms=100, max_records=10)
        for tp, records in batches.items():
            for r in records:
                print(tp.topic, r.value)
        async for msg in consumer:
            print(msg.offset)
            break
        tp = TopicPartition("topic", 0)
        await consumer.commit({tp: record.offset + 1})
        await consumer.commit({tp: OffsetAndMetadata(record.offset + 1, "meta")})
        position: int = await consumer.position(tp)
        committed = await consumer.committed(tp)
        if committed is not None:
            print(committed + 1, position)
        consumer.seek(tp, 0)
        await consumer.seek_to_beginning(tp)
        await consumer.seek_to_end()
        await consumer.seek_to_committed(tp)
        ends: dict[TopicPartition, int] = await consumer.end_offsets([tp])
        begins = await consumer.beginning_offsets([tp])
        print(ends[tp] - begins[tp])
        found = await consumer.offsets_for_times({tp: 0})
        hit = found[tp]
        if hit is not None:
            print(hit.offset, hit.timestamp)
        high = consumer.highwater(tp)
        lso = consumer.last_stable_offset(tp)
        last = consumer.last_poll_timestamp(tp)
        print(high, lso, last)
        consumer.pause(tp)
        paused: set[TopicPartition] = consumer.paused()
        consumer.resume(*paused)
        assigned: set[TopicPartition] = consumer.assignment()
        subscribed: set[str] = consumer.subscription()
        topics: set[str] = await consumer.topics()
        ids = consumer.partitions_for_topic("topic")
        print(assigned, subscribed, topics, ids)
        consumer.unsubscribe()
        consumer.assign([tp])
    except CommitFailedError:
        pass
    except KafkaError as exc:
        print(exc)
    finally:
        await consumer.stop()


async def main() -> None:
    await produce()
    await transact()
    await consume()
    print(aiokafka.__version__, aiokafka.errors.for_code(3))

'''


def type_check(tmp_path, monkeypatch, program, *options):
    api = pytest.importorskip("mypy.api")
    path = tmp_path / "program.py"
    path.write_text(textwrap.dedent(program))
    monkeypatch.chdir(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # finds pyrdk
    out, err, status = api.run([str(path), "--no-incremental", "--cache-dir", os.devnull,
                                "--python-version", "3.10", "--config-file", os.devnull,
                                "--follow-imports", "silent", *options])  # as for an installed package
    assert status == 0, out + err  # the program's errors only


def test_a_typical_pykafka_program_type_checks(tmp_path, monkeypatch):
    type_check(tmp_path, monkeypatch, PROGRAM)


def test_a_typical_aiokafka_program_type_checks_strictly(tmp_path, monkeypatch):
    """Under --strict a call of an unannotated function is an error: every call of pyrdk.aio
    the program makes needs its annotations, which are aiokafka's types."""
    type_check(tmp_path, monkeypatch, AIO_PROGRAM, "--strict")
    from pyrdk.aio.structs import ConsumerRecord
    assert ConsumerRecord[bytes, bytes].__origin__ is ConsumerRecord  # generic at run time too, as aiokafka's
