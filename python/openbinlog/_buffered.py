"""The appends of an exclusive writer (spec protocols.md 6.7, W-39), the ``process`` mode (6.5, W-40) and the
``mmap`` mode (6.5, W-41).

An append is encoded at once into the segment's ``RecordBuffer`` (compiled
where built), which gives its ref: only a writer that holds the lock from
open to close may do this, since nobody else may commit in between.

In the ``process`` mode the append returns there, and the writer commits the
buffer as one batch (one write, one publish, steps 7 to 9 of 6.2) when it is
full, when ``flush_interval`` has passed since its oldest record, before a
cutover, and on ``flush()`` and ``close()``, which also sync before they
publish. In the ``mmap`` mode the buffer is mapped: each append publishes its
record through a shared mapping of the segment before it returns, and
``flush()`` and ``close()`` sync the mapping. In the other modes the append
then waits for its commit in the buffer's group commit (``commit_through``):
the first appender whose record is not committed leads, committing everything
buffered with the mode's syncs while the appenders behind it add their
records. That is group commit with no queue; with the compiled buffer the
whole append, the wait and the commit included, runs without Python code, and
the write and the sync release the interpreter to the appenders that gather.
The buffer keeps the segment's commit state and which generation is durable
(W-42); the writer reads it back after its own commits.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from . import _accel
from ._buffer import (
    ASQN_ORDER,
    CHECK_ARGUMENTS,
    CLOSED,
    CUTOVER_FIRST,
    FLUSH_FIRST,
    INDEXES_USED_UP,
    SYNC_FILE,
    SYNC_NONE,
    SYNC_RECORDS,
    PureRecordBuffer,
    RecordBuffer,
)
from ._commit import OpenSegment
from ._format import HEADER_SIZE, MAX_PAYLOAD_SIZE, NO_ASQN, RECORD_HEADER_SIZE
from ._ref import Ref
from ._segment import CommitState
from ._writer_base import MAX_LOG_NUMBER, WriterBase, payload_bytes
from .errors import AsqnOrderError, BinlogIOError, LogFullError, PayloadTooLargeError

_NO_LIMIT = 2**64 - 1
# The modes that may publish without a sync before (spec 6.5): their writers keep W-42.
_PUBLISH_UNSYNCED = ("os", "process", "mmap")
_MAX_ASQN = 2**63 - 1
# A writer that syncs records alone syncs the whole file once its commit point is this far beyond the
# newest durable slot's: after a power loss, readers fall back, and recovery walks, no further (spec 6.2).
FULL_SYNC_BYTES = 1 << 20


class BufferedMixin(WriterBase):
    """Buffer appends in the process and commit them in batches."""

    buffer_bytes: int
    flush_interval: float
    _waits_for_commit: bool  # an append waits for a commit (not in the process and mmap modes)
    _sync_records_alone: bool  # batches sync their records alone (step 8 of 6.2), not the whole file
    _buffer: RecordBuffer | None  # None: the writer does not buffer
    # What the buffer writes and syncs through: None for the operating system's own file system, which the
    # compiled buffer calls directly, releasing the interpreter during each write and sync.
    _custom_clock: bool  # a clock given to the writer: read it per append, rather than the system clock
    _flusher: threading.Thread | None
    _stop_flusher: threading.Event
    _io_mutex: threading.RLock  # held by whoever commits: the leader of a batch, flush, cutover, close

    if TYPE_CHECKING:  # the commit protocol's steps, in _commit and _cutover

        def _publish(self, segment: OpenSegment, commit: CommitState, *, strict_sync: bool = True) -> None: ...

        def _read_commit(self, segment: OpenSegment) -> CommitState: ...

        def _cut_over(self, segment: OpenSegment, commit: CommitState) -> OpenSegment: ...

    def _start_buffering(self, segment: OpenSegment, commit: CommitState) -> None:
        """Under the lock: a buffer for ``segment`` from its commit point, and the thread that bounds its delay."""
        make = PureRecordBuffer if _accel.RecordBuffer is None else _accel.RecordBuffer
        last = segment.log >= MAX_LOG_NUMBER  # the last segment a log may have has no size limit (format 2.2)
        capacity = segment.header.capacity
        mapped = self.durability == "mmap"
        # The mmap mode maps preallocated segments only: in any other, the first append asks for a cutover.
        end_limit = (capacity or commit.commit_offset) if mapped else (capacity or _NO_LIMIT)
        buffer = make(
            Ref,
            segment.log,
            commit.commit_offset,
            commit.next_index,
            commit.last_asqn,
            commit.last_timestamp_us,
            end_limit,
            _NO_LIMIT if last or self.max_segment_bytes is None else self.max_segment_bytes,
            self.buffer_bytes,
        )
        if self.durability in _PUBLISH_UNSYNCED or self._sync_records_alone:
            # W-42 counts from a durable active slot: the one read at open may be a crashed writer's, unsynced.
            self._fs.fdatasync(segment.fd)
        if self._sync_records_alone:
            self._fs.cache_pages_apart(segment.fd, commit.commit_offset)
        buffer.bind(self._buffer_fs, segment.fd, commit.generation, commit.next_log_number, self.durability == "strict")
        if self.durability == "process":  # the sync of flush() and close() then finds less to write
            buffer.write_behind()
        if self._waits_for_commit:
            batch_sync = SYNC_RECORDS if self._sync_records_alone else SYNC_FILE
            if self.durability == "os":
                batch_sync = SYNC_NONE
            buffer.group(self._io_mutex, batch_sync, FULL_SYNC_BYTES, self.group_delay, self.durability == "group")
        if mapped and capacity:
            if self._fs.size(segment.fd) < capacity:  # a store beyond the file's end would kill the process
                raise BinlogIOError(
                    f"preallocated segment is shorter than its capacity {capacity}", path=segment.path, log=segment.log
                )
            buffer.map(capacity)
        self._buffer = buffer  # mapped before appenders in other threads can see it
        self._install_appender(buffer)
        if self._flusher is None and self.durability == "process":
            self._flusher = threading.Thread(target=self._flush_when_due, name="binlog-flush", daemon=True)
            self._flusher.start()

    def _install_appender(self, buffer: RecordBuffer) -> None:
        """With the compiled buffer, ``append`` is the compiled appender, with no Python frame: the writer's
        methods run only for the codes it returns and the errors it meets. Not with a clock of the writer's
        (read per append in Python), nor where a mapped store may fail through a file-system object."""
        if self._custom_clock or _accel.Appender is None or _accel.RecordBuffer is None:
            return
        if self.durability == "mmap" and self._buffer_fs is not None:
            return
        appender = self.__dict__.get("append")
        if appender is None:
            # An instance attribute before the method: the one lookup of ``writer.append`` finds it.
            if self._waits_for_commit:
                appender = _accel.Appender(buffer, self._append_waiting, self._settle_append)
            else:
                appender = _accel.Appender(buffer, self._append_buffered, None)
            self.__dict__["append"] = appender
        else:
            appender.use_buffer(buffer)

    def _append_buffered(self, payload: object, asqn: object) -> Ref:
        """The path of an append the buffer did not take at once: check it, do what the buffer asks, retry."""
        try:
            return self._append_checked(payload, asqn)
        except OSError as exc:
            raise self._mapped_store_failed(exc) from exc

    def _mapped_store_failed(self, exc: OSError) -> BinlogIOError:
        """A store of the mmap mode failed (through a file-system object): the writer fails, as by W-19."""
        path = self._known[0].path if self._known is not None else self.directory
        failed = BinlogIOError(f"write through the mapping failed, the append is not acknowledged: {exc}", path=path)
        self._failed = failed
        return failed

    def _append_checked(self, payload: object, asqn: object) -> Ref:
        buffer = self._buffer
        assert buffer is not None
        result = buffer.append(payload, asqn, self._clock_us() if self._custom_clock else None)
        while not isinstance(result, Ref):
            if result == CHECK_ARGUMENTS:
                payload = payload_bytes(payload)
                if len(payload) > MAX_PAYLOAD_SIZE:
                    raise PayloadTooLargeError(
                        f"payload of {len(payload)} bytes exceeds {MAX_PAYLOAD_SIZE}", path=self.directory
                    )
                if type(asqn) is not int or not NO_ASQN <= asqn <= _MAX_ASQN:
                    raise AsqnOrderError(f"asqn {asqn!r} is outside -1 to 2^63-1", path=self.directory)
            elif result == CLOSED:  # by a cutover (wait for its end), a failed commit or close()
                with self._io_mutex:
                    self._check_usable()
                    if self._buffer is buffer:
                        failed = BinlogIOError("the writer's buffer closed after a failed commit", path=self.directory)
                        raise self._commit_failed(failed)
            elif result == FLUSH_FIRST:
                self._commit_buffer(sync=False)
            elif result == CUTOVER_FIRST:
                self._cut_over_buffered(len(payload) if isinstance(payload, bytes) else 0)
            elif result == ASQN_ORDER:
                raise AsqnOrderError(f"asqn {asqn} is not above the log's last asqn", path=self.directory)
            elif result == INDEXES_USED_UP:
                raise LogFullError(
                    "record indexes or commit generations are used up: start a new log", path=self.directory
                )
            buffer = self._buffer
            assert buffer is not None
            result = buffer.append(payload, asqn, self._clock_us() if self._custom_clock else None)
        return result

    def _append_waiting(self, payload: object, asqn: object) -> Ref:
        """The path of an append, in the modes that wait for a commit, that the buffer did not take at once."""
        ref = self._append_buffered(payload, asqn)
        self._wait_for_commit(ref)
        return ref

    def _wait_for_commit(self, ref: Ref) -> None:
        """Return once the record ``ref`` names is committed: the buffer's group commit (spec 6.4), which
        ``ref``'s own buffer or a later one can tell, as indexes go on from one segment to the next."""
        buffer = self._buffer
        assert buffer is not None
        try:
            unsettled = buffer.commit_through(ref.index)
        except BaseException as exc:
            raise self._commit_failed(exc) from exc
        if unsettled is not None:  # the buffer closed without committing it: by a failure, or close()
            self._check_usable()
            raise BinlogIOError("the record was not committed before the writer's buffer closed", path=self.directory)

    def _settle_append(self, ref: Ref, exc: BaseException | None) -> Ref:
        """The compiled appender's commit of ``ref`` failed (``exc``), or its buffer closed before it."""
        if exc is not None:
            raise self._commit_failed(exc) from exc
        self._wait_for_commit(ref)
        return ref

    def _commit_failed(self, exc: BaseException) -> BaseException:
        """A commit failed (W-19): the writer fails, and the append raises what to raise."""
        if not isinstance(exc, Exception):  # an interrupt, before or during the commit: raised as it is
            return exc
        failed = exc if isinstance(exc, BinlogIOError) else None
        if failed is None:
            failed = BinlogIOError(f"write or sync failed, nothing of this commit is acknowledged: {exc}")
        if self._failed is None:
            self._failed = failed
        return failed

    def _commit_buffer(self, *, sync: bool, close: bool = False) -> None:
        """Commit what the buffer holds as one batch (W-40); ``sync``: make it durable before publishing."""
        failed = "write or sync failed, nothing appended since the last commit is acknowledged"
        with self._os_errors(failed), self._locked:
            self._commit_buffer_locked(sync=sync, close=close)

    def _commit_buffer_locked(self, *, sync: bool, close: bool = False) -> tuple[OpenSegment, CommitState]:
        """Under the lock: the buffer's records as one batch, by steps 7 to 10 of 6.2 (W-40); ``sync``: make them
        durable (a sync of the file) before publishing."""
        buffer, known = self._buffer, self._known
        assert buffer is not None
        assert known is not None
        segment, commit = known
        if self._failed is not None:
            buffer.take(True)
            self._check_usable()
        try:
            buffer.commit(sync, close)
        except BaseException as exc:
            self._failed = exc if isinstance(exc, BinlogIOError) else BinlogIOError(str(exc), path=segment.path)
            raise
        commit = CommitState(*buffer.committed(), commit.next_log_number)
        self._known = (segment, commit)
        return segment, commit

    def _cut_over_buffered(self, payload_size: int) -> None:
        """Commit the buffer, then start the next segment: the record that did not fit goes there (W-40)."""
        with self._os_errors("cutover failed"), self._locked:
            # Synced before publishing, like flush(): a power loss then never finds a commit point
            # beyond its records, whatever follows (the cutover's own step 0 syncs later anyway).
            segment, commit = self._commit_buffer_locked(sync=True, close=True)
            try:
                capacity = segment.header.capacity
                if capacity and HEADER_SIZE + RECORD_HEADER_SIZE + payload_size > capacity:
                    self._start_buffering(segment, commit)  # nothing moved: the same segment, a new buffer
                    raise PayloadTooLargeError(
                        f"a record of {RECORD_HEADER_SIZE + payload_size} bytes cannot fit a preallocated segment"
                        f" of {capacity}",
                        path=self.directory,
                    )
                if segment.log >= MAX_LOG_NUMBER:
                    self._start_buffering(segment, commit)
                    raise LogFullError(
                        f"segment {MAX_LOG_NUMBER} is full and is the last a log may have (W-1)", path=segment.path
                    )
                successor = self._cut_over(segment, commit)
                self._known = (successor, self._read_commit(successor))
                self._start_buffering(*self._known)
            except (PayloadTooLargeError, LogFullError):
                raise  # the append is refused; the writer goes on
            except BaseException as exc:  # the old buffer is closed: without a new one, appends cannot go on
                self._failed = exc if isinstance(exc, BinlogIOError) else BinlogIOError(str(exc), path=segment.path)
                raise

    def _flush_when_due(self) -> None:
        """The thread that commits a buffer whose oldest record has waited ``flush_interval``."""
        interval = self.flush_interval
        while not self._stop_flusher.wait(interval):
            buffer = self._buffer
            if buffer is None or self._failed is not None:
                continue
            age = buffer.age()
            if age >= interval:
                try:
                    self._commit_buffer(sync=False)
                except Exception:
                    return
                age = 0.0
            interval = max(self.flush_interval - age, self.flush_interval / 10)
