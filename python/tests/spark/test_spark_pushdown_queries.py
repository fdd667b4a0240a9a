"""Filter pushdown through a real local Spark, query after query on one loaded DataFrame.

Spark keeps the read plan (partitions and read function) that a pushdown pass
returns on the relation of the loaded DataFrame, shared by every query built
on it; what one query pushes must not reach the rows of another. Up to Spark
4.3 that pass's plan is the relation's, not the query's, so the source neither
prunes segments nor narrows reads by their indexes there
(``openbinlog_spark.source.PRUNES_PER_QUERY``); the tests below measure both
what narrowing reads and pruning logs by partition values opens, and why both are off.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType
from test_spark_index import INTERVAL, _sealed
from test_spark_semantics import build_log, damaged_log

import openbinlog_spark
from openbinlog._format import RECORD_HEADER_SIZE
from openbinlog_spark.source import PRUNES_PER_QUERY, BinlogPushdownReader

WORKER_LOGGING = "spark.sql.pyspark.worker.logging.enabled"
PER_QUERY = "binlog_per_query"


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


# -- narrowing a read to the index entries around an index range -------------------------------


@pytest.fixture(scope="module")
def per_query(spark: SparkSession) -> str:
    """The ``binlog`` source as it reads where Spark keeps a pushdown pass's plan per query: it prunes and
    narrows by the filters pushed, whatever the Spark. Registered under another name, for these tests only."""
    registered = openbinlog_spark.register(spark)

    def reader(self: Any, schema: StructType) -> BinlogPushdownReader:
        return BinlogPushdownReader(self.settings, schema, prune=True)

    # Defined here, like register's class, so that cloudpickle ships it by value to the Python workers.
    variant = type(
        "BinlogDataSource",
        (registered,),
        {"reader": reader, "name": classmethod(lambda cls: PER_QUERY), "__qualname__": "per_query.<locals>.Source"},
    )
    spark.dataSource.register(variant)
    return PER_QUERY


@pytest.fixture
def worker_logs(spark: SparkSession) -> Iterator[None]:
    spark.conf.set(WORKER_LOGGING, "true")
    try:
        yield
    finally:
        spark.conf.unset(WORKER_LOGGING)


def _bytes_read_of(spark: SparkSession, directory: Path) -> int:
    """The bytes the executors' sources read from the segments of ``directory``, by their log lines."""
    logs = spark.tvf.python_worker_logs().where(F.col("logger") == "openbinlog_spark.reads")
    lines = [row.msg for row in logs.collect() if f" of {directory}/" in row.msg]
    return sum(int(line.split()[1]) for line in lines)


@pytest.mark.spec("R-47")
def test_spark_where_index_between_reads_little_more_than_the_rows_where_reads_are_narrowed(
    spark: SparkSession, tmp_path: Path, per_query: str, worker_logs: None
) -> None:
    directory = _sealed(tmp_path / "narrowed")
    size = (directory / "00000001.dat").stat().st_size
    rows = spark.read.format(per_query).load(str(directory)).where(F.col("index").between(7_000, 9_000))
    collected = rows.select("index", F.length("payload").alias("size")).collect()  # one scan: no sort, no sample
    assert sorted(row["index"] for row in collected) == list(range(7_000, 9_001))
    row_bytes = sum(RECORD_HEADER_SIZE + row["size"] for row in collected)
    read = _bytes_read_of(spark, directory)
    assert 0 < read <= 2 * row_bytes + 2 * INTERVAL, (read, row_bytes, size)
    assert read <= 2 * row_bytes  # and here, with intervals much smaller than the range, within twice the rows


@pytest.mark.spec("R-47")
def test_spark_narrows_reads_only_where_it_keeps_a_plan_per_query(
    spark: SparkSession, tmp_path: Path, worker_logs: None
) -> None:
    directory = _sealed(tmp_path / "default")
    size = (directory / "00000001.dat").stat().st_size
    rows = spark.read.format("binlog").load(str(directory)).where(F.col("index").between(7_000, 9_000))
    collected = rows.select(F.length("payload").alias("size")).collect()
    assert len(collected) == 2_001
    read = _bytes_read_of(spark, directory)
    if PRUNES_PER_QUERY:
        assert read <= 2 * sum(RECORD_HEADER_SIZE + row["size"] for row in collected) + 2 * INTERVAL
    else:
        assert read >= size - 256  # every byte: this Spark would hand a narrowed plan to other queries


