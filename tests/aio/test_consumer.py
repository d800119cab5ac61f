"""AIOKafkaConsumer against the test broker: round trip, offsets, seek and position,
cancellation, bad input, a group with a rebalance listener, and the event loop kept free."""
import asyncio
import functools
import re
import resource
import threading
import time

import pytest

import pyrdk.aio as aiokafka
from pyrdk.aio.consumer import HOLD_MAX
from pyrdk.aio.errors import ConsumerStoppedError, IllegalOperation, IllegalStateError
from pyrdk.aio.structs import ConsumerRecord, TopicPartition
from tests.aio.conftest import FAST_GROUP
from tests.fix_kafka import tansu_gap

pytestmark = pytest.mark.kafka


async def produce(hosts, topic, count, partition=None, key=None):
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=hosts, linger_ms=5) as producer:
        for i in range(count):
            await producer.send(topic, b"m%d" % i, key=key, partition=partition)
        await producer.flush()


async def drain(consumer, count, timeout_s=20):
    """Records until ``count`` came (or the timeout): ``[ConsumerRecord]``."""
    out = []
    deadline = time.monotonic() + timeout_s
    while len(out) < count and time.monotonic() < deadline:
        batch = await consumer.getmany(timeout_ms=1000)
        for records in batch.values():
            out.extend(records)
    return out


def assigned_consumer(hosts, topic, partitions, **kwargs):
    consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=hosts, auto_offset_reset="earliest", **kwargs)
    return consumer, [TopicPartition(topic, p) for p in range(partitions)]


@pytest.mark.asyncio
async def test_round_trip_with_deserializers(kafka_hosts, new_topic):
    topic = new_topic(4)
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts) as producer:
        # headers as pairs of any sequence, as aiokafka unpacks them
        sent = [await producer.send(topic, b"v%d" % i, key=b"k%d" % i,
                                    headers=[("h", b"x")] if i % 2 else [["h", b"x"]]) for i in range(200)]
        await producer.flush()
    consumer, tps = assigned_consumer(kafka_hosts, topic, 4, value_deserializer=bytes.decode,
                                      key_deserializer=bytes.decode)
    async with consumer:
        consumer.assign(tps)
        assert consumer.assignment() == set(tps)
        got = await drain(consumer, 200)
    assert sorted(r.value for r in got) == sorted("v%d" % i for i in range(200))
    r = got[0]
    assert isinstance(r, ConsumerRecord)
    assert r.key == "k" + r.value[1:] and r.headers == (("h", b"x"),)  # a tuple, as aiokafka's
    assert all(r.headers == (("h", b"x"),) for r in got)
    assert r.timestamp_type == 0 and r.timestamp > 0
    assert (r.serialized_key_size, r.serialized_value_size) == (len(r.key), len(r.value))
    where = {(f.result().partition, f.result().offset) for f in sent}
    assert {(x.partition, x.offset) for x in got} == where


@pytest.mark.asyncio
async def test_committed_is_none_then_the_commit(kafka_hosts, new_topic):
    topic = new_topic(1)
    await produce(kafka_hosts, topic, 10)
    consumer, tps = assigned_consumer(kafka_hosts, topic, 1, group_id="g-" + topic, enable_auto_commit=False)
    async with consumer:
        consumer.assign(tps)
        assert await consumer.committed(tps[0]) is None
        got = await consumer.getmany(timeout_ms=10000, max_records=4)
        assert [r.offset for r in got[tps[0]]] == [0, 1, 2, 3]
        await consumer.commit()
        assert await consumer.committed(tps[0]) == 4
        await consumer.commit({tps[0]: (7, "meta")})
        assert await consumer.committed(tps[0]) == 7
    # a new consumer of the group starts at the commit
    consumer, tps = assigned_consumer(kafka_hosts, topic, 1, group_id="g-" + topic)
    async with consumer:
        consumer.assign(tps)
        got = await drain(consumer, 3)
        assert [r.offset for r in got] == [7, 8, 9]


@pytest.mark.asyncio
async def test_getmany_of_some_partitions_bounds_the_others_backlog(kafka_hosts, new_topic):
    """While a program asks for partition 0 only, partition 1's backlog stops being fetched
    once HOLD_MAX of its records wait in the buffer, and is fetched again, from where it
    stopped, when the program asks for it: none lost, none twice."""
    topic = new_topic(2)
    backlog = 6 * HOLD_MAX
    await produce(kafka_hosts, topic, backlog, partition=1)
    consumer, (tp0, tp1) = assigned_consumer(kafka_hosts, topic, 2)
    async with consumer:
        consumer.assign([tp0, tp1])
        most = 0
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            assert await consumer.getmany(tp0, timeout_ms=200) == {}
            most = max(most, consumer._buffered)
        assert HOLD_MAX <= most < 2 * HOLD_MAX, most  # it came, and stopped coming
        assert consumer.paused() == set()  # not the program's pause
        await produce(kafka_hosts, topic, 3, partition=0)
        got = await consumer.getmany(tp0, timeout_ms=10000)
        assert [r.value for r in got[tp0]] == [b"m0", b"m1", b"m2"]
        offsets = []
        deadline = time.monotonic() + 60
        while len(offsets) < backlog and time.monotonic() < deadline:
            batch = await consumer.getmany(tp1, timeout_ms=1000)
            offsets.extend(r.offset for r in batch.get(tp1, []))
        assert offsets == list(range(backlog))


@pytest.mark.asyncio
async def test_seek_and_position(kafka_hosts, new_topic):
    topic = new_topic(1)
    await produce(kafka_hosts, topic, 20)
    consumer, tps = assigned_consumer(kafka_hosts, topic, 1)
    tp = tps[0]
    async with consumer:
        consumer.assign(tps)
        assert await consumer.position(tp) == 0
        got = await consumer.getmany(tp, timeout_ms=10000, max_records=5)
        assert [r.offset for r in got[tp]] == [0, 1, 2, 3, 4]
        assert await consumer.position(tp) == 5
        consumer.seek(tp, 15)
        assert await consumer.position(tp) == 15
        got = await drain(consumer, 5)
        assert [r.offset for r in got] == [15, 16, 17, 18, 19]
        assert consumer.highwater(tp) == 20
        await consumer.seek_to_beginning(tp)
        got = await drain(consumer, 20)
        assert [r.offset for r in got] == list(range(20))
        assert await consumer.beginning_offsets([tp]) == {tp: 0}
        assert consumer.partitions_for_topic(topic) == {0}
        assert topic in await consumer.topics()


@pytest.mark.asyncio
async def test_seek_to_end_and_beginning_are_resolved_when_they_return(kafka_hosts, new_topic):
    """As aiokafka's: position() tells the offset they went to, and a record produced right
    after seek_to_end() is read (librdkafka's OFFSET_END would be resolved past it)."""
    topic = new_topic(1)
    tp = TopicPartition(topic, 0)
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts) as producer:
        for i in range(5):  # one batch each: Tansu's ListOffsets tells their end
            await producer.send_and_wait(topic, b"m%d" % i, partition=0)
        consumer, _ = assigned_consumer(kafka_hosts, topic, 1, group_id="g-" + topic, enable_auto_commit=False)
        async with consumer:
            consumer.assign([tp])
            await consumer.commit({tp: 2})
            assert await consumer.seek_to_end(tp) is True
            assert await consumer.position(tp) == 5  # not the committed offset
            assert await consumer.seek_to_beginning() is True
            assert await consumer.position(tp) == 0
            assert (await asyncio.wait_for(consumer.getone(), 20)).offset == 0
            await consumer.seek_to_end(tp)
            assert await consumer.position(tp) == 5
            await producer.send_and_wait(topic, b"after", partition=0)
            record = await asyncio.wait_for(consumer.getone(), 20)
            assert (record.offset, record.value) == (5, b"after")


@pytest.mark.asyncio
async def test_seek_to_end_and_beginning_of_several_partitions(kafka_hosts, new_topic):
    topic = new_topic(3)
    tps = [TopicPartition(topic, p) for p in range(3)]
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts) as producer:
        for p in range(3):
            for i in range(p + 2):  # one batch each: Tansu's ListOffsets tells their end
                await producer.send_and_wait(topic, b"m%d" % i, partition=p)
    consumer, _ = assigned_consumer(kafka_hosts, topic, 3)
    async with consumer:
        consumer.assign(tps)
        assert await consumer.seek_to_end() is True
        assert [await consumer.position(tp) for tp in tps] == [2, 3, 4]
        assert await consumer.seek_to_beginning(tps[0], tps[2]) is True
        assert [await consumer.position(tp) for tp in tps] == [0, 3, 0]
        got = await drain(consumer, 6)
        assert sorted((r.partition, r.offset) for r in got) == [(0, 0), (0, 1), (2, 0), (2, 1), (2, 2), (2, 3)]


@pytest.mark.asyncio
async def test_assign_again_starts_each_partition_anew_without_duplicates(kafka_hosts, new_topic):
    """As aiokafka's assign(): a partition assigned again starts at its committed offset (or
    auto_offset_reset), unpaused; the records fetched before are not returned on top of the
    ones librdkafka fetches again."""
    topic = new_topic(2)
    await produce(kafka_hosts, topic, 10, partition=0)
    await produce(kafka_hosts, topic, 2, partition=1)
    consumer, (tp0, tp1) = assigned_consumer(kafka_hosts, topic, 2, group_id="g-" + topic,
                                             enable_auto_commit=False)
    async with consumer:
        consumer.assign([tp0])
        assert [r.offset for r in (await consumer.getmany(timeout_ms=10000, max_records=3))[tp0]] == [0, 1, 2]
        consumer.pause(tp0)
        await asyncio.sleep(0.5)  # the rest of tp0 fetched and buffered
        consumer.assign([tp0, tp1])
        assert consumer.paused() == set()
        assert await consumer.position(tp0) == 0
        got = await drain(consumer, 12)
        await asyncio.sleep(0.5)
        got += await drain(consumer, 1, timeout_s=1)  # nothing more
        assert sorted((r.partition, r.offset) for r in got) == [(0, i) for i in range(10)] + [(1, 0), (1, 1)]


