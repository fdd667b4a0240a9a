"""The reading procedure's wrong answers, each reproduced and pinned (the walk of spec section 10).

Every test builds the damage it is named after and asserts the one outcome
the spec allows: the records returned and the damage reported, or the typed
error with its location.
"""

from __future__ import annotations

import gzip
import os
import struct
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
from logtools import legacy_segment, segment

from openbinlog import (
    AmbiguousSplitError,
    AsqnNotIncreasingError,
    BadHeaderError,
    BadSignatureError,
    BinlogIOError,
    ChainBrokenError,
    IndexDiscontinuityError,
    InvalidRefError,
    Reader,
    Ref,
    TruncatedError,
    UnsupportedVersionError,
    Writer,
    encode_record,
    read_split,
    verify,
)
from openbinlog._crc import masked_crc32c
from openbinlog._format import HEADER_SIZE, RECORD_HEADER_SIZE


def _write(directory: Path, payloads: list[bytes]) -> list[int]:
    """Append ``payloads`` in one segment; the offset of each record."""
    offsets = []
    with Writer(directory) as writer:
        for payload in payloads:
            offsets.append(writer.append(payload).offset)
    return offsets


def _flip(path: Path, offset: int) -> None:
    with path.open("r+b") as file:
        file.seek(offset)
        byte = file.read(1)
        file.seek(offset)
        file.write(bytes([byte[0] ^ 0x40]))


def _tolerant(directory: Path) -> tuple[list[int], list[tuple[str, int | None, int | None]]]:
    with Reader(directory, tolerant=True) as reader:
        indexes = [entry.index for entry in reader]
        return indexes, [(d.error_class, d.index, d.next_index) for d in reader.damage]


# -- resynchronisation ----------------------------------------------------------


@pytest.mark.spec("R-25", "R-26")
def test_tolerant_reader_resumes_at_a_valid_record_larger_than_32_mib_after_damage(log_dir: Path) -> None:
    # Damage 28 MiB before a 40 MiB record: no search window of 64 MiB that
    # advances by 32 MiB holds that record whole.
    offsets = _write(log_dir, [b"first", b"d" * (28 << 20), b"L" * (40 << 20), b"last"])
    _flip(segment(log_dir), offsets[1] + RECORD_HEADER_SIZE + 5)  # the damaged record's payload
    indexes, damage = _tolerant(log_dir)
    assert indexes == [1, 3, 4]
    assert damage == [("checksum_mismatch", 2, 3)]


@pytest.mark.spec("R-25", "R-26")
def test_a_forged_record_with_a_far_future_index_in_damaged_bytes_is_not_a_resync_point(log_dir: Path) -> None:
    forged = encode_record(1000, b"forged", timestamp_us=1)
    offsets = _write(log_dir, [b"one", b"junk" + forged, b"three", b"four", b"five"])
    _flip(segment(log_dir), offsets[1] + 30)  # record 2's header: its checksum fails
    indexes, damage = _tolerant(log_dir)
    # Index 1000 is beyond what the segment can hold (its slot's next index is 6).
    assert indexes == [1, 3, 4, 5]
    assert damage == [("checksum_mismatch", 2, 3)]
    report = verify(log_dir)
    assert [(d.error_class, d.offset, d.next_index) for d in report.damage] == [("checksum_mismatch", offsets[1], 3)]


# -- splits -----------------------------------------------------------------------


@pytest.mark.spec("R-27", "R-40")
def test_a_split_boundary_inside_a_payload_holding_one_record_with_its_containers_index_is_reported(
    log_dir: Path,
) -> None:
    embedded = encode_record(2, b"inner", timestamp_us=1)
    offsets = _write(log_dir, [b"one", b"x" * 200 + embedded, b"three", b"four"])
    fake = offsets[2] - len(embedded)
    cut = offsets[1] + RECORD_HEADER_SIZE + 100  # inside record 2's payload, before the embedded record
    end = os.path.getsize(segment(log_dir))
    first: list[int] = []
    with pytest.raises(AmbiguousSplitError) as raised:
        first.extend(entry.index for entry in read_split(log_dir, 1, HEADER_SIZE, cut))
    assert first == [1, 2]
    assert (raised.value.log, raised.value.offset, raised.value.index) == (1, fake, 2)
    # The split after the cut starts at the false boundary: without the error, index 2 came twice.
    assert [entry.index for entry in read_split(log_dir, 1, cut, end)] == [2, 3, 4]
    # A cut that is not inside such a payload reads every record exactly once.
    assert [e.index for e in read_split(log_dir, 1, HEADER_SIZE, offsets[2] + 1)] == [1, 2, 3]
    assert [e.index for e in read_split(log_dir, 1, offsets[2] + 1, end)] == [4]


