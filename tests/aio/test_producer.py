"""AIOKafkaProducer against the test broker: RecordMetadata, murmur2 placement, flush,
bad input, cancellation."""
import asyncio
import gc
import json
import os

import pytest

import pyrdk.aio as aiokafka
from pyrdk import core
from pyrdk.aio.errors import ProducerClosed
from pyrdk.aio.structs import RecordMetadata, TopicPartition
from pyrdk.exceptions import KafkaException, TransactionStateError
from tests.rd import util
from tests.test_exactlyonce import run_commit_in_doubt

pytestmark = pytest.mark.kafka


def java_murmur2(data):
    """Kafka's (Java's) murmur2 of ``data``, written out here so the test does not lean on
    librdkafka's own."""
    m, r = 0x5bd1e995, 24
    length = len(data)
    h = (0x9747b28c ^ length) & 0xffffffff
    for i in range(length // 4):
        k = int.from_bytes(data[4 * i:4 * i + 4], "little")
        k = (k * m) & 0xffffffff
        k ^= k >> r
        k = (k * m) & 0xffffffff
        h = (h * m) & 0xffffffff
        h ^= k
    tail = length & ~3
    extra = length % 4
    if extra >= 3:
        h ^= data[tail + 2] << 16
    if extra >= 2:
        h ^= data[tail + 1] << 8
    if extra >= 1:
        h ^= data[tail]
        h = (h * m) & 0xffffffff
    h ^= h >> 13
    h = (h * m) & 0xffffffff
    h ^= h >> 15
    return h


def test_java_murmur2_matches_kafkas_published_values():
    # Kafka's UtilsTest.testMurmur2, as signed 32-bit ints.
    cases = {b"21": -973932308, b"foobar": -790332482, b"a-little-bit-long-string": -985981536,
             b"a-little-bit-longer-string": -1486304829, b"abc": 479470107}
    for data, signed in cases.items():
        assert java_murmur2(data) == signed & 0xffffffff, data


@pytest.mark.asyncio
async def test_send_and_wait_gives_record_metadata(kafka_hosts, new_topic):
    topic = new_topic(4)
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts) as producer:
        md = await producer.send_and_wait(topic, b"v1", partition=2, timestamp_ms=1600000000000)
        assert isinstance(md, RecordMetadata)
        assert (md.topic, md.partition, md.topic_partition) == (topic, 2, TopicPartition(topic, 2))
        assert md.offset == 0
        assert (md.timestamp, md.timestamp_type) == (1600000000000, 0)
        assert md.log_start_offset is None
        fut = await producer.send(topic, b"v2", partition=2)
        assert (await fut).offset == 1
        fut = await producer.send(topic, b"v3")  # the common record: the core's way
        assert gc.is_tracked(fut) == (core.implementation == "python")  # the C core's, while pending
        md = await fut
        assert type(md) is RecordMetadata and md.topic_partition == (topic, md.partition) and md.offset >= 0
        assert gc.is_tracked(fut)
        assert await producer.partitions_for(topic) == {0, 1, 2, 3}


@pytest.mark.asyncio
@pytest.mark.parametrize("settings", [{"acks": 0}, {"rdkafka_config": {"request.required.acks": "0"}}],
                         ids=["acks", "librdkafka's name"])
async def test_acks_0_resolves_the_futures_to_none_as_aiokafkas(kafka_hosts, new_topic, settings):
    """With acks=0 the broker tells nothing of the write: aiokafka resolves send()'s future
    (and a batch's) to None (its sender's done_noack()); librdkafka reports offset -1001
    (RD_KAFKA_OFFSET_INVALID), which no program should take for an offset."""
    topic = new_topic(1)
    # The broker does not answer an acks=0 request it refuses (a topic it does not serve yet,
    # say): a first record, acknowledged, makes sure it serves the topic.
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts) as first:
        assert (await first.send_and_wait(topic, b"v0", partition=0)).offset == 0
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts, **settings) as producer:
        assert await producer.send_and_wait(topic, b"v1", partition=0, timestamp_ms=1600000000000) is None
        assert await (await producer.send(topic, b"v2")) is None  # the common record: the core's way
        batch = producer.create_batch()
        batch.append(key=None, value=b"v3", timestamp=None)
        assert await (await producer.send_batch(batch, topic, partition=0)) is None
        # Read back before the producer closes its connection: with acks=0 a request the
        # broker has not read by then may be dropped with the connection.
        async with aiokafka.AIOKafkaConsumer(bootstrap_servers=kafka_hosts,
                                             auto_offset_reset="earliest") as consumer:
            consumer.assign([TopicPartition(topic, 0)])
            got = []
            for _ in range(6):  # up to a minute
                got.extend(r.value for records in (await consumer.getmany(timeout_ms=10000)).values()
                           for r in records)
                if len(got) >= 4:
                    break
    assert got == [b"v0", b"v1", b"v2", b"v3"]


@pytest.mark.asyncio
async def test_numpy_integers_are_partitions_and_timestamps(kafka_hosts, new_topic):
    """send()'s partition and timestamp_ms read from numpy (or pandas) arrays are integers too."""
    np = pytest.importorskip("numpy")
    topic = new_topic(4)
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts, linger_ms=np.int64(1)) as producer:
        md = await producer.send_and_wait(topic, b"v", partition=np.int64(2), timestamp_ms=np.int64(1600000000000))
        assert (md.partition, md.timestamp) == (2, 1600000000000)
        md = await producer.send_and_wait(topic, b"v", partition=np.uint8(3))
        assert md.partition == 3
        batch = producer.create_batch()
        assert batch.append(key=None, value=b"v", timestamp=np.int64(1600000000001)) is not None
        assert (await (await producer.send_batch(batch, topic, partition=np.int32(1)))).partition == 1