@pytest.mark.asyncio
async def test_subscribe_again_without_a_group_starts_anew_without_duplicates(kafka_hosts, new_topic):
    """Without a group_id subscribe() assigns every partition (rd_kafka_assign): subscribing
    again starts them anew, as aiokafka's, and returns no record twice."""
    topic = new_topic(1)
    tp = TopicPartition(topic, 0)
    await produce(kafka_hosts, topic, 10, partition=0)
    consumer, _ = assigned_consumer(kafka_hosts, topic, 1)
    async with consumer:
        consumer.subscribe([topic])
        assert [r.offset for r in (await consumer.getmany(timeout_ms=10000, max_records=3))[tp]] == [0, 1, 2]
        await asyncio.sleep(0.5)  # the rest fetched and buffered
        consumer.subscribe([topic])
        assert await consumer.position(tp) == 0
        got = await drain(consumer, 10)
        await asyncio.sleep(0.5)
        got += await drain(consumer, 1, timeout_s=1)  # nothing more
        assert [r.offset for r in got] == list(range(10))


@pytest.mark.asyncio
async def test_a_new_subscription_without_a_group_returns_none_of_the_old_topics(kafka_hosts, new_topic):
    """Without a group_id, a topic the metadata knows is assigned whole; a later subscribe()
    that joins the private group (a pattern) gives it up, records fetched already included."""
    old, new = new_topic(1), new_topic(1)
    await produce(kafka_hosts, old, 10, partition=0)
    await produce(kafka_hosts, new, 2, partition=0)
    consumer, _ = assigned_consumer(kafka_hosts, old, 1, **FAST_GROUP)
    async with consumer:
        consumer.subscribe([old])
        assert len((await consumer.getmany(timeout_ms=10000, max_records=3))[TopicPartition(old, 0)]) == 3
        await asyncio.sleep(0.5)  # the rest fetched and buffered
        consumer.subscribe(pattern="^%s$" % new)
        got = await drain(consumer, 2, timeout_s=30)
        assert [(r.topic, r.offset) for r in got] == [(new, 0), (new, 1)]


@pytest.mark.asyncio
async def test_partitions_for_topic_knows_a_topic_made_after_start(kafka_hosts, new_topic):
    """As aiokafka's: the metadata is asked again for the topics the consumer reads."""
    consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=kafka_hosts, group_id="g-" + new_topic(1),
                                         auto_offset_reset="earliest", **FAST_GROUP)
    async with consumer:
        topic = new_topic(3)  # after start()
        await produce(kafka_hosts, topic, 2, partition=0)
        consumer.subscribe([topic])
        assert len(await drain(consumer, 2, timeout_s=30)) == 2
        for _ in range(100):  # the request runs in the background
            if consumer.partitions_for_topic(topic) is not None:
                break
            await asyncio.sleep(0.1)
        assert consumer.partitions_for_topic(topic) == {0, 1, 2}


@tansu_gap("ListOffsets misreports the log end after a batch of several records")
@pytest.mark.asyncio
async def test_end_offsets_after_a_batch(kafka_hosts, new_topic):
    topic = new_topic(1)
    await produce(kafka_hosts, topic, 20)
    consumer, tps = assigned_consumer(kafka_hosts, topic, 1)
    async with consumer:
        assert await consumer.end_offsets(tps) == {tps[0]: 20}


@pytest.mark.asyncio
async def test_cancelled_getmany_leaves_the_consumer_usable(kafka_hosts, new_topic):
    topic = new_topic(1)
    consumer, tps = assigned_consumer(kafka_hosts, topic, 1)
    async with consumer:
        consumer.assign(tps)
        for _ in range(3):
            task = asyncio.ensure_future(consumer.getmany(timeout_ms=30000))
            await asyncio.sleep(0.2)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        await produce(kafka_hosts, topic, 5)
        got = await drain(consumer, 5)
        assert [r.value for r in got] == [b"m%d" % i for i in range(5)]
        # a getone() waiting when the consumer stops raises, and stop() is bounded
        waiting = asyncio.ensure_future(consumer.getone())
        await asyncio.sleep(0.1)
        started = time.monotonic()
        await consumer.stop()
        print("stop() took %.3f s" % (time.monotonic() - started))
        with pytest.raises(ConsumerStoppedError):
            await asyncio.wait_for(waiting, 5)


@pytest.mark.asyncio
async def test_a_start_cancelled_before_the_metadata_came_is_started_anew():
    """As aiokafka's: a start() cut short (asyncio.wait_for) leaves the consumer unstarted,
    and the next start() tries again instead of returning at once, unsubscribed."""
    consumer = aiokafka.AIOKafkaConsumer("a-topic", bootstrap_servers="127.0.0.1:1", request_timeout_ms=1000)
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(consumer.start(), 0.2)
    with pytest.raises(ConsumerStoppedError, match="not started"):
        await consumer.getmany()
    with pytest.raises(aiokafka.errors.KafkaError):
        await asyncio.wait_for(consumer.start(), 20)
    await consumer.stop()


@pytest.mark.asyncio
async def test_a_client_stopped_before_it_started_may_still_start(kafka_hosts, new_topic):
    """As aiokafka's: the usual "finally: await client.stop()" after a start() that failed
    leaves a client that a retry can start (one stopped after it ran cannot be)."""
    topic = new_topic(1)
    consumer = aiokafka.AIOKafkaConsumer(topic, bootstrap_servers=kafka_hosts, auto_offset_reset="earliest")
    producer = aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts)
    await consumer.stop()
    await producer.stop()
    async with producer:
        await producer.send_and_wait(topic, b"m0", partition=0)
    async with consumer:
        assert (await asyncio.wait_for(consumer.getone(), 30)).value == b"m0"
    with pytest.raises(ConsumerStoppedError, match="make a new one"):
        await consumer.start()
    with pytest.raises(aiokafka.errors.ProducerClosed, match="make a new one"):
        await producer.start()


@pytest.mark.asyncio
async def test_subscribe_or_assign_before_start_is_done_by_start(kafka_hosts, new_topic):
    """As aiokafka's: subscribe() (with its listener) or assign() may come before start()."""
    topic = new_topic(1)
    tp = TopicPartition(topic, 0)
    await produce(kafka_hosts, topic, 3, partition=0)
    consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=kafka_hosts, group_id="g-" + topic,
                                         auto_offset_reset="earliest", **FAST_GROUP)
    recorder = Recorder(consumer)
    consumer.subscribe([topic], listener=recorder)
    assert consumer.subscription() == {topic}
    with pytest.raises(IllegalStateError, match="subscribe"):
        consumer.assign([tp])
    async with consumer:
        assert (await asyncio.wait_for(consumer.getone(), 30)).offset == 2  # the listener seeked to 2
    assert ("assigned", [tp]) in recorder.events
    consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=kafka_hosts, auto_offset_reset="earliest")
    consumer.subscribe(name for name in [topic])  # a generator, read once: its names are kept
    async with consumer:
        assert consumer.subscription() == {topic}
        assert (await asyncio.wait_for(consumer.getone(), 30)).offset == 0
    consumer = aiokafka.AIOKafkaConsumer(topic, bootstrap_servers=kafka_hosts, auto_offset_reset="earliest")
    assert consumer.subscription() == {topic}  # the constructor's topics are a subscribe(), as in aiokafka
    with pytest.raises(IllegalStateError, match="subscribe"):
        consumer.assign([tp])
    consumer.unsubscribe()  # the constructor's topics too
    assert consumer.subscription() == set()
    consumer.assign([tp])
    async with consumer:
        assert consumer.assignment() == {tp}
        assert (await asyncio.wait_for(consumer.getone(), 30)).offset == 0


@pytest.mark.asyncio
async def test_bad_input_raises_clear_errors(kafka_hosts, new_topic):
    with pytest.raises(ValueError, match="auto_offset_reset"):
        aiokafka.AIOKafkaConsumer(bootstrap_servers=kafka_hosts, auto_offset_reset="oldest")
    with pytest.raises(ValueError, match="isolation_level"):
        aiokafka.AIOKafkaConsumer(bootstrap_servers=kafka_hosts, isolation_level="serializable")
    topic = new_topic(2)
    consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=kafka_hosts)
    with pytest.raises(ConsumerStoppedError, match="start"):
        await consumer.getmany()
    with pytest.raises(ConsumerStoppedError, match="start"):  # not a loop that ends at once, silently
        async for _ in consumer:
            pass
    async with consumer:
        with pytest.raises(IllegalOperation, match="group_id"):
            await consumer.commit({TopicPartition(topic, 0): 1})
        with pytest.raises(IllegalOperation, match="group_id"):
            await consumer.committed(TopicPartition(topic, 0))
        with pytest.raises(IllegalStateError, match="not assigned"):
            consumer.seek(TopicPartition(topic, 0), 3)
        consumer.assign([TopicPartition(topic, 0)])
        with pytest.raises(ValueError, match="offset"):
            consumer.seek(TopicPartition(topic, 0), -5)
        with pytest.raises(IllegalStateError, match="not assigned"):
            await consumer.position(TopicPartition(topic, 1))
        for call in (consumer.highwater, consumer.last_stable_offset, consumer.last_poll_timestamp):
            with pytest.raises(IllegalStateError, match="not assigned"):  # not None, as if nothing was fetched yet
                call(TopicPartition(topic, 1))
        with pytest.raises(IllegalStateError, match="assign"):
            consumer.subscribe([topic])
        with pytest.raises(ValueError, match="timeout_ms"):
            await consumer.getmany(timeout_ms=-1)
        with pytest.raises(ValueError, match="timeout_ms"):  # not a wait no deadline ends (NaN compares false)
            await asyncio.wait_for(consumer.getmany(timeout_ms=float("nan")), 10)
        with pytest.raises(TypeError, match="TopicPartition"):
            await consumer.getmany("not a partition")
        consumer.unsubscribe()
        # aiokafka raises ValueError for these
        with pytest.raises(ValueError, match="topics or a pattern"):
            consumer.subscribe([topic], pattern="^aio-.*")
        with pytest.raises(ValueError, match="topics or a pattern"):
            consumer.subscribe()
        with pytest.raises(ValueError, match="not a valid regular expression: missing \\)"):
            consumer.subscribe(pattern="(aio")
        # librdkafka's patterns are POSIX ones: Python's syntax that would fail unclearly, or match other
        # topics silently ([\d] is a backslash or a d there), is refused saying so
        for pattern, named in ((r"^aio-\d+", r"no \\d"), (r"^aio-[\da-f]+$", r"no \\d inside"),
                               ("^(?:aio)-.*", r"no \(\?\.\.\.\)"), (re.compile("^AIO-", re.IGNORECASE), "flags")):
            with pytest.raises(ValueError, match=named):
                consumer.subscribe(pattern=pattern)
        with pytest.raises(TypeError, match="listener"):
            consumer.subscribe([topic], listener=object())


