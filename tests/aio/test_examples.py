"""The programs of the Examples chapter of aiokafka's documentation (tests/aio/examples/, with
their imports on pyrdk.aio), each run as its own process against the broker, their output
checked against what the docs show. The topics are the docs' own: this module makes them."""
import asyncio
import glob
import json
import os
import re
import subprocess
import sys

import pytest

import pyrdk.aio as aiokafka
from pyrdk.aio.structs import TopicPartition
from tests.aio.test_consumer import drain
from tests.fix_kafka import commit, group_offsets, make_topic

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(180)]

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "examples")
PATIENCE_S = 90  # a bound on each program: reaching it means it hung


def start(name, *args, hosts, **env):
    return subprocess.Popen([sys.executable, os.path.join(EXAMPLES, name)] + list(args),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, BOOTSTRAP_SERVERS=hosts, **env))


def finish(proc):
    """The program's output lines, once it has exited successfully."""
    try:
        out, err = proc.communicate(timeout=PATIENCE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError("the example did not finish: %s" % err[-3000:])
    assert proc.returncode == 0, err[-3000:]
    return out.splitlines()


def run(name, *args, hosts, **env):
    return finish(start(name, *args, hosts=hosts, **env))


def topic_of(client, name, partitions):
    """The docs' topic ``name``, made with ``partitions`` partitions unless it exists."""
    client.update_cluster()
    if name.encode() in client.topics:
        return client.topics[name]
    return make_topic(client, name, partitions)


def read(hosts, topic, partitions, count, **kwargs):
    """``count`` records of ``topic`` read from the start: [ConsumerRecord]."""
    async def main():
        consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=hosts, auto_offset_reset="earliest", **kwargs)
        async with consumer:
            consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
            return await drain(consumer, count)
    return asyncio.run(main())


def test_sources_import_pyrdk_aio_only():
    for path in glob.glob(os.path.join(EXAMPLES, "*.py")):
        with open(path) as f:
            imports = [line for line in f if re.match(r"\s*(from|import) ", line)]
        assert any("pyrdk.aio" in line for line in imports), path
        assert not any(re.search(r"\b(aiokafka|kafka)\b", line.split("#")[0]) for line in imports), path


def test_serialization_and_compression_then_manual_commit(kafka_hosts, client):
    foobar = topic_of(client, "foobar", 1)
    run("serialization_producer.py", hosts=kafka_hosts)
    assert run("serialization_consumer.py", hosts=kafka_hosts) == [
        "<class 'dict'> {'a': 123.4, 'b': 'some string'}", "<class 'list'> [1, 2, 3, 4]"]
    with foobar.get_sync_producer() as producer:  # ten records for the manual commit consumer
        for i in range(8):
            producer.produce(b"%d" % i)
    assert run("manual_commit_consumer.py", hosts=kafka_hosts) == []
    assert group_offsets(foobar, b"some-consumer-group") == {0: 10}


def test_custom_partitioner(kafka_hosts, client):
    # foobar has one partition here (the docs': ten), for the serialization example's single
    # getmany(); test_producer.py checks the partitioner on four
    topic_of(client, "foobar", 1)
    lines = run("custom_partitioner.py", hosts=kafka_hosts)
    assert lines == ["1 produced in partition: 0", "2 produced in partition: 0", "3 produced in partition: 0"]


@pytest.mark.slow  # seconds of group coordination or timeouts: the C pass runs it, make soak the pure one
def test_group_consumer(kafka_hosts, client):
    make_topic(client, "some-topic", 2)
    consumers = [start("group_consumer.py", "TEST_GROUP", "2", hosts=kafka_hosts),
                 start("group_consumer.py", "TEST_GROUP", "2", hosts=kafka_hosts),
                 start("group_consumer.py", "OTHER_GROUP", "4", hosts=kafka_hosts)]
    for partition, message in (("0", "message #1"), ("0", "message #2"), ("1", "message #3"),
                               ("1", "message #4")):
        assert run("group_producer.py", partition, message, hosts=kafka_hosts) == []
    first, second, other = [finish(proc) for proc in consumers]
    expected = {"Message from partition [0]: b'message #1'", "Message from partition [0]: b'message #2'",
                "Message from partition [1]: b'message #3'", "Message from partition [1]: b'message #4'"}
    # TEST_GROUP's two members share the four records, OTHER_GROUP reads them all
    assert len(first) == len(second) == 2 and set(first) | set(second) == expected
    assert len(other) == 4 and set(other) == expected
    for lines in (first, second, other):  # each partition's records in order
        assert [line for line in lines if "[0]" in line] == sorted(line for line in lines if "[0]" in line)
        assert [line for line in lines if "[1]" in line] == sorted(line for line in lines if "[1]" in line)


