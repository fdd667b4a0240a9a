"""The commit table (spec 6.9): writer processes whose batches one of them commits in a round of 6.8.

Real processes on real files. A round that dies at each of its steps (``OPENBINLOG_TABLE_FAILPOINT`` makes
the process leading it exit there, as a SIGKILL would) loses no acknowledged record and acknowledges no
record twice: the next round finds the batches it had claimed in the log or fails them, and their writers
then find out under the whole lock.
"""

from __future__ import annotations

import collections
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from logtools import log_dir

from openbinlog import Reader, Writer, _accel, verify
from openbinlog._fs import SHARED_SYNC_SUPPORTED

__all__ = ["log_dir"]

pytestmark = pytest.mark.skipif(
    _accel.CommitTable is None or not SHARED_SYNC_SUPPORTED, reason="no commit table here (compiled, Linux)"
)

CHILD = Path(__file__).resolve().parent / "child_table_writer.py"


def _start(directory: Path, tag: str, count: int, failpoint: str | None = None) -> subprocess.Popen[str]:
    env = dict(os.environ)
    env.pop("OPENBINLOG_TABLE_FAILPOINT", None)
    if failpoint is not None:
        env["OPENBINLOG_TABLE_FAILPOINT"] = failpoint
    return subprocess.Popen(
        [sys.executable, str(CHILD), str(directory), tag, str(count)], stdout=subprocess.PIPE, text=True, env=env
    )


def _committed(directory: Path) -> dict[str, list[tuple[int, int, int, int]]]:
    """Every committed record by payload: where it is, and its timestamp."""
    found: dict[str, list[tuple[int, int, int, int]]] = collections.defaultdict(list)
    with Reader(directory) as reader:
        for entry in reader:
            found[entry.payload.decode()].append((entry.ref.log, entry.ref.offset, entry.index, entry.timestamp_us))
    return found


def _acknowledged(lines: list[str]) -> dict[str, tuple[int, int, int]]:
    acks = [line.split() for line in lines if line.startswith("ACK ")]
    return {payload: (int(log), int(offset), int(index)) for _, log, offset, index, payload in acks}


def _each_once_where_acknowledged(directory: Path, acknowledged: dict[str, tuple[int, int, int]]) -> None:
    committed = _committed(directory)
    assert verify(directory).ok
    assert {payload: len(places) for payload, places in committed.items() if len(places) > 1} == {}
    assert {p: ref for p, ref in acknowledged.items() if [place[:3] for place in committed[p]] != [ref]} == {}


@pytest.mark.spec("W-45")
def test_the_batches_of_several_processes_are_committed_together_each_ref_naming_its_record(log_dir: Path) -> None:
    Writer(log_dir).close()
    writers = [_start(log_dir, f"p{n}", 300) for n in range(4)]
    lines = [line for writer in writers for line in writer.communicate()[0].splitlines()]
    assert all(writer.returncode == 0 for writer in writers)
    acknowledged = _acknowledged(lines)
    assert len(acknowledged) == 1200
    _each_once_where_acknowledged(log_dir, acknowledged)
    # A round stamps the records it commits with one clock reading: some rounds took batches of several processes.
    stamps: dict[int, set[str]] = collections.defaultdict(set)
    for payload, places in _committed(log_dir).items():
        stamps[places[0][3]].add(payload.split("-")[0])
    assert max(len(writers_of) for writers_of in stamps.values()) >= 2


@pytest.mark.spec("W-46", "W-47")
@pytest.mark.parametrize(
    ("failpoint", "counter"),
    [("die-before-write", 2), ("die-after-write", 1), ("die-after-publish", 1)],
)
def test_a_round_that_dies_loses_and_repeats_nothing_of_the_batches_it_claimed(
    log_dir: Path, failpoint: str, counter: int
) -> None:
    """The next round finds what the dead round claimed in the log (``orphans_found``, counter 1) or fails it
    (``orphans_failed``, counter 2), and its writer then commits it alone: each record once, where acknowledged."""
    Writer(log_dir).close()
    assert _accel.CommitTable is not None
    watcher = _accel.CommitTable(os.path.join(log_dir, "LOCK"))  # holds the table's file open, to count
    survivor = _start(log_dir, "s", 0)
    deaths, deadline = 0, time.monotonic() + 60
    try:
        while watcher.counters()[counter] == 0 and time.monotonic() < deadline:
            victim = _start(log_dir, f"v{deaths}", 0, failpoint)
            victim_lines = victim.communicate()[0].splitlines()
            assert victim.returncode == 9, victim_lines[-1:]  # it led a round, and died in it
            deaths += 1
    finally:
        survivor.terminate()
    survivor_lines = survivor.communicate()[0].splitlines()
    assert not [line for line in survivor_lines if line.startswith("ERR")]
    acknowledged = _acknowledged(survivor_lines)
    Writer(log_dir).close()  # recovery: the dead rounds' tails adopted or removed
    _each_once_where_acknowledged(log_dir, acknowledged)
    assert watcher.counters()[counter] > 0, (deaths, watcher.counters())  # the step under test was taken


@pytest.mark.spec("W-48")
def test_a_round_whose_sync_fails_fails_its_writer_and_the_others_find_their_records_alone(log_dir: Path) -> None:
    Writer(log_dir).close()
    survivor = _start(log_dir, "s", 0)
    failed: list[str] = []
    try:
        for attempt in range(40):
            victim = _start(log_dir, f"v{attempt}", 0, "sync-fails")
            failed += [line for line in victim.communicate()[0].splitlines() if line.startswith("ERR")]
    finally:
        survivor.terminate()
    survivor_lines = survivor.communicate()[0].splitlines()
    assert len(failed) == 40 and all(line.endswith(" io_error") for line in failed)  # 6.6: its writer fails
    assert not [line for line in survivor_lines if line.startswith("ERR")]
    _each_once_where_acknowledged(log_dir, _acknowledged(survivor_lines))
