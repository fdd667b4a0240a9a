"""One or more named tests for each fault T1-T15 of the crash and fault model (spec section 11)."""

from __future__ import annotations

import errno
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest
from logtools import (
    FaultyFileSystem,
    append_raw,
    assert_read_only,
    commit_offset,
    flip_bit,
    read_entries,
    segment,
    write_log,
)

from openbinlog import (
    BinlogIOError,
    ChainBrokenError,
    ChecksumMismatchError,
    IndexDiscontinuityError,
    LengthOutOfRangeError,
    Reader,
    TruncatedError,
    Writer,
    encode_record,
    verify,
)
from openbinlog._crc import masked_crc32c
from openbinlog._format import SLOT_OFFSETS
from openbinlog._segment import CommitState, encode_slot

HERE = Path(__file__).parent


def payloads_of(directory: Path) -> list[bytes]:
    return [e.payload for e in read_entries(directory)]


def recover_and_append(directory: Path, expected: list[bytes]) -> None:
    """After any crash: the committed prefix survives, recovery is idempotent, appending works."""
    assert payloads_of(directory) == expected
    with Writer(directory):
        pass
    with Writer(directory) as writer:
        assert writer.recovery == []  # idempotent: nothing left to do
        writer.append(b"after recovery")
    assert payloads_of(directory) == [*expected, b"after recovery"]


def unpublished(directory: Path, items: list[bytes]) -> None:
    """Append ``items`` synced but with the commit point never published (beyond the commit point)."""
    write_log(directory, items, fs=FaultyFileSystem(drop_header_writes=True))


# T1 ------------------------------------------------------------------------


