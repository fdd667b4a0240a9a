"""The sparse index (spec 18) in the Spark source: splits cut at checked entries, and reads narrowed to the
entries around an index or time range.

A "log of logs" is the hard case for splits: each payload is a whole, valid
record of the same log with the index and time of the record holding it, so
the boundary search of spec 10.5 finds false boundaries in payloads; only cuts
at checked index entries make every split size read the same rows.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from binlog_frames import collected, log_of_logs, planned, split_options, strict_reference
from pyspark.sql import SparkSession
from pyspark.sql.datasource import GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual

from openbinlog import Writer, build_indexes
from openbinlog._format import RECORD_HEADER_SIZE, index_name
from openbinlog._sparse_index import IndexEntryInfo, decode_entry, encode_index, entry_offset, parse_index_header

LOG_OF_LOGS_RECORDS = 600
INTERVAL = 1 << 16  # the default interval of an index (openbinlog._sparse_index.DEFAULT_INTERVAL)


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A log of logs with the index of its sealed segment 1."""
    return log_of_logs(tmp_path_factory.mktemp("index") / "log", LOG_OF_LOGS_RECORDS)


def _segment_1(directory: Path) -> Path:
    return directory / "00000001.dat"


def _without_index(directory: Path, into: Path) -> Path:
    shutil.copytree(directory, into, ignore=shutil.ignore_patterns("*.idx"))
    return into


# -- splits ------------------------------------------------------------------------------------


@pytest.mark.spec("R-47", "R-27", "R-40")
@pytest.mark.parametrize("splits", [1, 7, 100])
def test_spark_rows_of_a_log_of_logs_do_not_depend_on_the_split_size(
    spark: SparkSession, logs: Path, splits: int
) -> None:
    expected = [record for record in strict_reference(logs) if record[0] == 1]
    assert len(expected) == LOG_OF_LOGS_RECORDS
    reader = spark.read.format("binlog")
    for key, value in split_options(_segment_1(logs).stat().st_size, splits).items():
        reader = reader.option(key, value)
    df = reader.load(str(_segment_1(logs)))
    assert df.rdd.getNumPartitions() == splits
    assert collected(df) == (expected, [])


@pytest.mark.spec("R-40")
def test_spark_plan_of_a_log_of_logs_without_its_index_reports_ambiguous_split(
    spark: SparkSession, logs: Path, tmp_path: Path
) -> None:
    bare = _without_index(logs, tmp_path / "bare")
    reader = spark.read.format("binlog")
    for key, value in split_options(_segment_1(bare).stat().st_size, 7).items():
        reader = reader.option(key, value)
    df = reader.load(str(_segment_1(bare)))
    records, damages = collected(df)
    assert "ambiguous_split" in {damage[0] for damage in damages}
    assert records != [record for record in strict_reference(logs) if record[0] == 1]


@pytest.mark.spec("R-47")
def test_a_stale_index_plans_as_no_index(logs: Path, tmp_path: Path) -> None:
    bare = _without_index(logs, tmp_path / "bare")
    stale = shutil.copytree(logs, tmp_path / "stale")
    _lie(stale, "stale")
    options = split_options(_segment_1(logs).stat().st_size, 7)
    assert planned(_segment_1(stale), **options) == planned(_segment_1(bare), **options)


@pytest.mark.spec("R-47")
def test_entries_moved_onto_embedded_records_are_never_cuts(logs: Path, tmp_path: Path) -> None:
    lying = shutil.copytree(logs, tmp_path / "lying")
    _lie(lying, "into_payloads")
    records, damages, tasks = planned(_segment_1(lying), **split_options(_segment_1(logs).stat().st_size, 7))
    assert (records, damages) == ([record for record in strict_reference(logs) if record[0] == 1], [])
    # The index passes the index check, no entry passes the entry check: as openbinlog.split_offsets, the
    # segment is cut only at checked entries, so here not at all. The lie costs parallelism, never a record.
    assert tasks == 1


def _lie(directory: Path, how: str) -> None:
    """Index entries moved onto the record each payload embeds (same index and time, valid CRCs), or an index
    whose segment end is not the segment's."""
    path = directory / index_name(1)
    data = path.read_bytes()
    info = parse_index_header(data)
    assert info is not None
    entries = [decode_entry(data[entry_offset(k) : entry_offset(k + 1)]) for k in range(info.entry_count)]
    if how == "stale":
        info = type(info)(**{**{f: getattr(info, f) for f in info.__slots__}, "segment_end": info.segment_end + 1})
        shift = 0
    else:
        shift = RECORD_HEADER_SIZE  # the embedded record starts where the payload of the one holding it does
    moved = [IndexEntryInfo(e.index, e.offset + shift, e.timestamp_us, e.span_crc) for e in entries if e is not None]
    path.write_bytes(encode_index(info, moved))


