"""create_batch() and send_batch(): aiokafka's BatchBuilder, sizes as Kafka's record format
counts them, batches delivered whole to the partition chosen."""
import asyncio
import json

import pytest

import pyrdk.aio as aiokafka
from pyrdk.aio.batch import BATCH_OVERHEAD, BatchBuilder, BatchRecordMetadata, record_size
from pyrdk.aio.structs import RecordMetadata
from tests.aio.test_consumer import assigned_consumer, drain

pytestmark = pytest.mark.kafka


def test_record_size_is_kafkas_v2_encoding():
    # length 9 | attributes 0 | timestamp delta 0 | offset delta 0 | key -1 | value 3 "abc" | 0 headers
    assert record_size(0, 0, None, b"abc", []) == 10
    # deltas of 64 and 100 take two bytes each as zigzag varints; a header "h" = b"xy" takes 5
    assert record_size(64, 100, b"k", b"", [("h", b"xy")]) == 1 + 1 + 2 + 2 + 2 + 1 + 1 + 5


def test_batch_builder_fills_closes_and_checks_its_input():
    batch = BatchBuilder(200)
    assert (batch.size(), batch.record_count()) == (BATCH_OVERHEAD, 0)
    md = batch.append(key=b"k", value=b"v" * 50, timestamp=1600000000000, headers=[("h", b"1")])
    assert isinstance(md, BatchRecordMetadata)
    assert (md.offset, md.timestamp, md.crc) == (0, 1600000000000, None)
    assert batch.size() == BATCH_OVERHEAD + md.size
    assert batch.append(key=None, value=b"v" * 50, timestamp=None).offset == 1
    assert batch.append(key=None, value=b"v" * 100, timestamp=None) is None  # past 200 bytes
    assert batch.record_count() == 2
    big = BatchBuilder(10)
    assert big.append(key=None, value=b"x" * 100, timestamp=None) is not None  # the first always fits
    with pytest.raises(TypeError, match="value must be bytes"):
        batch.append(key=None, value="text", timestamp=None)
    with pytest.raises(TypeError, match="headers"):
        batch.append(key=None, value=b"v", timestamp=None, headers=[(b"h", b"v")])
    with pytest.raises(ValueError, match="holds a NUL character"):  # a consumer would read 'a'
        batch.append(key=None, value=b"v", timestamp=None, headers=[("a\0b", b"v")])
    with pytest.raises(TypeError, match="timestamp"):
        batch.append(key=None, value=b"v", timestamp=-1)
    with pytest.raises(TypeError, match="timestamp"):
        batch.append(key=None, value=b"v", timestamp=2 ** 63)  # librdkafka's is an int64
    batch.close()
    assert batch.append(key=None, value=b"v", timestamp=None) is None
    assert batch.record_count() == 2


@pytest.mark.asyncio
async def test_send_batch_delivers_each_batch_whole(kafka_hosts, new_topic):
    topic = new_topic(2)
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts, max_batch_size=1000) as producer:
        sent, futs = [], []
        for n in range(3):
            batch = producer.create_batch()
            i = 0
            while batch.append(key=b"k%d" % i, value=b"batch %d record %d" % (n, i), timestamp=None,
                               headers=[("n", b"%d" % n)]) is not None:
                sent.append(b"batch %d record %d" % (n, i))
                i += 1
            assert 10 < batch.record_count() == i < 100
            futs.append((batch.record_count(), await producer.send_batch(batch, topic, partition=1)))
        firsts = [await fut for _, fut in futs]
        with pytest.raises(TypeError, match="create_batch"):
            await producer.send_batch([b"v"], topic, partition=0)
        with pytest.raises(ValueError, match="empty"):
            await producer.send_batch(producer.create_batch(), topic, partition=0)
        with pytest.raises(TypeError, match="partition"):
            batch = producer.create_batch()
            batch.append(key=None, value=b"v", timestamp=None)
            await producer.send_batch(batch, topic, partition=None)
        with pytest.raises(TypeError, match="partition must be an int >= 0 and < 2..31"):
            await producer.send_batch(batch, topic, partition=2 ** 40)
    assert all(isinstance(md, RecordMetadata) and md.partition == 1 for md in firsts)
    # each batch's future gives its first record, the batches follow one another
    offset = 0
    for (count, _), md in zip(futs, firsts):
        assert md.offset == offset
        offset += count
    consumer, tps = assigned_consumer(kafka_hosts, topic, 2)
    async with consumer:
        consumer.assign(tps)
        got = await drain(consumer, len(sent))
    assert [r.value for r in got] == sent
    assert all(r.partition == 1 for r in got) and [r.offset for r in got] == list(range(len(sent)))
    assert got[0].headers == (("n", b"0"),) and got[-1].headers == (("n", b"2"),)


@pytest.mark.asyncio
async def test_send_batch_waits_for_the_partitions_previous_batch(kafka_hosts, new_topic):
    topic = new_topic(1)
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts, linger_ms=200) as producer:
        first = producer.create_batch()
        first.append(key=None, value=b"first", timestamp=None)
        second = producer.create_batch()
        second.append(key=None, value=b"second", timestamp=None)
        fut1 = await producer.send_batch(first, topic, partition=0)
        fut2 = await producer.send_batch(second, topic, partition=0)
        assert fut1.done()  # send_batch() waited for the first batch's delivery
        assert ((await fut1).offset, (await asyncio.wait_for(fut2, 10)).offset) == (0, 1)


@pytest.mark.asyncio
async def test_append_serializes_with_the_producers_serializers_as_aiokafkas(kafka_hosts, new_topic):
    """aiokafka 0.11 on: create_batch() gives the batch the producer's serializers, and
    append() takes what send() would (not only bytes)."""
    topic = new_topic(1)
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts, key_serializer=str.encode,
                                         value_serializer=lambda v: json.dumps(v).encode()) as producer:
        batch = producer.create_batch()
        md = batch.append(key="k", value={"n": 1}, timestamp=None)
        assert md.size == record_size(0, 0, b"k", b'{"n": 1}', [])
        with pytest.raises(TypeError, match="value_serializer returned"):
            BatchBuilder(1000, value_serializer=lambda v: "not bytes").append(key=None, value=1, timestamp=None)
        await (await producer.send_batch(batch, topic, partition=0))
    consumer, tps = assigned_consumer(kafka_hosts, topic, 1)
    async with consumer:
        consumer.assign(tps)
        got = await drain(consumer, 1)
    assert [(r.key, r.value) for r in got] == [(b"k", b'{"n": 1}')]