@pytest.mark.parametrize("durability", ["sync", "group", "os"])
def test_t1_sigkill_loses_no_acknowledged_record(log_dir: Path, durability: str) -> None:
    rng = random.Random(7)
    acknowledged: list[int] = []
    for trial in range(3):
        child = subprocess.Popen(
            [sys.executable, str(HERE / "child_writer.py"), str(log_dir), "37", durability],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        deadline = time.monotonic() + 0.2 + rng.random() * 0.3
        while time.monotonic() < deadline:
            line = child.stdout.readline()
            if line:
                acknowledged.append(int(line))
        child.send_signal(signal.SIGKILL)
        rest, _ = child.communicate()
        acknowledged.extend(int(x) for x in rest.split())
        indexes = [e.index for e in read_entries(log_dir)]
        assert set(acknowledged) <= set(indexes), f"trial {trial}: acknowledged records lost"
        assert indexes == list(range(1, len(indexes) + 1))
    assert verify(log_dir).ok


# T2 ------------------------------------------------------------------------


def test_t2_short_write_cut_at_a_page_is_truncated(log_dir: Path) -> None:
    write_log(log_dir, [b"kept"])
    committed = commit_offset(segment(log_dir))
    unpublished(log_dir, [bytes(10_000)])
    with segment(log_dir).open("r+b") as handle:
        handle.truncate(8192)  # the kernel stopped the write at a page boundary
    assert committed < 8192
    recover_and_append(log_dir, [b"kept"])


# T3 ------------------------------------------------------------------------


def test_t3_append_torn_at_every_byte_keeps_the_committed_prefix(tmp_path: Path) -> None:
    original = tmp_path / "original"
    write_log(original, [b"alpha", b"beta"])
    committed = commit_offset(segment(original))
    unpublished(original, [b"gamma-gamma"])
    full = segment(original).read_bytes()
    for cut in range(committed, len(full)):
        case = tmp_path / f"cut{cut}"
        shutil.copytree(original, case)
        segment(case).write_bytes(full[:cut])
        assert assert_read_only(case, lambda c=case: payloads_of(c)) == [b"alpha", b"beta"]
        with Writer(case) as writer:
            writer.append(b"next")
        assert payloads_of(case) == [b"alpha", b"beta", b"next"]


# T4 ------------------------------------------------------------------------


def test_t4_hole_of_zeros_is_never_skipped_to_reach_later_records(log_dir: Path) -> None:
    write_log(log_dir, [b"kept"])
    start = commit_offset(segment(log_dir))
    unpublished(log_dir, [b"a" * 600, b"b" * 600, b"c" * 600])
    data = bytearray(segment(log_dir).read_bytes())
    data[start : start + 512] = bytes(512)  # the first sector of the append never persisted
    segment(log_dir).write_bytes(bytes(data))
    recover_and_append(log_dir, [b"kept"])


def test_t4_sector_subset_keeps_only_the_prefix_before_the_first_gap(log_dir: Path) -> None:
    write_log(log_dir, [b"kept"])
    start = commit_offset(segment(log_dir))
    unpublished(log_dir, [b"a" * 100, b"b" * 2000, b"c" * 100])
    data = bytearray(segment(log_dir).read_bytes())
    second = start + 140
    data[second + 512 : second + 1024] = bytes(512)  # inside record b
    segment(log_dir).write_bytes(bytes(data))
    with Writer(log_dir) as writer:
        assert [a.action for a in writer.recovery] == ["truncate_tail", "adopt_records"]
    assert payloads_of(log_dir) == [b"kept", b"a" * 100]


# T5 ------------------------------------------------------------------------


@pytest.mark.spec("R-12")
def test_t5_zero_filled_tail_is_not_parsed_as_records(log_dir: Path) -> None:
    write_log(log_dir, [b"kept"])
    append_raw(segment(log_dir), bytes(65536))
    assert verify(log_dir).ok
    recover_and_append(log_dir, [b"kept"])


# T6 ------------------------------------------------------------------------


def test_t6_garbage_tail_is_ignored_and_truncated(log_dir: Path) -> None:
    write_log(log_dir, [b"kept"])
    append_raw(segment(log_dir), random.Random(3).randbytes(5000))
    report = verify(log_dir)
    assert report.ok
    assert report.segments[-1].tail is not None and report.segments[-1].tail.extra_bytes == 5000
    recover_and_append(log_dir, [b"kept"])


# T7 ------------------------------------------------------------------------


@pytest.mark.spec("R-9", "W-24")
def test_t7_commit_point_beyond_the_data_is_corruption_not_a_torn_tail(log_dir: Path) -> None:
    write_log(log_dir, [b"one", b"two"])
    with segment(log_dir).open("r+b") as handle:
        handle.truncate(256 + 43 + 20)  # the header reached the disk, the second record did not
    report = verify(log_dir)
    assert not report.ok
    assert (report.damage[0].error_class, report.damage[0].offset, report.damage[0].index) == ("truncated", 299, 2)
    with pytest.raises(TruncatedError):
        Writer(log_dir)
    assert segment(log_dir).stat().st_size == 256 + 43 + 20  # nothing silently truncated


def test_t7_zeroed_committed_record_is_reported(log_dir: Path) -> None:
    write_log(log_dir, [b"one", b"two"])
    data = bytearray(segment(log_dir).read_bytes())
    data[299:] = bytes(len(data) - 299)
    segment(log_dir).write_bytes(bytes(data))
    with pytest.raises(ChecksumMismatchError):
        payloads_of(log_dir)


# T8 ------------------------------------------------------------------------


def test_t8_torn_commit_point_update_loses_nothing_and_raises_no_false_corruption(log_dir: Path) -> None:
    write_log(log_dir, [b"one", b"two"])  # generations 1, 2, 3: slot 1 is active
    seg = segment(log_dir)
    end = commit_offset(seg)
    append_raw(seg, encode_record(3, b"three"))  # synced and acknowledged...
    at, slot = encode_slot(CommitState(4, end + 45, 4, -1, 0, 0))
    data = bytearray(seg.read_bytes())
    data[at : at + 20] = slot[:20]  # ...but the publish into slot 0 tore after 20 bytes
    seg.write_bytes(bytes(data))
    assert verify(log_dir).ok
    assert payloads_of(log_dir) == [b"one", b"two"]  # the older slot still holds
    with Writer(log_dir) as writer:
        assert [a.action for a in writer.recovery] == ["adopt_records"]
    recover_and_append(log_dir, [b"one", b"two", b"three"])


@pytest.mark.spec("R-7", "W-25")
def test_t8_headerless_last_segment_holds_no_record(log_dir: Path) -> None:
    write_log(log_dir, [b"one", None, b"two"])
    segment(log_dir, 3).write_bytes(bytes(100))  # a successor whose header never reached the disk
    assert payloads_of(log_dir) == [b"one", b"two"]
    with Writer(log_dir) as writer:
        assert [a.action for a in writer.recovery] == ["remove_blank_segment"]
    assert not segment(log_dir, 3).exists()


# T9 ------------------------------------------------------------------------


def test_t9_failed_fsync_is_never_acknowledged(log_dir: Path) -> None:
    write_log(log_dir, [b"durable"])
    writer = Writer(log_dir, fs=FaultyFileSystem(fail_sync_after=1))
    with pytest.raises(BinlogIOError):
        writer.append(b"lost")
    writer.close()
    assert payloads_of(log_dir) == [b"durable"]


# T10 -----------------------------------------------------------------------


@pytest.mark.spec("R-26", "R-32")
def test_t10_bit_rot_is_reported_with_segment_offset_and_index(log_dir: Path) -> None:
    write_log(log_dir, [b"a" * 10, b"b" * 10, b"c" * 10, None, b"d"])
    flip_bit(segment(log_dir), 256 + 50 + 40 + 5, bit=6)
    report = assert_read_only(log_dir, lambda: verify(log_dir))
    assert [(d.error_class, d.log, d.offset, d.index) for d in report.damage] == [("checksum_mismatch", 1, 306, 2)]
    assert report.damage[0].bytes_skipped == 50
    assert report.records == 3


# T11 -----------------------------------------------------------------------


def test_t11_lost_write_of_an_acknowledged_record_is_reported(tmp_path: Path) -> None:
    before = tmp_path / "before"
    write_log(before, [b"first"])
    after = tmp_path / "after"
    shutil.copytree(before, after)
    write_log(after, [b"second"])
    # The disk kept the new header but silently dropped the record's write.
    data = bytearray(segment(after).read_bytes())
    data[commit_offset(segment(before)) :] = bytes(len(data) - commit_offset(segment(before)))
    segment(after).write_bytes(bytes(data))
    report = verify(after)
    assert [(d.error_class, d.index) for d in report.damage] == [("checksum_mismatch", 2)]


# T12 -----------------------------------------------------------------------


def test_t12_misdirected_record_is_rejected_by_its_index(log_dir: Path) -> None:
    write_log(log_dir, [b"one", b"two", b"three"])
    data = bytearray(segment(log_dir).read_bytes())
    first = bytes(data[256 : 256 + 43])
    data[299 : 299 + 43] = first  # a valid record written at the wrong place
    segment(log_dir).write_bytes(bytes(data))
    with pytest.raises(IndexDiscontinuityError) as caught:
        payloads_of(log_dir)
    assert (caught.value.offset, caught.value.index) == (299, 2)


def test_t12_resurrected_tail_record_after_recovery_is_not_adopted(log_dir: Path) -> None:
    write_log(log_dir, [b"one"])
    start = commit_offset(segment(log_dir))
    stale = encode_record(7, b"stale") + encode_record(8, b"stale")
    unpublished(log_dir, [b"two"])
    append_raw(segment(log_dir), stale)  # old bytes that do not continue the index
    with Writer(log_dir) as writer:
        writer.append(b"three")
    assert payloads_of(log_dir) == [b"one", b"two", b"three"]
    assert start < commit_offset(segment(log_dir))


@pytest.mark.spec("R-18")
def test_t12_segment_from_another_log_breaks_the_chain(tmp_path: Path) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    write_log(ours, [b"a", None, b"b"])
    write_log(theirs, [b"x", None, b"y"])
    shutil.copy(segment(theirs, 2), segment(ours, 2))
    with pytest.raises(ChainBrokenError):
        payloads_of(ours)


# T13 -----------------------------------------------------------------------


@pytest.mark.spec("W-25", "R-1")
def test_t13_temp_file_left_by_a_cutover_is_ignored_and_removed(log_dir: Path) -> None:
    write_log(log_dir, [b"a"])
    temp = log_dir / ".00000002.dat.0123456789abcdef.tmp"
    temp.write_bytes(b"partial header")
    assert payloads_of(log_dir) == [b"a"]
    recover_and_append(log_dir, [b"a"])
    assert not temp.exists()


@pytest.mark.spec("R-16", "W-30")
def test_t13_open_segment_with_a_successor_is_finished(log_dir: Path) -> None:
    write_log(log_dir, [b"a", None, b"b"])
    # Undo the seal: the crash came after the successor was linked, before sealing.
    seg = segment(log_dir)
    data = bytearray(seg.read_bytes())
    for at in SLOT_OFFSETS:
        slot = data[at : at + 48]
        if int.from_bytes(slot[40:44], "big"):
            data[at : at + 48] = bytes(48)
    seg.write_bytes(bytes(data))
    assert payloads_of(log_dir) == [b"a", b"b"]
    with Writer(log_dir) as writer:
        assert [a.action for a in writer.recovery] == ["seal"]
    recover_and_append(log_dir, [b"a", b"b"])


@pytest.mark.spec("R-16")
def test_t13_records_synced_before_an_unsealed_cutover_are_read(log_dir: Path) -> None:
    write_log(log_dir, [b"a"])
    unpublished(log_dir, [b"b"])  # synced, slot lost
    with Writer(log_dir, fs=FaultyFileSystem(drop_header_writes=True)) as writer:
        writer.cutover()  # successor created from the adopted state; the seal is lost
    assert payloads_of(log_dir)[:2] == [b"a", b"b"]


@pytest.mark.spec("W-29")
def test_t13_sealed_segment_without_its_successor_gets_one(log_dir: Path) -> None:
    write_log(log_dir, [b"a", None])
    segment(log_dir, 2).unlink()
    assert payloads_of(log_dir) == [b"a"]
    with Writer(log_dir) as writer:
        assert [a.action for a in writer.recovery] == ["create_successor"]
        assert writer.append(b"b").log == 2


@pytest.mark.spec("R-17")
def test_t13_missing_middle_segment_is_chain_broken(log_dir: Path) -> None:
    write_log(log_dir, [b"a", None, b"b", None, b"c"])
    segment(log_dir, 2).unlink()
    with pytest.raises(ChainBrokenError):
        payloads_of(log_dir)
    report = verify(log_dir)
    assert [d.error_class for d in report.damage] == ["chain_broken"]


# T14 -----------------------------------------------------------------------


@pytest.mark.spec("R-20")
def test_t14_read_error_surfaces_as_io_error_not_as_a_torn_tail(log_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_log(log_dir, [b"a", b"b"])
    real_pread = os.pread

    def failing_pread(fd: int, size: int, offset: int) -> bytes:
        if offset >= 256:
            raise OSError(errno.EIO, "Input/output error")
        return real_pread(fd, size, offset)

    monkeypatch.setattr(os, "pread", failing_pread)
    with pytest.raises(BinlogIOError) as caught:
        list(Reader(log_dir))
    assert caught.value.error_class == "io_error"
    assert caught.value.offset == 256


# T15 -----------------------------------------------------------------------


@pytest.mark.spec("R-10")
def test_t15_hostile_4gib_length_is_typed_and_memory_stays_small(log_dir: Path) -> None:
    write_log(log_dir, [b"a" * 100])
    data = bytearray(segment(log_dir).read_bytes())
    data[256:260] = (0xFFFFFFFF).to_bytes(4, "big")
    data[292:296] = masked_crc32c(bytes(data[256:292])).to_bytes(4, "big")  # a forged, self-consistent header
    segment(log_dir).write_bytes(bytes(data))
    tracemalloc.start()
    try:
        with pytest.raises(LengthOutOfRangeError) as caught:
            payloads_of(log_dir)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (caught.value.offset, caught.value.index) == (256, 1)
    assert peak < 4 << 20
