"""Hypothesis drives a writer through appends, cutovers, failing syncs, crashes and recoveries.

Every operation goes through a recording file system. A crash draws a
persistence model, a point in the trace since the last crash and one way
each unsynced operation reached the disk; that state is checked against
every invariant (as the enumerator checks it) and becomes the live log.
After every step a reader must read the live log without error and return a
prefix of what was written; once a writer has recovered it, everything
acknowledged and everything a reader saw before the crash must be there.
A failing sync (EIO) must acknowledge nothing and stop the writer until it
is reopened.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test
from strategies import small_payloads

from openbinlog import BinlogIOError, Writer, WriterFailedError

from .checker import Context, CrashChecker, ModelResult, Record, log_problems, read_log
from .crash_states import MODELS, scenario
from .fs_trace import Mark, Pwrite, Truncate
from .recording_fs import RecordingFileSystem
from .summary import CrashSummary
from .workloads import LOG, deterministic_clock

asqn_steps = st.one_of(st.just(None), st.integers(min_value=1, max_value=1000))


class CrashMachine(RuleBasedStateMachine):
    checked = ModelResult()  # crash states checked, over all examples

    def __init__(self) -> None:
        super().__init__()
        self.base = Path(tempfile.mkdtemp(prefix="binlog-crash-machine-"))
        self.root = self.base / "live"
        self.root.mkdir()
        self.log = self.root / LOG
        self.checker = CrashChecker(self.base / "scratch", "stateful", {})
        self.writer: Writer | None = None
        self.failed = False
        self.last_asqn = -1
        self.counter = 0
        self._new_epoch(expected=[], acked=0, keep=())

    # -- the model ----------------------------------------------------------------

    def _new_epoch(self, *, expected: list[tuple[bytes, int]], acked: int, keep: tuple[Sequence[Record], ...]) -> None:
        """After a crash: a new trace, starting from the crash state."""
        self.fs = RecordingFileSystem(self.root)
        self.fs.trace.base_acked = acked
        # What was written, by index, as it stood from each trace position on (recovery may drop a torn tail).
        self.history: list[tuple[int, list[tuple[bytes, int]]]] = [(0, expected)]
        self.keep = keep  # what readers saw before earlier crashes: must come back and stay
        self.seen: list[Record] = []  # what a reader saw at the last step, since the last recovery
        self.recovered = False

    @property
    def expected(self) -> list[tuple[bytes, int]]:
        return self.history[-1][1]

    def expected_at(self, position: int) -> list[tuple[bytes, int]]:
        return next(expected for start, expected in reversed(self.history) if start <= position)

    @property
    def acked(self) -> int:
        marks = [op.value for op in self.fs.trace.ops if isinstance(op, Mark) and op.kind == "ack"]
        return max([self.fs.trace.base_acked, *marks])

    def _payload(self, data: bytes) -> bytes:
        self.counter += 1
        return b"%d:" % self.counter + data

    def _asqn(self, step: int | None) -> int:
        if step is None:
            return -1
        self.last_asqn += step
        return self.last_asqn

    # -- rules ----------------------------------------------------------------------

    @rule()
    def recover(self) -> None:
        """Open a writer (closing the current one): recovery runs."""
        if self.writer is not None:
            self.writer.close()
        self.writer = Writer(self.log, fs=self.fs, clock_us=deterministic_clock())
        self.failed = False
        records = read_log(self.log)
        problems = log_problems(records, self.expected, acked=self.acked, keep=(*self.keep, self.seen))
        assert not problems, problems
        self.fs.mark("recovered")
        self.history.append((len(self.fs.trace.ops), [(data, asqn) for _, data, asqn in records]))
        self.recovered = True
        self.last_asqn = max([self.last_asqn, *(asqn for _, _, asqn in records)])

    @precondition(lambda self: self.writer is not None and not self.failed)
    @rule(data=small_payloads, asqn=asqn_steps)
    def append(self, data: bytes, asqn: int | None) -> None:
        assert self.writer is not None
        record = (self._payload(data), self._asqn(asqn))
        self.expected.append(record)
        ref = self.writer.append(record[0], asqn=record[1])
        assert ref.index == len(self.expected)
        self.fs.mark("ack", ref.index)

    @precondition(lambda self: self.writer is not None and not self.failed)
    @rule(batch=st.lists(small_payloads, min_size=1, max_size=5))
    def append_many(self, batch: list[bytes]) -> None:
        assert self.writer is not None
        records = [(self._payload(data), -1) for data in batch]
        self.expected.extend(records)
        refs = self.writer.append_many(records)
        assert [ref.index for ref in refs] == list(range(len(self.expected) - len(batch) + 1, len(self.expected) + 1))
        self.fs.mark("ack", refs[-1].index)

    @precondition(lambda self: self.writer is not None and not self.failed)
    @rule()
    def cutover(self) -> None:
        assert self.writer is not None
        self.fs.mark("cutover")
        self.writer.cutover()

    @precondition(lambda self: self.writer is not None and not self.failed)
    @rule(data=small_payloads)
    def failing_sync(self, data: bytes) -> None:
        """fdatasync fails with EIO: nothing acknowledged, the writer refuses everything until reopened (W-19)."""
        assert self.writer is not None
        acked_before = self.acked
        record = (self._payload(data), -1)
        self.expected.append(record)  # written, perhaps adopted by a later recovery, never acknowledged
        self.fs.fail_sync()
        with pytest.raises(BinlogIOError):
            self.writer.append(record[0])
        self.fs.disarm()
        self.failed = True
        ops_before = len(self.fs.trace.ops)
        with pytest.raises(WriterFailedError):
            self.writer.append(b"must be refused")
        with pytest.raises(WriterFailedError):
            self.writer.cutover()
        assert not any(isinstance(op, Pwrite | Truncate) for op in self.fs.trace.ops[ops_before:])
        assert self.acked == acked_before

    @precondition(lambda self: self.writer is not None and not self.failed)
    @rule(nth=st.integers(min_value=1, max_value=3), data=small_payloads)
    def failing_sync_in_cutover(self, nth: int, data: bytes) -> None:
        """One of the cutover's file syncs fails: io_error; then the writer refuses, or carries on consistently.

        (A failing directory sync is test_failed_syncs.py's: the writer then loses acknowledged records.)
        """
        assert self.writer is not None
        self.fs.fail_sync(nth)
        self.fs.mark("cutover")
        try:
            self.writer.cutover()
        except BinlogIOError:
            record = (self._payload(data), -1)
            self.expected.append(record)
            try:
                ref = self.writer.append(record[0])
            except WriterFailedError:
                self.expected.pop()
                self.failed = True
            else:
                assert ref.index == len(self.expected)
                self.fs.mark("ack", ref.index)
        finally:
            self.fs.disarm()

    @rule(data=st.data())
    def crash(self, data: st.DataObject) -> None:
        """A crash at a point of the trace since the last crash, under a model Hypothesis picks."""
        trace = self.fs.trace
        model = data.draw(st.sampled_from(MODELS), label="model")
        position = data.draw(st.integers(0, len(trace.ops)), label="crash point")
        point = next(trace.points(position))
        plan = scenario(point, model)
        choice = tuple(data.draw(st.integers(0, len(axis) - 1), label=f"axis {n}") for n, axis in enumerate(plan.axes))
        image, description = plan.build(choice)
        expected = list(self.expected_at(position))
        readable = self.checker.readable(point.volatile, f"@{position}")
        context = Context(expected, point.acked, (*self.keep, readable))
        where = f"@{position} {description}"
        problems = self.checker.check_state(image, context, model=model, where=where)
        CrashMachine.checked.record(model, "stateful", where, problems)
        CrashMachine.checked.states += 1
        assert not problems, problems
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        image.materialise(self.root)
        self.failed = False
        self._new_epoch(expected=expected, acked=point.acked, keep=context.keep)

    # -- invariants ---------------------------------------------------------------

    @invariant()
    def a_reader_sees_a_prefix_of_what_was_written(self) -> None:
        records = read_log(self.log)
        if self.recovered:  # the commit point never moves back while no crash intervenes
            problems = log_problems(records, self.expected, acked=self.acked, keep=(*self.keep, self.seen))
            self.seen = records
        else:  # a crash state that no writer has recovered yet: a prefix, perhaps shorter
            problems = log_problems(records, self.expected)
        assert not problems, problems

    def teardown(self) -> None:
        if self.writer is not None:
            self.writer.close()
        shutil.rmtree(self.base, ignore_errors=True)


def test_stateful_appends_cutovers_failing_syncs_and_crashes(crash_summary: CrashSummary, full_run: bool) -> None:
    started = time.monotonic()
    CrashMachine.checked = ModelResult()
    examples, steps = (400, 40) if full_run else (100, 30)
    run_state_machine_as_test(
        CrashMachine,
        settings=settings(
            max_examples=examples,
            stateful_step_count=steps,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
        ),
    )
    crash_summary.add("state machine", "stateful (Hypothesis)", CrashMachine.checked)
    crash_summary.timed("state machine", time.monotonic() - started)
    assert CrashMachine.checked.states > 0
