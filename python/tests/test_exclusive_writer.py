"""The exclusive writer (spec protocols §6.7, W-39) and its process and mmap durability modes (§6.5, W-40, W-41).

An exclusive writer encodes each append at once in its record buffer, the
compiled one where built: every test that depends on the buffer runs on
both it and the pure-Python reference.
"""

from __future__ import annotations

import errno
import itertools
import os
import secrets
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from logtools import FaultyFileSystem

from openbinlog import (
    AsqnOrderError,
    BinlogIOError,
    PayloadTooLargeError,
    Reader,
    Ref,
    Writer,
    WriterClosedError,
    WriterFailedError,
    _accel,
    _buffered,
)
from openbinlog import _fs as fs_module
from openbinlog._format import HEADER_SIZE, SLOT_OFFSETS, SLOT_SIZE
from openbinlog._fs import OsFileSystem
from openbinlog._segment import decode_slot


def read_all(directory: Path) -> list[tuple[Ref, bytes]]:
    with Reader(directory) as reader:
        return [(entry.ref, entry.payload) for entry in reader]


def ticking_clock() -> Any:
    ticks = iter(range(1_700_000_000_000_000, 1_800_000_000_000_000, 7))
    return lambda: next(ticks)


@pytest.fixture(params=["compiled", "pure"])
def buffer_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test of the process mode runs on the compiled buffer (when built) and on the reference."""
    if request.param == "compiled" and _accel.RecordBuffer is None:
        pytest.skip("openbinlog._native is not built")
    if request.param == "pure":
        monkeypatch.setattr(_accel, "RecordBuffer", None)
    return str(request.param)


@pytest.mark.spec("W-40")
def test_process_mode_returns_refs_at_once_and_readers_see_records_once_flushed(
    log_dir: Path, buffer_kind: str
) -> None:
    with Writer(log_dir, durability="process", flush_interval=3600) as writer:
        refs = [writer.append(b"record %d" % n) for n in range(5)]
        assert [ref.index for ref in refs] == [1, 2, 3, 4, 5]
        assert read_all(log_dir) == []  # still in the process
        writer.flush()
        assert read_all(log_dir) == [(ref, b"record %d" % n) for n, ref in enumerate(refs)]
        with Reader(log_dir, start=refs[3]) as reader:
            assert next(iter(reader)).payload == b"record 3"


@pytest.mark.spec("W-40")
def test_process_mode_commits_a_full_buffer_without_being_asked(log_dir: Path, buffer_kind: str) -> None:
    with Writer(log_dir, durability="process", buffer_bytes=1000, flush_interval=3600) as writer:
        refs = [writer.append(bytes(100)) for _ in range(30)]
        visible = read_all(log_dir)
        assert 0 < len(visible) < 30  # whole buffers, committed as they filled
        assert [ref for ref, _ in visible] == refs[: len(visible)]
    assert [ref for ref, _ in read_all(log_dir)] == refs  # close commits the rest


def test_process_mode_starts_the_writeback_of_each_commit_it_does_not_sync(log_dir: Path, buffer_kind: str) -> None:
    """A full buffer's commit starts writing its records to the disk (so close()'s sync finds less to do);
    flush() syncs instead, and starts nothing."""

    class Writebacks(OsFileSystem):
        def __init__(self) -> None:
            self.records: list[tuple[int, int]] = []
            self.started: list[tuple[int, int]] = []

        def pwrite(self, fd: int, data: bytes, offset: int) -> None:
            super().pwrite(fd, data, offset)
            if offset >= HEADER_SIZE:
                self.records.append((offset, len(data)))

        def start_writeback(self, fd: int, offset: int, length: int) -> None:
            super().start_writeback(fd, offset, length)
            self.started.append((offset, length))

    fs = Writebacks()
    with Writer(log_dir, durability="process", buffer_bytes=1000, flush_interval=3600, fs=fs) as writer:
        for _ in range(30):
            writer.append(bytes(100))
        assert fs.started and fs.started == fs.records  # each commit for size, its own range
        writer.flush()
        assert fs.started == fs.records[:-1]  # the flush's commit: synced, not written behind
    assert len(read_all(log_dir)) == 30


def test_process_mode_commits_a_buffer_whose_records_waited_flush_interval(log_dir: Path, buffer_kind: str) -> None:
    with Writer(log_dir, durability="process", flush_interval=0.02) as writer:
        ref = writer.append(b"waits a little")
        deadline = time.monotonic() + 30
        while not read_all(log_dir) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert read_all(log_dir) == [(ref, b"waits a little")]


@pytest.mark.spec("W-40")
def test_process_mode_cuts_over_where_records_no_longer_fit(log_dir: Path, buffer_kind: str) -> None:
    with Writer(log_dir, durability="process", preallocate=1024, flush_interval=3600) as writer:
        refs = [writer.append(bytes([n]) * 100) for n in range(20)]
        assert writer.cutover() == refs[-1].log + 1
        after = writer.append(b"after the cutover")
    assert len({ref.log for ref in refs}) > 3
    assert read_all(log_dir) == [
        *((ref, bytes([n]) * 100) for n, ref in enumerate(refs)),
        (after, b"after the cutover"),
    ]


def test_process_mode_cuts_over_at_the_size_limit(log_dir: Path, buffer_kind: str) -> None:
    with Writer(log_dir, durability="process", max_segment_bytes=2000, flush_interval=3600) as writer:
        refs = [writer.append(bytes(200)) for _ in range(30)]
    assert {ref.log for ref in refs} == {1, 2, 3, 4}
    assert [ref for ref, _ in read_all(log_dir)] == refs


def test_process_mode_checks_each_append_as_the_other_modes_do(log_dir: Path, buffer_kind: str) -> None:
    with Writer(log_dir, durability="process", preallocate=1024, flush_interval=3600) as writer:
        first = writer.append(b"first", asqn=10)
        with pytest.raises(AsqnOrderError):
            writer.append(b"late", asqn=10)
        with pytest.raises(AsqnOrderError):
            writer.append(b"out of range", asqn=2**63)
        with pytest.raises(TypeError, match="not str"):
            writer.append("text")  # type: ignore[arg-type]
        with pytest.raises(PayloadTooLargeError):
            writer.append(bytes(1024))  # no preallocated segment of 1024 bytes can hold it (W-10)
        second = writer.append(bytearray(b"bytes-like"), asqn=11)
        assert writer.append_many([b"a", (b"b", 12)])[-1].index == 4
    assert read_all(log_dir)[:2] == [(first, b"first"), (second, b"bytes-like")]


def test_process_mode_refuses_a_writer_that_is_not_exclusive(log_dir: Path) -> None:
    with pytest.raises(ValueError, match="exclusive"):
        Writer(log_dir, durability="process", exclusive=False)


def test_closed_process_writer_refuses_appends(log_dir: Path, buffer_kind: str) -> None:
    writer = Writer(log_dir, durability="process")
    writer.append(b"kept")
    writer.close()
    with pytest.raises(WriterClosedError):
        writer.append(b"after close")
    assert [payload for _, payload in read_all(log_dir)] == [b"kept"]


@pytest.mark.spec("W-19", "W-40")
def test_failed_buffer_commit_fails_the_writer_and_is_reported_by_flush(log_dir: Path, buffer_kind: str) -> None:
    faulty = FaultyFileSystem()
    with Writer(log_dir, durability="process", flush_interval=3600, fs=faulty) as writer:
        writer.append(b"acknowledged")
        writer.flush()
        writer.append(b"lost with its buffer")
        faulty.fail_sync_after = faulty.syncs + 1
        with pytest.raises(BinlogIOError):
            writer.flush()
        with pytest.raises(WriterFailedError):
            writer.append(b"refused")
        with pytest.raises(WriterFailedError):
            writer.flush()
    with Writer(log_dir) as reopened:  # W-19: reopen to go on; recovery may adopt the unsynced record
        reopened.append(b"after reopening")
    payloads = [payload for _, payload in read_all(log_dir)]
    assert payloads[0] == b"acknowledged" and payloads[-1] == b"after reopening"


@pytest.mark.parametrize(
    ("durability", "preallocate"),
    [
        ("process", None),
        ("process", 1024),
        ("mmap", 1024),
        ("sync", None),
        ("os", 1024),
        ("strict", None),
        ("group", None),
    ],
)
def test_compiled_and_pure_buffers_write_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, durability: str, preallocate: int | None
) -> None:
    """Same appends, same clock, same log id: the same files, whichever buffer encoded the records."""
    if _accel.RecordBuffer is None:
        pytest.skip("openbinlog._native is not built")
    monkeypatch.setattr(secrets, "token_bytes", lambda n: bytes(range(n)))
    images = []
    for kind in ("compiled", "pure"):
        if kind == "pure":
            monkeypatch.setattr(_accel, "RecordBuffer", None)
        directory = tmp_path / kind
        options: dict[str, Any] = {"buffer_bytes": 700, "flush_interval": 3600, "preallocate": preallocate}
        mode: Any = durability
        with Writer(directory, durability=mode, exclusive=True, clock_us=ticking_clock(), **options) as w:
            for n in range(40):
                w.append(bytes([n]) * (n * 7 % 150), asqn=n * 2 if n % 3 else -1)
            w.append_many([b"one", (b"two", 1000), b"three"])
            w.cutover()
            w.append(b"last")
        images.append({name: (directory / name).read_bytes() for name in sorted(os.listdir(directory))})
    assert images[0] == images[1]


@pytest.mark.spec("W-15")
def test_exclusive_appenders_in_threads_share_commits_and_lose_nothing(log_dir: Path, buffer_kind: str) -> None:
    fs = FaultyFileSystem()  # counts the syncs
    threads, each = 8, 40
    with Writer(log_dir, exclusive=True, fs=fs) as writer:
        syncs_before = fs.syncs
        refs: list[list[Ref]] = [[] for _ in range(threads)]

        def appender(number: int) -> None:
            for n in range(each):
                refs[number].append(writer.append(b"%d:%d" % (number, n)))

        workers = [threading.Thread(target=appender, args=(number,)) for number in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        syncs = fs.syncs - syncs_before
    records = dict(read_all(log_dir))
    assert sorted(ref.index for ref in records) == list(range(1, threads * each + 1))
    for number, own in enumerate(refs):
        assert [records[ref] for ref in own] == [b"%d:%d" % (number, n) for n in range(each)]
    assert syncs < threads * each  # appenders that arrived during a sync shared the next one


@pytest.mark.spec("W-17")
def test_exclusive_append_many_is_one_commit(log_dir: Path, buffer_kind: str) -> None:
    fs = CountingFileSystem()
    with Writer(log_dir, exclusive=True, fs=fs) as writer:
        writer.append(b"first")
        fs.calls.clear()
        writer.append_many([b"a", b"b", b"c"])
        assert fs.calls == ["pwrite_synced", "pwrite", "pwrite"]


def slot_generations(segment: Path) -> list[int | None]:
    """The generation in each slot of ``segment``'s header, None for a slot that fails its checksum."""
    header = segment.read_bytes()[:HEADER_SIZE]
    return [
        None if (slot := decode_slot(header[at : at + SLOT_SIZE])) is None else slot.generation for at in SLOT_OFFSETS
    ]


