"""One benchmark case in its own process, so that its peak RSS is its own.

``python bench/worker.py '{"case": ..., "brokers": ..., "topic": ..., "count": ..., "size": ...}'``
prints one JSON line: ``{"count", "bytes", "seconds", "cpu_seconds"}`` (plus what the case
adds, and ``implementation``: which pyrdk core ran, when the case imported pyrdk). Producers
are timed from the first produce call to the end of the flush; consumers from their first call
for messages, made just after their partitions are assigned (so the first fetch is inside the
measure), to the last message. ``cpu_seconds`` is the process's CPU time (all its threads,
``time.process_time()``) over the same section. Every consumer reads every message's value.

Each consumer reads a fresh topic from offset 0, given as such: librdkafka looks a logical
offset (OFFSET_BEGINNING) up first, and its first fetch then waits its whole
``fetch.wait.max.ms`` (pyrdk looks offsets up itself, before its clock starts). The
``pyrdk-py.*`` cases are the ``pyrdk.*`` ones; the runner starts them with ``PYRDK_IMPL=python``.
"""
import asyncio
import json
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from settings import LATENCY, TUNED  # noqa: E402

CASES = {}
BATCH = 1000  # consumers that take batches ask for this many at a time
DEADLINE_S = 300


def case(name):
    def register(fn):
        CASES[name] = fn
        return fn
    return register


def _clock():
    """Where a case's timed section starts: (wall clock, the process's CPU time)."""
    return time.perf_counter(), time.process_time()


def _since(start):
    """The timed section from ``start`` to now: wall seconds and the process's CPU seconds
    (all its threads: CLOCK_PROCESS_CPUTIME_ID)."""
    wall, cpu = time.perf_counter(), time.process_time()
    return dict(seconds=wall - start[0], cpu_seconds=cpu - start[1])


def _result(count, nbytes, span, **extra):
    return dict(count=count, bytes=nbytes, **span, **extra)


# -- pyrdk (its defaults only) -------------------------------------------------------------------

def _pyrdk_topic(brokers, topic):
    import pyrdk
    client = pyrdk.KafkaClient(hosts=brokers)
    return client.topics[topic]


@case("pyrdk.produce")
def pyrdk_produce(brokers, topic, count, size, **_):
    producer = _pyrdk_topic(brokers, topic).get_producer()
    value = b"x" * size
    produce = producer.produce
    start = _clock()
    for _ in range(count):
        produce(value)
    producer.flush()
    span = _since(start)
    producer.stop()
    return _result(count, count * size, span)


