"""A segment header that fails its checks ends the walk of its log (spec readers 10.4, NEXT of 10.2.2).

The reference reader, tolerant or strict, returns the records before the damaged header and stops there with its
error; a tolerant one has listed the damage it stepped over before. Both Spark sources must return exactly that:
those records, the header's damage reported once (a row of 0 bytes skipped in PERMISSIVE, nothing in DROPMALFORMED,
the error in FAILFAST), and nothing of the segments after it, whatever the tasks the read is cut into, plain or
compressed. The Python source returned the segments after the damaged header as if the log went on there.
"""

from __future__ import annotations

import gzip
import re
import shutil
import tempfile
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import zstandard
from binlog_frames import DamageRow, Record, collected, planned, reference_to_its_end, row_of, strict_reference
from hypothesis import HealthCheck, given, settings
from logtools import read_entries
from pyspark.sql import SparkSession
from pyspark.sql.datasource import In
from strategies import header_damages, java_log_items
from test_java_reader import write
from test_spark_semantics import build_log

from openbinlog.errors import BinlogError

JVM = "binlog-jvm"
MODES = ["PERMISSIVE", "DROPMALFORMED", "FAILFAST"]
# The header bytes whose change fails a check (format 3.4): those the header checksum covers, the checksum itself and
# the reserved bytes after the commit slots. (The mirror fields are never checked; a changed slot is passed over.)
CHECKED_HEADER_BYTES = [*range(6), *range(16, 20), *range(24, 96), *range(192, 256)]
CODECS = {"plain": None, "gz": gzip.compress, "zst": zstandard.ZstdCompressor().compress}


