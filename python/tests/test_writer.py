"""The writer: commit protocol, recovery before appending, cutover, durability modes, failures."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest
from logtools import FaultyFileSystem, append_raw, commit_offset, flip_bit, read_entries, segment, write_log

from openbinlog import (
    DEFAULT_SEGMENT_BYTES,
    AsqnOrderError,
    BinlogIOError,
    ChecksumMismatchError,
    LegacyLogError,
    PayloadTooLargeError,
    Ref,
    Writer,
    WriterClosedError,
    WriterFailedError,
    encode_record,
    recover,
    verify,
)
from openbinlog._fs import OsFileSystem
from openbinlog._segment import CommitState, encode_mirror, encode_slot, parse_header


@pytest.mark.spec("W-1", "W-2", "W-34")
def test_writer_creates_directory_lock_and_first_segment(log_dir: Path) -> None:
    with Writer(log_dir / "deeper") as writer:
        ref = writer.append(b"first")
    assert ref == Ref(1, 256, 1)
    assert sorted(os.listdir(log_dir / "deeper")) == ["00000001.dat", "LOCK"]
    header = parse_header(segment(log_dir / "deeper").read_bytes())
    assert header.base_index == 1  # type: ignore[union-attr]


@pytest.mark.spec("W-7")
def test_refs_carry_log_offset_and_continuous_indexes(log_dir: Path) -> None:
    with Writer(log_dir) as writer:
        first = writer.append_many([b"a", b"bb"])
        writer.cutover()
        later = writer.append(b"ccc")
    assert first == [Ref(1, 256, 1), Ref(1, 256 + 41, 2)]
    assert later == Ref(2, 256, 3)
    assert [(e.ref, e.payload) for e in read_entries(log_dir)] == [
        (first[0], b"a"),
        (first[1], b"bb"),
        (later, b"ccc"),
    ]


@pytest.mark.spec("W-5")
def test_publish_moves_the_seed_last_element_position_too(log_dir: Path) -> None:
    write_log(log_dir, [b"x" * 10])
    raw = segment(log_dir).read_bytes()
    assert int.from_bytes(raw[8:16], "big") == commit_offset(segment(log_dir)) == len(raw) == 256 + 50


@pytest.mark.spec("W-27")
def test_cutover_seals_with_status_and_next_log_number(log_dir: Path) -> None:
    write_log(log_dir, [b"a", None])
    raw = segment(log_dir).read_bytes()
    assert int.from_bytes(raw[6:8], "big") == 1  # closed
    assert int.from_bytes(raw[20:24], "big") == 2
    header = parse_header(raw)
    assert header.commit.next_log_number == 2  # type: ignore[union-attr]
    assert parse_header(segment(log_dir, 2).read_bytes()).base_index == 2  # type: ignore[union-attr]


@pytest.mark.spec("W-20", "W-22")
def test_torn_tail_is_truncated_before_the_first_append(log_dir: Path) -> None:
    write_log(log_dir, [b"kept"])
    committed = commit_offset(segment(log_dir))
    append_raw(segment(log_dir), encode_record(2, b"torn")[:-3])
    with Writer(log_dir) as writer:
        assert [a.action for a in writer.recovery] == ["truncate_tail"]
        assert writer.append(b"next") == Ref(1, committed, 2)
    assert [e.payload for e in read_entries(log_dir)] == [b"kept", b"next"]


@pytest.mark.spec("W-21")
def test_valid_records_beyond_a_lost_publish_are_adopted(log_dir: Path) -> None:
    faulty = FaultyFileSystem(drop_header_writes=True)
    write_log(log_dir, [b"a"])
    write_log(log_dir, [b"b", b"c"], fs=faulty)  # synced, acknowledged, publish lost
    assert commit_offset(segment(log_dir)) == 256 + 41
    with Writer(log_dir) as writer:
        assert [a.action for a in writer.recovery] == ["adopt_records"]
    assert [e.payload for e in read_entries(log_dir)] == [b"a", b"b", b"c"]
    assert commit_offset(segment(log_dir)) == 256 + 3 * 41


@pytest.mark.spec("W-26", "W-24")
def test_writer_refuses_to_append_after_damaged_committed_data(log_dir: Path) -> None:
    write_log(log_dir, [b"one", b"two"])
    flip_bit(segment(log_dir), 256 + 41 + 40)
    with pytest.raises(ChecksumMismatchError) as caught:
        Writer(log_dir)
    assert (caught.value.log, caught.value.offset, caught.value.index) == (1, 256 + 43, 2)


@pytest.mark.spec("W-19")
def test_failed_sync_acknowledges_nothing_and_stops_the_writer(log_dir: Path) -> None:
    write_log(log_dir, [b"durable"])
    faulty = FaultyFileSystem(fail_sync_after=1)
    writer = Writer(log_dir, fs=faulty)
    with pytest.raises(BinlogIOError, match="injected fdatasync failure"):
        writer.append(b"never acknowledged")
    with pytest.raises(WriterFailedError):
        writer.append(b"refused")
    writer.close()
    entries = read_entries(log_dir)
    assert [e.payload for e in entries] == [b"durable"]  # the failed commit was never published
    with Writer(log_dir) as reopened:
        reopened.append(b"after reopen")
    assert [e.payload for e in read_entries(log_dir)][-1] == b"after reopen"


@pytest.mark.spec("W-8")
def test_asqn_must_increase_across_commits_and_processes(log_dir: Path) -> None:
    with Writer(log_dir) as writer:
        writer.append(b"a", asqn=10)
        writer.append(b"no asqn")
        with pytest.raises(AsqnOrderError):
            writer.append(b"b", asqn=10)
        writer.cutover()
    with Writer(log_dir) as writer, pytest.raises(AsqnOrderError):
        writer.append(b"c", asqn=3)
    assert [e.asqn for e in read_entries(log_dir)] == [10, -1]


@pytest.mark.spec("W-9")
def test_timestamps_never_go_backwards(log_dir: Path) -> None:
    clock = iter([5_000, 9_000, 1_000, 12_000])
    with Writer(log_dir, clock_us=lambda: next(clock)) as writer:  # first tick: the segment's creation time
        writer.append(b"a")
        writer.append(b"b")
        writer.append(b"c")
    assert [e.timestamp_us for e in read_entries(log_dir)] == [9_000, 9_000, 12_000]


def test_closed_writer_refuses_appends(log_dir: Path) -> None:
    writer = Writer(log_dir)
    writer.close()
    with pytest.raises(WriterClosedError):
        writer.append(b"x")


@pytest.mark.spec("W-35")
def test_legacy_log_is_read_only(log_dir: Path) -> None:
    log_dir.mkdir()
    header = bytearray(256)
    header[0:4] = (252).to_bytes(4, "big")
    header[4:6] = (1).to_bytes(2, "big")
    header[8:16] = (248).to_bytes(8, "big")
    header[16:20] = (1).to_bytes(4, "big")
    segment(log_dir).write_bytes(bytes(header))
    with pytest.raises(LegacyLogError):
        Writer(log_dir)


@pytest.mark.spec("W-18", "W-17", "W-10")
def test_preallocated_segments_roll_over_when_full(log_dir: Path) -> None:
    capacity = 4096
    with Writer(log_dir, preallocate=capacity) as writer:
        refs = [writer.append(bytes([n]) * 500) for n in range(20)]
    assert {ref.log for ref in refs} == set(range(1, 4))
    for log in (1, 2, 3):
        assert segment(log_dir, log).stat().st_size == capacity
    assert [e.payload for e in read_entries(log_dir)] == [bytes([n]) * 500 for n in range(20)]
    with pytest.raises(PayloadTooLargeError), Writer(log_dir, preallocate=capacity) as writer:
        writer.append(bytes(capacity))


@pytest.mark.spec("W-22")
def test_preallocating_writer_rolls_over_onto_a_spare_volume_filled_in_the_background(log_dir: Path) -> None:
    capacity = 1 << 20
    with Writer(log_dir, preallocate=capacity) as writer:
        writer.append(b"first")
        writer._spare_thread.join()  # type: ignore[union-attr]  # let the background fill finish
        spares = list(log_dir.glob(".00000000.dat.*.tmp"))
        assert len(spares) == 1
        spare_inode = spares[0].stat().st_ino
        writer.cutover()
        assert segment(log_dir, 2).stat().st_ino == spare_inode  # the spare became segment 2
        writer.append(b"second")
    assert not list(log_dir.glob("*.tmp"))  # closing removes the next spare
    assert segment(log_dir, 2).stat().st_size == capacity
    assert [e.payload for e in read_entries(log_dir)] == [b"first", b"second"]


def test_spare_volume_removed_by_another_writer_is_not_used(log_dir: Path) -> None:
    with Writer(log_dir, preallocate=1 << 16) as writer:
        writer._spare_thread.join()  # type: ignore[union-attr]
        for spare in log_dir.glob(".00000000.dat.*.tmp"):
            spare.unlink()  # what another writer's clean-up does
        writer.cutover()
        writer.append(b"x")
    assert [e.payload for e in read_entries(log_dir)] == [b"x"]
    assert segment(log_dir, 2).stat().st_size == 1 << 16


def test_preallocated_tail_is_zeroed_not_truncated(log_dir: Path) -> None:
    write_log(log_dir, [b"a"], preallocate=8192)
    seg = segment(log_dir)
    end = commit_offset(seg)
    data = bytearray(seg.read_bytes())
    data[end + 600 : end + 700] = b"\xee" * 100  # a hole, then stale bytes
    seg.write_bytes(bytes(data))
    with Writer(log_dir, preallocate=8192) as writer:
        assert [a.action for a in writer.recovery] == ["zero_tail"]
        writer.append(b"b")
    assert seg.stat().st_size == 8192
    assert not any(seg.read_bytes()[commit_offset(seg) :])


def test_max_segment_bytes_cuts_over(log_dir: Path) -> None:
    with Writer(log_dir, max_segment_bytes=1000) as writer:
        refs = [writer.append(b"p" * 100) for _ in range(30)]
    assert max(ref.log for ref in refs) >= 4
    assert [e.index for e in read_entries(log_dir)] == list(range(1, 31))


@pytest.mark.parametrize("durability", ["sync", "group", "os", "strict"])
def test_threads_share_one_writer_in_every_durability_mode(log_dir: Path, durability: str) -> None:
    refs: list[Ref] = []
    lock = threading.Lock()
    with Writer(log_dir, durability=durability) as writer:  # type: ignore[arg-type]

        def work(thread: int) -> None:
            for n in range(25):
                ref = writer.append(f"{thread}-{n}".encode())
                with lock:
                    refs.append(ref)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    entries = read_entries(log_dir)
    assert len(entries) == 150
    assert [e.index for e in entries] == list(range(1, 151))
    assert sorted(r.index for r in refs) == list(range(1, 151))
    assert {e.payload for e in entries} == {f"{t}-{n}".encode() for t in range(6) for n in range(25)}


def test_group_commit_shares_syncs_between_threads(log_dir: Path) -> None:
    counting = FaultyFileSystem()
    barrier = threading.Barrier(8)
    with Writer(log_dir, durability="group", group_delay=0.01, fs=counting) as writer:
        before = counting.syncs

        def work() -> None:
            barrier.wait()
            for _ in range(10):
                writer.append(b"x" * 50)

        threads = [threading.Thread(target=work) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        syncs = counting.syncs - before
    assert syncs < 80 / 2, f"{syncs} syncs for 80 appends: commits were not grouped"


def test_recovery_dry_run_predicts_what_recovery_does(log_dir: Path) -> None:
    write_log(log_dir, [b"a"])
    write_log(log_dir, [b"b"], fs=FaultyFileSystem(drop_header_writes=True))
    append_raw(segment(log_dir), b"\x00\x00\x00\x50torn")
    before = segment(log_dir).read_bytes()
    predicted = [(a.action, a.offset, a.bytes, a.records) for a in recover(log_dir, dry_run=True)]
    assert segment(log_dir).read_bytes() == before  # a dry run changes nothing
    done = [(a.action, a.offset, a.bytes, a.records) for a in recover(log_dir)]
    assert predicted == done == [("truncate_tail", 256 + 41 + 41, 8, 0), ("adopt_records", 256 + 41, 0, 1)]


class _GatedSyncs(OsFileSystem):
    """Holds every ``fdatasync`` until the test opens the gate."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.gate = threading.Event()

    def fdatasync(self, fd: int) -> None:
        self.entered.set()
        assert self.gate.wait(30), "the test never opened the gate"
        super().fdatasync(fd)


