"""Writer processes that share their syncs (spec 6.8), side by side: killed at random, or one failing a sync.

Each child process appends through its own ``Writer(directory)``, which
writes under the append lock, syncs holding no lock and publishes under the
append lock again. A child reports a line ``ack INDEX N MARKS`` only once
the append of its N-th payload returned with that index; MARKS says which
path of 6.8 the commit took (``s`` shared, ``w`` the whole lock, ``c`` it
wrote again records of other writers not yet published, ``v`` another
writer's publication already covered its records, ``2`` it published g+2
because another writer published between its write and its publish, ``x``
it failed inside the shared commit).

Payloads name the child (a new number for every process started) and the
sequence number of the payload in that child, so that a record duplicated,
lost, out of order or written by nobody is seen.
"""

from __future__ import annotations

import os
import random
import select
import signal
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import ClassVar

import pytest
from logtools import FaultyFileSystem

from openbinlog import BinlogIOError, Writer, WriterFailedError, _accel, verify
from openbinlog._commit import OpenSegment
from openbinlog._fs import SHARED_SYNC_SUPPORTED
from openbinlog._group_commit import Ticket
from openbinlog._ref import Ref
from openbinlog._segment import CommitState

from .checker import describe, read_log
from .kill_child import child_payload, parse_payload
from .test_sigkill import fork_running

pytestmark = pytest.mark.skipif(
    not SHARED_SYNC_SUPPORTED, reason="writers share syncs only with open file description locks (spec 6.8)"
)

SHARED_DURABILITIES = ("sync", "group", "strict")


class _ObservedWriter(Writer):
    """A writer that records which path of spec 6.8 its last commit took (the MARKS of an ``ack`` line)."""

    marks: set[str]
    committing: ClassVar[set[str]] = set()  # the marks of the commit under way, for the compiled batch to add to

    def _commit_shared(self, batch: list[Ticket], done: list[tuple[Ticket, Ref]]) -> bool:
        self.marks = set()
        _ObservedWriter.committing = self.marks
        try:
            shared = super()._commit_shared(batch, done)
        except BaseException:
            self.marks.add("x")
            raise
        self.marks.add("s" if shared else "w")
        return shared

    def _rewrite_as_read(
        self, segment: OpenSegment, start: int, end: int, then: bytes = b"", *, header: bytes | None = None
    ) -> None:
        if then and end > start:
            self.marks.add("c")
        super()._rewrite_as_read(segment, start, end, then, header=header)

    def _publish_shared(self, segment: OpenSegment, seen: int, end: CommitState) -> None:
        current = self._read_commit(segment)
        if current.commit_offset >= end.commit_offset:
            self.marks.add("v")
        elif current.generation != seen:
            self.marks.add("2")
        super()._publish_shared(segment, seen, end)


