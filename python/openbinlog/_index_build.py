"""Building the sparse indexes of finished segments (spec 18.3, 18.4): walk, pick entries, write aside, rename.

The walk is the reader's (``openbinlog.walk``): a segment is indexed only
when its walk from the first record to S meets no damage. The file is
written under a temporary name this process holds (so no writer's clean-up
takes it), synced, and renamed into place holding the log's lock, and only
while the segment is still there (retention removes an index before its
segment). Nothing here runs in a writer's commit path (W-45).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ._crc import crc32c, mask
from ._format import INDEX_ENTRY_SIZE, INDEX_HEADER_SIZE, LOCK_NAME, VERSION_2, VERSION_LEGACY, index_name
from ._fs import OsFileSystem, sync_directory
from ._segment import LegacyHeaderInfo
from ._segment_file import LocalDirectory, find_segment, io_error, open_regular, require_log_directory
from ._sparse_index import (
    DEFAULT_INTERVAL,
    MAX_INTERVAL,
    EntryRule,
    IndexEntryInfo,
    IndexInfo,
    encode_index,
    parse_index_header,
)
from .errors import BinlogError, BinlogIOError
from .walk import (
    READ_CHUNK,
    Damage,
    Header,
    LegacyWalk,
    SegmentSource,
    SegmentWalk,
    end_in,
    is_last,
    legacy_end,
    open_index,
    open_segment,
)

BUILT, UNCHANGED, SKIPPED = "built", "unchanged", "skipped"
INDEX_NAME = re.compile(r"[0-9]{8}\.idx")  # fullmatch: ASCII digits, nothing after (spec 2.1)


@dataclass(frozen=True, slots=True)
class IndexBuild:
    """What ``build_index`` did for one segment: ``built``, ``unchanged`` (the file already held exactly
    these bytes) or ``skipped`` (``reason`` says why; ``damage`` when the walk met damage)."""

    log: int
    status: str
    path: str
    entries: int = 0
    reason: str = ""
    damage: Damage | None = None


def build_indexes(
    directory: str | os.PathLike[str], *, interval: int = DEFAULT_INTERVAL, rebuild: bool = False
) -> list[IndexBuild]:
    """Build the index of every finished segment of the log in ``directory`` (version 1 segments included)."""
    path = os.fspath(directory)
    require_log_directory(path)
    logs = LocalDirectory(path).segments()
    return [build_index(path, log, interval=interval, rebuild=rebuild) for log in logs]


def build_index(
    directory: str | os.PathLike[str], log: int, *, interval: int = DEFAULT_INTERVAL, rebuild: bool = False
) -> IndexBuild:
    """Build the index of segment ``log`` by spec 18.4, when the segment is finished and intact.

    A version 2 segment whose index passes the index check (spec 18.5) with
    this interval is left as it is, having read headers only, unless
    ``rebuild``: then the segment is walked and the file rewritten if its
    bytes differ (``check_indexes`` compares without writing).
    """
    return index_segment(os.fspath(directory), log, interval=interval, rebuild=rebuild)


# What excludes every writer of the log while an index file is created and renamed: the log's lock, or, for a
# writer that holds it from open to close (protocols 6.7), that writer's own turn.
Exclusion = Callable[[], contextlib.AbstractContextManager[object]]


def index_segment(
    path: str,
    log: int,
    *,
    interval: int,
    rebuild: bool = False,
    exclusion: Exclusion | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> IndexBuild:
    """``build_index``, for a writer's builder too: under ``exclusion`` rather than the log's lock, and
    given up (``skipped``, nothing written) once ``cancelled()`` says so between two batches of the walk."""
    target = os.path.join(path, index_name(log))
    if not rebuild and (entries := _current_entries(path, log, interval)) is not None:
        return IndexBuild(log, UNCHANGED, target, entries=entries)
    data = _index_bytes(path, log, interval, cancelled)
    if isinstance(data, IndexBuild):
        return data
    entries = (len(data) - INDEX_HEADER_SIZE) // INDEX_ENTRY_SIZE
    if _holds(target, data):
        return IndexBuild(log, UNCHANGED, target, entries=entries)
    try:
        written = _write_aside(path, log, data, exclusion or (lambda: _log_lock(path, cancelled)))
    except _Cancelled:
        return IndexBuild(log, SKIPPED, target, reason="cancelled")
    if not written:
        return IndexBuild(log, SKIPPED, target, reason="removed while it was indexed")
    return IndexBuild(log, BUILT, target, entries=entries)


def _current_entries(path: str, log: int, interval: int) -> int | None:
    """The entry count of segment ``log``'s index when it passes the index check with ``interval``; else None."""
    logs = LocalDirectory(path)
    present = logs.segments()
    try:
        opened = open_segment(logs, log, present) if log in present else None
        if opened is None:
            return None
        segment, header = opened
        with contextlib.closing(segment):
            if isinstance(header, LegacyHeaderInfo):
                return None  # version 1 indexes are not read by this revision's readers (spec 18.6): build again
            view = open_index(logs, segment, header, end_in(logs, segment, header, present))
    except BinlogIOError:
        raise
    except BinlogError:
        return None  # the walk of _index_bytes meets it and reports it
    if view is None:
        return None
    view.source.close()
    return view.info.entry_count if view.info.interval == interval else None


