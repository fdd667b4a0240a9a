"""The file operations a writer performs, behind one small interface.

Production code uses ``OsFileSystem``; the crash-injection tests substitute a
recorder that logs every operation so crash states can be enumerated. Every
write, sync, link and lock of the writer goes through here, nothing else.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import struct
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

_OFD_SETLKW = getattr(fcntl, "F_OFD_SETLKW", None)
# struct flock on Linux: short l_type, short l_whence, off_t l_start, off_t l_len, pid_t l_pid.
_FLOCK = struct.Struct("hhqqi4x")
# The whole file, from its start: taken and released once per commit.
_LOCK_WHOLE = _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
_UNLOCK_WHOLE = _FLOCK.pack(fcntl.F_UNLCK, os.SEEK_SET, 0, 0, 0)
# Byte 0 alone: the append lock of writers that share their syncs (spec 9). The whole-file lock covers it.
_LOCK_APPEND = _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, 0, 1, 0)
_UNLOCK_APPEND = _FLOCK.pack(fcntl.F_UNLCK, os.SEEK_SET, 0, 1, 0)
_OFD_SETLK = getattr(fcntl, "F_OFD_SETLK", None)
_OFD_GETLK = getattr(fcntl, "F_OFD_GETLK", None)
_RWF_DSYNC: int | None = getattr(os, "RWF_DSYNC", None)  # Linux 4.7 and later
_PAGE = 4096
_SYNC_FILE_RANGE_WRITE = 2  # linux/fs.h: start writeback, wait for nothing


def _sync_file_range() -> Callable[[int, int, int, int], int] | None:
    """Linux's ``sync_file_range``, which Python's ``os`` lacks; None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    function.argtypes = (ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint)
    function.restype = ctypes.c_int
    return function


_START_WRITEBACK = _sync_file_range()
# Linux reports a write-back error to every open file description since 4.13 (errseq): what lets a writer
# trust its own successful sync for pages other processes wrote (spec 6.8).
_WRITEBACK_ERRORS_PER_DESCRIPTION = (4, 13)


def _kernel_reports_errors_to_every_descriptor() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    release = os.uname().release.split("-")[0].split(".")
    try:
        return (int(release[0]), int(release[1])) >= _WRITEBACK_ERRORS_PER_DESCRIPTION
    except (IndexError, ValueError):
        return False


# What a writer needs to share its syncs with other processes (spec 6.8): byte-range OFD locks and
# write-back errors reported to each descriptor. Elsewhere writers keep the per-batch lock.
SHARED_SYNC_SUPPORTED = _OFD_SETLKW is not None and _kernel_reports_errors_to_every_descriptor()
_CACHE_AHEAD = 1 << 20  # the record pages read back, page by page, beyond the commit point


class FileSystem(Protocol):
    def open_read(self, path: str) -> int: ...
    def open_write(self, path: str, *, create: bool = False, exclusive: bool = False) -> int: ...
    def close(self, fd: int) -> None: ...
    def size(self, fd: int) -> int: ...
    def pread(self, fd: int, size: int, offset: int) -> bytes: ...
    def pwrite(self, fd: int, data: bytes, offset: int) -> None: ...
    def pwrite_synced(self, fd: int, data: bytes, offset: int) -> None: ...
    def cache_pages_apart(self, fd: int, offset: int) -> None: ...
    def start_writeback(self, fd: int, offset: int, length: int) -> None: ...
    def truncate(self, fd: int, size: int) -> None: ...
    def fdatasync(self, fd: int) -> None: ...
    def fsync_dir(self, path: str) -> None: ...
    def link(self, source: str, target: str) -> None: ...
    def unlink(self, path: str) -> None: ...
    def mkdir(self, path: str) -> None: ...
    def listdir(self, path: str) -> list[str]: ...
    def exists(self, path: str) -> bool: ...
    def open_lock(self, path: str) -> int: ...
    def close_lock(self, fd: int) -> None: ...
    def lock(self, fd: int) -> None: ...
    def unlock(self, fd: int) -> None: ...
    def lock_append(self, fd: int) -> None: ...
    def unlock_append(self, fd: int) -> None: ...
    def hold(self, fd: int) -> None: ...
    def held(self, path: str) -> bool: ...
    def identity(self, fd: int) -> tuple[int, int]: ...
    def names(self, path: str, identity: tuple[int, int]) -> bool: ...


@dataclass
class _ProcessLock:
    """W-33: with POSIX record locks, one descriptor of a LOCK file per process, shared by its writers.

    A POSIX record lock belongs to the process, and closing any descriptor of
    the file drops it: so the descriptor is opened once and closed when its
    last writer closes, and a mutex makes the process's writers take turns,
    which the kernel does not do for locks of one process.
    """

    fd: int
    users: int
    mutex: threading.Lock


_PROCESS_LOCKS: dict[tuple[int, int], _ProcessLock] = {}
_PROCESS_LOCKS_GUARD = threading.Lock()
# Temporary files this process holds, on systems without OFD locks: another process sees them by F_GETLK,
# this one by this set (a POSIX lock does not conflict with its own process's).
_HELD_HERE: set[tuple[int, int]] = set()


