"""The reader: committed records only, refs checked on resume, following, waiting, tolerance."""

from __future__ import annotations

import gzip
import itertools
import json
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from logtools import (
    FaultyFileSystem,
    assert_read_only,
    commit_offset,
    flip_bit,
    read_entries,
    segment,
    write_log,
)
from strategies import indexes, log_numbers, offsets, reader_steps

from openbinlog import (
    BadHeaderError,
    BinlogError,
    ChecksumMismatchError,
    InvalidRefError,
    NotALogError,
    Reader,
    Ref,
    Writer,
    walk,
)
from openbinlog._fs import OsFileSystem
from openbinlog._records import BATCH_ENTRIES
from openbinlog._segment import SegmentHeaderInfo

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


@pytest.mark.spec("R-15", "R-2")
def test_reader_never_returns_records_beyond_the_published_commit_point(log_dir: Path) -> None:
    write_log(log_dir, [b"published"])
    write_log(log_dir, [b"written, synced, never published"], fs=FaultyFileSystem(drop_header_writes=True))
    assert segment(log_dir).stat().st_size > commit_offset(segment(log_dir))
    entries = assert_read_only(log_dir, lambda: read_entries(log_dir))
    assert [e.payload for e in entries] == [b"published"]


class _PausingFileSystem(OsFileSystem):
    """Holds the writer between writing its records and publishing the commit point."""

    def __init__(self) -> None:
        self.written = threading.Event()
        self.release = threading.Event()
        self.armed = False

    def pwrite(self, fd: int, data: bytes, offset: int) -> None:
        if self.armed and offset < 256:
            self.written.set()
            assert self.release.wait(10)
        super().pwrite(fd, data, offset)


@pytest.mark.spec("R-15", "R-4", "W-15")
def test_paused_writer_between_write_and_publish_is_invisible(log_dir: Path) -> None:
    fs = _PausingFileSystem()
    with Writer(log_dir, fs=fs) as writer, Reader(log_dir) as reader:
        writer.append(b"before")
        assert next(reader).payload == b"before"
        fs.armed = True
        appender = threading.Thread(target=writer.append, args=(b"pending",))
        appender.start()
        assert fs.written.wait(10)
        assert not reader.has_next(0.05), "read a record whose commit was not published"
        fs.release.set()
        appender.join()
        assert reader.has_next(1)
        assert next(reader).payload == b"pending"


@pytest.mark.spec("R-22", "R-23", "R-4")
def test_has_next_waits_for_a_record_from_another_thread(log_dir: Path) -> None:
    write_log(log_dir, [])
    with Reader(log_dir) as reader, Writer(log_dir) as writer:
        assert not reader.has_next(0.01)
        timer = threading.Timer(0.1, writer.append, args=(b"late",))
        timer.start()
        started = time.monotonic()
        assert reader.has_next(5)
        assert time.monotonic() - started < 4
        assert next(reader).payload == b"late"
        timer.join()


@pytest.mark.spec("R-19")
def test_reader_follows_cutovers_or_stops_at_the_segment_end(log_dir: Path) -> None:
    write_log(log_dir, [b"a", b"b", None, b"c", None, b"d"])
    assert [e.payload for e in read_entries(log_dir)] == [b"a", b"b", b"c", b"d"]
    assert [e.payload for e in read_entries(log_dir, one_segment=True)] == [b"a", b"b"]
    start = read_entries(log_dir)[2].ref
    assert [e.payload for e in read_entries(log_dir, start=start, one_segment=True)] == [b"c"]


@pytest.mark.spec("R-24")
def test_follower_crosses_a_cutover_made_while_it_waits(log_dir: Path) -> None:
    with Writer(log_dir) as writer, Reader(log_dir) as reader:
        writer.append(b"one")
        assert next(reader).payload == b"one"
        writer.cutover()
        writer.append(b"two")
        assert reader.has_next(1)
        assert next(reader).ref.log == 2


