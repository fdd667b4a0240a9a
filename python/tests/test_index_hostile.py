"""Hostile tests of the sparse index (spec 18; R-47, R-33, W-45).

The standard held to: with any index file, however damaged, forged, odd or
concurrently changing, every reading entry point (``Reader`` from the start,
by index and by time, ``split_offsets`` + ``read_split``, ``verify``,
``binlog dump --from-index/--since``) returns what the same log gives
without indexes (by time: on logs whose timestamps do not decrease), save
that a seek starting at a checked entry does not report damage before it;
bad input never gives an untyped exception, a hang or an allocation sized by
an untrusted length; a reader never modifies a file. Builders
(``build_index``, ``build_indexes``, ``binlog index``, ``check_indexes``)
never damage a log, never index a damaged or unfinished segment, leave no
temporary file behind on failure and report errors typed.

The Hypothesis strategies that damage and forge index files are in
``strategies`` (``index_byte_edits``, ``index_forgeries``).
"""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from logtools import T0, legacy_segment, segment, write_seek_log
from strategies import index_byte_edits, index_forgeries
from test_sparse_index import _counting_reads, _forge_embedded, _index_path, _log_of_logs

from openbinlog import (
    AmbiguousSplitError,
    BinlogError,
    Entry,
    IndexNote,
    Reader,
    Writer,
    build_index,
    build_indexes,
    check_indexes,
    read_split,
    split_offsets,
    verify,
)
from openbinlog._crc import masked_crc32c
from openbinlog._format import SEGMENT_NAME
from openbinlog._segment import LegacyHeaderInfo
from openbinlog._segment_file import SegmentFile
from openbinlog._sparse_index import (
    IndexEntryInfo,
    IndexInfo,
    decode_entry,
    encode_index,
    entry_offset,
    parse_index_header,
)
from openbinlog.cli import main

INTERVAL = 100
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _modes_bind_this_process() -> bool:
    """Whether a file of mode 000 is unreadable here (not as root, unless without CAP_DAC_OVERRIDE)."""
    with tempfile.NamedTemporaryFile() as probe:
        os.chmod(probe.name, 0)
        try:
            os.close(os.open(probe.name, os.O_RDONLY))
        except PermissionError:
            return True
        return False


MODES_BIND = _modes_bind_this_process()
ADDRESS_SPACE = 1 << 30  # a child that reads an endless or huge index runs out of this, not of the machine
U64 = 2**64 - 1
I64_MIN, I64_MAX = -(2**63), 2**63 - 1

Key = tuple[Any, ...]
Outcome = tuple[tuple[Key, ...], Key | None]  # the records returned, then the typed error that ended them


def _digest(directory: Path) -> dict[str, str]:
    """Name, type, mode, size and content of everything in ``directory`` (``logtools.tree_digest`` reads every
    name as a file: a FIFO would block it, a link to /dev/zero never end). Links are not followed."""
    found: dict[str, str] = {}
    for root, folders, files in os.walk(directory):
        for name in [*folders, *files]:
            path = Path(root) / name
            info = path.lstat()
            if stat.S_ISREG(info.st_mode) and info.st_size <= 1 << 24 and os.access(path, os.R_OK):
                content = hashlib.sha256(path.read_bytes()).hexdigest()
            elif stat.S_ISLNK(info.st_mode):
                content = os.readlink(path)
            else:
                content = f"{info.st_ino}:{info.st_mtime_ns}"
            found[str(path.relative_to(directory))] = f"{stat.filemode(info.st_mode)}:{info.st_size}:{content}"
    return found


# -- what a reader returns ------------------------------------------------------------------------------------------


def _where(exc: BinlogError) -> Key:
    """A typed error as the comparison sees it: class, file name (directories differ), log, offset, index."""
    name = None if exc.path is None else os.path.basename(exc.path)
    return (type(exc).__name__, exc.error_class, name, exc.log, exc.offset, exc.index)


def _entry(entry: Entry) -> Key:
    return (entry.log, entry.offset, entry.index, entry.timestamp_us, entry.asqn, entry.payload)


def _collect(entries: Callable[[], Iterable[Entry]]) -> Outcome:
    """The records ``entries`` yields, and the typed error that stopped it; anything untyped propagates."""
    got: list[Key] = []
    try:
        for entry in entries():
            got.append(_entry(entry))
    except BinlogError as exc:
        return tuple(got), _where(exc)
    return tuple(got), None


def _reading(directory: Path, **options: Any) -> Callable[[], Iterator[Entry]]:
    def run() -> Iterator[Entry]:
        with Reader(directory, **options) as reader:
            yield from reader

    return run


def _tolerant(directory: Path, **options: Any) -> Key:
    """A tolerant read: its records and the damage it reports."""
    with Reader(directory, tolerant=True, **options) as reader:
        records = tuple(_entry(entry) for entry in reader)
        damage = tuple(
            (
                d.error_class,
                None if d.path is None else os.path.basename(d.path),
                d.log,
                d.offset,
                d.index,
                d.next_index,
            )
            for d in reader.damage
        )
    return records, damage


def _split_records(directory: Path, log: int, parts: int) -> Outcome:
    """Every record of segment ``log`` read as ``split_offsets`` cuts it, split after split."""

    def run() -> Iterator[Entry]:
        cuts = split_offsets(directory, log, parts)
        assert cuts[0] == 256 and cuts == sorted(set(cuts)), cuts
        for start, stop in zip(cuts, [*cuts[1:], 2**63], strict=True):
            yield from read_split(directory, log, start, stop)

    return _collect(run)


def _verified(directory: Path) -> Key:
    """What ``verify`` says of the records; its notes on indexes must be notes, never damage (R-47)."""
    report = verify(directory)
    assert all(isinstance(note, IndexNote) for note in report.indexes)
    damage = tuple(
        (d.error_class, None if d.path is None else os.path.basename(d.path), d.log, d.offset, d.index)
        for d in report.damage
    )
    return report.records, report.first_index, report.last_index, report.ok, damage


def _iso(time_us: int) -> str:
    return (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=time_us)).isoformat()


def _dump(directory: Path, *options: str) -> Key:
    result = CliRunner().invoke(main, ["dump", str(directory), *options])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout


@dataclasses.dataclass(frozen=True)
class Plan:
    """What to ask of a log: seek targets, split counts, and which CLI seeks to run."""

    indexes: tuple[int, ...]
    times: tuple[int, ...]
    splits: tuple[tuple[int, int], ...]  # (log, parts)
    dumps: tuple[tuple[str, ...], ...]
    nested: bool = False  # payloads hold valid records of the log: splits without an index may be ambiguous


