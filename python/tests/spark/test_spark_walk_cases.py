"""The Spark source on the damage the reading procedure once answered wrongly: now through ``openbinlog.walk``.

Each case runs through a real local Spark session, so the planner, the
executors and the Arrow path are those a user gets.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from binlog_frames import collected, split_options
from logtools import legacy_segment
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from openbinlog import BinlogIOError, Writer, encode_record
from openbinlog._format import HEADER_SIZE
from openbinlog_spark.source import BinlogDataSource


def _embedded_log(directory: Path) -> int:
    """Records 1..4; record 2's payload ends with a valid record carrying index 2. Returns the embedded offset."""
    embedded = encode_record(2, b"inner", timestamp_us=1)
    with Writer(directory) as writer:
        writer.append(b"one")
        writer.append(b"x" * 4000 + embedded)
        third = writer.append(b"three").offset
        writer.append(b"four")
    return third - len(embedded)


@pytest.mark.spec("R-27", "R-40")
def test_two_partitions_cut_inside_a_payload_holding_one_record_report_it_instead_of_a_duplicate(
    spark: SparkSession, tmp_path: Path
) -> None:
    directory = tmp_path / "log"
    fake = _embedded_log(directory)
    options = {key: str(value) for key, value in split_options(os.path.getsize(directory / "00000001.dat"), 2).items()}
    df = spark.read.format("binlog").options(**options).load(str(directory))
    assert df.rdd.getNumPartitions() == 2
    records, damage = collected(df)
    assert [row[2] for row in records].count(2) == 2  # the split after the cut still starts at the false boundary
    assert [(row[0], row[1], row[2], row[3]) for row in damage] == [("ambiguous_split", 1, fake, 2)]
    strict = spark.read.format("binlog").options(mode="FAILFAST", **options).load(str(directory))
    with pytest.raises(PySparkException, match="ambiguous_split"):
        strict.collect()


@pytest.mark.spec("R-6", "R-7")
def test_a_last_segment_whose_first_256_bytes_are_zero_before_records_is_reported_not_empty(
    spark: SparkSession, tmp_path: Path
) -> None:
    directory = tmp_path / "log"
    with Writer(directory) as writer:
        writer.append(b"a")
        writer.append(b"b")
    path = directory / "00000001.dat"
    path.write_bytes(bytes(HEADER_SIZE) + path.read_bytes()[HEADER_SIZE:])
    records, damage = collected(spark.read.format("binlog").load(str(directory)))
    assert records == []
    assert [(row[0], row[1], row[2]) for row in damage] == [("unsupported_version", 1, 4)]
    with pytest.raises(PySparkException, match="unsupported_version"):
        spark.read.format("binlog").option("mode", "FAILFAST").load(str(directory)).collect()


@pytest.mark.spec("R-20")
def test_a_version_1_segment_removed_between_planning_and_reading_is_an_error_not_a_shorter_log(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "log"
    directory.mkdir()
    (directory / "00000001.dat").write_bytes(legacy_segment([b"a"], log=1, closed=True, next_log=2))
    (directory / "00000002.dat").write_bytes(legacy_segment([b"b"], log=2, closed=False))
    source = BinlogDataSource({"path": str(directory), "mode": "FAILFAST"})
    reader = source.reader(source.schema())
    partitions = reader.partitions()
    (directory / "00000001.dat").unlink()
    with pytest.raises(BinlogIOError):
        for partition in partitions:
            list(reader.read(partition))