@pytest.mark.asyncio
async def test_topic_partitions_of_other_types_are_refused_or_taken_as_ints(kafka_hosts, new_topic):
    """A TopicPartition of a bytes topic or a bool partition (aiokafka's are str and int) is a
    TypeError, not a raw AttributeError deep inside nor partition 1; an integer of another
    type is taken as the int it is."""
    topic = new_topic(2)
    await produce(kafka_hosts, topic, 3, partition=1)
    consumer, _ = assigned_consumer(kafka_hosts, topic, 2)
    async with consumer:
        consumer.assign([TopicPartition(topic, 1)])
        for bad in (TopicPartition(topic.encode(), 1), TopicPartition(topic, True), TopicPartition(topic, "1"),
                    (topic, True)):
            with pytest.raises(TypeError, match="TopicPartition"):
                await consumer.end_offsets([bad])
            with pytest.raises(TypeError, match="TopicPartition"):
                consumer.highwater(bad)
            with pytest.raises(TypeError, match="TopicPartition"):
                await consumer.getmany(bad, timeout_ms=10)
        with pytest.raises(ValueError, match="the timestamp for .* must be an int >= 0 .ms., not True"):
            await consumer.offsets_for_times({TopicPartition(topic, 1): True})
        np = pytest.importorskip("numpy")
        end = await consumer.end_offsets([TopicPartition(topic, 1)])
        assert await consumer.end_offsets([TopicPartition(topic, np.int64(1))]) == end
        assert list(await consumer.offsets_for_times({TopicPartition(topic, 1): np.int64(0)})) == \
            [TopicPartition(topic, 1)]
        consumer.seek((topic, np.int32(1)), np.int64(2))
        assert [r.offset for r in await drain(consumer, 1)] == [2]


@pytest.mark.asyncio
async def test_pause_and_resume(kafka_hosts, new_topic):
    topic = new_topic(2)
    await produce(kafka_hosts, topic, 5, partition=0)
    await produce(kafka_hosts, topic, 5, partition=1)
    consumer, tps = assigned_consumer(kafka_hosts, topic, 2)
    async with consumer:
        consumer.assign(tps)
        consumer.pause(tps[0])
        assert consumer.paused() == {tps[0]}
        got = await drain(consumer, 5)
        assert {r.partition for r in got} == {1}
        assert await consumer.getmany(timeout_ms=500) == {}
        consumer.resume(tps[0])
        got = await drain(consumer, 5)
        assert [(r.partition, r.offset) for r in got] == [(0, i) for i in range(5)]
        for call in (consumer.pause, consumer.resume):  # as aiokafka's: not silently nothing
            with pytest.raises(IllegalStateError, match="not assigned"):
                call(TopicPartition(topic, 7))


@pytest.mark.asyncio
async def test_a_paused_partition_assigned_again_starts_unpaused(kafka_hosts, new_topic):
    """As aiokafka's: a new assignment starts unpaused, and paused() says so. librdkafka
    keeps a partition's pause across assignments: without its resume the partition read
    nothing ever after. (A revocation by the group resumes the same way.)"""
    topic = new_topic(1)
    await produce(kafka_hosts, topic, 3, partition=0)
    tp = TopicPartition(topic, 0)
    consumer, _ = assigned_consumer(kafka_hosts, topic, 1)
    async with consumer:
        consumer.assign([tp])
        consumer.pause(tp)
        consumer.unsubscribe()
        consumer.assign([tp])
        assert consumer.paused() == set()
        got = await drain(consumer, 3)
        assert [r.offset for r in got] == [0, 1, 2]


class Recorder(aiokafka.ConsumerRebalanceListener):
    def __init__(self, consumer):
        self.consumer = consumer
        self.events = []

    async def on_partitions_revoked(self, revoked):
        await asyncio.sleep(0.01)  # awaited: the consumer waits for it
        self.events.append(("revoked", sorted(revoked)))

    async def on_partitions_assigned(self, assigned):
        self.events.append(("assigned", sorted(assigned)))
        for tp in assigned:  # the listener may seek: from offset 2 on
            self.consumer.seek(tp, 2)


@pytest.mark.asyncio
async def test_subscribe_with_listener_and_async_for(kafka_hosts, new_topic):
    topic = new_topic(2)
    await produce(kafka_hosts, topic, 4, partition=0)
    await produce(kafka_hosts, topic, 4, partition=1)
    consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=kafka_hosts, group_id="g-" + topic,
                                         auto_offset_reset="earliest", **FAST_GROUP)
    listener = Recorder(consumer)
    got = []
    async with consumer:
        consumer.subscribe([topic], listener=listener)
        assert consumer.subscription() == {topic}

        async def read():
            async for record in consumer:
                got.append((record.partition, record.offset))
                if len(got) == 4:
                    return
        await asyncio.wait_for(read(), 30)
        tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
        assert listener.events == [("revoked", []), ("assigned", tps)]  # aiokafka's first rebalance
        assert sorted(got) == [(0, 2), (0, 3), (1, 2), (1, 3)]
        await consumer.commit()
        assert await consumer.committed(tps[0]) == 4
        consumer.unsubscribe()
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            await consumer.getmany(timeout_ms=200)
        assert consumer.assignment() == set()
        assert len(listener.events) == 2  # aiokafka's unsubscribe() drops the listener: no revocation told


async def _loop_stays_free(hosts, topic, total):
    """A task ticking every millisecond records the gaps between its ticks while ``total``
    records of 100 B are produced and then consumed; every record must come back, each
    partition's in the order sent. The worst gaps are printed, not asserted (speed is measured
    in bench/)."""
    gaps = []
    stop = asyncio.Event()

    def switches():  # the loop thread's context switches: (voluntary, involuntary)
        usage = resource.getrusage(resource.RUSAGE_THREAD)
        return usage.ru_nvcsw, usage.ru_nivcsw

    async def tick():  # each gap: its length, when it ended, the loop thread's CPU time and switches in it
        last, last_cpu, last_sw = time.perf_counter(), time.thread_time(), switches()
        while not stop.is_set():
            await asyncio.sleep(0.001)
            now, cpu, sw = time.perf_counter(), time.thread_time(), switches()
            gaps.append((now - last, now - started, cpu - last_cpu, sw[0] - last_sw[0], sw[1] - last_sw[1]))
            last, last_cpu, last_sw = now, cpu, sw

    started = time.perf_counter()
    ticker = asyncio.ensure_future(tick())
    pad = b"." * 90
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=hosts, linger_ms=5) as producer:
        for i in range(total):
            fut = await producer.send(topic, b"%010d" % i + pad)
        await producer.flush()
        assert fut.result().offset >= 0
    produced = time.perf_counter()
    consumer, tps = assigned_consumer(hosts, topic, 4)
    last = {tp: -1 for tp in tps}
    seen = 0
    async with consumer:
        consumer.assign(tps)
        deadline = time.monotonic() + 60 + total / 10000
        while seen < total and time.monotonic() < deadline:
            for tp, records in (await consumer.getmany(timeout_ms=1000, max_records=5000)).items():
                for r in records:
                    number = int(r.value[:10])
                    assert number > last[tp], "%s: %d after %d" % (tp, number, last[tp])
                    assert len(r.value) == 100
                    last[tp] = number
                seen += len(records)
    consumed = time.perf_counter()
    stop.set()
    await ticker
    assert seen == total  # each partition's in order, none twice: every record came back once
    for name, first, end in (("producing", started, produced), ("consuming", produced, consumed)):
        phase = [gap for gap in gaps if first - started <= gap[1] < end - started]
        worst, at, cpu, _, _ = max(phase) if phase else (0.0, 0.0, 0.0, 0, 0)
        print("\n%s %d records of 100 B: %.2f s, %d ticks, worst loop gap %.1f ms (%.2f s in, %.1f ms of it on "
              "the loop's CPU); over 20 ms (length/loop CPU ms, voluntary/involuntary switches, when): %s"
              % (name, total, end - first, len(phase), worst * 1000, at, cpu * 1000,
                 ["%.0f/%.0f ms %d/%d %.2f s" % (g * 1000, c * 1000, v, i, t) for g, t, c, v, i in phase if g > 0.02]))


@pytest.mark.asyncio
async def test_the_loop_stays_free_while_100000_records_go_through(kafka_hosts, new_topic):
    await _loop_stays_free(kafka_hosts, new_topic(4), 100000)


@pytest.mark.slow
@pytest.mark.asyncio
async def test_the_loop_stays_free_while_1000000_records_go_through(kafka_hosts, new_topic):
    await _loop_stays_free(kafka_hosts, new_topic(4), 1000000)


class Timeline(aiokafka.ConsumerRebalanceListener):
    """Records ``(name, event, partitions)`` into a shared list, in the order they happen."""

    def __init__(self, name, log):
        self.name, self.log = name, log

    async def on_partitions_revoked(self, revoked):
        await asyncio.sleep(0.05)  # the group waits for an awaited listener
        self.log.append((self.name, "revoked", frozenset(revoked)))

    def on_partitions_assigned(self, assigned):  # a plain function is taken too
        self.log.append((self.name, "assigned", frozenset(assigned)))


