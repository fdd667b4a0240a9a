"""Named durable subscribers: checkpoints kept in the log directory (spec section 17).

A subscriber's checkpoint is the ref of the last record it has consumed;
reading resumes just after it. Checkpoints live in ``subscribers/NAME.json``
and are replaced atomically (temp file, sync, rename, directory sync), so a
crash leaves either the old or the new checkpoint, never a torn one.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from dataclasses import dataclass
from types import TracebackType

from ._fs import sync_directory
from ._reader import Reader, last_entry
from ._records import Entry
from ._ref import Ref
from ._segment import LegacyHeaderInfo
from ._segment_file import LocalDirectory, SegmentFile, list_segments, require_log_directory
from .errors import BinlogError, BinlogIOError, InvalidRefError
from .walk import end_in

SUBSCRIBERS_DIR = "subscribers"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class SubscriberError(BinlogError):
    error_class = "subscriber"


@dataclass(frozen=True, slots=True)
class SubscriberInfo:
    name: str
    checkpoint: Ref | None  # None: nothing consumed yet, reading starts at the first record


def _folder(directory: str) -> str:
    return os.path.join(directory, SUBSCRIBERS_DIR)


def _path(directory: str, name: str) -> str:
    if not NAME.match(name):
        raise SubscriberError(f"invalid subscriber name {name!r} (letters, digits, '_', '.', '-'; at most 64)")
    return os.path.join(_folder(directory), f"{name}.json")


def _write(directory: str, info: SubscriberInfo) -> None:
    folder = _folder(directory)
    try:
        if not os.path.isdir(folder):
            os.makedirs(folder, exist_ok=True)
            sync_directory(directory)
        temp = os.path.join(folder, f".{info.name}.{secrets.token_hex(8)}.tmp")
        body = {"name": info.name, "checkpoint": None if info.checkpoint is None else str(info.checkpoint)}
        with open(temp, "w") as out:
            json.dump(body, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, _path(directory, info.name))
        sync_directory(folder)
    except OSError as exc:
        raise BinlogIOError(f"cannot write subscriber {info.name!r}: {exc.strerror}", path=folder) from exc


def _read(path: str) -> SubscriberInfo:
    try:
        with open(path) as source:
            body = json.load(source)
        checkpoint = body["checkpoint"]
        return SubscriberInfo(str(body["name"]), None if checkpoint is None else Ref.parse(checkpoint))
    except FileNotFoundError as exc:
        raise SubscriberError(f"no subscriber {os.path.basename(path)[:-5]!r}", path=path) from exc
    except BinlogError as exc:  # a checkpoint that is not a ref
        raise exc.located(path=path) from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SubscriberError(f"unreadable subscriber file: {exc}", path=path) from exc


def _require_log(directory: str) -> str:
    path = os.fspath(directory)
    require_log_directory(path)
    return path


def list_subscribers(directory: str | os.PathLike[str]) -> list[SubscriberInfo]:
    path = _require_log(os.fspath(directory))
    folder = _folder(path)
    if not os.path.isdir(folder):
        return []
    return [
        _read(os.path.join(folder, name))
        for name in sorted(os.listdir(folder))
        if name.endswith(".json") and NAME.match(name[:-5])
    ]


def get_subscriber(directory: str | os.PathLike[str], name: str) -> SubscriberInfo:
    return _read(_path(_require_log(os.fspath(directory)), name))


def last_ref(directory: str) -> Ref | None:
    """The ref of the last committed record of the log, None when it is empty."""
    entry = last_entry(directory)
    return None if entry is None else entry.ref


def add_subscriber(directory: str | os.PathLike[str], name: str, *, at_end: bool = False) -> SubscriberInfo:
    """A new durable subscriber, starting at the first record or (``at_end``) after the last one."""
    path = _require_log(os.fspath(directory))
    if os.path.exists(_path(path, name)):
        raise SubscriberError(f"subscriber {name!r} exists already", path=_path(path, name))
    info = SubscriberInfo(name, last_ref(path) if at_end else None)
    _write(path, info)
    return info


def remove_subscriber(directory: str | os.PathLike[str], name: str) -> None:
    target = _path(_require_log(os.fspath(directory)), name)
    try:
        os.unlink(target)
        sync_directory(os.path.dirname(target))
    except FileNotFoundError as exc:
        raise SubscriberError(f"no subscriber {name!r}", path=target) from exc


def commit_checkpoint(directory: str | os.PathLike[str], name: str, ref: Ref) -> None:
    path = _require_log(os.fspath(directory))
    _read(_path(path, name))  # it must exist
    _write(path, SubscriberInfo(name, ref))


def reset_subscriber(directory: str | os.PathLike[str], name: str, *, to: Ref | None) -> SubscriberInfo:
    """Move a subscriber's checkpoint, forwards or back; return it as now stored.

    ``to`` is the ref of the last record to count as consumed (reading resumes
    just after it) and must name a committed record of the log
    (``InvalidRefError`` otherwise); ``None`` means nothing consumed, so
    reading starts at the first record. The subscriber must exist. A consumer
    reading under this name keeps its own position and overwrites the
    checkpoint at its next commit: stop it first.
    """
    path = _require_log(os.fspath(directory))
    _read(_path(path, name))  # it must exist
    if to is not None:
        with Reader(path, after=to):  # checked against the record it names, as a resume would be
            pass
    info = SubscriberInfo(name, to)
    _write(path, info)
    return info


def lag(directory: str | os.PathLike[str], info: SubscriberInfo, last: Ref | None) -> int:
    """Records committed after the subscriber's checkpoint."""
    if last is None:
        return 0
    if info.checkpoint is None:
        first = _first_index(os.fspath(directory))
        return 0 if first is None else last.index - first + 1
    return max(last.index - info.checkpoint.index, 0)


