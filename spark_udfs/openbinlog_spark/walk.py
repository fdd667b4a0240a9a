"""Spark's walk of a byte range of one version 2 segment: ``openbinlog.walk`` with a vectorised verifier.

The reading procedure (where a range starts and stops, R-39, damage and
resynchronisation) is the reference's ``SegmentWalk``. This module adds
only ``ArrowRuns``: a verifier that proves runs of records by following
length fields and checking everything else on whole arrays, so records
reach Arrow without a Python object each. It stands behind the walk's
``RunVerifier`` interface, and property tests prove it accepts exactly the
records the reference decoder accepts; whatever it does not prove (a record
larger than a chunk, a skippable frame, any damage) the reference walk takes.

With the compiled accelerator, a run is proven and laid out in one pass
(``openbinlog._accel.arrow_run``): record starts, headers and the payloads'
Arrow buffers, the payloads copied once. ``_pure_run`` is its reference, and
a property test requires both to return the same run for every input.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import crc32c
import numpy as np
import pyarrow as pa
from construct import Construct, FormatField

from openbinlog import Damage, Entry, _accel
from openbinlog._crc import mask
from openbinlog._format import MAX_RECORD_LENGTH, RECORD_HEADER_SIZE, RecordHeader
from openbinlog._segment import LegacyHeaderInfo, SegmentHeaderInfo
from openbinlog.errors import BinlogError
from openbinlog.walk import SegmentEnd, SegmentWalk, Source, Split, find_boundary, next_segment

CHUNK_BYTES = 8 << 20

_LENGTH = struct.Struct(">I")
_CRC_END = RECORD_HEADER_SIZE - 4
# What ``arrow_run`` lays out per record besides its payload: its start (int64), header and end offset (int32).
_META_PER_RECORD = 8 + RECORD_HEADER_SIZE + 4


def numpy_layout(declaration: Construct) -> np.dtype[np.void]:
    """A numpy record type with the layout of a flat big-endian ``construct`` Struct.

    Like ``openbinlog._format.fast_struct``: the layout still comes from the
    declaration, so the two cannot drift apart.
    """
    fields = []
    for sub in declaration.subcons:
        inner = sub.subcon if hasattr(sub, "subcon") else sub
        if not isinstance(inner, FormatField) or not inner.fmtstr.startswith(">"):
            raise TypeError(f"{sub.name}: not a big-endian fixed-size field")
        # struct's standard sizes (">L" is 4 bytes), not numpy's C sizes; lower-case codes are signed.
        kind = "i" if inner.fmtstr[-1].islower() else "u"
        fields.append((sub.name, np.dtype(f">{kind}{struct.calcsize(inner.fmtstr)}")))
    return np.dtype(fields)


# Every record header of a chunk is read with one gather into this (spec 4.1).
HEADER_DTYPE = numpy_layout(RecordHeader)
assert HEADER_DTYPE.itemsize == RECORD_HEADER_SIZE


@dataclass(frozen=True, slots=True)
class ChainCheck:
    """What the walk needs to make the chain check at the end of its segment (spec 8.6) with its own
    expected index: the listing, the successor's header, and the index reading resumes at."""

    directory: str
    present: tuple[int, ...]
    successor: SegmentHeaderInfo | LegacyHeaderInfo | None
    successor_path: str | None
    resume_index: int | None
    # Whether the plan reads the successor: if not, a successor removed since planning is a hole this check reports.
    successor_read: bool = True


