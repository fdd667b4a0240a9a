"""The record buffer of exclusive writers: the compiled one against the pure-Python reference.

Both are driven with the same appends, takes and starting states, and must
return the same refs, the same codes and the same bytes, so the compiled
buffer changes the speed of a mode, never a byte it writes. Mapped (the
``mmap`` mode), both must make the same stores in the same order, through a
recording object and through a real shared mapping.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import pytest
from hypothesis import given, settings
from strategies import (
    buffer_bindings,
    buffer_commits,
    buffer_operations,
    buffer_states,
    mapped_buffer_states,
    mapped_slots,
)

from openbinlog import NO_ASQN, RecordDecoder, Ref, _accel
from openbinlog._buffer import (
    ASQN_ORDER,
    CHECK_ARGUMENTS,
    CLOSED,
    CUTOVER_FIRST,
    FLUSH_FIRST,
    INDEXES_USED_UP,
    SYNC_FILE,
    SYNC_RECORDS,
    PureRecordBuffer,
)
from openbinlog._segment import active_commit

pytestmark = pytest.mark.skipif(_accel.RecordBuffer is None, reason="openbinlog._native is not built or not used")


def compiled_buffer(*fields: Any) -> Any:
    assert _accel.RecordBuffer is not None
    return _accel.RecordBuffer(*fields)


class OperationLog:
    """A file system that only records the writes and syncs a commit asks of it."""

    def __init__(self) -> None:
        self.operations: list[tuple[Any, ...]] = []

    def pwrite(self, fd: int, data: bytes, offset: int) -> None:
        self.operations.append(("pwrite", fd, bytes(data), offset))

    def pwrite_synced(self, fd: int, data: bytes, offset: int) -> None:
        self.operations.append(("pwrite_synced", fd, bytes(data), offset))

    def fdatasync(self, fd: int) -> None:
        self.operations.append(("fdatasync", fd))

    def start_writeback(self, fd: int, offset: int, length: int) -> None:
        self.operations.append(("start_writeback", fd, offset, length))


def bind(buffer: Any, fs: Any, binding: tuple[int, int, bool, int, int, bool], fd: int = 7) -> None:
    generation, next_log_number, strict, batch_sync, full_sync_bytes, write_behind = binding
    buffer.bind(fs, fd, generation, next_log_number, strict)
    buffer.group(threading.RLock(), batch_sync, full_sync_bytes, 0.0, False)
    if write_behind:
        buffer.write_behind()


def drive(buffer: Any, operations: list[Any], commits: list[Any], fs: OperationLog) -> list[Any]:
    """Run ``operations``; after each, the commit ``commits`` holds for its position, if any."""
    results: list[Any] = []
    last_index = buffer.committed()[2] - 1
    for position, operation in enumerate(operations):
        commit = commits[position % len(commits)] if commits else None
        if commit == "through":
            results.append(run(buffer.commit_through, last_index))
        elif commit is not None:
            results.append(run(buffer.commit, *commit))
        if operation == "take":
            results.append(buffer.take(False))
        elif operation == "take-and-close":
            results.append(buffer.take(True))
        else:
            payload, asqn, now = operation
            result = run(buffer.append, payload, asqn, now)
            if isinstance(result, Ref):
                last_index = result.index
            results.append((type(result).__name__, result))
        results.extend((buffer.pending(), buffer.committed()))
    return [*results, fs.operations]


def run(call: Any, *arguments: Any) -> Any:
    """What ``call`` returns, or the type and text of what it raises."""
    try:
        return call(*arguments)
    except (OSError, OverflowError, ValueError) as exc:
        return type(exc).__name__, str(exc)


@settings(max_examples=300, deadline=None)
@given(buffer_states, buffer_bindings, buffer_operations, buffer_commits)
def test_compiled_buffer_returns_the_reference_refs_codes_and_bytes(
    state: tuple[int, int, int, int, int, int, int],
    binding: tuple[int, int, bool, int, int, bool],
    operations: list[Any],
    commits: list[Any],
) -> None:
    """Appends, takes, commits and group commits: the same refs, codes, records and published states, and the
    same writes and syncs in the same order (W-42's skipped generations and the whole-file syncs among them)."""
    assert _accel.RecordBuffer is not None
    runs = []
    for buffer in (PureRecordBuffer(Ref, 3, *state), _accel.RecordBuffer(Ref, 3, *state)):
        fs = OperationLog()
        bind(buffer, fs, binding)
        runs.append((drive(buffer, operations, commits, fs), buffer.take(False)))
    assert runs[1] == runs[0]


@pytest.mark.parametrize("make", [PureRecordBuffer, compiled_buffer], ids=["pure", "compiled"])
def test_buffer_codes_say_what_the_writer_must_do_first(make: Any) -> None:
    buffer = make(Ref, 1, 256, 1, 5, 0, 356, 2**64 - 1, 50)
    assert buffer.append(b"x", 5, 10) == ASQN_ORDER
    assert buffer.append(b"x" * 61, NO_ASQN, 10) == CUTOVER_FIRST  # 256 + 101 > the end limit, 356
    first = buffer.append(b"0123456789", 6, 10)
    assert first == Ref(1, 256, 1) and type(first) is Ref
    assert buffer.append(b"y", NO_ASQN, 10) == FLUSH_FIRST  # 50 bytes held: the limit
    records, end, next_index, last_asqn, last_timestamp = buffer.take(False)
    assert (end, next_index, last_asqn, last_timestamp) == (306, 2, 6, 10)
    decoder = RecordDecoder(log=1, offset=256, next_index=1, limit=306)
    decoder.feed(records)
    decoder.end_of_input()
    entries = decoder.next_batch()
    assert [(e.index, e.payload, e.asqn, e.timestamp_us) for e in entries] == [(1, b"0123456789", 6, 10)]
    assert buffer.append(b"abcdefghij", NO_ASQN, 5) == Ref(1, 306, 2)  # a clock behind the last: kept at 10
    assert buffer.append("text", NO_ASQN, 5) == CHECK_ARGUMENTS
    buffer.take(True)
    assert buffer.append(b"z", NO_ASQN, 5) == CLOSED


@pytest.mark.parametrize("make", [PureRecordBuffer, compiled_buffer], ids=["pure", "compiled"])
def test_buffer_without_a_clock_reading_stamps_the_system_time(make: Any) -> None:
    buffer = make(Ref, 1, 256, 1, NO_ASQN, 0, 2**64 - 1, 2**64 - 1, 1 << 20)
    before = time.time_ns() // 1000
    buffer.append(b"now", NO_ASQN, None)
    after = time.time_ns() // 1000
    *_, last_timestamp = buffer.take(False)
    assert before <= last_timestamp <= after


@pytest.mark.parametrize("make", [PureRecordBuffer, compiled_buffer], ids=["pure", "compiled"])
def test_failed_commit_closes_the_buffer(make: Any) -> None:
    class FailingSync(OperationLog):
        def fdatasync(self, fd: int) -> None:
            raise OSError(5, "injected")

    buffer = make(Ref, 1, 256, 1, NO_ASQN, 0, 2**64 - 1, 2**64 - 1, 1 << 20)
    buffer.bind(FailingSync(), 3, 1, 0, False)
    buffer.append(b"lost", NO_ASQN, 1)
    with pytest.raises(OSError, match="injected"):
        buffer.commit(True, False)
    assert buffer.append(b"refused", NO_ASQN, 2) == CLOSED


@pytest.mark.parametrize("sync", [SYNC_FILE, SYNC_RECORDS], ids=["file", "records-alone"])
def test_compiled_commit_writes_the_file_itself_as_the_reference_does(tmp_path: Any, sync: int) -> None:
    """With no file-system object the compiled buffer writes and syncs the file directly: the same bytes.
    Led by the group commit: its batch syncs as bound, the file or the records alone."""
    images = []
    for make in (PureRecordBuffer, compiled_buffer):
        path = tmp_path / make.__name__
        path.write_bytes(bytes(256))
        fd = os.open(path, os.O_RDWR)
        try:
            buffer = make(Ref, 2, 256, 10, NO_ASQN, 0, 2**64 - 1, 2**64 - 1, 1 << 20)
            bind(buffer, None, (41, 0, True, sync, 1 << 20, False), fd)
            refs = [buffer.append(b"x" * n, n * 3 if n % 2 else NO_ASQN, 1000 + n) for n in range(5)]
            assert buffer.commit_through(refs[-1].index) is None
            published = buffer.committed()
        finally:
            os.close(fd)
        images.append((published, path.read_bytes()))
    assert images[0] == images[1]
    assert images[0][0] is not None and images[0][0][:3] == (42, 256 + 5 * 40 + 10, 15)


@settings(max_examples=300, deadline=None)
@given(mapped_buffer_states, mapped_slots, buffer_operations, buffer_commits)
def test_compiled_mapped_buffer_makes_the_reference_stores_in_its_order(
    state: tuple[int, int, int, int, int, int, int],
    slot: tuple[int, int],
    operations: list[Any],
    commits: list[Any],
) -> None:
    """Mapped: each append stores its record, its slot and the mirror fields at once; the same stores,
    refs, codes and published states as the reference, up to a generation that would not fit 64 bits."""
    assert _accel.RecordBuffer is not None
    runs = []
    for buffer in (PureRecordBuffer(Ref, 3, *state), _accel.RecordBuffer(Ref, 3, *state)):
        fs = OperationLog()
        buffer.bind(fs, 7, *slot, False)
        buffer.map(state[4])
        mapped_commits = [commit for commit in commits if commit != "through"]  # a mapped buffer has no groups
        runs.append((drive(buffer, operations, mapped_commits, fs), buffer.take(False)))
    assert runs[1] == runs[0]


@pytest.mark.parametrize("make", [PureRecordBuffer, compiled_buffer], ids=["pure", "compiled"])
def test_mapped_buffer_publishes_each_append_before_it_returns(make: Any) -> None:
    fs = OperationLog()
    buffer = make(Ref, 1, 256, 1, NO_ASQN, 0, 1000, 2**64 - 1, 1 << 20)
    buffer.bind(fs, 3, 1, 0, False)
    buffer.map(1000)
    assert buffer.append(b"abc", 4, 10) == Ref(1, 256, 1)
    record, slot, mirror = fs.operations
    assert record[0] == slot[0] == mirror[0] == "pwrite"
    assert (record[3], slot[3], mirror[3]) == (256, 96, 6)  # generation 2 goes to slot 0, at 96
    header = bytearray(256)
    header[96:144] = slot[2]
    commit = active_commit(bytes(header), base_index=1, log=1)
    assert (commit.generation, commit.commit_offset, commit.next_index, commit.last_asqn) == (2, 299, 2, 4)
    assert buffer.pending() == 0
    assert buffer.commit(True, False) == (2, 299, 2, 4, 10)  # the sync: an fdatasync
    assert fs.operations[-1] == ("fdatasync", 3)
    assert buffer.commit(False, True) is None  # nothing published since the last commit
    assert buffer.append(b"late", NO_ASQN, 11) == CLOSED


@pytest.mark.parametrize("make", [PureRecordBuffer, compiled_buffer], ids=["pure", "compiled"])
def test_mapped_buffer_refuses_an_append_whose_generation_would_not_fit(make: Any) -> None:
    buffer = make(Ref, 1, 256, 1, NO_ASQN, 0, 1000, 2**64 - 1, 1 << 20)
    buffer.bind(OperationLog(), 3, 2**64 - 3, 0, False)
    buffer.map(1000)
    assert buffer.append(b"last", NO_ASQN, 1) == Ref(1, 256, 1)  # generation 2^64-2: the next could need 2^64
    assert buffer.append(b"none", NO_ASQN, 1) == INDEXES_USED_UP


@pytest.mark.parametrize("make", [PureRecordBuffer, compiled_buffer], ids=["pure", "compiled"])
def test_mapping_that_does_not_cover_the_records_is_refused(make: Any) -> None:
    buffer = make(Ref, 1, 256, 1, NO_ASQN, 0, 1000, 2**64 - 1, 1 << 20)
    buffer.bind(OperationLog(), 3, 1, 0, False)
    with pytest.raises(ValueError, match="cover"):
        buffer.map(999)


def test_compiled_mapping_stores_the_bytes_the_reference_mapping_does(tmp_path: Any) -> None:
    """Through real shared mappings of two files: byte-identical segments, visible to a read before any sync."""
    images = []
    for make in (PureRecordBuffer, compiled_buffer):
        path = tmp_path / make.__name__
        path.write_bytes(bytes(4096))
        fd = os.open(path, os.O_RDWR)
        try:
            buffer = make(Ref, 2, 256, 10, NO_ASQN, 0, 4096, 2**64 - 1, 1 << 20)
            buffer.bind(None, fd, 41, 0, False)
            buffer.map(4096)
            refs = [buffer.append(b"x" * n, n * 3 if n % 2 else NO_ASQN, 1000 + n) for n in range(5)]
            seen = os.pread(fd, 4096, 0)  # the page cache the mapping shares: no sync yet
            published = buffer.commit(True, True)
        finally:
            os.close(fd)
        images.append((refs, published, seen, path.read_bytes()))
    assert images[0] == images[1]
    refs, published, seen, image = images[0]
    assert seen == image
    assert published is not None and published[:3] == (50, 256 + 5 * 40 + 10, 15)  # 42, then two by two (W-42)
    assert refs[-1] == Ref(2, 256 + 4 * 40 + 6, 14)


@pytest.mark.spec("W-42")
@pytest.mark.parametrize("make", [PureRecordBuffer, compiled_buffer], ids=["pure", "compiled"])
def test_mapped_buffer_leaves_the_slot_of_the_durable_generation_until_a_sync(make: Any) -> None:
    """Generation 1 is durable (slot 1): 2 goes to slot 0, then 4, 6 overwrite it; after a sync, 7 goes to slot 1."""
    fs = OperationLog()
    buffer = make(Ref, 1, 256, 1, NO_ASQN, 0, 1000, 2**64 - 1, 1 << 20)
    buffer.bind(fs, 3, 1, 0, False)
    buffer.map(1000)
    for n in range(3):
        buffer.append(b"%d" % n, NO_ASQN, 10)
    buffer.commit(True, False)
    buffer.append(b"after the sync", NO_ASQN, 11)
    slots = [
        (operation[3], int.from_bytes(operation[2][:8], "big"))
        for operation in fs.operations
        if operation[0] == "pwrite" and operation[3] in (96, 144)
    ]
    assert slots == [(96, 2), (96, 4), (96, 6), (144, 7)]


class SlowSyncs(OperationLog):
    """Syncs that take a while, as a disk's do, and fail from the ``fail_from``-th on."""

    def __init__(self, fail_from: int | None = None) -> None:
        super().__init__()
        self.fail_from = fail_from
        self.syncs = 0

    def pwrite_synced(self, fd: int, data: bytes, offset: int) -> None:
        self.syncs += 1
        time.sleep(0.002)
        if self.fail_from is not None and self.syncs >= self.fail_from:
            raise OSError(5, "injected sync failure")
        super().pwrite_synced(fd, data, offset)


def append_and_wait(buffer: Any, thread: int, count: int, outcomes: list[Any]) -> None:
    for n in range(count):
        ref = buffer.append(b"%d:%d" % (thread, n), NO_ASQN, 10)
        if not isinstance(ref, Ref):
            outcomes.append(("code", ref))
            return
        try:
            outcomes.append(("done", ref.index, buffer.commit_through(ref.index)))
        except OSError as exc:
            outcomes.append(("failed", ref.index, str(exc)))
            return


def appenders_in_threads(make: Any, fs: SlowSyncs, threads: int) -> tuple[Any, list[Any]]:
    """``threads`` appenders of 40 records each, waiting for their commits in the group commit of a new buffer."""
    buffer = make(Ref, 1, 256, 1, NO_ASQN, 0, 2**64 - 1, 2**64 - 1, 1 << 20)
    buffer.bind(fs, 3, 1, 0, False)
    buffer.group(threading.RLock(), SYNC_RECORDS, 1 << 30, 0.002, False)
    outcomes: list[Any] = []
    running = [threading.Thread(target=append_and_wait, args=(buffer, t, 40, outcomes)) for t in range(threads)]
    for thread in running:
        thread.start()
    for thread in running:
        thread.join(timeout=60)
    assert all(not thread.is_alive() for thread in running)
    return buffer, outcomes


@pytest.mark.parametrize("make", [PureRecordBuffer, compiled_buffer], ids=["pure", "compiled"])
def test_group_commit_returns_each_appender_once_its_record_is_committed_in_shared_batches(make: Any) -> None:
    """Eight appenders: every record committed before its appender returns, in far fewer syncs than records,
    the batches written one after the other in index order."""
    fs = SlowSyncs()
    buffer, outcomes = appenders_in_threads(make, fs, 8)
    assert sorted(outcome[1] for outcome in outcomes) == list(range(1, 321))
    assert {outcome[2] for outcome in outcomes} == {None}
    assert buffer.committed()[2] == 321
    writes = [operation for operation in fs.operations if operation[0] == "pwrite_synced"]
    assert len(writes) < 160  # shared: fewer than one sync per two records
    offsets = [operation[3] for operation in writes]
    ends = [operation[3] + len(operation[2]) for operation in writes]
    assert offsets == [256, *ends[:-1]]


@pytest.mark.parametrize("make", [PureRecordBuffer, compiled_buffer], ids=["pure", "compiled"])
def test_a_failed_group_commit_fails_every_appender_waiting_for_it(make: Any) -> None:
    """The third batch's sync fails: its leader and followers raise, none hangs, nothing later is taken."""
    fs = SlowSyncs(fail_from=3)
    buffer, outcomes = appenders_in_threads(make, fs, 4)
    committed = buffer.committed()[2]
    failed = [outcome for outcome in outcomes if outcome[0] == "failed"]
    assert failed and all("injected sync failure" in outcome[2] for outcome in failed)
    assert all(outcome[1] >= committed for outcome in failed)  # no record reported failed was published
    assert all(outcome[1] < committed for outcome in outcomes if outcome[0] == "done")
    assert buffer.append(b"after", NO_ASQN, 11) == CLOSED
