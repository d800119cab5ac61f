"""The programs in examples/ run against a real broker and say what they did."""
import importlib.util
import os
import subprocess
import sys

import pytest

from tests.fix_kafka import unique_name

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")

pytestmark = pytest.mark.kafka


def run(name, *args):
    result = subprocess.run([sys.executable, os.path.join(EXAMPLES, name)] + list(args),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_quickstart(kafka_hosts, topic_name):
    out = run("quickstart.py", "--hosts", kafka_hosts, "--topic", topic_name, "--count", "5000")
    assert "read 5000 messages" in out


def test_delivery_reports(kafka_hosts, topic_name):
    out = run("delivery_reports.py", "--hosts", kafka_hosts, "--topic", topic_name, "--count", "500")
    assert "delivered 500, failed 0" in out


def load(name):
    """An example as a module, to call its functions in this process."""
    spec = importlib.util.spec_from_file_location(name[:-len(".py")], os.path.join(EXAMPLES, name))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.spark
def test_spark_pipeline(kafka_hosts, client, spark, tmp_path):
    from pyrdk.testing import demo
    pipeline = load("spark_pipeline.py")
    prefix = unique_name("example")
    client.cluster.create_topics([(prefix, 2, 1)])
    views = demo.PageViews(1700000000000 // 60000 * 60000)
    demo.produce(client.topics[prefix], views.make(500, 120000))
    assert pipeline.batch_job(spark, kafka_hosts, prefix, prefix, top=3) == 500
    query = pipeline.stream_job(spark, kafka_hosts, prefix, prefix + "-checkouts", str(tmp_path), once=True)
    query.awaitTermination(120)
    assert not query.isActive
    out = demo.read_back(spark, kafka_hosts, prefix + "-top-users")
    assert [(r["user"], r["views"]) for r in out] == views.top_users(3)
    per_minute = demo.read_back(spark, kafka_hosts, prefix + "-per-minute")
    assert sum(r["views"] for r in per_minute) == 500

@pytest.mark.zookeeper
def test_worker_fleet_processes_the_topic(kafka_hosts, zookeeper_chroot, topic_name):
    from pyrdk import KafkaClient
    from pyrdk.partitioners import hashing_partitioner
    with KafkaClient(hosts=kafka_hosts) as client:
        client.cluster.create_topics([(topic_name, 4, 1)])
        with client.topics[topic_name].get_producer(linger_ms=5, partitioner=hashing_partitioner) as p:
            for i in range(2000):
                p.produce(b"%d" % i, partition_key=b"k%d" % i)
    command = [sys.executable, os.path.join(EXAMPLES, "worker_fleet.py"), "--hosts", kafka_hosts,
               "--zookeeper", zookeeper_chroot, "--topic", topic_name, "--group", topic_name,
               "--idle-exit-ms", "4000"]
    workers = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for _ in range(2)]
    outputs = []
    for worker in workers:
        try:
            out, err = worker.communicate(timeout=120)
        finally:
            worker.kill()
        assert worker.returncode == 0, err
        outputs.append(out)
    processed = [int(out.rsplit("processed ", 1)[1].split()[0]) for out in outputs]
    assert sum(processed) >= 2000
    assert all("holding partitions" in out for out in outputs)