@pytest.mark.spec("W-13", "W-42")
def test_exclusive_sync_writer_syncs_records_alone_and_keeps_the_durable_slot(log_dir: Path, buffer_kind: str) -> None:
    fs = CountingFileSystem()
    with Writer(log_dir, exclusive=True, fs=fs) as writer:
        writer.append(b"first")
        durable = slot_generations(log_dir / "00000001.dat")
        fs.calls.clear()
        for n in range(3):
            writer.append(b"batch %d" % n)
        assert fs.calls == ["pwrite_synced", "pwrite", "pwrite"] * 3  # no sync of the file, hence of no slot
        published = slot_generations(log_dir / "00000001.dat")
        # Every batch after the first publishes two generations on, over the unsynced slot of the one before.
        newest = max(g for g in durable if g is not None)
        kept = durable.index(min(g for g in durable if g is not None))
        assert published[kept] == durable[kept]
        assert published[1 - kept] == newest + 6
        fs.calls.clear()
    assert "fdatasync" in fs.calls  # close() makes the last commit point durable
    assert [payload for _, payload in read_all(log_dir)] == [b"first", b"batch 0", b"batch 1", b"batch 2"]


@pytest.mark.spec("W-13")
@pytest.mark.parametrize("lacking", ["flag", "kernel"])
def test_synchronized_write_without_rwf_dsync_is_a_write_and_a_sync_of_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lacking: str
) -> None:
    if lacking == "flag":  # a Python or a system without RWF_DSYNC
        monkeypatch.setattr(fs_module, "_RWF_DSYNC", None)
    else:  # a kernel that refuses the flag

        def refuse(*_: object) -> int:
            raise OSError(errno.EOPNOTSUPP, "refused")

        monkeypatch.setattr(fs_module.os, "pwritev", refuse)
    path = tmp_path / "file"
    path.write_bytes(bytes(8))
    fs = CountingFileSystem()
    fd = os.open(path, os.O_RDWR)
    try:
        fs.pwrite_synced(fd, b"abc", 2)
    finally:
        os.close(fd)
    assert fs.calls == ["pwrite_synced", "pwrite", "fdatasync"]
    assert path.read_bytes() == b"\0\0abc\0\0\0"


