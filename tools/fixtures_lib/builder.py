"""Build log directories byte by byte with the reference's pure encoders.

A ``LogBuilder`` plays the write protocol step by step (create a segment,
write records beyond the commit point, publish, cut over, seal) and keeps
every record it wrote, so a catalog entry can say exactly which records a
reader must return. Nothing here reads a log back: the expected outcomes are
stated from what was written, never computed by the reader under test.

Every value is fixed (log id, clock, payloads from seeded generators), so
the bytes are the same on every run.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import Any

from openbinlog import HEADER_SIZE, encode_record
from openbinlog._crc import masked_crc32c
from openbinlog._format import HEADER_CRC_COVERS, RECORD_HEADER, segment_name
from openbinlog._segment import CommitState, build_header, encode_mirror, encode_slot

LOG_ID = bytes(range(16))
OTHER_LOG_ID = bytes(range(0xF0, 0x100))
T0 = 1_700_000_000_000_000  # 2023-11-14T22:13:20Z, the spec's test-vector clock
TICK = 1000  # one millisecond between records, as in test vectors TV-6..TV-8
LOCK = "LOCK"
FRAME_DATA = 1


def seeded_bytes(seed: int, size: int) -> bytes:
    """Pseudo-random bytes that are the same on every run and every platform."""
    return random.Random(seed).randbytes(size)


@dataclass(frozen=True)
class RecordFact:
    """One record as written: where it is and what it holds."""

    log: int
    offset: int
    index: int
    asqn: int
    timestamp_us: int
    payload: bytes
    frame: int = FRAME_DATA

    @property
    def size(self) -> int:
        return 40 + len(self.payload)

    @property
    def end(self) -> int:
        return self.offset + self.size

    @property
    def ref(self) -> str:
        return f"{self.log}:{self.offset}:{self.index}"

    def encode(self) -> bytes:
        return encode_record(self.index, self.payload, asqn=self.asqn, timestamp_us=self.timestamp_us, frame=self.frame)


def raw_record(
    fact: RecordFact,
    *,
    length: int | None = None,
    frame: int | None = None,
    flags: int = 0,
    reserved: int = 0,
) -> bytes:
    """A record's bytes with chosen header fields and both checksums recomputed.

    Used for damage that must survive the checksums (a hostile length, an
    unknown frame): the defect is the field, not the checksum.
    """
    head = RECORD_HEADER.pack(
        36 + len(fact.payload) if length is None else length,
        fact.frame if frame is None else frame,
        flags,
        reserved,
        fact.index,
        fact.asqn,
        fact.timestamp_us,
        masked_crc32c(fact.payload),
        0,
    )[:36]
    return head + masked_crc32c(head).to_bytes(4, "big") + fact.payload


def with_header_crc(header: bytes | bytearray) -> bytes:
    """The header with its ``header_crc`` recomputed over the covered bytes."""
    data = bytearray(header)
    data[92:96] = masked_crc32c(*(bytes(data[part]) for part in HEADER_CRC_COVERS)).to_bytes(4, "big")
    return bytes(data)


def slot_bytes(commit: CommitState) -> tuple[int, bytes]:
    """Where a commit slot of this generation goes, and its 48 bytes."""
    return encode_slot(commit)


@dataclass
class SegmentBuilder:
    """One version 2 segment being written."""

    log: int
    log_id: bytes
    base_index: int
    created_us: int
    capacity: int
    commit: CommitState
    data: bytearray
    records: list[RecordFact] = field(default_factory=list)
    next_index: int = 0
    last_asqn: int = -1
    last_timestamp_us: int = 0

    @property
    def end(self) -> int:
        """Where the next record goes: after everything written, published or not."""
        return len(self.data)

    @property
    def name(self) -> str:
        return segment_name(self.log)

    def published(self) -> list[RecordFact]:
        """The data records that end at or before the published commit point."""
        return [r for r in self.records if r.end <= self.commit.commit_offset and r.frame == FRAME_DATA]

    def file_bytes(self) -> bytes:
        if self.capacity and len(self.data) < self.capacity:
            return bytes(self.data) + bytes(self.capacity - len(self.data))
        return bytes(self.data)


class LogBuilder:
    """A version 2 log written step by step; ``trace`` records every step."""

    def __init__(
        self,
        *,
        log_id: bytes = LOG_ID,
        first_log: int = 1,
        base_index: int = 1,
        capacity: int = 0,
        created_us: int = T0,
    ) -> None:
        self.log_id = log_id
        self.capacity = capacity
        self.segments: list[SegmentBuilder] = []
        self.trace: list[dict[str, Any]] = []
        self._written = 0
        self._start_segment(first_log, base_index, created_us, last_asqn=-1, last_timestamp_us=0)

    # -- steps of the write protocol ------------------------------------------

    @property
    def last(self) -> SegmentBuilder:
        return self.segments[-1]

    def _start_segment(
        self, log: int, base_index: int, created_us: int, *, last_asqn: int, last_timestamp_us: int
    ) -> SegmentBuilder:
        header = build_header(
            log=log,
            log_id=self.log_id,
            base_index=base_index,
            created_us=created_us,
            capacity=self.capacity,
            last_asqn=last_asqn,
            last_timestamp_us=last_timestamp_us,
        )
        segment = SegmentBuilder(
            log=log,
            log_id=self.log_id,
            base_index=base_index,
            created_us=created_us,
            capacity=self.capacity,
            commit=CommitState(1, HEADER_SIZE, base_index, last_asqn, last_timestamp_us, 0),
            data=bytearray(header),
            next_index=base_index,
            last_asqn=last_asqn,
            last_timestamp_us=last_timestamp_us,
        )
        self.segments.append(segment)
        self.trace.append(
            {
                "step": "create_segment",
                "log": log,
                "log_id": self.log_id.hex(),
                "base_index": str(base_index),
                "created_us": str(created_us),
                "capacity": str(self.capacity),
            }
        )
        return segment

    def write(
        self,
        payload: bytes,
        *,
        asqn: int = -1,
        timestamp_us: int | None = None,
        frame: int = FRAME_DATA,
    ) -> RecordFact:
        """Write one record beyond the commit point of the last segment (not yet published).

        A skippable frame (128..255) carries the current expected index and
        does not consume one (spec section 4.2).
        """
        segment = self.last
        index = segment.next_index
        # The clock advances one tick per record written, from T0 at the first.
        stamp = T0 + TICK * self._written if timestamp_us is None else timestamp_us
        self._written += 1
        fact = RecordFact(segment.log, segment.end, index, asqn, stamp, payload, frame)
        segment.data += fact.encode()
        segment.records.append(fact)
        if frame == FRAME_DATA:
            segment.next_index = index + 1
            if asqn != -1:
                segment.last_asqn = asqn
            segment.last_timestamp_us = stamp
        self.trace.append(
            {
                "step": "write_record",
                "log": fact.log,
                "offset": str(fact.offset),
                "index": str(fact.index),
                "asqn": str(fact.asqn),
                "timestamp_us": str(fact.timestamp_us),
                "frame": frame,
                "payload_size": len(payload),
            }
        )
        return fact

    def publish(self) -> CommitState:
        """Publish everything written to the last segment: the next generation's slot, then the mirrors."""
        segment = self.last
        commit = CommitState(
            segment.commit.generation + 1,
            segment.end,
            segment.next_index,
            segment.last_asqn,
            segment.last_timestamp_us,
            0,
        )
        self._put_commit(segment, commit)
        return commit

    def batch(self, *payloads: bytes | tuple[bytes, int]) -> list[RecordFact]:
        """Write records and publish them together (one commit)."""
        facts = [
            self.write(item[0], asqn=item[1]) if isinstance(item, tuple) else self.write(item) for item in payloads
        ]
        self.publish()
        return facts

    def start_successor(self) -> SegmentBuilder:
        """Cutover steps 0 to 3: create segment N+1 from N's published state; N stays open."""
        segment = self.last
        commit = segment.commit
        return self._start_segment(
            segment.log + 1,
            commit.next_index,
            segment.created_us + 1_000_000,
            last_asqn=commit.last_asqn,
            last_timestamp_us=commit.last_timestamp_us,
        )

    def seal(self, segment: SegmentBuilder) -> None:
        """Cutover step 4: publish N's state again with its successor's log number."""
        commit = replace(segment.commit, generation=segment.commit.generation + 1, next_log_number=segment.log + 1)
        self._put_commit(segment, commit)

    def cutover(self) -> SegmentBuilder:
        """The whole cutover: successor created, predecessor sealed."""
        previous = self.last
        successor = self.start_successor()
        self.seal(previous)
        return successor

    def _put_commit(self, segment: SegmentBuilder, commit: CommitState) -> None:
        at, raw = encode_slot(commit)
        segment.data[at : at + len(raw)] = raw
        at, raw = encode_mirror(commit, segment.log)
        segment.data[at : at + len(raw)] = raw
        segment.commit = commit
        self.trace.append(
            {
                "step": "seal" if commit.next_log_number else "publish",
                "log": segment.log,
                "generation": str(commit.generation),
                "commit_offset": str(commit.commit_offset),
                "next_index": str(commit.next_index),
                "last_asqn": str(commit.last_asqn),
                "last_timestamp_us": str(commit.last_timestamp_us),
                "next_log_number": commit.next_log_number,
            }
        )

    # -- results ----------------------------------------------------------------

    def published(self) -> list[RecordFact]:
        """Every data record below its segment's published commit point, in log order."""
        return [fact for segment in self.segments for fact in segment.published()]

    def records(self) -> list[RecordFact]:
        """Every data record written, published or not."""
        return [fact for segment in self.segments for fact in segment.records if fact.frame == FRAME_DATA]

    def segment(self, log: int) -> SegmentBuilder:
        return next(segment for segment in self.segments if segment.log == log)

    def files(self) -> dict[str, bytes]:
        """The log directory: every segment, and the writers' zero-length LOCK file."""
        files = {LOCK: b""}
        for segment in self.segments:
            files[segment.name] = segment.file_bytes()
        return files


