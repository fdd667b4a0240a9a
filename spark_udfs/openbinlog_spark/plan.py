"""Planning a read on the driver: segment facts from headers, the chain, pruning, splits, bin-packing.

Only segment headers are read here (and, for a segment that is open while
its successor exists, the tail beyond its commit point, by the finished-
segment rule of spec 8.4, through ``openbinlog._segment_file.scan_tail``).
Damage the headers reveal (a bad header, a broken chain) becomes an
``IssueItem`` that the executors turn into a row or an error like any other
damage, so every mode treats it the same way.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import InputPartition

from openbinlog import Damage
from openbinlog._format import HEADER_SIZE, SLOT_OFFSETS
from openbinlog._segment import LegacyHeaderInfo, SegmentHeaderInfo, parse_header
from openbinlog.walk import is_blank, tail_walk
from openbinlog.errors import BinlogError, ChainBrokenError

from .listing import SegmentFile
from .options import ReadOptions
from .storage import CorruptFileError, MissingFileError, Storage
from .walk import SegmentRange

UNKNOWN_SIZE = 2**63 - 1
HEADER_READERS = 16


@dataclass(frozen=True, slots=True)
class RangeItem:
    """A byte range of one version 2 segment."""

    file: SegmentFile
    range: SegmentRange
    partition_values: dict[str, Any]

    @property
    def weight(self) -> int:
        return max(min(self.range.stop, self.range.readable_end) - self.range.start, 0)


@dataclass(frozen=True, slots=True)
class LegacyItem:
    """Consecutive version 1 segments, read in order: their indexes are counted (spec B.5)."""

    files: tuple[tuple[SegmentFile, LegacyHeaderInfo], ...]
    first_index: int
    partition_values: dict[str, Any]

    @property
    def weight(self) -> int:
        return sum(segment.size for segment, _ in self.files)


@dataclass(frozen=True, slots=True)
class IssueItem:
    """Damage found while planning: a bad header (file-level) or a broken chain."""

    damage: Damage
    file: str
    file_level: bool
    partition_values: dict[str, Any]

    weight = 0


Item = RangeItem | LegacyItem | IssueItem


class BinlogPartition(InputPartition):
    """The items one Spark task reads, in order."""

    def __init__(self, items: Sequence[Item]) -> None:
        super().__init__(tuple(items))

    @property
    def items(self) -> tuple[Item, ...]:
        return self.value  # type: ignore[no-any-return]


@dataclass(slots=True)
class SegmentFacts:
    """What the header (and the finished-segment rule) says about one segment."""

    file: SegmentFile
    header: SegmentHeaderInfo | LegacyHeaderInfo | None = None
    error: BinlogError | None = None
    blank: bool = False
    file_size: int = 0
    end: int = HEADER_SIZE
    end_index: int = 0
    end_asqn: int = -1
    end_timestamp_us: int = 0
    predecessor_timestamp_us: int | None = None
    start_asqn: int = -1

    @property
    def version2(self) -> SegmentHeaderInfo | None:
        return self.header if isinstance(self.header, SegmentHeaderInfo) else None


def read_facts(storage: Storage, segment: SegmentFile, options: ReadOptions) -> SegmentFacts | None:
    facts = SegmentFacts(segment)
    try:
        with storage.open(
            segment.url, segment.compression, max_decompressed=options.max_decompressed, listed_size=segment.size
        ) as source:
            data = source.read_at(0, HEADER_SIZE)
            facts.file_size = UNKNOWN_SIZE if segment.compression else source.size()
    except MissingFileError:
        if options.ignore_missing:
            return None
        raise
    except CorruptFileError as error:
        facts.error = error.located(log=segment.log)  # a compressed segment that cannot be unpacked
        return facts
    facts.blank = len(data) < HEADER_SIZE or not any(data)  # interim: replaced by the walk's blank test
    try:
        facts.header = parse_header(data, log=segment.log)
    except BinlogError as error:
        facts.error = error.located(path=segment.url)
    return facts


def settle_end(storage: Storage, facts: SegmentFacts, successor: SegmentFacts | None, options: ReadOptions) -> None:
    """The segment end and the state there (spec 6.1 and 8.4)."""
    header = facts.version2
    if header is None:
        return
    commit = header.commit
    facts.end, facts.end_index = commit.commit_offset, commit.next_index
    facts.end_asqn, facts.end_timestamp_us = commit.last_asqn, commit.last_timestamp_us
    successor_header = successor.version2 if successor is not None else None
    if commit.closed or successor_header is None:
        return
    with storage.open(facts.file.url, facts.file.compression, max_decompressed=options.max_decompressed) as source:
        scan = tail_walk(source, log=header.log, commit=commit, stop_before_index=successor_header.base_index)
    facts.end, facts.end_index = scan.end, scan.next_index
    facts.end_asqn, facts.end_timestamp_us = scan.last_asqn, scan.last_timestamp_us


def _issue(error: BinlogError, file: str, *, file_level: bool, skipped: int, values: dict[str, Any]) -> IssueItem:
    return IssueItem(Damage.from_error(error, bytes_skipped=skipped, next_index=None), file, file_level, values)


def _whole(facts: SegmentFacts, values: dict[str, Any]) -> RangeItem:
    """The segment's committed bytes as one range; ``cut`` may split it."""
    header = facts.version2
    assert header is not None
    return RangeItem(
        facts.file,
        SegmentRange(
            log=header.log,
            base_index=header.base_index,
            segment_end=facts.end,
            file_size=facts.file_size,
            start=HEADER_SIZE,
            stop=facts.end,
            exact_start=True,
            exact_stop=True,
            start_index=header.base_index,
            start_asqn=facts.start_asqn,
            end_index=facts.end_index,
            slot_offset=SLOT_OFFSETS[header.commit.generation % 2],
        ),
        values,
    )


