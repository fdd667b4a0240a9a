"""The byte layout of every on-disk structure, declared once with ``construct``.

Everything else in the package reads and writes bytes through these
declarations (or through ``struct`` formats derived from them, see
``fast_struct``). Section numbers refer to the spec (``spec/format.md`` holds the bytes; ``spec/README.md``
says which document holds each section).
"""

from __future__ import annotations

import re
import struct

from construct import (
    Bytes,
    Construct,
    FormatField,
    Int8ub,
    Int16ub,
    Int32sb,
    Int32ub,
    Int64sb,
    Int64ub,
    Padding,
    Struct,
)

# Section 3: the segment header.
HEADER_SIZE = 256
HEADER_LENGTH_FIELD = HEADER_SIZE - 4
SIGNATURE = b"\x89BLOG\r\n\x1a"
VERSION_2 = 2
VERSION_LEGACY = 1
STATUS_OPEN = 0
STATUS_CLOSED = 1
FLAG_PREALLOCATED = 0x0000_0001
KNOWN_HEADER_FLAGS = FLAG_PREALLOCATED

SLOT_OFFSETS = (96, 144)
SLOT_SIZE = 48
MIRROR_OFFSET = 6
MIRROR_SIZE = 18

# Section 4: records.
RECORD_HEADER_SIZE = 40
LENGTH_FIELD_SIZE = 4
MIN_RECORD_LENGTH = RECORD_HEADER_SIZE - LENGTH_FIELD_SIZE
MAX_RECORD_LENGTH = 2**31 - 1
MAX_PAYLOAD_SIZE = MAX_RECORD_LENGTH - MIN_RECORD_LENGTH
FRAME_END = 0
FRAME_DATA = 1
FRAME_FIRST_SKIPPABLE = 128
FIRST_INDEX = 1
NO_ASQN = -1

# Appendix: legacy jPOS-EE version 1.
LEGACY_FIRST_RECORD_OFFSET = 248
LEGACY_LENGTH_SIZE = 4

LOCK_NAME = "LOCK"  # the writers' lock file (spec 9)
# ASCII digits, anchored at both ends: \d would take fullwidth or Arabic-Indic digits for a log
# number, and $ a name that ends in a newline for a segment. Exact with match() and fullmatch() alike.
SEGMENT_NAME = re.compile(r"\A(?!0{8}\.)([0-9]{8})\.dat(\.gz|\.zst)?\Z")  # log number 0 is never used (spec 2.1)
COMPRESSED_SUFFIXES = (".gz", ".zst")

CommitSlot = Struct(
    "generation" / Int64ub,
    "commit_offset" / Int64ub,
    "next_index" / Int64ub,
    "last_asqn" / Int64sb,
    "last_timestamp_us" / Int64sb,
    "next_log_number" / Int32ub,
    "slot_crc" / Int32ub,
)
SLOT_CRC_COVERS = slice(0, 44)

# The jPOS-EE fields, at the offsets both versions share.
_SEED_FIELDS = (
    "header_length" / Int32ub,
    "version" / Int16ub,
    "status" / Int16ub,
    "last_element_position" / Int64ub,
    "log_number" / Int32ub,
    "next_log_number" / Int32ub,
)

# Offsets 6..23: the seed fields a version 2 writer keeps in step with the active slot (spec 3.3).
MirrorFields = Struct(*_SEED_FIELDS[2:])

SegmentHeader = Struct(
    *_SEED_FIELDS,
    "signature" / Bytes(8),
    "log_id" / Bytes(16),
    "base_index" / Int64ub,
    "created_us" / Int64sb,
    "flags" / Int32ub,
    "reserved_68" / Int32ub,
    "capacity" / Int64ub,
    "reserved_80" / Bytes(12),
    "header_crc" / Int32ub,
    "slots" / CommitSlot[2],
    "reserved_192" / Bytes(64),
)
# The immutable fields the header CRC covers: version and header length,
# log number, and everything from the signature up to the CRC itself.
HEADER_CRC_COVERS = (slice(0, 6), slice(16, 20), slice(24, 92))

