"""The sparse index (spec 18): its bytes, the entry rule, and that no index, however damaged or forged, changes
what a seek or a split returns; with a good one, a seek reads little of a segment and splits are exact."""

from __future__ import annotations

import contextlib
import os
import struct
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st
from logtools import T0, SeekItem, legacy_segment, read_entries, segment, write_seek_log
from strategies import index_faults, seek_logs
from test_spec import vectors

from openbinlog import (
    AmbiguousSplitError,
    BadHeaderError,
    Entry,
    Reader,
    Writer,
    build_index,
    build_indexes,
    encode_record,
    read_split,
    split_offsets,
    verify,
)
from openbinlog._crc import mask
from openbinlog._format import index_name
from openbinlog._fs import OsFileSystem
from openbinlog._segment import build_header
from openbinlog._segment_file import SegmentFile
from openbinlog._sparse_index import (
    EntryRule,
    IndexEntryInfo,
    decode_entry,
    encode_index,
    entry_offset,
    parse_index_header,
)
from openbinlog.cli import main


def _masked(data: bytes) -> bytes:
    return mask(crc32c(data)).to_bytes(4, "big")


def _index_path(directory: Path, log: int) -> Path:
    return directory / index_name(log)


# -- the bytes ---------------------------------------------------------------------------


@pytest.mark.spec("W-45")
def test_tv14_is_the_index_of_the_sealed_tv9_segment(tmp_path: Path) -> None:
    tv = vectors()
    sealed = bytearray(tv["TV-9"])
    sealed[144:192] = tv["TV-10"]
    sealed[6:24] = tv["TV-11"]
    # Computed here from the byte tables of spec 18.2, not by the package's encoder.
    header = b"\x89BLIDX\r\n" + struct.pack(">HHI16sQQQQI", 1, 2, 1, bytes(range(16)), 1, 344, 3, 2, 32)
    expected = header + _masked(header)
    for index, offset, stamp, stop in ((1, 256, T0, 301), (2, 301, T0 + 1000, 344)):
        entry = struct.pack(">QQq", index, offset, stamp) + _masked(bytes(sealed[offset:stop]))
        expected += entry + _masked(entry)
    assert expected == tv["TV-14"]
    # And built so by the package from a directory holding that segment and a successor.
    log = tmp_path / "log"
    log.mkdir()
    (log / "LOCK").touch()
    (log / "00000001.dat").write_bytes(bytes(sealed))
    (log / "00000002.dat").write_bytes(build_header(log=2, log_id=bytes(range(16)), base_index=3, created_us=T0))
    result = build_index(log, 1, interval=32)
    assert (result.status, result.entries) == ("built", 2)
    assert _index_path(log, 1).read_bytes() == tv["TV-14"]


@st.composite
def _record_layouts(draw: st.DrawFn) -> tuple[list[int], int]:
    sizes = draw(st.lists(st.integers(min_value=40, max_value=300), max_size=60))
    return sizes, draw(st.integers(min_value=1, max_value=2000))


@given(layout=_record_layouts())
def test_entry_rule_takes_the_first_record_at_or_beyond_each_entry_plus_the_interval(
    layout: tuple[list[int], int],
) -> None:
    sizes, interval = layout
    offsets = [256 + sum(sizes[:n]) for n in range(len(sizes))]
    rule = EntryRule(interval)
    for number, offset in enumerate(offsets):
        rule.offer(number + 1, offset, number)
    chosen = [entry.offset for entry in rule.entries]
    # Restated from spec 18.3: entry 0 is the first record; each next the first at or beyond the last + interval.
    expected: list[int] = []
    for offset in offsets:
        if not expected or offset >= expected[-1] + interval:
            expected.append(offset)
    assert chosen == expected


def test_interval_outside_the_u4_range_is_refused() -> None:
    for interval in (0, 2**32):
        with pytest.raises(ValueError, match="interval"):
            EntryRule(interval)


# -- logs, indexes, and damage to indexes --------------------------------------------------