@pytest.mark.asyncio
async def test_keyed_records_land_on_the_murmur2_partition(kafka_hosts, new_topic):
    topic = new_topic(4)
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts) as producer:
        keys = [b"key-%d" % i for i in range(40)]
        futs = [await producer.send(topic, b"v", key=k) for k in keys]
        await producer.flush()
        placed = {k: f.result().partition for k, f in zip(keys, futs)}
    expected = {k: (java_murmur2(k) & 0x7fffffff) % 4 for k in keys}
    assert placed == expected
    assert len(set(placed.values())) > 1


@pytest.mark.asyncio
async def test_serializers_and_flush(kafka_hosts, new_topic):
    topic = new_topic(1)
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts, value_serializer=str.encode,
                                         key_serializer=lambda k: k and k.encode(), linger_ms=50) as producer:
        futs = [await producer.send(topic, "value %d" % i, key="k") for i in range(100)]
        assert not all(f.done() for f in futs)
        await producer.flush()
        assert [f.result().offset for f in futs] == list(range(100))


@pytest.mark.asyncio
async def test_timeouts_aiokafka_takes_together_start_here_too(kafka_hosts, new_topic):
    """librdkafka refuses a message.timeout.ms not over linger.ms and a max.poll.interval.ms
    under session.timeout.ms; aiokafka takes linger_ms over request_timeout_ms, and
    max_poll_interval_ms under session_timeout_ms."""
    topic = new_topic(1)
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts, linger_ms=2000,
                                         request_timeout_ms=1000) as producer:
        fut = await producer.send(topic, b"lingered")
        await producer.flush()
        assert (await fut).offset == 0
    async with aiokafka.AIOKafkaConsumer(bootstrap_servers=kafka_hosts, group_id="g-" + topic,
                                         session_timeout_ms=30000, max_poll_interval_ms=20000) as consumer:
        assert await consumer.topics() >= {topic}  # started (rd_kafka_new refused it before)


@pytest.mark.asyncio
async def test_a_transactional_producer_takes_linger_ms_over_request_timeout_ms_too(kafka_hosts, new_topic):
    """The widened message.timeout.ms (linger_ms + request_timeout_ms) is then bounded by
    transaction_timeout_ms, not set back to request_timeout_ms, which librdkafka refuses."""
    topic = new_topic(1)
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts, linger_ms=1000, request_timeout_ms=1000,
                                         transactional_id="linger-" + topic) as producer:
        async with producer.transaction():
            fut = await producer.send(topic, b"lingered in a transaction")
        assert (await fut).offset == 0


@pytest.mark.asyncio
async def test_bad_input_raises_clear_errors(kafka_hosts, new_topic):
    with pytest.raises(ValueError, match="acks"):
        aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts, acks=2)
    with pytest.raises(ValueError, match="compression_type"):
        aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts, compression_type="brotli")
    with pytest.raises(ValueError, match="enable_idempotence"):
        aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts, enable_idempotence=True, acks=1)
    producer = aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts)
    with pytest.raises(ProducerClosed, match="start"):
        await producer.send("t", b"v")
    topic = new_topic(1)
    async with producer:
        with pytest.raises(ValueError, match="reads a timestamp of 0 as 'now'"):  # aiokafka would send the epoch
            await producer.send(topic, b"epoch", timestamp_ms=0)
        with pytest.raises(TypeError, match="value must be bytes"):
            await producer.send(topic, "not bytes")
        with pytest.raises(TypeError, match="partition"):
            await producer.send(topic, b"v", partition=-3)
        with pytest.raises(TypeError, match="partition must be an int >= 0 and < 2..31"):
            await producer.send(topic, b"v", partition=2 ** 40)  # no partition id: not librdkafka's int32
        with pytest.raises(TypeError, match="timestamp_ms must be an int >= 0 and < 2..63"):
            await producer.send(topic, b"v", timestamp_ms=2 ** 63)
        with pytest.raises(TypeError, match="headers"):
            await producer.send(topic, b"v", headers=[(b"bytes-name", b"v")])
        for bad in (topic.encode(), None):
            with pytest.raises(TypeError, match="topic must be a non-empty str"):
                await producer.partitions_for(bad)
        # nothing half-sent: the next record is the first in the log
        assert (await producer.send_and_wait(topic, b"ok")).offset == 0
    # json.dumps without .encode(): the message names the serializer, which is what to fix
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts, value_serializer=json.dumps) as producer:
        with pytest.raises(TypeError, match="value_serializer returned str: it must return bytes"):
            await producer.send(topic, {"a": 1})
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts, key_serializer=str) as producer:
        with pytest.raises(TypeError, match="key_serializer returned str: it must return bytes"):
            await producer.send(topic, b"v", key=1)
    with pytest.raises(ProducerClosed, match="stopped"):
        await producer.send(topic, b"v")


class Claims(bytes):
    """bytes whose len() says more than they hold."""

    def __len__(self):
        return 4096


