"""Cases that pin the spec's judgement calls (reader): each tells the spec's reading from the other plausible one.

The decision each case pins, and the mutant of the reference that takes the other reading, are in
conformance/mutants/decisions_reader.py; the suite must fail every mutant (spec/conformance.md section 7.3).

Many fixtures here are forged: a slot, an index or an asqn that no writer following the spec produces, so that
the two readings of one rule give different answers. Each says what was forged; the expected outcomes follow
from how the bytes were made.
"""

from __future__ import annotations

from dataclasses import replace

from openbinlog._segment import CommitState

from .bases import basic_log, finished_segment_log, several_segments_log, skippable_log
from .builder import LOCK, LegacySegment, LogBuilder, RecordFact, raw_record, slot_bytes, with_header_crc
from .catalog import Catalog
from .model import Fixture, Json, accept, damage, error, records, recovered, reject, tolerant
from .mutations import Files, Mutation

SEG0 = "00000000.dat"
SEG1 = "00000001.dat"
SEG2 = "00000002.dat"
SEG3 = "00000003.dat"
U64_MAX = 2**64 - 1
HEADER = ["R-6"]
END = ["R-16", "R-39"]
SPLIT = ["R-15", "R-27"]
REFS = ["R-28", "R-29", "R-30"]
TOLERANT = ["R-25", "R-26"]


def add(cat: Catalog) -> None:
    _directory(cat)
    _headers(cat)
    _records(cat)
    _segment_ends(cat)
    _tolerant(cat)
    _refs(cat)
    _splits(cat)
    _torn(cat)
    _seek(cat)


def forged(cat: Catalog, id: str, description: str, files: Files, *, workload: list[Json], defect: str) -> Fixture:
    """A fixture whose bytes no writer following the spec produces, built whole: ``defect`` says what was forged.

    Not derived from a base by a mutation, so its twin names no defect (only derived fixtures do); the
    description says it.
    """
    return cat.fixture(id, f"{description}. Forged: {defect}", files, workload=workload)


def valid(cat: Catalog, fixture: Fixture, facts: list[RecordFact]) -> None:
    """The sound log a forged fixture is derived from reads as written."""
    cat.read(f"must.reader.valid.{fixture.id}", fixture, accept(records(facts)), ["R-21"])


def patch(data: bytes, at: int, new: bytes) -> bytes:
    return data[:at] + new + data[at + len(new) :]


def with_slot(data: bytes, commit: CommitState) -> bytes:
    """``data`` with the slot of ``commit``'s generation replaced (mirror fields are not checked, format 3.3)."""
    at, raw = slot_bytes(commit)
    return patch(data, at, raw)


def flipped(data: bytes, at: int) -> bytes:
    return patch(data, at, bytes([data[at] ^ 0x01]))


def files_of(*builders: LogBuilder) -> Files:
    files: Files = {LOCK: b""}
    for builder in builders:
        for segment in builder.segments:
            files[segment.name] = segment.file_bytes()
    return files


def trace_of(*builders: LogBuilder) -> list[Json]:
    return [step for builder in builders for step in builder.trace]


# -- the directory (format 2.1 to 2.3) ------------------------------------------------------------------------


