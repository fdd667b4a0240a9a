"""Crash states: torn tails, lost publications, torn slots, interrupted cutovers.

None of these is damage. A reader returns the committed records and reports
non-zero bytes beyond the last segment's commit point as a torn tail; a
writer's recovery adopts the whole valid records at the start of the tail and
removes the rest (spec sections 6.3, 7 and 8.3).
"""

from __future__ import annotations

from openbinlog import HEADER_SIZE
from openbinlog._segment import CommitState, build_header, decode_slot

from .bases import basic_log, finished_segment_log, several_segments_log, unpublished_tail_log
from .builder import LOCK, LOG_ID, LogBuilder, RecordFact, raw_record, seeded_bytes, slot_bytes
from .catalog import Catalog
from .model import (
    RETIRED_BY_2_0_2,
    Fixture,
    accept,
    after_recovery,
    error,
    implementation_defined,
    records,
    recovered,
    recovery_refused,
    reject,
    segment_state,
)
from .mutations import Mutation

SEG1 = "00000001.dat"
SEG2 = "00000002.dat"
TEMP2 = ".00000002.dat.5eed.tmp"
TAIL_READ = ["R-12", "R-15"]
RECOVERY = ["W-20", "W-21", "W-22", "W-23", "W-24"]


def add(cat: Catalog) -> None:
    _torn_tails(cat)
    _tail_contents(cat)
    _slots(cat)
    _cutover(cat)
    _preallocated(cat)


def _torn(cat: Catalog, fixture: Fixture, log: LogBuilder, name: str, parser: bool = True) -> None:
    """Read case: the published records, and a torn tail at the last segment's commit point."""
    last = log.last
    cat.read(
        f"must.reader.torn.{name}",
        fixture,
        recovered(records(log.published()), log=last.log, offset=last.commit.commit_offset),
        TAIL_READ,
        parser=parser,
    )


def _recover(cat: Catalog, fixture: Fixture, name: str, kept: list[RecordFact], *, size: int, extra: list[str]) -> None:
    cat.recover(
        f"must.writer.recover.{name}",
        fixture,
        after_recovery(records(kept), {SEG1: segment_state(size=size)}),
        [*RECOVERY, *extra],
    )


