"""What a log holds, read from its headers (cheap: no record walk for version 2)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ._format import HEADER_SIZE, LEGACY_FIRST_RECORD_OFFSET, RECORD_HEADER, SLOT_OFFSETS, SLOT_SIZE
from ._legacy import iter_legacy_records
from ._segment import LegacyHeaderInfo, decode_slot
from ._segment_file import LocalDirectory, SegmentFile, find_segment, list_segments
from .errors import NotALogError
from .walk import end_in


@dataclass
class SegmentStat:
    log: int
    file: str
    version: int
    state: str  # open, sealed, finished, blank
    compressed: bool
    size: int
    records: int = 0
    first_index: int | None = None
    last_index: int | None = None
    commit_offset: int | None = None
    first_timestamp_us: int | None = None
    last_timestamp_us: int | None = None
    log_id: str | None = None
    created_us: int | None = None
    flags: int = 0
    capacity: int = 0
    slots: list[dict[str, int] | None] = field(default_factory=list)


def stat(directory: str | os.PathLike[str]) -> list[SegmentStat]:
    """One entry per segment, lowest first."""
    path = os.fspath(directory)
    if not os.path.isdir(path):
        raise NotALogError("not a log directory", path=path)
    logs = list_segments(path)
    out: list[SegmentStat] = []
    legacy_index = 1
    for log in logs:
        file = find_segment(path, log) or ""
        with SegmentFile(path, log) as segment:
            item = SegmentStat(log, os.path.basename(file), 0, "blank", segment.compressed, os.path.getsize(file))
            if segment.is_blank():
                out.append(item)
                continue
            header = segment.header()
            if isinstance(header, LegacyHeaderInfo):
                item.version, item.commit_offset = 1, header.tail
                item.state = "sealed" if header.closed else "open"  # a successor does not finish it (B.4)
                data = segment.read_at(LEGACY_FIRST_RECORD_OFFSET, header.tail - LEGACY_FIRST_RECORD_OFFSET)
                entries = list(
                    iter_legacy_records(
                        data, log=log, offset=LEGACY_FIRST_RECORD_OFFSET, tail=header.tail, next_index=legacy_index
                    )
                )
                item.records = len(entries)
                if entries:
                    item.first_index, item.last_index = entries[0].index, entries[-1].index
                legacy_index += len(entries)
                out.append(item)
                continue
            commit = segment.commit(header)
            end_info = end_in(LocalDirectory(path), segment, header, logs)
            end, final, next_index = end_info.offset, end_info.final, end_info.index
            item.version = 2
            item.state = "sealed" if commit.closed else "finished" if final else "open"
            item.commit_offset = end
            item.records = next_index - header.base_index
            if item.records:
                item.first_index, item.last_index = header.base_index, next_index - 1
                first = segment.read_at(HEADER_SIZE, RECORD_HEADER.size)
                item.first_timestamp_us = RECORD_HEADER.unpack(first)[6]
                item.last_timestamp_us = commit.last_timestamp_us
            item.log_id = header.log_id.hex()
            item.created_us = header.created_us
            item.flags, item.capacity = header.flags, header.capacity
            raw = segment.read_at(0, HEADER_SIZE)
            for at in SLOT_OFFSETS:
                slot = decode_slot(raw[at : at + SLOT_SIZE])
                item.slots.append(
                    None
                    if slot is None
                    else {
                        "generation": slot.generation,
                        "commit_offset": slot.commit_offset,
                        "next_index": slot.next_index,
                        "last_asqn": slot.last_asqn,
                        "last_timestamp_us": slot.last_timestamp_us,
                        "next_log_number": slot.next_log_number,
                    }
                )
            out.append(item)
    return out
