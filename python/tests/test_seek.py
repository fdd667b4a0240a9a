"""Starting to read at an index or a time: the records a read from the start returns from there, headers only
read before the segment the seek starts in (``Reader(start_index=, start_time=)``, ``openbinlog.walk.seek_segment``).
"""

from __future__ import annotations

import math
import shutil
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from logtools import T0, SeekItem, flip_bit, legacy_segment, read_entries, segment, write_log, write_seek_log
from strategies import seek_logs

from openbinlog import BadHeaderError, ChecksumMismatchError, Entry, Reader, Ref, Writer, encode_record, walk
from openbinlog._reader import to_timestamp_us
from openbinlog._segment import CommitState, build_header, encode_slot
from openbinlog._segment_file import LocalDirectory
from openbinlog.walk import Directory, LogWalk, MemoryDirectory, MemorySegment, Seek, SegmentSource

LOG_ID = bytes(range(16))
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _timed(directory: Path, segments: Sequence[Sequence[int]]) -> list[Entry]:
    """One record per timestamp, a cutover between segments; what a read from the start returns."""
    now = [0]
    with Writer(directory, durability="os", clock_us=lambda: now[0]) as writer:
        for number, stamps in enumerate(segments):
            if number:
                writer.cutover()
            for stamp in stamps:
                now[0] = stamp
                writer.append(str(stamp).encode())
    return read_entries(directory)


def _v2_segment(log: int, base_index: int, stamps: Sequence[int], *, sealed: bool) -> bytes:
    """A version 2 segment built by hand: records timestamped ``stamps``, committed (and sealed) in one slot."""
    header = bytearray(build_header(log=log, log_id=LOG_ID, base_index=base_index, created_us=0))
    body = b"".join(
        encode_record(base_index + n, f"{log}.{n}".encode(), timestamp_us=stamp) for n, stamp in enumerate(stamps)
    )
    last = stamps[-1] if stamps else 0
    commit = CommitState(2, 256 + len(body), base_index + len(stamps), -1, last, log + 1 if sealed else 0)
    at, raw = encode_slot(commit)
    header[at : at + len(raw)] = raw
    return bytes(header) + body


def _from_target(entries: list[Entry], *, index: int | None = None, time_us: int | None = None) -> list[Entry]:
    """What a read from the start returns from its first record at or after the target on."""
    for at, entry in enumerate(entries):
        if index is not None and entry.index >= index:
            return entries[at:]
        if time_us is not None and entry.timestamp_us is not None and entry.timestamp_us >= time_us:
            return entries[at:]
    return []


def _drain(walk: LogWalk) -> list[Entry]:
    entries: list[Entry] = []
    while batch := walk.next_batch():
        entries += batch
    return entries


class _CountingSegment:
    """A segment whose reads are recorded as (offset, size)."""

    def __init__(self, inner: SegmentSource, reads: list[tuple[int, int]]) -> None:
        self.inner, self.reads = inner, reads
        self.path, self.log = inner.path, inner.log

    def read_at(self, offset: int, size: int) -> bytes:
        self.reads.append((offset, size))
        return self.inner.read_at(offset, size)

    def size(self) -> int:
        return self.inner.size()

    def close(self) -> None:
        self.inner.close()


class _CountingDirectory:
    """A log directory that records every read of every segment."""

    def __init__(self, inner: Directory) -> None:
        self.inner, self.path = inner, inner.path
        self.reads: defaultdict[int, list[tuple[int, int]]] = defaultdict(list)

    def segments(self) -> list[int]:
        return self.inner.segments()

    def open(self, log: int) -> _CountingSegment | None:
        opened = self.inner.open(log)
        return None if opened is None else _CountingSegment(opened, self.reads[log])

    def read_logs(self) -> list[int]:
        """The segments read from."""
        return sorted(log for log, reads in self.reads.items() if reads)


# -- the same records as a read from the start ------------------------------------