@dataclass(frozen=True, slots=True)
class SegmentRange:
    """Which bytes of one segment to read, and what is known at the start.

    ``end``: the segment end S and end index I_S as planning found them
    (``openbinlog.walk.segment_end``). ``exact_start``: ``start`` is a record
    boundary with expected index ``start_index`` and previous asqn
    ``start_asqn`` (offset 256, or a position a streaming offset recorded);
    otherwise the range starts at the boundary found from ``start``.
    ``exact_stop`` likewise for ``stop``; a ``stop`` at or beyond S means S.
    ``narrowed``: ``stop`` is a checked index entry beyond every row the
    query can match (spec 18.5): the walk ends once it lands there, without
    reading the record that starts there. ``read_to``: where a narrowed read
    of the segment ends (that entry), kept by every piece cut from it: the
    look for the first asqn after a piece's stop (spec 10.2.2, LOOK) goes no
    further; None when the segment is read up to S.
    """

    header: SegmentHeaderInfo
    end: SegmentEnd
    file_size: int
    start: int
    stop: int
    exact_start: bool
    exact_stop: bool
    start_index: int
    start_asqn: int
    chain: ChainCheck | None = None  # the boundary after this segment, checked by the range that ends at S
    narrowed: bool = False
    read_to: int | None = None
    opens: bool = True  # the first range of the segment the plan reads

    @property
    def log(self) -> int:
        return self.header.log

    @property
    def segment_end(self) -> int:
        return self.end.offset

    @property
    def readable_end(self) -> int:
        """S' of spec 10.4: bytes beyond the segment end or the file are never read."""
        return min(self.end.offset, self.file_size)

    @property
    def walks_over_commit(self) -> bool:
        """The range's walk reaches the commit point C, where END checks the successor's header (spec readers
        10.2.2, WALK step 2.1)."""
        commit = self.end.commit_offset
        return self.start <= commit and (self.stop > commit or self.stop >= self.end.offset)


@dataclass(slots=True)
class RecordRun:
    """Verified consecutive records of one chunk read at offset ``base``."""

    log: int
    base: int
    starts: np.ndarray  # int64, relative to base
    headers: np.ndarray  # HEADER_DTYPE, one per record
    payloads: pa.BinaryArray

    def __len__(self) -> int:
        return len(self.starts)

    @property
    def end(self) -> int:
        """The segment offset after the last record."""
        return self.base + int(self.starts[-1]) + 4 + int(self.headers[-1]["length"])

    @property
    def next_index(self) -> int:
        return int(self.headers[-1]["index"]) + 1

    def last_asqn(self, before: int) -> int:
        """The previous asqn after the run: the last present one (-1 means absent)."""
        asqn = self.headers["asqn"].astype(np.int64)
        present = asqn[asqn != -1]
        return int(present[-1]) if len(present) else before

    def count_before(self, offset: int) -> int:
        """How many of the records start before segment offset ``offset``."""
        return int(np.searchsorted(self.starts, offset - self.base))

    def head(self, count: int) -> RecordRun:
        return RecordRun(self.log, self.base, self.starts[:count], self.headers[:count], self.payloads.slice(0, count))


@dataclass(frozen=True, slots=True)
class DamagedRegion:
    """A damaged region of committed data and the bytes stepped over; ``ends_walk``: a segment header that fails
    its checks, where the walk ends (spec readers 10.4)."""

    damage: Damage
    raw: bytes
    ends_walk: bool = False


class _EndFails(Exception):
    """END met a successor header that fails its checks (protocols 8.4 step 1): the walk ends there."""

    def __init__(self, error: BinlogError) -> None:
        super().__init__(error)
        self.error = error


def _walk_lengths(buf: bytes, end: int) -> tuple[list[int], list[int], list[int], int]:
    """Follow length fields from 0; CRC32C of each record header and payload.

    Stops before a record that does not lie wholly in ``buf[:end]`` or whose
    length is below the minimum. Nothing is trusted here: the caller checks
    every record before using it.
    """
    view = memoryview(buf)
    unpack = _LENGTH.unpack_from
    crc = crc32c.crc32c
    starts: list[int] = []
    header_crcs: list[int] = []
    payload_crcs: list[int] = []
    add_start, add_header, add_payload = starts.append, header_crcs.append, payload_crcs.append
    pos = 0
    limit = end - RECORD_HEADER_SIZE
    while pos <= limit:
        length = unpack(buf, pos)[0]
        following = pos + 4 + length
        if length < 36 or following > end:
            break
        add_start(pos)
        add_header(crc(view[pos : pos + _CRC_END]))
        add_payload(crc(view[pos + RECORD_HEADER_SIZE : following]))
        pos = following
    return starts, header_crcs, payload_crcs, pos


