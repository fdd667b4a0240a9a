"""The segment header codec: bytes in, header facts out (spec section 3)."""

from __future__ import annotations

from dataclasses import dataclass

from ._crc import masked_crc32c
from ._format import (
    COMMIT_SLOT,
    FLAG_PREALLOCATED,
    HEADER_CRC_COVERS,
    HEADER_LENGTH_FIELD,
    HEADER_SIZE,
    KNOWN_HEADER_FLAGS,
    LEGACY_FIRST_RECORD_OFFSET,
    MIRROR,
    MIRROR_OFFSET,
    NO_ASQN,
    SIGNATURE,
    SLOT_CRC_COVERS,
    SLOT_OFFSETS,
    SLOT_SIZE,
    STATUS_CLOSED,
    STATUS_OPEN,
    VERSION_2,
    VERSION_LEGACY,
    LegacyHeader,
    SegmentHeader,
)
from .errors import BadHeaderError, BadSignatureError, TruncatedError, UnsupportedFeatureError, UnsupportedVersionError


@dataclass(frozen=True, slots=True)
class CommitState:
    """The contents of the active commit slot."""

    generation: int
    commit_offset: int
    next_index: int
    last_asqn: int
    last_timestamp_us: int
    next_log_number: int = 0

    @property
    def closed(self) -> bool:
        return self.next_log_number != 0


@dataclass(frozen=True, slots=True)
class SegmentHeaderInfo:
    """A parsed, verified version 2 segment header."""

    log: int
    log_id: bytes
    base_index: int
    created_us: int
    flags: int
    capacity: int
    commit: CommitState

    @property
    def preallocated(self) -> bool:
        return bool(self.flags & FLAG_PREALLOCATED)

    version = VERSION_2


@dataclass(frozen=True, slots=True)
class LegacyHeaderInfo:
    """A jPOS-EE version 1 header: no checksum, records from offset 248."""

    log: int
    status: int
    tail: int
    next_log_number: int

    version = VERSION_LEGACY

    @property
    def closed(self) -> bool:
        return self.status == STATUS_CLOSED or self.next_log_number != 0


def _covered(data: bytes) -> list[bytes]:
    return [data[part] for part in HEADER_CRC_COVERS]


def parse_header(data: bytes, *, log: int | None = None) -> SegmentHeaderInfo | LegacyHeaderInfo:
    """Verify and decode the first 256 bytes of a segment, in the order of spec 3.4."""
    if len(data) < HEADER_SIZE:
        raise TruncatedError(f"segment header needs {HEADER_SIZE} bytes, file has {len(data)}", log=log, offset=0)
    fields = SegmentHeader.parse(data[:HEADER_SIZE])
    if fields.version == VERSION_LEGACY and fields.signature != SIGNATURE:
        return _parse_legacy(data, log)
    if fields.version != VERSION_2:
        raise UnsupportedVersionError(f"segment version {fields.version}", log=log, offset=4)
    if fields.signature != SIGNATURE:
        raise BadSignatureError(f"signature {fields.signature.hex()} is not {SIGNATURE.hex()}", log=log, offset=24)
    if masked_crc32c(*_covered(data)) != fields.header_crc:
        raise BadHeaderError("segment header checksum mismatch", log=log, offset=92)
    if fields.header_length != HEADER_LENGTH_FIELD:
        raise BadHeaderError(f"header length field {fields.header_length}, expected 252", log=log, offset=0)
    if log is not None and fields.log_number != log:
        raise BadHeaderError(f"header names log {fields.log_number}, the file name says {log}", log=log, offset=16)
    if fields.flags & ~KNOWN_HEADER_FLAGS:
        raise UnsupportedFeatureError(f"unknown header flags {fields.flags:#010x}", log=log, offset=64)
    if fields.reserved_68 or any(fields.reserved_80) or any(fields.reserved_192):
        raise BadHeaderError("reserved header bytes are not zero", log=log, offset=68)
    if bool(fields.flags & FLAG_PREALLOCATED) != (fields.capacity != 0):
        raise BadHeaderError("capacity must be set exactly when PREALLOCATED is", log=log, offset=72)
    commit = active_commit(data, base_index=fields.base_index, log=fields.log_number)
    return SegmentHeaderInfo(
        log=fields.log_number,
        log_id=bytes(fields.log_id),
        base_index=fields.base_index,
        created_us=fields.created_us,
        flags=fields.flags,
        capacity=fields.capacity,
        commit=commit,
    )


def _parse_legacy(data: bytes, log: int | None) -> LegacyHeaderInfo:
    fields = LegacyHeader.parse(data[:LEGACY_FIRST_RECORD_OFFSET])
    if fields.header_length != HEADER_LENGTH_FIELD:
        # jPOS-EE checks this value as its file magic on open ("Invalid jPOS BinLog version").
        raise BadSignatureError(f"version 1 file magic {fields.header_length:#x}, expected 0xfc", log=log, offset=0)
    if log is not None and fields.log_number != log:
        raise BadHeaderError(f"header names log {fields.log_number}, the file name says {log}", log=log, offset=16)
    if fields.status not in (STATUS_OPEN, STATUS_CLOSED):
        raise BadHeaderError(f"status {fields.status} is neither open nor closed", log=log, offset=6)
    if fields.last_element_position < LEGACY_FIRST_RECORD_OFFSET:
        raise BadHeaderError(
            f"last element position {fields.last_element_position} is before the first record",
            log=log,
            offset=8,
        )
    return LegacyHeaderInfo(
        log=fields.log_number,
        status=fields.status,
        tail=fields.last_element_position,
        next_log_number=fields.next_log_number,
    )


