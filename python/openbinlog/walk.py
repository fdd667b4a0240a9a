"""The reading procedure of the spec (section 10, "The walk"), implemented once.

Every reader of this package and of its adapters walks a log through this
module: ``Reader`` and ``read_split``, ``verify`` and the recovery dry run,
the writer's tail walk, the CLI, the Spark source and its UDFs. It works on
any ``Source`` (bytes read at an offset, and a size): local files, fsspec
files, decompressed copies, bytes in memory. The record checks themselves
are the codec's (``RecordDecoder``, spec 4.3); this module decides where a
walk starts, where it ends, what it does at damage and at each segment
boundary.

Where each rule of the walk lives:

- blank segment (spec 3.5): ``is_blank``
- segment end S and end index I_S (spec 6.1, 8.4): ``segment_end``, ``legacy_end``
- tail walk (spec 4.3.2): ``tail_walk``
- R-39 at the commit point: ``SegmentWalk`` (``_at_commit``), error built by ``slot_disagreement``
- resynchronisation (spec 10.4): ``resync``
- split start and stop (spec 10.5): ``find_boundary``, ``SegmentWalk`` (``Split``); the first asqn after a
  split's stop (LOOK): ``asqn_past_stop``
- chain (spec 8.6, Appendix B.4): ``next_segment``
- the walk of a whole log (spec 10.2, 10.3, 10.6): ``LogWalk``
- starting at an index or a time: ``seek_segment`` picks the segment, ``LogWalk.seek`` walks from it
- the sparse index (spec 18.5): ``usable_index`` (the index check), ``entry_reached`` (the entry check),
  ``indexed_start`` (a seek's start), ``indexed_cuts`` and ``checked_cuts`` (split starts)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar, runtime_checkable

from crc32c import crc32c as _raw_crc32c

from ._crc import mask
from ._format import (
    FRAME_DATA,
    FRAME_FIRST_SKIPPABLE,
    HEADER_SIZE,
    INDEX_ENTRY_SIZE,
    INDEX_HEADER_SIZE,
    LEGACY_FIRST_RECORD_OFFSET,
    LEGACY_LENGTH_SIZE,
    LENGTH_FIELD_SIZE,
    MAX_RECORD_LENGTH,
    MIN_RECORD_LENGTH,
    NO_ASQN,
    RECORD_HEADER,
    RECORD_HEADER_SIZE,
    SLOT_OFFSETS,
    SLOT_SIZE,
    VERSION_2,
)
from ._legacy import LegacyRun, legacy_entries, legacy_runs
from ._records import BATCH_ENTRIES, Entry, RecordDecoder, TailStop
from ._ref import Ref
from ._segment import CommitState, LegacyHeaderInfo, SegmentHeaderInfo, active_commit, decode_slot, parse_header
from ._sparse_index import IndexEntryInfo, IndexInfo, decode_entry, entry_offset, last_before, parse_index_header
from .compressed import UnpackError
from .errors import (
    AmbiguousSplitError,
    AsqnNotIncreasingError,
    BadHeaderError,
    BinlogError,
    BinlogIOError,
    ChainBrokenError,
    CorruptionError,
    IndexDiscontinuityError,
    InvalidRefError,
    OvertakenError,
    TruncatedError,
    UnsupportedFeatureError,
)

READ_CHUNK = 1 << 20
SEARCH_WINDOW = 1 << 20
# Attempts to open a segment whose name vanishes between a listing and its open (compression, retention).
OPEN_ATTEMPTS = 8
_CRC_END = RECORD_HEADER_SIZE - 4
_FRAME_DATA_BYTE = bytes([FRAME_DATA])

Header = SegmentHeaderInfo | LegacyHeaderInfo

# Reads of a header whose slots are both invalid before it is reported.
HEADER_READS = 8


class Source(Protocol):
    """Random read access to the bytes of one segment file."""

    def read_at(self, offset: int, size: int) -> bytes:
        """Up to ``size`` bytes from ``offset``; fewer only where the file ends.

        ``size`` may come from a length field: the read must cost memory for
        the bytes it returns, never for the bytes it was asked for (R-10).
        """
        ...

    def size(self) -> int: ...


class Run(Protocol):
    """Consecutive verified records, as a ``RunVerifier`` lays them out."""

    def __len__(self) -> int: ...

    @property
    def end(self) -> int:
        """The segment offset after the last record."""
        ...

    @property
    def next_index(self) -> int: ...

    def last_asqn(self, before: int) -> int:
        """The previous asqn after the run, given the one before it."""
        ...

    def count_before(self, offset: int) -> int:
        """How many of the records start before ``offset``."""
        ...

    def head(self, count: int) -> Run: ...


R = TypeVar("R", bound=Run)
R_co = TypeVar("R_co", bound=Run, covariant=True)


class RunVerifier(Protocol[R_co]):
    """A faster twin of ``RecordDecoder``'s batch loop, for a caller that wants its own layout of records.

    ``verify`` returns the records that lie whole in ``buf`` (the segment's
    bytes from ``base``) from its first byte on and pass every check of spec
    4.3.1 with ``next_index`` and ``last_asqn``, stopping before the first
    record that does not or that starts at ``stop`` or later; None when the
    first does not. It must accept exactly the records the reference loop
    accepts: a property test proves each verifier equal to it.
    """

    def verify(self, buf: bytes, *, base: int, log: int, next_index: int, last_asqn: int, stop: int) -> R_co | None: ...


class SegmentSource(Source, Protocol):
    """A segment of a log directory, opened for reading."""

    path: str
    log: int

    def close(self) -> None: ...


class Directory(Protocol):
    """A log directory: which segments it holds, and their bytes."""

    path: str

    def segments(self) -> list[int]:
        """The log numbers present, ascending (R-1)."""
        ...

    def open(self, log: int) -> SegmentSource | None:
        """Segment ``log``, or None when no name of it exists any more."""
        ...


@runtime_checkable
class IndexedDirectory(Directory, Protocol):
    """A log directory that also offers the sparse indexes of its segments (spec 18). A ``Directory``
    without ``open_index`` is read as one without indexes: an index is never needed (R-33)."""

    def open_index(self, log: int) -> IndexSource | None:
        """The index of segment ``log``, or None when there is none or it cannot be read."""
        ...


class IndexSource(Source, Protocol):
    """An index file opened for reading."""

    def close(self) -> None: ...


class BytesSource:
    """A segment held in memory."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def read_at(self, offset: int, size: int) -> bytes:
        return self.data[offset : offset + max(size, 0)]

    def size(self) -> int:
        return len(self.data)


class MemorySegment(BytesSource):
    """A segment of a ``MemoryDirectory``."""

    def __init__(self, data: bytes, *, path: str, log: int) -> None:
        super().__init__(data)
        self.path = path
        self.log = log

    def close(self) -> None:
        """Nothing to release."""


class MemoryDirectory:
    """A log directory held in memory: segment numbers and their bytes, and index files by log number."""

    def __init__(
        self, segments: dict[int, bytes], path: str = "<memory>", indexes: dict[int, bytes] | None = None
    ) -> None:
        self.files = dict(segments)
        self.indexes = dict(indexes or {})
        self.path = path

    def segments(self) -> list[int]:
        return sorted(self.files)

    def open(self, log: int) -> MemorySegment | None:
        data = self.files.get(log)
        return None if data is None else MemorySegment(data, path=self.path, log=log)

    def open_index(self, log: int) -> MemorySegment | None:
        data = self.indexes.get(log)
        return None if data is None else MemorySegment(data, path=self.path, log=log)


@dataclass(frozen=True, slots=True)
class Damage:
    """One damaged region of committed data, as a tolerant reader reports it (spec 10.4)."""

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


# -- one segment: blank test, header, end ------------------------------------


def all_zero(source: Source, start: int = 0) -> bool:
    """Every byte of ``source`` from ``start`` to its end is zero."""
    size, at = source.size(), start
    while at < size:
        chunk = source.read_at(at, min(READ_CHUNK, size - at))
        if not chunk:
            break
        if chunk.count(0) != len(chunk):
            return False
        at += len(chunk)
    return True


