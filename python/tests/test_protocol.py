"""The order of file operations (write, cutover, recovery), locking, retention and reader rules."""

from __future__ import annotations

import fcntl
import itertools
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from logtools import append_raw, assert_read_only, commit_offset, flip_bit, read_entries, segment, write_log

from openbinlog import (
    AsqnNotIncreasingError,
    BadHeaderError,
    ChainBrokenError,
    ChecksumMismatchError,
    InvalidRefError,
    NotALogError,
    Reader,
    Ref,
    TruncatedError,
    UnsupportedFeatureError,
    UnsupportedVersionError,
    Writer,
    _accel,
    encode_record,
)
from openbinlog._crc import masked_crc32c
from openbinlog._fs import SHARED_SYNC_SUPPORTED, OsFileSystem
from openbinlog._segment import CommitState, build_header, encode_mirror, encode_slot
from openbinlog._split import read_split


class RecordingFileSystem(OsFileSystem):
    """The real file system, logging each operation as (operation, file name, detail)."""

    def __init__(self) -> None:
        self.ops: list[tuple[str, str, object]] = []
        self._names: dict[int, str] = {}

    def _name(self, fd: int) -> str:
        return self._names.get(fd, "?")

    def open_write(self, path: str, *, create: bool = False, exclusive: bool = False) -> int:
        fd = super().open_write(path, create=create, exclusive=exclusive)
        self._names[fd] = os.path.basename(path)
        return fd

    def pwrite(self, fd: int, data: bytes, offset: int) -> None:
        region = "header" if offset < 256 else "records"
        self.ops.append(("pwrite", self._name(fd), region))
        super().pwrite(fd, data, offset)

    def truncate(self, fd: int, size: int) -> None:
        self.ops.append(("truncate", self._name(fd), size))
        super().truncate(fd, size)

    def fdatasync(self, fd: int) -> None:
        self.ops.append(("fdatasync", self._name(fd), None))
        super().fdatasync(fd)

    def fsync_dir(self, path: str) -> None:
        self.ops.append(("fsync_dir", "", None))
        super().fsync_dir(path)

    def link(self, source: str, target: str) -> None:
        self.ops.append(("link", os.path.basename(source)[:13], os.path.basename(target)))
        super().link(source, target)
        for fd, name in self._names.items():
            if name == os.path.basename(source):
                self._names[fd] = os.path.basename(target)

    def unlink(self, path: str) -> None:
        self.ops.append(("unlink", os.path.basename(path)[:13], None))
        super().unlink(path)

    def lock(self, fd: int) -> None:
        self.ops.append(("lock", "LOCK", None))
        super().lock(fd)

    def unlock(self, fd: int) -> None:
        self.ops.append(("unlock", "LOCK", None))
        super().unlock(fd)

    def lock_append(self, fd: int) -> None:
        self.ops.append(("lock_append", "LOCK", None))
        super().lock_append(fd)

    def unlock_append(self, fd: int) -> None:
        self.ops.append(("unlock_append", "LOCK", None))
        super().unlock_append(fd)


@pytest.mark.spec("W-13", "W-14", "W-15", "W-5", "W-31")
def test_append_writes_syncs_then_publishes_under_the_lock(log_dir: Path) -> None:
    fs = RecordingFileSystem()
    with Writer(log_dir, fs=fs, shared_sync=False) as writer:
        fs.ops.clear()
        writer.append(b"payload")
        ops = list(fs.ops)
    seg = "00000001.dat"
    assert ops == [
        ("lock", "LOCK", None),
        ("pwrite", seg, "records"),
        ("fdatasync", seg, None),
        ("pwrite", seg, "header"),  # the slot
        ("pwrite", seg, "header"),  # the mirrors, after the slot
        ("unlock", "LOCK", None),
    ]


