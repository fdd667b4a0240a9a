"""Compressed sealed segments (``NNNNNNNN.dat.gz``, ``NNNNNNNN.dat.zst``, spec 2.6), read as the segment they hold.

``CompressedSegment`` is the one unpacking procedure of the package and of
its adapters: the reference reader and the Spark source both read a
compressed segment through it, as a ``walk.Source``.

What unpacking costs is bounded by what the segment's header states, never by
what an archive claims:

- bytes are unpacked into an anonymous temporary file (random access for
  the walk, no memory);
- never beyond the segment's end as its header states it: a compressed
  segment is sealed (spec 2.6), so its end is its commit point (a version 1
  segment's, its last element position); a header that fails its checks
  ends the unpacking right after it (the walk reports that header and reads
  nothing else). A small archive of gigabytes of zeros (a preallocated
  segment, or a decompression bomb) therefore costs the committed bytes, as
  the plain file would;
- ``max_unpacked``, when given, refuses a segment whose end lies beyond that
  many bytes (``cap_name`` says where the caller's users set it).

Reads of the header (the first ``HEADER_SIZE + 1`` bytes, what the blank
check and the header checks read) unpack no more than that. The first read
beyond it unpacks the segment to its end before it returns (R-43): an archive
that fails anywhere before the segment's end therefore fails before the walk
has seen any record of it, whatever sizes the walk reads in, and the walk
returns none of the segment's records.

A stream that cannot be decoded, or a segment beyond ``max_unpacked``, is
``bad_header`` (``UnpackError``) at offset 0 (spec R-43); a failed read of the
archive or write of the temporary file (a full disk, a file size limit) is
``io_error``.
"""

from __future__ import annotations

import gzip
import io
import tempfile
import zlib
from types import ModuleType
from typing import IO, TYPE_CHECKING, cast

from ._format import HEADER_SIZE
from ._fs import MAX_FILE_OFFSET, pread
from ._optional import require
from ._segment import LegacyHeaderInfo, parse_header
from .errors import BadHeaderError, BinlogError, BinlogIOError

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

__all__ = ["CODECS", "CompressedSegment", "UnpackError", "unpack_failure", "unpacking"]

CODECS = ("gz", "zst")  # the file name suffixes, without their dot
_PIECE = 1 << 20
# What the decoders raise for bytes that are not a valid stream (Zstandard's error is added where that codec is
# used: an optional dependency); gzip.BadGzipFile is an OSError, so it is told apart from a failed read before
# OSError is.
_UNDECODABLE: tuple[type[Exception], ...] = (gzip.BadGzipFile, EOFError, zlib.error)


def _zstandard() -> ModuleType:
    return require("zstandard", "zstd", "reading and writing .zst segments")


class UnpackError(BadHeaderError):
    """A compressed segment that is not a valid gzip or Zstandard stream, or that would unpack beyond
    ``max_unpacked``: ``bad_header``, since nothing of the segment can be verified beyond that point."""


def unpacking(raw: IO[bytes], codec: str) -> IO[bytes]:
    """The unpacked bytes of ``raw``, an archive in ``codec`` (one of ``CODECS``), as a stream.

    A Zstandard archive may hold several frames (RFC 8878): their contents follow one another.
    """
    if codec == "gz":
        # Not GzipFile: its buffer reads ahead of what is asked (8 KiB), which would unpack beyond the segment's end
        # and meet damage there.
        return cast(IO[bytes], _GzipMembers(raw))
    if codec == "zst":
        return cast(IO[bytes], _zstandard().ZstdDecompressor().stream_reader(raw, read_across_frames=True))
    raise ValueError(f"codec must be one of {CODECS}, not {codec!r}")


_GZIP_MAGIC = b"\x1f\x8b"
_FHCRC, _FEXTRA, _FNAME, _FCOMMENT = 2, 4, 8, 16  # a member's header flags (RFC 1952 2.3.1)
_DEFLATE = 8  # the one compression method of gzip
_INPUT = io.DEFAULT_BUFFER_SIZE  # archive bytes read at a time
_CUT = "Compressed file ended before the end-of-stream marker was reached"