def _torn_tails(cat: Catalog) -> None:
    log = unpublished_tail_log(1)
    committed = log.published()
    torn_record = log.last.records[-1]
    commit = log.last.commit.commit_offset
    base = cat.fixture(
        "tail_unpublished_record",
        "a whole, valid record written after the commit point and never published (crash before step 9)",
        log.files(),
        workload=log.trace,
        faults=["T1"],
    )
    _torn(cat, base, log, "unpublished_record")
    _recover(cat, base, "adopt_unpublished_record", [*committed, torn_record], size=torn_record.end, extra=[])
    cat.read(
        "must.reader.ref.unpublished_record",
        base,
        reject([], error("invalid_ref")),
        ["R-29"],
        after=torn_record.ref,
        description="a ref to a valid record beyond the commit point: not committed, so not a valid ref",
    )

    zero_cut = cat.derive(
        "torn_length_zero_bytes",
        base,
        Mutation().truncate(SEG1, torn_record.offset + 2),
        "append torn after 2 bytes of the length field, both zero: nothing but zeros after the commit point",
        defect=None,
        faults=["T3"],
    )
    cat.read("must.reader.torn.length_zero_bytes", zero_cut, accept(records(committed)), TAIL_READ, parser=True)
    _recover(cat, zero_cut, "torn_length_zero_bytes", committed, size=commit, extra=[])
    cuts = {
        "length_only": (4, "the 4 bytes of the length field"),
        "header_partial": (20, "20 of the 40 record header bytes"),
        "body_partial": (40 + 75, "the record header and half of the payload"),
        "last_byte_missing": (torn_record.size - 1, "every byte but the last"),
    }
    for name, (kept_bytes, what) in cuts.items():
        fixture = cat.derive(
            f"torn_{name}",
            base,
            Mutation().truncate(SEG1, torn_record.offset + kept_bytes),
            f"append torn at any byte: {what} of the unpublished record reached the file",
            defect=None,
            faults=["T3"],
        )
        _torn(cat, fixture, log, name)
        _recover(cat, fixture, f"torn_{name}", committed, size=commit, extra=[])

    large = unpublished_tail_log(0)
    batch = [large.write(seeded_bytes(20 + number, 1000)) for number in range(6)]
    large_fixture = cat.fixture(
        "tail_unpublished_batch",
        "a batch of six 1000-byte records written after the commit point, never published",
        large.files(),
        workload=large.trace,
        faults=["T1"],
    )
    _torn(cat, large_fixture, large, "unpublished_batch")
    page = 4096
    whole = [fact for fact in batch if fact.end <= page]
    cut = cat.derive(
        "torn_at_page_boundary",
        large_fixture,
        Mutation().truncate(SEG1, page),
        "a killed large write that stopped exactly at a 4 KiB boundary, inside the third record of the batch",
        defect=None,
        faults=["T2"],
    )
    _torn(cat, cut, large, "page_boundary")
    _recover(cat, cut, "torn_at_page_boundary", [*large.published(), *whole], size=whole[-1].end, extra=[])

    two = unpublished_tail_log(2)
    pair = cat.fixture(
        "tail_unpublished_records",
        "two whole records after the commit point: the publication was lost",
        two.files(),
        workload=two.trace,
        faults=["T1", "T8"],
    )
    _torn(cat, pair, two, "unpublished_records")
    _recover(cat, pair, "adopt_unpublished_records", two.records(), size=two.last.end, extra=[])

    three = unpublished_tail_log(3)
    first, hole, _behind = three.last.records[-3:]
    holed = cat.derive(
        "tail_hole_then_record",
        cat.fixture(
            "tail_unpublished_three",
            "three whole records after the commit point, never published",
            three.files(),
            workload=three.trace,
            faults=["T1"],
        ),
        Mutation().fill(SEG1, hole.offset, hole.size),
        "the middle record of an unpublished batch never reached the disk: a hole of zeros, then a whole record",
        defect=None,
        faults=["T4"],
    )
    _torn(cat, cat.fixtures["tail_unpublished_three"], three, "unpublished_three")
    _torn(cat, holed, three, "hole_then_record")
    _recover(cat, holed, "stop_at_hole", [*three.published(), first], size=first.end, extra=[])

    failed = unpublished_tail_log(2)
    kept, lost = failed.last.records[-2:]
    half = lost.offset + 40 + len(lost.payload) // 2
    after_sync = cat.derive(
        "after_failed_sync",
        pair,
        Mutation().fill(SEG1, half, lost.end - half),
        "a sync that failed: the batch was never acknowledged and the second half of its last record is lost",
        defect=None,
        faults=["T9"],
    )
    _torn(cat, after_sync, failed, "after_failed_sync")
    _recover(cat, after_sync, "after_failed_sync", [*failed.published(), kept], size=kept.end, extra=["W-19"])


def _tail_contents(cat: Catalog) -> None:
    log = basic_log()
    basic = cat.fixtures["basic"]
    committed = log.published()
    commit = log.last.commit.commit_offset

    zeros = cat.derive(
        "tail_zero_filled",
        basic,
        Mutation().extend(SEG1, 4096),
        "4096 zero bytes after the commit point: the file size reached the disk before the data",
        defect=None,
        faults=["T5"],
    )
    cat.read("must.reader.torn.zero_filled", zeros, accept(records(committed)), TAIL_READ, parser=True)
    _recover(cat, zeros, "truncate_zero_filled_tail", committed, size=commit, extra=[])

    garbage = cat.derive(
        "tail_garbage",
        basic,
        Mutation().append(SEG1, b"\x01" + seeded_bytes(77, 2999)),
        "3000 bytes of garbage after the commit point (stale blocks of an earlier file)",
        defect=None,
        faults=["T6"],
    )
    _torn(cat, garbage, log, "garbage")
    _recover(cat, garbage, "truncate_garbage_tail", committed, size=commit, extra=[])

    hostile = RecordFact(1, commit, 6, -1, 0, b"")
    hostile_tail = cat.derive(
        "tail_hostile_length",
        basic,
        Mutation().append(SEG1, raw_record(hostile, length=0xFFFFFFFF)),
        "a record header after the commit point whose checksummed length says 4 GiB",
        defect=None,
        faults=["T15", "T6"],
    )
    _torn(cat, hostile_tail, log, "hostile_length")
    _recover(cat, hostile_tail, "truncate_hostile_length", committed, size=commit, extra=["R-10"])


