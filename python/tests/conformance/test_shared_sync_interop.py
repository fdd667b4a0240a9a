"""The Go writer beside Python writers that share their syncs (spec 6.8).

Python writers that release the lock between batches write under the append
lock (byte 0 of ``LOCK``), sync holding no lock, and publish under the append
lock again. The Go writer knows nothing of this: it takes the whole-file lock
for each batch and runs the tail check first. While a Python writer syncs,
its records are valid but lie beyond the commit point: the Go writer must
take them for a tail, adopt them, append after them, and the Python writer
must then find its records published and acknowledge them. Nothing
acknowledged by either side may be lost, repeated, or leave a hole, and the
two readers must agree on the result.
"""

from __future__ import annotations

import itertools
import json
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from conformance_helpers import REPO
from logtools import read_entries

from openbinlog import Reader, Writer, verify
from openbinlog._fs import SHARED_SYNC_SUPPORTED, OsFileSystem

GO = REPO / "build" / "conformance" / "go" / "binlog-go"

pytestmark = [
    pytest.mark.skipif(not SHARED_SYNC_SUPPORTED, reason="shared syncs need Linux 4.13 and OFD locks"),
    pytest.mark.skipif(
        not GO.is_file(),
        reason="build/conformance/go/binlog-go is not built: run conformance/implementations/go/build.sh",
    ),
]

# A Python writer process: threads append until the stop file appears, each printing "INDEX PAYLOAD" once its
# append has returned; at the end, how many batches took the shared path (6.8) and how many the whole lock.
CHILD = textwrap.dedent(
    """
    import os, sys, threading
    from openbinlog import Writer
    directory, name, stop, threads, max_segment, durability = sys.argv[1:7]
    counts = {True: 0, False: 0}
    counting = threading.Lock()
    commit_shared = Writer._commit_shared
    def counted(self, batch, done):
        shared = commit_shared(self, batch, done)
        with counting:
            counts[shared] += 1
        return shared
    Writer._commit_shared = counted
    printing = threading.Lock()
    with Writer(directory, durability=durability, max_segment_bytes=int(max_segment)) as writer:
        assert writer._shares_sync and not writer.holds_lock
        def work(t):
            n = 0
            while not os.path.exists(stop):
                payload = f"{name}.{t}/{n}"
                ref = writer.append(payload.encode())
                with printing:
                    sys.stdout.write(f"{ref.index} {payload}\\n")
                    sys.stdout.flush()
                n += 1
        pool = [threading.Thread(target=work, args=(t,)) for t in range(int(threads))]
        for thread in pool: thread.start()
        for thread in pool: thread.join()
    sys.stdout.write(f"shared {counts[True]} {counts[False]}\\n")
    """
)

PAYLOAD = re.compile(r"^(?P<writer>py\d+g\d+\.\d+|go\d+)/(?P<seq>\d+)$")


def go_write(directory: Path, payloads: list[str], durability: str) -> subprocess.CompletedProcess[str]:
    """One run of the Go writer: a new writer appending each payload as its own batch (one lock each)."""
    spec = {"records": [{"payload": p.encode().hex()} for p in payloads], "options": {"durability": durability}}
    command = [str(GO), "write", str(directory)]
    return subprocess.run(command, input=json.dumps(spec), capture_output=True, text=True, timeout=60, check=False)


def go_read(directory: Path) -> tuple[int, dict[str, object]]:
    done = subprocess.run([str(GO), "read", str(directory)], capture_output=True, text=True, timeout=60, check=False)
    return done.returncode, json.loads(done.stdout)


def go_records(answer: dict[str, object]) -> list[tuple[int, int, int, bytes]]:
    records = answer["records"]
    assert isinstance(records, list)
    return [(r["log"], int(r["offset"]), int(r["index"]), bytes.fromhex(r["payload"])) for r in records]


class SyncHook(OsFileSystem):
    """Runs ``hook`` once, at the first sync after it is armed, before the sync itself."""

    def __init__(self) -> None:
        super().__init__()
        self.hook: object = None

    def fdatasync(self, fd: int) -> None:
        hook, self.hook = self.hook, None
        if callable(hook):
            hook()
        super().fdatasync(fd)


