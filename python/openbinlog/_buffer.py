"""The ``process`` durability mode's buffer of encoded records (spec protocols §6.5).

An append is encoded at once, gets its ref, and waits in the buffer until the
writer commits the buffer as one batch. ``PureRecordBuffer`` is the reference;
``openbinlog._native.RecordBuffer`` is the same in compiled code, used when
built (``_accel``), and the tests drive both with the same appends and require
the same bytes, refs and codes.

An append returns its ``Ref``, or one of the codes below when the writer must
act first; the common case runs no check the writer has to repeat.

The ``mmap`` mode (6.5) maps the buffer: from then on each append also
publishes its record at once, by stores into a shared mapping of the segment
(the record, then the slot, then the mirror fields), with no system call.
"""

from __future__ import annotations

import errno
import mmap
import threading
import time
from typing import Protocol

from ._format import MAX_PAYLOAD_SIZE, NO_ASQN, RECORD_HEADER_SIZE, SLOT_OFFSETS, SLOT_SIZE
from ._fs import FileSystem, OsFileSystem
from ._group_commit import gathering
from ._records import encode_record
from ._ref import Ref
from ._segment import CommitState, encode_mirror, encode_slot

__all__ = [
    "ASQN_ORDER",
    "CHECK_ARGUMENTS",
    "CLOSED",
    "CUTOVER_FIRST",
    "FLUSH_FIRST",
    "INDEXES_USED_UP",
    "SYNC_FILE",
    "SYNC_NONE",
    "SYNC_RECORDS",
    "Published",
    "PureRecordBuffer",
    "RecordBuffer",
    "Taken",
]

CLOSED = 1  # closed by the commit before a cutover: append to the writer's new buffer
FLUSH_FIRST = 2  # the buffer holds its limit: commit it, then append again
CUTOVER_FIRST = 3  # the record does not fit the segment, or the segment reached its size limit
ASQN_ORDER = 4  # the asqn is not above the last one
INDEXES_USED_UP = 5  # the next index (a mapped buffer: or its next generations) would not fit 64 bits
CHECK_ARGUMENTS = 6  # not a plain case (not bytes, too large, asqn no int64): the writer checks it

# How a commit makes its records durable before it publishes them (spec 6.2, step 8).
SYNC_NONE = 0
SYNC_FILE = 1  # fdatasync of the segment: the records and every earlier write, the active slot's included
SYNC_RECORDS = 2  # a synchronized write of the records alone (pwrite_synced): not the active slot

_OS = OsFileSystem()
_U8_MAX = 2**64 - 1
_I8 = 2**63

# The records taken, the commit offset after them, the next index, last asqn and last timestamp.
Taken = tuple[bytes, int, int, int, int]


# What a commit published: generation, commit offset, next index, last asqn, last timestamp.
Published = tuple[int, int, int, int, int]


class RecordBuffer(Protocol):
    def bind(self, fs: FileSystem | None, fd: int, generation: int, next_log_number: int, strict: bool, /) -> None: ...
    def write_behind(self) -> None: ...
    def group(
        self, io_lock: Lock, batch_sync: int, full_sync_bytes: int, group_delay: float, whole_delay: bool, /
    ) -> None: ...
    def map(self, length: int, /) -> None: ...
    def append(self, payload: object, asqn: object, now_us: int | None, /) -> Ref | int: ...
    def take(self, close: bool, /) -> Taken: ...
    def commit(self, sync: bool, close: bool, /) -> Published | None: ...
    def committed(self) -> Published: ...
    def commit_through(self, index: int, /) -> int | None: ...
    def pending(self) -> int: ...
    def age(self) -> float: ...


class Lock(Protocol):
    """What the group commit's leader holds while it commits: the writer's lock (``threading.RLock``)."""

    def acquire(self) -> bool: ...
    def release(self) -> None: ...


