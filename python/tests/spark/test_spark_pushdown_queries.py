"""Filter pushdown through a real local Spark, query after query on one loaded DataFrame.

Spark keeps the read plan (partitions and read function) that a pushdown pass
returns on the relation of the loaded DataFrame, shared by every query built
on it; what one query pushes must not reach the rows of another.
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from test_spark_semantics import build_log

WORKER_LOGGING = "spark.sql.pyspark.worker.logging.enabled"


def test_a_filter_pushed_for_one_query_does_not_prune_the_next(spark: SparkSession, tmp_path: Path) -> None:
    df = spark.read.format("binlog").option("minPartitions", 3).load(str(build_log(tmp_path / "log")))
    assert df.count() == 240
    assert df.where(F.col("index") > 200).count() == 40
    assert df.count() == 240
    # A filter Spark cannot hand to Python makes no pushdown pass: it reads with whatever plan is kept.
    assert df.where(F.length("payload") >= 0).count() == 240


def test_a_query_planned_before_another_pushes_filters_reads_its_own_segments(
    spark: SparkSession, tmp_path: Path
) -> None:
    df = spark.read.format("binlog").option("minPartitions", 3).load(str(build_log(tmp_path / "log")))
    late = df.where(F.col("index") > 200)
    late.explain()  # plans `late` now: its pushdown pass runs before the next query's
    assert df.where(F.col("index") < 10).count() == 9
    assert sorted(row["index"] for row in late.collect()) == list(range(201, 241))


def test_the_filters_a_query_pushes_are_in_the_python_worker_logs(spark: SparkSession, tmp_path: Path) -> None:
    df = spark.read.format("binlog").load(str(build_log(tmp_path / "log")))
    spark.conf.set(WORKER_LOGGING, "true")
    try:
        assert df.where(F.col("index") >= 237).count() == 4
        logs = spark.tvf.python_worker_logs().where(F.col("logger") == "openbinlog_spark.pushdown")
        messages = [row.msg for row in logs.collect()]
    finally:
        spark.conf.unset(WORKER_LOGGING)
    assert any("GreaterThanOrEqual(attribute=('index',), value=237)" in message for message in messages), messages