def _plan_for(everything: list[Entry], *, finished: Iterable[int], nested: bool = False, every: int = 1) -> Plan:
    """Seeks to every ``every``-th index and time of the log (and beyond both ends), splits, CLI seeks."""
    indexes = sorted({entry.index for entry in everything[::every]} | {0, 1, everything[-1].index + 1})
    stamps = sorted({entry.timestamp_us or 0 for entry in everything})
    times = sorted({*stamps[::every], *(t + 1 for t in stamps[1::every]), T0 - 1, I64_MIN, I64_MAX})
    middle = everything[len(everything) // 2]
    dumps = (
        ("--from-index", str(middle.index)),
        ("--from-index", str(everything[-1].index + 1)),
        ("--since", _iso(middle.timestamp_us or 0)),
    )
    splits = tuple((log, parts) for log in finished for parts in (1, 4, 16))
    return Plan(tuple(indexes), tuple(times), splits, dumps, nested)


def _observe(directory: Path, plan: Plan, *, with_verify: bool = True) -> dict[Key, Any]:
    """Everything the readers return for ``directory``, checking on the way that none of them changes it."""
    before = _digest(directory)
    seen: dict[Key, Any] = {("read",): _collect(_reading(directory)), ("tolerant",): _tolerant(directory)}
    for index in plan.indexes:
        seen["index", index] = _collect(_reading(directory, start_index=index))
    for time_us in plan.times:
        seen["time", time_us] = _collect(_reading(directory, start_time=time_us))
    middle = plan.indexes[len(plan.indexes) // 2]
    seen["tolerant-index", middle] = _tolerant(directory, start_index=middle)
    seen["one-segment-index", middle] = _collect(_reading(directory, start_index=middle, one_segment=True))
    for log, parts in plan.splits:
        outcome = _split_records(directory, log, parts)
        if plan.nested and outcome[1] is not None and outcome[1][0] == AmbiguousSplitError.__name__:
            outcome = (("ambiguous",),), None  # what a split of a log of logs may say, with or without an index
        seen["split", log, parts] = outcome
    for options in plan.dumps:
        seen["dump", *options] = _dump(directory, *options)
    if with_verify:
        seen["verify",] = _verified(directory)
    assert _digest(directory) == before, "a reader changed the log directory"
    return seen


def _same(got: dict[Key, Any], expected: dict[Key, Any], *, nested: bool = False) -> None:
    for key, value in expected.items():
        if key not in got:
            continue
        if nested and key[0] == "split" and (("ambiguous",),) in (got[key][0], value[0]):
            # Without an index a split of a log of logs may be ambiguous; with one it must be exact or ambiguous.
            exact = tuple(r for r in expected["read",][0] if r[0] == key[1]), None
            assert got[key] in (((("ambiguous",),), None), exact), key
            continue
        assert got[key] == value, key


# -- logs -------------------------------------------------------------------------------------------------------------


def _plain_log(directory: Path) -> list[Entry]:
    """Three finished segments of 25 records (0 to 70 bytes, timestamps that repeat and rise) and a live fourth."""
    items: list[tuple[bytes, int | None, int] | None] = []
    for number in range(75):
        items.append((bytes([number % 251]) * (number * 7 % 71), None if number % 4 else 1, number % 3))
        if number % 25 == 24:
            items.append(None)
    everything = write_seek_log(directory, [*items, (b"live", None, 1)])
    results = build_indexes(directory, interval=INTERVAL)
    assert [r.status for r in results] == ["built", "built", "built", "skipped"]
    return everything


@dataclasses.dataclass(frozen=True)
class Base:
    """A log with good indexes, what its readers return without them, and the plan that asked."""

    path: Path
    everything: list[Entry]
    plan: Plan
    expected: dict[Key, Any]

    def copy(self, target: Path) -> Path:
        shutil.copytree(self.path, target)
        return target

    def indexes(self) -> dict[int, bytes]:
        return {int(p.name[:8]): p.read_bytes() for p in sorted(self.path.glob("*.idx"))}


def _base(
    root: Path, build: Callable[[Path], list[Entry]], *, finished: Iterable[int], nested: bool = False, full: bool
) -> Base:
    path = root / "log"
    everything = build(path)
    plan = _plan_for(everything, finished=finished, nested=nested, every=1 if full else 3)
    clean = root / "clean"
    shutil.copytree(path, clean)
    for index in clean.glob("*.idx"):
        index.unlink()
    return Base(path, everything, plan, _observe(clean, plan))


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory, full_run: bool) -> Base:
    return _base(tmp_path_factory.mktemp("plain"), _plain_log, finished=(1, 2, 3), full=full_run)


@pytest.fixture(scope="module")
def nested(tmp_path_factory: pytest.TempPathFactory, full_run: bool) -> Base:
    """A log of logs: each payload a whole valid record of the log with the index and time of its holder."""
    return _base(
        tmp_path_factory.mktemp("nested"),
        lambda p: _log_of_logs(p, 60, interval=INTERVAL),
        finished=(1,),
        nested=True,
        full=full_run,
    )


def _entries(data: bytes) -> list[IndexEntryInfo]:
    info = parse_index_header(data)
    assert info is not None
    found = [decode_entry(data[entry_offset(k) : entry_offset(k + 1)]) for k in range(info.entry_count)]
    assert all(entry is not None for entry in found)
    return [entry for entry in found if entry is not None]


def _info(data: bytes) -> IndexInfo:
    info = parse_index_header(data)
    assert info is not None
    return info


def _with_header_crc(data: bytearray) -> bytearray:
    data[68:72] = masked_crc32c(bytes(data[:68])).to_bytes(4, "big")
    return data


def _with_crcs(data: bytes) -> bytes:
    """``data`` with its header CRC and the CRC of each whole entry made valid: edits reach the field checks."""
    fixed = bytearray(data)
    if len(fixed) >= 72:
        _with_header_crc(fixed)
    for at in range(72, len(fixed) - 31, 32):
        fixed[at + 28 : at + 32] = masked_crc32c(bytes(fixed[at : at + 28])).to_bytes(4, "big")
    return bytes(fixed)


def _check(base: Base, directory: Path, *, with_verify: bool = True) -> None:
    _same(_observe(directory, base.plan, with_verify=with_verify), base.expected, nested=base.plan.nested)


# -- Hypothesis: random damage to good index files --------------------------------------------------------------------


def _apply_edits(directory: Path, base: Base, edits: tuple[int, list[tuple[int, int]], int | None, bool]) -> None:
    which, changes, length, fix = edits
    for log, good in base.indexes().items():
        if which and which != log:
            continue
        data = bytearray(good)
        for at, value in changes:
            if data:
                data[at % len(data)] = value
        if length is not None:
            data = data[:length] if length <= len(data) else data + bytes(length - len(data))
        _index_path(directory, log).write_bytes(_with_crcs(bytes(data)) if fix else bytes(data))


Edits = tuple[int, list[tuple[int, int]], int | None, bool]
Ops = list[tuple[str, int, int]]
# Hypothesis runs here: few examples by default, many with --full (test_long_explorations_of_hostile_indexes).
QUICK = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
LONG = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _edited_case(base: Base, edits: Edits) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        directory = base.copy(Path(scratch) / "log")
        _apply_edits(directory, base, edits)
        _check(base, directory)


@pytest.mark.spec("R-47", "R-33")
@QUICK
@given(edits=index_byte_edits)
def test_randomindex_byte_edits_of_index_files_change_nothing_a_reader_returns(plain: Base, edits: Edits) -> None:
    _edited_case(plain, edits)


def _forge(good: bytes, everything: list[Entry], ops: list[tuple[str, int, int]]) -> bytes:
    info, entries = _info(good), _entries(good)
    offsets = [0, 1, 255, 256, 257, U64, 2**63, info.segment_end, info.segment_end - 1, info.segment_end + 1]
    offsets += [e.offset + shift for e in everything for shift in (0, 1, -1, 4, 40)]
    indexes = [0, 1, U64, 2**63, info.base_index - 1, info.end_index, info.end_index - 1]
    indexes += [e.index + shift for e in everything for shift in (0, 1, -1)]
    stamps = [I64_MIN, I64_MAX, 0] + [(e.timestamp_us or 0) + shift for e in everything for shift in (0, 1, -1)]
    for what, where, value in ops:
        if not entries:
            break
        k = where % len(entries)
        entry = entries[k]
        if what == "index":
            entries[k] = dataclasses.replace(entry, index=indexes[value % len(indexes)])
        elif what == "offset":
            entries[k] = dataclasses.replace(entry, offset=offsets[value % len(offsets)])
        elif what == "time":
            entries[k] = dataclasses.replace(entry, timestamp_us=stamps[value % len(stamps)])
        elif what == "swap":
            j = value % len(entries)
            entries[k], entries[j] = entries[j], entries[k]
        elif what == "duplicate":
            entries.insert(k, entry)
        elif what == "drop":
            del entries[k]
        elif what == "record":  # a true record of the log, of this segment or another
            record = everything[value % len(everything)]
            entries[k] = IndexEntryInfo(record.index, record.offset, record.timestamp_us or 0)
        elif what == "reverse":
            entries.reverse()
        else:  # every entry moved onto the next record's offset, keeping its index and time
            entries = [
                dataclasses.replace(e, offset=n.offset)
                for e, n in zip(entries, [*entries[1:], entries[0]], strict=True)
            ]
    entries = entries[: info.end_index - info.base_index]  # at most the index check allows: the entries are read
    return encode_index(info, entries)


def _forged_case(base: Base, log: int, ops: Ops) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        directory = base.copy(Path(scratch) / "log")
        _index_path(directory, log).write_bytes(_forge(base.indexes()[log], base.everything, ops))
        _check(base, directory)


@pytest.mark.spec("R-47", "R-44")
@QUICK
@given(forgery=index_forgeries)
def test_forged_entries_with_valid_checksums_change_nothing_a_reader_returns(
    plain: Base, forgery: tuple[int, Ops]
) -> None:
    _forged_case(plain, *forgery)


@pytest.mark.spec("R-47", "R-40")
@QUICK
@given(ops=index_forgeries.map(lambda forgery: forgery[1]))
def test_forged_entries_over_a_log_of_logs_change_nothing_a_reader_returns(nested: Base, ops: Ops) -> None:
    _forged_case(nested, 1, ops)


def test_entries_moved_onto_embedded_records_change_nothing_a_reader_returns(nested: Base, tmp_path: Path) -> None:
    directory = nested.copy(tmp_path / "log")
    _forge_embedded(directory, nested.everything)
    _check(nested, directory)


# -- forged headers ---------------------------------------------------------------------------------------------------


def _forged_header(
    good: bytes, *, entries: bytes | None = None, entry_count: int | None = None, version: int = 1, **fields: Any
) -> bytes:
    """``good`` with header fields replaced under a valid header CRC (``entry_count`` too: the entries stay)."""
    info = _info(good)
    header = bytearray(encode_index(dataclasses.replace(info, **fields), [])[:72])
    header[8:10] = version.to_bytes(2, "big")
    header[56:64] = (info.entry_count if entry_count is None else entry_count).to_bytes(8, "big")
    return bytes(_with_header_crc(header)) + (good[72:] if entries is None else entries)


HEADER_FORGERIES: dict[str, Callable[[bytes], bytes]] = {
    "entry_count_u64_max": lambda good: _forged_header(good, entry_count=U64),
    "entry_count_one_more": lambda good: _forged_header(good, entry_count=_info(good).entry_count + 1),
    "entry_count_one_more_with_an_entry": lambda good: _forged_header(
        good, entry_count=_info(good).entry_count + 1, entries=good[72:] + good[-32:]
    ),
    "entry_count_records_plus_one": lambda good: _forged_header(
        good,
        entry_count=_info(good).end_index - _info(good).base_index + 1,
        entries=good[72:104] * (_info(good).end_index - _info(good).base_index + 1),
    ),
    "entry_count_zero_no_entries": lambda good: _forged_header(good, entry_count=0, entries=b""),
    "entry_count_zero_entries_left": lambda good: _forged_header(good, entry_count=0),
    "interval_zero": lambda good: _forged_header(good, interval=0),
    "interval_one": lambda good: _forged_header(good, interval=1),
    "interval_u32_max": lambda good: _forged_header(good, interval=2**32 - 1),
    "segment_end_plus_one": lambda good: _forged_header(good, segment_end=_info(good).segment_end + 1),
    "segment_end_u64_max": lambda good: _forged_header(good, segment_end=U64),
    "end_index_minus_one": lambda good: _forged_header(good, end_index=_info(good).end_index - 1),
    "end_index_u64_max": lambda good: _forged_header(good, end_index=U64),
    "base_index_zero": lambda good: _forged_header(good, base_index=0),
    "log_id_zero": lambda good: _forged_header(good, log_id=bytes(16)),
    "log_number_other": lambda good: _forged_header(good, log=_info(good).log + 1),
    "segment_version_1": lambda good: _forged_header(good, segment_version=1),
    "version_2": lambda good: _forged_header(good, version=2),
    "version_0": lambda good: _forged_header(good, version=0),
    "header_only_truncated": lambda good: good[:71],
    "one_byte_short": lambda good: good[:-1],
    "one_byte_long": lambda good: good + b"\0",
    "empty": lambda good: b"",
}


@pytest.mark.spec("R-47")
@pytest.mark.parametrize("forgery", sorted(HEADER_FORGERIES))
def test_a_forged_index_header_changes_nothing_a_reader_returns(plain: Base, tmp_path: Path, forgery: str) -> None:
    directory = plain.copy(tmp_path / "log")
    for log, good in plain.indexes().items():
        _index_path(directory, log).write_bytes(HEADER_FORGERIES[forgery](good))
    _check(plain, directory)
    # Readers may use an index of another interval; check_indexes rebuilds with it and finds other entries.
    assert [(note.log, note.usable) for note in check_indexes(directory)] == [(1, False), (2, False), (3, False)]


# -- lies told one at a time ------------------------------------------------------------------------------------------


def _lie(good: bytes, everything: list[Entry], lie: str) -> bytes:
    info, entries = _info(good), _entries(good)
    mine = [e for e in everything if e.log == info.log]
    other = [e for e in everything if e.log != info.log]
    k = len(entries) // 2
    entry = entries[k]
    replace = dataclasses.replace
    table: dict[str, Callable[[], list[IndexEntryInfo]]] = {
        "offset_0": lambda: [*entries[:k], replace(entry, offset=0), *entries[k + 1 :]],
        "offset_255": lambda: [*entries[:k], replace(entry, offset=255), *entries[k + 1 :]],
        "offset_256_for_a_later_record": lambda: [*entries[:k], replace(entry, offset=256), *entries[k + 1 :]],
        "offset_S": lambda: [*entries[:k], replace(entry, offset=info.segment_end), *entries[k + 1 :]],
        "offset_beyond_the_file": lambda: [*entries[:k], replace(entry, offset=2**40), *entries[k + 1 :]],
        "offset_u64_max": lambda: [*entries[:k], replace(entry, offset=U64), *entries[k + 1 :]],
        "offset_inside_the_record": lambda: [*entries[:k], replace(entry, offset=entry.offset + 4), *entries[k + 1 :]],
        "index_0": lambda: [*entries[:k], replace(entry, index=0), *entries[k + 1 :]],
        "index_u64_max": lambda: [*entries[:k], replace(entry, index=U64), *entries[k + 1 :]],
        "index_I_S": lambda: [*entries[:k], replace(entry, index=info.end_index), *entries[k + 1 :]],
        "index_one_more": lambda: [*entries[:k], replace(entry, index=entry.index + 1), *entries[k + 1 :]],
        "time_i64_min": lambda: [*entries[:k], replace(entry, timestamp_us=I64_MIN), *entries[k + 1 :]],
        "time_i64_max": lambda: [*entries[:k], replace(entry, timestamp_us=I64_MAX), *entries[k + 1 :]],
        "every_time_i64_min": lambda: [replace(e, timestamp_us=I64_MIN) for e in entries],
        "every_time_i64_max": lambda: [replace(e, timestamp_us=I64_MAX) for e in entries],
        "reversed": lambda: entries[::-1],
        "all_the_same_entry": lambda: [entry] * len(entries),
        "duplicated": lambda: [e for e in entries for _ in (0, 1)][: len(mine)],
        "every_record": lambda: [IndexEntryInfo(e.index, e.offset, e.timestamp_us or 0) for e in mine],
        "records_of_another_segment": lambda: [
            IndexEntryInfo(e.index, e.offset, e.timestamp_us or 0) for e in other[: len(entries)]
        ],
        "another_segments_offsets": lambda: [
            replace(e, offset=o.offset) for e, o in zip(entries, other[: len(entries)], strict=False)
        ],
        "entry_0_not_the_first_record": lambda: entries[1:],
        "only_the_last_record_lying": lambda: [
            *entries[:1],
            IndexEntryInfo(mine[-1].index, mine[-1].offset, (mine[-1].timestamp_us or 0) + 1),
        ],
    }
    return encode_index(info, table[lie]())


LIES = (
    "offset_0",
    "offset_255",
    "offset_256_for_a_later_record",
    "offset_S",
    "offset_beyond_the_file",
    "offset_u64_max",
    "offset_inside_the_record",
    "index_0",
    "index_u64_max",
    "index_I_S",
    "index_one_more",
    "time_i64_min",
    "time_i64_max",
    "every_time_i64_min",
    "every_time_i64_max",
    "reversed",
    "all_the_same_entry",
    "duplicated",
    "every_record",
    "records_of_another_segment",
    "another_segments_offsets",
    "entry_0_not_the_first_record",
    "only_the_last_record_lying",
)


@pytest.mark.spec("R-47", "R-44")
@pytest.mark.parametrize("lie", LIES)
def test_one_lie_in_every_index_changes_nothing_a_reader_returns(plain: Base, tmp_path: Path, lie: str) -> None:
    directory = plain.copy(tmp_path / "log")
    for log, good in plain.indexes().items():
        _index_path(directory, log).write_bytes(_lie(good, plain.everything, lie))
    _check(plain, directory)
    assert [(note.log, note.usable) for note in check_indexes(directory)] == [(1, False), (2, False), (3, False)]


# -- files that are not index files -----------------------------------------------------------------------------------


def _special(directory: Path, kind: str, other: Path) -> None:
    """Make ``00000002.idx`` something other than an index file."""
    path = _index_path(directory, 2)
    good = path.read_bytes()
    path.unlink()
    if kind == "directory":
        path.mkdir()
        (path / "00000002.idx").write_bytes(good)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev_zero":
        path.symlink_to("/dev/zero")
    elif kind == "dev_null":
        path.symlink_to("/dev/null")
    elif kind == "dangling":
        path.symlink_to(directory / "nowhere.idx")
    elif kind == "loop":
        path.symlink_to(path)
    elif kind == "own_segment":
        path.symlink_to(segment(directory, 2).name)
    elif kind == "hard_link_to_segment":
        os.link(segment(directory, 2), path)
    elif kind == "other_logs_index":
        path.symlink_to(other)
    elif kind == "other_segments_index":
        path.symlink_to(_index_path(directory, 1).name)
    elif kind == "huge_sparse":
        path.write_bytes(good[:72])
        os.truncate(path, 8 << 30)
    else:  # pragma: no cover
        raise AssertionError(kind)


SPECIAL = (
    "directory",
    "fifo",
    "dev_zero",
    "dev_null",
    "dangling",
    "loop",
    "own_segment",
    "hard_link_to_segment",
    "other_logs_index",
    "other_segments_index",
    "huge_sparse",
)


@pytest.fixture(scope="module")
def other_log_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("other")
    _plain_log(root / "log")
    return _index_path(root / "log", 2)


@pytest.mark.spec("R-47", "R-33")
@pytest.mark.parametrize("kind", SPECIAL)
def test_an_index_that_is_not_a_regular_index_file_changes_nothing_a_reader_returns(
    plain: Base, tmp_path: Path, kind: str, other_log_index: Path
) -> None:
    directory = plain.copy(tmp_path / "log")
    _special(directory, kind, other_log_index)
    _check(plain, directory)
    assert [(note.log, note.usable) for note in check_indexes(directory)] == [(1, True), (2, False), (3, True)]


@pytest.mark.skipif(not MODES_BIND, reason="this process reads a file whatever its mode (root)")
def test_an_unreadable_index_changes_nothing_a_reader_returns(plain: Base, tmp_path: Path) -> None:
    directory = plain.copy(tmp_path / "log")
    _index_path(directory, 2).chmod(0)
    _check(plain, directory)
    assert [(note.log, note.usable) for note in check_indexes(directory)] == [(1, True), (2, False), (3, True)]


# -- concurrency: indexes replaced, rebuilt and removed while readers read ---------------------------------------


def test_an_index_replaced_between_opening_a_reader_and_reading_changes_nothing(plain: Base, tmp_path: Path) -> None:
    directory = plain.copy(tmp_path / "log")
    target = next(e for e in plain.everything if e.log == 2 and e.index % 7 == 0)
    forged = _lie(plain.indexes()[2], plain.everything, "every_record")
    with Reader(directory, start_index=target.index) as reader:
        aside = directory / ".00000002.idx.1.tmp"
        aside.write_bytes(_forge(forged, plain.everything, [("shift", 0, 0)]))
        os.replace(aside, _index_path(directory, 2))  # as a builder (or an attacker) renames into place
        got = [_entry(entry) for entry in reader]
        _index_path(directory, 2).unlink()  # and gone while the reader goes on
    assert got == [_entry(e) for e in plain.everything if e.index >= target.index]


def test_seeks_while_indexes_are_rebuilt_and_removed_return_the_same_records(plain: Base, tmp_path: Path) -> None:
    directory = plain.copy(tmp_path / "log")
    stop = threading.Event()
    failures: list[BaseException] = []

    def churn() -> None:
        try:
            turn = 0
            while not stop.is_set():
                turn += 1
                for log in (1, 2, 3):
                    if turn % 3 == 0:
                        _index_path(directory, log).unlink(missing_ok=True)
                    else:
                        build_index(directory, log, interval=(INTERVAL, 7)[turn % 2], rebuild=True)
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)

    thread = threading.Thread(target=churn)
    thread.start()
    try:
        for index in plain.plan.indexes[::5]:
            assert _collect(_reading(directory, start_index=index)) == plain.expected["index", index]
        for time_us in plain.plan.times[::9]:
            assert _collect(_reading(directory, start_time=time_us)) == plain.expected["time", time_us]
    finally:
        stop.set()
        thread.join()
    assert not failures
    assert not list(directory.glob(".*.tmp"))