class _MappedFile:
    """A shared mapping of a segment's first ``length`` bytes, with the file-system methods a commit calls:
    a write is a store into the mapping, a sync is ``msync``."""

    def __init__(self, fd: int, length: int) -> None:
        self._map = mmap.mmap(fd, length, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)

    def pwrite(self, fd: int, data: bytes, offset: int) -> None:
        self._map[offset : offset + len(data)] = data

    def pwrite_synced(self, fd: int, data: bytes, offset: int) -> None:
        self.pwrite(fd, data, offset)
        self.fdatasync(fd)

    def start_writeback(self, fd: int, offset: int, length: int) -> None:
        """Never called: a mapped buffer publishes without committing, and never writes behind."""

    def fdatasync(self, fd: int) -> None:
        self._map.flush()

    def close(self) -> None:
        self._map.close()


class PureRecordBuffer:
    """Records encoded and waiting for their commit, for one segment of one exclusive writer.

    ``end_limit``: where records must end (a preallocated segment's capacity);
    ``size_limit``: from this offset on, an append asks for a cutover first;
    ``buffer_bytes``: from this many bytes on, an append asks for a commit first.
    ``now_us`` None reads the system clock.

    ``bind`` gives it the segment and its active slot; from then on the buffer
    keeps the commit state, and which generation is durable (W-42), itself.
    ``group`` lets appenders wait for their commit with ``commit_through``:
    group commit, led by one of them at a time.
    """

    def __init__(  # noqa: PLR0917 - positional, as the compiled twin's constructor is
        self,
        ref_type: type[Ref],
        log: int,
        start: int,
        next_index: int,
        last_asqn: int,
        last_timestamp_us: int,
        end_limit: int,
        size_limit: int,
        buffer_bytes: int,
        /,
    ) -> None:
        self._ref_type = ref_type
        self._log = log
        self._end_limit = end_limit
        self._size_limit = size_limit
        self._buffer_bytes = buffer_bytes
        self._mutex = threading.Lock()  # appends of several threads, and the commit's take
        self._parts: list[bytes] = []
        self._size = 0
        self._start = start
        self._next_index = next_index
        self._last_asqn = last_asqn
        self._last_timestamp_us = last_timestamp_us
        self._oldest: float | None = None
        self._closed = False
        # Bound: where commits go, the active generation, the newest durable one and its commit offset (W-42).
        self._io: FileSystem | None = None
        self._fd = -1
        self._generation = 0
        self._synced_generation = 0
        self._synced_offset = 0
        self._next_log_number = 0
        self._strict = False
        self._write_behind = False
        self._committed: Published = (0, start, next_index, last_asqn, last_timestamp_us)
        self._mapping: _MappedFile | None = None  # mapped: each append publishes at once, through it
        self._mapped = False
        self._reported_generation = 0  # mapped: the generation the last commit returned, or the bound one
        # Group commit: what a leader holds and does, and what its followers wait on.
        batching = threading.Lock()
        self._batching = threading.Condition(batching)  # followers wait on it for their commit
        self._gathered = threading.Condition(batching)  # the leader waits on it (same lock) for its batch
        self._io_lock: Lock | None = None
        self._batch_sync = SYNC_NONE
        self._full_sync_bytes = 0
        self._group_delay = 0.0
        self._whole_delay = False
        self._leading = False
        self._committed_next = next_index  # every index below is committed
        self._waiting_next = next_index  # one past the highest index an appender waits for
        self._gather_target = 0  # records the gathering leader waits for; 0: none is gathering, or the whole delay
        self._last_batch = 0
        self._last_commit_seconds = 0.0
        self._group_closed = False
        self._failure: str | None = None  # why a commit failed: its followers raise it too

    def bind(self, fs: FileSystem | None, fd: int, generation: int, next_log_number: int, strict: bool, /) -> None:
        """Commit to ``fd`` through ``fs`` (None: the operating system's file system) from the active slot of
        ``generation`` and ``next_log_number``, which the caller has made durable; ``strict``: sync after
        each publication too."""
        with self._mutex:
            self._io, self._fd, self._next_log_number, self._strict = fs, fd, next_log_number, strict
            self._generation = self._synced_generation = self._reported_generation = generation
            self._synced_offset = self._start
            self._committed = (generation, self._start, self._next_index, self._last_asqn, self._last_timestamp_us)

    def write_behind(self) -> None:
        """From now on, a commit that does not sync starts the writeback of its records (``start_writeback``), so
        that the sync of a later ``flush()`` or ``close()`` finds less to write (the ``process`` mode)."""
        self._write_behind = True

    def group(
        self, io_lock: Lock, batch_sync: int, full_sync_bytes: int, group_delay: float, whole_delay: bool, /
    ) -> None:
        """Let appenders wait for their commit (``commit_through``): a leader commits each batch holding
        ``io_lock``, syncing it as ``batch_sync`` (``SYNC_*``) says, the whole file once the commit point is
        ``full_sync_bytes`` past the durable slot's; it gathers as ``_group_commit.gathering`` says."""
        if batch_sync not in (SYNC_NONE, SYNC_FILE, SYNC_RECORDS):
            raise ValueError(f"sync {batch_sync} is not one of SYNC_NONE, SYNC_FILE, SYNC_RECORDS")
        self._io_lock, self._batch_sync, self._full_sync_bytes = io_lock, batch_sync, full_sync_bytes
        self._group_delay, self._whole_delay = group_delay, whole_delay

    def map(self, length: int, /) -> None:
        """From now on each append publishes at once, through a shared mapping of the bound segment's first
        ``length`` bytes (or, bound to a file-system object, through its ``pwrite``)."""
        if length < self._end_limit or length < SLOT_OFFSETS[1] + SLOT_SIZE:
            raise ValueError("the mapping must cover the header and every record")
        with self._mutex:
            if self._parts or self._mapped or self._fd < 0:
                raise ValueError("map a bound buffer before its first append, once")
            if self._io is None:
                self._mapping = _MappedFile(self._fd, length)
            self._mapped = True

    def append(self, payload: object, asqn: object, now_us: int | None, /) -> Ref | int:
        if type(payload) is not bytes or type(asqn) is not int or (now_us is not None and type(now_us) is not int):
            return CHECK_ARGUMENTS
        if len(payload) > MAX_PAYLOAD_SIZE or not NO_ASQN <= asqn < _I8:
            return CHECK_ARGUMENTS
        with self._mutex:
            if self._closed:
                return CLOSED
            if self._size >= self._buffer_bytes:
                return FLUSH_FIRST
            # A commit may publish two generations above the active one (W-42).
            if self._next_index == _U8_MAX or (self._fd >= 0 and self._generation >= _U8_MAX - 1):
                return INDEXES_USED_UP
            if asqn != NO_ASQN and asqn <= self._last_asqn:
                return ASQN_ORDER
            offset = self._start + self._size
            if offset >= self._size_limit or offset + RECORD_HEADER_SIZE + len(payload) > self._end_limit:
                return CUTOVER_FIRST
            clock = time.time_ns() // 1000 if now_us is None else now_us
            timestamp_us = max(clock, self._last_timestamp_us)
            index = self._next_index
            record = encode_record(index, payload, asqn=asqn, timestamp_us=timestamp_us)
            self._parts.append(record)
            self._size += len(record)
            self._next_index = index + 1
            if asqn != NO_ASQN:
                self._last_asqn = asqn
            self._last_timestamp_us = timestamp_us
            if self._oldest is None:
                self._oldest = time.monotonic()
            if self._mapped:
                self._publish_mapped()
            return tuple.__new__(self._ref_type, (self._log, offset, index))

    def _target(self) -> FileSystem | _MappedFile:
        if self._mapping is not None:
            return self._mapping
        return _OS if self._io is None else self._io

    def _publish_mapped(self) -> None:
        """Under the mutex: publish what ``append`` just encoded, by steps 7 and 9 of 6.2 through the mapping."""
        records, end, next_index, last_asqn, last_timestamp_us = self._take_locked(close=False)
        # W-42: the newest durable generation's slot stays as it is until a sync; an unsynced active
        # generation is overwritten by the one two above it, which belongs to the same slot.
        self._generation += 1 if self._generation == self._synced_generation else 2
        published = (self._generation, end, next_index, last_asqn, last_timestamp_us)
        try:
            _write_and_publish(self._target(), self._fd, records, end, published, self._log, self._next_log_number)
        except BaseException:
            self._closed = True
            raise
        self._committed = published

    def take(self, close: bool, /) -> Taken:
        with self._mutex:
            taken = self._take_locked(close=close)
            if self._closed:
                self._unmap()
        if close:
            self._settle(closed=True)
        return taken

    def _unmap(self) -> None:
        if self._mapping is not None:
            self._mapping.close()
        self._mapping = None
        self._mapped = False

    def _take_locked(self, *, close: bool) -> Taken:
        records = b"".join(self._parts)
        self._parts.clear()
        self._start += self._size
        self._size = 0
        self._oldest = None
        self._closed |= close
        return records, self._start, self._next_index, self._last_asqn, self._last_timestamp_us

    def commit(self, sync: bool, close: bool, /) -> Published | None:
        """Steps 7 to 10 of the write protocol (spec protocols §6.2) for what the buffer holds.

        Write it at the commit point, sync the file before publishing when ``sync``, publish the next
        generation (the slot, then the mirror fields), sync again when bound ``strict``; return what was
        published, or None when the buffer held nothing (a ``sync`` still syncs). Commits are made one at
        a time (the caller holds the writer's lock). A failure closes the buffer (W-19).
        """
        return self._commit(SYNC_FILE if sync else SYNC_NONE, close=close)

    def _commit(self, sync: int, *, close: bool) -> Published | None:
        if self._fd < 0:
            raise ValueError("bind the buffer to its segment before a commit")
        if self._mapped:
            return self._commit_mapped(sync=sync != SYNC_NONE, close=close)
        with self._mutex:
            if self._closed:
                return None  # closed by an earlier commit, a failure or the writer's close: nothing to do
            generation, offset = self._generation, self._start
            records, end, next_index, last_asqn, last_timestamp_us = self._take_locked(close=close)
            if sync == SYNC_RECORDS and offset - self._synced_offset >= self._full_sync_bytes:
                sync = SYNC_FILE  # bounds how far readers fall back, and recovery walks, after a power loss
        # W-42: publishing over an active generation not yet durable (no sync, or one of the records alone),
        # skip one, so that the slot of the newest durable generation stays as it is.
        base = generation if sync == SYNC_FILE or generation == self._synced_generation else generation + 1
        if base + 1 > _U8_MAX:
            if records:
                with self._mutex:
                    self._closed = True
                raise OverflowError("the commit generation is used up")
            base = generation - 1
        published = (base + 1, end, next_index, last_asqn, last_timestamp_us)
        io = self._target()
        try:
            _write_and_publish(io, self._fd, records, end, published, self._log, self._next_log_number, sync=sync)
            if records and self._strict:
                io.fdatasync(self._fd)
            if records and self._write_behind and sync == SYNC_NONE:
                io.start_writeback(self._fd, offset, len(records))
        except BaseException as exc:
            with self._mutex:
                self._closed = True
            self._settle(failure=str(exc) or type(exc).__name__)
            raise
        with self._mutex:
            if sync == SYNC_FILE:  # the step 8 sync made the active slot durable
                self._synced_generation, self._synced_offset = generation, offset
            if records:
                self._generation, self._committed = published[0], published
                if self._strict:
                    self._synced_generation, self._synced_offset = published[0], end
        self._settle(committed_next=next_index, closed=close)
        return published if records else None

    def _commit_mapped(self, *, sync: bool, close: bool) -> Published | None:
        """``commit`` of a mapped buffer: every append is published already; sync the mapping when
        ``sync``, unmap it when ``close``, and return the state published since the last commit, if any."""
        with self._mutex:
            self._closed |= close
            published = (self._generation, self._start, self._next_index, self._last_asqn, self._last_timestamp_us)
            try:
                if sync:
                    self._target().fdatasync(self._fd)
                    self._synced_generation = self._generation
            except BaseException:
                self._closed = True
                raise
            finally:
                if self._closed:
                    self._unmap()
            reported, self._reported_generation = self._reported_generation, self._generation
            return published if self._generation > reported else None

    def committed(self) -> Published:
        """The state of the active generation: generation, commit offset, next index, last asqn, last timestamp."""
        with self._mutex:
            return self._committed

    def commit_through(self, index: int, /) -> int | None:
        """Return once the record ``index`` is committed, leading the commit of a batch if nobody is;
        ``CLOSED`` if the buffer was closed without committing it. A failed commit raises: its leader the
        error it met, each follower an ``OSError`` that says it.

        Appenders wait on a condition: when a commit ends, those it covered
        return at once, and the first one left leads the next. A leader waits a
        little for the others (implementation notes, "Group commit"): until as
        many records wait as its last batch had, for no longer than that commit
        took; without the wait, the appenders just woken would split into two
        halves that alternate, each with its sync.
        """
        io_lock = self._io_lock
        if io_lock is None:
            raise ValueError("the buffer commits no groups: call group() first")
        batching = self._batching
        while True:
            with batching:
                self._waiting_next = max(self._waiting_next, index + 1)
                if self._gather_target and self._waiting_next - self._committed_next >= self._gather_target:
                    self._gathered.notify()  # only the leader, and only once it has what it waits for
                while True:
                    if self._committed_next > index:
                        return None
                    if self._failure is not None:
                        raise OSError(errno.EIO, self._failure)
                    if self._group_closed:
                        return CLOSED
                    if not self._leading:
                        self._leading = True
                        break
                    batching.wait()
                self._gather()
                before = self._committed_next
            started = time.monotonic()
            try:
                io_lock.acquire()
                try:
                    self._commit(self._batch_sync, close=False)
                finally:
                    io_lock.release()
            finally:
                with batching:
                    self._leading = False
                    self._last_batch = self._committed_next - before
                    self._last_commit_seconds = time.monotonic() - started
                    batching.notify_all()

    def _gather(self) -> None:
        """Under the batching condition: wait, boundedly, until as many records wait as the last batch had."""
        plan = gathering(self._whole_delay, self._group_delay, self._last_batch, self._last_commit_seconds)
        if plan is None:
            return
        delay, target = plan
        deadline = time.monotonic() + delay
        self._gather_target = target
        try:
            while target == 0 or self._waiting_next - self._committed_next < target:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._gathered.wait(left)
        finally:
            self._gather_target = 0

    def _settle(self, *, committed_next: int = 0, closed: bool = False, failure: str | None = None) -> None:
        """A commit ended, or the buffer closed: wake the appenders waiting for theirs."""
        with self._batching:
            self._committed_next = max(self._committed_next, committed_next)
            self._group_closed |= closed or failure is not None
            if failure is not None and self._failure is None:
                self._failure = failure
            self._batching.notify_all()

    def pending(self) -> int:
        return self._size

    def age(self) -> float:
        oldest = self._oldest
        return 0.0 if oldest is None else time.monotonic() - oldest


def _write_and_publish(  # noqa: PLR0917 - one step of 6.2 each
    io: FileSystem | _MappedFile,
    fd: int,
    records: bytes,
    end: int,
    published: Published,
    log: int,
    next_log_number: int,
    *,
    sync: int = SYNC_NONE,
) -> None:
    """Steps 7 to 9 of 6.2: write ``records`` so that they end at ``end``, make them durable as ``sync``
    says, then publish ``published`` (the slot, then the mirror fields) unless there were no records."""
    if records and sync == SYNC_RECORDS:
        io.pwrite_synced(fd, records, end - len(records))
    else:
        if records:
            io.pwrite(fd, records, end - len(records))
        if sync != SYNC_NONE:
            io.fdatasync(fd)
    if not records:
        return
    commit = CommitState(*published, next_log_number)
    for at, raw in (encode_slot(commit), encode_mirror(commit, log)):
        io.pwrite(fd, raw, at)
