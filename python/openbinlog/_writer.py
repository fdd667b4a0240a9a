"""The writer: append, commit, cut over (spec sections 6 to 9).

One ``Writer`` may be shared by threads: concurrent appends are committed
together, one sync for the whole group. Writers in several processes
interleave their commits under the directory's lock. Every file operation
goes through a ``FileSystem`` so tests can record and crash it.
"""

from __future__ import annotations

import functools
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Literal

from ._format import HEADER_SIZE, LOCK_NAME, MAX_PAYLOAD_SIZE, NO_ASQN, RECORD_HEADER_SIZE, SEGMENT_NAME, segment_name
from ._fs import FileSystem, OsFileSystem
from ._records import encode_record
from ._recovery import FdSource, LastSegment, RecoveryAction, SealPlan, TailPlan, plan_open, plan_tail
from ._ref import Ref
from ._segment import (
    CommitState,
    LegacyHeaderInfo,
    SegmentHeaderInfo,
    active_commit,
    build_header,
    encode_mirror,
    encode_slot,
    parse_header,
)
from ._segment_file import SegmentFile, list_segments
from .errors import (
    AsqnOrderError,
    BinlogError,
    BinlogIOError,
    LegacyLogError,
    LogFullError,
    PayloadTooLargeError,
    WriterClosedError,
    WriterFailedError,
)

Durability = Literal["sync", "group", "os", "strict"]
DURABILITY_MODES: tuple[Durability, ...] = ("sync", "group", "os", "strict")
ZERO_CHUNK = bytes(1 << 20)
QUIET_GAPS = 4  # a gathering leader stops after this many average arrival gaps without an arrival
MAX_LOG_NUMBER = 99_999_999  # eight digits (W-1)
MAX_COUNTER = 2**64 - 1  # generations and indexes are unsigned 64-bit fields
MAX_ASQN = 2**63 - 1  # asqn is a signed 64-bit field
DEFAULT_SEGMENT_BYTES = 1 << 30  # as Kafka's segment.bytes: retention and compression work a segment at a time
LOCK_ATTEMPTS = 8  # reopenings of a LOCK that was removed or replaced while we waited for it


def _payload_bytes(payload: object) -> bytes:
    """A payload is bytes: say so plainly, rather than ``bytes()``'s "string argument without an encoding"."""
    if type(payload) is bytes:  # the common case, without a copy
        return payload
    if isinstance(payload, str):
        raise TypeError("a payload is bytes, not str: encode it first, e.g. text.encode()")
    try:
        return bytes(memoryview(payload))  # type: ignore[arg-type]  # not bytes(n): an int is no payload
    except TypeError:
        raise TypeError(f"a payload is bytes (or bytes-like), not {type(payload).__name__}") from None


def _now_us() -> int:
    return time.time_ns() // 1000


@functools.lru_cache(maxsize=64)
def _successor_path(directory: str, log: int) -> str:
    """The path of segment ``log + 1``, looked for before every commit (W-16): built once per segment."""
    return os.path.join(directory, segment_name(log + 1))


@dataclass
class _Ticket:
    payload: bytes
    asqn: int
    ref: Ref | None = None
    error: BaseException | None = None
    done: bool = False


class _Call:
    """One ``append`` or ``append_many`` call waiting in the queue, and the lock its thread sleeps on.

    The leader releases ``wake`` when the call's records are committed, or
    after setting ``lead`` when the call is to lead the next batch: each
    waiting thread is woken once, by name, never by a broadcast.
    """

    __slots__ = ("lead", "tickets", "wake")

    def __init__(self, tickets: list[_Ticket]) -> None:
        self.tickets = tickets
        self.lead = False
        self.wake = threading.Lock()
        self.wake.acquire()


@dataclass
class _OpenSegment:
    log: int
    path: str
    fd: int
    header: SegmentHeaderInfo
    tail_checked: bool = False
    # The header bytes as this writer last read or wrote them, and their commit state: when a
    # commit finds the same bytes, no other writer has committed since, and decoding is skipped.
    header_image: bytes = b""
    image_commit: CommitState | None = None


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
        try:
            writer._take_lock()
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
            writer._fs.unlock(writer._lock_fd)
        finally:
            writer._io_mutex.release()