@pytest.mark.asyncio
@pytest.mark.slow  # seconds of group coordination or timeouts: the C pass runs it, make soak the pure one
async def test_rebalance_listener_order_with_two_consumers(kafka_hosts, new_topic):
    topic = new_topic(4)
    group = "g-" + topic
    log = []
    everything = frozenset(TopicPartition(topic, p) for p in range(4))
    a = aiokafka.AIOKafkaConsumer(bootstrap_servers=kafka_hosts, group_id=group, **FAST_GROUP)
    b = aiokafka.AIOKafkaConsumer(bootstrap_servers=kafka_hosts, group_id=group, **FAST_GROUP)
    stop = asyncio.Event()

    async def poll(consumer):
        while not stop.is_set():
            await consumer.getmany(timeout_ms=100)

    async def until(condition, timeout_s=30):
        deadline = time.monotonic() + timeout_s
        while not condition() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        return condition()

    async with a, b:
        a.subscribe([topic], listener=Timeline("a", log))
        polling = [asyncio.ensure_future(poll(a))]
        assert await until(lambda: ("a", "assigned", everything) in log)
        b.subscribe([topic], listener=Timeline("b", log))
        polling.append(asyncio.ensure_future(poll(b)))
        assert await until(lambda: any(e[:2] == ("b", "assigned") and e[2] for e in log)
                           and a.assignment() and b.assignment())
        stop.set()
        await asyncio.gather(*polling)
        a_now, b_now = a.assignment(), b.assignment()
    print("\n" + "\n".join("%s %s %s" % (n, e, sorted(tp.partition for tp in p)) for n, e, p in log))
    assert log[:2] == [("a", "revoked", frozenset()), ("a", "assigned", everything)]  # aiokafka's order
    revoked = log.index(("a", "revoked", everything))
    b_assigned = next(i for i, e in enumerate(log) if e[:2] == ("b", "assigned") and e[2])
    a_again = next(i for i, e in enumerate(log) if i > revoked and e[:2] == ("a", "assigned"))
    assert revoked < b_assigned and revoked < a_again  # a gave everything up before anyone got it back
    assert a_now | b_now == everything and not a_now & b_now
    assert log[a_again][2] == a_now and log[b_assigned][2] == b_now


class Recording(aiokafka.ConsumerRebalanceListener):
    def __init__(self):
        self.log = []

    async def on_partitions_revoked(self, revoked):
        self.log.append(("revoked", frozenset(revoked)))

    async def on_partitions_assigned(self, assigned):
        self.log.append(("assigned", frozenset(assigned)))


# Run in a process of its own: librdkafka's abort would end the test run, not fail a test.
RESUBSCRIBE_THEN_STOP = """
import asyncio, sys, time
import pyrdk.aio as aiokafka

async def main(hosts, first, second):
    async with aiokafka.AIOKafkaConsumer(bootstrap_servers=hosts, group_id="g-" + first,
                                         session_timeout_ms=6000, heartbeat_interval_ms=500,
                                         max_poll_interval_ms=6000) as consumer:
        consumer.subscribe([first])
        deadline = time.monotonic() + 30
        while not consumer.assignment():
            assert time.monotonic() < deadline, "no assignment"
            await consumer.getmany(timeout_ms=200)
        consumer.unsubscribe()
        consumer.subscribe([second])  # postponed by librdkafka until the rebalance ends
    print("stopped")

asyncio.run(main(*sys.argv[1:]))
"""


def test_stop_right_after_a_new_subscription_does_not_abort(kafka_hosts, new_topic):
    """stop() while librdkafka still holds a subscription postponed behind the rebalance that
    unsubscribe() began: its close applied the subscription after leaving, and
    rd_kafka_destroy aborted the process (``assert: !rkcg->rkcg_subscription``), 8 of 8
    times. stop() unsubscribes first, which drops the postponed one."""
    import subprocess
    import sys
    first, second = new_topic(1), new_topic(1)
    done = subprocess.run([sys.executable, "-c", RESUBSCRIBE_THEN_STOP, kafka_hosts, first, second],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "stopped"


@pytest.mark.asyncio
async def test_unsubscribe_does_not_call_the_listener(kafka_hosts, new_topic):
    """As aiokafka's, whose unsubscribe() drops the listener with the subscription: the
    partitions given up are not told to on_partitions_revoked."""
    topic = new_topic(2)
    everything = frozenset(TopicPartition(topic, p) for p in range(2))
    listener = Recording()
    async with aiokafka.AIOKafkaConsumer(bootstrap_servers=kafka_hosts, group_id="g-" + topic,
                                         **FAST_GROUP) as consumer:
        consumer.subscribe([topic], listener=listener)
        deadline = time.monotonic() + 30
        while ("assigned", everything) not in listener.log and time.monotonic() < deadline:
            await consumer.getmany(timeout_ms=500)
        assert listener.log == [("revoked", frozenset()), ("assigned", everything)]
        consumer.unsubscribe()
        for _ in range(4):
            assert await consumer.getmany(timeout_ms=500) == {}
        assert consumer.assignment() == set()
    assert listener.log == [("revoked", frozenset()), ("assigned", everything)]


@pytest.mark.asyncio
async def test_a_listener_given_after_unsubscribe_is_not_told_of_the_old_revocation(kafka_hosts, new_topic):
    """unsubscribe() then subscribe(listener=second) at once: librdkafka reports the
    revocation of the first subscription's partitions after the second subscribe(); the
    second listener never held them, and is told, as under aiokafka, of an empty revocation
    before its first assignment."""
    topic = new_topic(2)
    everything = frozenset(TopicPartition(topic, p) for p in range(2))
    first, second = Recording(), Recording()
    async with aiokafka.AIOKafkaConsumer(bootstrap_servers=kafka_hosts, group_id="g-" + topic,
                                         **FAST_GROUP) as consumer:
        consumer.subscribe([topic], listener=first)
        deadline = time.monotonic() + 30
        while ("assigned", everything) not in first.log and time.monotonic() < deadline:
            await consumer.getmany(timeout_ms=500)
        consumer.unsubscribe()
        consumer.subscribe([topic], listener=second)
        deadline = time.monotonic() + 30
        while ("assigned", everything) not in second.log and time.monotonic() < deadline:
            await consumer.getmany(timeout_ms=500)
    assert first.log == [("revoked", frozenset()), ("assigned", everything)]
    assert second.log[:2] == [("revoked", frozenset()), ("assigned", everything)]


class Failing(aiokafka.ConsumerRebalanceListener):
    def on_partitions_revoked(self, revoked):
        raise RuntimeError("listener bug")

    async def on_partitions_assigned(self, assigned):
        raise RuntimeError("listener bug")


@pytest.mark.asyncio
async def test_a_failing_listener_is_logged_and_the_rebalance_goes_on(kafka_hosts, new_topic, caplog):
    topic = new_topic(1)
    await produce(kafka_hosts, topic, 3)
    consumer = aiokafka.AIOKafkaConsumer(topic, bootstrap_servers=kafka_hosts, group_id="g-" + topic,
                                         auto_offset_reset="earliest", **FAST_GROUP)
    async with consumer:
        consumer.unsubscribe()
        consumer.subscribe([topic], listener=Failing())
        got = await drain(consumer, 3, timeout_s=30)
        assert [r.offset for r in got] == [0, 1, 2]
    assert "on_partitions_assigned raised" in caplog.text


@pytest.mark.asyncio
async def test_last_stable_offset_stops_at_an_open_transaction_and_last_poll_timestamp_follows(kafka_hosts, new_topic):
    topic = new_topic(1)
    tp = TopicPartition(topic, 0)
    producer = aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts, transactional_id="lso-" + topic)
    consumer, tps = assigned_consumer(kafka_hosts, topic, 1, isolation_level="read_committed",
                                      rdkafka_config={"statistics.interval.ms": 100})
    plain, _ = assigned_consumer(kafka_hosts, topic, 1)

    async def lso_reaches(expected):
        deadline = time.monotonic() + 15
        while consumer.last_stable_offset(tp) != expected and time.monotonic() < deadline:
            await consumer.getmany(timeout_ms=100)
        return consumer.last_stable_offset(tp)

    async with producer, consumer, plain:
        consumer.assign(tps)
        plain.assign(tps)
        assert consumer.last_stable_offset(tp) is None  # nothing fetched yet
        assert plain.last_stable_offset(tp) is None
        assert plain.last_poll_timestamp(tp) is None
        before = int(time.time() * 1000)
        async with producer.transaction():
            for i in range(3):
                await producer.send(topic, b"committed %d" % i)
        await producer.begin_transaction()
        await producer.send(topic, b"open")
        await producer.flush()  # offsets 0-2, the commit marker at 3, the open record at 4
        assert await lso_reaches(4) == 4
        assert [r.value for r in await drain(plain, 4)][-1] == b"open"
        assert before <= plain.last_poll_timestamp(tp) <= int(time.time() * 1000)
        assert plain.last_stable_offset(tp) == -1  # read_uncommitted: -1, as aiokafka's
        await producer.commit_transaction()
        assert await lso_reaches(6) == 6
        with pytest.raises(aiokafka.errors.IllegalStateError, match="not assigned"):
            consumer.last_stable_offset(TopicPartition(topic, 7))
        with pytest.raises(aiokafka.errors.IllegalStateError, match="not assigned"):
            consumer.last_poll_timestamp(TopicPartition(topic, 7))
    no_stats, _ = assigned_consumer(kafka_hosts, topic, 1, isolation_level="read_committed",
                                    rdkafka_config={"statistics.interval.ms": 0})
    async with no_stats:
        no_stats.assign(tps)
        with pytest.raises(aiokafka.errors.IllegalOperation, match="statistics.interval.ms"):
            no_stats.last_stable_offset(tp)


@pytest.mark.asyncio
async def test_offset_out_of_range_carries_aiokafkas_partition_dict(kafka_hosts, new_topic):
    topic = new_topic(1)
    tp = TopicPartition(topic, 0)
    await produce(kafka_hosts, topic, 3, partition=0)
    consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=kafka_hosts, group_id="g-" + topic,
                                         auto_offset_reset="none", enable_auto_commit=False)
    async with consumer:
        consumer.assign([tp])  # no committed offset, no reset allowed
        with pytest.raises(aiokafka.errors.OffsetOutOfRangeError) as info:
            await asyncio.wait_for(drain(consumer, 1), 30)
        assert info.value.args[0] == {tp: -1001}  # what the docs' local state example reads (-1001: none)
        assert "No offset" in str(info.value)
        await consumer.seek_to_beginning(*info.value.args[0].keys())
        assert [r.offset for r in await drain(consumer, 3)] == [0, 1, 2]


@pytest.mark.asyncio
async def test_a_getone_cancelled_before_it_takes_a_record_loses_none(kafka_hosts, new_topic):
    topic = new_topic(1)
    await produce(kafka_hosts, topic, 50, partition=0)
    tp = TopicPartition(topic, 0)
    async with aiokafka.AIOKafkaConsumer(bootstrap_servers=kafka_hosts, auto_offset_reset="earliest") as consumer:
        consumer.assign([tp])
        assert (await consumer.getone()).offset == 0
        await asyncio.sleep(0.5)  # the rest fetched and buffered
        for offset in range(1, 6):
            task = asyncio.ensure_future(consumer.getone())
            await asyncio.sleep(0)  # the task is at its first await
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert (await consumer.getone()).offset == offset


