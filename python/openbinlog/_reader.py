"""The reader: committed records of a log directory, in index order.

A reader opens segments read-only, takes no lock and never writes. It returns
only records that end at or before the published commit point of their
segment (or, for a finished segment whose successor exists, before the
successor's base index), follows cutovers when asked to, and waits for new
records with ``has_next(timeout)``.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from ._format import HEADER_SIZE, LEGACY_FIRST_RECORD_OFFSET, LEGACY_LENGTH_SIZE, NO_ASQN
from ._legacy import iter_legacy_records
from ._records import Entry, RecordDecoder, find_next_record
from ._ref import Ref
from ._segment import LegacyHeaderInfo, SegmentHeaderInfo
from ._segment_file import (
    READ_CHUNK,
    SegmentFile,
    find_segment,
    is_last_blank,
    list_segments,
    next_entries,
    segment_end,
    slot_disagreement,
)
from ._wake import ChangeWaiter
from .errors import (
    BinlogError,
    ChainBrokenError,
    CorruptionError,
    InvalidRefError,
    NotALogError,
    TruncatedError,
    UnsupportedFeatureError,
)

RESYNC_WINDOW = 64 << 20


@dataclass(frozen=True, slots=True)
class Damage:
    """One damaged region of committed data, as a tolerant reader reports it."""

    error_class: str
    message: str
    path: str | None
    log: int | None
    offset: int | None
    index: int | None
    bytes_skipped: int
    next_index: int | None

    @classmethod
    def from_error(cls, error: BinlogError, *, bytes_skipped: int, next_index: int | None) -> Damage:
        return cls(
            error.error_class,
            error.message,
            error.path,
            error.log,
            error.offset,
            error.index,
            bytes_skipped,
            next_index,
        )


class _Cursor:
    """Position inside one segment; yields its committed entries."""

    def __init__(self, segment: SegmentFile, header: SegmentHeaderInfo | LegacyHeaderInfo) -> None:
        self.segment = segment
        self.header = header
        self.final = False
        self.lost_tail = False

    @property
    def offset(self) -> int:
        raise NotImplementedError

    @property
    def next_index(self) -> int:
        raise NotImplementedError

    @property
    def limit(self) -> int:
        raise NotImplementedError

    def next_batch(self) -> list[Entry]:
        """The next committed entries, in order; none at the end of the committed records for now."""
        raise NotImplementedError

    def extend(self, limit: int) -> None:
        raise NotImplementedError

    def resume_index(self, index: int) -> None:
        raise NotImplementedError


class _Version2Cursor(_Cursor):
    header: SegmentHeaderInfo

    def __init__(
        self,
        segment: SegmentFile,
        header: SegmentHeaderInfo,
        *,
        offset: int,
        next_index: int,
        last_asqn: int,
        limit: int,
    ) -> None:
        super().__init__(segment, header)
        self._decoder = RecordDecoder(
            log=segment.log, offset=offset, next_index=next_index, last_asqn=last_asqn, limit=limit
        )
        self._fed = offset

    @property
    def offset(self) -> int:
        return self._decoder.offset

    @property
    def next_index(self) -> int:
        return self._decoder.next_index

    @property
    def last_asqn(self) -> int:
        return self._decoder.last_asqn

    @property
    def limit(self) -> int:
        assert self._decoder.limit is not None
        return self._decoder.limit

    def extend(self, limit: int) -> None:
        self._decoder.limit = limit

    def resume_index(self, index: int) -> None:
        """Go on expecting ``index``: after a tolerant reader stepped over R-39's disagreement."""
        self._decoder.next_index = index

    def next_batch(self) -> list[Entry]:
        try:
            entries, self._fed = next_entries(self._decoder, self.segment.read, fed=self._fed, end=self.limit)
        except BinlogError as exc:
            raise exc.located(path=self.segment.path) from None
        return entries


