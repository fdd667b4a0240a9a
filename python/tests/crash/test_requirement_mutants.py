"""Writer requirements the conformance protocol cannot observe, each proven covered by a mutant that is caught.

A requirement counts as covered only by a test that fails when it is
broken. Each test here breaks one writer requirement (W-n) in the reference
writer, as little as possible (one function recompiled from its own source
with one edit, or one constant), and asserts that the existing checking
machinery reports it: an existing test of the suite that then fails by an
assertion (never by a crash), the crash checker's invariants on the trace
of a small workload, or the concurrency tests' criteria (no index
acknowledged twice, every acknowledged record read back). Where a check is
new here, the test first shows that the reference passes it. The rules the
protocol observes are broken by the conformance suite's requirement mutants
(conformance/mutants/requirements.py); python/tests/test_requirement_coverage.py
maps every W-n to one or the other.
"""

from __future__ import annotations

import fcntl
import itertools
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import test_commit_table as table_tests
import test_faults as fault_tests
import test_maintenance as maintenance_tests
import test_protocol as protocol_tests
import test_sparse_index as index_tests
import test_writer as writer_tests
import test_writer_index as writer_index_tests
from decisions import Edit, mutated
from logtools import FaultyFileSystem

import openbinlog._maintenance as maintenance
from openbinlog import BinlogError, Reader, Writer, _accel, encode_record, verify
from openbinlog import _buffer as buffer_module
from openbinlog import _commit as commit_module
from openbinlog import _cutover as cutover_module
from openbinlog import _fs as fs_module
from openbinlog import _index_build as index_build_module
from openbinlog import _index_builder as index_builder_module
from openbinlog import _sparse_index as sparse_index_module
from openbinlog import _writer as writer_module
from openbinlog._buffer import PureRecordBuffer
from openbinlog._format import HEADER_SIZE, RECORD_HEADER_SIZE
from openbinlog._fs import OsFileSystem
from openbinlog._writer import _DirectoryLock

from . import test_failed_syncs as failed_sync_tests
from .checker import (
    CrashChecker,
    ModelResult,
    describe,
    log_problems,
    power_loss_results,
    publication_problems,
    read_log,
)
from .fs_trace import Trace
from .workloads import LOG, Append, Cutover, Flush, Step, run, shared_workloads, singles, small_workloads

THREE = singles(1, (5, 0, 17))  # the smallest workload that commits more than one batch
WAIT = 2.0  # seconds a second writer is given to get past a lock it must not get past


