"""Reading one byte range of a segment (spec 10.5): splits [s, t) and their boundaries.

A split returns exactly the records whose offset lies in [s, t); the catalog
states them from the offsets the workload wrote. The segment holds records of
many sizes, a payload that ends with a whole valid record of the same log
(a false boundary the continuity check must refuse) and an unpublished record
beyond the commit point, which no split may return (R-15).

A second segment holds payloads that end with whole valid records of the same
log that the continuity check cannot refuse: one carrying its container's own
index (a log of logs: the split stop rule turns it into ``ambiguous_split``)
and two carrying the segment's end index and the one after it (not boundaries:
the search is bounded above by the end index).
"""

from __future__ import annotations

from dataclasses import replace

from openbinlog import HEADER_SIZE
from openbinlog._crc import masked_crc32c

from .bases import basic_log, several_segments_log
from .builder import FRAME_DATA, T0, LogBuilder, RecordFact, seeded_bytes, slot_bytes
from .catalog import Catalog
from .catalog_damage import RECORD_CHECKS, SEG1
from .catalog_tolerant import assert_resumes_at
from .model import RETIRED_BY_2_0_2, Fixture, Json, accept, error, records, reject
from .mutations import Mutation

SPLIT = ["R-15", "R-27"]
U64_MAX = 2**64 - 1
EMBEDDED_INDEX = 11
SIZES = (17, 0, 250, 64, 5, 120, 33, 300, 1, 90, 48, 160)
WITH_ASQN = {3: 30, 8: 80, 12: 120}


def split_log() -> LogBuilder:
    """Twelve records of many sizes in four commits, then one more written but never published.

    Record 6's payload ends with the encoding of a valid record of this log
    carrying index 11, so a reader that tries only conditions 1 to 6 of
    section 10.4 would take it for a boundary.
    """
    log = LogBuilder()
    embedded = RecordFact(1, 0, EMBEDDED_INDEX, -1, T0, b"a record inside a payload").encode()
    for index, size in enumerate(SIZES, start=1):
        payload = seeded_bytes(200 + index, size)
        if index == 6:
            payload += embedded
        log.write(payload, asqn=WITH_ASQN.get(index, -1))
        if index in (2, 5, 9, 12):
            log.publish()
    log.write(b"written beyond the commit point, never published")
    return log


