"""Read-only access to the segments of a log directory, and the tail scan.

Readers open segments with ``O_RDONLY`` and never lock, write or truncate;
the writer reaches the same parsing through its own file operations.
"""

from __future__ import annotations

import errno
import gzip
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

import zstandard

from ._format import COMPRESSED_SUFFIXES, HEADER_SIZE, SEGMENT_NAME, SLOT_OFFSETS, segment_name
from ._records import BATCH_ENTRIES, Entry, RecordDecoder, TailStop
from ._segment import (
    CommitState,
    LegacyHeaderInfo,
    SegmentHeaderInfo,
    active_commit,
    is_blank_header,
    parse_header,
)
from .errors import BadHeaderError, BinlogError, BinlogIOError, NotALogError

READ_CHUNK = 1 << 20

ReadAt = Callable[[int, int], bytes]


def io_error(exc: OSError, path: str, what: str) -> BinlogIOError:
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return NotALogError(f"{what}: {exc.strerror}", path=path)
    return BinlogIOError(f"{what}: {exc.strerror or exc}", path=path)


def list_segments(directory: str) -> list[int]:
    """The log numbers of the segments present (plain or compressed), ascending."""
    try:
        names = os.listdir(directory)
    except OSError as exc:
        raise io_error(exc, directory, "cannot list the log directory") from exc
    return sorted({int(match[1]) for name in names if (match := SEGMENT_NAME.match(name))})


def find_segment(directory: str, log: int) -> str | None:
    """The file holding segment ``log``: the plain file if present, else a compressed copy (spec 2.6)."""
    plain = os.path.join(directory, segment_name(log))
    for path in (plain, *(plain + suffix for suffix in COMPRESSED_SUFFIXES)):
        if os.path.exists(path):
            return path
    return None


def _decompressed(path: str) -> IO[bytes]:
    """A sealed segment compressed whole, unpacked into an anonymous temporary file.

    A temporary file, not memory: a hostile archive cannot exhaust memory,
    and reads keep the random access the record walk needs.
    """
    spill: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 - the caller owns and closes it
    try:
        with open(path, "rb") as raw:
            if path.endswith(".gz"):
                with gzip.GzipFile(fileobj=raw) as unpacked:
                    shutil.copyfileobj(unpacked, spill, READ_CHUNK)
            else:
                with zstandard.ZstdDecompressor().stream_reader(raw) as unpacked:
                    shutil.copyfileobj(unpacked, spill, READ_CHUNK)
        spill.flush()  # reads use pread on the descriptor, past Python's buffer
    except (OSError, EOFError, zstandard.ZstdError) as exc:
        spill.close()
        raise BadHeaderError(f"compressed segment cannot be unpacked: {exc}", path=path) from exc
    return spill


def next_entries(
    decoder: RecordDecoder, read_at: ReadAt, *, fed: int, end: int, most: int = BATCH_ENTRIES
) -> tuple[list[Entry], int]:
    """The next entries (up to ``most``), fed from ``read_at`` (bytes ``fed`` to ``end``) as needed.

    Returns the entries (none when the walk is over for now) and how far the
    file has been fed. Reads are large and bounded by ``end``: memory stays
    proportional to the bytes actually present. Each read starts where the
    decoder stands, so the few bytes of a record cut by the previous read are
    read again rather than joined to the next read by a copy of it.
    """
    while True:
        entries = decoder.next_batch(most)
        if entries or decoder.done:
            return entries, fed
        if fed >= end:
            if decoder.input_ended:
                return entries, fed
            decoder.end_of_input()
            continue
        start, held = decoder.offset, decoder.pending()
        data = read_at(start, min(max(held + decoder.wanted(), READ_CHUNK), end - start))
        if len(data) <= held:  # nothing new: the file ends before ``end``
            end = fed
            continue
        decoder.refill(data)
        fed = start + len(data)


@dataclass(frozen=True, slots=True)
class TailScan:
    """What lies beyond a segment's commit point."""

    commit_offset: int
    end: int
    next_index: int
    last_asqn: int
    last_timestamp_us: int
    records: int
    stop: TailStop
    file_size: int

    @property
    def extra_bytes(self) -> int:
        """Bytes after the last valid record: what recovery truncates or zeroes."""
        return max(self.file_size - self.end, 0)


def scan_tail(
    read_at: ReadAt,
    *,
    log: int,
    commit: CommitState,
    file_size: int,
    stop_before_index: int | None = None,
) -> TailScan:
    """Walk the valid records beyond the commit point (spec section 7).

    ``stop_before_index`` bounds the walk of a finished segment: records whose
    index reaches the successor's base index are not part of this segment.
    """
    decoder = RecordDecoder(
        log=log, offset=commit.commit_offset, next_index=commit.next_index, last_asqn=commit.last_asqn
    )
    fed = commit.commit_offset
    records = 0
    last_timestamp = commit.last_timestamp_us
    while stop_before_index is None or decoder.next_index < stop_before_index:
        most = (
            BATCH_ENTRIES if stop_before_index is None else min(BATCH_ENTRIES, stop_before_index - decoder.next_index)
        )
        entries, fed = next_entries(decoder, read_at, fed=fed, end=file_size, most=most)
        if not entries:
            break
        records += len(entries)
        last_timestamp = entries[-1].timestamp_us if entries[-1].timestamp_us is not None else last_timestamp
    stop = decoder.stop or TailStop(decoder.offset, "successor")
    return TailScan(
        commit_offset=commit.commit_offset,
        end=decoder.offset,
        next_index=decoder.next_index,
        last_asqn=decoder.last_asqn,
        last_timestamp_us=last_timestamp,
        records=records,
        stop=stop,
        file_size=file_size,
    )


