"""Files of the Python source (``binlog``) removed, compressed or damaged between planning and reading, read by both
sources.

The JVM source's behaviour is ``test_jvm_missing``'s; here each case is read by both sources from the same kind of
log, planned, then changed, then read, and the rows (damage rows included, the ``file`` column aside) must agree:
a segment removed from the middle of a log is one ``chain_broken`` report, never a silent gap, a segment
compressed meanwhile is read from its compressed copy, and a segment header that fails its checks since planning
ends the walk there, as in a fresh read.
"""

from __future__ import annotations

import gzip
import re
import shutil
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from binlog_frames import collected, reference_to_its_end
from pyspark.sql import SparkSession
from test_jvm_missing import (
    FIXTURES,
    HEADER_CHANGES,
    JVM,
    MODES,
    NOT_FOUND,
    SEGMENTS,
    _after_planning,
    _flip_header_byte,
    _log,
    _reader,
    _without_file,
    archive_cut_with_next_removed,
)
from test_jvm_paths import _row, _rows
from test_spark_header_damage import expected
from test_spark_pushdown_queries import per_query  # noqa: F401 - a fixture
from test_spark_semantics import build_log

from openbinlog import build_indexes, compress_segments

SOURCES = (JVM, "binlog")


def _read_both(
    spark: SparkSession,
    tmp_path: Path,
    mode: str,
    ignore: bool,
    change: Callable[[Path], None],
    *,
    where: str = "true",
    make: Callable[[Path], Path] = _log,
    python: str = "binlog",
    options: Mapping[str, str] | None = None,
) -> dict[str, list[tuple[Any, ...]] | str]:
    """For each source, the rows (without ``file``) of its own copy of a log ``make`` builds, read after planning
    and ``change``; or, where the read fails, the text of its error. ``python``: the name the Python source is
    read by (``per_query``'s prunes by the filters pushed, as Spark 5 lets it); ``options``: more of the read's."""
    found: dict[str, list[tuple[Any, ...]] | str] = {}
    for source in SOURCES:
        log = make(tmp_path / source / "log")
        reader = _reader(spark, python if source == "binlog" else source, mode, ignore).options(**(options or {}))
        frame = reader.load(str(log)).where(where)
        try:
            found[source] = _without_file(frame, _after_planning(frame, lambda log=log: change(log)))
        except Exception as error:  # the failure is compared below
            found[source] = str(error)
    return found


def _unlink(*logs: int) -> Callable[[Path], None]:
    def change(log: Path) -> None:
        for number in logs:
            (log / f"{number:08d}.dat").unlink()

    return change


def _broken(found: dict[str, list[tuple[Any, ...]] | str], mode: str, log: int, index: int, shown: bool = True) -> None:
    """Both sources read the broken chain alike: FAILFAST fails on it, the other modes give the same rows, with
    one report in PERMISSIVE where the query's filter ``shown`` it."""
    if mode == "FAILFAST":
        for source in SOURCES:
            assert isinstance(found[source], str), source
            assert "chain_broken" in found[source], source
            assert re.search(rf"\blog[= ]{log}\b.*\bindex[= ]{index}\b", found[source]), source
        return
    assert found[JVM] == found["binlog"]
    assert isinstance(found[JVM], list)
    reports = [row for row in found[JVM] if isinstance(row[-1], tuple) and ("error_class", "chain_broken") in row[-1]]
    assert len(reports) == (mode == "PERMISSIVE" and shown)


@pytest.mark.parametrize("where", ["true", "log <= 1"])
@pytest.mark.parametrize("mode", MODES)
def test_a_middle_segment_removed_after_planning_is_one_chain_broken_report_not_a_silent_gap(
    spark: SparkSession,
    per_query: str,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
    mode: str,
    where: str,
) -> None:
    """With ignoreMissingFiles, the parts of segment 2 skip it, and the hole is reported once: by the first part
    of segment 2, or, where no part reads it (``log <= 1``), by the chain check at the end of segment 1 (whose
    report, of log 2, that filter then leaves out of the rows: FAILFAST tells it)."""
    found = _read_both(spark, tmp_path, mode, True, _unlink(2), where=where, python=per_query)
    _broken(found, mode, 2, 11, shown=where == "true")
    if mode != "FAILFAST" and where == "true":
        assert len(found[JVM]) == 20 + (mode == "PERMISSIVE")


