"""A writer process to be killed: appends until killed, reporting each acknowledged record.

Each line it writes is one of ``opened`` (the Writer constructor, and so
recovery, returned), ``cutover-begin`` / ``cutover-end``, or
``ack INDEX CHILD N`` once the append of the child's N-th payload returned
with that index. The parent kills it with SIGKILL whenever it likes; with
``stop_at`` the child stops itself (SIGSTOP) just before its N-th mutating
file operation so that the parent's SIGKILL lands exactly there, inside
recovery or a cutover as often as inside an append.

With ``writeback`` the child keeps every unsynced write in its own memory
until the file is synced, so that a kill loses what a power loss would lose.

Run as a script (``python kill_child.py DIR CHILD [options]``) it writes its
lines to stdout; the tests mostly fork it instead (``run_child``), which
spares each trial the interpreter start-up.
"""

from __future__ import annotations

import argparse
import os
import signal
from dataclasses import dataclass
from typing import Any

from openbinlog import HEADER_SIZE, Writer
from openbinlog._fs import OsFileSystem


def child_payload(child: int, n: int) -> bytes:
    tag = f"c{child}-n{n}:".encode()
    return tag * (1 + n % 5)


def parse_payload(data: bytes) -> tuple[int, int] | None:
    """(child, n) of a payload ``child_payload`` made, or None for anything else."""
    tag = data.split(b":", 1)[0]
    try:
        child, n = (int(part[1:]) for part in tag.decode().split("-"))
    except (UnicodeDecodeError, ValueError):
        return None
    return (child, n) if data == child_payload(child, n) else None


class ChildFileSystem(OsFileSystem):
    """The real file system, optionally with a process-private write-back cache, and a stop point."""

    def __init__(self, *, writeback: bool, stop_at: int | None, header_before_data: bool = False) -> None:
        self.writeback = writeback
        self.stop_at = stop_at
        # A deliberately broken writer, for the test of the tests: header writes
        # (the commit point) reach the disk at once, data syncs do nothing, so the
        # commit point lands before the records it covers (fault T7).
        self.header_before_data = header_before_data
        self.operations = 0
        self._inode_of: dict[int, int] = {}
        self._dirty: dict[int, bytearray] = {}  # inode -> the file as this process sees it

    def _mutating(self) -> None:
        self.operations += 1
        if self.operations == self.stop_at:
            os.kill(os.getpid(), signal.SIGSTOP)

    def _view(self, fd: int) -> bytearray:
        inode = self._inode_of.setdefault(fd, os.fstat(fd).st_ino)
        if inode not in self._dirty:
            self._dirty[inode] = bytearray(super().pread(fd, super().size(fd), 0))
        return self._dirty[inode]

    def open_write(self, path: str, *, create: bool = False, exclusive: bool = False) -> int:
        if create and not os.path.exists(path):
            self._mutating()
        fd = super().open_write(path, create=create, exclusive=exclusive)
        self._inode_of[fd] = os.fstat(fd).st_ino
        return fd

    def close(self, fd: int) -> None:
        self._inode_of.pop(fd, None)
        super().close(fd)

    def size(self, fd: int) -> int:
        inode = self._inode_of.get(fd)
        if inode in self._dirty:
            return len(self._dirty[inode])
        return super().size(fd)

    def pread(self, fd: int, size: int, offset: int) -> bytes:
        inode = self._inode_of.get(fd)
        if inode in self._dirty:
            return bytes(self._dirty[inode][offset : offset + size])
        return super().pread(fd, size, offset)

    def pwrite(self, fd: int, data: bytes, offset: int) -> None:
        self._mutating()
        if not self.writeback:
            super().pwrite(fd, data, offset)
            return
        view = self._view(fd)
        if offset > len(view):
            view.extend(bytes(offset - len(view)))
        view[offset : offset + len(data)] = data
        if self.header_before_data and offset < HEADER_SIZE:
            super().pwrite(fd, data, offset)

    def pwrite_synced(self, fd: int, data: bytes, offset: int) -> None:
        if not self.writeback:
            self._mutating()
            super().pwrite_synced(fd, data, offset)
            return
        self.pwrite(fd, data, offset)
        if not self.header_before_data:  # hand over these bytes alone: the rest of the file stays dirty
            super().pwrite(fd, bytes(self._view(fd)[offset : offset + len(data)]), offset)

    def truncate(self, fd: int, size: int) -> None:
        self._mutating()
        if not self.writeback:
            super().truncate(fd, size)
            return
        view = self._view(fd)
        del view[size:]
        view.extend(bytes(size - len(view)))

    def fdatasync(self, fd: int) -> None:
        self._mutating()
        if self.header_before_data:
            return
        inode = self._inode_of.get(fd)
        if inode in self._dirty:
            # The kernel's page cache is this model's stable storage: handing the
            # bytes over is the sync. A real fdatasync would only slow the trials.
            view = self._dirty.pop(inode)
            super().truncate(fd, len(view))
            super().pwrite(fd, bytes(view), 0)
            return
        if not self.writeback:
            super().fdatasync(fd)

    def fsync_dir(self, path: str) -> None:
        self._mutating()
        super().fsync_dir(path)

    def link(self, source: str, target: str) -> None:
        self._mutating()
        super().link(source, target)

    def unlink(self, path: str) -> None:
        self._mutating()
        super().unlink(path)


