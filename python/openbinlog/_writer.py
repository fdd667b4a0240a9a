"""The writer: append, commit, cut over (spec sections 6 to 9).

One ``Writer`` may be shared by threads: concurrent appends are committed
together, one sync for the whole group. Writers in several processes
interleave their commits under the directory's lock. Every file operation
goes through a ``FileSystem`` so tests can record and crash it.

This module holds the public class, the directory's lock (spec 9) and the
writer's own files; the rest is one module per job, put together here:
``_group_commit`` (the queue, 6.4), ``_commit`` (a batch, 6.2),
``_cutover`` (new segments, 8.2), ``_spare`` (spare volumes, 6.5) and
``_recovery_exec`` (recovery as planned by ``_recovery``, 7 and 8.5), with
the state they share declared in ``_writer_base``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Literal

from ._buffered import BufferedMixin
from ._commit import CommitMixin
from ._cutover import CutoverMixin
from ._format import (
    HEADER_SIZE,
    LOCK_NAME,
    MAX_PAYLOAD_SIZE,
    NO_ASQN,
    RECORD_HEADER_SIZE,
    SEGMENT_NAME,
    index_name,
)
from ._fs import SHARED_SYNC_SUPPORTED, FileSystem, OsFileSystem
from ._group_commit import GroupCommit, Ticket
from ._index_build import IndexBuild
from ._index_builder import IndexBuilder
from ._ref import Ref
from ._segment import LegacyHeaderInfo
from ._segment_file import SegmentFile, list_segments
from ._shared_commit import SharedCommitMixin
from ._spare import SpareMixin
from ._sparse_index import EntryRule
from ._writer_base import MAX_LOG_NUMBER, payload_bytes
from .errors import (
    AsqnOrderError,
    BinlogError,
    BinlogIOError,
    LegacyLogError,
    LogFullError,
    PayloadTooLargeError,
    WriterClosedError,
)

Durability = Literal["sync", "group", "os", "strict", "process", "mmap"]
DURABILITY_MODES: tuple[Durability, ...] = ("sync", "group", "os", "strict", "process", "mmap")
# Modes whose append returns before a commit of its own: the record waits in the buffer, or is published by it.
_APPEND_RETURNS_AT_ONCE = ("process", "mmap")
# Modes whose batches sync: writers that release the lock between batches share those syncs (spec 6.8).
_SHARED_SYNC_MODES = ("sync", "group", "strict")
DEFAULT_BUFFER_BYTES = 256 << 10  # the process mode's buffer: committed when it holds this much
DEFAULT_FLUSH_INTERVAL = 0.05  # seconds a record may wait in the process mode's buffer
MAX_ASQN = 2**63 - 1  # asqn is a signed 64-bit field
DEFAULT_SEGMENT_BYTES = 1 << 30  # as Kafka's segment.bytes: retention and compression work a segment at a time
LOCK_ATTEMPTS = 8  # reopenings of a LOCK that was removed or replaced while we waited for it


def _now_us() -> int:
    return time.time_ns() // 1000


class _DirectoryLock:
    """The writer's in-process mutex and the lock on ``LOCK``, taken and released together.

    A plain class rather than a generator context manager: it is entered once per commit.
    """

    __slots__ = ("_writer",)

    def __init__(self, writer: Writer) -> None:
        self._writer = writer

    def __enter__(self) -> None:
        writer = self._writer
        writer._io_mutex.acquire()
        if writer._closed and writer._lock_fd < 0:  # close() released the files while this call waited its turn
            writer._io_mutex.release()
            raise WriterClosedError("writer is closed", path=writer.directory)
        if writer._lock_held:  # an exclusive writer took it at open (W-39)
            return
        try:
            writer._take_lock()
            writer._lock_held = writer.holds_lock
        except OSError as exc:
            writer._io_mutex.release()
            raise BinlogIOError(f"cannot lock the log: {exc.strerror}", path=writer.directory) from exc
        except BaseException:
            writer._io_mutex.release()
            raise

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        writer = self._writer
        try:
            if not writer._lock_held:
                writer._fs.unlock(writer._lock_fd)
        finally:
            writer._io_mutex.release()


class Writer(BufferedMixin, SharedCommitMixin, CutoverMixin, CommitMixin, SpareMixin):
    """Append records to the log in ``directory``, creating it if needed.

    ``durability``: ``sync`` (default: every commit is on disk before
    ``append`` returns), ``group`` (waits ``group_delay`` seconds to gather
    more appenders into one sync), ``os`` (no sync: survives a crash of the
    process, not of the machine), ``strict`` (also syncs the published commit
    point), ``process`` (appends wait in a buffer of the process, committed
    when it holds ``buffer_bytes``, after ``flush_interval`` seconds, and by
    ``flush()`` and ``close()``, which also sync: a crash of the process loses
    what was appended since the last commit; implies ``exclusive``), ``mmap``
    (each append is published at once through a shared mapping of the
    preallocated segment, with no system call: survives a crash of the
    process, not of the machine, until ``flush()`` or ``close()`` syncs it;
    needs ``preallocate``, implies ``exclusive``).
    ``exclusive`` holds the log's lock from open to close, so that each batch
    skips the checks another writer's commits would need (other writers and
    maintenance wait until it is closed). ``shared_sync``: writers that do not hold the lock from open to
    close, in the ``sync``, ``group`` and ``strict`` modes, sync without holding it, so that writers in
    other processes share the disk's flushes (spec 6.8); on by default where the system allows it (Linux
    4.13 and later, with open file description locks), ``False`` takes the whole lock for every batch.
    ``preallocate`` creates segments of that many bytes, zero-filled,
    and rolls to a new one when the next record does not fit;
    ``max_segment_bytes`` (1 GiB by default; ``None``: never) cuts over once
    a segment has grown past it.
    ``backup_dir``: recovery first copies every byte it removes there.
    ``index_interval``: after each cutover, a thread of the writer builds the sparse index of the segment
    it sealed, an entry every ``index_interval`` bytes (spec 18; no commit waits for it), which seeks and
    split reads use; at open it also builds those of finished segments that have none. ``index_builds`` says
    what each build did. ``None`` (the default): ``binlog index`` builds them.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        durability: Durability = "sync",
        group_delay: float = 0.002,
        preallocate: int | None = None,
        max_segment_bytes: int | None = DEFAULT_SEGMENT_BYTES,
        verify_on_open: bool = True,
        backup_dir: str | os.PathLike[str] | None = None,
        fs: FileSystem | None = None,
        clock_us: Callable[[], int] = _now_us,
        exclusive: bool | None = None,
        buffer_bytes: int = DEFAULT_BUFFER_BYTES,
        flush_interval: float = DEFAULT_FLUSH_INTERVAL,
        shared_sync: bool | None = None,
        index_interval: int | None = None,
    ) -> None:
        if durability not in DURABILITY_MODES:
            raise ValueError(f"durability must be one of {DURABILITY_MODES}, not {durability!r}")
        if durability in _APPEND_RETURNS_AT_ONCE and exclusive is False:
            raise ValueError(
                f"the {durability} mode gives refs without a batch of its own: it needs an exclusive writer"
            )
        if durability == "mmap" and preallocate is None:
            raise ValueError("the mmap mode writes through a mapping of preallocated segments: give preallocate")
        if buffer_bytes < 1 or not flush_interval > 0:
            raise ValueError("buffer_bytes and flush_interval must be positive")
        if shared_sync and (durability not in _SHARED_SYNC_MODES or exclusive):
            raise ValueError(
                f"shared_sync is for writers that release the lock between batches, in the {_SHARED_SYNC_MODES}"
                " modes: an exclusive writer holds it, and the other modes make no sync of their own"
            )
        if shared_sync and not SHARED_SYNC_SUPPORTED:
            raise ValueError("shared_sync needs Linux 4.13 or later, with open file description locks (spec 6.8)")
        if preallocate is not None and preallocate < HEADER_SIZE + RECORD_HEADER_SIZE:
            raise ValueError(f"preallocate must be at least {HEADER_SIZE + RECORD_HEADER_SIZE} bytes")
        if index_interval is not None:
            if type(index_interval) is not int:
                raise TypeError(f"index_interval is a whole number of bytes, not {type(index_interval).__name__}")
            EntryRule(index_interval)  # refuses an interval the index cannot hold
        self.directory = os.fspath(directory)
        self.durability = durability
        self.group_delay = group_delay
        self.preallocate = preallocate
        self.max_segment_bytes = max_segment_bytes
        self.recovery = []
        self.backup_dir = None if backup_dir is None else os.fspath(backup_dir)
        self._fs = fs or OsFileSystem()
        self._buffer_fs = None if type(self._fs) is OsFileSystem else self._fs
        self._clock_us = clock_us
        self._custom_clock = clock_us is not _now_us
        self.holds_lock = durability in _APPEND_RETURNS_AT_ONCE or bool(exclusive)
        self._waits_for_commit = durability not in _APPEND_RETURNS_AT_ONCE
        self._shares_sync = (
            shared_sync is not False
            and SHARED_SYNC_SUPPORTED
            and not self.holds_lock
            and durability in _SHARED_SYNC_MODES
        )
        # An exclusive writer knows which of its slots are durable (W-42): its batches may sync their
        # records alone, which spares each sync the header page its previous batch wrote (6.2, step 8).
        self._sync_records_alone = self.holds_lock and durability in ("sync", "group")
        self.buffer_bytes = buffer_bytes
        self.flush_interval = flush_interval
        self._lock_held = False
        self._known = None
        self._buffer = None
        self._flusher = None
        self._stop_flusher = threading.Event()
        self._group = GroupCommit(self)
        self._io_mutex = threading.RLock()  # re-entered when an exclusive writer's append_many cuts over
        self._locked = _DirectoryLock(self)
        self._index_builder = None
        self._failed = None
        self._closed = False
        self._segment = None
        self._spare = None
        self._spare_thread = None
        self._make_directory()
        self._refuse_legacy()
        if index_interval is not None:
            # A writer that holds LOCK from open to close excludes other writers already: its own turn is enough.
            exclusion = (lambda: self._io_mutex) if self.holds_lock else None
            self._index_builder = IndexBuilder(self.directory, index_interval, exclusion)
        self._lock_path = os.path.join(self.directory, LOCK_NAME)
        self._lock_fd = -1
        self._lock_identity = (0, 0)
        try:
            self._open_lock()
        except OSError as exc:
            raise BinlogIOError(f"cannot open the lock file: {exc.strerror}", path=self.directory) from exc
        try:
            with self._os_errors("cannot open the log for writing"), self._locked:
                if self._open(verify=verify_on_open) is not None:
                    segment, commit = self._prepare()
                    if self.holds_lock:
                        self._start_buffering(segment, commit)
                    if preallocate:
                        self._start_spare()
        except BaseException:
            if self._index_builder is not None:
                self._index_builder.close()  # a recovery at open may have sealed a segment and started it
            self._release_files()
            raise
        if self._index_builder is not None:
            self._queue_unindexed()

    def _queue_unindexed(self) -> None:
        """Queue the finished segments that have no index file (sealed while no builder ran, or before a crash);
        an index built with another interval is left as it is. Never fails the open: they stay as they are."""
        assert self._index_builder is not None
        try:
            names = set(self._fs.listdir(self.directory))
            logs = list_segments(self.directory)[:-1]
        except (OSError, BinlogError):
            return
        for log in logs:
            if index_name(log) not in names:
                self._index_builder.sealed(log)

    # -- public API ---------------------------------------------------------

    def append(self, payload: bytes, *, asqn: int = NO_ASQN) -> Ref:
        """Append one record; return its ref once it is committed (in the ``process`` mode: at once)."""
        buffer = self._buffer
        if buffer is None:
            return self._submit([Ticket(payload_bytes(payload), asqn)])[0]
        try:
            result = buffer.append(payload, asqn, self._clock_us() if self._custom_clock else None)
        except OSError as exc:  # a publication through the file-system object of a mapped buffer
            raise self._mapped_store_failed(exc) from exc
        if type(result) is not Ref:
            result = self._append_buffered(payload, asqn)
        if self._waits_for_commit:
            self._wait_for_commit(result)
        return result

    def append_many(self, payloads: Iterable[bytes | tuple[bytes, int]]) -> list[Ref]:
        """Append records in one commit (all visible together); return their refs.

        In the ``process`` mode they go to the buffer, and a commit because the
        buffer is full may fall between two of them; in the ``mmap`` mode each
        is published on its own.
        """
        if self._buffer is not None:
            with self._locked:  # no other commit takes the buffer between two of them
                refs = [
                    self._append_buffered(*item) if isinstance(item, tuple) else self._append_buffered(item, NO_ASQN)
                    for item in payloads
                ]
            if refs and self._waits_for_commit:
                self._wait_for_commit(refs[-1])
            return refs
        tickets = [
            Ticket(payload_bytes(item[0]), item[1]) if isinstance(item, tuple) else Ticket(payload_bytes(item), NO_ASQN)
            for item in payloads
        ]
        return self._submit(tickets) if tickets else []

    def flush(self) -> None:
        """Commit everything appended so far and make it durable (``fdatasync``), whatever the mode."""
        self._check_usable()
        if self._buffer is not None:
            self._commit_buffer(sync=True)
            return
        with self._os_errors("sync failed"), self._locked:
            if self._segment is not None:
                try:
                    self._fs.fdatasync(self._segment.fd)
                except OSError:
                    self._failed = BinlogIOError("sync failed", path=self._segment.path)
                    raise

    def cutover(self) -> int:
        """Seal the last segment and start the next one; return the new log number."""
        self._check_usable()
        try:
            with self._os_errors("cutover failed"), self._locked:
                if self._buffer is not None:
                    self._commit_buffer_locked(sync=True, close=True)  # as before any cutover (W-40)
                segment, commit = self._prepare()
                if segment.log >= MAX_LOG_NUMBER:
                    raise LogFullError(
                        f"segment {MAX_LOG_NUMBER} is the last a log may have: no cutover beyond it (W-1)",
                        path=segment.path,
                        log=segment.log,
                    )
                successor = self._cut_over(segment, commit)
                self._known = None
                segment, commit = self._prepare()
                if self._buffer is not None:
                    self._start_buffering(segment, commit)
                return successor.log
        except BinlogIOError as exc:
            self._failed = exc  # as for a failed commit: nothing more until reopened (W-19)
            raise

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the log's writer lock: for maintenance that must not interleave with commits."""
        self._check_usable()
        with self._os_errors("maintenance failed"), self._locked:
            yield

    def drop_segments(self, before_log: int) -> list[int]:
        """Remove sealed segments numbered below ``before_log``, lowest first (retention, spec 2.5).

        Only the lowest segment present is ever removed, only when it is
        sealed and not the last one; removal stops at the first that is not.
        Refs into a removed segment become invalid.
        """
        self._check_usable()
        removed: list[int] = []
        with self._os_errors("segment removal failed"), self._locked:
            while True:
                names = self._fs.listdir(self.directory)
                files: dict[int, list[str]] = {}
                for name in names:
                    if match := SEGMENT_NAME.match(name):
                        files.setdefault(int(match[1]), []).append(name)
                logs = sorted(files)
                if len(logs) < 2 or logs[0] >= before_log:
                    break
                with SegmentFile(self.directory, logs[0]) as lowest:
                    header = lowest.header()
                    sealed = not isinstance(header, LegacyHeaderInfo) and lowest.commit(header).closed
                if not sealed:
                    break
                if index_name(logs[0]) in names:  # an index goes before its segment (spec 18.4)
                    self._fs.unlink(self._path(index_name(logs[0])))
                for name in files[logs[0]]:  # the segment and any compressed copy of it
                    self._fs.unlink(self._path(name))
                self._fs.fsync_dir(self.directory)
                removed.append(logs[0])
        return removed

    @property
    def index_builds(self) -> list[IndexBuild]:
        """What the index builder did for each segment this writer sealed, in order (``index_interval``)."""
        return [] if self._index_builder is None else list(self._index_builder.builds)

    def close(self) -> None:
        """Commit and sync what the ``process`` mode holds (``mmap``: sync the mapping), then release the log's
        files and lock. An index build under way is given up (``binlog index`` builds it later)."""
        if self._buffer is not None and not self._closed and self._failed is None:
            # A log closed by a writer that synced records alone: its commit point made durable too.
            self._commit_buffer(sync=not self._waits_for_commit or self._sync_records_alone, close=True)
        self._stop_flusher.set()
        if self._flusher is not None:
            self._flusher.join()
        if self._index_builder is not None:
            self._index_builder.close()
        with self._group.idle():
            if self._closed:
                return
            self._closed = True
        if self._buffer is not None:
            self._buffer.take(True)  # later appends report the writer closed
        if self._spare_thread is not None or self._spare is not None:
            with self._os_errors("cannot remove the spare volume"), self._locked:
                self._discard_spare()
        with self._io_mutex:
            self._release_files()

    def __enter__(self) -> Writer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- appending --------------------------------------------------------------

    def _submit(self, tickets: list[Ticket]) -> list[Ref]:
        for ticket in tickets:
            if len(ticket.payload) > MAX_PAYLOAD_SIZE:
                raise PayloadTooLargeError(
                    f"payload of {len(ticket.payload)} bytes exceeds {MAX_PAYLOAD_SIZE}", path=self.directory
                )
            # Refused before queueing: a value the format cannot hold must not fail the others' batch.
            if not isinstance(ticket.asqn, int) or not NO_ASQN <= ticket.asqn <= MAX_ASQN:
                raise AsqnOrderError(f"asqn {ticket.asqn!r} is outside -1 to 2^63-1", path=self.directory)
        return self._group.submit(tickets)

    # -- files and the lock ---------------------------------------------------

    def _make_directory(self) -> None:
        missing: list[str] = []
        path = os.path.abspath(self.directory)
        while not self._fs.exists(path):
            missing.append(path)
            path = os.path.dirname(path)
        for path in reversed(missing):
            try:
                self._fs.mkdir(path)
            except FileExistsError:
                continue
            except OSError as exc:
                raise BinlogIOError(f"cannot create the log directory: {exc.strerror}", path=path) from exc
            self._fs.fsync_dir(os.path.dirname(path))
        if not os.path.isdir(self.directory):
            raise BinlogIOError("not a directory", path=self.directory)

    def _refuse_legacy(self) -> None:
        """Refuse a version 1 log before leaving any trace in it (the check is repeated under the lock)."""
        logs = list_segments(self.directory)
        if not logs:
            return
        with SegmentFile(self.directory, logs[-1]) as last:
            if not last.is_blank() and isinstance(last.header(), LegacyHeaderInfo):
                raise LegacyLogError(
                    "a version 1 (jPOS-EE) log is read-only: writers write version 2 only",
                    path=last.path,
                    log=last.log,
                    offset=4,
                )

    def _take_lock(self, *, append: bool = False) -> None:
        """Lock ``LOCK`` (``append``: byte 0 alone, spec 6.8), and make sure the name still leads to the file
        locked (spec 9).

        Someone deleting or replacing ``LOCK`` while writers run would let the
        next writer lock another file and commit beside us: reopen the name
        and lock what it names now, so every writer converges on one file.
        """
        lock, unlock = (self._fs.lock_append, self._fs.unlock_append) if append else (self._fs.lock, self._fs.unlock)
        for _ in range(LOCK_ATTEMPTS):
            lock(self._lock_fd)
            if self._fs.names(self._lock_path, self._lock_identity):
                return
            unlock(self._lock_fd)
            self._fs.close_lock(self._lock_fd)
            self._lock_fd = -1
            self._open_lock()
        raise BinlogIOError("LOCK keeps being removed or replaced: no lock can be relied on", path=self._lock_path)

    def _open_lock(self) -> None:
        # Its identity is taken once per open: checking the name then costs one stat per commit.
        self._lock_fd = self._fs.open_lock(self._lock_path)
        self._lock_identity = self._fs.identity(self._lock_fd)

    def _release_files(self) -> None:
        self._table = None  # this writer's entry of the commit table, given up
        if self._lock_held:
            self._lock_held = False
            self._fs.unlock(self._lock_fd)
        if self._segment is not None:
            self._fs.close(self._segment.fd)
            self._segment = None
        if getattr(self, "_lock_fd", -1) >= 0:
            self._fs.close_lock(self._lock_fd)
            self._lock_fd = -1