def _directory(cat: Catalog) -> None:
    not_a_log = cat.fixture(
        "directory_without_segment_or_lock",
        "a directory holding one unrelated file, neither a segment nor LOCK (the parent of a log, a mistyped path)",
        {"notes.txt": b"not a log\n"},
    )
    cat.read(
        "must.reader.io.not_a_log_directory",
        not_a_log,
        reject([], error("io_error")),
        ["R-42"],
        description="a directory with neither a segment nor LOCK is not a log: io_error, never an empty log",
    )
    blank_only = cat.fixture(
        "blank_segment_without_lock",
        "a directory holding only an empty 00000001.dat and no LOCK (a writer that died before its first header)",
        {SEG1: b""},
        faults=["T8"],
    )
    cat.read(
        "must.reader.crash.blank_segment_without_lock",
        blank_only,
        accept([]),
        ["R-42", "R-7"],
        description="a segment name makes a directory a log, blank or not: an empty log, not io_error",
    )

    basic = cat.fixtures["basic"]
    committed = records(basic_log().published())
    zero = cat.derive(
        "segment_zero_empty",
        basic,
        Mutation().create(SEG0, b""),
        "an empty file 00000000.dat below segment 1",
        defect="a file named like a segment 0, which no writer creates (W-1)",
    )
    cat.read(
        "must.reader.valid.segment_zero_name_ignored",
        zero,
        accept(committed),
        ["R-1"],
        description="00000000.dat is not a segment name (log number 0 is never used, R-1): it is ignored like any"
        " other unknown name",
    )

    third = LogBuilder(first_log=3, base_index=6)
    third.batch(b"six")
    newline = cat.derive(
        "segment_name_with_newline",
        basic,
        Mutation().create("00000002.dat\n", b"x" * 10).create(SEG3, third.last.file_bytes()),
        "a file named '00000002.dat' followed by a newline, and segment 3 from index 6",
        defect="segment 2 is missing; a file whose name only starts like segment 2's lies in its place",
    )
    cat.read(
        "must.reader.crash.segment_name_with_newline",
        newline,
        reject(committed, error("chain_broken", 2, None, 6)),
        ["R-1", "R-17"],
        description="a name with a trailing newline is not a segment name (names match whole): segment 2 is"
        " missing, chain_broken",
    )
    blanks = cat.derive(
        "two_blank_segments",
        basic,
        Mutation().create(SEG2, b"").create(SEG3, b""),
        "two empty files above segment 1: 00000002.dat and 00000003.dat",
        defect="segment 2 is blank but not the highest-numbered segment",
    )
    cat.read(
        "must.reader.header.two_blank_segments",
        blanks,
        reject(committed, error("truncated", 2, 0)),
        ["R-7", "R-6"],
        description="only the highest-numbered segment can be a blank last segment: blank segment 2 below blank"
        " segment 3 fails its header check (step 1)",
    )


# -- headers and slots (format 3.2, 3.4) ------------------------------------------------------------------------


def _headers(cat: Catalog) -> None:
    one = LogBuilder()
    one.batch(b"one")
    base = cat.fixture("single_record", "one segment, one record", one.files(), workload=one.trace)
    data = base.files[SEG1]
    valid(cat, base, one.published())

    def header_with(changes: dict[int, bytes]) -> Mutation:
        head = bytearray(data[:256])
        for at, value in changes.items():
            head[at : at + len(value)] = value
        return Mutation().write(SEG1, 0, with_header_crc(head))

    both = cat.derive(
        "unknown_flag_and_capacity",
        base,
        header_with({64: (3).to_bytes(4, "big")}),
        "header flags 3 (an unknown bit and PREALLOCATED) with capacity 0, header checksum recomputed",
        defect="an unknown header flag, and PREALLOCATED without a capacity",
    )
    cat.read(
        "must.reader.header.unknown_flag_and_capacity",
        both,
        reject([], error("unsupported_feature", 1, 64)),
        HEADER,
        description="the unknown flag (step 8) is reported before the capacity disagreement (step 10)",
    )
    reserved = cat.derive(
        "unknown_flag_and_reserved_byte",
        base,
        header_with({64: (2).to_bytes(4, "big"), 200: b"\x01"}),
        "an unknown header flag bit and a non-zero reserved byte at offset 200, header checksum recomputed",
        defect="a header of a later minor revision: a new field in reserved bytes, announced by a new flag bit",
    )
    cat.read(
        "must.reader.header.unknown_flag_and_reserved_byte",
        reserved,
        reject([], error("unsupported_feature", 1, 64)),
        HEADER,
        description="a new header field comes with a new flag bit: the flag (step 8) is checked before the"
        " reserved bytes (step 9), so the reader refuses with unsupported_feature, not bad_header (format 13.2)",
    )

    first = one.published()[0]
    gen0 = cat.derive(
        "slot_generation_zero",
        base,
        Mutation()
        .write(SEG1, 144 + 44, bytes([data[144 + 44] ^ 0x01]))
        .write(SEG1, *slot_bytes(CommitState(0, first.end, 2, -1, first.timestamp_us, 0))),
        "slot 1's checksum broken; slot 0 holds generation 0 with a valid checksum and the commit point after record 1",
        defect="no valid slot: a slot of generation 0 is never valid, whatever its checksum",
    )
    cat.read(
        "must.reader.slot.generation_zero",
        gen0,
        reject([], error("bad_header", 1, 96)),
        ["R-3"],
        description="a slot with generation 0 is not valid even when its checksum matches: no valid slot",
    )


