"""The commit table (spec 6.9): writer processes whose batches one of them commits in a round of 6.8.

Real processes on real files. ``OPENBINLOG_TABLE_FAILPOINT`` makes the process leading a round exit at a
step of it (as a SIGKILL would) or its sync fail. A writer of the test process appends meanwhile: none of its
acknowledged records is lost, none is committed twice, and each is where its ref says.
"""

from __future__ import annotations

import collections
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from logtools import log_dir

from openbinlog import BinlogError, Reader, Writer, _accel, verify
from openbinlog._fs import SHARED_SYNC_SUPPORTED

__all__ = ["log_dir"]

pytestmark = pytest.mark.skipif(
    _accel.CommitTable is None or not SHARED_SYNC_SUPPORTED, reason="no commit table here (compiled, Linux)"
)

CHILD = Path(__file__).resolve().parent / "child_table_writer.py"
FAILPOINT = "OPENBINLOG_TABLE_FAILPOINT"
Places = dict[str, list[tuple[int, int, int, int]]]


def _start(directory: Path, tag: str, count: int, failpoint: str | None = None) -> subprocess.Popen[str]:
    env = {name: value for name, value in os.environ.items() if name != FAILPOINT}
    if failpoint is not None:
        env[FAILPOINT] = failpoint
    command = [sys.executable, str(CHILD), str(directory), tag, str(count)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)


def _output(process: subprocess.Popen[str]) -> str:
    """What a writer process printed by its end; a process still waiting after a minute fails the test."""
    try:
        return process.communicate(timeout=60)[0]
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise AssertionError("a writer process waited a minute for a round (one whose process had died?)") from None


def _committed(directory: Path) -> Places:
    """Every committed record by payload: where it is (log, offset, index), and its timestamp."""
    found: Places = collections.defaultdict(list)
    with Reader(directory) as reader:
        for entry in reader:
            found[entry.payload.decode()].append((entry.ref.log, entry.ref.offset, entry.index, entry.timestamp_us))
    return found


def _each_once_where_acknowledged(directory: Path, acknowledged: dict[str, tuple[int, int, int]]) -> Places:
    committed = _committed(directory)
    assert verify(directory).ok
    assert {payload: places for payload, places in committed.items() if len(places) > 1} == {}
    misplaced = {p: (ref, committed.get(p)) for p, ref in acknowledged.items() if committed.get(p, [()])[0][:3] != ref}
    assert misplaced == {}
    return committed


class _Survivor:
    """A writer of the test process appending ``s-n`` until stopped: what it acknowledged, and its errors."""

    def __init__(self, directory: Path) -> None:
        self.acknowledged: dict[str, tuple[int, int, int]] = {}
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._writer = Writer(directory)
        self._thread = threading.Thread(target=self._append, daemon=True)
        self._thread.start()

    def _append(self) -> None:
        n = 0
        while not self._stop.is_set():
            payload = f"s-{n}"
            try:
                ref = self._writer.append(payload.encode())
            except BinlogError as error:
                self.errors.append(f"{payload}: {error}")
                return
            self.acknowledged[payload] = (ref.log, ref.offset, ref.index)
            n += 1

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=60)
        # A round that died still marks the token taken in the table (a hint): the others must take it anyway.
        assert not self._thread.is_alive(), "an append waited for a round that had died"
        self._writer.close()


@pytest.mark.spec("W-46")
def test_the_batches_of_several_processes_are_committed_together_each_published_before_its_ref(log_dir: Path) -> None:
    Writer(log_dir).close()
    writers = [_start(log_dir, f"p{n}", 300) for n in range(4)]
    lines = [line.split() for writer in writers for line in _output(writer).splitlines()]
    assert all(writer.returncode == 0 for writer in writers)
    assert [line for line in lines if line[0] != "ACK"] == []  # no record acknowledged before its publication
    acknowledged = {payload: (int(log), int(offset), int(index)) for _, log, offset, index, payload in lines}
    assert len(acknowledged) == 1200
    committed = _each_once_where_acknowledged(log_dir, acknowledged)
    # A round stamps the records it commits with one clock reading: some rounds took batches of several processes.
    writers_of_stamp: dict[int, set[str]] = collections.defaultdict(set)
    for payload, places in committed.items():
        writers_of_stamp[places[0][3]].add(payload.split("-")[0])
    assert max(len(writers) for writers in writers_of_stamp.values()) >= 2


