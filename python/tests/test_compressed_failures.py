"""Spec R-43: what a reader returns from a compressed segment whose archive fails partway.

An archive that fails anywhere before the segment's end (its commit point) is ``bad_header`` with the segment's log
number and offset 0, and none of the segment's records is returned before it: the reader unpacks the segment to its
end before it returns its first record. What a reader returns must never depend on the sizes it unpacks or reads in,
so each archive is read with several piece sizes and must give the same answer with each.
"""

from __future__ import annotations

import gzip
import io
import shutil
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from logtools import write_log
from strategies import archive_failures, unpacking_sizes

from openbinlog import BinlogError, Reader, compressed
from openbinlog.compressed import CompressedSegment, UnpackError

# Segment 1: about 3.2 MB of compressible records, so that a failure can lie in its third mebibyte while the archive
# stays small; segment 2 holds one record.
PAYLOADS = [bytes([n % 251]) * 4000 for n in range(800)]
Outcome = tuple[list[tuple[int, int]], tuple[str, int | None, int | None] | None]


@pytest.fixture(scope="module")
def plain_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("r43") / "log"
    write_log(directory, [*PAYLOADS, None, b"last"])
    return directory


def gzip_failing_at(plain: bytes, at: int) -> bytes:
    """A gzip archive of ``plain[:at]`` followed by a deflate block of the reserved type, which every inflater
    refuses (RFC 1951 3.2.3): the stream fails after it has given ``at`` bytes."""
    packer = zlib.compressobj(6, zlib.DEFLATED, 31)
    return packer.compress(plain[:at]) + packer.flush(zlib.Z_SYNC_FLUSH) + b"\x07" + bytes(64)


def zstd_failing_at(plain: bytes, at: int) -> bytes:
    """A Zstandard archive of a frame of ``plain[:at]`` and a frame whose first block has the reserved block type,
    which every decoder refuses (RFC 8878 3.1.1.2.2): the stream fails after it has given ``at`` bytes."""
    frame = b"\x28\xb5\x2f\xfd" + b"\x00\x58"  # no content size, no checksum; a window of 2 MiB
    block = ((64 << 3) | (3 << 1) | 1).to_bytes(3, "little") + bytes(64)
    return zstandard.ZstdCompressor(level=3).compress(plain[:at]) + frame + block


def damaged_archive(plain: bytes, codec: str, how: str, thousandths: int) -> bytes:
    packed = gzip.compress(plain, mtime=0) if codec == "gz" else zstandard.ZstdCompressor(level=3).compress(plain)
    if how == "cut":
        return packed[: len(packed) * thousandths // 1000]
    if how == "flip":
        at = len(packed) * thousandths // 1000
        return packed[:at] + bytes([packed[at] ^ 0x5A]) + packed[at + 1 :]
    at = max(len(plain) * thousandths // 1000, 1)
    return gzip_failing_at(plain, at) if codec == "gz" else zstd_failing_at(plain, at)


def read(directory: Path, *, tolerant: bool) -> Outcome:
    """The records (log number, index) a reference Reader returns, and the error that ends its walk."""
    records: list[tuple[int, int]] = []
    with Reader(directory, tolerant=tolerant) as reader:
        try:
            records.extend((entry.log, entry.index) for entry in reader)
        except BinlogError as error:
            return records, (error.error_class, error.log, error.offset)
    return records, None


@contextmanager
def pieces_of(size: int) -> Iterator[None]:
    """Unpacking in pieces of ``size`` bytes, reading the archive in at most 8 KiB at a time."""
    with mock.patch.object(compressed, "_PIECE", size), mock.patch.object(compressed, "_INPUT", min(size, 1 << 13)):
        yield


@pytest.mark.spec("R-43")
@given(archive_failures, unpacking_sizes)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_an_archive_failing_partway_returns_none_of_its_segments_records_whatever_the_piece_size(
    plain_log: Path, tmp_path_factory: pytest.TempPathFactory, failure: tuple[str, str, int], sizes: list[int]
) -> None:
    """Segment 1's archive cut, changed or failing at any point: the answer is the same for every piece size, and
    where it is the archive's failure (``bad_header`` at offset 0 of log 1), no record of segment 1 precedes it.
    A changed byte that decodes to wrong bytes without failing the stream is record damage, where the bytes are."""
    codec, how, thousandths = failure
    directory = tmp_path_factory.mktemp("damaged") / "log"
    shutil.copytree(plain_log, directory)
    plain = (directory / "00000001.dat").read_bytes()
    (directory / f"00000001.dat.{codec}").write_bytes(damaged_archive(plain, codec, how, thousandths))
    (directory / "00000001.dat").unlink()
    for tolerant in (False, True):
        outcomes = []
        for size in sizes:
            with pieces_of(size):
                outcomes.append(read(directory, tolerant=tolerant))
        assert all(outcome == outcomes[0] for outcome in outcomes), (tolerant, sizes, [o[1] for o in outcomes])
        records, ended = outcomes[0]
        if ended == ("bad_header", 1, 0):
            assert records == []
        if how != "flip":  # a cut or a refused block always fails the stream, before the segment's end
            assert (records, ended) == ([], ("bad_header", 1, 0))


@pytest.mark.spec("R-43")
@pytest.mark.parametrize("codec", ["gz", "zst"])
def test_a_read_beyond_the_header_unpacks_and_checks_the_segment_to_its_end_first(plain_log: Path, codec: str) -> None:
    """The header (and the byte after it, which the blank check reads) unpacks alone; the first byte beyond it
    unpacks the segment to its end, so that an archive failing in its third mebibyte fails that first read."""
    plain = (plain_log / "00000001.dat").read_bytes()
    at = 5 * len(plain) // 6
    packed = gzip_failing_at(plain, at) if codec == "gz" else zstd_failing_at(plain, at)
    with CompressedSegment(_stream(packed), codec, path="archive") as segment:
        assert segment.read_at(0, 257) == plain[:257]
        with pytest.raises(UnpackError) as failed:
            segment.read_at(256, 40)
        assert failed.value.offset == 0
    whole = gzip.compress(plain, mtime=0) if codec == "gz" else zstandard.ZstdCompressor().compress(plain)
    with CompressedSegment(_stream(whole), codec, path="archive") as segment:
        assert segment.read_at(256, 40) == plain[256:296]
        assert segment._unpacked == len(plain)  # the whole segment, checked before the first record was read


@pytest.mark.spec("R-43")
def test_a_segment_beyond_the_cap_is_refused_before_any_of_its_records(plain_log: Path) -> None:
    """``max_unpacked`` below the segment's end: refused (``bad_header`` at 0) at the first read beyond the header,
    having unpacked nothing beyond the header, instead of after the records below the cap."""
    plain = (plain_log / "00000001.dat").read_bytes()
    with CompressedSegment(_stream(gzip.compress(plain)), "gz", path="archive", max_unpacked=1 << 20) as segment:
        assert segment.read_at(0, 256) == plain[:256]
        with pytest.raises(UnpackError, match="more than 1048576 bytes") as refused:
            segment.read_at(256, 40)
        assert refused.value.offset == 0 and segment._unpacked <= 1 << 20


def _stream(data: bytes) -> io.BufferedReader:
    return io.BufferedReader(io.BytesIO(data))  # type: ignore[arg-type]
