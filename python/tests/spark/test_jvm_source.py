"""The JVM data source (``binlog-jvm``, spark_udfs/jvm) returns what the reference walk returns.

Every golden fixture is read by Spark through the JVM source in each mode and compared with the
reference ``Reader``: the same records, and in PERMISSIVE the same damage rows (class, log, offset,
index, bytes skipped, resume index); FAILFAST fails with the strict reader's class where it does.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from binlog_frames import DamageRow, Record, collected, reference, strict_reference
from pyspark.sql import SparkSession
from pyspark.sql.utils import AnalysisException

from openbinlog import Writer
from openbinlog.errors import BinlogError

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
FORMAT = "binlog-jvm"
NAMES = sorted(path.name for path in FIXTURES.iterdir() if path.is_dir()) if FIXTURES.is_dir() else []


def _strict(path: Path) -> list[Record] | str:
    """The strict reader's records, or the class of the error it raises."""
    try:
        records = strict_reference(path)
    except BinlogError as error:
        return error.error_class
    return sorted((log, offset, _long(index), *rest) for log, offset, index, *rest in records)  # type: ignore[misc]


def _readable(name: str) -> bool:
    # A segment that is a directory, or a directory that is not a log, fails the whole read (io_error, R-20, R-42):
    # checked by test_a_path_that_is_not_a_log_fails_the_read.
    try:
        reference(FIXTURES / name)
    except BinlogError:
        return False
    return True


def _packed(name: str) -> list[Path]:
    """The compressed segments of a fixture (protocols 2.6)."""
    return [*(FIXTURES / name).glob("*.dat.gz"), *(FIXTURES / name).glob("*.dat.zst")]


def _compressed(name: str) -> bool:
    return bool(_packed(name))


# The JVM source reads plain segments only: a segment present only compressed is unsupported_feature there.
ROWS = [name for name in NAMES if _readable(name) and not _compressed(name)]
COMPRESSED = [name for name in NAMES if _readable(name) and _compressed(name)]


def _long(value: int | None) -> int | None:
    """An unsigned 64-bit index as Spark's signed long holds it: the same 64 bits."""
    return value - 2**64 if value is not None and value >= 2**63 else value


def _reference(path: Path) -> tuple[list[Record], list[DamageRow]]:
    records, damages = reference(path)
    return (
        sorted((log, offset, _long(index), *rest) for log, offset, index, *rest in records),  # type: ignore[misc]
        sorted(((*damage[:3], _long(damage[3]), damage[4], _long(damage[5])) for damage in damages), key=repr),
    )


@pytest.mark.parametrize("name", ROWS)
def test_permissive_rows_are_the_reference_records_and_damage(spark: SparkSession, name: str) -> None:
    records, damages = _reference(FIXTURES / name)
    got_records, got_damages = collected(spark.read.format(FORMAT).load(str(FIXTURES / name)))
    assert got_records == records
    assert sorted(got_damages, key=repr) == damages


@pytest.mark.parametrize("name", ROWS)
def test_dropmalformed_rows_are_the_reference_records_alone(spark: SparkSession, name: str) -> None:
    records, _ = _reference(FIXTURES / name)
    frame = spark.read.format(FORMAT).option("mode", "DROPMALFORMED").load(str(FIXTURES / name))
    assert "_error" not in frame.columns
    assert collected(frame) == (records, [])


@pytest.mark.parametrize("name", ROWS)
def test_failfast_fails_where_the_strict_reader_fails(spark: SparkSession, name: str) -> None:
    """With the strict reader's error, or with damage the tolerant read reports further on: parts of the log are
    read in parallel, and the first to fail ends the query."""
    expected = _strict(FIXTURES / name)
    frame = spark.read.format(FORMAT).option("mode", "FAILFAST").load(str(FIXTURES / name))
    if isinstance(expected, str):
        classes = {expected} | {damage[0] for damage in _reference(FIXTURES / name)[1]}
        with pytest.raises(Exception, match=rf"BinlogException: ({'|'.join(sorted(classes))}) "):
            frame.collect()
    else:
        assert collected(frame) == (expected, [])


@pytest.mark.parametrize("name", COMPRESSED)
def test_a_segment_present_only_compressed_is_reported_unsupported_and_not_taken_as_the_end(
    spark: SparkSession, name: str
) -> None:
    records, _ = _reference(FIXTURES / name)
    got_records, got_damages = collected(spark.read.format(FORMAT).load(str(FIXTURES / name)))
    only_compressed = sorted(
        int(path.name[:8]) for path in _packed(name) if not (FIXTURES / name / path.name[:12]).exists()
    )
    if not only_compressed:  # both forms present: the plain one is read (protocols 2.6)
        assert (got_records, got_damages) == _reference(FIXTURES / name)
        return
    first = only_compressed[0]
    assert ("unsupported_feature", first, 0) in [damage[:3] for damage in got_damages]
    assert got_records == [record for record in records if record[0] < first]


def test_a_missing_path_is_spark_path_not_found(spark: SparkSession, tmp_path: Path) -> None:
    with pytest.raises(AnalysisException, match="PATH_NOT_FOUND"):
        spark.read.format(FORMAT).load(str(tmp_path / "absent")).collect()


def _log(directory: Path, count: int, *, segment_bytes: int) -> Path:
    with Writer(directory, max_segment_bytes=segment_bytes, durability="os", exclusive=True) as writer:
        for number in range(count):
            writer.append(number.to_bytes(4, "big") * 50)
        writer.flush()
    return directory


@pytest.mark.parametrize("split_bytes", ["1k", "7k", "64m"])
def test_splits_of_any_size_return_the_same_rows(spark: SparkSession, tmp_path: Path, split_bytes: str) -> None:
    log = _log(tmp_path / "log", 2000, segment_bytes=150_000)
    frame = spark.read.format(FORMAT).option("maxPartitionBytes", split_bytes).load(str(log))
    assert collected(frame) == reference(log)


def test_a_filter_on_log_is_pushed_shown_and_prunes_segments(spark: SparkSession, tmp_path: Path) -> None:
    log = _log(tmp_path / "log", 2000, segment_bytes=150_000)
    frame = spark.read.format(FORMAT).load(str(log))
    query = frame.where("log = 2")
    plan = query._jdf.queryExecution().executedPlan().toString()
    assert "PushedFilters: [EqualTo(log,2)]" in plan
    # Kept: segment 2, and segment 1, whose chain check at its end may report damage at log 2.
    segments = len(list(log.glob("*.dat")))
    assert segments >= 4
    assert f"SegmentsPruned: {segments - 2}" in plan
    records, _ = reference(log)
    assert collected(query) == ([record for record in records if record[0] == 2], [])


def test_reading_the_index_column_alone_counts_every_record(spark: SparkSession, tmp_path: Path) -> None:
    log = _log(tmp_path / "log", 500, segment_bytes=40_000)
    frame = spark.read.format(FORMAT).option("mode", "FAILFAST").load(str(log))
    assert sorted(row[0] for row in frame.select("index").collect()) == list(range(1, 501))
    assert frame.count() == 500