@pytest.fixture(autouse=True)
def ordinary_protocol(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Writers commit by the ordinary batch of 6.2 (what writers do where shared syncs are not available), but in
    the tests of the shared batch of 6.8, whose names say so."""
    if "shared" not in request.node.name:
        monkeypatch.setattr(writer_module, "SHARED_SYNC_SUPPORTED", False)


@pytest.fixture(autouse=True)
def _python_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutants patch the Python reference: the compiled batch of spec 6.8, proven equal to it by the crash
    enumeration of both, is switched off so that each patched procedure is the one that runs."""
    monkeypatch.setattr(_accel, "shared_write", None)
    monkeypatch.setattr(_accel, "shared_publish", None)


def mutate(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, *edits: Edit) -> None:
    """Replace ``owner.name`` (a method or a module function) by its mutant for this test."""
    monkeypatch.setattr(owner, name, mutated(getattr(owner, name), *edits))


def failure_of(test: Callable[..., object], *args: object) -> str:
    """Run an existing test against the mutant: it must fail by an assertion (a crash would not count)."""
    try:
        test(*args)
    except (AssertionError, pytest.fail.Exception) as failure:
        return str(failure)
    pytest.fail(f"{test.__name__} passes against the mutant: it does not catch it")


def record(root: Path, steps: list[Step], **writer_options: Any) -> Trace:
    root.mkdir()
    return run(root, steps, writer_options=writer_options)


def checked(scratch: Path, name: str, options: dict[str, Any], trace: Trace, model: str, **run: Any) -> ModelResult:
    """The crash states of ``model`` over ``trace``, checked by a checker of their own."""
    checker = CrashChecker(scratch, name, options)
    checker.run(trace, (model,), **run)
    return checker.results[model]


def assert_clean(result: ModelResult) -> None:
    """The reference run: states checked, none broke an invariant."""
    assert result.states > 0
    assert not result.violations, result.violations[:5]


# -- checks new here, each shown to pass on the reference before it catches a mutant ----------------------------------


def strict_durability_problems(trace: Trace, scratch: Path) -> list[str]:
    """In the strict mode an acknowledged record survives a power loss without recovery: at every point of the
    trace, the durable state alone, read as it is, holds every record acknowledged so far (W-15)."""
    problems: list[str] = []
    scratch.mkdir(exist_ok=True)
    for point in trace.points():
        point.durable.materialise(scratch)
        try:
            found = log_problems(read_log(scratch / LOG), trace.expected, acked=point.acked)
        except BinlogError as exc:
            found = [f"reader raised: {describe(exc)}"]
        problems += [f"@{point.position}, durable state before recovery: {problem}" for problem in found]
    return problems


def partial_batch_problems(trace: Trace, steps: list[Step], scratch: Path) -> list[str]:
    """A batch is published with one slot update (W-17): at no point does a reader see part of a batch."""
    sizes = [len(step.records) for step in steps if isinstance(step, Append)]
    boundaries = set(itertools.accumulate(sizes, initial=0))
    checker = CrashChecker(scratch, "batches", {})
    problems: list[str] = []
    for point in trace.points():
        seen = len(checker.readable(point.volatile, f"@{point.position}"))
        if seen not in boundaries:
            problems.append(f"@{point.position}: a reader sees {seen} records, part of a batch")
    return problems + [str(violation) for result in checker.results.values() for violation in result.violations]


def after_reopening_problems(log: Path, expected: list[tuple[bytes, int]], acked: int) -> list[str]:
    """As the crash checker judges a log: recover it (open a writer), then read it against what was written."""
    try:
        Writer(log).close()
        return log_problems(read_log(log), expected, acked=acked)
    except BinlogError as exc:
        return [f"reopening or reading failed: {describe(exc)}"]


def tail_left_by_another_writer_problems(log: Path) -> list[str]:
    """Writer A has the log open when writer B dies after syncing a batch of two records, before publishing it.

    A's next batch must find B's records beyond the commit point, adopt them
    (W-20) and append after them: the log is then what was written, in order.
    """
    with Writer(log) as first:
        first.append(b"a")
        with Writer(log, fs=FaultyFileSystem(drop_header_writes=True)) as dying:
            dying.append_many([b"b1", b"b2"])  # synced; the publication never reaches the file
        first.append(b"xx")  # the length of b1: written over it, b2 would follow as a valid record
    return after_reopening_problems(log, [(b"a", -1), (b"b1", -1), (b"b2", -1), (b"xx", -1)], acked=2)


def finished_segment_problems(log: Path) -> list[str]:
    """Writer A has segment 1 open when writer B cuts over and dies before sealing it (its seal never lands).

    Segment 1 is finished: A's next batch must go to segment 2 (W-16).
    """
    with Writer(log) as first:
        first.append(b"a")
        with Writer(log, fs=FaultyFileSystem(drop_header_writes=True)) as cutting:
            cutting.cutover()
        first.append(b"b")
    problems = [f"verify: {damage}" for damage in verify(log).damage]
    return problems + after_reopening_problems(log, [(b"a", -1), (b"b", -1)], acked=2)


def shared_torn_tail_problems(log: Path) -> list[str]:
    """A dead writer left a torn record beyond the commit point (a killed write stops at a page boundary), whose
    payload holds a valid record: the next batch of a writer that shares syncs must go to recovery, which removes
    it, not write over its start, which would leave the record inside it next in line, a phantom."""
    with Writer(log) as first:
        first.append(b"a")
        mine = len(encode_record(2, b"b"))
        payload = b"x" * (mine - RECORD_HEADER_SIZE) + encode_record(3, b"phantom") + b"rest of a torn payload"
        with (log / "00000001.dat").open("ab") as torn:
            torn.write(encode_record(2, payload)[:-8])
        first.append(b"b")
    problems = [f"verify: {damage}" for damage in verify(log).damage]
    return problems + after_reopening_problems(log, [(b"a", -1), (b"b", -1)], acked=2)


class Rendezvous(OsFileSystem):
    """The real file system; ``meanwhile`` runs once, just before the next write of records: after the writer
    has read the active slot, before it writes its batch and publishes it, while it holds the lock."""

    def __init__(self) -> None:
        self.meanwhile: Callable[[], None] | None = None

    def pwrite(self, fd: int, data: bytes, offset: int) -> None:
        if offset >= HEADER_SIZE:
            action, self.meanwhile = self.meanwhile, None
            if action is not None:
                action()
        super().pwrite(fd, data, offset)


def overlapping_commit_problems(log: Path, first: Writer, rendezvous: Rendezvous, second: Writer) -> list[str]:
    """``second`` appends while ``first`` (on ``rendezvous``) is between reading the active slot and publishing.

    Under the lock it waits (W-31). Judged as the concurrency tests judge:
    no index acknowledged twice, every acknowledged record read back.
    """
    acknowledged: list[tuple[int, bytes]] = []

    def second_appends() -> None:
        acknowledged.append((second.append(b"second").index, b"second"))

    other = threading.Thread(target=second_appends)

    def meanwhile() -> None:
        other.start()
        other.join(WAIT)

    rendezvous.meanwhile = meanwhile
    acknowledged.append((first.append(b"first").index, b"first"))
    other.join(30)
    return acknowledged_problems(log, acknowledged)


def acknowledged_problems(log: Path, acknowledged: list[tuple[int, bytes]]) -> list[str]:
    """As the concurrency tests judge: no index acknowledged twice, every acknowledged record read back."""
    problems: list[str] = []
    indexes = [index for index, _ in acknowledged]
    if len(set(indexes)) < len(indexes):
        problems.append(f"two appends acknowledged with one index: {sorted(indexes)}")
    try:
        read = {index: data for index, data, _asqn in read_log(log)}
    except BinlogError as exc:
        return [*problems, f"reader raised: {describe(exc)}"]
    problems += [
        f"acknowledged record lost: {data!r} at index {index}"
        for index, data in acknowledged
        if read.get(index) != data
    ]
    return problems


def two_writers_problems(log: Path, rendezvous: Rendezvous) -> list[str]:
    with Writer(log, fs=rendezvous) as first, Writer(log) as second:
        return overlapping_commit_problems(log, first, rendezvous, second)


def alternating_writers_problems(log: Path) -> list[str]:
    """Two ordinary writers on one log, each with its own lock descriptor, commit in turns.

    Each batch must start from the active slot as the other writer left it
    (steps 1 to 5 of 6.2): none may rely on the slot it published itself (W-39).
    """
    acknowledged: list[tuple[int, bytes]] = []
    with Writer(log) as first, Writer(log) as second:
        for writer, data in ((first, b"a1"), (second, b"b1"), (first, b"a2"), (second, b"b2")):
            acknowledged.append((writer.append(data).index, data))
    return acknowledged_problems(log, acknowledged)


def exclusive_writer_problems(log: Path) -> list[str]:
    """An ordinary writer opens the log between two batches of an exclusive writer.

    The exclusive writer holds the lock from open to close (6.7, W-39): the
    other waits until it is closed, then appends after its records.
    """
    acknowledged: list[tuple[int, bytes]] = []

    def second_appends() -> None:
        with Writer(log) as second:
            acknowledged.append((second.append(b"second").index, b"second"))

    other = threading.Thread(target=second_appends)
    with Writer(log, exclusive=True) as first:
        acknowledged.append((first.append(b"first-1").index, b"first-1"))
        other.start()
        other.join(WAIT)
        acknowledged.append((first.append(b"first-2").index, b"first-2"))
    other.join(30)
    assert not other.is_alive(), "the second writer never got the lock"
    return acknowledged_problems(log, acknowledged)


def cutover_in_process_mode_problems(log: Path) -> list[str]:
    """In the process mode, records appended before a cutover precede the successor's: they are committed first
    (W-40), whether the application cuts over or a record that does not fit a preallocated segment does."""
    problems: list[str] = []
    for name, options, before, after in (
        ("cutover()", {}, [b"a", b"b"], [b"c"]),
        ("capacity", {"preallocate": 320}, [b"a" * 20, b"b" * 20], [b"c" * 20]),
    ):
        with Writer(log / name, durability="process", flush_interval=3600, **options) as writer:
            for data in before:
                writer.append(data)
            if name == "cutover()":
                writer.cutover()
            for data in after:
                writer.append(data)
        with Reader(log / name) as reader:
            read = [(entry.index, entry.payload) for entry in reader]
        expected = list(enumerate([*before, *after], start=1))
        if read != expected:
            problems.append(f"{name}: read back {read}, appended {expected}")
        problems += [f"{name}: verify: {damage}" for damage in verify(log / name).damage]
    return problems


# -- W-1 to W-20 ----------------------------------------------------------------------------------------------------


def test_w01_segment_beyond_99999999_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for module in (writer_module, commit_module, cutover_module):  # every module that checks the limit
        monkeypatch.setattr(module, "MAX_LOG_NUMBER", 100_000_000)  # one more: a nine-digit segment name
    failure_of(maintenance_tests.test_no_segment_is_created_beyond_99999999, tmp_path / "log")


def test_w03_removal_above_the_lowest_segment_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Retention takes the segment below the last one first, not the lowest one.
    mutate(monkeypatch, Writer, "drop_segments", ("logs[0]", "logs[-2]", 6))
    failure_of(protocol_tests.test_retention_removes_only_sealed_lowest_segments, tmp_path / "log")


def test_w45_a_damaged_segment_indexed_by_a_tolerant_walk_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mutate(
        monkeypatch,
        index_build_module,
        "_walk_entries",
        (
            "walk = SegmentWalk(segment, path=segment.path, header=header, end=end)",
            "walk = SegmentWalk(segment, path=segment.path, header=header, end=end, tolerant=True)",
        ),
    )
    failure_of(index_tests.test_a_damaged_segment_is_not_indexed_and_its_damage_is_reported, tmp_path / "log")


def test_w45_an_entry_off_the_rule_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # The first record at or beyond the previous entry plus the interval: "beyond" alone moves entries.
    mutate(monkeypatch, sparse_index_module.EntryRule, "offer", ("offset >= self._due", "offset > self._due"))
    failure_of(index_tests.test_entry_rule_takes_the_first_record_at_or_beyond_each_entry_plus_the_interval)


def test_w45_an_index_written_under_its_own_name_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mutate(
        monkeypatch,
        index_build_module,
        "_write_aside",
        (
            'temp = os.path.join(path, f".{index_name(log)}.{secrets.token_hex(8)}.tmp")',
            "temp = os.path.join(path, index_name(log))",
        ),
    )
    failure_of(index_tests.test_an_index_is_written_aside_synced_and_renamed_into_place, tmp_path / "log", monkeypatch)


def test_w45_a_writer_that_indexes_a_segment_in_its_cutover_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The sealed segment walked and its index written by the committing thread, not queued for the builder's.
    mutate(
        monkeypatch,
        index_builder_module.IndexBuilder,
        "sealed",
        (
            "self._queue.append(log)",
            "self.builds.append(index_segment(self._directory, log, interval=self._interval))",
        ),
    )
    failure_of(writer_index_tests.test_no_commit_waits_for_the_index_builder, tmp_path / "log", monkeypatch, False)


def test_w09_timestamp_below_the_last_one_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mutate(
        monkeypatch,
        Writer,
        "_encode_batch",
        ("now = max(self._clock_us(), commit.last_timestamp_us)", "now = self._clock_us()"),
    )
    failure_of(writer_tests.test_timestamps_never_go_backwards, tmp_path / "log")


def test_w12_generation_skipping_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Generation g+3 lands in slot (g+1) mod 2, as g+1 would: only the generation is wrong.
    mutate(
        monkeypatch,
        Writer,
        "_encode_batch",
        ("CommitState(commit.generation + 1,", "CommitState(commit.generation + 3,"),
    )
    problems = publication_problems(record(tmp_path / "recorded", THREE))
    assert any("generation" in problem for problem in problems), problems


def test_w13_publication_before_the_batch_sync_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mutate(monkeypatch, Writer, "_commit_some", ('if self.durability != "os":', 'if self.durability == "os":'))
    problems = publication_problems(record(tmp_path / "recorded", THREE))
    assert any("published before its records were synced" in problem for problem in problems), problems


def test_w15_acknowledgement_before_the_strict_sync_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert strict_durability_problems(record(tmp_path / "reference", THREE, durability="strict"), tmp_path / "s1") == []
    mutate(monkeypatch, Writer, "_publish", ('if strict_sync and self.durability == "strict":', "if False:"))
    trace = record(tmp_path / "recorded", THREE, durability="strict")
    problems = strict_durability_problems(trace, tmp_path / "s2")
    assert any("acknowledged record lost" in problem for problem in problems), problems


def test_w16_append_to_a_finished_segment_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert finished_segment_problems(tmp_path / "reference") == []
    mutate(
        monkeypatch,
        Writer,
        "_prepare",
        ("self._fs.exists(successor_path(self.directory, segment.log))", "False"),
    )
    problems = finished_segment_problems(tmp_path / "log")
    assert any("chain_broken" in problem for problem in problems), problems


def test_w17_batch_published_record_by_record_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (batches,) = [workload for workload in small_workloads() if workload.name == "batches"]
    steps = batches.steps
    assert partial_batch_problems(record(tmp_path / "reference", steps), steps, tmp_path / "s1") == []
    mutate(
        monkeypatch,
        Writer,
        "_commit",
        (
            "todo, segment, commit = self._commit_some(todo, segment, commit, written)",
            "rest, segment, commit = self._commit_some(todo[:1], segment, commit, written)\n"
            "                    todo = rest + todo[1:]",
        ),
    )
    problems = partial_batch_problems(record(tmp_path / "recorded", steps), steps, tmp_path / "s2")
    assert any("part of a batch" in problem for problem in problems), problems


def test_w19_writer_going_on_after_a_failed_sync_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mutate(monkeypatch, Writer, "_commit", ("self._failed = error", "self._failed = None"))
    failure_of(failed_sync_tests.test_failed_batch_sync_acknowledges_nothing_and_stops_the_writer, tmp_path)


def test_w20_batch_without_the_tail_check_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert tail_left_by_another_writer_problems(tmp_path / "reference") == []
    mutate(
        monkeypatch,
        Writer,
        "_recover_tail",
        ("if self._tail_clear(segment, commit.commit_offset, self._fs.size(segment.fd)):", "if True:"),
    )
    problems = tail_left_by_another_writer_problems(tmp_path / "log")
    assert any("stale or phantom record" in problem for problem in problems), problems


# -- W-21 to W-38 ---------------------------------------------------------------------------------------------------


def test_w23_recovery_without_sync_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Recovery publishes the adopted commit point without first syncing the records it rewrote.
    mutate(
        monkeypatch,
        Writer,
        "_apply_tail",
        (
            "self._fs.fdatasync(segment.fd)\n    if plan.adopted is None:\n",
            "if plan.adopted is None:\n        self._fs.fdatasync(segment.fd)\n",
        ),
    )
    failure_of(failed_sync_tests.test_records_adopted_after_a_failed_sync_reach_the_disk, tmp_path)


def test_w23_recovery_without_rewriting_the_adopted_bytes_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # After a failed sync the pages may be clean: syncing without writing them again makes nothing durable.
    mutate(
        monkeypatch,
        Writer,
        "_apply_tail",
        ("self._rewrite_as_read(segment, plan.commit.commit_offset, scan.end)", "pass"),
    )
    failure_of(failed_sync_tests.test_records_adopted_after_a_failed_sync_reach_the_disk, tmp_path)


SHARED = {w.name: w for w in shared_workloads()}["shared-two"]
shared_only = pytest.mark.skipif(not fs_module.SHARED_SYNC_SUPPORTED, reason="shared syncs need Linux 4.13, OFD locks")


@shared_only
def test_w43_shared_sync_without_writing_the_unpublished_records_again_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only its own records are written: those of a writer whose sync failed may sit in clean pages, never synced.
    mutate(
        monkeypatch,
        Writer,
        "_write_shared",
        (
            "segment,\n            commit.commit_offset,\n            written_end.commit_offset,",
            "segment,\n            written_end.commit_offset,\n            written_end.commit_offset,",
        ),
    )
    failure_of(failed_sync_tests.test_a_writer_sharing_syncs_writes_again_what_a_failed_sync_left_unpublished, tmp_path)


@shared_only
def test_w43_shared_sync_without_writing_the_header_again_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The slot read may sit in a clean page after another writer's failed sync: its own sync does not write it.
    mutate(
        monkeypatch,
        Writer,
        "_rewrite_as_read",
        ("self._fs.pwrite(segment.fd, header or self._fs.pread(segment.fd, HEADER_SIZE, 0), 0)", "pass"),
    )
    failure_of(failed_sync_tests.test_a_writer_sharing_syncs_writes_again_what_a_failed_sync_left_unpublished, tmp_path)


@shared_only
def test_w43_shared_publication_before_the_segment_sync_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # It syncs another file: the segment's records are published unsynced.
    mutate(
        monkeypatch,
        Writer,
        "_sync_and_publish",
        ("self._fs.fdatasync(segment.fd)  # step 6:", "self._fs.fdatasync(self._lock_fd)  # step 6:"),
    )
    problems = publication_problems(record(tmp_path / "recorded", SHARED.steps))
    assert any("published before its records were synced" in problem for problem in problems), problems


@shared_only
def test_w43_shared_batch_behind_a_torn_tail_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A writer that shares syncs appends behind a dead writer's torn batch instead of recovering it first.
    assert shared_torn_tail_problems(tmp_path / "reference") == []
    mutate(
        monkeypatch,
        Writer,
        "_write_shared",
        ("if not self._tail_clear(segment, scan.end, scan.file_size):", "if False:"),
    )
    problems = shared_torn_tail_problems(tmp_path / "log")
    assert problems, "a batch written behind a torn tail went unnoticed"


@shared_only
def test_w43_shared_publication_below_the_commit_point_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A writer whose records another writer's publication already covers publishes its own, shorter end: it
    # looks for that publication neither without the lock nor under it.
    assert publication_problems(record(tmp_path / "reference", SHARED.steps)) == []
    mutate(monkeypatch, Writer, "_publish_shared", ("if current.commit_offset >= end.commit_offset:", "if False:"))
    mutate(
        monkeypatch,
        Writer,
        "_sync_and_publish",
        ("if self._published_already(segment, end.commit_offset):", "if False:"),
    )
    problems = publication_problems(record(tmp_path / "recorded", SHARED.steps))
    assert any("the commit point moved back" in problem for problem in problems), problems


@shared_only
def test_w44_shared_publication_over_a_slot_not_known_durable_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The next generation goes to the other slot although another writer published after this one's sync began.
    mutate(monkeypatch, Writer, "_publish_shared", ("step = 1 if current.generation == seen else 2", "step = 1"))
    problems = publication_problems(record(tmp_path / "recorded", SHARED.steps))
    assert any(re.search(r"generation \d+ after \d+ at offset", problem) for problem in problems), problems


def test_w25_clean_up_without_the_directory_sync_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mutate(monkeypatch, Writer, "_open", ("self._fs.fsync_dir(self.directory)", "pass"))
    failure_of(failed_sync_tests.test_acknowledged_records_survive_power_loss_after_a_failed_directory_sync, tmp_path)


def test_w27_seal_before_the_directory_sync_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Cutover step 3 left out: N is sealed while the name of N+1 is not durable yet.
    mutate(monkeypatch, Writer, "_create_segment", ("self._fs.fsync_dir(self.directory)", "pass"))
    trace = record(tmp_path / "recorded", [*singles(1, (5,)), Cutover(), *singles(2, (3,))])
    problems = publication_problems(trace)
    assert any("sealed before the directory entry of its successor was synced" in p for p in problems), problems


def test_w28_segment_linked_before_its_header_is_synced_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The temporary file is linked into place first, then its header is written and synced.
    mutate(
        monkeypatch,
        Writer,
        "_create_segment",
        (
            "    self._fs.pwrite(fd, header_bytes, 0)\n"
            "        self._fs.fdatasync(fd)\n"
            "        self._fs.link(temp, final)\n",
            "    self._fs.link(temp, final)\n"
            "        self._fs.pwrite(fd, header_bytes, 0)\n"
            "        self._fs.fdatasync(fd)\n",
        ),
    )
    trace = record(tmp_path / "recorded", singles(1, (5,)))
    checker = CrashChecker(tmp_path / "scratch", "link before header", {})
    checker.run(trace, ("P1",), cap=16)
    assert checker.results["P1"].violations, "a torn header under a segment's name went unnoticed"


def test_w29_sealed_last_segment_left_without_successor_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def create_successor(self: Writer, segment: object, commit: object) -> object:
        return segment  # the sealed segment stays the last one

    monkeypatch.setattr(Writer, "_create_successor", create_successor)
    failure_of(fault_tests.test_t13_sealed_segment_without_its_successor_gets_one, tmp_path / "log")


def test_w31_commit_without_the_lock_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert two_writers_problems(tmp_path / "reference", Rendezvous()) == []
    mutate(monkeypatch, _DirectoryLock, "__enter__", ("writer._take_lock()", "pass"))
    problems = two_writers_problems(tmp_path / "log", Rendezvous())
    assert any("two appends acknowledged with one index" in problem for problem in problems), problems


def test_w32_flock_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The first writer locks with flock; the second, the reference, with an OFD lock: they never meet.
    def lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)

    def unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)

    flocking = Rendezvous()
    monkeypatch.setattr(flocking, "lock", lock)
    monkeypatch.setattr(flocking, "unlock", unlock)
    problems = two_writers_problems(tmp_path / "log", flocking)
    assert any("two appends acknowledged with one index" in problem for problem in problems), problems


