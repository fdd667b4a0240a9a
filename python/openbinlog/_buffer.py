"""The ``process`` durability mode's buffer of encoded records (spec protocols §6.5).

An append is encoded at once, gets its ref, and waits in the buffer until the
writer commits the buffer as one batch. ``PureRecordBuffer`` is the reference;
``openbinlog._native.RecordBuffer`` is the same in compiled code, used when
built (``_accel``), and the tests drive both with the same appends and require
the same bytes, refs and codes.

An append returns its ``Ref``, or one of the codes below when the writer must
act first; the common case runs no check the writer has to repeat.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol

from ._format import MAX_PAYLOAD_SIZE, NO_ASQN, RECORD_HEADER_SIZE
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
    "Published",
    "PureRecordBuffer",
    "RecordBuffer",
    "Taken",
]

CLOSED = 1  # closed by the commit before a cutover: append to the writer's new buffer
FLUSH_FIRST = 2  # the buffer holds its limit: commit it, then append again
CUTOVER_FIRST = 3  # the record does not fit the segment, or the segment reached its size limit
ASQN_ORDER = 4  # the asqn is not above the last one
INDEXES_USED_UP = 5  # the next index would not fit 64 bits
CHECK_ARGUMENTS = 6  # not a plain case (not bytes, too large, asqn no int64): the writer checks it

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
        sync: bool,
        strict: bool,
        close: bool,
        /,
    ) -> Published | None: ...
    def pending(self) -> int: ...
    def age(self) -> float: ...


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
            if self._next_index == _U8_MAX:
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
            return tuple.__new__(self._ref_type, (self._log, offset, index))

    def take(self, close: bool, /) -> Taken:
        with self._mutex:
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
        sync: bool,
        strict: bool,
        close: bool,
        /,
    ) -> Published | None:
        """Steps 7 to 10 of the write protocol (spec protocols §6.2) for what the buffer holds.

        Write it at the commit point, sync it when ``sync``, publish generation
        ``generation + 1`` (the slot, then the mirror fields), sync again when
        ``strict``; return what was published, or None when the buffer held
        nothing (``sync`` still syncs). ``fs`` None: the operating system's
        file system. A failure closes the buffer (W-19).
        """
        io = fs or _OS
        records, end, next_index, last_asqn, last_timestamp_us = self.take(close)
        published = (generation + 1, end, next_index, last_asqn, last_timestamp_us)
        try:
            if records:
                io.pwrite(fd, records, end - len(records))
            if sync:
                io.fdatasync(fd)
            if not records:
                return None
            commit = CommitState(*published, next_log_number)
            for at, raw in (encode_slot(commit), encode_mirror(commit, self._log)):
                io.pwrite(fd, raw, at)
            if strict:
                io.fdatasync(fd)
        except BaseException:
            self.take(True)
            raise
        return published

    def pending(self) -> int:
        return self._size

    def age(self) -> float:
        oldest = self._oldest
        return 0.0 if oldest is None else time.monotonic() - oldest
