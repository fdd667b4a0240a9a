"""The decoder's fast path (``RecordDecoder.__next__``) against the reference walk and construct.

The fast path returns a record only when every check passes; everything
else goes to ``_walk_one``, the reference walk. These tests feed the same
bytes to a decoder driven through ``__next__`` and to one driven through the
reference walk alone (``_step``), in pieces of any size, intact and damaged,
and require the same entries, the same error and the same final state; every
entry is also checked against the construct declaration of the record header.
"""

from __future__ import annotations

from dataclasses import astuple
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from strategies import asqns, small_payloads, timestamps

from openbinlog import Entry, RecordDecoder, encode_record
from openbinlog._crc import masked_crc32c
from openbinlog._format import RECORD_HEADER_CRC_COVERS, RecordHeader
from openbinlog._records import _checked_entry
from openbinlog.errors import BinlogError

START = 256
FIRST = 7


@st.composite
def record_streams(draw: st.DrawFn) -> bytes:
    """Records with mostly valid, sometimes wrong indexes and asqns, and skippable frames among them."""
    out = []
    index = FIRST
    asqn = -1
    for payload in draw(st.lists(small_payloads, max_size=12)):
        kind = draw(st.sampled_from(["data"] * 6 + ["skippable", "wrong_index", "any_asqn"]))
        if kind == "skippable":
            record = bytearray(encode_record(index, payload))
            record[4] = draw(st.integers(min_value=128, max_value=255))
            record[36:40] = masked_crc32c(bytes(record[RECORD_HEADER_CRC_COVERS])).to_bytes(4, "big")
            out.append(bytes(record))
            continue
        record_index = draw(st.integers(min_value=0, max_value=2**64 - 1)) if kind == "wrong_index" else index
        if kind == "any_asqn":
            record_asqn = draw(asqns)
        else:
            later = st.integers(min_value=asqn + 1, max_value=min(asqn + 1000, 2**63 - 1))
            record_asqn = draw(st.one_of(st.just(-1), later) if asqn < 2**63 - 1 else st.just(-1))
        out.append(encode_record(record_index, payload, asqn=record_asqn, timestamp_us=draw(timestamps)))
        index += 1
        asqn = max(asqn, record_asqn)
    return b"".join(out)


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


def walk(data: bytes, *, committed: bool, piece: int, reference: bool) -> dict[str, Any]:
    """Feed ``data`` in ``piece``-byte slices; take each entry through the fast path or the reference walk alone."""
    decoder = RecordDecoder(
        log=3, offset=START, next_index=FIRST, last_asqn=-1, limit=START + len(data) if committed else None
    )
    entries: list[Entry] = []
    error: tuple[Any, ...] | None = None

    def drain() -> None:
        while True:
            entry = decoder._step() if reference else next(decoder, None)
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


@given(damaged(record_streams()), st.booleans(), st.sampled_from([1, 5, 40, 41, 300, 1 << 20]))
def test_fast_path_decodes_exactly_as_the_reference_walk(data: bytes, committed: bool, piece: int) -> None:
    fast = walk(data, committed=committed, piece=piece, reference=False)
    reference = walk(data, committed=committed, piece=piece, reference=True)
    assert fast == reference
    assert_matches_construct(data, fast["entries"])


@given(record_streams(), st.sampled_from([1, 7, 1 << 20]))
def test_stream_gives_the_same_outcome_whole_and_in_pieces(data: bytes, piece: int) -> None:
    whole = walk(data, committed=True, piece=1 << 20, reference=False)
    assert walk(data, committed=True, piece=piece, reference=False) == whole


@given(
    st.integers(min_value=1, max_value=2**32 - 1),
    st.integers(min_value=256, max_value=2**63),
    st.integers(min_value=0, max_value=2**64 - 1),
    small_payloads,
    asqns,
    timestamps,
)
def test_entries_built_slot_by_slot_equal_entries_built_by_init(
    log: int, offset: int, index: int, payload: bytes, asqn: int, timestamp_us: int
) -> None:
    fast = _checked_entry(log, offset, index, payload, asqn, timestamp_us)
    built = Entry(log, offset, index, payload, asqn, timestamp_us)
    assert type(fast) is Entry
    assert fast == built and hash(fast) == hash(built) and repr(fast) == repr(built)
    assert astuple(fast) == astuple(built)