@pytest.mark.asyncio
async def test_a_record_the_deserializer_fails_on_is_raised_in_its_place(kafka_hosts, new_topic):
    """The records before it are returned first; it counts as consumed; the ones after it
    come next. None is lost, with a getmany() waiting or not when they are fetched."""
    topic = new_topic(1)
    await produce(kafka_hosts, topic, 300, partition=0)

    def value(data):
        if data in (b"m5", b"m6"):
            raise ValueError("cannot read %r" % data)
        return data.decode()

    tp = TopicPartition(topic, 0)
    async with aiokafka.AIOKafkaConsumer(bootstrap_servers=kafka_hosts, auto_offset_reset="earliest",
                                         value_deserializer=value) as consumer:
        consumer.assign([tp])
        await asyncio.sleep(1)  # fetched while no getmany() waits
        got, errors = [], []
        while len(got) + len(errors) < 300:
            try:
                batch = await consumer.getmany(timeout_ms=5000)
            except ValueError as exc:
                errors.append(str(exc))
                continue
            assert batch, "records are missing"
            got += [(r.offset, r.value) for r in batch[tp]]
        assert errors == ["cannot read b'm5'", "cannot read b'm6'"]
        assert got == [(i, "m%d" % i) for i in range(300) if i not in (5, 6)]
        assert await consumer.position(tp) == 300


@pytest.mark.asyncio
async def test_an_offset_out_of_range_waiting_is_raised_by_getone(kafka_hosts, new_topic):
    topic = new_topic(1)
    await produce(kafka_hosts, topic, 10, partition=0)
    async with aiokafka.AIOKafkaConsumer(bootstrap_servers=kafka_hosts, group_id="g-" + topic,
                                         auto_offset_reset="none") as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        with pytest.raises(aiokafka.errors.NoOffsetForPartitionError):
            await asyncio.wait_for(consumer.getone(), 20)


@pytest.mark.asyncio
async def test_a_partition_without_an_offset_is_raised_by_each_call_until_a_seek(kafka_hosts, new_topic):
    """As aiokafka's: librdkafka reports it once and fetches nothing more; the calls after
    the first must not wait for records that cannot come."""
    topic = new_topic(1)
    tp = TopicPartition(topic, 0)
    await produce(kafka_hosts, topic, 3, partition=0)
    async with aiokafka.AIOKafkaConsumer(bootstrap_servers=kafka_hosts, group_id="g-" + topic,
                                         auto_offset_reset="none") as consumer:
        consumer.assign([tp])
        raised = []
        for _ in range(3):
            with pytest.raises(aiokafka.errors.NoOffsetForPartitionError) as info:
                await asyncio.wait_for(consumer.getone(), 20)
            assert info.value.args[0] == {tp: -1001}
            raised.append(info.value)
        # each its own exception: one raised again and again would carry a growing traceback
        assert len({id(exc) for exc in raised}) == 3
        assert all(exc.topic == topic and exc.partition == 0 for exc in raised)
        with pytest.raises(aiokafka.errors.NoOffsetForPartitionError):
            await asyncio.wait_for(consumer.getmany(tp, timeout_ms=0), 20)
        consumer.seek(tp, 1)
        assert [r.offset for r in await drain(consumer, 2)] == [1, 2]


@pytest.mark.asyncio
async def test_unsubscribe_drops_the_no_offset_errors_of_the_partitions_given_up(kafka_hosts, new_topic):
    """auto_offset_reset="none": the OffsetOutOfRangeError of a partition without a committed
    offset waits for getmany(); once unsubscribe() gives the partition up, it is no longer
    the program's (as a seek or a new assign() drop it): getmany() under the next
    subscription does not raise it."""
    first, second = new_topic(1), new_topic(1)
    async with aiokafka.AIOKafkaConsumer(bootstrap_servers=kafka_hosts, group_id="g-" + first,
                                         auto_offset_reset="none", **FAST_GROUP) as consumer:
        consumer.subscribe([first])
        deadline = time.monotonic() + 30
        while not consumer._errors and time.monotonic() < deadline:
            await asyncio.sleep(0.2)  # no getmany(): the consumer serves its queue meanwhile
        assert consumer._errors, "no error for the partition without a committed offset"
        consumer.unsubscribe()
        consumer.subscribe([second])
        deadline = time.monotonic() + 30
        while consumer.assignment() != {TopicPartition(second, 0)} and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        raised = []
        for _ in range(3):
            try:
                await consumer.getmany(timeout_ms=200)
            except aiokafka.errors.OffsetOutOfRangeError as exc:
                raised.append(exc.topic)
        assert first not in raised, "the error of a partition given up with its subscription"


@pytest.mark.asyncio
async def test_a_seek_drops_the_partitions_waiting_no_offset_error(kafka_hosts, new_topic):
    """As aiokafka's: once the program has seeked the partitions that had no offset, getmany()
    returns their records; it does not raise the errors they had before the seeks."""
    topic = new_topic(2)
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    await produce(kafka_hosts, topic, 3, partition=0)
    await produce(kafka_hosts, topic, 3, partition=1)
    async with aiokafka.AIOKafkaConsumer(bootstrap_servers=kafka_hosts, group_id="g-" + topic,
                                         auto_offset_reset="none") as consumer:
        consumer.assign([tp0, tp1])
        with pytest.raises(aiokafka.errors.NoOffsetForPartitionError):
            await asyncio.wait_for(consumer.getmany(timeout_ms=10000), 20)
        await asyncio.sleep(1)  # both partitions' errors have come
        consumer.seek(tp0, 0)
        await asyncio.sleep(1)  # and tp1's again, from the restart of the assignment by the seek
        consumer.seek(tp1, 0)
        got = await drain(consumer, 6)
        assert sorted((r.partition, r.offset) for r in got) == [(p, o) for p in (0, 1) for o in range(3)]


@pytest.mark.asyncio
async def test_a_partitions_error_goes_to_the_calls_that_ask_for_it(kafka_hosts, new_topic):
    """getmany(tp1) returns tp1's records, not the NoOffsetForPartitionError of tp0, which
    goes to a call that asks for tp0 (as aiokafka's)."""
    topic = new_topic(2)
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    await produce(kafka_hosts, topic, 2, partition=0)
    await produce(kafka_hosts, topic, 2, partition=1)
    group = "g-" + topic
    async with aiokafka.AIOKafkaConsumer(bootstrap_servers=kafka_hosts, group_id=group) as consumer:
        consumer.assign([tp1])
        await consumer.commit({tp1: 0})  # tp0 has no committed offset
    async with aiokafka.AIOKafkaConsumer(bootstrap_servers=kafka_hosts, group_id=group,
                                         auto_offset_reset="none") as consumer:
        consumer.assign([tp0, tp1])
        await asyncio.sleep(1)  # tp0's error has come
        got = []
        while len(got) < 2:
            got += (await consumer.getmany(tp1, timeout_ms=10000)).get(tp1, [])
        assert [r.offset for r in got] == [0, 1]
        with pytest.raises(aiokafka.errors.NoOffsetForPartitionError) as info:
            await asyncio.wait_for(consumer.getmany(tp0, timeout_ms=10000), 20)
        assert info.value.args[0] == {tp0: -1001}


@pytest.mark.asyncio
async def test_position_of_a_partition_without_an_offset_is_no_made_up_one(kafka_hosts, new_topic):
    """auto_offset_reset="none" and nothing committed: no position until a seek (aiokafka's
    position() waits for one that cannot come), not the partition's end."""
    topic = new_topic(1)
    tp = TopicPartition(topic, 0)
    await produce(kafka_hosts, topic, 3, partition=0)
    async with aiokafka.AIOKafkaConsumer(bootstrap_servers=kafka_hosts, group_id="g-" + topic,
                                         auto_offset_reset="none") as consumer:
        consumer.assign([tp])
        with pytest.raises(aiokafka.errors.NoOffsetForPartitionError) as info:
            await consumer.position(tp)
        assert info.value.args[0] == {tp: -1001}
        consumer.seek(tp, 2)
        assert await consumer.position(tp) == 2


@pytest.mark.asyncio
async def test_auto_commit_commits_the_position_a_seek_moved_to(kafka_hosts, new_topic):
    """As aiokafka's, which commits positions: records skipped by a seek are not read again
    after a restart (librdkafka commits only the offsets stored, of the records returned)."""
    topic = new_topic(1)
    tp = TopicPartition(topic, 0)
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts) as producer:
        for i in range(6):  # one batch each: Tansu's ListOffsets tells their end
            await producer.send_and_wait(topic, b"m%d" % i, partition=0)
    for skip, committed in ((lambda c: c.seek(tp, 4), 4), (lambda c: c.seek_to_end(tp), 6)):
        group = "g-%d-%s" % (committed, topic)
        consumer, _ = assigned_consumer(kafka_hosts, topic, 1, group_id=group, auto_commit_interval_ms=60000)
        async with consumer:
            consumer.assign([tp])
            assert [r.offset for r in (await consumer.getmany(timeout_ms=10000, max_records=2))[tp]] == [0, 1]
            result = skip(consumer)
            if asyncio.iscoroutine(result):
                await result
        async with aiokafka.AIOKafkaConsumer(bootstrap_servers=kafka_hosts, group_id=group,
                                             enable_auto_commit=False) as consumer:
            assert await consumer.committed(tp) == committed


@pytest.mark.asyncio
async def test_stop_while_the_listener_runs_stops_a_pending_getmany(kafka_hosts, new_topic):
    topic = new_topic(2)
    entered = asyncio.Event()

    class Slow(aiokafka.ConsumerRebalanceListener):
        async def on_partitions_revoked(self, revoked):
            pass

        async def on_partitions_assigned(self, assigned):
            entered.set()
            await asyncio.sleep(30)

    consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=kafka_hosts, group_id="g-" + topic,
                                         auto_offset_reset="earliest", **FAST_GROUP)
    await consumer.start()
    consumer.subscribe([topic], listener=Slow())

    async def reader():
        async for _ in consumer:
            pass
        return "ended"

    task = asyncio.create_task(reader())
    await asyncio.wait_for(entered.wait(), 30)
    await asyncio.sleep(0.5)  # the reader waits for the listener
    await consumer.stop()
    assert await asyncio.wait_for(task, 10) == "ended"


