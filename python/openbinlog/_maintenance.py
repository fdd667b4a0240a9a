"""Operations on whole logs: compression of sealed segments, retention, repair (spec sections 2.5, 2.6, 17)."""

from __future__ import annotations

import gzip
import hashlib
import os
import secrets
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import zstandard

from ._format import HEADER_SIZE, segment_name
from ._fs import sync_directory
from ._segment import LegacyHeaderInfo
from ._segment_file import SegmentFile, find_segment, list_segments
from ._split import read_split
from ._subscribers import fix_checkpoints, list_subscribers, segment_last_index
from ._verify import recover, verify
from ._writer import RecoveryAction, Writer
from .errors import BinlogIOError
from .walk import READ_CHUNK, Damage

CODECS = ("gz", "zst")


@dataclass(frozen=True, slots=True)
class Compressed:
    log: int
    path: str
    original_bytes: int
    compressed_bytes: int


def _compress_into(source: str, target: str, codec: str) -> None:
    with open(source, "rb") as raw, open(target, "r+b") as out:
        if codec == "gz":
            with gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as packed:
                shutil.copyfileobj(raw, packed, READ_CHUNK)
        else:
            with zstandard.ZstdCompressor(level=6).stream_writer(out, closefd=False) as packed:
                shutil.copyfileobj(raw, packed, READ_CHUNK)
        out.flush()
        os.fsync(out.fileno())


def _digest(read: Callable[[int], bytes]) -> str:
    sha = hashlib.sha256()
    while chunk := read(READ_CHUNK):
        sha.update(chunk)
    return sha.hexdigest()


def compress_segments(
    directory: str | os.PathLike[str],
    *,
    codec: str = "zst",
    dry_run: bool = False,
    progress: Callable[[int], None] | None = None,
) -> list[Compressed]:
    """Compress every sealed segment that is not compressed yet (never the last one).

    The compressed copy is written under a temporary name, synced, checked
    against the original, then linked into place; only then is the original
    removed. Readers always find either the plain or the whole compressed
    file, never a partial one.
    """
    if codec not in CODECS:
        raise ValueError(f"codec must be one of {CODECS}")
    path = os.fspath(directory)
    done: list[Compressed] = []
    logs = list_segments(path)
    if dry_run:
        return [
            Compressed(log, os.path.join(path, segment_name(log)) + f".{codec}", os.path.getsize(plain), 0)
            for log, plain in ((log, os.path.join(path, segment_name(log))) for log in logs[:-1])
            if os.path.exists(plain) and _sealed_v2(path, log)
        ]
    with Writer(path, verify_on_open=False) as writer:
        for log in logs[:-1]:
            plain = os.path.join(path, segment_name(log))
            if not os.path.exists(plain):
                continue
            if not _sealed_v2(path, log):
                continue
            _check_records(path, log)  # archive only what checks out
            target = f"{plain}.{codec}"
            temp = os.path.join(path, f".{segment_name(log)}.{secrets.token_hex(8)}.tmp")
            with writer.exclusive():
                os.close(os.open(temp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            try:
                original_bytes = os.path.getsize(plain)
                _compress_into(plain, temp, codec)
                with open(plain, "rb") as original:
                    expected = _digest(original.read)
                if _digest_unpacked(temp, codec) != expected:
                    raise BinlogIOError("the compressed copy does not match the original", path=temp, log=log)
                with writer.exclusive():
                    if not os.path.exists(target):
                        os.link(temp, target)
                    os.unlink(temp)
                    sync_directory(path)
                    os.unlink(plain)
                    sync_directory(path)
            except OSError as exc:
                raise BinlogIOError(f"compression of segment {log} failed: {exc}", path=plain, log=log) from exc
            finally:
                if os.path.exists(temp):
                    os.unlink(temp)
            done.append(Compressed(log, target, original_bytes, os.path.getsize(target)))
            if progress is not None:
                progress(1)
    return done


def _check_records(path: str, log: int) -> None:
    for _ in read_split(path, log, HEADER_SIZE, 2**63):
        pass


def _sealed_v2(path: str, log: int) -> bool:
    with SegmentFile(path, log) as segment:
        header = segment.header()
        return not isinstance(header, LegacyHeaderInfo) and segment.commit(header).closed


def _digest_unpacked(path: str, codec: str) -> str:
    with open(path, "rb") as raw:
        if codec == "gz":
            with gzip.GzipFile(fileobj=raw) as unpacked:
                return _digest(unpacked.read)
        with zstandard.ZstdDecompressor().stream_reader(raw) as unpacked:
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
    first and stops at the first segment that must stay.
    """
    path = os.fspath(directory)
    now = time.time_ns() // 1000 if now_us is None else now_us
    subscribers = list_subscribers(path)
    logs = list_segments(path)
    sizes = {log: os.path.getsize(find_segment(path, log) or "") for log in logs}
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
    doomed = [d.log for d in decisions if d.remove]
    if doomed and not dry_run:
        with Writer(path, verify_on_open=False) as writer:
            writer.drop_segments(before_log=doomed[-1] + 1)
    return decisions


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
        report = RepairReport(recover(path, dry_run=True), fix_checkpoints(path, dry_run=True))
    else:
        backups = os.fspath(backup_dir) if backup_dir is not None else _default_backup_dir(path)
        with Writer(path, backup_dir=backups, verify_on_open=False) as writer:
            actions = list(writer.recovery)
        kept = backups if any(a.bytes or a.action.startswith("remove") for a in actions) else None
        report = RepairReport(actions, fix_checkpoints(path), kept)
    report.damage = verify(path).damage
    return report


def _default_backup_dir(path: str) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return os.path.join(path, ".repair", stamp)
