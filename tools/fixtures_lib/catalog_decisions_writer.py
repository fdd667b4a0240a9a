"""Cases that pin the spec's judgement calls (writer): each tells the spec's reading from the other plausible one.

The decision each case pins, and the mutant of the reference that takes the other reading, are in
conformance/mutants/decisions_writer.py; the suite must fail every mutant (spec/conformance.md section 7.3).
Every fixture is written by code (builder.py) and every expectation follows from how it was written.
"""

from __future__ import annotations

from dataclasses import replace

from openbinlog import HEADER_SIZE, RECORD_HEADER_SIZE

from .bases import basic_log, several_segments_log
from .builder import LogBuilder, slot_bytes
from .catalog import Catalog
from .model import (
    Json,
    accept,
    after_recovery,
    error,
    payload_fields,
    records,
    recovery_refused,
    recovery_unchanged,
    segment_state,
)
from .mutations import Mutation

SEG1 = "00000001.dat"
SEG2 = "00000002.dat"
SEG3 = "00000003.dat"
TEMP2 = ".00000002.dat.5eed.tmp"
RECOVERY = ["W-20", "W-21", "W-22", "W-23", "W-24"]


def add(cat: Catalog) -> None:
    _clean_up(cat)
    _refusals(cat)
    _tails(cat)
    _no_log_created(cat)
    _successor(cat)
    _preallocated_exact_fill(cat)
    _gap_below_last(cat)


def _basic_recovered() -> Json:
    """``basic`` after a recovery that leaves segment 1 as it is: its five records, nothing beyond them."""
    log = basic_log()
    return after_recovery(
        records(log.published()), {SEG1: segment_state(size=log.last.commit.commit_offset, sealed=False)}
    )


def _clean_up(cat: Catalog) -> None:
    """Section 7.4: which files clean-up deletes."""
    basic = cat.fixtures["basic"]
    two_blanks = cat.derive(
        "two_blank_last_segments",
        basic,
        Mutation().create(SEG2, b"").create(SEG3, b""),
        "segments 2 and 3 are empty files above segment 1: clean-up deletes blank last segments while the"
        " highest-numbered segment is one, so both go",
        defect=None,
        faults=["T8", "T13"],
    )
    cat.recover(
        "must.writer.recover.remove_two_blank_last_segments",
        two_blanks,
        _basic_recovered(),
        ["W-25", "W-26"],
        description="recover: empty segments 2 and 3 above segment 1: section 7.4 step 2 deletes the highest while"
        " it is blank, so segment 3 and then segment 2 go (a reader, which does not clean up, reports segment 2 as"
        " truncated, format 3.5); recovery validates the last segment only (W-26), not what a read of the whole"
        " log would report before clean-up",
    )
    upper = cat.derive(
        "upper_case_temp_name",
        basic,
        Mutation().create(".00000002.dat.5EED.tmp", bytes(100)),
        "a file named .00000002.dat.5EED.tmp: upper-case hex digits, so not a temporary file of section 7.4",
        defect=None,
    )
    cat.recover(
        "must.writer.recover.keep_upper_case_temp_name",
        upper,
        _basic_recovered(),
        ["W-25"],
        description="recover: .00000002.dat.5EED.tmp matches neither pattern of section 7.4 step 1 (lower-case hex"
        " only, names matched exactly): clean-up leaves it",
    )
    compression_temp = cat.derive(
        "compression_temp_file_left",
        basic,
        Mutation().create(".00000001.dat.gz.5eed.tmp", bytes.fromhex("1f8b0800000000000003")),
        "a compression of segment 1 died and left its temporary file .00000001.dat.gz.5eed.tmp",
        defect=None,
        faults=["T13"],
    )
    cat.recover(
        "must.writer.recover.remove_compression_temp_file",
        compression_temp,
        _basic_recovered(),
        ["W-25"],
        description="recover: clean-up deletes an unheld temporary file of either pattern of section 7.4 step 1,"
        " the compression one (.NNNNNNNN.dat.gz.<hex>.tmp) included",
    )