@pytest.mark.asyncio
async def test_commit_takes_only_assigned_partitions_and_some_offsets(kafka_hosts, new_topic):
    topic = new_topic(2)
    async with aiokafka.AIOKafkaConsumer(bootstrap_servers=kafka_hosts, group_id="g-" + topic) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        with pytest.raises(IllegalStateError):
            await consumer.commit({TopicPartition(topic, 1): 3})
        with pytest.raises(ValueError):
            await consumer.commit({})
        await consumer.commit({TopicPartition(topic, 0): 3})
        assert await consumer.committed(TopicPartition(topic, 0)) == 3
        # aiokafka's forms and exception types: a metadata not a str is a TypeError
        for bad in (aiokafka.OffsetAndMetadata(4, b"meta"), aiokafka.OffsetAndMetadata(4, None), (4, 5)):
            with pytest.raises(TypeError, match="metadata must be a str"):
                await consumer.commit({TopicPartition(topic, 0): bad})
        await consumer.commit({TopicPartition(topic, 0): [5, "meta"]})
        assert await consumer.committed(TopicPartition(topic, 0)) == 5
    with pytest.raises(ConsumerStoppedError, match="make a new one"):
        await consumer.start()


def test_metadata_max_age_ms_is_also_how_often_metadata_is_refreshed():
    """A pattern subscription finds new topics at librdkafka's metadata refresh."""
    consumer = aiokafka.AIOKafkaConsumer(metadata_max_age_ms=2000)
    assert consumer._config["topic.metadata.refresh.interval.ms"] == 2000


@pytest.mark.asyncio
async def test_a_pattern_subscription_names_the_topics_it_matches(kafka_hosts, new_topic):
    topic = new_topic(1)
    async with aiokafka.AIOKafkaConsumer(bootstrap_servers=kafka_hosts, group_id="g-" + topic) as consumer:
        consumer.subscribe(pattern=topic[:-2] + ".*")
        assert consumer.subscription() == {topic}  # as aiokafka's: the matching topics, not the pattern


@pytest.mark.kafka
@pytest.mark.asyncio
async def test_a_pattern_subscription_leaves_internal_topics_out_as_aiokafkas_does(own_broker):
    """librdkafka's pattern matches Kafka's internal topics too; aiokafka's consumer leaves
    them out of its pattern subscriptions and of topics() (exclude_internal_topics=True), so
    a pattern such as ".*" does not read __consumer_offsets (on a broker of the test's own,
    where Tansu makes it a topic like any other)."""
    hosts = own_broker.bootstrap_servers
    await produce(hosts, "__consumer_offsets", 3, partition=0)
    await produce(hosts, "plain", 3, partition=0)
    for exclude, topics in ((True, {"plain"}), (False, {"plain", "__consumer_offsets"})):
        async with aiokafka.AIOKafkaConsumer(bootstrap_servers=hosts, group_id="g-%s" % exclude,
                                             auto_offset_reset="earliest", exclude_internal_topics=exclude,
                                             **FAST_GROUP) as consumer:
            consumer.subscribe(pattern=".*")
            records = await drain(consumer, 3 * len(topics))
            assert {r.topic for r in records} == topics
            assert {tp.topic for tp in consumer.assignment()} == topics
            assert consumer.subscription() == topics
            assert await consumer.topics() == {"plain"}  # as aiokafka's, whatever the option


@pytest.mark.kafka
@pytest.mark.asyncio
@pytest.mark.slow  # three rebalances and a 10 s watch: the C pass runs it, make soak the pure one
async def test_internal_topics_subscribed_by_name_are_revoked_when_a_pattern_replaces_them(own_broker):
    """Partitions of __consumer_offsets assigned to a subscription by name are revoked when a
    pattern subscription, which leaves them out, replaces it: the listener is told, and the
    records buffered of them are dropped, not handed out after the revocation; and the other
    way round the listener is not told of the revocation of partitions it was never given."""
    hosts = own_broker.bootstrap_servers
    await produce(hosts, "__consumer_offsets", 200, partition=0)
    await produce(hosts, "plain", 3, partition=0)
    calls = []

    class Listener(aiokafka.ConsumerRebalanceListener):
        async def on_partitions_revoked(self, revoked):
            calls.append(("revoked", {tp.topic for tp in revoked}))

        async def on_partitions_assigned(self, assigned):
            calls.append(("assigned", {tp.topic for tp in assigned}))
    async with aiokafka.AIOKafkaConsumer(bootstrap_servers=hosts, group_id="g", auto_offset_reset="earliest",
                                         max_poll_records=1, **FAST_GROUP) as consumer:
        consumer.subscribe(topics=["__consumer_offsets", "plain"], listener=Listener())
        await consumer.getone()  # the rest buffered
        consumer.subscribe(pattern=".*", listener=Listener())
        late = set()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            for tp in await consumer.getmany(timeout_ms=500):
                if len(calls) > 2:
                    late.add(tp.topic)
        assert late <= {"plain"}
        consumer.subscribe(topics=["plain"], listener=Listener())
        await drain(consumer, 3, timeout_s=8)
    assert calls == [("revoked", set()), ("assigned", {"__consumer_offsets", "plain"}),
                     ("revoked", {"__consumer_offsets", "plain"}), ("assigned", {"plain"}),
                     ("revoked", {"plain"}), ("assigned", {"plain"})]


@pytest.mark.mock
@pytest.mark.asyncio
@pytest.mark.slow  # seconds of group coordination or timeouts: the C pass runs it, make soak the pure one
async def test_seek_to_beginning_while_the_leader_is_down_names_it_and_works_once_it_is_back(mock_cluster):
    """librdkafka answers a ListOffsets lookup whose leader is unreachable with a local
    UNKNOWN_PARTITION at once: seek_to_beginning and end_offsets raise LeaderNotAvailable (or, when the
    request waited on the leader, KafkaTimeoutError) within request_timeout_ms, not
    UnknownTopicOrPartition for a partition that exists."""
    from pyrdk.exceptions import KafkaTimeoutError, LeaderNotAvailable
    mock_cluster.create_topic("t", 1, 1)
    mock_cluster.set_partition_leader("t", 0, 2)
    await produce(mock_cluster.bootstrap_servers, "t", 3, partition=0)
    consumer, tps = assigned_consumer(mock_cluster.bootstrap_servers, "t", 1, request_timeout_ms=2000)
    await consumer.start()
    try:
        consumer.assign(tps)
        assert [r.value for r in await drain(consumer, 3)] == [b"m0", b"m1", b"m2"]
        mock_cluster.broker_down(2)
        with pytest.raises((LeaderNotAvailable, KafkaTimeoutError), match="offsets for times"):
            await consumer.seek_to_beginning(tps[0])
        with pytest.raises((LeaderNotAvailable, KafkaTimeoutError), match="list offsets"):
            await consumer.end_offsets(tps)
        mock_cluster.broker_up(2)
        assert await consumer.end_offsets(tps) == {tps[0]: 3}
        await consumer.seek_to_beginning(tps[0])
        assert [r.value for r in await drain(consumer, 3)] == [b"m0", b"m1", b"m2"]
    finally:
        mock_cluster.broker_up(-1)
        await consumer.stop()


@pytest.mark.mock
@pytest.mark.asyncio
@pytest.mark.slow  # a commit answered after 12 s
async def test_commit_waits_for_its_answer_as_long_as_request_timeout_ms(mock_cluster):
    """A slow coordinator's answer is waited for within ``request_timeout_ms``, as aiokafka's
    requests are; commit() gave up after a fixed 10 s, whatever request_timeout_ms said."""
    mock_cluster.create_topic("t", 1, 1)
    mock_cluster.set_coordinator("group", "slow-commit", 1)
    consumer, [tp] = assigned_consumer(mock_cluster.bootstrap_servers, "t", 1, group_id="slow-commit",
                                       enable_auto_commit=False, request_timeout_ms=30000)
    async with consumer:
        consumer.assign([tp])
        await consumer.commit({tp: 1})
        mock_cluster.set_broker_rtt(1, 12000)
        try:
            await consumer.commit({tp: 2})
        finally:
            mock_cluster.set_broker_rtt(1, 0)
        assert await consumer.committed(tp) == 2


@pytest.mark.mock
@pytest.mark.asyncio
@pytest.mark.parametrize("api, code, subscribe", [("Fetch", 29, False), ("JoinGroup", 30, True), (None, 29, False)],
                         ids=["fetch", "join", "metadata"])
async def test_an_authorization_failure_is_raised_by_getmany(mock_cluster, api, code, subscribe):
    """As aiokafka's fetcher and coordinator pass them on: a topic or group the client may not
    read raises TopicAuthorizationFailedError / GroupAuthorizationFailedError from getmany(),
    not a logged warning and an empty wait for ever. (None: the metadata's answer for the
    assigned topic says so, and librdkafka never fetches it.)"""
    from pyrdk.aio.errors import GroupAuthorizationFailedError, TopicAuthorizationFailedError
    from pyrdk.rd.mock import ApiKey
    expected = TopicAuthorizationFailedError if code == 29 else GroupAuthorizationFailedError
    mock_cluster.create_topic("t", 1, 1)
    await produce(mock_cluster.bootstrap_servers, "t", 3, partition=0)
    if api is None:
        mock_cluster.set_topic_error("t", code)
    else:
        mock_cluster.push_request_errors(getattr(ApiKey, api), *[code] * 50)
    consumer, tps = assigned_consumer(mock_cluster.bootstrap_servers, "t", 1, group_id="g")
    async with consumer:
        if subscribe:
            consumer.subscribe(["t"])
        else:
            consumer.assign(tps)
        with pytest.raises(expected, match="authorization failed"):
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                assert await consumer.getmany(timeout_ms=1000) == {}