def _rewrite(path: Path, change: str) -> None:
    """An index rewritten with valid checksums but lying as ``change`` says."""
    data = path.read_bytes()
    info = parse_index_header(data)
    assert info is not None
    entries = [decode_entry(data[entry_offset(k) : entry_offset(k + 1)]) for k in range(info.entry_count)]
    shift = {"offset": (0, 4, 0), "index": (1, 0, 0), "time": (0, 0, -1)}.get(change, (0, 0, 0))
    lies = []
    for entry in entries:
        assert entry is not None
        index, offset, stamp = entry.index + shift[0], entry.offset + shift[1], entry.timestamp_us + shift[2]
        lies.append(IndexEntryInfo(index, offset, stamp, entry.span_crc))
    if change == "end":
        info = type(info)(**{**{f: getattr(info, f) for f in info.__slots__}, "segment_end": info.segment_end + 1})
    path.write_bytes(encode_index(info, lies))


def _damage_index(directory: Path, log: int, fault: str, where: int) -> None:
    path = _index_path(directory, log)
    if not path.exists():
        return
    data = path.read_bytes()
    if fault == "missing":
        path.unlink()
    elif fault == "torn":
        path.write_bytes(data[: where % len(data)])
    elif fault == "flipped":
        damaged = bytearray(data)
        damaged[where % len(data)] ^= 1 << (where % 8)
        path.write_bytes(bytes(damaged))
    elif fault == "garbage":
        path.write_bytes(os.urandom(len(data)))
    elif fault.startswith("lie_"):
        _rewrite(path, fault[4:])
    elif fault == "other_log":
        other = directory.parent / "other"
        write_seek_log(other, [(b"x" * 30, None, 1)] * 20 + [None])
        build_indexes(other, interval=64)
        path.write_bytes(_index_path(other, 1).read_bytes())


@pytest.mark.spec("R-47", "R-44", "R-33")
@settings(max_examples=60, deadline=None)
@given(log=seek_logs, fault=index_faults, where=st.integers(min_value=0, max_value=2**16))
def test_seeks_return_the_same_records_whatever_the_state_of_the_index(
    log: tuple[list[SeekItem], int], fault: str, where: int
) -> None:
    items, _ = log
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch) / "log"
        everything = write_seek_log(directory, [*items, None])  # the last cutover finishes every segment with records
        build_indexes(directory, interval=64)
        for log_number in sorted(int(path.name[:8]) for path in directory.glob("*.idx")):
            _damage_index(directory, log_number, fault, where)
        assert read_entries(directory) == everything
        last = everything[-1].index if everything else 0
        for index in range(last + 2):
            assert read_entries(directory, start_index=index) == [e for e in everything if e.index >= index], index
        stamps = sorted({entry.timestamp_us or 0 for entry in everything})
        for time_us in sorted({T0 - 1} | set(stamps) | {t + 1 for t in stamps}):
            got = read_entries(directory, start_time=time_us)
            assert got == [e for e in everything if (e.timestamp_us or 0) >= time_us], time_us


# -- a log of logs: payloads that hold whole records of the same log ------------------------


def _log_of_logs(directory: Path, count: int, *, interval: int = 256) -> list[Entry]:
    """Each payload is a whole, valid record of this log carrying the index and time of the record holding it,
    so every embedded record passes every check a reader can make at its offset; then a cutover, and indexes."""
    now = [T0]
    with Writer(directory, durability="os", clock_us=lambda: now[0]) as writer:
        for index in range(1, count + 1):
            now[0] = T0 + index * 1000
            writer.append(encode_record(index, b"inner-%d" % index * 3, timestamp_us=now[0]))
        writer.cutover()
    build_indexes(directory, interval=interval)
    return read_entries(directory)


def _forge_embedded(directory: Path, everything: list[Entry]) -> None:
    """Every entry moved onto the embedded record of the record it named: same index, same time, valid CRCs."""
    path = _index_path(directory, 1)
    data = path.read_bytes()
    info = parse_index_header(data)
    assert info is not None
    by_index = {entry.index: entry for entry in everything}
    forged = []
    for k in range(info.entry_count):
        entry = decode_entry(data[entry_offset(k) : entry_offset(k + 1)])
        assert entry is not None
        forged.append(IndexEntryInfo(entry.index, by_index[entry.index].offset + 40, entry.timestamp_us, 0))
    path.write_bytes(encode_index(info, forged))


@pytest.mark.spec("R-47")
def test_an_entry_moved_onto_an_embedded_record_is_not_used(log_dir: Path) -> None:
    everything = _log_of_logs(log_dir, 200)
    _forge_embedded(log_dir, everything)
    for index in (1, 2, 57, 150, 200):
        assert read_entries(log_dir, start_index=index) == [e for e in everything if e.index >= index]
    for time_us in (T0, T0 + 57_000, T0 + 150_500):
        assert read_entries(log_dir, start_time=time_us) == [e for e in everything if (e.timestamp_us or 0) >= time_us]