def plan_log(
    storage: Storage,
    segments: dict[int, SegmentFacts],
    *,
    options: ReadOptions,
    values: Callable[[SegmentFile], dict[str, Any]],
    keep: Callable[[SegmentFacts], bool],
) -> list[Item]:
    """The items of one log directory, with its chain checked (spec 8.6)."""
    # A blank segment without a successor never held a record (spec 3.5, R-7).
    present = {log: facts for log, facts in segments.items() if not (facts.blank and log + 1 not in segments)}
    logs = sorted(present)
    for log in logs:
        settle_end(storage, present[log], present.get(log + 1), options)
    items: list[Item] = []
    legacy: list[tuple[SegmentFile, LegacyHeaderInfo]] = []
    legacy_first = 1
    previous: SegmentFacts | None = None
    expected: int | None = 1  # the index after the previous segment, for a following version 1 run

    def flush_legacy() -> None:
        if legacy:
            items.append(LegacyItem(tuple(legacy), legacy_first, values(legacy[0][0])))
            legacy.clear()

    for log in logs:
        facts = present[log]
        directory = facts.file.directory
        if previous is not None:
            before = previous.version2
            expected_here = previous.end_index if before is not None else None
            problem = None
            if log != previous.file.log + 1:
                problem = ChainBrokenError(
                    f"segment {previous.file.log + 1} is missing but {log} exists",
                    path=directory,
                    log=previous.file.log + 1,
                    index=expected_here,
                )
            elif before is not None and facts.version2 is not None:
                if facts.version2.log_id != before.log_id:
                    problem = ChainBrokenError(
                        f"segment {log} belongs to another log (log id differs)",
                        path=facts.file.url,
                        log=log,
                        offset=0,
                        index=previous.end_index,
                    )
                elif facts.version2.base_index != previous.end_index:
                    problem = ChainBrokenError(
                        f"segment {log} starts at index {facts.version2.base_index}, "
                        f"the previous segment ends before {previous.end_index}",
                        path=facts.file.url,
                        log=log,
                        offset=0,
                        index=previous.end_index,
                    )
            if problem is not None:
                items.append(_issue(problem, directory, file_level=False, skipped=0, values=values(facts.file)))
            if before is not None:
                facts.predecessor_timestamp_us = (
                    before.commit.last_timestamp_us if log == previous.file.log + 1 else None
                )
                facts.start_asqn = previous.end_asqn
        if facts.error is not None:
            flush_legacy()
            skipped = facts.file.size if facts.file_size in (0, UNKNOWN_SIZE) else facts.file_size
            items.append(
                _issue(facts.error, facts.file.url, file_level=True, skipped=skipped, values=values(facts.file))
            )
            expected = None
        elif isinstance(facts.header, LegacyHeaderInfo):
            if not legacy:
                legacy_first = expected if expected is not None else 1
            legacy.append((facts.file, facts.header))
        else:
            flush_legacy()
            expected = facts.end_index
            if keep(facts) and min(facts.end, facts.file_size) > HEADER_SIZE:
                items.append(_whole(facts, values(facts.file)))
        previous = facts
    flush_legacy()
    return items


