"""Reading one byte range of a segment: the unit of parallel reading (spec 10.5)."""

from __future__ import annotations

import os
from collections.abc import Iterator

from ._crc import masked_crc32c
from ._format import (
    FRAME_DATA,
    FRAME_FIRST_SKIPPABLE,
    HEADER_SIZE,
    MIN_RECORD_LENGTH,
    NO_ASQN,
    RECORD_HEADER,
    RECORD_HEADER_SIZE,
)
from ._records import Entry, RecordDecoder
from ._segment import LegacyHeaderInfo
from ._segment_file import SegmentFile, find_segment, is_last_blank, next_entries, segment_end, slot_disagreement
from .errors import BinlogError, NotALogError, UnsupportedVersionError

SCAN_WINDOW = 1 << 20


def _record_at(segment: SegmentFile, at: int, end: int, *, continuity: bool) -> tuple[int, int] | None:
    """(index, size) when a record with valid checksums lies whole in ``[at, end)``.

    For a split's first record (conditions 1 to 6 of spec 10.4) it must be a
    data record; for the continuity check (steps 1 to 6 of spec 4.3.1) it may
    be a skippable frame, and its flags and reserved field must be 0.
    """
    head = segment.read(at, RECORD_HEADER_SIZE)
    if len(head) < RECORD_HEADER_SIZE:
        return None
    length, frame, flags, reserved, index, _asqn, _ts, payload_crc, header_crc = RECORD_HEADER.unpack(head)
    if continuity:
        if (frame != FRAME_DATA and frame < FRAME_FIRST_SKIPPABLE) or flags or reserved:
            return None
    elif frame != FRAME_DATA:
        return None
    if masked_crc32c(head[:36]) != header_crc or length < MIN_RECORD_LENGTH or at + 4 + length > end:
        return None
    if masked_crc32c(segment.read(at + RECORD_HEADER_SIZE, length - MIN_RECORD_LENGTH)) != payload_crc:
        return None
    return index, 4 + length


def find_boundary(segment: SegmentFile, start: int, end: int, *, min_index: int) -> int | None:
    """The first record boundary at or after ``start`` (spec 10.5): a record that satisfies conditions
    1 to 6 of spec 10.4, followed by the end or by a valid record carrying the next index."""
    if start <= HEADER_SIZE:
        return HEADER_SIZE
    at = start
    while at + RECORD_HEADER_SIZE <= end:
        window = segment.read(at, min(SCAN_WINDOW, end - at))
        candidates = (pos for pos in range(len(window) - 4) if window[pos + 4] == FRAME_DATA)
        for pos in candidates:
            found = _record_at(segment, at + pos, end, continuity=False)
            if found is None or found[0] < min_index:
                continue
            index, size = found
            following = at + pos + size
            if following == end:
                return at + pos
            continued = _record_at(segment, following, end, continuity=True)
            if continued is not None and continued[0] == index + 1:
                return at + pos
        at += max(len(window) - 4, 1)
    return None


def read_split(directory: str | os.PathLike[str], log: int, start: int, stop: int) -> Iterator[Entry]:
    """The committed records of segment ``log`` whose first byte lies in ``[start, stop)`` (spec 10.5).

    After the last of them the walk goes on, returning nothing, up to the
    boundary the search finds from ``stop``, where the next split starts:
    damage before that point raises here. Consecutive splits ``[a, b)``,
    ``[b, c)`` ... therefore return every record of the segment exactly once,
    or one of them raises; no record is lost without an error. The records
    are checked against the segment end and the file size as a sequential
    reader checks them (spec 4.3.1); the boundary search looks no further
    than the bytes that exist.
    """
    path = os.fspath(directory)
    if find_segment(path, log) is None:
        raise NotALogError(f"segment {log} does not exist", path=path, log=log)
    if is_last_blank(path, log):
        return  # a blank last segment holds no records (spec 3.5)
    with SegmentFile(path, log) as segment:
        header = segment.header()
        if isinstance(header, LegacyHeaderInfo):
            raise UnsupportedVersionError(
                "legacy version 1 segments cannot be split",
                path=segment.path,
                log=log,
                offset=4,  # the version field
            )
        end = segment_end(path, segment, header)
        limit = end.offset
        readable = min(limit, segment.size())
        first = find_boundary(segment, max(start, HEADER_SIZE), readable, min_index=header.base_index)
        if first is None or first >= stop:
            return
        following = find_boundary(segment, stop, readable, min_index=header.base_index)
        walk_to = limit if following is None else following
        index = header.base_index if first == HEADER_SIZE else int.from_bytes(segment.read(first + 8, 8), "big")
        decoder = RecordDecoder(log=log, offset=first, next_index=index, last_asqn=NO_ASQN, limit=limit)
        fed = first
        while decoder.offset < walk_to:
            try:
                entries, fed = next_entries(decoder, segment.read, fed=fed, end=readable)
            except BinlogError as exc:
                raise exc.located(path=segment.path) from None
            if not entries:
                break
            for entry in entries:
                if entry.offset >= walk_to:
                    return
                if entry.offset < stop:
                    yield entry
        if decoder.offset == limit and decoder.next_index != end.next_index:
            raise slot_disagreement(
                decoder.next_index, end.next_index, path=segment.path, log=log, slot_offset=end.slot_offset
            )
