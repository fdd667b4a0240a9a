"""The commit of one batch (spec protocols.md 6.2 steps 6 to 10, with step 11's decision to cut over and step 13's
acknowledgement; 6.1, 6.5, 6.6): build the records, write them, sync, publish the commit point.

The steps before (2 to 5: find the last segment, recover its tail) are
``_recovery_exec``'s, the cutover of step 11 is ``_cutover``'s; the queue
that gathers a batch is ``_group_commit``'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ._format import HEADER_SIZE, NO_ASQN
from ._group_commit import Ticket
from ._records import encode_record
from ._ref import Ref
from ._segment import CommitState, SegmentHeaderInfo, active_commit, encode_mirror, encode_slot
from ._writer_base import MAX_LOG_NUMBER, WriterBase
from .errors import (
    AsqnOrderError,
    BinlogError,
    BinlogIOError,
    LogFullError,
    PayloadTooLargeError,
    WriterFailedError,
)

MAX_COUNTER = 2**64 - 1  # generations and indexes are unsigned 64-bit fields


@dataclass
class OpenSegment:
    log: int
    path: str
    fd: int
    header: SegmentHeaderInfo
    tail_checked: bool = False
    # The header bytes as this writer last read or wrote them, and their commit state: when a
    # commit finds the same bytes, no other writer has committed since, and decoding is skipped.
    header_image: bytes = b""
    image_commit: CommitState | None = None


@dataclass
class EncodedBatch:
    """Step 6 of 6.2 for one segment: the records built, their refs, the appends refused, those left for the
    next segment, and the commit state the records end at (with the next generation)."""

    parts: list[bytes] = field(default_factory=list)
    written: list[tuple[Ticket, Ref]] = field(default_factory=list)
    refused: list[tuple[Ticket, BaseException]] = field(default_factory=list)
    rest: list[Ticket] = field(default_factory=list)
    end: CommitState = field(default_factory=lambda: CommitState(0, 0, 0, NO_ASQN, 0, 0))

    def refuse(self) -> None:
        for ticket, error in self.refused:
            ticket.error = error
            ticket.done = True


class CommitMixin(WriterBase):
    """Commit a batch under the lock, and read and publish a segment's commit point."""

    if TYPE_CHECKING:  # the steps before and after: _recovery_exec and _cutover

        def _prepare(self) -> tuple[OpenSegment, CommitState]: ...

        def _cut_over(self, segment: OpenSegment, commit: CommitState) -> OpenSegment: ...

        def _commit_shared(self, batch: list[Ticket], done: list[tuple[Ticket, Ref]]) -> bool: ...

    def _commit(self, batch: list[Ticket]) -> None:
        try:
            if self._failed is not None:
                raise WriterFailedError(
                    "an earlier write or sync failed; reopen the log to continue", path=self.directory
                )
            written: list[tuple[Ticket, Ref]] = []
            if not (self._shares_sync and self._commit_shared(batch, written)):
                with self._locked:
                    segment, commit = self._prepare()
                    todo = batch
                    while todo:
                        todo, segment, commit = self._commit_some(todo, segment, commit, written)
            # Only now: a cutover that fails after a part was published acknowledges nothing (W-19).
            for ticket, ref in written:
                ticket.ref = ref
                ticket.done = True
        except BaseException as exc:
            error: BaseException = exc
            if isinstance(exc, OSError):
                error = BinlogIOError(
                    f"write or sync failed, nothing of this commit is acknowledged: {exc}", path=self.directory
                )
            if isinstance(error, BinlogIOError):
                self._failed = error
            for ticket in batch:
                if not ticket.done:
                    ticket.error = error
                    ticket.done = True

    def _commit_some(
        self, tickets: list[Ticket], segment: OpenSegment, commit: CommitState, done: list[tuple[Ticket, Ref]]
    ) -> tuple[list[Ticket], OpenSegment, CommitState]:
        """Write, sync and publish as many of ``tickets`` as fit in ``segment``; add them to ``done``."""
        batch = self._encode_batch(tickets, segment, commit)
        batch.refuse()
        if batch.written:
            self._fs.pwrite(segment.fd, b"".join(batch.parts), commit.commit_offset)
            if self.durability != "os":
                self._fs.fdatasync(segment.fd)
            commit = batch.end
            self._publish(segment, commit)
            done += batch.written
        if self._due_for_cutover(segment, commit.commit_offset, left_over=bool(batch.rest)) and (
            segment.log < MAX_LOG_NUMBER
        ):  # the last segment a log may have keeps growing (2.2)
            segment = self._cut_over(segment, commit)
            commit = self._read_commit(segment)
        return batch.rest, segment, commit

    def _due_for_cutover(self, segment: OpenSegment, offset: int, *, left_over: bool) -> bool:
        """Step 11 of 6.2 (8.1): appends left over for want of room, or the size limit reached at ``offset``."""
        return left_over or (self.max_segment_bytes is not None and offset >= self.max_segment_bytes)

    def _encode_batch(self, tickets: list[Ticket], segment: OpenSegment, commit: CommitState) -> EncodedBatch:
        """Step 6 of 6.2: the records of ``tickets`` from ``commit`` on, as many as fit ``segment``."""
        if commit.generation >= MAX_COUNTER:
            raise LogFullError("the commit generation is used up: start a new log", path=segment.path, log=segment.log)
        capacity = segment.header.capacity or None
        offset, index = commit.commit_offset, commit.next_index
        last_asqn = commit.last_asqn
        now = max(self._clock_us(), commit.last_timestamp_us)
        batch = EncodedBatch()
        for position, ticket in enumerate(tickets):
            error: BinlogError
            if index >= MAX_COUNTER:  # the slot's next index after it would not fit 64 bits
                error = LogFullError("record indexes are used up: start a new log", path=self.directory)
                batch.refused.append((ticket, error))
                continue
            if ticket.asqn != NO_ASQN and (ticket.asqn < 0 or ticket.asqn <= last_asqn):
                error = AsqnOrderError(
                    f"asqn {ticket.asqn} is not above the log's last asqn {last_asqn}", path=self.directory, index=index
                )
                batch.refused.append((ticket, error))
                continue
            record = encode_record(index, ticket.payload, asqn=ticket.asqn, timestamp_us=now)
            if capacity is not None and offset + len(record) > capacity:
                if HEADER_SIZE + len(record) > capacity:  # refused before any cutover is made for it (W-10)
                    error = PayloadTooLargeError(
                        f"a record of {len(record)} bytes cannot fit a preallocated segment of {capacity}",
                        path=self.directory,
                    )
                    batch.refused.append((ticket, error))
                    continue
                if segment.log >= MAX_LOG_NUMBER:
                    error = LogFullError(
                        f"segment {MAX_LOG_NUMBER} is full and is the last a log may have (W-1)", path=segment.path
                    )
                    batch.refused.append((ticket, error))
                    continue
                batch.rest = tickets[position:]
                break
            batch.parts.append(record)
            batch.written.append((ticket, Ref(segment.log, offset, index)))
            offset += len(record)
            index += 1
            if ticket.asqn != NO_ASQN:
                last_asqn = ticket.asqn
        # Built directly: dataclasses.replace costs a tenth of a buffered append.
        batch.end = CommitState(commit.generation + 1, offset, index, last_asqn, now, commit.next_log_number)
        return batch

    def _read_commit(self, segment: OpenSegment) -> CommitState:
        data = self._fs.pread(segment.fd, HEADER_SIZE, 0)
        if data == segment.header_image and segment.image_commit is not None:
            return segment.image_commit
        try:
            commit = active_commit(data, base_index=segment.header.base_index, log=segment.log)
        except BinlogError as exc:
            raise exc.located(path=segment.path) from None
        segment.header_image, segment.image_commit = data, commit
        return commit

    def _publish(self, segment: OpenSegment, commit: CommitState, *, strict_sync: bool = True) -> None:
        image = bytearray(segment.header_image)
        for at, raw in (encode_slot(commit), encode_mirror(commit, segment.log)):
            self._fs.pwrite(segment.fd, raw, at)
            image[at : at + len(raw)] = raw
        if len(image) == HEADER_SIZE:
            segment.header_image, segment.image_commit = bytes(image), commit
        if strict_sync and self.durability == "strict":
            self._fs.fdatasync(segment.fd)