def _slots(cat: Catalog) -> None:
    log = unpublished_tail_log(2)
    segment = log.last
    old = segment.commit
    newest = segment.records[-1]
    new = CommitState(old.generation + 1, newest.end, newest.index + 1, old.last_asqn, newest.timestamp_us, 0)
    at, raw = slot_bytes(new)
    file = bytearray(log.files()[SEG1])
    torn = raw[:24] + bytes(file[at + 24 : at + 48])
    file[at : at + 48] = torn
    if decode_slot(bytes(file[at : at + 48])) is not None:
        raise AssertionError("the torn slot must fail its checksum")
    fixture = cat.derive(
        "torn_slot",
        cat.fixtures["tail_unpublished_records"],
        Mutation().write(SEG1, at, raw[:24]),
        "the publication of two records torn after 24 of the slot's 48 bytes: the previous slot stays active",
        defect=None,
        faults=["T8"],
    )
    cat.read(
        "must.reader.torn.torn_slot",
        fixture,
        recovered(records(log.published()), log=1, offset=old.commit_offset),
        ["R-3", *TAIL_READ],
    )
    _recover(cat, fixture, "torn_slot", log.records(), size=newest.end, extra=["R-3"])


def _cutover(cat: Catalog) -> None:
    log = basic_log()
    basic = cat.fixtures["basic"]
    committed = records(log.published())
    commit = log.last.commit.commit_offset
    successor_header = build_header(
        log=2, log_id=LOG_ID, base_index=6, created_us=log.last.created_us + 1_000_000, last_asqn=11
    )

    temp = cat.derive(
        "temp_file_left",
        basic,
        Mutation().create(TEMP2, successor_header[:100]),
        "a cutover crashed while writing the new header into its temporary file",
        defect=None,
        faults=["T13"],
    )
    cat.read("must.reader.crash.temp_file_left", temp, accept(committed), ["R-1"], parser=True)
    cat.recover(
        "must.writer.recover.remove_temp_file",
        temp,
        after_recovery(committed, {SEG1: segment_state(size=commit, sealed=False)}),
        ["W-25"],
    )

    blanks = {
        "zeros": (
            Mutation().create(SEG2, b"").extend(SEG2, 4096),
            "4096 zero bytes: the name reached the disk, the header did not",
        ),
        # Retired: 100 bytes that are not all zero are not blank (spec 1.4, 3.5 as corrected by suite 2.0.2);
        # short_last_segment (catalog_damage) holds the same bytes with the corrected expectation.
        "short": (Mutation().create(SEG2, successor_header[:100]), "100 bytes: shorter than a header"),
        "empty": (Mutation().create(SEG2, b""), "zero bytes"),
        "short_zeros": (Mutation().create(SEG2, bytes(100)), "100 zero bytes: shorter than a header, all zero"),
    }
    for name, (mutation, what) in blanks.items():
        fixture = cat.derive(
            f"blank_last_segment_{name}",
            basic,
            mutation,
            f"a blank last segment of {what}: it never held a record and is treated as absent",
            defect=None,
            faults=["T8", "T13"],
        )
        # Retired by suite 2.0.2: 100 non-zero bytes are not blank; nor are 4096 zero bytes, longer than a
        # header (zeroed_last_segment below holds the same bytes with the corrected expectation).
        until = RETIRED_BY_2_0_2 if name in ("short", "zeros") else None
        cat.read(f"must.reader.crash.blank_last_segment_{name}", fixture, accept(committed), ["R-7"], until=until)
        cat.recover(
            f"must.writer.recover.remove_blank_last_segment_{name}",
            fixture,
            after_recovery(committed, {SEG1: segment_state(size=commit, sealed=False)}),
            ["W-25"],
            until=until,
        )

    not_blank = {
        "short_last_segment": (
            Mutation().create(SEG2, successor_header[:100]),
            "segment 2, the last, holds 100 bytes: the start of its header (a header lost with the file size kept"
            " short); they are not all zero, so it is not blank",
            ["T8", "T13"],
            error("truncated", 2, 0),
            "header check step 1 fails, truncated at offset 0",
        ),
        "zeroed_last_segment": (
            Mutation().create(SEG2, b"").extend(SEG2, 4096),
            "segment 2, the last, holds 4096 zero bytes: longer than a header, so not blank (spec 3.5): a header"
            " that was durable is lost, with whatever followed it",
            ["T8", "T10"],
            error("unsupported_version", 2, 4),
            "header check step 3 fails (version 0), unsupported_version at offset 4",
        ),
    }
    for name, (mutation, defect, faults, failure, step) in not_blank.items():
        fixture = cat.derive(name, basic, mutation, defect, defect=defect, faults=faults)
        cat.read(
            f"must.reader.header.{name}",
            fixture,
            reject(committed, failure),
            ["R-6", "R-7", "R-9", "R-16"],
            description=f"{defect}: segment 1 is finished by it, and section 8.4 checks segment 2's header first when"
            f" it computes segment 1's end at its commit point: {step}, after segment 1's records below its commit"
            " point (spec 10.2.3)",
        )
        cat.recover(
            f"must.writer.recover.refuse_{name}",
            fixture,
            recovery_refused(failure),
            ["R-6", "W-25", "W-24"],
            description=f"recover: {defect}: it is not deleted as a blank last segment; its header fails, recovery"
            " refuses and changes nothing",
        )

    blank_only = cat.fixture(
        "blank_only_segment",
        "the only segment is blank: an empty log",
        {LOCK: b"", SEG1: bytes(256)},
        faults=["T8"],
    )
    cat.read("must.reader.crash.blank_only_segment", blank_only, accept([]), ["R-7"])

    opened = basic_log()
    opened.start_successor()
    unsealed = cat.fixture(
        "open_segment_with_successor",
        "a cutover crashed after linking segment 2: segment 1 is open, segment 2 exists (two open segments)",
        opened.files(),
        workload=opened.trace,
        faults=["T13"],
    )
    cat.read(
        "must.reader.crash.open_segment_with_successor",
        unsealed,
        accept(committed),
        ["R-16", "R-17", "R-18"],
        parser=True,
    )
    cat.recover(
        "must.writer.recover.seal_open_predecessor",
        unsealed,
        after_recovery(
            committed,
            {SEG1: segment_state(size=commit, sealed=True), SEG2: segment_state(size=HEADER_SIZE, sealed=False)},
        ),
        ["W-30"],
    )
    linked = cat.derive(
        "link_done_temp_left",
        unsealed,
        Mutation().create(TEMP2, opened.segment(2).file_bytes()),
        "a cutover crashed after the link and before deleting the temporary name",
        defect=None,
        faults=["T13"],
    )
    cat.read("must.reader.crash.link_done_temp_left", linked, accept(committed), ["R-1", "R-16"], parser=True)
    cat.recover(
        "must.writer.recover.link_done_temp_left",
        linked,
        after_recovery(
            committed,
            {SEG1: segment_state(size=commit, sealed=True), SEG2: segment_state(size=HEADER_SIZE, sealed=False)},
        ),
        ["W-25", "W-30"],
    )

    several = several_segments_log()
    sealed_only = cat.derive(
        "sealed_without_successor",
        cat.fixtures["several_segments"],
        Mutation().remove("00000003.dat"),
        "segment 2 is sealed but its successor is missing (deleted, or lost with its directory entry)",
        defect=None,
        faults=["T13"],
    )
    early = [fact for fact in several.published() if fact.log <= 2]
    cat.read("must.reader.crash.sealed_without_successor", sealed_only, accept(records(early)), ["R-17"], parser=True)
    seg2 = several.segment(2)
    cat.recover(
        "must.writer.recover.sealed_without_successor",
        sealed_only,
        after_recovery(
            records(early),
            {SEG1: segment_state(sealed=True), SEG2: segment_state(size=seg2.end, sealed=True)},
            optional=("00000003.dat",),
        ),
        ["W-29"],
    )

    _finished_segments(cat)