@dataclass(frozen=True, slots=True)
class IndexNote:
    """What ``verify`` says of an index file: ``usable``, or not used and why. Never damage (R-47)."""

    log: int
    path: str
    usable: bool
    reason: str = ""


def check_indexes(directory: str | os.PathLike[str]) -> list[IndexNote]:
    """Each index file of the log, checked by building it again from its segment with its own interval:
    the entry rule is fixed (spec 18.3), so a usable index holds exactly those bytes."""
    path = os.fspath(directory)
    try:
        names = sorted(name for name in os.listdir(path) if INDEX_NAME.fullmatch(name))
    except OSError as exc:
        raise io_error(exc, path, "cannot list the log directory") from exc
    return [_check_index(path, int(name[:8])) for name in names]


def _check_index(path: str, log: int) -> IndexNote:
    target = os.path.join(path, index_name(log))
    try:
        info = parse_index_header(_stored(target, INDEX_HEADER_SIZE))
    except OSError as exc:
        return IndexNote(log, target, False, f"cannot be read: {exc.strerror}")
    if info is None:
        return IndexNote(log, target, False, "not an index this revision reads (signature, version or header CRC)")
    if not 1 <= info.interval <= MAX_INTERVAL:
        return IndexNote(log, target, False, f"interval {info.interval} out of range")
    expected = _index_bytes(path, log, info.interval)
    if isinstance(expected, IndexBuild):
        return IndexNote(log, target, False, f"its segment cannot be indexed: {expected.reason}")
    if not _holds(target, expected):
        built = parse_index_header(expected)
        if built != info:
            return IndexNote(log, target, False, "stale: it describes another state of the segment")
        return IndexNote(log, target, False, "its entries are not those the segment gives, or its size is not theirs")
    if info.segment_version != VERSION_2:
        # Spec 18.6: built and checked, but no reader of this revision starts at a version 1 entry.
        return IndexNote(log, target, False, "a version 1 index: intact, but not used by this revision's readers")
    return IndexNote(log, target, True)


class _Cancelled(Exception):
    """The builder's owner closed while the walk ran."""


def _index_bytes(path: str, log: int, interval: int, cancelled: Callable[[], bool] | None = None) -> bytes | IndexBuild:
    """The index file segment ``log`` gives with ``interval`` (spec 18.3, 18.4 steps 1 and 2), or why it has none."""
    target = os.path.join(path, index_name(log))
    rule = EntryRule(interval)  # refuses a bad interval before anything is read
    logs = LocalDirectory(path)
    present = logs.segments()
    if log not in present:
        return IndexBuild(log, SKIPPED, target, reason="no such segment")
    if is_last(log, present):
        return IndexBuild(log, SKIPPED, target, reason="the last segment is not finished")
    try:
        opened = open_segment(logs, log, present)
        if opened is None:
            return IndexBuild(log, SKIPPED, target, reason="no such segment")
        segment, header = opened
        with contextlib.closing(segment):
            info = _walk_entries(logs, segment, header, rule, present, cancelled=cancelled)
            if info is None:
                return IndexBuild(log, SKIPPED, target, reason="not finished")
            entries = _with_span_crcs(segment, rule.entries, info.segment_end, cancelled)
    except _Cancelled:
        return IndexBuild(log, SKIPPED, target, reason="cancelled")
    except BinlogIOError:
        raise
    except BinlogError as exc:
        damage = Damage.from_error(exc, bytes_skipped=0, next_index=None)
        return IndexBuild(log, SKIPPED, target, reason=f"damaged: {exc.error_class}", damage=damage)
    return encode_index(info, entries)