@case("pyrdk.produce_batch")
def pyrdk_produce_batch(brokers, topic, count, size, **_):
    producer = _pyrdk_topic(brokers, topic).get_producer()
    values = [b"x" * size] * BATCH
    start = _clock()
    for _ in range(count // BATCH):
        producer.produce_batch(values)
    producer.produce_batch(values[:count % BATCH])
    producer.flush()
    span = _since(start)
    producer.stop()
    return _result(count, count * size, span)


def _pyrdk_consumer(brokers, topic):
    # consumer_timeout_ms only ends a run that would otherwise wait for ever.
    return _pyrdk_topic(brokers, topic).get_simple_consumer(consumer_timeout_ms=30000)


@case("pyrdk.consume")
def pyrdk_consume(brokers, topic, count, size, **_):
    consumer = _pyrdk_consumer(brokers, topic)
    got = nbytes = 0
    start = _clock()
    for msg in consumer:
        nbytes += len(msg.value)
        got += 1
        if got == count:
            break
    span = _since(start)
    consumer.stop()
    return _result(got, nbytes, span)


@case("pyrdk.consume_batch")
def pyrdk_consume_batch(brokers, topic, count, size, **_):
    consumer = _pyrdk_consumer(brokers, topic)
    got = nbytes = 0
    deadline = time.monotonic() + DEADLINE_S
    start = _clock()
    while got < count and time.monotonic() < deadline:
        batch = consumer.consume_batch(BATCH)
        for msg in batch:
            nbytes += len(msg.value)
        got += len(batch)
    span = _since(start)
    consumer.stop()
    return _result(got, nbytes, span)


# -- confluent-kafka ------------------------------------------------------------------------------

def _confluent_produce(brokers, topic, count, size, config):
    import confluent_kafka
    producer = confluent_kafka.Producer(dict(config, **{"bootstrap.servers": brokers}))
    producer.list_topics(topic, timeout=10)
    value = b"x" * size
    produce, poll = producer.produce, producer.poll
    start = _clock()
    for _ in range(count):
        while True:
            try:
                produce(topic, value)
                break
            except BufferError:  # the local queue is full: serve reports, try again
                poll(0.01)
        poll(0)
    left = producer.flush(60)
    span = _since(start)
    if left:
        raise RuntimeError("%d messages not delivered" % left)
    return _result(count, count * size, span)


@case("confluent.produce")
def confluent_produce(brokers, topic, count, size, **_):
    return _confluent_produce(brokers, topic, count, size, {})


@case("confluent.produce.tuned")
def confluent_produce_tuned(brokers, topic, count, size, **_):
    return _confluent_produce(brokers, topic, count, size, TUNED["confluent.produce"])


def _confluent_consume(brokers, topic, count, config):
    import confluent_kafka
    consumer = confluent_kafka.Consumer(dict(config, **{
        "bootstrap.servers": brokers, "group.id": "bench-%d" % os.getpid(),
        "enable.auto.commit": False, "auto.offset.reset": "earliest"}))
    metadata = consumer.list_topics(topic, timeout=10).topics[topic]
    consumer.assign([confluent_kafka.TopicPartition(topic, p, 0) for p in metadata.partitions])
    got = nbytes = 0
    deadline = time.monotonic() + DEADLINE_S
    start = _clock()
    while got < count and time.monotonic() < deadline:
        batch = consumer.consume(BATCH, 1.0)
        for msg in batch:
            if msg.error() is None:
                nbytes += len(msg.value())
                got += 1
    span = _since(start)
    consumer.close()
    return _result(got, nbytes, span)


@case("confluent.consume")
def confluent_consume(brokers, topic, count, size, **_):
    return _confluent_consume(brokers, topic, count, {})


@case("confluent.consume.tuned")
def confluent_consume_tuned(brokers, topic, count, size, **_):
    return _confluent_consume(brokers, topic, count, TUNED["confluent.consume"])


# -- kafka-python ----------------------------------------------------------------------------------

@case("kafka-python.produce.tuned")
def kafka_python_produce(brokers, topic, count, size, **_):
    import kafka
    producer = kafka.KafkaProducer(bootstrap_servers=brokers, **TUNED["kafka-python.produce"])
    producer.partitions_for(topic)
    value = b"x" * size
    send = producer.send
    start = _clock()
    for _ in range(count):
        send(topic, value)
    producer.flush()
    span = _since(start)
    producer.close()
    return _result(count, count * size, span)


@case("kafka-python.consume.tuned")
def kafka_python_consume(brokers, topic, count, size, partitions, **_):
    import kafka
    consumer = kafka.KafkaConsumer(bootstrap_servers=brokers, enable_auto_commit=False,
                                   **TUNED["kafka-python.consume"])
    parts = [kafka.TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(parts)
    for part in parts:
        consumer.seek(part, 0)
    got = nbytes = 0
    deadline = time.monotonic() + DEADLINE_S
    start = _clock()
    while got < count and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=1000).values():
            for msg in records:
                nbytes += len(msg.value)
                got += 1
    span = _since(start)
    consumer.close()
    return _result(got, nbytes, span)


# -- aiokafka -------------------------------------------------------------------------------------------

def _aio_produce(aiokafka, brokers, topic, count, size):
    async def run():
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=brokers, **TUNED["aiokafka.produce"])
        await producer.start()
        await producer.partitions_for(topic)
        value = b"x" * size
        send = producer.send
        start = _clock()
        for _ in range(count):
            await send(topic, value)
        await producer.flush()
        span = _since(start)
        await producer.stop()
        return _result(count, count * size, span)
    return asyncio.run(run())


