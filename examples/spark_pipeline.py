"""A page-view pipeline on Spark, reading and writing Kafka through pyrdk's ``pyrdk`` source.

    spark-submit examples/spark_pipeline.py --bootstrap-servers broker1:9092,broker2:9092
    python examples/spark_pipeline.py --bootstrap-servers 127.0.0.1:9092 --once   # local[*]

Page views are JSON values ``{"user": ..., "url": ...}`` on the topic ``pageviews``
(``make demo`` produces some). The batch job counts views per url per minute and finds
the top users, writing both to topics; the streaming job then follows the topic and
copies checkout views to their own topic, micro-batch after micro-batch, until stopped
(``--once``: what arrived since the last run, then stop).

On a Spark cluster the same code scales out: the driver plans one task per Kafka
partition (more with ``minPartitions``), and the executors read their offset ranges in
parallel, each with its own pyrdk consumer. Install pyrdk on every node
(``pip install pyrdk[spark]``) or ship it with ``--py-files``.
"""
import argparse

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import pyrdk.spark


def read_page_views(spark, servers, topic):
    """The page views as (user, url, timestamp), from the start of the topic."""
    return (spark.read.format("pyrdk")
            .option("kafka.bootstrap.servers", servers)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .load()
            .select(F.from_json(F.col("value").cast("string"), "user STRING, url STRING").alias("v"),
                    "timestamp")
            .select("v.user", "v.url", "timestamp"))


def write(df, servers, topic):
    """Append ``df`` (columns ``key``, ``value``) to ``topic``."""
    df.write.format("pyrdk").mode("append").option("kafka.bootstrap.servers", servers) \
        .option("topic", topic).save()


def batch_job(spark, servers, topic, out_prefix, top=10):
    """Views per url per minute to ``<out_prefix>-per-minute``, the ``top`` users to
    ``<out_prefix>-top-users``; the number of page views read."""
    views = read_page_views(spark, servers, topic).cache()
    per_minute = views.groupBy(F.date_trunc("minute", "timestamp").alias("minute"), "url").count()
    write(per_minute.select(
        F.col("url").alias("key"),
        F.to_json(F.struct(F.date_format("minute", "yyyy-MM-dd HH:mm").alias("minute"), "url",
                           F.col("count").alias("views"))).alias("value")),
        servers, out_prefix + "-per-minute")
    top_users = views.groupBy("user").count().orderBy(F.desc("count"), "user").limit(top)
    write(top_users.select(F.col("user").alias("key"),
                           F.to_json(F.struct("user", F.col("count").alias("views"))).alias("value")).coalesce(1),
          servers, out_prefix + "-top-users")
    count = views.count()
    views.unpersist()
    return count


def stream_job(spark, servers, topic, out_topic, checkpoint, once=False, max_per_trigger=100000):
    """Follow ``topic`` from its end and copy checkout views to ``out_topic``; the query.
    The checkpoint keeps the offsets: a restarted job goes on where it stopped."""
    query = (spark.readStream.format("pyrdk")
             .option("kafka.bootstrap.servers", servers)
             .option("subscribe", topic)
             .option("maxOffsetsPerTrigger", str(max_per_trigger))
             .load()
             .where(F.get_json_object(F.col("value").cast("string"), "$.url").startswith("/checkout"))
             .select("key", "value")
             .writeStream.format("pyrdk")
             .option("kafka.bootstrap.servers", servers)
             .option("topic", out_topic)
             .option("checkpointLocation", checkpoint))
    if once:
        query = query.trigger(availableNow=True)
    return query.start()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-servers", default="127.0.0.1:9092")
    parser.add_argument("--topic", default="pageviews", help="the page views (default pageviews)")
    parser.add_argument("--out-prefix", default="pageviews", help="prefix of the output topics")
    parser.add_argument("--checkpoint", default="/tmp/pyrdk-pipeline-checkpoint",
                        help="the streaming job's checkpoint (a shared filesystem on a cluster)")
    parser.add_argument("--master", help="Spark master (default: spark-submit's, else local[*])")
    parser.add_argument("--once", action="store_true",
                        help="stream what arrived since the last run (the checkpoint), then stop")
    args = parser.parse_args()

    builder = SparkSession.builder.appName("pyrdk-pipeline")
    if args.master:
        builder = builder.master(args.master)
    spark = builder.getOrCreate()
    pyrdk.spark.register(spark)
    try:
        read = batch_job(spark, args.bootstrap_servers, args.topic, args.out_prefix)
        print("batch job: %d page views counted" % read)
        query = stream_job(spark, args.bootstrap_servers, args.topic, args.out_prefix + "-checkouts",
                           args.checkpoint, once=args.once)
        query.awaitTermination()
        print("streaming job stopped")
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
