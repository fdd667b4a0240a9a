"""The decoder's fast paths (``__next__`` and ``next_batch``) against the reference walk and construct.

The fast paths return a record only when every check passes; everything
else goes to ``_walk_one``, the reference walk. These tests feed the same
bytes to a decoder driven through ``__next__``, to one driven through
``next_batch`` and to one driven through the reference walk alone
(``_step``), in pieces of any size, intact and damaged, and require the same
entries, the same error and the same final state; every entry is also
checked against the construct declaration of the record header.
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError, astuple
from typing import Any, Literal

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from strategies import asqns, small_payloads, timestamps

from openbinlog import Entry, RecordDecoder, encode_record
from openbinlog._crc import mask, masked_crc32c
from openbinlog._format import RECORD_HEADER_CRC_COVERS, RecordHeader
from openbinlog._records import BATCH_ENTRIES, _checked_entry, _lanes, _masked_lanes
from openbinlog.errors import AsqnNotIncreasingError, BinlogError

START = 256
FIRST = 7


# Header fields a record can carry wrongly under a valid header checksum, and where they lie.
FORGEABLE = {"length": (0, 4), "frame": (4, 1), "flags": (5, 1), "reserved": (6, 2)}
FORGED_VALUES = {
    "length": st.one_of(st.integers(min_value=0, max_value=35), st.integers(min_value=2**31, max_value=2**32 - 1)),
    "frame": st.one_of(st.just(0), st.integers(min_value=2, max_value=127)),
    "flags": st.integers(min_value=1, max_value=255),
    "reserved": st.integers(min_value=1, max_value=2**16 - 1),
}


def reforged(record: bytes, field: str, value: int) -> bytes:
    """``record`` with one header field set to ``value`` and its header checksum recomputed: one defect, not two."""
    at, size = FORGEABLE[field]
    head = bytearray(record[:40])
    head[at : at + size] = value.to_bytes(size, "big")
    head[36:40] = masked_crc32c(bytes(head[RECORD_HEADER_CRC_COVERS])).to_bytes(4, "big")
    return bytes(head) + record[40:]


# What a record of a stream can be: valid data, or one defect the decoder must refuse or step over.
DEFECTS = (
    "skippable",
    "wrong_index",
    "any_asqn",
    "stale_asqn",
    *(f"forged_{field}" for field in FORGEABLE),
    "header_bit",
    "payload_bit",
)


@st.composite
def record_streams(draw: st.DrawFn, kinds: st.SearchStrategy[list[str]] | None = None) -> bytes:
    """Records of the ``kinds`` drawn (by default mostly data, with any defects among them)."""
    if kinds is None:
        kinds = st.lists(st.sampled_from(["data"] * 6 + list(DEFECTS)), max_size=12)
    out = []
    index = FIRST
    asqn = -1
    for kind in draw(kinds):
        payload = draw(small_payloads)
        if kind == "skippable":
            frame = draw(st.integers(min_value=128, max_value=255))
            out.append(reforged(encode_record(index, payload), "frame", frame))
            continue
        record_index = draw(st.integers(min_value=0, max_value=2**64 - 1)) if kind == "wrong_index" else index
        if kind == "any_asqn":
            record_asqn = draw(asqns)
        elif kind == "stale_asqn":  # the last one again, or below -1
            record_asqn = asqn if asqn >= 0 else draw(st.integers(min_value=-(2**63), max_value=-2))
        else:
            later = st.integers(min_value=asqn + 1, max_value=min(asqn + 1000, 2**63 - 1))
            record_asqn = draw(st.one_of(st.just(-1), later) if asqn < 2**63 - 1 else st.just(-1))
        record = bytearray(encode_record(record_index, payload, asqn=record_asqn, timestamp_us=draw(timestamps)))
        if kind.startswith("forged_"):
            field = kind.removeprefix("forged_")
            record[:] = reforged(bytes(record), field, draw(FORGED_VALUES[field]))
        elif kind in ("header_bit", "payload_bit"):
            # A bit of the index, asqn, timestamp or checksums, or of the payload (its checksum when there is none).
            first, stop = (8, 40) if kind == "header_bit" or not payload else (40, len(record))
            record[draw(st.integers(min_value=first, max_value=stop - 1))] ^= 1 << draw(st.integers(0, 7))
        out.append(bytes(record))
        index += 1
        asqn = max(asqn, record_asqn)
    return b"".join(out)


def one_defect(before: int = 8, after: int = 3) -> st.SearchStrategy[list[str]]:
    """Kinds: at least one valid record, one defect, valid records."""
    return st.tuples(
        st.integers(min_value=1, max_value=before), st.sampled_from(DEFECTS), st.integers(min_value=0, max_value=after)
    ).map(lambda drawn: ["data"] * drawn[0] + [drawn[1]] + ["data"] * drawn[2])


VALID = st.lists(st.just("data"), max_size=12)


@st.composite
def damaged(draw: st.DrawFn, stream: st.SearchStrategy[bytes]) -> bytes:
    """A stream, sometimes with a flipped byte, a cut, zeros or garbage at the end."""
    data = bytearray(draw(stream))
    if data and draw(st.booleans()):
        at = draw(st.integers(min_value=0, max_value=len(data) - 1))
        data[at] ^= draw(st.integers(min_value=1, max_value=255))
    if data and draw(st.booleans()):
        del data[draw(st.integers(min_value=0, max_value=len(data))) :]
    data += draw(st.sampled_from([b"", bytes(64), b"\xff" * 45])) + draw(st.binary(max_size=50))
    return bytes(data)


Way = Literal["next", "batch", "reference"]


# The asqn a decoder starts after: none, a real one, or one no valid log holds.
start_asqns = st.one_of(st.just(-1), asqns, st.integers(min_value=-(2**63), max_value=-2))


def walk(
    data: bytes, *, committed: bool, piece: int, way: Way, most: int = BATCH_ENTRIES, last_asqn: int = -1
) -> dict[str, Any]:
    """Feed ``data`` in ``piece``-byte slices; take the entries through ``next``, through batches of
    at most ``most`` entries, or through the reference walk alone."""
    decoder = RecordDecoder(
        log=3, offset=START, next_index=FIRST, last_asqn=last_asqn, limit=START + len(data) if committed else None
    )
    entries: list[Entry] = []
    error: tuple[Any, ...] | None = None

    def drain() -> None:
        while True:
            if way == "batch":
                batch = decoder.next_batch(most)
                assert len(batch) <= most
                entries.extend(batch)
                if not batch:
                    return
                continue
            entry = decoder._step() if way == "reference" else next(decoder, None)
            if entry is None:
                return
            entries.append(entry)

    try:
        for at in range(0, len(data), piece):
            decoder.feed(data[at : at + piece])
            drain()
        decoder.end_of_input()
        drain()
    except BinlogError as exc:
        error = (type(exc), exc.message, exc.log, exc.offset, exc.index)
    return {
        "entries": [astuple(entry) for entry in entries],
        "error": error,
        "state": (decoder.offset, decoder.next_index, decoder.last_asqn, decoder.stop, decoder.done),
    }


def assert_matches_construct(data: bytes, entries: list[tuple[Any, ...]]) -> None:
    for log, offset, index, payload, asqn, timestamp_us, checked in entries:
        at = offset - START
        header = RecordHeader.parse(data[at : at + 40])
        assert (log, checked) == (3, True)
        assert (header.frame, header.flags, header.reserved) == (1, 0, 0)
        assert (header.index, header.asqn, header.timestamp_us) == (index, asqn, timestamp_us)
        assert header.length == 36 + len(payload)
        assert data[at + 40 : at + 4 + header.length] == payload
        assert header.payload_crc == masked_crc32c(payload)
        assert header.header_crc == masked_crc32c(data[at : at + 36])


@given(damaged(record_streams()), st.booleans(), st.sampled_from([1, 5, 40, 41, 300, 1 << 20]), start_asqns)
def test_fast_path_decodes_exactly_as_the_reference_walk(
    data: bytes, committed: bool, piece: int, last_asqn: int
) -> None:
    fast = walk(data, committed=committed, piece=piece, way="next", last_asqn=last_asqn)
    reference = walk(data, committed=committed, piece=piece, way="reference", last_asqn=last_asqn)
    assert fast == reference
    assert_matches_construct(data, fast["entries"])


@given(
    damaged(record_streams()),
    st.booleans(),
    st.sampled_from([1, 5, 40, 41, 300, 1 << 20]),
    st.one_of(st.integers(min_value=1, max_value=5), st.just(BATCH_ENTRIES)),
    start_asqns,
)
def test_batches_decode_exactly_as_the_reference_walk(
    data: bytes, committed: bool, piece: int, most: int, last_asqn: int
) -> None:
    batched = walk(data, committed=committed, piece=piece, way="batch", most=most, last_asqn=last_asqn)
    reference = walk(data, committed=committed, piece=piece, way="reference", last_asqn=last_asqn)
    assert batched == reference
    assert_matches_construct(data, batched["entries"])


@settings(max_examples=300)  # every defect, at every place of a batch
@given(
    record_streams(one_defect()),
    st.booleans(),
    st.sampled_from([300, 1 << 20]),
    st.sampled_from([2, 3, 256]),
    start_asqns,
)
def test_batches_meet_a_defect_after_good_records_as_the_reference_walk(
    data: bytes, committed: bool, piece: int, most: int, last_asqn: int
) -> None:
    batched = walk(data, committed=committed, piece=piece, way="batch", most=most, last_asqn=last_asqn)
    assert batched == walk(data, committed=committed, piece=piece, way="reference", last_asqn=last_asqn)
    assert_matches_construct(data, batched["entries"])


@given(record_streams(VALID), st.booleans())
def test_valid_records_fed_whole_come_back_in_one_batch(data: bytes, committed: bool) -> None:
    # Not only equal to the reference walk (a batch loop that refused every record would be):
    # the loop itself takes every valid record.
    decoder = RecordDecoder(log=3, offset=START, next_index=FIRST, limit=START + len(data) if committed else None)
    decoder.feed(data)
    decoder.end_of_input()
    reference = walk(data, committed=committed, piece=1 << 20, way="reference")
    assert [astuple(entry) for entry in decoder.next_batch(BATCH_ENTRIES)] == reference["entries"]
    assert decoder.offset == START + len(data)


@given(record_streams(), st.sampled_from([1, 7, 1 << 20]))
def test_stream_gives_the_same_outcome_whole_and_in_pieces(data: bytes, piece: int) -> None:
    whole = walk(data, committed=True, piece=1 << 20, way="next")
    assert walk(data, committed=True, piece=piece, way="next") == whole
    assert walk(data, committed=True, piece=piece, way="batch") == whole


@example([2**32 - 1] * 3)  # a carry out of every lane, were the bits shifted in from the next lane kept
@given(st.lists(st.integers(min_value=0, max_value=2**32 - 1), max_size=3 * BATCH_ENTRIES))
def test_checksums_masked_in_lanes_equal_each_checksum_masked(crcs: list[int]) -> None:
    assert _masked_lanes(crcs) == _lanes([mask(crc) for crc in crcs])
    if crcs:
        wrong = [*crcs[:-1], crcs[-1] ^ 1]
        assert _masked_lanes(wrong) != _lanes([mask(crc) for crc in crcs])


def test_asqn_below_minus_one_is_refused_whatever_asqn_the_decoder_starts_after() -> None:
    data = encode_record(FIRST, b"a") + encode_record(FIRST + 1, b"b", asqn=-3)
    ways: tuple[Way, ...] = ("next", "batch", "reference")
    for way in ways:
        outcome = walk(data, committed=True, piece=1 << 20, way=way, last_asqn=-10)
        assert outcome["error"][:1] == (AsqnNotIncreasingError,) and len(outcome["entries"]) == 1, way


def test_batch_of_no_entries_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one"):
        RecordDecoder(log=1, offset=START, next_index=1).next_batch(0)


@given(
    st.integers(min_value=1, max_value=2**32 - 1),
    st.integers(min_value=256, max_value=2**63),
    st.integers(min_value=0, max_value=2**64 - 1),
    small_payloads,
    asqns,
    timestamps,
)
def test_entries_built_with_plain_stores_equal_entries_built_by_init(
    log: int, offset: int, index: int, payload: bytes, asqn: int, timestamp_us: int
) -> None:
    fast = _checked_entry(log, offset, index, payload, asqn, timestamp_us)
    built = Entry(log, offset, index, payload, asqn, timestamp_us)
    assert type(fast) is Entry
    assert fast == built and hash(fast) == hash(built) and repr(fast) == repr(built)
    assert astuple(fast) == astuple(built)
    with pytest.raises(FrozenInstanceError):
        fast.index = index + 1  # type: ignore[misc]