def add(cat: Catalog) -> None:
    log = split_log()
    facts = log.published()
    fixture = cat.fixture(
        "split_segment",
        "one segment of twelve records of many sizes, a record inside a payload, an unpublished record after them",
        log.files(),
        workload=log.trace,
        requirements=SPLIT,
    )
    commit = log.last.commit.commit_offset
    data = fixture.files[log.last.name]
    size = len(data)
    embedded_at = facts[5].offset + 40 + SIZES[5]

    def split(name: str, start: int, stop: int, description: str) -> list[RecordFact]:
        kept = [fact for fact in facts if start <= fact.offset < stop]
        following = [fact for fact in facts if fact.offset >= start]
        assert_resumes_at(data, start - 1, following[0].offset if following else commit, valid=(embedded_at,))
        cat.read(
            f"must.reader.split.{name}",
            fixture,
            accept(records(kept)),
            SPLIT,
            split=(1, start, stop),
            description=f"split [{start}, {stop}) of segment 1: {description}",
        )
        return kept

    fourth, sixth, seventh = facts[3], facts[5], facts[6]
    split("start_in_record_header", fourth.offset + 10, U64_MAX, "s inside record 4's header: from record 5 on")
    split("start_in_payload", fourth.offset + 50, U64_MAX, "s inside record 4's payload: from record 5 on")
    split("start_on_boundary", fourth.offset, U64_MAX, "s exactly at record 4: from record 4 on")
    split(
        "start_before_embedded_record",
        sixth.offset + 41,
        U64_MAX,
        "s inside record 6's payload, before the whole record that payload ends with: the continuity check"
        " refuses it, the split starts at record 7",
    )
    split("stop_in_record", 256, seventh.offset + 20, "t inside record 7: records 1 to 7")
    split("stop_on_boundary", 256, seventh.offset, "t exactly at record 7: records 1 to 6")
    split("start_after_last_record", facts[-1].offset + 1, U64_MAX, "s inside the last committed record: nothing")
    split(
        "start_beyond_commit_point",
        commit + 1,
        U64_MAX,
        "s inside the unpublished record beyond the commit point: nothing",
    )
    for parts in (1, 3, 7):
        bounds = [256 + (size - 256) * part // parts for part in range(parts + 1)]
        union: list[RecordFact] = []
        for part in range(parts):
            union += split(
                f"equal_{part + 1}_of_{parts}",
                bounds[part],
                bounds[part + 1],
                f"part {part + 1} of {parts} equal ranges over [256, file size); together they return every"
                " committed record exactly once",
            )
        if union != facts:
            raise ValueError(f"the {parts} equal splits do not return every record exactly once")

    several = several_segments_log()
    second = [fact for fact in several.published() if fact.log == 2]
    cat.read(
        "must.reader.split.sealed_segment",
        cat.fixtures["several_segments"],
        accept(records(second)),
        SPLIT,
        split=(2, 256, U64_MAX),
        description="the whole of sealed segment 2 of three: its records, with indexes from its base index",
    )
    _damage_around_splits(cat)
    _split_at_first_boundary(cat)
    _continuity_at_stop_boundary(cat)
    _first_asqn_after_stop(cat)
    _segments_without_boundaries(cat)
    _records_inside_payloads(cat)


def _damage_around_splits(cat: Catalog) -> None:
    """A split walks on past t, returning nothing, up to where the next split starts: damage there is its own."""
    r1, r2, r3, r4, r5 = basic_log().published()
    flipped = cat.fixtures["payload_bit_flip"]
    r3_damaged = error("checksum_mismatch", 1, r3.offset, r3.index)
    assert_resumes_at(flipped.files[SEG1], r3.offset, r4.offset)

    def damaged_split(name: str, fixture: str, start: int, stop: int, expected: Json, *, why: str) -> None:
        cat.read(
            f"must.reader.split.{name}",
            cat.fixtures[fixture],
            expected,
            [*SPLIT, *RECORD_CHECKS],
            split=(1, start, stop),
            description=f"split [{start}, {stop}) of segment 1: {why}",
        )

    damaged_split(
        "damage_after_stop",
        "payload_bit_flip",
        r1.offset,
        r2.offset - 1,
        reject(records([r1]), r3_damaged),
        why="t inside record 1; record 3, damaged, lies before the first boundary after t (record 4, where the next"
        " split starts): this split walks over record 2 without returning it and reports the damage",
    )
    damaged_split(
        "next_split_after_damage",
        "payload_bit_flip",
        r2.offset - 1,
        U64_MAX,
        accept(records([r4, r5])),
        why="the split after damage_after_stop starts at the first boundary after its s: record 4",
    )
    damaged_split(
        "damage_at_stop",
        "payload_bit_flip",
        r1.offset,
        r3.offset,
        reject(records([r1, r2]), r3_damaged),
        why="t exactly at record 3, which is damaged: the first boundary from t is record 4, so this split reports"
        " the damage",
    )
    commit = basic_log().last.commit.commit_offset
    damaged_split(
        "file_shorter_than_commit_point",
        "file_shorter_than_commit_point",
        r1.offset,
        U64_MAX,
        reject(records([r1, r2]), error("truncated", 1, r3.offset, r3.index)),
        why="the file ends inside record 3's payload, below the commit point: record 3 ends before the segment end"
        " S (step 4) and after the end of the file (step 5), so it is truncated, as for a sequential reader",
    )
    damaged_split(
        "commit_point_far_beyond_file",
        "commit_point_far_beyond_file",
        r5.offset,
        U64_MAX,
        reject(records([r5]), error("truncated", 1, commit, r5.index + 1)),
        why="the commit point lies far beyond the end of the file, after record 5: truncated at the first record the"
        " file cuts short, as for a sequential reader",
    )
    damaged_split(
        "slot_next_index_disagrees",
        "next_index_disagrees",
        r1.offset,
        U64_MAX,
        reject(records([r1, r2, r3, r4, r5]), error("bad_header", 1, 96, r5.index + 1)),
        why="the split walks up to the commit point, where its expected index (6) and the slot's next index (7)"
        " disagree (R-39)",
    )


def _split_at_first_boundary(cat: Catalog) -> None:
    """b(x) = 256 for every x <= 256, whatever the segment holds there (spec 10.5 step 1).

    A split from 256 therefore checks the record at 256 (RECORD step 1) even when the file was cut
    there, and stands at the commit point at once in an empty segment (C = 256), where it makes the
    check of R-39 (WALK step 2.1), as a sequential reader does.
    """
    basic = cat.fixtures["basic"]
    commit = basic_log().last.commit
    at, _ = slot_bytes(commit)

    def damaged(id: str, mutation: Mutation, defect: str, seq: Json, *, group: str, requirements: list[str]) -> Fixture:
        fixture = cat.derive(id, basic, mutation, defect, defect=defect, faults=["T11"], requirements=requirements)
        cat.read(f"must.reader.{group}.{id}", fixture, seq, requirements, description=f"{defect}: a sequential read")
        return fixture

    def split(name: str, fixture: Fixture, start: int, expected: Json, requirements: list[str], *, why: str) -> None:
        cat.read(
            f"must.reader.split.{name}",
            fixture,
            expected,
            [*SPLIT, *requirements],
            split=(1, start, U64_MAX),
            description=f"split [{start}, 2^64 - 1) of segment 1: {why}",
        )

    truncated = error("truncated", 1, HEADER_SIZE, 1)
    cut = damaged(
        "file_cut_at_header",
        Mutation().truncate(SEG1, HEADER_SIZE),
        "the file ends at 256, right after the header; the commit point is 1066",
        reject([], truncated),
        group="record",
        requirements=RECORD_CHECKS,
    )
    split(
        "file_cut_at_header",
        cut,
        HEADER_SIZE,
        reject([], truncated),
        RECORD_CHECKS,
        why="b(256) = 256 although no byte follows the header: the record check at 256 fails step 1 (truncated at"
        " 256 with the base index), as for a sequential reader; a split that found no boundary would lose the"
        " damage",
    )
    split(
        "file_cut_at_header_from_0",
        cut,
        0,
        reject([], truncated),
        RECORD_CHECKS,
        why="b(0) = 256: the same walk as from 256, truncated at 256",
    )
    split(
        "file_cut_at_header_after_256",
        cut,
        HEADER_SIZE + 1,
        accept([]),
        RECORD_CHECKS,
        why="the control: beyond 256 a boundary must be found, and no record lies in the file: no records, no error"
        " (the split from 256 reports the damage)",
    )
    r39 = ["R-39", "R-31", "R-32"]
    empty = damaged(
        "empty_segment_next_index_disagrees",
        Mutation()
        .truncate(SEG1, HEADER_SIZE)
        .write(SEG1, at, slot_bytes(replace(commit, commit_offset=HEADER_SIZE))[1]),
        "the records are gone and the active slot (checksum recomputed) says commit point 256 with next index 6:"
        " an empty segment whose slot expects five records below its commit point",
        reject([], error("bad_header", 1, at, 1)),
        group="slot",
        requirements=r39,
    )
    split(
        "empty_segment_next_index_disagrees",
        empty,
        HEADER_SIZE,
        reject([], error("bad_header", 1, at, 1)),
        r39,
        why="b(256) = 256 = C: the split's walk stands at the commit point at once and makes the check of R-39"
        " there: its expected index (the base index 1) is not the slot's next index 6, bad_header at the slot's"
        " offset with index 1, as for a sequential reader",
    )
    split(
        "empty_segment",
        cat.fixtures["empty_log"],
        HEADER_SIZE,
        accept([]),
        ["R-39"],
        why="the control of empty_segment_next_index_disagrees: the slot's next index is the base index, no records",
    )


def continuity_log() -> LogBuilder:
    """Four records in two commits: record 1 with asqn 10, record 2 with asqn 12, records 3 and 4 without."""
    log = LogBuilder()
    log.batch((b"one", 10), (b"two", 12))
    log.batch(b"three", b"four")
    return log


def _continuity_at_stop_boundary(cat: Catalog) -> None:
    """A split that lands on b(t) checks the record there by steps 7 and 8 of 4.3.1 (spec 10.5).

    The next split starts at b(t) with E := the index stored there and A := -1:
    it cannot see a resurrected record, a missing one or an asqn going back
    exactly at b(t). Only the split ending there knows the walk's E and A: it
    reports the break at b(t), after the records it returned.
    """
    log = continuity_log()
    r1, r2, r3, r4 = log.published()
    commit = log.last.commit
    slot_at, _ = slot_bytes(commit)
    base = cat.fixture(
        "split_continuity",
        "one segment of four records in two commits: record 1 with asqn 10, record 2 with asqn 12, records 3 and 4"
        " without an asqn",
        log.files(),
        workload=log.trace,
        requirements=SPLIT,
    )

    def slot(**changes: int) -> bytes:
        return slot_bytes(replace(commit, **changes))[1]

    def damaged(id: str, mutation: Mutation, defect: str, seq: Json, faults: list[str] | None = None) -> Fixture:
        fixture = cat.derive(id, base, mutation, defect, defect=defect, faults=faults, requirements=SPLIT)
        cat.read(f"must.reader.record.{id}", fixture, seq, RECORD_CHECKS, description=f"{defect}: a sequential read")
        return fixture

    def split(
        name: str, fixture: Fixture, start: int, stop: int, expected: Json, *, why: str, checks: bool = True
    ) -> None:
        cat.read(
            f"must.reader.split.{name}",
            fixture,
            expected,
            [*SPLIT, *RECORD_CHECKS] if checks else SPLIT,
            split=(1, start, stop),
            description=f"split [{start}, {stop}) of segment 1: {why}",
        )

    # The control: every record at b(t) continues the walk.
    for name, fact, why in (
        ("stop_at_record_continuing_asqn", r2, "b(t) = t = record 2, index 2 and asqn 12 above record 1's 10"),
        ("stop_at_record_without_asqn", r3, "b(t) = t = record 3, index 3 and no asqn after record 2's 12"),
    ):
        before = [other for other in (r1, r2, r3, r4) if other.offset < fact.offset]
        split(
            name,
            base,
            HEADER_SIZE,
            fact.offset,
            accept(records(before)),
            why=f"{why}: the record at b(t) passes steps 7 and 8 of 4.3.1 against the walk, the split accepts",
        )
    split(
        "stop_in_record_before_continuing_record",
        base,
        HEADER_SIZE,
        r1.offset + 1,
        accept(records([r1])),
        why="t inside record 1, b(t) = record 2, which continues the walk: record 1",
    )
    split(
        "start_at_record_continuing_asqn",
        base,
        r2.offset,
        U64_MAX,
        accept(records([r2, r3, r4])),
        why="the split after stop_at_record_continuing_asqn: records 2 to 4",
    )

    # A resurrected record (fault T12): a byte copy of record 2 right after it (indexes 1, 2, 2, 3, 4).
    copy = replace(r2, offset=r2.end)
    moved = [replace(fact, offset=fact.offset + r2.size) for fact in (r3, r4)]
    shifted, kept = r2.encode() + r3.encode() + r4.encode(), commit.commit_offset - r2.end
    resurrected = damaged(
        "split_resurrected_record",
        Mutation()
        .write(SEG1, r2.end, shifted[:kept])
        .append(SEG1, shifted[kept:])
        .write(SEG1, slot_at, slot(commit_offset=commit.commit_offset + r2.size)),
        "a byte copy of record 2 right after it, covered by the commit point (indexes 1, 2, 2, 3, 4)",
        reject(records([r1, r2]), error("index_discontinuity", 1, copy.offset, 3)),
        faults=["T12"],
    )
    split(
        "stop_at_resurrected_record",
        resurrected,
        HEADER_SIZE,
        copy.offset,
        reject(records([r1, r2]), error("index_discontinuity", 1, copy.offset, 3)),
        why="t at the copy of record 2, a boundary (b(t) = t): the walk expects index 3 there and finds 2, so the"
        " split reports index_discontinuity at b(t) with index 3, after records 1 and 2 (the next split, starting"
        " at the copy with E := 2, cannot tell)",
    )
    split(
        "stop_in_record_before_resurrected_record",
        resurrected,
        HEADER_SIZE,
        r2.offset + 1,
        reject(records([r1, r2]), error("index_discontinuity", 1, copy.offset, 3)),
        why="t inside record 2, b(t) = its copy: records 1 and 2, then index_discontinuity at the copy with index 3",
    )
    split(
        "start_at_resurrected_record",
        resurrected,
        copy.offset,
        U64_MAX,
        accept(records([copy, *moved])),
        why="the split after stop_at_resurrected_record starts at the copy of record 2 with E := 2: it returns it,"
        " then records 3 and 4 (the split before it reports the copy, so the pair does not silently return"
        " index 2 twice)",
        checks=False,
    )

    # A missing record: indexes 1, 2, 4, 5 (records 3 and 4 carry the next index), slot next_index 6.
    gap = [replace(r3, index=4), replace(r4, index=5)]
    index_gap = damaged(
        "split_index_gap",
        Mutation()
        .write(SEG1, r3.offset, b"".join(fact.encode() for fact in gap))
        .write(SEG1, slot_at, slot(next_index=6)),
        "index 3 missing: records 3 and 4 carry indexes 4 and 5 (checksums recomputed), the slot's next_index is 6",
        reject(records([r1, r2]), error("index_discontinuity", 1, r3.offset, 3)),
        faults=["T12"],
    )
    split(
        "stop_at_index_gap",
        index_gap,
        HEADER_SIZE,
        r3.offset,
        reject(records([r1, r2]), error("index_discontinuity", 1, r3.offset, 3)),
        why="t at the record carrying index 4, a boundary (b(t) = t): the walk expects index 3 there, so the split"
        " reports index_discontinuity at b(t) with index 3, after records 1 and 2 (the next split, starting there"
        " with E := 4, cannot tell)",
    )
    split(
        "stop_in_record_before_index_gap",
        index_gap,
        HEADER_SIZE,
        r2.offset + 1,
        reject(records([r1, r2]), error("index_discontinuity", 1, r3.offset, 3)),
        why="t inside record 2, b(t) = the record carrying index 4: records 1 and 2, then index_discontinuity at"
        " b(t) with index 3",
    )
    split(
        "start_at_index_gap",
        index_gap,
        r3.offset,
        U64_MAX,
        accept(records(gap)),
        why="the split after stop_at_index_gap starts at the record carrying index 4 with E := 4: indexes 4 and 5",
        checks=False,
    )

    # An asqn going back: record 2 carries asqn 5 after record 1's 10.
    back = replace(r2, asqn=5)
    asqn_back = damaged(
        "split_asqn_going_back",
        Mutation().write(SEG1, r2.offset, back.encode()).write(SEG1, slot_at, slot(last_asqn=5)),
        "record 2 carries asqn 5 after record 1's 10 (checksums recomputed; the slot's last_asqn is 5)",
        reject(records([r1]), error("asqn_not_increasing", 1, r2.offset, 2)),
    )
    split(
        "stop_at_asqn_going_back",
        asqn_back,
        HEADER_SIZE,
        r2.offset,
        reject(records([r1]), error("asqn_not_increasing", 1, r2.offset, 2)),
        why="t at record 2, a boundary (b(t) = t), whose asqn 5 is not above record 1's 10: the split reports"
        " asqn_not_increasing at b(t) with record 2's index, after record 1 (the next split, starting there with"
        " A := -1, cannot tell)",
    )
    split(
        "start_at_asqn_going_back",
        asqn_back,
        r2.offset,
        U64_MAX,
        accept(records([back, r3, r4])),
        why="the split after stop_at_asqn_going_back starts at record 2 with A := -1: records 2 to 4",
        checks=False,
    )


def look_log() -> LogBuilder:
    """Six records in two commits: record 1 with asqn 10, records 2 to 4 without, record 5 with asqn 15,
    record 6 without."""
    log = LogBuilder()
    log.batch((b"one: asqn 10", 10), b"two", b"three")
    log.batch(b"four", (b"five: asqn 15", 15), b"six")
    return log


def _first_asqn_after_stop(cat: Catalog) -> None:
    """LOOK (spec 10.2.2, R-27): a split that lands on b(t) holding an asqn, where the record there carries none,
    checks the first asqn after it.

    The splits that start among the records without an asqn start with A := -1 and meet no asqn before their
    own stop: only the split that ends before them holds the asqn READ-LOG compares the next asqn with. A split
    reader that checks only the record at b(t) returns every record of these logs in consecutive splits without
    an error, where a sequential read reports asqn_not_increasing: it passes the controls here and fails the
    cases that expect the report.
    """
    log = look_log()
    r1, r2, r3, r4, r5, r6 = log.published()
    commit = log.last.commit
    slot_at, _ = slot_bytes(commit)
    base = cat.fixture(
        "split_look",
        "one segment of six records in two commits: record 1 with asqn 10, records 2 to 4 without an asqn, record"
        " 5 with asqn 15, record 6 without",
        log.files(),
        workload=log.trace,
        requirements=SPLIT,
    )

    def split(
        name: str, fixture: Fixture, start: int, stop: int, expected: Json, *, why: str, checks: bool = True
    ) -> None:
        cat.read(
            f"must.reader.split.look_{name}",
            fixture,
            expected,
            [*SPLIT, *RECORD_CHECKS] if checks else SPLIT,
            split=(1, start, stop),
            description=f"split [{start}, {stop}) of segment 1: {why}",
        )

    split(
        "asqn_going_up",
        base,
        HEADER_SIZE,
        r2.offset,
        accept(records([r1])),
        why="the control: b(t) = t = record 2, without an asqn; the split holds A = 10 there and looks on over"
        " records 2 to 4 to record 5, whose asqn 15 is above 10: record 1, no error",
    )

    back = replace(r5, asqn=5)
    asqn_back = cat.derive(
        "split_look_asqn_going_back",
        base,
        Mutation()
        .write(SEG1, r5.offset, back.encode())
        .write(SEG1, slot_at, slot_bytes(replace(commit, last_asqn=5))[1]),
        "record 5 carries asqn 5 after record 1's 10, with records 2 to 4 without an asqn between them (checksums"
        " recomputed; the slot's last_asqn is 5)",
        defect="record 5 carries asqn 5 after record 1's 10",
        requirements=SPLIT,
    )
    failed = error("asqn_not_increasing", 1, r5.offset, r5.index)
    cat.read(
        "must.reader.record.split_look_asqn_going_back",
        asqn_back,
        reject(records([r1, r2, r3, r4]), failed),
        RECORD_CHECKS,
        description="record 5's asqn 5 is not above record 1's 10: a sequential read",
    )
    split(
        "stop_before_records_without_asqn",
        asqn_back,
        HEADER_SIZE,
        r2.offset,
        reject(records([r1]), failed),
        why="b(t) = t = record 2, without an asqn; the split holds A = 10 there and looks on over records 2 to 4"
        " to record 5, whose asqn 5 is not above 10: asqn_not_increasing at record 5 with index 5, after record 1"
        " (the splits that start at records 2 to 5 start with A := -1 and cannot tell)",
    )
    split(
        "stop_inside_record_before_records_without_asqn",
        asqn_back,
        HEADER_SIZE,
        r1.offset + 1,
        reject(records([r1]), failed),
        why="t inside record 1, b(t) = record 2: the same look, asqn_not_increasing at record 5 after record 1",
    )
    split(
        "stop_among_records_without_asqn",
        asqn_back,
        HEADER_SIZE,
        r4.offset,
        reject(records([r1, r2, r3]), failed),
        why="b(t) = t = record 4, without an asqn; the split holds A = 10 there: its look reaches record 5 at"
        " once, asqn_not_increasing there after records 1 to 3",
    )
    split(
        "split_without_asqn",
        asqn_back,
        r2.offset,
        r4.offset,
        accept(records([r2, r3])),
        why="the control: the split starts at record 2 with A := -1 and meets no asqn before b(t) = record 4,"
        " so it makes no look: records 2 and 3, no error",
        checks=False,
    )
    split(
        "split_holding_asqn_going_back",
        asqn_back,
        r4.offset,
        U64_MAX,
        accept(records([r4, back, r6])),
        why="the control: the split starts at record 4 with A := -1, so record 5's asqn 5 passes: records 4 to 6"
        " (the split that ends before record 2 reports it)",
        checks=False,
    )

    flip_at = r4.offset + 40
    damaged = cat.derive(
        "split_look_damage_before_asqn",
        asqn_back,
        Mutation().write(SEG1, flip_at, bytes([asqn_back.files[SEG1][flip_at] ^ 0x08])),
        "split_look_asqn_going_back with one bit of record 4's payload flipped",
        defect="one bit of record 4's payload flipped",
        faults=["T10"],
        requirements=SPLIT,
    )
    cat.read(
        "must.reader.record.split_look_damage_before_asqn",
        damaged,
        reject(records([r1, r2, r3]), error("checksum_mismatch", 1, r4.offset, r4.index)),
        RECORD_CHECKS,
        description="record 4's payload checksum fails before record 5's asqn is checked: a sequential read",
    )
    split(
        "damage_before_asqn",
        damaged,
        HEADER_SIZE,
        r2.offset,
        accept(records([r1])),
        why="b(t) = t = record 2 (record 3 after it is whole); the split holds A = 10 there and looks on: record 4"
        " fails its payload checksum, which ends the look without a report (the split that holds record 4"
        " reports it, and a sequential read resynchronises after it with A := -1, so record 5's asqn 5 is no"
        " error): record 1, no error",
    )
    split(
        "damage_reported_by_split_holding_it",
        damaged,
        r2.offset,
        U64_MAX,
        reject(records([r2, r3]), error("checksum_mismatch", 1, r4.offset, r4.index)),
        why="the split after look_damage_before_asqn: records 2 and 3, then checksum_mismatch at record 4",
    )


def _segments_without_boundaries(cat: Catalog) -> None:
    """A log number without a segment file, a blank last segment, a version 1 segment."""

    def split(
        name: str,
        fixture: str,
        log: int,
        expected: Json,
        requirements: list[str],
        *,
        why: str,
        until: str | None = None,
    ) -> None:
        cat.read(
            f"must.reader.split.{name}",
            cat.fixtures[fixture],
            expected,
            [*SPLIT, *requirements],
            split=(log, 256, U64_MAX),
            description=f"split [256, 2^64 - 1) of segment {log}: {why}",
            until=until,
        )

    split("missing_segment", "basic", 2, reject([], error("io_error", 2)), ["R-20"], why="no such segment file")
    split(
        "blank_last_segment",
        "blank_last_segment_zeros",
        2,
        accept([]),
        ["R-7"],
        why="a blank last segment holds no record",
        until=RETIRED_BY_2_0_2,  # 4096 zero bytes are longer than a header: not blank (suite 2.0.2)
    )
    split(
        "blank_last_segment_short_zeros",
        "blank_last_segment_short_zeros",
        2,
        accept([]),
        ["R-7"],
        why="a blank last segment (100 zero bytes) holds no record",
    )
    split(
        "zeroed_last_segment",
        "zeroed_last_segment",
        2,
        reject([], error("unsupported_version", 2, 4)),
        ["R-6", "R-7"],
        why="4096 zero bytes are longer than a header: not a blank last segment but a lost header (step 3)",
    )
    split(
        "short_last_segment",
        "short_last_segment",
        2,
        reject([], error("truncated", 2, 0)),
        ["R-6", "R-7"],
        why="100 bytes that are not all zero: not a blank last segment but a damaged header (step 1)",
    )
    split(
        "legacy_segment",
        "legacy_tv13",
        1,
        reject([], error("unsupported_version", 1, 4)),
        ["R-6"],
        why="version 1 records carry nothing to find a boundary by",
    )


def candidates(data: bytes, end: int) -> list[int]:
    """Every position that satisfies conditions 1 to 5 of spec 10.4 with S' = ``end`` (the index aside)."""
    found = []
    for at in range(HEADER_SIZE, end - 39):
        head = data[at : at + 40]
        if head[4] != FRAME_DATA or masked_crc32c(head[:36]) != int.from_bytes(head[36:], "big"):
            continue
        length = int.from_bytes(head[:4], "big")
        if length < 36 or at + 4 + length > end:
            continue
        if masked_crc32c(data[at + 40 : at + 4 + length]) == int.from_bytes(head[32:36], "big"):
            found.append(at)
    return found


NESTED_OWN = 3  # the record whose payload ends with a record carrying its own index


def nested_log() -> tuple[LogBuilder, RecordFact, RecordFact, RecordFact]:
    """Six records in three commits: record 3's payload ends with a whole valid record carrying index 3,
    record 5's with two carrying indexes 7 and 8 (7 is the active slot's next index, the segment's end index).

    Returns the log and the three embedded records (with the offsets where they lie in the segment).
    """
    log = LogBuilder()
    own = RecordFact(1, 0, NESTED_OWN, -1, T0 + 500, b"a record of this log inside the payload of record 3")
    future = [
        RecordFact(1, 0, 7, -1, T0 + 700, b"index 7: the next record this segment would get"),
        RecordFact(1, 0, 8, -1, T0 + 800, b"index 8, after it"),
    ]
    sizes = {1: 40, 2: 120, 3: 60, 4: 30, 5: 80, 6: 20}
    embedded: list[RecordFact] = []
    for index, size in sizes.items():
        payload = seeded_bytes(300 + index, size)
        inner = [own] if index == NESTED_OWN else future if index == 5 else []
        fact = log.write(payload + b"".join(record.encode() for record in inner))
        at = fact.offset + 40 + size
        for record in inner:
            embedded.append(RecordFact(1, at, record.index, record.asqn, record.timestamp_us, record.payload))
            at += record.size
        if index % 2 == 0:
            log.publish()
    return log, embedded[0], embedded[1], embedded[2]


def _records_inside_payloads(cat: Catalog) -> None:
    """Splits around payloads that hold whole valid records of the log which the continuity check passes."""
    log, own, future_7, future_8 = nested_log()
    facts = log.published()
    r1, r2, r3, r4, r5, r6 = facts
    commit = log.last.commit.commit_offset
    fixture = cat.fixture(
        "records_inside_payloads",
        "one segment of six records: record 3's payload ends with a whole valid record carrying index 3 (its"
        " container's own index, as in a log of logs), record 5's with two carrying indexes 7 and 8 (the"
        " active slot's next index 7 and the one after it)",
        log.files(),
        workload=log.trace,
        requirements=SPLIT,
    )
    data = fixture.files[SEG1]
    expected = sorted([fact.offset for fact in facts] + [own.offset, future_7.offset, future_8.offset])
    if candidates(data, commit) != expected:
        raise ValueError("records_inside_payloads: a valid record header lies where the catalog does not expect one")
    cat.read(
        "must.reader.valid.records_inside_payloads",
        fixture,
        accept(records(facts)),
        ["R-9", "R-15"],
        parser=True,
        description="a sequential read returns the six records: records inside payloads are payload bytes",
    )

    def split(name: str, start: int, stop: int, expected: Json, *, why: str) -> None:
        # the stop rule (ambiguous_split) concerns the splits that end inside the segment.
        cat.read(
            f"must.reader.split.{name}",
            fixture,
            expected,
            [*SPLIT, "R-40"] if name.startswith("stop_") else SPLIT,
            split=(1, start, stop),
            description=f"split [{start}, {stop}) of segment 1: {why}",
        )

    before_own = r3.offset + 41
    split(
        "stop_before_record_of_own_index",
        256,
        before_own,
        reject(records([r1, r2, r3]), error("ambiguous_split", 1, own.offset, own.index)),
        why="t inside record 3's payload, before the whole record carrying index 3 that the payload ends with:"
        " the search from t finds that record (index 3, and record 4 after it carries index 4), b(t) lies"
        " inside record 3, and the walk from record 3 steps over it to record 4: ambiguous_split at b(t) with"
        " the index stored there, after records 1 to 3 (the records of the range)",
    )
    split(
        "start_before_record_of_own_index",
        before_own,
        U64_MAX,
        accept(records([own, r4, r5, r6])),
        why="the split after stop_before_record_of_own_index starts at the boundary found from its s, the record"
        " inside record 3's payload, which a split cannot tell from a record of the segment: it returns it with"
        " index 3, then records 4 to 6 (the split before it reports ambiguous_split, so the pair does not"
        " silently return a record twice)",
    )
    inside_own = own.offset + 1
    split(
        "stop_inside_record_of_own_index",
        256,
        inside_own,
        accept(records([r1, r2, r3])),
        why="t one byte into the record inside record 3's payload: the search from t finds record 4, where the"
        " walk from record 3 lands exactly: no ambiguity, records 1 to 3",
    )
    split(
        "start_inside_record_of_own_index",
        inside_own,
        U64_MAX,
        accept(records([r4, r5, r6])),
        why="s one byte into the record inside record 3's payload: the split starts at record 4",
    )
    before_future = r5.offset + 41
    split(
        "stop_before_records_of_end_index",
        256,
        before_future,
        accept(records([r1, r2, r3, r4, r5])),
        why="t inside record 5's payload, before the records carrying indexes 7 and 8 it ends with: 7 is the"
        " segment's end index (the active slot's next index), so neither is a boundary (E <= index < I_S);"
        " the search from t finds record 6, where the walk from record 5 lands exactly",
    )
    split(
        "start_before_records_of_end_index",
        before_future,
        U64_MAX,
        accept(records([r6])),
        why="s inside record 5's payload, before the records carrying indexes 7 and 8 (which pass the continuity"
        " check with each other): they lie at or above the segment's end index 7, so the split starts at record 6",
    )