def decode_slot(raw: bytes) -> CommitState | None:
    """One 48-byte slot, or None when it was never written or its checksum fails."""
    generation, commit_offset, next_index, last_asqn, last_timestamp_us, next_log, slot_crc = COMMIT_SLOT.unpack(raw)
    if generation == 0 or masked_crc32c(raw[SLOT_CRC_COVERS]) != slot_crc:
        return None
    return CommitState(generation, commit_offset, next_index, last_asqn, last_timestamp_us, next_log)


def active_commit(data: bytes, *, base_index: int, log: int) -> CommitState:
    """The valid slot with the higher generation (spec 3.2)."""
    slots = [decode_slot(data[at : at + SLOT_SIZE]) for at in SLOT_OFFSETS]
    valid = [slot for slot in slots if slot is not None]
    if not valid:
        raise BadHeaderError("neither commit slot is valid", log=log, offset=SLOT_OFFSETS[0])
    if len(valid) == 2 and valid[0].generation == valid[1].generation:
        raise BadHeaderError("both commit slots carry the same generation", log=log, offset=SLOT_OFFSETS[0])
    commit = max(valid, key=lambda slot: slot.generation)
    at = SLOT_OFFSETS[commit.generation % 2]
    if slots[commit.generation % 2] is not commit:
        raise BadHeaderError(f"generation {commit.generation} sits in the wrong slot", log=log, offset=at)
    if commit.commit_offset < HEADER_SIZE or commit.next_index < base_index:
        raise BadHeaderError(
            f"commit slot out of range: offset {commit.commit_offset}, next index {commit.next_index}",
            log=log,
            offset=at,
        )
    if commit.next_log_number not in (0, log + 1):
        raise BadHeaderError(f"sealed with next log {commit.next_log_number}, expected {log + 1}", log=log, offset=at)
    if commit.last_asqn < NO_ASQN:
        raise BadHeaderError(f"last asqn {commit.last_asqn} is below -1", log=log, offset=at)
    return commit


def build_header(
    *,
    log: int,
    log_id: bytes,
    base_index: int,
    created_us: int,
    capacity: int = 0,
    last_asqn: int = NO_ASQN,
    last_timestamp_us: int = 0,
) -> bytes:
    """A new segment's header: open, empty, generation 1 in slot 1 (spec 3.1).

    ``last_asqn`` and ``last_timestamp_us`` carry the log's history across a
    cutover, so order checks do not restart at a segment boundary.
    """
    commit = CommitState(1, HEADER_SIZE, base_index, last_asqn, last_timestamp_us, 0)
    flags = FLAG_PREALLOCATED if capacity else 0
    empty_slot = dict.fromkeys(("generation", "commit_offset", "next_index", "last_asqn"), 0) | {
        "last_timestamp_us": 0,
        "next_log_number": 0,
        "slot_crc": 0,
    }
    header = bytearray(
        SegmentHeader.build(
            {
                "header_length": HEADER_LENGTH_FIELD,
                "version": VERSION_2,
                "status": STATUS_OPEN,
                "last_element_position": HEADER_SIZE,
                "log_number": log,
                "next_log_number": 0,
                "signature": SIGNATURE,
                "log_id": log_id,
                "base_index": base_index,
                "created_us": created_us,
                "flags": flags,
                "reserved_68": 0,
                "capacity": capacity,
                "reserved_80": bytes(12),
                "header_crc": 0,
                "slots": [empty_slot, empty_slot],
                "reserved_192": bytes(64),
            }
        )
    )
    header[92:96] = masked_crc32c(*_covered(bytes(header))).to_bytes(4, "big")
    at, slot = encode_slot(commit)
    header[at : at + SLOT_SIZE] = slot
    return bytes(header)


def encode_slot(commit: CommitState) -> tuple[int, bytes]:
    """Where generation ``commit.generation`` goes, and its 48 bytes."""
    raw = COMMIT_SLOT.pack(
        commit.generation,
        commit.commit_offset,
        commit.next_index,
        commit.last_asqn,
        commit.last_timestamp_us,
        commit.next_log_number,
        0,
    )
    raw = raw[:-4] + masked_crc32c(raw[SLOT_CRC_COVERS]).to_bytes(4, "big")
    return SLOT_OFFSETS[commit.generation % 2], raw


def encode_mirror(commit: CommitState, log: int) -> tuple[int, bytes]:
    """Bytes 6..23: the seed's status, last element position, (unchanged) log number and next log number."""
    status = STATUS_CLOSED if commit.next_log_number else STATUS_OPEN
    return MIRROR_OFFSET, MIRROR.pack(status, commit.commit_offset, log, commit.next_log_number)
