"""``spark.readStream.format("binlog").load(log_directory)``: tail live logs.

An offset says, for each log directory, where the next record starts:
``{"<directory>": {"log": n, "offset": o, "index": e}}``, the stable record
identity ``(log, offset)`` plus the index expected there. Each trigger
re-reads the segment headers (spec R-4) and moves the offset to the end of
what is committed now: the commit point of the last segment, the end of a
finished segment by spec 8.4, across cutovers. Nothing beyond a commit point
is ever read. ``maxRecordsPerTrigger`` caps the records of one micro-batch
(Spark 4.2+ passes it back as a ``ReadMaxRows`` limit).

Only version 2 logs can be followed; legacy version 1 segments are refused
with ``unsupported_version``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

from openbinlog import Damage
from openbinlog._format import HEADER_SIZE
from openbinlog.errors import NotALogError, UnsupportedVersionError
from openbinlog.walk import Boundary, is_last, next_segment

from .execute import ItemReader
from .globs import GlobError, load_pattern
from .listing import list_segment_files
from .options import ReadOptions
from .plan import BinlogPartition, IssueItem, Item, RangeItem, SegmentFacts, read_facts, settle_end
from .storage import Storage, is_local
from .walk import DamagedRegion, RangeWalker, RecordRun, SegmentRange

try:  # Spark 4.2+: read limits and Trigger.AvailableNow
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadLimit,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )
except ImportError:  # pragma: no cover - Spark 4.1

    class ReadLimit:  # type: ignore[no-redef]
        pass

    class ReadAllAvailable(ReadLimit):  # type: ignore[no-redef]
        pass

    @dataclass
    class ReadMaxRows(ReadLimit):  # type: ignore[no-redef]
        max_rows: int

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        pass


@dataclass(frozen=True, slots=True, order=True)
class Position:
    """Where the next record of a log starts; log 0 means no segment was seen yet."""

    log: int
    offset: int
    index: int

    def to_json(self) -> dict[str, int]:
        return {"log": self.log, "offset": self.offset, "index": self.index}

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> Position:
        return cls(int(value["log"]), int(value["offset"]), int(value["index"]))


BEFORE_START = Position(0, 0, 0)


class LogView:
    """The segments of one log directory as they are now."""

    def __init__(self, storage: Storage, options: ReadOptions, directory: str) -> None:
        fs, path = storage.filesystem(directory)
        try:
            path, wildcard = load_pattern(path)
        except GlobError as error:
            raise NotALogError(f"not a glob: {error}", path=directory) from None
        if wildcard:  # its logs would be listed and none of them followed: no rows, and no error
            raise NotALogError("a stream follows one log directory, not a glob", path=directory)
        listing = list_segment_files(storage, dataclasses.replace(options, paths=(directory,), recursive=True))
        own = (path if is_local(directory) else fs.unstrip_protocol(path)).rstrip("/")
        # As the listing names it (file:/p as /p): damage rows name the directory as a batch read's do.
        self.directory = own
        facts: dict[int, SegmentFacts] = {}
        for segment in listing:
            if segment.directory.rstrip("/") == own:
                found = read_facts(storage, segment, options)
                if found is not None:
                    facts.setdefault(segment.log, found)
        # A blank last segment never held a record (spec 3.5, R-7).
        self.segments = {log: item for log, item in facts.items() if not (item.blank and is_last(log, list(facts)))}
        for log in sorted(self.segments):
            item = self.segments[log]
            if item.error is not None:
                raise item.error
            if item.version2 is None:
                raise UnsupportedVersionError(
                    "legacy version 1 segments cannot be followed", path=item.file.url, log=log, offset=4
                )
            settle_end(storage, item, self.segments.get(log + 1), options)

    def first(self) -> Position:
        if not self.segments:
            return BEFORE_START
        facts = self.segments[min(self.segments)]
        assert facts.version2 is not None
        return Position(facts.file.log, HEADER_SIZE, facts.version2.base_index)

    def last(self) -> Position:
        if not self.segments:
            return BEFORE_START
        facts = self.segments[max(self.segments)]
        return Position(facts.file.log, facts.end, facts.end_index)

    def boundary(self, log: int) -> Boundary:
        """What follows segment ``log`` at its end: the walk's chain rule (spec 8.6)."""
        facts = self.segments[log]
        header = facts.version2
        assert header is not None
        assert facts.segment_end is not None
        following = self.segments.get(log + 1)
        return next_segment(
            path=self.directory,
            log=log,
            header=header,
            end=facts.segment_end,
            expected=facts.end_index,
            present=sorted(self.segments),
            successor=None if following is None else following.header,
            successor_path=None if following is None else following.file.url,
        )

    def range_of(self, log: int, start: Position, stop: int, *, start_asqn: int = -1) -> SegmentRange:
        facts = self.segments[log]
        header = facts.version2
        assert header is not None
        assert facts.segment_end is not None
        return SegmentRange(
            header=header,
            end=facts.segment_end,
            file_size=facts.file_size,
            start=start.offset,
            stop=stop,
            exact_start=True,
            exact_stop=True,
            start_index=start.index,
            start_asqn=start_asqn,
        )


def _next_position(run: RecordRun | list[Any], taken: int) -> Position:
    """The position after the ``taken``-th record of a run."""
    if isinstance(run, RecordRun):
        header = run.headers[taken - 1]
        end = run.base + int(run.starts[taken - 1]) + 4 + int(header["length"])
        return Position(run.log, end, int(header["index"]) + 1)
    entry = run[taken - 1]
    return Position(entry.log, entry.offset + entry.size, entry.index + 1)


class BinlogStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: ReadOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema
        self.directories = [path.rstrip("/") for path in options.paths]
        self._ceiling: dict[str, Position] | None = None
        self._latest: dict[str, Any] | None = None

    def _storage(self) -> Storage:
        return Storage(self.options.storage_options)

    def initialOffset(self) -> dict[str, Any]:
        storage = self._storage()
        choice = self.options.starting_offsets.strip()
        offsets: dict[str, Any] = {}
        if choice.startswith("{"):
            given = json.loads(choice)
            if set(given) == {"log", "offset", "index"} and len(self.directories) == 1:
                given = {self.directories[0]: given}
            return {directory: Position.from_json(given[directory]).to_json() for directory in self.directories}
        for directory in self.directories:
            view = LogView(storage, self.options, directory)
            offsets[directory] = (view.last() if choice.lower() == "latest" else view.first()).to_json()
        return offsets

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_records_per_trigger is None:
            return ReadAllAvailable()
        return ReadMaxRows(self.options.max_records_per_trigger)

    def prepareForTriggerAvailableNow(self) -> None:
        storage = self._storage()
        self._ceiling = {directory: LogView(storage, self.options, directory).last() for directory in self.directories}

    def latestOffset(self, start: dict[str, Any] | None = None, limit: ReadLimit | None = None) -> dict[str, Any]:
        if start is None:  # Spark 4.1 calls latestOffset() without a start
            start = self._latest or self.initialOffset()
        budget: int | None = None
        if isinstance(limit, ReadMaxRows):
            budget = limit.max_rows
        elif limit is None and self.options.max_records_per_trigger is not None:
            budget = self.options.max_records_per_trigger
        storage = self._storage()
        offsets: dict[str, Any] = {}
        for directory in self.directories:
            position = Position.from_json(start[directory])
            view = LogView(storage, self.options, directory)
            ceiling = self._ceiling.get(directory) if self._ceiling is not None else None
            position, budget = self._advance(view, position, budget, ceiling)
            offsets[directory] = position.to_json()
        self._latest = offsets
        return offsets

    def _advance(
        self, view: LogView, position: Position, budget: int | None, ceiling: Position | None
    ) -> tuple[Position, int | None]:
        """How far the committed records go from ``position``, within ``budget`` records and ``ceiling``."""
        if position == BEFORE_START:
            position = view.first()
            if position == BEFORE_START:
                return position, budget
        while position.log in view.segments:
            facts = view.segments[position.log]
            target = Position(position.log, facts.end, facts.end_index)
            if ceiling is not None and ceiling.log <= position.log:
                target = min(target, ceiling)
            if position < target:
                available = target.index - position.index
                if budget is not None and available > budget:
                    return self._count(view, position, target.offset, budget)
                if budget is not None:
                    budget -= available
                position = target
            if position.offset < facts.end:
                return position, budget
            successor = view.boundary(position.log).next_log
            if successor is None:
                return position, budget
            following = view.segments[successor].version2
            assert following is not None
            position = Position(successor, HEADER_SIZE, following.base_index)
        return position, budget

    def _count(self, view: LogView, position: Position, end: int, budget: int) -> tuple[Position, int | None]:
        """Walk ``budget`` records from ``position`` (at most up to ``end``)."""
        if budget <= 0:
            return position, budget
        facts = view.segments[position.log]
        with self._storage().open(
            facts.file.url, facts.file.compression, max_decompressed=self.options.max_decompressed
        ) as source:
            walker = RangeWalker(
                source,
                view.range_of(position.log, position, end),
                path=facts.file.url,
                tolerant=self.options.tolerant,
                chunk_bytes=self.options.chunk_bytes,
            )
            for part in walker:
                if isinstance(part, DamagedRegion):
                    continue
                if len(part) >= budget:
                    return _next_position(part, budget), 0
                budget -= len(part)
        return Position(position.log, walker.position, walker.next_index), budget

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        storage = self._storage()
        items: list[Item] = []
        for directory in self.directories:
            first, last = Position.from_json(start[directory]), Position.from_json(end[directory])
            if last <= first or last == BEFORE_START:
                continue
            view = LogView(storage, self.options, directory)
            if first == BEFORE_START:
                first = view.first()
            items.extend(self._items(view, first, last))
        return [BinlogPartition(items)] if items else []

    def _items(self, view: LogView, first: Position, last: Position) -> Iterator[Item]:
        log, position = first.log, first
        while log in view.segments and log <= last.log:
            stop = last.offset if log == last.log else view.segments[log].end
            facts = view.segments[log]
            if position.offset < stop:
                yield RangeItem(facts.file, view.range_of(log, position, stop), {})
            boundary = view.boundary(log)
            successor = boundary.next_log
            if successor is None or successor > last.log:
                return
            following = view.segments[successor].version2
            assert following is not None
            if boundary.error is not None:
                damage = Damage.from_error(boundary.error, bytes_skipped=0, next_index=None)
                yield IssueItem(damage, view.directory, False, {})
            log, position = successor, Position(successor, HEADER_SIZE, following.base_index)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return ItemReader(self.options, self.schema).read(partition.value)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to release: a reader never writes (spec R-2)."""
