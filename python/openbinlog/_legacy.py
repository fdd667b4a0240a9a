"""Legacy jPOS-EE version 1 records: bytes in, unchecked entries out (spec appendix B)."""

from __future__ import annotations

from collections.abc import Iterator

from ._format import LEGACY_LENGTH_SIZE
from ._records import Entry
from .errors import LengthOutOfRangeError, TruncatedError


def iter_legacy_records(data: bytes, *, log: int, offset: int, tail: int, next_index: int) -> Iterator[Entry]:
    """Walk ``data`` (the segment's bytes from ``offset``) up to the tail position.

    Version 1 has no checksum and no index: every entry is marked unchecked
    and numbered by the reader. A length that is negative or runs past the
    tail is damage, reported with its position.
    """
    pos = 0
    at = offset
    while at < tail:
        if at + LEGACY_LENGTH_SIZE > tail or pos + LEGACY_LENGTH_SIZE > len(data):
            raise TruncatedError("legacy record length cut short", log=log, offset=at, index=next_index)
        length = int.from_bytes(data[pos : pos + LEGACY_LENGTH_SIZE], "big", signed=True)
        end = at + LEGACY_LENGTH_SIZE + length
        if length < 0 or end > tail:
            raise LengthOutOfRangeError(
                f"legacy record length {length} runs past the tail at {tail}", log=log, offset=at, index=next_index
            )
        start = pos + LEGACY_LENGTH_SIZE
        if start + length > len(data):
            raise TruncatedError("legacy record cut short by the end of the file", log=log, offset=at, index=next_index)
        yield Entry(log, at, next_index, bytes(data[start : start + length]), checked=False)
        next_index += 1
        pos = start + length
        at = end
