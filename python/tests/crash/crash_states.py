"""The states a crash can leave, under five persistence models.

At each point of a trace (after ``ops[:k]`` completed), a model turns the
replayed state into a *scenario*: a base image plus independent axes, each
axis one unsynced operation with the ways it may have reached the disk.
Every combination of one option per axis is a crash state.

- P0, process crash: the page cache survives; the write in flight may stop
  at a 4 KiB page boundary (fault T2).
- P1, power loss under strict POSIX: from the durable state, every write or
  truncation since the file's last sync is kept, dropped or torn (at its
  middle and at 4 KiB boundaries), every directory entry since the
  directory's last fsync is kept or dropped, independently.
- P2, sector tearing: as P1, but each 512-byte (or 4 KiB) sector of an
  unsynced write is old or new on its own, and sectors of a region the
  write newly extended may also read as zeros or as garbage (T3 to T6).
- P3, byte tearing: the page cache survives except the write in flight,
  torn after any byte (T3). (A torn write whose newly extended rest reads
  as zeros is P2's: the size and the data reach the disk by sectors.)

P4 (media faults on committed data) starts from a finished log rather than
from a trace point: see ``media_faults``.
"""

from __future__ import annotations

import hashlib
import itertools
import random
from dataclasses import dataclass, field

from .disk_image import Image
from .fs_trace import (
    Create,
    DataOp,
    EntryOp,
    Link,
    Mkdir,
    Op,
    PointState,
    Pwrite,
    Truncate,
    Unlink,
    apply_data,
    apply_entry,
)

PAGE = 4096
SECTOR = 512
MODELS = ("P0", "P1", "P2", "P3")
# Above this many combinations at one point, a seeded sample is checked (and counted as sampled).
DEFAULT_CAP = 4096

Effect = DataOp | EntryOp
Option = tuple[str, tuple[Effect, ...]]


@dataclass
class Scenario:
    """A base image and the independent choices a crash makes on top of it."""

    base: Image
    axes: list[list[Option]] = field(default_factory=list)

    @property
    def size(self) -> int:
        total = 1
        for axis in self.axes:
            total *= len(axis)
        return total

    def build(self, choice: tuple[int, ...]) -> tuple[Image, str]:
        image = self.base.copy()
        labels = []
        for axis, picked in zip(self.axes, choice, strict=True):
            label, effects = axis[picked]
            for effect in effects:
                if isinstance(effect, Pwrite | Truncate):
                    image.files[effect.inode] = apply_data(image.files.get(effect.inode, b""), effect)
                else:
                    apply_entry(image, effect)
            labels.append(label)
        return image, ", ".join(labels) or "as is"

    def choices(self, cap: int, seed: int) -> tuple[list[tuple[int, ...]], bool]:
        """Every combination, or a seeded sample of ``cap`` of them; and whether it was sampled."""
        ranges = [range(len(axis)) for axis in self.axes]
        if self.size <= cap:
            return list(itertools.product(*ranges)), False
        rng = random.Random(seed)
        picked = {tuple(rng.randrange(len(axis)) for axis in self.axes) for _ in range(cap)}
        picked.add(tuple(0 for _ in self.axes))
        picked.add(tuple(len(axis) - 1 for axis in self.axes))
        return sorted(picked), True


def garbage(seed: str, size: int) -> bytes:
    """Stale bytes: deterministic, and unlike anything the writer wrote."""
    out = bytearray()
    counter = 0
    while len(out) < size:
        out += hashlib.blake2b(f"{seed}:{counter}".encode(), digest_size=64).digest()
        counter += 1
    return bytes(out[:size])


def _describe(op: Op) -> str:
    if isinstance(op, Pwrite):
        return f"pwrite(i{op.inode}@{op.offset}+{len(op.data)})"
    if isinstance(op, Truncate):
        return f"truncate(i{op.inode}->{op.size})"
    if isinstance(op, Create | Link | Unlink | Mkdir):
        return f"{type(op).__name__.lower()}({op.name})"
    return type(op).__name__.lower()


def _boundaries(op: Pwrite, step: int) -> list[int]:
    """Offsets inside the write (exclusive of both ends) that fall on a multiple of ``step``."""
    first = (op.offset // step + 1) * step
    return list(range(first, op.end, step))


def _prefix(op: Pwrite, end: int) -> Pwrite:
    return Pwrite(op.inode, op.offset, op.data[: end - op.offset])


def _entry_axis(op: EntryOp) -> list[Option]:
    return [(f"{_describe(op)} kept", (op,)), (f"{_describe(op)} dropped", ())]


def _p1_axis(op: DataOp) -> list[Option]:
    name = _describe(op)
    options: list[Option] = [(f"{name} kept", (op,)), (f"{name} dropped", ())]
    if isinstance(op, Pwrite) and len(op.data) > 1:
        cuts = sorted({op.offset + len(op.data) // 2, *_boundaries(op, PAGE)})
        options += [(f"{name} torn@{cut - op.offset}", (_prefix(op, cut),)) for cut in cuts]
    return options


def _p2_axis(op: DataOp, size_before: int, granularity: int, position: int) -> list[list[Option]]:
    """One axis per sector of the write: old or new, and zero or garbage where the write extends the file."""
    name = _describe(op)
    if isinstance(op, Truncate):
        return [[(f"{name} kept", (op,)), (f"{name} dropped", ())]]
    cuts = [op.offset, *_boundaries(op, granularity), op.end]
    axes = []
    for start, end in itertools.pairwise(cuts):
        piece = Pwrite(op.inode, start, op.data[start - op.offset : end - op.offset])
        where = f"{name}[{start}:{end}]"
        options: list[Option] = [(f"{where} new", (piece,)), (f"{where} old", ())]
        if end > size_before:
            fresh = max(start, size_before)
            options.append((f"{where} zeros", (Pwrite(op.inode, fresh, bytes(end - fresh)),)))
            stale = garbage(f"{position}:{start}", end - fresh)
            options.append((f"{where} garbage", (Pwrite(op.inode, fresh, stale),)))
        axes.append(options)
    return axes


def scenario(point: PointState, model: str, *, granularity: int = SECTOR) -> Scenario:
    """The crash states of ``model`` at ``point``, as a scenario."""
    if model == "P0":
        result = Scenario(point.volatile)
        op = point.in_flight
        if isinstance(op, Pwrite):
            cuts = _boundaries(op, PAGE)
            if cuts:
                name = _describe(op)
                result.axes.append(
                    [(f"{name} not started", ()), *((f"{name} cut@{c - op.offset}", (_prefix(op, c),)) for c in cuts)]
                )
        return result
    if model == "P3":
        result = Scenario(point.volatile)
        op = point.in_flight
        if isinstance(op, Pwrite):
            name = _describe(op)
            result.axes.append(
                [(f"{name} torn@{cut - op.offset}", (_prefix(op, cut),)) for cut in range(op.offset, op.end)]
            )
        return result
    if model not in ("P1", "P2"):
        raise ValueError(f"unknown persistence model {model}")
    result = Scenario(point.durable)
    sizes = {inode: len(content) for inode, content in point.durable.files.items()}
    for position, op in point.pending():
        if isinstance(op, Create | Mkdir | Link | Unlink):
            result.axes.append(_entry_axis(op))
        elif model == "P1":
            result.axes.append(_p1_axis(op))
        else:
            before = sizes.get(op.inode, 0)
            result.axes += _p2_axis(op, before, granularity, position)
            sizes[op.inode] = op.size if isinstance(op, Truncate) else max(before, op.end)
    return result
