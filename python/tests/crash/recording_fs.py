"""A FileSystem that does the real operation on real files and records it in a trace.

The Writer takes ``fs=``; hand it a ``RecordingFileSystem`` rooted at a
scratch directory and every create, pwrite, truncate, sync, link, unlink,
mkdir and lock it performs under that root lands in ``trace.ops``, resolved
to inodes so that a file with two names stays one file. The initial state is
a snapshot of the root, so a trace can start from any crash state.

Syncs are recorded, not performed: durability is what the trace models, and
nothing relies on the scratch copy surviving a real power loss.
"""

from __future__ import annotations

import errno
import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from openbinlog._fs import OsFileSystem

from .disk_image import ROOT, Image
from .fs_trace import (
    Create,
    Fdatasync,
    FsyncDir,
    Link,
    Lock,
    Mark,
    Mkdir,
    Op,
    Open,
    Pwrite,
    Trace,
    Truncate,
    Unlink,
    apply_entry,
)

if TYPE_CHECKING:
    from .workloads import SyncGate


class RecordingFileSystem(OsFileSystem):
    """Real file operations under ``root``, each appended to ``self.trace``.

    ``fail_sync(n)`` makes the n-th next ``fdatasync`` (or directory
    ``fsync``) raise EIO (fault T9); a failed sync is recorded with
    ``ok=False`` and makes nothing durable.
    """

    def __init__(self, root: Path, *, durability: str = "sync") -> None:
        self.root = Path(os.path.abspath(root))
        self._countdown: dict[bool, int] = {}  # directory? -> syncs left before the failing one
        self._names = Image.load(self.root)
        self.trace = Trace(initial=self._names.copy(), durability=durability)
        self._next_inode = self._names.new_inode()
        self._fds: dict[int, int] = {}
        # A Together step holds writer threads at their syncs and their publications (workloads).
        self.gate: SyncGate | None = None

    # -- bookkeeping ------------------------------------------------------------

    def record(self, op: Op) -> None:
        self.trace.ops.append(op)

    def fail_sync(self, nth: int = 1, *, directory: bool = False) -> None:
        self._countdown[directory] = nth

    def disarm(self) -> None:
        self._countdown.clear()

    def _fails(self, directory: bool) -> bool:
        if directory not in self._countdown:
            return False
        self._countdown[directory] -= 1
        if self._countdown[directory] > 0:
            return False
        del self._countdown[directory]
        return True

    def mark(self, kind: str, value: int = 0) -> None:
        self.record(Mark(kind, value))

    def _allocate(self) -> int:
        inode = self._next_inode
        self._next_inode += 1
        return inode

    def _locate(self, path: str) -> tuple[int, str]:
        """Directory inode and name of ``path``; it must lie under the root."""
        relative = os.path.relpath(os.path.abspath(path), self.root)
        if relative.startswith(".."):
            raise ValueError(f"{path} lies outside the recorded root {self.root}")
        *parents, name = relative.split(os.sep)
        directory = ROOT
        for part in parents:
            directory = self._names.dirs[directory][part]
        return directory, name

    def _inode(self, path: str) -> int:
        directory, name = self._locate(path)
        return self._names.dirs[directory][name]

    def _apply(self, op: Create | Mkdir | Link | Unlink) -> None:
        apply_entry(self._names, op)
        self.record(op)

    # -- the FileSystem interface -------------------------------------------------

    def open_read(self, path: str) -> int:
        fd = super().open_read(path)
        self._fds[fd] = self._inode(path)
        return fd

    def open_write(self, path: str, *, create: bool = False, exclusive: bool = False) -> int:
        directory, name = self._locate(path)
        existed = name in self._names.dirs[directory]
        fd = super().open_write(path, create=create, exclusive=exclusive)
        if existed:
            self._fds[fd] = self._names.dirs[directory][name]
            self.record(Open(self._fds[fd], name))
        else:
            inode = self._allocate()
            self._apply(Create(directory, name, inode))
            self._fds[fd] = inode
        return fd

    def close(self, fd: int) -> None:
        super().close(fd)
        self._fds.pop(fd, None)

    def pwrite(self, fd: int, data: bytes, offset: int) -> None:
        super().pwrite(fd, data, offset)
        self.record(Pwrite(self._fds[fd], offset, bytes(data)))

    def pwrite_synced(self, fd: int, data: bytes, offset: int) -> None:
        """A write whose bytes are durable when it returns: recorded as the write and a sync of its range.
        ``fail_sync`` fails it after the write, as a synchronized write fails when its sync does."""
        self.pwrite(fd, data, offset)
        synced = Fdatasync(self._fds[fd], start=offset, end=offset + len(data))
        if self._fails(directory=False):
            self.record(replace(synced, ok=False))
            raise OSError(errno.EIO, "injected failure of a synchronized write")
        self.record(synced)

    def truncate(self, fd: int, size: int) -> None:
        super().truncate(fd, size)
        self.record(Truncate(self._fds[fd], size))

    def fdatasync(self, fd: int) -> None:
        if self.gate is not None:
            self.gate.at_sync()
        if self._fails(directory=False):
            self.record(Fdatasync(self._fds[fd], ok=False))
            raise OSError(errno.EIO, "injected fdatasync failure")
        self.record(Fdatasync(self._fds[fd]))

    def fsync_dir(self, path: str) -> None:
        directory = self._inode(path) if os.path.abspath(path) != str(self.root) else ROOT
        if self._fails(directory=True):
            self.record(FsyncDir(directory, ok=False))
            raise OSError(errno.EIO, "injected directory fsync failure")
        self.record(FsyncDir(directory))

    def link(self, source: str, target: str) -> None:
        inode = self._inode(source)
        super().link(source, target)
        self._apply(Link(*self._locate(target), inode))

    def unlink(self, path: str) -> None:
        inode = self._inode(path)
        super().unlink(path)
        self._apply(Unlink(*self._locate(path), inode))

    def mkdir(self, path: str) -> None:
        super().mkdir(path)
        self._apply(Mkdir(*self._locate(path), self._allocate()))

    def lock(self, fd: int) -> None:
        super().lock(fd)
        self.record(Lock())

    def unlock(self, fd: int) -> None:
        super().unlock(fd)
        self.record(Lock(unlock=True))

    def lock_append(self, fd: int) -> None:
        if self.gate is not None:
            self.gate.at_append_lock()
        super().lock_append(fd)
        self.record(Lock(append=True))

    def unlock_append(self, fd: int) -> None:
        self.record(Lock(unlock=True, append=True))  # recorded while held: no other writer's op comes between
        super().unlock_append(fd)
