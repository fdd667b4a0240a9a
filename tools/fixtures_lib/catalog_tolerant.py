"""Tolerant reading (spec 10.4): the damaged fixtures read again, stepping over the damage.

The catalog knows which record each fixture damaged and where the records
around it lie, so the expected answer is stated from that: the reader
resumes at the next record the workload wrote (or finds none before
min(S, F)), loses the records in between, and reports the region with its
class, position, expected index, the bytes skipped and the index it resumed
at. ``assert_resumes_at`` guards the one thing a random payload could spoil:
that no byte sequence between the damage and that record looks like a valid
record header.
"""

from __future__ import annotations

from dataclasses import replace

from openbinlog._crc import masked_crc32c

from .bases import basic_log, finished_segment_log, several_segments_log, skippable_log
from .builder import FRAME_DATA, T0, LogBuilder, RecordFact, raw_record, seeded_bytes
from .catalog import Catalog
from .catalog_crash import lose_second_commit
from .catalog_damage import RECORD_CHECKS, SEG1, SEG2
from .model import Fixture, Json, accept, damage, error, implementation_defined, records, recovered, reject, tolerant
from .mutations import Mutation

SEG3 = "00000003.dat"

TOLERANT = ["R-25", "R-26"]
CHAIN = ["R-17", "R-18", "R-19"]


def add(cat: Catalog) -> None:
    _record_damage(cat)
    _resume_points(cat)
    _forged_records(cat)
    _segment_end(cat)
    _slot(cat)
    _finished_segment(cat)
    _chain(cat)
    _header(cat)


def assert_resumes_at(data: bytes, damaged: int, resume: int, *, valid: tuple[int, ...] = ()) -> None:
    """No position in (damaged, resume) but those in ``valid`` holds a data frame with a valid header checksum."""
    for at in range(damaged + 1, min(resume, len(data) - 39)):
        head = data[at : at + 40]
        if head[4] == FRAME_DATA and masked_crc32c(head[:36]) == int.from_bytes(head[36:], "big") and at not in valid:
            raise ValueError(f"a record header at {at} would be found before {resume}: the expectation is wrong")


def _case(
    cat: Catalog,
    name: str,
    fixture: Fixture,
    expected: Json,
    regions: list[Json],
    *,
    requirements: list[str],
    description: str,
) -> None:
    cat.read(
        f"must.reader.tolerant.{name}",
        fixture,
        tolerant(expected, regions),
        [*TOLERANT, *requirements],
        tolerant=True,
        description=f"tolerant read: {description}",
    )


