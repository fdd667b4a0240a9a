"""Maintenance beside writers: compression, retention, recovery and the lock never race (spec 2.5 to 2.7, 7, 9)."""

from __future__ import annotations

import contextlib
import errno
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from logtools import append_raw, flip_bit, legacy_segment, log_dir, read_entries, segment, tree_digest, write_log

import openbinlog._maintenance as maintenance
from openbinlog import (
    AsqnOrderError,
    BadHeaderError,
    BinlogIOError,
    ChecksumMismatchError,
    LegacyLogError,
    LogFullError,
    NotALogError,
    OvertakenError,
    Reader,
    Subscriber,
    Writer,
    add_subscriber,
    compress_segments,
    get_subscriber,
    recover,
    retain,
    verify,
)
from openbinlog._format import HEADER_SIZE
from openbinlog._fs import OsFileSystem
from openbinlog._records import encode_record
from openbinlog._segment import (
    CommitState,
    SegmentHeaderInfo,
    active_commit,
    build_header,
    encode_mirror,
    encode_slot,
    parse_header,
)
from openbinlog._segment_file import LocalDirectory
from openbinlog._stat import stat
from openbinlog._subscribers import fix_checkpoints
from openbinlog._writer_base import MAX_LOG_NUMBER

__all__ = ["log_dir"]


def _two_sealed_and_a_last(directory: Path) -> None:
    write_log(directory, [b"a", b"b", None, b"c", None, b"d"])


def _names(directory: Path) -> set[str]:
    return {name for name in os.listdir(directory) if name != "LOCK"}


# -- compression against retention and clean-up (2.6, 7.4) ---------------------------------