@pytest.mark.skipif(not SHARED_SYNC_SUPPORTED, reason="shared syncs need Linux 4.13 and OFD locks")
@pytest.mark.spec("W-13", "W-15", "W-31", "W-43")
def test_shared_append_writes_under_the_append_lock_syncs_outside_it_then_publishes(log_dir: Path) -> None:
    fs = RecordingFileSystem()
    with Writer(log_dir, fs=fs) as writer:
        fs.ops.clear()
        writer.append(b"payload")
        ops = list(fs.ops)
    seg = "00000001.dat"
    assert ops == [
        ("lock_append", "LOCK", None),
        ("pwrite", seg, "header"),  # the header again, as read (W-43)
        ("pwrite", seg, "records"),
        ("unlock_append", "LOCK", None),
        ("fdatasync", seg, None),  # no lock held
        ("lock_append", "LOCK", None),
        ("pwrite", seg, "header"),  # the slot
        ("pwrite", seg, "header"),  # the mirrors, after the slot
        ("unlock_append", "LOCK", None),
    ]


class _AppendsMeanwhile(RecordingFileSystem):
    """A recording file system that lets another writer append once, at a moment of this writer's batch: ``before``
    its sync (records written after this writer's, published before this one publishes), or before it takes the
    append lock ``after`` its sync (after the lock-free read of step 7 found the batch unpublished)."""

    def __init__(self, moment: str) -> None:
        super().__init__()
        self.moment = moment
        self.meanwhile: list[Callable[[], object]] = []

    def fdatasync(self, fd: int) -> None:
        if self.moment == "before" and self.meanwhile:
            self.meanwhile.pop()()
        super().fdatasync(fd)

    def lock_append(self, fd: int) -> None:
        if self.moment == "after" and self.meanwhile and self.ops and self.ops[-1][0] == "fdatasync":
            self.meanwhile.pop()()
        super().lock_append(fd)


@pytest.mark.skipif(not SHARED_SYNC_SUPPORTED, reason="shared syncs need Linux 4.13 and OFD locks")
@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.spec("W-43")
def test_a_shared_batch_another_writer_published_takes_no_lock_to_publish(
    log_dir: Path, monkeypatch: pytest.MonkeyPatch, compiled: bool
) -> None:
    """Step 7 of spec 6.8: the active slot read without the lock already covers the batch, so the writer neither
    takes the append lock again nor writes a slot; its records are committed, under the other writer's slot."""
    if not compiled:
        monkeypatch.setattr(_accel, "shared_write", None)
        monkeypatch.setattr(_accel, "shared_publish", None)
    fs = _AppendsMeanwhile("before")
    with Writer(log_dir, fs=fs) as first, Writer(log_dir) as second:
        first.append(b"opens")
        fs.meanwhile.append(lambda: second.append(b"after it"))
        fs.ops.clear()
        ref = first.append(b"payload")
        ops = list(fs.ops)
    assert ops == [
        ("lock_append", "LOCK", None),
        ("pwrite", "00000001.dat", "header"),  # the header again, as read (W-43)
        ("pwrite", "00000001.dat", "records"),
        ("unlock_append", "LOCK", None),
        ("fdatasync", "00000001.dat", None),  # after the other writer's batch, which published beyond it
    ]
    assert [entry.payload for entry in read_entries(log_dir)] == [b"opens", b"payload", b"after it"]
    assert ref.index == 2


@pytest.mark.skipif(not SHARED_SYNC_SUPPORTED, reason="shared syncs need Linux 4.13 and OFD locks")
@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.spec("W-43")
def test_a_shared_batch_published_between_its_lock_free_read_and_the_lock_writes_no_slot(
    log_dir: Path, monkeypatch: pytest.MonkeyPatch, compiled: bool
) -> None:
    """Step 7 of spec 6.8 reads the active slot again under the append lock: a publication made after the read
    without the lock covers the batch, and the writer must not publish its shorter end over it."""
    if not compiled:
        monkeypatch.setattr(_accel, "shared_write", None)
        monkeypatch.setattr(_accel, "shared_publish", None)
    fs = _AppendsMeanwhile("after")
    with Writer(log_dir, fs=fs) as first, Writer(log_dir) as second:
        first.append(b"opens")
        fs.meanwhile.append(lambda: second.append(b"after it"))
        fs.ops.clear()
        first.append(b"payload")
        ops = [op for op, _, _ in fs.ops]
    assert ops == ["lock_append", "pwrite", "pwrite", "unlock_append", "fdatasync", "lock_append", "unlock_append"]
    assert [entry.payload for entry in read_entries(log_dir)] == [b"opens", b"payload", b"after it"]
    assert commit_offset(segment(log_dir)) == segment(log_dir).stat().st_size