@pytest.mark.spec("R-44")
@pytest.mark.spec("R-21", "R-19")
@settings(max_examples=60)
@given(log=seek_logs)
def test_seek_by_index_returns_what_a_read_from_the_start_returns_from_that_index(
    log: tuple[list[SeekItem], int],
) -> None:
    items, removed = log
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch) / "log"
        everything = write_seek_log(directory, items, removed)
        last = everything[-1].index if everything else 0
        for index in range(last + 3):
            got = read_entries(directory, start_index=index)
            assert got == [entry for entry in everything if entry.index >= index], index


@pytest.mark.spec("R-44")
@pytest.mark.spec("R-13", "R-19")
@settings(max_examples=60)
@given(log=seek_logs)
def test_seek_by_time_returns_what_a_read_from_the_start_returns_from_that_time(
    log: tuple[list[SeekItem], int],
) -> None:
    items, removed = log
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch) / "log"
        everything = write_seek_log(directory, items, removed)
        stamps = {entry.timestamp_us for entry in everything if entry.timestamp_us is not None}
        for time_us in sorted({T0 - 1, T0 + 100} | stamps | {t - 1 for t in stamps} | {t + 1 for t in stamps}):
            got = read_entries(directory, start_time=time_us)
            assert got == [entry for entry in everything if (entry.timestamp_us or 0) >= time_us], time_us


# -- where the target lies --------------------------------------------------------------


def test_start_index_below_the_first_present_record_starts_at_the_first_record_present(log_dir: Path) -> None:
    everything = write_seek_log(log_dir, [(b"a", None, 1), None, (b"b", None, 1), None, (b"c", None, 1)], removed=1)
    assert [entry.index for entry in everything] == [2, 3]
    assert read_entries(log_dir, start_index=1) == everything  # Kafka's "earliest": the gap shows in the index
    assert read_entries(log_dir, start_index=0) == everything


@pytest.mark.spec("R-22", "R-24")
def test_start_index_beyond_the_end_returns_nothing_then_the_record_once_committed(log_dir: Path) -> None:
    write_log(log_dir, [b"a", b"b"])
    with Reader(log_dir, start_index=4) as reader, Writer(log_dir) as writer:
        assert not reader.has_next(0.01)
        writer.append(b"c")  # index 3: before the target
        writer.cutover()
        writer.append(b"d")
        assert reader.has_next(2)
        entry = next(reader)
        assert (entry.index, entry.payload, entry.log) == (4, b"d", 2)


@pytest.mark.spec("R-22")
def test_start_time_after_the_end_returns_nothing_then_the_first_record_at_that_time(log_dir: Path) -> None:
    now = [T0]
    with Writer(log_dir, clock_us=lambda: now[0]) as writer, Reader(log_dir, start_time=T0 + 10) as reader:
        writer.append(b"early")
        assert not reader.has_next(0.01)
        writer.cutover()
        now[0] = T0 + 10
        writer.append(b"on time")
        assert reader.has_next(2)
        assert next(reader).payload == b"on time"


def test_seek_in_an_empty_log_waits_for_the_first_record(log_dir: Path) -> None:
    log_dir.mkdir()
    (log_dir / "LOCK").touch()
    with Reader(log_dir, start_index=1) as reader:
        assert not reader.has_next(0.01)
        with Writer(log_dir) as writer:
            writer.append(b"first")
        assert reader.has_next(2)
        assert next(reader).index == 1


def test_seek_without_follow_stops_at_the_end_of_the_segment_it_starts_in(log_dir: Path) -> None:
    write_log(log_dir, [b"a", b"b", None, b"c", b"d", None, b"e"])
    assert [e.payload for e in read_entries(log_dir, start_index=3, one_segment=True)] == [b"c", b"d"]
    assert [e.payload for e in read_entries(log_dir, start_index=4, one_segment=True)] == [b"d"]
    assert [e.payload for e in read_entries(log_dir, start_index=4)] == [b"d", b"e"]