def test_ssl_consume_produce(tls_listener, tls_certs):
    from pyrdk import KafkaClient
    from pyrdk.connection import SslConfig
    listener = tls_listener(tls_certs.broker, client_cafile=tls_certs.ca.certfile)
    client_cert = tls_certs.client
    ssl_config = SslConfig(cafile=tls_certs.ca.certfile, certfile=client_cert.certfile,
                           keyfile=client_cert.keyfile, password=tls_certs.client_password)
    with KafkaClient(hosts=listener.bootstrap_servers, ssl_config=ssl_config) as ssl_client:
        ssl_client.cluster.create_topics([("my_topic", 1, 1)])
    lines = run("ssl_consume_produce.py", hosts=listener.bootstrap_servers, CAFILE=tls_certs.ca.certfile,
                CERTFILE=client_cert.certfile, KEYFILE=client_cert.keyfile, KEY_PASSWORD=tls_certs.client_password)
    assert len(lines) == 1 and lines[0].startswith(
        "Success RecordMetadata(topic='my_topic', partition=0, topic_partition=TopicPartition(topic='my_topic', "
        "partition=0), offset=0, ")
    assert "ConsumerRecord(topic='my_topic', partition=0, offset=0, " in lines[0]
    assert "value=b'Super Message'" in lines[0]


def test_local_state_consumer(kafka_hosts, client, tmp_path):
    topic = topic_of(client, "test", 3)
    keys = ["123", "9999", "1111", "4444", "123123", "5555", "88891823", "2", "321", "777", "124"]
    with topic.get_sync_producer(partitioner=lambda partitions, key: partitions[int(key) % 3]) as producer:
        for key in keys:
            producer.produce(b"v", partition_key=key.encode())
    # A state left by an earlier run: partition 0's first two records (123, 9999) are counted;
    # the listener seeks past them, and to the beginning of the other two partitions.
    with open(tmp_path / "my-partition-state-test-0.json", "w") as f:
        json.dump({"last_offset": 1, "counts": {"123": 1, "9999": 1}}, f)
    lines = run("local_state_consumer.py", hosts=kafka_hosts, MAX_MESSAGES=str(len(keys) - 2),
                STATE_DIR=str(tmp_path))
    assert lines[0] == "Revoked set()"  # as the docs show: aiokafka's first rebalance revokes nothing
    assigned = [line for line in lines if line.startswith("Assigned {")]
    assert len(assigned) == 1 and assigned[0].count("TopicPartition(") == 3
    assert all("TopicPartition(topic='test', partition=%d)" % p in assigned[0] for p in range(3))
    processed = [line for line in lines if line.startswith("Process ")]
    for p in range(3):  # each partition's records in order, from where the state says
        assert ["Process TopicPartition(topic='test', partition=%d) %s" % (p, k) for k in keys[p == 0 and 2:]
                if int(k) % 3 == p] == [line for line in processed if "partition=%d)" % p in line]
    assert len(processed) == len(keys) - 2


def test_batch_producer(kafka_hosts, client):
    make_topic(client, "my_topic", 3)
    lines = run("batch_produce.py", hosts=kafka_hosts)
    sent = [re.fullmatch(r"(\d+) messages sent to partition (\d)", line) for line in lines]
    assert all(sent) and len(sent) >= 2, lines
    assert sum(int(m.group(1)) for m in sent) == 1000
    assert {int(m.group(2)) for m in sent} <= {0, 1, 2}
    records = read(kafka_hosts, "my_topic", 3, 1000)
    assert sorted(r.value for r in records) == sorted(b"Test message %d" % i for i in range(1000))


def test_transactional_consume_process_produce(kafka_hosts, client):
    in_topic = make_topic(client, "in_topic", 1)
    make_topic(client, "out_topic", 1)
    minute = 1_600_000_020_000 // 60_000 * 60_000
    with in_topic.get_sync_producer() as producer:
        for i in range(20):  # two keys over two minutes
            producer.produce(b"v", partition_key=b"k%d" % (i % 2), timestamp=minute + (i // 10) * 60_000)
    # The program's consumer reads from the latest offset when its group has committed none:
    # the group starts at the beginning, as if it had processed nothing yet.
    commit(in_topic, b"processing-group", {0: 0})
    assert run("transactional_process.py", hosts=kafka_hosts, MAX_MESSAGES="20") == []
    out = read(kafka_hosts, "out_topic", 1, 4, isolation_level="read_committed")
    assert sum(int(r.value) for r in out) == 20
    assert {(r.key, r.timestamp) for r in out} <= {(k, minute + m * 60_000) for k in (b"k0", b"k1") for m in (0, 1)}
    assert group_offsets(in_topic, b"processing-group") == {0: 20}