# -- blank segments ---------------------------------------------------------------


@pytest.mark.spec("R-6", "R-7")
def test_a_last_segment_whose_first_256_bytes_are_zero_before_records_is_unsupported_version(log_dir: Path) -> None:
    _write(log_dir, [b"a", b"b"])
    path = segment(log_dir)
    path.write_bytes(bytes(HEADER_SIZE) + path.read_bytes()[HEADER_SIZE:])
    with pytest.raises(UnsupportedVersionError) as raised, Reader(log_dir) as reader:
        list(reader)
    assert (raised.value.log, raised.value.offset) == (1, 4)


@pytest.mark.spec("R-6", "R-7")
def test_a_last_segment_shorter_than_a_header_holding_bytes_is_truncated_not_blank(log_dir: Path) -> None:
    _write(log_dir, [b"a"])
    with Writer(log_dir) as writer:
        writer.cutover()
    path = segment(log_dir, 2)
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(TruncatedError) as raised, Reader(log_dir) as reader:
        list(reader)
    assert (raised.value.log, raised.value.offset) == (2, 0)
    path.write_bytes(bytes(100))  # all zero: blank, the log ends with segment 1
    with Reader(log_dir) as reader:
        assert [entry.index for entry in reader] == [1]


# -- segments removed or replaced while a reader lists them --------------------------