def _without_ofd_locks(monkeypatch: pytest.MonkeyPatch) -> None:
    """A platform without OFD locks, where writers take POSIX record locks (as W-32 allows there)."""
    for name in ("_OFD_SETLKW", "_OFD_SETLK", "_OFD_GETLK"):
        monkeypatch.setattr(fs_module, name, None)


def test_posix_record_locks_exclude_the_writers_of_one_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _without_ofd_locks(monkeypatch)
    assert two_writers_problems(tmp_path / "log", Rendezvous()) == []


def test_w33_a_lock_file_opened_per_writer_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each writer opens LOCK itself instead of sharing its process's descriptor, and takes no turn in the process.
    _without_ofd_locks(monkeypatch)
    monkeypatch.setattr(OsFileSystem, "open_lock", lambda self, path: self.open_write(path, create=True))
    monkeypatch.setattr(OsFileSystem, "close_lock", lambda self, fd: self.close(fd))
    monkeypatch.setattr(OsFileSystem, "lock", lambda self, fd: fcntl.lockf(fd, fcntl.LOCK_EX))
    monkeypatch.setattr(OsFileSystem, "unlock", lambda self, fd: fcntl.lockf(fd, fcntl.LOCK_UN))
    problems = two_writers_problems(tmp_path / "log", Rendezvous())
    assert any("two appends acknowledged with one index" in problem for problem in problems), problems


