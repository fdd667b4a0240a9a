"""The pure record codec: every reader path fed whole, byte by byte and with trailing bytes."""

from __future__ import annotations

import importlib.util
import random
import shutil
import tracemalloc
from collections.abc import Callable, Iterable, Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import payloads, small_payloads

from openbinlog import (
    AsqnNotIncreasingError,
    BinlogError,
    ChecksumMismatchError,
    Entry,
    IndexDiscontinuityError,
    LengthOutOfRangeError,
    RecordDecoder,
    TruncatedError,
    UnsupportedFeatureError,
    encode_record,
)
from openbinlog._crc import masked_crc32c
from openbinlog._records import BATCH_ENTRIES
from openbinlog.walk import BytesSource, resync

START = 256


def records(payload_list: Iterable[bytes], first_index: int = 1) -> bytes:
    return b"".join(encode_record(first_index + n, p, timestamp_us=n) for n, p in enumerate(payload_list))


def decode(data: bytes, *, limit: int | None, pieces: int | None = None) -> tuple[list[Entry], RecordDecoder]:
    """Feed ``data`` in ``pieces``-byte slices (whole when None) and collect the entries."""
    decoder = RecordDecoder(log=1, offset=START, next_index=1, limit=limit)
    out: list[Entry] = []
    step = pieces or max(len(data), 1)
    for at in range(0, len(data), step):
        decoder.feed(data[at : at + step])
        out.extend(decoder)
    decoder.end_of_input()
    out.extend(decoder)
    return out, decoder


def in_batches(decoder: RecordDecoder, most: int = BATCH_ENTRIES) -> Iterator[Entry]:
    """The entries the decoder can return now, taken from it in batches of at most ``most``."""
    while batch := decoder.next_batch(most):
        assert len(batch) <= most
        yield from batch


TAKE = pytest.mark.parametrize("take", [iter, in_batches], ids=["one by one", "in batches"])


def reforge(record: bytes, **changes: int) -> bytes:
    """A record with header fields changed and its header checksum recomputed (one defect, not two)."""
    head = bytearray(record[:40])
    layout = {"length": (0, 4), "frame": (4, 1), "flags": (5, 1), "reserved": (6, 2), "index": (8, 8)}
    for name, value in changes.items():
        at, size = layout[name]
        head[at : at + size] = value.to_bytes(size, "big")
    head[36:40] = masked_crc32c(bytes(head[:36])).to_bytes(4, "big")
    return bytes(head) + record[40:]


@pytest.mark.spec("R-8", "R-15")
@pytest.mark.parametrize("pieces", [None, 1, 7])
@given(st.lists(payloads, max_size=6))
def test_committed_records_decode_whole_bytewise_and_with_trailing_bytes(
    pieces: int | None, items: list[bytes]
) -> None:
    data = records(items)
    limit = START + len(data)
    trailing = bytes([0xAB]) * 57
    if pieces == 1 and len(data) > 5000:
        pieces = 4096  # byte-by-byte on a megabyte is just slow, not more thorough
    out, decoder = decode(data + trailing, limit=limit, pieces=pieces)
    assert [e.payload for e in out] == items
    assert [e.index for e in out] == list(range(1, len(items) + 1))
    assert decoder.offset == limit and decoder.done


@pytest.mark.spec("R-8", "R-10")
@given(st.lists(payloads, max_size=6), st.lists(st.integers(min_value=1, max_value=700), min_size=1), st.data())
def test_reads_from_the_decoders_offset_yield_what_feeding_the_whole_does(
    items: list[bytes], sizes: list[int], data: st.DataObject
) -> None:
    # next_entries reads each piece from where the decoder stands and hands it over with refill():
    # bytes already held are read again, never joined by a copy. Pieces of any size, a damaged
    # record or a file ending early must give the entries, error and state feeding whole gives.
    whole = records(items)
    if whole and data.draw(st.booleans()):
        whole = whole[: data.draw(st.integers(min_value=0, max_value=len(whole) - 1))]
    limit = START + len(records(items))
    segment = bytes(START) + whole

    def read_at(offset: int, size: int) -> bytes:
        return segment[offset : offset + size]

    def outcome(make: Callable[[RecordDecoder], list[Entry]]) -> tuple[list[Entry], str | None, int, int]:
        decoder = RecordDecoder(log=1, offset=START, next_index=1, limit=limit)
        got: list[Entry] = []
        error = None
        try:
            got = make(decoder)
        except BinlogError as exc:
            error = f"{exc.error_class}@{exc.offset}"
        return got, error, decoder.offset, decoder.next_index

    def whole_fed(decoder: RecordDecoder) -> list[Entry]:
        decoder.feed(whole)
        decoder.end_of_input()
        return list(decoder)

    def refilled(decoder: RecordDecoder) -> list[Entry]:
        got: list[Entry] = []
        fed, turn = START, 0
        while True:
            got += decoder
            if decoder.done or decoder.input_ended:
                return got
            start, held = decoder.offset, decoder.pending()
            piece = read_at(start, held + sizes[turn % len(sizes)])
            turn += 1
            if len(piece) <= held or fed >= limit:
                decoder.end_of_input()
                continue
            decoder.refill(piece)
            fed = start + len(piece)

    assert outcome(refilled) == outcome(whole_fed)


