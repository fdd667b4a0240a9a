"""The record codec: bytes in, entries out (spec section 4, "Records").

Nothing here touches a file. ``RecordDecoder`` is fed the bytes of a segment
from some offset on, in pieces of any size, and yields the entries it can
prove; the file reader, recovery, the CLI and Spark are adapters around it.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, ClassVar, cast

from crc32c import crc32c as _raw_crc32c

from . import _accel
from ._crc import MASK_DELTA, mask, masked_crc32c
from ._format import (
    FRAME_DATA,
    FRAME_END,
    FRAME_FIRST_SKIPPABLE,
    MAX_PAYLOAD_SIZE,
    MAX_RECORD_LENGTH,
    MIN_RECORD_LENGTH,
    NO_ASQN,
    RECORD_HEADER,
    RECORD_HEADER_SIZE,
)
from ._ref import Ref
from .errors import (
    AsqnNotIncreasingError,
    BinlogError,
    ChecksumMismatchError,
    IndexDiscontinuityError,
    LengthOutOfRangeError,
    PayloadTooLargeError,
    TruncatedError,
    UnsupportedFeatureError,
)

if TYPE_CHECKING:
    from ._native import Verifier

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_CRC_END = RECORD_HEADER_SIZE - 4
_unpack_header = RECORD_HEADER.unpack_from
BATCH_ENTRIES = 256  # per next_batch: enough to amortise its setup, few enough for the young GC generation


@dataclass(frozen=True, slots=True)
class Entry:
    """One record as a reader returns it.

    ``checked`` is False for legacy version 1 records, which carry no checksum
    and no index of their own (the reader numbers them).
    """

    log: int
    offset: int
    index: int
    payload: bytes
    asqn: int = NO_ASQN
    timestamp_us: int | None = None
    checked: bool = True

    @property
    def ref(self) -> Ref:
        return Ref(self.log, self.offset, self.index)

    @property
    def timestamp(self) -> datetime | None:
        """``timestamp_us`` as a datetime; None when there is none or a datetime cannot hold it (years 1 to
        9999): readers do not validate timestamps (R-13), so any value can come from a valid record."""
        if self.timestamp_us is None:
            return None
        try:
            return _EPOCH + timedelta(microseconds=self.timestamp_us)
        except OverflowError:
            return None

    @property
    def size(self) -> int:
        """Bytes the record occupies in its segment, length field included."""
        overhead = RECORD_HEADER_SIZE if self.checked else 4
        return overhead + len(self.payload)


_SKIPPED = Entry(0, 0, 0, b"")


class _FastEntry:
    """``Entry(log, offset, index, payload, asqn, timestamp_us, checked)`` at the cost of a plain class.

    The __init__ of a frozen dataclass assigns each field through
    ``object.__setattr__``, which costs about as much as verifying a small
    record. This class has Entry's slots and no frozen guard: its __init__
    fills them with plain stores, then makes the object an ``Entry``
    (``__class__`` may be assigned between classes with the same slots). The
    result is the same object (tests compare it with ``Entry``).
    """

    __slots__ = Entry.__slots__

    def __init__(  # noqa: PLR0917 - positional, as Entry's own
        self,
        log: int,
        offset: int,
        index: int,
        payload: bytes,
        asqn: int,
        timestamp_us: int | None,
        checked: bool = True,
    ) -> None:
        self.log = log
        self.offset = offset
        self.index = index
        self.payload = payload
        self.asqn = asqn
        self.timestamp_us = timestamp_us
        self.checked = checked
        self.__class__ = Entry  # type: ignore[assignment]


if Entry.__slots__ != ("log", "offset", "index", "payload", "asqn", "timestamp_us", "checked"):
    raise TypeError("Entry's fields changed: update _FastEntry")
_checked_entry = cast("Callable[[int, int, int, bytes, int, int], Entry]", _FastEntry)
# A version 1 record: no asqn, no timestamp, nothing vouches for it (Appendix B.4).
unchecked_entry = cast("Callable[[int, int, int, bytes, int, None, bool], Entry]", _FastEntry)

# Checksums of a batch are compared all at once, each in its own 64-bit lane of one integer.
if array("Q").itemsize != 8:  # pragma: no cover - every CPython platform
    raise ImportError("array('Q') is not 64 bits wide")
_LANE_LOW32 = (0xFFFF_FFFF).to_bytes(8, sys.byteorder)
_LANE_DELTA = MASK_DELTA.to_bytes(8, sys.byteorder)
_ROTATE = 0x1_0000_0001  # c * _ROTATE >> 15 holds c rotated right by 15 in its low 32 bits (c < 2**32)


def _lanes(values: list[int]) -> int:
    """``values`` (each below 2**32) as one integer, one value per 64-bit lane."""
    return int.from_bytes(array("Q", values), sys.byteorder)


def _masked_lanes(crcs: list[int]) -> int:
    """``mask`` of every CRC in ``crcs``, lane by lane as ``_lanes`` lays them out.

    A lane holds a CRC c below 2**32, so the product c * _ROTATE (c copied
    above itself) stays inside the lane; shifted right by 15, its low 32 bits
    are c rotated right by 15, and the bits another lane shifts in are cut
    off before the delta is added: five big-integer operations for the
    whole batch instead of a Python call per CRC.
    """
    low = int.from_bytes(_LANE_LOW32 * len(crcs), sys.byteorder)
    rotated = (_lanes(crcs) * _ROTATE >> 15) & low
    return (rotated + int.from_bytes(_LANE_DELTA * len(crcs), sys.byteorder)) & low


def encode_record(
    index: int,
    payload: bytes,
    *,
    asqn: int = NO_ASQN,
    timestamp_us: int = 0,
    frame: int = FRAME_DATA,
) -> bytes:
    """The bytes of one record: the 40-byte record header, then the payload."""
    if len(payload) > MAX_PAYLOAD_SIZE:
        raise PayloadTooLargeError(f"payload of {len(payload)} bytes exceeds {MAX_PAYLOAD_SIZE}")
    head = RECORD_HEADER.pack(
        MIN_RECORD_LENGTH + len(payload),
        frame,
        0,
        0,
        index,
        asqn,
        timestamp_us,
        masked_crc32c(payload),
        0,
    )[:_CRC_END]
    return head + masked_crc32c(head).to_bytes(4, "big") + payload


@dataclass(frozen=True, slots=True)
class TailStop:
    """Why a walk of the bytes beyond the commit point ended, and where."""

    offset: int
    reason: str  # "end", "unwritten", or the error class of the invalid record

    @property
    def clean(self) -> bool:
        return self.reason in ("end", "unwritten")


class RecordDecoder:
    """Walk the records of one segment from ``offset`` on.

    Two modes:

    * committed (``limit`` given): the bytes up to ``limit`` (the commit
      point) must be whole, valid, contiguous records. Damage raises the
      typed error of the first failing check, in the order of spec section
      4.3, after every entry before it has been yielded. Bytes fed beyond
      ``limit`` are ignored.
    * tail (``limit`` None): the bytes beyond the commit point are walked
      while they hold valid records with the expected indexes; the first
      invalid or incomplete record ends the walk and is recorded in
      ``stop``. Nothing in the tail is ever an error.

    ``next`` returns one entry at a time; ``next_batch`` returns the same
    entries, many per call, from a loop built for throughput.
    """

    # The compiled twin of _verified_run_pure, which makes the Entry objects itself; None: the pure loop runs.
    _native: ClassVar[Verifier[Entry] | None] = None if _accel.Verifier is None else _accel.Verifier(Entry)

    def __init__(
        self,
        *,
        log: int,
        offset: int,
        next_index: int,
        last_asqn: int = NO_ASQN,
        limit: int | None = None,
    ) -> None:
        self.log = log
        self.offset = offset
        self.next_index = next_index
        self.last_asqn = last_asqn
        self.limit = limit
        self.stop: TailStop | None = None
        self._buf = b""
        self._pos = 0
        self._chunks: list[bytes] = []
        self._chunk_bytes = 0
        self._input_ended = False

    @property
    def done(self) -> bool:
        """True once the walk can yield nothing more, whatever is fed."""
        if self.stop is not None:
            return True
        return self.limit is not None and self.offset >= self.limit

    def feed(self, data: bytes) -> None:
        if self.limit is not None:
            room = self.limit - self.offset - (len(self._buf) - self._pos) - self._chunk_bytes
            data = data[: max(room, 0)]
        if data:
            # Kept aside until a whole record is there: feeding a large record
            # in small pieces must not copy the buffer once per piece.
            self._chunks.append(bytes(data))
            self._chunk_bytes += len(data)

    def refill(self, data: bytes) -> None:
        """Replace every byte fed and not yet consumed with ``data``, the bytes of the segment from
        ``offset`` on: an adapter that can read at any offset hands over one contiguous piece,
        and the buffer is never copied to join what was left of it with what comes next."""
        self._buf = b""
        self._pos = 0
        self._chunks = []
        self._chunk_bytes = 0
        self.feed(data)

    def pending(self) -> int:
        """Bytes fed and not yet consumed."""
        return len(self._buf) - self._pos + self._chunk_bytes

    def _available(self, needed: int) -> bool:
        """Make at least ``needed`` bytes contiguous in the buffer, if they have been fed."""
        have = len(self._buf) - self._pos
        if have >= needed:
            return True
        if have + self._chunk_bytes < needed:
            return False
        self._buf = self._buf[self._pos :] + b"".join(self._chunks)
        self._pos = 0
        self._chunks = []
        self._chunk_bytes = 0
        return True

    def end_of_input(self) -> None:
        """No more bytes will be fed: an incomplete record is now final."""
        self._input_ended = True

    @property
    def input_ended(self) -> bool:
        return self._input_ended

    def wanted(self) -> int:
        """How many more bytes the next step needs (at least 1 unless done)."""
        self._available(RECORD_HEADER_SIZE)
        have = len(self._buf) - self._pos + self._chunk_bytes
        if have < RECORD_HEADER_SIZE:
            return RECORD_HEADER_SIZE - have
        length = int.from_bytes(self._buf[self._pos : self._pos + 4], "big")
        return max(1, 4 + min(length, MAX_RECORD_LENGTH) - have)

    def __iter__(self) -> Iterator[Entry]:
        return self

    def __next__(self) -> Entry:
        # A data record that lies whole in the buffer and passes every check
        # of spec 4.3 comes from the batch loop; anything else (a record that
        # needs more input, a skippable frame, the end of the data, any
        # damage) goes to _step, the reference walk, which classifies it.
        proven = self._verified_run(1)
        entry = proven[0] if proven else self._step()
        if entry is None:
            raise StopIteration
        return entry

    def next_batch(self, most: int = BATCH_ENTRIES) -> list[Entry]:
        """The next entries, up to ``most``: what that many ``next`` calls would return.

        Empty when no entry can be proven with the input so far (or the walk
        is done). A batch ends before a damaged record: its error is raised by
        the next call, once every entry before it has been returned, with the
        same class and state as ``next`` raises it.
        """
        if most < 1:
            raise ValueError(f"a batch holds at least one entry, not {most}")
        entries = self._verified_run(most)
        if not entries:
            entry = self._step()
            if entry is not None:
                # A record the loop leaves to the reference walk (one straddling
                # two fed pieces, or after a skippable frame) does not end the batch.
                entries.append(entry)
                entries += self._verified_run(most - 1)
        return entries

    def _verified_run(self, most: int) -> list[Entry]:
        """``_verified_run_pure``, in compiled code when ``openbinlog._accel`` says so (tests prove the two equal)."""
        verifier = self._native
        if verifier is None:
            return self._verified_run_pure(most)
        if self.stop is not None:
            return []
        buf, pos, offset = self._buf, self._pos, self.offset
        end = len(buf) if self.limit is None else min(len(buf), self.limit - offset + pos)
        entries, self._pos, self.offset, self.next_index, self.last_asqn = verifier.verified_run(
            buf, pos, end, most, offset, self.log, self.next_index, self.last_asqn
        )
        return entries

    def _verified_run_pure(self, most: int) -> list[Entry]:
        """Entries of the data records that lie whole in the buffer and pass every check of spec 4.3, up to ``most``.

        The loop stops before the first record that needs more input, lies
        beyond the limit, is not a data record or fails any check; the
        reference walk, ``_walk_one``, takes that one and classifies it. State
        lives in locals and is written back once; per record, the loop does
        one unpack, two CRC32C calls and one Entry, and the checksums of the
        whole run are compared at the end, all at once.
        """
        entries: list[Entry] = []
        if self.stop is not None:
            return entries
        buf, pos, expected, last_asqn, log = self._buf, self._pos, self.next_index, self.last_asqn, self.log
        base = self.offset - pos  # segment offset of buf[0]
        end = len(buf) if self.limit is None else min(len(buf), self.limit - base)
        last_start = end - RECORD_HEADER_SIZE
        computed: list[int] = []
        stored: list[int] = []
        add, add_computed, add_stored = entries.append, computed.append, stored.append
        unpack, crc, new_entry = _unpack_header, _raw_crc32c, _checked_entry
        left = most
        while left and pos <= last_start:
            length, frame, flags, reserved, index, asqn, timestamp_us, payload_crc, header_crc = unpack(buf, pos)
            following = pos + 4 + length
            if (
                frame != FRAME_DATA
                or flags
                or reserved
                or index != expected
                or not MIN_RECORD_LENGTH <= length <= MAX_RECORD_LENGTH
                or following > end
                or (asqn != NO_ASQN and (asqn < NO_ASQN or asqn <= last_asqn))
            ):
                break
            payload = buf[pos + RECORD_HEADER_SIZE : following]
            add_computed(crc(buf[pos : pos + _CRC_END]))
            add_computed(crc(payload))
            add_stored(header_crc)
            add_stored(payload_crc)
            add(new_entry(log, base + pos, index, payload, asqn, timestamp_us))
            expected = index + 1
            if asqn != NO_ASQN:
                last_asqn = asqn
            pos = following
            left -= 1
        if not entries:
            return entries
        if _masked_lanes(computed) != _lanes(stored):
            for at, value in enumerate(computed):
                if mask(value) != stored[at]:
                    # Nothing was written back yet: decode again up to the record before the first bad checksum.
                    return self._verified_run_pure(at // 2)
        self._pos, self.offset, self.next_index, self.last_asqn = pos, base + pos, expected, last_asqn
        return entries

    def _fail(self, error: BinlogError) -> Entry | None:
        if self.limit is not None:
            raise error
        self.stop = TailStop(self.offset, error.error_class)
        return None

    def _step(self) -> Entry | None:
        while True:
            entry = self._walk_one()
            if entry is not _SKIPPED:
                return entry

    def _walk_one(self) -> Entry | None:
        if self.done:
            return None
        self._available(RECORD_HEADER_SIZE)
        buf, pos, offset = self._buf, self._pos, self.offset
        have = len(buf) - pos + self._chunk_bytes
        bound = self.limit
        if have < RECORD_HEADER_SIZE:
            if not self._input_ended:
                return None
            self._available(have)
            buf, pos = self._buf, self._pos
            if bound is None:
                reason = "end" if have == 0 else "unwritten" if have > 4 and buf[pos + 4] == FRAME_END else None
                if reason is not None:
                    self.stop = TailStop(offset, reason)
                    return None
            return self._fail(
                TruncatedError(
                    f"record header needs {RECORD_HEADER_SIZE} bytes, {have} left",
                    log=self.log,
                    offset=offset,
                    index=self.next_index,
                )
            )
        if bound is None and buf[pos + 4] == FRAME_END:
            self.stop = TailStop(offset, "unwritten")
            return None
        (length, frame, flags, reserved, index, asqn, timestamp_us, payload_crc, header_crc) = (
            RECORD_HEADER.unpack_from(buf, pos)
        )
        view = memoryview(buf)
        if masked_crc32c(view[pos : pos + _CRC_END]) != header_crc:
            return self._fail(
                ChecksumMismatchError(
                    "record header checksum mismatch", log=self.log, offset=offset, index=self.next_index
                )
            )
        if frame == FRAME_END or (frame != FRAME_DATA and frame < FRAME_FIRST_SKIPPABLE) or flags or reserved:
            return self._fail(
                UnsupportedFeatureError(
                    f"unknown frame type {frame}, flags {flags:#x} or reserved {reserved:#x}",
                    log=self.log,
                    offset=offset,
                    index=self.next_index,
                )
            )
        end = offset + 4 + length
        if length < MIN_RECORD_LENGTH or length > MAX_RECORD_LENGTH or (bound is not None and end > bound):
            return self._fail(
                LengthOutOfRangeError(
                    f"record length {length} out of range" + ("" if bound is None else f" (commit point at {bound})"),
                    log=self.log,
                    offset=offset,
                    index=self.next_index,
                )
            )
        if not self._available(4 + length):
            have = len(self._buf) - self._pos + self._chunk_bytes
            if not self._input_ended:
                return None
            return self._fail(
                TruncatedError(
                    f"record of {4 + length} bytes, {have} left",
                    log=self.log,
                    offset=offset,
                    index=self.next_index,
                )
            )
        buf, pos = self._buf, self._pos
        view = memoryview(buf)
        payload_start = pos + RECORD_HEADER_SIZE
        payload_end = pos + 4 + length
        if masked_crc32c(view[payload_start:payload_end]) != payload_crc:
            return self._fail(
                ChecksumMismatchError("payload checksum mismatch", log=self.log, offset=offset, index=self.next_index)
            )
        if index != self.next_index:
            return self._fail(
                IndexDiscontinuityError(
                    f"record carries index {index}, expected {self.next_index}",
                    log=self.log,
                    offset=offset,
                    index=self.next_index,
                )
            )
        if asqn != NO_ASQN and (asqn < NO_ASQN or asqn <= self.last_asqn):
            return self._fail(
                AsqnNotIncreasingError(
                    f"asqn {asqn} not above the previous {self.last_asqn}",
                    log=self.log,
                    offset=offset,
                    index=index,
                )
            )
        self._pos = payload_end
        self.offset = end
        if frame != FRAME_DATA:
            # A skippable frame of a later minor version: verified, not returned,
            # and it does not consume an index.
            return _SKIPPED
        self.next_index = index + 1
        if asqn != NO_ASQN:
            self.last_asqn = asqn
        return Entry(self.log, offset, index, bytes(view[payload_start:payload_end]), asqn, timestamp_us)