def test_w36_compression_file_not_held_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mutate(monkeypatch, maintenance, "_compress_one", ("fs.hold(out)", "pass"))
    failure_of(
        maintenance_tests.test_a_writer_opening_the_log_leaves_a_compression_in_progress_alone,
        tmp_path / "log",
        monkeypatch,
    )


def test_w37_clean_up_before_the_refusal_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The open cleans up first and checks committed data afterwards: a refusal comes after a change.
    mutate(
        monkeypatch,
        Writer,
        "_open",
        (
            "plan = plan_open(self._fs, self.directory, verify=verify)",
            "plan = plan_open(self._fs, self.directory, verify=False)",
        ),
        (
            "self.recovery += plan.actions()",
            "plan_open(self._fs, self.directory, verify=verify)\n    self.recovery += plan.actions()",
        ),
    )
    failure_of(maintenance_tests.test_a_refusal_changes_no_file, tmp_path / "log")


def test_w38_replaced_lock_unnoticed_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mutate(monkeypatch, Writer, "_take_lock", ("if self._fs.names(self._lock_path, self._lock_identity):", "if True:"))
    failure_of(maintenance_tests.test_a_deleted_lock_does_not_let_two_writers_commit_at_once, tmp_path / "log")


# -- W-39 and W-40 --------------------------------------------------------------------------------------------------