def _process_lock(fd: int) -> _ProcessLock:
    with _PROCESS_LOCKS_GUARD:
        return next(entry for entry in _PROCESS_LOCKS.values() if entry.fd == fd)


def sync_directory(path: str) -> None:
    """Make the directory's entries (creations, links, renames, deletions) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# A file offset is a signed 64-bit number: no byte lies at or beyond it, and os.pread refuses larger integers.
MAX_FILE_OFFSET = 2**63 - 1
# os.pread allocates the whole size asked for before it reads: a larger read is first cut to the file's size.
_UNCHECKED_READ = 1 << 20


def pread(fd: int, size: int, offset: int) -> bytes:
    """``os.pread`` for offsets and sizes taken from untrusted fields.

    Nothing lies beyond the largest file offset, and memory is bounded by the
    bytes the file holds, whatever ``size`` says (R-10): a record length of
    2 GiB in a file of 300 bytes costs 300 bytes.
    """
    if offset < 0:
        return b""
    size = min(size, MAX_FILE_OFFSET - offset)
    if size > _UNCHECKED_READ:
        size = min(size, os.fstat(fd).st_size - offset)
    if size <= 0:
        return b""
    return os.pread(fd, size, offset)


class OsFileSystem:
    """The operating system, with writes that never stop short."""

    def open_read(self, path: str) -> int:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)

    def open_write(self, path: str, *, create: bool = False, exclusive: bool = False) -> int:
        flags = os.O_RDWR | os.O_CLOEXEC
        if create:
            flags |= os.O_CREAT
        if exclusive:
            flags |= os.O_EXCL
        return os.open(path, flags, 0o644)

    def close(self, fd: int) -> None:
        os.close(fd)

    def size(self, fd: int) -> int:
        return os.fstat(fd).st_size

    def pread(self, fd: int, size: int, offset: int) -> bytes:
        return pread(fd, size, offset)

    def pwrite(self, fd: int, data: bytes, offset: int) -> None:
        written = os.pwrite(fd, data, offset)
        if written == len(data):
            return
        view = memoryview(data)[written:]
        offset += written
        while view:
            written = os.pwrite(fd, view, offset)
            if written == 0:
                raise OSError(errno.EIO, "pwrite wrote nothing")
            view = view[written:]
            offset += written

    def pwrite_synced(self, fd: int, data: bytes, offset: int) -> None:
        """Write ``data`` and return once those bytes are durable, not the rest of the file (``RWF_DSYNC``,
        spec 6.2 step 8); where the system lacks it, a write and an ``fdatasync`` of the whole file."""
        view = memoryview(data)
        while view:
            try:
                if _RWF_DSYNC is None:
                    raise OSError(errno.EOPNOTSUPP, "no RWF_DSYNC")
                written = os.pwritev(fd, [view], offset, _RWF_DSYNC)
            except OSError as exc:
                if exc.errno not in (errno.EOPNOTSUPP, errno.ENOSYS) or len(view) < len(data):
                    raise
                self.pwrite(fd, data, offset)  # nothing written yet: the same durability, the whole file's sync
                self.fdatasync(fd)
                return
            if written == 0:
                raise OSError(errno.EIO, "pwritev wrote nothing")
            view = view[written:]
            offset += written

    def cache_pages_apart(self, fd: int, offset: int) -> None:
        """Cache the segment's header page, and the pages from ``offset`` on, one page each, its other pages not
        at all: for a writer whose records are synchronized writes from ``offset`` on (spec 6.2, step 8).

        Writeback writes whole folios: where the file was written or read in large pieces (its zeros, a
        tail check), the page cache holds it in folios of up to megabytes, and a synchronized write of a
        record then also writes every dirty block of the record's folio, the header's slot among them, which
        costs a synchronized write a fifth of its rate. The segment must be synced: only clean pages are
        dropped. A hint only: where the system has none, nothing changes but the speed.
        """
        advise = getattr(os, "posix_fadvise", None)
        if advise is None:
            return
        advise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        # Read back as single pages (a hinted read allocates the smallest folios), before a reader's
        # readahead could bring them back in large ones.
        advise(fd, 0, _PAGE, os.POSIX_FADV_WILLNEED)
        advise(fd, offset & ~(_PAGE - 1), _CACHE_AHEAD, os.POSIX_FADV_WILLNEED)

    def start_writeback(self, fd: int, offset: int, length: int) -> None:
        """Start writing ``length`` bytes at ``offset`` to the disk and return at once (``sync_file_range``): a
        later sync then finds less to write. It promises nothing; where the system lacks it, nothing happens."""
        if _START_WRITEBACK is not None and _START_WRITEBACK(fd, offset, length, _SYNC_FILE_RANGE_WRITE) != 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))

    def truncate(self, fd: int, size: int) -> None:
        os.ftruncate(fd, size)

    def fdatasync(self, fd: int) -> None:
        os.fdatasync(fd)

    def fsync_dir(self, path: str) -> None:
        sync_directory(path)

    def link(self, source: str, target: str) -> None:
        os.link(source, target)

    def unlink(self, path: str) -> None:
        os.unlink(path)

    def mkdir(self, path: str) -> None:
        os.mkdir(path)

    def listdir(self, path: str) -> list[str]:
        return os.listdir(path)

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def open_lock(self, path: str) -> int:
        """A descriptor of the lock file ``path``, created if missing: the writer's own with OFD locks, else the
        one its process shares (W-33)."""
        if _OFD_SETLKW is not None:
            return self.open_write(path, create=True)
        with _PROCESS_LOCKS_GUARD:
            # Found by name first: opening and closing a second descriptor would drop the process's lock.
            try:
                named = os.stat(path)
                entry = _PROCESS_LOCKS.get((named.st_dev, named.st_ino))
            except FileNotFoundError:
                entry = None
            if entry is None:
                fd = self.open_write(path, create=True)
                entry = _PROCESS_LOCKS.setdefault(self.identity(fd), _ProcessLock(fd, 0, threading.Lock()))
            entry.users += 1
            return entry.fd

    def close_lock(self, fd: int) -> None:
        if _OFD_SETLKW is not None:
            self.close(fd)
            return
        with _PROCESS_LOCKS_GUARD:
            key, entry = next((key, entry) for key, entry in _PROCESS_LOCKS.items() if entry.fd == fd)
            entry.users -= 1
            if entry.users == 0:
                del _PROCESS_LOCKS[key]
                self.close(fd)

    def lock(self, fd: int) -> None:
        # An open-file-description lock: held by this descriptor alone, so
        # closing another descriptor of LOCK does not drop it (the classic
        # POSIX pitfall), and two Writers in one process exclude each other.
        if _OFD_SETLKW is not None:
            fcntl.fcntl(fd, _OFD_SETLKW, _LOCK_WHOLE)
            return
        entry = _process_lock(fd)  # a POSIX record lock: the process's writers take turns first
        entry.mutex.acquire()
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX)
        except BaseException:
            entry.mutex.release()
            raise

    def unlock(self, fd: int) -> None:
        if _OFD_SETLKW is not None:
            fcntl.fcntl(fd, _OFD_SETLKW, _UNLOCK_WHOLE)
            return
        try:
            fcntl.lockf(fd, fcntl.LOCK_UN)
        finally:
            _process_lock(fd).mutex.release()

    def try_lock(self, fd: int) -> bool:
        """``lock`` without waiting: False when another holds the lock. Without OFD locks it waits as ``lock``
        does (a POSIX record lock of the process is shared by its writers, W-33)."""
        if _OFD_SETLK is None:
            self.lock(fd)
            return True
        try:
            fcntl.fcntl(fd, _OFD_SETLK, _LOCK_WHOLE)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                return False
            raise
        return True

    def lock_append(self, fd: int) -> None:
        """Take the append lock, byte 0 of ``LOCK`` (spec 9): writers that share their syncs take turns on it,
        and it waits for any holder of the whole-file lock. Only where ``SHARED_SYNC_SUPPORTED``."""
        assert _OFD_SETLKW is not None
        fcntl.fcntl(fd, _OFD_SETLKW, _LOCK_APPEND)

    def unlock_append(self, fd: int) -> None:
        assert _OFD_SETLKW is not None
        fcntl.fcntl(fd, _OFD_SETLKW, _UNLOCK_APPEND)

    def hold(self, fd: int) -> None:
        """Mark a temporary file as in use for as long as ``fd`` stays open (spec 7.4): clean-up keeps it.

        An OFD lock, released by the kernel when the holder closes it or dies.
        """
        if _OFD_SETLK is not None:
            fcntl.fcntl(fd, _OFD_SETLK, _LOCK_WHOLE)
        else:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            _HELD_HERE.add(self.identity(fd))

    def held(self, path: str) -> bool:
        """Whether some open file description holds a lock on ``path`` (a live writer's or compressor's file)."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
        except FileNotFoundError:
            return False
        try:
            if _OFD_GETLK is None and self.identity(fd) in _HELD_HERE:
                return True
            answer = fcntl.fcntl(fd, fcntl.F_GETLK if _OFD_GETLK is None else _OFD_GETLK, _LOCK_WHOLE)
        finally:
            os.close(fd)
        return bool(_FLOCK.unpack(answer)[0] != fcntl.F_UNLCK)

    def identity(self, fd: int) -> tuple[int, int]:
        """The device and inode of the file open as ``fd``."""
        opened = os.fstat(fd)
        return opened.st_dev, opened.st_ino

    def names(self, path: str, identity: tuple[int, int]) -> bool:
        """Whether ``path`` still names the file of ``identity`` (not removed, not replaced)."""
        try:
            named = os.stat(path)
        except FileNotFoundError:
            return False
        return (named.st_dev, named.st_ino) == identity
