"""The sparse index (spec 18) in the Java reader core, through its conformance testee (``org.openbinlog.format``).

Logs are written by the reference ``Writer`` and indexed by ``build_indexes``. Planned splits (capability
``split_plan``) cut at checked entries must return every record once, even where payloads hold valid records of
the same log (a "log of logs"); a good, missing, stale, torn, edited or forged index must give the records of no
index (R-33, R-47); and a read narrowed to an index or time range (the testee's ``bounds``, beyond the protocol)
must return the reference's rows within the range, reading about their bytes only.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from logtools import T0, read_entries, write_seek_log
from strategies import index_byte_edits, index_embedded_moves, index_faults, index_forgeries, seek_logs
from test_index_hostile import _forge, _with_crcs
from test_java_reader import ask, java  # noqa: F401 (java: the module's testee session, a fixture)
from test_sparse_index import _damage_index, _forge_embedded, _index_path, _log_of_logs

from openbinlog import Entry, Writer, build_indexes
from openbinlog._format import RECORD_HEADER_SIZE
from openbinlog._sparse_index import IndexEntryInfo, decode_entry, encode_index, entry_offset, parse_index_header
from openbinlog_conformance.client import SessionTestee

Json = dict[str, Any]
Row = tuple[int, int, int, str]
INTERVAL = 64
EXAMPLES = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def rows(records: Sequence[Json]) -> list[Row]:
    return [(r["log"], int(r["offset"]), int(r["index"]), r["payload"]) for r in records]


def reference_rows(entries: Sequence[Entry]) -> list[Row]:
    return [(e.log, e.offset, e.index, e.payload.hex()) for e in entries]


def planned_splits(testee: SessionTestee, directory: Path, log: int, parts: int) -> Json:
    return ask(testee, {"path": str(directory), "log": log, "parts": parts})


def narrowed(testee: SessionTestee, directory: Path, plan_bytes: int, **bounds: int) -> Json:
    wire = {name: str(value) for name, value in bounds.items()}
    return ask(testee, {"path": str(directory), "plan_bytes": plan_bytes, "bounds": wire})


def within(entries: Sequence[Entry], **bounds: int) -> list[Entry]:
    """The entries a narrowed read must return (it may return others near them, which its caller filters)."""
    low, high = bounds.get("index_low", 0), bounds.get("index_high", 2**64 - 1)
    since, until = bounds.get("low_us", -(2**63)), bounds.get("high_us", 2**63 - 1)
    return [e for e in entries if low <= e.index <= high and since <= (e.timestamp_us or 0) <= until]


def assert_narrowed_read_is_the_reference(answer: Json, everything: Sequence[Entry], **bounds: int) -> None:
    assert answer["outcome"] == "accept", answer["error"]
    got = [row for row in rows(answer["records"]) if row in set(reference_rows(within(everything, **bounds)))]
    assert got == reference_rows(within(everything, **bounds)), bounds
    assert set(rows(answer["records"])) <= set(reference_rows(everything))  # nothing a read from the start lacks


# -- (a) planned splits of a log of logs ------------------------------------------------------------------------------


@pytest.mark.spec("R-47", "R-27", "R-40")
@pytest.mark.parametrize("parts", [1, 7, 100])
def test_planned_splits_cut_at_entries_return_a_log_of_logs_once(
    java: SessionTestee,  # noqa: F811
    tmp_path: Path,
    parts: int,
) -> None:
    everything = [e for e in _log_of_logs(tmp_path / "log", 600) if e.log == 1]
    answer = planned_splits(java, tmp_path / "log", 1, parts)
    assert (answer["outcome"], answer["error"]) == ("accept", None)
    assert rows(answer["records"]) == reference_rows(everything)
    cuts = [int(cut) for cut in answer["cuts"]]
    assert cuts[0] == 256 and cuts == sorted(set(cuts)) and len(cuts) <= parts
    assert set(cuts[1:]) <= {e.offset for e in everything}  # record boundaries, never an embedded record
    if parts > 1:
        assert len(cuts) > parts // 2  # entries near every fraction asked for


@pytest.mark.spec("R-47", "R-27", "R-40")
@pytest.mark.parametrize("plan_bytes", [700, 5000])
def test_a_plan_of_a_log_of_logs_cuts_at_entries_and_reads_it_once(
    java: SessionTestee,  # noqa: F811
    tmp_path: Path,
    plan_bytes: int,
) -> None:
    everything = _log_of_logs(tmp_path / "log", 600)
    answer = ask(java, {"path": str(tmp_path / "log"), "plan_bytes": plan_bytes})
    assert (answer["outcome"], answer["error"]) == ("accept", None)
    assert rows(answer["records"]) == reference_rows(everything)


def test_without_its_index_planned_splits_of_a_log_of_logs_are_ambiguous(
    java: SessionTestee,  # noqa: F811
    tmp_path: Path,
) -> None:
    _log_of_logs(tmp_path / "log", 600)
    _index_path(tmp_path / "log", 1).unlink()
    answer = planned_splits(java, tmp_path / "log", 1, 100)
    assert answer["outcome"] == "reject" and answer["error"]["class"] == "ambiguous_split"


@pytest.mark.spec("R-47")
def test_entries_moved_onto_embedded_records_are_never_used(
    java: SessionTestee,  # noqa: F811
    tmp_path: Path,
) -> None:
    """Each entry names the record embedded in the payload of the record it named, with that record's index and
    time and valid CRCs: only the landing walk refuses it."""
    directory = tmp_path / "log"
    everything = _log_of_logs(directory, 600)
    _forge_embedded(directory, everything)
    answer = planned_splits(java, directory, 1, 7)
    assert answer["cuts"] == ["256"]  # no entry passes the entry check: one split, as without cuts
    assert rows(answer["records"]) == reference_rows([e for e in everything if e.log == 1])
    for bounds in ({"index_low": 57, "index_high": 150}, {"low_us": T0 + 57_000, "high_us": T0 + 150_500}):
        assert_narrowed_read_is_the_reference(narrowed(java, directory, 2**40, **bounds), everything, **bounds)


# -- (b) the state of the index changes no record ---------------------------------------------------------------------


def _indexed_log(directory: Path, items: Sequence[Any]) -> list[Entry]:
    everything = write_seek_log(directory, [*items, None])  # the last cutover finishes every segment with records
    build_indexes(directory, interval=INTERVAL)
    return everything


def _indexes(directory: Path) -> list[int]:
    return sorted(int(path.name[:8]) for path in directory.glob("*.idx"))


def _same_with_any_index(testee: SessionTestee, directory: Path, everything: Sequence[Entry]) -> None:
    """Planned splits of every segment, and reads narrowed to a few ranges, give what the reference gives."""
    for log in sorted({e.log for e in everything}):
        answer = planned_splits(testee, directory, log, 5)
        assert (answer["outcome"], answer["error"]) == ("accept", None)
        assert rows(answer["records"]) == reference_rows([e for e in everything if e.log == log])
    last = everything[-1].index if everything else 0
    stamps = sorted({e.timestamp_us or 0 for e in everything}) or [T0]
    ranges: list[dict[str, int]] = [{}, {"index_low": last // 3, "index_high": 2 * last // 3}]
    ranges += [{"index_low": last}, {"index_high": 1}, {"low_us": stamps[len(stamps) // 2]}]
    ranges += [{"low_us": stamps[len(stamps) // 3], "high_us": stamps[2 * len(stamps) // 3]}]
    for bounds in ranges:
        for plan_bytes in (90, 2**40):
            assert_narrowed_read_is_the_reference(
                narrowed(testee, directory, plan_bytes, **bounds), everything, **bounds
            )


@pytest.mark.spec("R-47", "R-33")
@EXAMPLES
@given(log=seek_logs, fault=index_faults, where=st.integers(min_value=0, max_value=2**16))
def test_planned_and_narrowed_reads_do_not_depend_on_the_state_of_the_index(
    java: SessionTestee,  # noqa: F811
    log: tuple[list[Any], int],
    fault: str,
    where: int,
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch) / "log"
        everything = _indexed_log(directory, log[0])
        for number in _indexes(directory):
            _damage_index(directory, number, fault, where)
        _same_with_any_index(java, directory, everything)


@pytest.mark.spec("R-47", "R-33")
@EXAMPLES
@given(log=seek_logs, edits=index_byte_edits)
def test_byte_edits_of_index_files_change_no_record(
    java: SessionTestee,  # noqa: F811
    log: tuple[list[Any], int],
    edits: tuple[int, list[tuple[int, int]], int | None, bool],
) -> None:
    which, changes, length, fix = edits
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch) / "log"
        everything = _indexed_log(directory, log[0])
        for number in _indexes(directory):
            if which and which != number:
                continue
            data = bytearray(_index_path(directory, number).read_bytes())
            for at, value in changes:
                data[at % len(data)] = value
            if length is not None:
                data = data[:length] if length <= len(data) else data + bytes(length - len(data))
            _index_path(directory, number).write_bytes(_with_crcs(bytes(data)) if fix else bytes(data))
        _same_with_any_index(java, directory, everything)


@pytest.mark.spec("R-47", "R-33")
@EXAMPLES
@given(log=seek_logs, forgery=index_forgeries)
def test_forged_entries_with_valid_checksums_change_no_record(
    java: SessionTestee,  # noqa: F811
    log: tuple[list[Any], int],
    forgery: tuple[int, list[tuple[str, int, int]]],
) -> None:
    which, ops = forgery
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch) / "log"
        everything = _indexed_log(directory, log[0])
        path = _index_path(directory, which)
        if path.exists():
            path.write_bytes(_forge(path.read_bytes(), everything, ops))
        _same_with_any_index(java, directory, everything)


# -- narrowing reads about the rows' own bytes ------------------------------------------------------------------------

NARROW_INTERVAL = 4096


@pytest.fixture(scope="module")
def sealed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Entry]]:
    """A sealed segment of 2000 records of 100 to 300 bytes with its index, then an empty segment."""
    directory = tmp_path_factory.mktemp("narrow") / "log"
    now = [T0]
    with Writer(directory, durability="os", clock_us=lambda: now[0]) as writer:
        for index in range(1, 2001):
            now[0] += 1000
            writer.append(b"%d." % index * (100 + index % 200 // 4))
        writer.cutover()
    build_indexes(directory, interval=NARROW_INTERVAL)
    return directory, read_entries(directory)


@pytest.mark.parametrize(
    ("low", "high"), [(1, 100), (700, 800), (1234, 1236), (1500, 2000), (1990, 2000), (1000, 1000)]
)
def test_a_narrowed_read_reads_about_the_bytes_of_its_rows(
    java: SessionTestee,  # noqa: F811
    sealed: tuple[Path, list[Entry]],
    low: int,
    high: int,
) -> None:
    directory, everything = sealed
    answer = narrowed(java, directory, 2**40, index_low=low, index_high=high)
    assert_narrowed_read_is_the_reference(answer, everything, index_low=low, index_high=high)
    wanted = within(everything, index_low=low, index_high=high)
    row_bytes = sum(RECORD_HEADER_SIZE + len(e.payload) for e in wanted)
    segment_bytes = int(answer["bytes_read"]) - int(answer["index_bytes_read"])
    # The bar: twice the rows' bytes, two intervals and the segment header. The entry checks of both ends (a
    # landing walk of about an interval each, spec 18.5) and END's reads of the header come on top, which
    # rows spanning two intervals pay for; a read of a few rows costs up to about four intervals.
    allowance = 0 if row_bytes >= 2 * NARROW_INTERVAL else 2 * NARROW_INTERVAL + 8 * 256
    assert segment_bytes <= 2 * row_bytes + 2 * NARROW_INTERVAL + 256 + allowance, (segment_bytes, row_bytes)


def test_a_narrowed_read_of_a_segment_without_its_index_reads_it_whole(
    java: SessionTestee,  # noqa: F811
    sealed: tuple[Path, list[Entry]],
    tmp_path: Path,
) -> None:
    directory, everything = sealed
    bare = shutil.copytree(directory, tmp_path / "bare", ignore=shutil.ignore_patterns("*.idx"))
    answer = narrowed(java, bare, 2**40, index_low=700, index_high=800)
    assert_narrowed_read_is_the_reference(answer, everything, index_low=700, index_high=800)
    assert rows(answer["records"]) == reference_rows(everything)
    assert int(answer["bytes_read"]) >= (bare / "00000001.dat").stat().st_size - 256


@pytest.fixture(scope="module")
def nested(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Entry]]:
    """A log of logs: every payload a valid record of the log with the index and time of the one holding it."""
    directory = tmp_path_factory.mktemp("nested") / "log"
    return directory, _log_of_logs(directory, 120, interval=128)


def _moved_into_payloads(data: bytes, everything: Sequence[Entry], moves: Sequence[int]) -> bytes:
    """The entries ``moves`` names (modulo their count) moved onto the record embedded in the payload of the
    record they name, where a record of ``everything`` holds it; the others as they are."""
    info = parse_index_header(data)
    if info is None or info.entry_count == 0 or len(data) != info.file_size:
        return data
    entries = [decode_entry(data[entry_offset(k) : entry_offset(k + 1)]) for k in range(info.entry_count)]
    held = {e.offset for e in everything}
    for move in moves:
        k = move % len(entries)
        entry = entries[k]
        if entry is not None and entry.offset in held:
            entries[k] = IndexEntryInfo(entry.index, entry.offset + RECORD_HEADER_SIZE, entry.timestamp_us, 0)
    return encode_index(info, [entry for entry in entries if entry is not None])


@pytest.mark.spec("R-47", "R-40")
@EXAMPLES
@given(ops=index_forgeries.map(lambda forgery: forgery[1]), moves=index_embedded_moves)
def test_forged_entries_over_embedded_records_change_no_record(
    java: SessionTestee,  # noqa: F811
    nested: tuple[Path, list[Entry]],
    ops: list[tuple[str, int, int]],
    moves: list[int],
) -> None:
    base, everything = nested
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(shutil.copytree(base, Path(scratch) / "log"))
        path = _index_path(directory, 1)
        path.write_bytes(_moved_into_payloads(_forge(path.read_bytes(), everything, ops), everything, moves))
        _same_with_any_index(java, directory, everything)