# -- records (format 4.2, 4.3.1) ---------------------------------------------------------------------------------


def _records(cat: Catalog) -> None:
    log = LogBuilder()
    r1 = log.write(b"one", asqn=5)
    meta = log.write(b"metadata", frame=200)
    log.write(b"two")
    log.publish()
    base = cat.fixture(
        "skippable_between_records",
        "record 1 (asqn 5), a skippable frame-200 record, record 2",
        log.files(),
        workload=log.trace,
    )
    valid(cat, base, log.published())
    wrong_index = cat.derive(
        "skippable_wrong_index",
        base,
        Mutation().write(SEG1, meta.offset, raw_record(replace(meta, index=7))),
        "the skippable record carries index 7 (both checksums recomputed)",
        defect="a skippable record whose index is not the next data record's",
    )
    cat.read(
        "must.reader.record.skippable_wrong_index",
        wrong_index,
        reject(records([r1]), error("index_discontinuity", 1, meta.offset, 2)),
        ["R-8", "R-11"],
        description="a skippable record is verified with every check of 4.3.1, its index too",
    )
    asqn_back = cat.derive(
        "skippable_asqn_going_back",
        base,
        Mutation().write(SEG1, meta.offset, raw_record(replace(meta, asqn=3))),
        "the skippable record carries asqn 3, below record 1's 5 (both checksums recomputed)",
        defect="a skippable record whose asqn goes back",
    )
    cat.read(
        "must.reader.record.skippable_asqn_going_back",
        asqn_back,
        reject(records([r1]), error("asqn_not_increasing", 1, meta.offset, 2)),
        ["R-8", "R-11"],
        description="a skippable record is verified with every check of 4.3.1, its asqn too",
    )

    four = LogBuilder()
    facts = four.batch(b"one", b"two", b"three-payload", b"four")
    base4 = cat.fixture("four_records_one_commit", "four records, one commit", four.files(), workload=four.trace)
    valid(cat, base4, facts)
    third = facts[2]
    forged_third = bytearray(raw_record(replace(third, index=9)))
    forged_third[45] ^= 0x01
    both = cat.derive(
        "payload_damage_and_wrong_index",
        base4,
        Mutation().write(SEG1, third.offset, bytes(forged_third)),
        "record 3 carries index 9 (header checksum recomputed) and one bit of its payload is flipped",
        defect="record 3 fails both the payload checksum and the index check",
    )
    cat.read(
        "must.reader.record.payload_damage_and_wrong_index",
        both,
        reject(records(facts[:2]), error("checksum_mismatch", 1, third.offset, 3)),
        ["R-8"],
        description="the payload checksum (step 6) is checked before the index (step 7)",
    )


# -- the end of a segment (protocols 8.4, R-39) ----------------------------------------------------------------


def _sealed_next_index_disagrees() -> tuple[LogBuilder, LogBuilder, bytes]:
    """Segment 1 sealed after records 1 and 2 with a slot whose next_index is 4; segment 2 from index 4."""
    first = LogBuilder()
    first.batch(b"one", b"two")
    first.seal(first.last)
    second = LogBuilder(first_log=2, base_index=4)
    second.batch(b"four")
    seg1 = with_slot(first.last.file_bytes(), replace(first.last.commit, next_index=4))
    return first, second, seg1