def is_blank(source: Source) -> bool:
    """Spec 3.5: the file holds at most 256 bytes, all zero (a file of no bytes included).

    Only a header that never became durable leaves such a file. A short file
    with a non-zero byte is not blank (its header check says ``truncated``),
    nor is a zeroed region longer than a header, which held records or a
    preallocated segment's space (its version 0 says ``unsupported_version``):
    records are reported, never dropped.
    """
    head = source.read_at(0, HEADER_SIZE + 1)  # one byte beyond the header says whether the file is longer
    return len(head) <= HEADER_SIZE and head.count(0) == len(head)


def read_header(source: Source, log: int) -> Header:
    """The header of segment ``log``, checked in the order of spec 3.4 (Appendix B.3 for version 1)."""
    return parse_header(_settled_header(source), log=log)


def read_commit(source: Source, header: SegmentHeaderInfo) -> CommitState:
    """The active commit slot, read again from the file (R-4): it moves while writers append."""
    return active_commit(_settled_header(source), base_index=header.base_index, log=header.log)


def _settled_header(source: Source) -> bytes:
    """The header's bytes, read again while neither commit slot is valid and the bytes keep changing (R-46):
    a writer publishing through a mapping can tear both slots within one read; damage reads the same twice."""
    data = source.read_at(0, HEADER_SIZE)
    for _ in range(HEADER_READS - 1):
        if len(data) < HEADER_SIZE or any(decode_slot(data[at : at + SLOT_SIZE]) is not None for at in SLOT_OFFSETS):
            break
        again = source.read_at(0, HEADER_SIZE)
        if again == data:
            break
        data = again
    return data


@dataclass(frozen=True, slots=True)
class SegmentEnd:
    """Where a segment's committed records end now: S, and the index a walk expects there, I_S (spec 6.1);
    with the commit point C and the active slot's next index, which R-39 compares at C."""

    offset: int
    index: int
    commit_offset: int
    commit_index: int
    last_asqn: int
    last_timestamp_us: int
    final: bool  # sealed or finished: the end does not move any more
    closed: bool  # sealed (version 2) or closed (version 1): the successor must follow
    slot_offset: int  # the active slot this end comes from, where R-39 reports


@dataclass(frozen=True, slots=True)
class TailScan:
    """What a tail-mode walk (spec 4.3.2) found beyond the commit point."""

    commit_offset: int
    end: int
    next_index: int
    last_asqn: int
    last_timestamp_us: int
    records: int
    stop: TailStop
    file_size: int

    @property
    def extra_bytes(self) -> int:
        """Bytes after the last valid record: what recovery truncates or zeroes."""
        return max(self.file_size - self.end, 0)


def next_entries(
    decoder: RecordDecoder,
    source: Source,
    *,
    fed: int,
    end: int,
    most: int = BATCH_ENTRIES,
    least: int = READ_CHUNK,
) -> tuple[list[Entry], int]:
    """The next entries (up to ``most``), fed from ``source`` (bytes ``fed`` to ``end``) as needed.

    Returns the entries (none when the walk is over for now) and how far the
    file has been fed. Reads are of ``least`` bytes or more (what the record
    being decoded needs) and bounded by ``end``: memory stays proportional to
    the bytes actually present. Each read starts where the decoder stands, so
    the few bytes of a record cut by the previous read are read again rather
    than joined to the next read by a copy of it.
    """
    while True:
        entries = decoder.next_batch(most)
        if entries or decoder.done:
            return entries, fed
        if fed >= end:
            if decoder.input_ended:
                return entries, fed
            decoder.end_of_input()
            continue
        start, held = decoder.offset, decoder.pending()
        # A long record is read whole: ``read_at`` costs only the bytes the file holds, whatever its length says.
        want = min(max(held + decoder.wanted(), least), end - start)
        data = source.read_at(start, want)
        if len(data) <= held:  # nothing new: the file ends before ``end``
            end = fed
            continue
        decoder.refill(data)
        fed = start + len(data)


def tail_walk(source: Source, *, log: int, commit: CommitState, stop_before_index: int | None = None) -> TailScan:
    """Spec 4.3.2: the valid records beyond the commit point, up to the first that fails.

    ``stop_before_index``: stop rule "s" of a finished segment's walk (spec
    8.4): records whose index reaches the successor's base index are not
    part of this segment.
    """
    file_size = source.size()
    decoder = RecordDecoder(
        log=log, offset=commit.commit_offset, next_index=commit.next_index, last_asqn=commit.last_asqn
    )
    fed = commit.commit_offset
    records = 0
    last_timestamp = commit.last_timestamp_us
    while stop_before_index is None or decoder.next_index < stop_before_index:
        most = (
            BATCH_ENTRIES if stop_before_index is None else min(BATCH_ENTRIES, stop_before_index - decoder.next_index)
        )
        entries, fed = next_entries(decoder, source, fed=fed, end=file_size, most=most)
        if not entries:
            break
        records += len(entries)
        last_timestamp = entries[-1].timestamp_us if entries[-1].timestamp_us is not None else last_timestamp
    stop = decoder.stop or TailStop(decoder.offset, "successor")
    return TailScan(
        commit_offset=commit.commit_offset,
        end=decoder.offset,
        next_index=decoder.next_index,
        last_asqn=decoder.last_asqn,
        last_timestamp_us=last_timestamp,
        records=records,
        stop=stop,
        file_size=file_size,
    )


def segment_end(source: Source, header: SegmentHeaderInfo, successor: Header | None) -> SegmentEnd:
    """S and I_S of a version 2 segment (spec 6.1), its slots read again (R-4).

    ``successor``: the header of segment N+1 when it is present and not a
    blank last segment, else None. A sealed segment ends at its commit point;
    an open one whose successor exists is finished and ends where the tail
    walk of spec 8.4 stops below the successor's base index; an open last
    segment ends at its commit point for now.
    """
    commit = read_commit(source, header)
    slot_offset = SLOT_OFFSETS[commit.generation % 2]
    at_commit = SegmentEnd(
        commit.commit_offset,
        commit.next_index,
        commit.commit_offset,
        commit.next_index,
        commit.last_asqn,
        commit.last_timestamp_us,
        final=commit.closed or successor is not None,
        closed=commit.closed,
        slot_offset=slot_offset,
    )
    if commit.closed or not isinstance(successor, SegmentHeaderInfo):
        return at_commit
    scan = tail_walk(source, log=header.log, commit=commit, stop_before_index=successor.base_index)
    return SegmentEnd(
        scan.end,
        scan.next_index,
        commit.commit_offset,
        commit.next_index,
        scan.last_asqn,
        scan.last_timestamp_us,
        final=True,
        closed=False,
        slot_offset=slot_offset,
    )


def legacy_end(source: Source, log: int) -> tuple[LegacyHeaderInfo, SegmentEnd]:
    """A version 1 segment's header read again, and its end: the last element position (Appendix B.4).

    It is final only when the segment is closed: a successor's existence does
    not finish it (a restarted jPOS-EE writer appends to it again).
    """
    header = read_header(source, log)
    if not isinstance(header, LegacyHeaderInfo):
        raise BadHeaderError("segment changed version while being read", log=log, offset=4)
    end = SegmentEnd(
        header.tail, 0, header.tail, 0, NO_ASQN, 0, final=header.closed, closed=header.closed, slot_offset=8
    )
    return header, end


def slot_disagreement(walked_index: int, slot_index: int, *, path: str, log: int, slot_offset: int) -> BadHeaderError:
    """R-39: a walk that reached the segment end expects ``walked_index``, the active slot ``slot_index``."""
    return BadHeaderError(
        f"the records end before index {walked_index}, the commit slot says {slot_index}",
        path=path,
        log=log,
        offset=slot_offset,
        index=walked_index,
    )


# -- resynchronisation and split boundaries ------------------------------------


def _payload_matches(source: Source, window: bytes, window_at: int, span: tuple[int, int], stored: int) -> bool:
    """The masked CRC32C of segment bytes ``[start, stop)`` equals ``stored``.

    Bytes beyond ``window`` are read from ``source`` in pieces, so a payload
    of any size is checked in bounded memory.
    """
    start, stop = span
    view = memoryview(window)
    inside = min(stop, window_at + len(window))
    crc = _raw_crc32c(view[start - window_at : inside - window_at]) if inside > start else 0
    at = max(inside, start)
    while at < stop:
        piece = source.read_at(at, min(READ_CHUNK, stop - at))
        if not piece:
            return False
        crc = _raw_crc32c(piece, crc)
        at += len(piece)
    return mask(crc) == stored


