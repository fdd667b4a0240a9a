"""Operations on whole logs: compression of sealed segments, retention, repair (spec sections 2.5, 2.6, 17)."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import os
import secrets
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ._format import HEADER_SIZE, segment_name
from ._fs import OsFileSystem, sync_directory
from ._recovery import RecoveryAction
from ._segment import LegacyHeaderInfo
from ._segment_file import LocalDirectory, SegmentFile, list_segments, require_log_directory
from ._split import read_split
from ._subscribers import fix_checkpoints, list_subscribers, segment_last_index
from ._verify import recover, verify
from ._writer import Writer
from .compressed import _zstandard, unpacking
from .errors import BinlogIOError, NotALogError
from .walk import READ_CHUNK, Damage

CODECS = ("gz", "zst")


@dataclass(frozen=True, slots=True)
class Compressed:
    log: int
    path: str
    original_bytes: int
    compressed_bytes: int


def _compress_into(source: int, target: int, codec: str) -> None:
    with os.fdopen(os.dup(source), "rb") as raw, os.fdopen(os.dup(target), "r+b") as out:
        raw.seek(0)
        if codec == "gz":
            with gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as packed:
                shutil.copyfileobj(raw, packed, READ_CHUNK)
        else:
            with _zstandard().ZstdCompressor(level=6).stream_writer(out, closefd=False) as packed:
                shutil.copyfileobj(raw, packed, READ_CHUNK)
        out.flush()
        os.fsync(out.fileno())


def _digest(read: Callable[[int], bytes]) -> str:
    sha = hashlib.sha256()
    while chunk := read(READ_CHUNK):
        sha.update(chunk)
    return sha.hexdigest()


def _digest_fd(fd: int) -> str:
    with os.fdopen(os.dup(fd), "rb") as raw:  # a duplicate shares the offset: start from 0
        raw.seek(0)
        return _digest(raw.read)


def compress_segments(
    directory: str | os.PathLike[str],
    *,
    codec: str = "zst",
    dry_run: bool = False,
    progress: Callable[[int], None] | None = None,
) -> list[Compressed]:
    """Compress every sealed segment that is not compressed yet (never the last one), by spec 2.6.

    The compressed copy is written under a temporary name that this process
    holds (so no writer's clean-up takes it), synced, checked against the
    original, then linked into place under the lock, and only if the
    original is still there: a segment retention removed meanwhile is never
    brought back. Readers find either the plain or the whole compressed file.
    """
    if codec not in CODECS:
        raise ValueError(f"codec must be one of {CODECS}")
    path = os.fspath(directory)
    require_log_directory(path)
    if dry_run:
        planned: list[Compressed] = []
        for log in _without_blank_top(path, list_segments(path))[:-1]:
            plain = os.path.join(path, segment_name(log))
            try:
                size = os.stat(plain).st_size
                if _sealed_v2(path, log):
                    planned.append(Compressed(log, f"{plain}.{codec}", size, 0))
            except FileNotFoundError:
                continue  # compressed or removed since the listing
            except NotALogError:
                if os.path.exists(plain):
                    raise
        return planned
    done: list[Compressed] = []
    with Writer(path, verify_on_open=False) as writer:
        with writer.exclusive():  # listed after the writer's clean-up: no blank last segment is left to count (2.6)
            logs = list_segments(path)
        for log in logs[:-1]:
            result = _compress_one(writer, path, log, codec)
            if result is not None:
                done.append(result)
                if progress is not None:
                    progress(1)
    return done


def _without_blank_top(path: str, logs: list[int]) -> list[int]:
    """``logs`` without the blank segments at the top: a blank last segment does not count (spec 1.4, 2.6)."""
    logs = list(logs)
    while logs:
        plain = os.path.join(path, segment_name(logs[-1]))
        try:
            with open(plain, "rb") as handle:
                head = handle.read(HEADER_SIZE + 1)
        except FileNotFoundError:
            break  # only a compressed copy: sealed, never blank
        if len(head) > HEADER_SIZE or any(head):
            break
        logs.pop()
    return logs


def _compress_one(writer: Writer, path: str, log: int, codec: str) -> Compressed | None:
    plain = os.path.join(path, segment_name(log))
    target = f"{plain}.{codec}"
    try:
        source = os.open(plain, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None  # already compressed, or removed by retention
    except OSError as exc:
        raise BinlogIOError(f"cannot open segment {log}: {exc.strerror}", path=plain, log=log) from exc
    temp = os.path.join(path, f".{segment_name(log)}.{codec}.{secrets.token_hex(8)}.tmp")
    fs = OsFileSystem()
    out, out_named = -1, False
    try:
        if not _sealed_v2(path, log):
            return None
        _check_records(path, log)  # archive only what checks out
        with writer.exclusive():  # spec 2.6 step 1: created, and held, under the lock
            out = os.open(temp, os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_CLOEXEC, 0o644)
            out_named = True
            fs.hold(out)
        original_bytes = os.fstat(source).st_size
        _compress_into(source, out, codec)
        if _digest_unpacked(temp, codec) != _digest_fd(source):
            raise BinlogIOError("the compressed copy does not match the original", path=temp, log=log)
        with writer.exclusive():
            # Step 3, only while the original is still the segment: retention may have removed it.
            if not fs.names(plain, fs.identity(source)):
                return None
            # Sized here, from the held copy: once the lock is let go, retention may remove the target.
            packed_bytes = os.fstat(out).st_size
            if not os.path.exists(target):
                os.link(temp, target)
            os.unlink(temp)
            out_named = False
            sync_directory(path)
            os.unlink(plain)
            sync_directory(path)
    except NotALogError:
        if os.path.exists(plain):
            raise
        return None  # removed by retention while it was being checked
    except OSError as exc:
        raise BinlogIOError(f"compression of segment {log} failed: {exc}", path=plain, log=log) from exc
    finally:
        try:
            if out_named:  # spec 2.6 step 3: the temporary name goes under the lock, while its file is still held
                with writer.exclusive(), contextlib.suppress(FileNotFoundError):
                    os.unlink(temp)
        finally:
            os.close(source)
            if out >= 0:
                os.close(out)
    return Compressed(log, target, original_bytes, packed_bytes)


def _check_records(path: str, log: int) -> None:
    for _ in read_split(path, log, HEADER_SIZE, 2**63):
        pass


def _sealed_v2(path: str, log: int) -> bool:
    with SegmentFile(path, log) as segment:
        header = segment.header()
        return not isinstance(header, LegacyHeaderInfo) and segment.commit(header).closed


def _digest_unpacked(path: str, codec: str) -> str:
    with open(path, "rb") as raw, unpacking(raw, codec) as unpacked:
        return _digest(unpacked.read)


@dataclass(frozen=True, slots=True)
class RetentionDecision:
    log: int
    remove: bool
    reason: str
    size: int


def retain(
    directory: str | os.PathLike[str],
    *,
    max_age_seconds: float | None = None,
    max_bytes: int | None = None,
    dry_run: bool = False,
    now_us: int | None = None,
) -> list[RetentionDecision]:
    """Remove the oldest sealed segments that no durable subscriber still needs.

    A segment goes when every durable subscriber has consumed its last record
    and, if a policy is given, it is older than ``max_age_seconds`` or the
    log is larger than ``max_bytes``; without a policy, subscribers alone
    decide (and with no subscriber nothing is removed). Removal is lowest
    first and stops at the first segment that must stay. The decisions are
    made under the lock, so that compression cannot swap a file under them.
    """
    path = os.fspath(directory)
    require_log_directory(path)
    now = time.time_ns() // 1000 if now_us is None else now_us
    if dry_run:
        return _decisions_unlocked(path, max_age_seconds=max_age_seconds, max_bytes=max_bytes, now=now)
    with Writer(path, verify_on_open=False) as writer:
        with writer.exclusive():
            decisions = _retention_decisions(path, max_age_seconds=max_age_seconds, max_bytes=max_bytes, now=now)
        doomed = [d.log for d in decisions if d.remove]
        if doomed:
            writer.drop_segments(before_log=doomed[-1] + 1)
    return decisions


def _decisions_unlocked(
    path: str, *, max_age_seconds: float | None, max_bytes: int | None, now: int
) -> list[RetentionDecision]:
    """The decisions of a dry run, made holding no lock: a retention running meanwhile removes segments
    listed here, and the decisions are made again from a fresh listing. A segment that fails twice, or
    that still has a name, is an error: no listing goes on naming a removed segment."""
    removed: set[int] = set()
    while True:
        try:
            return _retention_decisions(path, max_age_seconds=max_age_seconds, max_bytes=max_bytes, now=now)
        except NotALogError as exc:
            if exc.log is None or exc.log in removed:
                raise
            still = LocalDirectory(path).open(exc.log)
            if still is not None:
                still.close()
                raise
            removed.add(exc.log)


def _retention_decisions(
    path: str, *, max_age_seconds: float | None, max_bytes: int | None, now: int
) -> list[RetentionDecision]:
    subscribers = list_subscribers(path)
    logs = list_segments(path)
    sizes = {log: _stored_size(path, log) for log in logs}
    total = sum(sizes.values())
    decisions: list[RetentionDecision] = []
    for log in logs[:-1]:
        last_index = segment_last_index(path, log)
        if last_index is None:
            decisions.append(RetentionDecision(log, False, "not sealed", sizes[log]))
            break
        needed_by = [s.name for s in subscribers if s.checkpoint is None or s.checkpoint.index < last_index]
        if needed_by:
            decisions.append(RetentionDecision(log, False, f"needed by {', '.join(needed_by)}", sizes[log]))
            break
        reason = _policy_reason(
            path,
            log,
            max_age_seconds=max_age_seconds,
            max_bytes=max_bytes,
            total=total,
            now=now,
            subscribed=bool(subscribers),
        )
        if reason is None:
            decisions.append(RetentionDecision(log, False, "kept by the policy", sizes[log]))
            break
        decisions.append(RetentionDecision(log, True, reason, sizes[log]))
        total -= sizes[log]
    return decisions


def _stored_size(path: str, log: int) -> int:
    # Through SegmentFile: a plain file that compression replaces meanwhile is found under its new name.
    with SegmentFile(path, log) as segment:
        return segment.stored_size()


def _policy_reason(
    path: str,
    log: int,
    *,
    max_age_seconds: float | None,
    max_bytes: int | None,
    total: int,
    now: int,
    subscribed: bool,
) -> str | None:
    if max_age_seconds is None and max_bytes is None:
        return "consumed by every subscriber" if subscribed else None
    if max_bytes is not None and total > max_bytes:
        return f"log is {total} bytes, above {max_bytes}"
    if max_age_seconds is not None:
        with SegmentFile(path, log) as segment:
            header = segment.header()
            assert not isinstance(header, LegacyHeaderInfo)
            newest = segment.commit(header).last_timestamp_us
        if newest < now - int(max_age_seconds * 1_000_000):
            return f"newest record older than {max_age_seconds:g} s"
    return None


@dataclass
class RepairReport:
    actions: list[RecoveryAction] = field(default_factory=list)
    checkpoints: list[str] = field(default_factory=list)
    backup_dir: str | None = None
    damage: list[Damage] = field(default_factory=list)  # found in committed data; left for the operator


def repair(
    directory: str | os.PathLike[str], *, dry_run: bool = False, backup_dir: str | os.PathLike[str] | None = None
) -> RepairReport:
    """Recovery plus checkpoint fixes, keeping a copy of every byte removed.

    Committed data is never touched: damage at or below a commit point makes
    repair fail with the damage's error rather than cut it away.
    """
    path = os.fspath(directory)
    if dry_run:
        report = RepairReport(recover(path, dry_run=True, check_committed=False), fix_checkpoints(path, dry_run=True))
    else:
        backups = os.fspath(backup_dir) if backup_dir is not None else _default_backup_dir(path)
        actions = recover(path, backup_dir=backups, check_committed=False)
        kept = backups if any(a.bytes or a.action.startswith("remove") for a in actions) else None
        report = RepairReport(actions, fix_checkpoints(path), kept)
    report.damage = verify(path).damage
    return report


def _default_backup_dir(path: str) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return os.path.join(path, ".repair", stamp)
