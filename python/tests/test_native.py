"""The compiled walks of ``openbinlog._native`` against their pure-Python references.

Each test feeds the same bytes, valid or damaged in every way a record can
be, to the native code and to the reference (``RecordDecoder._verified_run_pure``,
``openbinlog_spark.walk._walk_lengths``) and requires the same entries, the
same error and the same final state. The native module is tested whenever it
is built, whatever ``OPENBINLOG_PURE_PYTHON`` says.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import subprocess
import sys
import tracemalloc
import types
from collections.abc import Callable, Iterator
from unittest import mock

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import RECORD_DAMAGES, commit_slot_pairs, log_records, log_tails, record_damages, timestamps
from test_records import reforge

import openbinlog
from openbinlog import NO_ASQN, BinlogError, Entry, RecordDecoder, TailStop, _accel, encode_record
from openbinlog._format import RECORD_HEADER, RECORD_HEADER_SIZE, SLOT_OFFSETS
from openbinlog._records import BATCH_ENTRIES
from openbinlog._segment import CommitState, active_commit, encode_slot
from openbinlog.errors import BadHeaderError
from openbinlog.walk import BytesSource, tail_walk
from openbinlog_spark.walk import RecordRun, _native_run, _pure_run, _walk_lengths

try:
    from openbinlog import _native
except ImportError:  # built by the install only where a Rust toolchain is found
    _native = None

pytestmark = pytest.mark.skipif(_native is None, reason="openbinlog._native is not built (no Rust toolchain)")

START = 256
FIRST = 7
LOG = 3
ALL_FRAMES_BUT_DATA = [0, *range(2, 128)]


class PureDecoder(RecordDecoder):
    _native = None


class NativeDecoder(RecordDecoder):
    _native = None if _native is None else _native.Verifier(Entry)


def damaged_record(
    kind: str, value: int, n: int, payload: bytes, asqn: int, previous_asqn: int, timestamp: int
) -> bytes:
    """Record ``n`` of a log with the damage ``kind``, ``value`` choosing where and how."""
    index = FIRST + n
    record = bytearray(encode_record(index, payload, asqn=asqn, timestamp_us=timestamp))
    flip = value % 255 + 1
    if kind == "header_byte" or (kind == "payload_byte" and not payload):
        record[value % RECORD_HEADER_SIZE] ^= flip
    elif kind == "length_byte":
        record[value % 4] ^= flip
    elif kind == "payload_byte":
        record[RECORD_HEADER_SIZE + value % len(payload)] ^= flip
    elif kind == "wrong_index":
        return reforge(bytes(record), index=(index + 1 + value) % 2**64)
    elif kind == "stale_asqn":
        stale = previous_asqn if previous_asqn >= 0 else -2 - value
        return encode_record(index, payload, asqn=stale, timestamp_us=timestamp)
    elif kind in ("unknown_frame", "skippable_frame"):
        frame = ALL_FRAMES_BUT_DATA[value % 127] if kind == "unknown_frame" else 128 + value % 128
        return encode_record(index, payload, asqn=asqn, timestamp_us=timestamp, frame=frame)
    elif kind in ("flags", "reserved"):
        return reforge(bytes(record), **{kind: value % (255 if kind == "flags" else 65535) + 1})
    elif kind == "short_length":
        return reforge(bytes(record), length=value % 36)
    elif kind == "long_length":
        length = len(record) - 4
        return reforge(bytes(record), length=length + 1 + value % (2**32 - 1 - length))
    elif kind == "truncated":
        return bytes(record[: value % len(record)])
    return bytes(record)


def render(
    records: list[tuple[bytes, int | None, int]], damage: tuple[str, int, int] | None, tail: bytes
) -> tuple[bytes, list[int]]:
    """The bytes of a log drawn from the strategies, and where each of its records starts."""
    damaged_at = -1 if damage is None or not records else damage[1] % len(records)
    parts: list[bytes] = []
    starts: list[int] = []
    at = 0
    last_asqn = NO_ASQN
    for n, (payload, step, timestamp) in enumerate(records):
        asqn = NO_ASQN if step is None else max(last_asqn, 0) + step
        if n == damaged_at:
            assert damage is not None
            record = damaged_record(damage[0], damage[2], n, payload, asqn, last_asqn, timestamp)
        else:
            record = encode_record(FIRST + n, payload, asqn=asqn, timestamp_us=timestamp)
        starts.append(at)
        parts.append(record)
        at += len(record)
        last_asqn = max(last_asqn, asqn)
        if damage is not None and damage[0] == "truncated" and n == damaged_at:
            break
    return b"".join(parts) + tail, starts


def one_by_one(decoder: RecordDecoder, most: int) -> Iterator[Entry]:
    del most
    return iter(decoder)


def in_batches(decoder: RecordDecoder, most: int) -> Iterator[Entry]:
    while batch := decoder.next_batch(most):
        assert len(batch) <= most
        yield from batch


Take = Callable[[RecordDecoder, int], Iterator[Entry]]
TAKE = pytest.mark.parametrize("take", [one_by_one, in_batches], ids=["one by one", "in batches"])
Outcome = tuple[
    list[Entry], tuple[type[BinlogError], int | None, int | None, str] | None, tuple[int, int, int, TailStop | None]
]


def decode(
    kind: type[RecordDecoder], data: bytes, *, limit: int | None, pieces: int | None, take: Take, most: int
) -> Outcome:
    """Every entry, the error (if any) and the final state of a decoder fed ``data`` in ``pieces``-byte slices."""
    decoder = kind(log=LOG, offset=START, next_index=FIRST, limit=limit)
    entries: list[Entry] = []
    error = None
    step = pieces or max(len(data), 1)
    try:
        for at in range(0, len(data), step):
            decoder.feed(data[at : at + step])
            entries.extend(take(decoder, most))
        decoder.end_of_input()
        entries.extend(take(decoder, most))
    except BinlogError as caught:
        error = (type(caught), caught.offset, caught.index, str(caught))
    return entries, error, (decoder.offset, decoder.next_index, decoder.last_asqn, decoder.stop)


def assert_same_entries(native: list[Entry], pure: list[Entry]) -> None:
    assert native == pure
    assert all(type(entry) is Entry for entry in native)
    assert [hash(entry) for entry in native] == [hash(entry) for entry in pure]


@TAKE
@pytest.mark.parametrize("pieces", [None, 1, 7], ids=["whole", "byte by byte", "7 bytes at a time"])
@pytest.mark.parametrize("committed", [True, False], ids=["committed", "tail"])
@given(log_records, record_damages, log_tails, st.sampled_from([1, 2, 5, BATCH_ENTRIES]))
def test_native_decoder_returns_what_the_pure_one_returns(
    take: Take,
    pieces: int | None,
    committed: bool,
    records: list[tuple[bytes, int | None, int]],
    damage: tuple[str, int, int] | None,
    tail: bytes,
    most: int,
) -> None:
    data, starts = render(records, damage, tail)
    # Committed: the commit point is where the tail starts, and the tail is fed as trailing bytes.
    limit = START + len(data) - len(tail) if committed else None
    native = decode(NativeDecoder, data, limit=limit, pieces=pieces, take=take, most=most)
    pure = decode(PureDecoder, data, limit=limit, pieces=pieces, take=take, most=most)
    assert_same_entries(native[0], pure[0])
    assert native[1:] == pure[1:]
    if damage is None and committed:
        assert len(native[0]) == len(starts) and native[1] is None


@pytest.mark.parametrize("committed", [True, False], ids=["committed", "tail"])
@pytest.mark.parametrize("kind", RECORD_DAMAGES)
def test_every_damage_stops_both_decoders_alike(kind: str, committed: bool) -> None:
    records: list[tuple[bytes, int | None, int]] = [(bytes([n]) * 50 * n, n, n) for n in range(4)]
    for value in (0, 1, 37, 1000, 2**32 - 1):
        data, _ = render(records, (kind, 2, value), b"")
        limit = START + len(data) if committed else None
        native = decode(NativeDecoder, data, limit=limit, pieces=None, take=in_batches, most=BATCH_ENTRIES)
        pure = decode(PureDecoder, data, limit=limit, pieces=None, take=in_batches, most=BATCH_ENTRIES)
        assert_same_entries(native[0], pure[0])
        assert native[1:] == pure[1:]
        # Each damage stops the walk at the damaged record (a skippable frame, valid, at the next one: it holds
        # the place of a data record, whose index is then missing).
        assert [entry.index for entry in native[0]] == [FIRST, FIRST + 1]


@given(log_records, record_damages, log_tails, st.data())
def test_native_run_matches_the_pure_run_from_any_state(
    records: list[tuple[bytes, int | None, int]],
    damage: tuple[str, int, int] | None,
    tail: bytes,
    data: st.DataObject,
) -> None:
    buf, starts = render(records, damage, tail)
    record = data.draw(st.integers(min_value=0, max_value=len(starts)))
    pos = data.draw(
        st.one_of(st.just(starts[record] if record < len(starts) else len(buf)), st.integers(0, len(buf) + 3))
    )
    limit = data.draw(st.one_of(st.none(), st.integers(START + pos - 100, START + len(buf) + 100)))
    next_index = data.draw(st.one_of(st.just(FIRST + record), st.integers(-1, 2**64 + 1)))
    last_asqn = data.draw(st.one_of(st.just(NO_ASQN), st.integers(-(2**64), 2**64)))
    most = data.draw(st.integers(min_value=0, max_value=12))

    def run(kind: type[RecordDecoder]) -> tuple[list[Entry], tuple[int, int, int, int]]:
        decoder = kind(log=LOG, offset=START + pos, next_index=next_index, last_asqn=last_asqn, limit=limit)
        decoder._buf, decoder._pos = buf, pos
        entries = decoder._verified_run(most)
        return entries, (decoder._pos, decoder.offset, decoder.next_index, decoder.last_asqn)

    native, pure = run(NativeDecoder), run(PureDecoder)
    assert_same_entries(native[0], pure[0])
    assert native[1] == pure[1]


@given(st.binary(max_size=400), st.data())
def test_native_run_never_fails_on_arbitrary_bytes(buf: bytes, data: st.DataObject) -> None:
    assert _native is not None
    pos = data.draw(st.integers(0, len(buf) + 2))
    end = data.draw(st.integers(-(2**63), 2**63 - 1))
    verifier = _native.Verifier(Entry)
    entries, at, offset, *_ = verifier.verified_run(buf, pos, end, 5, START, LOG, FIRST, NO_ASQN)
    assert entries == [] or at > pos
    assert offset - START == at - pos


@given(log_records, record_damages, log_tails, st.binary(max_size=60), st.data())
def test_native_length_walk_matches_the_pure_one(
    records: list[tuple[bytes, int | None, int]],
    damage: tuple[str, int, int] | None,
    tail: bytes,
    prefix: bytes,
    data: st.DataObject,
) -> None:
    assert _native is not None
    # The walk trusts nothing: a prefix of garbage is walked like records.
    buf = prefix + render(records, damage, tail)[0]
    end = data.draw(st.integers(min_value=0, max_value=len(buf)))
    starts, header_crcs, payload_crcs, stop = _native.walk_lengths(buf, end)
    pure = _walk_lengths(buf, end)
    assert np.frombuffer(starts, dtype=np.int64).tolist() == pure[0]
    assert np.frombuffer(header_crcs, dtype=np.uint32).tolist() == pure[1]
    assert np.frombuffer(payload_crcs, dtype=np.uint32).tolist() == pure[2]
    assert stop == pure[3]


def run_fields(run: RecordRun | None) -> tuple[object, ...] | None:
    """Everything a verified run holds and says, as plain values."""
    if run is None:
        return None
    return (
        run.log,
        run.base,
        run.starts.tolist(),
        run.headers.tobytes(),
        run.payloads.to_pylist(),
        run.end,
        run.next_index,
        run.last_asqn(NO_ASQN),
    )


@given(log_records, record_damages, log_tails, st.binary(max_size=60), st.data())
def test_native_arrow_run_matches_the_pure_one(
    records: list[tuple[bytes, int | None, int]],
    damage: tuple[str, int, int] | None,
    tail: bytes,
    prefix: bytes,
    data: st.DataObject,
) -> None:
    # Spark's runs: the compiled pass (one walk, one copy of the payloads) against the length walk and numpy
    # checks it replaces, from any state, on valid and damaged bytes alike, a prefix of garbage included.
    before = data.draw(st.sampled_from([b"", prefix]))
    rendered, starts = render(records, damage, tail)
    buf = before + rendered
    next_index = data.draw(st.one_of(st.just(FIRST), st.integers(0, 2**64 - 1), st.integers(2**64 - 3, 2**64)))
    last_asqn = data.draw(st.one_of(st.just(NO_ASQN), st.integers(-(2**63), 2**63 - 1)))
    # A stop on a record's start, next to one, anywhere, or at the end.
    boundary = st.sampled_from([START + len(before) + at + step for at in starts or [0] for step in (-1, 0, 1)])
    stop = data.draw(st.one_of(st.just(START + len(buf)), boundary, st.integers(START - 2, START + len(buf) + 2)))
    state = dict(base=START, log=LOG, next_index=next_index, last_asqn=last_asqn, stop=stop)
    native = _native_run(buf, **state)
    with mock.patch.object(_accel, "walk_lengths", None):  # the reference walk in Python too
        pure = _pure_run(buf, **state)
    assert run_fields(native) == run_fields(pure)
    if native is not None:
        # Laid out as Arrow expects it: a binary array whose offsets start at 0.
        native.payloads.validate(full=True)
        assert native.payloads.offset == 0 and native.payloads.null_count == 0


@given(st.binary(max_size=400), st.data())
def test_native_arrow_run_never_fails_on_arbitrary_bytes(buf: bytes, data: st.DataObject) -> None:
    assert _native is not None
    next_index = data.draw(st.integers(-(2**70), 2**70))
    last_asqn = data.draw(st.integers(-(2**63), 2**63 - 1))
    stop = data.draw(st.integers(0, 2**64 - 1))
    # Buffers of any size: one too small for the run is refused with ValueError, never written past.
    payloads = bytearray(data.draw(st.integers(0, len(buf) + 8)))
    meta = bytearray(data.draw(st.integers(0, len(buf) // RECORD_HEADER_SIZE * 52 + 12)))
    sizes = len(payloads), len(meta)
    found: tuple[int, int] | ValueError | None
    try:
        found = _native.arrow_run(buf, next_index, last_asqn, stop, payloads, meta)
    except ValueError as refused:
        found = refused
    assert (len(payloads), len(meta)) == sizes
    if isinstance(found, ValueError):
        assert "cannot hold" in str(found)
    elif found is not None:
        count, size = found
        assert 0 < count <= len(buf) // RECORD_HEADER_SIZE and size <= len(buf)
        offsets = np.frombuffer(meta, dtype=np.int32, count=count + 1, offset=(8 + RECORD_HEADER_SIZE) * count)
        assert offsets[0] == 0 and offsets[-1] == size and bool(np.all(np.diff(offsets) >= 0))


def test_native_arrow_run_refuses_buffers_it_cannot_write() -> None:
    assert _native is not None
    buf = encode_record(FIRST, b"payload")
    with pytest.raises(ValueError, match="writable"):
        _native.arrow_run(buf, FIRST, NO_ASQN, len(buf), bytes(len(buf)), bytearray(64))
    with pytest.raises(ValueError, match="writable"):
        _native.arrow_run(buf, FIRST, NO_ASQN, len(buf), bytearray(len(buf)), memoryview(bytearray(128))[::2])
    assert _native.arrow_run(buf, FIRST, NO_ASQN, len(buf), bytearray(len(buf)), bytearray(56)) == (1, 7)


def test_length_walk_refuses_an_end_beyond_the_buffer() -> None:
    assert _native is not None
    with pytest.raises(ValueError, match="beyond"):
        _native.walk_lengths(encode_record(1, b"x"), 42)


def _tail_end_in_python(segment: bytes, commit: CommitState, zero_probe: bool) -> tuple[int, int, int, int] | None:
    """Where ``_shared_commit._written_end`` ends the tail of ``segment``, with its tail check: None when
    something lies beyond the whole records (the batch goes to recovery)."""

    def clear(at: int) -> bool:  # _tail_clear: nothing beyond, or zeros where a preallocated segment was checked
        probe = segment[at : at + RECORD_HEADER_SIZE]
        return len(segment) <= at or (zero_probe and probe == bytes(len(probe)))

    if clear(commit.commit_offset):
        return commit.commit_offset, commit.next_index, commit.last_asqn, commit.last_timestamp_us
    scan = tail_walk(BytesSource(segment), log=LOG, commit=commit)
    if not clear(scan.end):
        return None
    return scan.end, scan.next_index, scan.last_asqn, scan.last_timestamp_us


@given(log_records, record_damages, log_tails, st.booleans(), timestamps)
def test_the_compiled_shared_batch_ends_the_tail_where_the_tail_walk_and_the_tail_check_do(
    records: list[tuple[bytes, int | None, int]],
    damage: tuple[str, int, int] | None,
    tail: bytes,
    zero_probe: bool,
    timestamp: int,
) -> None:
    """The walk of ``_native.shared_write`` beyond the commit point (format 4.3.2, then protocols 7.1) either
    declines, leaving the batch to the Python code, or ends where the reference does, in the same state; it
    declines only where the tail holds a skippable record, which the reference walks over."""
    assert _native is not None
    data, _ = render(records, damage, tail)
    commit = CommitState(1, START, FIRST, NO_ASQN, timestamp, 0)
    native = _native.tail_end(data, START, FIRST, NO_ASQN, timestamp, zero_probe)
    reference = _tail_end_in_python(bytes(START) + data, commit, zero_probe)
    if native is not None or damage is None or damage[0] != "skippable_frame":
        assert native == reference


def test_native_entries_are_frozen_entries() -> None:
    assert _native is not None
    data = encode_record(FIRST, b"payload", asqn=5, timestamp_us=-3)
    (entry,), *_ = _native.Verifier(Entry).verified_run(data, 0, len(data), 1, START, LOG, FIRST, NO_ASQN)
    assert entry == Entry(LOG, START, FIRST, b"payload", 5, -3, True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.index = 1  # type: ignore[misc]
    assert dataclasses.replace(entry, index=1).index == 1


def test_verifier_refuses_a_class_without_entry_slots() -> None:
    assert _native is not None

    @dataclasses.dataclass(frozen=True, slots=True)
    class Other:
        log: int

    with pytest.raises(TypeError, match="slots"):
        _native.Verifier(Other)


@pytest.mark.parametrize("base", [dict, set, Exception])
def test_verifier_refuses_a_class_with_a_builtin_base(base: type) -> None:
    # Entries are allocated without tp_new: the state of a built-in base would be left unset,
    # and the interpreter would crash on first use or deallocation.
    assert _native is not None
    derived = type("Derived", (base,), {"__slots__": Entry.__slots__})
    with pytest.raises(TypeError, match="object alone"):
        _native.Verifier(derived)


def test_verifier_refuses_a_class_whose_init_does_more_than_fill_slots() -> None:
    assert _native is not None

    @dataclasses.dataclass(frozen=True, slots=True)
    class Checked:
        log: int
        offset: int
        index: int
        payload: bytes
        asqn: int
        timestamp_us: int
        checked: bool

        def __post_init__(self) -> None:
            raise AssertionError("never skipped")

    with pytest.raises(TypeError, match="__post_init__"):
        _native.Verifier(Checked)


@pytest.mark.spec("R-10")
def test_hostile_4gib_length_allocates_nothing_natively() -> None:
    assert _native is not None
    hostile = reforge(encode_record(FIRST, b"x"), length=0xFFFFFFFF) + bytes(100)
    verifier = _native.Verifier(Entry)
    tracemalloc.start()
    try:
        run = verifier.verified_run(hostile, 0, len(hostile), BATCH_ENTRIES, START, LOG, FIRST, NO_ASQN)
        walk = _native.walk_lengths(hostile, len(hostile))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert run[0] == [] and run[1] == 0
    assert walk[0] == b"" and walk[3] == 0
    assert peak < 1 << 16


def test_header_layout_check_reads_the_format_declaration() -> None:
    assert _native is not None
    fields = (40 + 5, 1, 0, 0, 2**64 - 1, -(2**63), 2**63 - 1, 0xFFFF_FFFF, 1)
    assert _native.RECORD_HEADER_SIZE == RECORD_HEADER_SIZE
    assert _native.read_header(RECORD_HEADER.pack(*fields)) == fields


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("read_header", lambda data: RECORD_HEADER.unpack_from(data)[::-1]),
        ("MIN_RECORD_LENGTH", 35),
        ("MASK_DELTA", 0),
    ],
)
def test_native_module_that_disagrees_with_the_format_is_not_used(
    monkeypatch: pytest.MonkeyPatch, name: str, value: object
) -> None:
    assert _native is not None
    swapped = types.ModuleType("openbinlog._native")
    vars(swapped).update(vars(_native))
    setattr(swapped, name, value)
    monkeypatch.delenv(_accel.PURE_PYTHON_VARIABLE, raising=False)
    monkeypatch.setitem(sys.modules, "openbinlog._native", swapped)
    monkeypatch.setattr(openbinlog, "_native", swapped)
    try:
        with pytest.warns(RuntimeWarning, match="layout or constants"):
            reloaded = importlib.reload(_accel)
        assert reloaded.walk_lengths is None and reloaded.Verifier is None
        assert reloaded.DECODER.startswith("pure")
    finally:
        monkeypatch.undo()
        importlib.reload(_accel)


@pytest.mark.parametrize(("setting", "decoder"), [("1", "pure"), ("0", "native")])
def test_pure_python_variable_chooses_the_decoder(setting: str, decoder: str) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from openbinlog import _accel, RecordDecoder; print(_accel.DECODER, RecordDecoder._native is None)",
        ],
        env={**os.environ, _accel.PURE_PYTHON_VARIABLE: setting},
        capture_output=True,
        text=True,
        check=True,
    )
    chosen, pure = result.stdout.split()[0], result.stdout.split()[-1]
    assert chosen == decoder and pure == str(decoder == "pure")


def _header_with(slots: tuple[object, object]) -> bytes:
    """A 256-byte header whose commit slots are ``slots`` (strategies.commit_slot_pairs); nothing else is read."""
    header = bytearray(START)
    for written, slot in enumerate(slots):
        if slot is None:
            continue
        place = written
        if isinstance(slot, bytes):
            raw = slot
        else:
            fields, swapped = slot  # type: ignore[misc]
            _, raw = encode_slot(CommitState(*fields))
            place = 1 - written if swapped else written
        header[SLOT_OFFSETS[place] : SLOT_OFFSETS[place] + len(raw)] = raw
    return bytes(header)


@given(commit_slot_pairs)
def test_the_compiled_shared_batch_takes_the_active_slot_the_reference_takes(slots: tuple[object, object]) -> None:
    """``shared.rs`` chooses the active slot itself (spec 3.2): it must take the slot ``active_commit`` takes,
    and decline (None) exactly where the reference finds the header bad."""
    assert _native is not None
    header = _header_with(slots)
    try:
        commit = active_commit(header, base_index=FIRST, log=LOG)
        expected: tuple[int, ...] | None = dataclasses.astuple(commit)
    except BadHeaderError:
        expected = None
    assert _native.active_commit(header, FIRST, LOG) == expected
