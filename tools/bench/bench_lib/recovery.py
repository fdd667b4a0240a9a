"""Recovery time against the committed size of the log, and against the size of the torn tail.

Each run leaves what a writer killed after writing and before publishing
leaves: whole records beyond the commit point of the last segment and a
torn remainder. ``recover()`` then adopts the records and truncates the
rest. The last segment is started afresh for every run (a cutover), so it
holds the same committed bytes whatever the size of the log before it:
opening a log checks the committed records of its last segment (spec W-26),
a cost bounded by the segment size, never by the log's.
"""

from __future__ import annotations

import time
from pathlib import Path

from openbinlog import Writer, recover

from .logs import append_torn_tail, payloads, size_label
from .measure import Row, median
from .plan import MIB

LAST_SEGMENT_BYTES = 1 * MIB


def _recovery_seconds(path: Path, record_size: int, tail_bytes: int) -> float:
    pool = payloads(record_size)
    with Writer(path, verify_on_open=False) as writer:
        writer.cutover()
        count = max(1, LAST_SEGMENT_BYTES // (record_size + 40))
        refs = writer.append_many(pool[i % len(pool)] for i in range(count))
    adopted = append_torn_tail(path, next_index=refs[-1].index + 1, record_size=record_size, tail_bytes=tail_bytes)
    start = time.perf_counter()
    actions = recover(path)
    elapsed = time.perf_counter() - start
    done = {action.action: action for action in actions}
    if "adopt_records" not in done or done["adopt_records"].records != adopted or "truncate_tail" not in done:
        raise RuntimeError(f"{path}: recovery did not adopt {adopted} records and truncate the tail: {actions}")
    return elapsed


def measure_recovery(path: Path, *, row_id: str, record_size: int, log_size: int, tail: int, repeats: int) -> Row:
    """``C1`` rows vary the log size at a fixed tail, ``C2`` rows the tail at a fixed log size."""
    runs = [_recovery_seconds(path, record_size, tail) * 1000 for _ in range(repeats)]
    row = Row(
        row_id,
        f"recover() with a {size_label(tail)} torn tail",
        "ms",
        record_size=record_size,
        log_size=log_size,
        tail_size=tail,
    )
    row.runs, row.figure = runs, median(runs)
    row.note = f"last segment {size_label(LAST_SEGMENT_BYTES)} committed"
    return row