@pytest.mark.spec("R-13")
def test_equal_timestamps_across_segment_boundaries_are_all_returned_from_the_first(log_dir: Path) -> None:
    everything = _timed(log_dir, [[10, 20], [20], [20], [20, 30], [40], [40]])
    assert [(e.index, e.timestamp_us) for e in read_entries(log_dir, start_time=20)] == [
        (2, 20),
        (3, 20),
        (4, 20),
        (5, 20),
        (6, 30),
        (7, 40),
        (8, 40),
    ]
    assert read_entries(log_dir, start_time=40) == everything[-2:]
    assert read_entries(log_dir, start_time=41) == []


def test_start_time_takes_aware_datetimes_in_any_zone_and_naive_ones_as_utc(log_dir: Path) -> None:
    moment = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    stamp = to_timestamp_us(moment)
    assert stamp == 1_714_979_289_123_456
    assert to_timestamp_us(moment.replace(tzinfo=None)) == stamp
    assert to_timestamp_us(moment.astimezone(timezone(timedelta(hours=-5)))) == stamp
    assert to_timestamp_us(datetime(9999, 12, 31, 23, 59, 59, 999999)) == 253_402_300_799_999_999  # no float rounding
    assert to_timestamp_us(stamp) == stamp
    _timed(log_dir, [[stamp - 1], [stamp, stamp + 1]])
    for when in (stamp, moment, moment.replace(tzinfo=None), moment.astimezone(timezone(timedelta(hours=9)))):
        assert [e.timestamp_us for e in read_entries(log_dir, start_time=when)] == [stamp, stamp + 1]


def test_seek_next_to_a_ref_or_at_end_is_a_usage_error(log_dir: Path) -> None:
    write_log(log_dir, [b"a"])
    ref = Ref(1, 256, 1)
    for options in (
        {"start": ref, "start_index": 1},
        {"after": ref, "start_time": T0},
        {"at_end": True, "start_index": 1},
        {"start_index": 1, "start_time": T0},
    ):
        with pytest.raises(ValueError, match="at most one"):
            Reader(log_dir, **options)
    with pytest.raises(ValueError, match="negative"):
        Reader(log_dir, start_index=-1)
    for target in ({}, {"index": 1, "time_us": T0}):
        with pytest.raises(ValueError, match="exactly one"):
            Seek(**target)


@pytest.mark.spec("R-13")
def test_time_seek_over_timestamps_that_go_back_returns_a_suffix_never_an_earlier_record(tmp_path: Path) -> None:
    # A writer that broke W-9: readers do not check timestamps, and the seek says what it does with them.
    directory = tmp_path / "log"
    directory.mkdir()
    segment(directory, 1).write_bytes(_v2_segment(1, 1, [50, 10], sealed=True))
    segment(directory, 2).write_bytes(_v2_segment(2, 3, [20, 60, 30], sealed=False))
    everything = read_entries(directory)
    assert [e.timestamp_us for e in everything] == [50, 10, 20, 60, 30]
    for time_us in range(0, 70, 5):
        got = read_entries(directory, start_time=time_us)
        assert got == everything[len(everything) - len(got) :], time_us
    # Segment 1 ends at 10, below 40: the seek starts in segment 2, after the record of 50; from the
    # target on, every record is returned, earlier timestamps included.
    assert [e.timestamp_us for e in read_entries(directory, start_time=40)] == [60, 30]


@pytest.mark.spec("R-16")
def test_time_seek_counts_the_records_a_finished_segment_holds_beyond_its_commit_point(tmp_path: Path) -> None:
    # Segment 1's slot ends at record 2 (T0 + 1000); records 3 and 4 lie beyond it, below segment 2's base
    # index (spec 8.4): the search takes segment 1's last timestamp from END, not from the slot.
    directory = tmp_path / "log"
    shutil.copytree(FIXTURES / "finished_segment_unpublished_records", directory)
    everything = read_entries(directory)
    assert [(e.log, e.index) for e in everything[2:4]] == [(1, 3), (1, 4)]
    for entry in everything:
        assert read_entries(directory, start_time=entry.timestamp_us) == everything[entry.index - 1 :]
        assert read_entries(directory, start_index=entry.index) == everything[entry.index - 1 :]


# -- version 1 ----------------------------------------------------------------------