@pytest.fixture
def observed(batch_code: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """``batch_code``, with the compiled batch's outcome added to the MARKS of the commit under way."""
    if batch_code == "pure":
        return batch_code
    write, publish = _accel.shared_write, _accel.shared_publish
    assert write is not None and publish is not None

    def observed_write(*arguments: object) -> tuple[int, ...] | None:
        written = write(*arguments)
        if written is not None and written[2] > written[1]:  # its records start beyond others' written again
            _ObservedWriter.committing.add("c")
        return written

    def observed_publish(*arguments: object) -> int:
        code = publish(*arguments)
        if mark := {2: "v", 3: "2"}.get(code):  # covered by another's publication; published over (W-44)
            _ObservedWriter.committing.add(mark)
        return code

    monkeypatch.setattr(_accel, "shared_write", observed_write)
    monkeypatch.setattr(_accel, "shared_publish", observed_publish)
    return batch_code


def _say(out_fd: int, line: str) -> None:
    os.write(out_fd, f"{line}\n".encode())


def _append(writer: _ObservedWriter, child: int, n: int, count: int) -> list[Ref]:
    """The child's payloads from ``n + 1`` on: every fourth append is a batch of two."""
    if count % 4 == 0:
        return writer.append_many([child_payload(child, n + 1), child_payload(child, n + 2)])
    return [writer.append(child_payload(child, n + 1))]


def _append_until(
    directory: Path, child: int, out_fd: int, *, durability: str = "sync", deadline: float | None = None
) -> None:
    """Append through a writer that shares its syncs until ``deadline`` (the system's monotonic clock), then
    close; without a deadline, until killed."""
    writer = _ObservedWriter(directory, durability=durability)  # type: ignore[arg-type]
    with writer:
        if not writer._shares_sync:
            raise AssertionError("the writer does not share its syncs")
        _say(out_fd, "opened")
        n = count = 0
        while deadline is None or time.monotonic() < deadline:
            count += 1
            writer.marks = set()
            refs = _append(writer, child, n, count)
            marks = "".join(sorted(writer.marks)) or "-"
            for ref in refs:
                n += 1
                _say(out_fd, f"ack {ref.index} {n} {marks}")
    _say(out_fd, "done")


def _append_until_the_sync_fails(directory: Path, child: int, fail_at: int, out_fd: int) -> None:
    """Append until the ``fail_at``-th sync fails; then every append must be refused (W-19)."""
    writer = _ObservedWriter(directory, fs=FaultyFileSystem(fail_sync_after=fail_at))
    with writer:
        _say(out_fd, "opened")
        n = count = 0
        while True:
            count += 1
            writer.marks = set()
            try:
                refs = _append(writer, child, n, count)
            except BinlogIOError as exc:
                _say(out_fd, f"failed {n + 1} {''.join(sorted(writer.marks)) or '-'} {type(exc).__name__}")
                break
            marks = "".join(sorted(writer.marks)) or "-"
            for ref in refs:
                n += 1
                _say(out_fd, f"ack {ref.index} {n} {marks}")
        # The failed payloads are never appended again: later ones carry later numbers.
        n += 2
        for attempt in range(1, 6):
            try:
                refs = _append(writer, child, n, count + attempt)
            except WriterFailedError:
                _say(out_fd, f"refused {n + 1}")
            else:
                _say(out_fd, f"error append {n + 1} returned {[ref.index for ref in refs]} after the failed sync")
            n += 2
    _say(out_fd, "done")


@dataclass
class _Process:
    child: int  # the number its payloads carry: a new one for every process started
    pid: int
    fd: int
    output: bytearray = field(default_factory=bytearray)
    eof: bool = False

    def read(self) -> None:
        chunk = os.read(self.fd, 65536)
        self.output += chunk
        self.eof = not chunk

    def lines(self) -> list[str]:
        """The whole lines written so far: a line cut by a kill is no acknowledgement."""
        return self.output.decode().split("\n")[:-1]


def _pump(processes: list[_Process], seconds: float) -> None:
    """Read what the children write for ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        live = [process for process in processes if not process.eof]
        if left <= 0 or not live:
            return
        ready, _, _ = select.select([process.fd for process in live], [], [], left)
        for process in live:
            if process.fd in ready:
                process.read()


@dataclass
class _Acks:
    """What the children acknowledged, and every line that says something went wrong."""

    acked: dict[int, bytes] = field(default_factory=dict)  # index -> payload
    last_n: dict[int, int] = field(default_factory=dict)  # child -> its last payload acknowledged
    marks: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)

    def take(self, process: _Process, lines: list[str]) -> None:
        for line in lines:
            words = line.split()
            if words[0] == "ack":
                index, n, marks = int(words[1]), int(words[2]), words[3]
                payload = child_payload(process.child, n)
                if self.acked.setdefault(index, payload) != payload:
                    self.problems.append(f"index {index} acknowledged twice: {self.acked[index][:20]!r}, {line!r}")
                if n != self.last_n.get(process.child, 0) + 1:
                    self.problems.append(
                        f"child {process.child} acknowledged {n} after {self.last_n.get(process.child)}"
                    )
                self.last_n[process.child] = n
                self.marks.update(marks)
            elif words[0] == "error":
                self.problems.append(f"child {process.child}: {line}")


def _log_problems(directory: Path, acks: _Acks, *, in_flight: dict[int, int] | None = None) -> list[str]:
    """The log reads without error, indexes 1..n with no hole, each child's payloads in order once each,
    every acknowledged record there as acknowledged. ``in_flight``: children now dead, and how many
    payloads beyond their last acknowledged one each may have left (a batch cut by the kill)."""
    try:
        records = read_log(directory)
    except Exception as exc:
        return [f"reader raised: {describe(exc)}"]
    problems = []
    next_n: dict[int, int] = {}
    for position, (index, data, _) in enumerate(records, start=1):
        origin = parse_payload(data)
        if index != position:
            problems.append(f"hole: record {position} of the log carries index {index}")
            break
        if origin is None:
            problems.append(f"foreign record at index {index}: {data[:30]!r}")
            break
        child, n = origin
        if n != next_n.get(child, 1):
            problems.append(
                f"index {index}: child {child}'s payload {n} follows its payload {next_n.get(child, 1) - 1}"
            )
            break
        next_n[child] = n + 1
    present = {index: data for index, data, _ in records}
    for index, data in sorted(acks.acked.items()):
        if index not in present:
            problems.append(f"acknowledged record {index} is missing (the log ends at {len(records)})")
        elif present[index] != data:
            problems.append(f"index {index} holds {present[index][:30]!r}, acknowledged {data[:30]!r}")
    for child, extra in (in_flight or {}).items():
        left = next_n.get(child, 1) - 1 - acks.last_n.get(child, 0)
        if left > extra:
            problems.append(f"child {child} left {left} payloads beyond those it acknowledged, at most {extra}")
    return problems[:10]


@pytest.mark.spec("W-20", "W-21", "W-43")
def test_sigkill_of_writers_sharing_syncs_loses_no_acknowledged_record(
    tmp_path: Path, full_run: bool, observed: str
) -> None:
    """Four writer processes share syncs; a random one is killed at a random moment (in an append, in its
    recovery at open, between its write and its publish) and restarted, over and over. After every kill a
    reader sees every acknowledged record; at the end the log verifies and every acknowledged record is
    there, once, as written, with no hole, before and after a recovery. The records a killed writer left
    beyond the commit point are carried by the others or adopted by the recovery of a restarted one, never
    removed while another writer's records follow them."""
    rng = random.Random(20261125)
    directory = tmp_path / "log"
    duration = 90.0 if full_run else 8.0
    slots = 4
    acks = _Acks()
    started_children = 0
    kills = 0
    reads = 0
    durabilities: Counter[str] = Counter()
    phases: Counter[str] = Counter()  # where the kills landed: in the open (recovery) or among appends

    def start() -> _Process:
        nonlocal started_children
        started_children += 1
        child, durability = started_children, rng.choice(SHARED_DURABILITIES)
        durabilities[durability] += 1
        pid, fd = fork_running(partial(_append_until, directory, child, durability=durability))
        return _Process(child, pid, fd)

    def kill(process: _Process) -> None:
        os.kill(process.pid, signal.SIGKILL)
        _, status = os.waitpid(process.pid, 0)
        while not process.eof:
            process.read()
        os.close(process.fd)
        lines = process.lines()
        acks.take(process, lines)
        phases["append" if "opened" in lines else "open"] += 1
        if not os.WIFSIGNALED(status) or os.WTERMSIG(status) != signal.SIGKILL:
            acks.problems.append(f"child {process.child} was not killed: status {status}, last lines {lines[-2:]}")

    processes = [start() for _ in range(slots)]
    try:
        end = time.monotonic() + duration
        victim = 0
        while time.monotonic() < end and not acks.problems:
            # Most kills land among appends; a quarter hit the child started last, often inside its open.
            if rng.random() < 0.25:
                _pump(processes, rng.uniform(0, 0.02))
            else:
                _pump(processes, rng.uniform(0.02, 0.4))
                victim = rng.randrange(slots)
            kill(processes[victim])
            kills += 1
            processes[victim] = start()
            # The reader, while the others write: every record acknowledged so far is visible.
            if kills % 3 == 0:
                snapshot = _Acks(dict(acks.acked), dict(acks.last_n))
                for process in processes:
                    snapshot.take(process, process.lines())
                acks.problems += _log_problems(directory, snapshot)
                reads += 1
    finally:
        for process in processes:
            kill(process)
    in_flight = {child: 2 for child in range(1, started_children + 1)}
    problems = acks.problems
    assert not problems, "\n".join(problems[:10])
    assert not (problems := _log_problems(directory, acks, in_flight=in_flight)), "\n".join(problems)
    assert verify(directory).ok
    Writer(directory, shared_sync=False).close()  # recovery adopts what the dead left beyond the commit point
    assert not (problems := _log_problems(directory, acks, in_flight=in_flight)), "\n".join(problems)
    report = verify(directory)
    assert report.ok and report.records >= len(acks.acked)
    # The sharing really happened, between processes: commits that carried other writers' records,
    # commits whose records another writer published first, publications made over the active slot (g+2).
    assert kills >= 20 and reads >= 5 and len(acks.acked) >= 500, (kills, reads, len(acks.acked))
    assert acks.marks["s"] >= len(acks.acked) // 2, acks.marks
    assert acks.marks["c"] > 0 and acks.marks["v"] > 0 and acks.marks["2"] > 0, acks.marks
    assert all(durabilities[mode] > 0 for mode in SHARED_DURABILITIES), durabilities
    assert phases["open"] > 0 and phases["append"] > 0, phases


def _run_until_exit(processes: list[_Process], failing: _Process, timeout: float) -> int:
    """Read the children's lines until all have exited; return how many the others acknowledged after the
    failing child reported its failed append."""
    acked_after_failure = 0
    failed_seen = False
    deadline = time.monotonic() + timeout
    try:
        while any(not process.eof for process in processes) and time.monotonic() < deadline:
            before = {process.child: len(process.lines()) for process in processes}
            _pump(processes, 0.05)
            if failed_seen:
                for process in processes:
                    if process is not failing:
                        acked_after_failure += sum(
                            line.startswith("ack ") for line in process.lines()[before[process.child] :]
                        )
            failed_seen = failed_seen or any(line.startswith("failed ") for line in failing.lines())
    finally:
        for process in processes:
            if not process.eof:
                os.kill(process.pid, signal.SIGKILL)
            _, status = os.waitpid(process.pid, 0)
            os.close(process.fd)
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, (process.child, status, process.lines()[-3:])
    return acked_after_failure


@pytest.mark.spec("W-19")
def test_failed_sync_of_one_sharing_writer_stops_it_alone(tmp_path: Path, full_run: bool, observed: str) -> None:
    """Three writer processes share syncs; the sync of one fails (EIO) in the middle of its shared commit.
    That append raises ``io_error`` and every later one ``writer_failed``; nothing of its failed batch is
    acknowledged; the other two go on committing without error. The log verifies, has no hole, and holds
    every acknowledged record (the failed batch's records may be there, published by another writer)."""
    rng = random.Random(19)
    directory = tmp_path / "log"
    with Writer(directory) as writer:  # the log exists: every child's first commit may share its sync
        writer.append(child_payload(1, 1))
    acks = _Acks(acked={1: child_payload(1, 1)}, last_n={1: 1})
    for round_ in range(4 if full_run else 2):
        first = 2 + 3 * round_
        deadline = time.monotonic() + (3.0 if full_run else 2.0)
        failing = _Process(
            first, *fork_running(partial(_append_until_the_sync_fails, directory, first, rng.randint(10, 40)))
        )
        others = [
            _Process(child, *fork_running(partial(_append_until, directory, child, deadline=deadline)))
            for child in (first + 1, first + 2)
        ]
        acked_after_failure = _run_until_exit([failing, *others], failing, timeout=30.0)
        for process in (failing, *others):
            acks.take(process, process.lines())
        problems = acks.problems
        assert not problems, "\n".join(problems[:10])
        # The failing writer: a sync of a shared commit failed its append, and it appended nothing after.
        lines = failing.lines()
        failed = [line for line in lines if line.startswith("failed ")]
        assert len(failed) == 1, lines[-5:]
        _, failed_n, marks, error = failed[0].split()
        assert error == "BinlogIOError" and "x" in marks, failed[0]
        position = lines.index(failed[0])
        refused = [f"refused {int(failed_n) + 2 * k}" for k in range(1, 6)]
        assert lines[position + 1 :] == [*refused, "done"], lines[position:][:8]
        assert all(line.startswith("ack ") or line == "opened" for line in lines[:position])
        assert acks.last_n.get(first, 0) == int(failed_n) - 1  # nothing of the failed batch acknowledged
        # The others: no error, and commits after the failure.
        for process in others:
            assert process.lines()[-1] == "done" and not any(line.startswith("error") for line in process.lines())
        assert acked_after_failure >= 10, acked_after_failure
        # The failed batch (one or two payloads) may be in the log; nothing the failing writer appended later.
        in_flight = {first: 2, first + 1: 0, first + 2: 0}
        assert not (problems := _log_problems(directory, acks, in_flight=in_flight)), "\n".join(problems)
        report = verify(directory)
        assert report.ok and report.records >= len(acks.acked)
    assert acks.marks["s"] >= len(acks.acked) // 2, acks.marks
