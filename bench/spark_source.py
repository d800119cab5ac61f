"""Rows per second through the ``pyrdk`` Spark source and sink, beside their ceilings.

    python -m bench.spark_source                     # a DevCluster; 100 B, 1 KB and 10 KB
    python -m bench.spark_source --scale 0.1         # ten times fewer records
    python -m bench.spark_source --hosts h:9092 --sizes 100

In one Spark session (``local[2]``), for each value size:

- reads: a topic (4 partitions) filled with the records, read with
  ``spark.read.format("pyrdk")`` and aggregated in Spark (``count`` and
  ``sum(length(value))``, so every row crosses from the Python workers to the JVM): the
  first, cold query, then the median of 3 warm ones; and the same for ``MemorySource``, a
  trivial Python data source of the same schema, partitions and sizes that yields ready-made
  Arrow record batches: the ceiling of Spark's Python data source path on this machine.
- writes: ``spark.range(n)`` as values of that size written with
  ``df.write.format("pyrdk")`` (cold, then the median of 3 warm), beside pyrdk's own
  ``produce_batch`` of the same values from this process (median of 3).
- Spark's own task metrics of the last warm read and write, from the session's monitoring
  REST API (``/api/v1/.../stages``, the UI on a free port): executor run time, the JVM's CPU
  and GC time, task (de)serialization, summed over the query's tasks; the run time off the
  JVM's CPU is mostly the wait for the Python workers.
"""
import argparse
import json
import os
import statistics
import sys
import time
import urllib.request

PARTITIONS = 4
COUNTS = {100: 1000000, 1024: 300000, 10240: 50000}  # records per size at --scale 1
WARM_RUNS = 3
ARROW_ROWS = 10000  # rows per record batch, as the pyrdk source yields them


def fill(hosts, topic_name, count, size, partitions=PARTITIONS):
    """Create ``topic_name`` and produce ``count`` records of ``size`` bytes to it, keys
    spreading them over the partitions."""
    import pyrdk
    with pyrdk.KafkaClient(hosts=hosts) as client:
        client.cluster.create_topics([(topic_name, partitions, 1)])
        topic = client.topics[topic_name]
        value = b"x" * size
        with topic.get_producer(linger_ms=20, partitioner=pyrdk.partitioners.hashing_partitioner) as producer:
            for i in range(count):
                producer.produce(value, partition_key=b"%d" % (i % 1024))


def memory_source():
    """``MemorySource``, the ``pyrdk_bench_memory`` format: ``rows`` records of ``size``-byte
    values over ``partitions`` input partitions, in the pyrdk source's schema, as Arrow batches
    made once per Python worker and yielded again on every read."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    from pyrdk.spark.source import SCHEMA

    class MemoryReader(DataSourceReader):
        def __init__(self, options):
            self.rows, self.size = int(options["rows"]), int(options["size"])
            self.partitions_ = int(options.get("partitions", PARTITIONS))

        def partitions(self):
            share = -(-self.rows // self.partitions_)
            return [InputPartition((i, min(share, self.rows - i * share))) for i in range(self.partitions_)]

        def read(self, partition):
            pid, rows = partition.value
            batch = _ready_batch(self.size, pid)
            while rows > 0:
                yield batch.slice(0, min(rows, batch.num_rows))
                rows -= batch.num_rows

    class MemorySource(DataSource):
        @classmethod
        def name(cls):
            return "pyrdk_bench_memory"

        def schema(self):
            return SCHEMA

        def reader(self, schema):
            return MemoryReader(self.options)

    return MemorySource


_READY = {}


def _ready_batch(size, pid):
    """ARROW_ROWS rows of ``size``-byte values in the source's Arrow schema (made once)."""
    if (size, pid) not in _READY:
        import pyarrow as pa

        from pyrdk.spark.fetch import arrow_schema
        n = ARROW_ROWS
        _READY[size, pid] = pa.RecordBatch.from_arrays(
            [pa.array([b"%d" % (i % 1024) for i in range(n)], pa.binary()), pa.array([b"x" * size] * n, pa.binary()),
             pa.array(["memory"] * n, pa.string()), pa.array([pid] * n, pa.int32()), pa.array(range(n), pa.int64()),
             pa.array([1700000000000000] * n, pa.timestamp("us", tz="UTC")), pa.array([0] * n, pa.int32())],
            schema=arrow_schema(False))
    return _READY[size, pid]