# -- legacy jPOS-EE version 1 -----------------------------------------------------

LEGACY_FIRST_RECORD = 248


@dataclass
class LegacySegment:
    log: int
    records: list[bytes]
    closed: bool
    next_log_number: int

    @property
    def name(self) -> str:
        return segment_name(self.log)

    def facts(self, first_index: int) -> list[RecordFact]:
        facts, offset = [], LEGACY_FIRST_RECORD
        for position, data in enumerate(self.records):
            facts.append(RecordFact(self.log, offset, first_index + position, -1, 0, data))
            offset += 4 + len(data)
        return facts

    @property
    def tail(self) -> int:
        return LEGACY_FIRST_RECORD + sum(4 + len(data) for data in self.records)

    def file_bytes(self) -> bytes:
        """As jPOS-EE writes it: a 256-byte header, then records from offset 248."""
        header = (
            (252).to_bytes(4, "big")
            + (1).to_bytes(2, "big")
            + (1 if self.closed else 0).to_bytes(2, "big")
            + self.tail.to_bytes(8, "big")
            + self.log.to_bytes(4, "big")
            + self.next_log_number.to_bytes(4, "big")
        )
        data = bytearray(header.ljust(256, b"\0"))
        body = b"".join(len(record).to_bytes(4, "big", signed=True) + record for record in self.records)
        data[LEGACY_FIRST_RECORD : LEGACY_FIRST_RECORD + len(body)] = body
        return bytes(data)


def legacy_log(*segments: tuple[list[bytes], bool]) -> tuple[dict[str, bytes], list[RecordFact], list[dict[str, Any]]]:
    """A jPOS-EE log: each segment is (records, closed); closed segments name their successor.

    Returns the files, the records a reader returns (indexes counted from 1
    across segments, appendix B.5) and the trace.
    """
    files: dict[str, bytes] = {}
    facts: list[RecordFact] = []
    trace: list[dict[str, Any]] = []
    for log, (records, closed) in enumerate(segments, start=1):
        segment = LegacySegment(log, records, closed, log + 1 if closed else 0)
        files[segment.name] = segment.file_bytes()
        facts += segment.facts(len(facts) + 1)
        trace.append(
            {
                "step": "legacy_segment",
                "log": log,
                "status": 1 if closed else 0,
                "next_log_number": segment.next_log_number,
                "last_element_position": str(segment.tail),
                "records": [record.hex() for record in records],
            }
        )
    return files, facts, trace
