"""Every invariant of the crash model, checked on every crash state of a trace.

For each state: materialise it, read it (the reader must not raise, must
not change a byte, must return a prefix of what was written), verify it (no
damage may be reported in P0 to P3), recover it (open a Writer, recording
what recovery does), then check that nothing acknowledged and nothing a
reader saw before the crash is lost, that the log is a prefix of what was
written with no hole and no phantom, stale or resurrected record, that the
last segment holds nothing beyond its commit point and its predecessor is
sealed, that recovery published nothing out of order (next generation,
never backwards, records synced first), that a second open changes
nothing, and that appending afterwards works.

Sampled states also get their recovery crashed (the states of recovery's
own trace) and a second generation (more appends after recovery, crashed
again).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from logtools import tree_digest

from openbinlog import BinlogError, NotALogError, Reader, Writer, verify
from openbinlog._format import SEGMENT_NAME, SLOT_OFFSETS, SLOT_SIZE
from openbinlog._fs import OsFileSystem
from openbinlog._recovery import is_temp_name
from openbinlog._segment import SegmentHeaderInfo, active_commit, decode_slot, parse_header
from openbinlog._segment_file import require_log_directory

from .crash_states import DEFAULT_CAP, SECTOR, scenario
from .disk_image import Image
from .fs_trace import Create, Link, Lock, Mkdir, Pwrite, Trace, Truncate, Unlink
from .recording_fs import RecordingFileSystem
from .workloads import LOG, deterministic_clock, run, second_generation

Record = tuple[int, bytes, int]  # index, payload, asqn
StateKey = tuple[str, int, int, int]  # fingerprint, acknowledged, records seen, what was written
APPENDED_AFTER = b"appended after recovery"
# Modes that publish commit points without a sync before: os, process (its commits by size or delay) and mmap.
UNSYNCED_COMMITS = ("os", "process", "mmap")


class ScratchFileSystem(OsFileSystem):
    """The real files of a scratch copy, without syncs: nothing here must survive a power loss."""

    def fdatasync(self, fd: int) -> None:
        pass

    def pwrite_synced(self, fd: int, data: bytes, offset: int) -> None:
        self.pwrite(fd, data, offset)

    def fsync_dir(self, path: str) -> None:
        pass


def log_digest(root: Path) -> dict[str, str]:
    """The files of the log; temporary files (spec 2.1) are not part of it."""
    return {name: digest for name, digest in tree_digest(root).items() if not is_temp_name(Path(name).name)}


def describe(exc: BaseException) -> str:
    if isinstance(exc, BinlogError):
        return f"{exc.error_class} (log {exc.log}, offset {exc.offset}, index {exc.index}): {exc.message}"
    return f"{type(exc).__name__}: {exc}"


def is_a_log(log: Path) -> bool:
    """A crash before LOCK or segment 1 had a durable name leaves a directory that is not a log yet.

    Nothing was acknowledged in it, so readers that say "not a log" there lose nothing.
    """
    try:
        require_log_directory(str(log))
    except NotALogError:
        return False
    return True


def read_log(log: Path) -> list[Record]:
    if not is_a_log(log):
        return []
    with Reader(log) as reader:
        return [(entry.index, entry.payload, entry.asqn) for entry in reader]


def log_problems(
    records: Sequence[Record],
    expected: Sequence[tuple[bytes, int]],
    *,
    acked: int = 0,
    keep: Iterable[Sequence[Record]] = (),
) -> list[str]:
    """A prefix of what was written, no hole, nothing acknowledged or seen before lost."""
    problems = []
    for position, (index, data, asqn) in enumerate(records, start=1):
        if index != position:
            problems.append(f"hole: record {position} of the log carries index {index}")
            break
        if position > len(expected):
            problems.append(f"phantom record at index {index}: nothing was written there")
            break
        if (data, asqn) != expected[position - 1]:
            problems.append(f"stale or phantom record at index {index}: {data[:24]!r} asqn {asqn}")
            break
    if len(records) < acked:
        problems.append(f"acknowledged record lost: the log ends at index {len(records)}, {acked} were acknowledged")
    for seen in keep:
        if list(records[: len(seen)]) != list(seen):
            problems.append(f"the commit point moved back: {len(seen)} records were readable, now {len(records)}")
            break
    return problems


def segment_problems(log: Path) -> list[str]:
    """After recovery: nothing but zeros beyond the last commit point, the last one's predecessor sealed (W-30).

    Older segments may stay finished but unsealed (a seal lost with a failed
    sync): readers compute their end from the successor (spec 8.4).
    """
    problems = []
    logs = sorted(int(match[1]) for path in log.iterdir() if (match := SEGMENT_NAME.match(path.name)))
    for number in logs:
        data = (log / f"{number:08d}.dat").read_bytes()
        try:
            header = parse_header(data, log=number)
            assert isinstance(header, SegmentHeaderInfo)
            commit = active_commit(data, base_index=header.base_index, log=number)
        except (BinlogError, AssertionError) as exc:
            problems.append(f"segment {number} has no valid version 2 header after recovery: {exc}")
            continue
        if len(logs) > 1 and number == logs[-2] and commit.next_log_number != number + 1:
            problems.append(f"segment {number} precedes the last segment but was not sealed by recovery")
        if number == logs[-1] and any(data[commit.commit_offset :]):
            problems.append(f"segment {number} holds non-zero bytes beyond its commit point {commit.commit_offset}")
    return problems


def publication_problems(trace: Trace) -> list[str]:
    """Each published slot: next generation, right place, never backwards, its records durable, its successor too."""
    problems = []
    appending = False  # under the append lock: a writer that shares its syncs publishes
    for point in trace.points():
        op = point.in_flight
        if isinstance(op, Lock) and op.append:
            appending = not op.unlock
        if not (isinstance(op, Pwrite) and op.offset in SLOT_OFFSETS and len(op.data) == SLOT_SIZE):
            continue
        content = point.volatile.files.get(op.inode, b"")
        new = decode_slot(op.data)
        number = int.from_bytes(content[16:20], "big")
        where = f"@{point.position} segment {number}"
        if new is None:
            problems.append(f"{where}: published a slot that fails its own checksum")
            continue
        slots = [decode_slot(content[at : at + SLOT_SIZE]) for at in SLOT_OFFSETS]
        old = max((slot for slot in slots if slot is not None), key=lambda slot: slot.generation, default=None)
        if old is None:
            continue
        # One more than the active generation when its slot is durable; otherwise two more, over it (W-42),
        # but for writers of the os mode that do not hold the lock for their whole life, which cannot know.
        durable_header = point.durable.files.get(op.inode, b"")
        active = SLOT_OFFSETS[old.generation % 2]
        if durable_header[active : active + SLOT_SIZE] == content[active : active + SLOT_SIZE]:
            # A writer that shares its syncs knows the slot durable only when it read it before its own
            # sync (W-44): otherwise it writes over it, keeping the other slot, which is durable too.
            steps: tuple[int, ...] = (1, 2) if appending else (1,)
        else:
            steps = (1, 2) if trace.durability == "os" else (2,)
        if new.generation - old.generation not in steps or SLOT_OFFSETS[new.generation % 2] != op.offset:
            problems.append(f"{where}: generation {new.generation} after {old.generation} at offset {op.offset}")
        # W-42: a publication torn by a power loss must leave a valid durable slot. (Writers that do not hold
        # the lock for their whole life cannot know what is durable: the os mode's shared writers.)
        other = SLOT_OFFSETS[(new.generation + 1) % 2]
        if (
            trace.durability != "os"
            and len(durable_header) >= other + SLOT_SIZE
            and decode_slot(durable_header[other : other + SLOT_SIZE]) is None
        ):
            problems.append(f"{where}: generation {new.generation} written while the other slot is not durable")
        if new.commit_offset < old.commit_offset or new.next_index < old.next_index:
            problems.append(f"{where}: the commit point moved back from {old.commit_offset} to {new.commit_offset}")
        durable = point.durable.files.get(op.inode, b"")
        published = slice(old.commit_offset, new.commit_offset)
        if trace.durability not in UNSYNCED_COMMITS and (
            len(durable) < new.commit_offset or durable[published] != content[published]
        ):
            problems.append(f"{where}: commit point {new.commit_offset} published before its records were synced")
        successor = f"{LOG}/{number + 1:08d}.dat"
        if new.next_log_number and successor not in point.durable.reachable():
            problems.append(f"{where}: sealed before the directory entry of its successor was synced")
    return problems


@dataclass
class Sampling:
    """How often a checked state also gets its recovery crashed, or a second generation."""

    recovery_crash_every: int = 0  # 0: never
    second_generation_every: int = 0
    nested_cap: int = 3  # crash states per point of a nested trace


@dataclass
class Violation:
    model: str
    workload: str
    where: str
    message: str

    def __str__(self) -> str:
        return f"[{self.model}] {self.workload} {self.where}: {self.message}"


@dataclass
class ModelResult:
    states: int = 0
    violating_states: int = 0
    sampled_points: int = 0
    violations: list[Violation] = field(default_factory=list)  # every problem of every violating state

    def record(self, model: str, workload: str, where: str, problems: Sequence[str]) -> None:
        """One checked state (or trace, or trial) and what it broke."""
        self.violating_states += bool(problems)
        self.violations += [Violation(model, workload, where, problem) for problem in problems]


@dataclass(frozen=True)
class Context:
    expected: Sequence[tuple[bytes, int]]
    acked: int
    keep: tuple[Sequence[Record], ...]  # what readers saw before the crash

    def key(self, image: Image) -> StateKey:
        """Identifies a check: the same bytes under the same expectations give the same verdict."""
        return (image.fingerprint(), self.acked, sum(map(len, self.keep)), hash(tuple(self.expected)))


class CrashChecker:
    """Runs the invariants over crash states; results accumulate per model in ``results``."""

    def __init__(
        self, scratch: Path, workload: str, writer_options: dict[str, Any], sampling: Sampling | None = None
    ) -> None:
        self.scratch = scratch
        self.workload = workload
        self.writer_options = writer_options
        self.sampling = sampling or Sampling()
        self.results: dict[str, ModelResult] = {}
        self._verdicts: dict[StateKey, list[str]] = {}
        self._readable: dict[str, list[Record]] = {}
        self._settled: dict[str, tuple[list[Record] | None, list[str]]] = {}
        self._nested_done: set[str] = set()

    def result(self, label: str) -> ModelResult:
        return self.results.setdefault(label, ModelResult())

    def run(
        self,
        trace: Trace,
        models: Sequence[str],
        *,
        start: int = 0,
        granularity: int = SECTOR,
        cap: int = DEFAULT_CAP,
        label: str = "",
        depth: int = 0,
        keep: tuple[Sequence[Record], ...] = (),
    ) -> None:
        for problem in publication_problems(trace):
            self.result("trace").record("trace", self.workload, label, [problem])
        seen: set[tuple[str, str, int, int, int]] = set()
        for point in trace.points(start):
            readable = self._readable_now(point.volatile, depth, f"{label}@{point.position}")
            context = Context(trace.expected, point.acked, (*keep, readable))
            for model in models:
                result = self.result(f"{label}{model}")
                plan = scenario(point, model, granularity=granularity)
                picked, sampled = plan.choices(cap, seed=point.position)
                result.sampled_points += sampled
                for choice in picked:
                    image, description = plan.build(choice)
                    key = context.key(image)
                    if (model, *key) in seen:
                        continue
                    seen.add((model, *key))
                    result.states += 1
                    where = f"{label}@{point.position} {description}"
                    result.record(model, self.workload, where, self._verdict(key, image, context, depth, model, where))

    def check_state(self, image: Image, context: Context, *, model: str, where: str) -> list[str]:
        """The problems of one crash state (no nested crashes); cached by its bytes and context."""
        return self._verdict(context.key(image), image, context, 1, model, where)

    def readable(self, image: Image, where: str) -> list[Record]:
        """What a reader of the live log sees in ``image`` (the page cache at some point)."""
        return self._readable_now(image, 1, where)

    # -- one state --------------------------------------------------------------

    def _readable_now(self, image: Image, depth: int, where: str) -> list[Record]:
        """What a reader of the live log could see at this point (the page cache)."""
        key = image.fingerprint()
        if key not in self._readable:
            root = self._fresh(f"live{depth}")
            image.materialise(root)
            try:
                self._readable[key] = read_log(root / LOG)
            except Exception as exc:
                self.result("live").record(
                    "live", self.workload, where, [f"a reader of the live log raised {describe(exc)}"]
                )
                self._readable[key] = []
        return self._readable[key]

    def _fresh(self, name: str) -> Path:
        root = self.scratch / name
        root.mkdir(parents=True, exist_ok=True)
        return root

    def _selected(self, key: StateKey, every: int, kind: str) -> bool:
        """Seeded by the state's bytes; the first state that can be is always selected, so every run has some."""
        if every <= 0:
            return False
        first = kind not in self._nested_done
        if first or int(key[0][:8], 16) % every == 0:
            self._nested_done.add(kind)
            return True
        return False

    def _verdict(self, key: StateKey, image: Image, context: Context, depth: int, model: str, where: str) -> list[str]:
        if key not in self._verdicts:
            self._verdicts[key] = self._check(key, image, context, depth, model, where)
        return self._verdicts[key]

    def _writer(self, log: Path, fs: OsFileSystem | None = None) -> Writer:
        return Writer(log, fs=fs or ScratchFileSystem(), clock_us=deterministic_clock(), **self.writer_options)

    def _check(self, key: StateKey, image: Image, context: Context, depth: int, model: str, where: str) -> list[str]:
        root = self._fresh(f"state{depth}")
        image.materialise(root)
        log = root / LOG
        problems: list[str] = []

        # A reader of the crashed log: never raises, never writes, sees a prefix.
        untouched = tree_digest(root)
        before: list[Record] = []
        try:
            before = read_log(log)
            problems += [f"before recovery: {p}" for p in log_problems(before, context.expected)]
            if is_a_log(log) and (damage := verify(log).damage):
                problems.append(f"verify reported damage in a crash state: {damage[0]}")
        except Exception as exc:
            problems.append(f"reader raised on a crash state: {describe(exc)}")
        if tree_digest(root) != untouched:
            problems.append("a reader modified the directory")

        # Recovery, recorded so that its own crash states can be checked.
        recorder = RecordingFileSystem(root, durability=self.writer_options.get("durability", "sync"))
        try:
            self._writer(log, recorder).close()
        except Exception as exc:
            return [*problems, f"recovery failed: {describe(exc)}"]
        problems += [f"recovery: {p}" for p in publication_problems(recorder.trace)]

        # Many crash states recover to the same bytes: what follows depends on those bytes alone.
        recovered = Image.load(root)
        fingerprint = recovered.fingerprint()
        if fingerprint not in self._settled:
            self._settled[fingerprint] = self._check_recovered(root, log)
        after, settled_problems = self._settled[fingerprint]
        problems += settled_problems
        if after is None:
            return problems
        problems += log_problems(after, context.expected, acked=context.acked, keep=(*context.keep, before))

        if (
            depth == 0
            and _mutates(recorder.trace)
            and self._selected(key, self.sampling.recovery_crash_every, "recovery")
        ):
            trace = recorder.trace
            trace.expected, trace.base_acked = list(context.expected), context.acked
            self.run(
                trace,
                ("P0", "P1"),
                cap=self.sampling.nested_cap,
                label="recovery-crash/",
                depth=1,
                keep=(*context.keep, before),
            )
        if depth == 0 and self._selected(key, self.sampling.second_generation_every, "generation"):
            self._second_generation(recovered, after, model, where)
        return problems

    def _check_recovered(self, root: Path, log: Path) -> tuple[list[Record] | None, list[str]]:
        """A recovered log: readable, clean, idempotent to reopen, and appendable."""
        try:
            after = read_log(log)
        except Exception as exc:
            return None, [f"reader raised after recovery: {describe(exc)}"]
        problems = segment_problems(log)
        settled = log_digest(root)
        try:
            with self._writer(log) as writer:
                if log_digest(root) != settled:
                    problems.append("recovery is not idempotent: a second open changed the files")
                ref = writer.append(APPENDED_AFTER)
            final = read_log(log)
            if ref.index != len(after) + 1 or final != [*after, (len(after) + 1, APPENDED_AFTER, -1)]:
                problems.append(f"appending after recovery went wrong: ref {ref}, log of {len(final)} records")
        except Exception as exc:
            problems.append(f"reopening and appending after recovery failed: {describe(exc)}")
        return after, problems

    def _second_generation(self, recovered: Image, after: list[Record], model: str, where: str) -> None:
        """Append more after recovery, then crash that under the same model."""
        copy = self._fresh("generation2")
        recovered.materialise(copy)
        try:
            trace = run(
                copy,
                second_generation(len(after) + 1),
                writer_options=self.writer_options,
                existing=[(data, asqn) for _index, data, asqn in after],
            )
        except Exception as exc:
            self.result("second-generation").record(
                model, self.workload, where, [f"second generation failed: {describe(exc)}"]
            )
            return
        self.run(trace, (model,), cap=self.sampling.nested_cap, label="second-generation/", depth=1)