@pytest.mark.skipif(not SHARED_SYNC_SUPPORTED, reason="shared syncs need Linux 4.13 and OFD locks")
@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.spec("W-43", "W-44")
def test_a_shared_batch_published_by_nobody_else_publishes_under_the_append_lock(
    log_dir: Path, monkeypatch: pytest.MonkeyPatch, compiled: bool
) -> None:
    """The converse: another writer appended before this one's batch was written, so its slot does not cover the
    batch; the lock-free read must not take that for a publication."""
    if not compiled:
        monkeypatch.setattr(_accel, "shared_write", None)
        monkeypatch.setattr(_accel, "shared_publish", None)
    fs = RecordingFileSystem()
    with Writer(log_dir, fs=fs) as first, Writer(log_dir) as second:
        first.append(b"opens")
        second.append(b"before it")
        fs.ops.clear()
        first.append(b"payload")
        ops = [op for op, _, _ in fs.ops]
    assert ops[-4:] == ["lock_append", "pwrite", "pwrite", "unlock_append"]
    assert [entry.payload for entry in read_entries(log_dir)] == [b"opens", b"before it", b"payload"]
    assert commit_offset(segment(log_dir)) == segment(log_dir).stat().st_size


@pytest.mark.spec("W-27", "W-28", "W-31")
def test_cutover_order_temp_sync_link_dirsync_then_seal(log_dir: Path) -> None:
    fs = RecordingFileSystem()
    with Writer(log_dir, fs=fs) as writer:
        writer.append(b"a")
        fs.ops.clear()
        writer.cutover()
        ops = [(op, name) for op, name, _ in fs.ops]
    old, temp = "00000001.dat", ".00000002.dat"
    new_temp = ops[2][1]
    assert ops == [
        ("lock", "LOCK"),
        ("fdatasync", old),  # step 0: everything in N durable
        ("pwrite", new_temp),  # the new header, into the temp file
        ("fdatasync", new_temp),
        ("link", temp),
        ("unlink", temp),
        ("fsync_dir", ""),
        ("pwrite", old),  # seal: slot
        ("pwrite", old),  # mirrors
        ("fdatasync", old),
        ("unlock", "LOCK"),
    ]
    assert new_temp.startswith(".00000002.dat.") and new_temp.endswith(".tmp")


@pytest.mark.spec("W-22", "W-23", "W-20")
def test_recovery_truncates_syncs_publishes_and_syncs_again(log_dir: Path) -> None:
    write_log(log_dir, [b"a"])
    append_raw(segment(log_dir), encode_record(2, b"adopt me") + b"torn bytes")
    fs = RecordingFileSystem()
    with Writer(log_dir, fs=fs):
        ops = [(op, detail) for op, _, detail in fs.ops if op not in {"lock", "unlock"}]
    end = 256 + 41 + 48
    assert ops == [
        ("fsync_dir", None),  # opening: the names it appends to are durable
        ("truncate", end),
        ("pwrite", "header"),  # the header it read, written again: a failed sync may have left it only in memory
        ("pwrite", "records"),  # the adopted record, likewise
        ("fdatasync", None),
        ("pwrite", "header"),  # the new slot
        ("pwrite", "header"),  # the mirrors
        ("fdatasync", None),
    ]


@pytest.mark.spec("W-22")
def test_recovery_makes_its_backup_durable_before_it_removes_the_bytes(log_dir: Path, tmp_path: Path) -> None:
    write_log(log_dir, [b"a"])
    append_raw(segment(log_dir), encode_record(2, b"adopt me") + b"torn bytes")
    fs = RecordingFileSystem()
    backups = tmp_path / "kept" / "backups"
    with Writer(log_dir, fs=fs, backup_dir=backups):
        ops = [(op, name, detail) for op, name, detail in fs.ops if op not in {"lock", "unlock"}]
    backup = f"{segment(log_dir).name}@{256 + 41 + 48}"
    assert ops[1:6] == [
        ("truncate", backup, 0),
        ("pwrite", backup, "header"),  # the removed bytes, at offset 0 of the copy
        ("fdatasync", backup, None),
        ("fsync_dir", "", None),  # the copy's name
        ("truncate", segment(log_dir).name, 256 + 41 + 48),
    ]
    assert (backups / backup).read_bytes() == b"torn bytes"