@pytest.mark.spec("R-30")
def test_resume_from_ref_is_inclusive_and_after_is_exclusive(log_dir: Path) -> None:
    write_log(log_dir, [b"0", b"1", None, b"2", b"3"])
    refs = [e.ref for e in read_entries(log_dir)]
    for n, ref in enumerate(refs):
        assert [e.payload for e in read_entries(log_dir, start=ref)] == [str(k).encode() for k in range(n, 4)]
        assert [e.payload for e in read_entries(log_dir, after=ref)] == [str(k).encode() for k in range(n + 1, 4)]


@pytest.mark.parametrize(
    "forge",
    [
        lambda r: Ref(r.log, r.offset, r.index + 1),  # stale: another record's index
        lambda r: Ref(r.log, r.offset + 1, r.index),  # not a record boundary
        lambda r: Ref(r.log, 10_000_000, r.index),  # beyond the commit point
        lambda r: Ref(r.log + 5, 256, r.index),  # no such segment
        lambda r: Ref(r.log, 100, r.index),  # inside the header
    ],
)
@pytest.mark.spec("R-29")
def test_stale_or_forged_ref_is_an_error_not_garbage(log_dir: Path, forge: object) -> None:
    write_log(log_dir, [b"a", b"b", b"c"])
    good = read_entries(log_dir)[1].ref
    with pytest.raises(InvalidRefError):
        Reader(log_dir, start=forge(good))  # type: ignore[operator]


@pytest.mark.spec("R-28")
@given(log=log_numbers, offset=offsets, index=indexes)
def test_ref_text_and_binary_forms_round_trip(log: int, offset: int, index: int) -> None:
    ref = Ref(log, offset, index)
    assert Ref.parse(str(ref)) == ref
    assert Ref.from_bytes(ref.to_bytes()) == ref
    assert len(ref.to_bytes()) == 20


@pytest.mark.spec("R-28")
@pytest.mark.parametrize("text", ["", "1:2", "a:b:c", "0:256:1", "1:256:1:9", "99999999999:1:1"])
def test_malformed_ref_text_is_invalid_ref(text: str) -> None:
    with pytest.raises(InvalidRefError):
        Ref.parse(text)


@pytest.mark.spec("R-9", "R-32")
def test_damage_stops_a_strict_reader_after_the_good_records(log_dir: Path) -> None:
    write_log(log_dir, [b"one", b"two", b"three"])
    flip_bit(segment(log_dir), 256 + 43 + 41)
    got: list[bytes] = []
    with Reader(log_dir) as reader, pytest.raises(ChecksumMismatchError) as caught:
        got.extend(entry.payload for entry in reader)
    assert got == [b"one"]
    assert (caught.value.log, caught.value.offset, caught.value.index) == (1, 256 + 43, 2)
    assert caught.value.path is not None and caught.value.path.endswith("00000001.dat")


@pytest.mark.spec("R-25", "R-26")
def test_tolerant_reader_skips_damage_and_reports_it(log_dir: Path) -> None:
    write_log(log_dir, [b"one", b"two", b"three", None, b"four"])
    flip_bit(segment(log_dir), 256 + 43 + 41)
    with Reader(log_dir, tolerant=True) as reader:
        payloads = [e.payload for e in reader]
        damage = reader.damage
    assert payloads == [b"one", b"three", b"four"]
    assert len(damage) == 1
    assert (damage[0].error_class, damage[0].log, damage[0].offset, damage[0].index) == (
        "checksum_mismatch",
        1,
        256 + 43,
        2,
    )
    assert damage[0].bytes_skipped == 43
    assert damage[0].next_index == 3


@pytest.mark.spec("R-26", "R-39")
def test_tolerant_read_reports_the_index_gap_after_losing_the_last_record_of_a_sealed_segment(log_dir: Path) -> None:
    write_log(log_dir, [b"one", b"two", None, b"three"])
    flip_bit(segment(log_dir), 256 + 43 + 41)  # the payload of the last record of segment 1
    with Reader(log_dir, tolerant=True) as reader:
        assert [e.payload for e in reader] == [b"one", b"three"]
        damage = reader.damage
    assert [(d.error_class, d.log, d.offset, d.index, d.bytes_skipped, d.next_index) for d in damage] == [
        ("checksum_mismatch", 1, 256 + 43, 2, 43, None),
        ("chain_broken", 2, 0, 2, 0, 3),  # the successor starts at 3: index 2 is lost
    ]


