"""The gzip reader of compressed segments (``openbinlog.compressed.unpacking``) against Python's gzip module.

It must give the bytes ``gzip.decompress`` gives, fail where it fails with the
same exception class (which the compressed segment reports as ``bad_header``
at offset 0, R-43), and read no more of an archive than the bytes asked for
need (R-43).
"""

from __future__ import annotations

import gzip
import io
import random
import tracemalloc
import zlib
from collections.abc import Callable, Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import gzip_damages, gzip_members, gzip_read_sizes

from openbinlog.compressed import _UNDECODABLE, unpacking

Member = tuple[bytes, int, bytes | None, bytes | None, bytes | None, bool, int]


def member(
    payload: bytes, level: int, extra: bytes | None, name: bytes | None, comment: bytes | None, hcrc: bool
) -> bytes:
    """One gzip member (RFC 1952 2.3) of ``payload``, with the optional header fields given."""
    flags = (2 if hcrc else 0) | (4 if extra is not None else 0) | (8 if name is not None else 0)
    flags |= 16 if comment is not None else 0
    header = b"\x1f\x8b\x08" + bytes([flags]) + bytes(4) + b"\x00\xff"
    if extra is not None:
        header += len(extra).to_bytes(2, "little") + extra
    header += b"".join(field + b"\0" for field in (name, comment) if field is not None)
    if hcrc:
        header += (zlib.crc32(header) & 0xFFFF).to_bytes(2, "little")
    packer = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS)
    trailer = zlib.crc32(payload).to_bytes(4, "little") + (len(payload) & 0xFFFFFFFF).to_bytes(4, "little")
    return header + packer.compress(payload) + packer.flush() + trailer


def archive(members: Sequence[Member]) -> bytes:
    return b"".join(member(*fields[:6]) + bytes(fields[6]) for fields in members)


def outcome(unpack: Callable[[bytes], bytes], data: bytes) -> bytes | type[Exception]:
    """What ``unpack`` makes of ``data``: its bytes, or the class of what it raised."""
    try:
        return unpack(data)
    except Exception as exc:  # the class is the outcome
        return type(exc)


def unpacked(data: bytes) -> bytes:
    return unpacking(io.BytesIO(data), "gz").read()


@given(gzip_members, gzip_read_sizes)
def test_unpacking_any_gzip_archive_gives_the_bytes_gzip_decompress_gives(
    members: list[Member], sizes: list[int]
) -> None:
    """Multi-member archives, zero bytes after members, header fields, reads of any size, readinto included."""
    data = archive(members)
    stream = unpacking(io.BytesIO(data), "gz")
    pieces = []
    for turn, size in enumerate(sizes):
        if turn % 2:
            buffer = bytearray(size)
            pieces.append(bytes(buffer[: stream.readinto(buffer)]))  # type: ignore[attr-defined]
        else:
            pieces.append(stream.read(size))
        assert len(pieces[-1]) == size or not stream.read()  # a short read only at the end
    pieces.append(stream.read())
    assert b"".join(pieces) == gzip.decompress(data)
    assert stream.read(1) == b""


@given(gzip_members, gzip_damages)
def test_a_damaged_gzip_archive_unpacks_or_fails_as_gzip_decompress_does(
    members: list[Member], damage: tuple[str, int, int]
) -> None:
    kind, where, value = damage
    data = bytearray(archive(members))
    if kind == "flip" and data:
        data[where % len(data)] ^= value
    elif kind == "cut":
        del data[where % (len(data) + 1) :]
    elif kind == "append":
        data.append(value)
    expected = outcome(gzip.decompress, bytes(data))
    assert outcome(unpacked, bytes(data)) == expected
    if isinstance(expected, type):
        assert issubclass(expected, _UNDECODABLE)  # bad_header at offset 0, never io_error


