"""Legacy jPOS-EE version 1 logs (spec appendix B): records from offset 248, no checksums."""

from __future__ import annotations

from dataclasses import replace

from .builder import LOCK, LogBuilder, RecordFact, legacy_log
from .catalog import Catalog
from .model import Fixture, accept, damage, error, records, recovered, recovery_refused, reject, tolerant
from .mutations import Mutation

SEG1 = "00000001.dat"
LEGACY = ["legacy_v1"]
READ_V1 = ["R-34", "R-35", "R-36", "R-37"]
RECORDS = [f"record-{number}".encode() for number in range(8)]


def add(cat: Catalog) -> None:
    tv13 = _valid(cat, "tv13", "test vector TV-13: three records and a cutover, no successor yet", (RECORDS[:3], True))
    _valid(
        cat,
        "cutover_chain",
        "three segments: two closed by cutovers, the last open",
        (RECORDS[:3], True),
        (RECORDS[3:5], True),
        (RECORDS[5:6], False),
    )
    _valid(
        cat,
        "v1_empty_segment",
        "a closed segment with no record (256 bytes, last element position 248) between two others",
        (RECORDS[:2], True),
        ([], True),
        (RECORDS[2:4], False),
    )
    _valid(
        cat,
        "open_last_empty",
        "a cutover just done: the last segment is open and empty",
        (RECORDS[:3], True),
        ([], False),
    )
    single = _valid(cat, "open_single", "one open segment with two records", (RECORDS[:2], False))

    _files, chain_facts, _trace = legacy_log((RECORDS[:3], True), (RECORDS[3:5], True), (RECORDS[5:6], False))
    reopened = cat.derive(
        "legacy_open_with_successor",
        cat.fixtures["legacy_cutover_chain"],
        Mutation().write(SEG1, 6, bytes(2)).write(SEG1, 20, bytes(4)),
        "segment 1 still says open with no next log, but segment 2 exists: it is finished",
        defect=None,
        faults=["T13"],
    )
    _read(cat, "open_with_successor", reopened, accept(records(chain_facts, checked=False)), parser=True)

    _files, single_facts, _trace = legacy_log((RECORDS[:2], False))
    last = single_facts[-1]
    tail = last.offset + 4 + len(last.payload)  # the last element position
    torn = cat.derive(
        "legacy_torn_tail",
        single,
        Mutation().append(SEG1, (8).to_bytes(4, "big") + RECORDS[2]),
        "a record written after the last element position, which was never updated",
        defect=None,
        faults=["T3"],
    )
    _read(cat, "torn_tail", torn, recovered(records(single_facts, checked=False), log=1, offset=tail), parser=True)

    _files, facts, _trace = legacy_log((RECORDS[:3], True))
    first, second, third = facts

    def damaged(
        name: str, mutation: Mutation, defect: str, *, before: list[RecordFact], err: dict[str, object], parser: bool
    ) -> None:
        fixture = cat.derive(f"legacy_{name}", tv13, mutation, defect, defect=defect)
        _read(cat, name, fixture, reject(records(before, checked=False), err), parser=parser)

    damaged(
        "negative_length",
        Mutation().write(SEG1, second.offset, (-8).to_bytes(4, "big", signed=True)),
        "record 2's length is -8",
        before=[first],
        err=error("length_out_of_range", 1, second.offset, second.index),
        parser=True,
    )
    damaged(
        "length_beyond_tail",
        Mutation().write(SEG1, second.offset, (100).to_bytes(4, "big")),
        "record 2's length runs past the last element position",
        before=[first],
        err=error("length_out_of_range", 1, second.offset, second.index),
        parser=True,
    )
    damaged(
        "file_shorter_than_tail",
        Mutation().truncate(SEG1, third.offset + 8),
        "the file ends inside record 3, before the last element position",
        before=[first, second],
        err=error("truncated", 1, third.offset, third.index),
        parser=True,
    )
    damaged(
        "log_number_mismatch",
        Mutation().write(SEG1, 16, (2).to_bytes(4, "big")),
        "the header of 00000001.dat names log 2",
        before=[],
        err=error("bad_header", 1, 16),
        parser=False,
    )
    damaged(
        "bad_status",
        Mutation().write(SEG1, 6, (2).to_bytes(2, "big")),
        "status 2, neither open nor closed",
        before=[],
        err=error("bad_header", 1, 6),
        parser=True,
    )
    damaged(
        "tail_below_248",
        Mutation().write(SEG1, 8, (200).to_bytes(8, "big")),
        "last element position 200, before the first record",
        before=[],
        err=error("bad_header", 1, 8),
        parser=True,
    )

    _mixed(cat)
    _tolerant(cat)

    cat.read(
        "must.reader.legacy.ref_after",
        tv13,
        accept(records([third], checked=False)),
        ["R-38", "R-30"],
        after=second.ref,
        requires=LEGACY,
        description="resume after a ref into a version 1 segment: the ref's index numbers the records that follow",
    )
    cat.read(
        "must.reader.legacy.ref_offset_not_a_record",
        tv13,
        reject([], error("invalid_ref")),
        ["R-38"],
        after=f"1:{first.offset + 1}:2",
        requires=LEGACY,
        description="a ref one byte into record 1: the length read there runs past the last element position",
    )
    cat.recover(
        "must.writer.recover.refuse_legacy_log",
        tv13,
        recovery_refused(error("unsupported_version", 1, 4)),
        ["W-35"],
        description="a writer refuses to recover or append to a version 1 log",
    )


