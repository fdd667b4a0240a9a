"""The construct declarations, the fast paths derived from them, and the header codec."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import asqns, indexes, log_numbers, payloads, timestamps

from openbinlog import (
    BadHeaderError,
    BadSignatureError,
    TruncatedError,
    UnsupportedFeatureError,
    UnsupportedVersionError,
)
from openbinlog._crc import crc32c, mask, masked_crc32c, unmask
from openbinlog._format import (
    COMMIT_SLOT,
    HEADER_SIZE,
    RECORD_HEADER,
    SIGNATURE,
    SLOT_OFFSETS,
    CommitSlot,
    RecordHeader,
    SegmentHeader,
)
from openbinlog._records import encode_record
from openbinlog._segment import CommitState, build_header, encode_slot, parse_header

LOG_ID = bytes(range(16))


def new_header(**overrides: int) -> bytes:
    fields = {"log": 1, "base_index": 1, "created_us": 1_700_000_000_000_000} | overrides
    return build_header(log_id=LOG_ID, **fields)


def test_crc32c_check_value() -> None:
    assert crc32c(b"123456789") == 0xE3069283


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_mask_round_trips(crc: int) -> None:
    assert unmask(mask(crc)) == crc


def test_masked_crc_of_nothing_is_not_zero() -> None:
    # An all-zero region must never carry a valid checksum (spec 5).
    assert masked_crc32c(b"") == 0xA282EAD8
    assert masked_crc32c(bytes(36)) != 0


@pytest.mark.spec("R-1")
@given(
    index=indexes,
    asqn=asqns,
    timestamp=timestamps,
    payload=payloads,
)
@pytest.mark.spec("W-6", "W-11", "R-14")
def test_fast_record_header_matches_construct(index: int, asqn: int, timestamp: int, payload: bytes) -> None:
    record = encode_record(index, payload, asqn=asqn, timestamp_us=timestamp)
    parsed = RecordHeader.parse(record[:40])
    assert RECORD_HEADER.unpack_from(record) == tuple(parsed[name] for name in RECORD_HEADER_FIELDS)
    assert bytes(RecordHeader.build(parsed)) == record[:40]
    assert parsed.length == 36 + len(payload)
    assert (parsed.index, parsed.asqn, parsed.timestamp_us) == (index, asqn, timestamp)
    assert parsed.payload_crc == masked_crc32c(payload)
    assert parsed.header_crc == masked_crc32c(record[:36])


RECORD_HEADER_FIELDS = [sub.name for sub in RecordHeader.subcons]


@given(
    generation=st.integers(min_value=1, max_value=2**64 - 1),
    offset=st.integers(min_value=256, max_value=2**64 - 1),
    index=indexes,
    asqn=asqns,
    timestamp=timestamps,
    next_log=st.integers(min_value=0, max_value=2**32 - 1),
)
def test_fast_commit_slot_matches_construct(
    generation: int, offset: int, index: int, asqn: int, timestamp: int, next_log: int
) -> None:
    at, raw = encode_slot(CommitState(generation, offset, index, asqn, timestamp, next_log))
    assert at == SLOT_OFFSETS[generation % 2]
    parsed = CommitSlot.parse(raw)
    assert COMMIT_SLOT.unpack(raw) == tuple(parsed[sub.name] for sub in CommitSlot.subcons)
    assert parsed.slot_crc == masked_crc32c(raw[:44])


@given(log=log_numbers, base=st.integers(min_value=1, max_value=2**63), created=timestamps)
def test_new_header_parses_back(log: int, base: int, created: int) -> None:
    header = parse_header(new_header(log=log, base_index=base, created_us=created), log=log)
    assert (header.log, header.base_index, header.created_us, header.log_id) == (log, base, created, LOG_ID)
    assert header.commit == CommitState(1, HEADER_SIZE, base, -1, 0, 0)


@pytest.mark.spec("W-4")
def test_header_keeps_the_seed_fields_at_the_seed_offsets() -> None:
    raw = new_header(log=7)
    assert raw[0:4] == (252).to_bytes(4, "big")
    assert raw[4:6] == (2).to_bytes(2, "big")
    assert raw[6:8] == bytes(2)  # open
    assert raw[8:16] == (256).to_bytes(8, "big")  # last element position: the commit point
    assert raw[16:20] == (7).to_bytes(4, "big")
    assert raw[20:24] == bytes(4)
    assert raw[24:32] == SIGNATURE == bytes.fromhex("89424c4f470d0a1a")
    assert SegmentHeader.sizeof() == len(raw) == 256


@pytest.mark.parametrize(
    ("offset", "error"),
    [
        (4, UnsupportedVersionError),  # version 2 -> 3
        (25, BadSignatureError),
        (40, BadHeaderError),  # log id: covered by the header checksum
        (50, BadHeaderError),  # base index
        (93, BadHeaderError),  # the checksum itself
        (200, BadHeaderError),  # reserved
    ],
)
@pytest.mark.spec("R-6", "R-31")
def test_damaged_header_field_gets_its_error_class(offset: int, error: type[Exception]) -> None:
    raw = bytearray(new_header())
    raw[offset] ^= 0x01
    with pytest.raises(error):
        parse_header(bytes(raw), log=1)


@pytest.mark.spec("R-6")
def test_header_naming_another_log_is_rejected() -> None:
    with pytest.raises(BadHeaderError, match="file name says 2"):
        parse_header(new_header(log=1), log=2)


@pytest.mark.spec("R-6")
def test_unknown_header_flag_is_unsupported_feature() -> None:
    raw = bytearray(new_header())
    raw[64:68] = (0x80).to_bytes(4, "big")
    raw[92:96] = masked_crc32c(raw[0:6], raw[16:20], raw[24:92]).to_bytes(4, "big")
    with pytest.raises(UnsupportedFeatureError):
        parse_header(bytes(raw), log=1)


def test_short_header_is_truncated() -> None:
    with pytest.raises(TruncatedError):
        parse_header(new_header()[:255], log=1)


@pytest.mark.spec("R-3")
def test_torn_slot_falls_back_to_the_other_slot() -> None:
    raw = bytearray(new_header())
    at, slot = encode_slot(CommitState(2, 1000, 9, -1, 5, 0))
    raw[at : at + len(slot)] = slot
    assert parse_header(bytes(raw), log=1).commit.generation == 2
    raw[at + 10] ^= 0xFF  # the newer slot torn mid-update
    assert parse_header(bytes(raw), log=1).commit.generation == 1


@pytest.mark.spec("R-3")
def test_no_valid_slot_is_bad_header() -> None:
    raw = bytearray(new_header())
    raw[SLOT_OFFSETS[1] + 3] ^= 0x01
    with pytest.raises(BadHeaderError, match="neither commit slot"):
        parse_header(bytes(raw), log=1)
