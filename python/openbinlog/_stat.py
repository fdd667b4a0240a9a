"""What a log holds, read from its headers (cheap: no record walk for version 2).

This is the library side of the CLI's ``stat`` and ``meta``: whatever the
segments hold, it returns or raises a typed ``BinlogError``, and reads no
more than the walk would.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ._crc import masked_crc32c
from ._format import HEADER_SIZE, RECORD_HEADER, RECORD_HEADER_CRC_COVERS, RECORD_HEADER_SIZE, SLOT_OFFSETS, SLOT_SIZE
from ._segment import LegacyHeaderInfo, decode_slot
from ._segment_file import LocalDirectory, SegmentFile
from .walk import LegacyWalk, end_in, legacy_end


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
    logs_dir = LocalDirectory(path)
    logs = logs_dir.segments()  # not a log: raises, never an empty answer
    out: list[SegmentStat] = []
    legacy_index = 1
    for log in logs:
        opened = logs_dir.open(log)
        if opened is None:
            continue  # removed by retention since the listing
        with opened as segment:
            item = SegmentStat(
                log, os.path.basename(segment.path), 0, "blank", segment.compressed, segment.stored_size()
            )
            if segment.is_blank():
                out.append(item)
                continue
            header = segment.header()
            if isinstance(header, LegacyHeaderInfo):
                item.version, item.commit_offset = 1, header.tail
                item.state = "sealed" if header.closed else "open"  # a successor does not finish it (B.4)
                item.records = _legacy_records(segment, log, legacy_index)
                if item.records:
                    item.first_index, item.last_index = legacy_index, legacy_index + item.records - 1
                legacy_index += item.records
                out.append(item)
                continue
            commit = segment.commit(header)
            end_info = end_in(logs_dir, segment, header, logs)
            end, final, next_index = end_info.offset, end_info.final, end_info.index
            item.version = 2
            item.state = "sealed" if commit.closed else "finished" if final else "open"
            item.commit_offset = end
            item.records = next_index - header.base_index
            if item.records:
                item.first_index, item.last_index = header.base_index, next_index - 1
                item.first_timestamp_us = _first_timestamp(segment)
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


def _legacy_records(segment: SegmentFile, log: int, first_index: int) -> int:
    """How many records a version 1 segment holds, counted by the walk (Appendix B.4); its damage raises.

    Counted in runs: the billion empty records of a sparse file cost no work each.
    """
    _, end = legacy_end(segment, log)
    walk = LegacyWalk(segment, path=segment.path, log=log, end=end, next_index=first_index)
    records = 0
    while runs := walk.next_runs():
        records += sum(count for _, count, _ in runs)
    return records


def _first_timestamp(segment: SegmentFile) -> int | None:
    """The timestamp of the record at offset 256; None unless a whole record header with a valid checksum is there
    (stat walks no record: a commit point beyond the end of the file, or damage, leaves none to show)."""
    head = segment.read_at(HEADER_SIZE, RECORD_HEADER_SIZE)
    if len(head) < RECORD_HEADER_SIZE:
        return None
    *_, timestamp_us, _payload_crc, header_crc = RECORD_HEADER.unpack(head)
    if masked_crc32c(head[RECORD_HEADER_CRC_COVERS]) != header_crc:
        return None
    return int(timestamp_us)
