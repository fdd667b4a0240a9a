"""Carrying out recovery (spec protocols.md 7.1 to 7.4, 8.5, W-29; 6.2 steps 2 to 5): open the last segment,
clean the directory, seal a finished predecessor, recover a tail, keep a backup of what is removed.

What to do is decided first by the planner in ``_recovery`` (``plan_open``,
``plan_tail``), which the dry run shares, so a refusal changes no file; this
module makes the changes it planned, through the writer's file system.
"""

from __future__ import annotations

import functools
import os
import secrets
from collections.abc import Callable

from ._commit import OpenSegment
from ._cutover import CutoverMixin
from ._format import HEADER_SIZE, NO_ASQN, RECORD_HEADER_SIZE, segment_name
from ._recovery import FdSource, LastSegment, RecoveryAction, SealPlan, TailPlan, plan_open, plan_tail
from ._segment import CommitState, SegmentHeaderInfo, parse_header
from ._writer_base import ZERO_CHUNK
from .errors import BinlogError


@functools.lru_cache(maxsize=64)
def successor_path(directory: str, log: int) -> str:
    """The path of segment ``log + 1``, looked for before every commit (W-16): built once per segment."""
    return os.path.join(directory, segment_name(log + 1))


class RecoveryMixin(CutoverMixin):
    """The writer's open and the tail check before each batch, as the recovery planner decided them."""

    _creates_log = True  # a directory left without segments gets segment 1 (spec 2.4)

    def _prepare(self) -> tuple[OpenSegment, CommitState]:
        """Under the lock: the last segment, its commit state, and a clean tail.

        An exclusive writer relies on what it published itself (W-39): it has
        held the lock since, so nobody else changed the files.
        """
        if self._known is not None:
            return self._known
        segment = self._segment
        if segment is not None and self._fs.exists(successor_path(self.directory, segment.log)):
            self._fs.close(segment.fd)
            self._segment = segment = None
        if segment is None:
            segment = self._open(verify=False)
            assert segment is not None  # only a recovering open leaves no segment, and it never commits
        commit = self._read_commit(segment)
        if commit.closed:
            # Sealed, yet no successor: a cutover stopped after sealing. Finish it (W-29).
            segment = self._create_successor(segment, commit)
            self.recovery.append(RecoveryAction("create_successor", segment.path, log=segment.log))
            commit = self._read_commit(segment)
        prepared = segment, self._recover_tail(segment, commit)
        if self._lock_held:
            self._known = prepared
        return prepared

    def _open(self, *, verify: bool) -> OpenSegment | None:
        """Under the lock: carry out the recovery plan (spec 7.4, 8.5, 8.2 step 4, 7.2), open the last segment.

        The plan is decided before anything changes, by the planner the dry run
        shares, so a refusal leaves every file as it was. A directory left
        without segments gets segment 1 (spec 2.4), unless this open only recovers.
        """
        plan = plan_open(self._fs, self.directory, verify=verify)
        for name in plan.temps:
            self._backup_file(self._path(name))
            self._fs.unlink(self._path(name))
        for log in plan.blanks:
            self._backup_file(self._path(segment_name(log)))
            self._fs.unlink(self._path(segment_name(log)))
        # Always: a previous writer's directory sync may have failed, and the
        # segments we are about to append to must not lose their names (W-25).
        self._fs.fsync_dir(self.directory)
        self.recovery += plan.actions()
        if plan.last is None:
            if not self._creates_log:
                return None
            self._segment = self._create_segment(
                1, log_id=secrets.token_bytes(16), base_index=1, last_asqn=NO_ASQN, last_timestamp_us=0
            )
            return self._segment
        if plan.seal is not None:
            self._apply_seal(plan.seal)
        return self._open_planned_last(plan.last)

    def _open_planned_last(self, last: LastSegment) -> OpenSegment:
        if last.compressed:
            # A sealed segment compressed while a blank successor stood behind it: continue after it (W-29).
            self._segment = self._next_segment(last.log, last.header.log_id, last.commit)
            return self._segment
        path = self._path(segment_name(last.log))
        segment = OpenSegment(last.log, path, self._fs.open_write(path), last.header)
        self._segment = segment
        if last.tail is not None:
            self._apply_tail(segment, last.tail)
            segment.tail_checked = True
        if last.create_successor:
            segment = self._create_successor(segment, last.commit)
        return segment

    def _apply_seal(self, plan: SealPlan) -> None:
        """Seal a predecessor left open by a cutover that stopped before sealing (spec 8.5)."""
        path = plan.tail.path
        fd = self._fs.open_write(path)
        try:
            header = parse_header(self._fs.pread(fd, HEADER_SIZE, 0), log=plan.tail.log)
            assert isinstance(header, SegmentHeaderInfo)
            segment = OpenSegment(plan.tail.log, path, fd, header)
            self._apply_tail(segment, plan.tail)
            self._publish(segment, plan.sealed)
            self._fs.fdatasync(fd)
        except BinlogError as exc:
            raise exc.located(path=path) from None
        finally:
            self._fs.close(fd)

    def _recover_tail(self, segment: OpenSegment, commit: CommitState) -> CommitState:
        """Adopt the valid records beyond the commit point, remove the rest (spec 7).

        A crashed process leaves bytes right at the commit point, so one probe
        per commit finds it; holes (zeros, then data) only come from a power
        loss, after which every writer starts by checking the whole tail once.
        """
        if self._tail_clear(segment, commit.commit_offset, self._fs.size(segment.fd)):
            segment.tail_checked = True
            return commit
        plan = plan_tail(
            FdSource(self._fs, segment.fd), log=segment.log, path=segment.path, header=segment.header, commit=commit
        )
        segment.tail_checked = True
        self.recovery += plan.actions()
        return self._apply_tail(segment, plan)

    def _tail_clear(self, segment: OpenSegment, at: int, size: int) -> bool:
        """The tail check of spec 7.1 at ``at`` in a file of ``size`` bytes: True when nothing lies there to
        recover. A preallocated segment this writer has not checked yet always needs the whole walk."""
        if size <= at:
            return True
        if not (segment.header.preallocated and segment.tail_checked):
            return False
        probe = self._fs.pread(segment.fd, RECORD_HEADER_SIZE, at)
        return probe == ZERO_CHUNK[: len(probe)]

    def _rewrite_as_read(
        self, segment: OpenSegment, start: int, end: int, then: bytes = b"", *, header: bytes | None = None
    ) -> None:
        """Write the header (``header``: as just read under the same lock) and the bytes ``start`` to ``end``
        again, exactly as read, followed by ``then``.

        After a failed sync Linux may have marked those pages clean, so what is read may never have reached
        the disk: written again, the next sync puts them there before a slot covers them (W-23, W-43).
        """
        self._fs.pwrite(segment.fd, header or self._fs.pread(segment.fd, HEADER_SIZE, 0), 0)
        walked = self._fs.pread(segment.fd, end - start, start) if end > start else b""
        if walked or then:
            self._fs.pwrite(segment.fd, walked + then, start)

    def _apply_tail(self, segment: OpenSegment, plan: TailPlan) -> CommitState:
        """Steps 3 to 5 of spec 7.2, as planned."""
        scan = plan.scan
        if not plan.changes:
            return plan.commit
        if plan.clear is not None:
            self._backup(
                segment.path, scan.end, scan.file_size - scan.end, lambda at, n: self._fs.pread(segment.fd, n, at)
            )
            if plan.clear == "zero_tail":
                self._zero_fill(segment.fd, scan.end, scan.file_size)
            else:
                self._fs.truncate(segment.fd, scan.end)
        if plan.adopted is not None:
            self._rewrite_as_read(segment, plan.commit.commit_offset, scan.end)
        self._fs.fdatasync(segment.fd)
        if plan.adopted is None:
            return plan.commit
        self._publish(segment, plan.adopted)
        self._fs.fdatasync(segment.fd)
        return plan.adopted

    def _backup(self, path: str, offset: int, size: int, read_at: Callable[[int, int], bytes]) -> None:
        """Copy bytes recovery is about to remove, when the writer was asked to keep them.

        Through the file-system layer like every other write, so crash traces
        see it: the copy and its name are durable before recovery removes anything.
        """
        if self.backup_dir is None or size <= 0:
            return
        self._make_directories(self.backup_dir)
        target = os.path.join(self.backup_dir, f"{os.path.basename(path)}@{offset}")
        fd = self._fs.open_write(target, create=True)
        try:
            self._fs.truncate(fd, 0)  # a copy left by an earlier run of the same recovery is replaced whole
            done = 0
            while done < size:
                chunk = read_at(offset + done, min(len(ZERO_CHUNK), size - done))
                if not chunk:
                    break
                self._fs.pwrite(fd, chunk, done)
                done += len(chunk)
            self._fs.fdatasync(fd)
        finally:
            self._fs.close(fd)
        self._fs.fsync_dir(self.backup_dir)

    def _make_directories(self, path: str) -> None:
        missing: list[str] = []
        while not self._fs.exists(path):
            missing.append(path)
            parent = os.path.dirname(path)
            if parent == path:
                break
            path = parent
        for directory in reversed(missing):
            self._fs.mkdir(directory)

    def _backup_file(self, path: str) -> None:
        if self.backup_dir is None:
            return
        fd = self._fs.open_read(path)
        try:
            self._backup(path, 0, self._fs.size(fd), lambda at, n: self._fs.pread(fd, n, at))
        finally:
            self._fs.close(fd)

    def _zero_fill(self, fd: int, start: int, end: int) -> None:
        """Zero every non-zero byte in [start, end): stale records must never be adopted later.

        Backwards, so that a crash halfway leaves the non-zero bytes next to the
        commit point, where the next writer's probe finds them (W-22).
        """
        offset = end
        while offset > start:
            size = min(len(ZERO_CHUNK), offset - start)
            offset -= size
            if self._fs.pread(fd, size, offset) != ZERO_CHUNK[:size]:
                self._fs.pwrite(fd, ZERO_CHUNK[:size], offset)
