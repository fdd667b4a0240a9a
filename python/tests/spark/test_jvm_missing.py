"""Files of the JVM source (``binlog-jvm``) removed between planning and reading.

A query is planned (``rdd.getNumPartitions()`` lists the logs and cuts the parts), then a log directory or a
segment is removed, or a segment replaced by its compressed copy, and only then read. With
``ignoreMissingFiles`` a removed file reads as if it had been gone before ``load()``, as Spark's file sources
skip a file missing at read time; without it the query fails with Spark's ``FAILED_READ_FILE.FILE_NOT_EXIST``
naming the file. A segment removed from the middle of a log is a broken chain, never a silent gap; a segment
compressed meanwhile is read from its compressed copy; a segment whose header fails since planning ends the walk
there, as in a fresh read.
"""

from __future__ import annotations

import gzip
import itertools
import re
import shutil
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from binlog_frames import collected, damage_of, record_of
from pyspark.sql import DataFrame, DataFrameReader, SparkSession
from test_java_reader import cut_archive_log
from test_jvm_paths import _row, _rows
from test_spark_semantics import build_log

from openbinlog import Reader, build_indexes, compress_segments
from openbinlog.errors import BinlogError

JVM = "binlog-jvm"
MODES = ["PERMISSIVE", "DROPMALFORMED", "FAILFAST"]
NOT_FOUND = "FAILED_READ_FILE.FILE_NOT_EXIST"
FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
SEGMENTS = {"first": 1, "middle": 2, "last": 3}  # of a log of three segments


def _reader(spark: SparkSession, source: str, mode: str, ignore: bool) -> DataFrameReader:
    # Small parts: a segment is read by several parts, and the parts of a log by several tasks.
    options = {"mode": mode, "ignoreMissingFiles": str(ignore).lower(), "maxPartitionBytes": "1k"}
    return spark.read.format(source).options(**options)


def _after_planning(frame: DataFrame, change: Callable[[], object]) -> list[tuple[Any, ...]]:
    """The rows of ``frame``, read after its scan was planned and then ``change`` made."""
    rdd = frame.rdd
    rdd.getNumPartitions()  # plans the scan: the logs, their segment files and the parts are fixed here
    change()
    return sorted((_row(row) for row in rdd.collect()), key=repr)


