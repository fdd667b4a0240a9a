"""Verification and recovery as library calls: typed reports, repair only on request."""

from __future__ import annotations

import contextlib
import os
from dataclasses import asdict, dataclass, field
from typing import Any

from ._fs import OsFileSystem
from ._index_build import IndexNote, check_indexes
from ._reader import Reader
from ._recovery import RecoveryAction, plan_open
from ._segment import LegacyHeaderInfo
from ._segment_file import LocalDirectory, require_log_directory
from ._writer import Writer
from .errors import BinlogError, BinlogIOError, OvertakenError
from .walk import OPEN_ATTEMPTS, Damage, all_zero, present_segment, tail_walk


@dataclass
class TailReport:
    """Bytes beyond the last segment's commit point: never damage, only what recovery would do."""

    commit_offset: int
    valid_end: int
    adoptable_records: int
    extra_bytes: int
    stop_reason: str


@dataclass
class SegmentReport:
    log: int
    path: str
    version: int
    state: str  # open, sealed, finished (a successor exists), blank
    base_index: int | None
    records: int = 0
    first_index: int | None = None
    last_index: int | None = None
    commit_offset: int | None = None
    file_size: int = 0
    tail: TailReport | None = None


@dataclass
class VerifyReport:
    directory: str
    segments: list[SegmentReport] = field(default_factory=list)
    damage: list[Damage] = field(default_factory=list)
    records: int = 0
    first_index: int | None = None
    last_index: int | None = None
    indexes: list[IndexNote] = field(default_factory=list)  # notes on the sparse indexes, never damage

    @property
    def ok(self) -> bool:
        """True when every committed byte checked out (a torn tail is not damage)."""
        return not self.damage

    def to_dict(self) -> dict[str, Any]:
        result = asdict(self)
        result["ok"] = self.ok
        return result

    def __str__(self) -> str:
        span = "" if self.first_index is None else f", indexes {self.first_index}..{self.last_index}"
        head = f"{self.directory}: {len(self.segments)} segments, {self.records} records{span}"
        if self.ok:
            return f"{head}: intact"
        lines = [f"{head}: {len(self.damage)} damaged region(s)"]
        lines += [f"  {damage}" for damage in self.damage]
        return "\n".join(lines)


def _describe(logs: LocalDirectory, log: int, present: list[int]) -> SegmentReport | None:
    """A segment's state; for the last segment, also what lies beyond its end (never damage).

    None when the segment is gone since the listing: retention removes the
    lowest ones while verify runs, and the walk below decides from a fresh
    listing whether anything is missing.
    """
    successor = present_segment(logs, log + 1, present)
    if successor is not None:
        successor.close()
    has_successor = successor is not None
    opened = logs.open(log)
    if opened is None:
        return None
    with opened as segment:
        size = segment.stored_size()  # on disk: a compressed copy is not unpacked to be measured
        if segment.is_blank():
            return SegmentReport(log, segment.path, 0, "blank", None, file_size=size)
        header = segment.header()
        if isinstance(header, LegacyHeaderInfo):
            # A version 1 segment is finished only when closed, whatever follows it (Appendix B.4).
            state = "sealed" if header.closed else "open"
            report = SegmentReport(log, segment.path, 1, state, None, commit_offset=header.tail, file_size=size)
            if not has_successor:
                torn = 0 if all_zero(segment, header.tail) else size - header.tail
                report.tail = TailReport(header.tail, header.tail, 0, torn, "legacy")
            return report
        commit = segment.commit(header)
        state = "sealed" if commit.closed else "finished" if has_successor else "open"
        report = SegmentReport(
            log, segment.path, 2, state, header.base_index, commit_offset=commit.commit_offset, file_size=size
        )
        if not has_successor:
            scan = tail_walk(segment, log=log, commit=commit)
            extra = scan.extra_bytes
            if header.preallocated and all_zero(segment, scan.end):
                extra = 0  # unwritten space, not a torn tail
            report.tail = TailReport(commit.commit_offset, scan.end, scan.records, extra, scan.stop.reason)
        return report


def verify(directory: str | os.PathLike[str]) -> VerifyReport:
    """Check every committed record of the log; report damage instead of raising.

    A log that cannot be read (``BinlogIOError``: not a log, an unreadable
    segment) raises: it was not checked, which is not the same as damaged.

    Damage is reported with segment, offset and index; reading resumes at the
    next provably valid record. Bytes beyond the commit point are described
    in the last segment's ``tail`` and are never damage. When retention
    removes the segments verify is reading, it starts again from the lowest
    segment left.
    """
    for _ in range(OPEN_ATTEMPTS - 1):
        with contextlib.suppress(OvertakenError):
            return _verify_once(os.fspath(directory))
    return _verify_once(os.fspath(directory))


def _verify_once(path: str) -> VerifyReport:
    report = VerifyReport(path)
    logs_dir = LocalDirectory(path)
    logs = logs_dir.segments()
    by_log: dict[int, SegmentReport] = {}
    for log in logs:
        try:
            segment_report = _describe(logs_dir, log, logs)
        except BinlogIOError:
            raise  # the log could not be checked: not damage
        except BinlogError as exc:
            report.damage.append(Damage.from_error(exc.located(path=path, log=log), bytes_skipped=0, next_index=None))
            continue
        if segment_report is None:
            continue
        report.segments.append(segment_report)
        by_log[log] = segment_report
    if report.damage:
        return report
    reader = Reader(path, tolerant=True)
    try:
        for entry in reader:
            report.records += 1
            if report.first_index is None:
                report.first_index = entry.index
            report.last_index = entry.index
            seg = by_log.get(entry.log)
            if seg is not None:
                seg.records += 1
                seg.first_index = entry.index if seg.first_index is None else seg.first_index
                seg.last_index = entry.index
    except (BinlogIOError, OvertakenError):
        raise
    except BinlogError as exc:
        report.damage.append(Damage.from_error(exc, bytes_skipped=0, next_index=None))
    finally:
        reader.close()
    report.damage[:0] = reader.damage
    report.indexes = check_indexes(path)
    return report


class _RecoveringWriter(Writer):
    """A writer's open, without creating a log where none is left: recovery restores, it does not create."""

    _creates_log = False


def recover(
    directory: str | os.PathLike[str],
    *,
    dry_run: bool = False,
    backup_dir: str | os.PathLike[str] | None = None,
    check_committed: bool = True,
) -> list[RecoveryAction]:
    """Bring the log to a state a writer may append to; return what was (or would be) done.

    The writer's recovery planner decides, for the dry run too, so both list
    the same actions and refuse the same logs. Recovery never touches
    committed data: damage at or below a commit point raises instead, and a
    refusal changes no file. ``backup_dir`` keeps a copy of every byte removed.
    ``check_committed=False`` skips the check of committed records (W-26), for
    an operator who repairs the tail of a log whose damage is reported apart.
    """
    path = os.fspath(directory)
    require_log_directory(path)
    if dry_run:
        return plan_open(OsFileSystem(), path, verify=check_committed).actions()
    with _RecoveringWriter(path, backup_dir=backup_dir, verify_on_open=check_committed) as writer:
        return list(writer.recovery)