def _timed_read(df, count, size):
    from pyspark.sql import functions as F
    start = time.monotonic()
    row = df.agg(F.count("*").alias("rows"), F.sum(F.length("value")).alias("bytes")).collect()[0]
    seconds = time.monotonic() - start
    if row.rows != count or row.bytes != count * size:
        raise RuntimeError("read %d rows (%d bytes), expected %d of %d bytes" % (row.rows, row.bytes, count, size))
    return count / seconds


def cold_and_warm(run, spark=None, metrics=None):
    """``run()`` once (cold), then WARM_RUNS times: (cold, median of the warm ones). With
    ``metrics`` (a dict), it gets the Spark task metrics of the last warm run."""
    cold = run()
    warm = [run() for _ in range(WARM_RUNS - 1)]
    before = _stages(spark) if metrics is not None else None
    start = time.monotonic()
    warm.append(run())
    if metrics is not None:
        metrics.update(_task_metrics(spark, before, time.monotonic() - start))
    return cold, statistics.median(warm)


# Spark's own task metrics, from the session's monitoring REST API (the UI's /api/v1):
# summed over the stages a query ran, in seconds of task time (2 tasks at once on local[2]).
STAGE_METRICS = (("executorRunTime", 1e-3), ("executorCpuTime", 1e-9), ("jvmGcTime", 1e-3),
                 ("executorDeserializeTime", 1e-3), ("resultSerializationTime", 1e-3))


def _rest(spark, path):
    url = "%s/api/v1/applications/%s/%s" % (spark.sparkContext.uiWebUrl, spark.sparkContext.applicationId, path)
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.load(response)


def _stages(spark):
    """``{(stage id, attempt): stage}`` of the completed stages."""
    return {(s["stageId"], s["attemptId"]): s for s in _rest(spark, "stages?status=complete")}


def _task_metrics(spark, before, wall):
    """The metrics of the stages completed since ``before`` (the listener bus tells the REST
    API a moment after the job ends: wait until the count stays put)."""
    new, seen = {}, -1
    for _ in range(50):
        new = {k: s for k, s in _stages(spark).items() if k not in before}
        if new and len(new) == seen:
            break
        seen = len(new)
        time.sleep(0.2)
    out = {"wall": wall, "tasks": sum(s["numCompleteTasks"] for s in new.values())}
    for name, unit in STAGE_METRICS:
        out[name] = sum(s.get(name, 0) for s in new.values()) * unit
    return out


def metrics_line(what, size, m):
    """A row of the metrics table; its last column, the tasks' run time off the JVM's CPU, is
    mostly the wait for the Python workers (and, through them, the broker)."""
    return "| %s | %d B | %.2f | %d | %s | %.2f |" % (
        what, size, m["wall"], m["tasks"], " | ".join("%.2f" % m[name] for name, _ in STAGE_METRICS),
        m["executorRunTime"] - m["executorCpuTime"])


def measure(spark, bootstrap_servers, topic, count, value_size=100):
    """Rows/s of batch reads of ``topic`` (``count`` records of ``value_size`` bytes) through
    pyrdk and through MemorySource: ``{"cold", "warm", "memory_cold", "memory_warm"}``, and
    ``metrics``: Spark's task metrics of the last warm pyrdk read."""
    spark.sparkContext.parallelize(range(2), 2).map(lambda x: x).count()  # start the Python workers
    df = (spark.read.format("pyrdk").option("kafka.bootstrap.servers", bootstrap_servers)
          .option("subscribe", topic).load())
    metrics = {}
    cold, warm = cold_and_warm(lambda: _timed_read(df, count, value_size), spark, metrics)
    memory = (spark.read.format("pyrdk_bench_memory").option("rows", count).option("size", value_size).load())
    memory_cold, memory_warm = cold_and_warm(lambda: _timed_read(memory, count, value_size))
    return {"rows": count, "bytes": count * value_size, "cold": cold, "warm": warm, "memory_cold": memory_cold,
            "memory_warm": memory_warm, "metrics": metrics}


