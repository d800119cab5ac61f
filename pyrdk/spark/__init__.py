"""Kafka for PySpark through pyrdk: the ``pyrdk`` data source (batch and streaming reads and
writes), with the options and schema of Spark's Kafka connector and no JVM jars.

    import pyrdk.spark
    pyrdk.spark.register(spark)
    df = (spark.read.format("pyrdk")
          .option("kafka.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "events")
          .load())
    df.selectExpr("key", "upper(CAST(value AS STRING)) AS value").write.format("pyrdk") \\
        .option("kafka.bootstrap.servers", "127.0.0.1:9092").option("topic", "out").save()

Needs PySpark 4.0 or later with pyarrow: ``pip install pyrdk[spark]``. Executors import
pyrdk too, so it must be installed (or on ``PYTHONPATH``) wherever Spark runs Python.
"""
try:
    import pyspark.sql.datasource  # noqa: F401  (PySpark >= 4.0)
except ImportError as exc:
    raise ImportError("pyrdk.spark needs PySpark 4.0 or later with pyarrow: pip install 'pyrdk[spark]' "
                      "(%s)" % exc) from exc

from pyrdk.spark.offsets import DataLossError  # noqa: E402
from pyrdk.spark.source import KafkaDataSource  # noqa: E402

FORMAT = KafkaDataSource.name()


def register(spark):
    """Make ``format("pyrdk")`` available in the ``SparkSession`` ``spark``."""
    spark.dataSource.register(KafkaDataSource)


__all__ = ["DataLossError", "FORMAT", "KafkaDataSource", "register"]