@pytest.mark.asyncio
async def test_a_bytes_subclass_is_sent_as_its_bytes(kafka_hosts, new_topic):
    """send() takes a bytes subclass as bytes (as Producer.produce() does), on either core:
    the C core's own send() takes bytes only."""
    topic = new_topic(1)
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts) as producer:
        await producer.send_and_wait(topic, b"first")  # the topic known: the next ones could take the core's way
        md = await producer.send_and_wait(topic, Claims(b"value"), key=Claims(b"key"))
        assert md.offset == 1
        md = await producer.send_and_wait(topic, Claims(b"partitioned"), partition=0)
        assert md.offset == 2
        async with aiokafka.AIOKafkaConsumer(bootstrap_servers=kafka_hosts,
                                             auto_offset_reset="earliest") as consumer:
            consumer.assign([TopicPartition(topic, 0)])
            got = []
            for _ in range(6):  # up to a minute
                got.extend((r.key, r.value) for records in (await consumer.getmany(timeout_ms=10000)).values()
                           for r in records)
                if len(got) >= 3:
                    break
    assert got == [(None, b"first"), (b"key", b"value"), (None, b"partitioned")]


@pytest.mark.asyncio
async def test_a_record_over_max_request_size_names_the_option(kafka_hosts, new_topic):
    """librdkafka refuses it locally: the error says which option, not "Broker: ..."."""
    topic = new_topic(1)
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts, max_request_size=2000) as producer:
        for kwargs in ({}, {"partition": 0}, {"headers": [("h", b"v")]}):
            with pytest.raises(aiokafka.errors.MessageSizeTooLargeError, match="max_request_size=2000"):
                await producer.send(topic, b"x" * 5000, **kwargs)
        batch = producer.create_batch()
        batch.append(key=None, value=b"x" * 5000, timestamp=None)
        with pytest.raises(aiokafka.errors.MessageSizeTooLargeError, match="max_request_size=2000"):
            await producer.send_batch(batch, topic, partition=0)
        assert (await producer.send_and_wait(topic, b"ok")).offset == 0


@pytest.mark.asyncio
async def test_a_start_whose_init_transactions_failed_or_was_cancelled_is_started_anew():
    """Not a producer left half-started, whose next start() returned at once without
    rd_kafka_init_transactions (begin_transaction() then failed)."""
    producer = aiokafka.AIOKafkaProducer(bootstrap_servers="127.0.0.1:1", transactional_id="tx-unreachable",
                                         request_timeout_ms=1000)
    with pytest.raises(aiokafka.errors.KafkaTimeoutError):
        await producer.start()
    with pytest.raises(ProducerClosed, match="not started"):
        await producer.begin_transaction()
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(producer.start(), 0.2)
    with pytest.raises(aiokafka.errors.KafkaTimeoutError):
        await asyncio.wait_for(producer.start(), 20)
    await producer.stop()


@pytest.mark.asyncio
async def test_cancelled_send_future_leaves_the_producer_usable(kafka_hosts, new_topic):
    topic = new_topic(1)
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts) as producer:
        fut = await producer.send(topic, b"first")
        fut.cancel()
        md = await producer.send_and_wait(topic, b"second")
        assert md.offset == 1  # the cancelled future's record was still sent, as in aiokafka
        await asyncio.wait_for(producer.flush(), 10)


@pytest.mark.mock
@pytest.mark.asyncio
async def test_another_producers_fatal_error_through_a_transaction_block_aborts_it_and_the_producer_goes_on(
        mock_cluster):
    """Two topics, two producers, one ``async with transaction()`` inside the other: the inner
    one is fenced at its commit; the outer one is not, so its transaction is aborted and it
    goes on (it was marked fatal and refused every later call)."""
    from pyrdk.rd.mock import ApiKey
    for name in ("outer", "inner"):
        mock_cluster.create_topic(name, 1, 1)
    hosts = mock_cluster.bootstrap_servers
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=hosts, transactional_id="outer") as outer, \
            aiokafka.AIOKafkaProducer(bootstrap_servers=hosts, transactional_id="inner") as inner:
        mock_cluster.push_request_errors(ApiKey.EndTxn, 90)  # PRODUCER_FENCED: the first EndTxn, the inner commit
        with pytest.raises(aiokafka.errors.ProducerFenced):
            async with outer.transaction():
                await outer.send("outer", b"aborted")
                async with inner.transaction():
                    await inner.send("inner", b"fenced")
        async with outer.transaction():  # not refused as if the outer producer were fenced
            after = await outer.send("outer", b"after")
        assert (await after).offset >= 0


def slow_transactional_producer(mock_cluster):
    """A transactional producer of topic "t" whose transaction coordinator is broker 1 (its
    calls time out after 1 s, once a test makes that broker slow)."""
    mock_cluster.create_topic("t", 1, 1)
    mock_cluster.set_coordinator("transaction", "slow", 1)
    return aiokafka.AIOKafkaProducer(bootstrap_servers=mock_cluster.bootstrap_servers, transactional_id="slow",
                                     request_timeout_ms=1000, rdkafka_config={"transaction.timeout.ms": 1000})


# In a child process: librdkafka may abort it (see run_commit_in_doubt).
_COMMIT_IN_DOUBT = """
import asyncio
import pyrdk.aio as aiokafka
from pyrdk.exceptions import TransactionStateError
from pyrdk.rd.mock import MockCluster
from tests.aio.test_producer import slow_transactional_producer


async def main(mock_cluster):
    producer = slow_transactional_producer(mock_cluster)
    async with producer:
        await producer.begin_transaction()
        await producer.send_and_wait("t", b"in doubt")
        mock_cluster.set_broker_rtt(1, 3000)
        try:
            await producer.commit_transaction()
        except aiokafka.errors.KafkaTimeoutError:
            print("timed out")
        mock_cluster.set_broker_rtt(1, 0)
        # It goes on in the background; librdkafka takes no other call until it is made again.
        try:
            await producer.begin_transaction()
        except TransactionStateError as exc:
            print("refused:", "await commit_transaction() again" in str(exc))
        await producer.commit_transaction()
        async with producer.transaction():
            await producer.send_and_wait("t", b"next")
    print("done")


cluster = MockCluster(3)
asyncio.run(main(cluster))
cluster.close()
"""


