"""Legacy jPOS-EE version 1 logs (spec appendix B): records from offset 248, no checksums.

Suite 2.0.2 (issue 14) follows what jPOS-EE's own reader does: the u4 at offset 0 is checked (252, or
``bad_signature``); a segment is finished only when it is closed (status 1 or a next log number), not because a
successor file exists; a closed segment whose successor is absent is ``chain_broken``; an open segment followed
by higher segments ends the log only when the one above it is the open, empty leftover of a cutover that died.
Cases whose expectation this changed carry ``until`` and have a successor with a new id.
"""

from __future__ import annotations

from dataclasses import replace

from .builder import LOCK, LogBuilder, RecordFact, legacy_log
from .catalog import Catalog
from .model import (
    RETIRED_BY_2_0_2,
    Fixture,
    Json,
    accept,
    damage,
    error,
    records,
    recovered,
    recovery_refused,
    reject,
    tolerant,
)
from .mutations import Mutation

SEG1 = "00000001.dat"
SEG3 = "00000003.dat"
LEGACY = ["legacy_v1"]
READ_V1 = ["R-34", "R-35", "R-36", "R-37"]
RECORDS = [f"record-{number}".encode() for number in range(8)]


def add(cat: Catalog) -> None:
    tv13 = _valid(
        cat,
        "tv13",
        "test vector TV-13: three records and a cutover, no successor yet",
        (RECORDS[:3], True),
        until=RETIRED_BY_2_0_2,
    )
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
        "segment 1 still says open (status 0, next log number 0), and segments 2 (with records) and 3 exist",
        defect=None,
        faults=["T13"],
    )
    _read(
        cat,
        "open_with_successor",
        reopened,
        accept(records(chain_facts, checked=False)),
        parser=True,
        until=RETIRED_BY_2_0_2,
        description="segment 1 still says open with no next log, but segment 2 exists: it is finished",
    )
    _read(
        cat,
        "open_with_successors",
        reopened,
        reject(records(chain_facts[:3], checked=False), error("chain_broken", 2, 0, 4)),
        parser=False,
        description="segment 1 says open (status 0, next log number 0) while segment 2 holds records and segment 3"
        " exists: an open version 1 segment is not finished by its successor's existence, and the segments above"
        " it are not the leftover of a cutover that died: chain_broken at segment 2, offset 0, after segment 1's"
        " records",
        extra=["R-41"],
    )

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
    _closed_and_open(cat)

    cat.read(
        "must.reader.legacy.ref_after",
        tv13,
        accept(records([third], checked=False)),
        ["R-38", "R-30"],
        after=second.ref,
        requires=LEGACY,
        description="resume after a ref into a version 1 segment: the ref's index numbers the records that follow",
        until=RETIRED_BY_2_0_2,
    )
    cat.read(
        "must.reader.legacy.ref_after_closed_without_successor",
        tv13,
        reject(records([third], checked=False), error("chain_broken", 2, None, third.index + 1)),
        ["R-38", "R-30", "R-36", "R-41"],
        after=second.ref,
        requires=LEGACY,
        description="resume after a ref into a version 1 segment: the ref's index numbers the records that follow;"
        " the segment is closed and names segment 2, which is absent: chain_broken after record 3",
    )
    _files, single_facts, _trace = legacy_log((RECORDS[:2], False))
    cat.read(
        "must.reader.legacy.ref_after_open",
        single,
        accept(records(single_facts[1:], checked=False)),
        ["R-38", "R-30"],
        after=single_facts[0].ref,
        requires=LEGACY,
        description="resume after a ref into an open version 1 segment: the ref's index numbers the records that"
        " follow",
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


def _valid(
    cat: Catalog, name: str, description: str, *segments: tuple[list[bytes], bool], until: str | None = None
) -> Fixture:
    files, facts, trace = legacy_log(*segments)
    fixture = cat.fixture(f"legacy_{name}", f"jPOS-EE version 1: {description}", files, workload=trace)
    _read(cat, name, fixture, accept(records(facts, checked=False)), parser=True, until=until)
    return fixture


def _read(
    cat: Catalog,
    name: str,
    fixture: Fixture,
    expected: Json,
    *,
    parser: bool,
    until: str | None = None,
    description: str | None = None,
    tolerant: bool = False,
    extra: list[str] | None = None,
) -> None:
    group = "tolerant" if tolerant else "legacy"
    prefix = "legacy_" if tolerant else ""
    cat.read(
        f"must.reader.{group}.{prefix}{name}",
        fixture,
        expected,
        [*READ_V1, *(["R-25", "R-26"] if tolerant else []), *(extra or [])],
        requires=LEGACY,
        parser=parser,
        until=until,
        description=description,
        tolerant=tolerant,
    )


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

    files, facts, trace = legacy_log((RECORDS[:3], False))
    converted = LogBuilder(first_log=2, base_index=len(facts) + 1)
    converted.batch(b"first version 2 record", b"second")
    open_mixed = cat.fixture(
        "legacy_open_then_version_2",
        "version 1 segment 1 still open (status 0, next log number 0) with three records, then version 2 segment 2"
        " from index 4",
        {**files, **converted.files(), LOCK: b""},
        workload=[*trace, *converted.trace],
        faults=["T13"],
    )
    _read(
        cat,
        "open_then_version_2",
        open_mixed,
        reject(records(facts, checked=False), error("chain_broken", 2, 0, len(facts) + 1)),
        parser=False,
        description="version 1 segment 1 is open (never closed) and version 2 segment 2 follows: an open version 1"
        " segment is not finished by its successor's existence, and only an empty version 1 successor is the"
        " leftover of a cutover: chain_broken at segment 2, offset 0, after segment 1's records",
        extra=["R-41"],
    )


def _tolerant(cat: Catalog) -> None:
    """Version 1 records carry nothing to resynchronise on: a tolerant reader skips the rest of the segment."""
    _files, facts, _trace = legacy_log((RECORDS[:3], True))
    first, second, third = facts
    tail = third.offset + 4 + len(third.payload)

    def skips(
        name: str,
        fixture: Fixture,
        kept: list[RecordFact],
        region: Json,
        description: str,
        *,
        until: str | None = None,
        more: list[Json] | None = None,
    ) -> None:
        cat.read(
            f"must.reader.tolerant.legacy_{name}",
            fixture,
            tolerant(accept(records(kept, checked=False)), [region, *(more or [])]),
            [*READ_V1, "R-25", "R-26", *(["R-41"] if more else [])],
            requires=LEGACY,
            tolerant=True,
            description=f"tolerant read: {description}",
            until=until,
        )

    def successor_missing(index: int) -> Json:
        """Segment 1 is closed and names segment 2, which is absent: a broken chain, stepped over (nothing after)."""
        return damage("chain_broken", 2, None, index, skipped=0, resumed=None)

    negative = damage("length_out_of_range", 1, second.offset, second.index, skipped=tail - second.offset, resumed=None)
    skips(
        "negative_length",
        cat.fixtures["legacy_negative_length"],
        [first],
        negative,
        "record 2's length is -8: the damage is reported with the bytes up to the last element position skipped",
        until=RETIRED_BY_2_0_2,
    )
    skips(
        "negative_length_then_missing_successor",
        cat.fixtures["legacy_negative_length"],
        [first],
        negative,
        "record 2's length is -8: the damage is reported with the bytes up to the last element position skipped;"
        " the segment is closed and names segment 2, which is absent: a broken chain at the index expected at the"
        " damage (2), with nothing to resume at",
        more=[successor_missing(second.index)],
    )
    cut = third.offset + 8
    shorter = damage("truncated", 1, third.offset, third.index, skipped=cut - third.offset, resumed=None)
    skips(
        "file_shorter_than_tail",
        cat.fixtures["legacy_file_shorter_than_tail"],
        [first, second],
        shorter,
        "the file ends inside record 3: the bytes skipped run to min(S, F), the end of the file",
        until=RETIRED_BY_2_0_2,
    )
    skips(
        "file_shorter_than_tail_then_missing_successor",
        cat.fixtures["legacy_file_shorter_than_tail"],
        [first, second],
        shorter,
        "the file ends inside record 3: the bytes skipped run to min(S, F), the end of the file; the segment is"
        " closed and names segment 2, which is absent: a broken chain at the index expected at the damage (3)",
        more=[successor_missing(third.index)],
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


def _closed_and_open(cat: Catalog) -> None:
    """Spec B.3 and B.4 as suite 2.0.2 corrected them: the file magic, short last segments, and which segment ends
    the log (a version 1 segment is finished only when it is closed)."""
    tv13 = cat.fixtures["legacy_tv13"]
    _files, facts, _trace = legacy_log((RECORDS[:3], True))
    missing = error("chain_broken", 2, None, facts[-1].index + 1)
    _read(
        cat,
        "closed_without_successor",
        tv13,
        reject(records(facts, checked=False), missing),
        parser=False,
        description="test vector TV-13: segment 1 is closed and names segment 2, which is absent; jPOS-EE creates"
        " the successor before it closes a segment, so this is a broken chain (log 2, no offset, index 4), after"
        " segment 1's three records",
        extra=["R-41"],
    )
    _read(
        cat,
        "closed_without_successor",
        tv13,
        tolerant(
            accept(records(facts, checked=False)),
            [damage("chain_broken", 2, None, facts[-1].index + 1, skipped=0, resumed=None)],
        ),
        parser=False,
        tolerant=True,
        description="tolerant read: segment 1 is closed and names segment 2, which is absent: the broken chain is"
        " reported (0 bytes skipped, nothing to resume at) and the log ends",
        extra=["R-41"],
    )

    _files, chain_facts, _trace = legacy_log((RECORDS[:3], True), (RECORDS[3:5], True), (RECORDS[5:6], False))
    chain = cat.fixtures["legacy_cutover_chain"]
    defect = "segment 3, the last, is cut to 200 bytes: its header says it holds a record (last element position 260)"
    short = cat.derive("legacy_short_last_segment", chain, Mutation().truncate(SEG3, 200), defect, defect=defect)
    _read(
        cat,
        "short_last_segment",
        short,
        reject(records(chain_facts[:5], checked=False), error("truncated", 3, 0)),
        parser=False,
        extra=["R-6", "R-7"],
        description=f"{defect}: not blank (its bytes are not all zero), so header check step 1 fails: truncated at"
        " offset 0, after the records of segments 1 and 2",
    )

    single = cat.fixtures["legacy_open_single"]
    defect = "the u4 at offset 0 (jPOS-EE's file magic, the header length 252) reads 256"
    magic = cat.derive(
        "legacy_magic_not_252", single, Mutation().write(SEG1, 0, (256).to_bytes(4, "big")), defect, defect=defect
    )
    _read(
        cat,
        "magic_not_252",
        magic,
        reject([], error("bad_signature", 1, 0)),
        parser=False,
        description=f"{defect}: jPOS-EE refuses such a file on open; header check step 2 of B.3 fails:"
        " bad_signature at offset 0",
    )

    def log_of(name: str, description: str, *segments: tuple[list[bytes], bool]) -> tuple[Fixture, list[RecordFact]]:
        files, facts, trace = legacy_log(*segments)
        fixture = cat.fixture(
            f"legacy_{name}", f"jPOS-EE version 1: {description}", files, workload=trace, faults=["T13"]
        )
        return fixture, facts

    died, died_facts = log_of(
        "open_then_open_empty",
        "segment 1 open (status 0, next log number 0) with three records, segment 2 open and empty (last element"
        " position 248): a cutover that died after creating segment 2",
        (RECORDS[:3], False),
        ([], False),
    )
    _read(
        cat,
        "open_then_open_empty",
        died,
        accept(records(died_facts, checked=False)),
        parser=True,
        description="segment 1 open with three records and segment 2 open and empty, the leftover of a cutover that"
        " died (a restarted jPOS-EE writer keeps appending to segment 1): the log ends at segment 1 for now",
        extra=["R-41"],
    )

    holding, holding_facts = log_of(
        "open_then_records",
        "segment 1 open (status 0, next log number 0) with three records, segment 2 open with two",
        (RECORDS[:3], False),
        (RECORDS[3:5], False),
    )
    after_one = error("chain_broken", 2, 0, 4)
    _read(
        cat,
        "open_then_records",
        holding,
        reject(records(holding_facts[:3], checked=False), after_one),
        parser=False,
        description="segment 1 is open (never closed) and segment 2 holds records: segment 1 is not finished by"
        " segment 2's existence, and segment 2 is not an empty leftover: chain_broken at segment 2, offset 0,"
        " after segment 1's records",
        extra=["R-41"],
    )
    _read(
        cat,
        "open_then_records",
        holding,
        tolerant(
            accept(records(holding_facts, checked=False)),
            [damage("chain_broken", 2, 0, 4, skipped=0, resumed=None)],
        ),
        parser=False,
        tolerant=True,
        description="tolerant read: segment 1 open, segment 2 holding records: the broken chain is reported (0"
        " bytes skipped, no index resumed at: a version 1 segment has no base index) and reading goes on with"
        " segment 2, whose records are numbered on from 4",
        extra=["R-41"],
    )

    above, above_facts = log_of(
        "open_then_empty_then_records",
        "segment 1 open with three records, segment 2 open and empty, segment 3 open with two records",
        (RECORDS[:3], False),
        ([], False),
        (RECORDS[3:5], False),
    )
    _read(
        cat,
        "open_then_empty_then_records",
        above,
        reject(records(above_facts[:3], checked=False), after_one),
        parser=False,
        description="segment 1 open, segment 2 open and empty, segment 3 present: an empty segment 2 ends the log"
        " only when no segment lies above it: chain_broken at segment 2, offset 0, after segment 1's records",
        extra=["R-41"],
    )
