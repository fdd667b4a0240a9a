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

import mmap
import threading
import time
from typing import Protocol

from ._format import MAX_PAYLOAD_SIZE, NO_ASQN, RECORD_HEADER_SIZE, SLOT_OFFSETS, SLOT_SIZE
from ._fs import FileSystem, OsFileSystem
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
    def append(self, payload: object, asqn: object, now_us: int | None, /) -> Ref | int: ...
    def take(self, close: bool, /) -> Taken: ...
    def commit(  # noqa: PLR0917 - positional, as the compiled twin's method is
        self,
        fs: FileSystem | None,
        fd: int,
        generation: int,
        next_log_number: int,
        sync: int,
        strict: bool,
        close: bool,
        /,
    ) -> Published | None: ...
    def map(self, fs: FileSystem | None, fd: int, length: int, generation: int, next_log_number: int, /) -> None: ...
    def pending(self) -> int: ...
    def age(self) -> float: ...


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
        # Mapped: where each append publishes at once, and the generation it last published.
        self._target: FileSystem | _MappedFile | None = None
        self._fd = -1
        self._generation = 0
        self._synced_generation = 0  # its slot is not written until a newer generation is synced (W-42)
        self._next_log_number = 0

    def map(self, fs: FileSystem | None, fd: int, length: int, generation: int, next_log_number: int, /) -> None:
        """From now on each append publishes at once, through a shared mapping of the first ``length``
        bytes of ``fd`` (``fs`` None) or through ``fs.pwrite``; ``generation`` and ``next_log_number``
        are those of the active slot, which the caller has synced."""
        if length < self._end_limit or length < SLOT_OFFSETS[1] + SLOT_SIZE:
            raise ValueError("the mapping must cover the header and every record")
        with self._mutex:
            if self._parts or self._target is not None:
                raise ValueError("map a buffer before its first append, once")
            self._target = _MappedFile(fd, length) if fs is None else fs
            self._fd, self._generation, self._next_log_number = fd, generation, next_log_number
            self._synced_generation = generation

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
            if self._next_index == _U8_MAX or (self._target is not None and self._generation >= _U8_MAX - 1):
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
            if self._target is not None:
                self._publish_mapped(self._target)
            return tuple.__new__(self._ref_type, (self._log, offset, index))

    def _publish_mapped(self, target: FileSystem | _MappedFile) -> None:
        """Under the mutex: publish what ``append`` just encoded, by steps 7 and 9 of 6.2 through the mapping."""
        records, end, next_index, last_asqn, last_timestamp_us = self._take_locked(close=False)
        # W-42: the newest durable generation's slot stays as it is until a sync; an unsynced active
        # generation is overwritten by the one two above it, which belongs to the same slot.
        self._generation += 1 if self._generation == self._synced_generation else 2
        try:
            published = (self._generation, end, next_index, last_asqn, last_timestamp_us)
            _write_and_publish(target, self._fd, records, end, published, self._log, self._next_log_number)
        except BaseException:
            self._closed = True
            raise

    def take(self, close: bool, /) -> Taken:
        with self._mutex:
            taken = self._take_locked(close=close)
            if self._closed:
                self._unmap()
            return taken

    def _unmap(self) -> None:
        if isinstance(self._target, _MappedFile):
            self._target.close()
        self._target = None

    def _take_locked(self, *, close: bool) -> Taken:
        records = b"".join(self._parts)
        self._parts.clear()
        self._start += self._size
        self._size = 0
        self._oldest = None
        self._closed |= close
        return records, self._start, self._next_index, self._last_asqn, self._last_timestamp_us

    def commit(  # noqa: PLR0917 - positional, as the compiled twin's method is
        self,
        fs: FileSystem | None,
        fd: int,
        generation: int,
        next_log_number: int,
        sync: int,
        strict: bool,
        close: bool,
        /,
    ) -> Published | None:
        """Steps 7 to 10 of the write protocol (spec protocols §6.2) for what the buffer holds.

        Write it at the commit point, make it durable as ``sync`` (``SYNC_*``) says, publish generation
        ``generation + 1`` (the slot, then the mirror fields), sync again when
        ``strict``; return what was published, or None when the buffer held
        nothing (``SYNC_FILE`` still syncs). ``fs`` None: the operating system's
        file system. A failure closes the buffer (W-19).
        """
        if sync not in (SYNC_NONE, SYNC_FILE, SYNC_RECORDS):
            raise ValueError(f"sync {sync} is not one of SYNC_NONE, SYNC_FILE, SYNC_RECORDS")
        if self._target is not None:
            return self._commit_mapped(generation, sync=sync != SYNC_NONE, close=close)
        records, end, next_index, last_asqn, last_timestamp_us = self.take(close)
        published = (generation + 1, end, next_index, last_asqn, last_timestamp_us)
        io = fs or _OS
        try:
            _write_and_publish(io, fd, records, end, published, self._log, next_log_number, sync=sync)
            if records and strict:
                io.fdatasync(fd)
        except BaseException:
            self.take(True)
            raise
        return published if records else None

    def _commit_mapped(self, generation: int, *, sync: bool, close: bool) -> Published | None:
        """``commit`` of a mapped buffer: every append is published already; sync the mapping when
        ``sync``, unmap it when ``close``, and return the state published since ``generation``, if any."""
        with self._mutex:
            target = self._target
            assert target is not None
            self._closed |= close
            published = (self._generation, self._start, self._next_index, self._last_asqn, self._last_timestamp_us)
            try:
                if sync:
                    target.fdatasync(self._fd)
                    self._synced_generation = self._generation
            except BaseException:
                self._closed = True
                raise
            finally:
                if self._closed:
                    self._unmap()
            return published if self._generation > generation else None

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