@pytest.mark.parametrize("mode", MODES)
def test_two_adjacent_segments_removed_after_planning_are_one_chain_broken_report(
    spark: SparkSession, tmp_path: Path, mode: str
) -> None:
    """Segments 2 and 3 of four: the first part of segment 2 reports the hole; segment 3's, with nothing below
    it, reports nothing more."""
    found = _read_both(
        spark, tmp_path, mode, True, _unlink(2, 3), make=lambda log: build_log(log, records=40, cut_every=10)
    )
    _broken(found, mode, 2, 11)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("removed", ["first", "last"])
def test_the_first_or_last_segment_removed_after_planning_shortens_the_log_alike_without_a_report(
    spark: SparkSession, tmp_path: Path, mode: str, removed: str
) -> None:
    found = _read_both(spark, tmp_path, mode, True, _unlink(SEGMENTS[removed]))
    assert found[JVM] == found["binlog"]
    assert len(found[JVM]) == 20


@pytest.mark.parametrize("ignore", [True, False])
@pytest.mark.parametrize("mode", MODES)
def test_a_segment_compressed_after_planning_is_read_from_its_compressed_copy_by_both_sources(
    spark: SparkSession, tmp_path: Path, mode: str, ignore: bool
) -> None:
    """Compression links ``NNNNNNNN.dat.gz``, then removes the plain file (spec protocols 2.6): the planned name is
    gone, the segment is not, and every row is read, with or without ignoreMissingFiles."""

    def compress(log: Path) -> None:
        assert sorted(item.log for item in compress_segments(log, codec="gz")) == [1, 2]

    found = _read_both(spark, tmp_path, mode, ignore, compress)
    assert found[JVM] == found["binlog"]
    assert isinstance(found[JVM], list)
    assert len(found[JVM]) == 30


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("removed", sorted(SEGMENTS))
def test_a_segment_removed_after_planning_fails_both_sources_naming_it(
    spark: SparkSession, tmp_path: Path, mode: str, removed: str
) -> None:
    """Without ignoreMissingFiles, in every mode: Spark's FAILED_READ_FILE.FILE_NOT_EXIST naming the segment, as
    Spark's file sources fail (the Python source said ``file not found [io_error]``)."""
    found = _read_both(spark, tmp_path, mode, False, _unlink(SEGMENTS[removed]))
    for source in SOURCES:
        segment = re.escape(str(tmp_path / source / "log" / f"{SEGMENTS[removed]:08d}.dat"))
        assert isinstance(found[source], str), source
        assert re.search(
            rf"{re.escape(NOT_FOUND)}\] Encountered error while reading file {segment}\.", found[source]
        ), source


@pytest.mark.parametrize("mode", MODES)
def test_a_log_directory_removed_after_planning_fails_both_sources_naming_it(
    spark: SparkSession, tmp_path: Path, mode: str
) -> None:
    found = _read_both(spark, tmp_path, mode, False, shutil.rmtree)
    for source in SOURCES:
        assert isinstance(found[source], str), source
        assert re.escape(str(tmp_path / source / "log")) in re.escape(str(found[source])), source


