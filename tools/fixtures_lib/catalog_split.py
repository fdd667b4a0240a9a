"""Reading one byte range of a segment (spec 10.5): splits [s, t) and their boundaries.

A split returns exactly the records whose offset lies in [s, t); the catalog
states them from the offsets the workload wrote. The segment holds records of
many sizes, a payload that ends with a whole valid record of the same log
(a false boundary the continuity check must refuse) and an unpublished record
beyond the commit point, which no split may return (R-15).
"""

from __future__ import annotations

from .bases import basic_log, several_segments_log
from .builder import T0, LogBuilder, RecordFact, seeded_bytes
from .catalog import Catalog
from .catalog_damage import RECORD_CHECKS, SEG1
from .catalog_tolerant import assert_resumes_at
from .model import Json, accept, error, records, reject

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
    _segments_without_boundaries(cat)


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


def _segments_without_boundaries(cat: Catalog) -> None:
    """A log number without a segment file, a blank last segment, a version 1 segment."""

    def split(name: str, fixture: str, log: int, expected: Json, requirements: list[str], *, why: str) -> None:
        cat.read(
            f"must.reader.split.{name}",
            cat.fixtures[fixture],
            expected,
            [*SPLIT, *requirements],
            split=(log, 256, U64_MAX),
            description=f"split [256, 2^64 - 1) of segment {log}: {why}",
        )

    split("missing_segment", "basic", 2, reject([], error("io_error", 2)), ["R-20"], why="no such segment file")
    split(
        "blank_last_segment",
        "blank_last_segment_zeros",
        2,
        accept([]),
        ["R-7"],
        why="a blank last segment holds no record",
    )
    split(
        "legacy_segment",
        "legacy_tv13",
        1,
        reject([], error("unsupported_version", 1, 4)),
        ["R-6"],
        why="version 1 records carry nothing to find a boundary by",
    )
