"""The test of the tests: writers that break the commit protocol must be caught.

A writer that publishes its commit point before its records are synced
(jPOS-EE's order: write the records, write the header, one sync) survives a
process crash, because the page cache keeps everything, and loses
acknowledged records or exposes damage after a power loss. One that never
syncs loses them too. The enumerator must find violations for both under
P1, and none for the first under P0; the kill harness, in its write-back
(power loss) mode, must catch a child whose commit point reaches the disk
before its records.
"""

from __future__ import annotations

import random
from pathlib import Path

from openbinlog._format import HEADER_SIZE

from .checker import CrashChecker
from .recording_fs import RecordingFileSystem
from .summary import CrashSummary
from .test_sigkill import Campaign
from .workloads import run, small_workloads

WORKLOAD = small_workloads()[0]  # single appends, no cutover


class PublishBeforeSync(RecordingFileSystem):
    """Defers each sync of a file until its header (the commit point) has been written."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self._deferred: set[int] = set()

    def fdatasync(self, fd: int) -> None:
        self._deferred.add(fd)

    def pwrite(self, fd: int, data: bytes, offset: int) -> None:
        super().pwrite(fd, data, offset)
        if offset < HEADER_SIZE and fd in self._deferred:
            self._deferred.discard(fd)
            super().fdatasync(fd)


class NeverSync(RecordingFileSystem):
    def fdatasync(self, fd: int) -> None:
        pass


def _check(
    tmp_path: Path, fs_class: type[RecordingFileSystem], models: tuple[str, ...], *, records: int, cap: int
) -> CrashChecker:
    root = tmp_path / "recorded"
    root.mkdir()
    trace = run(root, WORKLOAD.steps[:records], writer_options={}, fs=fs_class(root))
    checker = CrashChecker(tmp_path / "scratch", f"broken: {fs_class.__name__}", {})
    checker.run(trace, models, cap=cap)
    return checker


def test_enumerator_catches_a_writer_that_publishes_before_syncing(tmp_path: Path, crash_summary: CrashSummary) -> None:
    checker = _check(tmp_path, PublishBeforeSync, ("P0", "P1"), records=10, cap=4096)
    crash_summary.add_all(checker.workload, {f"broken: publish before sync/{k}": v for k, v in checker.results.items()})
    # After a power loss its commit point covers records that never reached the disk (fault T7).
    damaged = [v for v in checker.results["P1"].violations if "recovery failed" in v.message]
    assert len(checker.results["P1"].violations) > 0 and damaged
    # Published before synced, seen in the trace itself.
    assert any("published before its records were synced" in v.message for v in checker.results["trace"].violations)
    # A process crash keeps the page cache: this writer survives it, and the enumerator must say so.
    assert checker.results["P0"].states > 0 and not checker.results["P0"].violations


def test_enumerator_catches_a_writer_that_never_syncs(tmp_path: Path, crash_summary: CrashSummary) -> None:
    # Nothing ever becomes durable, so every write stays pending: keep the workload short and sample.
    checker = _check(tmp_path, NeverSync, ("P1",), records=3, cap=64)
    crash_summary.add_all(checker.workload, {f"broken: never syncs/{k}": v for k, v in checker.results.items()})
    assert len(checker.results["P1"].violations) > 0


def test_kill_harness_catches_a_writer_whose_commit_point_reaches_the_disk_first(tmp_path: Path) -> None:
    campaign = Campaign(tmp_path / "log", True, random.Random(11), "SIGKILL broken", header_before_data=True)
    for child in range(1, 16):
        campaign.kill_one(child)
    campaign.finish()
    assert campaign.result.violations, "killing a writer whose commit point outruns its records went unnoticed"
