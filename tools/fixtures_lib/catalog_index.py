"""The sparse index (spec index.md, section 18, format revision 2.1): good, missing, stale, torn, flipped, garbage
and lying indexes beside the segments they claim to describe, read in full, by seeks and in planned splits.

An index is never authoritative (R-47): whatever the state of the ``.idx`` files, a reader returns exactly
the records, and reports exactly the damage, that it would without them (R-33). Every case here therefore
expects the answer the same log gives without any index, stated from the records the workload wrote, and a
testee that ignores ``.idx`` files passes them all.

The variants derive from one log with good indexes (``index_good``) by one change to its index files each;
the lies have valid checksums, so that only the index check or the entry check of spec 18.5 can refuse
them. Two logs of logs (payloads that hold whole records of the same log) carry the lies that only one part
of those checks catches: entries moved onto records embedded in payloads, which only the landing walk of the
entry check refuses; and a stale index whose entries land on one another inside one payload, which only the
index check's comparison of ``segment_end`` and ``end_index`` with the segment refuses.

Every case is ``since`` spec 2.1. Full reads are ``must`` (R-33 holds for every reader; ``may`` for a
compressed segment, which a reader may read, protocols 2.6); planned splits are ``must`` for a testee that
plans splits (capability ``split_plan``: R-27 and R-40, and R-47 when it plans them with an index); seeks are
``may`` (capability ``seek``, R-44 and R-47). Planned splits are read only where the answer does not depend
on where a planner cuts: on the logs of logs, a planner without an index may cut inside a payload that holds
valid records, and R-40 then lets it answer ``ambiguous_split``.
"""

from __future__ import annotations

import gzip
import itertools
from dataclasses import dataclass, replace

from openbinlog import encode_record
from openbinlog._crc import masked_crc32c
from openbinlog._format import segment_name
from openbinlog._sparse_index import IndexEntryInfo

from .bases import indexed_log
from .builder import OTHER_LOG_ID, T0, TICK, LogBuilder, RecordFact, seeded_bytes
from .catalog import Catalog
from .indexes import (
    SegmentState,
    entries,
    entries_of,
    entry_offset,
    forge,
    header,
    idx,
    index_file,
    published_state,
    state_at,
)
from .model import SINCE_2_1, Fixture, accept, error, records, reject
from .mutations import Mutation

INTERVAL = 128
FULL = ["R-33", "R-47"]
SEEK = ["R-33", "R-44", "R-47"]
PLAN = ["R-27", "R-33", "R-40", "R-47"]
SPLIT = ["R-27", "R-33", "R-47"]
COMPRESSED = ["R-43"]


@dataclass(frozen=True)
class Reads:
    """How a fixture is read besides from its start: seeks by index and by time (name, target), planned splits
    (log, parts), and split reads of given byte ranges."""

    from_index: tuple[tuple[str, int], ...] = ()
    since_us: tuple[tuple[str, int], ...] = ()
    plans: tuple[tuple[int, int], ...] = ()
    splits: tuple[tuple[str, int, int, int], ...] = ()  # (name, log, start, stop): a split read [start, stop)
    requires: tuple[str, ...] = ()

    def plus(self, other: Reads) -> Reads:
        return Reads(
            self.from_index + other.from_index,
            self.since_us + other.since_us,
            self.plans + other.plans,
            self.splits + other.splits,
            self.requires + other.requires,
        )


def add(cat: Catalog) -> None:
    _indexed_log_variants(cat)
    _log_of_logs(cat)
    _copied_records(cat)