class _GzipMembers(io.RawIOBase):
    """The unpacked bytes of the gzip archive ``raw`` (RFC 1952), member after member, as ``gzip.GzipFile`` reads
    them: an empty archive holds no bytes; zero bytes after a member are skipped; any other byte after a member must
    start one; the header CRC is skipped, the trailer's CRC-32 and size are checked once the member's deflate stream
    has ended. A cut archive raises EOFError, other damage ``gzip.BadGzipFile`` or ``zlib.error``.

    Unlike GzipFile, a read unpacks no more than it returns, and reads at most ``_INPUT`` bytes of the archive
    beyond those it uses (R-43). ``raw`` stays open: its owner closes it. Members are raw deflate streams behind
    headers parsed here: zlib's own gzip parsing (wbits 31) checks the header CRC and refuses reserved flags, which
    GzipFile accepts.
    """

    def __init__(self, raw: IO[bytes]) -> None:
        super().__init__()
        self._raw = raw
        self._pending = b""  # bytes of the archive read and not used yet: at most _INPUT
        self._inflate = zlib.decompressobj(wbits=-zlib.MAX_WBITS)
        self._in_member = False
        self._crc = 0  # of the member's bytes unpacked so far
        self._size = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        with memoryview(buffer) as view, view.cast("B") as out:
            data = self.read(len(out))
            out[: len(data)] = data
        return len(data)

    def read(self, size: int = -1) -> bytes:
        """``size`` unpacked bytes, fewer only where the archive ends; all the rest when ``size`` is negative."""
        if size < 0:
            return self.readall()
        pieces = []
        while size > 0 and (piece := self._unpack(size)):
            pieces.append(piece)
            size -= len(piece)
        return b"".join(pieces)

    def _unpack(self, size: int) -> bytes:
        """At most ``size`` unpacked bytes, none only at the end of the archive."""
        while True:
            if self._in_member and self._inflate.eof:
                self._trailer()
                self._in_member = False
            if not self._in_member:
                if not self._header():
                    return b""
                self._inflate = zlib.decompressobj(wbits=-zlib.MAX_WBITS)
                self._crc = self._size = 0
                self._in_member = True
            data = self._input(_INPUT)
            # Empty input still gives what the decompressor holds back when the last read filled ``size``.
            piece = self._inflate.decompress(data, size)
            self._pending = (self._inflate.unconsumed_tail or self._inflate.unused_data) + self._pending
            if piece:
                self._crc = zlib.crc32(piece, self._crc)
                self._size += len(piece)
                return piece
            if not data:
                raise EOFError(_CUT)

    def _header(self) -> bool:
        """Read a member's header: False where the archive ends instead."""
        magic = self._read(2)
        if not magic:
            return False
        if magic != _GZIP_MAGIC:
            raise gzip.BadGzipFile(f"Not a gzipped file ({magic!r})")
        method, flags = self._exact(8)[:2]  # then the time, extra flags and operating system
        if method != _DEFLATE:
            raise gzip.BadGzipFile("Unknown compression method")
        if flags & _FEXTRA:
            self._skip(int.from_bytes(self._exact(2), "little"))
        for field in (_FNAME, _FCOMMENT):
            if flags & field:
                self._skip_string()
        if flags & _FHCRC:
            self._exact(2)
        return True

    def _trailer(self) -> None:
        """Check the member's trailer against what it unpacked, then skip the zero bytes after it."""
        trailer = self._exact(8)
        crc, size = int.from_bytes(trailer[:4], "little"), int.from_bytes(trailer[4:], "little")
        if crc != self._crc:
            raise gzip.BadGzipFile(f"CRC check failed {hex(crc)} != {hex(self._crc)}")
        if size != self._size & 0xFFFFFFFF:
            raise gzip.BadGzipFile("Incorrect length of data produced")
        while chunk := self._input(_INPUT):
            if rest := chunk.lstrip(b"\0"):
                self._pending = rest + self._pending
                return

    def _input(self, size: int) -> bytes:
        """Up to ``size`` bytes of the archive, those read already first; none at its end."""
        if not self._pending:
            return self._raw.read(size)
        data, self._pending = self._pending[:size], self._pending[size:]
        return data

    def _read(self, size: int) -> bytes:
        """``size`` bytes of the archive, fewer only where it ends."""
        data = b""
        while len(data) < size and (piece := self._input(size - len(data))):
            data += piece
        return data

    def _exact(self, size: int) -> bytes:
        data = self._read(size)
        if len(data) < size:
            raise EOFError(_CUT)
        return data

    def _skip(self, size: int) -> None:
        while size > 0:
            size -= len(self._exact(min(size, _INPUT)))

    def _skip_string(self) -> None:
        """Skip a zero-terminated string; at the end of the archive, the string ends too (as GzipFile has it)."""
        while chunk := self._input(_INPUT):
            end = chunk.find(0)
            if end >= 0:
                self._pending = chunk[end + 1 :] + self._pending
                return


_ZSTD_MAGIC = 0xFD2FB528
_SKIPPABLE_MAGIC = 0x184D2A50  # the last four bits are free (RFC 8878 3.1.2)


