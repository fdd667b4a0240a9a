"""X1, X2: a seek by index and by time against a full verified read of the same log, with the sparse
index (spec 18) and without it.

A seek is what a consumer resuming at a position does: open a ``Reader``
with ``start_index`` (X1) or ``start_time`` (X2) of a random target and read
its first record. It is a binary search over the segment headers, then over
the entries of the segment's index, then a short walk; without an index the
walk starts at the segment's first record. The figure is the median seek,
as seeks per second, against full verified reads of the same log per second
(R1's, when the reads section ran in the same run; otherwise measured here,
each beside a share of the seeks): their ratio is how many seeks one full
read costs. The indexes are built first, timed, and removed
at the end, so that the sections after this one find the log as built.

Only finished segments have an index: the last segment of a log, still
open to appends, never does, and a target there is reached by a walk from
its first record either way (the notes count those targets).
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path
from typing import Any

from openbinlog import Entry, Reader, build_indexes
from openbinlog._sparse_index import DEFAULT_INTERVAL

from .logs import BuiltLog, segment_files, size_label
from .measure import Row, compared, median, percentile, timed
from .reads import reader_walk

BAR = 1000.0  # the bar: a seek at least 1000 times faster than a full read of the same log
SEED = 20


def _first(path: Path, **start: Any) -> tuple[float, Entry]:
    """One seek: open a Reader at ``start``, read its first record, close it; the seconds it took and the record."""
    begin = time.perf_counter()
    with Reader(path, **start) as reader:
        entry = next(reader)
    return time.perf_counter() - begin, entry


def _index_files(path: Path) -> list[Path]:
    return sorted(path / name for name in os.listdir(path) if name.endswith(".idx"))


def _duration(seconds: float) -> str:
    return f"{seconds:.3g} s" if seconds >= 1 else f"{seconds * 1000:.3g} ms"


def full_read_rates(log: BuiltLog, repeats: int) -> list[float]:
    """Full verified reads of ``log`` per second, one figure per repeat, each read checked for every record."""
    rates = []
    for _ in range(repeats):
        count, seconds = timed(lambda: reader_walk(log.path))
        if count != log.records:
            raise RuntimeError(f"{log.path}: a full read returned {count} records, the log holds {log.records}")
        rates.append(1 / seconds)
    return rates


class _Targets:
    """The random records sought, the same for every variant: their indexes, and for X2 their timestamps with
    the record a time seek must return, the first one carrying that timestamp (timestamps never go back; a
    writer stamps a whole commit with one time, so a time seek lands at the start of an ``append_many``).

    All found by one read from the start, untimed, which the seeks' answers are checked against.
    """

    def __init__(self, log: BuiltLog, count: int) -> None:
        generator = random.Random(SEED + log.record_size + log.log_size)
        self.indexes = [generator.randint(1, log.records) for _ in range(count)]
        found: dict[int, tuple[int, int, int]] = {}  # index: (segment, timestamp, first index with it)
        wanted = sorted(set(self.indexes), reverse=True)
        stamp, first = None, 0
        with Reader(log.path) as reader:
            for entry in reader:
                if entry.timestamp_us != stamp:
                    stamp, first = entry.timestamp_us, entry.index
                if entry.index == wanted[-1]:
                    assert stamp is not None
                    found[wanted.pop()] = (entry.log, stamp, first)
                    if not wanted:
                        break
        self.segments = [found[index][0] for index in self.indexes]
        self.times = [found[index][1] for index in self.indexes]
        self.expected_at_time = [found[index][2] for index in self.indexes]

    def in_last_segment(self, log: BuiltLog) -> int:
        """How many targets lie in the last segment, which has no index."""
        _, last = _first(log.path, start_index=log.records)
        return self.segments.count(last.log)


def _seek_rates(log: BuiltLog, targets: _Targets, by_time: bool, which: range | None = None) -> list[float]:
    """Seeks per second, one figure per target (those at the positions ``which``, else all), each seek checked
    against the record it must return."""
    rates = []
    for at in which or range(len(targets.indexes)):
        index, time_us, expected = targets.indexes[at], targets.times[at], targets.expected_at_time[at]
        if by_time:
            seconds, entry = _first(log.path, start_time=time_us)
            wanted = expected
        else:
            seconds, entry = _first(log.path, start_index=index)
            wanted = index
        if entry.index != wanted:
            what = f"start_time={time_us}" if by_time else f"start_index={index}"
            raise RuntimeError(f"{log.path}: a seek to {what} returned record {entry.index}, not {wanted}")
        rates.append(1 / seconds)
    return rates


def _spread(rates: list[float]) -> str:
    """The median seek and the slow ones, in milliseconds."""
    times = [1000 / rate for rate in rates]
    return (
        f"median {median(times):.3g} ms, p90 {percentile(times, 0.9):.3g} ms, slowest {max(times):.3g} ms "
        f"over {len(times)} random targets"
    )


def measure_seeks(log: BuiltLog, *, seeks: int, repeats: int, reader_runs: list[float] | None) -> list[Row]:
    """X1 and X2 on ``log`` with its indexes, and again without them (``.unindexed``).

    ``reader_runs``: R1's Reader figures (records/s) on this log in the same run, when the reads section
    measured them; otherwise the full reads are measured here.
    """
    where: dict[str, Any] = dict(record_size=log.record_size, log_size=log.log_size)
    for stale in _index_files(log.path):
        stale.unlink()
    built, build_seconds = timed(lambda: sum(1 for result in build_indexes(log.path) if result.status == "built"))
    index_bytes = sum(file.stat().st_size for file in _index_files(log.path))
    segments = len(segment_files(log.path))
    indexed: dict[str, list[float]] = {"index": [], "time": []}
    full_reads = [rate / log.records for rate in reader_runs or []]
    try:
        targets = _Targets(log, seeks)
        in_last = targets.in_last_segment(log)
        # Without R1's figures, the full reads are measured here, each next to a share of the seeks, alternating
        # which goes first (as measure.side_by_side does): the machine's speed drifts within a run.
        here = not full_reads
        turns = repeats if here else 1
        for turn in range(turns):
            share = range(turn, seeks, turns)
            if here and turn % 2 == 0:
                full_reads.extend(full_read_rates(log, 1))
            for kind, series in indexed.items():
                series.extend(_seek_rates(log, targets, kind == "time", share))
            if here and turn % 2 == 1:
                full_reads.extend(full_read_rates(log, 1))
    finally:
        for file in _index_files(log.path):
            file.unlink()
    read_source = "R1 of this run" if reader_runs else f"{len(full_reads)} measured here, beside the seeks"
    unindexed = {kind: _seek_rates(log, targets, kind == "time") for kind in ("index", "time")}

    full_read = f"full read {_duration(1 / median(full_reads))} ({read_source})"
    build = (
        f"indexes of {built} of {segments} segments built in {_duration(build_seconds)} "
        f"({index_bytes / 1024:.1f} KiB, interval {size_label(DEFAULT_INTERVAL)})"
        if built
        else f"no index built: 0 of {segments} segments finished"
    )
    last = f"{in_last} of {seeks} targets in the last segment, which has no index (not finished)"
    versus = "full verified read of the same log, Reader"
    rows = []
    for row_id, kind, how in (
        ("X1", "index", "Reader(start_index=N) of a random record, first record read"),
        ("X2", "time", "Reader(start_time=T) of a random record's timestamp, first record read"),
    ):
        row = Row(row_id, f"seek by {kind}, {how}", "operations/s", **where, versus=versus)
        row.note = f"{_spread(indexed[kind])}; {build}; {last}; {full_read}"
        rows.append(compared(row, indexed[kind], full_reads, bar=BAR))
        bare = Row(
            f"{row_id}.unindexed",
            f"seek by {kind} with the .idx files removed, the same targets",
            "operations/s",
            **where,
            versus=versus,
        )
        bare.note = f"{_spread(unindexed[kind])}; each walks its segment from the first record; {full_read}"
        rows.append(compared(bare, unindexed[kind], full_reads))
    return rows