def _first_index(directory: str) -> int | None:
    with Reader(directory) as reader:
        entry = next(reader, None)
        return None if entry is None else entry.index


def segment_last_index(directory: str, log: int) -> int | None:
    """The index of the last record of a finished or sealed version 2 segment."""
    with SegmentFile(directory, log) as segment:
        header = segment.header()
        if isinstance(header, LegacyHeaderInfo):
            return None
        end = end_in(LocalDirectory(directory), segment, header, list_segments(directory))
        return end.index - 1 if end.final else None


def resume(directory: str, checkpoint: Ref | None, *, one_segment: bool = False) -> Reader:
    """A reader just after ``checkpoint``; or from the first record when retention removed exactly what it consumed.

    Retention may remove the segment holding the checkpoint's record
    (spec 17): the next record is then the first one that remains, and the
    checkpoint is as good as ever. Any other checkpoint that names no
    record is ``InvalidRefError``.
    """
    try:
        return Reader(directory, after=checkpoint, one_segment=one_segment)
    except InvalidRefError:
        logs = list_segments(directory)
        if checkpoint is None or not logs or checkpoint.log >= logs[0]:
            raise
        if _first_index(directory) != checkpoint.index + 1:
            raise
        return Reader(directory, one_segment=one_segment)


def fix_checkpoints(directory: str | os.PathLike[str], *, dry_run: bool = False) -> list[str]:
    """Point checkpoints into removed segments at the start of what remains (as jlogctl repair does)."""
    path = _require_log(os.fspath(directory))
    logs = list_segments(path)
    notes: list[str] = []
    for info in list_subscribers(path):
        if info.checkpoint is None:
            continue
        try:
            with resume(path, info.checkpoint):
                continue
        except InvalidRefError:
            pass
        if logs and info.checkpoint.log < logs[0]:
            notes.append(
                f"subscriber {info.name}: checkpoint {info.checkpoint} is in a removed segment; reset to the start"
            )
        else:
            notes.append(f"subscriber {info.name}: checkpoint {info.checkpoint} names no record; reset to the start")
        if not dry_run:
            _write(path, SubscriberInfo(info.name, None))
    return notes


class Subscriber:
    """Read as a named durable subscriber: resume after its checkpoint, commit as you go."""

    def __init__(self, directory: str | os.PathLike[str], name: str, *, one_segment: bool = False) -> None:
        self.directory = _require_log(os.fspath(directory))
        self.name = name
        self.info = get_subscriber(self.directory, name)
        self.reader = resume(self.directory, self.info.checkpoint, one_segment=one_segment)

    def __iter__(self) -> Subscriber:
        return self

    def __next__(self) -> Entry:
        return next(self.reader)

    def has_next(self, timeout: float = 0.0) -> bool:
        return self.reader.has_next(timeout)

    def commit(self, entry: Entry | Ref) -> None:
        """Record that everything up to and including ``entry`` has been consumed."""
        ref = entry.ref if isinstance(entry, Entry) else entry
        _write(self.directory, SubscriberInfo(self.name, ref))
        self.info = SubscriberInfo(self.name, ref)

    def close(self) -> None:
        self.reader.close()

    def __enter__(self) -> Subscriber:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