def _whole_frames(raw: IO[bytes]) -> bool:
    """Whether the Zstandard archive ``raw`` ends where a frame ends (RFC 8878 3.1).

    python-zstandard's stream reader ends, without an error, at a cut inside a frame, which R-43 makes
    ``bad_header``: where it ends, the frames are walked by their headers and block headers, without decoding.
    """
    raw.seek(0)
    while head := raw.read(4):
        if len(head) < 4:
            return False
        magic = int.from_bytes(head, "little")
        if magic & ~0xF == _SKIPPABLE_MAGIC:
            size = raw.read(4)
            if len(size) < 4 or not _skip(raw, int.from_bytes(size, "little")):
                return False
            continue
        descriptor = raw.read(1)
        if magic != _ZSTD_MAGIC or not descriptor:
            return False
        single_segment, checksum = descriptor[0] >> 5 & 1, descriptor[0] >> 2 & 1
        window = 0 if single_segment else 1
        dictionary = (0, 1, 2, 4)[descriptor[0] & 3]
        content_size = (single_segment, 2, 4, 8)[descriptor[0] >> 6]
        if not _skip(raw, window + dictionary + content_size):
            return False
        last = False
        while not last:
            block = raw.read(3)
            if len(block) < 3:
                return False
            header = int.from_bytes(block, "little")
            last = bool(header & 1)
            if not _skip(raw, 1 if header >> 1 & 3 == 1 else header >> 3):  # an RLE block holds one byte
                return False
        if checksum and not _skip(raw, 4):
            return False
    return True


def _skip(raw: IO[bytes], size: int) -> bool:
    """Move ``size`` bytes on in ``raw``; False when it ends before."""
    if size == 0:
        return True
    raw.seek(size - 1, io.SEEK_CUR)
    return len(raw.read(1)) == 1


def _segment_end(head: bytes) -> int:
    """How far a walk reads a compressed segment whose first bytes are ``head``.

    A sealed segment ends at its commit point; a version 1 segment at its last element position. A header
    that fails its checks is all the walk reads. Never less than one byte beyond the header, which tells a
    blank file (at most 256 bytes, spec 3.5) from a longer one.
    """
    try:
        header = parse_header(head)
    except BinlogError:
        end = 0
    else:
        end = header.tail if isinstance(header, LegacyHeaderInfo) else header.commit.commit_offset
    return max(end, HEADER_SIZE + 1)