def _finished_segments(cat: Catalog) -> None:
    """Segment 1 open and segment 2 present: segment 1's end is computed by section 8.4."""
    log = finished_segment_log()
    r1, r2 = log.published()[:2]
    base = cat.fixture(
        "finished_segment_with_records",
        "segment 1 open (not sealed) and segment 2 holding records: segment 1 is finished",
        log.files(),
        workload=log.trace,
        faults=["T13"],
    )
    every = records(log.published())
    cat.read("must.reader.crash.finished_segment_with_records", base, accept(every), ["R-16"], parser=True)

    lost = cat.derive(
        "finished_segment_unpublished_records",
        base,
        lose_second_commit(),
        "segment 1's last publication (records 3 and 4) was lost; segment 2 starts at index 5",
        defect=None,
        faults=["T13", "T8"],
    )
    chain_error = error("chain_broken", log=2, offset=0, index=3)
    cat.read(
        "must.reader.crash.finished_segment_unpublished_records",
        lost,
        implementation_defined(
            "finished_segment_end",
            tail_walk=accept(every),
            commit_point=reject(records([r1, r2]), chain_error),
        ),
        ["R-16"],
    )
    seg1_end = log.segment(1).end
    cat.recover(
        "must.writer.recover.seal_adopting_unpublished_records",
        lost,
        after_recovery(
            every,
            {SEG1: segment_state(size=seg1_end, sealed=True), SEG2: segment_state(sealed=False)},
        ),
        ["W-30", "W-21"],
    )

    overlap = LogBuilder()
    o1, o2 = overlap.batch(b"one", b"two")
    overlap_gen1 = bytes(overlap.last.data[144:192])
    (o3,) = overlap.batch(b"three")
    overlap.start_successor()
    overlap.batch(b"four", b"five")
    stray = RecordFact(1, o3.end, 4, -1, o3.timestamp_us, b"four, written to segment 1 too")
    beyond = cat.derive(
        "finished_segment_beyond_successor_base",
        cat.fixture(
            "finished_segment_short",
            "segment 1 open with three records, segment 2 from index 4",
            overlap.files(),
            workload=overlap.trace,
        ),
        Mutation().write(SEG1, 144, overlap_gen1).append(SEG1, stray.encode()),
        "segment 1's last publication was lost and a valid record 4 follows record 3 in it; segment 2 starts at 4",
        defect=None,
        faults=["T13", "T8"],
    )
    cat.read(
        "must.reader.crash.finished_segment_short",
        cat.fixtures["finished_segment_short"],
        accept(records(overlap.published())),
        ["R-16"],
        parser=True,
    )
    cat.read(
        "must.reader.crash.finished_segment_beyond_successor_base",
        beyond,
        implementation_defined(
            "finished_segment_end",
            tail_walk=accept(records(overlap.published())),
            commit_point=reject(records([o1, o2]), error("chain_broken", log=2, offset=0, index=3)),
        ),
        ["R-16"],
    )
    cat.recover(
        "must.writer.recover.seal_stopping_at_successor_base",
        beyond,
        after_recovery(
            records(overlap.published()),
            {SEG1: segment_state(size=o3.end, sealed=True), SEG2: segment_state(sealed=False)},
        ),
        ["W-30", "W-21", "W-22"],
    )

    tailed = LogBuilder()
    tailed.batch(b"one", b"two")
    tailed.start_successor()
    tailed.batch(b"three")
    garbage = cat.derive(
        "finished_segment_tail_garbage",
        cat.fixture(
            "finished_segment_open",
            "segment 1 open with two records, segment 2 holding the third",
            tailed.files(),
            workload=tailed.trace,
        ),
        Mutation().append(SEG1, b"\x02" + seeded_bytes(5, 700)),
        "segment 1 is finished but not sealed, with garbage after its commit point",
        defect=None,
        faults=["T13", "T6"],
    )
    cat.read(
        "must.reader.crash.finished_segment_open",
        cat.fixtures["finished_segment_open"],
        accept(records(tailed.published())),
        ["R-16"],
        parser=True,
    )
    cat.read(
        "must.reader.crash.finished_segment_tail_garbage",
        garbage,
        accept(records(tailed.published())),
        ["R-16", "R-12"],
        parser=True,
    )
    cat.recover(
        "must.writer.recover.seal_truncating_garbage",
        garbage,
        after_recovery(
            records(tailed.published()),
            {SEG1: segment_state(size=tailed.segment(1).end, sealed=True), SEG2: segment_state(sealed=False)},
        ),
        ["W-30", "W-22"],
    )