class _LegacyCursor(_Cursor):
    header: LegacyHeaderInfo

    def __init__(self, segment: SegmentFile, header: LegacyHeaderInfo, *, offset: int, next_index: int) -> None:
        super().__init__(segment, header)
        self._offset = offset
        self._next_index = next_index
        self._tail = header.tail
        self._buffered: list[Entry] = []
        self._pending: BinlogError | None = None

    @property
    def offset(self) -> int:
        return self._offset

    @property
    def next_index(self) -> int:
        return self._next_index

    @property
    def limit(self) -> int:
        return self._tail

    def extend(self, limit: int) -> None:
        self._tail = limit

    def give_up(self) -> int:
        """Stop at the current offset for good; return the bytes left unread that exist (S' - o, spec 10.4)."""
        skipped = max(min(self._tail, self.segment.size()) - self._offset, 0)
        self._tail = self._offset
        self._buffered.clear()
        self._pending = None
        self.final = True
        return skipped

    def next_batch(self) -> list[Entry]:
        if not self._buffered:
            if self._pending is not None:
                error, self._pending = self._pending, None
                raise error
            if self._offset < self._tail:
                self._fill()
        entries, self._buffered = self._buffered, []
        if entries:
            self._offset = entries[-1].offset + entries[-1].size
            self._next_index = entries[-1].index + 1
        return entries

    def _keep_or_raise(self, error: BinlogError) -> None:
        """Raise now, or after the records decoded before the damage have been returned (R-9)."""
        if not self._buffered:
            raise error
        self._pending = error

    def _fill(self) -> None:
        """Decode the next window; records before a damaged one are still returned first (R-9)."""
        path, log, at = self.segment.path, self.segment.log, self._offset
        need = LEGACY_LENGTH_SIZE
        head = self.segment.read(at, need)
        if len(head) == need:
            need += max(int.from_bytes(head, "big", signed=True), 0)
        window = self.segment.read(at, min(self._tail - at, max(need, READ_CHUNK)))
        cut_by_window = at + len(window) < min(self._tail, self.segment.size())
        try:
            for entry in iter_legacy_records(window, log=log, offset=at, tail=self._tail, next_index=self._next_index):
                self._buffered.append(entry)
        except TruncatedError as exc:
            if not (cut_by_window and self._buffered):  # a window edge is not the end of the file
                self._keep_or_raise(exc.located(path=path))
        except BinlogError as exc:
            self._keep_or_raise(exc.located(path=path))
        if not self._buffered:
            raise TruncatedError(
                "legacy record cut short by the end of the file", path=path, log=log, offset=at, index=self._next_index
            )


def _segment_start(segment: SegmentFile, header: SegmentHeaderInfo, *, last_asqn: int) -> _Version2Cursor:
    """A cursor on a version 2 segment's first record, bounded by its current commit point."""
    return _Version2Cursor(
        segment,
        header,
        offset=HEADER_SIZE,
        next_index=header.base_index,
        last_asqn=last_asqn,
        limit=segment.commit(header).commit_offset,
    )


