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

from openbinlog._crc import masked_crc32c

from .bases import basic_log, several_segments_log, skippable_log
from .builder import FRAME_DATA, RecordFact
from .catalog import Catalog
from .catalog_damage import RECORD_CHECKS, SEG1, SEG2
from .model import Fixture, Json, accept, damage, error, records, recovered, reject, tolerant
from .mutations import Mutation

TOLERANT = ["R-25", "R-26"]
CHAIN = ["R-17", "R-18", "R-19"]


def add(cat: Catalog) -> None:
    _record_damage(cat)
    _segment_end(cat)
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