def _segment_ends(cat: Catalog) -> None:
    # A sealed segment ends at its commit point: a valid record beyond it is not read.
    first = LogBuilder()
    r1, r2 = first.batch(b"one", b"two")
    first.write(b"three")
    first.seal(first.last)
    second = LogBuilder(first_log=2, base_index=4)
    second.batch(b"four")
    sealed_tail = forged(
        cat,
        "sealed_with_record_beyond_commit_point",
        "segment 1 sealed after records 1 and 2, a valid record 3 beyond its commit point; segment 2 from index 4",
        files_of(first, second),
        workload=trace_of(first, second),
        defect="segment 2's base index is 4: it counts record 3, which segment 1's seal does not cover",
    )
    cat.read(
        "must.reader.crash.sealed_with_record_beyond_commit_point",
        sealed_tail,
        reject(records([r1, r2]), error("chain_broken", 2, 0, 3)),
        ["R-16", "R-17"],
        description="a sealed segment ends at its commit point (protocols 8.4 step 2): its tail is never walked,"
        " so segment 2 does not continue it",
    )

    # The tail walk of a finished segment starts with the slot's last_asqn.
    first = LogBuilder()
    (a1,) = first.batch((b"one", 5))
    first.write(b"two", asqn=3)
    second = LogBuilder(first_log=2, base_index=3)
    second.batch(b"three")
    asqn_tail = forged(
        cat,
        "finished_tail_asqn_going_back",
        "segment 1 open: record 1 (asqn 5) committed, record 2 (asqn 3) beyond the commit point; segment 2 from"
        " index 3",
        files_of(first, second),
        workload=trace_of(first, second),
        defect="the record beyond segment 1's commit point has an asqn below the slot's last_asqn",
    )
    cat.read(
        "must.reader.crash.finished_tail_asqn_from_slot",
        asqn_tail,
        reject(records([a1]), error("chain_broken", 2, 0, 2)),
        END,
        description="the tail walk of protocols 8.4 starts with the slot's last_asqn: record 2 fails it, segment 1"
        " ends at its commit point, and segment 2 does not continue it",
    )

    # R-39 at C, also in a finished segment whose end lies beyond C.
    first = LogBuilder()
    r1, r2 = first.batch(b"one", b"two")
    commit = first.last.commit
    first.last.next_index = 4
    first.write(b"four")
    first.write(b"five")
    second = LogBuilder(first_log=2, base_index=6)
    second.batch(b"six")
    files = files_of(first, second)
    files[SEG1] = with_slot(files[SEG1], replace(commit, next_index=4))
    slot_at = slot_bytes(commit)[0]
    beyond = forged(
        cat,
        "finished_next_index_disagrees",
        "segment 1 open: records 1 and 2 below the commit point, whose slot says next_index 4; records 4 and 5"
        " beyond it; segment 2 from index 6",
        files,
        workload=trace_of(first, second),
        defect="segment 1's slot says 4 records precede its commit point; 2 do (record 3 lost)",
    )
    cat.read(
        "must.reader.crash.finished_next_index_disagrees",
        beyond,
        reject(records([r1, r2]), error("bad_header", 1, slot_at, 3)),
        END,
        description="the walk makes the check of R-39 at the commit point also when the segment's end lies beyond it",
    )
    cat.read(
        "must.reader.split.finished_next_index_disagrees_stop_at_commit_point",
        beyond,
        reject(records([r1, r2]), error("bad_header", 1, slot_at, 3)),
        [*SPLIT, "R-39"],
        split=(1, 256, r2.offset + 1),
        description="b(t) is the commit point: the split makes the check of R-39 there (WALK step 2.1) before it"
        " ends at b(t)",
    )

    # A split or a ref in a finished segment uses its end S (protocols 8.4), not C.
    lost = cat.fixtures["finished_segment_unpublished_records"]
    facts = finished_segment_log().published()
    cat.read(
        "must.reader.split.finished_segment_tail",
        lost,
        accept(records(facts[:4])),
        [*SPLIT, "R-16"],
        split=(1, 256, U64_MAX),
        description="a split of a finished segment that is not sealed returns the records of its tail walk too:"
        " a split always computes S by protocols 8.4",
    )
    cat.read(
        "must.reader.ref.after_record_beyond_commit_point",
        lost,
        accept(records(facts[3:])),
        [*REFS, "R-16"],
        after=facts[2].ref,
        description="a ref to a record between the commit point and the end S of a finished segment is valid",
    )

    # N+1's header is checked at END, before N's check of R-39.
    first, second, seg1 = _sealed_next_index_disagrees()
    r1, r2 = first.published()
    files = files_of(first, second)
    files[SEG1] = seg1
    disagrees = forged(
        cat,
        "sealed_next_index_disagrees",
        "segment 1 sealed after records 1 and 2 with a slot that says next_index 4; segment 2 from index 4",
        files,
        workload=trace_of(first, second),
        defect="segment 1's slot says 3 records precede its commit point; 2 do",
    )
    both = cat.derive(
        "next_index_disagrees_and_successor_header",
        disagrees,
        Mutation().write(SEG2, 40, bytes([files[SEG2][40] ^ 0x01])),
        "as sealed_next_index_disagrees, and one bit of segment 2's log id flipped (its header checksum fails)",
        defect="segment 1's slot disagrees with its records, and segment 2's header checksum fails",
    )
    cat.read(
        "must.reader.header.successor_header_before_next_index_check",
        both,
        reject(records([r1, r2]), error("bad_header", 2, 92)),
        [*HEADER, "R-39"],
        description="END reads segment 2's header at segment 1's commit point, before the check of R-39 there",
    )
    r4 = second.published()[0]
    cat.read(
        "must.reader.tolerant.sealed_next_index_disagrees",
        disagrees,
        tolerant(accept(records([r1, r2, r4])), [damage("bad_header", 1, 144, 3, skipped=0, resumed=4)]),
        [*TOLERANT, "R-39"],
        tolerant=True,
        description="after the disagreement of R-39 a tolerant walk goes on with the slot's next_index: segment 2"
        " continues it",
    )

    # A version 1 segment passes the previous asqn on (R-19, NEXT step 5).
    first = LogBuilder()
    (v1,) = first.batch((b"one", 5))
    first.seal(first.last)
    legacy = LegacySegment(2, [b"legacy-two"], True, 3)
    third = LogBuilder(first_log=3, base_index=3)
    third.batch((b"three", 3))
    files = files_of(first, third)
    files[legacy.name] = legacy.file_bytes()
    mixed = forged(
        cat,
        "asqn_going_back_across_version_1",
        "version 2 segment 1 (record 1, asqn 5, sealed), version 1 segment 2 (closed, one record), version 2"
        " segment 3 from index 3 (record 3, asqn 3)",
        files,
        workload=trace_of(first, third),
        defect="record 3's asqn is below record 1's",
    )
    cat.read(
        "must.reader.legacy.asqn_carried_across_version_1",
        mixed,
        reject(
            [*records([v1]), *records(legacy.facts(2), checked=False)],
            error("asqn_not_increasing", 3, 256, 3),
        ),
        ["R-19"],
        description="the previous asqn carries over a version 1 segment, whose records have none: record 3's asqn"
        " goes back",
        requires=["legacy_v1"],
    )