class Reader:
    """Iterate the committed records of the log in ``directory``.

    ``start`` resumes at the record a ref names (inclusive), ``after`` just
    past it; either is checked against the record it names. ``at_end``
    starts after the last committed record (a transient subscriber). With ``follow``
    the reader moves on to the next segment at a cutover; without it the
    reader stops at the end of the segment it is in. With ``tolerant``
    damaged committed regions are skipped and listed in ``damage`` instead
    of raising.

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
        follow: bool = True,
        tolerant: bool = False,
    ) -> None:
        if sum((start is not None, after is not None, at_end)) > 1:
            raise ValueError("give at most one of start, after and at_end")
        self.directory = os.fspath(directory)
        if not os.path.isdir(self.directory):
            raise NotALogError("not a log directory", path=self.directory)
        self.follow = follow
        self.tolerant = tolerant
        self.damage: list[Damage] = []
        self._cursor: _Cursor | None = None
        self._ready: list[Entry] = []  # decoded, not returned yet; the next one last
        self._ended = False
        self._closed = False
        self._waiter: ChangeWaiter | None = None
        if at_end:
            last = last_entry(self.directory)
            after = None if last is None else last.ref
        ref = start or after
        if ref is not None:
            self._cursor = self._cursor_at(ref, inclusive=start is not None)

    # -- public API ---------------------------------------------------------

    def __iter__(self) -> Iterator[Entry]:
        return self

    def __next__(self) -> Entry:
        ready = self._ready
        if ready:
            return ready.pop()
        if self._peek() is None:
            raise StopIteration
        return self._ready.pop()

    def has_next(self, timeout: float = 0.0) -> bool:
        """True when a committed record is ready, waiting up to ``timeout`` seconds."""
        if self._peek() is not None:
            return True
        if timeout <= 0 or self._ended:
            return False
        if self._waiter is None:
            self._waiter = ChangeWaiter(self.directory)
        deadline = time.monotonic() + timeout
        while True:
            if self._peek() is not None:
                self._waiter.reset()
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self._ended:
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
        if self._ready:
            return self._ready[-1].ref
        if self._cursor is None:
            return None
        return Ref(self._cursor.segment.log, self._cursor.offset, self._cursor.next_index)

    def close(self) -> None:
        if self._waiter is not None:
            self._waiter.close()
            self._waiter = None
        if self._cursor is not None:
            self._cursor.segment.close()
            self._cursor = None
        self._ready = []
        self._closed = True

    def __enter__(self) -> Reader:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- positioning --------------------------------------------------------

    def _segment_exists(self, log: int) -> bool:
        return find_segment(self.directory, log) is not None

    def _open(self, log: int) -> tuple[SegmentFile, SegmentHeaderInfo | LegacyHeaderInfo] | None:
        """Open segment ``log``; None when it does not exist or is a blank last segment."""
        if not self._segment_exists(log):
            return None
        try:
            segment = SegmentFile(self.directory, log)
        except NotALogError:
            return None  # removed between the check and the open
        try:
            if segment.is_blank() and is_last_blank(self.directory, log):
                segment.close()
                return None
            return segment, segment.header()
        except BaseException:
            segment.close()
            raise

    def _first_cursor(self) -> _Cursor | None:
        logs = list_segments(self.directory)
        if not logs:
            return None
        opened = self._open(logs[0])
        if opened is None:
            return None
        segment, header = opened
        if isinstance(header, LegacyHeaderInfo):
            return _LegacyCursor(segment, header, offset=LEGACY_FIRST_RECORD_OFFSET, next_index=1)
        return _segment_start(segment, header, last_asqn=NO_ASQN)

    def _cursor_at(self, ref: Ref, *, inclusive: bool) -> _Cursor:
        opened = self._open(ref.log)
        if opened is None:
            raise InvalidRefError(f"ref {ref}: segment {ref.log} does not exist", path=self.directory, log=ref.log)
        segment, header = opened
        try:
            cursor: _Cursor
            if isinstance(header, LegacyHeaderInfo):
                if not LEGACY_FIRST_RECORD_OFFSET <= ref.offset < header.tail:
                    raise InvalidRefError(
                        f"ref {ref}: offset outside the segment's records",
                        path=segment.path,
                        log=ref.log,
                        offset=ref.offset,
                    )
                cursor = _LegacyCursor(segment, header, offset=ref.offset, next_index=ref.index)
            else:
                limit = segment_end(self.directory, segment, header).offset
                if not HEADER_SIZE <= ref.offset < limit:
                    raise InvalidRefError(
                        f"ref {ref}: offset outside the committed records",
                        path=segment.path,
                        log=ref.log,
                        offset=ref.offset,
                    )
                cursor = _Version2Cursor(
                    segment, header, offset=ref.offset, next_index=ref.index, last_asqn=NO_ASQN, limit=limit
                )
            try:
                entries = cursor.next_batch()
            except BinlogError as exc:
                raise InvalidRefError(
                    f"ref {ref} does not name a valid record: {exc.message}",
                    path=segment.path,
                    log=ref.log,
                    offset=ref.offset,
                    index=ref.index,
                ) from exc
            if not entries or entries[0].offset != ref.offset:
                raise InvalidRefError(
                    f"ref {ref} names no data record", path=segment.path, log=ref.log, offset=ref.offset
                )
            self._ready = entries[::-1] if inclusive else entries[:0:-1]
            return cursor
        except BaseException:
            segment.close()
            raise

    # -- walking ------------------------------------------------------------

    def _peek(self) -> Entry | None:
        if self._closed:
            raise BinlogError("reader is closed", path=self.directory)
        while not self._ready:
            if self._cursor is None:
                self._cursor = self._first_cursor()
                if self._cursor is None:
                    return None
            try:
                entries = self._cursor.next_batch()
            except (CorruptionError, UnsupportedFeatureError) as exc:
                if not self.tolerant:
                    raise
                self._skip_damage(exc)
                continue
            if entries:
                entries.reverse()
                self._ready = entries
                break
            if not self._advance():
                return None
        return self._ready[-1]

    def _advance(self) -> bool:
        """At the end of the cursor's committed records: extend, move on, or report the end."""
        cursor = self._cursor
        assert cursor is not None
        segment = cursor.segment
        if isinstance(cursor, _LegacyCursor):
            finished = cursor.final
            if not finished:
                legacy = segment.header()
                assert isinstance(legacy, LegacyHeaderInfo)
                if legacy.tail > cursor.limit:
                    cursor.extend(legacy.tail)
                    return True
                finished = legacy.closed or self._segment_exists(segment.log + 1)
        else:
            assert isinstance(cursor.header, SegmentHeaderInfo)
            if not cursor.final:
                end = segment_end(self.directory, segment, cursor.header)
                cursor.final = end.final
                if end.offset > cursor.limit:
                    cursor.extend(end.offset)
                    return True
                if cursor.offset == end.offset and cursor.next_index != end.next_index and not cursor.lost_tail:
                    error = slot_disagreement(
                        cursor.next_index,
                        end.next_index,
                        path=segment.path,
                        log=segment.log,
                        slot_offset=end.slot_offset,
                    )
                    if not self.tolerant:
                        raise error
                    self.damage.append(Damage.from_error(error, bytes_skipped=0, next_index=end.next_index))
                    cursor.resume_index(end.next_index)  # spec 10.4: E := the slot's next_index
            finished = cursor.final
        if not finished:
            if any(log > segment.log + 1 for log in list_segments(self.directory)):
                return self._move_to_successor(cursor)  # N+1 missing, a later one present: chain_broken
            return False
        if not self.follow:
            self._ended = True
            return False
        return self._move_to_successor(cursor)

    def _move_to_successor(self, cursor: _Cursor) -> bool:
        log = cursor.segment.log
        opened = self._open(log + 1)
        if opened is None:
            later = [n for n in list_segments(self.directory) if n > log + 1]
            if later:
                error = ChainBrokenError(
                    f"segment {log + 1} is missing but {later[0]} exists",
                    path=self.directory,
                    log=log + 1,
                    index=cursor.next_index,
                )
                if not self.tolerant:
                    raise error
                jumped = self._open(later[0])
                resumed = jumped[1].base_index if jumped and isinstance(jumped[1], SegmentHeaderInfo) else None
                self.damage.append(Damage.from_error(error, bytes_skipped=0, next_index=resumed))
                if jumped is None:
                    return False
                segment, header = jumped
                next_cursor = self._successor_cursor(segment, header, cursor, check_chain=False)
                cursor.segment.close()
                self._cursor = next_cursor
                return True
            return False  # sealed, successor not visible yet
        segment, header = opened
        next_cursor = self._successor_cursor(segment, header, cursor)
        cursor.segment.close()
        self._cursor = next_cursor
        return True

    def _successor_cursor(
        self,
        segment: SegmentFile,
        header: SegmentHeaderInfo | LegacyHeaderInfo,
        previous: _Cursor,
        *,
        check_chain: bool = True,
    ) -> _Cursor:
        if isinstance(header, LegacyHeaderInfo):
            return _LegacyCursor(segment, header, offset=LEGACY_FIRST_RECORD_OFFSET, next_index=previous.next_index)
        if check_chain and isinstance(previous, _Version2Cursor):
            problem = None
            if header.log_id != previous.header.log_id:
                problem = "belongs to another log (log id differs)"
            elif header.base_index != previous.next_index:
                problem = f"starts at index {header.base_index}, the previous segment ends before {previous.next_index}"
            if problem is not None:
                error = ChainBrokenError(
                    f"segment {segment.log} {problem}",
                    path=segment.path,
                    log=segment.log,
                    offset=0,
                    index=previous.next_index,
                )
                if not self.tolerant:
                    segment.close()
                    raise error
                self.damage.append(Damage.from_error(error, bytes_skipped=0, next_index=header.base_index))
        last_asqn = previous.last_asqn if isinstance(previous, _Version2Cursor) else NO_ASQN
        return _segment_start(segment, header, last_asqn=last_asqn)

    @staticmethod
    def _resync(cursor: _Version2Cursor, start: int, end: int) -> tuple[int, int] | None:
        """The first whole valid record in [start, end) with an index not below the expected one.

        Windows overlap by half, so a record up to half a window long that
        straddles a window edge is still found.
        """
        at = start
        while at < end:
            wanted = min(end - at, RESYNC_WINDOW)
            window = cursor.segment.read(at, wanted)
            found = find_next_record(window, 0, min_index=cursor.next_index)
            if found is not None:
                return at + found, int.from_bytes(window[found + 8 : found + 16], "big")
            if len(window) < wanted or at + len(window) >= end:
                return None
            at += len(window) - RESYNC_WINDOW // 2
        return None

    def _skip_damage(self, error: BinlogError) -> None:
        """Tolerant reading: step to the next provably valid record of the segment (spec 10.4)."""
        cursor = self._cursor
        assert cursor is not None
        start = error.offset if error.offset is not None else cursor.offset
        if isinstance(cursor, _LegacyCursor):
            # Version 1 records carry nothing to resynchronise on: skip the segment's rest.
            self.damage.append(Damage.from_error(error, bytes_skipped=cursor.give_up(), next_index=None))
            return
        assert isinstance(cursor, _Version2Cursor)
        # S of spec 6.1: for a finished segment that is not sealed, the end of section 8.4, which
        # may lie beyond the commit point the cursor has reached so far.
        end = segment_end(self.directory, cursor.segment, cursor.header)
        limit = max(cursor.limit, end.offset)
        available = min(limit, cursor.segment.size())  # S' of spec 10.4
        found = self._resync(cursor, start + 1, available)
        if found is None:
            resume, next_index = limit, cursor.next_index
            skipped = max(available - start, 0)
        else:
            resume, next_index = found
            skipped = resume - start
        self.damage.append(
            Damage.from_error(error, bytes_skipped=skipped, next_index=None if found is None else next_index)
        )
        replacement = _Version2Cursor(
            cursor.segment, cursor.header, offset=resume, next_index=next_index, last_asqn=NO_ASQN, limit=limit
        )
        replacement.final = cursor.final or end.final
        # With no record found up to the segment end, the walk keeps the damaged record's expected
        # index: R-39's check against the slot is skipped, the successor's base index is still checked.
        replacement.lost_tail = found is None
        self._cursor = replacement


def read_all(directory: str | os.PathLike[str] | Path) -> list[Entry]:
    """Every committed record of the log, following cutovers."""
    with Reader(directory) as reader:
        return list(reader)


def last_entry(directory: str | os.PathLike[str]) -> Entry | None:
    """The last committed record of the log, None when it holds none."""
    path = os.fspath(directory)
    logs = list_segments(path)
    for log in reversed(logs):
        with SegmentFile(path, log) as segment:
            if segment.is_blank():
                continue
            header = segment.header()
            if isinstance(header, LegacyHeaderInfo):
                break  # version 1 indexes are counted from the first segment: walk the whole log
            if (
                segment.commit(header).next_index == header.base_index
                and segment_end(path, segment, header).offset == HEADER_SIZE
            ):
                continue
            start = Ref(log, HEADER_SIZE, header.base_index)
        with Reader(path, start=start, follow=False) as reader:
            return _final(reader)
    with Reader(path) as reader:
        return _final(reader)


def _final(reader: Reader) -> Entry | None:
    kept = deque(reader, maxlen=1)
    return kept[0] if kept else None
