"""The JVM data source (``binlog-jvm``, spark_udfs/jvm) returns what the reference walk returns.

Every golden fixture is read by Spark through the JVM source in each mode and compared with the
reference ``Reader``: the same records, and in PERMISSIVE the same damage rows (class, log, offset,
index, bytes skipped, resume index); FAILFAST fails with the strict reader's class where it does.
"""

from __future__ import annotations

import gzip
import os
import re
from functools import partial
from pathlib import Path

import pytest
import zstandard
from binlog_frames import DamageRow, Record, collected, log_of_logs, reference, strict_reference
from logtools import flip_bit, read_entries
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.utils import AnalysisException
from test_java_reader import cut_archive_log
from test_jvm_missing import _after_planning, archive_cut_with_next_removed
from test_jvm_paths import _rows
from test_spark_header_damage import damage_header, expected
from test_spark_semantics import build_log

from openbinlog import Writer, build_indexes, compress_segments
from openbinlog._format import RECORD_HEADER_SIZE
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


ROWS = [name for name in NAMES if _readable(name)]


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


@pytest.mark.spec("R-43")
def test_option_max_decompressed_bytes_caps_what_a_compressed_segment_unpacks(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A segment that would unpack beyond it is a bad_header row at offset 0, which ends the walk as any bad_header
    (the next test); FAILFAST fails with it."""
    log = _log(tmp_path / "log", 600, segment_bytes=40_000)
    packed = sorted(item.log for item in compress_segments(log, codec="zst"))
    records, _ = reference(log)
    assert packed
    frame = spark.read.format(FORMAT)
    assert collected(frame.load(str(log))) == (records, [])
    capped = frame.option("maxDecompressedBytes", "1k")
    got_records, got_damages = collected(capped.load(str(log)))
    assert [damage[:3] for damage in got_damages] == [("bad_header", packed[0], 0)]
    assert got_records == [record for record in records if record[0] < packed[0]]
    with pytest.raises(Exception, match=r"BinlogException: bad_header .*more than 1024 bytes.*maxDecompressedBytes"):
        capped.option("mode", "FAILFAST").load(str(log)).collect()


@pytest.mark.spec("R-43")
@pytest.mark.parametrize("split_bytes", ["1k", "64m"])
def test_a_segment_beyond_max_decompressed_bytes_ends_the_walk_as_any_bad_header(
    spark: SparkSession, tmp_path: Path, split_bytes: str
) -> None:
    """The cap's bad_header was stepped over, where every other bad_header ends the walk (spec readers 10.4): the
    segment after it was read, with no broken chain. Now the rows are those of segment 1 and the cap's row of 2."""
    log = build_log(tmp_path / "log", records=30, cut_every=10)
    plain = log / "00000002.dat"
    plain.with_suffix(".dat.gz").write_bytes(gzip.compress(plain.read_bytes()))
    cap = str(plain.stat().st_size - 1)
    plain.unlink()
    records, _ = reference(log)
    frame = spark.read.format(FORMAT).options(maxDecompressedBytes=cap, maxPartitionBytes=split_bytes)
    got_records, got_damages = collected(frame.load(str(log)))
    assert got_records == [record for record in records if record[0] == 1]
    assert [damage[:3] for damage in got_damages] == [("bad_header", 2, 0)]


@pytest.mark.parametrize(
    "glob", ["{root}/pl*", "file:{root}/*", "{root}/plai?"], ids=["star", "file_url", "question_mark"]
)
def test_a_glob_through_a_directory_holding_a_name_with_a_colon_reads_the_logs(
    spark: SparkSession, tmp_path: Path, glob: str
) -> None:
    """Hadoop's globber names each entry it lists by its name alone, so 'c:d' parsed as a URI with scheme c and the
    read failed with an untyped IllegalArgumentException. Now the logs it matches are read, as by the Python source."""
    for name in ("plain", "c:d"):
        with Writer(tmp_path / name, durability="os") as writer:
            writer.append(name.encode())
    path = glob.format(root=tmp_path)
    files = {}
    for source in (FORMAT, "binlog"):
        files[source] = sorted({row["file"] for row in spark.read.format(source).load(path).select("file").collect()})
    assert files[FORMAT] == files["binlog"]
    assert str(tmp_path / "plain" / "00000001.dat") in files[FORMAT]


@pytest.mark.parametrize("codec", ["gz", "zst"])
def test_damage_in_a_compressed_segment_is_a_row_with_its_unpacked_bytes(
    spark: SparkSession, tmp_path: Path, codec: str
) -> None:
    """The corrupt-record cell holds the bytes the walk stepped over, unpacked, and the file column names the
    compressed file, as the Python source's rows do."""
    log = _log(tmp_path / "log", 600, segment_bytes=40_000)
    first = log / "00000001.dat"
    flip_bit(first, 256 + 3 * (200 + RECORD_HEADER_SIZE) + 30)  # a byte of the fourth record
    plain = first.read_bytes()
    # Compressed by hand: compress_segments checks the records first and refuses a damaged segment.
    packed = gzip.compress(plain) if codec == "gz" else zstandard.ZstdCompressor().compress(plain)
    first.with_name(f"{first.name}.{codec}").write_bytes(packed)
    first.unlink()
    rows = {}
    for name in ("binlog", FORMAT):
        frame = spark.read.format(name).load(str(log)).where("_error is not null")
        rows[name] = [(row["file"], row["offset"], bytes(row["_corrupt_record"])) for row in frame.collect()]
    [(file, offset, cell)] = rows[FORMAT]
    assert file.endswith(f"00000001.dat.{codec}")
    assert cell and cell == plain[offset : offset + len(cell)]
    assert rows[FORMAT] == rows["binlog"]


def _header_byte_flipped(plain: bytes) -> bytes:
    return plain[:70] + bytes([plain[70] ^ 0xFF]) + plain[71:]


# How segment 2 of three is damaged: its header (a byte of it flipped, then packed or not), or its archive.
HEADER_DAMAGE = {
    "plain_header_byte_flipped": ("", _header_byte_flipped),
    "gz_header_byte_flipped": ("gz", lambda plain: gzip.compress(_header_byte_flipped(plain))),
    "zst_header_byte_flipped": ("zst", lambda plain: zstandard.ZstdCompressor().compress(_header_byte_flipped(plain))),
    "gz_cut_in_its_header": ("gz", lambda plain: gzip.compress(plain)[:100]),
    "gz_of_zeros": ("gz", lambda plain: bytes(200)),
}


@pytest.mark.spec("R-43")
@pytest.mark.parametrize("damage", sorted(HEADER_DAMAGE))
def test_a_damaged_segment_header_is_one_damage_row_of_0_bytes_skipped_in_both_sources(
    spark: SparkSession, tmp_path: Path, damage: str
) -> None:
    """The Python source's row said the file's size was skipped: of a compressed segment, a count of packed bytes
    beside an offset in unpacked ones, which R-43 forbids unpacking to know. No walk steps over a damaged header
    (spec readers 10.4), so none of its bytes were skipped by one: 0, as the JVM source and the reference's verify
    report it, and as long as the row's corrupt-record cell (empty)."""
    log = build_log(tmp_path / "log", records=30, cut_every=10)
    segment = log / "00000002.dat"
    codec, damaged = HEADER_DAMAGE[damage]
    segment.with_name(f"{segment.name}.{codec}".rstrip(".")).write_bytes(damaged(segment.read_bytes()))
    if codec:
        segment.unlink()
    rows = {}
    for name in ("binlog", FORMAT):
        for split_bytes in ("1k", "64m"):
            frame = spark.read.format(name).option("maxPartitionBytes", split_bytes).load(str(log))
            rows[name, split_bytes] = collected(frame)[1]
            cells = frame.where("_error is not null").select("_corrupt_record").collect()
            assert [bytes(row[0]) for row in cells] == [b""], (name, split_bytes)
    offset = 0 if damage.startswith("gz_") and not damage.endswith("flipped") else 92
    assert set(map(tuple, rows.values())) == {(("bad_header", 2, offset, None, 0, None),)}


def _damage_record_below_header(log: Path, record: int) -> None:
    """A payload byte of record ``record`` of segment 1 flipped (checksum_mismatch), and segment 2's header."""
    entry = [entry for entry in read_entries(log) if entry.log == 1][record]
    flip_bit(log / "00000001.dat", entry.offset + 45, 4)
    damage_header(log, 2, "plain")


@pytest.mark.parametrize("split_bytes", ["1k", "64m"])
@pytest.mark.parametrize("record", [0, 4, 9])
@pytest.mark.parametrize("mode", ["PERMISSIVE", "DROPMALFORMED"])
def test_record_damage_below_a_damaged_header_ends_the_walk_there_in_parts_of_any_size(
    spark: SparkSession, tmp_path: Path, mode: str, record: int, split_bytes: str
) -> None:
    """A record of segment 1 damaged, and segment 2's header: the reference's tolerant walk needs the end of segment
    1 at the damage (spec readers 10.2.2, RESYNC step 1), whose END checks segment 2's header first and ends the walk
    there. Segment 1 cut into parts returned the records of the parts after the damage, and each part that reached
    the commit point reported the header again; now both sources return the reference's rows, in parts of any size."""
    log = build_log(tmp_path / "log", records=30, cut_every=10)
    _damage_record_below_header(log, record)
    wanted = expected(log, mode)
    assert [row[2] for row in wanted[0]] == list(range(1, record + 1))  # the records before the damage
    for name in (FORMAT, "binlog"):
        frame = spark.read.format(name).options(mode=mode, maxPartitionBytes=split_bytes, openCostInBytes="1")
        assert collected(frame.load(str(log))) == wanted, name


@pytest.mark.parametrize("record", [0, 4, 9])
def test_record_damage_below_a_header_damaged_after_planning_ends_the_walk_there(
    spark: SparkSession, tmp_path: Path, record: int
) -> None:
    """As above, segment 2's header damaged once segment 1 was planned in parts: the part that opens segment 1 walks
    it alone, as READ-LOG does, and its other parts return nothing."""
    log = build_log(tmp_path / "log", records=30, cut_every=10)
    frame = spark.read.format(FORMAT).options(maxPartitionBytes="1k", openCostInBytes="1").load(str(log))
    rows = _after_planning(frame, partial(_damage_record_below_header, log, record))
    fresh = spark.read.format(FORMAT).options(maxPartitionBytes="1k", openCostInBytes="1").load(str(log))
    assert rows == _rows(fresh)
    assert collected(fresh) == expected(log, "PERMISSIVE")


@pytest.mark.spec("R-43")
@pytest.mark.parametrize("split_bytes", ["1m", "64m"])
@pytest.mark.parametrize("codec", ["gz", "zst"])
@pytest.mark.parametrize("mode", ["PERMISSIVE", "DROPMALFORMED"])
def test_an_archive_cut_beyond_its_first_pieces_ends_the_walk_after_its_records_before_the_cut(
    spark: SparkSession, tmp_path: Path, mode: str, codec: str, split_bytes: str
) -> None:
    """Segment 2 of three compressed, its archive cut beyond the piece its header check unpacks. The reference
    returns segment 1, none of segment 2's records (its archive is checked to its end before its first record),
    then bad_header at offset 0, which ends its walk (R-43). The JVM source once returned segment 3's records after
    the damage row."""
    log = tmp_path / "log"
    cut_archive_log(log, codec, 1400, 0.7)
    wanted = expected(log, mode)
    assert {record[0] for record in wanted[0]} == {1}
    assert wanted[1] == ([("bad_header", 2, 0, None, 0, None)] if mode == "PERMISSIVE" else [])
    frame = spark.read.format(FORMAT).options(mode=mode, maxPartitionBytes=split_bytes, openCostInBytes="1")
    assert collected(frame.load(str(log))) == wanted


@pytest.mark.spec("R-43", "R-9")
@pytest.mark.parametrize("codec", ["gz", "zst"])
def test_an_archive_cut_after_planning_ends_the_walk_as_in_a_fresh_read(
    spark: SparkSession, tmp_path: Path, codec: str
) -> None:
    """As above, the archive cut once the read was planned: the parts of segment 3 find the file of segment 2
    changed since planning and unpack it to know whether the walk gets past it; the rows are a fresh read's."""
    log = tmp_path / "log"
    cut_archive_log(log, codec, 1400, 1.0)
    archive = log / f"00000002.dat.{codec}"
    packed = archive.read_bytes()
    frame = spark.read.format(FORMAT).options(maxPartitionBytes="1m", openCostInBytes="1").load(str(log))
    rows = _after_planning(frame, partial(archive.write_bytes, packed[: len(packed) * 7 // 10]))
    fresh = spark.read.format(FORMAT).options(maxPartitionBytes="1m", openCostInBytes="1").load(str(log))
    assert rows == _rows(fresh)
    assert collected(fresh) == expected(log, "PERMISSIVE")


@pytest.mark.spec("R-43", "R-9")
@pytest.mark.parametrize("codec", ["gz", "zst"])
def test_an_archive_cut_after_planning_with_the_segment_after_it_removed_is_bad_header_not_a_missing_segment(
    spark: SparkSession, tmp_path: Path, codec: str
) -> None:
    """Segment 2's archive cut once the read was planned, and segment 3 removed: the walk ends in segment 2 (R-43), so
    segment 3 is a file it no longer needs. The part of segment 3, and that of segment 2, which looks for the next
    segment the plan reads, checked only segment 2's header, which passes: the query failed with FILE_NOT_EXIST
    naming segment 3, and with ignoreMissingFiles segment 3's part reported a broken chain. Now, with the option or
    without, the rows are a fresh read's and the reference's (segment 2's bad_header at offset 0 ends the walk), and
    FAILFAST fails with that bad_header."""
    damaged = rf"BinlogException: bad_header in \S*00000002\.dat\.{codec} log=2 offset=0:"
    for case, mode, log, options, change in archive_cut_with_next_removed(tmp_path, codec):
        frame = spark.read.format(FORMAT).options(**options, openCostInBytes="1").load(str(log))
        if mode == "FAILFAST":
            with pytest.raises(Exception, match=damaged):
                _after_planning(frame, change)
            assert expected(log, mode) == ("bad_header", 2, 0), case
            continue
        rows = _after_planning(frame, change)
        fresh = spark.read.format(FORMAT).options(**options, openCostInBytes="1").load(str(log))
        assert rows == _rows(fresh), case
        wanted = expected(log, mode)
        assert ("bad_header", 2, 0, None, 0, None) in wanted[1], case
        assert collected(fresh) == wanted, case


def test_small_segments_are_packed_into_tasks_as_spark_packs_files(spark: SparkSession, tmp_path: Path) -> None:
    """Parts go to tasks as Spark packs split files: small segments share a task, maxPartitionNum caps the tasks,
    openCostInBytes and maxPartitionBytes set how much a task takes; every packing reads the same rows."""
    log = _log(tmp_path / "log", 3000, segment_bytes=20_000)
    segments = len(list(log.glob("*.dat")))
    data = sum(path.stat().st_size for path in log.glob("*.dat"))
    expected = _reference(log)
    cases = {
        "defaults": ({}, range(2, 3)),  # two cores: the segments' weight over two tasks
        "maxPartitionNum": ({"maxPartitionNum": "1"}, range(1, 2)),
        "openCostInBytes": ({"openCostInBytes": "0", "maxPartitionBytes": "100k"}, range(data // 102_400, segments)),
        "minPartitions": ({"minPartitions": "5"}, range(5, 7)),
    }
    for name, (options, tasks) in cases.items():
        frame = spark.read.format(FORMAT).options(**options).load(str(log))
        assert collected(frame) == expected, name
        planned = int(re.search(r"Tasks: (\d+)", frame._jdf.queryExecution().executedPlan().toString())[1])
        assert planned in tasks, (name, planned)
    with pytest.raises(Exception, match="option maxPartitionNum: '0' is not a whole number of at least 1"):
        spark.read.format(FORMAT).option("maxPartitionNum", "0").load(str(log)).collect()


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("report", "option report is not supported"),
        ("ignoreCorruptFiles", "option ignoreCorruptFiles is not supported"),
    ],
)
def test_options_of_the_python_source_it_cannot_honour_are_refused(
    spark: SparkSession, tmp_path: Path, option: str, message: str
) -> None:
    log = _log(tmp_path / "log", 10, segment_bytes=40_000)
    assert collected(spark.read.format(FORMAT).option(option, "false").load(str(log))) == (reference(log)[0], [])
    with pytest.raises(Exception, match=message):
        spark.read.format(FORMAT).option(option, "true").load(str(log)).collect()


def test_a_query_of_fields_of_error_reads_them(spark: SparkSession) -> None:
    """Spark asks for some fields of _error only (nested pruning); the source reads it whole."""
    name = next(name for name in ROWS if _reference(FIXTURES / name)[1])
    classes = sorted(damage[0] for damage in _reference(FIXTURES / name)[1])
    frame = spark.read.format(FORMAT).load(str(FIXTURES / name)).where("_error.error_class is not null")
    assert sorted(row[0] for row in frame.select("_error.error_class").collect()) == classes


def _unpacked_files_open(spark: SparkSession) -> int:
    """The driver JVM's open temporary files of unpacked segments (unlinked at open: seen only as descriptors)."""
    pid = spark.sparkContext._jvm.ProcessHandle.current().pid()  # type: ignore[union-attr]
    return sum("binlog-unpacked-" in os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir() if fd.is_symlink())


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc")
def test_planning_a_compressed_log_leaves_no_unpacked_file_open(spark: SparkSession, tmp_path: Path) -> None:
    """The planner reads the headers of compressed segments, unpacking their start into temporary files: it closes
    its readers, which drops them (as every task's reader does)."""
    log = _log(tmp_path / "log", 600, segment_bytes=40_000)
    assert compress_segments(log, codec="gz")
    before = _unpacked_files_open(spark)
    frame = spark.read.format(FORMAT).load(str(log))
    assert "Tasks: " in frame._jdf.queryExecution().executedPlan().toString()  # planned
    assert _unpacked_files_open(spark) <= before
    assert collected(frame) == (reference(log)[0], [])


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


def many_small_segments(directory: Path) -> Path:
    """A log of at least ten small segments."""
    log = _log(directory, 600, segment_bytes=8_000)
    assert len(list(log.glob("*.dat"))) >= 10
    return log


def assert_one_listing_in_one_task(spark: SparkSession, log: Path, path: str) -> None:
    """One task reads every segment of ``log``, at ``path``, listing its directory once (the binlogListings metric
    counts the listings made), and returns the reference's rows."""
    query = spark.read.format(FORMAT).option("maxPartitionNum", "1").load(path).select("log", "offset")
    rows = sorted((row[0], row[1]) for row in query.collect())
    plan = query._jdf.queryExecution().executedPlan()
    assert "Tasks: 1," in plan.toString()
    assert int(plan.collectLeaves().apply(0).metrics().apply("binlogListings").value()) == 1
    assert rows == [(record[0], record[1]) for record in reference(log)[0]]


def test_a_task_lists_a_local_log_directory_once_for_all_its_pieces(spark: SparkSession, tmp_path: Path) -> None:
    """Each piece of a task listed the log directory again, the largest cost of a piece of a small segment: one task
    reading every segment of a log of many small ones made a listing per segment. Now its pieces start from the
    task's listing; the rows are the reference's still. test_jvm_s3 holds S3 to the same."""
    log = many_small_segments(tmp_path / "log")
    assert_one_listing_in_one_task(spark, log, str(log))


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


# -- the sparse index: exact splits, narrowed reads (spec 18.5) ---------------------------------------------------

INTERVAL = 4096


@pytest.fixture(scope="module")
def sealed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sealed segment of about 4.6 MB (20,000 records of 200 bytes, 1 ms apart) and its index."""
    directory = tmp_path_factory.mktemp("sealed") / "log"
    now = [1_700_000_000_000_000]
    with Writer(directory, durability="os", clock_us=lambda: now[0]) as writer:
        for number in range(20_000):
            now[0] += 1_000
            writer.append(b"%08d" % number + b"." * 192)
        writer.cutover()
    build_indexes(directory, interval=INTERVAL)
    return directory


def _scan(frame: DataFrame) -> tuple[list[tuple[int, int, int, bytes]], int, str]:
    """The rows a query returns (log, offset, index, payload), the bytes the source read for it (its
    binlogBytesRead metric, once the query ran) and its executed plan."""
    query = frame.select("log", "offset", "index", "payload")
    rows = sorted((row[0], row[1], row[2], bytes(row[3])) for row in query.collect())
    plan = query._jdf.queryExecution().executedPlan()
    scan = plan.collectLeaves().apply(0)
    return rows, int(scan.metrics().apply("binlogBytesRead").value()), plan.toString()


def _matches(condition: str, index: int, timestamp_us: int | None) -> bool:
    """The Python reading of the conditions below, for the reference's rows."""
    conditions = {
        "index between 7000 and 9000": 7000 <= index <= 9000,
        "index >= 12000 and index < 16000": 12000 <= index < 16000,
        "index = 12345": index == 12345,
        "index in (500, 501, 502)": index in (500, 501, 502),
    }
    if condition in conditions:
        return conditions[condition]
    assert timestamp_us is not None
    return 1700000005000000 < timestamp_us < 1700000006500000


@pytest.mark.spec("R-47")
@pytest.mark.parametrize(
    "condition",
    [
        "index between 7000 and 9000",
        "index >= 12000 and index < 16000",
        "index = 12345",
        "index in (500, 501, 502)",
        "timestamp > timestamp_micros(1700000005000000) and timestamp < timestamp_micros(1700000006500000)",
    ],
)
def test_an_index_or_time_range_is_pushed_and_reads_about_the_bytes_of_its_rows(
    spark: SparkSession, sealed: Path, condition: str
) -> None:
    """The issue's bar: at most twice the bytes of the rows returned, plus what checking the two index entries
    around them takes (an interval each, spec 18.5) and the header reads (R-4)."""
    everything = spark.read.format(FORMAT).load(str(sealed))
    records, read, plan = _scan(everything.where(condition))
    column = "timestamp" if "timestamp" in condition else "index"
    expected = sorted(
        (row[0], row[1], row[2], row[5]) for row in reference(sealed)[0] if _matches(condition, row[2], row[4])
    )
    assert records == expected and expected
    assert f"({column}," in plan.split("PushedFilters: [")[1].split("]")[0]
    row_bytes = sum(RECORD_HEADER_SIZE + len(row[3]) for row in records)
    assert 0 < read <= 2 * row_bytes + 4 * INTERVAL + 8 * 256, (read, row_bytes)
    _, whole, _ = _scan(everything)
    assert whole >= (sealed / "00000001.dat").stat().st_size - 256


def test_a_filter_on_a_negative_long_index_or_an_upper_bound_alone_narrows_nothing(
    spark: SparkSession, sealed: Path
) -> None:
    """Spark's long holds indexes of 2^63 and more as negative numbers, which `index < 3` keeps: such a bound
    would leave out rows Spark returns, so it is not used."""
    frame = spark.read.format(FORMAT).load(str(sealed))
    for condition in ("index < 3", "index > -5 and index < 3"):
        records, read, _ = _scan(frame.where(condition))
        assert [row[2] for row in records] == [1, 2]
        assert read >= (sealed / "00000001.dat").stat().st_size - 256, condition


@pytest.mark.spec("R-27", "R-47")
@pytest.mark.parametrize("split_bytes", ["1k", "7k", "100k"])
def test_splits_cut_at_index_entries_are_exact_over_payloads_that_hold_records(
    spark: SparkSession, tmp_path: Path, split_bytes: str
) -> None:
    """The split-size invariance of issue 20 on a log whose payloads are valid records of the same log."""
    log = log_of_logs(tmp_path / "log", 3000, interval=512)
    frame = spark.read.format(FORMAT).option("maxPartitionBytes", split_bytes).option("mode", "FAILFAST")
    assert collected(frame.load(str(log))) == (strict_reference(log), [])


def test_without_pushdown_filters_neither_prune_nor_narrow(spark: SparkSession, sealed: Path) -> None:
    """Option pushdown=false, for a log whose timestamps go back (W-9 broken): every segment read whole."""
    frame = spark.read.format(FORMAT).option("pushdown", "false").load(str(sealed))
    records, read, plan = _scan(frame.where("index between 7000 and 9000 and timestamp > timestamp_micros(0)"))
    assert [row[2] for row in records] == list(range(7000, 9001))
    assert "PushedFilters: []" in plan
    assert read >= (sealed / "00000001.dat").stat().st_size - 256
    with pytest.raises(Exception, match="option pushdown: 'maybe' is not true or false"):
        spark.read.format(FORMAT).option("pushdown", "maybe").load(str(sealed)).collect()