def _before_open(monkeypatch: pytest.MonkeyPatch, target: Path, action: Callable[[], None], *, nth: int = 1) -> None:
    """Run ``action`` just before the ``nth`` open of ``target``: a maintenance command that acts
    between a reader's lookup of a segment and its open."""
    real = os.open
    seen: list[bool] = []

    def opener(path: str | os.PathLike[str], flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if os.fspath(path) == os.fspath(target):
            seen.append(True)
            if len(seen) == nth:
                action()
        return real(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", opener)


def _three_segments(log_dir: Path) -> None:
    with Writer(log_dir) as writer:
        for number in range(6):
            writer.append(b"record %d" % number)
            if number % 2:
                writer.cutover()


@pytest.mark.spec("R-20")
def test_a_reader_that_looks_up_a_segment_being_compressed_reads_the_compressed_copy(
    log_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _three_segments(log_dir)
    plain = segment(log_dir, 1)

    def compress() -> None:
        Path(f"{plain}.gz").write_bytes(gzip.compress(plain.read_bytes()))
        plain.unlink()

    _before_open(monkeypatch, plain, compress)
    with Reader(log_dir) as reader:
        assert [entry.index for entry in reader] == [1, 2, 3, 4, 5, 6]


@pytest.mark.spec("R-21")
def test_a_reader_whose_first_segment_is_removed_by_retention_starts_at_the_new_lowest(
    log_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _three_segments(log_dir)
    plain = segment(log_dir, 1)
    _before_open(monkeypatch, plain, plain.unlink)
    with Reader(log_dir) as reader:
        assert [entry.index for entry in reader] == [3, 4, 5, 6]


# -- legacy version 1, as jPOS-EE's own reader reads it ----------------------------------


def _legacy(directory: Path, *segments: bytes) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for number, data in enumerate(segments, start=1):
        segment(directory, number).write_bytes(data)


def _read(directory: Path) -> list[bytes]:
    with Reader(directory) as reader:
        return [entry.payload for entry in reader]


@pytest.mark.spec("R-34")
def test_a_version_1_last_segment_cut_below_its_header_is_truncated_not_blank(log_dir: Path) -> None:
    last = legacy_segment([b"c", b"d"], log=2, closed=False)
    _legacy(log_dir, legacy_segment([b"a", b"b"], log=1, closed=True, next_log=2), last[:200])
    with pytest.raises(TruncatedError) as raised:
        _read(log_dir)
    assert (raised.value.log, raised.value.offset) == (2, 0)


@pytest.mark.spec("R-36", "R-41")
def test_a_closed_version_1_segment_whose_successor_is_missing_is_chain_broken(log_dir: Path) -> None:
    _legacy(log_dir, legacy_segment([b"a", b"b"], log=1, closed=True, next_log=2))
    returned: list[bytes] = []
    with pytest.raises(ChainBrokenError) as raised, Reader(log_dir) as reader:
        returned.extend(entry.payload for entry in reader)
    assert returned == [b"a", b"b"]
    assert (raised.value.log, raised.value.index) == (2, 3)


@pytest.mark.spec("R-34")
def test_a_version_1_segment_whose_file_magic_is_altered_is_bad_signature(log_dir: Path) -> None:
    data = bytearray(legacy_segment([b"a"], log=1, closed=False))
    data[3] = 0xFD
    _legacy(log_dir, bytes(data))
    with pytest.raises(BadSignatureError) as raised:
        _read(log_dir)
    assert (raised.value.log, raised.value.offset) == (1, 0)


@pytest.mark.spec("R-36")
def test_a_follower_stays_on_an_open_version_1_segment_whose_successor_exists(log_dir: Path) -> None:
    # A jPOS-EE writer that died inside its cutover: the successor exists, the old segment is still open.
    _legacy(log_dir, legacy_segment([b"a", b"b"], log=1, closed=False), legacy_segment([], log=2, closed=False))
    with Reader(log_dir) as reader:
        assert [entry.payload for entry in reader] == [b"a", b"b"]
        # The restarted jPOS-EE writer keeps appending to segment 1.
        segment(log_dir, 1).write_bytes(legacy_segment([b"a", b"b", b"c"], log=1, closed=False))
        late = reader.next(timeout=2.0)
        assert late is not None
        assert (late.log, late.index, late.payload) == (1, 3, b"c")


@pytest.mark.spec("R-36", "R-41")
def test_an_open_version_1_segment_followed_by_records_is_chain_broken(log_dir: Path) -> None:
    _legacy(log_dir, legacy_segment([b"a"], log=1, closed=False), legacy_segment([b"b"], log=2, closed=False))
    returned: list[bytes] = []
    with pytest.raises(ChainBrokenError) as raised, Reader(log_dir) as reader:
        returned.extend(entry.payload for entry in reader)
    assert returned == [b"a"]
    assert (raised.value.log, raised.value.offset, raised.value.index) == (2, 0, 2)


# -- found by a hostile review of the walk --------------------------------------------------


def _publish(path: Path, *, commit_offset: int, next_index: int) -> None:
    """Write the next commit slot generation by hand: what a writer that lost its last publication left."""
    data = bytearray(path.read_bytes())
    generation, *_rest, timestamp, _next_log, _crc = max(
        (struct.unpack(">QQQqqII", bytes(data[at : at + 48])) for at in (96, 144)), key=lambda slot: slot[0]
    )
    raw = struct.pack(">QQQqqI", generation + 1, commit_offset, next_index, -1, timestamp, 0)
    at = 96 if (generation + 1) % 2 == 0 else 144
    data[at : at + 48] = raw + masked_crc32c(raw).to_bytes(4, "big")
    path.write_bytes(bytes(data))


@pytest.mark.spec("R-16", "R-27", "R-30")
def test_a_split_and_a_ref_through_a_finished_segment_ending_beyond_its_commit_point_terminate(log_dir: Path) -> None:
    # Segment 1 open while segment 2 exists, its slot behind its last record: S lies beyond C (spec 8.4).
    with Writer(log_dir) as writer:
        first = writer.append(b"one")
        writer.append(b"two")
        third = writer.append(b"three")
        writer.cutover()
        writer.append(b"four")
    _publish(segment(log_dir), commit_offset=third.offset, next_index=3)
    assert [(e.log, e.index) for e in read_split(log_dir, 1, HEADER_SIZE, 1 << 20)] == [(1, 1), (1, 2), (1, 3)]
    with Reader(log_dir, after=first) as reader:
        assert [(e.log, e.index) for e in reader] == [(1, 2), (1, 3), (2, 4)]


@pytest.mark.spec("R-29")
@pytest.mark.parametrize("offset", [2**63, 2**64 - 2])
def test_a_ref_at_an_offset_beyond_any_file_is_invalid_ref_under_a_forged_commit_point(
    log_dir: Path, offset: int
) -> None:
    _write(log_dir, [b"x" * 10, b"y" * 10])
    _publish(segment(log_dir), commit_offset=2**64 - 1, next_index=3)
    with pytest.raises(InvalidRefError):
        Reader(log_dir, after=Ref(1, offset, 1))


def _raw_segment(directory: Path, records: list[bytes], *, next_index: int) -> None:
    """Segment 1 holding ``records`` as they are (what a correct writer never writes), committed to their end."""
    with Writer(directory) as writer:
        writer.append(b"placeholder")
    path = segment(directory)
    body = b"".join(records)
    path.write_bytes(path.read_bytes()[:HEADER_SIZE] + body)
    _publish(path, commit_offset=HEADER_SIZE + len(body), next_index=next_index)


@pytest.mark.spec("R-27")
@pytest.mark.parametrize(
    ("records", "error", "index"),
    [
        pytest.param([(1, -1), (2, -1), (2, -1), (3, -1)], IndexDiscontinuityError, 3, id="resurrected record"),
        pytest.param([(1, -1), (2, -1), (4, -1), (5, -1)], IndexDiscontinuityError, 3, id="lost record"),
        pytest.param([(1, 10), (2, 5), (3, -1)], AsqnNotIncreasingError, 2, id="asqn going back"),
    ],
)
def test_a_split_ending_at_a_record_that_breaks_the_walk_reports_it(
    log_dir: Path, records: list[tuple[int, int]], error: type[Exception], index: int
) -> None:
    encoded = [encode_record(n, b"r%d" % n, asqn=asqn, timestamp_us=1) for n, asqn in records]
    _raw_segment(log_dir, encoded, next_index=records[-1][0] + 1)
    boundary = HEADER_SIZE + sum(len(record) for record in encoded[: index - 1])
    returned: list[int] = []
    with pytest.raises(error) as raised:
        returned.extend(entry.index for entry in read_split(log_dir, 1, HEADER_SIZE, boundary))
    assert returned == [n for n, _ in records[: index - 1]]
    assert raised.value.offset == boundary
    with pytest.raises(error):  # the sequential reader reports the same damage
        list(Reader(log_dir))


@pytest.mark.spec("R-20")
def test_a_listed_segment_that_cannot_be_opened_is_io_error_not_an_empty_log(log_dir: Path) -> None:
    _three_segments(log_dir)
    first = segment(log_dir, 1)
    first.rename(log_dir / "moved-away")
    first.symlink_to(log_dir / "nowhere")  # listed, but every open fails with ENOENT
    with pytest.raises(BinlogIOError) as raised, Reader(log_dir) as reader:
        list(reader)
    assert raised.value.log == 1


@pytest.mark.spec("R-10")
def test_a_forged_length_under_a_commit_point_beyond_the_file_allocates_nothing_like_it(log_dir: Path) -> None:
    _raw_segment(log_dir, [encode_record(1, b"x" * 20, timestamp_us=1)], next_index=2)
    path = segment(log_dir)
    data = bytearray(path.read_bytes())
    forged = bytearray(encode_record(1, b"", timestamp_us=1))
    forged[:4] = (2**31 - 1).to_bytes(4, "big")
    forged[36:40] = masked_crc32c(bytes(forged[:36])).to_bytes(4, "big")  # a valid header checksum
    path.write_bytes(bytes(data[:HEADER_SIZE]) + bytes(forged) + bytes(20))
    _publish(path, commit_offset=2**40, next_index=2)
    tracemalloc.start()
    try:
        with pytest.raises(TruncatedError), Reader(log_dir) as reader:
            list(reader)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20


@pytest.mark.spec("R-27", "R-39")
def test_a_split_that_ends_at_its_boundary_leaves_the_check_at_the_commit_point_to_the_next(log_dir: Path) -> None:
    offsets = _write(log_dir, [b"r%d" % n for n in range(300)])
    _publish(segment(log_dir), commit_offset=os.path.getsize(segment(log_dir)), next_index=400)  # R-39 fails at C
    # A stop whose boundary starts a later batch of the decoder: the walk reads on past it, the split does not.
    assert [e.index for e in read_split(log_dir, 1, HEADER_SIZE, offsets[256])] == list(range(1, 257))
    with pytest.raises(BadHeaderError):
        list(read_split(log_dir, 1, offsets[256], 1 << 20))


@pytest.mark.spec("R-39")
def test_a_split_of_an_empty_segment_makes_the_check_at_its_commit_point(log_dir: Path) -> None:
    with Writer(log_dir):
        pass
    _publish(segment(log_dir), commit_offset=HEADER_SIZE, next_index=3)
    with pytest.raises(BadHeaderError):
        list(read_split(log_dir, 1, HEADER_SIZE, 1 << 20))


@pytest.mark.spec("R-28")
@pytest.mark.parametrize("text", ["\u0661:256:1", "\uff11:256:1"])
def test_a_ref_written_with_digits_other_than_ascii_is_invalid(text: str) -> None:
    with pytest.raises(InvalidRefError):
        Ref.parse(text)


@pytest.mark.spec("R-20")
def test_a_fifo_named_as_a_segment_is_io_error_not_a_hang(log_dir: Path) -> None:
    log_dir.mkdir()
    os.mkfifo(segment(log_dir))
    with pytest.raises(BinlogIOError), Reader(log_dir) as reader:
        list(reader)


@pytest.mark.spec("R-17")
def test_a_successor_that_vanishes_between_the_chain_decision_and_its_open_is_decided_again(
    log_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _three_segments(log_dir)
    second = segment(log_dir, 2)
    # The first open of segment 2 reads its header for segment 1's end; the second is the move to it.
    _before_open(monkeypatch, second, second.unlink, nth=2)
    returned: list[int] = []
    with pytest.raises(ChainBrokenError) as raised, Reader(log_dir) as reader:
        returned.extend(entry.index for entry in reader)
    assert returned == [1, 2]
    assert raised.value.log == 2