@pytest.mark.spec("R-26")
def test_tolerant_read_over_a_missing_segment_names_the_index_it_resumes_at(log_dir: Path) -> None:
    write_log(log_dir, [b"a", None, b"b", None, b"c"])
    segment(log_dir, 2).unlink()
    with Reader(log_dir, tolerant=True) as reader:
        assert [e.payload for e in reader] == [b"a", b"c"]
        damage = reader.damage
    assert [(d.error_class, d.log, d.offset, d.index, d.bytes_skipped, d.next_index) for d in damage] == [
        ("chain_broken", 2, None, 2, 0, 3)
    ]


@pytest.mark.spec("R-17")
def test_a_strict_read_stops_at_a_missing_segment_before_it_opens_a_damaged_one_after_it(log_dir: Path) -> None:
    """BROKEN step 1 (spec 10.2.2): the walk ends with chain_broken at the missing segment; the damaged header of
    the segment after the gap is never opened, so it cannot be the error reported."""
    write_log(log_dir, [b"a", None, b"b", None, b"c"])
    segment(log_dir, 2).unlink()
    flip_bit(segment(log_dir, 3), 4)  # its version field: unsupported_version, were it opened
    with Reader(log_dir) as reader, pytest.raises(BinlogError) as failed:
        list(reader)
    assert (failed.value.error_class, failed.value.log, failed.value.index) == ("chain_broken", 2, 2)


@pytest.mark.spec("R-7", "R-17")
@pytest.mark.parametrize("tolerant", [False, True])
def test_a_missing_segment_below_a_blank_last_one_is_a_broken_chain_with_no_segment_after_it(
    log_dir: Path, tolerant: bool
) -> None:
    """NEXT and BROKEN (spec 10.2.2): a blank last segment counts as a higher segment present, but is never the
    segment the walk resumes at; the chain is broken at the gap and the log ends there."""
    write_log(log_dir, [b"a", None, b"b"])
    segment(log_dir, 2).unlink()
    segment(log_dir, 3).write_bytes(bytes(256))
    with Reader(log_dir, tolerant=tolerant) as reader:
        if not tolerant:
            with pytest.raises(BinlogError) as failed:
                list(reader)
            assert (failed.value.error_class, failed.value.log) == ("chain_broken", 2)
            return
        assert [entry.payload for entry in reader] == [b"a"]
        damage = reader.damage
    assert [(d.error_class, d.log, d.offset, d.index, d.bytes_skipped, d.next_index) for d in damage] == [
        ("chain_broken", 2, None, 2, 0, None)
    ]


@pytest.mark.spec("R-25", "R-39")
def test_tolerant_resync_in_a_finished_segment_searches_up_to_its_tail_end(tmp_path: Path) -> None:
    # Segment 1 is finished, not sealed: its commit point is 342, and records 3 and 4 lie beyond it,
    # below the successor's base index (spec 8.4). S' of spec 10.4 is that end, not the commit point.
    log = tmp_path / "log"
    shutil.copytree(FIXTURES / "finished_segment_unpublished_records", log)
    flip_bit(segment(log), 299 + 41)  # the payload of record 2
    with Reader(log, tolerant=True) as reader:
        assert [entry.index for entry in reader] == [1, 3, 4, 5, 6]
        damage = reader.damage
    assert [(d.error_class, d.offset, d.index, d.bytes_skipped, d.next_index) for d in damage] == [
        ("checksum_mismatch", 299, 2, 43, 3)
    ]


def test_missing_directory_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(NotALogError):
        Reader(tmp_path / "absent")


