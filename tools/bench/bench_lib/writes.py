"""W1 to W6: appends per second, and the bare loops they are judged against.

Every baseline writes the bytes the writer writes for one record (its
40-byte header and the payload) to a fresh file in the same directory, so
figure and baseline meet the same file system. All the durable contenders
(W1, the seed's protocol, the bare loop, W2, W3) run interleaved in short
rounds, and so do the buffered ones (W4, its baseline, the protocol floor).
A writer that holds the log's lock from open to close (``exclusive=True``,
and ``durability="process"``, which implies it) shuts every other writer of
the log out, this process's included: each of those runs in an interleaving
of its own, with a bare loop of its own, once the other writers are closed.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import struct
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from openbinlog import HEADER_SIZE, Writer, encode_record

from .logs import BuiltLog, payloads, record_bytes
from .measure import Row, Variant, compared, interleaved_rates
from .plan import Plan
from .processes import READY, emit, start_worker, wait_ready

HEADER = bytes(256)
ZERO_CHUNK = bytes(1 << 20)
WORKER_TIMEOUT = 300.0
# Measured on a fresh log of its own, whatever the size of the log of its row.
PREALLOCATED_W1 = "durable appends/s, one writer, preallocated segments"
# The rows of the writer options, worded alike here and in sqlite.py.
EXCLUSIVE_SYNC = "durable appends/s, one writer, exclusive"
PREALLOCATED_EXCLUSIVE = "durable appends/s, one writer, exclusive, preallocated"
EXCLUSIVE_OS = "buffered appends/s (durability os), exclusive"
PROCESS_MODE = "buffered appends/s (durability process)"
MMAP_MODE = "appends/s (durability mmap), each published at once"
MMAP_NOTE = (
    "Writer(durability='mmap', preallocate=...) on one segment that holds every timed append, created untimed: "
    "single appends, each stored with its slot into a shared mapping of the segment; both sides leave the data in "
    "the page cache (a process crash keeps it)"
)
PROCESS_NOTE = (
    "Writer(durability='process'), the lock held from open to close: single appends, then close(), which "
    "commits the buffer and syncs it once, timed together; opening is not timed"
)


class Appender(Protocol):
    """What the append loops drive: a BinLog ``Writer``, or another store's connection (sqlite.py)."""

    def append(self, payload: bytes, /) -> object: ...


class BaselineFile:
    """A fresh file holding a 256-byte header, for the bare loops to write to.

    With ``zeros``, the file is first filled with that many zero bytes and
    synced, as a preallocating writer's segment is: appends then overwrite
    space that exists, and ``fdatasync`` has no file size to write.
    """

    def __init__(self, path: Path, *, zeros: int = 0) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        for offset in range(0, zeros, len(ZERO_CHUNK)):
            os.pwrite(self.fd, ZERO_CHUNK[: zeros - offset], offset)
        os.pwrite(self.fd, HEADER, 0)
        os.fdatasync(self.fd)
        self.end = os.lseek(self.fd, len(HEADER), os.SEEK_SET)  # the loops write at the file offset

    def close(self) -> None:
        os.close(self.fd)
        os.unlink(self.path)


def _timed(body: Callable[[], None], count: int) -> float:
    start = time.perf_counter()
    for _ in range(count):
        body()
    return time.perf_counter() - start


def seed_protocol(file: BaselineFile, record: bytes) -> Callable[[int], float]:
    """The seed's commit: write the record, sync, write the 8-byte last element position, sync again."""

    def commit() -> None:
        os.write(file.fd, record)
        os.fdatasync(file.fd)
        file.end += len(record)
        os.pwrite(file.fd, file.end.to_bytes(8, "big"), 8)
        os.fdatasync(file.fd)

    return lambda count: _timed(commit, count)


def bare_write_sync(file: BaselineFile, record: bytes) -> Callable[[int], float]:
    def commit() -> None:
        os.write(file.fd, record)
        os.fdatasync(file.fd)

    return lambda count: _timed(commit, count)


def bare_write(file: BaselineFile, record: bytes) -> Callable[[int], float]:
    def write() -> None:
        os.write(file.fd, record)

    return lambda count: _timed(write, count)