def _mutates(trace: Trace) -> bool:
    return any(isinstance(op, Pwrite | Truncate | Create | Link | Unlink | Mkdir) for op in trace.ops)


def power_loss_problems(log: Path, expected: list[tuple[bytes, int]], acked: int) -> list[str]:
    """A power loss in a mode that publishes without a sync: what a flush acknowledged is read, and whatever
    else the reader meets is an expected prefix or damage reported with its place, never a silent wrong result."""
    if not is_a_log(log):
        return [f"{acked} records were acknowledged, the directory is no log"] if acked else []
    untouched = tree_digest(log.parent)
    records: list[tuple[int, bytes, int]] = []
    problems: list[str] = []
    try:
        with Reader(log) as reader:
            records.extend((entry.index, entry.payload, entry.asqn) for entry in reader)
    except BinlogError as exc:
        if exc.log is None or exc.offset is None:
            problems.append(f"damage reported without its place: {describe(exc)}")
        if not verify(log).damage:
            problems.append(f"the reader reported {describe(exc)}, verify reported nothing")
    except Exception as exc:
        problems.append(f"reader raised an untyped error: {describe(exc)}")
    problems += log_problems(records, expected, acked=acked)
    if tree_digest(log.parent) != untouched:
        problems.append("a reader modified the directory")
    return problems


def power_loss_results(trace: Trace, workload: str, scratch: Path, cap: int = 16) -> dict[str, ModelResult]:
    """``power_loss_problems`` over the P1 and P2 states of every point of ``trace`` (``cap`` a point)."""
    results = {model: ModelResult() for model in ("P1", "P2")}
    for point in trace.points():
        for model, result in results.items():
            plan = scenario(point, model)
            picked, sampled = plan.choices(cap, seed=point.position)
            result.sampled_points += sampled
            for choice in picked:
                image, description = plan.build(choice)
                shutil.rmtree(scratch, ignore_errors=True)
                scratch.mkdir(parents=True)
                image.materialise(scratch)
                result.states += 1
                problems = power_loss_problems(scratch / LOG, trace.expected, point.acked)
                result.record(model, workload, f"@{point.position} {description}", problems)
    return results