def test_interrupted_waiting_append_leaves_the_queue_and_the_group_goes_on(log_dir: Path) -> None:
    gated = _GatedSyncs()
    gated.gate.set()
    writer = Writer(log_dir, fs=gated)
    gated.gate.clear()
    gated.entered.clear()
    leader = threading.Thread(target=writer.append, args=(b"first",), daemon=True)
    leader.start()
    assert gated.entered.wait(30)
    main = threading.main_thread().ident
    assert main is not None
    interrupter = threading.Timer(0.2, signal.pthread_kill, args=(main, signal.SIGINT))
    interrupter.start()
    with pytest.raises(KeyboardInterrupt):
        writer.append(b"interrupted")  # queued behind the leader's sync, then interrupted
    interrupter.join()
    gated.gate.set()
    leader.join(30)
    later = threading.Thread(target=writer.append, args=(b"later",), daemon=True)
    later.start()
    later.join(30)
    # Closing waits for the group, so it is only safe once the appenders are known to be done.
    assert not leader.is_alive() and not later.is_alive(), "the group stalled after an interrupted append"
    writer.close()
    assert [entry.payload for entry in read_entries(log_dir)] == [b"first", b"later"]


def test_a_writer_cuts_over_at_one_gib_by_default(log_dir: Path) -> None:
    """Without a size limit a log would grow one segment forever; the default rolls as Kafka does at 1 GiB."""
    write_log(log_dir, [])
    path = segment(log_dir)
    full = CommitState(2, DEFAULT_SEGMENT_BYTES, 1, -1, 0)  # as if a gibibyte of records lay below
    with path.open("r+b") as handle:
        for at, raw in (encode_slot(full), encode_mirror(full, 1)):
            handle.seek(at)
            handle.write(raw)
        handle.truncate(DEFAULT_SEGMENT_BYTES)  # sparse: no gibibyte is written
    assert DEFAULT_SEGMENT_BYTES == 1 << 30
    with Writer(log_dir, verify_on_open=False) as writer:
        assert writer.append(b"x").log == 1
        assert writer.append(b"y").log == 2


@pytest.mark.parametrize("payload", ["text", 5, None, [1, 2]], ids=["str", "int", "None", "list"])
def test_a_payload_that_is_not_bytes_is_refused_with_a_plain_message(log_dir: Path, payload: object) -> None:
    """bytes(5) is five zero bytes: an int must never become a record of zeros."""
    with Writer(log_dir) as writer:
        with pytest.raises(TypeError, match="a payload is bytes"):
            writer.append(payload)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="a payload is bytes"):
            writer.append_many([b"fine", payload])  # type: ignore[list-item]
        writer.append(memoryview(b"bytes-like"))
    assert [e.payload for e in read_entries(log_dir)] == [b"bytes-like"]


def test_a_verify_report_prints_as_a_summary(log_dir: Path) -> None:
    write_log(log_dir, [b"one", b"two"])
    assert str(verify(log_dir)) == f"{log_dir}: 1 segments, 2 records, indexes 1..2: intact"
    flip_bit(segment(log_dir), 256 + 41)
    lines = str(verify(log_dir)).splitlines()
    assert lines[0].endswith("1 damaged region(s)") and "checksum_mismatch" in lines[1]
