"""The settings each client is measured with besides its defaults ("tuned"), in one place,
so that the table, bench/README.md and the code agree. pyrdk is measured with its defaults."""

TUNED = {
    # Bigger batches, a deeper local queue, a short linger: fewer, fuller requests.
    "confluent.produce": {
        "linger.ms": 100,
        "batch.size": 1000000,
        "batch.num.messages": 100000,
        "queue.buffering.max.messages": 1000000,
    },
    # librdkafka's fetch.queue.backoff.ms (1000 ms) stalls a consumer that drains its
    # prefetch queue faster than the broker fills it; bigger fetches, deeper prefetch.
    "confluent.consume": {
        "fetch.queue.backoff.ms": 10,
        "fetch.max.bytes": 52428800,
        "max.partition.fetch.bytes": 10485760,
        "queued.min.messages": 200000,
    },
    "kafka-python.produce": {"linger_ms": 100, "batch_size": 1000000, "acks": 1,
                             "max_request_size": 10485760},
    "kafka-python.consume": {"fetch_max_bytes": 52428800, "max_partition_fetch_bytes": 10485760,
                             "max_poll_records": 10000},
    "aiokafka.produce": {"linger_ms": 100, "max_batch_size": 1000000, "acks": 1,
                         "max_request_size": 10485760},
    "aiokafka.consume": {"fetch_max_bytes": 52428800, "max_partition_fetch_bytes": 10485760},
}

# The native C loop runs with the tuned librdkafka settings: it is the physical limit.
NATIVE = {"produce": TUNED["confluent.produce"], "consume": TUNED["confluent.consume"]}

# The consumers' topics are filled by the native producer with this on top of its settings:
# librdkafka's sticky partitioner keeps a partition for sticky.partitioning.linger.ms (twice
# linger.ms: 200 ms) and so put a short fill's messages in one or two of the four partitions.
FILL = {"sticky.partitioning.linger.ms": 0}

# Latency at a steady rate: both clients linger 5 ms (librdkafka's default linger.ms);
# pyrdk's pykafka default linger_ms=5000 is built for throughput, not for latency.
LATENCY = {"pyrdk.produce": {"linger_ms": 5}}