@pytest.mark.spec("W-39")
def test_w39_ordinary_writer_relying_on_its_own_slot_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A writer that releases the lock after each batch, yet skips steps 1 to 5 as an exclusive writer does.
    assert alternating_writers_problems(tmp_path / "reference") == []
    mutate(monkeypatch, Writer, "_prepare", ("if self._lock_held:", "if True:"))
    problems = alternating_writers_problems(tmp_path / "log")
    assert any("two appends acknowledged with one index" in problem for problem in problems), problems
    assert any("acknowledged record lost" in problem for problem in problems), problems


@pytest.mark.spec("W-39")
def test_w39_exclusive_writer_releasing_the_lock_between_batches_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert exclusive_writer_problems(tmp_path / "reference") == []
    # Every commit ends by unlocking LOCK; the exclusive writer goes on relying on the slot it published.
    mutate(monkeypatch, _DirectoryLock, "__exit__", ("if not writer._lock_held:", "if True:"))
    problems = exclusive_writer_problems(tmp_path / "log")
    assert any("two appends acknowledged with one index" in problem for problem in problems), problems


@pytest.mark.spec("W-40")
def test_w40_flush_publishing_before_its_sync_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # flush() and close() still sync before they return, but only after publishing the buffer's commit point.
    # The commit is the record buffer's: the reference one here, so that its source can be mutated.
    monkeypatch.setattr(_accel, "RecordBuffer", None)
    options = {"durability": "process", "flush_interval": 3600}
    steps: list[Step] = [*singles(1, (5, 0, 17)), Flush(), *singles(4, (9,)), Flush()]
    assert_clean(
        checked(
            tmp_path / "s1", "process flush", options, record(tmp_path / "reference", steps, **options), "P1", cap=16
        )
    )
    mutate(
        monkeypatch,
        buffer_module,
        "_write_and_publish",
        (
            "        if sync != SYNC_NONE:\n            io.fdatasync(fd)\n",
            "",
        ),
        ("        io.pwrite(fd, raw, at)", "        io.pwrite(fd, raw, at)\n    if sync:\n        io.fdatasync(fd)"),
    )
    trace = record(tmp_path / "recorded", steps, **options)
    result = checked(tmp_path / "s2", "process flush publishing first", options, trace, "P1", cap=16)
    assert result.violations, "a commit point published before its records were synced went unnoticed"


