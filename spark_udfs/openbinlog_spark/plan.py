"""Planning a read on the driver: segment facts from headers, the chain, pruning, splits, bin-packing.

Every format rule applied here is ``openbinlog.walk``'s: the blank test,
the header checks, the segment end (which walks the tail of a segment that
is open while its successor exists, spec 8.4), the chain rule, and the index
and entry checks of a sparse index (spec 18.5, through ``indexes``). Damage
they reveal (a bad header, a broken chain) becomes an ``IssueItem`` that
the executors turn into a row or an error like any other damage, so every
mode treats it the same way.

A segment header that fails its checks ends the log's walk (spec readers
10.4, NEXT of 10.2.2): nothing above it is planned. Where the segment below
it is read, its END checks that header first (protocols 8.4 step 1), so its
walk reports it, at its commit point or at its first damage, and it is read
in one piece to stop there; otherwise an ``IssueItem`` reports it. Each task
checks the headers of the segments planned below its own again (reading those
whose files changed since planning checked them sealed, ``RangeItem.checked``),
and the successor's at END: a header that fails since planning ends the walk
there as well (``RangeItem.segments``, ``reports_from``).

A finished segment with a usable index is cut at checked entries, record
boundaries a payload cannot fake; and when the source is given bounds of the
rows a query can match, its read is narrowed to the checked entries around
them. Without a usable index a segment is planned as if none existed.
"""

from __future__ import annotations

import dataclasses
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import InputPartition

from openbinlog import Damage
from openbinlog._format import HEADER_SIZE
from openbinlog._segment import LegacyHeaderInfo, SegmentHeaderInfo
from openbinlog.errors import BinlogError
from openbinlog.walk import (
    BytesSource,
    SegmentEnd,
    is_blank,
    is_last,
    legacy_end,
    next_segment,
    read_header,
    segment_end,
)

from .directory import PlannedDirectory
from .indexes import Cut, checked_cuts, narrowed_span
from .listing import SegmentFile
from .options import ReadOptions
from .pruning import RowBounds
from .storage import CorruptFileError, MissingFileError, Stamp, Storage, is_local
from .walk import ChainCheck, SegmentRange

UNKNOWN_SIZE = 2**63 - 1
HEADER_READERS = 16


@dataclass(frozen=True, slots=True)
class HoleCheck:
    """What the first range of a segment needs to tell, when the segment is gone at read time and missing files
    are ignored, a hole in the chain from a log that now starts above it or ends below it: the segment below,
    as planned, and the highest segment planned."""

    below: SegmentFile
    last: int


@dataclass(frozen=True, slots=True)
class RangeItem:
    """A byte range of one version 2 segment.

    ``segments``: the segments of the log the listing shows, lowest first,
    a blank last one included (one tuple shared by the log's ranges): the
    task checks the headers of those up to its own again, and its
    successor's at END, since a header that fails ends the walk (spec
    readers 10.4). ``reports_from``: on the segment's first range only, the
    lowest segment whose header, failing when the task checks it, this range
    reports (up to its own segment); a header just above a segment whose
    walk reaches its commit point is reported there, by END. ``whole``: read
    in one piece and never narrowed, since the walk of the reference ends in
    it, at its commit point or its first damage, where END meets its
    successor's failing header. ``checked``: the stamps of the files of the
    segments (by log number, one mapping shared by the log's ranges) whose
    headers planning found sealed and passing: a task trusts that check for a
    segment below its own while the file is unchanged, since no protocol
    writes a sealed segment in place (spec protocols 2.5, 2.6, 6.2, 8.5), and
    reads the header of every other one again.
    """

    file: SegmentFile
    range: SegmentRange
    partition_values: dict[str, Any]
    hole: HoleCheck | None = None  # the segment's first range only, where a hole is possible: one report per hole
    segments: tuple[SegmentFile, ...] = ()
    reports_from: int | None = None
    whole: bool = False
    checked: Mapping[int, Stamp] = dataclasses.field(default_factory=dict)

    @property
    def weight(self) -> int:
        return max(min(self.range.stop, self.range.readable_end) - self.range.start, 0)