@pytest.fixture
def legacy_log(tmp_path: Path) -> Path:
    directory = tmp_path / "legacy"
    directory.mkdir()
    segment(directory, 1).write_bytes(legacy_segment([b"r1", b"r2", b"r3"], log=1, closed=True, next_log=2))
    segment(directory, 2).write_bytes(legacy_segment([], log=2, closed=True, next_log=3))
    segment(directory, 3).write_bytes(legacy_segment([b"r4", b"r5"], log=3, closed=True, next_log=4))
    segment(directory, 4).write_bytes(legacy_segment([b"r6"], log=4, closed=False))
    return directory


@pytest.mark.spec("R-37")
def test_seek_in_a_version_1_log_counts_indexes_from_the_lowest_segment(legacy_log: Path) -> None:
    everything = read_entries(legacy_log)
    assert [e.index for e in everything] == [1, 2, 3, 4, 5, 6]
    for index in range(8):
        assert read_entries(legacy_log, start_index=index) == [e for e in everything if e.index >= index]
    segment(legacy_log, 1).unlink()  # retention: indexes count from the new lowest segment (Appendix B.5)
    assert [(e.index, e.payload) for e in read_entries(legacy_log, start_index=2)] == [(2, b"r5"), (3, b"r6")]


def test_time_seek_in_a_version_1_log_returns_nothing_as_its_records_have_no_time(legacy_log: Path) -> None:
    assert read_entries(legacy_log, start_time=0) == []
    assert read_entries(legacy_log, start_time=-(2**63)) == []


@pytest.mark.spec("R-37", "R-19")
def test_seek_in_a_log_converted_from_version_1_finds_records_on_either_side(tmp_path: Path) -> None:
    directory = tmp_path / "log"
    directory.mkdir()
    segment(directory, 1).write_bytes(legacy_segment([b"r1", b"r2"], log=1, closed=True, next_log=2))
    segment(directory, 2).write_bytes(legacy_segment([b"r3"], log=2, closed=True, next_log=3))
    segment(directory, 3).write_bytes(_v2_segment(3, 4, [100, 200], sealed=True))
    segment(directory, 4).write_bytes(_v2_segment(4, 6, [200, 300], sealed=True))
    segment(directory, 5).write_bytes(_v2_segment(5, 8, [400], sealed=False))
    everything = read_entries(directory)
    assert [e.index for e in everything] == list(range(1, 9))
    for index in range(11):
        assert read_entries(directory, start_index=index) == everything[max(index - 1, 0) :], index
    for time_us in (0, 100, 150, 200, 201, 400, 401):
        assert read_entries(directory, start_time=time_us) == _from_target(everything, time_us=time_us), time_us


@pytest.mark.spec("R-37")
def test_seek_into_a_version_1_segment_after_version_2_ones_numbers_it_on_from_them(log_dir: Path) -> None:
    _timed(log_dir, [[10, 20], [30, 40], []])
    segment(log_dir, 3).write_bytes(legacy_segment([b"v1-a", b"v1-b"], log=3, closed=False))
    everything = read_entries(log_dir)
    assert [(e.index, e.checked) for e in everything[-2:]] == [(5, False), (6, False)]
    for index in range(8):
        assert read_entries(log_dir, start_index=index) == _from_target(everything, index=index), index
    for time_us in (0, 30, 40, 41):  # the last segment, never probed, is version 1: the walk starts lower
        assert read_entries(log_dir, start_time=time_us) == _from_target(everything, time_us=time_us), time_us
    # A probe that meets the version 1 segment ends the search at the version 2 segment below it.
    directory = _CountingDirectory(LocalDirectory(str(log_dir)))
    walk = LogWalk(directory)
    walk.seek(Seek(index=3))
    assert _drain(walk) == everything[2:]
    assert all(offset == 0 for offset, _size in directory.reads[1])