@pytest.mark.mock
def test_a_commit_that_timed_out_is_called_again_before_the_next_transaction():
    assert run_commit_in_doubt(_COMMIT_IN_DOUBT) == "timed out\nrefused: True\ndone\n"


@pytest.mark.mock
@pytest.mark.asyncio
async def test_a_record_an_abort_purged_says_the_transaction_was_aborted(mock_cluster):
    """librdkafka's abort purges the records not yet sent: their futures fail saying why, where
    they said only "Local: Purged in queue"."""
    mock_cluster.create_topic("t", 1, 1)
    producer = aiokafka.AIOKafkaProducer(bootstrap_servers=mock_cluster.bootstrap_servers, transactional_id="purged",
                                         linger_ms=20000)
    async with producer:
        await producer.begin_transaction()
        sent = await producer.send("t", b"never sent")
        await producer.abort_transaction()
        with pytest.raises(KafkaException, match="the transaction was aborted before the record was delivered"):
            await sent


@pytest.mark.mock
@pytest.mark.asyncio
async def test_a_commit_after_an_abort_that_timed_out_says_to_finish_the_abort(mock_cluster):
    producer = slow_transactional_producer(mock_cluster)
    async with producer:
        await producer.begin_transaction()
        await producer.send_and_wait("t", b"aborted")
        mock_cluster.set_broker_rtt(1, 3000)
        with pytest.raises(aiokafka.errors.KafkaTimeoutError):
            await producer.abort_transaction()
        with pytest.raises(TransactionStateError, match=r"await abort_transaction\(\) again"):
            await producer.commit_transaction()
        mock_cluster.set_broker_rtt(1, 0)
        await producer.abort_transaction()
        async with producer.transaction():
            await producer.send_and_wait("t", b"next")


@pytest.mark.asyncio
async def test_a_fenced_producer_raises_producer_fenced_not_the_timeout_of_an_abort(kafka_hosts, new_topic):
    topic = new_topic(1)
    zombie = aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts, transactional_id="z-" + topic,
                                       request_timeout_ms=5000)
    successor = aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts, transactional_id="z-" + topic)
    try:
        async with zombie:
            with pytest.raises(aiokafka.errors.ProducerFenced):
                async with zombie.transaction():
                    await zombie.send_and_wait(topic, b"zombie")
                    await successor.start()  # fences the zombie
                    await zombie.send_and_wait(topic, b"fenced")
            # Nothing more: neither an abort (it could not end well) nor a transaction.
            with pytest.raises(aiokafka.errors.ProducerFenced, match="stop"):
                await zombie.abort_transaction()
            with pytest.raises(aiokafka.errors.ProducerFenced, match="stop"):
                await zombie.begin_transaction()
        async with successor.transaction():
            await successor.send_and_wait(topic, b"successor")
    finally:
        await successor.stop()


@pytest.mark.asyncio
async def test_a_transaction_timeout_under_request_timeout_ms_is_taken_as_aiokafka_takes_it(kafka_hosts, new_topic):
    # request_timeout_ms is 40000 by default; librdkafka alone would refuse the producer, its
    # socket.timeout.ms and message.timeout.ms being over transaction.timeout.ms.
    topic = new_topic(1)
    producer = aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts, transactional_id="short-" + topic,
                                         transaction_timeout_ms=5000)
    async with producer:
        async with producer.transaction():
            sent = await producer.send(topic, b"in a short transaction")
        assert (await sent).offset >= 0


@pytest.mark.asyncio
async def test_transactions_commit_and_abort(kafka_hosts, new_topic):
    from tests.aio.test_consumer import assigned_consumer, drain
    topic = new_topic(1)
    # linger_ms: "aborted" is still queued at the abort, which purges it and fails its future
    # (the commits send what lingers at once). Without it the record may be written before the
    # abort (a loaded machine), and its future then has its offset, as aiokafka's has: only a
    # read_committed reader (below) does not see it.
    producer = aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts, transactional_id="tx-" + topic,
                                         linger_ms=10000)
    async with producer:
        async with producer.transaction():
            kept = await producer.send(topic, b"kept")
        assert (await kept).offset >= 0
        with pytest.raises(RuntimeError, match="boom"):
            async with producer.transaction():
                lost = await producer.send(topic, b"aborted")
                raise RuntimeError("boom")
        with pytest.raises(Exception):
            await lost
        async with producer.transaction():
            await producer.send(topic, b"kept too")
        await asyncio.create_task(producer.begin_transaction())  # aiokafka's is a coroutine: a task takes it
        await producer.send(topic, b"kept third")
        await producer.commit_transaction()
    plain = aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts)
    async with plain:
        with pytest.raises(aiokafka.errors.IllegalOperation, match="transactional_id"):
            await plain.begin_transaction()
    consumer, tps = assigned_consumer(kafka_hosts, topic, 1, isolation_level="read_committed")
    async with consumer:
        consumer.assign(tps)
        got = await drain(consumer, 3, timeout_s=15)
    assert [r.value for r in got] == [b"kept", b"kept too", b"kept third"]


@pytest.mark.asyncio
async def test_a_full_queue_is_waited_on(kafka_hosts, new_topic):
    topic = new_topic(1)
    config = {"queue.buffering.max.messages": 10}
    producer = aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts, linger_ms=20, rdkafka_config=config)
    async with producer:
        futs = [await producer.send(topic, b"%d" % i) for i in range(300)]
        await producer.flush()
    assert [f.result().offset for f in futs] == list(range(300))