# -- tolerant reads (readers 10.4) ------------------------------------------------------------------------------


def _tolerant(cat: Catalog) -> None:
    # No search window: the next record lies more than 1 MiB after the damage.
    log = LogBuilder()
    r1 = log.write(b"one")
    big = log.write(bytes(1_050_000))
    r3 = log.write(b"three")
    log.publish()
    files = log.files()
    files[SEG1] = patch(files[SEG1], big.offset + 140, b"\x01")
    far = forged(
        cat,
        "damage_far_before_next_record",
        "record 2 has a payload of 1 050 000 zero bytes, one of them set to 1; records 1 and 3 around it",
        files,
        workload=log.trace,
        defect="one byte of record 2's payload changed: its payload checksum fails",
    )
    cat.read(
        "must.reader.tolerant.resync_beyond_1_mib",
        far,
        tolerant(
            accept(records([r1, r3])),
            [damage("checksum_mismatch", 1, big.offset, 2, skipped=r3.offset - big.offset, resumed=3)],
        ),
        TOLERANT,
        tolerant=True,
        description="resynchronisation has no window: a record more than 1 MiB after the damage is found",
    )

    # No resume point in a finished segment: the walk skips to S', not to C.
    first = LogBuilder()
    r1, r2, r3 = first.batch(b"one", b"two", b"three")
    commit = first.last.commit
    first.last.next_index = 2
    stale = first.write(b"two, again")
    second = LogBuilder(first_log=2, base_index=3)
    (s3,) = second.batch(b"three, again")
    files = files_of(first, second)
    files[SEG1] = flipped(with_slot(files[SEG1], replace(commit, next_index=2)), r3.offset + 41)
    lost = forged(
        cat,
        "finished_damage_without_resume_point",
        "segment 1 open: records 1 to 3 below the commit point (record 3's payload damaged), a slot that says"
        " next_index 2, a record carrying index 2 beyond the commit point; segment 2 from index 3",
        files,
        workload=trace_of(first, second),
        defect="record 3's payload checksum fails, and segment 1's slot disagrees with its records",
    )
    cat.read(
        "must.reader.tolerant.finished_damage_without_resume_point",
        lost,
        tolerant(
            accept(records([r1, r2, s3])),
            [damage("checksum_mismatch", 1, r3.offset, 3, skipped=stale.end - r3.offset, resumed=None)],
        ),
        TOLERANT,
        tolerant=True,
        description="no position satisfies the conditions (indexes 3 to I_S - 1 = 2): the walk of segment 1 ends at"
        " S' = min(S, F), beyond the commit point, and the bytes skipped run there",
    )