@pytest.mark.spec("R-12", "W-21")
@given(st.lists(small_payloads, min_size=1, max_size=4), st.data())
def test_torn_tail_at_every_byte_of_the_last_record_is_ignored(items: list[bytes], data: st.DataObject) -> None:
    whole = records(items)
    last = len(encode_record(len(items), items[-1], timestamp_us=len(items) - 1))
    cut = data.draw(st.integers(min_value=len(whole) - last, max_value=len(whole) - 1))
    out, decoder = decode(whole[:cut], limit=None)
    assert [e.payload for e in out] == items[:-1]
    assert decoder.stop is not None and decoder.stop.offset == START + len(whole) - last


@pytest.mark.spec("R-8", "R-9", "R-32")
def test_every_truncation_of_the_last_committed_record_is_reported() -> None:
    whole = records([b"first", b"second record"])
    second = START + len(encode_record(1, b"first"))
    for cut in range(second - START, len(whole)):
        decoder = RecordDecoder(log=1, offset=START, next_index=1, limit=START + len(whole))
        decoder.feed(whole[:cut])
        decoder.end_of_input()
        got = [next(decoder)]
        with pytest.raises(TruncatedError) as caught:
            next(decoder)
        assert got[0].payload == b"first"
        assert (caught.value.offset, caught.value.index) == (second, 2)


@pytest.mark.parametrize("size", [1, 4, 39, 40, 4096])
def test_zero_filled_tail_ends_the_walk_cleanly(size: int) -> None:
    out, decoder = decode(records([b"a", b"b"]) + bytes(size), limit=None)
    assert [e.payload for e in out] == [b"a", b"b"]
    assert decoder.stop is not None and decoder.stop.offset == START + len(records([b"a", b"b"]))


@given(st.binary(min_size=1, max_size=2000))
def test_garbage_tail_is_never_a_record(garbage: bytes) -> None:
    out, _ = decode(records([b"kept"]) + garbage, limit=None)
    assert [e.payload for e in out][:1] == [b"kept"]
    assert len(out) == 1 or out[1].index == 2  # a forged valid record would need both checksums


@pytest.mark.spec("R-10")
def test_hostile_4gib_length_needs_no_memory() -> None:
    hostile = reforge(encode_record(1, b"x"), length=0xFFFFFFFF)
    tracemalloc.start()
    try:
        out, decoder = decode(hostile + bytes(100), limit=None)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out == [] and decoder.stop is not None and decoder.stop.reason == "length_out_of_range"
    assert peak < 1 << 20
    with pytest.raises(LengthOutOfRangeError):
        decode(hostile, limit=START + 10_000)


def test_garbage_length_fails_the_header_checksum_before_it_is_used() -> None:
    record = bytearray(encode_record(1, b"payload"))
    record[0:4] = (0x7FFFFFF0).to_bytes(4, "big")
    with pytest.raises(ChecksumMismatchError) as caught:
        decode(bytes(record), limit=START + len(record))
    assert caught.value.offset == START


@pytest.mark.parametrize(
    ("damage", "error"),
    [
        ({"frame": 2}, UnsupportedFeatureError),
        ({"frame": 0}, UnsupportedFeatureError),
        ({"flags": 1}, UnsupportedFeatureError),
        ({"reserved": 1}, UnsupportedFeatureError),
        ({"length": 35}, LengthOutOfRangeError),
        ({"length": 37 + 100}, LengthOutOfRangeError),  # crosses the commit point
        ({"index": 5}, IndexDiscontinuityError),
    ],
)
@TAKE
@pytest.mark.spec("R-8", "R-31", "R-32")
def test_committed_record_defect_gets_its_error_class(
    damage: dict[str, int], error: type[BinlogError], take: Callable[[RecordDecoder], Iterator[Entry]]
) -> None:
    good = encode_record(1, b"first")
    bad = reforge(encode_record(2, b"second"), **damage)
    data = good + bad
    out: list[Entry] = []
    with pytest.raises(error) as caught:
        decoder = RecordDecoder(log=3, offset=START, next_index=1, limit=START + len(data))
        decoder.feed(data)
        decoder.end_of_input()
        out.extend(take(decoder))
    assert [e.payload for e in out] == [b"first"]
    assert (caught.value.log, caught.value.offset, caught.value.index) == (3, START + len(good), 2)


def test_flipped_payload_bit_is_a_checksum_mismatch_after_the_good_records() -> None:
    data = bytearray(records([b"one", b"two", b"three"]))
    data[-1] ^= 0x10
    out: list[Entry] = []
    with pytest.raises(ChecksumMismatchError) as caught:
        decoder = RecordDecoder(log=1, offset=START, next_index=1, limit=START + len(data))
        decoder.feed(bytes(data))
        out.extend(decoder)
    assert [e.payload for e in out] == [b"one", b"two"]
    assert caught.value.index == 3