@pytest.mark.spec("W-20", "W-21", "W-31")
def test_go_batch_while_a_python_writer_syncs_adopts_its_records(log_dir: Path) -> None:
    """The Go writer's batch runs between a Python writer's write and its publication: it finds the Python
    records beyond the commit point, adopts them, appends after them; the Python writer then acknowledges them."""
    fs = SyncHook()
    seen: dict[str, object] = {}
    with Writer(log_dir, fs=fs) as writer:
        assert writer._shares_sync
        writer.append(b"py/0")

        def go_runs_now() -> None:
            # The Python writer holds no lock here (6.8 step 6): its records are written, not published.
            with Reader(log_dir) as reader:
                seen["before"] = [entry.payload for entry in reader]
            done = go_write(log_dir, ["go/0", "go/1"], "sync")
            seen["go"] = (done.returncode, done.stdout, done.stderr)
            with Reader(log_dir) as reader:
                seen["after"] = [entry.payload for entry in reader]

        shared = Writer._commit_shared
        calls: list[bool] = []

        def counted(self: Writer, batch: list[object], done: list[object]) -> bool:
            result = shared(self, batch, done)  # type: ignore[arg-type]
            calls.append(result)
            return result

        fs.hook = go_runs_now
        Writer._commit_shared = counted  # type: ignore[method-assign]
        try:
            ref = writer.append(b"py/1")
        finally:
            Writer._commit_shared = shared  # type: ignore[method-assign]
        writer.append(b"py/2")
    assert calls == [True], "the Python append did not take the shared path"
    assert seen["go"][0] == 0 and json.loads(seen["go"][1]) == {"ok": True}, seen["go"]
    assert seen["before"] == [b"py/0"], "py/1 was published before its sync"
    assert seen["after"] == [b"py/0", b"py/1", b"go/0", b"go/1"], "the Go writer did not adopt py/1 first"
    assert ref.index == 2
    final = read_entries(log_dir)
    assert [(e.index, e.payload) for e in final] == list(enumerate([b"py/0", b"py/1", b"go/0", b"go/1", b"py/2"], 1))
    assert verify(log_dir).ok
    code, answer = go_read(log_dir)
    assert code == 0 and answer["outcome"] == "accept"
    assert go_records(answer) == [(e.log, e.offset, e.index, e.payload) for e in final]


def _acknowledged(path: Path) -> tuple[list[tuple[int, str]], tuple[int, int] | None]:
    """The complete "INDEX PAYLOAD" lines a child printed, and its final shared/whole-lock batch counts."""
    acks: list[tuple[int, str]] = []
    counts = None
    for line in path.read_text().splitlines(keepends=True):
        if not line.endswith("\n"):
            break  # killed mid-line
        first, second, *rest = line.split()
        if first == "shared":
            counts = (int(second), int(rest[0]))
        else:
            acks.append((int(first), second))
    return acks, counts