def _refusals(cat: Catalog) -> None:
    """W-37 and W-26: what refuses, and that a refusal deletes nothing."""
    flipped = cat.fixtures["payload_bit_flip"]
    r3 = basic_log().published()[2]
    damaged = error("checksum_mismatch", 1, r3.offset, r3.index)
    for name, mutation, what in (
        ("temp_file", Mutation().create(TEMP2, bytes(100)), f"a stale temporary file {TEMP2}"),
        ("blank_segment", Mutation().create(SEG2, b""), "an empty segment 2 (a blank last segment)"),
    ):
        fixture = cat.derive(
            f"payload_bit_flip_with_{name}",
            flipped,
            mutation,
            f"one bit of record 3's payload flipped in segment 1, and {what}",
            defect="one bit of record 3's payload flipped",
            faults=["T10", "T13"],
        )
        cat.recover(
            f"must.writer.recover.refuse_before_removing_{name}",
            fixture,
            recovery_refused(damaged),
            ["W-26", "W-37", "W-24"],
            description=f"recover: committed data of the last segment is damaged and the directory also holds {what}:"
            " every refusal is decided before clean-up deletes anything (W-37), so the refusal leaves it in place",
        )

    cat.recover(
        "must.writer.recover.refuse_next_index_disagrees",
        cat.fixtures["next_index_disagrees"],
        recovery_refused(error("bad_header", 1, 96, 6)),
        ["W-26", "R-39", "W-37"],
        description="recover: the last segment's active slot says next index 7, its records end before index 6:"
        " W-26 includes the check of R-39 at the commit point, so recovery refuses with bad_header at the slot"
        " and the walk's index, rather than let a writer number new records from a slot its records contradict",
    )

    several = cat.fixtures["several_segments"]
    seg2 = bytes(several.files[SEG2])
    header_flip = cat.derive(
        "predecessor_header_checksum",
        several,
        Mutation().write(SEG2, 92, bytes([seg2[92] ^ 0x01])),
        "one bit of segment 2's header checksum flipped; segment 2 is sealed, segment 3 is the last segment",
        defect="one bit of segment 2's header_crc flipped",
        faults=["T10"],
    )
    cat.recover(
        "must.writer.recover.refuse_damaged_predecessor_header",
        header_flip,
        recovery_refused(error("bad_header", 2, 92)),
        ["W-30", "W-37", "R-6"],
        description="recover: the header of the last segment's predecessor fails its checksum: a writer reads that"
        " header to decide whether to seal it (section 8.5) and cannot, so its open refuses with the header's"
        " error and changes nothing",
    )

    seg2_commit = several_segments_log().segment(2).commit
    at, raw = slot_bytes(replace(seg2_commit, last_asqn=8))
    overstated = cat.derive(
        "predecessor_slot_overstates_last_asqn",
        several,
        Mutation().write(SEG2, at, raw),
        "segment 2's active slot says last_asqn 8 (slot checksum recomputed) though its records' highest asqn is 4;"
        " segment 3, the last, holds record 7 with asqn 7",
        defect="segment 2's active slot overstates last_asqn: 8 instead of 4",
    )
    log = several_segments_log()
    cat.recover(
        "must.writer.recover.last_segment_validated_on_its_own",
        overstated,
        after_recovery(
            records(log.published()),
            {
                SEG1: segment_state(sealed=True),
                SEG2: segment_state(size=log.segment(2).end, sealed=True),
                SEG3: segment_state(size=log.last.end, sealed=False),
            },
        ),
        ["W-26"],
        description="recover: W-26 walks the last segment on its own, from its base index with previous asqn -1,"
        " and reads no other segment's slot: record 7's asqn 7 passes although segment 2's slot claims 8 (a reader"
        " carries the asqn of the records it walked, 4, and accepts the log too)",
    )


def _tails(cat: Catalog) -> None:
    """Section 7.2: the tail walk's starting asqn, and what it adopts."""
    log = LogBuilder()
    (first,) = log.batch((b"one", 5))
    log.write(b"two", asqn=3)
    asqn_back = cat.fixture(
        "tail_asqn_going_back",
        "record 1 (asqn 5) committed; record 2 with asqn 3 written beyond the commit point and never published",
        log.files(),
        workload=log.trace,
        faults=["T2"],
    )
    cat.recover(
        "must.writer.recover.tail_walk_asqn_from_slot",
        asqn_back,
        after_recovery(records([first]), {SEG1: segment_state(size=first.end, sealed=False)}),
        RECOVERY,
        description="recover: the tail walk starts with the active slot's last_asqn (5), so record 2 (asqn 3)"
        " fails step 8 and is removed, not adopted",
    )

    log = LogBuilder()
    (data,) = log.batch(b"one")
    meta = log.write(b"metadata of a later minor revision", frame=200)
    skippable = cat.fixture(
        "tail_of_skippable_record",
        "record 1 committed; a valid skippable record (frame 200) written beyond the commit point and never published",
        log.files(),
        workload=log.trace,
        faults=["T2"],
    )
    cat.recover(
        "must.writer.recover.adopt_skippable_only_tail",
        skippable,
        after_recovery(records([data]), {SEG1: segment_state(size=meta.end, sealed=False)}),
        [*RECOVERY, "R-11"],
        description="recover: the tail walk walks over the skippable record (X > C), so recovery publishes X"
        " although the tail holds no data record (section 7.2 step 5)",
    )


