"""Fault T9: a sync that fails (EIO) must acknowledge nothing and stop the writer until it is reopened.

Checked with the recording file system, which fails the sync it is told to
and models the failed sync as making nothing durable (and, where a test
asks for Linux's behaviour, as marking the pages clean so that no later
sync writes them); the enumerator then shows what a power loss after the
failure can cost.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from openbinlog import BinlogIOError, Writer, WriterFailedError
from openbinlog._fs import SHARED_SYNC_SUPPORTED

from .checker import CrashChecker
from .fs_trace import Trace
from .recording_fs import RecordingFileSystem
from .workloads import LOG, deterministic_clock, payload


def _append(writer: Writer, fs: RecordingFileSystem, index: int) -> None:
    data = payload(index, 8)
    fs.trace.expected.append((data, -1))
    ref = writer.append(data)
    fs.mark("ack", ref.index)


def test_failed_batch_sync_acknowledges_nothing_and_stops_the_writer(tmp_path: Path) -> None:
    fs = RecordingFileSystem(tmp_path)
    with Writer(tmp_path / LOG, fs=fs, clock_us=deterministic_clock()) as writer:
        _append(writer, fs, 1)
        fs.fail_sync()
        fs.trace.expected.append((payload(2, 8), -1))
        with pytest.raises(BinlogIOError):
            writer.append(payload(2, 8))
        with pytest.raises(WriterFailedError):
            writer.append(payload(3, 8))
    checker = CrashChecker(tmp_path / "scratch", "failed batch sync", {})
    checker.run(fs.trace, ("P0", "P1"))
    assert not [v for result in checker.results.values() for v in result.violations]


def _cutover_with_failed_directory_sync(root: Path) -> tuple[Trace, Writer, RecordingFileSystem]:
    fs = RecordingFileSystem(root)
    writer = Writer(root / LOG, fs=fs, clock_us=deterministic_clock())
    _append(writer, fs, 1)
    _append(writer, fs, 2)
    fs.fail_sync(directory=True)  # cutover step 3: the new segment's name may not be durable
    with pytest.raises(BinlogIOError):
        writer.cutover()
    return fs.trace, writer, fs


def test_failed_directory_sync_in_cutover_stops_the_writer(tmp_path: Path) -> None:
    _trace, writer, _fs = _cutover_with_failed_directory_sync(tmp_path)
    with writer, pytest.raises(WriterFailedError):
        writer.append(b"after a failed cutover")


def test_acknowledged_records_survive_power_loss_after_a_failed_directory_sync(tmp_path: Path) -> None:
    trace, writer, fs = _cutover_with_failed_directory_sync(tmp_path)
    writer.close()
    with Writer(tmp_path / LOG, fs=fs, clock_us=deterministic_clock()) as reopened:  # W-19: reopen to go on
        _append(reopened, fs, 3)
    checker = CrashChecker(tmp_path / "scratch", "failed directory sync", {})
    checker.run(trace, ("P1",))
    lost = [v for v in checker.results["P1"].violations if "acknowledged record lost" in v.message]
    assert not lost, lost[0]


def test_records_adopted_after_a_failed_sync_reach_the_disk(tmp_path: Path) -> None:
    fs = RecordingFileSystem(tmp_path)
    fs.trace.failed_sync_marks_clean = True
    with Writer(tmp_path / LOG, fs=fs, clock_us=deterministic_clock()) as writer:
        _append(writer, fs, 1)
        fs.fail_sync()
        fs.trace.expected.append((payload(2, 8), -1))
        with pytest.raises(BinlogIOError):
            writer.append(payload(2, 8))
    with Writer(tmp_path / LOG, fs=fs, clock_us=deterministic_clock()) as writer:
        assert [action.action for action in writer.recovery] == ["adopt_records"]
        _append(writer, fs, 3)
    checker = CrashChecker(tmp_path / "scratch", "failed sync, pages marked clean", {})
    checker.run(fs.trace, ("P1",))
    assert not checker.results["P1"].violations, checker.results["P1"].violations[0]


@pytest.mark.skipif(not SHARED_SYNC_SUPPORTED, reason="shared syncs need Linux 4.13 and OFD locks")
@pytest.mark.spec("W-19", "W-43")
def test_a_writer_sharing_syncs_writes_again_what_a_failed_sync_left_unpublished(tmp_path: Path) -> None:
    """A sync fails in one writer (Linux marks its pages clean); another writer, whose descriptor did not
    see the error, appends after the failed records: its sync must put them on the disk before its slot
    covers them (6.8 step 4), or a power loss leaves a hole below the commit point."""
    fs = RecordingFileSystem(tmp_path)
    fs.trace.failed_sync_marks_clean = True
    clock = deterministic_clock()
    with (
        Writer(tmp_path / LOG, fs=fs, clock_us=clock) as failing,
        Writer(tmp_path / LOG, fs=fs, clock_us=clock) as other,
    ):
        _append(failing, fs, 1)
        fs.fail_sync()
        fs.trace.expected.append((payload(2, 8), -1))
        with pytest.raises(BinlogIOError):
            failing.append(payload(2, 8))
        with pytest.raises(WriterFailedError):
            failing.append(payload(3, 8))
        _append(other, fs, 3)  # index 3: the failed record 2 lies before it, whole, in the page cache
        _append(other, fs, 4)
    checker = CrashChecker(tmp_path / "scratch", "shared sync after a failed sync, pages marked clean", {})
    checker.run(fs.trace, ("P0", "P1"))
    violations = [v for result in checker.results.values() for v in result.violations]
    assert not violations, violations[0]
