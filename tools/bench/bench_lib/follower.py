"""Follower wake-up latency: a reader in another process waiting at the end of the log.

The writer notes ``time.monotonic()`` as each ``append`` returns (the record
is published by then); the follower notes it as the record comes out of
``Reader.next``. CLOCK_MONOTONIC is system-wide, so the two compare directly.
Commits are spaced irregularly so the follower is asleep when each arrives.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

from openbinlog import Reader, Writer

from .measure import FIGURE_AT_MOST, Row, median, percentile
from .processes import emit, finish, signal_ready_and_wait, start_worker, wait_ready

WAIT_PER_RECORD = 10.0
GAP_SECONDS = (0.005, 0.030)
BAR_MEDIAN_MS = 50.0


def follow_worker(arguments: dict[str, Any]) -> None:
    """Worker side: wait at the end of the log for ``count`` records; report when each was seen."""
    seen: dict[int, float] = {}
    with Reader(arguments["log"], at_end=True) as reader:
        reader.has_next(0.001)  # set up the change notification before the writer starts
        signal_ready_and_wait()
        while len(seen) < arguments["count"]:
            entry = reader.next(timeout=WAIT_PER_RECORD)
            if entry is None:
                break
            seen[int.from_bytes(entry.payload[:8], "big")] = time.monotonic()
    emit({"seen": seen})


def measure_follower(log: Path, commits: int) -> list[Row]:
    with Writer(log) as writer:
        writer.append((0).to_bytes(8, "big"))
        follower = start_worker("follow", log=str(log), count=commits)
        try:
            wait_ready(follower, timeout=60)
            assert follower.stdin is not None
            follower.stdin.write("go\n")
            follower.stdin.flush()
            committed: dict[int, float] = {}
            gaps = random.Random(4)
            for number in range(1, commits + 1):
                time.sleep(gaps.uniform(*GAP_SECONDS))
                writer.append(number.to_bytes(8, "big") + bytes(192))
                committed[number] = time.monotonic()
            result = finish(follower, timeout=WAIT_PER_RECORD * 2 + 60)
        finally:
            if follower.poll() is None:
                follower.kill()
                follower.wait(timeout=10)
    delays = [(result["seen"][str(n)] - at) * 1000 for n, at in committed.items() if str(n) in result["seen"]]
    missed = commits - len(delays)
    where: dict[str, Any] = dict(record_size=200, log_size=None)
    middle = Row("F1", "follower wake-up, commit to seen, median", "ms", **where, versus="another process")
    middle.runs, middle.figure = delays, median(delays) if delays else None
    middle.bar, middle.bar_kind = BAR_MEDIAN_MS, FIGURE_AT_MOST
    middle.note = f"{len(delays)} commits" + (f", {missed} never seen" if missed else "")
    if missed:
        middle.passed = False
    else:
        middle.judge()
    tail = Row("F1.p99", "follower wake-up, commit to seen, p99", "ms", **where, versus="another process")
    tail.figure = percentile(delays, 0.99) if delays else None
    tail.note = middle.note
    return [middle, tail]