def plan_read(
    storage: Storage,
    files: Sequence[SegmentFile],
    options: ReadOptions,
    values: Callable[[SegmentFile], dict[str, Any]],
    keep: Callable[[SegmentFacts], bool],
) -> list[BinlogPartition]:
    """Every item of the read, bin-packed into partitions the way Spark packs files."""
    with ThreadPoolExecutor(HEADER_READERS) as pool:
        read = list(pool.map(lambda segment: read_facts(storage, segment, options), files))
    logs: dict[str, dict[int, SegmentFacts]] = defaultdict(dict)
    for facts in read:
        if facts is not None:
            logs[facts.file.directory].setdefault(facts.file.log, facts)  # .dat sorts before .dat.gz
    items: list[Item] = []
    for directory in sorted(logs):
        items.extend(plan_log(storage, logs[directory], options=options, values=values, keep=keep))
    if not options.report and options.ignore_corrupt:
        items = [item for item in items if not (isinstance(item, IssueItem) and item.file_level)]
    return cut(items, options)


def _cost(item: Item, open_cost: int) -> int:
    """What an item weighs in a task: its bytes, and at least the cost of opening a file."""
    return max(item.weight, open_cost) if item.weight else 0


def _piece(item: RangeItem, start: int, stop: int) -> RangeItem:
    whole = item.range
    span = dataclasses.replace(
        whole,
        start=start,
        stop=stop,
        exact_start=whole.exact_start and start == whole.start,
        exact_stop=whole.exact_stop and stop == whole.stop,
    )
    return RangeItem(item.file, span, item.partition_values)


def task_count(total: int, options: ReadOptions) -> int:
    """Spark's rule for files: tasks of at most ``maxPartitionBytes``, and ``minPartitions`` of them
    as long as each still weighs ``openCostInBytes``.

    When that makes more tasks than ``minPartitions`` (the cores, by
    default), the count is rounded up to whole waves of ``minPartitions``:
    three tasks on two cores leave one core idle while the last one runs,
    four smaller ones do not.
    """
    open_cost = max(options.open_cost, 1)
    cores = options.min_partitions
    count = max(1, -(-total // max(options.max_partition_bytes, 1)), min(cores, total // open_cost))
    if cores > 1 and count > cores:
        waves = -(-count // cores) * cores
        if total // waves >= open_cost:
            count = waves
    return count


def cut(items: Sequence[Item], options: ReadOptions) -> list[BinlogPartition]:
    """The items laid end to end in log order, cut into tasks of equal cost.

    A cut that falls inside an uncompressed segment of at least
    ``openCostInBytes`` splits it into byte ranges there (the range after the
    cut starts at the next record boundary, spec 10.5); any other item goes
    whole to the task in which it starts. Equal tasks, rather than Spark's
    packing of split files, keep every core busy to the end: a log of one
    and a half segments on two cores is two tasks, not three.
    """
    open_cost = max(options.open_cost, 1)
    total = sum(_cost(item, open_cost) for item in items)
    tasks = task_count(total, options)
    partitions: list[list[Item]] = [[] for _ in range(tasks)]
    task, position = 0, 0

    def task_end(number: int) -> int:
        return (number + 1) * total // tasks

    for item in items:
        cost = _cost(item, open_cost)
        while task < tasks - 1 and task_end(task) <= position:
            task += 1
        if isinstance(item, RangeItem) and item.file.compression is None and item.weight >= open_cost:
            start, end = item.range.start, min(item.range.stop, item.range.readable_end)
            while task < tasks - 1 and task_end(task) < position + cost:
                at = item.range.start + (task_end(task) - position) * (end - item.range.start) // cost
                if at > start:
                    partitions[task].append(_piece(item, start, at))
                    start = at
                task += 1
            partitions[task].append(_piece(item, start, item.range.stop))
        else:
            partitions[task].append(item)
        position += cost
    return [BinlogPartition(chosen) for chosen in partitions if chosen]
