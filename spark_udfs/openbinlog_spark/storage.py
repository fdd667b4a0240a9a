"""Reading segment files wherever they live: local paths and every fsspec URL.

Local files are read with ``os.pread``; other URLs with fsspec range reads
(``cat_file``), so a chunk is one request. Whole-file compressed segments
(``NNNNNNNN.dat.gz``, ``NNNNNNNN.dat.zst``, spec 2.6) are decompressed
once into a temporary file; planning needs only their first 256 bytes.
"""

from __future__ import annotations

import errno
import gzip
import io
import os
import tempfile
from collections.abc import Mapping
from typing import IO, Any, cast

import fsspec
import zstandard

from openbinlog._fs import pread
from openbinlog.errors import BadHeaderError, BinlogIOError

COMPRESSIONS = {"gz": "gzip", "zst": "zstd"}
DEFAULT_MAX_DECOMPRESSED = 16 << 30
PREFIX_BYTES = 4096


class CorruptFileError(BadHeaderError):
    """A compressed segment that cannot be unpacked: ``bad_header``, as the reference reader says."""


class MissingFileError(BinlogIOError):
    """A file that was listed but is gone when it is read."""


def is_local(url: str) -> bool:
    return "://" not in url or url.startswith("file://")


def local_path(url: str) -> str:
    return url[len("file://") :] if url.startswith("file://") else url


class Storage:
    """File access with the fsspec options a read was given (credentials, endpoint)."""

    def __init__(self, storage_options: Mapping[str, Any] | None = None) -> None:
        self.storage_options = dict(storage_options or {})
        self._filesystems: dict[str, fsspec.AbstractFileSystem] = {}

    def filesystem(self, url: str) -> tuple[fsspec.AbstractFileSystem, str]:
        """The fsspec file system for ``url`` and the path it uses for it."""
        if is_local(url):
            return fsspec.filesystem("file"), os.path.abspath(local_path(url))
        protocol = url.split("://", 1)[0]
        fs = self._filesystems.get(protocol)
        if fs is None:
            fs = fsspec.filesystem(protocol, **self.storage_options)
            self._filesystems[protocol] = fs
        return fs, fs._strip_protocol(url)

    def open(
        self,
        url: str,
        compression: str | None,
        *,
        max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
        listed_size: int | None = None,
    ) -> SegmentSource:
        """``listed_size``: the size a listing just returned, which spares a remote store one request."""
        if compression is not None:
            return CompressedSource(self, url, compression, max_decompressed)
        if is_local(url):
            return LocalSource(local_path(url))
        return RemoteSource(self, url, listed_size)


def _io_error(exc: BaseException, url: str, what: str) -> BinlogIOError:
    if isinstance(exc, FileNotFoundError) or (isinstance(exc, OSError) and exc.errno == errno.ENOENT):
        return MissingFileError(f"{what}: file not found", path=url)
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return BinlogIOError(f"{what}: {reason}", path=url)


class SegmentSource:
    """Read-only random access to the (decompressed) bytes of one segment file."""

    url: str

    def read_at(self, offset: int, size: int) -> bytes:
        raise NotImplementedError

    def size(self) -> int:
        raise NotImplementedError

    def close(self) -> None:
        """Release what the source holds."""

    def __enter__(self) -> SegmentSource:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class LocalSource(SegmentSource):
    def __init__(self, path: str) -> None:
        self.url = path
        try:
            self.fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise _io_error(exc, path, "cannot open segment") from exc

    def read_at(self, offset: int, size: int) -> bytes:
        try:
            return pread(self.fd, size, offset)
        except OSError as exc:
            raise BinlogIOError(f"read of {size} bytes failed: {exc.strerror}", path=self.url, offset=offset) from exc

    def size(self) -> int:
        return os.fstat(self.fd).st_size

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class RemoteSource(SegmentSource):
    def __init__(self, storage: Storage, url: str, listed_size: int | None = None) -> None:
        self.url = url
        self.fs, self.path = storage.filesystem(url)
        self._size = listed_size

    def read_at(self, offset: int, size: int) -> bytes:
        size = min(size, self.size() - offset)
        if size <= 0:
            return b""
        try:
            return bytes(self.fs.cat_file(self.path, start=offset, end=offset + size))
        except Exception as exc:
            raise _io_error(exc, self.url, f"read of {size} bytes at {offset} failed") from exc

    def size(self) -> int:
        if self._size is None:
            try:
                self._size = int(self.fs.size(self.path))
            except Exception as exc:
                raise _io_error(exc, self.url, "cannot stat segment") from exc
        return self._size


class CompressedSource(SegmentSource):
    """A whole-file gzip or zstd segment (spec 2.6).

    The header comes from a decompressed prefix; the rest is decompressed
    once into an anonymous temporary file (as the reference reader does), so
    a large or hostile archive costs disk up to ``max_decompressed``, not memory.
    """

    def __init__(self, storage: Storage, url: str, compression: str, max_decompressed: int) -> None:
        self.url = url
        self.storage = storage
        self.compression = compression
        self.max_decompressed = max_decompressed
        self._spill: IO[bytes] | None = None
        self._size = 0
        self._prefix: bytes | None = None

    def _raw(self) -> IO[bytes]:
        try:
            if is_local(self.url):
                return open(local_path(self.url), "rb")
            fs, path = self.storage.filesystem(self.url)
            return fs.open(path, "rb")  # type: ignore[no-any-return]
        except Exception as exc:
            raise _io_error(exc, self.url, "cannot open segment") from exc

    def _decoded(self, raw: IO[bytes]) -> IO[bytes]:
        if self.compression == "gzip":
            return cast(IO[bytes], gzip.GzipFile(fileobj=raw, mode="rb"))
        return cast(IO[bytes], zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True))

    def _decompress(self, out: IO[bytes], limit: int) -> int:
        written = 0
        try:
            with self._raw() as raw, self._decoded(raw) as stream:
                while written < limit:
                    piece = stream.read(min(1 << 20, limit - written))
                    if not piece:
                        break
                    out.write(piece)
                    written += len(piece)
        except BinlogIOError:
            raise
        except (OSError, EOFError, zstandard.ZstdError) as exc:
            raise CorruptFileError(f"compressed segment cannot be unpacked: {exc}", path=self.url) from exc
        return written

    def _unpacked(self) -> IO[bytes]:
        if self._spill is None:
            spill: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
            try:
                size = self._decompress(spill, self.max_decompressed + 1)
                if size > self.max_decompressed:
                    raise CorruptFileError(
                        f"decompresses to more than {self.max_decompressed} bytes (option maxDecompressedBytes)",
                        path=self.url,
                    )
                spill.flush()
            except BaseException:
                spill.close()
                raise
            self._spill, self._size = spill, size
        return self._spill

    def read_at(self, offset: int, size: int) -> bytes:
        if size <= 0:
            return b""
        if self._spill is None and offset + size <= PREFIX_BYTES:
            if self._prefix is None:
                buffer = io.BytesIO()
                self._decompress(buffer, PREFIX_BYTES)
                self._prefix = buffer.getvalue()
            return self._prefix[offset : offset + size]
        return pread(self._unpacked().fileno(), size, offset)

    def size(self) -> int:
        self._unpacked()
        return self._size

    def close(self) -> None:
        if self._spill is not None:
            self._spill.close()
            self._spill = None