def _walk(buf: bytes, end: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """``_walk_lengths`` with arrays for lists: record starts (int64), header and payload CRC32Cs (uint32).

    Compiled when ``openbinlog._accel`` says so: that walk returns the same
    numbers, as bytes numpy wraps without a Python object per record.
    """
    if _accel.walk_lengths is not None:
        starts, header_crcs, payload_crcs, walked_to = _accel.walk_lengths(buf, end)
        crcs = np.frombuffer(header_crcs, dtype=np.uint32), np.frombuffer(payload_crcs, dtype=np.uint32)
        return np.frombuffer(starts, dtype=np.int64), *crcs, walked_to
    found_starts, found_header_crcs, found_payload_crcs, walked_to = _walk_lengths(buf, end)
    crcs = np.array(found_header_crcs, dtype=np.uint32), np.array(found_payload_crcs, dtype=np.uint32)
    return np.array(found_starts, dtype=np.int64), *crcs, walked_to


def _slice_records(buf: bytes, starts: np.ndarray, end: int) -> tuple[np.ndarray, np.ndarray, pa.BinaryArray]:
    """Record starts, their 40-byte headers and their payloads, cut out of ``buf`` by Arrow in bulk."""
    # Imported here: a worker with the compiled runs never needs it (its import costs each new Python worker 40 ms).
    import pyarrow.compute as pc  # noqa: PLC0415

    count = len(starts)
    offsets = np.empty(count + 1, dtype=np.int32)
    offsets[:-1] = starts
    offsets[-1] = end
    records = pa.BinaryArray.from_buffers(pa.binary(), count, [None, pa.py_buffer(offsets), pa.py_buffer(buf)])
    head_bytes = pc.binary_slice(records, 0, RECORD_HEADER_SIZE).buffers()[2]
    headers = np.frombuffer(head_bytes, dtype=HEADER_DTYPE, count=count)
    payloads = pc.binary_slice(records, RECORD_HEADER_SIZE, MAX_RECORD_LENGTH)
    return offsets[:-1].astype(np.int64), headers, payloads


def _valid_count(
    headers: np.ndarray, header_crcs: np.ndarray, payload_crcs: np.ndarray, next_index: int, last_asqn: int
) -> int:
    """How many records, from the first, pass every check of spec 4.3.1."""
    # Indexes are u8: no record can carry one past 2**64 - 1, and uint64 arithmetic must not wrap.
    count = min(len(headers), max(2**64 - next_index, 0))
    if not count:
        return 0
    headers, header_crcs, payload_crcs = headers[:count], header_crcs[:count], payload_crcs[:count]
    # ``mask`` is plain integer arithmetic, which numpy applies to every element at once.
    good = (
        (mask(np.asarray(header_crcs, dtype=np.uint64)) == headers["header_crc"])  # type: ignore[arg-type]
        & (headers["frame"] == 1)
        & (headers["flags"] == 0)
        & (headers["reserved"] == 0)
        & (mask(np.asarray(payload_crcs, dtype=np.uint64)) == headers["payload_crc"])  # type: ignore[arg-type]
        & (headers["index"] == np.uint64(next_index) + np.arange(count, dtype=np.uint64))
    )
    asqn = headers["asqn"].astype(np.int64)
    present = asqn != -1
    if present.any():  # without an asqn there is no order to check (the running maximum is the costly part)
        seen = np.maximum.accumulate(np.where(present, asqn, -1))
        previous = np.empty(count, dtype=np.int64)
        previous[0] = last_asqn
        np.maximum(seen[:-1], last_asqn, out=previous[1:])
        good &= ~present | ((asqn >= 0) & (asqn > previous))
    return count if bool(good.all()) else int(np.argmin(good))


def _pure_run(buf: bytes, *, base: int, log: int, next_index: int, last_asqn: int, stop: int) -> RecordRun | None:
    """``ArrowRuns.verify`` by a length walk and numpy: the reference of the compiled ``_native_run``."""
    starts, header_crcs, payload_crcs, walked_to = _walk(buf, len(buf))
    if not len(starts):
        return None
    at, headers, payloads = _slice_records(buf, starts, walked_to)
    valid = _valid_count(headers, header_crcs, payload_crcs, next_index, last_asqn)
    valid = min(valid, int(np.searchsorted(at[:valid], stop - base)))
    if not valid:
        return None
    return RecordRun(log, base, at[:valid], headers[:valid], payloads.slice(0, valid))


def _native_run(buf: bytes, *, base: int, log: int, next_index: int, last_asqn: int, stop: int) -> RecordRun | None:
    """``_pure_run`` in one compiled pass (``openbinlog._accel.arrow_run``) into buffers of Arrow's memory
    pool, which numpy and Arrow wrap: the payloads are copied once, and no page is new to the process."""
    assert _accel.arrow_run is not None
    if stop <= base:
        return None
    data = pa.allocate_buffer(len(buf))
    meta = pa.allocate_buffer(len(buf) // RECORD_HEADER_SIZE * _META_PER_RECORD + 4)
    bytes_of = memoryview(data).cast("B"), memoryview(meta).cast("B")  # Arrow exports its buffers as signed chars
    found = _accel.arrow_run(buf, next_index, last_asqn, min(stop - base, len(buf)), *bytes_of)
    if found is None:
        return None
    count, size = found
    starts = np.frombuffer(meta, dtype=np.int64, count=count)
    headers = np.frombuffer(meta, dtype=HEADER_DTYPE, count=count, offset=8 * count)
    offsets = meta.slice((8 + RECORD_HEADER_SIZE) * count, 4 * (count + 1))
    payloads = pa.BinaryArray.from_buffers(pa.binary(), count, [None, offsets, data.slice(0, size)])
    return RecordRun(log, base, starts, headers, payloads)


class ArrowRuns:
    """The vectorised verifier: the records lying whole in a buffer that pass every check of spec 4.3.1.

    It takes the place of ``RecordDecoder``'s batch loop behind
    ``SegmentWalk.next_run`` and must accept exactly what that loop accepts
    (``python/tests/spark/test_arrow_runs.py`` proves it); everything else is
    left to the reference walk. Compiled when ``openbinlog._accel`` says so
    (``_native_run``), otherwise by numpy (``_pure_run``).
    """

    def verify(
        self, buf: bytes, *, base: int, log: int, next_index: int, last_asqn: int, stop: int
    ) -> RecordRun | None:
        run = _pure_run if _accel.arrow_run is None else _native_run
        return run(buf, base=base, log=log, next_index=next_index, last_asqn=last_asqn, stop=stop)


ARROW_RUNS = ArrowRuns()


class RangeWalker:
    """Walk one ``SegmentRange`` with the reference walk: yields ``RecordRun``, lists of ``Entry``
    and ``DamagedRegion``.

    ``tolerant``: step over damage as spec 10.4 says and report it;
    otherwise raise the first damage's typed error, located at the file.

    ``successor_failure``: END's check of the successor's header (protocols
    8.4 step 1), made where the reference's walk makes END: at the commit
    point C, and at a resynchronisation (spec readers 10.2.2, RESYNC step 1).
    Its error (a header that fails) ends the walk there, before the check of
    R-39, without the record damage that asked for END; it is reported by
    the range whose walk goes over C, as a ``DamagedRegion`` that
    ``ends_walk`` in either mode (the caller decides whether it is an error),
    and the others end without a report. A range that starts beyond C (the
    tail of a finished segment) then reads nothing. Where the successor's
    header fails when the range starts (it passed at planning, or the segment
    would be one range), the segment's first range walks it alone, as
    planning plans such a segment, and its other ranges read nothing: the walk
    ends at the first record damage (a tolerant walk makes END there,
    RESYNC step 1) or at C, and a range that starts after that damage cannot
    know of it.

    The chain check at S (spec 8.6) is made by the range whose walk reaches
    S: the last range, or the one before it when no boundary follows its stop
    (the last range then starts inside the last record and reads nothing).
    """

    def __init__(
        self,
        source: Source,
        rng: SegmentRange,
        *,
        path: str,
        tolerant: bool,
        chunk_bytes: int = CHUNK_BYTES,
        max_raw_bytes: int = 1 << 16,
        successor_failure: Callable[[], BinlogError | None] | None = None,
    ) -> None:
        self.source = source
        self.rng = rng
        self.path = path
        self.tolerant = tolerant
        self.chunk_bytes = chunk_bytes
        self.max_raw_bytes = max_raw_bytes
        self.successor_failure = successor_failure
        # Where the walk ended and what it expected there: a streaming offset.
        self.position = rng.start
        self.next_index = rng.start_index

    def _start(self) -> tuple[int, int, int, Split | None] | None:
        """The walk's first record (offset, index, previous asqn) and where it stops (spec 10.5)."""
        rng = self.rng
        bound, low, high = rng.readable_end, rng.header.base_index, rng.end.index
        if rng.exact_start:
            start = (rng.start, rng.start_index, rng.start_asqn)
        else:
            found = find_boundary(self.source, rng.start, bound, low=low, high=high)
            if found is None or found[0] >= rng.stop:
                return None
            start = (found[0], found[1], -1)
        if rng.stop >= rng.end.offset:
            return (*start, None)
        if rng.exact_stop:
            return (*start, Split(rng.stop, rng.stop, look_to=rng.read_to))
        following = find_boundary(self.source, rng.stop, bound, low=low, high=high) if rng.stop < bound else None
        if following is None:
            return (*start, Split(rng.stop, rng.end.offset))
        return (*start, Split(rng.stop, *following, look_to=rng.read_to))

    def __iter__(self) -> Iterator[RecordRun | list[Entry] | DamagedRegion]:
        rng = self.rng
        ended = self.successor_failure is not None and self.successor_failure() is not None
        if ended and not rng.opens:
            self.position = rng.start
            return  # the segment's first range walks it alone, up to its first damage or C
        planned = self._start()
        if planned is None:
            self.position = rng.readable_end
            return
        start, index, asqn, split = planned
        commit = rng.end.commit_offset
        if start > commit and ended:
            self.position = start
            return  # the walk of the segment ended at C, where END met the failing header
        if ended:
            split = None  # walked alone, on to where END meets the failing header
        walk = SegmentWalk(
            self.source,
            path=self.path,
            header=rng.header,
            end=rng.end,
            start=start,
            next_index=index,
            last_asqn=asqn,
            tolerant=self.tolerant,
            split=split,
            refresh=None if self.successor_failure is None else self._end,
        )
        reported = 0
        while True:
            self.position, self.next_index = walk.offset, walk.next_index
            if rng.narrowed and split is not None and walk.offset == split.walk_to:
                break  # landed on the checked entry beyond the query's rows: nothing after it is wanted
            try:
                part = walk.next_run(ARROW_RUNS, chunk=self.chunk_bytes)
            except _EndFails as ended:
                for damage in walk.damage[reported:]:
                    yield self._region(damage)
                if split is None or split.walk_to > commit:  # this range's walk goes over C: the report is its
                    yield DamagedRegion(Damage.from_error(ended.error, bytes_skipped=0, next_index=None), b"", True)
                return
            for damage in walk.damage[reported:]:
                yield self._region(damage)
            reported = len(walk.damage)
            if not len(part):
                break  # at S, or at the split's end
            yield part
        self.position, self.next_index = walk.offset, walk.next_index
        if rng.chain is not None and (split is None or split.walk_to >= rng.end.offset) and walk.at_end:
            broken = self._chain_break(rng.chain, walk)
            if broken is not None:
                yield broken

    def _end(self) -> SegmentEnd:
        """END of the segment in a range: the successor's header checked again; the end is the one planned."""
        assert self.successor_failure is not None
        error = self.successor_failure()
        if error is not None:
            raise _EndFails(error)
        return self.rng.end

    def _chain_break(self, chain: ChainCheck, walk: SegmentWalk) -> DamagedRegion | None:
        """The chain check at S with the walk's own expected index (after damage it may lag the end index)."""
        rng = self.rng
        boundary = next_segment(
            path=chain.directory,
            log=rng.log,
            header=rng.header,
            end=rng.end,
            expected=walk.next_index,
            present=chain.present,
            successor=chain.successor,
            successor_path=chain.successor_path,
        )
        if boundary.error is None:
            return None
        if not self.tolerant:
            raise boundary.error
        return DamagedRegion(Damage.from_error(boundary.error, bytes_skipped=0, next_index=chain.resume_index), b"")

    def _region(self, damage: Damage) -> DamagedRegion:
        """A damaged region with (up to ``max_raw_bytes`` of) the bytes stepped over."""
        raw = b""
        if damage.offset is not None and damage.bytes_skipped:
            raw = self.source.read_at(damage.offset, min(damage.bytes_skipped, self.max_raw_bytes))
        return DamagedRegion(damage, raw)
