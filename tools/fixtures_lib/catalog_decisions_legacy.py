"""Cases that pin the spec's judgement calls (legacy): each tells the spec's reading from the other plausible one.

The decision each case pins, and the mutant of the reference that takes the other reading, are in
conformance/mutants/decisions_legacy.py; the suite must fail every mutant (spec/conformance.md section 7.3).
Every fixture is written by code (builder.py) and every expectation follows from how it was written.
"""

from __future__ import annotations

from dataclasses import replace

from .builder import LOCK, LegacySegment, LogBuilder, RecordFact, legacy_log, with_header_crc
from .catalog import Catalog
from .model import Json, accept, damage, error, records, recovered, reject, tolerant
from .mutations import Mutation

SEG1 = "00000001.dat"
SEG2 = "00000002.dat"
SEG3 = "00000003.dat"
LEGACY = ["legacy_v1"]
READ_V1 = ["R-34", "R-35", "R-36", "R-37"]
RECORDS = [f"record-{number}".encode() for number in range(8)]


def add(cat: Catalog) -> None:
    _detection(cat)
    _closed(cat)
    _boundaries(cat)
    _refs(cat)
    _leftover(cat)


def _unchecked(facts: list[RecordFact]) -> list[Json]:
    return records(facts, checked=False)


def _step(segment: LegacySegment) -> Json:
    """The workload step of one version 1 segment, as ``legacy_log`` records it."""
    return {
        "step": "legacy_segment",
        "log": segment.log,
        "status": 1 if segment.closed else 0,
        "next_log_number": segment.next_log_number,
        "last_element_position": str(segment.tail),
        "records": [record.hex() for record in segment.records],
    }


def _detection(cat: Catalog) -> None:
    """Format 3.4 step 2: version 1 is legacy only when bytes 24..31 are not the version 2 signature."""
    basic = cat.fixtures["basic"]
    header = bytearray(basic.files[SEG1][:256])
    header[4:6] = (1).to_bytes(2, "big")
    fixed = with_header_crc(header)
    signed = cat.derive(
        "legacy_version_1_with_signature",
        basic,
        Mutation().write(SEG1, 4, fixed[4:6]).write(SEG1, 92, fixed[92:96]),
        "a version 2 segment whose version field reads 1 (header checksum recomputed): bytes 24..31 still hold the"
        " version 2 signature, which jPOS-EE never writes",
        defect="version 1 with the version 2 signature",
    )
    cat.read(
        "must.reader.legacy.version_1_with_signature",
        signed,
        reject([], error("unsupported_version", 1, 4)),
        ["R-6", "R-34"],
        requires=LEGACY,
        description="version 1 in a header that holds the version 2 signature is not a legacy segment (format 3.4"
        " step 2, legacy-v1 B.3): header check step 3 fails, unsupported_version at offset 4, no record; reading"
        " it as version 1 would return its version 2 bytes as records",
    )


def _closed(cat: Catalog) -> None:
    """B.4: closed = status 1 or a next log number; a blank N+1 is absent."""
    segment = LegacySegment(1, RECORDS[:2], False, 2)  # status 0, next log number 2
    facts = segment.facts(1)
    next_only = cat.fixture(
        "legacy_closed_by_next_log_number",
        "jPOS-EE version 1: segment 1 with status 0 but next log number 2, two records; segment 2 absent",
        {SEG1: segment.file_bytes()},
        workload=[_step(segment)],
    )
    cat.read(
        "must.reader.legacy.closed_by_next_log_number",
        next_only,
        reject(_unchecked(facts), error("chain_broken", 2, None, 3)),
        [*READ_V1, "R-41"],
        requires=LEGACY,
        description="status 0 but next log number 2: a version 1 segment is closed when either says so (B.4), and"
        " a closed segment's successor is missing: chain_broken, log 2, no offset, index 3, after the two records;"
        " closed by status alone, the log would end silently",
    )
    successor = LegacySegment(2, RECORDS[2:4], False, 0)
    both = cat.fixture(
        "legacy_closed_by_next_log_number_then_records",
        "jPOS-EE version 1: segment 1 with status 0 but next log number 2, two records; segment 2 open, two records",
        {SEG1: segment.file_bytes(), SEG2: successor.file_bytes()},
        workload=[_step(segment), _step(successor)],
    )
    cat.read(
        "must.reader.legacy.closed_by_next_log_number_then_records",
        both,
        accept(_unchecked([*facts, *successor.facts(3)])),
        [*READ_V1, "R-41"],
        requires=LEGACY,
        description="status 0 but next log number 2: segment 1 is closed (B.4), so the walk moves to segment 2,"
        " whose records are numbered on from 3; closed by status alone, segment 2 would be a broken chain",
    )

    tv13 = cat.fixtures["legacy_tv13"]
    _files, tv13_facts, _trace = legacy_log((RECORDS[:3], True))
    blank = cat.derive(
        "legacy_closed_blank_successor",
        tv13,
        Mutation().create(SEG2, b""),
        "test vector TV-13 (segment 1 closed, next log number 2) and an empty file 00000002.dat",
        defect="the successor of a closed version 1 segment is a blank file",
    )
    cat.read(
        "must.reader.legacy.closed_blank_successor",
        blank,
        reject(_unchecked(tv13_facts), error("chain_broken", 2, None, 4)),
        [*READ_V1, "R-7", "R-41"],
        requires=LEGACY,
        description="a blank last segment 2 is absent (R-7), and jPOS-EE writes a successor's header whole before"
        " it names it: the successor of closed segment 1 is missing, chain_broken, log 2, no offset, index 4,"
        " after the three records",
    )


