"""Local segment files as sources of the walk (``openbinlog.walk``).

Readers open segments with ``O_RDONLY`` and never lock, write or truncate;
the writer reaches the same parsing through its own file operations.
"""

from __future__ import annotations

import errno
import gzip
import os
import shutil
import stat
import tempfile
from typing import IO

import zstandard

from ._format import COMPRESSED_SUFFIXES, SEGMENT_NAME, segment_name
from ._fs import pread
from ._segment import CommitState, LegacyHeaderInfo, SegmentHeaderInfo
from .errors import BadHeaderError, BinlogError, BinlogIOError, NotALogError
from .walk import OPEN_ATTEMPTS, READ_CHUNK, is_blank, read_commit, read_header


def io_error(exc: OSError, path: str, what: str) -> BinlogIOError:
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return NotALogError(f"{what}: {exc.strerror}", path=path)
    return BinlogIOError(f"{what}: {exc.strerror or exc}", path=path)


def list_segments(directory: str) -> list[int]:
    """The log numbers of the segments present (plain or compressed), ascending."""
    try:
        names = os.listdir(directory)
    except OSError as exc:
        raise io_error(exc, directory, "cannot list the log directory") from exc
    return sorted({int(match[1]) for name in names if (match := SEGMENT_NAME.match(name))})


def find_segment(directory: str, log: int) -> str | None:
    """The file holding segment ``log``: the plain file if present, else a compressed copy (spec 2.6)."""
    plain = os.path.join(directory, segment_name(log))
    for path in (plain, *(plain + suffix for suffix in COMPRESSED_SUFFIXES)):
        # lexists: a name that is listed but cannot be opened (a dangling link) is an io_error, not an absence.
        if os.path.lexists(path):
            return path
    return None


def _decompressed(path: str) -> IO[bytes]:
    """A sealed segment compressed whole, unpacked into an anonymous temporary file.

    A temporary file, not memory: a hostile archive cannot exhaust memory,
    and reads keep the random access the record walk needs.
    """
    spill: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 - the caller owns and closes it
    try:
        with open(path, "rb") as raw:
            if path.endswith(".gz"):
                with gzip.GzipFile(fileobj=raw) as unpacked:
                    shutil.copyfileobj(unpacked, spill, READ_CHUNK)
            else:
                with zstandard.ZstdDecompressor().stream_reader(raw) as unpacked:
                    shutil.copyfileobj(unpacked, spill, READ_CHUNK)
        spill.flush()  # reads use pread on the descriptor, past Python's buffer
    except FileNotFoundError:
        spill.close()
        raise  # the name vanished: the caller looks it up again
    except (OSError, EOFError, zstandard.ZstdError) as exc:
        spill.close()
        raise BadHeaderError(f"compressed segment cannot be unpacked: {exc}", path=path) from exc
    return spill


def _open_regular(path: str) -> int:
    """A read-only descriptor of the regular file at ``path``; anything else (a FIFO would block the
    reader forever, a directory cannot be read) is an ``io_error``."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", path)
    return fd


class SegmentFile:
    """One segment opened read-only."""

    def __init__(self, directory: str, log: int) -> None:
        """Open segment ``log``: the plain file, else a compressed copy (spec 2.6).

        A name that vanishes between finding and opening it is looked up
        again: compression links the compressed name before it removes the
        plain one. ``NotALogError`` when no name of the segment is left.
        """
        self.directory = directory
        self.log = log
        self._spill: IO[bytes] | None = None
        for _ in range(OPEN_ATTEMPTS):
            found = find_segment(directory, log)
            self.path = found or os.path.join(directory, segment_name(log))
            self.compressed = self.path.endswith(COMPRESSED_SUFFIXES)
            try:
                if self.compressed:
                    self._spill = _decompressed(self.path)
                    self.fd = self._spill.fileno()
                else:
                    self.fd = _open_regular(self.path)
                return
            except FileNotFoundError as exc:
                if found is None:
                    raise io_error(exc, self.path, "cannot open segment").located(log=log) from exc
            except OSError as exc:
                raise io_error(exc, self.path, "cannot open segment").located(log=log) from exc
            except BinlogError as exc:
                raise exc.located(log=log) from None
        raise BinlogIOError(f"segment {log} keeps vanishing while being opened", path=directory, log=log)

    def close(self) -> None:
        if self._spill is not None:
            self._spill.close()
            self._spill = None
        elif self.fd >= 0:
            os.close(self.fd)
        self.fd = -1

    def __enter__(self) -> SegmentFile:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def read_at(self, offset: int, size: int) -> bytes:
        try:
            return pread(self.fd, size, offset)
        except OSError as exc:
            raise BinlogIOError(
                f"read of {size} bytes failed: {exc.strerror}", path=self.path, log=self.log, offset=offset
            ) from exc

    def size(self) -> int:
        try:
            return os.fstat(self.fd).st_size
        except OSError as exc:  # pragma: no cover - fstat of an open descriptor
            raise BinlogIOError(f"fstat failed: {exc.strerror}", path=self.path, log=self.log) from exc

    def is_blank(self) -> bool:
        return is_blank(self)

    def header(self) -> SegmentHeaderInfo | LegacyHeaderInfo:
        try:
            return read_header(self, self.log)
        except BinlogError as exc:
            raise exc.located(path=self.path) from None

    def commit(self, header: SegmentHeaderInfo) -> CommitState:
        """Re-read the commit slots: the published commit point moves while writers append."""
        try:
            return read_commit(self, header)
        except BinlogError as exc:
            raise exc.located(path=self.path) from None


class LocalDirectory:
    """A log directory on the local file system, as the walk sees it."""

    def __init__(self, path: str) -> None:
        self.path = path

    def segments(self) -> list[int]:
        return list_segments(self.path)

    def open(self, log: int) -> SegmentFile | None:
        try:
            return SegmentFile(self.path, log)
        except NotALogError:
            return None  # no name of it is left: removed since the listing