def measure_writes(spark, hosts, count, size):
    """Rows/s of batch writes of ``count`` values of ``size`` bytes through the pyrdk sink
    (cold, median of the warm) and of pyrdk's ``produce_batch`` of the same values; ``metrics``:
    Spark's task metrics of the last warm write."""
    import pyrdk
    from pyspark.sql import functions as F
    topic = "bench-spark-write-%d-%d" % (size, time.time())
    with pyrdk.KafkaClient(hosts=hosts) as client:
        client.cluster.create_topics([(topic, PARTITIONS, 1)])
        df = (spark.range(count, numPartitions=2)
              .select(F.expr("cast(repeat('x', %d) AS binary)" % size).alias("value")))

        def write():
            start = time.monotonic()
            df.write.format("pyrdk").mode("append").option("kafka.bootstrap.servers", hosts) \
                .option("topic", topic).save()
            return count / (time.monotonic() - start)

        metrics = {}
        cold, warm = cold_and_warm(write, spark, metrics)
        values = [b"x" * size] * count

        def produce_batch():
            with client.topics[topic].get_producer() as producer:
                start = time.monotonic()
                for i in range(0, count, ARROW_ROWS):
                    producer.produce_batch(values[i:i + ARROW_ROWS])
                producer.stop()  # every delivery
                return count / (time.monotonic() - start)

        batch = statistics.median(produce_batch() for _ in range(WARM_RUNS))
    return {"cold": cold, "warm": warm, "produce_batch": batch, "metrics": metrics}


def session(master="local[2]"):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master(master).appName("pyrdk-bench")
             .config("spark.ui.port", "0")  # the REST API of the task metrics, on a free port
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    import pyrdk.spark
    pyrdk.spark.register(spark)
    spark.dataSource.register(memory_source())
    return spark


def run(hosts, sizes, scale, master, writes=True):
    spark = session(master)
    lines, metric_lines = [], []
    try:
        for size in sizes:
            count = max(ARROW_ROWS, int(COUNTS.get(size, 100000) * scale))
            topic = "bench-spark-%d-%d" % (size, time.time())
            t = time.monotonic()
            fill(hosts, topic, count, size)
            print("filled %s with %d records of %d bytes in %.1f s" % (topic, count, size, time.monotonic() - t))
            r = measure(spark, hosts, topic, count, size)
            lines.append("| read | %d B | %d | %s | %s | %s | %s | %.2f |" % (
                size, count, _n(r["cold"]), _n(r["warm"]), _n(r["memory_cold"]), _n(r["memory_warm"]),
                r["warm"] / r["memory_warm"]))
            print(lines[-1], flush=True)
            metric_lines.append(metrics_line("read", size, r["metrics"]))
            if writes:
                w = measure_writes(spark, hosts, count, size)
                lines.append("| write | %d B | %d | %s | %s | produce_batch | %s | %.2f |" % (
                    size, count, _n(w["cold"]), _n(w["warm"]), _n(w["produce_batch"]),
                    w["warm"] / w["produce_batch"]))
                print(lines[-1], flush=True)
                metric_lines.append(metrics_line("write", size, w["metrics"]))
    finally:
        spark.stop()
    print("\nrows/s on %s, in one Spark session; warm: the median of %d queries after the first (cold)\n"
          % (master, WARM_RUNS))
    print("| path | size | rows | pyrdk cold | pyrdk warm | ceiling cold | ceiling warm | warm ÷ ceiling |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    print("\n".join(lines))
    print("\nSpark's task metrics of the last warm query (its REST API; seconds, summed over the query's "
          "tasks)\n")
    print("| query | size | wall | tasks | %s | run - JVM CPU |" % " | ".join(name for name, _ in STAGE_METRICS))
    print("|---|---:|---:|---:|%s" % ("---:|" * (len(STAGE_METRICS) + 1)))
    print("\n".join(metric_lines))
    return lines + metric_lines


def _n(x):
    return "{:,.0f}".format(x)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", help="bootstrap servers (default: start a DevCluster)")
    parser.add_argument("--sizes", default="100,1024,10240", help="value sizes in bytes, comma-separated")
    parser.add_argument("--scale", type=float, default=1.0, help="a multiple of the record counts %s" % COUNTS)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--no-writes", action="store_true")
    args = parser.parse_args(argv)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.hosts:
        run(args.hosts, sizes, args.scale, args.master, not args.no_writes)
        return 0
    from pyrdk.testing import DevCluster
    with DevCluster() as cluster:
        run(cluster.hosts, sizes, args.scale, args.master, not args.no_writes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
