"""Legacy jPOS-EE version 1 records: bytes in, unchecked entries out (spec appendix B)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from itertools import repeat

from ._format import LEGACY_LENGTH_SIZE, NO_ASQN
from ._records import Entry, unchecked_entry
from .errors import LengthOutOfRangeError, TruncatedError

# (offset, count, data): one record and its data, or ``count`` consecutive empty records from ``offset``.
LegacyRun = tuple[int, int, bytes]

# Zero bytes: as many empty records as they hold whole length fields. A sparse file holds billions of them.
_ZEROS = re.compile(rb"\x00+")


def legacy_runs(data: bytes, *, log: int, offset: int, tail: int, next_index: int) -> Iterator[LegacyRun]:
    """Walk ``data`` (the segment's bytes from ``offset``) up to the tail position, as runs of records.

    Version 1 has no checksum and no index: every record is unchecked and
    numbered by the reader. A length that is negative or runs past the tail
    is damage, reported with its position. Consecutive empty records come as
    one run, found by a byte search: no Python work per empty record.
    """
    pos = 0
    at = offset
    while at < tail:
        if at + LEGACY_LENGTH_SIZE > tail or pos + LEGACY_LENGTH_SIZE > len(data):
            raise TruncatedError("legacy record length cut short", log=log, offset=at, index=next_index)
        length = int.from_bytes(data[pos : pos + LEGACY_LENGTH_SIZE], "big", signed=True)
        if length == 0:
            zeros = _ZEROS.match(data, pos)
            assert zeros is not None  # the length field is four zero bytes
            # At least this record, which lies whole before the end of the data and the tail.
            count = min(zeros.end() - pos, tail - at) // LEGACY_LENGTH_SIZE
            yield at, count, b""
            next_index += count
            pos += count * LEGACY_LENGTH_SIZE
            at += count * LEGACY_LENGTH_SIZE
            continue
        end = at + LEGACY_LENGTH_SIZE + length
        if length < 0 or end > tail:
            raise LengthOutOfRangeError(
                f"legacy record length {length} runs past the tail at {tail}", log=log, offset=at, index=next_index
            )
        start = pos + LEGACY_LENGTH_SIZE
        if start + length > len(data):
            raise TruncatedError("legacy record cut short by the end of the file", log=log, offset=at, index=next_index)
        yield at, 1, bytes(data[start : start + length])
        next_index += 1
        pos = start + length
        at = end


def legacy_entries(runs: Iterable[LegacyRun], *, log: int, next_index: int) -> Iterator[Entry]:
    """The unchecked entries of ``runs``, numbered from ``next_index``; a run of empty records is made in bulk."""
    for at, count, payload in runs:
        if count == 1:
            yield unchecked_entry(log, at, next_index, payload, NO_ASQN, None, False)
        else:
            yield from map(
                unchecked_entry,
                repeat(log, count),
                range(at, at + count * LEGACY_LENGTH_SIZE, LEGACY_LENGTH_SIZE),
                range(next_index, next_index + count),
                repeat(b"", count),
                repeat(NO_ASQN, count),
                repeat(None, count),
                repeat(False, count),
            )
        next_index += count


def iter_legacy_records(data: bytes, *, log: int, offset: int, tail: int, next_index: int) -> Iterator[Entry]:
    """The entries of ``legacy_runs``, one per record: every one before damage, then its error."""
    runs = legacy_runs(data, log=log, offset=offset, tail=tail, next_index=next_index)
    return legacy_entries(runs, log=log, next_index=next_index)