def _candidates(source: Source, first: int, bound: int, low: int, high: int) -> Iterator[tuple[int, int, int]]:
    """Every position p >= ``first`` that satisfies conditions 1 to 6 of the resynchronisation
    (spec 10.4), in order, as (p, index, length): a whole data record with valid checksums
    ending at or before ``bound`` (S'), with ``low`` <= index < ``high`` (E and I_S).

    The search reads windows of ``SEARCH_WINDOW`` bytes, each starting 39 bytes before the
    previous one ends, and jumps between frame bytes of value 1; a candidate's payload is
    read whatever its size.
    """
    unpack = RECORD_HEADER.unpack_from
    at = first
    while at + RECORD_HEADER_SIZE <= bound:
        window = source.read_at(at, min(SEARCH_WINDOW, bound - at))
        last = len(window) - RECORD_HEADER_SIZE  # the last position whose header lies whole in the window
        if last < 0:
            return
        view = memoryview(window)
        frame_at = window.find(_FRAME_DATA_BYTE, 4)
        while 0 <= frame_at <= last + 4:
            p = frame_at - 4
            length, _frame, _flags, _reserved, index, _asqn, _ts, payload_crc, header_crc = unpack(window, p)
            end = at + p + 4 + length
            if (
                low <= index < high
                and MIN_RECORD_LENGTH <= length <= MAX_RECORD_LENGTH
                and end <= bound
                and mask(_raw_crc32c(view[p : p + _CRC_END])) == header_crc
                and _payload_matches(source, window, at, (at + p + RECORD_HEADER_SIZE, end), payload_crc)
            ):
                yield at + p, index, length
            frame_at = window.find(_FRAME_DATA_BYTE, frame_at + 1)
        at += last + 1


def resync(source: Source, damaged_at: int, bound: int, *, low: int, high: int) -> tuple[int, int] | None:
    """Spec 10.4: the first p > ``damaged_at`` satisfying conditions 1 to 6, with its index; None if none."""
    for found, index, _length in _candidates(source, damaged_at + 1, bound, low, high):
        return found, index
    return None


def _continues(source: Source, at: int, bound: int, index: int) -> bool:
    """The continuity check of spec 10.5: the record at ``at`` passes steps 1 to 6 of spec 4.3.1
    within ``bound`` (a data or skippable frame, flags and reserved 0) and carries ``index``."""
    head = source.read_at(at, RECORD_HEADER_SIZE)
    if len(head) < RECORD_HEADER_SIZE or at + RECORD_HEADER_SIZE > bound:
        return False
    length, frame, flags, reserved, stored_index, _asqn, _ts, payload_crc, header_crc = RECORD_HEADER.unpack(head)
    return (
        mask(_raw_crc32c(head[:_CRC_END])) == header_crc
        and (frame == FRAME_DATA or frame >= FRAME_FIRST_SKIPPABLE)
        and not flags
        and not reserved
        and MIN_RECORD_LENGTH <= length <= MAX_RECORD_LENGTH
        and at + 4 + length <= bound
        and _payload_matches(source, head, at, (at + RECORD_HEADER_SIZE, at + 4 + length), payload_crc)
        and stored_index == index
    )


def find_boundary(source: Source, start: int, bound: int, *, low: int, high: int) -> tuple[int, int] | None:
    """Spec 10.5: the first record boundary at or after ``start`` and its index; None if there is none.

    Offset 256 is always a boundary. Elsewhere: a position satisfying the
    resynchronisation conditions whose record either ends at ``bound`` (S') or
    is followed by a record that passes the continuity check.
    """
    if start <= HEADER_SIZE:
        return HEADER_SIZE, low
    for found, index, length in _candidates(source, start, bound, low, high):
        following = found + 4 + length
        if following == bound or _continues(source, following, bound, index + 1):
            return found, index
    return None


# -- the walk of one segment's committed records -------------------------------


@dataclass(frozen=True, slots=True)
class Split:
    """Where a split read ``[s, t)`` stops: it returns records before ``stop`` (t) and walks on,
    returning nothing, to ``walk_to``: the boundary found from t, where the next split starts
    (b(t)), or S when there is none (spec 10.5). ``walk_to_index``: the index stored at b(t).
    ``look_to``: where a read narrowed to a checked entry (index 18.5) ends: the look for the first
    asqn after b(t) (LOOK) goes no further; None: up to S."""

    stop: int
    walk_to: int
    walk_to_index: int | None = None
    look_to: int | None = None