@dataclass(frozen=True, slots=True)
class LegacyItem:
    """A log that holds version 1 segments, read whole and in order by the reference walk (``LogWalk``):
    version 1 records are numbered by counting (spec B.5), so they cannot be split."""

    files: tuple[SegmentFile, ...]
    all_legacy: bool  # no version 2 segment: no record has a timestamp
    partition_values: dict[str, Any]

    @property
    def weight(self) -> int:
        return sum(segment.size for segment in self.files)


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
    """What the header and the segment end say about one segment."""

    file: SegmentFile
    header: SegmentHeaderInfo | LegacyHeaderInfo | None = None
    error: BinlogError | None = None
    blank: bool = False
    file_size: int = 0
    head: bytes = b""  # the header as planning read it
    segment_end: SegmentEnd | None = None
    predecessor_timestamp_us: int | None = None
    start_asqn: int = -1
    archive_error: BinlogError | None = None  # a compressed segment whose archive fails before its end
    stamp: Stamp | None = None  # of its file, where planning found its header sealed and passing, the file settled

    @property
    def version2(self) -> SegmentHeaderInfo | None:
        return self.header if isinstance(self.header, SegmentHeaderInfo) else None

    @property
    def end(self) -> int:
        return HEADER_SIZE if self.segment_end is None else self.segment_end.offset

    @property
    def end_index(self) -> int:
        return 0 if self.segment_end is None else self.segment_end.index

    @property
    def end_asqn(self) -> int:
        return -1 if self.segment_end is None else self.segment_end.last_asqn

    @property
    def end_timestamp_us(self) -> int:
        return 0 if self.segment_end is None else self.segment_end.last_timestamp_us


def read_facts(
    storage: Storage, segment: SegmentFile, options: ReadOptions, *, planned: bool = False
) -> SegmentFacts | None:
    """What the header of ``segment`` says, or why it fails its checks; None when the file is gone and missing
    files are ignored. ``planned``: a segment a plan listed, read again by a task (``Storage.open_planned``, which
    follows a plain file to the compressed copy that replaced it)."""
    facts = SegmentFacts(segment)
    # Taken before the header is read, and kept only where the file had settled then: a later change shows in it.
    stamp = None if planned else storage.stamp(segment.url) if is_local(segment.url) else segment.stamp
    now = time.time()
    try:
        opened = (
            storage.open_planned(segment.url, segment.compression, max_decompressed=options.max_decompressed)
            if planned
            else storage.open(
                segment.url, segment.compression, max_decompressed=options.max_decompressed, listed_size=segment.size
            )
        )
        with opened as source:
            facts.file_size = UNKNOWN_SIZE if segment.compression else source.size()
            facts.blank = is_blank(source)
            facts.head = source.read_at(0, HEADER_SIZE)
            try:
                facts.header = read_header(BytesSource(facts.head), segment.log)
            except BinlogError as error:
                facts.error = error.located(path=segment.url)
            sealed = isinstance(facts.header, SegmentHeaderInfo) and facts.header.commit.closed
            if stamp is not None and stamp.settled(now) and sealed and not facts.blank:
                facts.stamp = stamp
    except MissingFileError:
        if options.ignore_missing:
            return None
        raise
    except CorruptFileError as error:
        facts.error = error.located(log=segment.log)  # a compressed segment that cannot be unpacked
    return facts


def settle_end(storage: Storage, facts: SegmentFacts, successor: SegmentFacts | None, options: ReadOptions) -> None:
    """The segment end S and end index I_S (spec 6.1 and 8.4), by the walk's rule."""
    header, head = facts.header, BytesSource(facts.head)
    if isinstance(header, LegacyHeaderInfo):
        facts.header, facts.segment_end = legacy_end(head, facts.file.log)
        return
    if header is None:
        return
    following = None if successor is None else successor.header
    if header.commit.closed or following is None:
        facts.segment_end = segment_end(head, header, None)  # no tail walk: the header read tells it all
        return
    with storage.open(facts.file.url, facts.file.compression, max_decompressed=options.max_decompressed) as source:
        facts.segment_end = segment_end(source, header, following)


