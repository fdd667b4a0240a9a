"""Creating segments and cutting over (spec protocols.md 8.2 steps 0 to 5, 8.3, W-27 to W-29; 2.4 for segment 1).

A new segment is made in a temporary file (or a spare volume, ``_spare``),
its header synced, then linked into place and its name synced; only then
is its predecessor sealed.
"""

from __future__ import annotations

import secrets
from dataclasses import replace

from ._commit import CommitMixin, OpenSegment
from ._format import segment_name
from ._segment import CommitState, SegmentHeaderInfo, build_header, parse_header
from ._spare import SpareMixin
from ._writer_base import MAX_LOG_NUMBER
from .errors import LogFullError


class CutoverMixin(CommitMixin, SpareMixin):
    """Segment creation, successors and the cutover; the seal is a publication (``_commit``)."""

    def _create_segment(
        self, log: int, *, log_id: bytes, base_index: int, last_asqn: int, last_timestamp_us: int
    ) -> OpenSegment:
        """Steps 1 to 3 of the cutover protocol: temp file, durable header, link, directory sync.

        A preallocating writer takes a spare volume zero-filled in the
        background, so rolling over costs a header write and two syncs, not
        ``capacity`` bytes of zeros.
        """
        header_bytes = build_header(
            log=log,
            log_id=log_id,
            base_index=base_index,
            created_us=self._clock_us(),
            capacity=self.preallocate or 0,
            last_asqn=last_asqn,
            last_timestamp_us=last_timestamp_us,
        )
        final = self._path(segment_name(log))
        spare = self._take_spare()
        if spare is not None:
            temp, fd = spare
        else:
            temp = self._path(f".{segment_name(log)}.{secrets.token_hex(8)}.tmp")
            fd = self._fs.open_write(temp, create=True, exclusive=True)
        try:
            if spare is None and self.preallocate:
                self._write_zeros(fd, self.preallocate)
            self._fs.pwrite(fd, header_bytes, 0)
            self._fs.fdatasync(fd)
            self._fs.link(temp, final)
        except BaseException:
            self._fs.close(fd)
            self._fs.unlink(temp)
            raise
        try:
            self._fs.unlink(temp)
            self._fs.fsync_dir(self.directory)
        except BaseException:
            self._fs.close(fd)
            raise
        header = parse_header(header_bytes, log=log)
        assert isinstance(header, SegmentHeaderInfo)
        if self.preallocate:
            self._start_spare()
        return OpenSegment(log, final, fd, header)

    def _next_segment(self, log: int, log_id: bytes, commit: CommitState) -> OpenSegment:
        """Segment ``log`` + 1, continuing its chain: same log id, the next index, the order checks' history."""
        if log >= MAX_LOG_NUMBER:
            raise LogFullError(f"no segment after {MAX_LOG_NUMBER} (W-1)", path=self.directory, log=log)
        return self._create_segment(
            log + 1,
            log_id=log_id,
            base_index=commit.next_index,
            last_asqn=commit.last_asqn,
            last_timestamp_us=commit.last_timestamp_us,
        )

    def _create_successor(self, segment: OpenSegment, commit: CommitState) -> OpenSegment:
        successor = self._next_segment(segment.log, segment.header.log_id, commit)
        self._fs.close(segment.fd)
        self._segment = successor
        if self._index_builder is not None:
            self._index_builder.sealed(segment.log)  # built in the builder's thread, never in a commit (W-45)
        return successor

    def _cut_over(self, segment: OpenSegment, commit: CommitState) -> OpenSegment:
        # Step 0: every record of this segment is durable before the next claims its index.
        self._fs.fdatasync(segment.fd)
        successor = self._next_segment(segment.log, segment.header.log_id, commit)
        self._publish(segment, replace(commit, generation=commit.generation + 1, next_log_number=successor.log))
        self._fs.fdatasync(segment.fd)
        self._fs.close(segment.fd)
        self._segment = successor
        if self._index_builder is not None:
            self._index_builder.sealed(segment.log)  # built in the builder's thread, never in a commit (W-45)
        return successor