def bare_writes_then_sync(file: BaselineFile, record: bytes) -> Callable[[int], float]:
    """``count`` single os.write calls, then one fdatasync: what the process mode's appends and close do."""

    def run(count: int) -> float:
        start = time.perf_counter()
        for _ in range(count):
            os.write(file.fd, record)
        os.fdatasync(file.fd)
        return time.perf_counter() - start

    return run


def bare_one_write_then_sync(file: BaselineFile, record: bytes) -> Callable[[int], float]:
    """``count`` records as one os.write, then one fdatasync: the disk's part of a process-mode run, nothing else
    (the records are joined untimed)."""

    def run(count: int) -> float:
        data = record * count
        start = time.perf_counter()
        os.write(file.fd, data)
        os.fdatasync(file.fd)
        return time.perf_counter() - start

    return run


def protocol_syscalls(file: BaselineFile, record: bytes, lock_fd: int) -> Callable[[int], float]:
    """The system calls of one os-mode commit (spec 6.2) with no library code around them: lock,
    look for a successor, read the header, stat, write the record, write slot and mirror, unlock."""
    successor = str(file.path.with_suffix(".next"))
    slot, mirror = bytes(48), bytes(18)

    def commit() -> None:
        fcntl.lockf(lock_fd, fcntl.LOCK_EX)
        os.path.exists(successor)
        os.pread(file.fd, len(HEADER), 0)
        os.fstat(file.fd)
        os.pwrite(file.fd, record, file.end)
        file.end += len(record)
        os.pwrite(file.fd, slot, 96)
        os.pwrite(file.fd, mirror, 6)
        fcntl.lockf(lock_fd, fcntl.LOCK_UN)

    return lambda count: _timed(commit, count)


def record_encoding(pool: list[bytes]) -> Callable[[int], float]:
    """Encoding one checked record (header, both CRC32C values) per append, and nothing else."""

    def run(count: int) -> float:
        start = time.perf_counter()
        for i in range(count):
            encode_record(i + 1, pool[i % len(pool)])
        return time.perf_counter() - start

    return run


def spare_ready(writer: Writer) -> Writer:
    """Wait, untimed, until a preallocating writer has filled its spare volume. It fills one in the background
    once per segment; in the first seconds of a segment its writes would weigh on every sync timed, where in
    the steady state they are spread over the whole segment's appends."""
    if writer._spare_thread is not None:  # as the tests wait for it
        writer._spare_thread.join()
    return writer


def writer_appends(writer: Appender, pool: list[bytes]) -> Callable[[int], float]:
    def run(count: int) -> float:
        start = time.perf_counter()
        for i in range(count):
            writer.append(pool[i % len(pool)])
        return time.perf_counter() - start

    return run


def process_mode_appends(directory: Path, pool: list[bytes]) -> Callable[[int], float]:
    """Each run on a process-mode writer of its own, opened untimed: ``count`` single appends, then
    ``close`` (which commits what the writer buffered and syncs it), timed together."""

    def run(count: int) -> float:
        writer = Writer(directory, durability="process", verify_on_open=False)
        start = time.perf_counter()
        try:
            for i in range(count):
                writer.append(pool[i % len(pool)])
        finally:
            writer.close()
        return time.perf_counter() - start

    return run