@pytest.mark.asyncio
async def test_start_raises_kafka_connection_error_when_no_broker_answers():
    """As aiokafka's start() (which bootstraps): not the first send, request_timeout_ms later."""
    from pyrdk.aio.errors import KafkaConnectionError
    producer = aiokafka.AIOKafkaProducer(bootstrap_servers="127.0.0.1:1", request_timeout_ms=1000)
    with pytest.raises(KafkaConnectionError, match="Connection refused"):
        await producer.start()
    await producer.stop()


@pytest.mark.asyncio
@pytest.mark.parametrize("client", ["producer", "consumer"])
async def test_a_wrong_address_is_named_once_every_bootstrap_broker_failed(client):
    """As aiokafka's start(), which tries each address once: not after request_timeout_ms (here
    five minutes), but once librdkafka reported every bootstrap broker down."""
    from pyrdk.aio.errors import KafkaConnectionError
    hosts = "127.0.0.1:1,127.0.0.1:2"
    made = aiokafka.AIOKafkaProducer(bootstrap_servers=hosts, request_timeout_ms=300000) if client == "producer" \
        else aiokafka.AIOKafkaConsumer("t", bootstrap_servers=hosts, request_timeout_ms=300000)
    with pytest.raises(KafkaConnectionError, match="Unable to bootstrap from 127.0.0.1:1,127.0.0.1:2 in .* ms .*"
                                                   "Connection refused.*: check the address"):
        await made.start()
    await made.stop()


@pytest.mark.mock
@pytest.mark.asyncio
async def test_records_for_an_unreachable_broker_fail_with_a_timeout(mock_cluster):
    from pyrdk.aio.errors import KafkaTimeoutError
    config = {"queue.buffering.max.messages": 5}
    producer = aiokafka.AIOKafkaProducer(bootstrap_servers=mock_cluster.bootstrap_servers, request_timeout_ms=1000,
                                         rdkafka_config=config)
    results = []
    async with producer:
        mock_cluster.broker_down(-1)
        # The last 3 wait for room, which the first 5 make when they time out: a waiting
        # send() may itself reach request_timeout_ms first and raise (as aiokafka's does).
        for i in range(8):
            try:
                results.append(await producer.send("nowhere", b"%d" % i))
            except KafkaTimeoutError as exc:
                results.append(exc)
        futures = [r for r in results if not isinstance(r, Exception)]
        results = [r if isinstance(r, Exception) else (await asyncio.gather(r, return_exceptions=True))[0]
                   for r in results]
    assert all(gc.is_tracked(fut) for fut in futures)
    assert len(results) == 8 and all(isinstance(r, KafkaTimeoutError) for r in results), results


@pytest.mark.asyncio
async def test_events_queued_before_the_loop_watches_the_queue_are_served():
    """librdkafka writes to the wakeup pipe only as its queue goes from empty to one event:
    a queue already holding events as the watch began (a broker that refused the first
    connection before start() watched) would never wake the loop again, and a record's
    future would wait for ever. The watch serves the queue once as it starts."""
    from pyrdk.aio.wakeup import Wakeup
    from pyrdk.rd.callbacks import Callbacks
    from pyrdk.rd.handle import Handle
    errors = []
    handle = Handle("producer", {"bootstrap.servers": "127.0.0.1:1"}, Callbacks(on_error=errors.append))
    try:
        # the refused connection's error events, not served (nothing needs the loop yet)
        util.wait_until(lambda: handle.outq_len() > 0, "librdkafka to queue an error for a refused connection")
        served = asyncio.Event()

        def on_ready():
            handle.poll(0)
            served.set()

        wakeup = Wakeup(asyncio.get_running_loop(), handle, on_ready)
        try:
            await asyncio.wait_for(served.wait(), 10)
        finally:
            wakeup.close()
        assert errors  # served (the queue need not be empty: librdkafka may queue the next reconnect's error)
    finally:
        handle.close()


@pytest.mark.asyncio
async def test_a_loop_that_cannot_watch_the_pipe_leaves_librdkafka_writing_to_no_file():
    """A loop without add_reader (as Windows' proactor loop) fails the watch before librdkafka
    is given the pipe: once the pipe's fds are closed, the next file opened takes their
    numbers, and librdkafka must not write its wakeups into it. (No broker: no librdkafka
    thread opens a socket meanwhile, so the next pipe gets the same numbers.)"""
    from pyrdk.aio.wakeup import Wakeup
    from pyrdk.rd.callbacks import Callbacks
    from pyrdk.rd.handle import Handle

    class NoReaders:
        def add_reader(self, fd, callback):
            raise NotImplementedError("this loop watches no file descriptor")

    reports = []
    handle = Handle("producer", {"message.timeout.ms": 100},
                    Callbacks(on_delivery=lambda *report: reports.append(report)))
    try:
        with pytest.raises(NotImplementedError):
            Wakeup(NoReaders(), handle, lambda: None)
        read, write = os.pipe()  # the numbers of the pipe just closed
        try:
            os.set_blocking(read, False)
            handle.produce("nowhere", -1, b"v", None, None, None, 1)
            # its timeout's report: on a watched queue, it writes to the pipe
            util.wait_until(lambda: reports, "the delivery report of a message with no broker",
                            step=lambda: handle.poll(50))
            with pytest.raises(BlockingIOError):
                os.read(read, 1)
        finally:
            os.close(read)
            os.close(write)
    finally:
        handle.close()


