"""The JVM source (``binlog-jvm``) on logs of many segments: what a part reads of the segments below its own.

A segment header that fails its checks after planning ends the walk there (spec readers 10.4), so a part has to
know whether one below its own fails now. Reading every header below made a query of N segments read N^2 / 2
headers (a request each on S3). A part now trusts the plan's check of a sealed header whose file is unchanged
since (the plan records its stamp: on disk, inode, size, modification and change times; on S3, the ETag the
listing gives), and reads only the headers of changed files: its bytes do not grow with the segments below it.
The plan trusts only files that had not changed for 2 s when it read their headers, so these logs are left to
settle that long before they are read.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest
from binlog_frames import collected
from pyspark.sql import SparkSession
from test_jvm_missing import HEADER_CHANGES, _after_planning, _flip_header_byte, _reader, _reference_to_its_end
from test_jvm_paths import _rows
from test_jvm_source import FORMAT, _scan
from test_spark_semantics import build_log

from openbinlog._format import HEADER_SIZE
from openbinlog_spark import storage

SEGMENTS = 300
SETTLED_S = 2.0  # LogView.SETTLED_MS: a file changed more recently when the plan reads its header is read again


def _flip_keeping_times(log: Path) -> None:
    """Segment 2's header damaged in place, its modification time set back: its change time still moves."""
    segment = log / "00000002.dat"
    before = segment.stat()
    _flip_header_byte(log)
    os.utime(segment, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert segment.stat().st_size == before.st_size and segment.stat().st_mtime_ns == before.st_mtime_ns


CHANGES: dict[str, Callable[[Path], object]] = {**HEADER_CHANGES, "header_byte_flipped_times_kept": _flip_keeping_times}


def segment_logs(tmp_path_factory: pytest.TempPathFactory, segments: int) -> dict[str, Path]:
    """A log of ``segments`` segments of one record each, and one log of six segments for each change of CHANGES;
    all left unchanged for longer than either source's plan asks before trusting a header."""
    root = tmp_path_factory.mktemp("segments")
    built = {"many": build_log(root / "many", records=segments, cut_every=1)}
    for change in CHANGES:
        built[change] = build_log(root / change, records=60, cut_every=10)
    time.sleep(max(SETTLED_S, storage.SETTLED_S) + 0.5)
    return built


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return segment_logs(tmp_path_factory, SEGMENTS)


def _segment_bytes(log: Path, logs: range) -> int:
    return sum((log / f"{number:08d}.dat").stat().st_size for number in logs)


def test_a_part_of_the_last_segments_reads_no_header_of_the_segments_below(
    spark: SparkSession, logs: dict[str, Path]
) -> None:
    """``log >= N - 1`` reads segments N - 2 (whose chain check may report at N - 1), N - 1 and N: their bytes and a
    few headers each (its own, read again at its end by R-4, and its successor's), whatever N is (before, each part
    read the N - 3 headers below too: 232 kB here)."""
    log = logs["many"]
    assert len(list(log.glob("*.dat"))) == SEGMENTS
    frame = spark.read.format(FORMAT).option("mode", "FAILFAST").load(str(log))
    rows, read, _ = _scan(frame.where(f"log >= {SEGMENTS - 1}"))
    assert [row[0] for row in rows] == [SEGMENTS - 1, SEGMENTS]
    kept = range(SEGMENTS - 2, SEGMENTS + 1)
    assert read <= _segment_bytes(log, kept) + 4 * HEADER_SIZE * len(kept), read


def test_a_read_of_the_whole_log_reads_each_segment_and_a_few_headers_per_part(
    spark: SparkSession, logs: dict[str, Path]
) -> None:
    """The bytes of a whole read grow with the segments, not with their square (each part read every header below
    its own: 300 segments made 45,000 header reads, 11.8 MB where the log holds 125 kB)."""
    log = logs["many"]
    frame = spark.read.format(FORMAT).option("mode", "FAILFAST").load(str(log))
    rows, read, _ = _scan(frame)
    assert len(rows) == SEGMENTS
    assert read <= _segment_bytes(log, range(1, SEGMENTS + 1)) + 4 * HEADER_SIZE * SEGMENTS, read


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_header_far_below_failing_after_planning_still_ends_the_walk_there(
    spark: SparkSession, logs: dict[str, Path], change: str
) -> None:
    """Segment 2 of six changed after planning so that its header fails, the others left as they were: the parts of
    segments 3 to 6 trust the plan's check of segment 1 and see that segment 2 changed, so they read nothing, and
    the rows are a fresh read's and the reference's: segment 1's records, one damage row for segment 2."""
    log = logs[change]
    frame = _reader(spark, "binlog-jvm", "PERMISSIVE", True).load(str(log))
    rows = _after_planning(frame, partial(CHANGES[change], log))
    records, damages = _reference_to_its_end(log)
    assert {record[0] for record in records} == {1} and [damage[1:] for damage in damages] == [(2, damages[0][2])]
    fresh = _reader(spark, "binlog-jvm", "PERMISSIVE", True).load(str(log))
    assert rows == _rows(fresh)
    assert collected(fresh)[0] == records
    assert [damage[:3] for damage in collected(fresh)[1]] == damages
