"""Real writer processes killed with SIGKILL, in appends, in cutovers and in recovery.

Each log gets a sequence of children; each appends (sometimes in batches,
sometimes cutting over after every append) until the parent kills it, at a
random moment after a random number of acknowledgements or exactly before
a random file operation (the child stops itself there, the parent kills it).
Every child after the first starts by recovering the log its predecessor
left. After each kill a reader must read the log without error; at the end
a writer recovers it and every acknowledged record must be there, in order,
with nothing that was never written.

The page-cache variant is a process crash: the kernel keeps every write, so
every acknowledged record is readable at once, before any recovery. The
write-back variant keeps unsynced writes in the child, so a kill loses them
as a power loss would.
"""

from __future__ import annotations

import os
import random
import select
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from openbinlog import Writer

from .checker import ModelResult, describe, read_log
from .kill_child import ChildOptions, child_payload, parse_payload, run_child
from .summary import CrashSummary

CHILD_TIMEOUT = 10.0
HERE = Path(__file__).resolve().parent


@dataclass
class ChildRun:
    lines: list[str] = field(default_factory=list)
    exit_status: int = 0

    @property
    def phase(self) -> str:
        """Where the child was when it died: recovery (before the Writer opened), cutover or append."""
        phase = "recovery"
        for line in self.lines:
            if line in {"opened", "cutover-end"}:
                phase = "append"
            elif line == "cutover-begin":
                phase = "cutover"
        return phase


def _drain(fd: int, buffer: bytearray, timeout: float) -> bool:
    """Read what the child wrote; False once it closed its end."""
    ready, _, _ = select.select([fd], [], [], timeout)
    if not ready:
        return True
    chunk = os.read(fd, 65536)
    buffer += chunk
    return bool(chunk)


def _acks(buffer: bytearray) -> int:
    return buffer.count(b"\nack ") + buffer.startswith(b"ack ")


def supervise(pid: int, fd: int, *, kill_after_acks: int | None, delay: float) -> ChildRun:
    """Kill the child after ``kill_after_acks`` acknowledgements (and ``delay``), or once it stops itself."""
    buffer = bytearray()
    deadline = time.monotonic() + CHILD_TIMEOUT
    status = 0
    open_pipe = True
    while True:
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(fd)
            raise TimeoutError(f"child {pid} neither stopped nor reached {kill_after_acks} acknowledgements")
        if open_pipe:
            open_pipe = _drain(fd, buffer, 0.002)
        waited, status = os.waitpid(pid, os.WUNTRACED | os.WNOHANG)
        if waited and os.WIFSTOPPED(status):
            break
        if waited:  # it exited by itself: an error, or the appends ran out
            os.close(fd)
            return ChildRun(buffer.decode().splitlines(), status)
        if kill_after_acks is not None and _acks(buffer) >= kill_after_acks:
            time.sleep(delay)
            break
        if not open_pipe:
            time.sleep(0.001)
    os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    while _drain(fd, buffer, 0):
        pass
    os.close(fd)
    return ChildRun(buffer.decode().splitlines(), status)