def _record_damage(cat: Catalog) -> None:
    """Record damage of every class with whole records after it: resume at the next record."""
    r1, r2, r3, r4, r5 = basic_log().published()

    def middle(
        name: str,
        damaged: RecordFact,
        cls: str,
        description: str,
        *,
        extra: list[str] | None = None,
        following: RecordFact | None = None,
    ) -> None:
        """``following``: the first intact record after the damage, when it is not the next one."""
        fixture = cat.fixtures[name]
        following = following or next(fact for fact in (r1, r2, r3, r4, r5) if fact.offset >= damaged.end)
        assert_resumes_at(fixture.files[SEG1], damaged.offset, following.offset)
        kept = [
            fact for fact in (r1, r2, r3, r4, r5) if fact.offset < damaged.offset or fact.offset >= following.offset
        ]
        region = damage(
            cls,
            1,
            damaged.offset,
            damaged.index,
            skipped=following.offset - damaged.offset,
            resumed=following.index,
        )
        _case(
            cat,
            name,
            fixture,
            accept(records(kept)),
            [region],
            requirements=[*RECORD_CHECKS, *(extra or [])],
            description=description,
        )

    middle("payload_bit_flip", r3, "checksum_mismatch", "a payload checksum fails; record 4 follows", extra=["R-14"])
    middle("record_header_bit_flip", r2, "checksum_mismatch", "a header checksum fails; record 3 follows")
    middle(
        "hostile_length_4gib",
        r3,
        "length_out_of_range",
        "a 4 GiB length is never used to skip: the search starts one byte after the record",
        extra=["R-10"],
    )
    middle("length_below_minimum", r3, "length_out_of_range", "a length below 36; record 4 follows")
    middle("frame_must_understand", r3, "unsupported_feature", "a must-understand frame; record 4 follows")
    middle("record_flags_set", r3, "unsupported_feature", "non-zero record flags; record 4 follows")
    middle(
        "misdirected_record",
        r4,
        "index_discontinuity",
        "a valid record carrying index 5 where index 4 belongs: the search starts after it, index 4 is lost",
    )
    middle(
        "asqn_repeated",
        r4,
        "asqn_not_increasing",
        "an intact record with a repeated asqn is stepped over like any damage; record 5 follows",
    )
    middle("asqn_below_minus_one", r3, "asqn_not_increasing", "an asqn of -2; record 4 follows")
    middle(
        "lost_write_sector",
        r3,
        "checksum_mismatch",
        "a zeroed sector took record 4 with it; record 5 starts 3 bytes before the sector ends, in bytes that were"
        " zero already (the high bytes of its length), and is intact",
        following=r5,
    )

    data_1, metadata, data_2, _, data_3 = skippable_log().last.records
    skippable = cat.fixtures["skippable_frame_checksum"]
    assert_resumes_at(skippable.files[SEG1], metadata.offset, data_2.offset)
    _case(
        cat,
        "skippable_frame_checksum",
        skippable,
        accept(records([data_1, data_2, data_3])),
        [damage("checksum_mismatch", 1, metadata.offset, 2, skipped=metadata.size, resumed=data_2.index)],
        requirements=[*RECORD_CHECKS, "R-11"],
        description="a damaged skippable record held no index: reading resumes at the expected index, nothing lost",
    )

    basic = cat.fixtures["basic"]
    data = basic.files[SEG1]
    stale_at = r3.offset + 100
    stale = cat.derive(
        "stale_record_in_damage",
        basic,
        Mutation().write(SEG1, stale_at, r1.encode()),
        "an old copy of record 1 written over part of record 3's payload",
        defect="an old copy of record 1 written over part of record 3's payload: record 3 fails its payload checksum",
        faults=["T12"],
        requirements=RECORD_CHECKS,
    )
    cat.read(
        "must.reader.record.stale_record_in_damage",
        stale,
        reject(records([r1, r2]), error("checksum_mismatch", 1, r3.offset, r3.index)),
        RECORD_CHECKS,
    )
    patched = data[:stale_at] + r1.encode() + data[stale_at + r1.size :]
    assert_resumes_at(patched, r3.offset, r4.offset, valid=(stale_at,))
    _case(
        cat,
        "stale_record_in_damage",
        stale,
        accept(records([r1, r2, r4, r5])),
        [damage("checksum_mismatch", 1, r3.offset, r3.index, skipped=r4.offset - r3.offset, resumed=r4.index)],
        requirements=RECORD_CHECKS,
        description="a valid record inside the damage carries index 1, below the expected 3: not a place to resume",
    )


