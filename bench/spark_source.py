"""Rows per second of a Spark batch read through the ``pyrdk`` source.

    python -m bench.spark_source                      # a DevCluster, 1,000,000 records
    python -m bench.spark_source --hosts h:9092 --topic t --count 1000000

Creates a topic (4 partitions), produces ``count`` records of 100-byte values to it, then
times ``spark.read.format("pyrdk")...load()`` aggregated in Spark
(``count`` and ``sum(length(value))``, so every row crosses from the Python workers to
the JVM), once the Python workers are running.
"""
import argparse
import os
import sys
import time

VALUE_SIZE = 100


def fill(hosts, topic_name, count, partitions=4):
    """Create ``topic_name`` and produce ``count`` records of ``VALUE_SIZE`` bytes to it."""
    import pyrdk
    with pyrdk.KafkaClient(hosts=hosts) as client:
        client.cluster.create_topics([(topic_name, partitions, 1)])
        topic = client.topics[topic_name]
        value = b"x" * VALUE_SIZE
        with topic.get_producer(linger_ms=20, partitioner=pyrdk.partitioners.hashing_partitioner) as producer:
            for i in range(count):
                producer.produce(value, partition_key=b"%d" % (i % 1024))


def measure(spark, bootstrap_servers, topic, count, value_size=VALUE_SIZE):
    """Seconds and rows/s of one batch read of ``topic``, which must hold ``count`` records
    of ``value_size`` bytes."""
    from pyspark.sql import functions as F
    df = (spark.read.format("pyrdk").option("kafka.bootstrap.servers", bootstrap_servers)
          .option("subscribe", topic).load())
    spark.sparkContext.parallelize(range(2), 2).map(lambda x: x).count()  # start the Python workers
    start = time.monotonic()
    row = df.agg(F.count("*").alias("rows"), F.sum(F.length("value")).alias("bytes")).collect()[0]
    seconds = time.monotonic() - start
    if row.rows != count or row.bytes != count * value_size:
        raise RuntimeError("read %d rows (%d bytes), expected %d" % (row.rows, row.bytes, count))
    return {"rows": row.rows, "bytes": row.bytes, "seconds": seconds, "rows_per_s": row.rows / seconds}


def session(master="local[2]"):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master(master).appName("pyrdk-bench")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    import pyrdk.spark
    pyrdk.spark.register(spark)
    return spark


def run(hosts, topic, count, master):
    t = time.monotonic()
    fill(hosts, topic, count)
    print("filled %s with %d records of %d bytes in %.1f s" % (topic, count, VALUE_SIZE, time.monotonic() - t))
    spark = session(master)
    try:
        result = measure(spark, hosts, topic, count)
    finally:
        spark.stop()
    print("spark batch read via pyrdk (%s): %d rows in %.2f s: %.0f rows/s"
          % (master, result["rows"], result["seconds"], result["rows_per_s"]))
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", help="bootstrap servers (default: start a DevCluster)")
    parser.add_argument("--topic", help="a new topic to fill (default: bench-spark-<time>)")
    parser.add_argument("--count", type=int, default=1000000)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args(argv)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    args.topic = args.topic or "bench-spark-%d" % time.time()
    if args.hosts:
        run(args.hosts, args.topic, args.count, args.master)
        return 0
    from pyrdk.testing import DevCluster
    with DevCluster() as cluster:
        run(cluster.hosts, args.topic, args.count, args.master)
    return 0


if __name__ == "__main__":
    sys.exit(main())
