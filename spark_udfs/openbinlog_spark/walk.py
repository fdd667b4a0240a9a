"""The fast committed-mode walk of a byte range of one version 2 segment.

The hot loop only follows length fields and computes the two CRC32Cs of each
record; every other check (checksum comparison, frame, flags, index, asqn)
is done on whole arrays at once. The first record that fails anything, and
every record the loop cannot take (larger than a chunk, a skippable frame),
goes to the reference ``RecordDecoder``, which classifies damage in the
spec's check order: this module decides nothing about the format on its own.

Ranges follow spec 10.5: a range that does not start at 256 starts at the
first position satisfying the resync conditions and the continuity check,
and a range ``[s, t)`` stops where the range ``[t, u)`` starts, so
consecutive ranges return every record exactly once.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

import crc32c
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from construct import Construct, FormatField

from openbinlog import Damage, Entry, _accel
from openbinlog._crc import mask
from openbinlog._format import MAX_RECORD_LENGTH, RECORD_HEADER_SIZE, SLOT_OFFSETS, RecordHeader
from openbinlog._records import RecordDecoder, find_next_record
from openbinlog.walk import slot_disagreement
from openbinlog.errors import AsqnNotIncreasingError, BinlogError

from .storage import SegmentSource

CHUNK_BYTES = 8 << 20
BOUNDARY_WINDOW = 1 << 20
RESYNC_WINDOW = 1 << 20

_LENGTH = struct.Struct(">I")
_CRC_END = RECORD_HEADER_SIZE - 4


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
class SegmentRange:
    """Which bytes of one segment to read, and what is known at the start.

    ``exact_start``: ``start`` is a record boundary with expected index
    ``start_index`` and previous asqn ``start_asqn`` (offset 256, or a
    position a streaming offset recorded); otherwise the first boundary at or
    after ``start`` is searched. ``exact_stop`` likewise for ``stop``; a
    ``stop`` at or beyond the segment end means the end. ``end_index``: the
    index the active slot expects after the last record (the end of spec 8.4
    for a finished segment), at ``slot_offset``; a walk that reaches the
    segment end checks its own expected index against it (R-39). None: not
    known, not checked.
    """

    log: int
    base_index: int
    segment_end: int
    file_size: int
    start: int
    stop: int
    exact_start: bool
    exact_stop: bool
    start_index: int
    start_asqn: int
    end_index: int | None = None
    slot_offset: int = SLOT_OFFSETS[0]

    @property
    def readable_end(self) -> int:
        """S' of spec 10.4: bytes beyond the segment end or the file are never read."""
        return min(self.segment_end, self.file_size)


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


@dataclass(frozen=True, slots=True)
class DamagedRegion:
    """A damaged region of committed data and the bytes stepped over."""

    damage: Damage
    raw: bytes


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
    count = len(headers)
    asqn = headers["asqn"].astype(np.int64)
    present = asqn != -1
    seen = np.maximum.accumulate(np.where(present, asqn, -1))
    previous = np.empty(count, dtype=np.int64)
    previous[0] = last_asqn
    np.maximum(seen[:-1], last_asqn, out=previous[1:])
    # ``mask`` is plain integer arithmetic, which numpy applies to every element at once.
    good = (
        (mask(np.asarray(header_crcs, dtype=np.uint64)) == headers["header_crc"])  # type: ignore[arg-type]
        & (headers["frame"] == 1)
        & (headers["flags"] == 0)
        & (headers["reserved"] == 0)
        & (mask(np.asarray(payload_crcs, dtype=np.uint64)) == headers["payload_crc"])  # type: ignore[arg-type]
        & (headers["index"] == np.uint64(next_index) + np.arange(count, dtype=np.uint64))
        & (~present | ((asqn >= 0) & (asqn > previous)))
    )
    return count if bool(good.all()) else int(np.argmin(good))