@pytest.mark.spec("W-20")
def test_tail_left_by_another_process_is_recovered_before_the_next_batch(log_dir: Path) -> None:
    with Writer(log_dir) as writer:
        writer.append(b"a")
        append_raw(segment(log_dir), b"\x00\x00\x01\x00garbage from a writer killed mid-write")
        ref = writer.append(b"b")
    assert ref.offset == 256 + 41
    assert [e.payload for e in read_entries(log_dir)] == [b"a", b"b"]


@pytest.mark.spec("W-16")
def test_writer_moves_to_the_successor_another_writer_created(log_dir: Path) -> None:
    with Writer(log_dir) as first, Writer(log_dir) as second:
        first.append(b"a")
        second.cutover()
        ref = first.append(b"b")
    assert ref == Ref(2, 256, 2)


@pytest.mark.spec("W-32", "W-33", "W-34")
def test_lock_is_an_ofd_lock_that_excludes_posix_lockers_and_survives_closing_other_descriptors(log_dir: Path) -> None:
    write_log(log_dir, [b"a"])
    probe = (
        "import fcntl,sys\n"
        "fd=open(sys.argv[1],'r+')\n"
        "try:\n fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n print('free')\n"
        "except OSError:\n print('held')\n"
    )
    with Writer(log_dir) as writer, writer._locked:  # the lock of one batch
        # The POSIX pitfall: closing another descriptor of LOCK must not drop it.
        other = os.open(log_dir / "LOCK", os.O_RDONLY)
        os.close(other)
        result = subprocess.run(
            [sys.executable, "-c", probe, str(log_dir / "LOCK")], capture_output=True, text=True, timeout=30, check=True
        )
        assert result.stdout.strip() == "held"
    result = subprocess.run(
        [sys.executable, "-c", probe, str(log_dir / "LOCK")], capture_output=True, text=True, timeout=30, check=True
    )
    assert result.stdout.strip() == "free"
    assert (log_dir / "LOCK").stat().st_size == 0
    assert hasattr(fcntl, "F_OFD_SETLKW")


@pytest.mark.spec("W-3")
def test_retention_removes_only_sealed_lowest_segments(log_dir: Path) -> None:
    write_log(log_dir, [b"a", None, b"b", None, b"c"])
    with Writer(log_dir) as writer:
        assert writer.drop_segments(before_log=10) == [1, 2]  # never the last one
    assert sorted(p.name for p in log_dir.glob("*.dat")) == ["00000003.dat"]
    entries = read_entries(log_dir)
    assert [(e.index, e.payload) for e in entries] == [(3, b"c")]


@pytest.mark.spec("R-21")
def test_reader_starts_at_the_lowest_segment_present(log_dir: Path) -> None:
    write_log(log_dir, [b"a", None, b"b", b"c", None, b"d"])
    with Writer(log_dir) as writer:
        writer.drop_segments(before_log=2)
    assert [(e.index, e.payload) for e in read_entries(log_dir)] == [(2, b"b"), (3, b"c"), (4, b"d")]
    with pytest.raises(InvalidRefError):
        Reader(log_dir, start=Ref(1, 256, 1))


@pytest.mark.spec("R-1", "R-33")
def test_files_that_are_not_segments_are_ignored(log_dir: Path) -> None:
    write_log(log_dir, [b"a", None, b"b"])
    expected = [e.payload for e in read_entries(log_dir)]
    for name in ("00000001.idx", "1.dat", "00000003.DAT", "00000003.dat.gz.partial", "notes.txt", "000000003.dat"):
        (log_dir / name).write_bytes(b"not a segment")
    assert assert_read_only(log_dir, lambda: [e.payload for e in read_entries(log_dir)]) == expected
    with Writer(log_dir) as writer:  # and writers leave them alone
        writer.append(b"c")
    assert (log_dir / "notes.txt").exists()


@pytest.mark.spec("R-5")
def test_mirror_fields_carry_no_authority(log_dir: Path) -> None:
    write_log(log_dir, [b"a", b"b"])
    data = bytearray(segment(log_dir).read_bytes())
    data[6:24] = bytes.fromhex("0001" + "00000000deadbeef" + "00000001" + "00000063")
    segment(log_dir).write_bytes(bytes(data))
    assert [e.payload for e in read_entries(log_dir)] == [b"a", b"b"]


