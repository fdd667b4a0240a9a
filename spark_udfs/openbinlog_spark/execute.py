"""Reading planned items on an executor: Arrow batches out, damage handled by mode.

PERMISSIVE turns each damaged region into a row with the corrupt-record and
``_error`` columns, DROPMALFORMED drops it, FAILFAST raises its typed error
(which names file, log, offset and index). In report mode only damage rows
come out. Bytes beyond a segment end (a torn tail) are never read, so they
are never damage.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from functools import partial

import pyarrow as pa
from pyspark.sql.types import StructType

from openbinlog import Damage, Entry, errors
from openbinlog._format import LEGACY_FIRST_RECORD_OFFSET, LEGACY_LENGTH_SIZE
from openbinlog._legacy import iter_legacy_records
from openbinlog.errors import BinlogError, LengthOutOfRangeError, TruncatedError

from .columns import BatchBuilder
from .options import DROPMALFORMED, FAILFAST, ReadOptions
from .plan import IssueItem, Item, LegacyItem, RangeItem
from .storage import CorruptFileError, MissingFileError, SegmentSource, Storage
from .walk import DamagedRegion, RangeWalker, RecordRun


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

    def read(self, items: Sequence[Item]) -> Iterator[pa.RecordBatch]:
        for item in items:
            if isinstance(item, IssueItem):
                builder = BatchBuilder(self.schema, file=item.file, partition_values=item.partition_values)
                yield from self._damage(builder, item.damage, b"")
            elif isinstance(item, RangeItem):
                yield from self._guarded(item.file.url, item.range.log, partial(self._range, item))
            else:
                first, header = item.files[0]
                yield from self._guarded(first.url, header.log, partial(self._legacy, item))

    def _guarded(self, url: str, log: int, produce: Callable[[], Iterator[pa.RecordBatch]]) -> Iterator[pa.RecordBatch]:
        """Missing and undecodable files, by ``ignoreMissingFiles`` / ``ignoreCorruptFiles`` and the mode."""
        try:
            yield from produce()
        except MissingFileError:
            if not self.options.ignore_missing:
                raise
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
        builder = BatchBuilder(self.schema, file=item.file.url, partition_values=item.partition_values)
        with self.storage.open(
            item.file.url, item.file.compression, max_decompressed=options.max_decompressed
        ) as source:
            span = item.range
            if item.file.compression is not None:
                span = dataclasses.replace(span, file_size=source.size())
            walker = RangeWalker(
                source,
                span,
                path=item.file.url,
                tolerant=options.tolerant,
                chunk_bytes=options.chunk_bytes,
                max_raw_bytes=options.max_corrupt_record_bytes,
            )
            for part in walker:
                if isinstance(part, DamagedRegion):
                    yield from self._damage(builder, part.damage, part.raw)
                elif options.report:
                    continue
                elif isinstance(part, RecordRun):
                    yield builder.records(part)
                else:
                    yield builder.entries(part)

    def _legacy(self, item: LegacyItem) -> Iterator[pa.RecordBatch]:
        next_index = item.first_index
        for segment, header in item.files:
            builder = BatchBuilder(self.schema, file=segment.url, partition_values=item.partition_values)
            with self.storage.open(
                segment.url, segment.compression, max_decompressed=self.options.max_decompressed
            ) as source:
                walker = LegacyWalker(
                    source,
                    path=segment.url,
                    log=header.log,
                    tail=header.tail,
                    next_index=next_index,
                    options=self.options,
                )
                for part in walker:
                    if isinstance(part, DamagedRegion):
                        yield from self._damage(builder, part.damage, part.raw)
                    elif not self.options.report:
                        yield builder.entries(part)
                next_index = walker.next_index


class LegacyWalker:
    """Version 1 records of one segment in windows (spec B.4), numbered from ``next_index``.

    Version 1 has nothing to resynchronise on: after damage the rest of the
    segment is skipped and reported, and numbering goes on from the index at
    the damage (spec B.6).
    """

    def __init__(
        self, source: SegmentSource, *, path: str, log: int, tail: int, next_index: int, options: ReadOptions
    ) -> None:
        self.source = source
        self.path = path
        self.log = log
        self.tail = tail
        self.next_index = next_index
        self.options = options

    def __iter__(self) -> Iterator[list[Entry] | DamagedRegion]:
        at = LEGACY_FIRST_RECORD_OFFSET
        available = min(self.tail, self.source.size())
        window = self.options.chunk_bytes
        while at < self.tail:
            end = min(available, at + window)
            data = self.source.read_at(at, max(end - at, 0))
            entries: list[Entry] = []
            try:
                for entry in iter_legacy_records(
                    data, log=self.log, offset=at, tail=self.tail, next_index=self.next_index
                ):
                    entries.append(entry)
            except (TruncatedError, LengthOutOfRangeError) as error:
                cut_by_window = isinstance(error, TruncatedError) and end < available
                if entries:
                    yield entries
                    at, self.next_index = entries[-1].offset + entries[-1].size, entries[-1].index + 1
                if cut_by_window:
                    if not entries:
                        # One record longer than the window: widen it to that record.
                        head = self.source.read_at(at, LEGACY_LENGTH_SIZE)
                        window = max(window, LEGACY_LENGTH_SIZE + int.from_bytes(head, "big", signed=True))
                    continue
                error.located(path=self.path)
                if not self.options.tolerant:
                    raise
                raw = self.source.read_at(at, min(self.tail - at, self.options.max_corrupt_record_bytes))
                yield DamagedRegion(Damage.from_error(error, bytes_skipped=self.tail - at, next_index=None), raw)
                break
            if entries:
                yield entries
                at, self.next_index = entries[-1].offset + entries[-1].size, entries[-1].index + 1