@pytest.mark.spec("W-36", "W-3")
def test_compression_never_brings_back_a_segment_retention_removed(
    log_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _two_sealed_and_a_last(log_dir)
    checked = maintenance._digest_unpacked

    def retention_strikes(path: str, codec: str) -> str:
        digest = checked(path, codec)
        if "00000001" in path:  # while segment 1's copy is being checked, retention removes segment 1
            assert [d.log for d in retain(log_dir, max_bytes=0) if d.remove] == [1, 2]
        return digest

    monkeypatch.setattr(maintenance, "_digest_unpacked", retention_strikes)
    compress_segments(log_dir)
    assert _names(log_dir) == {"00000003.dat"}
    report = verify(log_dir)
    assert report.ok, report.damage
    assert [e.payload for e in read_entries(log_dir)] == [b"d"]


@pytest.mark.spec("W-36")
def test_compression_reports_a_copy_retention_removed_as_soon_as_the_lock_was_let_go(
    log_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _two_sealed_and_a_last(log_dir)
    plain_1 = log_dir / "00000001.dat"
    struck: list[int] = []

    class RetentionAtEveryRelease(Writer):
        @contextlib.contextmanager
        def exclusive(self) -> Iterator[None]:
            with super().exclusive():
                yield
            if not plain_1.exists() and not struck:  # segment 1's copy is in place and the lock is free
                struck.append(0)  # retention's own writer is this class too: strike once
                struck.extend(d.log for d in retain(log_dir, max_bytes=0) if d.remove)

    monkeypatch.setattr(maintenance, "Writer", RetentionAtEveryRelease)
    done = compress_segments(log_dir)
    assert struck == [0, 1, 2]
    assert [c.log for c in done] == [1]  # segment 2 was gone before its turn
    assert done[0].compressed_bytes > 0
    assert _names(log_dir) == {"00000003.dat"}
    assert [e.payload for e in read_entries(log_dir)] == [b"d"]


@pytest.mark.spec("W-25", "W-36")
def test_a_writer_opening_the_log_leaves_a_compression_in_progress_alone(
    log_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _two_sealed_and_a_last(log_dir)
    packed = maintenance._compress_into

    def writer_opens_meanwhile(source: int, target: int, codec: str) -> None:
        packed(source, target, codec)
        with Writer(log_dir) as other:
            assert not [a for a in other.recovery if a.action == "remove_temp"]
            other.append(b"e")

    monkeypatch.setattr(maintenance, "_compress_into", writer_opens_meanwhile)
    assert [c.log for c in compress_segments(log_dir)] == [1, 2]
    assert _names(log_dir) == {"00000001.dat.zst", "00000002.dat.zst", "00000003.dat"}
    assert [e.payload for e in read_entries(log_dir)] == [b"a", b"b", b"c", b"d", b"e", b"e"]


@pytest.mark.spec("W-25")
def test_an_abandoned_compression_file_is_removed_by_the_next_writer(log_dir: Path) -> None:
    write_log(log_dir, [b"a"])
    stale = log_dir / ".00000001.dat.zst.0badc0de.tmp"
    stale.write_bytes(b"half a copy")
    with Writer(log_dir) as writer:
        assert [(a.action, a.path) for a in writer.recovery] == [("remove_temp", str(stale))]
    assert not stale.exists()


@pytest.mark.spec("W-25")
def test_files_that_only_resemble_temporary_files_are_left_alone(log_dir: Path) -> None:
    write_log(log_dir, [b"a"])
    lookalikes = [".00000001.dat.abc.tmp\n", ".0000000\u0661.dat.abc.tmp", ".00000001.dat.xyz.tmp"]
    for name in lookalikes:
        (log_dir / name).write_bytes(b"not ours")
    with Writer(log_dir) as writer:
        assert writer.recovery == []
    assert all((log_dir / name).exists() for name in lookalikes)


@pytest.mark.spec("W-25")
def test_a_spare_volume_survives_another_writers_clean_up(log_dir: Path) -> None:
    with Writer(log_dir, preallocate=64 * 1024) as first:
        first.append(b"a")
        assert first._spare_thread is not None
        first._spare_thread.join()
        spares = [name for name in os.listdir(log_dir) if name.endswith(".tmp")]
        assert len(spares) == 1
        with Writer(log_dir, preallocate=64 * 1024) as second:
            assert not [a for a in second.recovery if a.action == "remove_temp"]
            assert (log_dir / spares[0]).exists()
            second.append(b"b")
        first.cutover()  # rolls onto the spare it filled
    assert [e.payload for e in read_entries(log_dir)] == [b"a", b"b"]


@pytest.mark.spec("W-29", "W-36")
def test_a_compressed_segment_left_last_by_blank_removal_keeps_the_log_writable(log_dir: Path) -> None:
    write_log(log_dir, [b"a", b"b", None])
    compress_segments(log_dir)  # segment 2 is the last one, so segment 1 is compressed
    segment(log_dir, 2).write_bytes(b"")  # as if the successor's header had never become durable
    assert _names(log_dir) == {"00000001.dat.zst", "00000002.dat"}
    with Writer(log_dir) as writer:
        actions = [(a.action, a.log) for a in writer.recovery]
        ref = writer.append(b"c")
    assert actions == [("remove_blank_segment", 2), ("create_successor", 2)]
    assert (ref.log, ref.index) == (2, 3)
    assert [e.payload for e in read_entries(log_dir)] == [b"a", b"b", b"c"]


# -- one recovery planner (7.4, W-37) -------------------------------------------------------


def _torn(directory: Path, *, preallocate: int | None) -> None:
    write_log(directory, [b"one", b"two"], preallocate=preallocate)
    path = segment(directory)
    with path.open("r+b") as handle:
        handle.seek(0, os.SEEK_END if preallocate is None else os.SEEK_SET)
        if preallocate is not None:
            handle.seek(1000)
        handle.write(b"\x07" * 50)


def _facts(actions: list[maintenance.RecoveryAction]) -> list[tuple[str, int | None, int | None, int, int]]:
    return [(a.action, a.log, a.offset, a.bytes, a.records) for a in actions]


@pytest.mark.spec("W-37", "W-22")
@pytest.mark.parametrize("preallocate", [None, 8192], ids=["plain", "preallocated"])
def test_the_dry_run_reports_exactly_what_recovery_does(log_dir: Path, preallocate: int | None) -> None:
    _torn(log_dir, preallocate=preallocate)
    (log_dir / ".00000002.dat.1f.tmp").write_bytes(b"")
    planned = recover(log_dir, dry_run=True)
    done = recover(log_dir)
    assert _facts(planned) == _facts(done)
    assert [a.action for a in done] == ["remove_temp", "truncate_tail" if preallocate is None else "zero_tail"]
    assert recover(log_dir, dry_run=True) == []


@pytest.mark.spec("W-37")
def test_the_dry_run_refuses_a_version_1_log_as_recovery_does(log_dir: Path) -> None:
    log_dir.mkdir()
    (log_dir / "00000001.dat").write_bytes(legacy_segment([b"x"], log=1, closed=False))
    for dry_run in (True, False):
        with pytest.raises(LegacyLogError):
            recover(log_dir, dry_run=dry_run)


@pytest.mark.spec("W-37", "W-26")
def test_a_refusal_changes_no_file(log_dir: Path) -> None:
    write_log(log_dir, [b"one", b"two", None, b"three"])
    append_raw(segment(log_dir, 2), b"torn")
    (log_dir / ".00000003.dat.1f.tmp").write_bytes(b"")
    flip_bit(segment(log_dir, 2), HEADER_SIZE + 41)  # committed payload of "three"
    before = tree_digest(log_dir)
    for attempt in (lambda: recover(log_dir, dry_run=True), lambda: recover(log_dir), lambda: Writer(log_dir)):
        with pytest.raises(ChecksumMismatchError):
            attempt()
        assert tree_digest(log_dir) == before


@pytest.mark.spec("W-37")
def test_recovery_of_a_log_left_without_segments_creates_none(log_dir: Path) -> None:
    write_log(log_dir, [])
    segment(log_dir).write_bytes(bytes(HEADER_SIZE))  # blank: its header never became durable
    assert [a.action for a in recover(log_dir)] == ["remove_blank_segment"]
    assert _names(log_dir) == set()
    assert read_entries(log_dir) == []


def _commit(path: Path) -> CommitState:
    header = parse_header(path.read_bytes()[:HEADER_SIZE], log=int(path.name[:8]))
    assert isinstance(header, SegmentHeaderInfo)
    return header.commit


@pytest.mark.spec("W-30")
def test_recovery_seals_only_the_segment_just_below_the_last(log_dir: Path) -> None:
    write_log(log_dir, [b"one", b"two"])  # segment 1 open, next index 3
    header = parse_header(segment(log_dir).read_bytes()[:HEADER_SIZE], log=1)
    assert isinstance(header, SegmentHeaderInfo)
    log_id = header.log_id
    segment(log_dir, 3).write_bytes(build_header(log=3, log_id=log_id, base_index=3, created_us=1))
    before = tree_digest(log_dir)
    assert recover(log_dir, dry_run=True) == []
    assert recover(log_dir) == []  # no segment 2: nothing to seal (spec 8.5), the gap stays for readers to report
    assert tree_digest(log_dir) == before


@pytest.mark.spec("W-21", "W-23")
def test_recovery_adopts_a_tail_of_skippable_records_only(log_dir: Path) -> None:
    write_log(log_dir, [b"one"])
    commit = _commit(segment(log_dir))
    skippable = encode_record(commit.next_index, b"metadata", frame=200)
    append_raw(segment(log_dir), skippable)
    actions = recover(log_dir)
    assert [(a.action, a.offset, a.records) for a in actions] == [("adopt_records", commit.commit_offset, 0)]
    adopted = _commit(segment(log_dir))
    assert (adopted.commit_offset, adopted.next_index) == (commit.commit_offset + len(skippable), commit.next_index)
    assert [e.payload for e in read_entries(log_dir)] == [b"one"]


@pytest.mark.spec("W-26", "R-39", "W-37")
def test_recovery_refuses_a_slot_whose_next_index_its_records_contradict(log_dir: Path) -> None:
    write_log(log_dir, [b"one", b"two"])
    path = segment(log_dir)
    data = bytearray(path.read_bytes())
    commit = _commit(path)
    lying = CommitState(commit.generation + 1, commit.commit_offset, commit.next_index + 1, -1, 0, 0)
    at, raw = encode_slot(lying)
    data[at : at + len(raw)] = raw
    path.write_bytes(bytes(data))
    before = tree_digest(log_dir)
    for dry_run in (True, False):
        with pytest.raises(BadHeaderError) as caught:
            recover(log_dir, dry_run=dry_run)
        assert (caught.value.log, caught.value.offset, caught.value.index) == (1, at, commit.next_index)
    assert tree_digest(log_dir) == before


@pytest.mark.spec("W-36", "W-29")
def test_a_sealed_segment_with_only_a_blank_segment_above_is_the_last_one(log_dir: Path) -> None:
    write_log(log_dir, [b"a", None])
    segment(log_dir, 2).write_bytes(b"")  # blank: segment 1 is the last segment (spec 1.4, 2.6)
    assert compress_segments(log_dir, dry_run=True) == []
    # Compression lists the segments under the lock after its writer's open, which deleted the blank segment 2
    # and created it again as segment 1's successor (W-29): only then is segment 1 no longer the last one.
    assert [c.log for c in compress_segments(log_dir)] == [1]
    assert _names(log_dir) == {"00000001.dat.zst", "00000002.dat"}
    assert [e.payload for e in read_entries(log_dir)] == [b"a"]


def test_recovery_refuses_a_directory_that_is_not_a_log(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    for dry_run in (True, False):
        with pytest.raises(NotALogError):
            recover(tmp_path, dry_run=dry_run)
    assert os.listdir(tmp_path) == ["notes.txt"]


# -- the lock (W-38) -------------------------------------------------------------------------


@pytest.mark.spec("W-38", "W-31")
def test_a_deleted_lock_does_not_let_two_writers_commit_at_once(log_dir: Path) -> None:
    rounds = 300
    with Writer(log_dir) as first:
        first.append(b"before")
        (log_dir / "LOCK").unlink()
        with Writer(log_dir) as second:  # locks a new LOCK file
            start = threading.Barrier(2)

            def run(writer: Writer, tag: bytes) -> None:
                start.wait()
                for n in range(rounds):
                    writer.append(tag + str(n).encode())

            threads = [threading.Thread(target=run, args=(w, t)) for w, t in ((first, b"A"), (second, b"B"))]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert os.fstat(first._lock_fd).st_ino == (log_dir / "LOCK").stat().st_ino
    entries = read_entries(log_dir)
    assert [e.index for e in entries] == list(range(1, 2 * rounds + 2))
    assert verify(log_dir).ok


# -- what a writer refuses (W-1, W-19, asqn and counters) ------------------------------------


def _last_log(directory: Path) -> None:
    directory.mkdir()
    (directory / "LOCK").touch()
    header = build_header(log=MAX_LOG_NUMBER, log_id=bytes(16), base_index=1, created_us=1)
    (directory / f"{MAX_LOG_NUMBER:08d}.dat").write_bytes(header)


@pytest.mark.spec("W-1")
def test_no_segment_is_created_beyond_99999999(log_dir: Path) -> None:
    _last_log(log_dir)
    with Writer(log_dir, max_segment_bytes=1) as writer:
        refs = [writer.append(b"x"), writer.append(b"y")]
        with pytest.raises(LogFullError):
            writer.cutover()
        writer.append(b"z")  # the last segment a log may have keeps growing
    assert {ref.log for ref in refs} == {MAX_LOG_NUMBER}
    assert _names(log_dir) == {f"{MAX_LOG_NUMBER:08d}.dat"}
    assert [e.payload for e in read_entries(log_dir)] == [b"x", b"y", b"z"]


@pytest.mark.spec("W-1", "W-10")
def test_a_full_preallocated_last_segment_refuses_with_a_typed_error(log_dir: Path) -> None:
    _last_log(log_dir)
    path = log_dir / f"{MAX_LOG_NUMBER:08d}.dat"
    path.write_bytes(build_header(log=MAX_LOG_NUMBER, log_id=bytes(16), base_index=1, created_us=1, capacity=400))
    os.truncate(path, 400)
    with Writer(log_dir) as writer:
        writer.append(b"x" * 50)
        with pytest.raises(LogFullError):
            writer.append(b"y" * 100)
    assert [e.payload for e in read_entries(log_dir)] == [b"x" * 50]


class _FailingDirectorySync(OsFileSystem):
    armed = False

    def fsync_dir(self, path: str) -> None:
        if self.armed:
            raise OSError(errno.EIO, "injected directory sync failure")
        super().fsync_dir(path)


@pytest.mark.spec("W-19")
def test_a_cutover_failing_after_its_batch_was_published_acknowledges_nothing(log_dir: Path) -> None:
    fs = _FailingDirectorySync()
    with Writer(log_dir, fs=fs, max_segment_bytes=HEADER_SIZE + 1) as writer:
        fs.armed = True  # the batch is written and published, then its segment is full: the cutover fails
        with pytest.raises(BinlogIOError):
            writer.append(b"unacknowledged")
    assert [e.payload for e in read_entries(log_dir)] == [b"unacknowledged"]  # present, never acknowledged


@pytest.mark.spec("W-8")
@pytest.mark.parametrize("asqn", [2**63, -2, "7"])
def test_an_asqn_the_format_cannot_hold_fails_only_its_own_append(log_dir: Path, asqn: object) -> None:
    with Writer(log_dir) as writer:
        barrier = threading.Barrier(4)
        refs: list[int] = []

        def others() -> None:
            barrier.wait()
            refs.append(writer.append(b"fine").index)

        threads = [threading.Thread(target=others) for _ in range(3)]
        for thread in threads:
            thread.start()
        barrier.wait()
        with pytest.raises(AsqnOrderError):
            writer.append(b"bad", asqn=asqn)  # type: ignore[arg-type]
        for thread in threads:
            thread.join()
    assert sorted(refs) == [1, 2, 3]


def test_a_used_up_generation_is_a_typed_error(log_dir: Path) -> None:
    write_log(log_dir, [b"a"])
    path = segment(log_dir)
    data = bytearray(path.read_bytes())
    commit = active_commit(bytes(data[:HEADER_SIZE]), base_index=1, log=1)
    last = CommitState(2**64 - 1, commit.commit_offset, commit.next_index, commit.last_asqn, commit.last_timestamp_us)
    for at, raw in (encode_slot(last), encode_mirror(last, 1)):
        data[at : at + len(raw)] = raw
    path.write_bytes(bytes(data))
    with Writer(log_dir) as writer, pytest.raises(LogFullError):
        writer.append(b"b")
    assert [e.payload for e in read_entries(log_dir)] == [b"a"]


# -- subscribers beside retention (17) ---------------------------------------------------------


def test_a_subscriber_resumes_after_retention_removed_the_segment_of_its_checkpoint(log_dir: Path) -> None:
    write_log(log_dir, [b"a", b"b", None, b"c"])
    add_subscriber(log_dir, "archiver")
    with Subscriber(log_dir, "archiver") as subscriber:
        consumed = [next(subscriber), next(subscriber)]
        subscriber.commit(consumed[-1])  # the last record of segment 1
    assert [d.log for d in retain(log_dir) if d.remove] == [1]
    with Subscriber(log_dir, "archiver") as subscriber:
        assert [e.payload for e in subscriber] == [b"c"]


def test_used_up_indexes_are_a_typed_error(log_dir: Path) -> None:
    write_log(log_dir, [b"a"])
    path = segment(log_dir)
    data = bytearray(path.read_bytes())
    commit = active_commit(bytes(data[:HEADER_SIZE]), base_index=1, log=1)
    last = CommitState(commit.generation + 1, commit.commit_offset, 2**64 - 2, -1, commit.last_timestamp_us)
    for at, raw in (encode_slot(last), encode_mirror(last, 1)):
        data[at : at + len(raw)] = raw
    path.write_bytes(bytes(data))
    with Writer(log_dir, verify_on_open=False) as writer:
        assert writer.append(b"the last index").index == 2**64 - 2  # its slot's next index is 2^64-1
        with pytest.raises(LogFullError, match="indexes are used up"):
            writer.append(b"one too many")


def test_verify_skips_a_segment_retention_removed_after_its_listing(
    log_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen in the stress test: repair's verify listed segment 26, retention removed it, verify failed."""
    write_log(log_dir, [b"a", None, b"b", None, b"c"])
    add_subscriber(log_dir, "archiver")
    with Subscriber(log_dir, "archiver") as subscriber:
        subscriber.commit(next(subscriber))
    stale = LocalDirectory.segments

    def listed_before_retention(self: LocalDirectory) -> list[int]:
        logs = stale(self)
        return [1, *logs] if logs[0] == 2 else logs

    assert [d.log for d in retain(log_dir) if d.remove] == [1]
    monkeypatch.setattr(LocalDirectory, "segments", listed_before_retention)
    report = verify(log_dir)
    assert report.ok, report.damage
    assert [s.log for s in report.segments] == [2, 3]
    assert [s.log for s in stat(log_dir)] == [2, 3]  # listed [1, 2, 3] too


def test_a_retention_dry_run_decides_again_when_retention_removed_a_segment_it_listed(
    log_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen in a stress run: ``retain --dry-run`` beside ``retain`` failed on a segment removed since its listing."""
    write_log(log_dir, [b"a", None, b"b", None, b"c", None, b"d"])
    add_subscriber(log_dir, "archiver")
    with Subscriber(log_dir, "archiver") as subscriber:
        subscriber.commit(next(subscriber))  # segment 1 consumed, segment 2 needed
    assert [d.log for d in retain(log_dir, max_bytes=0) if d.remove] == [1]
    fresh = [(d.log, d.remove, d.reason) for d in retain(log_dir, max_bytes=0, dry_run=True)]
    listed = maintenance.list_segments

    stale = [1]
    forever = False

    def listed_before_retention(path: str) -> list[int]:
        logs = [*stale, *listed(path)]
        if not forever:
            stale.clear()  # the listing after it is fresh
        return logs

    monkeypatch.setattr(maintenance, "list_segments", listed_before_retention)
    calls = []
    decide = maintenance._retention_decisions

    def counted(path: str, **policy: Any) -> list[maintenance.RetentionDecision]:
        calls.append(policy)
        return decide(path, **policy)

    monkeypatch.setattr(maintenance, "_retention_decisions", counted)
    assert [(d.log, d.remove, d.reason) for d in retain(log_dir, max_bytes=0, dry_run=True)] == fresh
    assert fresh == [(2, False, "needed by archiver")]
    assert len(calls) == 2  # once from the stale listing, once from a fresh one
    assert _names(log_dir) >= {"00000002.dat", "00000003.dat", "00000004.dat"}
    stale.append(1)
    forever = True
    with pytest.raises(NotALogError) as failed:  # a listing that names the removed segment again: no endless retry
        retain(log_dir, max_bytes=0, dry_run=True)
    assert failed.value.log == 1


def test_repair_keeps_a_checkpoint_retention_made_point_just_before_the_first_record(log_dir: Path) -> None:
    """Resetting it to null would make a live subscriber read everything again."""
    write_log(log_dir, [b"a", b"b", None, b"c"])
    add_subscriber(log_dir, "archiver")
    with Subscriber(log_dir, "archiver") as subscriber:
        consumed = [next(subscriber), next(subscriber)]
        subscriber.commit(consumed[-1])
    assert [d.log for d in retain(log_dir) if d.remove] == [1]
    assert fix_checkpoints(log_dir) == []
    assert get_subscriber(log_dir, "archiver").checkpoint == consumed[-1].ref


@pytest.mark.spec("R-17")
def test_a_reader_overtaken_by_retention_is_told_so_not_shown_a_broken_chain(log_dir: Path) -> None:
    """Seen in the stress test: verify read segment 31 while retention removed 31 to 33, then said chain_broken."""
    write_log(log_dir, [b"a", None, b"b", None, b"c", None, b"d"])
    with Reader(log_dir) as reader:
        assert next(reader).payload == b"a"  # segment 1 is open in the reader
        for log in (1, 2):
            segment(log_dir, log).unlink()  # retention, lowest first
        with pytest.raises(OvertakenError) as raised:
            list(reader)
    assert (raised.value.error_class, raised.value.log) == ("invalid_ref", 2)
    assert "read again from segment 3" in str(raised.value)
    assert verify(log_dir).ok  # a fresh walk starts at the lowest segment left


@pytest.mark.spec("R-42")
def test_stat_of_a_directory_that_is_not_a_log_raises_rather_than_listing_nothing(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("the parent of a log, say")
    with pytest.raises(NotALogError):
        stat(tmp_path)
