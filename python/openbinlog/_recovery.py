"""Recovery decisions (spec section 7): what opening the log for writing changes, decided once.

One planner serves the writer, which carries its plan out under the lock,
and the dry run, which reports it: the two cannot disagree. The planner only
reads, and every refusal (a version 1 log, a damaged header, damaged
committed data) is decided before the writer changes anything.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from ._format import HEADER_SIZE, SEGMENT_NAME, SLOT_OFFSETS, segment_name
from ._fs import FileSystem
from ._records import RecordDecoder
from ._segment import CommitState, LegacyHeaderInfo, SegmentHeaderInfo
from ._segment_file import SegmentFile
from .errors import BadHeaderError, BinlogError, BinlogIOError, LegacyLogError
from .walk import TailScan, all_zero, is_blank, next_entries, read_header, tail_walk

# Left by a cutover (section 8.2) or a spare volume (6.5): stale unless a live writer holds it.
CUTOVER_TEMP = re.compile(r"\.[0-9]{8}\.dat\.[0-9a-f]+\.tmp")
# Left by compression (section 2.6): stale unless the compressing process holds it.
COMPRESSION_TEMP = re.compile(r"\.[0-9]{8}\.dat\.(?:gz|zst)\.[0-9a-f]+\.tmp")
# Left by an index builder (section 18.4): stale unless the building process holds it.
INDEX_TEMP = re.compile(r"\.[0-9]{8}\.idx\.[0-9a-f]+\.tmp")


def is_temp_name(name: str) -> bool:
    """A temporary file of section 7.4 (``fullmatch``: no trailing newline, ASCII digits only)."""
    return any(pattern.fullmatch(name) is not None for pattern in (CUTOVER_TEMP, COMPRESSION_TEMP, INDEX_TEMP))


@dataclass
class RecoveryAction:
    """One change recovery made (or would make) to the directory."""

    action: str  # truncate_tail, zero_tail, adopt_records, remove_temp, remove_blank_segment, seal, create_successor
    path: str
    log: int | None = None
    offset: int | None = None
    bytes: int = 0
    records: int = 0
    detail: str = ""


@dataclass(frozen=True, slots=True)
class FdSource:
    """A descriptor opened through a ``FileSystem``, as a source of the walk: crash traces see its reads."""

    fs: FileSystem
    fd: int

    def read_at(self, offset: int, size: int) -> bytes:
        return self.fs.pread(self.fd, size, offset)

    def size(self) -> int:
        return self.fs.size(self.fd)


@dataclass(frozen=True, slots=True)
class TailPlan:
    """Steps 2 to 5 of section 7.2 for one segment: what to clear after ``scan.end``, what to adopt."""

    log: int
    path: str
    commit: CommitState
    scan: TailScan
    clear: str | None  # truncate_tail, zero_tail, or nothing to clear
    adopted: CommitState | None  # the commit state to publish, when records are adopted

    @property
    def changes(self) -> bool:
        return self.clear is not None or self.adopted is not None

    @property
    def result(self) -> CommitState:
        return self.adopted or self.commit

    def actions(self) -> list[RecoveryAction]:
        found: list[RecoveryAction] = []
        if self.clear is not None:
            found.append(
                RecoveryAction(
                    self.clear,
                    self.path,
                    log=self.log,
                    offset=self.scan.end,
                    bytes=self.scan.extra_bytes,
                    detail=self.scan.stop.reason,
                )
            )
        if self.adopted is not None:
            found.append(
                RecoveryAction(
                    "adopt_records",
                    self.path,
                    log=self.log,
                    offset=self.commit.commit_offset,
                    records=self.scan.records,
                )
            )
        return found


def plan_tail(
    source: FdSource,
    *,
    log: int,
    path: str,
    header: SegmentHeaderInfo,
    commit: CommitState,
    stop_before_index: int | None = None,
) -> TailPlan:
    """Section 7.2 for the segment in ``source``: walk the tail from the commit point and decide."""
    scan = tail_walk(source, log=log, commit=commit, stop_before_index=stop_before_index)
    clear: str | None = None
    if scan.extra_bytes:
        if not header.preallocated:
            clear = "truncate_tail"
        elif not all_zero(source, scan.end):  # zeros after the end are unwritten space, not a torn tail
            clear = "zero_tail"
    adopted = None
    if scan.end > commit.commit_offset:  # step 5: publish whenever X > C, skippable records included
        adopted = replace(
            commit,
            generation=commit.generation + 1,
            commit_offset=scan.end,
            next_index=scan.next_index,
            last_asqn=scan.last_asqn,
            last_timestamp_us=scan.last_timestamp_us,
        )
    return TailPlan(log, path, commit, scan, clear, adopted)


@dataclass(frozen=True, slots=True)
class SealPlan:
    """Section 8.5: a finished predecessor left open by an interrupted cutover, and its sealed state."""

    tail: TailPlan
    sealed: CommitState


@dataclass(frozen=True, slots=True)
class LastSegment:
    """The last segment once blank ones are gone, and what recovery does to it."""

    log: int
    header: SegmentHeaderInfo
    commit: CommitState
    compressed: bool  # only a compressed copy is left (a blank successor stood behind it)
    tail: TailPlan | None  # section 7.2, for an open segment

    @property
    def create_successor(self) -> bool:
        """Sealed, and no successor: a cutover stopped after sealing (W-29)."""
        return self.commit.closed


@dataclass
class OpenPlan:
    """Everything opening the log for writing changes (sections 7.4, 8.5, 8.2 step 4 and 7.2), in order."""

    directory: str
    temps: list[str] = field(default_factory=list)
    blanks: list[int] = field(default_factory=list)  # highest first
    last: LastSegment | None = None  # None: the log holds no segment
    seal: SealPlan | None = None

    def actions(self) -> list[RecoveryAction]:
        found = [RecoveryAction("remove_temp", os.path.join(self.directory, name)) for name in self.temps]
        found += [
            RecoveryAction("remove_blank_segment", os.path.join(self.directory, segment_name(log)), log=log)
            for log in self.blanks
        ]
        if self.seal is not None:
            tail = self.seal.tail
            found += tail.actions()
            found.append(RecoveryAction("seal", tail.path, log=tail.log, offset=self.seal.sealed.commit_offset))
        if self.last is not None and self.last.tail is not None:
            found += self.last.tail.actions()
        if self.last is not None and self.last.create_successor:
            successor = self.last.log + 1
            found.append(
                RecoveryAction("create_successor", os.path.join(self.directory, segment_name(successor)), log=successor)
            )
        return found


@contextmanager
def _opened(fs: FileSystem, path: str) -> Iterator[FdSource]:
    try:
        fd = fs.open_read(path)
    except OSError as exc:
        raise BinlogIOError(f"cannot open a segment: {exc.strerror}", path=path) from exc
    try:
        yield FdSource(fs, fd)
    finally:
        fs.close(fd)


def plan_open(fs: FileSystem, directory: str, *, verify: bool) -> OpenPlan:
    """What a writer opening ``directory`` does to it, or the error with which it refuses.

    Reads only. ``verify``: check the last segment's committed records (W-26).
    """
    plan = OpenPlan(directory)
    try:
        names = fs.listdir(directory)
    except OSError as exc:
        raise BinlogIOError(f"cannot list the log directory: {exc.strerror}", path=directory) from exc
    plan.temps = sorted(name for name in names if is_temp_name(name) and not fs.held(os.path.join(directory, name)))
    present = {name for name in names if SEGMENT_NAME.match(name)}
    logs = sorted({int(match[1]) for name in present if (match := SEGMENT_NAME.match(name))})
    while logs and segment_name(logs[-1]) in present:  # a compressed copy is sealed, never blank
        with _opened(fs, os.path.join(directory, segment_name(logs[-1]))) as source:
            if not is_blank(source):
                break
        plan.blanks.append(logs.pop())  # its header never became durable: it never held a record
    if not logs:
        return plan
    if segment_name(logs[-1]) in present:
        plan.last = _plan_last(fs, directory, logs[-1], verify=verify)
    else:
        plan.last = _plan_compressed_last(directory, logs[-1])
    if len(logs) > 1 and logs[-2] == logs[-1] - 1:  # a gap below the last segment: nothing to seal (8.5)
        plan.seal = _plan_seal(fs, directory, logs[-2], plan.last.header)
    return plan


def _plan_last(fs: FileSystem, directory: str, log: int, *, verify: bool) -> LastSegment:
    path = os.path.join(directory, segment_name(log))
    with _opened(fs, path) as source:
        try:
            header = _writable(read_header(source, log), path)
            commit = header.commit
            if verify:
                _check_committed(source, header, commit)
        except BinlogError as exc:
            raise exc.located(path=path) from None
        tail = None if commit.closed else plan_tail(source, log=log, path=path, header=header, commit=commit)
    return LastSegment(log, header, commit, False, tail)


def _plan_compressed_last(directory: str, log: int) -> LastSegment:
    """Compression takes sealed segments only: such a last segment needs a successor, nothing else."""
    with SegmentFile(directory, log) as segment:
        header = _writable(segment.header(), segment.path)
    return LastSegment(log, header, header.commit, True, None)


def _writable(header: SegmentHeaderInfo | LegacyHeaderInfo, path: str) -> SegmentHeaderInfo:
    if isinstance(header, LegacyHeaderInfo):
        raise LegacyLogError(
            "a version 1 (jPOS-EE) log is read-only: writers write version 2 only", path=path, log=header.log, offset=4
        )
    return header


def _check_committed(source: FdSource, header: SegmentHeaderInfo, commit: CommitState) -> None:
    """W-26: every committed record of the last segment checks out in committed mode, from its base index with
    previous asqn -1 (the segment on its own), and the walk ends at the commit point with the slot's next index
    (R-39)."""
    decoder = RecordDecoder(
        log=header.log, offset=HEADER_SIZE, next_index=header.base_index, limit=commit.commit_offset
    )
    fed = HEADER_SIZE
    while True:
        entries, fed = next_entries(decoder, source, fed=fed, end=commit.commit_offset)
        if not entries:
            break
    if decoder.next_index != commit.next_index:
        raise BadHeaderError(
            f"the records end before index {decoder.next_index}, the commit slot says {commit.next_index}",
            log=header.log,
            offset=SLOT_OFFSETS[commit.generation % 2],
            index=decoder.next_index,
        )


def _plan_seal(fs: FileSystem, directory: str, log: int, successor: SegmentHeaderInfo) -> SealPlan | None:
    """Section 8.5: seal ``log`` when it is a finished segment left open before ``successor``."""
    path = os.path.join(directory, segment_name(log))
    if not fs.exists(path):
        return None  # only a compressed copy: compression takes sealed segments only
    with _opened(fs, path) as source:
        try:
            header = read_header(source, log)
            if isinstance(header, LegacyHeaderInfo) or header.commit.closed:
                return None
            tail = plan_tail(
                source, log=log, path=path, header=header, commit=header.commit, stop_before_index=successor.base_index
            )
        except BinlogError as exc:
            raise exc.located(path=path) from None
    if tail.scan.next_index != successor.base_index:
        return None  # the chain is broken: readers report it, a writer does not paper over it
    sealed = replace(tail.result, generation=tail.result.generation + 1, next_log_number=successor.log)
    return SealPlan(tail, sealed)