# -- refs (readers 10.6) ------------------------------------------------------------------------------------------


def _refs(cat: Catalog) -> None:
    log = LogBuilder()
    facts = log.batch((b"one", 5), (b"two", 7), (b"three", 8))
    base = cat.fixture("three_records_with_asqns", "records 1 to 3, asqns 5, 7, 8", log.files(), workload=log.trace)
    valid(cat, base, facts)
    third = facts[2]
    back = cat.derive(
        "asqn_going_back_after_ref",
        base,
        Mutation().write(SEG1, third.offset, raw_record(replace(third, asqn=6))),
        "record 3 carries asqn 6, below record 2's 7 (both checksums recomputed)",
        defect="record 3's asqn goes back",
    )
    cat.read(
        "must.reader.ref.asqn_going_back_after_ref",
        back,
        reject([], error("asqn_not_increasing", 1, third.offset, 3)),
        REFS,
        after=facts[1].ref,
        description="after a ref the previous asqn is the referenced record's: record 3's asqn goes back",
    )

    log = LogBuilder()
    facts = log.batch((b"one", 5), b"two", (b"three", 6))
    base = cat.fixture(
        "three_records_middle_without_asqn",
        "records 1 to 3, asqns 5, none, 6",
        log.files(),
        workload=log.trace,
    )
    valid(cat, base, facts)
    third = replace(facts[2], asqn=4)
    across = cat.derive(
        "asqn_going_back_across_ref",
        base,
        Mutation().write(SEG1, third.offset, raw_record(third)),
        "record 3 carries asqn 4, below record 1's 5 (both checksums recomputed)",
        defect="record 3's asqn goes back, across record 2, which has none",
    )
    cat.read(
        "must.reader.ref.asqn_before_ref_unknown",
        across,
        accept(records([third])),
        REFS,
        after=facts[1].ref,
        description="a read after a ref starts with previous asqn -1 at the ref: record 2 has none, so record 3's"
        " asqn is not compared with the records before the ref",
    )

    cat.read(
        "must.reader.ref.blank_last_segment",
        cat.fixtures["blank_last_segment_empty"],
        reject([], error("invalid_ref")),
        REFS,
        after="2:256:6",
        description="a ref into a blank last segment names a segment that is absent: invalid_ref",
    )
    cat.read(
        "must.reader.ref.damaged_header",
        cat.fixtures["header_checksum_mismatch"],
        reject([], error("bad_header", 1, 92)),
        [*REFS, "R-6"],
        after="1:256:1",
        description="a ref into a segment whose header fails reports the header's error, not invalid_ref",
    )
    cat.read(
        "must.reader.ref.successor_header_damaged",
        cat.fixtures["successor_header_checksum"],
        reject([], error("bad_header", 2, 92)),
        [*REFS, "R-6"],
        after="1:256:1",
        description="validating a ref computes the end of its segment, which reads the successor's header: its"
        " error is reported as such",
    )

    several = cat.fixtures["several_segments"]
    every = several_segments_log().published()
    cat.read(
        "must.reader.ref.zero_padded_full_width",
        several,
        accept(records(every[1:])),
        REFS,
        after="0000000001:00000000000000000256:00000000000000000001",
        description="leading zeros up to the grammar's widths (10, 20, 20 digits) are accepted",
    )
    cat.read(
        "must.reader.ref.zero_padded_too_long",
        several,
        reject([], error("invalid_ref")),
        REFS,
        after="00000000001:256:1",
        description="a log number of 11 digits does not match the grammar, leading zeros or not",
    )
    cat.read(
        "must.reader.ref.form_feed_around",
        several,
        reject([], error("invalid_ref")),
        REFS,
        after="\f1:256:1",
        description="only ASCII space, tab, CR and LF are white space around a ref: a form feed is not",
    )


