"""The operations a writer performed, in order, with the state they started from.

A trace holds every file operation that can change something (create and
open for writing, pwrite, truncate, fdatasync, directory fsync, link,
unlink, mkdir), the lock operations, and
marks the test harness adds (an append acknowledged, a cutover begun).
Replaying it gives the file state at every point, in the page cache
(volatile) and on stable storage (durable), which is what the crash-state
enumerator needs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from .disk_image import Image


@dataclass(frozen=True)
class Create:
    """A new, empty file entered in a directory."""

    dir: int
    name: str
    inode: int


@dataclass(frozen=True)
class Open:
    """An existing file opened for writing (no effect on the state; kept so the trace reads as it ran)."""

    inode: int
    name: str


@dataclass(frozen=True)
class Mkdir:
    dir: int
    name: str
    inode: int


@dataclass(frozen=True)
class Link:
    dir: int
    name: str
    inode: int


@dataclass(frozen=True)
class Unlink:
    dir: int
    name: str
    inode: int


@dataclass(frozen=True)
class Pwrite:
    inode: int
    offset: int
    data: bytes

    @property
    def end(self) -> int:
        return self.offset + len(self.data)


@dataclass(frozen=True)
class Truncate:
    inode: int
    size: int


@dataclass(frozen=True)
class Fdatasync:
    """A sync of the file; with ``end``, of its bytes ``start`` to ``end`` only (a synchronized write's,
    ``pwrite_synced``): pending writes keep their bytes outside that range pending."""

    inode: int
    ok: bool = True
    start: int = 0
    end: int | None = None


@dataclass(frozen=True)
class FsyncDir:
    dir: int
    ok: bool = True


@dataclass(frozen=True)
class Lock:
    unlock: bool = False
    append: bool = False  # byte 0 alone: the append lock of a writer that shares its syncs (spec 6.8)


@dataclass(frozen=True)
class Mark:
    """A harness event: ``ack`` (value = highest acknowledged index), ``cutover``, ``recovered``."""

    kind: str
    value: int = 0


EntryOp = Create | Mkdir | Link | Unlink
DataOp = Pwrite | Truncate
Op = EntryOp | DataOp | Fdatasync | FsyncDir | Lock | Mark | Open


def apply_data(content: bytes, op: DataOp) -> bytes:
    if isinstance(op, Truncate):
        return content[: op.size] + bytes(max(op.size - len(content), 0))
    if op.offset > len(content):
        content += bytes(op.offset - len(content))
    return content[: op.offset] + op.data + content[op.end :]


def split_pending(
    pending: list[tuple[int, DataOp]], start: int, end: int
) -> tuple[list[tuple[int, DataOp]], list[tuple[int, DataOp]]]:
    """The pending writes' pieces inside ``start`` to ``end`` (what a sync of that range makes durable) and
    the pieces outside it (still pending), each with its write's position. Bytes outside the range but in
    one of its pages may reach the disk too: leaving them pending lets a crash keep or drop them."""
    inside: list[tuple[int, DataOp]] = []
    outside: list[tuple[int, DataOp]] = []
    for position, op in pending:
        if isinstance(op, Truncate):
            # The writer never syncs a range over a pending change of size; a model of it would be a guess.
            raise NotImplementedError(f"a range sync of {start} to {end} over a pending truncation at {position}")
        low, high = max(op.offset, start), min(op.end, end)
        if low >= high:
            outside.append((position, op))
            continue
        inside.append((position, Pwrite(op.inode, low, op.data[low - op.offset : high - op.offset])))
        if op.offset < low:
            outside.append((position, Pwrite(op.inode, op.offset, op.data[: low - op.offset])))
        if high < op.end:
            outside.append((position, Pwrite(op.inode, high, op.data[high - op.offset :])))
    return inside, outside


def apply_entry(image: Image, op: EntryOp) -> None:
    entries = image.dirs.setdefault(op.dir, {})
    if isinstance(op, Unlink):
        if entries.get(op.name) == op.inode:
            del entries[op.name]
        return
    entries[op.name] = op.inode
    if isinstance(op, Mkdir):
        image.dirs.setdefault(op.inode, {})
    elif isinstance(op, Create):
        image.files.setdefault(op.inode, b"")


@dataclass
class PointState:
    """Everything a crash at one point of a trace can depend on."""

    position: int  # ops[:position] have completed
    volatile: Image  # the page cache: what a process crash leaves
    durable: Image  # what survives a power loss for sure
    pending_data: dict[int, list[tuple[int, DataOp]]]  # per file: unsynced writes and truncations, by position
    pending_entries: dict[int, list[tuple[int, EntryOp]]]  # per directory: entries not yet fsynced, by position
    acked: int  # highest index acknowledged before this point
    in_flight: Op | None  # ops[position], the operation a crash would interrupt

    def pending(self) -> list[tuple[int, DataOp | EntryOp]]:
        """Every unsynced operation with its position, in the order the trace issued them."""
        merged: list[tuple[int, DataOp | EntryOp]] = []
        for data_ops in self.pending_data.values():
            merged += data_ops
        for entry_ops in self.pending_entries.values():
            merged += entry_ops
        return sorted(merged, key=lambda item: item[0])


@dataclass
class Trace:
    initial: Image
    ops: list[Op] = field(default_factory=list)
    expected: list[tuple[bytes, int]] = field(default_factory=list)  # (payload, asqn) of index 1, 2, ...
    base_acked: int = 0  # records committed before the trace started
    durability: str = "sync"
    # What a failed fdatasync does to the writes it should have synced. False: they stay pending, a
    # later sync persists them. True (Linux): the kernel marks their pages clean, so no later sync
    # writes them unless they are written again; they stay readable in the page cache meanwhile.
    failed_sync_marks_clean: bool = False

    def mark_position(self, kind: str) -> int | None:
        """Position of the first mark of ``kind``."""
        for position, op in enumerate(self.ops):
            if isinstance(op, Mark) and op.kind == kind:
                return position
        return None

    def points(self, start: int = 0) -> Iterator[PointState]:
        """The state at every crash point from ``start`` to the end, replaying once."""
        volatile = self.initial.copy()
        durable = self.initial.copy()
        pending_data: dict[int, list[tuple[int, DataOp]]] = {}
        pending_entries: dict[int, list[tuple[int, EntryOp]]] = {}
        acked = self.base_acked
        for position in range(len(self.ops) + 1):
            in_flight = self.ops[position] if position < len(self.ops) else None
            if position >= start:
                yield PointState(
                    position,
                    volatile.copy(),
                    durable.copy(),
                    {inode: list(ops) for inode, ops in pending_data.items() if ops},
                    {inode: list(ops) for inode, ops in pending_entries.items() if ops},
                    acked,
                    in_flight,
                )
            op = in_flight
            if op is None:
                break
            if isinstance(op, Pwrite | Truncate):
                volatile.files[op.inode] = apply_data(volatile.files.get(op.inode, b""), op)
                pending_data.setdefault(op.inode, []).append((position, op))
            elif isinstance(op, Create | Mkdir | Link | Unlink):
                apply_entry(volatile, op)
                pending_entries.setdefault(op.dir, []).append((position, op))
                if isinstance(op, Create):
                    durable.files.setdefault(op.inode, b"")
                if isinstance(op, Mkdir):
                    durable.dirs.setdefault(op.inode, {})
            elif isinstance(op, Fdatasync) and op.end is not None:
                synced, left = split_pending(pending_data.pop(op.inode, []), op.start, op.end)
                pending_data[op.inode] = left
                if op.ok:
                    content = durable.files.get(op.inode, b"")
                    for _, data_op in synced:
                        content = apply_data(content, data_op)
                    durable.files[op.inode] = content
                elif not self.failed_sync_marks_clean:
                    pending_data[op.inode] = sorted(synced + left, key=lambda item: item[0])
            elif isinstance(op, Fdatasync) and op.ok:
                content = durable.files.get(op.inode, b"")
                for _, data_op in pending_data.pop(op.inode, []):
                    content = apply_data(content, data_op)
                durable.files[op.inode] = content
            elif isinstance(op, Fdatasync) and self.failed_sync_marks_clean:
                pending_data.pop(op.inode, None)
            elif isinstance(op, FsyncDir) and op.ok:
                durable.dirs[op.dir] = dict(volatile.dirs.get(op.dir, {}))
                pending_entries.pop(op.dir, None)
            elif isinstance(op, Mark) and op.kind == "ack":
                acked = max(acked, op.value)
