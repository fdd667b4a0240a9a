"""Many writers and readers at once: threads, processes, cutovers under load, followers."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from logtools import read_entries

from openbinlog import Writer, verify

WRITER = textwrap.dedent(
    """
    import sys, threading
    from openbinlog import Writer
    directory, name, count, threads, cutover_every = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
    printing = threading.Lock()
    with Writer(directory) as writer:
        def work(t):
            for n in range(count):
                payload = f"{name}/{t}/{n}"
                ref = writer.append(payload.encode())
                with printing:
                    print(ref.index, payload, flush=True)
                if t == 0 and n % cutover_every == cutover_every - 1:
                    writer.cutover()
        pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
        for thread in pool: thread.start()
        for thread in pool: thread.join()
    """
)

READER = textwrap.dedent(
    """
    import json, sys, time
    from openbinlog import Reader
    directory, expected = sys.argv[1], int(sys.argv[2])
    seen = []
    deadline = time.monotonic() + 60
    with Reader(directory) as reader:
        while len(seen) < expected and time.monotonic() < deadline:
            if reader.has_next(1.0):
                entry = next(reader)
                seen.append([entry.index, entry.payload.decode(), entry.log])
    json.dump(seen, sys.stdout)
    """
)


@pytest.mark.spec("R-24", "W-16", "W-31")
def test_writer_processes_threads_readers_and_cutovers_agree(log_dir: Path) -> None:
    processes, threads, count, readers = 3, 3, 150, 2
    total = processes * threads * count
    with Writer(log_dir):
        pass  # the log exists before the readers start following it
    reader_procs = [
        subprocess.Popen([sys.executable, "-c", READER, str(log_dir), str(total)], stdout=subprocess.PIPE, text=True)
        for _ in range(readers)
    ]
    writer_procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(log_dir), f"w{p}", str(count), str(threads), "40"],
            stdout=subprocess.PIPE,
            text=True,
        )
        for p in range(processes)
    ]
    acknowledged: dict[int, str] = {}
    for proc in writer_procs:
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0
        for line in out.splitlines():
            index, payload = line.split(" ", 1)
            assert int(index) not in acknowledged, "two appends acknowledged with one index"
            acknowledged[int(index)] = payload
    assert len(acknowledged) == total

    final = read_entries(log_dir)
    assert [e.index for e in final] == list(range(1, total + 1))
    assert {e.index: e.payload.decode() for e in final} == acknowledged
    # Every cutover made a segment (two in a row may leave one empty, so count files, not logs of records).
    assert len(list(log_dir.glob("*.dat"))) == 1 + processes * (count // 40)
    assert len({e.log for e in final}) > processes  # and they happened under load, between records
    assert verify(log_dir).ok

    for proc in reader_procs:
        out, _ = proc.communicate(timeout=120)
        seen = json.loads(out)
        assert [index for index, _, _ in seen] == list(range(1, total + 1)), "a follower missed or repeated"
        assert {index: payload for index, payload, _ in seen} == acknowledged