@pytest.mark.asyncio
async def test_a_custom_partitioner_is_called_as_aiokafkas(kafka_hosts, new_topic):
    topic = new_topic(4)
    calls = []

    def by_key(key, all_partitions, available_partitions):
        calls.append((key, all_partitions, available_partitions))
        return all_partitions[-1] if key == b"last" else all_partitions[0]

    async with aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts, partitioner=by_key,
                                         key_serializer=str.encode) as producer:
        assert (await producer.send_and_wait(topic, b"v", key="last")).partition == 3
        assert (await producer.send_and_wait(topic, b"v", key="other")).partition == 0
        assert (await producer.send_and_wait(topic, b"v", key="last", partition=1)).partition == 1
    assert calls == [(b"last", [0, 1, 2, 3], [0, 1, 2, 3]), (b"other", [0, 1, 2, 3], [0, 1, 2, 3])]
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts,
                                         partitioner=lambda key, every, available: 9) as producer:
        with pytest.raises(ValueError, match="partitioner returned 9"):
            await producer.send(topic, b"v")
        assert (await producer.send_and_wait(topic, b"ok", partition=2)).offset == 0  # nothing half-sent
    with pytest.raises(TypeError, match="partitioner must be a callable"):
        aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts, partitioner="murmur2")


@pytest.mark.asyncio
async def test_flush_waits_for_what_was_sent_before_it_and_stop_refuses_what_comes_after(kafka_hosts, new_topic):
    topic = new_topic(4)
    producer = aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts, linger_ms=5)
    await producer.start()
    sent = []

    async def sender():
        while True:
            sent.append(await producer.send(topic, b"x" * 100))

    task = asyncio.create_task(sender())
    await asyncio.sleep(0.3)
    before = list(sent)
    await asyncio.wait_for(producer.flush(), 30)  # another task sends on meanwhile
    assert before and all(fut.done() and not fut.exception() for fut in before)
    await asyncio.wait_for(producer.stop(), 30)
    with pytest.raises(ProducerClosed):
        await task
    assert all(fut.done() and not fut.exception() for fut in sent)  # none purged
    with pytest.raises(ProducerClosed, match="make a new one"):
        await producer.start()


@pytest.mark.asyncio
async def test_a_transactional_producer_sends_only_inside_a_transaction(kafka_hosts, new_topic):
    topic = new_topic(1)
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts,
                                         transactional_id="tx-" + topic) as producer:
        with pytest.raises(aiokafka.errors.IllegalOperation, match="inside a transaction"):
            await producer.send(topic, b"x")
        with pytest.raises(aiokafka.errors.IllegalOperation, match="not in the middle of a transaction"):
            await producer.send_offsets_to_transaction({TopicPartition(topic, 0): 1}, "g")  # as aiokafka's
        async with producer.transaction():
            with pytest.raises(TypeError, match="an offsets key must be a TopicPartition"):  # as aiokafka's
                await producer.send_offsets_to_transaction({"a": 1}, "g")
            with pytest.raises(ValueError, match="non-empty dict"):  # as aiokafka's
                await producer.send_offsets_to_transaction({}, "g")
            with pytest.raises(ValueError):
                await producer.send_offsets_to_transaction([(TopicPartition(topic, 0), 1)], "g")
            fut = await producer.send(topic, b"inside")
        assert (await fut).offset >= 0
        with pytest.raises(aiokafka.errors.IllegalOperation):
            await producer.send(topic, b"after")


@pytest.mark.asyncio
async def test_send_offsets_to_transaction_takes_aiokafkas_offset_and_metadata(kafka_hosts, new_topic, monkeypatch):
    """As aiokafka (commit_structure_validate): an offset, an ``(offset, metadata)`` pair or an
    OffsetAndMetadata; the metadata goes to librdkafka with the offset, not dropped."""
    from pyrdk.aio.structs import OffsetAndMetadata
    from pyrdk.rd import transaction
    topic, group = new_topic(3), "g-" + new_topic(1)
    given = []
    send_offsets = transaction.send_offsets

    def spy(handle, offsets, metadata, timeout_ms):
        given.extend(offsets)
        return send_offsets(handle, offsets, metadata, timeout_ms)

    monkeypatch.setattr(transaction, "send_offsets", spy)
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts, transactional_id="om-" + topic) as producer:
        async with producer.transaction():
            await producer.send_offsets_to_transaction(
                {TopicPartition(topic, 0): 5, TopicPartition(topic, 1): (7, "pair"),
                 TopicPartition(topic, 2): OffsetAndMetadata(9, "named")}, group)
        with pytest.raises(TypeError, match="metadata must be a str"):
            async with producer.transaction():
                await producer.send_offsets_to_transaction({TopicPartition(topic, 0): (6, b"bytes")}, group)
    assert [(t, p, o, m) for t, p, o, _, m in given] == [(topic, 0, 5, None), (topic, 1, 7, b"pair"),
                                                        (topic, 2, 9, b"named")]
    consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=kafka_hosts, group_id=group, enable_auto_commit=False)
    async with consumer:
        assert [await consumer.committed(TopicPartition(topic, p)) for p in range(3)] == [5, 7, 9]


@pytest.mark.parametrize("client, kwargs, named", [
    (aiokafka.AIOKafkaProducer, {"linger_ms": -1}, "linger_ms=-1"),
    (aiokafka.AIOKafkaProducer, {"request_timeout_ms": "soon"}, "request_timeout_ms='soon'"),
    (aiokafka.AIOKafkaProducer, {"max_batch_size": None}, "max_batch_size=None"),
    (aiokafka.AIOKafkaConsumer, {"fetch_max_wait_ms": -1}, "fetch_max_wait_ms=-1"),
    (aiokafka.AIOKafkaConsumer, {"session_timeout_ms": "x"}, "session_timeout_ms='x'"),
])
def test_an_option_librdkafka_refuses_is_named_at_construction(client, kwargs, named):
    with pytest.raises((aiokafka.errors.KafkaConfigurationError, TypeError)) as info:
        client(**kwargs)
    assert str(info.value).startswith(named)