@pytest.mark.spec("W-42")
def test_exclusive_writer_syncs_the_whole_file_every_so_many_bytes(
    log_dir: Path, buffer_kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_buffered, "FULL_SYNC_BYTES", 1000)
    fs = CountingFileSystem()
    with Writer(log_dir, exclusive=True, fs=fs) as writer:
        fs.calls.clear()
        generations = []
        for _ in range(12):
            writer.append(bytes(200))
            generations.append(max(g for g in slot_generations(log_dir / "00000001.dat") if g is not None))
    syncs = [call for call in fs.calls if call in ("fdatasync", "pwrite_synced")]
    # 240 bytes a record: five batches sync their records alone, and the sixth, whose records start 1200
    # bytes beyond the durable slot's commit point, the whole file.
    assert syncs[:7] == ["pwrite_synced"] * 5 + ["fdatasync", "pwrite_synced"]
    steps = [later - earlier for earlier, later in itertools.pairwise(generations)]
    assert steps[:5] == [2, 2, 2, 2, 1]  # the durable slot kept, until the sync of the file made a newer one durable
    assert syncs.count("fdatasync") >= 2  # again once the next 1000 bytes are committed, and at close


@pytest.mark.spec("W-19")
def test_failed_sync_of_an_exclusive_writer_acknowledges_nothing_and_fails_the_writer(
    log_dir: Path, buffer_kind: str
) -> None:
    faulty = FaultyFileSystem()
    with Writer(log_dir, exclusive=True, fs=faulty) as writer:
        writer.append(b"acknowledged")
        faulty.fail_sync_after = faulty.syncs + 1
        with pytest.raises(BinlogIOError):
            writer.append(b"not acknowledged")
        with pytest.raises(WriterFailedError):
            writer.append(b"refused")
    with Writer(log_dir) as reopened:
        reopened.append(b"after reopening")
    payloads = [payload for _, payload in read_all(log_dir)]
    assert payloads[0] == b"acknowledged" and payloads[-1] == b"after reopening"


