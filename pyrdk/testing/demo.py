"""The dev-cluster demo, a page-view pipeline on Spark: ``python -m pyrdk.testing.demo``.

1. Starts a :class:`~pyrdk.testing.DevCluster` (``--hosts`` uses another cluster) and
   produces synthetic page views (user, url, time) with pyrdk's producer.
2. A Spark batch job reads them through the ``pyrdk`` source, counts views per url per
   minute and finds the top users, and writes both to output topics with the ``pyrdk`` sink.
3. A Spark streaming job reads the page views that arrive while it runs, a few
   micro-batches, and writes the checkout views to their own topic.
4. Reads the outputs back, prints a summary, and exits non-zero unless every count
   matches what was produced.

``examples/spark_pipeline.py`` is the same pipeline as a program to adapt to a real cluster.
"""
import argparse
import collections
import datetime
import json
import os
import random
import sys
import tempfile
import time

import pyrdk
from pyrdk.testing import DevCluster

URLS = ["/", "/search", "/products", "/products/1", "/products/2", "/products/3", "/cart",
        "/checkout", "/checkout/done", "/help"]
MINUTES = 10  # the page views' times spread over this many minutes
TOP = 10


class _Progress:
    """A tqdm bar, or a line every tenth of the way when tqdm is not installed."""

    def __init__(self, total, desc):
        self.total, self.desc, self.done, self._next = total, desc, 0, total // 10
        try:
            from tqdm import tqdm
        except ImportError:
            self._bar = None
        else:
            self._bar = tqdm(total=total, desc=desc, unit="msg", unit_scale=True, file=sys.stderr,
                             mininterval=0.5)

    def update(self, n):
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
        elif self.done >= self._next:
            print("%s: %d/%d" % (self.desc, self.done, self.total), file=sys.stderr, flush=True)
            self._next = self.done + max(self.total // 10, 1)

    def close(self):
        if self._bar is not None:
            self._bar.close()


class PageViews:
    """Synthetic page views and what the pipeline must find in them: views per (url,
    minute), views per user, checkout views. A few users are much busier than the rest."""

    def __init__(self, start_ms, seed=7, users=1000):
        self.start_ms = start_ms
        self._random = random.Random(seed)
        self._users = ["user-%04d" % i for i in range(users)]
        self._weights = [1.0 / (i + 1) for i in range(users)]
        self.per_minute = collections.Counter()
        self.per_user = collections.Counter()
        self.checkouts = 0

    def make(self, count, span_ms):
        """``count`` page views ``(key, value, timestamp_ms)``, their times spread over ``span_ms``."""
        users = self._random.choices(self._users, self._weights, k=count)
        urls = self._random.choices(URLS, k=count)
        out = []
        for i, (user, url) in enumerate(zip(users, urls)):
            ts = self.start_ms + i * span_ms // count
            self.per_minute[(url, ts // 60000 * 60000)] += 1
            self.per_user[user] += 1
            self.checkouts += url.startswith("/checkout")
            out.append((user.encode(), b'{"user":"%s","url":"%s"}' % (user.encode(), url.encode()), ts))
        return out

    def top_users(self, n=TOP):
        """The ``n`` busiest users, as the Spark job orders them (views, then name)."""
        return sorted(self.per_user.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


def produce(topic, views, desc="produce"):
    """Produce ``(key, value, timestamp_ms)`` views with a progress bar; the seconds taken."""
    progress = _Progress(len(views), desc)
    start = time.monotonic()
    try:
        with topic.get_producer(linger_ms=5, partitioner=pyrdk.partitioners.hashing_partitioner) as producer:
            for first in range(0, len(views), 1000):
                chunk = views[first:first + 1000]
                for key, value, ts in chunk:
                    producer.produce(value, partition_key=key, timestamp=ts)
                progress.update(len(chunk))
        # Leaving the with block stops the producer, which waits for every delivery.
    finally:
        progress.close()
    return time.monotonic() - start


def spark_session():
    """A local SparkSession whose Python workers run this interpreter and import this pyrdk."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    home = os.path.dirname(os.path.dirname(os.path.abspath(pyrdk.__file__)))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (home, os.environ.get("PYTHONPATH")) if p)
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").appName("pyrdk-demo")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").config("spark.sql.session.timeZone", "UTC")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def batch_job(spark, hosts, events, per_minute_topic, top_users_topic):
    """Read ``events``, write views per url per minute and the top users; the rows read."""
    from pyspark.sql import functions as F
    views = (spark.read.format("pyrdk").option("kafka.bootstrap.servers", hosts).option("subscribe", events)
             .load()
             .select(F.from_json(F.col("value").cast("string"), "user STRING, url STRING").alias("v"), "timestamp")
             .select("v.user", "v.url", "timestamp")
             .cache())
    per_minute = views.groupBy(F.date_trunc("minute", "timestamp").alias("minute"), "url").count()
    (per_minute.select(F.col("url").alias("key"),
                       F.to_json(F.struct(F.date_format("minute", "yyyy-MM-dd HH:mm").alias("minute"), "url",
                                          F.col("count").alias("views"))).alias("value"))
     .write.format("pyrdk").mode("append").option("kafka.bootstrap.servers", hosts)
     .option("topic", per_minute_topic).save())
    top = views.groupBy("user").count().orderBy(F.desc("count"), "user").limit(TOP)
    (top.select(F.col("user").alias("key"), F.to_json(F.struct("user", F.col("count").alias("views"))).alias("value"))
     .coalesce(1).write.format("pyrdk").mode("append").option("kafka.bootstrap.servers", hosts)
     .option("topic", top_users_topic).save())
    count = views.count()
    views.unpersist()
    return count


def stream_job(spark, hosts, events, checkouts_topic, checkpoint, max_per_trigger):
    """Start a query that copies checkout views arriving on ``events`` to ``checkouts_topic``."""
    from pyspark.sql import functions as F
    return (spark.readStream.format("pyrdk").option("kafka.bootstrap.servers", hosts).option("subscribe", events)
            .option("maxOffsetsPerTrigger", str(max_per_trigger)).load()
            .where(F.get_json_object(F.col("value").cast("string"), "$.url").startswith("/checkout"))
            .select("key", "value")
            .writeStream.format("pyrdk").option("kafka.bootstrap.servers", hosts)
            .option("topic", checkouts_topic).option("checkpointLocation", checkpoint).start())


def stream_while_producing(spark, hosts, topic, views, checkouts_topic, checkpoint):
    """Run the streaming job while ``views`` are produced to ``topic``, in micro-batches of
    a quarter of them at most; the rows each micro-batch read."""
    query = stream_job(spark, hosts, topic.name.decode(), checkouts_topic, checkpoint, max(len(views) // 4, 1))
    try:
        query.processAllAvailable()  # the stream starts at the end of the topic, before the new views
        produce(topic, views, "arrive")  # Spark runs micro-batches meanwhile, in its own threads
        query.processAllAvailable()
        return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    finally:
        query.stop()


def read_back(spark, hosts, topic):
    """The values of ``topic``, decoded from JSON (or raw bytes when not JSON)."""
    rows = (spark.read.format("pyrdk").option("kafka.bootstrap.servers", hosts).option("subscribe", topic)
            .load().select("value").collect())
    return [json.loads(r.value) for r in rows]


def check(old, new, per_minute, top_users, streamed, checkouts):
    """What the outputs got wrong (empty when all is well): ``old`` and ``new`` are the
    ``PageViews`` of the batch and the streaming job, ``streamed`` the rows the stream read."""
    problems = []
    got = {(r["url"], r["minute"]): r["views"] for r in per_minute}
    want = {(url, _minute(ms)): n for (url, ms), n in old.per_minute.items()}
    if got != want:
        wrong = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
        problems.append("views per url per minute: %d of %d counts differ (first: %s)"
                        % (len(wrong), len(want), wrong[:3]))
    if [(r["user"], r["views"]) for r in top_users] != old.top_users():
        problems.append("top users: got %s, expected %s" % (
            [(r["user"], r["views"]) for r in top_users], old.top_users()))
    total = sum(new.per_user.values())
    if streamed != total:
        problems.append("the stream read %d page views, expected %d" % (streamed, total))
    if checkouts != new.checkouts:
        problems.append("checkouts written by the stream: got %d, expected %d" % (checkouts, new.checkouts))
    return problems


def _minute(ms):
    return datetime.datetime.fromtimestamp(ms / 1000.0, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")


def summary(per_minute, top_users):
    """The summary tables, as text."""
    minutes = collections.defaultdict(list)
    for r in per_minute:
        minutes[r["minute"]].append((r["views"], r["url"]))
    lines = ["%-16s  %7s  %-16s %6s" % ("minute", "views", "busiest url", "views")]
    for minute in sorted(minutes):
        views, url = max(minutes[minute])
        lines.append("%-16s  %7d  %-16s %6d" % (minute, sum(v for v, _ in minutes[minute]), url, views))
    lines.append("")
    lines.append("%-4s  %-10s  %7s" % ("rank", "user", "views"))
    lines.extend("%-4d  %-10s  %7d" % (i, r["user"], r["views"]) for i, r in enumerate(top_users, 1))
    return "\n".join(lines)


def run(hosts, count, new_count, prefix, spark=None, checkpoint=None):
    """The whole pipeline against ``hosts``; the process exit status. Uses ``spark`` if
    given (and leaves it running), else starts and stops a local session."""
    started = time.monotonic()
    names = {what: "%s-%s" % (prefix, what) for what in ("views", "per-minute", "top-users", "checkouts")}
    client = pyrdk.KafkaClient(hosts=hosts)
    own_spark = spark is None
    try:
        client.cluster.create_topics([(names["views"], 4, 1), (names["per-minute"], 2, 1),
                                      (names["top-users"], 1, 1), (names["checkouts"], 2, 1)])
        topic = client.topics[names["views"]]
        start_ms = (int(time.time() * 1000) // 60000 - MINUTES) * 60000
        old = PageViews(start_ms)
        seconds = produce(topic, old.make(count, MINUTES * 60000))
        print("produced %d page views to %s in %.1f s (%.0f msgs/s)" % (count, names["views"], seconds,
                                                                         count / max(seconds, 1e-9)))
        if own_spark:
            spark = spark_session()
        from pyrdk.spark import register
        register(spark)
        t = time.monotonic()
        read = batch_job(spark, hosts, names["views"], names["per-minute"], names["top-users"])
        print("batch job: read %d page views, wrote views per url per minute and the top %d users in %.1f s"
              % (read, TOP, time.monotonic() - t))

        new = PageViews(start_ms + MINUTES * 60000, seed=8)
        t = time.monotonic()
        batches = stream_while_producing(spark, hosts, topic, new.make(new_count, 60000), names["checkouts"],
                                         checkpoint or tempfile.mkdtemp(prefix="pyrdk-demo-"))
        print("stream job: %d micro-batches read %d new page views (%s) in %.1f s"
              % (len(batches), sum(batches), ", ".join(map(str, batches)), time.monotonic() - t))

        per_minute = read_back(spark, hosts, names["per-minute"])
        top_users = read_back(spark, hosts, names["top-users"])
        checkouts = len(read_back(spark, hosts, names["checkouts"]))
    finally:
        client.close()
        if own_spark and spark is not None:
            spark.stop()
    print()
    print(summary(per_minute, top_users))
    print()
    problems = check(old, new, per_minute, top_users, sum(batches), checkouts)
    for problem in problems:
        print("FAILED:", problem, file=sys.stderr)
    if not problems:
        print("OK: %d page views counted exactly, %d checkouts streamed, in %.1f s"
              % (count, checkouts, time.monotonic() - started))
    return 1 if problems else 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m pyrdk.testing.demo", description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=300000, help="page views for the batch job (default 300000)")
    parser.add_argument("--new-events", type=int, default=20000,
                        help="page views arriving during the streaming job (default 20000)")
    parser.add_argument("--prefix", default="pageviews", help="prefix of the topic names (default pageviews)")
    parser.add_argument("--hosts", help="use this cluster instead of starting a DevCluster")
    args = parser.parse_args(argv)
    if args.events < 1 or args.new_events < 4:
        parser.error("--events must be positive and --new-events at least 4")
    if args.hosts:
        return run(args.hosts, args.events, args.new_events, args.prefix)
    cluster = DevCluster()
    cluster.start()
    try:
        print("dev cluster on", cluster.hosts)
        return run(cluster.hosts, args.events, args.new_events, args.prefix)
    finally:
        cluster.stop()


if __name__ == "__main__":
    sys.exit(main())