def _decode_one(
    source: SegmentSource, rng: SegmentRange, offset: int, next_index: int, last_asqn: int
) -> tuple[Entry | None, RecordDecoder]:
    """Let the reference decoder take one step at ``offset``; damage raises its typed error."""
    readable_end = rng.readable_end
    decoder = RecordDecoder(
        log=rng.log, offset=offset, next_index=next_index, last_asqn=last_asqn, limit=rng.segment_end
    )
    fed = offset
    while True:
        entry = next(decoder, None)
        if entry is not None or decoder.done:
            return entry, decoder
        if fed >= readable_end:
            decoder.end_of_input()
            continue
        data = source.read_at(fed, min(max(decoder.wanted(), 1 << 16), readable_end - fed))
        if not data:
            decoder.end_of_input()
            continue
        decoder.feed(data)
        fed += len(data)


def _continues(source: SegmentSource, rng: SegmentRange, at: int, index: int) -> bool:
    """Continuity check of spec 10.5: the record at ``at`` passes steps 1 to 7 with index ``index``."""
    try:
        entry, decoder = _decode_one(source, rng, at, index, -1)
    except AsqnNotIncreasingError:
        return True  # steps 1 to 7 passed; step 8 is not part of the check
    except BinlogError as error:
        # A skippable record at ``at`` passed; what follows it does not matter.
        return error.offset is not None and error.offset > at
    return entry is not None or decoder.offset > at


def find_boundary(source: SegmentSource, rng: SegmentRange, at: int) -> tuple[int, int] | None:
    """The first record boundary at or after ``at`` (spec 10.5), with its index."""
    bound = rng.readable_end
    window = BOUNDARY_WINDOW
    while at < bound:
        end = min(bound, at + window)
        data = source.read_at(at, end - at)
        search = 0
        while (found := find_next_record(data, search, min_index=rng.base_index)) is not None:
            index = int.from_bytes(data[found + 8 : found + 16], "big")
            following = at + found + 4 + _LENGTH.unpack_from(data, found)[0]
            if following == bound or _continues(source, rng, following, index + 1):
                return at + found, index
            search = found + 1
        if end >= bound:
            return None
        window *= 4
    return None


def _resync(source: SegmentSource, rng: SegmentRange, damaged_at: int, next_index: int, bound: int) -> int | None:
    """Spec 10.4: the first position after ``damaged_at`` holding a whole valid record with index >= ``next_index``."""
    window = RESYNC_WINDOW
    while True:
        end = min(rng.readable_end, damaged_at + window)
        data = source.read_at(damaged_at, end - damaged_at)
        found = find_next_record(data, 1, min_index=next_index)
        if found is not None:
            return damaged_at + found
        if end >= rng.readable_end or end >= bound + RECORD_HEADER_SIZE:
            return None
        window *= 4