class SegmentWalk:
    """The committed records of one version 2 segment, from ``start`` to its end S (spec 10, the walk).

    ``next_batch`` returns the next verified entries, or none at S (for now,
    when S can still move: ``extend`` moves it). Damage raises its typed
    error after every record before it has been returned (R-9); a tolerant
    walk appends it to ``damage`` instead and resynchronises (spec 10.4). At S
    the walk makes the check of R-39. With ``split`` it stops as a split read
    does (spec 10.5).
    """

    def __init__(
        self,
        source: Source,
        *,
        path: str,
        header: SegmentHeaderInfo,
        end: SegmentEnd,
        start: int = HEADER_SIZE,
        next_index: int | None = None,
        last_asqn: int = NO_ASQN,
        tolerant: bool = False,
        damage: list[Damage] | None = None,
        split: Split | None = None,
        refresh: Callable[[], SegmentEnd] | None = None,
    ) -> None:
        self.source = source
        self.path = path
        self.header = header
        self.log = header.log
        self.end = end
        self.refresh = refresh
        self.tolerant = tolerant
        self.damage = [] if damage is None else damage
        self.split = split
        self.over = False  # nothing more will come from this segment, whatever the writers do
        self.lost_tail = False  # damage with nothing to resume at: R-39 does not apply (spec 10.4)
        self._pending: BinlogError | None = None
        self._checked_at = -1  # the commit point at which R-39 was last checked
        self._restart(start, header.base_index if next_index is None else next_index, last_asqn)

    def _limit(self, offset: int) -> int:
        """How far the record checks reach from ``offset``: C below the commit point, S from it on (spec 4.3.1).

        A walk standing at C stops there until it has made the check of R-39, however it arrived:
        a batch, a verified run, a resynchronisation or a ref.
        """
        commit = self.end.commit_offset
        if offset < commit or (offset == commit and self._checked_at != commit):
            return commit
        return self.end.offset

    def _restart(self, offset: int, next_index: int, last_asqn: int) -> None:
        self._decoder = RecordDecoder(
            log=self.log, offset=offset, next_index=next_index, last_asqn=last_asqn, limit=self._limit(offset)
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
    def at_end(self) -> bool:
        """The walk stands at S: every committed record up to the current end has been walked."""
        return self.over or self._decoder.offset >= self.end.offset

    def extend(self, end: SegmentEnd) -> None:
        """The segment end read again (a commit point moved, a successor appeared).

        An end read after a power loss may lie below the one the walk has:
        the walk keeps its position and waits for the commit point to pass it (R-24).
        """
        if end.offset >= self.end.offset and end.commit_offset >= self.end.commit_offset:
            self.end = end
            self._decoder.limit = self._limit(self._decoder.offset)

    def next_batch(self, most: int = BATCH_ENTRIES) -> list[Entry]:
        if self._pending is not None:
            error, self._pending = self._pending, None
            raise error
        while not self.over:
            # At b(t) a split reads the one record it checks there (spec 10.5), not a chunk of the next split's.
            landed = self.split is not None and self._decoder.offset >= self.split.walk_to
            held = self._decoder.last_asqn  # A at the first record of the batch: _before_stop follows it to b(t)
            try:
                entries, self._fed = next_entries(
                    self._decoder,
                    self.source,
                    fed=self._fed,
                    end=self._limit(self._decoder.offset),
                    most=most,
                    least=0 if landed else READ_CHUNK,
                )
            except (CorruptionError, UnsupportedFeatureError) as exc:
                exc.located(path=self.path)
                if self._beyond_split(exc):
                    return []
                if not self.tolerant:
                    raise
                self._step_over(exc)
                continue
            if self.split is not None:
                entries = self._before_stop(entries, held)
            if not entries and self._pending is not None:
                error, self._pending = self._pending, None
                raise error  # no record before it is left to return: an empty batch would end the read
            if entries or self.over:
                return entries  # a split that landed on b(t) ends there: C beyond it is the next split's
            if not self._decoder.done:
                continue  # a split kept none of a batch's records: walk on to its end
            if not self._at_limit():
                if self.split is not None:
                    self.over = True
                return []
        return []

    def _at_limit(self) -> bool:
        """The walk stands at its current limit: read the end again (END), make the check of R-39 at the
        commit point, and say whether the walk goes on (to S, or to a commit point that moved)."""
        decoder = self._decoder
        if self.refresh is not None:
            self.extend(self.refresh())
        end = self.end
        if decoder.offset == end.commit_offset and self._checked_at != end.commit_offset:
            self._checked_at = end.commit_offset
            self._at_commit()
        limit = self._limit(decoder.offset)
        if decoder.offset < limit:
            decoder.limit = limit
            return True
        return False

    def next_run(self, runs: RunVerifier[R], *, chunk: int) -> R | list[Entry]:
        """``next_batch``, with the records ``runs`` proves laid out its way (empty only at the end).

        Each step reads up to ``chunk`` bytes at the walk's position and lets
        ``runs`` verify what it can; a record it does not prove goes to the
        reference step, which verifies or classifies it. Split stops and R-39
        are the walk's, as in ``next_batch``.
        """
        while self._pending is None and not self.over:
            decoder, split = self._decoder, self.split
            at, bound = decoder.offset, self._limit(decoder.offset)
            limit = bound if split is None else min(split.walk_to, bound)
            if at >= limit:
                break
            # Never beyond b(t): a record that crosses it is not whole in ``buf``, and the reference step
            # below meets it and reports the split ambiguous.
            buf = self.source.read_at(at, min(chunk, limit - at))
            run = runs.verify(
                buf, base=at, log=self.log, next_index=decoder.next_index, last_asqn=decoder.last_asqn, stop=limit
            )
            if run is None:
                break
            self._restart(run.end, run.next_index, run.last_asqn(decoder.last_asqn))
            kept = len(run)
            if split is not None:
                kept = run.count_before(split.walk_to if self.tolerant else split.stop)
            if kept:
                return run.head(kept)  # type: ignore[return-value]  # a verifier's head is its own kind of run
        return self.next_batch()

    def _at_commit(self) -> None:
        """R-39: at C the walk's expected index is the active slot's next index; a tolerant walk reports
        a disagreement and takes the slot's."""
        decoder, end = self._decoder, self.end
        if self.lost_tail or decoder.next_index == end.commit_index:
            return
        error = slot_disagreement(
            decoder.next_index, end.commit_index, path=self.path, log=self.log, slot_offset=end.slot_offset
        )
        if not self.tolerant:
            raise error
        self.damage.append(Damage.from_error(error, bytes_skipped=0, next_index=end.commit_index))
        decoder.next_index = end.commit_index

    def _beyond_split(self, error: BinlogError) -> bool:
        """Damage at or after b(t) is the next split's to report; a split stops at b(t)."""
        split = self.split
        if split is None or error.offset is None or error.offset < split.walk_to:
            return False
        self.over = True
        if error.offset != split.walk_to:
            self._ambiguous(split)
            if self._pending is not None:
                error, self._pending = self._pending, None
                raise error
        elif isinstance(error, IndexDiscontinuityError | AsqnNotIncreasingError):
            # Only this split knows the index and asqn expected at b(t): the next split starts there
            # knowing neither (spec 10.5), so a resurrected record or a gap at b(t) is this split's to report.
            if not self.tolerant:
                raise error
            self.damage.append(Damage.from_error(error, bytes_skipped=0, next_index=split.walk_to_index))
        return True

    def _before_stop(self, entries: list[Entry], held: int) -> list[Entry]:
        """A split's records: those before t; then the walk must land on b(t) (spec 10.5).

        A walk that steps over b(t) instead (b(t) lies inside a record it
        walked) has met a boundary that is not one: ``ambiguous_split``.
        Records in [t, b(t)) are returned by a tolerant split only: they are
        valid records the next split does not start at, followed by damage
        this split reports. ``held``: the previous asqn A at the first of
        ``entries``; a walk that lands on b(t) holding one where the record
        there carries none looks for the first asqn after it (LOOK).
        """
        split = self.split
        assert split is not None
        keep_before = split.walk_to if self.tolerant else split.stop
        kept: list[Entry] = []
        for entry in entries:
            if entry.offset >= split.walk_to:
                self.over = True
                if entry.offset != split.walk_to:
                    self._ambiguous(split)
                elif entry.asqn == NO_ASQN and held != NO_ASQN:
                    self._look_past(split, entry, held)
                return kept
            if entry.asqn != NO_ASQN:
                held = entry.asqn
            if entry.offset < keep_before:
                kept.append(entry)
        if self._decoder.offset > split.walk_to:
            self.over = True
            self._ambiguous(split)
        return kept

    def _look_past(self, split: Split, landed: Entry, held: int) -> None:
        """LOOK (spec 10.2.2, R-27): the walk landed on b(t), whose record carries no asqn, holding A =
        ``held``. The split that starts at b(t) knows no earlier asqn (A := -1), nor do the splits after it
        up to the first asqn: this split checks that asqn against its A, and reports it where it fails (a
        tolerant split: a region of 0 bytes, resumed at that record, which the split holding it returns)."""
        error = asqn_past_stop(
            self.source,
            log=self.log,
            end=self.end,
            offset=landed.offset,
            next_index=landed.index,
            last_asqn=held,
            tolerant=self.tolerant,
            look_to=split.look_to,
        )
        if error is None:
            return
        error.located(path=self.path)
        if not self.tolerant:
            self._pending = error  # after the records returned before it
            return
        self.damage.append(Damage.from_error(error, bytes_skipped=0, next_index=error.index))

    def _ambiguous(self, split: Split) -> None:
        """The walk stepped over b(t) (R-40). Standing at C, it makes the check of R-39 first (spec 10.2.2,
        WALK step 2.1 before 2.2); a failure there ends the split instead."""
        commit = self.end.commit_offset
        if self._decoder.offset == commit and self._checked_at != commit:
            self._checked_at = commit
            try:
                self._at_commit()
            except BinlogError as disagreement:
                self._pending = disagreement  # after the records returned before it
                return
        error = AmbiguousSplitError(
            f"the split boundary found at {split.walk_to} lies inside a record: a payload holds a valid record",
            path=self.path,
            log=self.log,
            offset=split.walk_to,
            index=split.walk_to_index,
        )
        if not self.tolerant:
            self._pending = error
            return
        self.damage.append(Damage.from_error(error, bytes_skipped=0, next_index=None))

    def _step_over(self, error: BinlogError) -> None:
        """Spec 10.4: report the damage, resume at the next position satisfying conditions 1 to 6."""
        if self.refresh is not None:
            self.extend(self.refresh())  # the search runs up to S, which lies beyond C in a finished segment
        decoder = self._decoder
        damaged_at = decoder.offset if error.offset is None else error.offset
        expected = decoder.next_index
        bound = min(self.end.offset, self.source.size())  # S'
        found = resync(self.source, damaged_at, bound, low=expected, high=self.end.index)
        walk_to = self.split.walk_to if self.split is not None else None
        if found is not None and (walk_to is None or found[0] < walk_to):
            resume, resume_index = found
            self.damage.append(Damage.from_error(error, bytes_skipped=resume - damaged_at, next_index=resume_index))
            self._restart(resume, resume_index, NO_ASQN)
            return
        if self.split is not None and self.split.walk_to < bound:
            # The next split starts at b(t), where reading resumes: this split ends there.
            skipped = max(self.split.walk_to - damaged_at, 0)
            self.damage.append(Damage.from_error(error, bytes_skipped=skipped, next_index=self.split.walk_to_index))
            self.over = True
            return
        # Nothing to resume at in this segment: the walk of it ends at S'.
        self.damage.append(Damage.from_error(error, bytes_skipped=max(bound - damaged_at, 0), next_index=None))
        self.lost_tail = True
        if self.split is not None or self.end.final:
            self.over = True
        self._restart(self.end.offset, expected, decoder.last_asqn)


def asqn_past_stop(
    source: Source,
    *,
    log: int,
    end: SegmentEnd,
    offset: int,
    next_index: int,
    last_asqn: int,
    tolerant: bool = False,
    look_to: int | None = None,
) -> AsqnNotIncreasingError | None:
    """LOOK(b(t)) of spec 10.2.2 (R-27): from the record at ``offset`` (b(t), which passed the split's check
    there and carries no asqn) with the split's E (``next_index``, the index stored there) and A
    (``last_asqn``, not -1), walk on in committed mode, returning nothing, over the records that carry no
    asqn (and skippable ones, R-11) up to the first data record that carries one, and give the error of step
    8 of format 4.3.1 where it fails there, or where a skippable record's asqn fails it on the way.

    Any other damage ends the look without an error: the split that holds it reports it, and READ-LOG's A
    after it is -1 (RESYNC). So do S and ``look_to`` (a narrowed read: a seek, not a verification). At C
    the look makes the check of R-39 as the walk does: a strict look ends where it fails (READ-LOG reports
    the disagreement first), a tolerant one goes on with the slot's next index. Reads grow with the bytes
    walked (4 KiB first), and never reach beyond the first asqn, S or ``look_to``.
    """
    commit = end.commit_offset
    stop = end.offset if look_to is None else min(end.offset, look_to)
    decoder = RecordDecoder(log=log, offset=offset, next_index=next_index, last_asqn=last_asqn)
    fed = offset
    while decoder.offset < stop:
        if decoder.offset == commit and decoder.offset != offset and decoder.next_index != end.commit_index:
            if not tolerant:
                return None  # R-39 fails here: the split that reaches C reports it
            decoder.next_index = end.commit_index
        decoder.limit = min(commit if decoder.offset < commit else end.offset, stop)
        least = min(max(decoder.offset - offset, 4096), READ_CHUNK)
        try:
            entries, fed = next_entries(decoder, source, fed=fed, end=decoder.limit, most=1, least=least)
        except AsqnNotIncreasingError as error:
            return error
        except (CorruptionError, UnsupportedFeatureError):
            return None  # the split that holds it reports it; READ-LOG resynchronises after it, A := -1
        if entries and entries[0].asqn != NO_ASQN:
            return None  # the first asqn passes step 8: the split that holds it has READ-LOG's A from there on
        if not entries and not decoder.done:
            return None  # the file ends first: truncated, the split that holds it reports it
    return None


def split_range(
    source: Source, *, header: SegmentHeaderInfo, end: SegmentEnd, start: int, stop: int
) -> tuple[int, int, Split] | None:
    """Where the split ``[start, stop)`` of a segment starts (offset and index) and how it stops
    (spec 10.5); None when no record starts in it."""
    bound = min(end.offset, source.size())
    first = find_boundary(source, start, bound, low=header.base_index, high=end.index)
    if first is None or first[0] >= stop:
        return None
    following = find_boundary(source, stop, bound, low=header.base_index, high=end.index) if stop < bound else None
    split = Split(stop, end.offset) if following is None else Split(stop, following[0], walk_to_index=following[1])
    return first[0], first[1], split


# -- version 1 segments ---------------------------------------------------------


class LegacyWalk:
    """The records of one version 1 segment, numbered from ``next_index`` (Appendix B.4, B.5).

    Checked by ``legacy_runs`` in windows; a record larger than a
    window widens it. A tolerant walk reports damage with the bytes up to S'
    as skipped and ends: version 1 records carry nothing to resynchronise on.
    """

    def __init__(
        self,
        source: Source,
        *,
        path: str,
        log: int,
        end: SegmentEnd,
        start: int = LEGACY_FIRST_RECORD_OFFSET,
        next_index: int = 1,
        tolerant: bool = False,
        damage: list[Damage] | None = None,
        window: int = READ_CHUNK,
    ) -> None:
        self.source = source
        self.path = path
        self.log = log
        self.end = end
        self.tolerant = tolerant
        self.damage = [] if damage is None else damage
        self.window = window
        self.offset = start
        self.next_index = next_index
        self.last_asqn = NO_ASQN
        self.over = False
        self._pending: BinlogError | None = None

    @property
    def at_end(self) -> bool:
        return self.over or self.offset >= self.end.offset

    def extend(self, end: SegmentEnd) -> None:
        if end.offset >= self.end.offset:
            self.end = end

    def next_batch(self, most: int = BATCH_ENTRIES) -> list[Entry]:
        del most  # a window's records come together
        first = self.next_index
        return list(legacy_entries(self.next_runs(), log=self.log, next_index=first))

    def next_runs(self) -> list[LegacyRun]:
        """The records ``next_batch`` returns, as the runs of ``legacy_runs``, before any entry is made:
        a caller that counts them (``stat``) does no work per empty record of a sparse file."""
        if self._pending is not None:
            error, self._pending = self._pending, None
            raise error
        runs: list[LegacyRun] = []
        tail = self.end.offset
        while not runs and not self.over and self._pending is None and self.offset < tail:
            at = self.offset
            want = min(tail - at, self.window)
            data = self.source.read_at(at, want)
            failed: BinlogError | None = None
            try:
                for run in legacy_runs(data, log=self.log, offset=at, tail=tail, next_index=self.next_index):
                    runs.append(run)
            except BinlogError as exc:
                failed = exc
            if runs:
                last, count, payload = runs[-1]
                self.offset = last + count * LEGACY_LENGTH_SIZE + len(payload)
                self.next_index += sum(run[1] for run in runs)
            if failed is None:
                continue
            if isinstance(failed, TruncatedError) and len(data) == want and at + want < tail:
                # Cut by the window, not by the file or the tail: the next read starts after the last record,
                # or, when a record is longer than the window, reads it whole (the window grows every time).
                if not runs:
                    head = self.source.read_at(at, LEGACY_LENGTH_SIZE)
                    length = int.from_bytes(head, "big", signed=True)
                    self.window = max(2 * self.window, LEGACY_LENGTH_SIZE + length)
                continue
            self._damaged(failed)
        if not runs and self._pending is not None:
            error, self._pending = self._pending, None
            raise error
        return runs

    def _damaged(self, error: BinlogError) -> None:
        """Damage at ``offset``, after the records before it."""
        error.located(path=self.path)
        if not self.tolerant:
            self._pending = error  # after the records before it
            return
        skipped = max(min(self.end.offset, self.source.size()) - self.offset, 0)
        self.damage.append(Damage.from_error(error, bytes_skipped=skipped, next_index=None))
        self.over = True


# -- the chain -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Boundary:
    """What follows segment N at its end (spec 8.6, Appendix B.4).

    ``next_log``: the segment the walk continues with (None: the log ends
    here for now, a follower waits). ``error``: the ``chain_broken`` to
    report first; a strict walk stops at it, a tolerant one reports it and
    continues with ``next_log`` when there is one. ``next_index``: the index
    the walk expects at the start of ``next_log``.
    """

    next_log: int | None
    error: ChainBrokenError | None
    next_index: int


def legacy_leftover(successor: Header | None, *, nxt: int, higher: Sequence[int]) -> bool:
    """Appendix B.4: the only segment that may follow an open version 1 segment N: an empty, open version 1
    segment N+1, left by a cutover that died, with no segment above it (``higher``: those above N)."""
    return (
        isinstance(successor, LegacyHeaderInfo)
        and not successor.closed
        and successor.tail == LEGACY_FIRST_RECORD_OFFSET
        and list(higher) == [nxt]
    )


def next_segment(
    *,
    path: str,
    log: int,
    header: Header,
    end: SegmentEnd,
    expected: int,
    present: Sequence[int],
    successor: Header | None,
    successor_path: str | None = None,
) -> Boundary:
    """The chain rule at the end S of segment ``log``, whose walk expects ``expected`` there.

    ``present``: the log numbers listed; ``successor``: the header of N+1
    when it is present and not a blank last segment.
    """
    higher = [number for number in present if number > log]
    nxt = log + 1
    if successor is None:
        if higher and higher[0] != nxt and min(present) > log:
            # N itself is gone too: retention, which removes the lowest segments first, overtook the walk.
            raise OvertakenError(
                f"segments {log} to {higher[0] - 1} were removed (retention) while segment {log} was read;"
                f" read again from segment {higher[0]}",
                path=path,
                log=nxt,
                index=expected,
            )
        if higher and higher[0] != nxt:
            # N+1 missing, a later segment present.
            error = ChainBrokenError(
                f"segment {nxt} is missing but {higher[0]} exists", path=path, log=nxt, index=expected
            )
            return Boundary(higher[0], error, expected)
        if isinstance(header, LegacyHeaderInfo) and end.closed:
            # jPOS-EE creates the successor before it seals a segment (Appendix B.4).
            error = ChainBrokenError(
                f"version 1 segment {log} is closed but its successor {nxt} is missing",
                path=path,
                log=nxt,
                index=expected,
            )
            return Boundary(None, error, expected)
        return Boundary(None, None, expected)
    where = successor_path or path
    if isinstance(header, LegacyHeaderInfo) and not end.closed:
        if legacy_leftover(successor, nxt=nxt, higher=higher):
            return Boundary(None, None, expected)
        error = ChainBrokenError(
            f"version 1 segment {log} is open but segment {nxt} follows it",
            path=where,
            log=nxt,
            offset=0,
            index=expected,
        )
        return Boundary(nxt, error, _first_index(successor, expected))
    if not end.final:
        return Boundary(None, None, expected)
    if isinstance(header, SegmentHeaderInfo) and isinstance(successor, SegmentHeaderInfo):
        problem = None
        if successor.log_id != header.log_id:
            problem = "belongs to another log (log id differs)"
        elif successor.base_index != expected:
            problem = f"starts at index {successor.base_index}, the previous segment ends before {expected}"
        if problem is not None:
            error = ChainBrokenError(f"segment {nxt} {problem}", path=where, log=nxt, offset=0, index=expected)
            return Boundary(nxt, error, successor.base_index)
    return Boundary(nxt, None, _first_index(successor, expected))


def _first_index(header: Header, expected: int) -> int:
    """The index a walk expects at a segment's first record: its base index, or (version 1) the count so far."""
    return header.base_index if isinstance(header, SegmentHeaderInfo) else expected


# -- segments of a directory -------------------------------------------------------


def is_last(log: int, listed: Sequence[int]) -> bool:
    """No segment numbered above ``log`` is listed: a blank segment ``log`` is a blank last segment (R-7)."""
    return not any(number > log for number in listed)


def present_segment(directory: Directory, log: int, present: Sequence[int] | None = None) -> SegmentSource | None:
    """Segment ``log`` opened; None when absent or a blank last segment (R-7)."""
    segment = directory.open(log)
    if segment is None:
        return None
    try:
        if is_blank(segment) and is_last(log, directory.segments() if present is None else present):
            segment.close()
            return None
    except BaseException:
        segment.close()
        raise
    return segment


def open_segment(
    directory: Directory, log: int, present: Sequence[int] | None = None
) -> tuple[SegmentSource, Header] | None:
    """Segment ``log`` and its checked header; None when absent or a blank last segment (R-7)."""
    segment = present_segment(directory, log, present)
    if segment is None:
        return None
    try:
        return segment, read_header(segment, log)
    except BinlogError as exc:
        segment.close()
        raise exc.located(path=segment.path) from None
    except BaseException:
        segment.close()
        raise


def successor_header(directory: Directory, log: int, present: Sequence[int]) -> tuple[Header | None, str | None]:
    """The header of N+1 (and its path) when it is present and not a blank last segment.

    Its header errors raise: spec 8.4 step 1.
    """
    if log + 1 not in present:
        return None, None
    opened = open_segment(directory, log + 1, present)
    if opened is None:
        return None, None
    segment, header = opened
    segment.close()
    return header, segment.path


def end_in(directory: Directory, segment: Source, header: SegmentHeaderInfo, present: Sequence[int]) -> SegmentEnd:
    """END: the end of a version 2 segment of ``directory`` now (spec 6.1, 8.4).

    The successor's header is read first whenever the successor is present,
    sealed segment or not: its errors come before anything the end decides.
    """
    successor, _ = successor_header(directory, header.log, present)
    return segment_end(segment, header, successor)


# -- seeking by index or time -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class Seek:
    """Where a seeking walk starts returning records: at the first whose index is at least ``index``,
    or whose timestamp is at least ``time_us`` (microseconds since the epoch). Exactly one is given."""

    index: int | None = None
    time_us: int | None = None

    def __post_init__(self) -> None:
        if (self.index is None) == (self.time_us is None):
            raise ValueError("a seek needs exactly one of index and time_us")

    def before(self, entry: Entry) -> bool:
        """``entry`` lies before the target: the walk passes over it without returning it.

        A record without a timestamp (version 1) is never at or after a time.
        """
        if self.index is not None:
            return entry.index < self.index
        assert self.time_us is not None
        return entry.timestamp_us is None or entry.timestamp_us < self.time_us


def seek_segment(directory: Directory, target: Seek) -> tuple[SegmentSource, Header] | None:
    """The segment a walk seeking ``target`` starts in, opened, with its checked header; None for an empty log.

    A binary search over the segments listed reads headers, never records:
    by index, the last segment whose ``base_index`` is at most the target
    (else the lowest present); by time, the first whose end carries a last
    timestamp at or after the target (the active slot's ``last_timestamp_us``,
    or what END walks beyond the commit point of a finished segment that is
    not sealed), else the last segment. Both rely on what the writer
    guarantees across the chain: consecutive indexes (spec 8.6) and
    non-decreasing timestamps (W-9, carried by the slots across cutovers).
    A segment whose header cannot say (version 1, whose indexes are counted
    from the lowest segment, or a damaged header) ends the search at the
    highest segment known to start at or before the target: the walk from
    there meets it in order, as a read from the start would.
    """
    for _ in range(OPEN_ATTEMPTS):
        present = directory.segments()
        last = len(present) - 1
        while last >= 0:
            at = _search(directory, present, last, target)
            if at is None:
                break  # a segment was removed since the listing (retention): list again
            opened = open_segment(directory, present[at], present)
            if opened is None:
                if present[at] not in directory.segments():
                    break
                last = at - 1  # a blank last segment: the log ends before it
                continue
            if at and isinstance(opened[1], LegacyHeaderInfo):
                # Chosen without a probe (by time): version 1 indexes need the count from the lowest segment.
                opened[0].close()
                last = 0
                continue
            return opened
        else:
            return None
    raise BinlogIOError("segments keep vanishing while a seek reads their headers", path=directory.path)


def _search(directory: Directory, present: Sequence[int], last: int, target: Seek) -> int | None:
    """The position in ``present[: last + 1]`` of the segment to start in; None when a segment vanished.

    By index: the last segment whose first record is at or before the target.
    By time: the first segment whose end is at or after the target. ``later``:
    the target lies at or after a probed segment's start (by index), after its end (by time).
    """
    by_index = target.index is not None
    low, high = 0, last
    while low < high:
        middle = (low + high + 1) // 2 if by_index else (low + high) // 2
        try:
            opened = open_segment(directory, present[middle], present)
            if opened is None:
                if present[middle] not in directory.segments():
                    return None
                high = middle - 1  # a blank last segment holds nothing
                continue
            segment, header = opened
            try:
                if not isinstance(header, SegmentHeaderInfo):
                    return low
                if target.index is not None:
                    later = header.base_index <= target.index
                else:
                    assert target.time_us is not None
                    later = end_in(directory, segment, header, present).last_timestamp_us < target.time_us
            finally:
                segment.close()
        except BinlogIOError:
            raise
        except BinlogError:
            return low  # a damaged header: the walk from ``low`` reports it where a read from the start would
        if by_index:
            low, high = (middle, high) if later else (low, middle - 1)
        else:
            low, high = (middle + 1, high) if later else (low, middle)
    return low


# -- the sparse index (spec 18.5) ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class IndexView:
    """An index that passed the index check of spec 18.5, over the segment it describes."""

    source: IndexSource
    info: IndexInfo

    def entry(self, k: int) -> IndexEntryInfo | None:
        """Entry ``k``, or None when it cannot be read or its ``entry_crc`` fails (the index is then not used
        there): an index only costs or saves time (R-33, R-47)."""
        try:
            return decode_entry(self.source.read_at(entry_offset(k), INDEX_ENTRY_SIZE))
        except BinlogIOError:
            return None


def usable_index(index: IndexSource | None, header: SegmentHeaderInfo, end: SegmentEnd) -> IndexView | None:
    """Spec 18.5, the index check: ``index`` describes this finished segment as it is; None otherwise.

    An index that fails is ignored, never reported (R-47): it is not part of the log.
    """
    if index is None or not end.final:
        return None
    try:
        info = parse_index_header(index.read_at(0, INDEX_HEADER_SIZE))
        size = index.size()
    except BinlogIOError:
        return None  # an index that cannot be read costs speed, not records
    if (
        info is None
        or (info.segment_version, info.log, info.log_id) != (VERSION_2, header.log, header.log_id)
        or (info.base_index, info.segment_end, info.end_index) != (header.base_index, end.offset, end.index)
        or info.interval < 1
        or info.entry_count > end.index - header.base_index
        or size != info.file_size
    ):
        return None
    return IndexView(index, info)


class _Window:
    """The bytes of ``source`` before ``stop``: a walk over it reads no further."""

    def __init__(self, source: Source, stop: int) -> None:
        self.source = source
        self.stop = stop

    def read_at(self, offset: int, size: int) -> bytes:
        return self.source.read_at(offset, min(size, self.stop - offset)) if offset < self.stop else b""

    def size(self) -> int:
        return min(self.source.size(), self.stop)


def entry_reached(
    segment: SegmentSource, header: SegmentHeaderInfo, end: SegmentEnd, view: IndexView, k: int
) -> IndexEntryInfo | None:
    """Spec 18.5, the entry check: entry ``k`` as read and checked, when it points to a record boundary of the
    segment with its index and time; None otherwise. Callers use the entry returned, never a second read of it:
    the file may change between two reads.

    A walk from entry k-1 (from offset 256 for entry 0) must land on entry
    k's offset, not step over it: a record embedded in a payload is stepped
    over however valid it looks. Damage met on the way makes the entry
    unusable, and is not reported: the caller walks from the segment's start
    instead, and meets it there.
    """
    entry = view.entry(k)
    previous = view.entry(k - 1) if k > 0 else IndexEntryInfo(header.base_index, HEADER_SIZE, 0)
    if entry is None or previous is None:
        return None
    # Entry 0 may be the record at 256 itself; any other lies strictly after the entry it is walked from.
    after = previous.offset < entry.offset and previous.index < entry.index
    if not (
        HEADER_SIZE <= previous.offset <= entry.offset < end.offset
        and header.base_index <= previous.index <= entry.index < end.index
        and (after or k == 0)
    ):
        return None
    # The walk reads no further than the end of the record the entry points to: about one interval.
    length = segment.read_at(entry.offset, LENGTH_FIELD_SIZE)
    stop = entry.offset + LENGTH_FIELD_SIZE + int.from_bytes(length.rjust(LENGTH_FIELD_SIZE, b"\0"), "big")
    window = _Window(segment, min(stop, end.offset))
    walk = SegmentWalk(
        window, path=segment.path, header=header, end=end, start=previous.offset, next_index=previous.index
    )
    try:
        while batch := walk.next_batch():
            for record in batch:
                if record.offset >= entry.offset:
                    landed = (record.offset, record.index, record.timestamp_us) == (
                        entry.offset,
                        entry.index,
                        entry.timestamp_us,
                    )
                    return entry if landed else None
    except BinlogIOError:
        raise
    except BinlogError:
        return None
    return None


def open_index(
    directory: Directory, segment: SegmentSource, header: SegmentHeaderInfo, end: SegmentEnd
) -> IndexView | None:
    """The index of ``segment`` when it passes the index check; the caller closes ``view.source``."""
    index = directory.open_index(header.log) if isinstance(directory, IndexedDirectory) else None
    view = usable_index(index, header, end)
    if view is None and index is not None:
        index.close()
    return view


def indexed_start(
    directory: Directory, segment: SegmentSource, header: SegmentHeaderInfo, target: Seek
) -> tuple[int, int] | None:
    """Spec 18.5, SEEK with an index: the offset and index of the checked entry a seek of ``target`` in
    ``segment`` starts at; None to start at the segment's first record."""
    try:
        end = end_in(directory, segment, header, directory.segments())
    except BinlogIOError:
        raise
    except BinlogError:
        return None  # a damaged successor header: the walk reports it after the records before it
    view = open_index(directory, segment, header, end)
    if view is None:
        return None
    try:
        if target.index is not None:
            wanted = target.index
            k = last_before(view.info.entry_count, view.entry, lambda entry: entry.index <= wanted)
        else:
            assert target.time_us is not None
            time_us = target.time_us
            k = last_before(view.info.entry_count, view.entry, lambda entry: entry.timestamp_us < time_us)
        entry = entry_reached(segment, header, end, view, k) if k is not None and k >= 0 else None
        return None if entry is None else (entry.offset, entry.index)
    finally:
        view.source.close()


def indexed_cuts(
    directory: Directory, segment: SegmentSource, header: SegmentHeaderInfo, end: SegmentEnd, parts: int
) -> list[int] | None:
    """Spec 18.5, SPLIT with an index: up to ``parts`` split starts, 256 first, the others at checked entries
    near equal fractions of the segment; None when the segment has no usable index."""
    view = open_index(directory, segment, header, end)
    if view is None:
        return None
    try:
        span = end.offset - HEADER_SIZE
        wanted = [HEADER_SIZE + span * part // parts for part in range(1, parts)]
        found = checked_cuts(segment, header, end, view, wanted)
        return [HEADER_SIZE] + [cut[0] for cut in found if cut is not None]
    finally:
        view.source.close()


def checked_cuts(
    segment: SegmentSource,
    header: SegmentHeaderInfo,
    end: SegmentEnd,
    view: IndexView,
    wanted: Sequence[int],
    *,
    after: int = HEADER_SIZE,
) -> list[tuple[int, int] | None]:
    """For each offset in ``wanted`` (ascending), the entry at or before it that passes the entry check and lies
    beyond the previous cut (beyond ``after`` for the first): its offset and index; None where there is none."""
    cuts: list[tuple[int, int] | None] = []
    tried: set[int] = set()  # entries checked already: a failing one is not walked to again for the next cut
    for at in wanted:

        def before(entry: IndexEntryInfo, at: int = at) -> bool:
            return entry.offset <= at

        k = last_before(view.info.entry_count, view.entry, before)
        entry = None
        if k is not None and k >= 0 and k not in tried:
            tried.add(k)
            entry = entry_reached(segment, header, end, view, k)
        if entry is not None and after < entry.offset:
            cuts.append((entry.offset, entry.index))
            after = entry.offset
        else:
            cuts.append(None)
    return cuts


# -- the walk of a log -------------------------------------------------------------


class LogWalk:
    """The committed records of a log directory, segment after segment (spec 10.2, 10.3).

    ``next_batch`` returns the next entries, or none when nothing more is
    committed now; ``ended`` says that nothing more will come (the walk does
    cross cutovers (``one_segment``) and reached its segment's end, or a strict walk
    stopped). Damage raises, or with ``tolerant`` is appended to ``damage``.
    ``seek`` starts it at an index or a time instead of the log's first record.
    """

    def __init__(self, directory: Directory, *, one_segment: bool = False, tolerant: bool = False) -> None:
        self.directory = directory
        self.one_segment = one_segment
        self.tolerant = tolerant
        self.damage: list[Damage] = []
        self.ended = False
        self._segment: SegmentSource | None = None
        self._walk: SegmentWalk | LegacyWalk | None = None
        self._header: Header | None = None
        self._seek: Seek | None = None  # the target, until the walk has reached it

    # -- positioning --

    def _enter(
        self, segment: SegmentSource, header: Header, *, next_index: int, last_asqn: int, start: int = HEADER_SIZE
    ) -> None:
        self.close()
        self._segment, self._header = segment, header
        if isinstance(header, LegacyHeaderInfo):
            _, end = legacy_end(segment, header.log)
            self._walk = LegacyWalk(
                segment,
                path=segment.path,
                log=header.log,
                end=end,
                next_index=next_index,
                tolerant=self.tolerant,
                damage=self.damage,
            )
            self._walk.last_asqn = last_asqn  # A carries over a version 1 segment (R-19, NEXT step 5)
            return
        directory = self.directory
        self._walk = SegmentWalk(
            segment,
            path=segment.path,
            header=header,
            end=segment_end(segment, header, None),  # up to C; END runs again there (``refresh``)
            start=start,
            next_index=next_index,
            last_asqn=last_asqn,
            tolerant=self.tolerant,
            damage=self.damage,
            refresh=lambda: end_in(directory, segment, header, directory.segments()),
        )

    def _start(self) -> bool:
        """Spec 10.2 steps 1 to 3: the lowest segment present (seeking: the one ``seek_segment`` picks);
        False for an empty log."""
        if self._seek is not None:
            opened = seek_segment(self.directory, self._seek)
            if opened is None:
                return False
            segment, header = opened
            start, first = HEADER_SIZE, _first_index(header, 1)
            if isinstance(header, SegmentHeaderInfo):
                try:
                    start, first = indexed_start(self.directory, segment, header, self._seek) or (start, first)
                except BaseException:
                    segment.close()
                    raise
            self._enter(segment, header, next_index=first, last_asqn=NO_ASQN, start=start)
            return True
        while True:
            present = self.directory.segments()
            if not present:
                return False
            opened = open_segment(self.directory, present[0], present)
            if opened is None:
                if present[0] in self.directory.segments():
                    return False  # a blank last segment: the log is empty
                continue  # removed since the listing (retention): start at the new lowest
            segment, header = opened
            first = header.base_index if isinstance(header, SegmentHeaderInfo) else 1
            self._enter(segment, header, next_index=first, last_asqn=NO_ASQN)
            return True

    def seek(self, target: Seek) -> None:
        """Before the first batch: return records from the first at or after ``target`` on.

        The walk starts at the first record of the segment ``seek_segment``
        picks (sealed segments before it are never read record by record) and
        walks over the records before the target without returning them,
        checking them as ever: their damage is reported, or raises. Damage in
        the segments before that one, and at the boundary into it, is not
        read, so not reported. From the target on, the walk is the ordinary
        one: it crosses cutovers, or with ``one_segment`` stops at the end of
        the segment it started in.
        """
        self._seek = target

    def start_segment(self, log: int) -> None:
        """Stand at the first record of segment ``log`` (a walk that reads that segment alone)."""
        opened = open_segment(self.directory, log)
        if opened is None:
            self.ended = True  # removed since the listing: nothing to read there
        else:
            segment, header = opened
            first = header.base_index if isinstance(header, SegmentHeaderInfo) else 1
            self._enter(segment, header, next_index=first, last_asqn=NO_ASQN)

    def start_at(self, ref: Ref, *, inclusive: bool) -> list[Entry]:
        """Spec 10.6: validate ``ref``, stand at (or after) the record it names; its entries so far."""
        opened = open_segment(self.directory, ref.log)
        if opened is None:
            raise InvalidRefError(f"ref {ref}: segment {ref.log} does not exist", path=self.directory.path, log=ref.log)
        segment, header = opened
        try:
            walk: SegmentWalk | LegacyWalk
            if isinstance(header, LegacyHeaderInfo):
                _, end = legacy_end(segment, header.log)
                low = LEGACY_FIRST_RECORD_OFFSET
                walk = LegacyWalk(
                    segment, path=segment.path, log=ref.log, end=end, start=ref.offset, next_index=ref.index
                )
            else:
                end = end_in(self.directory, segment, header, self.directory.segments())
                low = HEADER_SIZE
                directory, v2 = self.directory, header
                walk = SegmentWalk(
                    segment,
                    path=segment.path,
                    header=header,
                    end=end,
                    start=ref.offset,
                    next_index=ref.index,
                    refresh=lambda: end_in(directory, segment, v2, directory.segments()),
                )
            if not low <= ref.offset < end.offset:
                raise InvalidRefError(
                    f"ref {ref}: offset outside the committed records",
                    path=segment.path,
                    log=ref.log,
                    offset=ref.offset,
                )
            try:
                entries = walk.next_batch()
            except (BinlogIOError, UnpackError):
                # A failed read is not a check the ref failed, nor is an archive that fails, which is checked
                # before any record of its segment.
                raise
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
        except BaseException:
            segment.close()
            raise
        self.close()
        walk.tolerant, walk.damage = self.tolerant, self.damage
        self._segment, self._header, self._walk = segment, header, walk
        return entries if inclusive else entries[1:]

    # -- walking --

    @property
    def position(self) -> Ref | None:
        """The ref the next record will have, when known."""
        if self._walk is None or self._segment is None:
            return None
        return Ref(self._segment.log, self._walk.offset, self._walk.next_index)

    def next_batch(self) -> list[Entry]:
        while not self.ended:
            if self._walk is None and not self._start():
                return []
            walk = self._walk
            assert walk is not None
            entries = walk.next_batch()
            if entries and self._seek is not None:
                entries = self._from_target(entries, self._seek)
                if not entries:
                    continue  # every record of the batch lies before the target
            if entries:
                return entries
            if not self._advance(walk):
                return []
        return []

    def _from_target(self, entries: list[Entry], target: Seek) -> list[Entry]:
        """The entries from the first at or after ``target`` on; once there, the walk seeks no more."""
        for at, entry in enumerate(entries):
            if not target.before(entry):
                self._seek = None
                return entries[at:]
        return []

    def _advance(self, walk: SegmentWalk | LegacyWalk) -> bool:
        """At the walk's current end: extend it, move to the next segment, or stop for now."""
        segment, header = self._segment, self._header
        assert segment is not None
        assert header is not None
        if isinstance(walk, LegacyWalk) and not walk.end.final:
            _, end = legacy_end(segment, header.log)
            if end.offset > walk.end.offset or end.final != walk.end.final:
                walk.extend(end)
                return True
        if walk.end.final and self.one_segment:
            self.ended = True
            return False
        for _ in range(OPEN_ATTEMPTS):
            moved = self._next(walk, header)
            if moved is not None:
                return moved
        raise BinlogIOError(
            f"the segment after {header.log} keeps vanishing while being opened", path=self.directory.path
        )

    def _next(self, walk: SegmentWalk | LegacyWalk, header: Header) -> bool | None:
        """NEXT (spec 10.2.2): decide what follows the segment by a fresh listing and move there.
        None: the segment chosen vanished before it could be opened; decide again."""
        present = self.directory.segments()
        # N+1 is opened once: its header decides the chain, and the walk goes on in it.
        following = open_segment(self.directory, header.log + 1, present) if header.log + 1 in present else None
        if following is None and header.log + 1 in present:
            present = self.directory.segments()  # a blank last segment, or gone since the listing (OPEN step 2)
        try:
            boundary = next_segment(
                path=self.directory.path,
                log=header.log,
                header=header,
                end=walk.end,
                expected=walk.next_index,
                present=present,
                successor=None if following is None else following[1],
                successor_path=None if following is None else following[0].path,
            )
            if boundary.next_log is not None and boundary.error is None and not walk.end.final:
                return False
            opened = None
            if boundary.next_log == header.log + 1:
                opened, following = following, None
            elif boundary.next_log is not None:
                if boundary.error is not None and not self.tolerant:
                    raise boundary.error  # BROKEN step 1: a strict walk ends at the gap, before K is opened
                opened = open_segment(self.directory, boundary.next_log)
                if opened is None and boundary.error is not None and boundary.next_log in self.directory.segments():
                    # Still listed, so a blank last segment: BROKEN's K is never one, and there is no K.
                    boundary = Boundary(None, boundary.error, boundary.next_index)
            if boundary.next_log is not None and opened is None:
                return None  # removed or blank since the listing
        finally:
            if following is not None:
                following[0].close()
        if boundary.error is not None:
            if not self.tolerant:
                if opened is not None:
                    opened[0].close()
                raise boundary.error
            resumed = opened[1].base_index if opened is not None and isinstance(opened[1], SegmentHeaderInfo) else None
            self.damage.append(Damage.from_error(boundary.error, bytes_skipped=0, next_index=resumed))
        if opened is None:
            if boundary.error is not None:
                self.ended = True
            return False
        next_segment_source, next_header = opened
        self._enter(
            next_segment_source,
            next_header,
            next_index=_first_index(next_header, boundary.next_index),
            last_asqn=walk.last_asqn,
        )
        return True

    def close(self) -> None:
        if self._segment is not None:
            self._segment.close()
        self._segment, self._walk, self._header = None, None, None