@pytest.mark.parametrize("client, name", [
    (aiokafka.AIOKafkaProducer, "enable_idempotence"),
    (aiokafka.AIOKafkaConsumer, "enable_auto_commit"),
    (aiokafka.AIOKafkaConsumer, "check_crcs"),
    (aiokafka.AIOKafkaConsumer, "exclude_internal_topics"),
])
def test_a_string_for_a_boolean_option_is_refused_not_taken_as_true(client, name):
    """"false" from a configuration file is true to Python: taken, it turned the option on."""
    with pytest.raises(TypeError, match="^%s must be True or False, not 'false'" % name):
        client(**{name: "false"})
    for taken in (0, 1, None):  # as aiokafka's own truth tests take them
        client(**{name: taken})


@pytest.mark.kafka
@pytest.mark.slow  # seconds of a process exiting: the C pass runs it, make soak the pure one
def test_records_of_a_producer_never_stopped_are_delivered_at_exit(kafka_hosts, client, new_topic):
    """A program whose loop ends without ``await producer.stop()`` loses nothing unseen:
    what librdkafka holds is flushed at exit, and what is still undelivered is logged."""
    import subprocess
    import sys
    import textwrap
    from pyrdk.common import OffsetType
    name = new_topic(2)
    program = textwrap.dedent("""
        import asyncio, logging
        from pyrdk.aio import AIOKafkaProducer
        logging.basicConfig()

        async def main(hosts, name, down=None):
            producer = AIOKafkaProducer(bootstrap_servers=hosts, linger_ms=5000)
            await producer.start()
            if down is not None:
                down.broker_down(-1)
            for i in range(200):
                await producer.send(name, b"left %%d" %% i)
            globals()["kept" if down is None else "lost"] = producer

        asyncio.run(main(%r, %r))
        from pyrdk.rd.mock import MockCluster
        cluster = MockCluster(1)  # reachable as the producer starts, then down
        asyncio.run(main(cluster.bootstrap_servers, "nowhere", cluster))
    """) % (kafka_hosts, name)
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "with 200 message(s) not delivered, or delivered but not yet reported" in result.stderr
    consumer = client.topics[name].get_simple_consumer(auto_offset_reset=OffsetType.EARLIEST,
                                                       consumer_timeout_ms=5000)
    try:
        assert sorted(m.value for m in consumer) == sorted(b"left %d" % i for i in range(200))
    finally:
        consumer.stop()


async def commit_timed_out(mock_cluster, after):
    """A transaction whose commit times out with its coordinator down (it goes on in the
    background), ``await after(producer)`` then, and the commit finished once the coordinator
    is back: the record sent in it is delivered."""
    mock_cluster.create_topic("t", 1, 1)
    mock_cluster.set_partition_leader("t", 0, 1)
    mock_cluster.set_coordinator("transaction", "down", 2)
    producer = aiokafka.AIOKafkaProducer(bootstrap_servers=mock_cluster.bootstrap_servers, transactional_id="down",
                                         request_timeout_ms=1000, rdkafka_config={"message.timeout.ms": 30000})
    async with producer:
        await producer.begin_transaction()
        mock_cluster.broker_down(2)
        sent = await producer.send("t", b"committed")
        with pytest.raises(aiokafka.errors.KafkaTimeoutError):
            await producer.commit_transaction()
        await after(producer)
        mock_cluster.broker_up(2)
        for _ in range(30):  # librdkafka's reconnection to the coordinator may outlast a request_timeout_ms
            try:
                await producer.commit_transaction()
                break
            except aiokafka.errors.KafkaTimeoutError:
                continue
        else:
            pytest.fail("the commit did not finish in 30 calls of request_timeout_ms")
        assert (await sent).offset == 0
        async with producer.transaction():
            assert (await producer.send_and_wait("t", b"next")).offset == 2  # a commit marker between


@pytest.mark.mock
@pytest.mark.asyncio
async def test_an_abort_after_a_commit_that_timed_out_says_to_finish_the_commit(mock_cluster):
    """librdkafka refuses an abort as a conflicting call: the abort says which call to make."""
    async def abort(producer):
        with pytest.raises(TransactionStateError, match=r"await commit_transaction\(\) again"):
            await producer.abort_transaction()
    await commit_timed_out(mock_cluster, abort)


@pytest.mark.mock
@pytest.mark.asyncio
async def test_a_send_after_a_commit_that_timed_out_is_refused_as_aiokafkas(mock_cluster):
    """As in aiokafka, no record is taken once the commit was called: ``IllegalOperation``,
    which says to await the commit again (librdkafka's own refusal was an "Erroneous state")."""
    from pyrdk.aio.errors import IllegalOperation

    async def send(producer):
        with pytest.raises(IllegalOperation, match=r"commit_transaction\(\) timed out .* await it again"):
            await producer.send("t", b"late")
        with pytest.raises(IllegalOperation, match="not in the middle of a transaction"):
            await producer.send_offsets_to_transaction({TopicPartition("t", 0): 1}, "group")
    await commit_timed_out(mock_cluster, send)