def _resume_points(cat: Catalog) -> None:
    """The search takes whatever passes conditions 1 to 6; committed mode then checks it like any record."""
    r1, r2, r3, r4, r5 = basic_log().published()
    basic = cat.fixtures["basic"]
    data = basic.files[SEG1]
    flip_at = r3.offset + 60

    def edge(name: str, *changes: tuple[int, bytes], defect: str, kept: list[RecordFact], regions: list[Json]) -> None:
        mutation = Mutation()
        for at, patch in changes:
            mutation.write(SEG1, at, patch)
        fixture = cat.derive(name, basic, mutation, defect, defect=defect, faults=["T10"], requirements=RECORD_CHECKS)
        for region in regions:
            damaged = int(region["offset"])
            assert_resumes_at(fixture.files[SEG1], damaged, damaged + int(region["bytes_skipped"]))
        _case(cat, name, fixture, accept(records(kept)), regions, requirements=RECORD_CHECKS, description=defect)

    flip = (flip_at, bytes([data[flip_at] ^ 0x01]))
    r3_damaged = damage("checksum_mismatch", 1, r3.offset, r3.index, skipped=r4.offset - r3.offset, resumed=r4.index)

    def then_r4(cls: str) -> Json:
        return damage(cls, 1, r4.offset, r4.index, skipped=r4.size, resumed=r5.index)

    edge(
        "resume_at_flagged",
        flip,
        (r4.offset, raw_record(r4, flags=1)),
        defect="record 3's payload damaged, and record 4 carries record flags 1 (checksums recomputed): the search"
        " stops at record 4, which conditions 1 to 6 accept, and committed mode steps over it as damage",
        kept=[r1, r2, r5],
        regions=[r3_damaged, then_r4("unsupported_feature")],
    )
    edge(
        "resume_at_asqn_minus_2",
        flip,
        (r4.offset, raw_record(replace(r4, asqn=-2))),
        defect="record 3's payload damaged, and record 4 carries asqn -2 (checksums recomputed): the search stops"
        " at record 4, and committed mode steps over it as damage",
        kept=[r1, r2, r5],
        regions=[r3_damaged, then_r4("asqn_not_increasing")],
    )
    lower = replace(r4, asqn=r2.asqn - 5)
    edge(
        "asqn_reset_after_resync",
        flip,
        (r4.offset, lower.encode()),
        defect="record 3's payload damaged, and record 4 carries asqn 5, below record 2's 10 (checksums"
        " recomputed): the previous asqn is -1 after resynchronising, so record 4 is returned",
        kept=[r1, r2, lower, r5],
        regions=[r3_damaged],
    )
    embedded = replace(r4, offset=r3.end - r4.size)
    edge(
        "embedded_future_record",
        (embedded.offset, r4.encode()),
        defect="a copy of record 4 written over the end of record 3's payload (a misdirected write): the search"
        " finds the copy, a valid record with index 4, and returns it; the true record 4 after it is then an"
        " index discontinuity",
        kept=[r1, r2, embedded, r5],
        regions=[
            damage("checksum_mismatch", 1, r3.offset, r3.index, skipped=embedded.offset - r3.offset, resumed=r4.index),
            damage("index_discontinuity", 1, r4.offset, r5.index, skipped=r4.size, resumed=r5.index),
        ],
    )

    data_1, _, data_2, _, data_3 = skippable_log().last.records
    skippable = cat.fixtures["skippable_frames"]
    flip_at = data_1.offset + 42
    defect = (
        "record 1's payload damaged, and a valid skippable record follows it: only a data frame is a place to"
        " resume, so the search goes on to record 2"
    )
    before_skippable = cat.derive(
        "damage_before_skippable",
        skippable,
        Mutation().write(SEG1, flip_at, bytes([skippable.files[SEG1][flip_at] ^ 0x01])),
        defect,
        defect=defect,
        faults=["T10"],
        requirements=RECORD_CHECKS,
    )
    assert_resumes_at(before_skippable.files[SEG1], data_1.offset, data_2.offset)
    _case(
        cat,
        "damage_before_skippable",
        before_skippable,
        accept(records([data_2, data_3])),
        [damage("checksum_mismatch", 1, data_1.offset, 1, skipped=data_2.offset - data_1.offset, resumed=2)],
        requirements=[*RECORD_CHECKS, "R-11"],
        description=defect,
    )


FAR_FUTURE_INDEX = 1_000_000


def finished_segment_long_log() -> LogBuilder:
    """Segment 1 open with four records in two commits (payloads long enough to hold a record), segment 2 from 5."""
    log = LogBuilder()
    log.batch(seeded_bytes(410, 90), seeded_bytes(411, 160))
    log.batch(seeded_bytes(412, 70), seeded_bytes(413, 50))
    log.start_successor()
    log.batch(b"five", b"six")
    return log


