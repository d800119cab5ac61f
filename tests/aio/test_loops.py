"""pyrdk.aio under other event loops and runners: uvloop, and anyio's asyncio backend (with a
task group and a cancel scope around getmany()); and a broker killed and restarted mid-run."""
import asyncio
import os
import signal

import pytest

import pyrdk.aio as aiokafka
from pyrdk import KafkaClient
from pyrdk.aio.structs import TopicPartition

pytestmark = pytest.mark.kafka

COUNT = 200


async def round_trip(hosts, topic):
    """Send COUNT records (send() and a batch), read them back; the values read, in order."""
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=hosts) as producer:
        futs = [await producer.send(topic, b"%d" % i, partition=0) for i in range(COUNT // 2)]
        batch = producer.create_batch()
        for i in range(COUNT // 2, COUNT):
            assert batch.append(key=None, value=b"%d" % i, timestamp=None) is not None
        futs.append(await producer.send_batch(batch, topic, partition=0))
        await asyncio.gather(*futs)
    consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=hosts, auto_offset_reset="earliest")
    got = []
    async with consumer:
        consumer.assign([TopicPartition(topic, 0)])
        while len(got) < COUNT:
            batch = await asyncio.wait_for(consumer.getmany(timeout_ms=1000), 20)
            got.extend(r.value for records in batch.values() for r in records)
    return got


def test_under_uvloop(kafka_hosts, new_topic):
    uvloop = pytest.importorskip("uvloop")
    topic = new_topic(1)
    loop = uvloop.new_event_loop()  # not asyncio.Runner(loop_factory=...): Python 3.11 on only
    try:
        assert type(loop).__module__.startswith("uvloop")
        assert loop.run_until_complete(round_trip(kafka_hosts, topic)) == [b"%d" % i for i in range(COUNT)]
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


@pytest.mark.parametrize("use_uvloop", [False, True], ids=["asyncio", "uvloop"])
def test_under_anyio(kafka_hosts, new_topic, use_uvloop):
    anyio = pytest.importorskip("anyio")
    if use_uvloop:
        pytest.importorskip("uvloop")
    topic, empty = new_topic(1), new_topic(1)

    async def main():
        results = {}

        async def consume_nothing_then_cancel():
            consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=kafka_hosts, auto_offset_reset="earliest")
            async with consumer:
                consumer.assign([TopicPartition(empty, 0)])
                with anyio.move_on_after(0.5) as scope:  # anyio's cancellation of a pending getmany()
                    await consumer.getmany(timeout_ms=60000)
                results["cancelled"] = scope.cancelled_caught

        async def trip():
            results["values"] = await round_trip(kafka_hosts, topic)

        async with anyio.create_task_group() as tg:
            tg.start_soon(consume_nothing_then_cancel)
            tg.start_soon(trip)
        return results

    results = anyio.run(main, backend="asyncio", backend_options={"use_uvloop": use_uvloop})
    assert results["cancelled"] is True
    assert results["values"] == [b"%d" % i for i in range(COUNT)]


@pytest.mark.timeout(120)
def test_broker_killed_and_restarted_mid_run(own_broker):
    """Records sent while the broker is down wait in librdkafka and are delivered once it is
    back; the consumer, which lost its broker mid-run, reads every one of them. (Tansu keeps its
    log in memory: the restarted broker starts empty, and the topic is made again.)"""
    hosts = own_broker.bootstrap_servers
    topic = "restart"

    def create_topic():
        with KafkaClient(hosts=hosts) as admin:
            admin.cluster.create_topics([(topic, 1, 1)])

    async def main():
        loop = asyncio.get_running_loop()
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=hosts, request_timeout_ms=60000)
        consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=hosts, auto_offset_reset="earliest")
        tp = TopicPartition(topic, 0)
        async with producer, consumer:
            consumer.assign([tp])
            before = [await producer.send(topic, b"before %d" % i, partition=0) for i in range(50)]
            assert [md.offset for md in await asyncio.gather(*before)] == list(range(50))
            got = []
            while len(got) < 50:
                got.extend(r.value for r in (await consumer.getmany(tp, timeout_ms=1000)).get(tp, []))
            os.kill(own_broker.pid, signal.SIGKILL)
            await loop.run_in_executor(None, own_broker.process.wait, 10)
            during = [await producer.send(topic, b"during %d" % i, partition=0) for i in range(30)]
            await asyncio.sleep(1)  # librdkafka notices the loss and holds the records
            assert not any(f.done() for f in during)
            await loop.run_in_executor(None, own_broker.stop)
            await loop.run_in_executor(None, own_broker.start)
            await loop.run_in_executor(None, create_topic)  # memory storage: the topic went too
            delivered = await asyncio.wait_for(asyncio.gather(*during), 60)
            assert sorted(md.offset for md in delivered) == list(range(30))
            # The restarted broker's log starts empty at offset 0, below the consumer's position
            # (50), and Tansu answers a fetch beyond the log's end with nothing rather than
            # OFFSET_OUT_OF_RANGE: start the consumer again at the beginning.
            await consumer.seek_to_beginning(tp)
            after = []
            while len(after) < 30:
                batch = await asyncio.wait_for(consumer.getmany(tp, timeout_ms=1000), 60)
                after.extend(r.value for r in batch.get(tp, []))
        return got, after

    create_topic()
    got, after = asyncio.run(main())
    assert got == [b"before %d" % i for i in range(50)]
    assert after == [b"during %d" % i for i in range(30)]