@pytest.mark.spec("R-26", "R-37")
def test_tolerant_time_seek_reports_damage_in_a_version_1_segment_with_the_index_of_a_read_from_the_start(
    log_dir: Path,
) -> None:
    _timed(log_dir, [[10, 20], [30, 40], []])
    damaged = bytearray(legacy_segment([b"abc", b"defg"], log=3, closed=False))
    damaged[255] = 200  # the second length runs past the tail
    segment(log_dir, 3).write_bytes(bytes(damaged))
    with Reader(log_dir, tolerant=True) as reader:
        list(reader)
        from_start = reader.damage
    assert [(d.error_class, d.log, d.offset, d.index) for d in from_start] == [("length_out_of_range", 3, 255, 6)]
    with Reader(log_dir, start_time=41, tolerant=True) as reader:
        assert list(reader) == []
        assert reader.damage == from_start


# -- damage ----------------------------------------------------------------------------


@pytest.mark.spec("R-9", "R-25", "R-26")
def test_damage_before_the_target_is_reported_in_the_segment_the_seek_starts_in_not_in_skipped_ones(
    log_dir: Path,
) -> None:
    with Writer(log_dir) as writer:
        writer.append(b"a")
        damaged_in_skipped = writer.append(b"b")
        writer.cutover()
        writer.append(b"c")
        damaged_before_target = writer.append(b"d")
        writer.append(b"e")
        writer.cutover()
        writer.append(b"f")
    flip_bit(segment(log_dir, 1), damaged_in_skipped.offset + 40)
    flip_bit(segment(log_dir, 2), damaged_before_target.offset + 40)
    with Reader(log_dir, start_index=5) as reader, pytest.raises(ChecksumMismatchError) as caught:
        list(reader)
    assert (caught.value.log, caught.value.offset, caught.value.index) == (2, damaged_before_target.offset, 4)
    with Reader(log_dir, start_index=5, tolerant=True) as reader:
        assert [e.payload for e in reader] == [b"e", b"f"]
        damage = reader.damage
    assert [(d.error_class, d.log, d.offset, d.index, d.next_index) for d in damage] == [
        ("checksum_mismatch", 2, damaged_before_target.offset, 4, 5)
    ]
    assert [e.payload for e in read_entries(log_dir, start_index=6)] == [b"f"]  # segments 1 and 2 are not read


@pytest.mark.spec("R-6", "R-9")
@pytest.mark.parametrize("kind", ["index", "time"])
def test_a_damaged_header_met_by_the_search_is_reported_where_a_read_from_the_start_reports_it(
    log_dir: Path, kind: str
) -> None:
    everything = _timed(log_dir, [[10 * n + 1, 10 * n + 2] for n in range(8)])
    flip_bit(segment(log_dir, 4), 40)  # the log id: segment 4's header checksum fails
    target = everything[5]  # in segment 3, before the damaged header
    options = {"start_index": target.index} if kind == "index" else {"start_time": target.timestamp_us}
    returned: list[Entry] = []
    with Reader(log_dir, **options) as reader, pytest.raises(BadHeaderError) as caught:
        returned.extend(reader)
    assert returned == [target]
    with Reader(log_dir) as reader, pytest.raises(BadHeaderError) as from_start:
        list(reader)
    assert (caught.value.log, caught.value.offset) == (from_start.value.log, from_start.value.offset) == (4, 92)


# -- what the seek reads ---------------------------------------------------------------


@pytest.mark.parametrize("kind", ["index", "time"])
def test_seek_reads_only_headers_of_the_sealed_segments_before_the_target(log_dir: Path, kind: str) -> None:
    everything = _timed(log_dir, [[100 * n + k for k in range(3)] for n in range(10)])
    target = next(entry for entry in everything if entry.log == 10)
    directory = _CountingDirectory(LocalDirectory(str(log_dir)))
    walk = LogWalk(directory, one_segment=True)
    walk.seek(Seek(index=target.index) if kind == "index" else Seek(time_us=target.timestamp_us))
    assert _drain(walk) == [entry for entry in everything if entry.log == 10]
    walk.close()
    assert directory.reads[10], "the segment holding the target is walked"
    for log in range(1, 10):
        assert all(offset == 0 and size <= 257 for offset, size in directory.reads[log]), (log, directory.reads[log])
    assert len(directory.read_logs()) < 10, "a binary search, not a scan of every header"