class CompressedSegment:
    """The unpacked bytes of a compressed segment: random reads (a ``walk.Source``), the header unpacked alone, the
    rest up to the segment's end at the first read beyond the header (R-43).

    ``raw`` is the open archive, which the segment owns and closes; ``path`` names it in errors. Without
    ``keep``, the bytes are unpacked in the same pieces and counted, and only the header is kept: ``size``
    unpacks the segment as a walk would, and reads give no bytes beyond the header (``unpack_failure``).
    """

    def __init__(
        self,
        raw: IO[bytes],
        codec: str,
        *,
        path: str,
        max_unpacked: int | None = None,
        cap_name: str = "max_unpacked",
        keep: bool = True,
    ) -> None:
        self.path = path
        self._keeps = keep
        self.max_unpacked = max_unpacked
        self.cap_name = cap_name
        self._raw = raw
        self._stream: IO[bytes] | None = None
        try:
            self._stream = unpacking(raw, codec)
        except BaseException:
            raw.close()
            raise
        self._codec = codec
        self._undecodable = _UNDECODABLE + ((_zstandard().ZstdError,) if codec == "zst" else ())
        self._spill: IO[bytes] | None = None
        self._head = b""  # without ``keep``: the header, all that is kept
        self._unpacked = 0  # bytes in the spill (without ``keep``: bytes unpacked)
        self._end: int | None = None  # where unpacking stops: known once the header is unpacked
        self._stated_end = 0  # the end the header states, to be held against max_unpacked
        self._exhausted = False  # the stream gave its last byte
        self._failed: BinlogError | None = None

    def read_at(self, offset: int, size: int) -> bytes:
        """Up to ``size`` bytes from ``offset``; fewer where the segment ends. A read beyond the header unpacks the
        segment to its end first (R-43)."""
        if size <= 0 or offset < 0:
            return b""
        self._unpack_to(min(offset + size, MAX_FILE_OFFSET))
        return self._spilled(offset, size)

    def size(self) -> int:
        """The number of bytes a walk can read: the segment up to its end, or less where the archive ends."""
        self._unpack_to(MAX_FILE_OFFSET)
        return self._unpacked

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        self._raw.close()
        if self._spill is not None:
            self._spill.close()
            self._spill = None

    def __enter__(self) -> CompressedSegment:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _limit(self) -> int:
        """How far to unpack: the header first, then up to the end it states (and one byte beyond the cap)."""
        if self._end is None:
            if self._unpacked < HEADER_SIZE and not self._exhausted:
                return HEADER_SIZE
            self._stated_end = end = _segment_end(self._spilled(0, HEADER_SIZE))
            self._end = end if self.max_unpacked is None else min(end, self.max_unpacked + 1)
        return self._end

    def _spilled(self, offset: int, size: int) -> bytes:
        """Bytes unpacked already: never more than the spill holds, whatever ``size`` says (R-10)."""
        if not self._keeps:
            return self._head[offset : offset + size] if offset >= 0 else b""
        size = min(size, self._unpacked - offset)
        if size <= 0 or self._spill is None:
            return b""
        try:
            return pread(self._spill.fileno(), size, offset)
        except OSError as exc:
            raise BinlogIOError(
                f"read of the unpacked segment failed: {exc.strerror or exc}", path=self.path, offset=offset
            ) from exc

    def _unpack_to(self, target: int) -> None:
        """Unpack until ``target`` bytes are in the spill, the stream ends, or the limit is reached.

        A target beyond the header (``HEADER_SIZE + 1`` bytes, as far as the blank check reads) is the segment's
        end: the whole archive up to it is checked before any byte beyond the header is returned (R-43), so where
        it fails never depends on the sizes reads ask for.
        """
        if self._failed is not None:
            raise self._failed  # the stream and the spill are out of step: nothing more can be read
        if self._stream is None:
            raise BinlogIOError("read of a closed compressed segment", path=self.path)
        try:
            if target > HEADER_SIZE + 1:
                self._unpack(HEADER_SIZE)
                self._limit()  # the end the header states
                if self.max_unpacked is not None and self._stated_end > self.max_unpacked:
                    raise self._capped()  # decided by the header, before anything is unpacked for nothing
                target = MAX_FILE_OFFSET
            self._unpack(target)
            if self.max_unpacked is not None and min(target, self._unpacked) > self.max_unpacked:
                raise self._capped()
        except BinlogError as exc:
            self._failed = exc
            raise

    def _unpack(self, target: int) -> None:
        """Unpack, a piece at a time, until ``target`` bytes are in the spill, the stream ends or the limit."""
        while not self._exhausted and self._unpacked < min(target, self._limit()):
            piece = self._next_piece(min(_PIECE, self._limit() - self._unpacked))
            if not piece:
                self._exhausted = True
                break
            self._keep(piece)

    def _capped(self) -> UnpackError:
        return UnpackError(
            f"unpacks to more than {self.max_unpacked} bytes, the most this reader unpacks ({self.cap_name})",
            path=self.path,
            offset=0,
        )

    def _next_piece(self, size: int) -> bytes:
        assert self._stream is not None
        try:
            piece = self._stream.read(size)
            if not piece and self._codec == "zst" and not _whole_frames(self._raw):
                raise UnpackError(
                    "compressed segment cannot be unpacked: the archive ends inside a Zstandard frame",
                    path=self.path,
                    offset=0,
                )
            return piece
        except self._undecodable as exc:
            raise UnpackError(f"compressed segment cannot be unpacked: {exc}", path=self.path, offset=0) from exc
        except OSError as exc:
            raise BinlogIOError(
                f"read of the compressed segment failed: {exc.strerror or exc}", path=self.path
            ) from exc

    def _keep(self, piece: bytes) -> None:
        if not self._keeps:
            self._head += piece[: max(HEADER_SIZE - self._unpacked, 0)]
            self._unpacked += len(piece)
            return
        try:
            if self._spill is None:
                # Unbuffered: reads use pread on the descriptor, and a failed write leaves nothing to flush.
                self._spill = tempfile.TemporaryFile(buffering=0)  # noqa: SIM115 - closed by close()
            view = memoryview(piece)
            while view:
                view = view[self._spill.write(view) :]
        except OSError as exc:
            # A full disk or a file size limit: the archive may be intact, so this is never damage.
            raise BinlogIOError(
                f"cannot unpack the compressed segment into a temporary file: {exc.strerror or exc}", path=self.path
            ) from exc
        self._unpacked += len(piece)


def unpack_failure(
    raw: IO[bytes], codec: str, *, path: str, max_unpacked: int | None = None, cap_name: str = "max_unpacked"
) -> UnpackError | None:
    """The error the compressed segment in ``raw`` fails with where a walk of it reads to its end (R-43), or None
    where it unpacks to its end: the whole segment unpacked, in the pieces ``CompressedSegment`` unpacks, and none of
    it kept. What a reader that reads the segment's records in one place must know before it reads, elsewhere, the
    segments after it: an archive that fails ends the walk there, as a header that fails its checks does."""
    with CompressedSegment(raw, codec, path=path, max_unpacked=max_unpacked, cap_name=cap_name, keep=False) as segment:
        try:
            segment.size()
        except UnpackError as failed:
            return failed
    return None