def build_segment(path: Path, *, log: int, base: int, records: list[bytes], log_id: bytes, last_asqn: int = -1) -> None:
    """A segment built byte by byte, published up to its last record."""
    body = b"".join(records)
    header = bytearray(build_header(log=log, log_id=log_id, base_index=base, created_us=0, last_asqn=last_asqn))
    commit = CommitState(2, 256 + len(body), base + len(records), last_asqn, 0, 0)
    for at, raw in (encode_slot(commit), encode_mirror(commit, log)):
        header[at : at + len(raw)] = raw
    path.write_bytes(bytes(header) + body)


@pytest.mark.spec("R-13")
def test_timestamps_going_backwards_are_not_damage(log_dir: Path) -> None:
    log_dir.mkdir()
    records = [encode_record(1, b"a", timestamp_us=900), encode_record(2, b"b", timestamp_us=100)]
    build_segment(segment(log_dir), log=1, base=1, records=records, log_id=bytes(16))
    assert [e.timestamp_us for e in read_entries(log_dir)] == [900, 100]


@pytest.mark.spec("R-19", "R-18")
def test_asqn_order_and_index_continue_across_segments(log_dir: Path) -> None:
    log_dir.mkdir()
    log_id = bytes(range(16))
    sealed = [encode_record(1, b"a", asqn=10)]
    build_segment(segment(log_dir, 1), log=1, base=1, records=sealed, log_id=log_id)
    build_segment(segment(log_dir, 2), log=2, base=2, records=[encode_record(2, b"b", asqn=5)], log_id=log_id)
    with pytest.raises(AsqnNotIncreasingError) as caught:
        read_entries(log_dir)
    assert (caught.value.log, caught.value.index) == (2, 2)
    build_segment(segment(log_dir, 2), log=2, base=3, records=[encode_record(3, b"b")], log_id=log_id)
    with pytest.raises(ChainBrokenError):
        read_entries(log_dir)