def _splits(directory: Path, cuts: list[int]) -> list[Entry]:
    stops = [*cuts[1:], 2**63]
    return [entry for start, stop in zip(cuts, stops, strict=True) for entry in read_split(directory, 1, start, stop)]


@pytest.mark.spec("R-47", "R-27", "R-40")
@pytest.mark.parametrize("parts", [1, 7, 100])
def test_splits_cut_at_index_entries_are_exact_on_a_log_of_logs(log_dir: Path, parts: int) -> None:
    everything = [entry for entry in _log_of_logs(log_dir, 600) if entry.log == 1]
    cuts = split_offsets(log_dir, 1, parts)
    assert len(cuts) == min(parts, len(cuts)) and cuts[0] == 256 and cuts == sorted(set(cuts))
    if parts > 1:
        assert len(cuts) > parts // 2  # the index gives cuts near every fraction asked for
    assert _splits(log_dir, cuts) == everything


def test_without_the_index_splits_of_a_log_of_logs_are_ambiguous(log_dir: Path) -> None:
    _log_of_logs(log_dir, 600)
    _index_path(log_dir, 1).unlink()
    cuts = split_offsets(log_dir, 1, 100)
    with pytest.raises(AmbiguousSplitError):
        _splits(log_dir, cuts)


def test_splits_ignore_an_index_whose_entries_point_into_payloads(log_dir: Path) -> None:
    everything = [entry for entry in _log_of_logs(log_dir, 600) if entry.log == 1]
    _forge_embedded(log_dir, everything)
    good = split_offsets(log_dir, 1, 1)
    assert good == [256]
    # No forged entry passes the entry check, so the cuts are the fractions of a log without an index.
    cuts = split_offsets(log_dir, 1, 7)
    assert all(cut not in {e.offset + 40 for e in everything} for cut in cuts)


# -- a seek with an index reads little of a segment ----------------------------------------