def _read_all(cat: Catalog, fixture: Fixture, facts: list[RecordFact], reads: Reads) -> None:
    """The cases of one fixture: read from the start, each seek, each planned split; every expectation the
    answer without an index: the records ``facts`` holds from the target on, or a segment's records."""
    needs = list(reads.requires)
    rules = COMPRESSED if "compressed" in needs else []
    what = fixture.description
    # Reading compressed segments is what the spec permits (protocols 2.6): such a full read is `may`.
    level = "may" if needs else "must"
    cat.read(
        f"{level}.reader.index.{fixture.id.removeprefix('index_')}",
        fixture,
        accept(records(facts)),
        FULL + rules,
        description=f"{what}: read from the start, every record as without any index",
        parser=not needs,
        requires=needs,
        since=SINCE_2_1,
    )
    name = fixture.id.removeprefix("index_")
    for label, n in reads.from_index:
        cat.read(
            f"may.reader.index.{name}_from_index_{label}",
            fixture,
            accept(records([fact for fact in facts if fact.index >= n])),
            SEEK + rules,
            description=f"{what}: from index {n}, the records as without any index",
            start={"from_index": str(n)},
            requires=needs,
            since=SINCE_2_1,
        )
    for label, time_us in reads.since_us:
        cat.read(
            f"may.reader.index.{name}_since_{label}",
            fixture,
            accept(records([fact for fact in facts if fact.timestamp_us >= time_us])),
            SEEK + rules,
            description=f"{what}: since time {time_us}, the records as without any index",
            start={"since_us": str(time_us)},
            requires=needs,
            since=SINCE_2_1,
        )
    for label, log, first, stop in reads.splits:
        # No payload of these segments holds a valid record of the log: the split holds the records in the range.
        cat.read(
            f"must.reader.index.{name}_split_{label}",
            fixture,
            accept(records([fact for fact in facts if fact.log == log and first <= fact.offset < stop])),
            [*SPLIT, *rules],
            description=f"{what}: the split [{first}, {stop}) of segment {log}, its records as without any index",
            split=(log, first, stop),
            requires=needs,
            since=SINCE_2_1,
        )
    logs = {fact.log for fact in facts}
    for log, parts in reads.plans:
        of_log = [fact for fact in facts if fact.log == log]
        expected = accept(records(of_log)) if log in logs else reject([], error("io_error", log))
        answer = "each record once" if log in logs else "no segment file: io_error"
        cat.read(
            f"must.reader.index.{name}_plan_{log}",
            fixture,
            expected,
            PLAN + rules,
            description=f"{what}: segment {log} in up to {parts} planned splits read one after another, {answer}",
            plan=(log, parts),
            requires=needs,
            since=SINCE_2_1,
        )


# -- one log, many states of its indexes --------------------------------------------------