@pytest.mark.spec("W-46", "W-47")
@pytest.mark.parametrize("failpoint", ["die-before-write", "die-after-write", "die-after-publish"])
def test_a_round_that_dies_loses_and_repeats_nothing_of_the_batches_it_claimed(log_dir: Path, failpoint: str) -> None:
    """Each victim process dies in the first round it leads; the round after it fails what it had claimed
    (counted), whose writer finds out under the whole lock whether the dead round committed it."""
    Writer(log_dir).close()
    assert _accel.CommitTable is not None
    watcher = _accel.CommitTable(os.path.join(log_dir, "LOCK"))  # keeps the table's file, to count
    survivor = _Survivor(log_dir)
    deaths, deadline = 0, time.monotonic() + 60
    try:
        while watcher.counters()[1] < 2 and time.monotonic() < deadline:
            victim = _start(log_dir, f"v{deaths}", 0, failpoint)
            _output(victim)
            assert victim.returncode == 9  # it led a round, and died in it
            deaths += 1
    finally:
        survivor.stop()
    assert survivor.errors == []
    Writer(log_dir).close()  # recovery: what the dead rounds left beyond the commit point, adopted or removed
    _each_once_where_acknowledged(log_dir, survivor.acknowledged)
    assert watcher.counters()[1] >= 2, (deaths, watcher.counters())  # the survivor's batches were among the claims


@pytest.mark.spec("W-46", "W-47")
def test_a_round_whose_sync_fails_fails_its_writer_and_no_batch_it_took(log_dir: Path) -> None:
    Writer(log_dir).close()
    survivor = _Survivor(log_dir)
    reports: list[str] = []
    try:
        for attempt in range(20):
            victim = _start(log_dir, f"v{attempt}", 100, "sync-fails")
            reports += [line for line in _output(victim).splitlines() if not line.startswith("ACK ")]
    finally:
        survivor.stop()
    assert len(reports) == 20  # 6.6: the writer of each round whose sync failed fails
    assert all(report.startswith(f"ERR v{n}-") and report.endswith(" io_error") for n, report in enumerate(reports))
    assert survivor.errors == []
    _each_once_where_acknowledged(log_dir, survivor.acknowledged)


def _table_of(directory: Path) -> str:
    """The commit table's name for the log at ``directory`` (spec 6.9: after its ``LOCK``)."""
    found = os.stat(directory / "LOCK")
    seconds, nanoseconds = divmod(found.st_ctime_ns, 1_000_000_000)
    return f"/dev/shm/openbinlog-{found.st_dev}-{found.st_ino}-{seconds}.{nanoseconds}"


def test_a_table_left_by_killed_writers_is_removed_by_the_next_writer_and_a_used_one_kept(tmp_path: Path) -> None:
    killed, used, other = tmp_path / "killed", tmp_path / "used", tmp_path / "other"
    for directory in (killed, used, other):
        Writer(directory).close()
    child = _start(killed, "k", 0)
    assert child.stdout is not None
    assert child.stdout.readline().startswith("ACK ")  # its table exists, and it holds an entry
    child.kill()
    child.communicate()
    assert os.path.exists(_table_of(killed))  # a killed writer cannot remove the name
    with Writer(used) as keeping:
        keeping.append(b"held")
        with Writer(other) as writer:
            writer.append(b"swept")  # its first batch opens the table of its log, and looks at the others
        assert not os.path.exists(_table_of(killed))
        assert os.path.exists(_table_of(used))  # a writer of that log still holds an entry
        keeping.append(b"still")