@pytest.mark.parametrize("ignore", [True, False])
@pytest.mark.parametrize("removed", ["middle", "last"])
def test_a_segment_its_task_read_before_it_was_removed_leaves_no_row_missing_in_the_python_source(
    spark: SparkSession, tmp_path: Path, removed: str, ignore: bool
) -> None:
    """One task per segment, the removed segment's first. The Python source settled the segment ends and the chain
    at planning: every row comes back and no hole is reported, with ignoreMissingFiles as the JVM source gives them,
    and without it too (where the JVM source fails, as its task of the segment before reads the removed header)."""
    options = {"maxPartitionBytes": "64m", "openCostInBytes": "64m"}
    rows = {}
    for source in SOURCES if ignore else ("binlog",):
        log = _log(tmp_path / source / "log")
        whole = _reader(spark, source, "PERMISSIVE", ignore).options(**options).load(str(log))
        expected = _without_file(whole, [_row(row) for row in whole.collect()])
        rdd = _reader(spark, source, "PERMISSIVE", ignore).options(**options).load(str(log)).rdd
        assert rdd.getNumPartitions() == 3
        task = SEGMENTS[removed] - 1
        read = spark.sparkContext.runJob(rdd, list, [task])
        (log / f"{SEGMENTS[removed]:08d}.dat").unlink()
        read += spark.sparkContext.runJob(rdd, list, [other for other in range(3) if other != task])
        rows[source] = _without_file(whole, [_row(row) for row in read])
        assert rows[source] == expected
    if ignore:
        assert rows[JVM] == rows["binlog"]


@pytest.mark.parametrize("ignore", [True, False])
def test_the_removed_successor_of_an_unsealed_segment_leaves_no_row_missing_in_the_python_source(
    spark: SparkSession, tmp_path: Path, ignore: bool
) -> None:
    """Segment 1 is not sealed: segment 2's header ends it past its commit point (spec protocols 8.4). The Python
    source found that end at planning, so segment 2 read by its task and then removed costs no row (the JVM source,
    which needs segment 2's header again, fails)."""
    log = tmp_path / "log"
    shutil.copytree(FIXTURES / "finished_segment_unpublished_records", log)
    options = {"maxPartitionBytes": "64m", "openCostInBytes": "64m"}
    rdd = _reader(spark, "binlog", "PERMISSIVE", ignore).options(**options).load(str(log)).rdd
    assert rdd.getNumPartitions() == 2
    indexes = [row["index"] for row in spark.sparkContext.runJob(rdd, list, [1])]
    (log / "00000002.dat").unlink()
    indexes += [row["index"] for row in spark.sparkContext.runJob(rdd, list, [0])]
    assert sorted(indexes) == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("removed", sorted(SEGMENTS))
def test_a_segment_of_a_log_read_whole_removed_after_planning_reads_alike_in_both_sources(
    spark: SparkSession, tmp_path: Path, mode: str, removed: str
) -> None:
    """Version 1 segments, a log read whole by one walk: with ignoreMissingFiles the same rows and reports (a closed
    version 1 segment names its successor, so the middle and the last one leave a broken chain)."""

    def legacy(log: Path) -> Path:
        shutil.copytree(FIXTURES / "legacy_cutover_chain", log)
        return log

    found = _read_both(spark, tmp_path, mode, True, _unlink(SEGMENTS[removed]), make=legacy)
    if removed == "first" or mode != "FAILFAST":
        assert found[JVM] == found["binlog"]
    else:
        _broken(found, mode, SEGMENTS[removed], {"middle": 4, "last": 6}[removed])


@pytest.mark.parametrize("mode", MODES)
def test_a_segment_no_task_reads_removed_after_planning_is_a_hole_without_ignore_missing_files_too(
    spark: SparkSession,
    per_query: str,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
    mode: str,
) -> None:
    """``log <= 1`` prunes segments 2 and 3: no task opens segment 2, so its removal is no missing file, and the
    chain check at the end of segment 1 reports the hole, never ending the log there silently."""
    found = _read_both(spark, tmp_path, mode, False, _unlink(2), where="log <= 1", python=per_query)
    _broken(found, mode, 2, 11, shown=False)