# -- splits (readers 10.5) ----------------------------------------------------------------------------------------


def _splits(cat: Catalog) -> None:
    skippable = skippable_log().last.records
    data1, data2, data3 = skippable[0], skippable[2], skippable[4]
    cat.read(
        "must.reader.split.skippable_frames_whole",
        cat.fixtures["skippable_frames"],
        accept(records([data1, data2, data3])),
        SPLIT,
        split=(1, 256, U64_MAX),
        description="the whole segment as one split: its data records, skippable records walked over",
    )
    cat.read(
        "must.reader.split.continuity_at_skippable_record",
        cat.fixtures["skippable_frames"],
        accept(records([data2, data3])),
        SPLIT,
        split=(1, 257, U64_MAX),
        description="the record at q may be a skippable one (steps 1 to 6 of 4.3.1 accept it): data record 2,"
        " followed by a skippable record, is a boundary",
    )

    log = LogBuilder()
    copies = log.batch(b"one", b"two", b"three")
    log.cutover()
    payload = b"copy:" + copies[1].encode() + copies[2].encode() + b":end"
    r4, r5, r6 = log.batch(payload, b"five", b"six")
    base = cat.fixture(
        "record_copies_in_payload",
        "segment 1 sealed (records 1 to 3); segment 2 from index 4, whose record 4's payload holds whole copies of"
        " records 2 and 3",
        log.files(),
        workload=log.trace,
    )
    cat.read(
        "must.reader.split.record_copies_in_payload_whole",
        base,
        accept(records([r4, r5, r6])),
        SPLIT,
        split=(2, 256, U64_MAX),
        description="the whole of segment 2 as one split: record 4 with the copies in its payload, records 5, 6",
    )
    cat.read(
        "must.reader.split.record_copies_below_base_index",
        base,
        accept(records([r5, r6])),
        SPLIT,
        split=(2, 258, U64_MAX),
        description="a boundary's index is at least the segment's base index: the copies of records 2 and 3 inside"
        " record 4 are not boundaries",
    )

    first = LogBuilder()
    r1 = first.write(b"one")
    embedded = RecordFact(1, 0, 3, -1, r1.timestamp_us, b"EMB").encode()
    r2 = first.write(b"xxxxxxxxxx" + embedded)
    commit = first.publish()
    second = LogBuilder(first_log=2, base_index=4)
    second.batch(b"four")
    files = files_of(first, second)
    files[SEG1] = with_slot(files[SEG1], replace(commit, commit_offset=r2.end - len(embedded)))
    inside = forged(
        cat,
        "commit_point_inside_record",
        "segment 1 open: record 1, then record 2 whose payload ends with a whole valid record carrying index 3; the"
        " slot's commit point is where that embedded record starts; segment 2 from index 4",
        files,
        workload=trace_of(first, second),
        defect="segment 1's commit point lies inside record 2",
    )
    cat.read(
        "must.reader.split.commit_point_inside_record",
        inside,
        reject(records([r1]), error("length_out_of_range", 1, r2.offset, 2)),
        SPLIT,
        split=(1, 256, U64_MAX),
        description="a record that starts below the commit point is bounded by it (U = C), also when the"
        " segment's end S lies beyond it: record 2 crosses C",
    )