@dataclass
class ChildOptions:
    child: int
    cutover_every: int = 0  # 0: never
    batch_every: int = 4  # every so many appends, two records in one append_many
    writeback: bool = False
    stop_at: int | None = None
    header_before_data: bool = False  # a broken writer, for the test of the tests
    appends: int = 10_000  # exit normally after so many
    durability: str = (
        "sync"  # "process": appends are acknowledged by the flush() after them (W-40); "mmap" as they return
    )
    exclusive: bool = False  # the lock held from open to close: batches sync their records alone (6.2 step 8)


def run_child(directory: str, options: ChildOptions, out_fd: int) -> None:
    """Append until killed; report progress as lines on ``out_fd``."""

    def say(line: str) -> None:
        os.write(out_fd, f"{line}\n".encode())

    fs: OsFileSystem = ChildFileSystem(
        writeback=options.writeback, stop_at=options.stop_at, header_before_data=options.header_before_data
    )
    buffered = options.durability == "process"
    extra: dict[str, Any] = {"flush_interval": 3600} if buffered else {}
    if options.durability == "mmap":
        extra = {"preallocate": 1 << 14}
        if options.stop_at is None and not options.writeback:
            fs = OsFileSystem()  # the operating system's: stores go into a real shared mapping, killed anywhere
    if options.exclusive:
        extra["exclusive"] = True
    with Writer(directory, fs=fs, durability=options.durability, **extra) as writer:  # type: ignore[arg-type]
        say("opened")
        n = 0
        unflushed: list[str] = []
        for count in range(1, options.appends + 1):
            if options.batch_every and count % options.batch_every == 0:
                refs = writer.append_many([child_payload(options.child, n + 1), child_payload(options.child, n + 2)])
            else:
                refs = [writer.append(child_payload(options.child, n + 1))]
            for ref in refs:
                n += 1
                unflushed.append(f"ack {ref.index} {options.child} {n}")
            if not buffered or count % 3 == 0:
                if buffered:
                    writer.flush()
                for line in unflushed:
                    say(line)
                unflushed.clear()
            if options.cutover_every and count % options.cutover_every == 0:
                say("cutover-begin")
                writer.cutover()
                say("cutover-end")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory")
    parser.add_argument("child", type=int)
    parser.add_argument("--cutover-every", type=int, default=0)
    parser.add_argument("--writeback", action="store_true")
    parser.add_argument("--stop-at", type=int, default=None)
    parser.add_argument("--appends", type=int, default=10_000)
    parser.add_argument("--durability", default="sync")
    parser.add_argument("--exclusive", action="store_true")
    args = parser.parse_args()
    options = ChildOptions(
        args.child,
        cutover_every=args.cutover_every,
        writeback=args.writeback,
        stop_at=args.stop_at,
        appends=args.appends,
        durability=args.durability,
        exclusive=args.exclusive,
    )
    run_child(args.directory, options, 1)


if __name__ == "__main__":
    main()