@pytest.mark.spec("W-39")
def test_exclusive_writer_holds_the_lock_until_closed(log_dir: Path) -> None:
    first = Writer(log_dir, exclusive=True)
    first.append(b"first")
    opened = threading.Event()

    def second_writer() -> None:
        with Writer(log_dir) as second:
            opened.set()
            second.append(b"second")

    thread = threading.Thread(target=second_writer)
    thread.start()
    assert not opened.wait(0.5)  # waits for the lock the exclusive writer holds
    first.append(b"still alone")
    first.close()
    thread.join(30)
    assert opened.is_set()
    assert [payload for _, payload in read_all(log_dir)] == [b"first", b"still alone", b"second"]


class CountingFileSystem(OsFileSystem):
    def __init__(self) -> None:
        self.calls: list[str] = []

    def __getattribute__(self, name: str) -> Any:
        attribute = super().__getattribute__(name)
        if callable(attribute) and not name.startswith("_") and name in dir(OsFileSystem):
            super().__getattribute__("calls").append(name)
        return attribute


@pytest.mark.spec("W-39")
def test_exclusive_writer_skips_the_checks_of_each_batch_after_its_first(log_dir: Path) -> None:
    def calls_per_append(exclusive: bool) -> list[str]:
        fs = CountingFileSystem()
        with Writer(log_dir, exclusive=exclusive, fs=fs, shared_sync=None if exclusive else False) as writer:
            writer.append(b"first batch")
            fs.calls.clear()
            writer.append(b"second batch")
            return list(fs.calls)

    assert calls_per_append(exclusive=True) == ["pwrite_synced", "pwrite", "pwrite"]
    shared = calls_per_append(exclusive=False)
    assert {"lock", "unlock", "exists", "pread"} <= set(shared)