def test_a_client_used_from_a_second_event_loop_says_so_and_still_stops(kafka_hosts, new_topic):
    """Each asyncio.run() has its own loop; a client belongs to the one its start() ran in.
    From another, the calls that wait on its futures raise IllegalStateError before doing
    anything, and stop() still closes it."""
    topic = new_topic(1)
    producer = aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts)
    consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=kafka_hosts, auto_offset_reset="earliest")

    async def first():
        await producer.start()
        await producer.send_and_wait(topic, b"in its own loop")
        await consumer.start()
        consumer.assign([TopicPartition(topic, 0)])
    asyncio.run(first())

    async def second():
        with pytest.raises(aiokafka.errors.IllegalStateError, match="another event loop"):
            await producer.send_and_wait(topic, b"from another")
        # send()'s common record too (the core's way), and a batch: nothing handed to librdkafka,
        # no future of the first loop (closed) that nothing would tell
        with pytest.raises(aiokafka.errors.IllegalStateError, match="another event loop"):
            await producer.send(topic, b"from another")
        batch = producer.create_batch()
        batch.append(key=None, value=b"from another", timestamp=None)
        with pytest.raises(aiokafka.errors.IllegalStateError, match="another event loop"):
            await producer.send_batch(batch, topic, partition=0)
        with pytest.raises(aiokafka.errors.IllegalStateError, match="another event loop"):
            await producer.flush()
        with pytest.raises(aiokafka.errors.IllegalStateError, match="another event loop"):
            await consumer.getmany(timeout_ms=100)
        # The control calls too, before they reach librdkafka (they used to fail with
        # "Event loop is closed", from the first loop's executor).
        for call in (lambda: producer.partitions_for(topic), consumer.topics,
                     lambda: consumer.beginning_offsets([TopicPartition(topic, 0)]),
                     lambda: consumer.end_offsets([TopicPartition(topic, 0)])):
            with pytest.raises(aiokafka.errors.IllegalStateError, match="another event loop"):
                await call()
        await producer.stop()  # nothing pending: closed without a word
        await consumer.stop()
    asyncio.run(second())
    assert producer._handle.closed and consumer._handle.closed


def test_clients_dropped_without_stop_are_collected_once_their_loop_is_closed(kafka_hosts, new_topic):
    """A producer and a consumer a program started and let go of without stop(), each in an
    asyncio.run() of its own: once that loop is closed nothing may hold them (librdkafka's
    callbacks registry neither), so they are collected, their librdkafka handle destroyed
    (its threads and sockets) and their wakeup pipe closed, not kept for the life of the
    process."""
    import gc
    import weakref
    topic = new_topic(1)

    async def start_and_drop():
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts)
        await producer.start()
        await producer.send_and_wait(topic, b"x", partition=0)
        consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=kafka_hosts, enable_auto_commit=False)
        await consumer.start()
        consumer.assign([TopicPartition(topic, 0)])
        return [weakref.ref(o) for o in (producer, consumer, producer._wakeup, consumer._wakeup)]

    def usage():
        gc.collect()
        return len(os.listdir("/proc/self/fd")), len(os.listdir("/proc/self/task"))

    asyncio.run(start_and_drop())  # what is made once per process
    before = usage()
    refs = asyncio.run(start_and_drop()) + asyncio.run(start_and_drop())
    after = usage()
    assert [ref() for ref in refs] == [None] * len(refs)
    # no fd or thread more (fewer, if something of an earlier test finished closing meanwhile)
    assert after[0] <= before[0] and after[1] <= before[1], (before, after)