def test_asqn_must_increase() -> None:
    data = encode_record(1, b"a", asqn=5) + encode_record(2, b"b") + encode_record(3, b"c", asqn=5)
    decoder = RecordDecoder(log=1, offset=START, next_index=1, limit=START + len(data))
    decoder.feed(data)
    assert next(decoder).asqn == 5 and next(decoder).asqn == -1
    with pytest.raises(AsqnNotIncreasingError):
        next(decoder)


@pytest.mark.spec("R-11")
def test_skippable_frame_is_verified_skipped_and_consumes_no_index() -> None:
    ancillary = reforge(encode_record(2, b"future extension"), frame=200)
    data = encode_record(1, b"a") + ancillary + encode_record(2, b"b")
    out, _ = decode(data, limit=START + len(data))
    assert [(e.index, e.payload) for e in out] == [(1, b"a"), (2, b"b")]


def _first_record(data: bytes, *, low: int, high: int = 2**64) -> int | None:
    """Where a resynchronisation that starts before byte 0 resumes (spec 10.4)."""
    found = resync(BytesSource(data), -1, len(data), low=low, high=high)
    return None if found is None else found[0]


@pytest.mark.spec("R-25")
@given(st.binary(max_size=300), st.lists(small_payloads, min_size=1, max_size=3))
def test_resync_finds_the_first_valid_record_after_damage(junk: bytes, items: list[bytes]) -> None:
    data = junk + records(items, first_index=10)
    found = _first_record(data, low=10)
    assert found is not None and found <= len(junk)
    if found < len(junk):  # the junk itself happened to hold a valid record: astronomically unlikely
        pytest.fail("junk parsed as a record")


@pytest.mark.spec("R-25")
def test_resync_refuses_records_older_than_the_expected_index() -> None:
    data = records([b"old"], first_index=3) + records([b"new"], first_index=9)
    assert _first_record(data, low=4) == len(encode_record(3, b"old", timestamp_us=0))


@pytest.mark.spec("R-25")
def test_resync_refuses_records_at_or_beyond_the_end_index() -> None:
    data = records([b"forged"], first_index=50) + records([b"real"], first_index=5)
    assert _first_record(data, low=4, high=6) == len(encode_record(50, b"forged", timestamp_us=0))
    assert _first_record(data, low=4, high=5) is None


@pytest.mark.spec("R-14")
@TAKE
def test_random_bit_flips_in_committed_data_never_pass_silently(
    take: Callable[[RecordDecoder], Iterator[Entry]],
) -> None:
    rng = random.Random(1)
    base = records([bytes([n]) * n for n in range(1, 30)])
    for _ in range(300):
        data = bytearray(base)
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        decoder = RecordDecoder(log=1, offset=START, next_index=1, limit=START + len(data))
        decoder.feed(bytes(data))
        decoder.end_of_input()
        with pytest.raises((ChecksumMismatchError, LengthOutOfRangeError, TruncatedError, UnsupportedFeatureError)):
            list(take(decoder))


@pytest.mark.spec("R-9", "R-32")
def test_batch_holds_the_records_before_a_bad_checksum_and_the_next_call_raises_it() -> None:
    data = bytearray(records([b"one", b"two", b"three", b"four"]))
    third = 2 * len(encode_record(1, b"one"))
    data[third + 41] ^= 0x04
    decoder = RecordDecoder(log=1, offset=START, next_index=1, limit=START + len(data))
    decoder.feed(bytes(data))
    assert [e.payload for e in decoder.next_batch()] == [b"one", b"two"]
    assert (decoder.offset, decoder.next_index) == (START + third, 3)
    with pytest.raises(ChecksumMismatchError) as caught:
        decoder.next_batch()
    assert (caught.value.offset, caught.value.index) == (START + third, 3)


@pytest.mark.spec("R-15")
def test_batch_stops_at_the_commit_point_and_goes_on_when_it_moves() -> None:
    data = records([b"a", b"b", b"c", b"d"])
    size = len(encode_record(1, b"a"))
    decoder = RecordDecoder(log=1, offset=START, next_index=1, limit=START + 3 * size)
    decoder.feed(data)  # the bytes past the commit point are not taken in
    assert [e.payload for e in decoder.next_batch(2)] == [b"a", b"b"]
    assert [e.payload for e in decoder.next_batch(2)] == [b"c"]
    assert decoder.next_batch() == [] and decoder.done
    decoder.limit = START + len(data)
    decoder.feed(data[3 * size :])
    assert [e.payload for e in decoder.next_batch()] == [b"d"]


@pytest.mark.skipif(shutil.which("cargo") is None, reason="no Rust toolchain: the pure-Python package is what installs")
def test_the_accelerator_is_built_wherever_a_rust_toolchain_is_present() -> None:
    # The extension is optional at install time; without this check a failed build would leave
    # every native test skipped and the package silently slower.
    assert importlib.util.find_spec("openbinlog._native") is not None