@pytest.mark.skipif(PRUNES_PER_QUERY, reason="this Spark keeps a pushdown pass's plan per query")
def test_on_this_spark_a_narrowed_plan_reaches_the_next_query_of_the_dataframe(
    spark: SparkSession, tmp_path: Path, per_query: str
) -> None:
    """The measured reason why the source neither prunes nor narrows on Spark up to 4.3."""
    directory = _sealed(tmp_path / "leak", records=4_000)
    df = spark.read.format(per_query).load(str(directory))
    assert df.where(F.col("index").between(1_000, 1_100)).count() == 101
    # No filter to push: Spark makes no pushdown pass and reads with the plan the last pass left on the
    # relation, narrowed for the query before. A source that narrowed here would lose rows.
    leaked = df.count()
    assert leaked < 4_000, "Spark no longer shares the plan: PRUNES_PER_QUERY can allow this version"
    default = spark.read.format("binlog").load(str(directory))
    assert default.where(F.col("index").between(1_000, 1_100)).count() == 101
    assert default.count() == 4_000


# -- pruning whole logs by their partition values ---------------------------------------------


@pytest.fixture(scope="module")
def days(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``day=1``: a sound log; ``day=2``: a sound log and a damaged one; ``day=3``: a log whose segment files are
    dangling links, which no read can open (an open fails the query with ``file not found`` in every mode)."""
    root = tmp_path_factory.mktemp("days")
    build_log(root / "day=1" / "log", records=20, cut_every=10)
    build_log(root / "day=2" / "log", records=30, cut_every=10)
    damaged_log(root / "day=2", "record_header_bit_flip")
    unreadable = build_log(root / "day=3" / "log", records=20, cut_every=10)
    for file in unreadable.glob("*.dat"):
        file.unlink()
        file.symlink_to(root / "gone")
    return root


def _sorted_rows(frame: DataFrame) -> list[tuple[Any, ...]]:
    return sorted((tuple(row) for row in frame.collect()), key=repr)


@pytest.mark.parametrize(("mode", "day"), [("FAILFAST", 1), ("PERMISSIVE", 2), ("DROPMALFORMED", 2)])
def test_where_spark_plans_per_query_a_partition_filter_prunes_logs_before_opening_them(
    spark: SparkSession, days: Path, per_query: str, mode: str, day: int
) -> None:
    """As Spark's file sources: the rows (damage rows included) of the logs the filter keeps, as loading just
    their partition directory gives them, and nothing of the others opened, on the driver or the executors."""
    with pytest.raises(Exception, match="file not found"):
        spark.read.format(per_query).option("mode", mode).load(str(days / "day=3")).count()
    reader = spark.read.format(per_query).option("mode", mode)
    rows = _sorted_rows(reader.load(str(days)).where(F.col("day") == day))
    kept = _sorted_rows(reader.option("basePath", str(days)).load(str(days / f"day={day}")))
    assert rows == kept
    assert len(rows) == {1: 20, 2: 30 + 239 + (mode == "PERMISSIVE")}[day]


@pytest.mark.skipif(PRUNES_PER_QUERY, reason="this Spark keeps a pushdown pass's plan per query")
def test_on_this_spark_a_plan_pruned_by_partition_values_reaches_the_next_query_of_the_dataframe(
    spark: SparkSession, days: Path, per_query: str
) -> None:
    """The measured reason why the source prunes no log by a partition filter on Spark up to 4.3, FAILFAST
    included: a later query of the DataFrame would silently lose the logs pruned for another."""
    options = {"mode": "DROPMALFORMED", "basePath": str(days)}
    df = spark.read.format(per_query).options(**options).load(str(days / "day=[12]"))
    assert df.where(F.col("day") == 1).count() == 20
    assert df.count() == 20, "Spark no longer shares the plan: PRUNES_PER_QUERY can allow this version"
    default = spark.read.format("binlog").options(**options).load(str(days / "day=[12]"))
    assert default.where(F.col("day") == 1).count() == 20
    assert default.count() == 20 + 30 + 239
    # So FAILFAST reads day=2 for a query of day=1; what the README says to do instead: load day=1 with basePath.
    failfast = spark.read.format("binlog").options(**{**options, "mode": "FAILFAST"})
    with pytest.raises(Exception, match="checksum_mismatch"):
        failfast.load(str(days / "day=[12]")).where(F.col("day") == 1).count()
    assert failfast.load(str(days / "day=1")).where(F.col("day") == 1).count() == 20