def _indexed_log_variants(cat: Catalog) -> None:
    log = indexed_log()
    facts = log.published()
    files = log.files()
    seg1, seg2, seg3 = (published_state(log.segment(n)) for n in (1, 2, 3))
    good1, good2 = index_file(seg1, INTERVAL), index_file(seg2, INTERVAL)
    listed1 = entries(seg1, INTERVAL)
    at1, at2 = entries_of(seg1, INTERVAL), entries_of(seg2, INTERVAL)
    stamp = {fact.index: fact.timestamp_us for fact in facts}

    # Seeks in segment 1, whose index every variant changes: at an entry's record and between entries, by
    # index and by time; where a lie would move the start of a walk that trusted it.
    entry_record = at1[2 * len(at1) // 3].index
    between = _between(at1, len(at1) // 3)
    time_between = stamp[_between(at1, len(at1) // 2)]
    time_entry = stamp[at1[len(at1) // 3].index]
    segment_1 = Reads(
        from_index=(("entry", entry_record), ("between_entries", between)),
        since_us=(("between_entries", time_between), ("entry", time_entry)),
        plans=((1, 4),),
    )
    segment_2 = Reads(
        from_index=(("segment_2", _between(at2, len(at2) // 2)),),
        since_us=(("segment_2", stamp[at2[len(at2) // 2].index]),),
        plans=((2, 3),),
    )

    base = cat.fixture(
        "index_base",
        "three segments (1 sealed, 2 finished by its successor but not sealed, 3 open) without index files",
        files,
        workload=log.trace,
        requirements=FULL,
    )
    _read_all(cat, base, facts, segment_1.plus(segment_2))
    good = cat.derive(
        "index_good",
        base,
        Mutation().create(idx(1), good1).create(idx(2), good2),
        "segments 1 and 2 with the indexes a builder following W-45 writes (interval 128)",
        defect=None,
        requirements=FULL,
    )
    # Split reads cut at entries' offsets: an entry that points to its record is that record's boundary b(x),
    # one that lies is not (spec 18.5, SPLIT with an index); either way b(x) is what the search of R-27 finds.
    at_entries = Reads(splits=(("at_entries", 1, at1[2].offset, at1[5].offset),))
    _read_all(cat, good, facts, segment_1.plus(segment_2).plus(at_entries))

    def variant(id: str, mutation: Mutation, description: str, *, faults: list[str], reads: Reads = segment_1) -> None:
        fixture = cat.derive(
            f"index_{id}",
            good,
            mutation,
            description,
            defect=description,
            faults=faults,
            requirements=FULL,
        )
        present = [fact for fact in facts if fact.log not in _removed_segments(mutation)]
        _read_all(cat, fixture, present, reads)

    variant("missing", Mutation().remove(idx(1)), "segment 1's index is missing (segment 2's is there)", faults=[])
    variant(
        "builder_crashed",
        Mutation().remove(idx(1)).create(f".{idx(1)}.5eed.tmp", good1[:100]),
        "a builder of segment 1's index crashed before its rename (spec 18.4 step 5): a temporary file"
        " .00000001.idx.5eed.tmp holding the first 100 bytes, no index",
        faults=["T1", "T3"],
    )

    # Stale: what the header says is not the segment as it is.
    prefix = state_at(log.segment(1), _end_of(seg1, 12))
    variant(
        "stale_prefix",
        Mutation().remove(idx(1)).create(idx(1), index_file(prefix, INTERVAL)),
        "segment 1's index is stale: built when the segment held its first 12 records (segment_end and end_index"
        " of then, entries true), before 6 more were appended and the segment was sealed",
        faults=["T11"],
    )
    info1 = header(seg1, INTERVAL, len(listed1))
    variant(
        "stale_segment_end",
        Mutation().write(idx(1), 0, forge(info1, [], segment_end=seg1.segment_end + 1)[:72]),
        f"segment 1's index says segment_end {seg1.segment_end + 1}, one byte beyond the segment's end"
        f" {seg1.segment_end} (header checksum recomputed; entries true)",
        faults=["T11"],
    )
    variant(
        "stale_end_index",
        Mutation().write(idx(1), 0, forge(info1, [], end_index=seg1.end_index + 1)[:72]),
        f"segment 1's index says end_index {seg1.end_index + 1}, one more than the segment's {seg1.end_index}"
        " (header checksum recomputed; entries true)",
        faults=["T11"],
    )
    other = indexed_log(log_id=OTHER_LOG_ID, seed=2800)
    variant(
        "other_log",
        Mutation().remove(idx(1)).create(idx(1), index_file(published_state(other.segment(1)), INTERVAL)),
        "segment 1's index is the index of segment 1 of another log (another log_id, other records)",
        faults=["T12"],
    )

    # Torn, flipped, garbage: checksums or the file size tell.
    variant(
        "torn",
        Mutation().truncate(idx(1), entry_offset(6) + 17),
        f"segment 1's index cut inside entry 6: {entry_offset(6) + 17} of its {len(good1)} bytes",
        faults=["T3"],
    )
    variant(
        "torn_header",
        Mutation().truncate(idx(1), 40),
        "segment 1's index cut inside its header: 40 of its 72 bytes",
        faults=["T3"],
    )
    variant(
        "flipped_header",
        Mutation().write(idx(1), 67, bytes([good1[67] ^ 0x01])),
        f"one bit of segment 1's index header flipped (interval {INTERVAL} reads {INTERVAL ^ 1}): header_crc fails",
        faults=["T10"],
    )
    chosen_k = [entry.index for entry in listed1].index(entry_record)
    flip_at = entry_offset(chosen_k) + 15
    variant(
        "flipped_entry",
        Mutation().write(idx(1), flip_at, bytes([good1[flip_at] ^ 0x04])),
        f"one bit of the offset of entry {chosen_k} of segment 1's index flipped (the entry of record"
        f" {entry_record}): its entry_crc fails",
        faults=["T10"],
    )
    variant(
        "garbage",
        Mutation().remove(idx(1)).create(idx(1), seeded_bytes(2018, len(good1))),
        f"segment 1's index replaced by {len(good1)} bytes of garbage",
        faults=["T6"],
    )

    # Lies with valid checksums: entries that do not point where they say.
    def lie(id: str, changed: list[IndexEntryInfo], description: str, reads: Reads = segment_1) -> None:
        forged = forge(info1, changed)
        assert len(forged) == len(good1)
        mutation = Mutation().write(idx(1), 72, forged[72:])
        variant(id, mutation, f"{description} (entry checksums valid)", faults=[], reads=reads)

    lie(
        "lie_offset",
        [replace(entry, offset=entry.offset + 4) for entry in listed1],
        "every entry of segment 1's index moved 4 bytes off its record",
        segment_1.plus(Reads(splits=(("at_entries", 1, at1[2].offset + 4, at1[5].offset + 4),))),
    )
    lie(
        "lie_index",
        [replace(entry, index=entry.index + 1) for entry in listed1],
        "every entry of segment 1's index renumbered: the index of the record after its own",
    )
    shift = 5 * TICK
    retimed = [replace(entry, timestamp_us=entry.timestamp_us - shift) for entry in listed1]
    # A reader that trusted these times would start a seek by time after records it must return.
    for time_us in (time_between, time_entry):
        first = next(fact for fact in facts if fact.timestamp_us >= time_us)
        trusted = [entry for entry in retimed if entry.timestamp_us < time_us][-1]
        assert trusted.offset > first.offset, "the retimed lie must move a trusting seek past records"
    lie("lie_time", retimed, f"every entry of segment 1's index retimed {shift} us earlier than its record")

    # Index files beside no segment, or beside the last one, which is not finished.
    variant(
        "segment_removed",
        Mutation().remove(segment_name(1)),
        "segment 1 removed (as retention does), its index left behind: the log starts at segment 2",
        faults=[],
    )
    phantom = forge(header(seg3, INTERVAL, 0), [], log=4, base_index=seg3.end_index, end_index=seg3.end_index + 3)
    variant(
        "beyond_last_segment",
        Mutation().create(idx(4), phantom),
        f"an index 00000004.idx (no entries) of a segment 4 with base index {seg3.end_index}, which does not exist",
        faults=[],
        reads=segment_1.plus(Reads(from_index=(("beyond_last", seg3.end_index),), plans=((4, 2),))),
    )
    at3 = entries_of(seg3, INTERVAL)
    variant(
        "last_unfinished",
        Mutation().create(idx(3), index_file(seg3, INTERVAL)),
        "an index beside segment 3, the last, which is not finished: its header and entries describe the"
        " segment as it is now",
        faults=[],
        reads=segment_1.plus(Reads(from_index=(("segment_3", at3[-1].index),), plans=((3, 2),))),
    )

    # A compressed segment keeps its index, whose offsets are those of the uncompressed bytes (spec 18.4).
    compressed = cat.derive(
        "index_compressed",
        good,
        Mutation()
        .remove(segment_name(1))
        .create(f"{segment_name(1)}.gz", gzip.compress(files[segment_name(1)], 9, mtime=0)),
        "sealed segment 1 replaced by its gzip copy 00000001.dat.gz; its index, of the uncompressed bytes, kept",
        defect=None,
        requirements=FULL + COMPRESSED,
    )
    _read_all(
        cat,
        compressed,
        facts,
        Reads(
            from_index=(("entry", entry_record),),
            since_us=(("between_entries", time_between),),
            requires=("compressed",),
        ),
    )


def _between(at: list[RecordFact], k: int) -> int:
    """The index of a record between two entries, from entry ``k`` on: not itself an entry's record."""
    return next(first.index + 1 for first, then in itertools.pairwise(at[k:]) if then.index - first.index >= 2)


def _end_of(state: SegmentState, count: int) -> int:
    """Where the first ``count`` records of ``state`` end."""
    return state.records[count - 1].end


def _removed_segments(mutation: Mutation) -> set[int]:
    return {int(op["file"][:8]) for op in mutation.ops if op["op"] == "remove" and op["file"].endswith(".dat")}


# -- a log of logs: entries moved onto embedded records ------------------------------------------


def log_of_logs(count: int) -> LogBuilder:
    """One sealed segment of ``count`` records, then an open empty one: each payload is a whole, valid record
    of this log carrying the index and time of the record that holds it, so every embedded record passes
    every check a reader can make at its own offset."""
    log = LogBuilder()
    for index in range(1, count + 1):
        stamp = T0 + TICK * (index - 1)
        inner = seeded_bytes(3000 + index, 12 + (index * 7) % 50)
        log.write(encode_record(index, inner, timestamp_us=stamp), timestamp_us=stamp)
        if index % 5 == 0:
            log.publish()
    log.publish()
    log.cutover()
    return log


def _log_of_logs(cat: Catalog) -> None:
    log = log_of_logs(30)
    facts = log.published()
    segment = published_state(log.segment(1))
    listed = entries(segment, INTERVAL)
    picked = entries_of(segment, INTERVAL)
    # Seeks at an entry's index: a reader that trusted an entry moved onto the embedded record of that index
    # would return the embedded record first.
    reads = Reads(
        from_index=(("entry", picked[len(picked) // 3].index), ("later_entry", picked[2 * len(picked) // 3].index)),
        since_us=(("between_entries", picked[len(picked) // 2].timestamp_us + 1),),
    )
    base = cat.fixture(
        "index_log_of_logs",
        "a log of logs: segment 1 sealed, each of its 30 payloads a whole valid record of this log with the index"
        " and time of the record holding it; no index",
        log.files(),
        workload=log.trace,
        requirements=FULL,
    )
    _read_all(cat, base, facts, reads)
    good = cat.derive(
        "index_log_of_logs_good",
        base,
        Mutation().create(idx(1), index_file(segment, INTERVAL)),
        "the log of logs with the index of segment 1 (interval 128)",
        defect=None,
        requirements=FULL,
    )
    _read_all(cat, good, facts, reads)
    starts = [entry.offset + 40 for entry in listed]
    moved = [
        replace(entry, offset=start, span_crc=masked_crc32c(segment.data[start:stop]))
        for entry, start, stop in zip(listed, starts, [*starts[1:], segment.segment_end], strict=True)
    ]
    forged = forge(header(segment, INTERVAL, len(moved)), moved)
    embedded = cat.derive(
        "index_log_of_logs_embedded",
        good,
        Mutation().write(idx(1), 72, forged[72:]),
        "every entry of the log of logs' index moved 40 bytes onto the record embedded in the payload of the"
        " record it named: same index, same time, a whole valid record there (all checksums valid)",
        defect="every index entry points to a record embedded in a payload, not to a record of the segment",
        requirements=FULL,
    )
    _read_all(cat, embedded, facts, reads)


# -- a stale index that lands inside a payload ---------------------------------------------------

COPIED = range(7, 13)  # the records whose bytes the final record 6 holds


def copied_records_logs() -> tuple[LogBuilder, LogBuilder]:
    """Segment 1 as it was when its stale index was built, and as it finished.

    Then: records 1 to 12 (6 to 12 written beyond the commit point). As it finished: records 1 to 5, record 6
    whose payload is record 6's payload followed by a copy of the bytes of records 7 to 12 of then (a log of
    logs), records 7 to 20 written later with other payloads, sealed; segment 2 open with two records. Each
    copy lies at the offset its record had, with its index and time: a walk from one copy lands on the next.
    """
    then, now = LogBuilder(), LogBuilder()
    first = [seeded_bytes(4000 + n, 30 + 9 * n) for n in range(1, 6)]
    then.batch(*first)
    now.batch(*first)
    for n in range(6, 13):
        then.write(seeded_bytes(4000 + n, 20 + 6 * n))
    old = then.segment(1)
    six = old.records[5]
    copy = bytes(old.data[six.end : old.records[11].end])
    now.write(six.payload + copy, timestamp_us=six.timestamp_us)
    now.publish()
    for n in range(7, 21):
        now.write(seeded_bytes(4100 + n, 25 + (n * 13) % 70), timestamp_us=T0 + TICK * (100 + n))
        if n % 4 == 0:
            now.publish()
    now.publish()
    now.cutover()
    now.batch(*(seeded_bytes(4200 + n, 40) for n in range(2)))
    return then, now


def _copied_records(cat: Catalog) -> None:
    then, now = copied_records_logs()
    facts = now.published()
    stale_state = state_at(then.segment(1), then.segment(1).records[11].end)
    stale = index_file(stale_state, 100)
    picked = entries_of(stale_state, 100)
    copies = [entry for entry in picked if entry.index in COPIED]
    # An entry among the copies whose predecessor is a copy too: the landing walk from it reaches it.
    landing = next(
        entry for previous, entry in itertools.pairwise(picked) if previous.index in COPIED and entry in copies
    )
    final = published_state(now.segment(1))
    assert (stale_state.segment_end, stale_state.end_index) != (final.segment_end, final.end_index)
    assert all(final.data[entry.offset : entry.end] == entry.encode() for entry in copies)
    reads = Reads(
        from_index=(("copied_entry", landing.index),),
        since_us=(("copied_entry", landing.timestamp_us + 1),),
    )
    base = cat.fixture(
        "index_copied_records",
        "segment 1 sealed with 20 records, record 6's payload holding a copy of the bytes of six records of this"
        " log numbered 7 to 12, each at the offset it had when the segment held them; no index",
        now.files(),
        workload=now.trace,
        requirements=FULL,
    )
    _read_all(cat, base, facts, reads)
    with_stale = cat.derive(
        "index_copied_records_stale",
        base,
        Mutation().create(idx(1), stale),
        "segment 1 with a stale index (interval 100), built when its records 6 to 12 were those that record 6"
        " now holds a copy of: its entries of records 7 to 12 point into record 6's payload, and a walk from one"
        " lands on the next",
        defect=f"a stale index: segment_end {stale_state.segment_end} and end_index {stale_state.end_index}, not"
        f" the segment's {final.segment_end} and {final.end_index}",
        faults=["T11"],
        requirements=FULL,
    )
    _read_all(cat, with_stale, facts, reads)