@pytest.mark.parametrize("ignore", [True, False])
def test_a_segment_of_a_log_read_whole_compressed_after_planning_is_read_from_its_copy_by_both_sources(
    spark: SparkSession, tmp_path: Path, ignore: bool
) -> None:
    """Version 1 segments, read by one walk: a closed segment replaced by its compressed copy is read from it."""

    def legacy(log: Path) -> Path:
        shutil.copytree(FIXTURES / "legacy_cutover_chain", log)
        return log

    def compress(log: Path) -> None:
        # As compression does it (spec protocols 2.6), by hand: the reference compresses version 2 logs only.
        plain = log / "00000001.dat"
        (log / "00000001.dat.gz").write_bytes(gzip.compress(plain.read_bytes()))
        plain.unlink()

    found = _read_both(spark, tmp_path, "PERMISSIVE", ignore, compress, make=legacy)
    assert found[JVM] == found["binlog"]
    assert isinstance(found[JVM], list)
    whole = _reader(spark, "binlog", "PERMISSIVE", ignore).load(str(FIXTURES / "legacy_cutover_chain"))
    assert len(found[JVM]) == whole.count()


def _ended_alike(found: dict[str, list[tuple[Any, ...]] | str], log: Path, mode: str, number: int = 2) -> None:
    """Both sources read what the reference reads now: the records before the header of segment ``number``, which
    fails its checks, and one damage row for it (none in DROPMALFORMED), or in FAILFAST its error."""
    records, damages, ended = reference_to_its_end(log)
    assert ended is not None and ended.log == number and damages == []
    if mode == "FAILFAST":
        for source in SOURCES:
            assert isinstance(found[source], str), source
            assert re.search(rf"\b{ended.error_class}\b", found[source]), source
            assert re.search(rf"\blog[= ]{number},? offset[= ]{ended.offset}\b", found[source]), source
        return
    assert found[JVM] == found["binlog"]
    assert isinstance(found[JVM], list)
    damage_rows = [row for row in found[JVM] if mode == "PERMISSIVE" and row[-1] is not None]  # _error is last
    assert sorted(row[:3] for row in found[JVM] if row not in damage_rows) == [record[:3] for record in records]
    assert len(damage_rows) == (mode == "PERMISSIVE")