@pytest.mark.parametrize("kind", ["index", "time"])
def test_the_search_reads_a_logarithmic_number_of_segment_headers(log_dir: Path, kind: str) -> None:
    count = 64
    everything = _timed(log_dir, [[n] for n in range(count)])
    bound = (2 if kind == "time" else 1) * math.ceil(math.log2(count)) + 2  # a probe by time reads END: N+1 too
    for target in everything[:: count // 8]:
        directory = _CountingDirectory(LocalDirectory(str(log_dir)))
        walk = LogWalk(directory, one_segment=True)
        walk.seek(Seek(index=target.index) if kind == "index" else Seek(time_us=target.timestamp_us))
        assert _drain(walk) == [target]
        walk.close()
        assert len(directory.read_logs()) <= bound, directory.read_logs()


# -- segments that come and go ----------------------------------------------------------


@pytest.mark.spec("R-7")
def test_seek_in_a_log_ending_with_a_blank_segment_starts_before_it(log_dir: Path) -> None:
    everything = _timed(log_dir, [[1, 2], [3, 4], [5]])
    segment(log_dir, 4).write_bytes(b"")  # a cutover that died before its header was durable
    for index in range(8):
        assert read_entries(log_dir, start_index=index) == everything[max(index - 1, 0) :]
    for time_us in range(8):
        assert read_entries(log_dir, start_time=time_us) == everything[max(time_us - 1, 0) :]
    with Reader(log_dir, start_time=6) as reader:
        assert not reader.has_next()
        assert reader.position == Ref(3, everything[-1].offset + everything[-1].size, 6)  # where record 6 would go
    only_blank = log_dir.parent / "blank"
    only_blank.mkdir()
    segment(only_blank, 1).write_bytes(bytes(256))
    assert read_entries(only_blank, start_index=1) == read_entries(only_blank, start_time=0) == []


class _RetentionDuringSearch(MemoryDirectory):
    """Retention removes the lowest segments up to the first one the search opens, just before it opens it."""

    def __init__(self, segments: dict[int, bytes]) -> None:
        super().__init__(segments)
        self.armed = True

    def open(self, log: int) -> MemorySegment | None:
        if self.armed:
            self.armed = False
            for gone in [number for number in self.files if number <= log]:
                del self.files[gone]
        return super().open(log)


def test_a_segment_removed_by_retention_during_the_search_makes_it_list_again(log_dir: Path) -> None:
    everything = _timed(log_dir, [[2 * n, 2 * n + 1] for n in range(10)])
    files = {log: segment(log_dir, log).read_bytes() for log in range(1, 11)}
    for target in (Seek(index=everything[-3].index), Seek(time_us=everything[-3].timestamp_us)):
        directory = _RetentionDuringSearch(files)
        walk = LogWalk(directory)
        walk.seek(target)
        assert _drain(walk) == everything[-3:]
        assert min(directory.files) > 1, "the search's first probe removed segments"


@pytest.mark.parametrize("kind", ["index", "time"])
def test_the_segment_chosen_removed_by_retention_before_it_is_opened_makes_the_seek_list_again(
    log_dir: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    everything = _timed(log_dir, [[2 * n, 2 * n + 1] for n in range(10)])
    target = everything[-5]
    assert target.log == 8
    directory = MemoryDirectory({log: segment(log_dir, log).read_bytes() for log in range(1, 11)})
    search = walk._search
    searches: list[int] = []

    def search_then_retention(directory_: Directory, present: Sequence[int], last: int, seek: Seek) -> int | None:
        at = search(directory_, present, last, seek)
        assert at is not None
        if not searches:  # retention runs once, between the first search and the open of its choice
            for gone in [log for log in directory.files if log <= present[at]]:
                del directory.files[gone]
        searches.append(present[at])
        return at

    monkeypatch.setattr(walk, "_search", search_then_retention)
    log_walk = LogWalk(directory)
    log_walk.seek(Seek(index=target.index) if kind == "index" else Seek(time_us=target.timestamp_us))
    assert _drain(log_walk) == everything[-4:]  # segment 8 is gone: the first record present, in 9
    assert searches == [8, 9]