@pytest.mark.mock
@pytest.mark.asyncio
async def test_partitions_for_answers_from_the_last_metadata_while_every_broker_is_down(mock_cluster):
    """As aiokafka's, partitions_for() gives the partitions the metadata knows: while no
    broker answers, at once, instead of a KafkaConnectionError after request_timeout_ms."""
    mock_cluster.create_topic("t", 3, 1)
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=mock_cluster.bootstrap_servers,
                                         request_timeout_ms=5000) as producer:
        assert await producer.partitions_for("t") == {0, 1, 2}
        mock_cluster.broker_down(-1)
        try:
            assert await asyncio.wait_for(producer.partitions_for("t"), 1) == {0, 1, 2}
        finally:
            mock_cluster.broker_up(-1)


@pytest.mark.mock
@pytest.mark.asyncio
async def test_a_stop_cancelled_while_it_closes_fails_what_is_pending(mock_cluster):
    """Every broker is down; stop() is cancelled again and again, also while it closes the
    librdkafka producer: the futures of the records it holds still fail (ProducerClosed),
    where they were left pending for ever (no later stop() or delivery report tells them)."""
    mock_cluster.create_topic("t", 1, 1)
    producer = aiokafka.AIOKafkaProducer(bootstrap_servers=mock_cluster.bootstrap_servers, request_timeout_ms=3000)
    await producer.start()
    mock_cluster.broker_down(-1)
    futures = [await producer.send("t", b"%d" % i) for i in range(5)]
    stopping = asyncio.ensure_future(producer.stop())
    await asyncio.sleep(0.3)
    while not stopping.done():
        stopping.cancel()
        await asyncio.sleep(0)
    done, pending = await asyncio.wait(futures, timeout=5)
    assert not pending
    assert all(isinstance(fut.exception(), ProducerClosed) for fut in done)


@pytest.mark.mock
@pytest.mark.asyncio
async def test_a_send_in_a_transaction_a_failed_delivery_broke_says_to_abort_it(mock_cluster):
    """A delivery failed (INVALID_RECORD): librdkafka refuses every later record of the
    transaction (``_STATE``, "Erroneous state"); send() says the transaction failed, why, and
    to abort it, with ``txn_requires_abort``; the abort then lets the producer go on."""
    from pyrdk.rd.mock import ApiKey
    mock_cluster.create_topic("t", 1, 1)
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=mock_cluster.bootstrap_servers, transactional_id="broken",
                                         request_timeout_ms=3000) as producer:
        await producer.begin_transaction()
        mock_cluster.push_request_errors(ApiKey.Produce, 87)  # INVALID_RECORD, not retried
        with pytest.raises(KafkaException):
            await producer.send_and_wait("t", b"refused by the broker")
        for partition in (None, 0):  # the core's path and the general one
            with pytest.raises(TransactionStateError, match=r"failed \(.*validate record.*abort_transaction\(\)") \
                    as raised:
                await producer.send("t", b"after", partition=partition)
            assert raised.value.txn_requires_abort and not raised.value.retriable
        await producer.abort_transaction()


@pytest.mark.mock
@pytest.mark.asyncio
async def test_a_cancelled_commit_is_finished_by_the_next_commit_call(mock_cluster):
    """The task committing is cancelled while librdkafka's commit goes on on the executor:
    the producer remembers it, as a commit that timed out (other calls are refused, saying to
    await commit_transaction() again; librdkafka's own refusal was an unnamed "Conflicting
    commit_transaction API call", and the abort's marked the abort unfinished), and the next
    commit_transaction() gives its outcome."""
    mock_cluster.create_topic("t", 1, 1)
    mock_cluster.set_coordinator("transaction", "cancelled", 1)
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=mock_cluster.bootstrap_servers,
                                         transactional_id="cancelled", request_timeout_ms=10000) as producer:
        await producer.begin_transaction()
        sent = await producer.send_and_wait("t", b"committed")
        mock_cluster.set_broker_rtt(1, 2000)
        committing = asyncio.ensure_future(producer.commit_transaction())
        await asyncio.sleep(0.3)
        committing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await committing
        for call in (producer.begin_transaction, producer.abort_transaction):
            with pytest.raises(TransactionStateError, match=r"await commit_transaction\(\) again"):
                await call()
        await producer.commit_transaction()
        mock_cluster.set_broker_rtt(1, 0)
        async with producer.transaction():
            assert (await producer.send_and_wait("t", b"next")).offset == sent.offset + 2  # a commit marker between


@pytest.mark.mock
@pytest.mark.asyncio
async def test_a_transaction_block_whose_send_offsets_was_cancelled_aborts_and_the_next_one_commits(mock_cluster):
    """aiokafka's consume-transform-produce loop, its send_offsets_to_transaction() under a
    wait_for() that cancels it (the coordinator is slow): librdkafka's call goes on on the
    executor. The block's abort waits for it, and aborts: the block raises the TimeoutError,
    where it raised librdkafka's refusal of the abort ("Conflicting send_offsets_to_transaction
    API call"), taken for an abort that timed out, which every next block's begin refused."""
    mock_cluster.create_topic("t", 1, 1)
    mock_cluster.set_coordinator("transaction", "offsets", 1)
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=mock_cluster.bootstrap_servers,
                                         transactional_id="offsets", request_timeout_ms=10000) as producer:
        with pytest.raises(asyncio.TimeoutError):
            async with producer.transaction():
                aborted = await producer.send_and_wait("t", b"aborted")
                mock_cluster.set_broker_rtt(1, 2000)
                await asyncio.wait_for(producer.send_offsets_to_transaction({TopicPartition("t", 0): 1}, "g"), 0.3)
        mock_cluster.set_broker_rtt(1, 0)
        async with producer.transaction():
            assert (await producer.send_and_wait("t", b"next")).offset == aborted.offset + 2  # an abort marker between