# -- narrowing an index or time range ----------------------------------------------------------

READS = "openbinlog_spark.reads"
PUSHDOWN = "openbinlog_spark.pushdown"


def _sealed(directory: Path, records: int = 20_000, size: int = 200) -> Path:
    """A sealed segment of a few MB (records of ``size`` bytes of payload, 1 ms apart) and its index."""
    now = [1_700_000_000_000_000]
    with Writer(directory, durability="os", clock_us=lambda: now[0]) as writer:
        for number in range(records):
            now[0] += 1_000
            writer.append(b"%08d" % number + b"." * (size - 8))
        writer.cutover()
    build_indexes(directory, interval=INTERVAL)
    return directory


@pytest.fixture(scope="module")
def sealed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _sealed(tmp_path_factory.mktemp("sealed") / "log")


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def read_lines() -> Iterator[list[str]]:
    """The lines the source logs, in this process, about what it reads."""
    handler = _Lines()
    logger = logging.getLogger(READS)
    logger.addHandler(handler)
    try:
        yield handler.lines
    finally:
        logger.removeHandler(handler)


def _bytes_read(lines: list[str]) -> int:
    return sum(int(line.split()[1]) for line in lines if line.startswith("read "))


def _time(us: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=us)


@pytest.mark.spec("R-47")
def test_a_read_narrowed_by_the_index_reads_at_most_twice_its_rows_and_two_intervals(
    sealed: Path, read_lines: list[str]
) -> None:
    everything = strict_reference(sealed)
    stamp = {record[2]: record[4] for record in everything}
    assert _segment_1(sealed).stat().st_size > 4 << 20
    cases = [
        ([GreaterThanOrEqual(("index",), 7_000), LessThanOrEqual(("index",), 9_000)], lambda r: 7_000 <= r[2] <= 9_000),
        ([GreaterThan(("index",), 19_990)], lambda r: r[2] > 19_990),
        ([LessThan(("index",), 3)], lambda r: r[2] < 3),
        ([GreaterThanOrEqual(("index",), 12_345), LessThanOrEqual(("index",), 12_345)], lambda r: r[2] == 12_345),
        (
            [GreaterThan(("timestamp",), _time(stamp[5_000])), LessThan(("timestamp",), _time(stamp[6_500]))],
            lambda r: stamp[5_000] < r[4] < stamp[6_500],
        ),
    ]
    for filters, matches in cases:
        read_lines.clear()
        records, damages, _ = planned(sealed, filters=filters)
        rows = [record for record in records if matches(record)]
        assert rows == [record for record in everything if matches(record)] and damages == []
        row_bytes = sum(RECORD_HEADER_SIZE + len(record[5]) for record in rows)
        assert _bytes_read(read_lines) <= 2 * row_bytes + 2 * INTERVAL, (filters, read_lines)
    # Split as well (three tasks), the narrowed range still reads only its own bytes and a read past each cut.
    read_lines.clear()
    filters = [GreaterThanOrEqual(("index",), 1_000), LessThan(("index",), 16_000)]
    records, _, tasks = planned(sealed, filters=filters, minPartitions=3, openCostInBytes=1)
    assert tasks == 3
    rows = [record for record in records if 1_000 <= record[2] < 16_000]
    assert rows == [record for record in everything if 1_000 <= record[2] < 16_000]
    assert _bytes_read(read_lines) <= 2 * sum(RECORD_HEADER_SIZE + len(record[5]) for record in rows)


@pytest.mark.spec("R-47")
def test_without_a_usable_index_a_filtered_read_reads_the_whole_segment(
    sealed: Path, tmp_path: Path, read_lines: list[str]
) -> None:
    stale = shutil.copytree(sealed, tmp_path / "stale")
    _lie(stale, "stale")
    bare = _without_index(sealed, tmp_path / "bare")
    filters = [GreaterThanOrEqual(("index",), 7_000), LessThanOrEqual(("index",), 9_000)]
    for directory in (stale, bare):
        read_lines.clear()
        records, _, _ = planned(directory, filters=filters)
        assert len(records) == 20_000
        assert _bytes_read(read_lines) >= _segment_1(sealed).stat().st_size - 256