def _forged_records(cat: Catalog) -> None:
    """A whole valid record inside damaged bytes whose index is at or above the segment's end index I_S is not a
    place to resume (condition 6: E <= index < I_S): no record of the segment can carry it."""
    r1, r2, r3, r4, r5 = basic_log().published()
    basic = cat.fixtures["basic"]
    forged = RecordFact(1, 0, FAR_FUTURE_INDEX, -1, T0, b"a record from far in the future")
    forged = replace(forged, offset=r3.end - forged.size)
    defect = (
        f"a whole valid record carrying index {FAR_FUTURE_INDEX} written over the end of record 3's payload (record 3"
        " fails its payload checksum); the active slot's next index, the segment's end index, is 6"
    )
    future = cat.derive(
        "forged_future_record",
        basic,
        Mutation().write(SEG1, forged.offset, forged.encode()),
        defect,
        defect=defect,
        faults=["T12"],
        requirements=RECORD_CHECKS,
    )
    assert_resumes_at(future.files[SEG1], r3.offset, r4.offset, valid=(forged.offset,))
    _case(
        cat,
        "forged_future_record",
        future,
        accept(records([r1, r2, r4, r5])),
        [damage("checksum_mismatch", 1, r3.offset, r3.index, skipped=r4.offset - r3.offset, resumed=r4.index)],
        requirements=RECORD_CHECKS,
        description=f"{defect}: the record at index {FAR_FUTURE_INDEX} lies at or above the end index and is not"
        " a place to resume; reading resumes at record 4",
    )

    log = finished_segment_long_log()
    f1, f2, f3, f4, f5, f6 = log.published()
    base = cat.fixture(
        "finished_segment_long_records",
        "segment 1 open (never sealed) with four records in two commits, segment 2 from index 5 with two:"
        " segment 1 is finished",
        log.files(),
        workload=log.trace,
        faults=["T13"],
    )
    cat.read(
        "must.reader.crash.finished_segment_long_records",
        base,
        accept(records(log.published())),
        ["R-16"],
        parser=True,
    )
    copy = replace(f5, log=1, offset=f2.end - f5.size)  # segment 2's first record, byte for byte
    defect = (
        "a copy of segment 2's first record (index 5, segment 2's base index) written over the end of record 2's"
        " payload in finished segment 1 (a misdirected write; record 2 fails its payload checksum)"
    )
    successor_copy = cat.derive(
        "forged_successor_record",
        base,
        Mutation().write(SEG1, copy.offset, copy.encode()),
        defect,
        defect=defect,
        faults=["T12"],
        requirements=RECORD_CHECKS,
    )
    assert_resumes_at(successor_copy.files[SEG1], f2.offset, f3.offset, valid=(copy.offset,))
    resumed_at_3 = damage("checksum_mismatch", 1, f2.offset, f2.index, skipped=f3.offset - f2.offset, resumed=3)
    _case(
        cat,
        "forged_successor_record",
        successor_copy,
        accept(records([f1, f3, f4, f5, f6])),
        [resumed_at_3],
        requirements=[*RECORD_CHECKS, "R-16"],
        description=f"{defect}: segment 1's end index is 5, so the copy is not a place to resume; reading resumes"
        " at record 3 and record 5 is read once, from segment 2",
    )

    commit = f3.offset  # after the lost publication, the commit point follows record 2 (next index 3)
    defect = defect.replace("in finished segment 1", "in finished segment 1, whose last publication was lost")
    lost = cat.derive(
        "forged_successor_record_lost_publication",
        base,
        lose_second_commit().write(SEG1, copy.offset, copy.encode()),
        "segment 1's last publication (records 3 and 4) was lost, so its active slot's next index is 3; and " + defect,
        defect=defect,
        faults=["T13", "T8", "T12"],
        requirements=RECORD_CHECKS,
    )
    assert_resumes_at(lost.files[SEG1], f2.offset, f3.offset, valid=(copy.offset,))
    cat.read(
        "must.reader.tolerant.forged_successor_record_lost_publication",
        lost,
        implementation_defined(
            "finished_segment_end",
            tail_walk=tolerant(accept(records([f1, f3, f4, f5, f6])), [resumed_at_3]),
            commit_point=tolerant(
                accept(records([f1, f5, f6])),
                [
                    damage("checksum_mismatch", 1, f2.offset, f2.index, skipped=commit - f2.offset, resumed=None),
                    damage("chain_broken", 2, 0, f2.index, skipped=0, resumed=f5.index),
                ],
            ),
        ),
        [*TOLERANT, *RECORD_CHECKS, "R-16"],
        tolerant=True,
        description="tolerant read: segment 1 is finished and unsealed; its end index is where the tail walk of"
        " section 8.4 stops (5, segment 2's base index), not its slot's next index (3): the copy of record 5"
        " inside record 2 is not a place to resume, record 3 (beyond the commit point) is (a reader whose"
        " segment end is the commit point finds nothing before it and reports the chain broken)",
    )