def test_directory_with_only_lock_reads_as_an_empty_log(tmp_path: Path) -> None:
    (tmp_path / "LOCK").touch()
    assert read_entries(tmp_path) == []


@pytest.mark.spec("R-42")
def test_directory_with_neither_segment_nor_lock_is_not_a_log(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("the parent of a log, say")
    with pytest.raises(NotALogError, match="not a log directory"):
        read_entries(tmp_path)


@pytest.mark.spec("R-25", "R-26")
def test_tolerant_skip_to_a_file_shorter_than_its_commit_point_counts_the_bytes_present(log_dir: Path) -> None:
    write_log(log_dir, [b"one", b"two" * 100, b"three"])
    with segment(log_dir).open("r+b") as handle:
        handle.truncate(256 + 43 + 17)  # the file ends 17 bytes into record 2
    with Reader(log_dir, tolerant=True) as reader:
        assert [e.payload for e in reader] == [b"one"]
        damage = reader.damage
    assert [(d.error_class, d.offset, d.bytes_skipped) for d in damage] == [("truncated", 299, 17)]


MANY = 2 * BATCH_ENTRIES + 3  # records enough for several batches, and a partial one


def write_many(directory: Path) -> list[bytes]:
    """``MANY`` payloads of assorted sizes (some empty), with a cutover a third of the way through."""
    payloads = [bytes([n % 251]) * (n % 97) for n in range(MANY)]
    with Writer(directory, durability="os") as writer:
        writer.append_many(payloads[: MANY // 3])
        writer.cutover()
        writer.append_many(payloads[MANY // 3 :])
    return payloads


def test_position_names_the_next_record_while_decoded_records_wait(log_dir: Path) -> None:
    payloads = write_many(log_dir)
    refs = [entry.ref for entry in read_entries(log_dir)]
    with Reader(log_dir) as reader:
        for n, ref in enumerate(refs):
            assert reader.has_next()
            assert reader.position == ref
            entry = next(reader)
            assert (entry.ref, entry.payload) == (ref, payloads[n])
        assert not reader.has_next()
    assert len(refs) == MANY and [ref.index for ref in refs] == list(range(1, MANY + 1))


@pytest.fixture(scope="module")
def many_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("many") / "log"
    write_many(directory)
    return directory


@settings(max_examples=40, deadline=None)
@given(steps=reader_steps)
def test_loops_left_early_next_and_position_share_one_place_in_the_log(many_log: Path, steps: list[Any]) -> None:
    """Every record once, in order, however loops, iterators and next() take turns; position names the next."""
    expected = [entry.ref for entry in read_entries(many_log)]
    got: list[Ref] = []
    with Reader(many_log) as reader:
        kept = iter(reader)
        for kind, count in steps:
            if kind == "loop":
                for taken, entry in enumerate(reader, start=1):
                    got.append(entry.ref)
                    if taken >= count:
                        break
            else:
                source = reader if kind == "next" else kept
                got += [entry.ref for entry in itertools.islice(source, count)]
            if len(got) < len(expected):  # once the next record is decoded (at a segment's end, it is not yet)
                assert reader.has_next() and reader.position == expected[len(got)]
        got += [entry.ref for entry in reader]
    assert got == expected


def test_an_error_met_in_a_loop_is_raised_again_by_the_next_step_not_taken_for_the_end(log_dir: Path) -> None:
    write_log(log_dir, [b"one", b"two", b"three"])
    flip_bit(segment(log_dir), 256 + 43 + 41)
    with Reader(log_dir) as reader:
        loop = iter(reader)
        assert next(loop).payload == b"one"
        for _ in range(2):  # as Reader.__next__ does: each step walks again
            with pytest.raises(ChecksumMismatchError):
                next(loop)
            with pytest.raises(ChecksumMismatchError):
                next(reader)


def test_closed_reader_returns_none_of_the_records_it_had_decoded(log_dir: Path) -> None:
    write_many(log_dir)
    reader = Reader(log_dir)
    next(reader)
    reader.close()
    with pytest.raises(BinlogError, match="closed"):
        next(reader)


@pytest.mark.spec("R-9", "R-25", "R-32")
@settings(max_examples=25)
@given(damaged=st.integers(min_value=0, max_value=MANY - 1), bit=st.integers(min_value=0, max_value=7))
def test_payload_damage_anywhere_in_a_batch_stops_or_is_skipped_at_that_record(damaged: int, bit: int) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch) / "log"
        payloads = write_many(directory)
        clean = read_entries(directory)
        target = clean[damaged]
        if not target.payload:
            target = next(entry for entry in clean[damaged:] + clean if entry.payload)
        flip_bit(segment(directory, target.log), target.offset + 40 + len(target.payload) // 2, bit)
        got: list[bytes] = []
        with Reader(directory) as reader, pytest.raises(ChecksumMismatchError) as caught:
            got.extend(entry.payload for entry in reader)
        assert got == payloads[: target.index - 1]
        assert (caught.value.log, caught.value.offset, caught.value.index) == (target.log, target.offset, target.index)
        tolerant = read_entries(directory, tolerant=True)
        assert [entry.ref for entry in tolerant] == [entry.ref for entry in clean if entry != target]


@pytest.mark.spec("R-45")
def test_a_reader_that_does_not_read_compressed_segments_reports_them(tmp_path: Path) -> None:
    """The Go testee reads plain segments only: a segment present only compressed is unsupported_feature at
    offset 0, never the end of the log (spec 10.1, R-45)."""
    binary = FIXTURES.parent / "build" / "conformance" / "go" / "binlog-go"
    if not binary.is_file():
        pytest.skip("build/conformance/go/binlog-go is not built: run conformance/implementations/go/build.sh")
    log = tmp_path / "log"
    shutil.copytree(FIXTURES / "several_segments", log)
    plain = log / "00000001.dat"
    (log / "00000001.dat.gz").write_bytes(gzip.compress(plain.read_bytes()))
    plain.unlink()
    done = subprocess.run([str(binary), "read", str(log)], capture_output=True, text=True, timeout=60, check=False)
    answer = json.loads(done.stdout)
    assert answer["outcome"] == "reject" and answer["records"] == []
    assert answer["error"] == {"class": "unsupported_feature", "log": 1, "offset": "0", "index": None}


class RereadSource:
    """Bytes read at an offset that change between reads: the header as a live writer's reader sees it."""

    def __init__(self, *headers: bytes) -> None:
        self.headers = list(headers)
        self.reads = 0

    def read_at(self, offset: int, size: int) -> bytes:
        header = self.headers[min(self.reads, len(self.headers) - 1)]
        self.reads += 1
        return header[offset : offset + size]

    def size(self) -> int:
        return len(self.headers[0])


@pytest.mark.spec("R-46")
def test_header_whose_slots_a_live_writer_tore_is_read_again(tmp_path: Path) -> None:
    """Both slots torn within one read (a writer publishing through a mapping) is no damage: read again."""
    with Writer(tmp_path / "log") as writer:
        writer.append(b"one")
        writer.append(b"two")
    good = (tmp_path / "log" / "00000001.dat").read_bytes()[:256]
    torn = bytearray(good)
    torn[100] ^= 0xFF  # slot 0
    torn[150] ^= 0xFF  # slot 1
    source = RereadSource(bytes(torn), good)
    header = walk.read_header(source, 1)
    assert isinstance(header, SegmentHeaderInfo) and header.commit.next_index == 3
    damaged = RereadSource(bytes(torn))  # the same bytes twice: damage, reported after one more read
    with pytest.raises(BadHeaderError, match="neither commit slot"):
        walk.read_commit(damaged, header)
    assert damaged.reads == 2
    changing = RereadSource(*(bytes(torn[:99]) + bytes([n]) + bytes(torn[100:]) for n in range(20)))
    with pytest.raises(BadHeaderError):
        walk.read_commit(changing, header)
    assert changing.reads == walk.HEADER_READS