def fork_running(target: Callable[[int], None]) -> tuple[int, int]:
    """Run ``target(write_end)`` in a forked process; return its pid and the read end of its pipe, on which
    an exception of the child arrives as an ``error`` line."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        code = 0
        try:
            os.close(read_end)
            target(write_end)
        except BaseException as exc:
            os.write(write_end, f"error {describe(exc)}\n".encode())
            code = 1
        finally:
            os._exit(code)
    os.close(write_end)
    return pid, read_end


def fork_child(directory: Path, options: ChildOptions) -> tuple[int, int]:
    return fork_running(lambda write_end: run_child(str(directory), options, write_end))


def exec_child(directory: Path, options: ChildOptions) -> tuple[int, int, subprocess.Popen[bytes]]:
    command = [sys.executable, str(HERE / "kill_child.py"), str(directory), str(options.child)]
    command += ["--cutover-every", str(options.cutover_every)]
    if options.writeback:
        command.append("--writeback")
    if options.stop_at is not None:
        command += ["--stop-at", str(options.stop_at)]
    command += ["--durability", options.durability]
    if options.exclusive:
        command.append("--exclusive")
    process = subprocess.Popen(command, stdout=subprocess.PIPE)
    assert process.stdout is not None
    return process.pid, process.stdout.fileno(), process


@dataclass
class Campaign:
    """Children in sequence on one log; what they acknowledged; what went wrong."""

    directory: Path
    writeback: bool
    rng: random.Random
    name: str
    header_before_data: bool = False  # a broken writer, for the test of the tests
    durability: str = "sync"
    exclusive: bool = False
    acked: dict[int, bytes] = field(default_factory=dict)
    phases: Counter[str] = field(default_factory=Counter)
    result: ModelResult = field(default_factory=ModelResult)

    def options(self, child: int) -> ChildOptions:
        stop_at = None
        if self.rng.random() < 0.6:
            stop_at = self.rng.randint(1, 6) if self.rng.random() < 0.4 else self.rng.randint(1, 60)
        return ChildOptions(
            child,
            cutover_every=self.rng.choice([0, 1, 2, 3]),
            writeback=self.writeback,
            stop_at=stop_at,
            header_before_data=self.header_before_data,
            durability=self.durability,
            exclusive=self.exclusive,
        )

    def kill_one(self, child: int, *, exec_it: bool = False) -> None:
        options = self.options(child)
        kill_after = None if options.stop_at is not None else self.rng.randint(0, 12)
        delay = self.rng.uniform(0, 0.003)
        if exec_it:
            pid, fd, process = exec_child(self.directory, options)
            run = supervise(pid, os.dup(fd), kill_after_acks=kill_after, delay=delay)
            process.stdout.close()  # type: ignore[union-attr]
            process.returncode = run.exit_status  # already reaped by supervise
        else:
            pid, fd = fork_child(self.directory, options)
            run = supervise(pid, fd, kill_after_acks=kill_after, delay=delay)
        problems = [line for line in run.lines if line.startswith("error")]
        if not os.WIFSIGNALED(run.exit_status) or os.WTERMSIG(run.exit_status) != signal.SIGKILL:
            problems.append(f"the child was not killed: status {run.exit_status}, last line {run.lines[-1:]}")
        else:
            self.phases[run.phase] += 1
            for line in run.lines:
                if line.startswith("ack "):
                    _, index, from_child, n = line.split()
                    self.acked[int(index)] = child_payload(int(from_child), int(n))
            problems += self.problems(recovered=False)
        self.result.states += 1
        self.result.record(self.name, self.directory.name, f"child {child} ({options})", problems)

    def problems(self, *, recovered: bool) -> list[str]:
        """A reader never fails on the crashed log; what it returns is a prefix with nothing made up."""
        try:
            records = [(index, payload) for index, payload, _ in read_log(self.directory)]
        except Exception as exc:
            return [f"reader raised after the kill: {describe(exc)}"]
        next_n: dict[int, int] = {}
        for position, (index, data) in enumerate(records, start=1):
            origin = parse_payload(data)
            if index != position or origin is None:
                return [f"hole or phantom at index {index}: {data[:30]!r}"]
            child, n = origin
            if n != next_n.get(child, 1):
                return [f"child {child}'s record {n} at index {index} follows its record {next_n.get(child, 1) - 1}"]
            next_n[child] = n + 1
        present = dict(records)
        must_be_visible = recovered or not self.writeback
        problems = []
        for index, data in sorted(self.acked.items()):
            if index in present and present[index] != data:
                problems.append(f"index {index} holds {present[index][:30]!r}, acknowledged {data[:30]!r}")
            elif index not in present and must_be_visible:
                problems.append(f"acknowledged record {index} is missing ({len(records)} records)")
        return problems

    def finish(self) -> None:
        """A last writer recovers the log: now every acknowledged record must be there."""
        try:
            Writer(self.directory).close()
            problems = self.problems(recovered=True)
        except Exception as exc:
            problems = [f"recovery failed: {describe(exc)}"]
        self.result.record(self.name, self.directory.name, "after the final recovery", problems)


def run_campaigns(
    tmp_path: Path,
    *,
    writeback: bool,
    logs: int,
    children: int,
    seed: int,
    durability: str = "sync",
    exclusive: bool = False,
) -> list[Campaign]:
    rng = random.Random(seed)
    campaigns = []
    for number in range(logs):
        name = "SIGKILL write-back" if writeback else "SIGKILL"
        campaign = Campaign(tmp_path / f"log{number}", writeback, rng, name, durability=durability, exclusive=exclusive)
        for child in range(1, children + 1):
            campaign.kill_one(child)
        campaign.finish()
        campaigns.append(campaign)
    return campaigns


def _report(campaigns: list[Campaign], label: str, crash_summary: CrashSummary, started: float) -> Counter[str]:
    phases: Counter[str] = Counter()
    total = ModelResult()
    for campaign in campaigns:
        phases += campaign.phases
        total.states += campaign.result.states
        total.violating_states += campaign.result.violating_states
        total.violations += campaign.result.violations
    crash_summary.add("kill campaigns", label, total)
    crash_summary.timed(label, time.monotonic() - started)
    assert not total.violations, "\n".join(map(str, total.violations[:10]))
    return phases


@pytest.mark.parametrize("writeback", [False, True], ids=["page-cache", "write-back"])
def test_sigkill_at_random_moments_loses_no_acknowledged_record(
    tmp_path: Path, writeback: bool, crash_summary: CrashSummary, full_run: bool
) -> None:
    started = time.monotonic()
    logs, children = (40, 15) if full_run else (10, 11)
    campaigns = run_campaigns(tmp_path, writeback=writeback, logs=logs, children=children, seed=7 + writeback)
    label = "SIGKILL write-back (power loss)" if writeback else "SIGKILL page cache (process crash)"
    phases = _report(campaigns, label, crash_summary, started)
    assert sum(phases.values()) == logs * children
    # The kills must really land inside recovery and cutover, not only between appends.
    assert phases["recovery"] >= 5 and phases["cutover"] >= 5 and phases["append"] >= 5, phases


@pytest.mark.spec("W-40")
@pytest.mark.parametrize("writeback", [False, True], ids=["page-cache", "write-back"])
def test_sigkill_of_process_mode_writers_loses_no_flushed_record(
    tmp_path: Path, writeback: bool, crash_summary: CrashSummary, full_run: bool
) -> None:
    """The process mode: a record is acknowledged once a flush() after it returned; those survive every kill."""
    started = time.monotonic()
    logs, children = (20, 15) if full_run else (6, 10)
    campaigns = run_campaigns(
        tmp_path, writeback=writeback, logs=logs, children=children, seed=11 + writeback, durability="process"
    )
    label = "SIGKILL process mode, " + ("write-back (power loss)" if writeback else "page cache")
    phases = _report(campaigns, label, crash_summary, started)
    assert sum(phases.values()) == logs * children
    assert sum(len(campaign.acked) for campaign in campaigns) > 0


@pytest.mark.spec("W-13", "W-42")
@pytest.mark.parametrize("writeback", [False, True], ids=["page-cache", "write-back"])
def test_sigkill_of_exclusive_writers_loses_no_acknowledged_record(
    tmp_path: Path, writeback: bool, crash_summary: CrashSummary, full_run: bool
) -> None:
    """Exclusive writers sync each batch's records alone and publish over their unsynced slot: in the write-back
    model (a power loss at the kill) a synchronized write hands over its own bytes and nothing else."""
    started = time.monotonic()
    logs, children = (20, 15) if full_run else (6, 10)
    campaigns = run_campaigns(tmp_path, writeback=writeback, logs=logs, children=children, seed=31, exclusive=True)
    label = "SIGKILL exclusive writer, " + ("write-back (power loss)" if writeback else "page cache")
    phases = _report(campaigns, label, crash_summary, started)
    assert sum(phases.values()) == logs * children
    assert sum(len(campaign.acked) for campaign in campaigns) > 0


@pytest.mark.spec("W-41")
def test_sigkill_of_mmap_mode_writers_loses_no_append_that_returned(
    tmp_path: Path, crash_summary: CrashSummary, full_run: bool
) -> None:
    """The mmap mode survives a process crash: every append that returned is there, flushed or not. Kills land
    anywhere in the stores of the real mapping, or at chosen operations of stores made through the file system."""
    started = time.monotonic()
    logs, children = (20, 15) if full_run else (6, 10)
    campaigns = run_campaigns(tmp_path, writeback=False, logs=logs, children=children, seed=23, durability="mmap")
    phases = _report(campaigns, "SIGKILL mmap mode, page cache", crash_summary, started)
    assert sum(phases.values()) == logs * children
    assert sum(len(campaign.acked) for campaign in campaigns) > 0


def test_sigkill_of_the_standalone_child_script(tmp_path: Path, crash_summary: CrashSummary) -> None:
    """The same, with children started as separate programs (as an application would run)."""
    started = time.monotonic()
    campaign = Campaign(tmp_path / "log", False, random.Random(3), "SIGKILL exec")
    for child in range(1, 5):
        campaign.kill_one(child, exec_it=True)
    campaign.finish()
    _report([campaign], "SIGKILL separate program", crash_summary, started)
    assert len(campaign.acked) > 0
