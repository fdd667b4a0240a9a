"""Workloads: what a writer is asked to do while its operations are recorded.

A workload is a list of steps: append one record, append several in one
commit, or cut over. Running it through a ``RecordingFileSystem`` gives a
trace whose ``expected`` lists every record attempted, by index, and whose
``ack`` marks say which were acknowledged when.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from openbinlog import NO_ASQN, Writer

from .fs_trace import Trace
from .recording_fs import RecordingFileSystem

LOG = "log"
Record = tuple[bytes, int]  # payload, asqn


@dataclass(frozen=True)
class Append:
    records: tuple[Record, ...]  # one record: Writer.append; several: Writer.append_many
    writer: int = 0  # which of the workload's writers (each with its own lock descriptor, as processes have)


@dataclass(frozen=True)
class Cutover:
    writer: int = 0


@dataclass(frozen=True)
class Flush:
    """``Writer.flush()``: in the process mode, what acknowledges the appends before it (W-40)."""

    writer: int = 0


@dataclass(frozen=True)
class Together:
    """Appends of different writers at once, each in a thread of its own, as writers of several processes
    share syncs (spec 6.8): they write their records in the order listed, then their syncs complete in
    ``sync_order`` (positions in ``appends``), each append returning before the next sync completes; with
    ``syncs_first``, every sync completes before the first of them publishes, in the same order."""

    appends: tuple[Append, ...]
    sync_order: tuple[int, ...]
    syncs_first: bool = False


Step = Append | Cutover | Flush | Together


@dataclass
class Workload:
    name: str
    steps: list[Step]
    writer_options: dict[str, Any] = field(default_factory=dict)
    # Crash points before this mark repeat a shorter workload's: enumerate from it.
    start_mark: str | None = None
    models: tuple[str, ...] = ("P0", "P1", "P2", "P3")
    # Models enumerated only with --full (``make crash-full``): the default run checks the others.
    full_only_models: tuple[str, ...] = ()
    # Enumerated only with --full: the default workloads reach crash points of the same kinds.
    full_only: bool = False
    # Mark each append acknowledged when it returns, also in the modes where only flush() makes it durable:
    # what a process crash must keep (the mmap mode).
    acks_at_append: bool = False

    @property
    def records(self) -> int:
        appends = [a for step in self.steps for a in (step.appends if isinstance(step, Together) else (step,))]
        return sum(len(step.records) for step in appends if isinstance(step, Append))

    def for_run(self, full: bool) -> Workload:
        """The workload as a run enumerates it: without its ``full_only_models`` unless ``full``."""
        if full or not self.full_only_models:
            return self
        return replace(self, models=tuple(m for m in self.models if m not in self.full_only_models))


def payload(index: int, size: int, generation: int = 1) -> bytes:
    """A payload that names its index and generation, padded to ``size`` bytes."""
    tag = f"g{generation}r{index}:".encode()
    return (tag * (size // len(tag) + 1))[:size]


def asqn_for(index: int) -> int:
    """Every third record carries an asqn, so its order is checked across cutovers."""
    return 10 * index if index % 3 == 0 else NO_ASQN


def singles(first: int, sizes: Sequence[int], generation: int = 1) -> list[Step]:
    return [
        Append(((payload(index, size, generation), asqn_for(index)),)) for index, size in enumerate(sizes, start=first)
    ]


def deterministic_clock() -> Callable[[], int]:
    ticks = itertools.count(1_700_000_000_000_000, 1000)
    return lambda: next(ticks)


def run(
    root: Path,
    steps: Sequence[Step],
    *,
    writer_options: dict[str, Any],
    existing: Sequence[Record] = (),
    fs: RecordingFileSystem | None = None,
    acks_at_append: bool = False,
) -> Trace:
    """Run ``steps`` on the log at ``root/log``, recording every operation.

    In the process and mmap modes an append is acknowledged by the ``Flush`` after it, unless
    ``acks_at_append``."""
    recorder = fs or RecordingFileSystem(root, durability=writer_options.get("durability", "sync"))
    trace = recorder.trace
    trace.expected = list(existing)
    trace.base_acked = len(existing)
    clock = deterministic_clock()
    writers: dict[int, Writer] = {}
    # Appends acknowledged by flush(): durable only then.
    buffered = writer_options.get("durability") in ("process", "mmap") and not acks_at_append
    last_index = 0
    try:
        for step in steps:
            if isinstance(step, Together):
                for together in step.appends:
                    if together.writer not in writers:
                        writers[together.writer] = Writer(root / LOG, fs=recorder, clock_us=clock, **writer_options)
                _run_together(step, recorder, writers)
                continue
            if step.writer not in writers:
                writers[step.writer] = Writer(root / LOG, fs=recorder, clock_us=clock, **writer_options)
            writer = writers[step.writer]
            if isinstance(step, Cutover):
                recorder.mark("cutover")
                writer.cutover()
                continue
            if isinstance(step, Flush):
                writer.flush()
                if last_index:
                    recorder.mark("ack", last_index)
                continue
            trace.expected += step.records
            if len(step.records) == 1:
                (data, asqn), *_ = step.records
                refs = [writer.append(data, asqn=asqn)]
            else:
                refs = writer.append_many(step.records)
            last_index = refs[-1].index
            if not buffered:
                recorder.mark("ack", last_index)
    finally:
        for writer in writers.values():
            writer.close()
    return trace


TOGETHER_TIMEOUT = 20.0  # seconds a thread of a Together step may take to reach its sync, or to return


class SyncGate:
    """Holds each thread of a ``Together`` step at its first sync, and then at the append lock it takes to
    publish, until the step lets it go."""

    def __init__(self, threads: int) -> None:
        self._local = threading.local()
        self.arrived = [threading.Event() for _ in range(threads)]
        self.go = [threading.Event() for _ in range(threads)]
        self.publishing = [threading.Event() for _ in range(threads)]
        self.publish = [threading.Event() for _ in range(threads)]

    def enter(self, who: int) -> None:
        self._local.who = who

    def at_sync(self) -> None:
        who = getattr(self._local, "who", None)
        if who is not None and not self.arrived[who].is_set():
            self.arrived[who].set()
            self._wait(self.go[who], who)

    def at_append_lock(self) -> None:
        who = getattr(self._local, "who", None)
        if who is not None and self.arrived[who].is_set() and not self.publishing[who].is_set():
            self.publishing[who].set()
            self._wait(self.publish[who], who)

    def release(self, who: int) -> None:
        for event in (self.arrived[who], self.go[who], self.publishing[who], self.publish[who]):
            event.set()

    @staticmethod
    def _wait(event: threading.Event, who: int) -> None:
        if not event.wait(TOGETHER_TIMEOUT):
            raise RuntimeError(f"writer thread {who} was never let through")


def _run_together(step: Together, recorder: RecordingFileSystem, writers: dict[int, Writer]) -> None:
    gate = SyncGate(len(step.appends))
    failures: list[BaseException] = []

    def append(who: int, records: tuple[Record, ...], writer: Writer) -> None:
        gate.enter(who)
        try:
            refs = writer.append_many(records)
            recorder.mark("ack", refs[-1].index)  # before the step lets the next sync complete
        except BaseException as exc:
            failures.append(exc)
            gate.release(who)

    def wait(event: threading.Event, who: int) -> None:
        if not event.wait(TOGETHER_TIMEOUT) or failures:
            raise failures[0] if failures else RuntimeError(f"writer thread {who} never got there")

    recorder.gate = gate
    threads = []
    try:
        for who, together in enumerate(step.appends):
            recorder.trace.expected += together.records  # written in this order: indexes follow it
            thread = threading.Thread(target=append, args=(who, together.records, writers[together.writer]))
            thread.start()
            threads.append(thread)
            wait(gate.arrived[who], who)
        for who in step.sync_order:
            gate.go[who].set()
            if step.syncs_first:
                wait(gate.publishing[who], who)
            else:
                gate.publish[who].set()
                threads[who].join(TOGETHER_TIMEOUT)
        for who in step.sync_order:
            gate.publish[who].set()
            threads[who].join(TOGETHER_TIMEOUT)
            if failures or threads[who].is_alive():
                raise failures[0] if failures else RuntimeError(f"writer thread {who} never returned")
    finally:
        recorder.gate = None
        for who in range(len(threads)):
            gate.release(who)
        for thread in threads:
            thread.join(TOGETHER_TIMEOUT)


# Record sizes: mostly small (byte tearing is checked at every byte); the log crosses 512 at record 4.
SMALL_SIZES = (5, 0, 17, 150, 9, 3, 31, 1, 12, 2)
# Where the default run cuts over: first, where the log crosses 512, before and after the last record. The
# cutovers elsewhere add crash points of the same kinds; --full enumerates them all.
DEFAULT_CUTS = (0, 4, 9, 10)
# Zero-filled space and the exclusive writer's syncs: P0 to P2 reach what these variants add, and P3 (a
# write torn at every byte) costs most; it runs with --full.
TORN_WITH_FULL_ONLY = ("P3",)


def small_workloads() -> list[Workload]:
    """Every workload of up to 10 records with at most one cutover, anywhere.

    A workload of n records is a prefix of the 10-record one, so its crash
    points are among those of the longer trace; a cutover after j records
    adds the points from the cutover on. Variants: batches, preallocated
    segments (cutovers forced by capacity), two writers, strict mode, and the
    os mode (process crashes only). Without --full, the cutover goes at
    ``DEFAULT_CUTS`` only, and the preallocated and exclusive variants run
    without P3.
    """
    workloads = [Workload("sync", singles(1, SMALL_SIZES))]
    for cut in range(len(SMALL_SIZES) + 1):
        steps = [*singles(1, SMALL_SIZES[:cut]), Cutover(), *singles(cut + 1, SMALL_SIZES[cut:])]
        workloads.append(
            Workload(f"sync-cutover-after-{cut}", steps, start_mark="cutover", full_only=cut not in DEFAULT_CUTS)
        )
    batch = [(payload(i, size), asqn_for(i)) for i, size in enumerate(SMALL_SIZES, start=1)]
    workloads.append(
        Workload(
            "batches",
            [
                Append(tuple(batch[0:3])),
                Append(tuple(batch[3:4])),
                Cutover(),
                Append(tuple(batch[4:8])),
                Append(tuple(batch[8:10])),
            ],
        )
    )
    workloads.append(
        Workload("preallocated", singles(1, SMALL_SIZES), {"preallocate": 768}, full_only_models=TORN_WITH_FULL_ONLY)
    )
    # Two writers on one log, each seeing the other's commits and cutover (W-16).
    two = singles(1, SMALL_SIZES)
    two = [Append(step.records, writer=n % 2) for n, step in enumerate(two) if isinstance(step, Append)]
    workloads.append(Workload("two-writers", [*two[:4], Cutover(writer=1), *two[4:]]))
    # The group mode gathers appenders before its sync: the same guarantee as sync (spec 6.5).
    workloads.append(Workload("group", singles(1, SMALL_SIZES), {"durability": "group", "group_delay": 0.0005}))
    # The os mode does not sync: it promises to survive a process crash, not a power loss.
    workloads.append(Workload("os", singles(1, SMALL_SIZES), {"durability": "os"}, models=("P0",)))
    workloads.append(
        Workload(
            "strict", [*singles(1, SMALL_SIZES[:5]), Cutover(), *singles(6, SMALL_SIZES[5:])], {"durability": "strict"}
        )
    )
    # An exclusive writer skips the checks of each batch after its first (W-39).
    workloads.append(
        Workload(
            "exclusive",
            [*singles(1, SMALL_SIZES[:6]), Cutover(), *singles(7, SMALL_SIZES[6:])],
            {"exclusive": True},
            full_only_models=TORN_WITH_FULL_ONLY,
        )
    )
    # Its batches sync their records alone (6.2 step 8), in zero-filled space too, where the cutover is the
    # capacity's: the slot it publishes over stays unsynced until the cutover or close (W-42).
    workloads.append(
        Workload(
            "exclusive-preallocated",
            singles(1, SMALL_SIZES[:6]),
            {"exclusive": True, "preallocate": 512},
            full_only_models=TORN_WITH_FULL_ONLY,
        )
    )
    # The process mode: appends wait in the buffer; flush() commits, syncs and acknowledges (W-40).
    buffered = singles(1, SMALL_SIZES)
    workloads.append(
        Workload(
            "process",
            [*buffered[:3], Flush(), *buffered[3:5], Cutover(), *buffered[5:8], Flush(), *buffered[8:], Flush()],
            {"durability": "process", "flush_interval": 3600},
        )
    )
    workloads.append(
        Workload(
            "process-preallocated",
            [*buffered[:6], Flush(), *buffered[6:], Flush()],
            {"durability": "process", "flush_interval": 3600, "preallocate": 512},
            full_only_models=TORN_WITH_FULL_ONLY,
        )
    )
    # Commits by size publish without a sync, as the os mode does: process crashes only.
    workloads.append(
        Workload(
            "process-small-buffer",
            [*buffered[:5], Flush(), *buffered[5:], Flush()],
            {"durability": "process", "flush_interval": 3600, "buffer_bytes": 60},
            models=("P0",),
        )
    )
    # The mmap mode: each append is published through the mapping, and flush() syncs it (W-41). Its stores
    # are recorded as writes without a sync: each append's record, slot and mirror fields in their order.
    # A process crash must keep every append that returned, flushed or not (P3: a store torn at any byte);
    # a power loss, what a flush acknowledged (test_enumerated_crashes, as the os mode promises no more).
    mapped = [*buffered[:4], Flush(), *buffered[4:], Flush()]
    workloads.append(
        Workload("mmap", mapped, {"durability": "mmap", "preallocate": 512}, models=("P0", "P3"), acks_at_append=True)
    )
    return workloads


def shared_workloads() -> list[Workload]:
    """Writers that share syncs (spec 6.8), interleaved: two and three writers write one after the other, then
    their syncs complete in every order, over a cutover, in a preallocated segment and in the strict mode."""
    sizes = (5, 0, 17, 150, 9, 3, 31, 1, 12, 2, 40, 7)
    records = [(payload(index, size), asqn_for(index)) for index, size in enumerate(sizes, start=1)]

    def one(index: int, writer: int) -> Append:
        return Append((records[index - 1],), writer=writer)

    two = [
        one(1, 0),
        one(2, 1),
        Together((one(3, 0), one(4, 1)), (1, 0)),  # the later writer syncs and publishes first
        Together((one(5, 1), one(6, 0)), (0, 1), syncs_first=True),  # the second publishes over an unsynced slot
        Cutover(writer=0),
        one(7, 1),  # finds the successor: its batch goes by 6.2, under the whole lock
        one(8, 0),
        Together((one(9, 0), Append(tuple(records[9:11]), writer=1)), (1, 0)),
        one(12, 1),
    ]
    three = [
        one(1, 0),
        one(2, 1),
        one(3, 2),
        Together((one(4, 0), one(5, 1), one(6, 2)), (2, 0, 1)),
        Together((one(7, 2), one(8, 1), one(9, 0)), (1, 2, 0), syncs_first=True),
        Together((one(10, 1), one(11, 0), one(12, 2)), (0, 1, 2)),
    ]
    return [
        Workload("shared-two", two),
        Workload("shared-three", three),
        # Zero-filled space: P3 (a write torn at every byte) adds little to the other workloads' and costs most.
        # These two with --full only (the SIGKILL test of sharing writer processes runs every mode).
        Workload("shared-preallocated", three, {"preallocate": 1024}, models=("P0", "P1", "P2"), full_only=True),
        Workload("shared-strict", two, {"durability": "strict"}, models=("P0", "P1", "P2"), full_only=True),
    ]


def large_workload(records: int = 60) -> Workload:
    """Enough records to grow a segment past several 4 KiB pages, with batches and a cutover."""
    sizes = [(index * 37) % 290 for index in range(1, records + 1)]
    steps: list[Step] = []
    index = 1
    while index <= records:
        if index == records // 2:
            steps.append(Cutover())
        width = 2 if index % 7 == 0 and index < records else 1
        steps.append(Append(tuple((payload(i, sizes[i - 1]), asqn_for(i)) for i in range(index, index + width))))
        index += width
    return Workload(f"sync-{records}-records", steps)


def second_generation(first_index: int) -> list[Step]:
    """What a writer appends after recovery: singles, a batch, a cutover."""
    return [
        Append(((payload(first_index, 20, 2), NO_ASQN),)),
        Append(((payload(first_index + 1, 7, 2), NO_ASQN), (payload(first_index + 2, 90, 2), 10**9))),
        Cutover(),
        Append(((payload(first_index + 3, 3, 2), NO_ASQN),)),
    ]
