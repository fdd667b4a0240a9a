"""``spark.read.format("binlog")`` through a real local Spark: rows, modes, splits, pushdown, partitions."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime
from pathlib import Path

import pytest
from binlog_frames import collected, reference, split_options, strict_reference
from logtools import flip_bit, segment
from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from test_legacy import legacy_segment
from test_spark_semantics import build_log, damaged_log

import openbinlog_spark
from openbinlog import ChecksumMismatchError
from openbinlog_spark.source import PRUNES_PER_QUERY


def test_spark_reads_every_committed_record_exactly_as_the_reference_reader(
    spark: SparkSession, tmp_path: Path
) -> None:
    directory = build_log(tmp_path / "log")
    expected = strict_reference(directory)
    packed = segment(directory, 1)
    (directory / "00000001.dat.gz").write_bytes(gzip.compress(packed.read_bytes()))
    packed.unlink()
    df = spark.read.format("binlog").load(str(directory))
    assert collected(df) == (expected, [])
    files = {row.file for row in df.select("file").distinct().collect()}
    assert files == {str(directory / name) for name in ("00000001.dat.gz", "00000002.dat", "00000003.dat")}
    assert df.schema["timestamp"].dataType.simpleString() == "timestamp"


def test_spark_reads_legacy_and_version_2_logs_given_as_a_list(spark: SparkSession, tmp_path: Path) -> None:
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    (legacy / "00000001.dat").write_bytes(legacy_segment([b"record-0", b"record-1"], log=1, closed=True, next_log=2))
    (legacy / "00000002.dat").write_bytes(legacy_segment([b"record-2"], log=2, closed=False))
    current = build_log(tmp_path / "current", records=30)
    df = spark.read.format("binlog").load([str(legacy), str(current)])
    assert collected(df) == (sorted(strict_reference(legacy) + strict_reference(current)), [])


def test_spark_permissive_rows_carry_the_damage_the_tolerant_reference_reports(
    spark: SparkSession, tmp_path: Path
) -> None:
    directory = damaged_log(tmp_path, "payload_bit_flip")
    flip_bit(segment(directory, 3), 2000)
    df = spark.read.format("binlog").load(str(directory))
    records, damages = collected(df)
    expected_records, expected_damages = reference(directory)
    assert records == expected_records
    assert damages == sorted(expected_damages, key=lambda item: (item[1] or 0, item[2] or 0, item[0]))
    corrupt = (
        df.filter(F.col("_error").isNotNull()).select(F.length("_corrupt_record").alias("size"), "_error").collect()
    )
    assert [row.size for row in corrupt] == [row._error.bytes_skipped for row in corrupt]


def test_spark_dropmalformed_keeps_the_valid_records_only(spark: SparkSession, tmp_path: Path) -> None:
    directory = damaged_log(tmp_path, "zeroed_region")
    df = spark.read.format("binlog").option("mode", "DROPMALFORMED").load(str(directory))
    assert "_corrupt_record" not in df.columns
    assert collected(df) == (reference(directory)[0], [])


def test_spark_failfast_error_names_file_offset_and_index(spark: SparkSession, tmp_path: Path) -> None:
    directory = damaged_log(tmp_path, "record_header_bit_flip")
    with pytest.raises(ChecksumMismatchError) as failed:
        strict_reference(directory)
    expected = failed.value
    with pytest.raises((Py4JJavaError, PySparkException)) as raised:
        spark.read.format("binlog").option("mode", "FAILFAST").load(str(directory)).collect()
    message = str(raised.value)
    assert "checksum_mismatch" in message
    assert f"{directory}/00000002.dat" in message
    assert f"offset {expected.offset}" in message and f"index {expected.index}" in message


def test_spark_corruption_report_is_a_dataframe_of_damaged_regions(spark: SparkSession, tmp_path: Path) -> None:
    directory = damaged_log(tmp_path, "misdirected_record")
    segment(directory, 1).unlink()  # and the chain now starts at segment 2: no damage there
    report = openbinlog_spark.corruption_report(spark, str(directory))
    assert report.columns[:8] == [
        "file",
        "log",
        "offset",
        "index",
        "error_class",
        "message",
        "bytes_skipped",
        "resume_index",
    ]
    rows = [
        (row.error_class, row.log, row.offset, row["index"], row.bytes_skipped, row.resume_index)
        for row in report.orderBy("log", "offset").collect()
    ]
    assert rows == reference(directory)[1]
    assert rows[0][0] == "index_discontinuity"


@pytest.mark.parametrize("splits", [1, 7, 100])
def test_spark_rows_do_not_depend_on_the_split_size(spark: SparkSession, tmp_path: Path, splits: int) -> None:
    directory = damaged_log(tmp_path, "payload_bit_flip")
    whole = reference(directory)
    reader = spark.read.format("binlog")
    for key, value in split_options(segment(directory, 2).stat().st_size, splits).items():
        reader = reader.option(key, value)
    df = reader.load(str(directory / "00000002.dat"))
    assert df.rdd.getNumPartitions() == splits
    records, damages = collected(df)
    assert records == [record for record in whole[0] if record[0] == 2]
    assert damages == [damage for damage in whole[1] if damage[1] == 2]


def test_spark_pushdown_prunes_segments_and_keeps_the_result(spark: SparkSession, tmp_path: Path) -> None:
    directory = build_log(tmp_path / "log")
    df = spark.read.format("binlog").option("minPartitions", 3).load(str(directory))
    assert df.rdd.getNumPartitions() == 3
    late = df.filter(F.col("index") > 200)
    # Pruning happens only where Spark keeps a pushdown pass's plan per query (openbinlog_spark.source).
    assert late.rdd.getNumPartitions() == (1 if PRUNES_PER_QUERY else 3)
    assert [row["index"] for row in late.orderBy("index").collect()] == list(range(201, 241))
    stamp = late.agg(F.min("timestamp")).first()[0]
    assert stamp is not None
    moment = datetime.fromtimestamp(df.filter("index = 161").select(F.unix_micros("timestamp")).first()[0] / 1e6, UTC)
    recent = df.filter(F.col("timestamp") >= F.lit(moment))
    assert recent.rdd.getNumPartitions() == (1 if PRUNES_PER_QUERY else 3)
    assert recent.count() == 80


def test_spark_hive_partitions_become_columns_and_filter(spark: SparkSession, tmp_path: Path) -> None:
    build_log(tmp_path / "app=billing" / "day=2024-05-01", records=20, cut_every=10)
    build_log(tmp_path / "app=audit" / "day=2024-05-02", records=30, cut_every=1000)
    df = spark.read.format("binlog").load(str(tmp_path))
    counts = {(row.app, str(row.day)): row["count"] for row in df.groupBy("app", "day").count().collect()}
    assert counts == {("billing", "2024-05-01"): 20, ("audit", "2024-05-02"): 30}
    audit = df.filter(F.col("app") == "audit")
    assert audit.rdd.getNumPartitions() == (1 if PRUNES_PER_QUERY else df.rdd.getNumPartitions())
    assert audit.count() == 30