@pytest.mark.spec("W-40")
def test_w40_cutover_without_committing_the_buffer_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert cutover_in_process_mode_problems(tmp_path / "reference") == []
    # Both cutovers of the process mode: cutover() and the one a record that does not fit asks for.
    mutate(monkeypatch, Writer, "cutover", ("self._commit_buffer_locked(sync=True, close=True)", "pass"))
    mutate(
        monkeypatch,
        Writer,
        "_cut_over_buffered",
        ("segment, commit = self._commit_buffer_locked(sync=True, close=True)", "segment, commit = self._known"),
    )
    problems = cutover_in_process_mode_problems(tmp_path / "log")
    assert any("cutover()" in problem for problem in problems), problems
    assert any("capacity" in problem for problem in problems), problems


MAPPED = {"durability": "mmap", "preallocate": 512}
MAPPED_STEPS: list[Step] = [*singles(1, (5, 0, 17)), Flush(), *singles(4, (9, 3)), Flush()]


def mapped_trace(root: Path, *, acks_at_append: bool = False) -> Trace:
    root.mkdir()
    return run(root, MAPPED_STEPS, writer_options=MAPPED, acks_at_append=acks_at_append)


@pytest.mark.spec("W-41")
def test_w41_slot_stored_before_its_record_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The mapped append stores the slot first: a process crash between the two stores publishes a hole.
    monkeypatch.setattr(_accel, "RecordBuffer", None)
    assert_clean(
        checked(tmp_path / "s1", "mmap", MAPPED, mapped_trace(tmp_path / "reference", acks_at_append=True), "P0")
    )
    mutate(
        monkeypatch,
        buffer_module,
        "_write_and_publish",
        ("        if records:\n            io.pwrite(fd, records, end - len(records))\n", ""),
        (
            "        io.pwrite(fd, raw, at)",
            "        io.pwrite(fd, raw, at)\n    if records:\n        io.pwrite(fd, records, end - len(records))",
        ),
    )
    trace = mapped_trace(tmp_path / "recorded", acks_at_append=True)
    result = checked(tmp_path / "s2", "mmap slot first", MAPPED, trace, "P0")
    assert result.violations, "a slot stored before the record it publishes went unnoticed"