def archive_cut_with_next_removed(
    tmp_path: Path, codec: str
) -> Iterator[tuple[str, str, Path, dict[str, str], Callable[[], None]]]:
    """The reads of a log of four segments whose second (compressed) has its archive cut once the read is planned
    (its header still passes) and whose third is removed: PERMISSIVE and FAILFAST, with ignoreMissingFiles and
    without, in parts of 1 MiB and whole. Each as its name, mode, log (a copy of its own), options, and the change."""
    template = tmp_path / "template"
    cut_archive_log(template, codec, 1400, 1.0, segments=4)
    for mode, ignore, split_bytes in itertools.product(["PERMISSIVE", "FAILFAST"], [False, True], ["1m", "64m"]):
        log = tmp_path / f"{mode}-{ignore}-{split_bytes}"
        shutil.copytree(template, log)
        archive = log / f"00000002.dat.{codec}"
        packed = archive.read_bytes()

        def change(log: Path = log, archive: Path = archive, packed: bytes = packed) -> None:
            archive.write_bytes(packed[: len(packed) * 7 // 10])
            (log / "00000003.dat").unlink()

        options = {"mode": mode, "ignoreMissingFiles": str(ignore).lower(), "maxPartitionBytes": split_bytes}
        yield f"{mode} ignoreMissingFiles={ignore} maxPartitionBytes={split_bytes}", mode, log, options, change


def _without_file(frame: DataFrame, rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The rows without the file column, which names the source's own copy of a log or a segment's compressed copy."""
    at = frame.columns.index("file")
    return sorted((row[:at] + row[at + 1 :] for row in rows), key=repr)


def _log(directory: Path) -> Path:
    return build_log(directory, records=30, cut_every=10)  # segments 1, 2 and 3, of ten records each


@pytest.mark.parametrize("mode", MODES)
def test_a_log_removed_after_planning_is_skipped_with_ignore_missing_files(
    spark: SparkSession, tmp_path: Path, mode: str
) -> None:
    """The other logs' rows, as the Python source gives them."""
    rows = {}
    for source in (JVM, "binlog"):
        root = tmp_path / source
        _log(root / "a")
        _log(root / "b")
        frame = _reader(spark, source, mode, True).load(str(root))
        rows[source] = _without_file(frame, _after_planning(frame, partial(shutil.rmtree, root / "b")))
    alone = _reader(spark, JVM, mode, True).load(str(tmp_path / JVM / "a"))
    assert rows[JVM] == rows["binlog"] == _without_file(alone, _rows(alone))


@pytest.mark.parametrize("mode", MODES)
def test_a_log_removed_after_planning_fails_the_query_naming_it(spark: SparkSession, tmp_path: Path, mode: str) -> None:
    _log(tmp_path / "a")
    _log(tmp_path / "b")
    frame = _reader(spark, JVM, mode, False).load(str(tmp_path))
    with pytest.raises(Exception, match=rf"{NOT_FOUND}.*{re.escape(str(tmp_path / 'b'))}"):
        _after_planning(frame, lambda: shutil.rmtree(tmp_path / "b"))


def _as_if_gone_before_load(
    spark: SparkSession, log: Path, segment: Path, mode: str, fails: str | None, where: str = "true"
) -> list[Any]:
    """The rows of ``log`` (``where`` holds) read with ignoreMissingFiles, ``segment`` removed after planning:
    those of a read planned without it, or the error ``fails`` both reads fail with."""
    frame = _reader(spark, JVM, mode, True).load(str(log)).where(where)
    gone_before_load = _reader(spark, JVM, mode, True)
    if fails is not None:
        with pytest.raises(Exception, match=fails):
            _after_planning(frame, segment.unlink)
        with pytest.raises(Exception, match=fails):
            gone_before_load.load(str(log)).where(where).collect()
        return []
    rows = _after_planning(frame, segment.unlink)
    assert rows == _rows(gone_before_load.load(str(log)).where(where))
    return rows


@pytest.mark.parametrize("where", ["true", "log <= 1"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("removed", sorted(SEGMENTS))
def test_a_segment_removed_after_planning_reads_as_one_gone_before_load_with_ignore_missing_files(
    spark: SparkSession, tmp_path: Path, mode: str, removed: str, where: str
) -> None:
    """The first segment (retention) and the last leave a shorter log; a middle one leaves a broken chain: a
    chain_broken row in PERMISSIVE (one, though the parts on both sides of the hole see it), the FAILFAST error,
    never the rows after the hole as if the log were whole. Where no part reads it (``log <= 1`` prunes
    segments 2 and 3), the chain check at the end of segment 1 reports it."""
    log = _log(tmp_path / "log")
    middle = removed == "middle"
    fails = (
        r"BinlogException: chain_broken in \S*00000002\.dat log=2 index=11" if middle and mode == "FAILFAST" else None
    )
    rows = _as_if_gone_before_load(spark, log, log / f"{SEGMENTS[removed]:08d}.dat", mode, fails, where)
    if where == "true":
        assert len(rows) == (0 if fails else 20 + (middle and mode == "PERMISSIVE"))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("removed", sorted(SEGMENTS))
def test_a_segment_of_a_log_read_whole_removed_after_planning_is_skipped_only_with_ignore_missing_files(
    spark: SparkSession, tmp_path: Path, mode: str, removed: str
) -> None:
    """A log with version 1 segments is read whole, by one walk, under the same rules."""
    for ignore in (False, True):
        log = tmp_path / str(ignore)
        shutil.copytree(FIXTURES / "legacy_cutover_chain", log)  # version 1 segments 1, 2 and 3
        segment = log / f"{SEGMENTS[removed]:08d}.dat"
        if not ignore:
            frame = _reader(spark, JVM, mode, ignore).load(str(log))
            with pytest.raises(Exception, match=rf"{NOT_FOUND}.*{re.escape(str(segment))}"):
                _after_planning(frame, segment.unlink)
            continue
        # A closed version 1 segment names its successor: without it, the chain is broken.
        broken = {"middle": r"00000002\.dat log=2 index=4", "last": r"00000003\.dat log=3 index=6"}.get(removed)
        fails = rf"BinlogException: chain_broken in \S*{broken}" if broken and mode == "FAILFAST" else None
        _as_if_gone_before_load(spark, log, segment, mode, fails)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("removed", ["first", "last"])
def test_the_python_source_reads_a_log_short_of_its_first_or_last_segment_as_the_jvm_source(
    spark: SparkSession, tmp_path: Path, mode: str, removed: str
) -> None:
    rows = {}
    for source in (JVM, "binlog"):
        log = _log(tmp_path / source)
        frame = _reader(spark, source, mode, True).load(str(log))
        rows[source] = _without_file(frame, _after_planning(frame, (log / f"{SEGMENTS[removed]:08d}.dat").unlink))
    assert rows[JVM] == rows["binlog"]
    assert len(rows[JVM]) == 20


@pytest.mark.parametrize("ignore", [True, False])
@pytest.mark.parametrize("removed", ["middle", "last"])
def test_a_segment_its_task_read_before_it_was_removed_is_neither_a_hole_nor_a_silent_end(
    spark: SparkSession, tmp_path: Path, removed: str, ignore: bool
) -> None:
    """One task per segment: the removed segment's task runs first, then the others. With ignoreMissingFiles every
    row comes back and no hole is reported (the segment was read); without it, the task of the segment before,
    whose END and NEXT need the removed one, fails naming it, never ending the log there."""
    log = _log(tmp_path / "log")
    options = {"maxPartitionBytes": "64m", "openCostInBytes": "64m"}
    whole = _rows(_reader(spark, JVM, "PERMISSIVE", ignore).options(**options).load(str(log)))
    rdd = _reader(spark, JVM, "PERMISSIVE", ignore).options(**options).load(str(log)).rdd
    assert rdd.getNumPartitions() == 3
    task = SEGMENTS[removed] - 1
    rows = spark.sparkContext.runJob(rdd, list, [task])
    (log / f"{SEGMENTS[removed]:08d}.dat").unlink()
    others = [other for other in range(3) if other != task]
    if ignore:
        rows += spark.sparkContext.runJob(rdd, list, others)
        assert sorted((_row(row) for row in rows), key=repr) == whole
    else:
        segment = re.escape(str(log / f"{SEGMENTS[removed]:08d}.dat"))
        with pytest.raises(Exception, match=rf"{NOT_FOUND}.*{segment}"):
            spark.sparkContext.runJob(rdd, list, [task - 1])


def test_the_removed_successor_of_an_unsealed_segment_fails_its_read_even_with_ignore_missing_files(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Segment 1 is not sealed: its records 3 and 4 lie past its commit point, and segment 2's header ends it there
    (spec protocols 8.4). Segment 2 read by its task, then removed: segment 1 read without it would end at records
    1 and 2, and 5 and 6 would follow a silent gap."""
    log = tmp_path / "log"
    shutil.copytree(FIXTURES / "finished_segment_unpublished_records", log)
    options = {"maxPartitionBytes": "64m", "openCostInBytes": "64m"}
    rdd = _reader(spark, JVM, "PERMISSIVE", True).options(**options).load(str(log)).rdd
    assert rdd.getNumPartitions() == 2
    assert [row["index"] for row in spark.sparkContext.runJob(rdd, list, [1])] == [5, 6]
    (log / "00000002.dat").unlink()
    with pytest.raises(Exception, match=rf"{NOT_FOUND}.*{re.escape(str(log / '00000002.dat'))}"):
        spark.sparkContext.runJob(rdd, list, [0])


@pytest.mark.parametrize("ignore", [True, False])
def test_a_segment_compressed_after_planning_is_read_from_its_compressed_copy(
    spark: SparkSession, tmp_path: Path, ignore: bool
) -> None:
    """Compression links the compressed copy, then removes the plain file (spec protocols 2.6): the segment is not
    missing, and its rows are read, whether or not missing files are ignored."""
    log = _log(tmp_path / "log")
    before = _reader(spark, JVM, "PERMISSIVE", ignore).load(str(log))
    whole = _without_file(before, _rows(before))

    def compress() -> None:
        assert sorted(item.log for item in compress_segments(log, codec="gz")) == [1, 2]
        assert not (log / "00000001.dat").exists()

    rows = _after_planning(_reader(spark, JVM, "PERMISSIVE", ignore).load(str(log)), compress)
    assert rows == _rows(_reader(spark, JVM, "PERMISSIVE", ignore).load(str(log)))  # the file column names .gz
    assert _without_file(before, rows) == whole


def _reference_to_its_end(log: Path) -> tuple[list[Any], list[Any]]:
    """The reference tolerant Reader's records, and its damage with the error that ends its walk last (a header that
    fails its checks is not stepped over, spec readers 10.4): class, log and offset of each."""
    records: list[Any] = []
    damages: list[Any] = []
    with Reader(log, tolerant=True) as reader:
        try:
            records.extend(record_of(entry) for entry in reader)
        except BinlogError as error:
            damages.append((error.error_class, error.log, error.offset))
        return sorted(records), [damage_of(d)[:3] for d in reader.damage] + damages


def _segment_2(log: Path) -> Path:
    return log / "00000002.dat"


def _flip_header_byte(log: Path, number: int = 2) -> None:
    segment = log / f"{number:08d}.dat"
    data = bytearray(segment.read_bytes())
    data[70] ^= 0xFF
    segment.write_bytes(bytes(data))


def _gz_of_segment_2(log: Path, keep: Callable[[bytes], bytes]) -> None:
    _segment_2(log).with_suffix(".dat.gz").write_bytes(keep(gzip.compress(_segment_2(log).read_bytes())))
    _segment_2(log).unlink()


HEADER_CHANGES: dict[str, Callable[[Path], object]] = {
    "header_byte_flipped": _flip_header_byte,
    "copy_of_segment_1": lambda log: shutil.copy(log / "00000001.dat", _segment_2(log)),
    "emptied": lambda log: _segment_2(log).write_bytes(b""),
    "truncated_to_100_bytes": lambda log: _segment_2(log).write_bytes(_segment_2(log).read_bytes()[:100]),
    "cut_gz": lambda log: _gz_of_segment_2(log, lambda data: data[: len(data) * 2 // 3]),
    "garbage_gz": lambda log: _gz_of_segment_2(log, lambda data: bytes(len(data))),
    "segment_3_renamed_into_its_place": lambda log: (log / "00000003.dat").replace(_segment_2(log)),
}


@pytest.mark.parametrize("change", sorted(HEADER_CHANGES))
def test_a_segment_header_failing_after_planning_keeps_the_rows_before_it_and_reports_it_once(
    spark: SparkSession, tmp_path: Path, change: str
) -> None:
    """Segment 2 changed after planning so that its header fails: the END of segment 1 raised before its part
    returned a row, so its ten records were lost, each part of segment 2 reported the header again, and segment 3
    was read past the header that ends the walk. Now the rows are the reference reader's and a fresh read's: segment
    1's records, one damage row for segment 2, nothing after it."""
    log = _log(tmp_path / "log")
    frame = _reader(spark, JVM, "PERMISSIVE", True).load(str(log))
    rows = _after_planning(frame, partial(HEADER_CHANGES[change], log))
    records, damages = _reference_to_its_end(log)
    assert {record[0] for record in records} == {1} and [damage[1:] for damage in damages] == [(2, damages[0][2])]
    fresh = _reader(spark, JVM, "PERMISSIVE", True).load(str(log))
    assert rows == _rows(fresh)
    assert collected(fresh)[0] == records
    assert [damage[:3] for damage in collected(fresh)[1]] == damages


def test_a_first_segment_header_failing_after_planning_fails_a_failfast_read_whose_filter_skips_its_start(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A filter on index starts the read of segment 1 at a checked entry of its index, so no part of it started where
    the core's plan enters the segment; its header damaged after planning was raised by none, and the FAILFAST read
    gave no row and no error. Now the first of its parts that is read raises it, as a fresh read does."""
    log = _log(tmp_path / "log")
    build_indexes(log, interval=512)
    frame = _reader(spark, JVM, "FAILFAST", False).load(str(log)).where("index >= 5")
    damaged = r"BinlogException: bad_header in \S*00000001\.dat log=1 offset=92"
    with pytest.raises(Exception, match=damaged):
        _after_planning(frame, partial(_flip_header_byte, log, 1))
    with pytest.raises(Exception, match=damaged):
        frame.collect()


@pytest.mark.parametrize("split", ["1k", "64m"])
@pytest.mark.parametrize("mode", MODES)
def test_a_segment_renamed_into_the_place_of_the_one_below_reads_as_a_fresh_read_without_ignore_missing_files(
    spark: SparkSession, tmp_path: Path, mode: str, split: str
) -> None:
    """Segment 3 renamed into segment 2's place after planning: segment 2's header fails its checks now, so the walk
    ends there, and segment 3, gone, is a file it no longer needs. The JVM source failed with FILE_NOT_EXIST naming
    segment 3 (its part, and segment 2's, which looks for the next segment the plan reads); the Python source reads
    what a fresh read reads. Both now do: segment 1's rows and one damage row for segment 2, or its FAILFAST error."""
    rename = HEADER_CHANGES["segment_3_renamed_into_its_place"]
    found = {}
    for source in (JVM, "binlog"):
        log = _log(tmp_path / source / "log")
        frame = _reader(spark, source, mode, False).option("maxPartitionBytes", split).load(str(log))
        try:
            found[source] = _without_file(frame, _after_planning(frame, partial(rename, log)))
        except Exception as error:  # FAILFAST: compared below
            found[source] = str(error)
        fresh = _reader(spark, source, mode, False).option("maxPartitionBytes", split).load(str(log))
        records, damages = _reference_to_its_end(log)
        assert {record[0] for record in records} == {1} and [damage[:2] for damage in damages] == [("bad_header", 2)]
        if mode == "FAILFAST":
            assert isinstance(found[source], str) and NOT_FOUND not in found[source], source
            assert "bad_header" in found[source], (source, found[source][:2000])
            assert re.search(rf"\blog[= ]2,? offset[= ]{damages[0][2]}\b", found[source]), (
                source,
                found[source][:2000],
            )
        else:
            assert found[source] == _without_file(fresh, _rows(fresh)), source
    assert mode == "FAILFAST" or found[JVM] == found["binlog"]
