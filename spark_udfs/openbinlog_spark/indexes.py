"""Planning with the sparse index of a finished segment (spec 18.5): split cuts and narrowed reads at checked entries.

An entry is used only once the walk has checked it: the index check
(``openbinlog.walk.open_index``, ``usable_index``) and the entry check
(``entry_reached``: a walk from the entry before must land on it). This
module only chooses which entries to ask about, by the walk's binary search
(``last_before``); it states no check of its own. A segment whose index is
missing, stale or torn is planned as without one, and an entry that fails
the entry check is never a cut or a start (R-33, R-47).

- Splits: each cut the planner wants inside a segment moves to the checked
  entry at or before it, so that consecutive ranges meet at a record boundary
  a payload cannot fake (spec 18.5, SPLIT with an index; as
  ``openbinlog.walk.indexed_cuts``, for the planner's own cut positions).
- Narrowing: a read of the rows of an index or time range starts at the
  checked entry at or before the range's start and stops at the checked entry
  after its end (spec 18.5, SEEK with an index, at both ends).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from openbinlog._sparse_index import IndexEntryInfo, last_before
from openbinlog.errors import BinlogIOError
from openbinlog.walk import IndexView, entry_reached, open_index
from openbinlog.walk import checked_cuts as walk_checked_cuts

from .directory import PlannedDirectory, PlannedSegment
from .pruning import RowBounds
from .walk import SegmentRange

# Spark's long holds indexes of 2^63 and more as negative numbers: no index bound is trusted beyond that.
LARGEST_LONG_INDEX = 2**63


@dataclass(frozen=True, slots=True)
class Cut:
    """A checked entry: a record boundary, and the index of the record there."""

    offset: int
    index: int


class SegmentIndex:
    """A planned segment and its index, which passed the index check: answers which checked entry lies where."""

    def __init__(self, segment: PlannedSegment, span: SegmentRange, view: IndexView) -> None:
        self.segment = segment
        self.span = span
        self.view = view

    def _checked(self, k: int | None) -> Cut | None:
        if k is None or not 0 <= k < self.view.info.entry_count:
            return None
        try:
            entry = entry_reached(self.segment, self.span.header, self.span.end, self.view, k)
        except BinlogIOError:
            return None  # the segment's own read failed: plan without this entry, the executor meets it again
        return None if entry is None else Cut(entry.offset, entry.index)

    def at_or_before(self, before: Callable[[IndexEntryInfo], bool]) -> Cut | None:
        """The last entry ``before`` holds for, when it passes the entry check."""
        return self._checked(last_before(self.view.info.entry_count, self.view.entry, before))

    def after(self, before: Callable[[IndexEntryInfo], bool]) -> Cut | None:
        """The entry after the last one ``before`` holds for (the first when none does), when it passes the check."""
        k = last_before(self.view.info.entry_count, self.view.entry, before)
        return None if k is None else self._checked(k + 1)


@contextlib.contextmanager
def segment_index(directory: PlannedDirectory, log: int, span: SegmentRange) -> Iterator[SegmentIndex | None]:
    """The index of segment ``log`` of ``directory`` when it passes the index check; None otherwise.

    Only an uncompressed segment is planned by its index: a compressed one is
    unpacked from its start whatever offset a read starts at (spec 2.6).
    """
    file = directory.files.get(log)
    if file is None or file.compression is not None or file.index_url is None or not span.end.final:
        yield None
        return
    try:
        segment = directory.open(log)
    except BinlogIOError:
        segment = None
    if segment is None:
        yield None
        return
    try:
        view = open_index(directory, segment, span.header, span.end)
        if view is None:
            yield None
            return
        try:
            yield SegmentIndex(segment, span, view)
        finally:
            view.source.close()
    finally:
        segment.close()


def checked_cuts(
    directory: PlannedDirectory, log: int, span: SegmentRange, wanted: Sequence[int]
) -> list[Cut | None] | None:
    """For each offset the planner wants to cut ``span`` at (ascending), the checked entry at or before it,
    or None where there is none after the previous cut (the cut is left out); None when the segment has no
    usable index, to cut as without one (spec 10.5)."""
    with segment_index(directory, log, span) as index:
        if index is None:
            return None
        try:
            found = walk_checked_cuts(index.segment, span.header, span.end, index.view, wanted, after=span.start)
        except BinlogIOError:
            return None  # the segment's own read failed: plan as without an index, the executor meets it again
        return [Cut(*cut) if cut is not None and cut[0] < span.stop else None for cut in found]


def narrowed_span(directory: PlannedDirectory, log: int, span: SegmentRange, bounds: RowBounds) -> SegmentRange:
    """``span`` (a whole segment) narrowed to the checked entries around the rows ``bounds`` allows: from the
    entry at or before the first row that can match to the entry after the last one. Unchanged without a
    usable index, or where no entry passes the check.

    Index bounds are exact (a segment's indexes are consecutive); time bounds
    rely on W-9, as the pruning of whole segments does: records never go back
    in time, so entries are in order of time (spec 18.3).
    """
    with segment_index(directory, log, span) as index:
        if index is None:
            return span
        whole = Cut(span.start, span.start_index)
        starts: list[Cut | None] = []
        stops: list[Cut | None] = []
        if bounds.index_low is not None and span.end.index <= LARGEST_LONG_INDEX:
            low = bounds.index_low
            starts.append(index.at_or_before(lambda entry: entry.index <= low))
        if bounds.index_high is not None and span.end.index <= LARGEST_LONG_INDEX:
            high = bounds.index_high
            stops.append(index.after(lambda entry: entry.index <= high))
        if bounds.time_low_us is not None:
            early = bounds.time_low_us
            starts.append(index.at_or_before(lambda entry: entry.timestamp_us < early))
        if bounds.time_high_us is not None:
            late = bounds.time_high_us
            stops.append(index.after(lambda entry: entry.timestamp_us <= late))
    # A bound without a checked entry leaves its end of the segment as it is.
    start = max((cut or whole for cut in starts), key=lambda cut: cut.offset, default=whole)
    stop = min((cut.offset for cut in stops if cut is not None), default=span.stop)
    if start.offset >= stop or (start.offset, stop) == (span.start, span.stop):
        return span  # nothing narrower, or entries out of order (a log that broke W-9): read it all
    return narrowed_to(span, start, stop)


def narrowed_to(span: SegmentRange, start: Cut, stop: int) -> SegmentRange:
    """``span`` read from the checked entry ``start`` (or its own start) to the checked entry at ``stop``."""
    moved = start.offset != span.start
    return dataclasses.replace(
        span,
        start=start.offset,
        stop=stop,
        exact_start=True,
        exact_stop=True,
        start_index=start.index if moved else span.start_index,
        start_asqn=-1 if moved else span.start_asqn,  # a walk starting at an entry knows no previous asqn (A := -1)
        narrowed=stop < span.stop,
        read_to=stop if stop < span.stop else span.read_to,  # no piece looks beyond it (spec 10.2.2, LOOK)
    )
