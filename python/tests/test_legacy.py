"""Legacy jPOS-EE version 1 logs, built from the byte facts of the brief, read through the same Reader."""

from __future__ import annotations

from pathlib import Path

import pytest
from logtools import assert_read_only, legacy_segment, read_entries

from openbinlog import ChainBrokenError, InvalidRefError, LengthOutOfRangeError, Reader, Ref, verify


@pytest.fixture
def legacy_log(tmp_path: Path) -> Path:
    directory = tmp_path / "legacy"
    directory.mkdir()
    (directory / "00000001.dat").write_bytes(
        legacy_segment([b"record-0", b"record-1", b"record-2"], log=1, closed=True, next_log=2)
    )
    (directory / "00000002.dat").write_bytes(legacy_segment([], log=2, closed=True, next_log=3))  # empty
    (directory / "00000003.dat").write_bytes(legacy_segment([b"x" * 300, b""], log=3, closed=False))  # open
    return directory


def test_brief_example_bytes() -> None:
    data = legacy_segment([b"record-0", b"record-1", b"record-2"], log=1, closed=True, next_log=2)
    assert data[:24].hex() == "000000fc00010001000000000000011c0000000100000002"
    assert data[248:260].hex() == "00000008" + b"record-0".hex()
    empty = legacy_segment([], log=2, closed=False)
    assert len(empty) == 256
    assert int.from_bytes(empty[8:16], "big") == 248


@pytest.mark.spec("R-34", "R-35", "R-36", "R-37")
def test_legacy_log_dumps_exactly_its_records_in_order(legacy_log: Path) -> None:
    entries = assert_read_only(legacy_log, lambda: read_entries(legacy_log))
    assert [(e.log, e.offset, e.index, e.payload) for e in entries] == [
        (1, 248, 1, b"record-0"),
        (1, 260, 2, b"record-1"),
        (1, 272, 3, b"record-2"),
        (3, 248, 4, b"x" * 300),
        (3, 552, 5, b""),
    ]
    assert not any(e.checked for e in entries)
    assert all(e.timestamp is None and e.asqn == -1 for e in entries)
    assert verify(legacy_log).ok


@pytest.mark.spec("R-36")
def test_open_legacy_segment_is_not_read_beyond_its_tail(legacy_log: Path) -> None:
    path = legacy_log / "00000003.dat"
    path.write_bytes(path.read_bytes() + (5).to_bytes(4, "big") + b"torn")  # written after the tail update
    assert [e.index for e in read_entries(legacy_log)] == [1, 2, 3, 4, 5]
    report = verify(legacy_log)
    assert report.ok  # beyond the tail: torn, never damage
    assert report.segments[-1].tail is not None
    assert report.segments[-1].tail.extra_bytes == 8


@pytest.mark.spec("R-36")
def test_legacy_follower_sees_records_appended_later(legacy_log: Path) -> None:
    with Reader(legacy_log) as reader:
        assert len(list(reader)) == 5
        path = legacy_log / "00000003.dat"
        path.write_bytes(legacy_segment([b"x" * 300, b"", b"late"], log=3, closed=False))
        assert reader.has_next(1)
        assert next(reader).payload == b"late"


@pytest.mark.spec("R-38")
def test_legacy_refs_resume_and_are_checked(legacy_log: Path) -> None:
    entries = read_entries(legacy_log)
    after = [e.payload for e in read_entries(legacy_log, after=entries[1].ref)]
    assert after == [b"record-2", b"x" * 300, b""]
    with pytest.raises(InvalidRefError):
        Reader(legacy_log, start=Ref(1, 100, 1))  # inside the header
    with pytest.raises(InvalidRefError):
        Reader(legacy_log, start=Ref(1, 400, 1))  # beyond the tail


@pytest.mark.spec("R-37", "R-38")
def test_legacy_ref_index_prevails_over_the_count_after_retention(legacy_log: Path) -> None:
    """B.6: a ref taken before retention removed segment 1 numbers the records after it from its own index."""
    last = read_entries(legacy_log)[3]  # (3, 248, 4)
    (legacy_log / "00000001.dat").unlink()
    (legacy_log / "00000002.dat").unlink()
    assert [e.index for e in read_entries(legacy_log)] == [1, 2]  # from 1 at the lowest segment present
    assert [(e.offset, e.index) for e in read_entries(legacy_log, after=last.ref)] == [(552, 5)]


@pytest.mark.spec("R-36", "R-41")
def test_legacy_segment_closed_by_its_next_log_number_alone(tmp_path: Path) -> None:
    directory = tmp_path / "next"
    directory.mkdir()
    (directory / "00000001.dat").write_bytes(legacy_segment([b"a", b"b"], log=1, closed=False, next_log=2))
    with pytest.raises(ChainBrokenError) as caught:
        read_entries(directory)
    assert (caught.value.log, caught.value.offset, caught.value.index) == (2, None, 3)
    (directory / "00000002.dat").write_bytes(legacy_segment([b"c"], log=2, closed=False))
    assert [(e.log, e.index) for e in read_entries(directory)] == [(1, 1), (1, 2), (2, 3)]


def test_legacy_length_beyond_the_tail_is_reported(tmp_path: Path) -> None:
    data = bytearray(legacy_segment([b"abc", b"defg"], log=1, closed=False))
    data[255] = 200  # the second length now runs past the tail
    directory = tmp_path / "bad"
    directory.mkdir()
    (directory / "00000001.dat").write_bytes(bytes(data))
    with pytest.raises(LengthOutOfRangeError) as caught:
        read_entries(directory)
    assert (caught.value.offset, caught.value.index) == (255, 2)
    report = verify(directory)
    assert [d.error_class for d in report.damage] == ["length_out_of_range"]


def test_legacy_segment_larger_than_a_read_window(tmp_path: Path) -> None:
    directory = tmp_path / "big"
    directory.mkdir()
    records = [bytes([n % 251]) * 1000 for n in range(2000)]  # 2 MB: records straddle the 1 MiB windows
    (directory / "00000001.dat").write_bytes(legacy_segment(records, log=1, closed=False))
    assert [e.payload for e in read_entries(directory)] == records