def _valid(cat: Catalog, name: str, description: str, *segments: tuple[list[bytes], bool]) -> Fixture:
    files, facts, trace = legacy_log(*segments)
    fixture = cat.fixture(f"legacy_{name}", f"jPOS-EE version 1: {description}", files, workload=trace)
    _read(cat, name, fixture, accept(records(facts, checked=False)), parser=True)
    return fixture


def _read(cat: Catalog, name: str, fixture: Fixture, expected: dict[str, object], *, parser: bool) -> None:
    cat.read(f"must.reader.legacy.{name}", fixture, expected, READ_V1, requires=LEGACY, parser=parser)


def _mixed(cat: Catalog) -> None:
    files, facts, trace = legacy_log((RECORDS[:3], True))
    converted = LogBuilder(first_log=2, base_index=len(facts) + 1)
    converted.batch(b"first version 2 record", b"second")
    mixed = cat.fixture(
        "legacy_then_version_2",
        "a log converted in place: version 1 segment 1 (closed), then version 2 segment 2 from index 4",
        {**files, **converted.files(), LOCK: b""},
        workload=[*trace, *converted.trace],
    )
    _read(
        cat,
        "then_version_2",
        mixed,
        accept([*records(facts, checked=False), *records(converted.published())]),
        parser=True,
    )


def _tolerant(cat: Catalog) -> None:
    """Version 1 records carry nothing to resynchronise on: a tolerant reader skips the rest of the segment."""
    _files, facts, _trace = legacy_log((RECORDS[:3], True))
    first, second, third = facts
    tail = third.offset + 4 + len(third.payload)

    def skips(name: str, fixture: Fixture, kept: list[RecordFact], region: dict[str, object], description: str) -> None:
        cat.read(
            f"must.reader.tolerant.legacy_{name}",
            fixture,
            tolerant(accept(records(kept, checked=False)), [region]),
            [*READ_V1, "R-25", "R-26"],
            requires=LEGACY,
            tolerant=True,
            description=f"tolerant read: {description}",
        )

    skips(
        "negative_length",
        cat.fixtures["legacy_negative_length"],
        [first],
        damage("length_out_of_range", 1, second.offset, second.index, skipped=tail - second.offset, resumed=None),
        "record 2's length is -8: the damage is reported with the bytes up to the last element position skipped",
    )
    cut = third.offset + 8
    skips(
        "file_shorter_than_tail",
        cat.fixtures["legacy_file_shorter_than_tail"],
        [first, second],
        damage("truncated", 1, third.offset, third.index, skipped=cut - third.offset, resumed=None),
        "the file ends inside record 3: the bytes skipped run to min(S, F), the end of the file",
    )

    _files, chain_facts, _trace = legacy_log((RECORDS[:3], True), (RECORDS[3:5], True), (RECORDS[5:6], False))
    defect = "record 2 of segment 1 (of three) has length -8"
    chain = cat.derive(
        "legacy_chain_negative_length",
        cat.fixtures["legacy_cutover_chain"],
        Mutation().write(SEG1, second.offset, (-8).to_bytes(4, "big", signed=True)),
        defect,
        defect=defect,
    )
    _read(
        cat,
        "chain_negative_length",
        chain,
        reject(records([first], checked=False), error("length_out_of_range", 1, second.offset, second.index)),
        parser=True,
    )
    renumbered = [replace(fact, index=fact.index - 2) for fact in chain_facts[3:]]
    skips(
        "damage_then_next_segment",
        chain,
        [first, *renumbered],
        damage("length_out_of_range", 1, second.offset, second.index, skipped=tail - second.offset, resumed=None),
        "after the damage in segment 1 reading goes on with segment 2, whose records are numbered on from the"
        " index expected at the damage (2)",
    )
