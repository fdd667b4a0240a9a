"""Local segment files as sources of the walk (``openbinlog.walk``).

Readers open segments with ``O_RDONLY`` and never lock, write or truncate;
the writer reaches the same parsing through its own file operations.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from typing import TypeVar

from ._format import COMPRESSED_SUFFIXES, LOCK_NAME, SEGMENT_NAME, index_name, segment_name
from ._fs import pread
from ._segment import CommitState, LegacyHeaderInfo, SegmentHeaderInfo
from .compressed import CompressedSegment
from .errors import BinlogError, BinlogIOError, NotALogError
from .walk import OPEN_ATTEMPTS, is_blank, read_commit, read_header


def io_error(exc: OSError, path: str, what: str) -> BinlogIOError:
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return NotALogError(f"{what}: {exc.strerror}", path=path)
    return BinlogIOError(f"{what}: {exc.strerror or exc}", path=path)


def list_segments(directory: str, *, require_log: bool = False) -> list[int]:
    """The log numbers of the segments present (plain or compressed), ascending.

    With ``require_log``, a directory holding neither a segment nor ``LOCK``
    is not a log (spec 2.3): reading the parent of a log must not pass as
    reading an empty one.
    """
    try:
        names = os.listdir(directory)
    except OSError as exc:
        raise io_error(exc, directory, "cannot list the log directory") from exc
    logs = sorted({int(match[1]) for name in names if (match := SEGMENT_NAME.match(name))})
    if require_log and not logs and LOCK_NAME not in names:
        raise NotALogError("not a log directory: it holds neither a segment nor LOCK", path=directory)
    return logs


def require_log_directory(directory: str) -> None:
    """Raise ``NotALogError`` unless ``directory`` is a log directory (spec 2.3)."""
    list_segments(directory, require_log=True)


def segment_names(plain: str) -> tuple[str, ...]:
    """The names a segment whose plain file is ``plain`` may have, in the order readers take them: the plain file,
    then its compressed copies (spec 2.6)."""
    return (plain, *(plain + suffix for suffix in COMPRESSED_SUFFIXES))


def find_segment(directory: str, log: int) -> str | None:
    """The file holding segment ``log``: the plain file if present, else a compressed copy (spec 2.6)."""
    # lexists: a name that is listed but cannot be opened (a dangling link) is an io_error, not an absence.
    return next(
        (path for path in segment_names(os.path.join(directory, segment_name(log))) if os.path.lexists(path)), None
    )


Opened = TypeVar("Opened")


def open_following(
    find: Callable[[], str | None],
    plain: str,
    open_file: Callable[[str], Opened],
    vanished: type[Exception] = FileNotFoundError,
) -> Opened:
    """``open_file`` of the name ``find`` gives for the segment whose plain file is ``plain``: the plain file, else
    a compressed copy (spec 2.6); the Spark source opens its planned segments so too, on any file system.

    A name that vanishes between finding and opening it (``open_file`` raises
    ``vanished``) is looked up again: compression links the compressed name
    before it removes the plain one. When ``find`` gives no name, ``plain``
    is opened, so that ``open_file`` raises what says why it is missing.
    """
    for _ in range(OPEN_ATTEMPTS):
        found = find()
        try:
            return open_file(found or plain)
        except vanished:
            if found is None:
                raise
    raise BinlogIOError("segment keeps vanishing while being opened", path=plain)


def open_regular(path: str) -> int:
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
        self._unpacked: CompressedSegment | None = None
        self.fd = -1
        self.path = os.path.join(directory, segment_name(log))
        self.compressed = False
        try:
            open_following(lambda: find_segment(directory, log), self.path, self._open)
        except OSError as exc:
            raise io_error(exc, self.path, "cannot open segment").located(log=log) from exc
        except BinlogError as exc:
            raise exc.located(log=log) from None

    def _open(self, path: str) -> None:
        self.path = path
        self.compressed = path.endswith(COMPRESSED_SUFFIXES)
        self.fd = open_regular(path)
        if self.compressed:
            # The header alone, then up to the segment's end before its first record, never beyond it
            # (openbinlog.compressed, R-43).
            raw = open(self.fd, "rb", closefd=False)  # noqa: SIM115 - the CompressedSegment closes it
            self._unpacked = CompressedSegment(raw, path.rsplit(".", 1)[1], path=path)

    def close(self) -> None:
        if self._unpacked is not None:
            self._unpacked.close()
            self._unpacked = None
        if self.fd >= 0:
            os.close(self.fd)
        self.fd = -1

    def __enter__(self) -> SegmentFile:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def read_at(self, offset: int, size: int) -> bytes:
        """Up to ``size`` bytes from ``offset``; memory is bounded by the bytes there are (R-10)."""
        if self._unpacked is not None:
            try:
                return self._unpacked.read_at(offset, size)
            except BinlogError as exc:
                exc.located(log=self.log)
                raise
        try:
            return pread(self.fd, size, offset)
        except OSError as exc:
            raise BinlogIOError(
                f"read of {size} bytes failed: {exc.strerror}", path=self.path, log=self.log, offset=offset
            ) from exc

    def size(self) -> int:
        """The bytes of the segment (of a compressed one: unpacked, up to its end)."""
        if self._unpacked is not None:
            try:
                return self._unpacked.size()
            except BinlogError as exc:
                exc.located(log=self.log)
                raise
        return self.stored_size()

    def stored_size(self) -> int:
        """The size of the file itself (of a compressed segment: the archive's)."""
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
        return list_segments(self.path, require_log=True)

    def open(self, log: int) -> SegmentFile | None:
        try:
            return SegmentFile(self.path, log)
        except NotALogError:
            return None  # no name of it is left: removed since the listing

    def open_index(self, log: int) -> IndexFile | None:
        """The sparse index of segment ``log`` (spec 18), or None when there is none or it cannot be opened:
        an index only costs or saves time (R-33, R-47)."""
        path = os.path.join(self.path, index_name(log))
        try:
            return IndexFile(open_regular(path), path)
        except OSError:
            return None


class IndexFile:
    """An index file opened read-only; a read that fails reads as an index that is not there (R-47)."""

    def __init__(self, fd: int, path: str) -> None:
        self.fd = fd
        self.path = path

    def read_at(self, offset: int, size: int) -> bytes:
        try:
            return pread(self.fd, size, offset)
        except OSError as exc:
            raise BinlogIOError(f"read of the index failed: {exc.strerror}", path=self.path, offset=offset) from exc

    def size(self) -> int:
        try:
            return os.fstat(self.fd).st_size
        except OSError as exc:  # pragma: no cover - fstat of an open descriptor
            raise BinlogIOError(f"fstat failed: {exc.strerror}", path=self.path) from exc

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
        self.fd = -1