@pytest.mark.spec("W-41")
def test_w41_flush_without_syncing_the_mapping_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_accel, "RecordBuffer", None)
    reference = power_loss_results(mapped_trace(tmp_path / "reference"), "mmap", tmp_path / "s1")
    assert all(result.states > 0 and not result.violations for result in reference.values()), reference
    mutate(monkeypatch, PureRecordBuffer, "_commit_mapped", ("if sync:", "if False:"))
    mutant = power_loss_results(mapped_trace(tmp_path / "recorded"), "mmap", tmp_path / "s2")
    problems = [str(v) for result in mutant.values() for v in result.violations]
    assert any("acknowledged record lost" in problem for problem in problems), problems[:5]


@pytest.mark.spec("W-42")
def test_w42_unsynced_publication_over_the_durable_slot_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each mapped append takes the next generation, so that the second after a sync overwrites the durable slot.
    monkeypatch.setattr(_accel, "RecordBuffer", None)
    assert publication_problems(mapped_trace(tmp_path / "reference")) == []
    mutate(
        monkeypatch,
        PureRecordBuffer,
        "_publish_mapped",
        ("1 if self._generation == self._synced_generation else 2", "1"),
    )
    trace = mapped_trace(tmp_path / "recorded")
    assert any("while the other slot is not durable" in problem for problem in publication_problems(trace))
    lost = power_loss_results(trace, "mmap", tmp_path / "s2")
    assert any(result.violations for result in lost.values()), "a power loss tearing both slots went unnoticed"