def _aio_consume(aiokafka, brokers, topic, count, partitions):
    async def run():
        consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=brokers, enable_auto_commit=False,
                                             **TUNED["aiokafka.consume"])
        await consumer.start()
        parts = [aiokafka.TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(parts)
        for part in parts:
            consumer.seek(part, 0)
        got = nbytes = 0
        deadline = time.monotonic() + DEADLINE_S
        start = _clock()
        while got < count and time.monotonic() < deadline:
            for records in (await consumer.getmany(timeout_ms=1000, max_records=10000)).values():
                for msg in records:
                    nbytes += len(msg.value)
                    got += 1
        span = _since(start)
        await consumer.stop()
        return _result(got, nbytes, span)
    return asyncio.run(run())


@case("aiokafka.produce.tuned")
def aiokafka_produce(brokers, topic, count, size, **_):
    import aiokafka
    return _aio_produce(aiokafka, brokers, topic, count, size)


@case("aiokafka.consume.tuned")
def aiokafka_consume(brokers, topic, count, size, partitions, **_):
    import aiokafka
    return _aio_consume(aiokafka, brokers, topic, count, partitions)


# The same programs with ``import pyrdk.aio as aiokafka``, the same settings.
@case("pyrdk-aio.produce.tuned")
def pyrdk_aio_produce(brokers, topic, count, size, **_):
    import pyrdk.aio as aiokafka
    return _aio_produce(aiokafka, brokers, topic, count, size)


@case("pyrdk-aio.consume.tuned")
def pyrdk_aio_consume(brokers, topic, count, size, partitions, **_):
    import pyrdk.aio as aiokafka
    return _aio_consume(aiokafka, brokers, topic, count, partitions)


# -- Spark ------------------------------------------------------------------------------------------

@case("pyrdk.spark.read")
def pyrdk_spark_read(brokers, topic, count, size, **_):
    """A Spark batch read through the ``pyrdk`` source (``bench/spark_source.py``), local[2]:
    the median of 3 warm queries after the first (cold) one, in one session, the JVM's and the
    Python workers' start not counted; the cold rate and the in-memory Arrow source's (the
    ceiling of Spark's Python data source path) in its note. Its CPU time is spread over the
    JVM and Spark's Python workers, other processes than this one: not measured."""
    from bench import spark_source  # by its package name, which Spark's Python workers import too
    spark = spark_source.session()
    try:
        r = spark_source.measure(spark, brokers, topic, count, value_size=size)
    finally:
        spark.stop()
    note = "warm; cold %.0f/s; in-memory Arrow source %.0f/s warm (%.2f×)" % (
        r["cold"], r["memory_warm"], r["warm"] / r["memory_warm"])
    return _result(r["rows"], r["bytes"], dict(seconds=count / r["warm"], cpu_seconds=None), note=note)


@case("pyrdk.spark.write")
def pyrdk_spark_write(brokers, topic, count, size, **_):
    """A Spark batch write of ``count`` values through the ``pyrdk`` sink, local[2]: the median
    of 3 warm writes after the first (cold) one; the cold rate and pyrdk's own ``produce_batch``
    of the same values in its note. CPU time: not measured (other processes)."""
    from bench import spark_source  # by its package name, which Spark's Python workers import too
    spark = spark_source.session()
    try:
        r = spark_source.measure_writes(spark, brokers, count, size)
    finally:
        spark.stop()
    note = "warm; cold %.0f/s; produce_batch %.0f/s (%.2f×)" % (r["cold"], r["produce_batch"],
                                                              r["warm"] / r["produce_batch"])
    return _result(count, count * size, dict(seconds=count / r["warm"], cpu_seconds=None), note=note)


@case("pyrdk.spout.storm")
def pyrdk_spout_storm(brokers, topic, count, size, **_):
    """Tuples/s through :class:`pyrdk.spout.storm.StormKafkaSpout` over Storm's multi-lang
    protocol, driven as Storm's ShellSpout drives it (``pyrdk.testing.multilang``): ``next``,
    its ``emit`` (key and value as JSON text), and the tuple's ``ack`` at once. The spout runs
    in its own process (``bench/storm_spout.py``), reading with a SimpleConsumer; the CPU
    time is split between the two processes: not measured."""
    from pyrdk.testing.multilang import ShellSpout
    conf = {"pyrdk.hosts": brokers, "pyrdk.topic": topic, "pyrdk.consumer": "simple",
            "pyrdk.consumer_group": "bench-spout-%d" % os.getpid()}
    env = dict(os.environ, PYTHONPATH=os.path.dirname(HERE))
    spout = ShellSpout([sys.executable, os.path.join(HERE, "storm_spout.py")], conf, env=env)
    got = nbytes = 0
    try:
        spout.activate()
        deadline = time.monotonic() + DEADLINE_S
        start = _clock()
        while got < count and time.monotonic() < deadline:
            for values, tuple_id in spout.next():
                nbytes += len(values[1])
                got += 1
                spout.ack(tuple_id)
        span = dict(_since(start), cpu_seconds=None)
    finally:
        spout.close()
    return _result(got, nbytes, span)


# -- latency: produce call -> consumer receives, in one process -------------------------------------

def _paced(rate, duration_s, send, stop):
    """Call ``send(i)`` ``rate`` times a second for ``duration_s``, catching up in small bursts."""
    start = time.perf_counter()
    total = int(rate * duration_s)
    i = 0
    while i < total and not stop.is_set():
        due = min(total, int((time.perf_counter() - start) * rate) + 1)
        while i < due:
            send(i)
            i += 1
        time.sleep(0.0005)
    return i


def _stamped(size):
    pad = b"x" * max(0, size - 8)
    return lambda: time.perf_counter_ns().to_bytes(8, "little") + pad


def _latencies(received):
    lat = sorted(received)
    if not lat:
        raise RuntimeError("no message received")
    pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] / 1e6  # noqa: E731
    return dict(p50_ms=pick(0.50), p99_ms=pick(0.99), max_ms=lat[-1] / 1e6, received=len(received))