@pytest.mark.mock
@pytest.mark.asyncio
@pytest.mark.slow  # seconds of steady slow processing: the C pass runs it, make soak the pure one
async def test_getone_from_the_buffer_counts_as_a_poll(mock_cluster):
    """aiokafka's max_poll_interval_ms is the longest time between calls to consume: a program
    taking one buffered record every 200 ms stays in its group for longer than that, where
    librdkafka, never polled while the buffer served the calls, dropped it from the group
    and its records came again."""
    mock_cluster.create_topic("t", 1, 1)
    await produce(mock_cluster.bootstrap_servers, "t", 36, partition=0)
    consumer = aiokafka.AIOKafkaConsumer("t", bootstrap_servers=mock_cluster.bootstrap_servers, group_id="g",
                                         auto_offset_reset="earliest", enable_auto_commit=False, **FAST_GROUP)
    async with consumer:
        offsets = []
        for _ in range(36):  # 7.2 s in all, over max_poll_interval_ms
            offsets.append((await asyncio.wait_for(consumer.getone(), 30)).offset)
            await asyncio.sleep(0.2)
        assert offsets == list(range(36))
        assert consumer.assignment() == {TopicPartition("t", 0)}
        await consumer.commit()  # still a member: its commit is taken


@pytest.mark.mock
@pytest.mark.asyncio
async def test_committed_asks_again_while_the_coordinator_moves_or_loads(mock_cluster):
    """As aiokafka's committed() retries them: OffsetFetch answers NOT_COORDINATOR,
    COORDINATOR_NOT_AVAILABLE and COORDINATOR_LOAD_IN_PROGRESS are asked again (librdkafka
    finds the coordinator anew), where the first raised NotCoordinatorForGroup; position() of a
    partition not yet read asks the committed offset too."""
    from pyrdk.rd.mock import ApiKey
    mock_cluster.create_topic("t", 1, 1)
    consumer, tps = assigned_consumer(mock_cluster.bootstrap_servers, "t", 1, group_id="g",
                                      enable_auto_commit=False, request_timeout_ms=5000)
    async with consumer:
        consumer.assign(tps)
        await consumer.commit({tps[0]: 3})
        mock_cluster.push_request_errors(ApiKey.OffsetFetch, 16, 15, 14)
        assert await consumer.committed(tps[0]) == 3
        mock_cluster.push_request_errors(ApiKey.OffsetFetch, 16)
        assert await consumer.position(tps[0]) == 3


@pytest.mark.mock
@pytest.mark.asyncio
async def test_a_subscription_without_a_group_follows_the_topics_partitions(mock_cluster):
    """As aiokafka's consumer without a group assigns every partition at each metadata update:
    partitions a topic gains later are read too (the mock cluster makes the topic anew with
    more), where the assignment made at subscribe() stayed, and their records never came."""
    mock_cluster.create_topic("t", 1, 1)
    consumer = aiokafka.AIOKafkaConsumer("t", bootstrap_servers=mock_cluster.bootstrap_servers,
                                         auto_offset_reset="earliest", metadata_max_age_ms=500)
    async with consumer:
        assert consumer.assignment() == {TopicPartition("t", 0)}
        mock_cluster.delete_topic("t")
        mock_cluster.create_topic("t", 3, 1)
        for p in range(3):
            await produce(mock_cluster.bootstrap_servers, "t", 2, partition=p)
        got = await drain(consumer, 6, timeout_s=10)
        assert sorted((r.partition, r.value) for r in got) == [(p, b"m%d" % i) for p in range(3) for i in range(2)]
        assert consumer.assignment() == {TopicPartition("t", p) for p in range(3)}


@pytest.mark.mock
@pytest.mark.asyncio
@pytest.mark.parametrize("through_wait_for", [False, True])
async def test_stop_from_within_the_listener_returns_to_it(mock_cluster, through_wait_for):
    """stop() awaited by on_partitions_assigned (itself, or through asyncio.wait_for) closes
    the consumer and returns to the listener; it cancelled the listener's own task, so the listener's stop() raised
    CancelledError that nobody asked for, and the close was never waited for."""
    mock_cluster.create_topic("t", 2, 1)
    outcome = asyncio.get_running_loop().create_future()

    class Stopping(aiokafka.ConsumerRebalanceListener):
        async def on_partitions_revoked(self, revoked):
            pass

        async def on_partitions_assigned(self, assigned):
            try:
                if through_wait_for:  # in a task of its own, which the listener's awaits
                    await asyncio.wait_for(consumer.stop(), 60)
                else:
                    await consumer.stop()
            except BaseException as exc:
                outcome.set_result(repr(exc))
                raise
            outcome.set_result("returned")

    consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=mock_cluster.bootstrap_servers, group_id="g",
                                         auto_offset_reset="earliest", **FAST_GROUP)
    await consumer.start()
    consumer.subscribe(["t"], listener=Stopping())

    async def reader():
        async for _ in consumer:
            pass
        return "ended"

    assert await asyncio.wait_for(reader(), 60) == "ended"
    assert await asyncio.wait_for(outcome, 60) == "returned"
    with pytest.raises(ConsumerStoppedError):
        await consumer.getmany()


@pytest.mark.mock
@pytest.mark.asyncio
async def test_getmany_returns_at_its_timeout_while_a_slow_listener_runs(mock_cluster):
    """As aiokafka's: getmany(timeout_ms=...) returns {} at its timeout while the listener
    runs; it waited for the listener however long it took (here: until getmany returned)."""
    mock_cluster.create_topic("t", 2, 1)
    entered, release = asyncio.Event(), asyncio.Event()
    assigned_seen = []

    class Slow(aiokafka.ConsumerRebalanceListener):
        async def on_partitions_revoked(self, revoked):
            pass

        async def on_partitions_assigned(self, assigned):
            entered.set()
            await release.wait()
            assigned_seen.append(assigned)

    consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=mock_cluster.bootstrap_servers, group_id="g",
                                         auto_offset_reset="earliest", **FAST_GROUP)
    async with consumer:
        consumer.subscribe(["t"], listener=Slow())
        await asyncio.wait_for(entered.wait(), 60)
        try:
            assert await asyncio.wait_for(consumer.getmany(timeout_ms=100), 30) == {}
        finally:
            release.set()
        await produce(mock_cluster.bootstrap_servers, "t", 2, partition=0)
        assert [r.value for r in await drain(consumer, 2)] == [b"m0", b"m1"]
        assert assigned_seen == [{TopicPartition("t", 0), TopicPartition("t", 1)}]


@pytest.mark.mock
@pytest.mark.asyncio
async def test_getone_from_within_the_listener_raises_instead_of_waiting_for_itself(mock_cluster):
    """getone() (or getmany()) awaited by the listener waited for the listener's own task to
    end: forever, and every other getmany() with it."""
    mock_cluster.create_topic("t", 2, 1)
    await produce(mock_cluster.bootstrap_servers, "t", 2, partition=0)
    raised = []

    class Reading(aiokafka.ConsumerRebalanceListener):
        async def on_partitions_revoked(self, revoked):
            pass

        async def on_partitions_assigned(self, assigned):
            for call in (consumer.getone, functools.partial(consumer.getmany, timeout_ms=100)):
                try:
                    await asyncio.wait_for(call(), 30)
                except IllegalStateError as exc:
                    raised.append(str(exc))

    consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=mock_cluster.bootstrap_servers, group_id="g",
                                         auto_offset_reset="earliest", **FAST_GROUP)
    async with consumer:
        consumer.subscribe(["t"], listener=Reading())
        assert [r.value for r in await drain(consumer, 2, timeout_s=60)] == [b"m0", b"m1"]
        assert len(raised) == 2 and all("within the rebalance listener" in m for m in raised)


@pytest.mark.mock
@pytest.mark.asyncio
async def test_a_listener_raising_cancelled_error_does_not_stall_the_assignment(mock_cluster, caplog):
    """A CancelledError out of the listener (a future it awaited was cancelled, not the
    consumer) ended the rebalance's task before rd_kafka_assign: no partition was ever
    assigned and getmany() returned nothing, without an error. It is logged as the
    listener's other errors are, and the rebalance goes on."""
    mock_cluster.create_topic("t", 2, 1)
    await produce(mock_cluster.bootstrap_servers, "t", 2, partition=0)

    class Cancelled(aiokafka.ConsumerRebalanceListener):
        async def on_partitions_revoked(self, revoked):
            pass

        async def on_partitions_assigned(self, assigned):
            helper = asyncio.get_running_loop().create_future()
            helper.cancel()
            await helper

    consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=mock_cluster.bootstrap_servers, group_id="g",
                                         auto_offset_reset="earliest", **FAST_GROUP)
    async with consumer:
        consumer.subscribe(["t"], listener=Cancelled())
        assert [r.value for r in await drain(consumer, 2, timeout_s=60)] == [b"m0", b"m1"]
        assert consumer.assignment() == {TopicPartition("t", 0), TopicPartition("t", 1)}
    assert "on_partitions_assigned raised CancelledError" in caplog.text


@pytest.mark.mock
@pytest.mark.asyncio
async def test_auto_commit_commits_the_position_the_listener_seeked_to(mock_cluster):
    """A seek in on_partitions_assigned is where the assignment starts, and, as any seek()
    with auto-commit, what is committed next (aiokafka commits positions): it was stored
    before librdkafka had the partition, which refused it, and the close committed nothing."""
    mock_cluster.create_topic("t", 1, 1)
    tp = TopicPartition("t", 0)
    await produce(mock_cluster.bootstrap_servers, "t", 6, partition=0)
    assigned = asyncio.Event()

    class Skipping(aiokafka.ConsumerRebalanceListener):
        async def on_partitions_revoked(self, revoked):
            pass

        async def on_partitions_assigned(self, partitions):
            consumer.seek(tp, 6)
            assigned.set()

    consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=mock_cluster.bootstrap_servers, group_id="g",
                                         auto_offset_reset="earliest", auto_commit_interval_ms=60000, **FAST_GROUP)
    async with consumer:
        consumer.subscribe(["t"], listener=Skipping())
        while not assigned.is_set():
            assert await consumer.getmany(timeout_ms=200) == {}
        assert await consumer.getmany(timeout_ms=500) == {}
        assert await consumer.position(tp) == 6
    async with aiokafka.AIOKafkaConsumer(bootstrap_servers=mock_cluster.bootstrap_servers, group_id="g",
                                         enable_auto_commit=False) as reader:
        assert await reader.committed(tp) == 6