def lose_second_commit() -> Mutation:
    """Segment 1 of ``finished_segment_log`` as if its second publication (records 3 and 4) was lost.

    Slot 1 gets back generation 1, which that publication (generation 3)
    overwrote: generation 2, after record 2, is active again.
    """
    generation_1 = CommitState(1, HEADER_SIZE, 1, -1, 0, 0)
    at, raw = slot_bytes(generation_1)
    return Mutation().write(SEG1, at, raw)


def _preallocated(cat: Catalog) -> None:
    log = LogBuilder(capacity=4096)
    log.batch(b"one", b"two")
    log.batch(b"three")
    torn = log.write(seeded_bytes(30, 300))
    base = cat.fixture(
        "preallocated_unpublished_record",
        "a preallocated segment with a whole record after the commit point, never published",
        log.files(),
        workload=log.trace,
        faults=["T1"],
    )
    _torn(cat, base, log, "preallocated_unpublished_record")
    keep = torn.offset + 50
    fixture = cat.derive(
        "preallocated_torn",
        base,
        Mutation().fill(SEG1, keep, torn.end - keep),
        "only the first 50 bytes of the unpublished record reached the preallocated file",
        defect=None,
        faults=["T3"],
    )
    _torn(cat, fixture, log, "preallocated_torn")
    cat.recover(
        "must.writer.recover.zero_preallocated_tail",
        fixture,
        after_recovery(records(log.published()), {SEG1: segment_state(size=4096)}),
        [*RECOVERY, "W-18"],
    )

    stale_log = LogBuilder(capacity=4096)
    stale_log.batch(b"one", b"two")
    commit = stale_log.last.commit.commit_offset
    stale = [RecordFact(1, commit + 512, 3, -1, 0, b"stale three")]
    stale.append(RecordFact(1, stale[0].end, 4, -1, 0, b"stale four"))
    clean = cat.fixture(
        "preallocated_two_records",
        "a preallocated segment with two records",
        stale_log.files(),
        workload=stale_log.trace,
    )
    cat.read(
        "must.reader.valid.preallocated_two_records",
        clean,
        accept(records(stale_log.published())),
        ["R-12"],
        parser=True,
    )
    behind = cat.derive(
        "preallocated_stale_records_behind_hole",
        clean,
        Mutation().write(SEG1, stale[0].offset, stale[0].encode() + stale[1].encode()),
        "valid records with the next indexes 512 bytes after the commit point, zeros in between",
        defect=None,
        faults=["T4", "T12"],
    )
    _torn(cat, behind, stale_log, "preallocated_stale_records_behind_hole")
    cat.recover(
        "must.writer.recover.clear_stale_records_behind_hole",
        behind,
        after_recovery(records(stale_log.published()), {SEG1: segment_state(size=4096)}),
        [*RECOVERY, "W-18"],
    )