def _latency_run(rate, duration_s, size, send, flush, poll_values):
    stamp = _stamped(size)
    # One message makes the round trip first: connections, metadata and the consumer's
    # first fetch are not part of the measure.
    send(b"warm-up")
    deadline = time.monotonic() + 30
    while b"warm-up" not in poll_values():
        if time.monotonic() > deadline:
            raise RuntimeError("the warm-up message did not come back within 30 s")
    stop = threading.Event()
    sent = []
    producer = threading.Thread(target=lambda: sent.append(_paced(rate, duration_s, lambda i: send(stamp()),
                                                                   stop)))
    received = []
    producer.start()
    deadline = time.monotonic() + duration_s + 30
    try:
        while (producer.is_alive() or len(received) < sent[0]) and time.monotonic() < deadline:
            for value in poll_values():
                received.append(time.perf_counter_ns() - int.from_bytes(value[:8], "little"))
    finally:
        stop.set()
        producer.join()
        flush()
    return dict(_latencies(received), count=sent[0], rate=rate)


@case("latency.pyrdk")
def latency_pyrdk(brokers, topic, count, size, rate=10000, **_):
    topic_ = _pyrdk_topic(brokers, topic)
    consumer = topic_.get_simple_consumer(consumer_timeout_ms=100)
    producer = topic_.get_producer(**LATENCY["pyrdk.produce"])

    def poll_values():
        return [m.value for m in consumer.consume_batch(BATCH, 100)]
    out = _latency_run(rate, count / rate, size, producer.produce, producer.flush, poll_values)
    producer.stop()
    consumer.stop()
    return out


@case("latency.confluent")
def latency_confluent(brokers, topic, count, size, rate=10000, **_):
    import confluent_kafka
    producer = confluent_kafka.Producer({"bootstrap.servers": brokers})
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": brokers, "group.id": "bench-%d" % os.getpid(),
        "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    metadata = consumer.list_topics(topic, timeout=10).topics[topic]
    consumer.assign([confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING)
                     for p in metadata.partitions])

    def send(value):
        producer.produce(topic, value)
        producer.poll(0)

    def poll_values():
        return [m.value() for m in consumer.consume(BATCH, 0.1) if m.error() is None]
    out = _latency_run(rate, count / rate, size, send, producer.flush, poll_values)
    consumer.close()
    return out


# -- memory: RSS while producing, then consuming, 5,000,000 messages (the runner samples it) ----------

@case("memory.pyrdk")
def memory_pyrdk(brokers, topic, count, size, **_):
    produced = pyrdk_produce(brokers, topic, count, size)
    print("PHASE consume", flush=True)
    consumed = pyrdk_consume(brokers, topic, count, size)
    return dict(produce=produced, consume=consumed, count=count, bytes=count * size,
                seconds=produced["seconds"] + consumed["seconds"])


# The pure-Python core's rows run the same functions; the runner sets PYRDK_IMPL=python.
for _name in ("produce", "produce_batch", "consume", "consume_batch"):
    CASES["pyrdk-py." + _name] = CASES["pyrdk." + _name]


def implementation():
    """Which pyrdk core ran ("c" or "python"), None if the case did not import pyrdk. A pyrdk
    that names none has only the C one."""
    if "pyrdk" not in sys.modules:
        return None
    import importlib
    try:
        return str(importlib.import_module("pyrdk.core").implementation)
    except (ImportError, AttributeError):
        pass
    import pyrdk
    for get in (lambda: pyrdk.implementation, lambda: pyrdk.librdkafka_version().implementation):
        try:
            return str(get())
        except AttributeError:
            pass
    return "c"


def main():
    args = json.loads(sys.argv[1])
    fn = CASES[args.pop("case")]
    result = fn(**args)
    result["implementation"] = implementation()
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
