"""Sparse index files (spec index.md, section 18) for the fixtures, built from what a workload wrote.

The entries follow the rule of spec 18.3, restated here over the records a
``SegmentBuilder`` holds (never found by walking a segment with a reader);
the bytes come from the reference's pure encoder (``encode_index``), which
writes the layout of spec 18.2 with every checksum. A lie is an index whose
header or entries say something else than the segment, with valid checksums:
``forge`` writes any header and entries it is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from openbinlog._crc import masked_crc32c
from openbinlog._format import index_name
from openbinlog._sparse_index import IndexEntryInfo, IndexInfo, encode_index

from .builder import FRAME_DATA, RecordFact, SegmentBuilder

HEADER_BYTES = 72
ENTRY_BYTES = 32
SEGMENT_VERSION = 2


def idx(log: int) -> str:
    """The file name of segment ``log``'s index: ``NNNNNNNN.idx``."""
    return index_name(log)


def entry_offset(k: int) -> int:
    """Where entry ``k`` lies in an index file."""
    return HEADER_BYTES + ENTRY_BYTES * k


def chosen(records: Sequence[RecordFact], interval: int) -> list[RecordFact]:
    """Spec 18.3: the first data record, then each first data record at least ``interval`` bytes after the last
    one chosen."""
    picked: list[RecordFact] = []
    for fact in records:
        if fact.frame == FRAME_DATA and (not picked or fact.offset >= picked[-1].offset + interval):
            picked.append(fact)
    return picked


@dataclass(frozen=True)
class SegmentState:
    """A segment as an index describes it: its bytes, its end ``S`` and end index ``I_S``, and its data records
    below ``S`` (those an index may list)."""

    log: int
    log_id: bytes
    base_index: int
    data: bytes
    segment_end: int
    end_index: int
    records: tuple[RecordFact, ...]


def published_state(segment: SegmentBuilder) -> SegmentState:
    """A segment ending at its commit point: sealed, or finished by a successor with nothing beyond it."""
    return state_at(segment, segment.commit.commit_offset)


def state_at(segment: SegmentBuilder, end: int) -> SegmentState:
    """The segment as if its records ended at ``end`` (a record boundary): what an index built then says."""
    records = tuple(fact for fact in segment.records if fact.end <= end and fact.frame == FRAME_DATA)
    next_index = records[-1].index + 1 if records else segment.base_index
    return SegmentState(segment.log, segment.log_id, segment.base_index, bytes(segment.data), end, next_index, records)


def entries(state: SegmentState, interval: int) -> list[IndexEntryInfo]:
    """The entries of spec 18.3 for ``interval``, each with the CRC of the span it starts."""
    picked = chosen(state.records, interval)
    stops = [fact.offset for fact in picked[1:]] + [state.segment_end]
    return [
        IndexEntryInfo(fact.index, fact.offset, fact.timestamp_us, masked_crc32c(state.data[fact.offset : stop]))
        for fact, stop in zip(picked, stops, strict=True)
    ]


def header(state: SegmentState, interval: int, count: int) -> IndexInfo:
    return IndexInfo(
        segment_version=SEGMENT_VERSION,
        log=state.log,
        log_id=state.log_id,
        base_index=state.base_index,
        segment_end=state.segment_end,
        end_index=state.end_index,
        entry_count=count,
        interval=interval,
    )


def index_file(state: SegmentState, interval: int) -> bytes:
    """The index a builder following W-45 writes for ``state`` with ``interval``."""
    listed = entries(state, interval)
    return encode_index(header(state, interval, len(listed)), listed)


def forge(info: IndexInfo, listed: Sequence[IndexEntryInfo], **changes: int | bytes) -> bytes:
    """An index with ``info``'s header (with ``changes`` made to its fields) and ``listed`` as its entries,
    every checksum valid."""
    return encode_index(replace(info, **changes), listed)  # type: ignore[arg-type]


def entries_of(state: SegmentState, interval: int) -> list[RecordFact]:
    """The records entries point to, for choosing seek targets and checking a lie makes a difference."""
    return chosen(state.records, interval)