@pytest.mark.parametrize("split", ["1k", "64m"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("change", sorted(HEADER_CHANGES))
def test_a_segment_header_failing_after_planning_ends_the_walk_there_in_both_sources(
    spark: SparkSession, tmp_path: Path, change: str, mode: str, split: str
) -> None:
    """Segment 2 of three changed after planning so that its header fails: the Python source read it by the header
    planning had read, and segment 3 after it, as if the log went on. Now each task reads the headers of the segments
    below its own again, and END the successor's: the rows are a fresh read's and the JVM source's. (Without
    ignoreMissingFiles too: test_jvm_missing reads segment 3 renamed into segment 2's place so.)"""
    found = _read_both(spark, tmp_path, mode, True, HEADER_CHANGES[change], options={"maxPartitionBytes": split})
    _ended_alike(found, tmp_path / "binlog" / "log", mode)


@pytest.mark.parametrize("mode", MODES)
def test_the_first_segment_header_failing_after_planning_is_reported_by_its_first_range_in_both_sources(
    spark: SparkSession, tmp_path: Path, mode: str
) -> None:
    """No segment below it: the first range of segment 1 reports it, once, however many ranges the segment has."""
    found = _read_both(spark, tmp_path, mode, False, partial(_flip_header_byte, number=1))
    records, _, ended = reference_to_its_end(tmp_path / "binlog" / "log")
    assert records == [] and ended is not None
    _ended_alike(found, tmp_path / "binlog" / "log", mode, 1)


@pytest.mark.parametrize("mode", MODES)
def test_the_tail_of_an_unsealed_segment_is_not_read_when_its_successor_header_fails_after_planning(
    spark: SparkSession, tmp_path: Path, mode: str
) -> None:
    """Segment 1 is not sealed: planning found its end past its commit point, below segment 2's base index (spec
    protocols 8.4), and a range of its tail starts beyond that point. Segment 2's header damaged after planning, END
    of segment 1 fails at the commit point: records 3 and 4 beyond it are not read, by no range."""

    def unsealed(log: Path) -> Path:
        shutil.copytree(FIXTURES / "finished_segment_unpublished_records", log)
        return log

    found = _read_both(
        spark,
        tmp_path,
        mode,
        False,
        partial(_flip_header_byte, number=2),
        make=unsealed,
        options={"maxPartitionBytes": "50", "openCostInBytes": "1"},
    )
    records, _, _ = reference_to_its_end(tmp_path / "binlog" / "log")
    assert [record[2] for record in records] == [1, 2]
    _ended_alike(found, tmp_path / "binlog" / "log", mode)


@pytest.mark.parametrize("mode", MODES)
def test_the_first_segment_header_failing_after_planning_is_reported_by_a_read_narrowed_past_its_start(
    spark: SparkSession,
    per_query: str,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
    mode: str,
) -> None:
    """A filter on index narrows the read of segment 1 to the checked entries around its rows, so its first range
    starts past its first record: that range still reports the header of segment 1, damaged after planning, and the
    FAILFAST read fails, as a fresh read does."""

    def indexed(log: Path) -> Path:
        build_log(log, records=30, cut_every=10)
        build_indexes(log, interval=512)
        return log

    found = _read_both(
        spark,
        tmp_path,
        mode,
        True,
        partial(_flip_header_byte, number=1),
        where="index >= 5",
        make=indexed,
        python=per_query,
    )
    _, _, ended = reference_to_its_end(tmp_path / "binlog" / "log")
    assert ended is not None and ended.log == 1
    if mode == "FAILFAST":
        _ended_alike(found, tmp_path / "binlog" / "log", mode, 1)
    else:
        assert found[JVM] == found["binlog"] == []  # the damage row has no index: the filter leaves it out


@pytest.mark.spec("R-43", "R-9")
@pytest.mark.parametrize("codec", ["gz", "zst"])
def test_an_archive_cut_after_planning_with_the_segment_after_it_removed_is_bad_header_not_a_missing_segment(
    spark: SparkSession, tmp_path: Path, codec: str
) -> None:
    """Segment 2's archive of four cut once the read was planned (its header still passes), and segment 3 removed:
    the walk ends in segment 2's archive with bad_header at offset 0 (R-43), so segment 3 is a file it no longer
    needs. A task checked only the headers of the segments below its own: the query failed with FILE_NOT_EXIST
    naming segment 3, and with ignoreMissingFiles segment 3's range reported a broken chain and segment 4's returned
    its records. Now, with the option or without, in parts of 1 MiB or whole, the rows are a fresh read's and the
    reference's, and FAILFAST fails with segment 2's bad_header, as the JVM source (test_jvm_source)."""
    damaged = rf"(?s)\bbad_header\b.*00000002\.dat\.{codec}|00000002\.dat\.{codec}.*\bbad_header\b"
    for case, mode, log, options, change in archive_cut_with_next_removed(tmp_path, codec):
        frame = spark.read.format("binlog").options(**options, openCostInBytes="1").load(str(log))
        if mode == "FAILFAST":
            with pytest.raises(Exception, match=damaged) as failed:
                _after_planning(frame, change)
            assert re.search(r"\blog[= ]2,? offset[= ]0\b", str(failed.value)), (case, str(failed.value)[:2000])
            assert expected(log, mode) == ("bad_header", 2, 0), case
            continue
        rows = _after_planning(frame, change)
        fresh = spark.read.format("binlog").options(**options, openCostInBytes="1").load(str(log))
        assert rows == _rows(fresh), case
        wanted = expected(log, mode)
        assert ("bad_header", 2, 0, None, 0, None) in wanted[1], case
        assert collected(fresh) == wanted, case
