"""The ``spark`` session fixture: one SparkSession for the whole test session (``local[2]``,
UI off, 2 shuffle partitions) with the ``pyrdk`` source registered, stopped at the end;
and helpers for the Spark tests. Python workers run this interpreter and find this
checkout of pyrdk first."""
import os
import sys

import pytest

from tests.conftest import server_unavailable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="session")
def spark():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession
    try:
        session = (SparkSession.builder.master("local[2]").appName("pyrdk-tests")
                   .config("spark.ui.enabled", "false")
                   .config("spark.ui.showConsoleProgress", "false")
                   .config("spark.sql.shuffle.partitions", "2")
                   .config("spark.default.parallelism", "2")
                   .config("spark.sql.session.timeZone", "UTC")
                   .config("spark.driver.memory", "512m")
                   .getOrCreate())
    except Exception as exc:
        server_unavailable("could not start a SparkSession (is Java installed?): %s" % exc)
    import pyrdk.spark
    pyrdk.spark.register(session)
    try:
        yield session
    finally:
        session.stop()


class Target:
    """A partitioner that sends each message to the partition id in ``.partition``."""
    partition = 0

    def __call__(self, partitions, key=None):
        return next(p for p in partitions if p.id == self.partition)


@pytest.fixture
def produce(client):
    """``produce(topic_name, records)``: records are ``(partition, key, value, headers,
    timestamp_ms)``, sent in batches (``linger_ms``), in order."""
    def produce(topic_name, records):
        target = Target()
        with client.topics[topic_name].get_producer(linger_ms=50, partitioner=target) as producer:
            for partition, key, value, headers, timestamp in records:
                target.partition = partition
                producer.produce(value, partition_key=key, headers=headers, timestamp=timestamp)
    return produce


def reader(spark, hosts, **options):
    """``spark.read.format("pyrdk")`` with the brokers and ``options`` set."""
    r = spark.read.format("pyrdk").option("kafka.bootstrap.servers", hosts)
    for key, value in options.items():
        r = r.option(key, value)
    return r