def threaded_calls(appends: Sequence[Callable[[int], object]]) -> Callable[[int], float]:
    """A thread per callable of ``appends``, each calling its own ``append(i)`` concurrently, ``count`` calls in all."""
    threads = len(appends)

    def run(count: int) -> float:
        barrier = threading.Barrier(threads + 1)

        def work(first: int) -> None:
            barrier.wait()
            append = appends[first]
            for i in range(count // threads):
                append(first + i)

        workers = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
        for worker in workers:
            worker.start()
        barrier.wait()
        start = time.perf_counter()
        for worker in workers:
            worker.join()
        return time.perf_counter() - start

    return run


class _Waiter:
    """An appender of the bare group commit, asleep on its own lock until committed or asked to lead."""

    __slots__ = ("lead", "wake")

    def __init__(self) -> None:
        self.lead = False
        self.wake = threading.Lock()
        self.wake.acquire()


def bare_group_commit(file: BaselineFile, record: bytes, threads: int) -> Callable[[int], None]:
    """The least a CPython group commit can do: one append per call, no format, no file lock.

    The leader waits until all ``threads`` appenders are queued (briefly, in
    case one has stopped), writes their records with one ``os.write``, syncs
    once, wakes each and hands the lead to the first caller queued since.
    """
    mutex = threading.Lock()
    arrived = threading.Condition(mutex)
    queue: list[_Waiter] = []
    leading = [False]

    def append(_: int) -> None:
        me = _Waiter()
        with mutex:
            queue.append(me)
            if leading[0]:
                arrived.notify()
            else:
                leading[0] = me.lead = True
        if not me.lead:
            me.wake.acquire()
            if not me.lead:
                return
        with mutex:
            while len(queue) < threads and arrived.wait(0.001):
                pass
            batch = queue[:]
            queue.clear()
        os.write(file.fd, record * len(batch))
        os.fdatasync(file.fd)
        with mutex:
            if queue:
                queue[0].lead = True
                queue[0].wake.release()
            else:
                leading[0] = False
        for waiter in batch:
            if waiter is not me:
                waiter.wake.release()

    return append


class AppendingProcesses:
    """Processes that each append on command, all at once: through a writer of their own on the
    log (``append`` workers), a connection of their own to SQLite (``sqlite_append``) or, for the
    floor, with a bare write+fdatasync loop (``bare_append``)."""

    def __init__(self, worker: str, processes: int, **arguments: Any) -> None:
        self.started = [start_worker(worker, **arguments, seed=n) for n in range(processes)]
        for process in self.started:
            wait_ready(process, timeout=WORKER_TIMEOUT)

    def __call__(self, count: int) -> float:
        """Seconds from the first process's first append to the last one's last, ``count`` appends in all."""
        for process in self.started:
            assert process.stdin is not None
            process.stdin.write(f"{count // len(self.started)}\n")
            process.stdin.flush()
        spans = []
        for process in self.started:
            assert process.stdout is not None
            line = process.stdout.readline()
            if not line:
                raise RuntimeError(f"an appending process died: {process.stderr.read() if process.stderr else ''}")
            spans.append(json.loads(line))
        return max(span["end"] for span in spans) - min(span["start"] for span in spans)

    def close(self) -> None:
        for process in self.started:
            try:
                assert process.stdin is not None
                process.stdin.close()
                process.wait(timeout=WORKER_TIMEOUT)
            except (OSError, TimeoutError):
                process.kill()
                process.wait(timeout=10)


def serve_appends(store: Appender, pool: list[bytes]) -> None:
    """Worker side of ``AppendingProcesses``: for each count read from stdin, append that many
    records and report the monotonic span (CLOCK_MONOTONIC is system-wide, so spans of
    different processes compare)."""
    print(READY, flush=True)
    for line in sys.stdin:
        start = time.monotonic()
        for i in range(int(line)):
            store.append(pool[i % len(pool)])
        emit({"start": start, "end": time.monotonic()})


def append_worker(arguments: dict[str, Any]) -> None:
    """Worker side of W3: appends through a writer of its own, kept open."""
    with Writer(arguments["log"], verify_on_open=False) as writer:
        serve_appends(writer, payloads(arguments["record_size"], seed=arguments["seed"]))


def bare_append_worker(arguments: dict[str, Any]) -> None:
    """Worker side of W3.floor: for each count read from stdin, that many bare write+fdatasync
    commits of one record to the shared file (opened to append: no lock, no format)."""
    record = record_bytes(arguments["record_size"])
    fd = os.open(arguments["path"], os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
    try:
        print(READY, flush=True)
        for line in sys.stdin:
            start = time.monotonic()
            for _ in range(int(line)):
                os.write(fd, record)
                os.fdatasync(fd)
            emit({"start": start, "end": time.monotonic()})
    finally:
        os.close(fd)


# struct flock for the lock calls of protocol_append_worker: short, short, off_t, off_t, pid_t.
_FLOCK = "hhqqi4x"


def protocol_append_worker(arguments: dict[str, Any]) -> None:
    """Worker side of W3.ceiling: the system calls of a batch of spec 6.8 with no format work, each
    commit one record. Under the append lock (byte 0 of the lock file, checked by name): the header
    read, the file's size, the bytes beyond the commit point read, the header and those bytes written
    again with the record after them; the sync holding no lock; the commit point read without the lock and,
    unless it covers the record already, under the append lock again the header read and the commit point (its
    first 8 bytes) and a mirror written. What any implementation of 6.8
    costs on this disk and kernel, whatever its language."""
    record = record_bytes(arguments["record_size"])
    lock_path, path = arguments["lock"], arguments["path"]
    take, drop = (struct.pack(_FLOCK, kind, os.SEEK_SET, 0, 1, 0) for kind in (fcntl.F_WRLCK, fcntl.F_UNLCK))
    command = getattr(fcntl, "F_OFD_SETLKW", fcntl.F_SETLKW)
    fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    lock = os.open(lock_path, os.O_RDWR | os.O_CLOEXEC)
    successor = path + ".next"
    try:
        print(READY, flush=True)
        for line in sys.stdin:
            start = time.monotonic()
            for _ in range(int(line)):
                fcntl.fcntl(lock, command, take)
                os.stat(lock_path)
                os.path.exists(successor)
                header = os.pread(fd, len(HEADER), 0)
                commit = int.from_bytes(header[:8], "big")
                size = os.fstat(fd).st_size
                unpublished = os.pread(fd, size - commit, commit) if size > commit else b""
                os.pwrite(fd, header, 0)
                os.pwrite(fd, unpublished + record, commit)
                end = commit + len(unpublished) + len(record)
                fcntl.fcntl(lock, command, drop)
                os.fdatasync(fd)
                if int.from_bytes(os.pread(fd, 8, 0), "big") >= end:
                    continue  # published already by another process: no lock taken again
                fcntl.fcntl(lock, command, take)
                os.stat(lock_path)
                header = os.pread(fd, len(HEADER), 0)
                if int.from_bytes(header[:8], "big") < end:
                    os.pwrite(fd, end.to_bytes(8, "big") + header[8:64], 0)
                    os.pwrite(fd, header[64:96], 64)
                fcntl.fcntl(lock, command, drop)
            emit({"start": start, "end": time.monotonic()})
    finally:
        os.close(fd)
        os.close(lock)


def measure_writes(log: BuiltLog, plan: Plan, scratch: Path) -> list[Row]:
    """W1 to W6 on one log (the writers append to it; the baselines write beside it)."""
    size = log.record_size
    where: dict[str, Any] = dict(record_size=size, log_size=log.log_size)
    pool = payloads(size)
    record = record_bytes(size)
    scratch.mkdir(parents=True, exist_ok=True)
    rows: list[Row] = []
    opening = "timed appends only: opening, with its check of committed records (W-26), is recovery's cost"

    durable = bare_processes = protocol_processes = protocol_process = None
    seed_file, bare_file = BaselineFile(scratch / "seed.dat"), BaselineFile(scratch / "bare.dat")
    # Volumes of the plan's segment size: far more than a run appends, so the
    # preallocated figure is the steady state between two roll-overs.
    zeroed_file = BaselineFile(scratch / "zeroed.dat", zeros=plan.segment_bytes)
    beside_file, group_file = BaselineFile(scratch / "beside.dat"), BaselineFile(scratch / "group.dat")
    processes_file = BaselineFile(scratch / "processes.dat")
    protocol_file = BaselineFile(scratch / "protocol.dat")
    os.pwrite(protocol_file.fd, len(HEADER).to_bytes(8, "big"), 0)  # its commit point: the end of the header
    protocol_lock = scratch / "protocol.lock"
    protocol_lock.touch()
    volumes = scratch / "preallocated"
    shutil.rmtree(volumes, ignore_errors=True)
    try:
        with (
            Writer(log.path, verify_on_open=False) as writer,
            Writer(volumes, preallocate=plan.segment_bytes) as preallocated,
        ):
            spare_ready(preallocated)
            # Two interleavings, each comparing like with like: the single-writer
            # loops among themselves, then W1 with the concurrent appenders. Mixed
            # in one rotation, a bare loop run right after eight busy threads ran
            # up to 1.6 times faster than the same loop elsewhere in the rotation,
            # while the writer did not: the W1 ratios measured the neighbours.
            w1, w1_preallocated, seed, bare, zeroed = interleaved_rates(
                [
                    Variant(writer_appends(writer, pool), plan.sync_appends),
                    Variant(writer_appends(preallocated, pool), plan.sync_appends),
                    Variant(seed_protocol(seed_file, record), plan.sync_appends),
                    Variant(bare_write_sync(bare_file, record), plan.sync_appends),
                    Variant(bare_write_sync(zeroed_file, record), plan.sync_appends),
                ],
                rounds=plan.rounds,
                repeats=plan.repeats,
            )
            durable = AppendingProcesses("append", plan.processes, log=str(log.path), record_size=size)
            bare_processes = AppendingProcesses(
                "bare_append", plan.processes, path=str(processes_file.path), record_size=size
            )
            protocol = dict(path=str(protocol_file.path), lock=str(protocol_lock), record_size=size)
            protocol_processes = AppendingProcesses("protocol_append", plan.processes, **protocol)
            protocol_process = AppendingProcesses("protocol_append", 1, **protocol)
            one_append = [lambda i: writer.append(pool[i % len(pool)])]
            threaded_writer = threaded_calls(one_append * plan.threads)
            as_many_threads = threaded_calls(one_append * plan.processes)
            threaded_bare = threaded_calls([bare_group_commit(group_file, record, plan.threads)] * plan.threads)
            concurrent = plan.threads * plan.thread_appends
            in_processes = plan.processes * plan.process_appends
            (
                w1_beside,
                w2,
                w3,
                w3_threads,
                bare_beside,
                group_floor,
                processes_floor,
                protocol_four,
                protocol_one,
            ) = interleaved_rates(
                [
                    Variant(writer_appends(writer, pool), plan.sync_appends),
                    Variant(threaded_writer, concurrent),
                    Variant(durable, in_processes),
                    Variant(as_many_threads, in_processes),
                    Variant(bare_write_sync(beside_file, record), plan.sync_appends),
                    Variant(threaded_bare, concurrent),
                    Variant(bare_processes, in_processes),
                    Variant(protocol_processes, in_processes),
                    Variant(protocol_process, plan.sync_appends),
                ],
                rounds=plan.rounds,
                repeats=plan.repeats,
            )
    finally:
        for processes in (durable, bare_processes, protocol_processes, protocol_process):
            if processes is not None:
                processes.close()
        for file in (seed_file, bare_file, zeroed_file, beside_file, group_file, processes_file, protocol_file):
            file.close()
        shutil.rmtree(volumes, ignore_errors=True)
    measure = "durable appends/s, one writer"
    rows.append(compared(Row("W1", measure, "appends/s", **where, versus="seed protocol (2 syncs)"), w1, seed, bar=1.8))
    rows.append(compared(Row("W1", measure, "appends/s", **where, versus="bare write+fdatasync"), w1, bare, bar=0.85))
    rows[-1].note = opening
    measure = PREALLOCATED_W1
    versus = "seed protocol (2 syncs)"
    rows.append(compared(Row("W1", measure, "appends/s", **where, versus=versus), w1_preallocated, seed, bar=1.8))
    versus = "bare write+fdatasync"
    rows.append(compared(Row("W1", measure, "appends/s", **where, versus=versus), w1_preallocated, bare, bar=0.85))
    volume = plan.segment_bytes >> 20
    rows[-1].note = f"a fresh log of {volume} MiB volumes (spec 6.5): no file size for fdatasync to write"
    row = Row("W1.space", "bare write+fdatasync into zero-filled space", "appends/s", **where, versus=versus)
    row.note = "the same loop over a preallocated file: how much of the gain is the file system's"
    rows.append(compared(row, zeroed, bare))
    row = Row("W1.ceiling", "bare write+fdatasync", "appends/s", **where, versus="seed protocol (2 syncs)")
    row.note = "the ceiling of W1 against the seed for a writer that appends with one sync per commit and no CPU"
    rows.append(compared(row, bare, seed))
    measure = f"durable appends/s, {plan.threads} threads, one writer"
    rows.append(compared(Row("W2", measure, "appends/s", **where, versus="W1"), w2, w1_beside, bar=5.0))
    row = Row("W2.floor", f"bare group commit, {plan.threads} threads", "appends/s", **where)
    row.versus = "bare write+fdatasync"
    row.note = "one os.write and one fdatasync per batch, nothing else: W2 over a W1 as fast as the bare loop"
    rows.append(compared(row, group_floor, bare_beside))
    measure = f"durable appends/s, {plan.processes} processes"
    rows.append(compared(Row("W3", measure, "appends/s", **where, versus="W1"), w3, w1_beside, bar=2.5))
    versus = f"{plan.processes} threads, one writer"
    rows.append(compared(Row("W3", measure, "appends/s", **where, versus=versus), w3, w3_threads, bar=0.8))
    row = Row("W3.floor", f"{plan.processes} processes, bare write+fdatasync each", "appends/s", **where)
    row.versus = "bare write+fdatasync"
    row.note = "no lock and no format, each process syncing its own appends: how far the disk lets processes scale"
    rows.append(compared(row, processes_floor, bare_beside))
    row = Row("W3.ceiling", f"{plan.processes} processes, the system calls of spec 6.8 alone", "appends/s", **where)
    row.versus = "the same, one process"
    row.note = (
        "each commit one record: the locks, reads, writes and sync of a shared batch with no format work, "
        "how far any implementation of the protocol scales on this disk"
    )
    rows.append(compared(row, protocol_four, protocol_one))

    bare_file, floor_file = BaselineFile(scratch / "write.dat"), BaselineFile(scratch / "floor.dat")
    lock_path = scratch / "floor.lock"
    lock_fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        with Writer(log.path, durability="os", verify_on_open=False) as writer:
            w4, writes, floor, encoding = interleaved_rates(
                [
                    Variant(writer_appends(writer, pool), plan.buffered_appends),
                    Variant(bare_write(bare_file, record), plan.buffered_appends),
                    Variant(protocol_syscalls(floor_file, record, lock_fd), plan.buffered_appends),
                    Variant(record_encoding(pool), plan.buffered_appends),
                ],
                rounds=plan.rounds,
                repeats=plan.repeats,
            )
    finally:
        os.close(lock_fd)
        lock_path.unlink()
        bare_file.close()
        floor_file.close()
    # Holding the lock from open to close: after every other writer of the log is closed, each in its own pair.
    exclusive_file = BaselineFile(scratch / "exclusive-sync.dat")
    try:
        with Writer(log.path, exclusive=True, verify_on_open=False) as writer:
            w1_exclusive, exclusive_bare = interleaved_rates(
                [
                    Variant(writer_appends(writer, pool), plan.sync_appends),
                    Variant(bare_write_sync(exclusive_file, record), plan.sync_appends),
                ],
                rounds=plan.rounds,
                repeats=plan.repeats,
            )
    finally:
        exclusive_file.close()
    # One appender and threads on an exclusive, preallocated writer (a log of its own, made untimed), each
    # against the bare loop.
    volumes, threads_file = scratch / "exclusive-preallocated", BaselineFile(scratch / "exclusive-threads.dat")
    try:
        with spare_ready(Writer(volumes, exclusive=True, preallocate=plan.segment_bytes)) as writer:
            w1_preallocated_exclusive, w1_preallocated_exclusive_bare = interleaved_rates(
                [
                    Variant(writer_appends(writer, pool), plan.sync_appends),
                    Variant(bare_write_sync(threads_file, record), plan.sync_appends),
                ],
                rounds=plan.rounds,
                repeats=plan.repeats,
            )
            shared = threaded_calls([lambda i: writer.append(pool[i % len(pool)])] * plan.threads)
            w2_exclusive, w2_exclusive_bare = interleaved_rates(
                [
                    Variant(shared, plan.threads * plan.thread_appends),
                    Variant(bare_write_sync(threads_file, record), plan.sync_appends),
                ],
                rounds=plan.rounds,
                repeats=plan.repeats,
            )
    finally:
        threads_file.close()
        shutil.rmtree(volumes, ignore_errors=True)
    exclusive_file, process_file = BaselineFile(scratch / "exclusive-write.dat"), BaselineFile(scratch / "process.dat")
    try:
        with Writer(log.path, durability="os", exclusive=True, verify_on_open=False) as writer:
            w4_exclusive, exclusive_writes = interleaved_rates(
                [
                    Variant(writer_appends(writer, pool), plan.buffered_appends),
                    Variant(bare_write(exclusive_file, record), plan.buffered_appends),
                ],
                rounds=plan.rounds,
                repeats=plan.repeats,
            )
        w5, process_writes = interleaved_rates(
            [
                Variant(process_mode_appends(log.path, pool), plan.buffered_appends),
                Variant(bare_writes_then_sync(process_file, record), plan.buffered_appends),
            ],
            rounds=plan.rounds,
            repeats=plan.repeats,
        )
    finally:
        exclusive_file.close()
        process_file.close()
    # The mmap mode on a preallocated log of its own, against one os.write per record (neither syncs). One
    # segment holds every timed append: creating a segment writes its capacity in zeros, which is the cost of
    # preallocation (row W1, preallocated segments), not of an append; so is the spare volume, waited for untimed.
    appended = plan.rounds * plan.repeats * plan.buffered_appends * len(record)
    capacity = max(plan.segment_bytes, HEADER_SIZE + appended + appended // 8)
    mapped, mapped_file = scratch / "mapped", BaselineFile(scratch / "mapped-bare.dat")
    try:
        with spare_ready(Writer(mapped, durability="mmap", preallocate=capacity, max_segment_bytes=None)) as writer:
            w6, mapped_writes = interleaved_rates(
                [
                    Variant(writer_appends(writer, pool), plan.buffered_appends),
                    Variant(bare_write(mapped_file, record), plan.buffered_appends),
                ],
                rounds=plan.rounds,
                repeats=plan.repeats,
            )
    finally:
        mapped_file.close()
        shutil.rmtree(mapped, ignore_errors=True)
    measure = "buffered appends/s (durability os)"
    rows.append(compared(Row("W4", measure, "appends/s", **where, versus="bare os.write"), w4, writes, bar=0.5))
    row = Row("W4.floor", "the system calls of an os-mode commit alone", "appends/s", **where, versus="bare os.write")
    row.note = "the ceiling of W4 for any implementation of the commit protocol of spec 6.2"
    rows.append(compared(row, floor, writes))
    row = Row("W4.encode", "encoding a checked record alone, no system call", "appends/s", **where)
    row.versus = "bare os.write"
    row.note = "encode_record alone: what an append would cost if its writes were free"
    rows.append(compared(row, encoding, writes))
    row = Row("W1.exclusive", EXCLUSIVE_SYNC, "appends/s", **where, versus="bare write+fdatasync")
    row.note = "Writer(exclusive=True), durability sync: the lock held from open to close, not taken per commit"
    rows.append(compared(row, w1_exclusive, exclusive_bare, bar=0.85))
    row = Row("W1.exclusive", PREALLOCATED_EXCLUSIVE, "appends/s", **where, versus="bare write+fdatasync")
    row.note = (
        "Writer(exclusive=True, preallocate=...), durability sync, on a log of its own: a sync writes the records "
        "and the header's slot, and no file size"
    )
    rows.append(compared(row, w1_preallocated_exclusive, w1_preallocated_exclusive_bare, bar=0.85))
    measure = f"durable appends/s, {plan.threads} threads, one writer, exclusive, preallocated"
    row = Row("W2.exclusive", measure, "appends/s", **where, versus="bare write+fdatasync")
    row.note = "threads sharing one Writer(exclusive=True, preallocate=...) against one thread's bare loop"
    rows.append(compared(row, w2_exclusive, w2_exclusive_bare, bar=3.5))
    row = Row("W4.exclusive", EXCLUSIVE_OS, "appends/s", **where, versus="bare os.write")
    row.note = "Writer(durability='os', exclusive=True): the lock held from open to close, not taken per commit"
    rows.append(compared(row, w4_exclusive, exclusive_writes))
    row = Row("W5", PROCESS_MODE, "appends/s", **where, versus="bare os.write, one sync at the end")
    row.note = f"{PROCESS_NOTE}; the bare loop does one os.write per record, then one fdatasync, timed together"
    rows.append(compared(row, w5, process_writes, bar=1.0))
    row = Row("W6", MMAP_MODE, "appends/s", **where, versus="bare os.write")
    row.note = MMAP_NOTE
    rows.append(compared(row, w6, mapped_writes, bar=2.0))
    return rows