def damage_header(log: Path, number: int, how: str, value: int = 70 * 8) -> None:
    """Damage the header of segment ``number``: a bit of a checked byte flipped (``value`` picks which) and the
    segment perhaps packed (``gz``, ``zst``); the file cut inside its header (``cut``) or emptied (``empty``: blank,
    so absent where it is the last one listed); or its gzip copy cut inside the archive's first bytes (``gz_cut``),
    which then cannot be unpacked."""
    segment = log / f"{number:08d}.dat"
    data = bytearray(segment.read_bytes())
    if how in ("cut", "empty"):
        segment.write_bytes(bytes(data[: value % 256 if how == "cut" else 0]))
        return
    if how == "gz_cut":
        packed = gzip.compress(bytes(data))
        segment.with_name(f"{segment.name}.gz").write_bytes(packed[: 1 + value % 100])
        segment.unlink()
        return
    data[CHECKED_HEADER_BYTES[value // 8 % len(CHECKED_HEADER_BYTES)]] ^= 1 << value % 8
    pack = CODECS[how if how in CODECS else "plain"]
    if pack is None:
        segment.write_bytes(bytes(data))
        return
    segment.with_name(f"{segment.name}.{how}").write_bytes(pack(bytes(data)))
    segment.unlink()


def task_options(log: Path, tasks: int) -> dict[str, str]:
    """Options that cut the read of ``log`` into about ``tasks`` tasks, segments split among them."""
    data = sum(path.stat().st_size for path in log.iterdir() if path.name[:8].isdigit())
    return {"minPartitions": str(tasks), "openCostInBytes": "1", "maxPartitionBytes": str(max(1, data // tasks))}


def expected(log: Path, mode: str) -> tuple[list[Record], list[DamageRow]] | tuple[str, int | None, int | None]:
    """What a read in ``mode`` must give: the reference tolerant Reader's records and damage, the error that ended its
    walk as one more row (none in DROPMALFORMED); in FAILFAST, the strict reader's error (class, log, offset)."""
    records, damages, ended = reference_to_its_end(log)
    if mode == "FAILFAST":
        try:
            return strict_reference(log), []
        except BinlogError as error:
            return error.error_class, error.log, error.offset
    if mode == "DROPMALFORMED":
        return records, []
    return records, sorted([*damages, *([] if ended is None else [row_of(ended)])], key=_damage_order)


def _damage_order(row: DamageRow) -> tuple[int, int, str]:
    return (row[1] or 0, row[2] or 0, row[0])


def read_in_process(
    log: Path,
    mode: str,
    options: dict[str, str],
    between: Callable[[], object] | None = None,
    filters: Sequence[Any] = (),
) -> Any:
    """The Python source's rows, planned and read in this process, or the error (class, log, offset) it fails with;
    ``between``: a change made after planning; ``filters``: pushed, and pruning segments."""
    try:
        records, damages, _ = planned(log, mode=mode, between=between, filters=filters, **options)
    except BinlogError as error:
        return error.error_class, error.log, error.offset
    return records, damages


@pytest.mark.parametrize("tasks", [1, 3, 7])
@pytest.mark.parametrize("codec", sorted(CODECS))
@pytest.mark.parametrize("damaged", [1, 2, 4])
@pytest.mark.parametrize("mode", MODES)
def test_the_python_source_reads_nothing_after_a_damaged_segment_header(
    tmp_path: Path, mode: str, damaged: int, codec: str, tasks: int
) -> None:
    """Segment 1, 2 or 4 of four damaged, plain or packed; the read cut into one task or segments split among several:
    the Python source returned the segments after the damaged header (and, segment 1 damaged, every other one)."""
    log = build_log(tmp_path / "log", records=40, cut_every=10)
    damage_header(log, damaged, codec)
    assert read_in_process(log, mode, task_options(log, tasks)) == expected(log, mode)


@pytest.mark.parametrize("tasks", [1, 3, 7])
@pytest.mark.parametrize("record", [0, 4, 9])
@pytest.mark.parametrize("mode", MODES)
def test_damage_below_a_damaged_header_ends_the_walk_there_as_the_reference_does(
    tmp_path: Path, mode: str, record: int, tasks: int
) -> None:
    """A record of segment 1 damaged, and segment 2's header: the reference's walk needs the end of segment 1 at the
    damage (spec readers 10.2.2, RESYNC step 1), whose END checks segment 2's header first and ends the walk there,
    without the record damage and the records after it. Segment 1 is read in one piece to stop there too."""
    log = build_log(tmp_path / "log", records=30, cut_every=10)
    entry = [entry for entry in read_entries(log) if entry.log == 1][record]
    segment = log / "00000001.dat"
    data = bytearray(segment.read_bytes())
    data[entry.offset + 45] ^= 0x10  # a payload byte: checksum_mismatch
    segment.write_bytes(bytes(data))
    damage_header(log, 2, "plain")
    assert read_in_process(log, mode, task_options(log, tasks)) == expected(log, mode)
    records, damages, ended = reference_to_its_end(log)
    assert (len(records), damages, ended and ended.error_class) == (record, [], "bad_header")


def damage_record(log: Path, number: int, record: int) -> None:
    """A payload byte of the ``record``-th record of segment ``number`` flipped: checksum_mismatch."""
    entry = [entry for entry in read_entries(log) if entry.log == number][record]
    segment = log / f"{number:08d}.dat"
    data = bytearray(segment.read_bytes())
    data[entry.offset + 45] ^= 0x10
    segment.write_bytes(bytes(data))


@pytest.mark.parametrize("tasks", [3, 7])
@pytest.mark.parametrize("record", [0, 4, 20])
@pytest.mark.parametrize("mode", MODES)
def test_damage_below_a_header_failing_after_planning_ends_every_range_of_the_segment_there(
    tmp_path: Path, mode: str, record: int, tasks: int
) -> None:
    """A record of segment 1 damaged, then, after planning, segment 2's header: segment 1 was cut into ranges, since
    its successor's header passed at planning. The reference's walk makes END at the damage, which meets the failing
    header and ends the walk there. The ranges of segment 1 between the damage and its commit point returned their
    records; now, the successor's header failing when they start, the first range walks the segment alone, as
    planning plans it, and the other ranges read nothing."""
    log = build_log(tmp_path / "log", records=60, cut_every=30)
    damage_record(log, 1, record)
    options = task_options(log, tasks)
    assert planned(log, **options)[2] > 1  # segment 1 is cut into ranges read by several tasks
    found = read_in_process(log, mode, options, between=partial(damage_header, log, 2, "plain"))
    assert found == expected(log, mode)
    records, damages, ended = reference_to_its_end(log)
    assert (len(records), damages, ended and ended.error_class) == (record, [], "bad_header")


def _remove_2_and_damage_3(log: Path) -> None:
    (log / "00000002.dat").unlink()
    damage_header(log, 3, "plain")


@pytest.mark.parametrize("pruned", [False, True])
@pytest.mark.parametrize("mode", MODES)
def test_a_hole_whose_next_header_fails_after_planning_is_that_header_not_a_broken_chain(
    tmp_path: Path, mode: str, pruned: bool
) -> None:
    """Segment 2 of four removed after planning and segment 3's header damaged: a tolerant reference's BROKEN checks
    the header of segment 3, where it would go on, and reports its error instead of the broken chain (spec readers
    10.2.2, BROKEN step 2); a strict one reports the broken chain first (step 1). The Python source's row was the
    broken chain: by the first range of segment 2, or, with segment 2 pruned by a filter on ``log``, by the chain
    check at the end of segment 1, and then segment 3's header as well."""
    log = build_log(tmp_path / "log", records=40, cut_every=10)
    filters = [In(("log",), (1, 3, 4))] if pruned else []
    options = {"ignoreMissingFiles": "true", **task_options(log, 3)}
    found = read_in_process(log, mode, options, between=partial(_remove_2_and_damage_3, log), filters=filters)
    assert found == expected(log, mode)
    _, _, ended = reference_to_its_end(log)
    assert ended is not None and (ended.error_class, ended.log) == ("bad_header", 3)


@pytest.mark.parametrize("ignore", ["true", "false"])
def test_ignore_corrupt_files_drops_the_row_of_a_damaged_header_not_the_end_of_the_walk(
    tmp_path: Path, ignore: str
) -> None:
    """The row of the damaged header is dropped; the segments after it are not read for that."""
    log = build_log(tmp_path / "log", records=40, cut_every=10)
    damage_header(log, 2, "plain")
    records, damages = read_in_process(log, "PERMISSIVE", {"ignoreCorruptFiles": ignore, "maxPartitionBytes": "1k"})
    wanted_records, wanted_damages = expected(log, "PERMISSIVE")
    assert (records, damages) == (wanted_records, [] if ignore == "true" else wanted_damages)
    assert {record[0] for record in records} == {1}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(java_log_items, header_damages)
def test_the_python_source_returns_what_the_reference_returns_before_a_damaged_header(
    items: Sequence[tuple[bytes, int | None] | None], damage: tuple[str, int, int, int | None, bool, str, int]
) -> None:
    """Any log the reference writes, one segment header damaged in any of the ways ``damage_header`` knows, perhaps a
    record of the segment below it too, perhaps a blank segment after the last, read in any mode and cut into any
    number of tasks."""
    how, which, value, below, blank, mode, tasks = damage
    with tempfile.TemporaryDirectory() as scratch:
        log = Path(scratch) / "log"
        write(log, items)
        entries = read_entries(log)
        numbers = sorted(int(path.name[:8]) for path in log.glob("*.dat"))
        damaged = numbers[which % len(numbers)]
        under = [entry for entry in entries if entry.log == damaged - 1]
        if below is not None and under:
            entry = under[below % len(under)]
            segment = log / f"{entry.log:08d}.dat"
            data = bytearray(segment.read_bytes())
            data[entry.offset + below // len(under) % entry.size] ^= 1 << below % 8
            segment.write_bytes(bytes(data))
        damage_header(log, damaged, how, value)
        if blank:
            (log / f"{numbers[-1] + 1:08d}.dat").write_bytes(b"")
        assert read_in_process(log, mode, task_options(log, tasks)) == expected(log, mode)


def _spark_read(spark: SparkSession, source: str, log: Path, mode: str, split: str) -> Any:
    frame = spark.read.format(source).options(mode=mode, maxPartitionBytes=split, openCostInBytes="1").load(str(log))
    try:
        return collected(frame)
    except Exception as error:
        return str(error)


@pytest.mark.parametrize("split", ["1k", "64m"])
@pytest.mark.parametrize("codec", sorted(CODECS))
@pytest.mark.parametrize("damaged", [1, 2, 3])
@pytest.mark.parametrize("mode", ["PERMISSIVE", "FAILFAST"])
def test_both_sources_read_what_the_reference_reads_before_a_damaged_segment_header(
    spark: SparkSession, tmp_path: Path, mode: str, damaged: int, codec: str, split: str
) -> None:
    """The reference, the JVM source and the Python source on the same log of four segments, one header damaged: the
    records before it and one damage row for it, or the FAILFAST error naming it; never a row of a segment after it."""
    log = build_log(tmp_path / "log", records=40, cut_every=10)
    damage_header(log, damaged, codec)
    wanted = expected(log, mode)
    for source in (JVM, "binlog"):
        found = _spark_read(spark, source, log, mode, split)
        if mode == "FAILFAST":
            error_class, number, offset = wanted
            assert isinstance(found, str), source
            assert re.search(rf"\b{error_class}\b", found), (source, found[:2000])
            assert re.search(rf"\blog[= ]{number},? offset[= ]{offset}\b", found), (source, found[:2000])
        else:
            assert found == wanted, source


@pytest.fixture(scope="module")
def megabyte_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three segments of about 2.3 MB each, of incompressible records: a compressed copy cut at 60% fails beyond the
    first mebibyte it unpacks, which is what the header check of planning unpacks."""
    return build_log(tmp_path_factory.mktemp("megabytes") / "log", records=4500, cut_every=1500, size=1500)


@pytest.mark.parametrize("tasks", [1, 4])
@pytest.mark.parametrize("codec", ["gz", "zst"])
@pytest.mark.parametrize("damaged", [1, 2])
@pytest.mark.parametrize("mode", MODES)
def test_a_compressed_segment_whose_archive_fails_past_its_first_mebibyte_ends_the_walk_as_the_reference_does(
    megabyte_log: Path, tmp_path: Path, mode: str, damaged: int, codec: str, tasks: int
) -> None:
    """Segment 1 or 2 of three compressed, its archive cut at 60%: its header passes the checks of planning, and
    unpacking fails at about 1.4 MB. The reference unpacks the segment to its end before its first record, returns
    none of its records, reports ``bad_header`` at offset 0 (R-43) and stops. The Python source once read the
    segments after it as if the log went on, and then returned the records of the mebibytes it unpacked before the
    failure, as the reference did when it unpacked as far as it walked."""
    log = tmp_path / "log"
    shutil.copytree(megabyte_log, log)
    segment = log / f"{damaged:08d}.dat"
    data = segment.read_bytes()
    packed = CODECS[codec](data)
    segment.with_name(f"{segment.name}.{codec}").write_bytes(packed[: len(packed) * 6 // 10])
    segment.unlink()
    records, damages, ended = reference_to_its_end(log)
    assert ended is not None and (ended.error_class, ended.log, ended.offset) == ("bad_header", damaged, 0)
    assert damages == [] and {record[0] for record in records} == set(range(1, damaged))
    assert read_in_process(log, mode, task_options(log, tasks)) == expected(log, mode)


@pytest.mark.parametrize("split", ["1m", "64m"])
@pytest.mark.parametrize("mode", ["PERMISSIVE", "FAILFAST"])
def test_through_spark_a_compressed_segment_whose_archive_fails_past_its_first_mebibyte_ends_the_walk(
    spark: SparkSession, megabyte_log: Path, tmp_path: Path, mode: str, split: str
) -> None:
    """The same read through Spark, planned in its planning worker and read by its tasks: segment 1 of three, its
    gzip copy cut at 60%, gives none of its records, only its damage row, or in FAILFAST its error, and nothing of
    segments 2 and 3 (R-43)."""
    log = tmp_path / "log"
    shutil.copytree(megabyte_log, log)
    segment = log / "00000001.dat"
    packed = gzip.compress(segment.read_bytes())
    segment.with_name(f"{segment.name}.gz").write_bytes(packed[: len(packed) * 6 // 10])
    segment.unlink()
    wanted = expected(log, mode)
    found = _spark_read(spark, "binlog", log, mode, split)
    if mode == "FAILFAST":
        assert isinstance(found, str)
        assert re.search(r"\bbad_header\b", found) and re.search(r"\blog[= ]1,? offset[= ]0\b", found), found[:2000]
    else:
        assert found == wanted
        assert found[0] == []