def _segment_end(cat: Catalog) -> None:
    """No valid record after the damage: the walk of the segment ends at S' = min(S, F)."""
    log = basic_log()
    r1, r2, r3, r4, r5 = log.published()
    commit = log.last.commit.commit_offset

    def to_end(
        name: str,
        cls: str,
        damaged: tuple[int, int],
        end: int,
        kept: list[RecordFact],
        *,
        description: str,
        torn_at: int | None = None,
    ) -> None:
        """``damaged``: the offset and expected index of the damage; ``end``: S' = min(S, F)."""
        damaged_at, index = damaged
        fixture = cat.fixtures[name]
        assert_resumes_at(fixture.files[SEG1], damaged_at, end)
        answer = accept(records(kept)) if torn_at is None else recovered(records(kept), log=1, offset=torn_at)
        region = damage(cls, 1, damaged_at, index, skipped=end - damaged_at, resumed=None)
        _case(cat, name, fixture, answer, [region], requirements=RECORD_CHECKS, description=description)

    to_end(
        "committed_zeros",
        "checksum_mismatch",
        (r4.offset, r4.index),
        commit,
        [r1, r2, r3],
        description="zeros up to the commit point: nothing to resume at, the walk ends at the commit point",
    )
    to_end(
        "file_shorter_than_commit_point",
        "truncated",
        (r3.offset, r3.index),
        r3.offset + 60,
        [r1, r2],
        description="the file ends below the commit point: the walk ends at the end of the file (F < S)",
    )
    to_end(
        "commit_point_far_beyond_file",
        "truncated",
        (commit, r5.index + 1),
        commit,
        [r1, r2, r3, r4, r5],
        description="the commit point lies far beyond the file: the damage is at the end of the file, 0 bytes skipped",
    )
    to_end(
        "commit_point_inside_payload",
        "length_out_of_range",
        (r3.offset, r3.index),
        r3.offset + 50,
        [r1, r2],
        description="the commit point inside a payload: the walk ends there; the bytes after it are a torn tail",
        torn_at=r3.offset + 50,
    )
    to_end(
        "commit_point_inside_record_header",
        "truncated",
        (r3.offset, r3.index),
        r3.offset + 20,
        [r1, r2],
        description="the commit point inside a record header: 20 bytes skipped; the bytes after it are a torn tail",
        torn_at=r3.offset + 20,
    )
    to_end(
        "resurrected_record",
        "index_discontinuity",
        (commit, r5.index + 1),
        commit + r5.size,
        [r1, r2, r3, r4, r5],
        description="the last record below the commit point is a stale copy: nothing after it, every record is kept",
    )

    basic = cat.fixtures["basic"]
    data = basic.files[SEG1]
    flip_at = r5.offset + 42
    last = cat.derive(
        "last_record_bit_flip",
        basic,
        Mutation().write(SEG1, flip_at, bytes([data[flip_at] ^ 0x20])),
        "one bit of the payload of record 5, the last below the commit point, flipped",
        defect="one bit of the payload of record 5, the last below the commit point, flipped",
        faults=["T10"],
        requirements=RECORD_CHECKS,
    )
    cat.read(
        "must.reader.record.last_record_bit_flip",
        last,
        reject(records([r1, r2, r3, r4]), error("checksum_mismatch", 1, r5.offset, r5.index)),
        RECORD_CHECKS,
    )
    to_end(
        "last_record_bit_flip",
        "checksum_mismatch",
        (r5.offset, r5.index),
        commit,
        [r1, r2, r3, r4],
        description="the last record below the commit point is damaged: the walk ends at the commit point",
    )


def _slot(cat: Catalog) -> None:
    """R-39's disagreement at the commit point is the one bad_header a tolerant reader steps over."""
    log = basic_log()
    active = log.last.commit
    _case(
        cat,
        "next_index_disagrees",
        cat.fixtures["next_index_disagrees"],
        accept(records(log.published())),
        [damage("bad_header", 1, 96, active.next_index, skipped=0, resumed=active.next_index + 1)],
        requirements=["R-39"],
        description="the active slot's next index is 7 where the records end before 6: reported as a region of"
        " 0 bytes, and reading goes on with the slot's next index",
    )