def _grow(directory: Path) -> None:
    """30 more records, timestamps that repeat and rise, and a cutover after the 21st."""
    now = [T0 + 10_000]
    with Writer(directory, durability="os", clock_us=lambda: now[0]) as writer:
        for number in range(30):
            now[0] += number % 2
            writer.append(b"more %d" % number * (number % 9))
            if number == 20:
                writer.cutover()


def test_an_index_of_the_live_last_segment_is_not_used_while_it_grows(plain: Base, tmp_path: Path) -> None:
    """A forged index describing the live segment as it is now: a writer appends past it and cuts over."""
    directory = plain.copy(tmp_path / "log")
    with SegmentFile(str(directory), 4) as live:
        header = live.header()
        assert not isinstance(header, LegacyHeaderInfo)
        commit = live.commit(header)
    records = [e for e in plain.everything if e.log == 4]
    info = IndexInfo(2, 4, header.log_id, header.base_index, commit.commit_offset, commit.next_index, 0, 1)
    entries = [IndexEntryInfo(e.index, e.offset, e.timestamp_us or 0) for e in records]
    _index_path(directory, 4).write_bytes(encode_index(info, entries))
    clean = tmp_path / "clean"
    shutil.copytree(directory, clean)
    _index_path(clean, 4).unlink()
    for log in (clean, directory):
        _grow(log)
    with Reader(clean) as reader:
        everything = list(reader)
    plan = _plan_for(everything, finished=(4,))
    _same(_observe(directory, plan), _observe(clean, plan))


