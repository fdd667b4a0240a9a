"""Reading planned items on an executor: Arrow batches out, damage handled by mode.

PERMISSIVE turns each damaged region into a row with the corrupt-record and
``_error`` columns, DROPMALFORMED drops it, FAILFAST raises its typed error
(which names file, log, offset and index). In report mode only damage rows
come out. Bytes beyond a segment end (a torn tail) are never read, so they
are never damage.

A segment header that fails its checks ends the walk of its log (spec readers
10.4), also when it fails only since planning: a range first checks the
headers of the segments planned up to its own again (below its own, only
those whose files changed since planning found them sealed and passing: their
``Stamp``), unpacks again those of them that are compressed (an archive that
fails before its end ends the walk in it as well, R-43), and reads nothing
above one that fails; its walk checks its successor's where END does. Each failing header is reported once, by the
range ``RangeItem.reports_from`` names, or by the walk that meets it at END;
``ignoreCorruptFiles`` drops that row.

Each range logs, to ``openbinlog_spark.reads`` at INFO, the bytes its source
read and the records it walked (Spark's Python worker logs collect the line
with ``spark.sql.pyspark.worker.logging.enabled``).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import pyarrow as pa
from pyspark.sql.types import StructType

from openbinlog import Damage, errors
from openbinlog._segment import SegmentHeaderInfo
from openbinlog.errors import BadHeaderError, BinlogError
from openbinlog.walk import LogWalk, is_last, next_segment, read_header, segment_end

from .columns import BatchBuilder
from .directory import PlannedDirectory
from .listing import SegmentFile
from .options import DROPMALFORMED, FAILFAST, ReadOptions
from .plan import HEADER_READERS, HoleCheck, IssueItem, Item, LegacyItem, RangeItem, read_facts
from .storage import COMPRESSIONS, CorruptFileError, MissingFileError, Stamp, Storage, is_local
from .walk import ChainCheck, DamagedRegion, RangeWalker, RecordRun

READS_LOG = logging.getLogger("openbinlog_spark.reads")
# As the pushdown logger (openbinlog_spark.source): INFO lines reach Spark's Python worker logs when collected.
READS_LOG.setLevel(logging.INFO)


def error_of(damage: Damage) -> BinlogError:
    """The typed error a damage report stands for."""
    for name in dir(errors):
        kind = getattr(errors, name)
        if isinstance(kind, type) and issubclass(kind, BinlogError) and kind.error_class == damage.error_class:
            return kind(damage.message, path=damage.path, log=damage.log, offset=damage.offset, index=damage.index)
    return BinlogError(damage.message, path=damage.path, log=damage.log, offset=damage.offset, index=damage.index)


class ItemReader:
    """Turns the items of one partition into Arrow batches of ``schema``."""

    def __init__(self, options: ReadOptions, schema: StructType, storage: Storage | None = None) -> None:
        self.options = options
        self.schema = schema
        self.storage = storage or Storage(options.storage_options)
        self._failures: dict[str, BinlogError | None] = {}  # of each planned segment checked: why its header fails
        self._archives: dict[str, BinlogError | None] = {}  # of each changed compressed one: why its archive fails
        self._stamps: dict[str, Stamp | None] = {}  # of each file looked at, as the task first found it
        self._listed: set[str] = set()  # remote directories whose stamps a listing gave

    def read(self, items: Sequence[Item]) -> Iterator[pa.RecordBatch]:
        for item in items:
            if isinstance(item, IssueItem):
                builder = BatchBuilder(self.schema, file=item.file, partition_values=item.partition_values)
                yield from self._damage(builder, item.damage, b"")
            elif isinstance(item, RangeItem):
                yield from self._guarded(item.file.url, item.range.log, partial(self._range, item))
            else:
                first = item.files[0]
                yield from self._guarded(first.url, first.log, partial(self._legacy, item))

    def _guarded(self, url: str, log: int, produce: Callable[[], Iterator[pa.RecordBatch]]) -> Iterator[pa.RecordBatch]:
        """Undecodable files, by ``ignoreCorruptFiles`` and the mode. (Missing ones are the opens' to handle: a
        file gone in the middle of a read is an I/O error, never a file to skip.)"""
        try:
            yield from produce()
        except CorruptFileError as error:
            if self.options.ignore_corrupt and not self.options.report:
                return
            builder = BatchBuilder(self.schema, file=url, partition_values={})
            error.located(path=url, log=log)
            yield from self._damage(builder, Damage.from_error(error, bytes_skipped=0, next_index=None), b"")

    def _damage(self, builder: BatchBuilder, damage: Damage, raw: bytes) -> Iterator[pa.RecordBatch]:
        options = self.options
        if options.report:
            yield builder.damage(damage, None, None)
        elif options.mode == FAILFAST:
            raise error_of(damage)
        elif options.mode != DROPMALFORMED:
            yield builder.damage(damage, raw, options.corrupt_rows)

    def _range(self, item: RangeItem) -> Iterator[pa.RecordBatch]:
        options = self.options
        listed = [segment.log for segment in item.segments]
        reached = [segment for segment in item.segments if segment.log <= item.file.log]
        # Below its own segment, a header planning checked sealed, in a file unchanged since, passes still.
        trusted = {segment.url for segment in reached if self._unchanged(segment, item.checked, item.file.log)}
        unread = [segment for segment in reached if segment.url not in self._failures and segment.url not in trusted]
        if len(unread) > 1:  # many headers of a long log: read side by side, as planning reads them
            with ThreadPoolExecutor(HEADER_READERS) as pool:
                list(pool.map(lambda segment: self._failure(segment, listed), unread))
        for segment in reached:
            if segment.url in trusted:
                continue
            failure = self._failure(segment, listed)
            if failure is None and segment.log < item.file.log:
                failure = self._archive_failure(segment)  # its own segment's walk unpacks it and meets that itself
            if failure is not None:  # the walk ends at that header or archive, below this range or at its own segment
                if item.reports_from is not None and segment.log >= item.reports_from:
                    damage = Damage.from_error(failure, bytes_skipped=0, next_index=None)
                    yield from self._header_failed(damage, segment.url, item.partition_values)
                return
        successor = next((segment for segment in item.segments if segment.log == item.file.log + 1), None)
        try:
            opened = self.storage.open_planned(
                item.file.url, item.file.compression, max_decompressed=options.max_decompressed
            )
        except MissingFileError:
            if not options.ignore_missing:
                raise
            READS_LOG.warning("Skipped missing file: %s", item.file.url)
            if item.hole is not None:
                yield from self._hole(item, item.hole)
            return
        # A segment compressed since planning: its rows and its damage name the copy they are read from.
        builder = BatchBuilder(self.schema, file=opened.url, partition_values=item.partition_values)
        with opened as source:
            span = item.range
            if span.chain is not None and not span.chain.successor_read:
                span = dataclasses.replace(span, chain=self._chain_now(span.chain, item.segments))
            walker = RangeWalker(
                source,
                span,
                path=opened.url,
                tolerant=options.tolerant,
                # A compressed segment is unpacked to its end by its first read beyond the header: an archive
                # that fails does so before any record of it is returned, whatever the chunk size.
                chunk_bytes=options.chunk_bytes,
                max_raw_bytes=options.max_corrupt_record_bytes,
                successor_failure=None if successor is None else partial(self._failure, successor, listed),
            )
            records = 0
            for part in walker:
                if isinstance(part, DamagedRegion):
                    if part.ends_walk:
                        yield from self._header_failed(part.damage, opened.url, item.partition_values)
                    else:
                        yield from self._damage(builder, part.damage, part.raw)
                    continue
                records += len(part)
                if options.report:
                    continue
                if isinstance(part, RecordRun):
                    yield builder.records(part)
                else:
                    yield builder.entries(part)
            READS_LOG.info(
                "read %d bytes of %s for the range [%d, %d) of %d records",
                source.bytes_read,
                item.file.url,
                span.start,
                min(span.stop, span.segment_end),
                records,
            )

    def _unchanged(self, segment: SegmentFile, checked: Mapping[int, Stamp], own: int) -> bool:
        """Whether planning checked the header of ``segment``, below the range's own segment ``own``, sealed and
        passing, in the file that is there now with the same stamp: no protocol writes a sealed segment in place
        (spec protocols 2.5, 2.6, 6.2, 8.5), so its header passes still. A look at the file's attributes, no read
        (on an object store, one listing of the directory a task)."""
        planned = checked.get(segment.log)
        return segment.log < own and planned is not None and planned == self._stamp_now(segment)

    def _stamp_now(self, segment: SegmentFile) -> Stamp | None:
        """The stamp of a segment's file as the task first finds it."""
        if segment.url not in self._stamps:
            if is_local(segment.url):
                self._stamps[segment.url] = self.storage.stamp(segment.url)
            elif segment.directory not in self._listed:
                self._listed.add(segment.directory)
                self._stamps.update(self.storage.stamps(segment.directory))
        return self._stamps.get(segment.url)

    def _failure(self, segment: SegmentFile, listed: Sequence[int]) -> BinlogError | None:
        """Why the header of ``segment`` fails its checks now (``listed``: the log numbers planning's listing
        showed, blank ones included); None where it passes, or where the segment is gone or a blank last segment
        (spec 3.5, R-7), as OPEN finds it absent. Read once by a task."""
        if segment.url not in self._failures:
            try:
                facts = read_facts(self.storage, segment, self.options, planned=True)
            except MissingFileError:
                facts = None  # a hole, or a log that now starts or ends elsewhere: the missing file's own reads say it
            blank_last = facts is not None and facts.blank and is_last(segment.log, listed)
            self._failures[segment.url] = None if facts is None or blank_last else facts.error
        return self._failures[segment.url]

    def _archive_failure(self, segment: SegmentFile) -> BinlogError | None:
        """Why the compressed file of ``segment`` (planned so, or the copy that replaced it since) now fails to unpack
        to its end, as the walk of it unpacks it (R-43): its segment's walk then ends in it, with ``bad_header`` at
        offset 0, and nothing above it is read, as at a header that fails (spec readers 10.4). None where it unpacks,
        where the file is plain, or where it is gone (its own reads say that). Only for a segment whose file changed
        since planning unpacked it (``check_archives``); unpacked whole and kept nowhere, once by a task."""
        if segment.url not in self._archives:
            failed: BinlogError | None = None
            url = segment.url
            try:
                with self.storage.open_planned(
                    segment.url, segment.compression, max_decompressed=self.options.max_decompressed
                ) as source:
                    compression = COMPRESSIONS.get(source.url.rsplit(".", 1)[-1])
                    url = source.url
                if compression is not None:
                    failed = self.storage.unpack_failure(
                        url, compression, max_decompressed=self.options.max_decompressed
                    )
            except MissingFileError:
                failed = None
            except CorruptFileError as error:  # cannot be unpacked at all: the header check has met that first
                failed = error
            self._archives[segment.url] = None if failed is None else failed.located(path=url, log=segment.log)
        return self._archives[segment.url]

    def _header_failed(self, damage: Damage, file: str, values: dict[str, Any]) -> Iterator[pa.RecordBatch]:
        """A segment header that fails its checks, where the walk of its log ends (spec readers 10.4): its damage
        by the mode, with 0 bytes skipped; nothing with ``ignoreCorruptFiles``, as a damaged header found at
        planning."""
        if self.options.ignore_corrupt and not self.options.report:
            return
        builder = BatchBuilder(self.schema, file=damage.path or file, partition_values=values)
        yield from self._damage(builder, damage, b"")

    def _hole(self, item: RangeItem, hole: HoleCheck) -> Iterator[pa.RecordBatch]:
        """The first range of a segment removed since planning, missing files ignored: where the segment below it
        is still there and one the plan had above it too, the chain is broken (spec 8.6), and reported as NEXT from
        the segment below reports it, never left a silent gap. Otherwise the log now starts above it (retention)
        or ends below it."""
        now = self.storage.segments(item.file.directory)
        listed = [log for log in now if log <= hole.last]
        if not any(log > item.file.log for log in listed):
            return
        try:
            below = self.storage.open_planned(
                hole.below.url, hole.below.compression, max_decompressed=self.options.max_decompressed
            )
        except MissingFileError:
            return
        builder = BatchBuilder(self.schema, file=item.file.directory, partition_values=item.partition_values)
        try:
            with below:
                header = read_header(below, hole.below.log)
                if not isinstance(header, SegmentHeaderInfo):
                    raise BadHeaderError("no longer a version 2 segment", path=below.url, log=hole.below.log)
                end = segment_end(below, header, None)
            boundary = next_segment(
                path=item.file.directory,
                log=header.log,
                header=header,
                end=end,
                expected=end.index,
                present=listed,
                successor=None,
            )
        except BinlogError as error:  # the segment below changed since planning: damage of its own
            yield from self._damage(builder, Damage.from_error(error, bytes_skipped=0, next_index=None), b"")
            return
        if boundary.error is None:
            return
        failure = self._broken_into(boundary.next_log, item.segments)
        if failure is not None:  # BROKEN reports K's header instead, where the walk ends (spec readers 10.2.2)
            if item.reports_from is not None and failure.log is not None and failure.log >= item.reports_from:
                damage = Damage.from_error(failure, bytes_skipped=0, next_index=None)
                yield from self._header_failed(damage, item.file.url, item.partition_values)
            return
        resume = self._base_index(now, boundary.next_log)
        yield from self._damage(builder, Damage.from_error(boundary.error, bytes_skipped=0, next_index=resume), b"")

    def _broken_into(self, log: int | None, segments: Sequence[SegmentFile]) -> BinlogError | None:
        """Why the header of segment ``log``, where a tolerant walk goes on after a broken chain (BROKEN step 2,
        spec readers 10.2.2), fails its checks now: BROKEN checks it first, and reports its error instead of the
        broken chain, which ends the walk. None where it passes, or in a strict walk, which reports the broken
        chain first (BROKEN step 1)."""
        segment = next((segment for segment in segments if segment.log == log), None)
        if segment is None or not self.options.tolerant:
            return None
        return self._failure(segment, [listed.log for listed in segments])

    def _chain_now(self, chain: ChainCheck, segments: Sequence[SegmentFile]) -> ChainCheck | None:
        """The chain check at the end of a range, whose successor the plan does not read, with the segments there
        are now: a successor removed since planning is a hole, never a silent end (spec 8.6). None where a tolerant
        walk's BROKEN meets a header that fails at the segment it goes on with: that header is reported instead, by
        the range the plan has above it (``RangeItem.reports_from``)."""
        now = self.storage.segments(chain.directory)
        if chain.successor is None or chain.successor.log in now:
            return chain
        present = tuple(log for log in chain.present if log in now)
        following = min((log for log in present if log > chain.successor.log), default=None)
        if self._broken_into(following, segments) is not None:
            return None
        return ChainCheck(chain.directory, present, None, None, self._base_index(now, following))

    def _base_index(self, now: dict[int, str], log: int | None) -> int | None:
        """Where reading resumes after a hole: the base index of version 2 segment ``log`` as its header says it
        now (``now``: the segments there are), or None."""
        url = None if log is None else now.get(log)
        if log is None or url is None:
            return None
        try:
            with self.storage.open_planned(url, None, max_decompressed=self.options.max_decompressed) as source:
                header = read_header(source, log)
        except BinlogError:
            return None
        return header.base_index if isinstance(header, SegmentHeaderInfo) else None

    def _legacy(self, item: LegacyItem) -> Iterator[pa.RecordBatch]:
        """A log holding version 1 segments, read whole by the reference walk."""
        options = self.options
        directory = PlannedDirectory(self.storage, item.files, options)
        walk = LogWalk(directory, tolerant=options.tolerant)
        reported = 0
        try:
            while True:
                try:
                    entries = walk.next_batch()
                except BinlogError as error:
                    # Damage a tolerant walk does not step over (a segment header): it ends the walk.
                    if not options.tolerant:
                        raise
                    walk.damage.append(Damage.from_error(error, bytes_skipped=0, next_index=None))
                    entries = []
                for damage in walk.damage[reported:]:
                    builder = BatchBuilder(
                        self.schema, file=damage.path or directory.path, partition_values=item.partition_values
                    )
                    yield from self._damage(builder, damage, self._raw(damage, directory))
                reported = len(walk.damage)
                if not entries:
                    break
                if not options.report:
                    file = directory.url(entries[0].log)
                    builder = BatchBuilder(self.schema, file=file, partition_values=item.partition_values)
                    yield builder.entries(entries)
        finally:
            walk.close()

    def _raw(self, damage: Damage, directory: PlannedDirectory) -> bytes:
        """Up to ``maxCorruptRecordBytes`` of the (decompressed) bytes a damage report stepped over."""
        if damage.log is None or damage.offset is None or not damage.bytes_skipped or self.options.report:
            return b""
        segment = directory.open(damage.log)
        if segment is None:
            return b""
        with segment.source as source:
            return source.read_at(damage.offset, min(damage.bytes_skipped, self.options.max_corrupt_record_bytes))