def test_writer_syncing_records_alone_caches_each_segment_page_by_page_once_it_is_synced(log_dir: Path) -> None:
    """Records synced alone: at open and at each new segment, after the sync, the header page and the record pages
    are cached apart (a record's synchronized write would otherwise write the header page's dirty slot too)."""

    def calls(**options: Any) -> list[str]:
        fs = CountingFileSystem()
        with Writer(log_dir / str(len(options)), fs=fs, **options) as writer:
            writer.append(b"first segment")
            writer.cutover()
            writer.append(b"second segment")
        return [name for name in fs.calls if name in ("fdatasync", "cache_pages_apart")]

    alone = calls(exclusive=True, preallocate=1 << 16)
    assert alone.count("cache_pages_apart") == 2
    assert all(alone[at - 1] == "fdatasync" for at, name in enumerate(alone) if name == "cache_pages_apart")
    assert "cache_pages_apart" not in calls(exclusive=False, preallocate=1 << 16, durability="sync")


@pytest.mark.spec("W-41")
def test_mmap_mode_publishes_each_append_before_it_returns(log_dir: Path, buffer_kind: str) -> None:
    """No flush: a reader in this process and one in another see every record whose append returned."""
    with Writer(log_dir, durability="mmap", preallocate=1 << 16) as writer:
        refs = [writer.append(b"record %d" % n, asqn=n) for n in range(5)]
        assert read_all(log_dir) == [(ref, b"record %d" % n) for n, ref in enumerate(refs)]
        counted = subprocess.run(
            [sys.executable, "-c", COUNT_RECORDS, str(log_dir)], capture_output=True, text=True, check=True
        )
        assert counted.stdout.split() == ["5", "4"]
        refs += writer.append_many([b"five", (b"six", 9)])
        assert [payload for _, payload in read_all(log_dir)][-2:] == [b"five", b"six"]
        writer.flush()
    assert [ref for ref, _ in read_all(log_dir)] == refs


COUNT_RECORDS = """
import sys
from openbinlog import Reader
with Reader(sys.argv[1]) as reader:
    entries = list(reader)
print(len(entries), entries[-1].asqn)
"""


@pytest.mark.spec("W-41")
def test_mmap_mode_cuts_over_where_records_no_longer_fit(log_dir: Path, buffer_kind: str) -> None:
    with Writer(log_dir, durability="mmap", preallocate=1024) as writer:
        refs = [writer.append(bytes([n]) * 100) for n in range(20)]
        with pytest.raises(PayloadTooLargeError):
            writer.append(b"x" * 1000)
        refs.append(writer.append(b"after the refusal"))
    assert [ref for ref, _ in read_all(log_dir)] == refs
    assert len({ref.log for ref in refs}) == 4  # 6 records of 140 bytes fill a 1 KiB segment
    assert {(log_dir / name).stat().st_size for name in os.listdir(log_dir) if name.endswith(".dat")} == {1024}