@pytest.mark.spec("W-20", "W-21", "W-31")
def test_python_writers_sharing_syncs_and_the_go_writer_lose_nothing(tmp_path: Path, full_run: bool) -> None:
    """2-3 Python writer processes (sharing their syncs) append continuously while the Go writer runs again and
    again on the same log; a Python writer is killed and replaced now and then. Every append either side
    acknowledged is in the log once, at its index; the indexes have no hole; both readers agree."""
    log_dir = tmp_path / "log"
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    stop = tmp_path / "stop"
    seconds = 60.0 if full_run else 7.0
    kills = 6 if full_run else 2
    slots = 3
    # A small size limit: Python writers cut over under load, and the Go writer's cached segment goes stale.
    max_segment = 256 * 1024
    durabilities = ("sync", "group", "strict")
    with Writer(log_dir):
        pass

    children: dict[str, tuple[subprocess.Popen[bytes], Path]] = {}
    killed: set[str] = set()
    generation = [0] * slots

    def start(slot: int) -> None:
        name = f"py{slot}g{generation[slot]}"
        generation[slot] += 1
        path = out_dir / name
        with path.open("wb") as out:
            durability = durabilities[slot % len(durabilities)]
            proc = subprocess.Popen(
                [sys.executable, "-c", CHILD, str(log_dir), name, str(stop), "2", str(max_segment), durability],
                stdout=out,
            )
        children[name] = (proc, path)

    def current(slot: int) -> str:
        return f"py{slot}g{generation[slot] - 1}"

    go_acked: dict[str, list[str]] = {}
    go_failed: dict[str, tuple[int, str, str]] = {}
    live_reads: list[tuple[int, dict[str, object]]] = []
    try:
        for slot in range(slots):
            start(slot)
        started = time.monotonic()
        while not all(path.stat().st_size for _, path in children.values()):
            assert time.monotonic() - started < 30, "the Python writers did not start appending"
            time.sleep(0.01)
        begin = time.monotonic()
        kill_at = [begin + seconds * (k + 1) / (kills + 1) for k in range(kills)]
        run = 0
        while True:
            now = time.monotonic()
            if kill_at and now >= kill_at[0]:
                kill_at.pop(0)
                slot = len(killed) % slots
                name = current(slot)
                children[name][0].send_signal(signal.SIGKILL)
                children[name][0].wait(timeout=30)
                killed.add(name)
                start(slot)
            payloads = [f"go{run}/{k}" for k in range(1 + run % 5)]
            done = go_write(log_dir, payloads, durabilities[run % len(durabilities)])
            if done.returncode == 0 and json.loads(done.stdout) == {"ok": True}:
                go_acked[f"go{run}"] = payloads
            else:
                go_failed[f"go{run}"] = (done.returncode, done.stdout, done.stderr)
            if run % 7 == 3:
                live_reads.append(go_read(log_dir))
            run += 1
            if now - begin >= seconds:
                break
        stop.touch()
        for name, (proc, _) in children.items():
            if name not in killed:
                assert proc.wait(timeout=60) == 0, f"{name} failed"
        # The last word to the Go writer, after every Python writer has closed.
        done = go_write(log_dir, [f"go{run}/0"], "sync")
        assert done.returncode == 0, done.stderr
        go_acked[f"go{run}"] = [f"go{run}/0"]
    finally:
        stop.touch()
        for proc, _ in children.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    assert not go_failed, f"Go writer runs failed: {go_failed}"

    final = read_entries(log_dir)
    indexes = [e.index for e in final]
    assert indexes == list(range(1, len(final) + 1)), "a hole or a repeat in the indexes"
    payloads = [e.payload.decode() for e in final]
    repeated = [p for p, n in Counter(payloads).items() if n > 1]
    assert not repeated, f"records written twice: {repeated[:10]}"
    at = {p: e.index for p, e in zip(payloads, final, strict=True)}
    strangers = [p for p in payloads if not PAYLOAD.match(p)]
    assert not strangers, f"records no writer wrote: {strangers[:10]}"

    # Every Python acknowledgement: present, at the index its append returned.
    py_acked: dict[str, list[tuple[int, str]]] = {}
    shared_batches = whole_batches = 0
    for name, (_, path) in children.items():
        acks, counts = _acknowledged(path)
        py_acked[name] = acks
        if name not in killed:
            assert counts is not None, f"{name} printed no batch counts"
            shared_batches += counts[0]
            whole_batches += counts[1]
        lost = [(index, p) for index, p in acks if at.get(p) != index]
        assert not lost, f"{name}: acknowledged appends missing or moved: {lost[:10]}"
    # Every successful Go run: all its records, in order.
    for run_name, run_payloads in go_acked.items():
        missing = [p for p in run_payloads if p not in at]
        assert not missing, f"{run_name}: acknowledged appends missing: {missing}"
        assert [at[p] for p in run_payloads] == sorted(at[p] for p in run_payloads)

    # Per writer thread, the records present are a run 0..m with rising indexes; a writer that closed left none
    # it did not acknowledge (a killed one may have left its last, unacknowledged, batch).
    present: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for p, e in zip(payloads, final, strict=True):
        match = PAYLOAD.match(p)
        assert match is not None
        present[match["writer"]].append((int(match["seq"]), e.index))
    acked_by_thread: dict[str, set[int]] = defaultdict(set)
    for acks in py_acked.values():
        for _, p in acks:
            match = PAYLOAD.match(p)
            assert match is not None
            acked_by_thread[match["writer"]].add(int(match["seq"]))
    for thread, records in present.items():
        seqs = [s for s, _ in records]
        assert seqs == list(range(len(seqs))), f"{thread}: its records are not 0..m in index order"
        if thread.startswith("py") and thread.split(".")[0] not in killed:
            assert set(seqs) == acked_by_thread[thread], f"{thread}: records present that were not acknowledged"

    report = verify(log_dir)
    assert report.ok, report

    code, answer = go_read(log_dir)
    assert code == 0 and answer["outcome"] == "accept", answer.get("error")
    assert go_records(answer) == [(e.log, e.offset, e.index, e.payload) for e in final], "the readers disagree"
    # What the Go reader returned while the writers ran was committed: the start of the final log. Records
    # written but not yet published are a torn tail to a reader: "recovered" is as good as "accept".
    expected = [(e.log, e.offset, e.index, e.payload) for e in final]
    for code, answer in live_reads:
        got = go_records(answer)
        assert got == expected[: len(got)], "a record a live read returned changed or went away"
        assert (code, answer["outcome"]) in {(0, "accept"), (2, "recovered")}, answer

    py_total = sum(len(acks) for acks in py_acked.values())
    go_total = sum(len(p) for p in go_acked.values())
    interleaved = sum(
        1 for before, after in itertools.pairwise(payloads) if before.startswith("py") and after.startswith("go")
    )
    print(
        f"\n{len(final)} records in {len(list(log_dir.glob('*.dat')))} segments; Python acknowledged {py_total}"
        f" in {shared_batches} shared batches and {whole_batches} under the whole lock; {len(go_acked)} Go runs"
        f" acknowledged {go_total}; killed {sorted(killed)}; {len(live_reads)} live Go reads"
    )
    assert shared_batches > 0, "the Python writers never took the shared path"
    assert interleaved > 0 and len(go_acked) > 10, "the Go writer never ran between Python appends"
    assert py_total > 0
