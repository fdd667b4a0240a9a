"""The data source's planning and reading, run in-process (no Spark), against the reference reader.

These are the exhaustive checks: every damage kind, every mode, split-size
invariance, pruning and the file options. ``test_spark_read.py`` runs the
same code paths through a real Spark.
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
from collections.abc import Callable
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
import zstandard
from binlog_frames import (
    LOG_ID,
    payloads,
    planned,
    raw_segment,
    record_offsets,
    reference,
    reference_to_its_end,
    split_options,
    strict_reference,
    write_segment,
)
from logtools import FaultyFileSystem, append_raw, commit_offset, flip_bit, read_entries, segment
from pyspark.errors import PySparkException
from pyspark.sql.datasource import EqualTo, GreaterThan, GreaterThanOrEqual, In, LessThan
from test_legacy import legacy_segment

from openbinlog import BinlogError, ChecksumMismatchError, Writer
from openbinlog._crc import masked_crc32c
from openbinlog._records import encode_record
from openbinlog_spark.source import BinlogDataSource

CLOCK_START = 1_700_000_000_000_000


def _clock() -> Callable[[], int]:
    now = [CLOCK_START]

    def tick() -> int:
        now[0] += 1_000
        return now[0]

    return tick


def build_log(directory: Path, *, records: int = 240, cut_every: int = 80, size: int = 120, **writer: object) -> Path:
    """A log of several segments: asqns on two records in three, one empty payload, a clock that ticks."""
    with Writer(directory, durability="os", clock_us=_clock(), **writer) as log:  # type: ignore[arg-type]
        for number, payload in enumerate(payloads(records, size)):
            log.append(b"" if number == 5 else payload, asqn=number if number % 3 else -1)
            if number % cut_every == cut_every - 1 and number != records - 1:
                log.cutover()
    return directory


def assert_reads_as_reference(directory: Path, **options: object) -> None:
    records, damages, _ = planned(directory, **options)
    expected_records, expected_damages = reference(directory)
    assert records == expected_records
    assert damages == sorted(expected_damages, key=lambda item: (item[1] or 0, item[2] or 0, item[0]))


# -- valid logs ---------------------------------------------------------------


def test_valid_log_reads_exactly_as_the_reference_reader(tmp_path: Path) -> None:
    directory = build_log(tmp_path / "log")
    records, damages, _ = planned(directory)
    assert damages == []
    assert records == strict_reference(directory)
    assert len(records) == 240


def test_record_larger_than_the_read_chunk_is_read_whole(tmp_path: Path) -> None:
    directory = tmp_path / "log"
    with Writer(directory, durability="os") as log:
        log.append_many([b"small", os.urandom(50_000), b"after"])
    records, damages, _ = planned(directory, readChunkBytes=4096)
    assert damages == []
    assert records == strict_reference(directory)


def test_preallocated_segments_stop_at_the_commit_point_not_the_zeros(tmp_path: Path) -> None:
    directory = build_log(tmp_path / "log", records=60, cut_every=1000, preallocate=64 << 10)
    assert segment(directory, 1).stat().st_size > commit_offset(segment(directory, 1))
    assert_reads_as_reference(directory)


def test_open_segment_with_a_successor_reads_to_its_finished_end(tmp_path: Path) -> None:
    # Publications lost (a header that never reached the disk), then a cutover: segment 1 is
    # open with its commit point at 256, and its records are only reachable by spec 8.4.
    directory = tmp_path / "log"
    with Writer(directory, durability="os") as log:
        log.append(b"published")
    with Writer(directory, durability="os", fs=FaultyFileSystem(drop_header_writes=True)) as log:
        log.append(b"beyond the commit point")
        log.cutover()
        log.append(b"never published: segment 2 is the last one")
    records, damages, _ = planned(directory)
    assert [record[5] for record in records] == [b"published", b"beyond the commit point"]
    assert records == strict_reference(directory) and damages == []


def test_blank_last_segment_is_absent(tmp_path: Path) -> None:
    directory = build_log(tmp_path / "log", records=10)
    (directory / "00000002.dat").write_bytes(bytes(256))
    assert_reads_as_reference(directory)


def test_legacy_version_1_segments_are_numbered_across_segments(tmp_path: Path) -> None:
    directory = tmp_path / "legacy"
    write_segment(directory, legacy_segment([b"record-0", b"record-1", b"record-2"], log=1, closed=True, next_log=2), 1)
    write_segment(directory, legacy_segment([], log=2, closed=True, next_log=3), 2)
    write_segment(directory, legacy_segment([b"x" * 3000, b""], log=3, closed=False), 3)
    records, damages, _ = planned(directory, readChunkBytes=1024)
    assert [record[2] for record in records] == [1, 2, 3, 4, 5]
    assert all(record[4] is None for record in records)  # version 1 records carry no timestamp
    assert records == strict_reference(directory) and damages == []


@pytest.mark.parametrize("codec", ["gz", "zst"])
def test_compressed_sealed_segments_read_like_the_plain_ones(tmp_path: Path, codec: str) -> None:
    directory = build_log(tmp_path / "log")
    expected = strict_reference(directory)
    for log in (1, 2):
        plain = segment(directory, log)
        data = plain.read_bytes()
        packed = gzip.compress(data) if codec == "gz" else zstandard.ZstdCompressor().compress(data)
        plain.with_name(plain.name + "." + codec).write_bytes(packed)
        plain.unlink()
    records, damages, _ = planned(directory)
    assert records == expected and damages == []


def test_plain_segment_wins_over_its_compressed_copy(tmp_path: Path) -> None:
    directory = build_log(tmp_path / "log")
    (directory / "00000001.dat.gz").write_bytes(gzip.compress(b"not the segment"))
    assert_reads_as_reference(directory)


# -- damage -------------------------------------------------------------------


def _flip_payload(directory: Path) -> None:
    path = segment(directory, 2)
    flip_bit(path, record_offsets(path)[10] + 60)


def _flip_record_header(directory: Path) -> None:
    path = segment(directory, 2)
    flip_bit(path, record_offsets(path)[20] + 12)


def _zero_region(directory: Path) -> None:
    path = segment(directory, 2)
    data = bytearray(path.read_bytes())
    start = record_offsets(path)[30] + 7
    data[start : start + 700] = bytes(700)
    path.write_bytes(bytes(data))


def _misdirected_record(directory: Path) -> None:
    # A valid record written at the place of another (fault T12): checksums pass, the index does not.
    path = segment(directory, 2)
    data = bytearray(path.read_bytes())
    offsets = record_offsets(path)
    size = offsets[41] - offsets[40]
    data[offsets[40] : offsets[40] + size] = data[offsets[60] : offsets[60] + size]
    path.write_bytes(bytes(data))


def _cut_file(directory: Path) -> None:
    path = segment(directory, 3)
    os.truncate(path, record_offsets(path)[50] + 17)


def _asqn_going_back(directory: Path) -> None:
    write_segment(directory, raw_segment(payloads(30), asqns=[*range(15), 3, *range(100, 114)]))


def _must_understand_frame(directory: Path) -> None:
    data = bytearray(raw_segment(payloads(30)))
    offset = 256 + 10 * (40 + 120)
    data[offset : offset + 160] = encode_record(11, payloads(1)[0], frame=2)
    write_segment(directory, bytes(data))


def _hostile_length(directory: Path) -> None:
    # A length of nearly 2 GiB whose header checksum is valid: memory must stay bounded (T15).
    data = bytearray(raw_segment(payloads(30)))
    offset = 256 + 12 * 160
    record = bytearray(encode_record(13, payloads(1)[0]))
    record[0:4] = (2**31 - 2).to_bytes(4, "big")
    record[36:40] = masked_crc32c(bytes(record[:36])).to_bytes(4, "big")
    data[offset : offset + 160] = record
    write_segment(directory, bytes(data))


DAMAGE = {
    "payload_bit_flip": (_flip_payload, True),
    "record_header_bit_flip": (_flip_record_header, True),
    "zeroed_region": (_zero_region, True),
    "misdirected_record": (_misdirected_record, True),
    "file_cut_below_commit_point": (_cut_file, True),
    "asqn_going_back": (_asqn_going_back, False),
    "must_understand_frame": (_must_understand_frame, False),
    "hostile_length": (_hostile_length, False),
}


def damaged_log(root: Path, kind: str) -> Path:
    damage, on_a_written_log = DAMAGE[kind]
    directory = root / kind
    if on_a_written_log:
        build_log(directory)
    damage(directory)
    return directory


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_permissive_read_reports_each_damage_like_the_tolerant_reference(tmp_path: Path, kind: str) -> None:
    directory = damaged_log(tmp_path, kind)
    records, damages, _ = planned(directory)
    expected_records, expected_damages = reference(directory)
    assert records == expected_records
    assert len(damages) == len(expected_damages) >= 1
    for got, want in zip(damages, expected_damages, strict=True):
        assert got[:4] == want[:4] and got[5] == want[5]  # class, log, offset, index, resume index
    if kind == "file_cut_below_commit_point":
        # Spec 10.4 skips to S' = min(segment end, file size): the bytes that exist.
        path = segment(directory, 3)
        assert damages[0][4] == path.stat().st_size - damages[0][2]
    else:
        assert [got[4] for got in damages] == [want[4] for want in expected_damages]


@pytest.mark.parametrize(
    "kind", ["payload_bit_flip", "zeroed_region", "misdirected_record", "file_cut_below_commit_point"]
)
@pytest.mark.parametrize("splits", [7, 100])
def test_split_size_does_not_change_the_rows(tmp_path: Path, kind: str, splits: int) -> None:
    directory = damaged_log(tmp_path, kind)
    whole = planned(directory, maxPartitionBytes="1g")
    biggest = max(path.stat().st_size for path in directory.glob("*.dat"))
    split = planned(directory, **split_options(biggest, splits))
    assert split[2] >= splits
    assert split[:2] == whole[:2]


@pytest.mark.parametrize("cores", [1, 2, 3])
def test_one_and_a_half_segments_make_one_equal_task_per_core(tmp_path: Path, cores: int) -> None:
    directory = tmp_path / "log"
    with Writer(directory, durability="os", max_segment_bytes=40_000) as log:
        for payload in payloads(150, 300):
            log.append(payload)
    first, second = (path.stat().st_size for path in sorted(directory.glob("*.dat")))
    assert second < first * 3 // 4  # Spark's packing would make three tasks for two cores
    options = {"minPartitions": str(cores), "openCostInBytes": "1k"}
    source = BinlogDataSource({"path": str(directory), **options})
    reader = source.reader(source.schema())
    tasks = [sum(item.weight for item in partition.value) for partition in reader.partitions()]
    assert len(tasks) == cores
    assert max(tasks) - min(tasks) <= 2
    records, damages, _ = planned(directory, **options)
    assert (records, damages) == (strict_reference(directory), [])


@pytest.mark.parametrize(("cores", "tasks"), [(2, 4), (3, 3), (4, 4)])
def test_more_tasks_than_cores_come_in_whole_waves(tmp_path: Path, cores: int, tasks: int) -> None:
    directory = tmp_path / "log"
    with Writer(directory, durability="os", max_segment_bytes=40_000) as log:
        for payload in payloads(150, 300):
            log.append(payload)
    total = sum(path.stat().st_size for path in directory.glob("*.dat"))
    # Three tasks by size: on two cores that is two waves with one core idle in the second.
    options = {"minPartitions": str(cores), "openCostInBytes": "1k", "maxPartitionBytes": str(total // 3 + 1)}
    source = BinlogDataSource({"path": str(directory), **options})
    partitions = source.reader(source.schema()).partitions()
    weights = [sum(item.weight for item in partition.value) for partition in partitions]
    assert len(weights) == tasks
    assert max(weights) - min(weights) <= 2
    records, damages, _ = planned(directory, **options)
    assert (records, damages) == (strict_reference(directory), [])


def test_split_size_does_not_change_a_valid_log(tmp_path: Path) -> None:
    directory = tmp_path / "log"
    with Writer(directory, durability="os") as log:
        # Payloads that hold whole valid records make every split search meet false candidates.
        # (A payload ending in records that continue the log's indexes is the limit spec 10.5 states.)
        log.append_many([encode_record(10**6, payload) + payload for payload in payloads(400, 90)])
    expected = strict_reference(directory)
    size = segment(directory).stat().st_size
    for splits in (1, 7, 100, 997):
        records, damages, count = planned(directory, **split_options(size, splits))
        assert (records, damages) == (expected, [])
        if splits < 997:  # a thousand ranges of a few hundred bytes: some hold no boundary at all
            assert count == splits


def test_torn_tail_beyond_the_commit_point_is_not_damage(tmp_path: Path) -> None:
    directory = build_log(tmp_path / "log")
    last = segment(directory, 3)
    append_raw(last, encode_record(999, b"valid but never published") + os.urandom(300) + bytes(4096))
    records, damages, _ = planned(directory)
    assert damages == []
    assert records == strict_reference(directory)
    report = planned(directory, report="true")
    assert report[:2] == ([], [])


def test_dropmalformed_drops_damage_and_keeps_every_valid_record(tmp_path: Path) -> None:
    directory = damaged_log(tmp_path, "payload_bit_flip")
    records, damages, _ = planned(directory, mode="DROPMALFORMED")
    assert damages == []
    assert records == reference(directory)[0]


def test_failfast_names_the_file_offset_and_index_of_the_first_damage(tmp_path: Path) -> None:
    directory = damaged_log(tmp_path, "payload_bit_flip")
    with pytest.raises(ChecksumMismatchError) as raised:
        planned(directory, mode="FAILFAST")
    with pytest.raises(ChecksumMismatchError) as expected:
        strict_reference(directory)
    assert (raised.value.log, raised.value.offset, raised.value.index) == (
        expected.value.log,
        expected.value.offset,
        expected.value.index,
    )
    assert raised.value.path == str(segment(directory, 2))
    assert str(segment(directory, 2)) in str(raised.value) and f"offset {raised.value.offset}" in str(raised.value)


def test_corruption_report_lists_damage_only(tmp_path: Path) -> None:
    directory = damaged_log(tmp_path, "zeroed_region")
    records, damages, _ = planned(directory, report="true")
    assert records == []  # report rows have no record columns: nothing parses as a record
    source_rows = planned(directory)[1]
    assert damages == source_rows


# -- the chain and damaged headers ---------------------------------------------


def test_missing_middle_segment_is_chain_broken_and_the_rest_is_read(tmp_path: Path) -> None:
    directory = build_log(tmp_path / "log")
    segment(directory, 2).unlink()
    records, damages, _ = planned(directory)
    expected_records, expected_damages = reference(directory)
    assert records == expected_records
    assert (
        [damage[:4] for damage in damages]
        == [("chain_broken", 2, None, 81)]
        == [damage[:4] for damage in expected_damages]
    )


@pytest.mark.parametrize("foreign", ["log_id", "base_index"])
def test_segment_that_does_not_continue_its_predecessor_is_chain_broken(tmp_path: Path, foreign: str) -> None:
    directory = tmp_path / "log"
    write_segment(directory, raw_segment(payloads(5), sealed=True), 1)
    other = bytes(reversed(LOG_ID)) if foreign == "log_id" else LOG_ID
    write_segment(
        directory, raw_segment(payloads(5), log=2, base_index=6 if foreign == "log_id" else 9, log_id=other), 2
    )
    records, damages, _ = planned(directory)
    expected_records, expected_damages = reference(directory)
    assert records == expected_records and len(records) == 10
    assert (
        [damage[:4] for damage in damages] == [("chain_broken", 2, 0, 6)] == [damage[:4] for damage in expected_damages]
    )


@pytest.mark.parametrize("mode", ["PERMISSIVE", "FAILFAST"])
def test_the_chain_check_after_a_damaged_last_record_is_made_whatever_the_split(tmp_path: Path, mode: str) -> None:
    """The last record of segment 1 damaged: the walk finds nothing to resume at, ends the segment at S' with the
    damaged record's index and reports the chain to segment 2, whose base index lies above it, broken (spec 10.4,
    R-39). Where the last range of segment 1 started inside that record, it found no boundary and read nothing, and
    the range before it, whose walk reached S, made no chain check: the chain_broken row was missing."""
    directory = build_log(tmp_path / "log", records=40, cut_every=20, size=400)
    last = [entry for entry in read_entries(directory) if entry.log == 1][-1]
    segment = directory / "00000001.dat"
    data = bytearray(segment.read_bytes())
    data[last.offset + 45] ^= 0x10
    segment.write_bytes(bytes(data))
    expected_records, expected_damages = reference(directory)
    assert [damage[0] for damage in expected_damages] == ["checksum_mismatch", "chain_broken"]
    for splits in range(1, 12):
        options = split_options(segment.stat().st_size, splits)
        if mode == "FAILFAST":
            with pytest.raises(BinlogError) as failed:
                planned(directory, mode=mode, **options)
            assert failed.value.error_class == "checksum_mismatch", splits
        else:
            records, damages, _ = planned(directory, mode=mode, **options)
            assert (records, damages) == (expected_records, expected_damages), splits


def test_a_damaged_header_is_reported_once_and_ends_the_walk_as_the_reference_reader_ends_it(tmp_path: Path) -> None:
    """Segment 3 was read after the damaged header of segment 2, as if the log went on there (spec readers 10.4);
    ignoreCorruptFiles drops the row, not the end of the walk."""
    directory = build_log(tmp_path / "log")
    flip_bit(segment(directory, 2), 40)  # inside the log id: the header checksum fails
    records, damages, _ = planned(directory)
    with pytest.raises(BinlogError) as stopped:
        strict_reference(directory)
    assert [damage[:3] for damage in damages] == [(stopped.value.error_class, 2, stopped.value.offset)]
    assert damages[0][0] == "bad_header"
    assert sorted({record[0] for record in records}) == [1]
    assert records == reference_to_its_end(directory)[0]
    assert len(records) == 80
    kept, dropped, _ = planned(directory, ignoreCorruptFiles="true")
    assert (kept, dropped) == (records, [])


def test_compressed_segment_that_cannot_be_unpacked_is_a_bad_header(tmp_path: Path) -> None:
    directory = build_log(tmp_path / "log")
    plain = segment(directory, 1)
    packed = gzip.compress(plain.read_bytes())
    (directory / "00000001.dat.gz").write_bytes(packed[: len(packed) // 2])
    plain.unlink()
    records, damages, _ = planned(directory)
    assert [damage[:2] for damage in damages] == [("bad_header", 1)]
    assert records == [] == reference_to_its_end(directory)[0]  # a bad_header of the first segment: nothing is read
    with pytest.raises(BinlogError, match="cannot be unpacked"):
        planned(directory, mode="FAILFAST")


# -- pruning and file options ----------------------------------------------------


def test_index_filters_prune_segments_by_their_headers(tmp_path: Path) -> None:
    directory = build_log(tmp_path / "log")
    everything = planned(directory, minPartitions=3)
    assert everything[2] == 3
    late = planned(directory, filters=[GreaterThan(("index",), 170)], minPartitions=3)
    assert late[2] == 1  # only segment 3 holds indexes above 160
    assert [record for record in everything[0] if record[2] > 170] == [record for record in late[0] if record[2] > 170]
    exact = planned(directory, filters=[In(("index",), (5, 200))], minPartitions=3)
    assert {record[0] for record in exact[0]} == {1, 3}
    none = planned(directory, filters=[EqualTo(("log",), 9)])
    assert none[:3] == ([], [], 0)


def test_timestamp_filters_prune_segments_by_their_headers(tmp_path: Path) -> None:
    directory = build_log(tmp_path / "log")
    records = planned(directory)[0]
    boundary = records[100][4]  # a record of segment 2
    moment = datetime.fromtimestamp(boundary / 1_000_000, UTC)
    early = planned(directory, filters=[LessThan(("timestamp",), moment)], minPartitions=3)
    assert {record[0] for record in early[0]} == {1, 2}
    late = planned(directory, filters=[GreaterThanOrEqual(("timestamp",), moment)], minPartitions=3)
    assert {record[0] for record in late[0]} == {2, 3}


def _partitioned(root: Path) -> tuple[Path, Path]:
    first = build_log(root / "app=billing" / "day=2024-05-01", records=20, cut_every=10)
    second = build_log(root / "app=audit" / "day=2024-05-02", records=30, cut_every=1000)
    return first, second


def test_hive_partition_directories_become_typed_columns(tmp_path: Path) -> None:
    _partitioned(tmp_path)
    source = BinlogDataSource({"path": str(tmp_path)})
    schema = source.schema()
    assert [(field.name, field.dataType.simpleString()) for field in schema.fields[7:9]] == [
        ("app", "string"),
        ("day", "date"),
    ]
    reader = source.reader(schema)
    rows = [row for partition in reader.partitions() for batch in reader.read(partition) for row in batch.to_pylist()]
    assert {(row["app"], row["day"]) for row in rows} == {("billing", date(2024, 5, 1)), ("audit", date(2024, 5, 2))}
    assert sum(row["app"] == "billing" for row in rows) == 20
    assert planned(tmp_path, filters=[EqualTo(("app",), "audit")])[2] == 1
    flat = BinlogDataSource({"path": str(tmp_path), "recursiveFileLookup": "true"}).schema()
    assert "app" not in flat.fieldNames()


def test_file_options_select_segments(tmp_path: Path) -> None:
    directory = build_log(tmp_path / "log")
    old = segment(directory, 1)
    os.utime(old, (1_600_000_000, 1_600_000_000))
    chosen = planned(directory, pathGlobFilter="0000000{2,3}.dat")
    assert {record[0] for record in chosen[0]} == {2, 3}
    recent = planned(directory, modifiedAfter="2021-01-01T00:00:00")
    assert {record[0] for record in recent[0]} == {2, 3}
    ancient = planned(directory, modifiedBefore="2021-01-01T00:00:00")
    assert {record[0] for record in ancient[0]} == {1}
    glob = planned(str(tmp_path / "l*"))
    assert len(glob[0]) == 240


def test_missing_paths_fail_unless_ignore_missing_files(tmp_path: Path) -> None:
    directory = build_log(tmp_path / "log", records=10)
    paths = [str(directory), str(tmp_path / "nowhere")]
    with pytest.raises(BinlogError, match="does not exist"):
        planned(paths)
    assert len(planned(paths, ignoreMissingFiles="true")[0]) == 10


def test_several_logs_in_one_load_keep_their_own_chains(tmp_path: Path) -> None:
    first, second = _partitioned(tmp_path)
    shutil.copy(segment(first, 2), tmp_path / "stray")  # not a segment name: ignored
    records, damages, _ = planned([str(first), str(second)])
    assert damages == []
    assert len(records) == 50
    assert sorted(records) == sorted(strict_reference(first) + strict_reference(second))


@pytest.mark.parametrize("ignore", [False, True])
def test_segment_removed_between_planning_and_reading(tmp_path: Path, ignore: bool) -> None:
    directory = build_log(tmp_path / "log")
    source = BinlogDataSource({"path": str(directory), "ignoreMissingFiles": str(ignore).lower()})
    reader = source.reader(source.schema())
    partitions = reader.partitions()
    segment(directory, 1).unlink()  # retention ran while the query was planned

    def read_all() -> list[int]:
        return [row["log"] for partition in partitions for batch in reader.read(partition) for row in batch.to_pylist()]

    if ignore:
        assert sorted(set(read_all())) == [2, 3]
    else:
        # Spark's error for a planned file gone at read time, as the JVM source and Spark's file sources raise it.
        removed = re.escape(str(segment(directory, 1)))
        with pytest.raises(BinlogError, match=rf"^\[FAILED_READ_FILE\.FILE_NOT_EXIST\] .* file {removed}\. ") as error:
            read_all()
        assert isinstance(error.value, PySparkException)
        assert error.value.getCondition() == "FAILED_READ_FILE.FILE_NOT_EXIST"
        assert error.value.path == str(segment(directory, 1))
