"""The sparse index of a finished segment (spec 18): its bytes, the entry rule, and a search that reads few entries.

Pure: bytes in, facts out. Whether an index may be used, and the check of
an entry against the segment's records, are steps of the walk
(``openbinlog.walk``: ``usable_index``, ``entry_reached``); building and
writing an index file is ``openbinlog._index_build``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ._crc import masked_crc32c
from ._format import (
    INDEX_ENTRY,
    INDEX_ENTRY_CRC_COVERS,
    INDEX_ENTRY_SIZE,
    INDEX_HEADER_CRC_COVERS,
    INDEX_HEADER_SIZE,
    INDEX_SIGNATURE,
    INDEX_VERSION,
    IndexHeader,
)

# 64 KiB between entries: a seek walks at most about twice that; an index costs 32 bytes per 64 KiB of segment.
DEFAULT_INTERVAL = 1 << 16
MAX_INTERVAL = 2**32 - 1


@dataclass(frozen=True, slots=True)
class IndexInfo:
    """The header of an index file (spec 18.2): which segment it describes, and how."""

    segment_version: int
    log: int
    log_id: bytes
    base_index: int
    segment_end: int
    end_index: int
    entry_count: int
    interval: int

    @property
    def file_size(self) -> int:
        return INDEX_HEADER_SIZE + INDEX_ENTRY_SIZE * self.entry_count


@dataclass(frozen=True, slots=True)
class IndexEntryInfo:
    """One entry: a data record's index, offset and timestamp, and the CRC of the span it starts."""

    index: int
    offset: int
    timestamp_us: int
    span_crc: int = 0


class EntryRule:
    """Spec 18.3: picks the entries among a segment's data records, offered in order."""

    def __init__(self, interval: int) -> None:
        if not 1 <= interval <= MAX_INTERVAL:
            raise ValueError(f"the interval must lie in 1 .. {MAX_INTERVAL}, got {interval}")
        self.interval = interval
        self.entries: list[IndexEntryInfo] = []
        self._due = 0  # the offset from which the next data record is an entry

    def offer(self, index: int, offset: int, timestamp_us: int) -> None:
        if not self.entries or offset >= self._due:
            self.entries.append(IndexEntryInfo(index, offset, timestamp_us))
            self._due = offset + self.interval


def encode_index(info: IndexInfo, entries: Sequence[IndexEntryInfo]) -> bytes:
    """The bytes of an index file: ``info``'s header (its ``entry_count`` is ``len(entries)``), then the entries."""
    header = bytearray(
        IndexHeader.build(
            {
                "signature": INDEX_SIGNATURE,
                "version": INDEX_VERSION,
                "segment_version": info.segment_version,
                "log_number": info.log,
                "log_id": info.log_id,
                "base_index": info.base_index,
                "segment_end": info.segment_end,
                "end_index": info.end_index,
                "entry_count": len(entries),
                "interval": info.interval,
                "header_crc": 0,
            }
        )
    )
    crc_at = INDEX_HEADER_CRC_COVERS.stop
    header[crc_at : crc_at + 4] = masked_crc32c(header[INDEX_HEADER_CRC_COVERS]).to_bytes(4, "big")
    parts = [bytes(header)]
    for entry in entries:
        body = INDEX_ENTRY.pack(entry.index, entry.offset, entry.timestamp_us, entry.span_crc, 0)
        parts.append(body[INDEX_ENTRY_CRC_COVERS] + masked_crc32c(body[INDEX_ENTRY_CRC_COVERS]).to_bytes(4, "big"))
    return b"".join(parts)


def parse_index_header(data: bytes) -> IndexInfo | None:
    """The header of an index file, or None when it is not one this revision reads (spec 18.5, index check
    step 2): too short, another signature or version, or a header CRC that fails."""
    if len(data) < INDEX_HEADER_SIZE:
        return None
    fields = IndexHeader.parse(data[:INDEX_HEADER_SIZE])
    if fields.signature != INDEX_SIGNATURE or fields.version != INDEX_VERSION:
        return None
    if fields.header_crc != masked_crc32c(data[INDEX_HEADER_CRC_COVERS]):
        return None
    return IndexInfo(
        segment_version=fields.segment_version,
        log=fields.log_number,
        log_id=bytes(fields.log_id),
        base_index=fields.base_index,
        segment_end=fields.segment_end,
        end_index=fields.end_index,
        entry_count=fields.entry_count,
        interval=fields.interval,
    )


def entry_offset(k: int) -> int:
    """Where entry ``k`` lies in the index file."""
    return INDEX_HEADER_SIZE + INDEX_ENTRY_SIZE * k


def decode_entry(data: bytes) -> IndexEntryInfo | None:
    """One entry's 32 bytes, or None when they are short or their ``entry_crc`` fails."""
    if len(data) != INDEX_ENTRY_SIZE:
        return None
    index, offset, timestamp_us, span_crc, entry_crc = INDEX_ENTRY.unpack(data)
    if entry_crc != masked_crc32c(data[INDEX_ENTRY_CRC_COVERS]):
        return None
    return IndexEntryInfo(index, offset, timestamp_us, span_crc)


def last_before(
    count: int, entry: Callable[[int], IndexEntryInfo | None], before: Callable[[IndexEntryInfo], bool]
) -> int | None:
    """The highest ``k`` below ``count`` whose entry is ``before`` the target, by binary search; -1 when no
    entry is; None when an entry the search reads is damaged (the index is then not used).

    ``before`` holds for a prefix of a well-formed index's entries (they are
    in order of index, offset and time); on a lying index the search still
    returns an entry, which the entry check then refuses or accepts on the
    segment's own bytes.
    """
    low, high = -1, count - 1
    while low < high:
        middle = (low + high + 1) // 2
        found = entry(middle)
        if found is None:
            return None
        if before(found):
            low = middle
        else:
            high = middle - 1
    return low
