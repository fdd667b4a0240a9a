"""Every crash state of recorded workloads, under persistence models P0 to P4.

The small workloads (up to 10 records, with and without a cutover, in
batches, preallocated, strict) are enumerated exhaustively under P0 to P3
(by default a cutover at four places of the ten, and the preallocated and
exclusive variants without P3; ``--full`` runs them all);
a 60-record workload under P0 and P2 (512-byte and 4 KiB sectors); media
faults (P4) on the finished logs. The modes that publish without a sync
(``mmap``) promise a power loss no more than what a flush acknowledged:
their P1 and P2 states are checked for that, and for damage reported, never
silent. Sampled states also get their recovery
crashed and a second generation of appends crashed again. ``--full`` adds
P1 and P3 on the 60-record workload, a 150-record workload and denser
sampling. The counts land in build/crash/summary.json.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from pathlib import Path

import pytest

from openbinlog import BinlogError, BinlogIOError, Reader, Writer, _accel
from openbinlog._fs import SHARED_SYNC_SUPPORTED

from .checker import CrashChecker, ModelResult, Sampling, power_loss_results
from .crash_states import MODELS, PAGE, SECTOR
from .fs_trace import Create, Trace
from .media_faults import MediaFaultChecker
from .summary import CrashSummary
from .workloads import LOG, Workload, large_workload, run, shared_workloads, small_workloads

SMALL = small_workloads()
EXCLUSIVE_WORKLOADS = [w for w in SMALL if w.name in ("exclusive", "process", "process-preallocated", "mmap")]
MEDIA_FAULT_WORKLOADS = [
    w
    for w in SMALL
    if w.name in ("sync", "sync-cutover-after-5", "batches", "preallocated", "exclusive", "process", "mmap")
]


def sampling(full: bool) -> Sampling:
    if full:
        return Sampling(recovery_crash_every=25, second_generation_every=50, nested_cap=4)
    return Sampling(recovery_crash_every=400, second_generation_every=600, nested_cap=2)


def record(tmp_path: Path, workload: Workload) -> Trace:
    root = tmp_path / "recorded"
    root.mkdir()
    return run(root, workload.steps, writer_options=workload.writer_options, acks_at_append=workload.acks_at_append)


def assert_no_violations(results: dict[str, ModelResult]) -> None:
    violations = [v for result in results.values() for v in result.violations]
    assert not violations, f"{len(violations)} violations, the first:\n" + "\n".join(map(str, violations[:10]))


def check_small_workload(
    workload: Workload, tmp_path: Path, crash_summary: CrashSummary, full_run: bool, label: str
) -> None:
    started = time.monotonic()
    workload = workload.for_run(full_run)
    trace = record(tmp_path, workload)
    start = trace.mark_position(workload.start_mark) if workload.start_mark else 0
    assert start is not None
    checker = CrashChecker(tmp_path / "scratch", workload.name, workload.writer_options, sampling(full_run))
    checker.run(trace, workload.models, start=start)
    crash_summary.add_all(label, checker.results)
    crash_summary.timed(label, time.monotonic() - started)
    assert all(checker.results[model].states > 0 for model in workload.models)
    assert_no_violations(checker.results)


@pytest.mark.parametrize("workload", SMALL, ids=lambda w: w.name)
def test_every_crash_state_of_a_small_workload_keeps_every_invariant(
    workload: Workload, tmp_path: Path, crash_summary: CrashSummary, full_run: bool
) -> None:
    if workload.full_only and not full_run:
        pytest.skip("--full only")
    check_small_workload(workload, tmp_path, crash_summary, full_run, workload.name)


@pytest.mark.skipif(not SHARED_SYNC_SUPPORTED, reason="shared syncs need Linux 4.13 and OFD locks")
@pytest.mark.spec("W-43", "W-44")
@pytest.mark.parametrize("workload", shared_workloads(), ids=lambda w: w.name)
def test_every_crash_state_of_writers_sharing_syncs_keeps_every_invariant(
    workload: Workload, tmp_path: Path, crash_summary: CrashSummary, full_run: bool, batch_code: str
) -> None:
    """Two and three writers write one after the other and sync at once: every order of their syncs and
    publications, every crash state under P0 to P3 (spec 6.8.1), for the compiled batch and the Python one;
    the preallocated and strict variants with ``--full`` (the SIGKILL test of sharing writer processes runs
    every mode)."""
    if workload.full_only and not full_run:
        pytest.skip("--full only")
    check_small_workload(workload, tmp_path, crash_summary, full_run, f"{workload.name}, {batch_code}")


@pytest.mark.parametrize("workload", EXCLUSIVE_WORKLOADS, ids=lambda w: w.name)
def test_every_crash_state_of_an_exclusive_workload_with_the_pure_buffer_keeps_every_invariant(
    workload: Workload,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    crash_summary: CrashSummary,
    full_run: bool,
) -> None:
    """The exclusive writer encodes in its record buffer: the compiled one above, the reference here (under P0
    but with ``--full``: the two buffers make the same writes, test_record_buffer proves)."""
    monkeypatch.setattr(_accel, "RecordBuffer", None)
    if not full_run:
        workload = dataclasses.replace(workload, models=("P0",))
    check_small_workload(workload, tmp_path, crash_summary, full_run, f"{workload.name} (pure buffer)")


@pytest.mark.parametrize("buffer", ["compiled", "pure"])
def test_power_loss_in_the_mmap_mode_keeps_every_flushed_record_and_reports_damage(
    buffer: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, crash_summary: CrashSummary
) -> None:
    """Spec 6.5: the mmap mode survives a power loss as the os mode does, and flush() makes it durable."""
    if buffer == "pure":
        monkeypatch.setattr(_accel, "RecordBuffer", None)
    started = time.monotonic()
    (workload,) = (dataclasses.replace(w, acks_at_append=False) for w in SMALL if w.name == "mmap")
    trace = record(tmp_path, workload)
    results = power_loss_results(trace, workload.name, tmp_path / "state")
    crash_summary.add_all(f"mmap power loss ({buffer})", results)
    crash_summary.timed(f"mmap power loss ({buffer})", time.monotonic() - started)
    assert all(result.states > 100 for result in results.values())
    assert_no_violations(results)


def test_large_workload_under_sector_tearing_keeps_every_invariant(
    tmp_path: Path, crash_summary: CrashSummary, full_run: bool
) -> None:
    started = time.monotonic()
    workload = large_workload(60)
    trace = record(tmp_path, workload)
    checker = CrashChecker(tmp_path / "scratch", workload.name, workload.writer_options, sampling(full_run))
    checker.run(trace, ("P0", "P2") if not full_run else MODELS)
    # Whole 4 KiB pages, old or new: what a file system that writes pages, not sectors, can leave.
    pages = CrashChecker(tmp_path / "pages", workload.name, workload.writer_options)
    pages.run(trace, ("P2",), granularity=PAGE)
    results = {**checker.results, **{f"{label}/4KiB": result for label, result in pages.results.items()}}
    crash_summary.add_all(workload.name, results)
    crash_summary.timed(workload.name, time.monotonic() - started)
    assert checker.results["P2"].states > 1000
    assert_no_violations(results)


@pytest.mark.skipif("not config.getoption('--full', default=False)", reason="--full only")
def test_very_large_workload_under_sector_tearing_keeps_every_invariant(
    tmp_path: Path, crash_summary: CrashSummary
) -> None:
    started = time.monotonic()
    workload = large_workload(150)
    trace = record(tmp_path, workload)
    checker = CrashChecker(tmp_path / "scratch", workload.name, workload.writer_options, sampling(True))
    checker.run(trace, ("P0", "P1", "P2"), granularity=SECTOR)
    crash_summary.add_all(workload.name, checker.results)
    crash_summary.timed(workload.name, time.monotonic() - started)
    assert_no_violations(checker.results)


@pytest.mark.parametrize("workload", MEDIA_FAULT_WORKLOADS, ids=lambda w: w.name)
def test_media_faults_on_committed_data_are_reported(
    workload: Workload, tmp_path: Path, crash_summary: CrashSummary
) -> None:
    started = time.monotonic()
    trace = record(tmp_path, workload)
    checker = MediaFaultChecker(tmp_path / "scratch", workload.name, workload.writer_options)
    checker.run(trace)
    crash_summary.add(workload.name, "P4", checker.result)
    crash_summary.timed(f"{workload.name} (P4)", time.monotonic() - started)
    assert checker.result.states > 500
    assert not checker.result.violations, "\n".join(map(str, checker.result.violations[:10]))


def _log_with_records(directory: Path, count: int) -> None:
    with Writer(directory) as writer:
        for index in range(count):
            writer.append(b"committed %d" % index)


def test_zeroed_header_of_the_last_segment_holding_records_is_reported(log_dir: Path) -> None:
    _log_with_records(log_dir, 3)
    segment = log_dir / "00000001.dat"
    data = segment.read_bytes()
    segment.write_bytes(bytes(256) + data[256:])
    with pytest.raises(BinlogError) as raised, Reader(log_dir) as reader:
        list(reader)
    assert not isinstance(raised.value, BinlogIOError)
    assert raised.value.log == 1


def test_recovery_never_deletes_a_segment_that_holds_records(log_dir: Path) -> None:
    _log_with_records(log_dir, 3)
    segment = log_dir / "00000001.dat"
    data = segment.read_bytes()
    segment.write_bytes(bytes(256) + data[256:])
    with contextlib.suppress(BinlogError):  # refusing to open is fine; deleting the records is not
        Writer(log_dir).close()
    assert segment.exists() and segment.read_bytes()[256:] == data[256:]


def test_recorded_trace_resolves_the_cutover_link_to_one_file(tmp_path: Path) -> None:
    """The recorder sees the temporary name and the segment name as one inode, as the kernel does."""
    trace = record(tmp_path, SMALL[1])
    *_, last = trace.points(len(trace.ops))
    names = {path: inode for path, inode in last.volatile.reachable().items() if path.startswith(f"{LOG}/0")}
    assert sorted(names) == [f"{LOG}/00000001.dat", f"{LOG}/00000002.dat"]
    created = [op for op in trace.ops if isinstance(op, Create) and op.name.endswith(".tmp")]
    assert {op.inode for op in created} >= set(names.values())