@pytest.mark.mock
@pytest.mark.asyncio
@pytest.mark.parametrize("when", ["after the assignment", "while the listener runs"])
async def test_assign_after_unsubscribe_keeps_its_partitions(mock_cluster, when):
    """unsubscribe() then assign(), as assign()'s IllegalStateError after subscribe() tells:
    librdkafka's revocation of the subscription, served after the assign(), unassigned the
    program's partitions (and a listener's rebalance finishing after it assigned the group's):
    the consumer read nothing, and getone() waited forever."""
    mock_cluster.create_topic("t", 2, 1)
    mock_cluster.create_topic("u", 1, 1)
    await produce(mock_cluster.bootstrap_servers, "t", 4)
    await produce(mock_cluster.bootstrap_servers, "u", 3, partition=0)
    manual = [TopicPartition("u", 0)]
    entered, release = asyncio.Event(), asyncio.Event()

    class Listener(aiokafka.ConsumerRebalanceListener):
        async def on_partitions_revoked(self, revoked):
            pass

        async def on_partitions_assigned(self, assigned):
            entered.set()
            if when == "while the listener runs":
                await release.wait()

    consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=mock_cluster.bootstrap_servers, group_id="g",
                                         auto_offset_reset="earliest", **FAST_GROUP)
    async with consumer:
        consumer.subscribe(["t"], listener=Listener())
        if when == "while the listener runs":
            await asyncio.wait_for(entered.wait(), 60)
            consumer.unsubscribe()
            consumer.assign(manual)
            release.set()
        else:
            while not entered.is_set():
                await consumer.getmany(timeout_ms=200)
            if when == "after the assignment":
                consumer.unsubscribe()
                consumer.assign(manual)
        got = await drain(consumer, 3, timeout_s=30)
        assert [(r.topic, r.value) for r in got] == [("u", b"m0"), ("u", b"m1"), ("u", b"m2")]
        assert await consumer.getmany(timeout_ms=1000) == {}
        assert consumer.assignment() == set(manual)


@pytest.mark.mock
@pytest.mark.asyncio
async def test_a_cancelled_stop_still_lets_the_buffered_records_go(mock_cluster):
    """stop() cancelled while rd_kafka_consumer_close runs in the executor (asyncio.wait_for()
    around it): the close goes on in the background, and the stopped consumer holds none
    of the records it had fetched."""
    mock_cluster.create_topic("t", 1, 1)
    await produce(mock_cluster.bootstrap_servers, "t", 20, partition=0)
    consumer, tps = assigned_consumer(mock_cluster.bootstrap_servers, "t", 1)
    await consumer.start()
    consumer.assign(tps)
    assert len((await consumer.getmany(timeout_ms=10000, max_records=1))[tps[0]]) == 1
    assert consumer._buffered > 0  # the rest of the fetch waits in the buffer
    handle = consumer._handle
    entered, release, closed = threading.Event(), threading.Event(), threading.Event()
    close = handle.close

    def held_close(*args, **kwargs):
        entered.set()
        release.wait(60)
        try:
            return close(*args, **kwargs)
        finally:
            closed.set()

    handle.close = held_close
    loop = asyncio.get_running_loop()
    stopping = asyncio.ensure_future(consumer.stop())
    try:
        assert await loop.run_in_executor(None, entered.wait, 60)
        stopping.cancel()
        with pytest.raises(asyncio.CancelledError):
            await stopping
        assert (consumer._buffered, list(consumer._buffer)) == (0, [])
    finally:
        release.set()
        assert await loop.run_in_executor(None, closed.wait, 60)
    with pytest.raises(ConsumerStoppedError):
        await consumer.getmany()


@pytest.mark.mock
@pytest.mark.asyncio
async def test_end_and_beginning_offsets_of_many_partitions_take_one_lookup(mock_cluster):
    """end_offsets() and beginning_offsets() of a topic of many partitions ask for them all in
    one ListOffsets lookup: one rd_kafka_query_watermark_offsets per partition made
    end_offsets() of 1000 partitions of the mock cluster take 5 minutes. The answers are each
    partition's own (a few partitions hold records, one of them a high id)."""
    mock_cluster.create_topic("many", 600, 1)
    counts = {0: 2, 7: 1, 599: 3}
    for pid, count in counts.items():
        await produce(mock_cluster.bootstrap_servers, "many", count, partition=pid)
    consumer, tps = assigned_consumer(mock_cluster.bootstrap_servers, "many", 600)
    await consumer.start()
    try:
        calls = {"watermarks": 0, "lookups": 0}
        handle = consumer._handle
        one, many = handle.query_watermark_offsets, handle.offsets_for_times

        def query_watermark_offsets(*args, **kwargs):
            calls["watermarks"] += 1
            return one(*args, **kwargs)

        def offsets_for_times(*args, **kwargs):
            calls["lookups"] += 1
            return many(*args, **kwargs)

        handle.query_watermark_offsets, handle.offsets_for_times = query_watermark_offsets, offsets_for_times
        try:
            assert await consumer.end_offsets(tps) == {tp: counts.get(tp.partition, 0) for tp in tps}
            assert await consumer.beginning_offsets(tps + tps[:3]) == {tp: 0 for tp in tps}
            assert await consumer.end_offsets([]) == {}
        finally:
            del handle.query_watermark_offsets, handle.offsets_for_times
        assert calls == {"watermarks": 0, "lookups": 2}
        with pytest.raises(Exception, match="list offsets"):
            await consumer.end_offsets([TopicPartition("many", 600)])
    finally:
        await consumer.stop()


async def _left_for(consumer, tp):
    """Read the subscription's two records as a member of the group, then unsubscribe() and
    assign() ``tp``, as assign()'s IllegalStateError after subscribe() tells."""
    assert len(await drain(consumer, 2, timeout_s=60)) == 2
    consumer.unsubscribe()
    consumer.assign([tp])


@pytest.mark.asyncio
async def test_commit_after_unsubscribe_then_assign(kafka_hosts, new_topic):
    """A consumer that left its group (unsubscribe()) for assign() commits as aiokafka's
    does then, outside the group (librdkafka's own commits would carry the generation it had
    in the group with no member id: Unknown member). committed(), seek_to_committed() and
    position() tell the commits."""
    t, u = new_topic(1), new_topic(1)
    await produce(kafka_hosts, t, 2, partition=0)
    await produce(kafka_hosts, u, 6, partition=0)
    tp = TopicPartition(u, 0)
    consumer = aiokafka.AIOKafkaConsumer(t, bootstrap_servers=kafka_hosts, group_id="g-" + t,
                                         auto_offset_reset="earliest", enable_auto_commit=False, **FAST_GROUP)
    async with consumer:
        await _left_for(consumer, tp)
        got = await consumer.getmany(tp, timeout_ms=10000, max_records=5)
        assert [r.offset for r in got[tp]] == [0, 1, 2, 3, 4]
        await consumer.commit()
        assert await consumer.committed(tp) == 5
        await consumer.commit({tp: (3, "meta")})
        assert await consumer.committed(tp) == 3
        assert await consumer.seek_to_committed() == {tp: 3}
        assert await consumer.position(tp) == 3
        assert [r.offset for r in await drain(consumer, 3)] == [3, 4, 5]
    consumer, _ = assigned_consumer(kafka_hosts, u, 1, group_id="g-" + t)
    async with consumer:  # a new consumer of the group starts at the commit
        consumer.assign([tp])
        assert [r.offset for r in await drain(consumer, 3)] == [3, 4, 5]


@pytest.mark.asyncio
@pytest.mark.parametrize("interval_ms", [300, 600000], ids=["periodic", "at-changes"])
async def test_auto_commit_after_unsubscribe_then_assign(kafka_hosts, new_topic, interval_ms, caplog):
    """Auto-commit of a consumer that left its group (unsubscribe()) for assign(), as
    aiokafka's: every auto_commit_interval_ms, for the manual assignment given up at once,
    and at stop(), with no COMMITFAIL logged."""
    t, u, v = new_topic(1), new_topic(1), new_topic(1)
    await produce(kafka_hosts, t, 2, partition=0)
    await produce(kafka_hosts, u, 5, partition=0)
    await produce(kafka_hosts, v, 4, partition=0)
    tu, tv = TopicPartition(u, 0), TopicPartition(v, 0)
    group = "g-" + t
    consumer = aiokafka.AIOKafkaConsumer(t, bootstrap_servers=kafka_hosts, group_id=group, auto_offset_reset="earliest",
                                         auto_commit_interval_ms=interval_ms, **FAST_GROUP)
    async with consumer:
        await _left_for(consumer, tu)
        got = await consumer.getmany(tu, timeout_ms=10000, max_records=3)
        assert [r.offset for r in got[tu]] == [0, 1, 2]
        if interval_ms < 1000:
            deadline = time.monotonic() + 30
            while await consumer.committed(tu) != 3 and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            assert await consumer.committed(tu) == 3
        got = await consumer.getmany(tu, timeout_ms=10000, max_records=2)
        assert [r.offset for r in got[tu]] == [3, 4]
        consumer.assign([tv])  # u given up: its position is committed now
        deadline = time.monotonic() + 30
        while await consumer.committed(tu) != 5 and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert await consumer.committed(tu) == 5
        assert [r.offset for r in await drain(consumer, 4)] == [0, 1, 2, 3]
    async with aiokafka.AIOKafkaConsumer(bootstrap_servers=kafka_hosts, group_id=group,
                                         enable_auto_commit=False) as reader:
        assert await reader.committed(tu) == 5
        assert await reader.committed(tv) == 4  # at stop()
    assert "COMMITFAIL" not in caplog.text and "auto-commit of" not in caplog.text


@pytest.mark.asyncio
async def test_a_commit_after_unsubscribe_while_the_group_has_members_says_what_to_do(kafka_hosts, new_topic):
    """The coordinator takes commits from outside a group only while it has no member, as
    aiokafka's are: the CommitFailedError says so, and how to commit the manual assignment."""
    from pyrdk.aio.errors import CommitFailedError
    t, u = new_topic(1), new_topic(1)
    await produce(kafka_hosts, t, 2, partition=0)
    tp = TopicPartition(u, 0)
    options = dict(bootstrap_servers=kafka_hosts, group_id="g-" + t, auto_offset_reset="earliest",
                   enable_auto_commit=False, **FAST_GROUP)
    async with aiokafka.AIOKafkaConsumer(t, **options) as consumer:
        await _left_for(consumer, tp)
        async with aiokafka.AIOKafkaConsumer(t, **options) as member:
            deadline = time.monotonic() + 90
            while not member.assignment():
                assert time.monotonic() < deadline, "the second member got no partition in 90 s"
                await member.getmany(timeout_ms=200)
            with pytest.raises(CommitFailedError, match="left group .* a group_id of its own"):
                await consumer.commit({tp: 1})