def _finished_segment(cat: Catalog) -> None:
    """In a finished, unsealed segment the search after damage runs up to its end S, not its commit point."""
    log = finished_segment_log()
    r1, r2, r3, r4, r5, r6 = log.published()
    lost = cat.fixtures["finished_segment_unpublished_records"]
    commit = r3.offset  # the lost publication leaves the commit point after record 2
    flip_at = r2.offset + 41
    defect = "one bit of record 2's payload flipped, below the commit point of finished segment 1"
    fixture = cat.derive(
        "finished_segment_damage_before_tail",
        lost,
        Mutation().write(SEG1, flip_at, bytes([lost.files[SEG1][flip_at] ^ 0x04])),
        "segment 1's last publication was lost (records 3 and 4 lie beyond its commit point), and " + defect,
        defect=defect,
        faults=["T13", "T8", "T10"],
        requirements=RECORD_CHECKS,
    )
    assert_resumes_at(fixture.files[SEG1], r2.offset, r3.offset)

    def r2_damaged(*, skipped: int, resumed: int | None) -> Json:
        return damage("checksum_mismatch", 1, r2.offset, r2.index, skipped=skipped, resumed=resumed)

    cat.read(
        "must.reader.tolerant.finished_segment_damage_before_tail",
        fixture,
        implementation_defined(
            "finished_segment_end",
            tail_walk=tolerant(
                accept(records([r1, r3, r4, r5, r6])),
                [r2_damaged(skipped=r3.offset - r2.offset, resumed=r3.index)],
            ),
            commit_point=tolerant(
                accept(records([r1, r5, r6])),
                [
                    r2_damaged(skipped=commit - r2.offset, resumed=None),
                    damage("chain_broken", 2, 0, r2.index, skipped=0, resumed=r5.index),
                ],
            ),
        ),
        [*TOLERANT, *RECORD_CHECKS, "R-16"],
        tolerant=True,
        description="tolerant read: segment 1 is finished and its end S, found by walking its tail, lies beyond"
        " its commit point: the search after the damage runs up to min(S, F) and finds record 3 beyond the commit"
        " point (a reader whose segment end is the commit point finds nothing and reports the chain broken)",
    )


