"""The reader: committed records of a log directory, in index order.

A reader opens segments read-only, takes no lock and never writes. It returns
only records that end at or before the published commit point of their
segment (or, for a finished segment whose successor exists, before the
successor's base index), crosses cutovers (unless asked to stay in one
segment), and waits for new records only in ``has_next(timeout)``.
"""

from __future__ import annotations

import itertools
import operator
import os
import time
from collections import deque
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType

from ._records import _EPOCH, Entry
from ._ref import Ref
from ._segment import LegacyHeaderInfo
from ._segment_file import LocalDirectory, SegmentFile, list_segments
from ._wake import ChangeWaiter
from .errors import BinlogError, NotALogError
from .walk import Damage, LogWalk, Seek

__all__ = ["Damage", "Reader", "last_entry", "read_all", "to_timestamp_us"]


class Reader:
    """Iterate the committed records of the log in ``directory``.

    ``start`` resumes at the record a ref names (inclusive), ``after`` just
    past it; either is checked against the record it names. ``at_end``
    starts after the last committed record (a transient subscriber). The
    reader moves on to the next segment at a cutover; with ``one_segment``
    it stops at the end of the segment where it started (split readers). With ``tolerant``
    damaged committed regions are skipped and listed in ``damage`` instead
    of raising.

    ``start_index=N`` starts at the first record whose index is at least N:
    record N when it is present. When retention has removed the segments
    holding N, reading starts at the first record present (as Kafka's
    ``auto.offset.reset=earliest``): the first record's index, above N,
    shows the gap. When N lies beyond the last record, nothing is returned
    until record N is committed.
    ``start_time`` starts at the first record whose timestamp is at least
    that time: an aware ``datetime``, a naive one taken as UTC, or integer
    microseconds since 1970-01-01T00:00:00Z (``to_timestamp_us``). Version 1
    records have no timestamp and are never at or after a time. Give at
    most one of ``start``, ``after``, ``at_end``, ``start_index`` and
    ``start_time`` (``ValueError`` otherwise).

    A seek reads segment headers only, a binary search over them, then walks
    from the first record of the segment it picks, passing over the records
    before the target without returning them (``openbinlog.walk.seek_segment``).
    On a log whose indexes are consecutive across segments and whose
    timestamps never go back (every log written by writers that follow the
    spec: W-9 and the slot's carried last timestamp make them non-decreasing),
    it returns exactly what a read from the start returns from its first
    record at or after the target on. Where timestamps go back (a writer
    that broke W-9; readers do not check them, R-13), a time seek starts in
    a segment whose last timestamp is at or after the time while the
    previous segment's is below it, and returns what a read from the start
    returns from the first record at or after the time in or after that
    segment: possibly later than the first such record of the log, never
    earlier. Records after the first one returned are all returned,
    whatever their timestamps. Damage
    before the target in the segment the seek starts in is walked over and
    reported (strict: raised, tolerant: listed in ``damage``); damage in the
    segments before it, and at the boundary into it, is not read and not
    reported. With ``one_segment`` the reader stops at the end of the
    segment the seek starts in.

    Iteration returns what is committed now; ``has_next(timeout)`` waits up to
    ``timeout`` seconds for more.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        start: Ref | None = None,
        *,
        after: Ref | None = None,
        at_end: bool = False,
        start_index: int | None = None,
        start_time: datetime | int | None = None,
        one_segment: bool = False,
        tolerant: bool = False,
    ) -> None:
        starts = (start is not None, after is not None, at_end, start_index is not None, start_time is not None)
        if sum(starts) > 1:
            raise ValueError("give at most one of start, after, at_end, start_index and start_time")
        seek = None
        if start_index is not None:
            if start_index < 0:
                raise ValueError(f"start_index must not be negative, got {start_index}")
            seek = Seek(index=operator.index(start_index))
        elif start_time is not None:
            seek = Seek(time_us=to_timestamp_us(start_time))
        self.directory = os.fspath(directory)
        if not os.path.isdir(self.directory):
            raise NotALogError("not a log directory", path=self.directory)
        self.one_segment = one_segment
        self.tolerant = tolerant
        self._walk = LogWalk(LocalDirectory(self.directory), one_segment=one_segment, tolerant=tolerant)
        self.damage: list[Damage] = self._walk.damage
        # The entries of the last batch decoded, and the iterator over them that every way of reading shares:
        # what it has not returned yet is what the reader returns next.
        self._batch: list[Entry] = []
        self._cursor: Iterator[Entry] = iter(self._batch)
        self._closed = False
        self._waiter: ChangeWaiter | None = None
        if at_end:
            last = last_entry(self.directory)
            after = None if last is None else last.ref
        ref = start or after
        if ref is not None:
            self._hold(self._walk.start_at(ref, inclusive=start is not None))
        elif seek is not None:
            self._walk.seek(seek)

    # -- public API ---------------------------------------------------------

    def __iter__(self) -> Iterator[Entry]:
        """The records from the next one on. A loop left early leaves the rest to the next loop or ``next``."""
        # Each batch is returned by its list's own iterator, chained, with no Python code per record: that
        # code would cost as much as decoding and checking the record.
        return itertools.chain.from_iterable(self._cursors())

    def __next__(self) -> Entry:
        for entry in self._cursor:
            return entry
        if self._peek() is None:
            raise StopIteration
        return next(self._cursor)

    def _cursors(self) -> Iterator[Iterator[Entry]]:
        """The shared iterator over each batch in turn, the next asked for once the one before is exhausted.

        An error of the walk is raised through an iterator of its own, so that this generator lives on: the
        next ``next()`` on the same loop walks again, as ``Reader.__next__`` does, rather than ending as if the
        log had."""
        while True:
            yield self._cursor
            try:
                if self._peek() is None:
                    return
            except Exception as exc:  # raised again, unchanged, by the iterator yielded
                yield _raising(exc)

    def has_next(self, timeout: float = 0.0) -> bool:
        """True when a committed record is ready, waiting up to ``timeout`` seconds."""
        if self._peek() is not None:
            return True
        if timeout <= 0 or self._walk.ended:
            return False
        if self._waiter is None:
            self._waiter = ChangeWaiter(self.directory)
        deadline = time.monotonic() + timeout
        while True:
            if self._peek() is not None:
                self._waiter.reset()
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self._walk.ended:
                return False
            self._waiter.wait(remaining)

    def next(self, timeout: float = 0.0) -> Entry | None:
        """The next committed record, waiting up to ``timeout``; None if there is none yet."""
        if not self.has_next(timeout):
            return None
        return next(self)

    @property
    def position(self) -> Ref | None:
        """The ref the next record will have, when known."""
        if left := operator.length_hint(self._cursor):
            return self._batch[-left].ref
        return self._walk.position

    def close(self) -> None:
        if self._waiter is not None:
            self._waiter.close()
            self._waiter = None
        self._walk.close()
        self._hold([])
        self._closed = True

    def __enter__(self) -> Reader:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _peek(self) -> Entry | None:
        if self._closed:
            raise BinlogError("reader is closed", path=self.directory)
        left = operator.length_hint(self._cursor)
        if not left:
            entries = self._walk.next_batch()
            if not entries:
                return None
            self._hold(entries)
            left = len(entries)
        return self._batch[-left]

    def _hold(self, entries: list[Entry]) -> None:
        """Return ``entries`` next, in their order."""
        self._batch = entries
        self._cursor = iter(entries)


def _raising(exc: Exception) -> Iterator[Entry]:
    raise exc
    yield  # a generator: raises at its first next(), ends at the second


def to_timestamp_us(when: datetime | int) -> int:
    """Microseconds since 1970-01-01T00:00:00Z, as records store them: an aware ``datetime``,
    a naive one taken as UTC, or an integer as it is."""
    if isinstance(when, datetime):
        aware = when.replace(tzinfo=UTC) if when.utcoffset() is None else when
        return (aware - _EPOCH) // timedelta(microseconds=1)
    return operator.index(when)


def read_all(directory: str | os.PathLike[str] | Path) -> list[Entry]:
    """Every committed record of the log, following cutovers."""
    with Reader(directory) as reader:
        return list(reader)


def last_entry(directory: str | os.PathLike[str]) -> Entry | None:
    """The last committed record of the log, None when it holds none."""
    path = os.fspath(directory)
    for log in reversed(list_segments(path)):
        with SegmentFile(path, log) as segment:
            if segment.is_blank():
                continue
            header = segment.header()
            if isinstance(header, LegacyHeaderInfo):
                break  # version 1 indexes are counted from the first segment: walk the whole log
        # The last segment holding a record: read it alone, from its first record.
        with Reader(path, one_segment=True) as reader:
            reader._walk.start_segment(log)
            kept = _final(reader)
        if kept is not None:
            return kept
    with Reader(path) as reader:
        return _final(reader)


def _final(reader: Reader) -> Entry | None:
    kept = deque(reader, maxlen=1)
    return kept[0] if kept else None