class SegmentFile:
    """One segment opened read-only."""

    def __init__(self, directory: str, log: int) -> None:
        self.directory = directory
        self.log = log
        self.path = find_segment(directory, log) or os.path.join(directory, segment_name(log))
        self.compressed = self.path.endswith(COMPRESSED_SUFFIXES)
        self._spill: IO[bytes] | None = None
        try:
            if self.compressed:
                self._spill = _decompressed(self.path)
                self.fd = self._spill.fileno()
            else:
                self.fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise io_error(exc, self.path, "cannot open segment") from exc

    def close(self) -> None:
        if self._spill is not None:
            self._spill.close()
            self._spill = None
        elif self.fd >= 0:
            os.close(self.fd)
        self.fd = -1

    def __enter__(self) -> SegmentFile:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def read(self, offset: int, size: int) -> bytes:
        try:
            return os.pread(self.fd, size, offset)
        except OSError as exc:
            raise BinlogIOError(
                f"read of {size} bytes failed: {exc.strerror}", path=self.path, log=self.log, offset=offset
            ) from exc

    def size(self) -> int:
        try:
            return os.fstat(self.fd).st_size
        except OSError as exc:  # pragma: no cover - fstat of an open descriptor
            raise BinlogIOError(f"fstat failed: {exc.strerror}", path=self.path, log=self.log) from exc

    def is_blank(self) -> bool:
        """Shorter than a header, or zero in every byte (spec 3.5).

        A zeroed header in front of records is not blank: those records are
        reported (the header checks fail), never silently dropped.
        """
        if not is_blank_header(self.read(0, HEADER_SIZE)):
            return False
        at, size = HEADER_SIZE, self.size()
        while at < size:
            chunk = self.read(at, min(READ_CHUNK, size - at))
            if not chunk or chunk.count(0) != len(chunk):
                return not chunk
            at += len(chunk)
        return True

    def header(self) -> SegmentHeaderInfo | LegacyHeaderInfo:
        data = self.read(0, HEADER_SIZE)
        try:
            return parse_header(data, log=self.log)
        except BinlogError as exc:
            raise exc.located(path=self.path) from None

    def commit(self, header: SegmentHeaderInfo) -> CommitState:
        """Re-read the commit slots: the published commit point moves while writers append."""
        data = self.read(0, HEADER_SIZE)
        try:
            return active_commit(data, base_index=header.base_index, log=self.log)
        except BinlogError as exc:
            raise exc.located(path=self.path) from None

    def scan_tail(self, commit: CommitState, *, stop_before_index: int | None = None) -> TailScan:
        return scan_tail(
            self.read, log=self.log, commit=commit, file_size=self.size(), stop_before_index=stop_before_index
        )


@dataclass(frozen=True, slots=True)
class SegmentEnd:
    """Where a segment's committed records end now (spec 6.1)."""

    offset: int
    next_index: int  # the index a walk of the committed records reaches at ``offset``
    final: bool  # sealed, or finished: the end will not move any more
    slot_offset: int  # where the slot this end comes from sits, for error reports


def slot_disagreement(walked_index: int, slot_index: int, *, path: str, log: int, slot_offset: int) -> BadHeaderError:
    """R-39: a walk that reached the segment end expects ``walked_index``, the active slot ``slot_index``.

    Records below the commit point are missing, or the slot is wrong.
    """
    return BadHeaderError(
        f"the records end before index {walked_index}, the commit slot says {slot_index}",
        path=path,
        log=log,
        offset=slot_offset,
        index=walked_index,
    )


def is_last_blank(directory: str, log: int) -> bool:
    """A blank segment that is the highest-numbered one present: absent, not damaged (spec 3.5)."""
    logs = list_segments(directory)
    if not logs or logs[-1] != log:
        return False
    with SegmentFile(directory, log) as segment:
        return segment.is_blank()


def segment_end(directory: str, segment: SegmentFile, header: SegmentHeaderInfo) -> SegmentEnd:
    """Where a version 2 segment's committed records end now, and whether that is final (spec 6.1).

    A sealed segment ends at its commit point. An open segment whose successor
    exists is finished: its end reaches the last valid record below the
    successor's base index (records synced before the cutover whose slot
    update was lost, spec 8.4). An open last segment ends at its commit point
    for now.
    """
    commit = segment.commit(header)
    slot_offset = SLOT_OFFSETS[commit.generation % 2]
    if commit.closed:
        return SegmentEnd(commit.commit_offset, commit.next_index, True, slot_offset)
    if find_segment(directory, segment.log + 1) is None or is_last_blank(directory, segment.log + 1):
        return SegmentEnd(commit.commit_offset, commit.next_index, False, slot_offset)
    with SegmentFile(directory, segment.log + 1) as successor:
        successor_header = successor.header()
    if isinstance(successor_header, LegacyHeaderInfo):
        return SegmentEnd(commit.commit_offset, commit.next_index, True, slot_offset)
    scan = segment.scan_tail(commit, stop_before_index=successor_header.base_index)
    return SegmentEnd(scan.end, scan.next_index, True, slot_offset)