@pytest.mark.spec("R-43")
def test_a_gzip_archive_cut_at_any_offset_fails_as_gzip_decompress_does() -> None:
    """Cuts in every field of a header, in deflate data, in a trailer, among zero bytes and in a second member."""
    members: list[Member] = [
        (b"first member " * 20, 6, b"xy", b"name", b"comment", True, 3),
        (b"second", 0, None, b"n", None, False, 2),
    ]
    data = archive(members)
    whole = [len(member(*members[0][:6])) + zeros for zeros in range(4)] + [len(data) - 2, len(data) - 1, len(data)]
    for cut in range(len(data) + 1):
        expected = outcome(gzip.decompress, data[:cut])
        assert outcome(unpacked, data[:cut]) == expected, cut
        assert isinstance(expected, bytes) == (cut in (0, *whole)), cut
        assert isinstance(expected, bytes) or issubclass(expected, _UNDECODABLE), cut


@given(gzip_members.filter(bool), st.integers(min_value=0, max_value=2**16), st.integers(0, 7), st.integers(1, 255))
def test_a_wrong_crc_or_size_in_a_gzip_trailer_is_an_error(
    members: list[Member], which: int, byte: int, flip: int
) -> None:
    which %= len(members)
    at = len(archive(members[: which + 1])) - members[which][6] - 8 + byte
    data = bytearray(archive(members))
    data[at] ^= flip
    with pytest.raises(gzip.BadGzipFile, match=r"CRC check failed|Incorrect length"):
        unpacked(bytes(data))


@pytest.mark.spec("R-43")
@pytest.mark.parametrize("size", [1, 100, 8191, 20_000])
def test_reading_the_bytes_before_damage_in_a_gzip_archive_never_meets_it(size: int) -> None:
    """No read ahead of the bytes asked for (GzipFile's buffer unpacks 8 KiB ahead)."""
    payload = random.Random(size).randbytes(size)
    # Stored blocks: the payload, 2000 zeros (whose block header zlib reads once the payload is out), and a last
    # block whose NLEN no longer complements its LEN (RFC 1951 3.2.4).
    stored = zlib.compressobj(0, zlib.DEFLATED, -zlib.MAX_WBITS)
    deflate = stored.compress(payload) + stored.flush(zlib.Z_FULL_FLUSH)
    deflate += stored.compress(bytes(2000)) + stored.flush(zlib.Z_FULL_FLUSH)
    last = bytearray(stored.compress(bytes(1000)) + stored.flush())
    last[3] ^= 0xFF
    data = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + deflate + last + bytes(8)
    stream = unpacking(io.BytesIO(data), "gz")
    assert stream.read(size) == payload
    with pytest.raises(zlib.error):
        stream.read()


class CountingReader(io.BytesIO):
    """An archive that counts the bytes read of it."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.count = 0

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        self.count += len(data)
        return data


@pytest.mark.spec("R-43")
@pytest.mark.parametrize("payload", [bytes(1 << 24), random.Random(7).randbytes(1 << 22)], ids=["zeros", "random"])
def test_reading_the_first_bytes_of_a_gzip_archive_reads_a_bounded_part_of_it(payload: bytes) -> None:
    """Not the archive whole: what the bytes asked for need, and at most one read of the archive beyond."""
    raw = CountingReader(gzip.compress(payload, 9))
    stream = unpacking(raw, "gz")
    assert stream.read(100) == payload[:100]
    assert raw.count <= 10 + io.DEFAULT_BUFFER_SIZE
    assert stream.read(50_000) == payload[100:50_100]
    assert raw.count <= 10 + 50_100 + 2 * io.DEFAULT_BUFFER_SIZE


@pytest.mark.spec("R-43")
def test_reading_the_first_bytes_of_a_gzip_bomb_unpacks_no_more_than_them() -> None:
    packer = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(1 << 20)
    bomb = b"".join(packer.compress(zeros) for _ in range(256)) + packer.flush()  # 256 MiB of zeros
    stream = unpacking(io.BytesIO(bomb), "gz")
    tracemalloc.start()
    try:
        assert stream.read(4096) == bytes(4096)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20
