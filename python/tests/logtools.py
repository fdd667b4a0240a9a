"""Shared helpers: building logs, damaging them, and proving readers never write."""

from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import pytest

from openbinlog import Entry, Reader, Writer
from openbinlog._fs import OsFileSystem
from openbinlog._segment import SegmentHeaderInfo, parse_header

T = TypeVar("T")

Op = bytes | None  # a payload to append, or None for a cutover


def write_log(directory: Path, ops: Sequence[Op], **writer_options: object) -> list[bytes]:
    """Run ``ops`` through a Writer; return the payloads in the order appended."""
    appended: list[bytes] = []
    with Writer(directory, **writer_options) as writer:  # type: ignore[arg-type]
        for op in ops:
            if op is None:
                writer.cutover()
            else:
                writer.append(op)
                appended.append(op)
    return appended


T0 = 1_700_000_000_000_000  # a timestamp of 2023, in microseconds: the clock of the logs tests write
SeekItem = tuple[bytes, int | None, int] | None  # an item of ``strategies.seek_logs``


def write_seek_log(directory: Path, items: Sequence[SeekItem], removed: int = 0) -> list[Entry]:
    """Write the log ``items`` describe (``strategies.seek_logs``: a payload, its asqn step and its clock step,
    or None for a cutover), remove its ``removed`` lowest segments as retention does (never the last), and
    return what a read from the start returns."""
    now, asqn = [T0], -1
    with Writer(directory, durability="os", clock_us=lambda: now[0]) as writer:
        for item in items:
            if item is None:
                writer.cutover()
                continue
            payload, step, gap = item
            now[0] += gap
            asqn = asqn if step is None else asqn + step
            writer.append(payload, asqn=-1 if step is None else asqn)
    logs = sorted(int(path.name[:8]) for path in directory.glob("*.dat"))
    for log in logs[: min(removed, len(logs) - 1)]:
        segment(directory, log).unlink()
    return read_entries(directory)


def read_entries(directory: Path, **reader_options: object) -> list[Entry]:
    with Reader(directory, **reader_options) as reader:  # type: ignore[arg-type]
        return list(reader)


def tree_digest(directory: Path) -> dict[str, str]:
    """Name, size, mode and content hash of every file: what a reader must never change."""
    digest: dict[str, str] = {}
    for root, _dirs, files in os.walk(directory):
        for name in files:
            path = Path(root) / name
            stat = path.stat()
            digest[str(path.relative_to(directory))] = (
                f"{stat.st_size}:{stat.st_mode:o}:{hashlib.sha256(path.read_bytes()).hexdigest()}"
            )
    return digest


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / "log"


def segment(directory: Path, log: int = 1) -> Path:
    return directory / f"{log:08d}.dat"


def flip_bit(path: Path, offset: int, bit: int = 0) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 1 << bit
    path.write_bytes(bytes(data))


def append_raw(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)


class FaultyFileSystem(OsFileSystem):
    """The real file system, with the faults a test asks for.

    ``fail_sync_after``: the n-th and later syncs raise EIO (``fdatasync``, and the sync of a synchronized
    write, which this file system makes by a write and an ``fdatasync``).
    ``drop_header_writes``: writes into the first 256 bytes of an existing
    segment are silently lost (a publish that never reached the disk).
    """

    def __init__(self, *, fail_sync_after: int | None = None, drop_header_writes: bool = False) -> None:
        self.fail_sync_after = fail_sync_after
        self.drop_header_writes = drop_header_writes
        self.syncs = 0

    def fdatasync(self, fd: int) -> None:
        self.syncs += 1
        if self.fail_sync_after is not None and self.syncs >= self.fail_sync_after:
            raise OSError(errno.EIO, "injected fdatasync failure")
        super().fdatasync(fd)

    def pwrite_synced(self, fd: int, data: bytes, offset: int) -> None:
        self.pwrite(fd, data, offset)
        self.fdatasync(fd)

    def pwrite(self, fd: int, data: bytes, offset: int) -> None:
        if self.drop_header_writes and offset < 256 and os.fstat(fd).st_size >= 256:
            return
        super().pwrite(fd, data, offset)


def commit_offset(path: Path) -> int:
    """The published commit point of a segment."""
    header = parse_header(path.read_bytes()[:256])
    assert isinstance(header, SegmentHeaderInfo)
    return header.commit.commit_offset


def assert_read_only(directory: Path, action: Callable[[], T]) -> T:
    before = tree_digest(directory)
    result = action()
    assert tree_digest(directory) == before, "a reader changed the directory"
    return result


def legacy_segment(records: list[bytes], *, log: int, closed: bool, next_log: int = 0) -> bytes:
    """A segment as jPOS-EE writes it: a 256-byte header, records from offset 248."""
    body = b"".join(len(r).to_bytes(4, "big", signed=True) + r for r in records)
    tail = 248 + len(body)
    header = (
        (252).to_bytes(4, "big")
        + (1).to_bytes(2, "big")
        + (1 if closed else 0).to_bytes(2, "big")
        + tail.to_bytes(8, "big")
        + log.to_bytes(4, "big")
        + next_log.to_bytes(4, "big")
    ).ljust(256, b"\0")
    data = bytearray(header)
    data[248 : 248 + len(body)] = body  # records overwrite the header's last 8 bytes
    return bytes(data) if len(data) >= 248 + len(body) else bytes(data[:248]) + body


def one_line_on_stderr(err: str, *needles: str) -> None:
    """What a failing ``binlog`` command prints: one line saying why, never a traceback."""
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1, err
    assert err.startswith("binlog: "), err
    for needle in needles:
        assert needle in err, (needle, err)