class Writer:
    """Append records to the log in ``directory``, creating it if needed.

    ``durability``: ``sync`` (default: every commit is on disk before
    ``append`` returns), ``group`` (waits ``group_delay`` seconds to gather
    more appenders into one sync), ``os`` (no sync: survives a crash of the
    process, not of the machine), ``strict`` (also syncs the published commit
    point). ``preallocate`` creates segments of that many bytes, zero-filled,
    and rolls to a new one when the next record does not fit;
    ``max_segment_bytes`` (1 GiB by default; ``None``: never) cuts over once
    a segment has grown past it.
    ``backup_dir``: recovery first copies every byte it removes there.
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
    ) -> None:
        if durability not in DURABILITY_MODES:
            raise ValueError(f"durability must be one of {DURABILITY_MODES}, not {durability!r}")
        if preallocate is not None and preallocate < HEADER_SIZE + RECORD_HEADER_SIZE:
            raise ValueError(f"preallocate must be at least {HEADER_SIZE + RECORD_HEADER_SIZE} bytes")
        self.directory = os.fspath(directory)
        self.durability = durability
        self.group_delay = group_delay
        self.preallocate = preallocate
        self.max_segment_bytes = max_segment_bytes
        self.recovery: list[RecoveryAction] = []
        self.backup_dir = None if backup_dir is None else os.fspath(backup_dir)
        self._fs: FileSystem = fs or OsFileSystem()
        self._clock_us = clock_us
        self._queue_mutex = threading.Lock()
        self._arrivals = threading.Condition(self._queue_mutex)
        self._idle = threading.Condition(self._queue_mutex)
        self._io_mutex = threading.Lock()
        self._locked = _DirectoryLock(self)
        self._pending: list[_Call] = []
        self._leader_active = False
        self._closing = False  # close() is waiting for the group to go idle
        self._last_batch_calls = 0
        self._last_commit_seconds = 0.0
        self._gathering = False
        self._arrival_gap = 0.0  # seconds between appenders re-queueing while a leader gathers, averaged
        self._last_arrival = 0.0
        self._gather_target = 0  # calls the gathering leader waits for; 0: the whole group_delay
        self._failed: BaseException | None = None
        self._closed = False
        self._segment: _OpenSegment | None = None
        self._spare: tuple[str, int] | None = None
        self._spare_thread: threading.Thread | None = None
        self._make_directory()
        self._refuse_legacy()
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
                    self._prepare()
                    if preallocate:
                        self._start_spare()
        except BaseException:
            self._release_files()
            raise

    # -- public API ---------------------------------------------------------

    def append(self, payload: bytes, *, asqn: int = NO_ASQN) -> Ref:
        """Append one record; return its ref once it is committed."""
        return self._submit([_Ticket(_payload_bytes(payload), asqn)])[0]

    def append_many(self, payloads: Iterable[bytes | tuple[bytes, int]]) -> list[Ref]:
        """Append records in one commit (all visible together); return their refs."""
        tickets = [
            _Ticket(_payload_bytes(item[0]), item[1])
            if isinstance(item, tuple)
            else _Ticket(_payload_bytes(item), NO_ASQN)
            for item in payloads
        ]
        return self._submit(tickets) if tickets else []

    def cutover(self) -> int:
        """Seal the last segment and start the next one; return the new log number."""
        self._check_usable()
        try:
            with self._os_errors("cutover failed"), self._locked:
                segment, commit = self._prepare()
                if segment.log >= MAX_LOG_NUMBER:
                    raise LogFullError(
                        f"segment {MAX_LOG_NUMBER} is the last a log may have: no cutover beyond it (W-1)",
                        path=segment.path,
                        log=segment.log,
                    )
                return self._cut_over(segment, commit).log
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
                for name in files[logs[0]]:  # the segment and any compressed copy of it
                    self._fs.unlink(self._path(name))
                self._fs.fsync_dir(self.directory)
                removed.append(logs[0])
        return removed

    def close(self) -> None:
        with self._queue_mutex:
            self._closing = True
            while self._leader_active:
                self._idle.wait()
            if self._closed:
                return
            self._closed = True
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

    # -- group commit -------------------------------------------------------

    def _check_usable(self) -> None:
        if self._closed:
            raise WriterClosedError("writer is closed", path=self.directory)
        if self._failed is not None:
            raise WriterFailedError(
                f"an earlier write or sync failed ({self._failed}); reopen the log to continue", path=self.directory
            )

    def _submit(self, tickets: list[_Ticket]) -> list[Ref]:
        for ticket in tickets:
            if len(ticket.payload) > MAX_PAYLOAD_SIZE:
                raise PayloadTooLargeError(
                    f"payload of {len(ticket.payload)} bytes exceeds {MAX_PAYLOAD_SIZE}", path=self.directory
                )
            # Refused before queueing: a value the format cannot hold must not fail the others' batch.
            if not isinstance(ticket.asqn, int) or not NO_ASQN <= ticket.asqn <= MAX_ASQN:
                raise AsqnOrderError(f"asqn {ticket.asqn!r} is outside -1 to 2^63-1", path=self.directory)
        call = _Call(tickets)
        with self._queue_mutex:
            self._check_usable()
            self._pending.append(call)
            if not self._leader_active:
                self._leader_active = call.lead = True
            elif self._gathering:
                self._note_arrival()
        try:
            if not call.lead:
                call.wake.acquire()
            if call.lead:
                self._lead(call)
        except BaseException:
            self._abandon(call)
            raise
        for ticket in tickets:
            if ticket.error is not None:
                raise ticket.error
        return [ticket.ref for ticket in tickets if ticket.ref is not None]

    def _lead(self, own: _Call) -> None:
        """Commit everything queued as one batch, then wake its callers and hand on the lead.

        ``own.lead`` stays set until the lead is handed on, so that an
        interrupted leader's ``_abandon`` knows whether it still has to.
        """
        interrupted: BaseException | None = None
        with self._queue_mutex:
            try:
                self._gather()
            except BaseException as exc:  # an interrupt while gathering: commit the queue first
                interrupted = exc
            calls, self._pending = self._pending, []
        try:
            started = time.monotonic()
            self._commit([ticket for call in calls for ticket in call.tickets])
            self._last_commit_seconds = time.monotonic() - started
        finally:
            with self._queue_mutex:
                self._last_batch_calls = len(calls)
                own.lead = False
                self._hand_on_lead()
            for call in calls:
                if call is not own:
                    call.wake.release()
        if interrupted is not None:
            raise interrupted

    def _gather(self) -> None:
        """Under the queue mutex: wait, for a bounded time, for more appends to join the batch.

        The ``group`` mode waits ``group_delay``. Otherwise the leader waits
        only when the last batch was shared by several calls: until as many
        are queued again, for no longer than the last commit took (nor than
        ``group_delay``), and no longer than a few arrival gaps after the last
        arrival. Threads just woken from the previous batch re-queue a few
        tens of microseconds apart; without the wait, batches split into two
        halves that alternate, each with its own sync. A silence of several
        gaps means the others have stopped appending, so the one appender
        left pays that silence once, not a whole commit. One appender alone
        never waits.
        """
        if self.durability == "group":
            delay, target = self.group_delay, 0
        elif self._last_batch_calls > 1:
            delay, target = min(self._last_commit_seconds, self.group_delay), self._last_batch_calls
        else:
            return
        self._last_arrival = time.monotonic()
        deadline = self._last_arrival + delay
        self._gather_target = target
        self._gathering = True
        try:
            while target == 0 or len(self._pending) < target:
                now = time.monotonic()
                left = deadline - now
                if target and self._arrival_gap:
                    left = min(left, self._last_arrival + QUIET_GAPS * self._arrival_gap - now)
                if left <= 0:
                    break
                self._arrivals.wait(left)
        finally:
            self._gathering = False

    def _note_arrival(self) -> None:
        """Under the queue mutex, while a leader gathers: time the arrival, and wake the leader once
        the batch is as large as it waits for. Waking it at every arrival would cost a thread switch
        per appender, each contending for the interpreter with the appenders still arriving."""
        if not self._gather_target:  # the group mode waits out its delay whatever arrives
            return
        now = time.monotonic()
        gap = now - self._last_arrival
        self._arrival_gap = gap if not self._arrival_gap else 0.8 * self._arrival_gap + 0.2 * gap
        self._last_arrival = now
        if len(self._pending) >= self._gather_target:
            self._arrivals.notify()

    def _hand_on_lead(self) -> None:
        """Under the queue mutex: the first queued call leads the next batch, or no one does."""
        if self._pending:
            successor = self._pending[0]
            successor.lead = True
            successor.wake.release()
        else:
            self._leader_active = False
            if self._closing:
                self._idle.notify_all()

    def _abandon(self, call: _Call) -> None:
        """A caller was interrupted: drop its records if still queued, and pass on a lead it still holds."""
        with self._queue_mutex:
            if call in self._pending:
                self._pending.remove(call)
            if call.lead:
                call.lead = False
                self._hand_on_lead()

    def _commit(self, batch: list[_Ticket]) -> None:
        try:
            if self._failed is not None:
                raise WriterFailedError(
                    "an earlier write or sync failed; reopen the log to continue", path=self.directory
                )
            written: list[tuple[_Ticket, Ref]] = []
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
        self, tickets: list[_Ticket], segment: _OpenSegment, commit: CommitState, done: list[tuple[_Ticket, Ref]]
    ) -> tuple[list[_Ticket], _OpenSegment, CommitState]:
        """Write, sync and publish as many of ``tickets`` as fit in ``segment``; add them to ``done``."""
        if commit.generation >= MAX_COUNTER:
            raise LogFullError("the commit generation is used up: start a new log", path=segment.path, log=segment.log)
        capacity = segment.header.capacity or None
        offset, index = commit.commit_offset, commit.next_index
        last_asqn, last_timestamp = commit.last_asqn, commit.last_timestamp_us
        now = max(self._clock_us(), last_timestamp)
        parts: list[bytes] = []
        written: list[tuple[_Ticket, Ref]] = []
        rest: list[_Ticket] = []
        for position, ticket in enumerate(tickets):
            if index >= MAX_COUNTER:  # the slot's next index after it would not fit 64 bits
                ticket.error = LogFullError("record indexes are used up: start a new log", path=self.directory)
                ticket.done = True
                continue
            if ticket.asqn != NO_ASQN and (ticket.asqn < 0 or ticket.asqn <= last_asqn):
                ticket.error = AsqnOrderError(
                    f"asqn {ticket.asqn} is not above the log's last asqn {last_asqn}", path=self.directory, index=index
                )
                ticket.done = True
                continue
            record = encode_record(index, ticket.payload, asqn=ticket.asqn, timestamp_us=now)
            if capacity is not None and offset + len(record) > capacity:
                if HEADER_SIZE + len(record) > capacity:  # refused before any cutover is made for it (W-10)
                    ticket.error = PayloadTooLargeError(
                        f"a record of {len(record)} bytes cannot fit a preallocated segment of {capacity}",
                        path=self.directory,
                    )
                    ticket.done = True
                    continue
                if segment.log >= MAX_LOG_NUMBER:
                    ticket.error = LogFullError(
                        f"segment {MAX_LOG_NUMBER} is full and is the last a log may have (W-1)", path=segment.path
                    )
                    ticket.done = True
                    continue
                rest = tickets[position:]
                break
            parts.append(record)
            written.append((ticket, Ref(segment.log, offset, index)))
            offset += len(record)
            index += 1
            if ticket.asqn != NO_ASQN:
                last_asqn = ticket.asqn
        if written:
            self._fs.pwrite(segment.fd, b"".join(parts), commit.commit_offset)
            if self.durability != "os":
                self._fs.fdatasync(segment.fd)
            # Built directly: dataclasses.replace costs a tenth of a buffered append.
            commit = CommitState(commit.generation + 1, offset, index, last_asqn, now, commit.next_log_number)
            self._publish(segment, commit)
            done += written
        full = bool(rest) or (self.max_segment_bytes is not None and commit.commit_offset >= self.max_segment_bytes)
        if full and segment.log < MAX_LOG_NUMBER:  # the last segment a log may have keeps growing (2.2)
            segment = self._cut_over(segment, commit)
            commit = self._read_commit(segment)
        return rest, segment, commit

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

    _creates_log = True  # a directory left without segments gets segment 1 (spec 2.4)

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

    @contextmanager
    def _os_errors(self, what: str) -> Iterator[None]:
        try:
            yield
        except OSError as exc:
            raise BinlogIOError(f"{what}: {exc}", path=getattr(exc, "filename", None) or self.directory) from exc

    def _take_lock(self) -> None:
        """Lock ``LOCK``, and make sure the name still leads to the file locked (spec 9).

        Someone deleting or replacing ``LOCK`` while writers run would let the
        next writer lock another file and commit beside us: reopen the name
        and lock what it names now, so every writer converges on one file.
        """
        for _ in range(LOCK_ATTEMPTS):
            self._fs.lock(self._lock_fd)
            if self._fs.names(self._lock_path, self._lock_identity):
                return
            self._fs.unlock(self._lock_fd)
            self._fs.close_lock(self._lock_fd)
            self._lock_fd = -1
            self._open_lock()
        raise BinlogIOError("LOCK keeps being removed or replaced: no lock can be relied on", path=self._lock_path)

    def _open_lock(self) -> None:
        # Its identity is taken once per open: checking the name then costs one stat per commit.
        self._lock_fd = self._fs.open_lock(self._lock_path)
        self._lock_identity = self._fs.identity(self._lock_fd)

    def _release_files(self) -> None:
        if self._segment is not None:
            self._fs.close(self._segment.fd)
            self._segment = None
        if getattr(self, "_lock_fd", -1) >= 0:
            self._fs.close_lock(self._lock_fd)
            self._lock_fd = -1

    def _path(self, name: str) -> str:
        return os.path.join(self.directory, name)

    def _read_commit(self, segment: _OpenSegment) -> CommitState:
        data = self._fs.pread(segment.fd, HEADER_SIZE, 0)
        if data == segment.header_image and segment.image_commit is not None:
            return segment.image_commit
        try:
            commit = active_commit(data, base_index=segment.header.base_index, log=segment.log)
        except BinlogError as exc:
            raise exc.located(path=segment.path) from None
        segment.header_image, segment.image_commit = data, commit
        return commit

    def _publish(self, segment: _OpenSegment, commit: CommitState) -> None:
        image = bytearray(segment.header_image)
        for at, raw in (encode_slot(commit), encode_mirror(commit, segment.log)):
            self._fs.pwrite(segment.fd, raw, at)
            image[at : at + len(raw)] = raw
        if len(image) == HEADER_SIZE:
            segment.header_image, segment.image_commit = bytes(image), commit
        if self.durability == "strict":
            self._fs.fdatasync(segment.fd)

    # -- finding, recovering and creating segments ----------------------------

    def _prepare(self) -> tuple[_OpenSegment, CommitState]:
        """Under the lock: the last segment, its commit state, and a clean tail."""
        segment = self._segment
        if segment is not None and self._fs.exists(_successor_path(self.directory, segment.log)):
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
        return segment, self._recover_tail(segment, commit)

    def _open(self, *, verify: bool) -> _OpenSegment | None:
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

    def _open_planned_last(self, last: LastSegment) -> _OpenSegment:
        if last.compressed:
            # A sealed segment compressed while a blank successor stood behind it: continue after it (W-29).
            self._segment = self._next_segment(last.log, last.header.log_id, last.commit)
            return self._segment
        path = self._path(segment_name(last.log))
        segment = _OpenSegment(last.log, path, self._fs.open_write(path), last.header)
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
            segment = _OpenSegment(plan.tail.log, path, fd, header)
            self._apply_tail(segment, plan.tail)
            self._publish(segment, plan.sealed)
            self._fs.fdatasync(fd)
        except BinlogError as exc:
            raise exc.located(path=path) from None
        finally:
            self._fs.close(fd)

    def _recover_tail(self, segment: _OpenSegment, commit: CommitState) -> CommitState:
        """Adopt the valid records beyond the commit point, remove the rest (spec 7).

        A crashed process leaves bytes right at the commit point, so one probe
        per commit finds it; holes (zeros, then data) only come from a power
        loss, after which every writer starts by checking the whole tail once.
        """
        size = self._fs.size(segment.fd)
        if size <= commit.commit_offset:
            segment.tail_checked = True
            return commit
        if segment.header.preallocated and segment.tail_checked:
            probe = self._fs.pread(segment.fd, RECORD_HEADER_SIZE, commit.commit_offset)
            if probe == ZERO_CHUNK[: len(probe)]:
                return commit
        plan = plan_tail(
            FdSource(self._fs, segment.fd), log=segment.log, path=segment.path, header=segment.header, commit=commit
        )
        segment.tail_checked = True
        self.recovery += plan.actions()
        return self._apply_tail(segment, plan)

    def _apply_tail(self, segment: _OpenSegment, plan: TailPlan) -> CommitState:
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
            # After a failed sync Linux may have marked these pages clean, so what
            # we read may never have reached the disk: write the header we rely on
            # and the records we adopt again, so that the sync below really puts
            # them there before a new slot goes over the old one (W-23).
            header = self._fs.pread(segment.fd, HEADER_SIZE, 0)
            self._fs.pwrite(segment.fd, header, 0)
            walked = self._fs.pread(segment.fd, scan.end - plan.commit.commit_offset, plan.commit.commit_offset)
            self._fs.pwrite(segment.fd, walked, plan.commit.commit_offset)
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

    def _create_segment(
        self, log: int, *, log_id: bytes, base_index: int, last_asqn: int, last_timestamp_us: int
    ) -> _OpenSegment:
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
        return _OpenSegment(log, final, fd, header)

    def _write_zeros(self, fd: int, size: int) -> None:
        offset = 0
        while offset < size:
            chunk = ZERO_CHUNK[: min(len(ZERO_CHUNK), size - offset)]
            self._fs.pwrite(fd, chunk, offset)
            offset += len(chunk)

    def _start_spare(self) -> None:
        """Under the lock: create the next volume's temp file and zero-fill it in the background."""
        if self._spare_thread is not None or self._spare is not None:
            return
        temp = self._path(f".{segment_name(0)}.{secrets.token_hex(8)}.tmp")
        fd = self._fs.open_write(temp, create=True, exclusive=True)
        self._fs.hold(fd)  # filled without the log's lock: other writers' clean-up must leave it (7.4)
        capacity = self.preallocate or 0

        def fill() -> None:
            try:
                self._write_zeros(fd, capacity)
                self._fs.fdatasync(fd)
            except OSError:
                self._fs.close(fd)
                return  # no spare: the next cutover fills its volume itself
            self._spare = (temp, fd)

        self._spare_thread = threading.Thread(target=fill, name="binlog-spare-volume", daemon=True)
        self._spare_thread.start()

    def _take_spare(self) -> tuple[str, int] | None:
        """The spare volume if it is ready and still ours (another writer's clean-up may have removed it)."""
        thread = self._spare_thread
        if thread is None or thread.is_alive():
            return None
        self._spare_thread = None
        spare, self._spare = self._spare, None
        if spare is None:
            return None
        temp, fd = spare
        if self._fs.names(temp, self._fs.identity(fd)):
            return spare
        self._fs.close(fd)
        return None

    def _discard_spare(self) -> None:
        if self._spare_thread is not None:
            self._spare_thread.join()
        spare = self._take_spare()
        if spare is not None:
            self._fs.close(spare[1])
            self._fs.unlink(spare[0])

    def _next_segment(self, log: int, log_id: bytes, commit: CommitState) -> _OpenSegment:
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

    def _create_successor(self, segment: _OpenSegment, commit: CommitState) -> _OpenSegment:
        successor = self._next_segment(segment.log, segment.header.log_id, commit)
        self._fs.close(segment.fd)
        self._segment = successor
        return successor

    def _cut_over(self, segment: _OpenSegment, commit: CommitState) -> _OpenSegment:
        # Step 0: every record of this segment is durable before the next claims its index.
        self._fs.fdatasync(segment.fd)
        successor = self._next_segment(segment.log, segment.header.log_id, commit)
        self._publish(segment, replace(commit, generation=commit.generation + 1, next_log_number=successor.log))
        self._fs.fdatasync(segment.fd)
        self._fs.close(segment.fd)
        self._segment = successor
        return successor