EXCLUSIVE_STEPS: list[Step] = [*singles(1, (5, 0, 17, 150)), Cutover(), *singles(5, (9, 3))]


@pytest.mark.spec("W-13")
def test_w13_records_alone_written_without_their_sync_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An exclusive writer syncs each batch's records by a synchronized write; the mutant writes them plainly.
    monkeypatch.setattr(_accel, "RecordBuffer", None)
    assert publication_problems(record(tmp_path / "reference", EXCLUSIVE_STEPS, exclusive=True)) == []
    mutate(
        monkeypatch,
        buffer_module,
        "_write_and_publish",
        ("io.pwrite_synced(fd, records, end - len(records))", "io.pwrite(fd, records, end - len(records))"),
    )
    problems = publication_problems(record(tmp_path / "recorded", EXCLUSIVE_STEPS, exclusive=True))
    assert any("published before its records were synced" in problem for problem in problems), problems


@pytest.mark.spec("W-42")
def test_w42_records_synced_alone_then_published_over_the_durable_slot_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A synchronized write of the records leaves the active slot unsynced: the mutant publishes g+1 anyway.
    monkeypatch.setattr(_accel, "RecordBuffer", None)
    options = {"exclusive": True}
    reference = record(tmp_path / "reference", EXCLUSIVE_STEPS, **options)
    assert_clean(checked(tmp_path / "s1", "exclusive records alone", options, reference, "P1", cap=16))
    mutate(
        monkeypatch,
        PureRecordBuffer,
        "_commit",
        (
            "if sync == SYNC_FILE or generation == self._synced_generation",
            "if sync != SYNC_NONE or generation == self._synced_generation",
        ),
    )
    trace = record(tmp_path / "recorded", EXCLUSIVE_STEPS, **options)
    assert any("while the other slot is not durable" in problem for problem in publication_problems(trace))
    result = checked(tmp_path / "s2", "exclusive records alone, W-42 broken", options, trace, "P1", cap=16)
    assert result.violations, "a power loss tearing both slots went unnoticed"


# Captured before the fixtures above switch them off: a round of the commit table is the compiled batch.
COMPILED_BATCH = (_accel.shared_write, _accel.shared_publish)
table_only = pytest.mark.skipif(
    _accel.CommitTable is None or None in COMPILED_BATCH or not fs_module.SHARED_SYNC_SUPPORTED,
    reason="no commit table here (compiled, Linux)",
)


def with_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled batch back on, for the rounds of the commit table (spec 6.9)."""
    monkeypatch.setattr(_accel, "shared_write", COMPILED_BATCH[0])
    monkeypatch.setattr(_accel, "shared_publish", COMPILED_BATCH[1])


@table_only
def test_w46_shared_batch_acknowledged_where_a_dead_round_planned_it_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The plan of a round that died is taken for a commit, unlooked at: that round may never have written it.
    with_table(monkeypatch)
    mutate(
        monkeypatch,
        Writer,
        "_commit_queued",
        ("if not self._found_after_recovery(batch, log, offset, index, timestamp):", "if False:"),
    )
    failure = failure_of(
        table_tests.test_a_round_that_dies_loses_and_repeats_nothing_of_the_batches_it_claimed,
        tmp_path / "log",
        "die-before-write",
    )
    assert "== {}" in failure, failure  # caught by the places of the records, not by a count


@table_only
def test_w47_shared_batch_committed_again_after_a_dead_round_committed_it_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The writer does not look in the log: the batch the dead round wrote, and recovery adopted, goes in twice.
    with_table(monkeypatch)
    mutate(monkeypatch, Writer, "_found_after_recovery", ("return found == len(expected)", "return False"))
    failure = failure_of(
        table_tests.test_a_round_that_dies_loses_and_repeats_nothing_of_the_batches_it_claimed,
        tmp_path / "log",
        "die-after-write",
    )
    assert "== {}" in failure, failure  # a record committed twice, not a count