def _whole(facts: SegmentFacts, values: dict[str, Any]) -> RangeItem:
    """The segment's committed bytes as one range; ``cut`` may split it."""
    header = facts.version2
    assert header is not None
    assert facts.segment_end is not None
    return RangeItem(
        facts.file,
        SegmentRange(
            header=header,
            end=facts.segment_end,
            file_size=facts.file_size,
            start=HEADER_SIZE,
            stop=facts.end,
            exact_start=True,
            exact_stop=True,
            start_index=header.base_index,
            start_asqn=facts.start_asqn,
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
    """The items of one log directory, with its chain checked by the walk's rule (spec 8.6)."""
    # A blank last segment never held a record (spec 3.5, R-7).
    present = {log: facts for log, facts in segments.items() if not (facts.blank and is_last(log, list(segments)))}
    logs = sorted(present)
    if any(isinstance(facts.header, LegacyHeaderInfo) for facts in present.values()):
        legacy = all(isinstance(facts.header, LegacyHeaderInfo) for facts in present.values())
        # The walk of a log with version 1 segments sees every segment, blank ones included: a blank segment
        # above a version 1 leftover breaks the chain (legacy-v1 B.4).
        every = tuple(segments[log].file for log in sorted(segments))
        return [LegacyItem(every, legacy, values(present[logs[0]].file))]
    for log in logs:
        following = present.get(log + 1)
        settle_end(storage, present[log], following if following is not None and following.header else None, options)
    items: list[Item] = []
    listed = tuple(segments[log].file for log in sorted(segments))  # a blank last segment too: it is listed
    checked = {log: facts.stamp for log, facts in segments.items() if facts.stamp is not None}
    previous: SegmentFacts | None = None
    previous_item: int | None = None  # where the previous segment's range is in ``items``
    for log in logs:
        facts = present[log]
        kept: bool | None = None  # keep(facts), once asked
        if facts.error is not None:
            # A header that fails its checks ends the walk (spec readers 10.4): nothing above it is read.
            below = None if previous_item is None else items[previous_item]
            if previous_item is not None and isinstance(below, RangeItem) and below.file.log == log - 1:
                # END of the segment below checks it first (protocols 8.4 step 1): that walk reports it.
                items[previous_item] = dataclasses.replace(below, whole=True)
            else:
                items.append(_file_issue(facts, values))
            break
        before = None if previous is None else previous.version2
        if previous is not None and before is not None and previous.segment_end is not None:
            successor = facts.header if log == before.log + 1 else None
            boundary = next_segment(
                path=facts.file.directory,
                log=before.log,
                header=before,
                end=previous.segment_end,
                expected=previous.end_index,
                present=logs,
                successor=successor,
                successor_path=facts.file.url,
            )
            resume = facts.version2.base_index if facts.version2 is not None else None
            ends = boundary.next_log is None and boundary.error is None  # the log ends here for now
            facts.predecessor_timestamp_us = before.commit.last_timestamp_us if log == before.log + 1 else None
            facts.start_asqn = previous.end_asqn
            if previous_item is not None:
                # The walk of the previous segment checks the chain at its end, with its own expected
                # index: after damage with nothing to resume at, it lags the end index (spec 10.4).
                if not ends:
                    kept = keep(facts)  # a successor no range reads is looked for again when the check is made
                check = ChainCheck(
                    facts.file.directory, tuple(logs), successor, facts.file.url, resume, kept is not False
                )
                items[previous_item] = _with_chain(items[previous_item], check)
            elif boundary.error is not None:
                damage = Damage.from_error(boundary.error, bytes_skipped=0, next_index=resume)
                items.append(IssueItem(damage, facts.file.directory, False, values(facts.file)))
            if ends:
                break
        previous_item = None
        # An empty segment too: its walk makes the check of R-39 at C = 256.
        if kept if kept is not None else keep(facts):
            hole = None
            if previous is not None and previous.version2 is not None and log == previous.version2.log + 1 < logs[-1]:
                hole = HoleCheck(previous.file, logs[-1])
            whole = _whole(facts, values(facts.file))
            items.append(dataclasses.replace(whole, hole=hole, segments=listed, checked=checked))
            previous_item = len(items) - 1
        previous = facts
        if facts.archive_error is not None:
            # Its archive fails before its end: the walk ends there, after the records before the failure, which
            # its range returns, read whole; nothing above it is read (R-43, spec readers 10.4).
            if previous_item is not None:  # its range, read whole
                own = items[previous_item]
                assert isinstance(own, RangeItem)
                items[previous_item] = dataclasses.replace(own, whole=True)
            else:
                damage = Damage.from_error(facts.archive_error, bytes_skipped=0, next_index=None)
                items.append(IssueItem(damage, facts.file.url, True, values(facts.file)))
            break
    return items


def _with_chain(item: Item, check: ChainCheck) -> Item:
    assert isinstance(item, RangeItem)
    return dataclasses.replace(item, range=dataclasses.replace(item.range, chain=check))


def _file_issue(facts: SegmentFacts, values: Callable[[SegmentFile], dict[str, Any]]) -> IssueItem:
    """A segment that cannot be read at all: its header error, with 0 bytes skipped, as the reference's verify and
    the JVM source report it. No walk steps over a damaged header (spec readers 10.4), so no bytes of the segment
    were skipped by one, and of a compressed segment no more than its first 257 unpacked bytes are known (R-43):
    its file size counts packed bytes, never segment offsets. The walk ends there: nothing above it is read."""
    assert facts.error is not None
    damage = Damage.from_error(facts.error, bytes_skipped=0, next_index=None)
    return IssueItem(damage, facts.file.url, True, values(facts.file))


def plan_read(
    storage: Storage,
    files: Sequence[SegmentFile],
    options: ReadOptions,
    values: Callable[[SegmentFile], dict[str, Any]],
    keep: Callable[[SegmentFacts], bool],
    *,
    bounds: RowBounds | None = None,
) -> list[BinlogPartition]:
    """Every item of the read, bin-packed into partitions the way Spark packs files.

    ``bounds``: the rows the query can match; each whole segment with a
    usable index is then read only between the checked entries around them.
    """
    with ThreadPoolExecutor(HEADER_READERS) as pool:
        read = list(pool.map(lambda segment: read_facts(storage, segment, options), files))
    logs: dict[str, dict[int, SegmentFacts]] = defaultdict(dict)
    for facts in read:
        if facts is not None:
            logs[facts.file.directory].setdefault(facts.file.log, facts)  # .dat sorts before .dat.gz
    check_archives(storage, logs, options)
    items: list[Item] = []
    for directory in sorted(logs):
        items.extend(plan_log(storage, logs[directory], options=options, values=values, keep=keep))
    if not options.report and options.ignore_corrupt:
        items = [item for item in items if not (isinstance(item, IssueItem) and item.file_level)]
    if bounds:
        items = [
            narrowed(storage, item, bounds, options) if isinstance(item, RangeItem) and not item.whole else item
            for item in items
        ]
    return cut(with_reporters(items), options, lambda item, wanted: indexed_cuts(storage, item, wanted, options))


def check_archives(storage: Storage, logs: dict[str, dict[int, SegmentFacts]], options: ReadOptions) -> None:
    """Unpack each compressed version 2 segment below the last of its log to its end, as its walk will, keeping
    nothing (R-43): an archive that fails beyond what the header check unpacked ends the walk there, before any
    record of that segment (spec readers 10.4), so the segments after it, which other tasks read, must not be
    read at all. The one read of whole segments that planning makes; the last segment of a log is only read by
    its own range, after which nothing is read."""

    def check(facts: SegmentFacts) -> None:
        assert facts.file.compression is not None
        try:
            failed = storage.unpack_failure(
                facts.file.url, facts.file.compression, max_decompressed=options.max_decompressed
            )
        except MissingFileError:
            return  # gone since the listing: its range meets that as it meets any file gone
        facts.archive_error = None if failed is None else failed.located(log=facts.file.log)

    wanted = [
        facts
        for segments in logs.values()
        if not any(isinstance(facts.header, LegacyHeaderInfo) for facts in segments.values())  # read whole, in order
        for log, facts in segments.items()
        if facts.file.compression is not None and facts.version2 is not None and log < max(segments)
    ]
    if wanted:
        with ThreadPoolExecutor(HEADER_READERS) as pool:
            list(pool.map(check, wanted))


def with_reporters(items: Sequence[Item]) -> list[Item]:
    """The items, each segment's range told which failing headers it reports (``RangeItem.reports_from``).

    A header failing when a task checks it is reported once, where the
    reference's walk meets it: by END of the segment just below it, whose
    range reaches its commit point; otherwise by the first range the plan
    has above it, since no range is read in between.
    """
    lowest: dict[str, int] = {}  # of each log: the lowest segment the next range reports
    chosen: list[Item] = []
    for item in items:
        if isinstance(item, RangeItem) and item.segments:
            directory = item.file.directory
            chosen.append(dataclasses.replace(item, reports_from=lowest.get(directory, item.segments[0].log)))
            lowest[directory] = item.file.log + (2 if item.range.walks_over_commit else 1)
        else:
            chosen.append(item)
    return chosen


def _directory(storage: Storage, item: RangeItem, options: ReadOptions) -> PlannedDirectory:
    return PlannedDirectory(storage, [item.file], options)


def narrowed(storage: Storage, item: RangeItem, bounds: RowBounds, options: ReadOptions) -> RangeItem:
    """``item`` read only between the checked entries around the rows ``bounds`` allows (spec 18.5)."""
    span = narrowed_span(_directory(storage, item, options), item.file.log, item.range, bounds)
    return item if span is item.range else dataclasses.replace(item, range=span)


def indexed_cuts(
    storage: Storage, item: RangeItem, wanted: Sequence[int], options: ReadOptions
) -> list[Cut | None] | None:
    """The checked entries to cut ``item`` at instead of the offsets ``wanted`` (spec 18.5, SPLIT with an
    index); None without a usable index."""
    return checked_cuts(_directory(storage, item, options), item.file.log, item.range, wanted)


def _cost(item: Item, open_cost: int) -> int:
    """What an item weighs in a task: its bytes, and at least the cost of opening a file."""
    return max(item.weight, open_cost) if item.weight else 0


@dataclass(frozen=True, slots=True)
class _Bound:
    """Where a piece of a range starts or stops: a checked index entry (``index`` known) or an arbitrary offset,
    where the walk searches for the next boundary (spec 10.5)."""

    offset: int
    index: int | None = None


def _piece(item: RangeItem, start: _Bound, stop: _Bound) -> RangeItem:
    whole = item.range
    first, last = start.offset == whole.start, stop.offset == whole.stop
    span = dataclasses.replace(
        whole,
        start=start.offset,
        stop=stop.offset,
        exact_start=whole.exact_start if first else start.index is not None,
        exact_stop=whole.exact_stop if last else stop.index is not None,
        start_index=whole.start_index if first or start.index is None else start.index,
        start_asqn=whole.start_asqn if first else -1,  # a walk from an entry knows no previous asqn (A := -1)
        narrowed=whole.narrowed and last,
        opens=whole.opens and first,
    )
    return dataclasses.replace(
        item,
        range=span,
        hole=item.hole if first else None,
        reports_from=item.reports_from if first else None,
    )


def task_count(total: int, options: ReadOptions) -> int:
    """Spark's rule for files: tasks of at most ``maxPartitionBytes``, and ``minPartitions`` of them
    as long as each still weighs ``openCostInBytes``.

    When that makes more tasks than ``minPartitions`` (the cores, by
    default), the count is rounded up to whole waves of ``minPartitions``:
    three tasks on two cores leave one core idle while the last one runs,
    four smaller ones do not. ``maxPartitionNum``, when given, caps the
    count, as Spark's rescales its split files to it.
    """
    open_cost = max(options.open_cost, 1)
    cores = options.min_partitions
    count = max(1, -(-total // max(options.max_partition_bytes, 1)), min(cores, total // open_cost))
    if cores > 1 and count > cores:
        waves = -(-count // cores) * cores
        if total // waves >= open_cost:
            count = waves
    return count if options.max_partitions is None else min(count, options.max_partitions)


Snap = Callable[[RangeItem, Sequence[int]], list[Cut | None] | None]


def cut(items: Sequence[Item], options: ReadOptions, snap: Snap | None = None) -> list[BinlogPartition]:
    """The items laid end to end in log order, cut into tasks of equal cost.

    A cut that falls inside an uncompressed segment of at least
    ``openCostInBytes`` splits it into byte ranges there (the range after the
    cut starts at the next record boundary, spec 10.5); any other item goes
    whole to the task in which it starts. Equal tasks, rather than Spark's
    packing of split files, keep every core busy to the end: a log of one
    and a half segments on two cores is two tasks, not three.

    ``snap`` moves the cuts of a segment with a usable index to checked
    entries (spec 18.5), where consecutive ranges meet exactly; it leaves
    out a cut with no entry after the previous one, so the range before it
    runs on into the next task.
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
        splits = isinstance(item, RangeItem) and item.file.compression is None and not item.whole
        if isinstance(item, RangeItem) and splits and item.weight >= open_cost:
            end = min(item.range.stop, item.range.readable_end)
            wanted: list[tuple[int, int]] = []  # (task, offset): where the tasks' ends fall in the range
            while task < tasks - 1 and task_end(task) < position + cost:
                wanted.append((task, item.range.start + (task_end(task) - position) * (end - item.range.start) // cost))
                task += 1
            snapped = snap(item, [at for _, at in wanted]) if snap is not None and wanted else None
            bounds = [_Bound(at) for _, at in wanted] if snapped is None else snapped
            start = _Bound(item.range.start)
            for (number, _), bound in zip(wanted, bounds, strict=True):
                if bound is not None and bound.offset > start.offset:
                    stop = _Bound(bound.offset, bound.index)
                    partitions[number].append(_piece(item, start, stop))
                    start = stop
            partitions[task].append(_piece(item, start, _Bound(item.range.stop)))
        else:
            partitions[task].append(item)
        position += cost
    return [BinlogPartition(chosen) for chosen in partitions if chosen]