def _boundaries(cat: Catalog) -> None:
    """B.4: boundaries between versions, and a broken chain into a version 1 segment."""
    # A version 2 segment, open, with a record beyond its commit point; a version 1 segment after it.
    v2 = LogBuilder()
    v2.batch(b"one", b"two")
    beyond = v2.write(b"three, never published")
    legacy = LegacySegment(2, RECORDS[:1], False, 0)
    then_v1 = cat.fixture(
        "legacy_after_unsealed_version_2",
        "version 2 segment 1 open (records 1 and 2 published, record 3 written beyond the commit point), then"
        " version 1 segment 2 open with one record",
        {**v2.files(), SEG2: legacy.file_bytes()},
        workload=[*v2.trace, _step(legacy)],
        faults=["T13"],
    )
    published = v2.published()
    cat.read(
        "must.reader.legacy.after_unsealed_version_2",
        then_v1,
        accept([*records(published), *_unchecked(legacy.facts(beyond.index))]),
        [*READ_V1, "R-17"],
        requires=LEGACY,
        description="a version 2 segment followed by a version 1 segment ends at its commit point (protocols 8.4"
        " step 3, B.4): record 3 beyond it is not returned, and the version 1 record is index 3; a tail walk"
        " would return record 3 and shift every version 1 index by one",
    )

    # Version 1 then version 2 whose base index is not the count.
    files, facts, trace = legacy_log((RECORDS[:2], True))
    converted = LogBuilder(first_log=2, base_index=10)
    converted.batch(b"ten", b"eleven")
    jump = cat.fixture(
        "legacy_then_version_2_base_10",
        "a log converted in place: version 1 segment 1 (closed, two records), then version 2 segment 2 from index 10",
        {**files, **converted.files(), LOCK: b""},
        workload=[*trace, *converted.trace],
    )
    cat.read(
        "must.reader.legacy.then_version_2_base_10",
        jump,
        accept([*_unchecked(facts), *records(converted.published())]),
        [*READ_V1, "R-17"],
        requires=LEGACY,
        description="after a version 1 segment, the version 2 segment's base_index sets the expected index,"
        " unchecked (B.4): indexes 1, 2, then 10, 11, no chain_broken",
    )

    # A broken chain into a version 1 segment: nothing to resume at.
    sealed = LogBuilder()
    sealed.batch(b"one", b"two")
    sealed.cutover()
    gap_files = {name: data for name, data in sealed.files().items() if name != SEG2}
    after_gap = LegacySegment(3, RECORDS[:1], False, 0)
    gap = cat.fixture(
        "legacy_after_missing_segment",
        "version 2 segment 1 sealed (records 1 and 2), segment 2 missing, version 1 segment 3 open with one record",
        {**gap_files, SEG3: after_gap.file_bytes()},
        workload=[*sealed.trace, _step(after_gap)],
        faults=["T13"],
    )
    ones = sealed.published()
    cat.read(
        "must.reader.legacy.tolerant_after_missing_segment",
        gap,
        tolerant(
            accept([*records(ones), *_unchecked(after_gap.facts(len(ones) + 1))]),
            [damage("chain_broken", 2, None, len(ones) + 1, skipped=0, resumed=None)],
        ),
        [*READ_V1, "R-17", "R-25", "R-26"],
        requires=LEGACY,
        tolerant=True,
        description="tolerant read: segment 2 is missing and segment 3 is version 1: the broken chain is reported"
        " with no index resumed at (a version 1 segment has no base index; B.4, readers 10.4 row 4) and segment"
        " 3's record is numbered on from the expected index, 3",
    )


