"""The commit of a batch by a writer that shares its syncs with writers of other processes (spec protocols.md 6.8).

Under the append lock (byte 0 of ``LOCK``) the writer finds the end of every
record written so far by the tail walk, writes the header and those records
again as read, then its own records after them. It syncs holding no lock, so
that writers of other processes write and sync meanwhile and the disk's
flushes cover several of them. Unless the active slot, read without a lock,
shows that a writer has already published beyond them, it publishes the end
of its own records under the append lock again.
What the append lock alone cannot do (a first batch, a successor, a tail to
recover, a cutover) is left to the ordinary batch of 6.2, under the whole lock.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from . import _accel
from ._commit import MAX_COUNTER, EncodedBatch, OpenSegment
from ._format import HEADER_SIZE, RECORD_HEADER_SIZE
from ._group_commit import Ticket
from ._records import encode_record
from ._recovery import FdSource
from ._recovery_exec import RecoveryMixin, successor_path
from ._ref import Ref
from ._segment import CommitState, SegmentHeaderInfo, active_commit
from ._segment_file import SegmentFile
from ._writer_base import MAX_LOG_NUMBER
from .errors import BinlogError, BinlogIOError
from .walk import tail_walk

if TYPE_CHECKING:
    from ._native import CommitTable as NativeCommitTable
    from ._native import SharedTarget


class SharedCommitMixin(RecoveryMixin):
    """Steps 1 to 9 of spec 6.8, for writers that do not hold the lock from open to close."""

    # The compiled batch's target, and the segment and lock it was made for.
    _shared_target: tuple[OpenSegment, tuple[int, tuple[int, int]], SharedTarget] | None = None

    if TYPE_CHECKING:  # defined by the writer, which takes and checks the lock (W-38)

        def _take_lock(self, *, append: bool = False) -> None: ...

    @contextmanager
    def _append_locked(self) -> Iterator[None]:
        self._take_lock(append=True)
        try:
            yield
        finally:
            self._fs.unlock_append(self._lock_fd)

    def _commit_shared(self, batch: list[Ticket], done: list[tuple[Ticket, Ref]]) -> bool:
        """Commit ``batch`` by spec 6.8 and add its refs to ``done``; False, having written nothing, when the
        batch needs the whole lock (6.8 step 3)."""
        with self._io_mutex:
            if self._uses_table:
                queued = self._commit_queued(batch)
                if queued is not None:
                    done += queued
                    return True
            written = self._write_compiled(batch) if _accel.shared_write is not None else None
            if written is None:
                with self._append_locked():
                    written = self._write_shared(batch)
            if written is None:
                return False
            segment, seen, encoded = written
            if encoded.written:
                self._sync_and_publish(segment, seen, encoded.end)
                if self.durability == "strict":
                    self._fs.fdatasync(segment.fd)
                if self._due_for_cutover(segment, encoded.end.commit_offset, left_over=False):
                    self._cut_over_full()  # before acknowledging, as step 11 of 6.2 does (W-19)
        encoded.refuse()
        done += encoded.written
        return True

    _table: NativeCommitTable | None = None

    @property
    def _uses_table(self) -> bool:
        """Whether batches go through the log's commit table (6.9): compiled, on the files themselves, with the
        system clock (a round stamps every batch it takes with its own reading), and not in the strict mode."""
        return (
            _accel.CommitTable is not None
            and _accel.shared_write is not None  # a round is the compiled batch of 6.8
            and self._buffer_fs is None
            and not self._custom_clock
            and self.durability != "strict"
            and not self._table_refused
        )

    _table_refused = False

    def _commit_queued(self, batch: list[Ticket]) -> list[tuple[Ticket, Ref]] | None:
        """Steps 1 to 3 and 9 of 6.9: the batch committed by whichever sharing writer of the log takes the next
        round; None, having written nothing, when this writer commits it itself."""
        segment = self._segment
        if segment is None or not segment.tail_checked:
            return None
        if self._table is None:
            assert _accel.CommitTable is not None
            try:
                self._table = _accel.CommitTable(self._lock_path)
            except OSError:
                self._table_refused = True  # no /dev/shm to use, or every entry taken: 6.8 alone
                return None
        outcome, fields = self._table.commit(*self._compiled_batch(segment, batch))
        if outcome == _accel.TABLE_ALONE:
            return None
        log, timestamp, offset, index, end_offset = fields[:5]
        if outcome == _accel.TABLE_UNKNOWN:
            if not self._found_after_recovery(batch, log, offset, index, timestamp):
                return None  # not in the log: this writer commits the batch itself
            end_offset = 0  # found committed, by the recovery that adopted them: no cutover due from here
        written = []
        for ticket in batch:
            written.append((ticket, Ref(log, offset, index)))
            offset, index = offset + RECORD_HEADER_SIZE + len(ticket.payload), index + 1
        if log == segment.log and self._due_for_cutover(segment, end_offset, left_over=False):
            self._cut_over_full()
        return written

    def _found_after_recovery(self, batch: list[Ticket], log: int, offset: int, index: int, timestamp: int) -> bool:
        """Whether the records that a round which died or failed planned for ``batch`` are all committed, as
        found under the whole lock once recovery (7.2) has adopted the whole records of the tail.
        Some of them but not all: ``BinlogIOError`` (their outcome cannot be told apart from a torn batch)."""
        expected = [
            encode_record(index + n, ticket.payload, asqn=ticket.asqn, timestamp_us=timestamp)
            for n, ticket in enumerate(batch)
        ]
        with self._locked:
            self._prepare()
            found = 0
            with SegmentFile(self.directory, log) as segment:
                header = segment.header()
                committed = segment.commit(header).commit_offset if isinstance(header, SegmentHeaderInfo) else 0
                for record in expected:
                    if offset + len(record) > committed or segment.read_at(offset, len(record)) != record:
                        break
                    offset, found = offset + len(record), found + 1
        if 0 < found < len(expected):
            raise BinlogIOError(
                f"{found} of the {len(expected)} records of a batch whose round died are in the log",
                path=self.directory,
            )
        return found == len(expected)

    def _cut_over_full(self) -> None:
        """Under the whole lock: cut over from the last segment if it has reached the size limit (8.1)."""
        with self._locked:
            segment, commit = self._prepare()
            if self._due_for_cutover(segment, commit.commit_offset, left_over=False) and segment.log < MAX_LOG_NUMBER:
                self._cut_over(segment, commit)

    def _write_compiled(self, batch: list[Ticket]) -> tuple[OpenSegment, int, EncodedBatch] | None:
        """``_write_shared`` with the append lock taken, compiled (``_accel.shared_write``), in the plain case:
        None, having written nothing, for anything else, which ``_write_shared`` then takes."""
        segment = self._segment
        if segment is None or not segment.tail_checked or _accel.shared_write is None:
            return None
        written = _accel.shared_write(self._buffer_fs, *self._compiled_batch(segment, batch))
        if written is None:
            return None
        seen, _, offset, index, end_offset, next_index, last_asqn, now = written
        encoded = EncodedBatch()
        for ticket in batch:
            encoded.written.append((ticket, Ref(segment.log, offset, index)))
            offset, index = offset + RECORD_HEADER_SIZE + len(ticket.payload), index + 1
        encoded.end = CommitState(seen + 1, end_offset, next_index, last_asqn, now, 0)
        return segment, seen, encoded

    def _compiled_batch(
        self, segment: OpenSegment, batch: list[Ticket]
    ) -> tuple[SharedTarget, int, int | None, bool, list[tuple[bytes, int]], int]:
        """What the compiled batch of 6.8 takes, alone or in a round of the commit table: the target, the segment's
        capacity, the size limit, whether the segment is preallocated, the payloads and asqns, the clock's reading."""
        return (
            self._compiled_target(segment),
            segment.header.capacity,
            self.max_segment_bytes,
            segment.header.preallocated,
            [(ticket.payload, ticket.asqn) for ticket in batch],
            self._clock_us(),
        )

    def _compiled_target(self, segment: OpenSegment) -> SharedTarget:
        """The compiled batch's ``SharedTarget`` for ``segment`` and the lock, made once for each of them."""
        lock = (self._lock_fd, self._lock_identity)
        cached = self._shared_target
        if cached is None or cached[0] is not segment or cached[1] != lock:
            assert _accel.SharedTarget is not None  # only called where the compiled batch is
            target = _accel.SharedTarget(
                segment.fd,
                self._lock_fd,
                self._lock_path,
                self._lock_identity,
                successor_path(self.directory, segment.log),
                segment.log,
                segment.header.base_index,
            )
            self._shared_target = cached = (segment, lock, target)
        return cached[2]

    def _sync_and_publish(self, segment: OpenSegment, seen: int, end: CommitState) -> None:
        """Steps 6 and 7 of 6.8: the sync holding no lock, then the publication under the append lock."""
        if _accel.shared_publish is not None:
            state = (end.commit_offset, end.next_index, end.last_asqn, end.last_timestamp_us)
            target = self._compiled_target(segment)
            if _accel.shared_publish(self._buffer_fs, target, seen, state) != _accel.PUBLISH_IN_PYTHON:
                return
        else:
            self._fs.fdatasync(segment.fd)  # step 6: no lock held
            if self._published_already(segment, end.commit_offset):
                return
        with self._append_locked():  # LOCK replaced, the segment sealed, an unusual header: said here
            self._publish_shared(segment, seen, end)

    def _published_already(self, segment: OpenSegment, end: int) -> bool:
        """Step 7's first read: whether the active slot, read without the lock as a reader reads it, covers ``end``.
        A slot torn by a publication in progress fails its checksum and is not taken; any doubt is False, and the
        read under the append lock decides."""
        header = self._fs.pread(segment.fd, HEADER_SIZE, 0)
        try:
            current = active_commit(header, base_index=segment.header.base_index, log=segment.log)
        except BinlogError:
            return False
        return current.commit_offset >= end

    def _write_shared(self, batch: list[Ticket]) -> tuple[OpenSegment, int, EncodedBatch] | None:
        """Steps 2 to 5 of 6.8, under the append lock: the segment, the generation read, the records written."""
        segment = self._segment
        if segment is None or not segment.tail_checked or self._fs.exists(successor_path(self.directory, segment.log)):
            return None
        commit = self._read_commit(segment)
        if commit.closed or commit.generation >= MAX_COUNTER - 2:
            return None
        written_end = commit
        if not self._tail_clear(segment, commit.commit_offset, self._fs.size(segment.fd)):
            # Records beyond the commit point: other writers' not yet published, or a dead writer's.
            scan = tail_walk(FdSource(self._fs, segment.fd), log=segment.log, commit=commit)
            if not self._tail_clear(segment, scan.end, scan.file_size):
                return None  # a torn tail: recovery, under the whole lock
            written_end = CommitState(
                commit.generation, scan.end, scan.next_index, scan.last_asqn, scan.last_timestamp_us, 0
            )
        encoded = self._encode_batch(batch, segment, written_end)
        if self._due_for_cutover(segment, written_end.commit_offset, left_over=bool(encoded.rest)):
            return None  # a cutover first, under the whole lock
        if encoded.written:
            # The header _read_commit read above, under this same hold of the append lock: not read again.
            self._rewrite_as_read(
                segment,
                commit.commit_offset,
                written_end.commit_offset,
                then=b"".join(encoded.parts),
                header=segment.header_image,
            )
        return segment, commit.generation, encoded

    def _publish_shared(self, segment: OpenSegment, seen: int, end: CommitState) -> None:
        """Step 7 of 6.8, under the append lock: publish ``end`` unless a commit point already covers it.

        The active generation is known durable only when it is still the one
        read before this writer's sync (W-44): then the next generation goes
        to the other slot, otherwise over the active one (W-42).
        """
        current = self._read_commit(segment)
        if current.commit_offset >= end.commit_offset:
            return
        if current.closed:
            raise BinlogIOError(
                "the segment was sealed before the records written in it were published", path=segment.path
            )
        step = 1 if current.generation == seen else 2
        published = CommitState(
            current.generation + step, end.commit_offset, end.next_index, end.last_asqn, end.last_timestamp_us, 0
        )
        self._publish(segment, published, strict_sync=False)