def _walk_entries(
    logs: LocalDirectory,
    segment: SegmentSource,
    header: Header,
    rule: EntryRule,
    present: list[int],
    *,
    cancelled: Callable[[], bool] | None,
) -> IndexInfo | None:
    """Walk the finished segment from its first record to S, offering each data record to ``rule``;
    the index header; None when the segment is not finished. Damage raises."""
    walk: SegmentWalk | LegacyWalk
    if isinstance(header, LegacyHeaderInfo):
        _, end = legacy_end(segment, header.log)
        if not end.final:
            return None
        walk = LegacyWalk(segment, path=segment.path, log=header.log, end=end)
        version, log_id, base_index = VERSION_LEGACY, bytes(16), 1
    else:
        end = end_in(logs, segment, header, present)
        if not end.final:
            return None
        walk = SegmentWalk(segment, path=segment.path, header=header, end=end)
        version, log_id, base_index = VERSION_2, header.log_id, header.base_index
    next_index = base_index
    while batch := walk.next_batch():
        if cancelled is not None and cancelled():
            raise _Cancelled
        for record in batch:
            rule.offer(record.index, record.offset, record.timestamp_us or 0)
        next_index = batch[-1].index + 1
    if walk.offset != end.offset:  # pragma: no cover - a committed-mode walk ends at S or raises
        raise BinlogIOError("the walk ended before the segment end", path=segment.path, log=segment.log)
    return IndexInfo(version, segment.log, log_id, base_index, end.offset, next_index, len(rule.entries), rule.interval)


def _with_span_crcs(
    segment: SegmentSource, entries: list[IndexEntryInfo], end: int, cancelled: Callable[[], bool] | None = None
) -> list[IndexEntryInfo]:
    """The entries with the CRC of the bytes each one's span holds (spec 18.2), read once in large chunks."""
    done: list[IndexEntryInfo] = []
    for k, entry in enumerate(entries):
        stop = entries[k + 1].offset if k + 1 < len(entries) else end
        crc, at = 0, entry.offset
        while at < stop:
            if cancelled is not None and cancelled():
                raise _Cancelled
            chunk = segment.read_at(at, min(READ_CHUNK, stop - at))
            if not chunk:
                raise BinlogIOError("the segment ended before its end", path=segment.path, log=segment.log, offset=at)
            crc, at = crc32c(chunk, crc), at + len(chunk)
        done.append(IndexEntryInfo(entry.index, entry.offset, entry.timestamp_us, mask(crc)))
    return done


def _holds(path: str, data: bytes) -> bool:
    """The file at ``path`` holds exactly ``data`` (a file that cannot be read does not)."""
    try:
        return _stored(path, len(data) + 1) == data
    except OSError:
        return False


def _stored(path: str, most: int) -> bytes:
    """Up to ``most`` bytes of the regular file at ``path``: never sized by the file (a link to /dev/zero, a huge
    sparse file), never blocked by it (a FIFO is refused, as readers refuse it)."""
    fd = open_regular(path)
    try:
        chunks: list[bytes] = []
        while most > 0 and (chunk := os.read(fd, min(most, READ_CHUNK))):
            chunks.append(chunk)
            most -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


# How often a builder that may be cancelled tries the lock again while another holds it.
LOCK_RETRY_SECONDS = 0.01


@contextlib.contextmanager
def _log_lock(path: str, cancelled: Callable[[], bool] | None = None) -> Iterator[None]:
    """The log's lock (spec 9) while an index is renamed into place; a directory without ``LOCK`` (a
    version 1 log, which no writer of this format appends to) has no writer to exclude. With ``cancelled``,
    the wait for it ends (``_Cancelled``) once that says so: a writer closing never waits on its builder
    for a lock another process holds."""
    fs = OsFileSystem()
    try:
        fd = os.open(
            os.path.join(path, LOCK_NAME), os.O_RDWR | os.O_CLOEXEC
        )  # a write lock needs a writable descriptor
    except FileNotFoundError:
        yield
        return
    try:
        if cancelled is None:
            fs.lock(fd)
        else:
            while not fs.try_lock(fd):
                if cancelled():
                    raise _Cancelled
                time.sleep(LOCK_RETRY_SECONDS)
        try:
            yield
        finally:
            # Released, not only closed: a child forked meanwhile shares the descriptor's lock until it exits.
            fs.unlock(fd)
    finally:
        os.close(fd)


def _write_aside(path: str, log: int, data: bytes, exclusion: Exclusion) -> bool:
    """Spec 18.4 steps 3 to 6; False when the segment was removed meanwhile (the index is then not written)."""
    fs = OsFileSystem()
    temp = os.path.join(path, f".{index_name(log)}.{secrets.token_hex(8)}.tmp")
    fd, named = -1, False
    try:
        with exclusion():  # created and held under the lock: no writer's clean-up (spec 7.4) sees it unheld
            fd = os.open(temp, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, 0o644)
            named = True
            fs.hold(fd)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
        with exclusion():
            if find_segment(path, log) is None:
                return False
            os.rename(temp, os.path.join(path, index_name(log)))
            named = False
        sync_directory(path)  # step 6 holding no lock: the writers' commits do not wait for it (W-45)
        return True
    except OSError as exc:
        raise io_error(exc, temp, f"cannot write the index of segment {log}").located(log=log) from exc
    finally:
        if fd >= 0:
            os.close(fd)
        if named:
            with contextlib.suppress(OSError):
                os.unlink(temp)