def test_mmap_mode_moves_from_a_segment_it_cannot_map_to_a_preallocated_one(log_dir: Path, buffer_kind: str) -> None:
    with Writer(log_dir) as plain:
        first = plain.append(b"written by a writer that does not preallocate")
    with Writer(log_dir, durability="mmap", preallocate=4096) as writer:
        second = writer.append(b"mapped")
    assert (first.log, second.log) == (1, 2)
    assert read_all(log_dir) == [(first, b"written by a writer that does not preallocate"), (second, b"mapped")]


def test_mmap_mode_needs_preallocated_segments_and_an_exclusive_writer(log_dir: Path) -> None:
    with pytest.raises(ValueError, match="preallocate"):
        Writer(log_dir, durability="mmap")
    with pytest.raises(ValueError, match="exclusive"):
        Writer(log_dir, durability="mmap", preallocate=4096, exclusive=False)


@pytest.mark.spec("W-19", "W-41")
def test_failed_store_of_the_mmap_mode_fails_the_writer(log_dir: Path, buffer_kind: str) -> None:
    """Through a file-system object (as the crash tests record it), a store that fails is reported, not lost."""

    class FailingStores(OsFileSystem):
        fail = False

        def pwrite(self, fd: int, data: bytes, offset: int) -> None:
            if self.fail:
                raise OSError(5, "injected")
            super().pwrite(fd, data, offset)

    fs = FailingStores()
    with Writer(log_dir, durability="mmap", preallocate=4096, fs=fs) as writer:
        kept = writer.append(b"kept")
        fs.fail = True
        with pytest.raises(BinlogIOError, match="mapping"):
            writer.append(b"not acknowledged")
        with pytest.raises(WriterFailedError):
            writer.append(b"refused")
    assert read_all(log_dir) == [(kept, b"kept")]


def test_mmap_appenders_in_threads_lose_nothing(log_dir: Path, buffer_kind: str) -> None:
    refs: list[Ref] = []
    with Writer(log_dir, durability="mmap", preallocate=1 << 14) as writer:

        def append(thread: int) -> None:
            refs.extend(writer.append(b"%d:%d" % (thread, n)) for n in range(200))

        threads = [threading.Thread(target=append, args=(t,)) for t in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert sorted(ref for ref, _ in read_all(log_dir)) == sorted(refs)
    assert len(refs) == 800


@pytest.mark.parametrize("durability", ["process", "mmap"])
def test_append_without_a_python_frame_behaves_as_the_writer_method(log_dir: Path, durability: Any) -> None:
    """The compiled appender of the modes whose appends return at once: the same refs, errors and checks."""
    if _accel.Appender is None:
        pytest.skip("openbinlog._native is not built")
    with Writer(log_dir, durability=durability, preallocate=1024, flush_interval=3600) as writer:
        append = writer.append  # kept across cutovers, as a hot loop keeps it
        assert isinstance(append, _accel.Appender)
        refs = [append(b"%d" % n, asqn=n) for n in range(20)]  # 41-byte records: a cutover every 18
        refs.append(append(bytearray(b"not bytes")))
        with pytest.raises(AsqnOrderError):
            append(b"x", asqn=3)
        with pytest.raises(AsqnOrderError):
            append(b"x", asqn=None)  # type: ignore[arg-type]
        with pytest.raises(PayloadTooLargeError):
            append(b"x" * 2000)
        with pytest.raises(TypeError, match="asqn"):
            append(b"x", sqn=4)  # type: ignore[call-arg]
        with pytest.raises(TypeError):
            append(b"x", 4)  # type: ignore[misc]
        refs.append(append(b"last", asqn=100))
    assert [ref for ref, _ in read_all(log_dir)] == refs
    assert len({ref.log for ref in refs}) == 2
    assert [ref.index for ref in refs] == list(range(1, 23))
    with pytest.raises(WriterClosedError):
        append(b"after close")