def _without_indexes(plain: Base, tmp_path: Path, **options: Any) -> Outcome:
    """What a reader returns from ``plain``'s log with no index file in it."""
    clean = tmp_path / "without-indexes"
    if not clean.exists():
        plain.copy(clean)
        for index in clean.glob("*.idx"):
            index.unlink()
    return _collect(_reading(clean, **options))


def _rewrite_in_place_during_the_entry_check(
    monkeypatch: pytest.MonkeyPatch, index: Path, after_check: bytes, log: int
) -> None:
    """Rewrite ``index`` in place (same file, as a tool that writes over it does) when a reader first reads
    segment ``log``'s records, after it has read the index's entries: while it checks the entry it chose."""
    original = SegmentFile.read_at
    done: list[bool] = []

    def read_at(self: SegmentFile, offset: int, size: int) -> bytes:
        if self.log == log and offset >= 256 and not done:
            done.append(True)
            with index.open("r+b") as handle:
                handle.write(after_check)
                handle.truncate(len(after_check))
        return original(self, offset, size)

    monkeypatch.setattr(SegmentFile, "read_at", read_at)


@pytest.mark.spec("R-47")
@pytest.mark.parametrize("change", ["entries_moved_on", "torn"])
def test_an_index_rewritten_in_place_during_a_seek_does_not_move_its_start(
    plain: Base, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    directory = plain.copy(tmp_path / "log")
    good = plain.indexes()[2]
    entries = _entries(good)
    target = entries[len(entries) // 2].index + 1  # the seek starts at the middle entry
    if change == "entries_moved_on":  # each entry now names the true record two entries later
        after = encode_index(_info(good), [entries[min(k + 2, len(entries) - 1)] for k in range(len(entries))])
    else:
        after = good[:72]
    expected = _without_indexes(plain, tmp_path, start_index=target)
    _rewrite_in_place_during_the_entry_check(monkeypatch, _index_path(directory, 2), after, 2)
    assert _collect(_reading(directory, start_index=target)) == expected


# -- an index that cannot be read --------------------------------------------------------------------------------


def _index_entries_fail_to_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """The disk returns EIO for every read of an index file beyond its header (a bad sector under its entries)."""
    original = os.pread

    def pread(fd: int, size: int, offset: int) -> bytes:
        if offset >= 72 and os.readlink(f"/proc/self/fd/{fd}").endswith(".idx"):
            raise OSError(errno.EIO, "Input/output error")
        return original(fd, size, offset)

    monkeypatch.setattr(os, "pread", pread)


SEEKS_OF_AN_UNREADABLE_INDEX = ("start_index", "start_time", "split", "dump")


@pytest.mark.spec("R-47", "R-33")
@pytest.mark.parametrize("reading", SEEKS_OF_AN_UNREADABLE_INDEX)
def test_an_index_whose_entries_cannot_be_read_changes_nothing_a_reader_returns(
    plain: Base, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reading: str
) -> None:
    directory = plain.copy(tmp_path / "log")
    target = next(e for e in plain.everything if e.log == 2 and e.index % 5 == 0)
    stamp = target.timestamp_us or 0
    by_index = _without_indexes(plain, tmp_path, start_index=target.index)
    by_time = _without_indexes(plain, tmp_path, start_time=stamp)
    _index_entries_fail_to_read(monkeypatch)
    if reading == "start_index":
        assert _collect(_reading(directory, start_index=target.index)) == by_index
    elif reading == "start_time":
        assert _collect(_reading(directory, start_time=stamp)) == by_time
    elif reading == "split":
        assert _split_records(directory, 2, 4) == plain.expected["split", 2, 4]
    else:
        options = plain.plan.dumps[0]
        assert _dump(directory, *options) == plain.expected["dump", *options]


def test_an_index_whose_header_cannot_be_read_changes_nothing_a_reader_returns(
    plain: Base, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = plain.copy(tmp_path / "log")
    original = os.pread

    def pread(fd: int, size: int, offset: int) -> bytes:
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".idx"):
            raise OSError(errno.EIO, "Input/output error")
        return original(fd, size, offset)

    monkeypatch.setattr(os, "pread", pread)
    _check(plain, directory, with_verify=False)


# -- files that block or never end, for the tools that read whole index files -----------------------------------------


def _without_blocking_on(fifo: Path, action: Callable[[], Any]) -> tuple[Any, bool]:
    """Run ``action``; return its result (or exception) and whether it blocked on ``fifo``: still running after
    a moment while a reader holds the FIFO open. A blocked action is freed (a writer opens the FIFO and closes
    it, so its read ends), so that the test ends either way."""
    box: list[Any] = []

    def run() -> None:
        try:
            box.append(action())
        except BaseException as exc:
            box.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    blocked = False
    deadline = time.monotonic() + 120
    thread.join(0.3)
    while thread.is_alive() and time.monotonic() < deadline:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # ENXIO while no one reads it
        except OSError:
            thread.join(0.05)
            continue
        try:
            blocked = blocked or stat.S_ISFIFO(os.fstat(fd).st_mode)
        finally:
            os.close(fd)
        thread.join(0.05)
    assert not thread.is_alive()
    return box[0], blocked


def _cli(*args: str) -> Key:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout


@pytest.mark.spec("R-47")
@pytest.mark.parametrize("tool", ["check_indexes", "verify", "binlog verify"])
def test_verify_does_not_block_on_an_index_that_is_a_fifo(plain: Base, tmp_path: Path, tool: str) -> None:
    directory = plain.copy(tmp_path / "log")
    fifo = _index_path(directory, 2)
    fifo.unlink()
    os.mkfifo(fifo)
    action: Callable[[], Any] = {
        "check_indexes": lambda: check_indexes(directory),
        "verify": lambda: verify(directory),
        "binlog verify": lambda: _cli("verify", str(directory)),
    }[tool]
    result, blocked = _without_blocking_on(fifo, action)
    assert not blocked
    assert not isinstance(result, BaseException), result


@pytest.mark.spec("W-45")
@pytest.mark.parametrize("tool", ["build_index", "build_indexes", "binlog index"])
def test_builders_do_not_block_on_an_index_that_is_a_fifo(plain: Base, tmp_path: Path, tool: str) -> None:
    directory = plain.copy(tmp_path / "log")
    fifo = _index_path(directory, 2)
    fifo.unlink()
    os.mkfifo(fifo)
    action: Callable[[], Any] = {
        "build_index": lambda: build_index(directory, 2, interval=INTERVAL),
        "build_indexes": lambda: build_indexes(directory, interval=INTERVAL),
        "binlog index": lambda: _cli("index", str(directory), "--interval", str(INTERVAL)),
    }[tool]
    result, blocked = _without_blocking_on(fifo, action)
    assert not blocked
    assert not isinstance(result, BaseException), result


def test_readers_and_splits_do_not_block_on_an_index_that_is_a_fifo(plain: Base, tmp_path: Path) -> None:
    directory = plain.copy(tmp_path / "log")
    fifo = _index_path(directory, 2)
    fifo.unlink()
    os.mkfifo(fifo)
    result, blocked = _without_blocking_on(fifo, lambda: _observe(directory, plain.plan, with_verify=False))
    assert not blocked
    _same(result, plain.expected)


_CHILD = """
import resource, sys
import openbinlog
limit = int(sys.argv[3])
resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
tool, directory = sys.argv[1], sys.argv[2]
try:
    if tool == "check_indexes":
        print(sorted((note.log, note.usable) for note in openbinlog.check_indexes(directory)))
    elif tool == "verify":
        print(sorted((note.log, note.usable) for note in openbinlog.verify(directory).indexes))
    else:
        print([r.status for r in openbinlog.build_indexes(directory, interval=int(tool))])
except openbinlog.BinlogError as exc:
    print("typed", exc.error_class)
"""


def _in_a_limited_child(tool: str, directory: Path) -> subprocess.CompletedProcess[str]:
    """``tool`` run on ``directory`` by a child whose address space is 1 GiB: an endless read fails there."""
    return subprocess.run(
        [sys.executable, "-c", _CHILD, tool, str(directory), str(ADDRESS_SPACE)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.spec("R-47")
@pytest.mark.parametrize(("tool", "kind"), [("check_indexes", "dev_zero"), ("verify", "huge_sparse")])
def test_verify_memory_is_not_sized_by_an_index_file(
    plain: Base, tmp_path: Path, other_log_index: Path, tool: str, kind: str
) -> None:
    directory = plain.copy(tmp_path / "log")
    _special(directory, kind, other_log_index)
    child = _in_a_limited_child(tool, directory)
    assert (child.returncode, child.stdout) == (0, "[(1, True), (2, False), (3, True)]\n"), child.stderr[-2000:]


_LIMITED_BINLOG = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv.pop(1)), resource.getrlimit(resource.RLIMIT_AS)[1]))
from openbinlog.cli import main
main(prog_name="binlog")
"""


@pytest.mark.spec("R-47")
def test_binlog_verify_in_a_real_process_survives_an_index_linked_to_dev_zero(
    plain: Base, tmp_path: Path, other_log_index: Path
) -> None:
    directory = plain.copy(tmp_path / "log")
    _special(directory, "dev_zero", other_log_index)
    child = subprocess.run(
        [sys.executable, "-c", _LIMITED_BINLOG, str(ADDRESS_SPACE), "verify", str(directory)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert child.returncode == 0, child.stderr[-2000:]
    assert "index 00000002.idx: not used" in child.stdout


def test_builders_in_a_limited_process_replace_an_endless_or_huge_index(
    plain: Base, tmp_path: Path, other_log_index: Path
) -> None:
    for kind in ("dev_zero", "huge_sparse"):
        directory = plain.copy(tmp_path / kind)
        _special(directory, kind, other_log_index)
        child = _in_a_limited_child(str(INTERVAL), directory)
        assert (child.returncode, child.stdout) == (0, "['unchanged', 'built', 'unchanged', 'skipped']\n"), child.stderr
        assert _index_path(directory, 2).read_bytes() == plain.indexes()[2]


# -- the cost of a lying index ----------------------------------------------------------------------------------


@pytest.mark.spec("R-47")
def test_planning_splits_over_a_lying_entry_walks_the_segment_at_most_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "log"
    everything = write_seek_log(directory, [(b"%05d" % n + b"." * 150, None, 1) for n in range(1500)] + [None])
    build_indexes(directory, interval=1 << 12)
    size = segment(directory, 1).stat().st_size
    good = _index_path(directory, 1).read_bytes()
    middle = everything[len(everything) // 2]
    # Entry 1 names a true record, one microsecond off: its landing walk crosses half the segment to refuse it.
    lying = [_entries(good)[0], IndexEntryInfo(middle.index, middle.offset, (middle.timestamp_us or 0) + 1)]
    _index_path(directory, 1).write_bytes(encode_index(_info(good), lying))
    with _counting_reads(monkeypatch) as counted:
        cuts = split_offsets(directory, 1, 64)
    assert cuts[0] == 256
    assert counted[0] <= 2 * size, (counted[0], size)


# -- builders --------------------------------------------------------------------------------------------------------


def _not_index(digest: dict[str, str]) -> dict[str, str]:
    return {name: value for name, value in digest.items() if not name.endswith(".idx")}


def test_builders_index_only_what_verify_finds_intact_on_every_fixture(full_run: bool, tmp_path: Path) -> None:
    """Every fixture log: building changes no other file, leaves no temporary file, fails typed, and indexes
    only finished segments whose own walk is clean (read whole as one split, or version 1)."""
    names = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
    if not full_run:
        names = [n for n in names if any(w in n for w in ("index", "finished", "damage", "flip", "legacy_", "torn"))]
    for name in names:
        directory = tmp_path / name
        shutil.copytree(FIXTURES / name, directory, symlinks=True)
        temps = {p.name for p in directory.glob(".*.tmp")}
        before = _not_index(_digest(directory))
        try:
            results = build_indexes(directory, interval=16, rebuild=True)
        except BinlogError:
            results = []
        assert _not_index(_digest(directory)) == before, name
        assert {p.name for p in directory.glob(".*.tmp")} <= temps, name
        listed = sorted(int(m[1]) for p in directory.iterdir() if (m := SEGMENT_NAME.match(p.name)))
        for result in results:
            if result.status != "built":
                continue
            assert result.log != max(listed), name  # never the last segment
            with SegmentFile(str(directory), result.log) as opened:
                legacy = isinstance(opened.header(), LegacyHeaderInfo)
            if not legacy:
                records = list(read_split(directory, result.log, 256, 2**63))
                info = _info(_index_path(directory, result.log).read_bytes())
                assert len(records) == info.end_index - info.base_index, name
        notes = {note.log: note for note in check_indexes(directory)}
        # Every index built checks out; a version 1 one is intact but not used by this revision's readers (18.6).
        intact = {
            log: note.usable or note.reason.startswith("a version 1 index: intact") for log, note in notes.items()
        }
        assert all(intact[r.log] for r in results if r.status == "built"), (name, notes)


@pytest.mark.spec("W-45")
@pytest.mark.parametrize("fault", ["write", "fsync", "rename", "interrupt", "directory_in_the_way"])
def test_a_builder_that_fails_leaves_the_log_as_it_was_and_no_temporary_file(
    plain: Base, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    directory = plain.copy(tmp_path / "log")
    _index_path(directory, 2).unlink()
    if fault == "directory_in_the_way":
        _index_path(directory, 2).mkdir()
    before = _digest(directory)

    def failing(*_args: object, **_kwargs: object) -> Any:
        if fault == "interrupt":
            raise KeyboardInterrupt
        raise OSError(errno.ENOSPC if fault == "write" else errno.EIO, f"injected {fault} failure")

    if fault != "directory_in_the_way":
        monkeypatch.setattr(os, "write" if fault == "interrupt" else fault, failing)
    with pytest.raises(KeyboardInterrupt if fault == "interrupt" else BinlogError) as caught:
        build_index(directory, 2, interval=INTERVAL)
    monkeypatch.undo()
    error = caught.value
    assert isinstance(error, KeyboardInterrupt) or (isinstance(error, BinlogError) and error.error_class == "io_error")
    assert _digest(directory) == before
    assert not list(directory.glob(".*.tmp"))
    result = CliRunner().invoke(main, ["index", str(directory)])
    assert result.exit_code == (2 if fault == "directory_in_the_way" else 0)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert not list(directory.glob(".*.tmp"))


def test_a_segment_removed_by_retention_while_it_is_indexed_gets_no_index(
    plain: Base, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = plain.copy(tmp_path / "log")
    _index_path(directory, 1).unlink()
    original = SegmentFile.read_at
    removed: list[list[int]] = []

    def read_at(self: SegmentFile, offset: int, size: int) -> bytes:
        if self.log == 1 and offset > 256 and not removed:
            with Writer(directory) as writer:  # retention, as another process would run it, mid-walk
                removed.append(writer.drop_segments(before_log=2))
        return original(self, offset, size)

    monkeypatch.setattr(SegmentFile, "read_at", read_at)
    result = build_index(directory, 1, interval=INTERVAL)
    monkeypatch.undo()
    assert removed == [[1]]
    assert (result.status, result.reason) == ("skipped", "removed while it was indexed")
    assert sorted(p.name for p in directory.iterdir() if p.name.startswith((".", "00000001"))) == []


def test_builders_racing_each_other_in_threads_and_processes_leave_exact_indexes(plain: Base, tmp_path: Path) -> None:
    directory = plain.copy(tmp_path / "log")
    for index in directory.glob("*.idx"):
        index.unlink()
    code = "import sys, openbinlog\nfor _ in range(5): openbinlog.build_indexes(sys.argv[1], interval=int(sys.argv[2]))"
    children = [
        subprocess.Popen([sys.executable, "-c", code, str(directory), str(interval)]) for interval in (INTERVAL, 7)
    ]
    failures: list[BaseException] = []

    def build() -> None:
        try:
            for _ in range(5):
                build_indexes(directory, interval=INTERVAL, rebuild=True)
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)

    threads = [threading.Thread(target=build) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [child.wait(timeout=120) for child in children] == [0, 0]
    assert not failures
    assert not list(directory.glob(".*.tmp"))
    notes = check_indexes(directory)
    assert [(note.log, note.usable) for note in notes] == [(1, True), (2, True), (3, True)]
    _check(plain, directory, with_verify=False)


_STUCK_BUILDER = """
import os, sys, time
import openbinlog
def stuck(fd):
    print("writing", flush=True)
    time.sleep(600)
os.fsync = stuck
openbinlog.build_index(sys.argv[1], 2, interval=int(sys.argv[2]))
"""


def test_a_builder_killed_mid_write_leaves_a_temporary_file_that_only_a_dead_builder_loses(
    plain: Base, tmp_path: Path
) -> None:
    directory = plain.copy(tmp_path / "log")
    _index_path(directory, 2).unlink()
    child = subprocess.Popen(
        [sys.executable, "-c", _STUCK_BUILDER, str(directory), str(INTERVAL)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "writing\n"
        temps = list(directory.glob(".00000002.idx.*.tmp"))
        assert len(temps) == 1
        with Writer(directory):  # the writer's clean-up keeps a temporary file a live builder holds
            pass
        assert temps[0].exists()
        _check(plain, directory, with_verify=False)  # readers ignore it
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert temps[0].exists()
    with Writer(directory):  # and removes the dead builder's
        pass
    assert not temps[0].exists() and not _index_path(directory, 2).exists()
    _check(plain, directory)


# -- indexes and the other maintenance tools ------------------------------------------------------------------------


@pytest.mark.parametrize("codec", ["zst", "gz"])
@pytest.mark.parametrize("order", ["indexed_then_compressed", "compressed_then_indexed"])
def test_compressed_segments_and_their_indexes_read_as_without_indexes(
    plain: Base, tmp_path: Path, codec: str, order: str
) -> None:
    directory = plain.copy(tmp_path / "log")
    if order == "compressed_then_indexed":
        for index in directory.glob("*.idx"):
            index.unlink()
    result = CliRunner().invoke(main, ["compress", str(directory), "--codec", codec])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in directory.glob("*.dat*"))[:3] == [f"0000000{n}.dat.{codec}" for n in (1, 2, 3)]
    results = build_indexes(directory, interval=INTERVAL)
    assert [r.status for r in results] == (
        ["unchanged"] * 3 if order == "indexed_then_compressed" else ["built"] * 3
    ) + ["skipped"]
    assert {int(p.name[:8]): p.read_bytes() for p in directory.glob("*.idx")} == plain.indexes()
    _check(plain, directory)


def test_binlog_repair_after_indexing_leaves_readers_as_without_indexes(tmp_path: Path) -> None:
    """Segment 1 is finished, not sealed, with records beyond its commit point; repair adopts them and seals it."""
    directory = tmp_path / "log"
    shutil.copytree(FIXTURES / "finished_segment_unpublished_records", directory)
    clean = tmp_path / "clean"
    shutil.copytree(directory, clean)
    assert [r.status for r in build_indexes(directory, interval=1)] == ["built", "skipped"]
    for log in (directory, clean):
        result = CliRunner().invoke(main, ["repair", str(log), "--backup-dir", str(tmp_path / "kept" / log.name)])
        assert result.exit_code == 0, result.output
    with Reader(clean) as reader:
        everything = list(reader)
    plan = _plan_for(everything, finished=(1,))
    _same(_observe(directory, plan), _observe(clean, plan))
    assert [note.usable for note in check_indexes(directory)] == [True]


# -- version 1 logs ---------------------------------------------------------------------------------------------------


def _legacy_log(directory: Path) -> list[Entry]:
    directory.mkdir()
    segment(directory, 1).write_bytes(legacy_segment([b"r%d" % n * 9 for n in range(40)], log=1, closed=True))
    segment(directory, 2).write_bytes(legacy_segment([b"s%d" % n * 5 for n in range(30)], log=2, closed=True))
    segment(directory, 3).write_bytes(legacy_segment([b"tail"], log=3, closed=False))
    assert [r.status for r in build_indexes(directory, interval=INTERVAL)] == ["built", "built", "skipped"]
    with Reader(directory) as reader:
        return list(reader)


@pytest.fixture(scope="module")
def legacy(tmp_path_factory: pytest.TempPathFactory, full_run: bool) -> Base:
    root = tmp_path_factory.mktemp("legacy")
    base = _base(root, _legacy_log, finished=(), full=full_run)
    return dataclasses.replace(base, plan=dataclasses.replace(base.plan, times=base.plan.times[:3], dumps=()))


def _legacy_case(base: Base, edits: Edits, ops: Ops) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        directory = base.copy(Path(scratch) / "log")
        _apply_edits(directory, base, (1, *edits[1:]))
        _index_path(directory, 2).write_bytes(_forge(base.indexes()[2], base.everything, ops))
        _check(base, directory)
        build_indexes(directory, interval=INTERVAL)
        assert {int(p.name[:8]): p.read_bytes() for p in directory.glob("*.idx")} == base.indexes()


@pytest.mark.spec("R-47")
@QUICK
@given(edits=index_byte_edits, ops=index_forgeries.map(lambda forgery: forgery[1]))
def test_hostile_indexes_of_a_version_1_log_change_nothing_and_are_rebuilt(
    legacy: Base, edits: Edits, ops: Ops
) -> None:
    _legacy_case(legacy, edits, ops)


def test_verify_does_not_say_a_version_1_index_is_used_by_seeks_and_splits(legacy: Base, tmp_path: Path) -> None:
    directory = legacy.copy(tmp_path / "log")
    result = CliRunner().invoke(main, ["verify", str(directory)])
    assert result.exit_code == 0
    assert "index 00000001.idx: used by seeks and splits" not in result.output


# -- damage that an index was built before ---------------------------------------------------------------------------

# One bit flipped in a finished segment after its index was built: which segment, where, which bit.
_flips = st.tuples(st.sampled_from([1, 2, 3]), st.integers(min_value=0, max_value=2**16), st.integers(0, 7))


def _damaged_case(base: Base, flip: tuple[int, int, int]) -> None:
    """Allowed difference (spec 18.5): a seek that starts at a checked entry after the damage does not report it,
    and then returns what the undamaged log gives."""
    log, where, bit = flip
    with tempfile.TemporaryDirectory() as scratch:
        directory = base.copy(Path(scratch) / "log")
        data = bytearray(segment(directory, log).read_bytes())
        at = 256 + where % (len(data) - 256)
        data[at] ^= 1 << bit
        segment(directory, log).write_bytes(bytes(data))
        clean = Path(scratch) / "clean"
        shutil.copytree(directory, clean)
        for index in clean.glob("*.idx"):
            index.unlink()
        targets = [("index", i) for i in base.plan.indexes] + [("time", t) for t in base.plan.times[::3]]
        for kind, target in targets:
            option = {"start_index" if kind == "index" else "start_time": target}
            with_index = _collect(_reading(directory, **option))
            without = _collect(_reading(clean, **option))
            assert with_index in (without, base.expected[kind, target]), (kind, target, at)
            tolerant_with, tolerant_without = _tolerant(directory, **option), _tolerant(clean, **option)
            pristine = base.expected[kind, target][0], ()
            assert tolerant_with in (tolerant_without, pristine), (kind, target, at)


@pytest.mark.spec("R-47", "R-9")
@QUICK
@given(flip=_flips)
def test_a_seek_with_a_good_index_over_later_damage_reports_what_a_seek_without_it_does(
    plain: Base, flip: tuple[int, int, int]
) -> None:
    _damaged_case(plain, flip)


def test_long_explorations_of_hostile_indexes(full_run: bool, plain: Base, nested: Base, legacy: Base) -> None:
    """The explorations above with many examples each: only with --full."""
    if not full_run:
        pytest.skip("a long exploration: run with --full")
    LONG(given(edits=index_byte_edits)(lambda edits: _edited_case(plain, edits)))()
    LONG(given(forgery=index_forgeries)(lambda forgery: _forged_case(plain, *forgery)))()
    LONG(given(ops=index_forgeries.map(lambda f: f[1]))(lambda ops: _forged_case(nested, 1, ops)))()
    LONG(
        given(edits=index_byte_edits, ops=index_forgeries.map(lambda f: f[1]))(
            lambda edits, ops: _legacy_case(legacy, edits, ops)
        )
    )()
    LONG(given(flip=_flips)(lambda flip: _damaged_case(plain, flip)))()


# -- the command line in a real process ------------------------------------------------------------------------------


def test_binlog_dump_in_a_real_process_over_forged_indexes_prints_what_it_prints_without(
    nested: Base, tmp_path: Path
) -> None:
    directory = nested.copy(tmp_path / "log")
    _forge_embedded(directory, nested.everything)
    for options in nested.plan.dumps:
        child = subprocess.run(
            [sys.executable, "-m", "openbinlog", "dump", str(directory), *options],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert (child.returncode, child.stdout) == nested.expected["dump", *options], child.stderr