@contextlib.contextmanager
def _counting_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The bytes segments return to readers while the block runs, in a one-item list."""
    counted = [0]
    original = SegmentFile.read_at

    def counting(self: SegmentFile, offset: int, size: int) -> bytes:
        data = original(self, offset, size)
        counted[0] += len(data)
        return data

    with monkeypatch.context() as patch:
        patch.setattr(SegmentFile, "read_at", counting)
        yield counted


def _bytes_read(monkeypatch: pytest.MonkeyPatch, directory: Path, **reader_options: object) -> tuple[int, Entry]:
    """The bytes a seek reads up to its first record, and that record."""
    with _counting_reads(monkeypatch) as counted, Reader(directory, **reader_options) as reader:  # type: ignore[arg-type]
        first = next(iter(reader))
    return counted[0], first


@pytest.mark.spec("R-47")
def test_a_seek_with_an_index_reads_a_few_intervals_of_the_segment(
    log_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [T0]
    with Writer(log_dir, durability="os", clock_us=lambda: now[0]) as writer:
        for number in range(40_000):
            now[0] = T0 + number
            writer.append(b"%08d" % number + b"." * 192)
        writer.cutover()
    size = segment(log_dir, 1).stat().st_size
    assert size > 8 << 20
    index_target, time_target = 31_234, T0 + 27_000
    without_idx, first = _bytes_read(monkeypatch, log_dir, start_index=index_target)
    assert first.index == index_target and without_idx > size // 2
    build_indexes(log_dir)
    with_idx, first = _bytes_read(monkeypatch, log_dir, start_index=index_target)
    assert first.index == index_target
    assert with_idx < (1 << 20) + (3 << 16), with_idx  # the landing walk (an interval) and a chunk from the entry
    by_time, first = _bytes_read(monkeypatch, log_dir, start_time=time_target)
    assert first.timestamp_us == time_target and by_time < (1 << 20) + (3 << 16)
    # A stale index (the segment's end no longer what it says) is not used: the seek walks again.
    _rewrite(_index_path(log_dir, 1), "end")
    stale, first = _bytes_read(monkeypatch, log_dir, start_index=index_target)
    assert first.index == index_target and stale > size // 2


# -- building ------------------------------------------------------------------------------


def test_building_again_changes_nothing_and_the_last_segment_is_not_indexed(log_dir: Path) -> None:
    write_seek_log(log_dir, [(b"a" * 50, None, 1)] * 30 + [None] + [(b"b", None, 1)] * 3)
    first = build_indexes(log_dir, interval=100)
    assert [(r.log, r.status) for r in first] == [(1, "built"), (2, "skipped")]
    assert first[1].reason == "the last segment is not finished"
    stamp = _index_path(log_dir, 1).stat().st_mtime_ns
    again = build_indexes(log_dir, interval=100)
    assert [(r.log, r.status) for r in again] == [(1, "unchanged"), (2, "skipped")]
    assert _index_path(log_dir, 1).stat().st_mtime_ns == stamp
    assert not any(name.endswith(".tmp") for name in os.listdir(log_dir))


@pytest.mark.spec("W-45")
def test_a_damaged_segment_is_not_indexed_and_its_damage_is_reported(log_dir: Path) -> None:
    everything = write_seek_log(log_dir, [(b"a" * 50, None, 1)] * 30 + [None])
    data = bytearray(segment(log_dir, 1).read_bytes())
    data[everything[10].offset + 45] ^= 1
    segment(log_dir, 1).write_bytes(bytes(data))
    result = build_index(log_dir, 1)
    assert result.status == "skipped" and result.damage is not None
    assert (result.damage.error_class, result.damage.log, result.damage.offset) == (
        "checksum_mismatch",
        1,
        everything[10].offset,
    )
    assert not _index_path(log_dir, 1).exists()


def test_version_1_segments_are_indexed_with_numbers_within_the_segment(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.mkdir()
    (log / "00000001.dat").write_bytes(legacy_segment([b"r%d" % n * 20 for n in range(50)], log=1, closed=True))
    (log / "00000002.dat").write_bytes(legacy_segment([b"tail"], log=2, closed=False))
    results = build_indexes(log, interval=200)
    assert [(r.log, r.status) for r in results] == [(1, "built"), (2, "skipped")]
    data = _index_path(log, 1).read_bytes()
    info = parse_index_header(data)
    assert info is not None
    assert (info.segment_version, info.base_index, info.end_index, info.log_id) == (1, 1, 51, bytes(16))
    first = decode_entry(data[entry_offset(0) : entry_offset(1)])
    assert first is not None and (first.index, first.offset) == (1, 248)


def test_retention_removes_an_index_before_its_segment(log_dir: Path) -> None:
    write_seek_log(log_dir, [(b"a", None, 1), None, (b"b", None, 1), None, (b"c", None, 1)])
    build_indexes(log_dir, interval=8)
    assert _index_path(log_dir, 1).exists()
    removed: list[str] = []
    fs = OsFileSystem()
    original = fs.unlink

    def unlink(path: str) -> None:
        removed.append(os.path.basename(path))
        original(path)

    fs.unlink = unlink  # type: ignore[method-assign]
    with Writer(log_dir, fs=fs) as writer:
        writer.drop_segments(before_log=2)
    assert removed == ["00000001.idx", "00000001.dat"]


def test_clean_up_removes_a_dead_builders_temporary_file_and_keeps_a_held_one(log_dir: Path) -> None:
    write_seek_log(log_dir, [(b"a", None, 1)])
    dead = log_dir / ".00000001.idx.0badc0de.tmp"
    dead.write_bytes(b"partial")
    held_path = log_dir / ".00000001.idx.feed.tmp"
    held_path.write_bytes(b"in use")
    fd = os.open(held_path, os.O_RDWR)
    try:
        OsFileSystem().hold(fd)
        with Writer(log_dir):
            pass
        assert not dead.exists() and held_path.exists()
    finally:
        os.close(fd)


# -- the command line -------------------------------------------------------------------------


def test_binlog_index_builds_and_says_what_it_did(log_dir: Path) -> None:
    write_seek_log(log_dir, [(b"a" * 50, None, 1)] * 30 + [None] + [(b"b", None, 1)])
    result = CliRunner().invoke(main, ["index", str(log_dir), "--interval", "100"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        "00000001.idx: built, 15 entries",
        "00000002.idx: not built, the last segment is not finished",
    ]
    result = CliRunner().invoke(main, ["index", str(log_dir), "--interval", "100", "--json"])
    assert '"status": "unchanged"' in result.output


def test_binlog_index_exits_1_on_a_damaged_segment(log_dir: Path) -> None:
    everything = write_seek_log(log_dir, [(b"a" * 50, None, 1)] * 30 + [None])
    data = bytearray(segment(log_dir, 1).read_bytes())
    data[everything[3].offset + 45] ^= 1
    segment(log_dir, 1).write_bytes(bytes(data))
    result = CliRunner().invoke(main, ["index", str(log_dir)])
    assert result.exit_code == 1
    assert "checksum_mismatch" in result.output + (result.stderr if result.stderr_bytes else "")


@pytest.mark.spec("R-47")
def test_verify_notes_indexes_that_are_not_used_and_stays_ok(log_dir: Path) -> None:
    write_seek_log(log_dir, ([(b"a" * 60, None, 1)] * 40 + [None]) * 4)
    build_indexes(log_dir, interval=200)
    _rewrite(_index_path(log_dir, 2), "offset")
    _rewrite(_index_path(log_dir, 3), "end")
    _index_path(log_dir, 4).write_bytes(b"not an index")
    report = verify(log_dir)
    assert report.ok
    assert [(note.log, note.usable) for note in report.indexes] == [(1, True), (2, False), (3, False), (4, False)]
    assert report.indexes[2].reason.startswith("stale")
    result = CliRunner().invoke(main, ["verify", str(log_dir)])
    assert result.exit_code == 0
    assert "index 00000002.idx: not used: its entries are not those the segment gives" in result.output
    assert "index 00000001.idx: used by seeks and splits" in result.output


@pytest.mark.spec("W-45")
def test_an_index_is_written_aside_synced_and_renamed_into_place(
    log_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_seek_log(log_dir, [(b"a" * 60, None, 1)] * 40 + [None])
    final = _index_path(log_dir, 1)
    synced: list[bool] = []
    original_fsync = os.fsync

    def fsync(fd: int) -> None:
        original_fsync(fd)
        if os.path.isfile(f"/proc/self/fd/{fd}"):  # a file, not the directory: the index's temporary file
            synced.append(final.exists())

    monkeypatch.setattr(os, "fsync", fsync)
    assert build_index(log_dir, 1, interval=100).status == "built"
    assert synced == [False]  # the index was synced while its final name did not exist yet
    assert final.exists() and not list(log_dir.glob(".*.tmp"))


def test_building_again_reads_headers_only_and_rebuild_walks_again(
    log_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_seek_log(log_dir, ([(b"a" * 60, None, 1)] * 400 + [None]) * 2)
    build_indexes(log_dir, interval=500)
    with _counting_reads(monkeypatch) as counted:
        assert [r.status for r in build_indexes(log_dir, interval=500)] == ["unchanged", "unchanged", "skipped"]
    assert counted[0] < 8 * 1024 < segment(log_dir, 1).stat().st_size // 4  # headers, no segment walked
    _rewrite(_index_path(log_dir, 1), "offset")  # a lie under a valid header: only a walk finds it
    assert build_index(log_dir, 1, interval=500).status == "unchanged"
    assert not verify(log_dir).indexes[0].usable
    assert build_index(log_dir, 1, interval=500, rebuild=True).status == "built"
    assert verify(log_dir).indexes[0].usable
    assert build_index(log_dir, 1, interval=250).status == "built"  # another interval is another index


@pytest.mark.spec("R-47", "R-9")
def test_a_damaged_successor_header_is_reported_after_the_records_a_seek_with_an_index_returns(
    log_dir: Path,
) -> None:
    everything = write_seek_log(log_dir, ([(b"a" * 30, None, 1)] * 20 + [None]) * 4)
    build_indexes(log_dir, interval=64)
    data = bytearray(segment(log_dir, 3).read_bytes())
    data[40] ^= 1  # the log id: segment 3's header checksum fails
    segment(log_dir, 3).write_bytes(bytes(data))
    target = next(entry for entry in everything if entry.log == 2 and entry.index > 25)
    returned: list[Entry] = []
    with Reader(log_dir, start_index=target.index) as reader, pytest.raises(BadHeaderError) as caught:
        returned.extend(reader)
    assert returned == [entry for entry in everything if entry.log == 2 and entry.index >= target.index]
    assert (caught.value.log, caught.value.offset) == (3, 92)