def _refs(cat: Catalog) -> None:
    """B.6 and R-37: a ref's index numbers the records after it, even where R-37's count differs."""
    tv13 = cat.fixtures["legacy_tv13"]
    _files, facts, _trace = legacy_log((RECORDS[:3], True))
    _first, second, third = facts
    cat.read(
        "must.reader.legacy.ref_index_taken_unverified",
        tv13,
        reject(
            _unchecked([replace(third, index=8)]),
            error("chain_broken", 2, None, 9),
        ),
        [*READ_V1, "R-38", "R-30", "R-41"],
        after=f"{second.log}:{second.offset}:7",
        requires=LEGACY,
        description="a ref to record 2 of test vector TV-13 that says index 7: nothing stores the index, so the"
        " reader takes it (B.6) and numbers record 3 as 8, then segment 2, which closed segment 1 names, is"
        " missing: chain_broken, index 9; counting from the lowest segment would refuse the ref",
    )

    chain = cat.fixtures["legacy_cutover_chain"]
    _files, chain_facts, _trace = legacy_log((RECORDS[:3], True), (RECORDS[3:5], True), (RECORDS[5:6], False))
    retained = cat.derive(
        "legacy_lowest_segment_removed",
        chain,
        Mutation().remove(SEG1),
        "segment 1 of three removed by retention: segments 2 (closed, two records) and 3 (open, one record) are left",
        defect=None,
    )
    kept = chain_facts[3:]
    renumbered = [replace(fact, index=position) for position, fact in enumerate(kept, start=1)]
    cat.read(
        "must.reader.legacy.lowest_segment_removed",
        retained,
        accept(_unchecked(renumbered)),
        [*READ_V1],
        requires=LEGACY,
        description="retention removed segment 1: a read from the start numbers the records from 1 at segment 2,"
        " now the lowest present (R-37, B.5)",
    )
    at = kept[0]
    cat.read(
        "must.reader.legacy.ref_before_retention",
        retained,
        accept(_unchecked(kept[1:])),
        [*READ_V1, "R-38", "R-30"],
        after=at.ref,
        requires=LEGACY,
        description=f"a ref {at.ref} taken before retention removed segment 1: the records after it keep the"
        " numbers that follow the ref's index (B.6), 5 and 6, not the numbers R-37 gives them in a read from the"
        " start (2 and 3); the reader does not count the records before the ref to check it",
    )


def _leftover(cat: Catalog) -> None:
    """B.4: an open version 1 segment followed by the empty leftover of a cutover that died is the last segment."""
    died = cat.fixtures["legacy_open_then_open_empty"]
    _files, facts, _trace = legacy_log((RECORDS[:3], False), ([], False))
    end = facts[-1].offset + 4 + len(facts[-1].payload)  # segment 1's last element position
    torn = cat.derive(
        "legacy_open_then_open_empty_torn_tail",
        died,
        Mutation().append(SEG1, len(RECORDS[3]).to_bytes(4, "big") + RECORDS[3]),
        "segment 1 open with a record written after its last element position, which was never updated (a"
        " restarted jPOS-EE writer appends to segment 1), and segment 2 the open, empty leftover of a cutover",
        defect=None,
        faults=["T3", "T13"],
    )
    cat.read(
        "must.reader.legacy.open_then_open_empty_torn_tail",
        torn,
        recovered(_unchecked(facts), log=1, offset=end),
        [*READ_V1, "R-12", "R-41"],
        requires=LEGACY,
        description="the log ends at open segment 1, the last segment, since segment 2 is the empty leftover of a"
        " cutover that died (B.4): the bytes beyond segment 1's last element position are its torn tail, log 1,"
        f" offset {end}; the leftover has none",
    )
    above = cat.derive(
        "legacy_open_then_open_empty_blank_above",
        died,
        Mutation().create(SEG3, b""),
        "segment 1 open with three records, segment 2 the open, empty leftover of a cutover, and an empty file"
        " 00000003.dat",
        defect="an empty segment file above the leftover of a cutover",
    )
    cat.read(
        "must.reader.legacy.open_then_open_empty_blank_above",
        above,
        reject(_unchecked(facts), error("chain_broken", 2, 0, 4)),
        [*READ_V1, "R-41"],
        requires=LEGACY,
        description="segment 2 is an empty leftover but a segment above it is listed, blank or not (readers 10.2.2"
        " NEXT step 4): segment 2 is not the only segment above segment 1, so chain_broken at segment 2, offset 0,"
        " index 4, after segment 1's records",
    )