# -- torn tails -----------------------------------------------------------------------------------------------------


def _torn(cat: Catalog) -> None:
    basic = basic_log()
    garbage = cat.derive(
        "tail_garbage_then_blank_segment",
        cat.fixtures["tail_garbage"],
        Mutation().create(SEG2, b""),
        "3000 bytes of garbage after segment 1's commit point, and an empty 00000002.dat",
        defect=None,
        faults=["T6", "T8"],
    )
    cat.read(
        "must.reader.torn.garbage_below_blank_last_segment",
        garbage,
        recovered(records(basic.published()), log=1, offset=basic.last.commit.commit_offset),
        ["R-7", "R-12"],
        description="a blank last segment is absent: the last segment is segment 1, and its tail is torn",
    )

    several = several_segments_log()
    early = [fact for fact in several.published() if fact.log <= 2]
    sealed = cat.derive(
        "sealed_last_segment_with_tail",
        cat.fixtures["sealed_without_successor"],
        Mutation().append(SEG2, b"\x07garbage-after-seal"),
        "segment 2 sealed, its successor missing, 19 bytes of garbage after segment 2's commit point",
        defect=None,
        faults=["T6", "T13"],
    )
    cat.read(
        "must.reader.torn.sealed_last_segment",
        sealed,
        recovered(records(early), log=2, offset=several.segment(2).commit.commit_offset),
        ["R-12", "R-17"],
        description="a torn tail is non-zero bytes beyond the last segment's commit point, sealed or not",
    )


# -- seeks (readers 10.7) ---------------------------------------------------------------------------------------------


def _seek(cat: Catalog) -> None:
    several = several_segments_log()
    facts = several.published()
    data = cat.fixtures["several_segments"].files[SEG1]
    damaged = cat.derive(
        "several_segments_first_record_damaged",
        cat.fixtures["several_segments"],
        Mutation().write(SEG1, facts[0].offset + 40, bytes([data[facts[0].offset + 40] ^ 0x01])),
        "one bit of record 1's payload flipped (segment 1 of three)",
        defect="record 1's payload checksum fails",
        faults=["T10"],
    )
    cat.read(
        "may.reader.seek.damage_below_start_segment",
        damaged,
        accept(records(facts[5:])),
        ["R-44"],
        start={"from_index": "6"},
        description="a seek starts at the segment its header search picks (segment 3, base index 6) and never"
        " walks the segments below it: the damage in segment 1 is not met",
    )