def _chain(cat: Catalog) -> None:
    """Broken chains are reported and stepped over: reading goes on with the next present segment."""
    log = several_segments_log()
    facts = log.published()
    one, two, three, four, five, six, seven = facts
    seg3_base = six.index

    def chain(name: str, kept: list[RecordFact], regions: list[Json], description: str) -> None:
        _case(
            cat, name, cat.fixtures[name], accept(records(kept)), regions, requirements=CHAIN, description=description
        )

    chain(
        "missing_middle_segment",
        [one, two, three, six, seven],
        [damage("chain_broken", 2, None, four.index, skipped=0, resumed=seg3_base)],
        "segment 2 is missing: reported, and reading resumes at segment 3's base index",
    )
    chain(
        "foreign_log_id",
        facts,
        [
            damage("chain_broken", 2, 0, four.index, skipped=0, resumed=four.index),
            damage("chain_broken", 3, 0, six.index, skipped=0, resumed=six.index),
        ],
        "segment 2 belongs to another log: both of its boundaries are broken, its records are still returned",
    )
    chain(
        "base_index_gap",
        [one, two, three, five, six, seven],
        [
            damage("chain_broken", 2, 0, four.index, skipped=0, resumed=five.index),
            damage("index_discontinuity", 2, four.offset, five.index, skipped=four.size, resumed=five.index),
        ],
        "segment 2 claims base index 5: its first record (index 4) is then a discontinuity and is stepped over",
    )
    chain(
        "base_index_overlap",
        [one, two, three, five, six, seven],
        [
            damage("chain_broken", 2, 0, four.index, skipped=0, resumed=three.index),
            damage("index_discontinuity", 2, four.offset, three.index, skipped=four.size, resumed=five.index),
        ],
        "segment 2 claims base index 3: its first record (index 4) does not match and the search starts after it",
    )
    chain(
        "asqn_across_segments",
        [one, two, three, five, six, seven],
        [damage("asqn_not_increasing", 2, four.offset, four.index, skipped=four.size, resumed=five.index)],
        "an asqn below the previous segment's last one is stepped over like record damage",
    )

    several = cat.fixtures["several_segments"]
    lowered = replace(six, asqn=three.asqn - 1)
    defect = (
        "segment 2 is missing, and segment 3's first record carries asqn 2, below segment 1's last asqn 3"
        " (checksums recomputed)"
    )
    gap = cat.derive(
        "missing_segment_then_lower_asqn",
        several,
        Mutation().remove(SEG2).write(SEG3, six.offset, lowered.encode()),
        defect,
        defect=defect,
        faults=["T13"],
        requirements=CHAIN,
    )
    assert_resumes_at(gap.files[SEG3], six.offset, seven.offset)
    _case(
        cat,
        "asqn_carried_over_broken_chain",
        gap,
        accept(records([one, two, three, seven])),
        [
            damage("chain_broken", 2, None, four.index, skipped=0, resumed=six.index),
            damage("asqn_not_increasing", 3, six.offset, six.index, skipped=six.size, resumed=seven.index),
        ],
        requirements=[*CHAIN, *RECORD_CHECKS],
        description="the previous asqn is carried over the broken chain (R-19), not reset: segment 3's first"
        " record, whose asqn is not above the last one before the gap, is stepped over as record damage",
    )

    data = several.files[SEG1]
    flip_at = three.offset + 41
    broken_end = cat.derive(
        "sealed_segment_last_record_bit_flip",
        several,
        Mutation().write(SEG1, flip_at, bytes([data[flip_at] ^ 0x02])),
        "one bit of the payload of record 3, the last of sealed segment 1, flipped",
        defect="one bit of the payload of record 3, the last of sealed segment 1, flipped",
        faults=["T10"],
        requirements=RECORD_CHECKS,
    )
    cat.read(
        "must.reader.record.sealed_segment_last_record_bit_flip",
        broken_end,
        reject(records([one, two]), error("checksum_mismatch", 1, three.offset, three.index)),
        RECORD_CHECKS,
    )
    _case(
        cat,
        "sealed_segment_last_record_bit_flip",
        broken_end,
        accept(records([one, two, four, five, six, seven])),
        [
            damage("checksum_mismatch", 1, three.offset, three.index, skipped=three.size, resumed=None),
            damage("chain_broken", 2, 0, three.index, skipped=0, resumed=four.index),
        ],
        requirements=[*RECORD_CHECKS, *CHAIN],
        description="nothing to resume at in segment 1; segment 2's base index is above E: chain_broken",
    )


def _header(cat: Catalog) -> None:
    """A damaged header is not stepped over: the tolerant read rejects as the ordinary one does."""
    header = ["R-6", "R-31", "R-32"]

    def stops(name: str, fixture: Fixture, expected: Json, description: str) -> None:
        _case(cat, name, fixture, expected, [], requirements=header, description=description)

    stops(
        "bad_signature",
        cat.fixtures["bad_signature"],
        reject([], error("bad_signature", 1, 24)),
        "a damaged signature is not stepped over",
    )
    stops(
        "header_checksum_mismatch",
        cat.fixtures["header_checksum_mismatch"],
        reject([], error("bad_header", 1, 92)),
        "a header checksum failure is not stepped over",
    )
    stops(
        "no_valid_slot",
        cat.fixtures["no_valid_slot"],
        reject([], error("bad_header", 1, 96)),
        "a header without a valid commit slot is not stepped over",
    )

    log = several_segments_log()
    several = cat.fixtures["several_segments"]
    seg2 = several.files[SEG2]
    first = [fact for fact in log.published() if fact.log == 1]
    successor = cat.derive(
        "successor_header_checksum",
        several,
        Mutation().write(SEG2, 40, bytes([seg2[40] ^ 0x01])),
        "one bit of segment 2's log id flipped: its header checksum fails",
        defect="one bit of segment 2's log id flipped: its header checksum fails",
        faults=["T10"],
        requirements=header,
    )
    expected = reject(records(first), error("bad_header", 2, 92))
    cat.read("must.reader.header.successor_header_checksum", successor, expected, header)
    stops(
        "successor_header_checksum",
        successor,
        expected,
        "segment 2's header is damaged: segment 1's records, then the header error; nothing of segment 3",
    )