RecordHeader = Struct(
    "length" / Int32ub,
    "frame" / Int8ub,
    "flags" / Int8ub,
    "reserved" / Int16ub,
    "index" / Int64ub,
    "asqn" / Int64sb,
    "timestamp_us" / Int64sb,
    "payload_crc" / Int32ub,
    "header_crc" / Int32ub,
)
RECORD_HEADER_CRC_COVERS = slice(0, 36)

LegacyHeader = Struct(
    *_SEED_FIELDS,
    Padding(LEGACY_FIRST_RECORD_OFFSET - 24),
)
LegacyLength = Int32sb

# Section 18 (spec/index.md): the sparse index of a finished segment, NNNNNNNN.idx.
INDEX_SIGNATURE = b"\x89BLIDX\r\n"
INDEX_VERSION = 1
INDEX_HEADER_SIZE = 72
INDEX_ENTRY_SIZE = 32

IndexHeader = Struct(
    "signature" / Bytes(8),
    "version" / Int16ub,
    "segment_version" / Int16ub,
    "log_number" / Int32ub,
    "log_id" / Bytes(16),
    "base_index" / Int64ub,
    "segment_end" / Int64ub,
    "end_index" / Int64ub,
    "entry_count" / Int64ub,
    "interval" / Int32ub,
    "header_crc" / Int32ub,
)
INDEX_HEADER_CRC_COVERS = slice(0, 68)

IndexEntry = Struct(
    "index" / Int64ub,
    "offset" / Int64ub,
    "timestamp_us" / Int64sb,
    "span_crc" / Int32ub,
    "entry_crc" / Int32ub,
)
INDEX_ENTRY_CRC_COVERS = slice(0, 28)

RefBinary = Struct(
    "log_number" / Int32ub,
    "offset" / Int64ub,
    "index" / Int64ub,
)


def fast_struct(declaration: Construct) -> struct.Struct:
    """A ``struct.Struct`` with the same layout as a flat ``construct`` Struct.

    Hot paths unpack with it instead of ``declaration.parse``; the layout
    still comes from the declaration, so the two cannot drift apart.
    """
    codes = []
    for sub in declaration.subcons:
        inner = sub.subcon if hasattr(sub, "subcon") else sub
        if not isinstance(inner, FormatField) or not inner.fmtstr.startswith(">"):
            raise TypeError(f"{sub.name}: not a big-endian fixed-size field")
        codes.append(inner.fmtstr[1:])
    return struct.Struct(">" + "".join(codes))


RECORD_HEADER = fast_struct(RecordHeader)
INDEX_ENTRY = fast_struct(IndexEntry)
COMMIT_SLOT = fast_struct(CommitSlot)
MIRROR = fast_struct(MirrorFields)

assert RECORD_HEADER.size == RECORD_HEADER_SIZE == RecordHeader.sizeof()
assert COMMIT_SLOT.size == SLOT_SIZE == CommitSlot.sizeof()
assert MIRROR.size == MirrorFields.sizeof() == 18
assert Struct(*_SEED_FIELDS[:2]).sizeof() == MIRROR_OFFSET
assert SegmentHeader.sizeof() == HEADER_SIZE
assert LegacyHeader.sizeof() == LEGACY_FIRST_RECORD_OFFSET
assert IndexHeader.sizeof() == INDEX_HEADER_SIZE
assert INDEX_ENTRY.size == INDEX_ENTRY_SIZE == IndexEntry.sizeof()


def segment_name(log_number: int) -> str:
    return f"{log_number:08d}.dat"


def index_name(log_number: int) -> str:
    """The sparse index of segment ``log_number`` (spec 18.2)."""
    return f"{log_number:08d}.idx"