def _no_log_created(cat: Catalog) -> None:
    """Section 2.4: recovery without an append creates no segment."""
    cat.recover(
        "must.writer.recover.no_segments_creates_nothing",
        cat.fixtures["no_segments"],
        after_recovery([], {}),
        ["W-25"],
        description="recover: a log directory holding only LOCK: recovery appends nothing, so it creates no"
        " segment (section 2.4); the first append creates segment 1",
    )
    cat.recover(
        "must.writer.recover.blank_only_segment_leaves_no_segment",
        cat.fixtures["blank_only_segment"],
        after_recovery([], {}),
        ["W-25"],
        description="recover: the only segment is blank: clean-up deletes it and, appending nothing, recovery"
        " creates no segment 1 in its place (section 2.4)",
    )


def _successor(cat: Catalog) -> None:
    """W-29: a writer's open, recovery included, completes an interrupted cutover."""
    several = several_segments_log()
    early = [fact for fact in several.published() if fact.log <= 2]
    cat.recover(
        "must.writer.recover.sealed_last_segment_gets_successor",
        cat.fixtures["sealed_without_successor"],
        after_recovery(
            records(early),
            {
                SEG1: segment_state(sealed=True),
                SEG2: segment_state(size=several.segment(2).end, sealed=True),
                SEG3: segment_state(size=HEADER_SIZE, sealed=False),
            },
        ),
        ["W-29"],
        description="recover: segment 2 is sealed and segment 3 is missing: a writer's open creates the successor"
        " (W-29), whether or not it then appends",
    )


def _preallocated_exact_fill(cat: Catalog) -> None:
    """Section 8.1: a preallocated segment is cut over when a record does not fit, not when it is nearly full."""
    capacity = 512
    payload = (capacity - HEADER_SIZE) // 2 - RECORD_HEADER_SIZE  # two records fill the segment exactly
    appends = [bytes([0xAA]) * payload, bytes([0xBB]) * payload]
    spec: Json = {
        "records": [{"payload": item.hex(), "asqn": "-1"} for item in appends],
        "cutover_before": [],
        "options": {"durability": "sync", "preallocate": str(capacity)},
    }
    written = [
        {
            "log": 1,
            "offset": str(HEADER_SIZE + position * (RECORD_HEADER_SIZE + payload)),
            "index": str(position + 1),
            "asqn": "-1",
            **payload_fields(item),
            "checked": True,
        }
        for position, item in enumerate(appends)
    ]
    cat.write(
        "may.writer.write.preallocated_exact_fill",
        f"two records fill a preallocated segment of {capacity} bytes exactly: with no record left over, no cutover"
        " follows, and segment 1 stays the open last segment",
        spec,
        {
            "write": {"ok": True, "error": None},
            "then": accept(written),
            "segments": {SEG1: segment_state(size=capacity, sealed=False, capacity=capacity)},
            "optional_segments": [],
            "unchanged": False,
        },
        ["W-1", "W-6", "W-7", "W-10", "W-18"],
        requires=["preallocate"],
    )


def _gap_below_last(cat: Catalog) -> None:
    """W-30, section 8.5: a predecessor whose end index is not the last segment's base index is left as it is."""
    gapped = LogBuilder()
    gapped.batch(b"one", b"two")  # segment 1, open: its end index is 3
    broken = LogBuilder(first_log=2, base_index=5)
    broken.batch(b"five")
    files = {**gapped.files(), SEG2: broken.files()[SEG2]}
    fixture = cat.fixture(
        "open_predecessor_before_gap",
        "segment 1 open with records 1 and 2 (end index 3), segment 2 with base index 5: records 3 and 4 are missing",
        files,
        requirements=["W-30"],
    )
    cat.recover(
        "must.writer.recover.leave_predecessor_before_gap",
        fixture,
        recovery_unchanged(),
        ["W-30"],
        description="recover: segment 1's end index 3 differs from segment 2's base index 5, so segment 1 is not"
        " sealed (W-30); nothing else needs changing, so no file changes (a read still reports chain_broken)",
    )