class RangeWalker:
    """Walk one ``SegmentRange``: yields ``RecordRun``, lists of ``Entry`` and ``DamagedRegion``.

    ``tolerant``: step over damage as spec 10.4 says and report it;
    otherwise raise the first damage's typed error, located at the file.
    """

    def __init__(
        self,
        source: SegmentSource,
        rng: SegmentRange,
        *,
        path: str,
        tolerant: bool,
        chunk_bytes: int = CHUNK_BYTES,
        max_raw_bytes: int = 1 << 16,
    ) -> None:
        self.source = source
        self.rng = rng
        self.path = path
        self.tolerant = tolerant
        self.chunk_bytes = chunk_bytes
        self.max_raw_bytes = max_raw_bytes
        # Where the walk ended and what it expected there: a streaming offset.
        self.position = rng.start
        self.next_index = rng.start_index

    def __iter__(self) -> Iterator[RecordRun | list[Entry] | DamagedRegion]:
        rng = self.rng
        readable_end = rng.readable_end
        if rng.exact_start:
            pos, next_index, last_asqn = rng.start, rng.start_index, rng.start_asqn
        else:
            first = find_boundary(self.source, rng, rng.start)
            if first is None:
                self.position = readable_end
                return
            (pos, next_index), last_asqn = first, -1
        # The last range of a segment also meets a file that ends before the segment end.
        last_range = rng.stop >= rng.segment_end
        if rng.exact_stop or rng.stop >= readable_end:
            stop = min(rng.stop, readable_end)
        else:
            last = find_boundary(self.source, rng, rng.stop)
            stop = readable_end if last is None else last[0]
        skipped_to = -1  # where the last damage was stepped over to: no second report there
        while pos < stop:
            self.position, self.next_index = pos, next_index
            buf = self.source.read_at(pos, min(self.chunk_bytes, readable_end - pos))
            starts, header_crcs, payload_crcs, walked_to = _walk(buf, len(buf))
            valid = 0
            if len(starts):
                at, headers, payloads = _slice_records(buf, starts, walked_to)
                valid = _valid_count(headers, header_crcs, payload_crcs, next_index, last_asqn)
                if valid:
                    taken = min(valid, int(np.searchsorted(at[:valid], stop - pos)))
                    if taken:
                        yield RecordRun(rng.log, pos, at[:taken], headers[:taken], payloads.slice(0, taken))
                    last = headers[valid - 1]
                    next_index = int(last["index"]) + 1
                    asqn = headers["asqn"][:valid].astype(np.int64)
                    last_asqn = max(last_asqn, int(asqn.max()))
                    pos += int(at[valid - 1]) + 4 + int(last["length"])
            if valid and valid == len(starts) and pos < stop:
                continue  # the chunk ended inside a record: read on from it
            if pos >= stop:
                break
            # The record at ``pos`` failed a check, is larger than a chunk or is not a data record.
            try:
                entry, decoder = _decode_one(self.source, rng, pos, next_index, last_asqn)
            except BinlogError as error:
                if not self.tolerant:
                    raise error.located(path=self.path) from None
                region, pos, next_index, last_asqn = self._step_over(error, pos, next_index, stop)
                skipped_to = pos
                yield region
                continue
            if entry is not None and entry.offset < stop:
                yield [entry]
            pos, next_index, last_asqn = decoder.offset, decoder.next_index, decoder.last_asqn
            if entry is None:
                break  # the decoder reached the segment end
        if last_range and pos == readable_end < rng.segment_end and skipped_to != pos:
            try:
                _decode_one(self.source, rng, pos, next_index, last_asqn)
            except BinlogError as error:
                if not self.tolerant:
                    raise error.located(path=self.path) from None
                region, pos, next_index, last_asqn = self._step_over(error, pos, next_index, stop)
                yield region
        end_index = rng.end_index
        if last_range and pos == rng.segment_end and skipped_to != pos and end_index not in (None, next_index):
            # the walk and the slot disagree at the segment end (a walk that skipped damage up to
            # the end has nothing to compare). A tolerant walk reports it and expects the slot's index.
            disagreement = slot_disagreement(
                next_index, end_index, path=self.path, log=rng.log, slot_offset=rng.slot_offset
            )
            if not self.tolerant:
                raise disagreement
            yield DamagedRegion(Damage.from_error(disagreement, bytes_skipped=0, next_index=end_index), b"")
            next_index = end_index
        self.position, self.next_index = pos, next_index

    def _step_over(
        self, error: BinlogError, damaged_at: int, next_index: int, stop: int
    ) -> tuple[DamagedRegion, int, int, int]:
        """Report the damage at ``damaged_at``; resume at the next valid record (or ``stop``)."""
        found = _resync(self.source, self.rng, damaged_at, next_index, stop)
        resume, resume_index = stop, None
        if found is not None:
            # A resync point at or past ``stop`` is where the next range takes over.
            resume = min(found, stop)
            resume_index = int.from_bytes(self.source.read_at(resume + 8, 8), "big")
        raw = self.source.read_at(damaged_at, min(resume - damaged_at, self.max_raw_bytes))
        error.located(path=self.path)
        damage = Damage.from_error(error, bytes_skipped=resume - damaged_at, next_index=resume_index)
        return DamagedRegion(damage, raw), resume, resume_index if resume_index is not None else next_index, -1