@pytest.mark.spec("R-27")
@pytest.mark.parametrize("splits", [1, 7, 100])
def test_splits_return_every_record_exactly_once(log_dir: Path, splits: int) -> None:
    payloads = [bytes([n % 256]) * (n * 37 % 500) for n in range(300)]
    write_log(log_dir, payloads)
    size = commit_offset(segment(log_dir))
    bounds = [256 + (size - 256) * k // splits for k in range(splits + 1)]
    got = [e.payload for a, b in itertools.pairwise(bounds) for e in read_split(log_dir, 1, a, b)]
    assert got == payloads


@pytest.mark.spec("R-27")
def test_split_start_inside_a_payload_that_looks_like_a_record_is_not_a_boundary(log_dir: Path) -> None:
    lookalike = encode_record(5, b"inner")  # a valid record inside a payload; what follows it is index 3
    write_log(log_dir, [b"a", lookalike, b"c"])
    entries = read_entries(log_dir)
    inner = entries[1].offset + 40
    assert [e.payload for e in read_split(log_dir, 1, inner, 10_000)] == [b"c"]


@pytest.mark.spec("R-27")
def test_split_walks_on_to_the_next_boundary_and_raises_damage_before_it(log_dir: Path) -> None:
    # Record 3 is damaged: the search from 290 passes over record 2 (its successor fails) and
    # finds record 4. The split [256, 290) returns record 1 and must walk records 2 and 3,
    # or record 2 would be returned by no split and the damage reported by none.
    write_log(log_dir, [b"one", b"two", b"333", b"four", b"five"])
    flip_bit(segment(log_dir), 256 + 2 * 43 + 41)
    got: list[bytes] = []
    with pytest.raises(ChecksumMismatchError) as caught:
        got.extend(entry.payload for entry in read_split(log_dir, 1, 256, 290))
    assert got == [b"one"]
    assert (caught.value.offset, caught.value.index) == (256 + 2 * 43, 3)
    assert [entry.payload for entry in read_split(log_dir, 1, 290, 10_000)] == [b"four", b"five"]


@pytest.mark.spec("R-27", "R-8")
def test_split_checks_the_segment_end_and_the_file_size_as_a_sequential_read(log_dir: Path) -> None:
    write_log(log_dir, [b"one", b"two", b"three"])
    with segment(log_dir).open("r+b") as handle:
        handle.truncate(256 + 43 + 41)  # record 2's header is whole, its payload cut by the end of the file
    with pytest.raises(TruncatedError) as caught:  # step 5 of 4.3.1, not step 4: the segment end is the commit point
        list(read_split(log_dir, 1, 256, 10_000))
    assert (caught.value.offset, caught.value.index) == (256 + 43, 2)


def test_split_of_a_missing_blank_or_legacy_segment_is_typed(log_dir: Path) -> None:
    write_log(log_dir, [b"one"])
    with pytest.raises(NotALogError) as missing:
        list(read_split(log_dir, 7, 256, 10_000))
    assert missing.value.log == 7
    (log_dir / "00000002.dat").write_bytes(bytes(256))
    assert list(read_split(log_dir, 2, 256, 10_000)) == []


@pytest.mark.spec("R-27", "R-8")
def test_split_start_at_a_record_with_flags_set_is_a_boundary_and_then_unsupported(log_dir: Path) -> None:
    # Conditions 1 to 6 of spec 10.4 do not look at flags: the split starts at the flagged record,
    # and reading it from there fails as the sequential reader does, instead of skipping it.
    flagged = bytearray(encode_record(2, b"b"))
    flagged[5] = 1
    flagged[36:40] = masked_crc32c(flagged[:36]).to_bytes(4, "big")
    log_dir.mkdir()
    records = [encode_record(1, b"a"), bytes(flagged), encode_record(3, b"c")]
    build_segment(segment(log_dir), log=1, base=1, records=records, log_id=bytes(16))
    with pytest.raises(UnsupportedFeatureError) as caught:
        list(read_split(log_dir, 1, 260, 10_000))
    assert (caught.value.offset, caught.value.index) == (256 + 41, 2)


@pytest.mark.spec("R-39")
def test_slot_next_index_disagreeing_with_the_records_is_bad_header(log_dir: Path) -> None:
    log_dir.mkdir()
    records = [encode_record(1, b"a"), encode_record(2, b"b")]
    build_segment(segment(log_dir), log=1, base=1, records=records, log_id=bytes(16))
    data = bytearray(segment(log_dir).read_bytes())
    commit = CommitState(3, 256 + 82, 5, -1, 0, 0)  # claims four records where two are
    at, raw = encode_slot(commit)
    data[at : at + len(raw)] = raw
    segment(log_dir).write_bytes(bytes(data))
    with pytest.raises(BadHeaderError) as caught:
        read_entries(log_dir)
    assert (caught.value.offset, caught.value.index) == (at, 3)


@pytest.mark.spec("R-39", "R-26")
def test_tolerant_read_steps_over_a_slot_disagreement_and_expects_the_slots_index(log_dir: Path) -> None:
    log_dir.mkdir()
    build_segment(segment(log_dir), log=1, base=1, records=[encode_record(1, b"a")], log_id=bytes(16))
    data = bytearray(segment(log_dir).read_bytes())
    at, raw = encode_slot(CommitState(3, 256 + 41, 5, -1, 0, 2))  # sealed, claiming records up to index 4
    data[at : at + len(raw)] = raw
    segment(log_dir).write_bytes(bytes(data))
    build_segment(segment(log_dir, 2), log=2, base=5, records=[encode_record(5, b"e")], log_id=bytes(16))
    with Reader(log_dir, tolerant=True) as reader:
        assert [(entry.index, entry.payload) for entry in reader] == [(1, b"a"), (5, b"e")]
        damage = reader.damage
    # One region, resumed at the slot's index: the successor's base index then continues the chain.
    assert [(d.error_class, d.log, d.offset, d.index, d.bytes_skipped, d.next_index) for d in damage] == [
        ("bad_header", 1, at, 2, 0, 5)
    ]


@pytest.mark.spec("R-7")
def test_only_the_highest_blank_segment_is_absent(log_dir: Path) -> None:
    write_log(log_dir, [b"a", None, b"b"])
    segment(log_dir, 3).write_bytes(bytes(256))
    assert [e.payload for e in read_entries(log_dir)] == [b"a", b"b"]
    segment(log_dir, 4).write_bytes(bytes(256))  # two blank segments: the lower one is damage
    with pytest.raises(UnsupportedVersionError):
        read_entries(log_dir)
