"""Damage at or below the commit point: one defect per fixture, every error class.

Each fixture derives from a valid log by one mutation. Where the defect is a
field value that a checksum covers, the checksum is recomputed so that the
field, not the checksum, is what a reader must catch.
"""

from __future__ import annotations

from dataclasses import replace

from .bases import basic_log, several_segments_log, skippable_log
from .builder import OTHER_LOG_ID, RecordFact, raw_record, slot_bytes, with_header_crc
from .catalog import Catalog
from .model import Fixture, error, records, recovery_refused, reject
from .mutations import Mutation

SEG1 = "00000001.dat"
SEG2 = "00000002.dat"
SEG3 = "00000003.dat"
HEADER_CHECKS = ["R-6", "R-31", "R-32"]
SLOT_CHECKS = ["R-3", "R-31", "R-32"]
RECORD_CHECKS = ["R-8", "R-9", "R-31", "R-32"]
WRITER_VALIDATION = ["W-24", "W-26"]


def add(cat: Catalog) -> None:
    _header(cat)
    _slots(cat)
    _records(cat)
    _chain(cat)
    _io(cat)


def header_patch(base: bytes, fields: dict[int, bytes], file: str = SEG1) -> Mutation:
    """Change header fields and write the header checksum recomputed over the result."""
    header = bytearray(base[:256])
    mutation = Mutation()
    for offset, value in fields.items():
        header[offset : offset + len(value)] = value
        mutation.write(file, offset, value)
    fixed = with_header_crc(header)
    return mutation.write(file, 92, fixed[92:96])


def _damaged(
    cat: Catalog,
    id: str,
    base: Fixture,
    mutation: Mutation,
    *,
    defect: str,
    expected_records: list[RecordFact] | None,
    err: dict[str, object],
    requirements: list[str],
    group: str,
    faults: list[str] | None = None,
    parser: bool = False,
) -> Fixture:
    fixture = cat.derive(id, base, mutation, defect, defect=defect, faults=faults, requirements=requirements)
    recs = None if expected_records is None else records(expected_records)
    cat.read(f"must.reader.{group}.{id}", fixture, reject(recs, err), requirements, parser=parser)
    return fixture


def _header(cat: Catalog) -> None:
    basic = cat.fixtures["basic"]
    data = basic.files[SEG1]

    def damaged(
        id: str,
        mutation: Mutation,
        defect: str,
        cls: str,
        offset: int,
        *,
        faults: list[str] | None = None,
        parser: bool = False,
    ) -> Fixture:
        return _damaged(
            cat,
            id,
            basic,
            mutation,
            defect=defect,
            expected_records=[],
            err=error(cls, 1, offset),
            requirements=HEADER_CHECKS,
            group="header",
            faults=faults,
            parser=parser,
        )

    damaged(
        "bad_signature",
        Mutation().write(SEG1, 25, b"b"),
        "the signature reads 89 62 4c 4f ... ('bBLOG' lower-cased by a text transfer)",
        "bad_signature",
        24,
        faults=["T10"],
        parser=True,
    )
    damaged(
        "unsupported_version",
        header_patch(data, {4: (3).to_bytes(2, "big")}),
        "version 3 (header checksum recomputed): a future major version",
        "unsupported_version",
        4,
        parser=True,
    )
    header_crc = damaged(
        "header_checksum_mismatch",
        Mutation().write(SEG1, 40, bytes([data[40] ^ 0x01])),
        "one bit of the log id flipped: the header checksum fails",
        "bad_header",
        92,
        faults=["T10"],
        parser=True,
    )
    damaged(
        "header_length_not_252",
        header_patch(data, {0: (253).to_bytes(4, "big")}),
        "header length field 253 (checksum recomputed)",
        "bad_header",
        0,
        parser=True,
    )
    damaged(
        "log_number_mismatch",
        header_patch(data, {16: (2).to_bytes(4, "big")}),
        "the header of 00000001.dat names log 2 (checksum recomputed): a segment in the wrong file",
        "bad_header",
        16,
        faults=["T12"],
    )
    damaged(
        "reserved_byte_set",
        Mutation().write(SEG1, 200, b"\x01"),
        "a reserved header byte (offset 200, outside the checksum) is not zero",
        "bad_header",
        68,
        faults=["T10"],
        parser=True,
    )
    damaged(
        "unknown_header_flag",
        header_patch(data, {64: (2).to_bytes(4, "big")}),
        "header flag bit 1, unknown to this revision (checksum recomputed): must-understand",
        "unsupported_feature",
        64,
        parser=True,
    )
    damaged(
        "preallocated_without_capacity",
        header_patch(data, {64: (1).to_bytes(4, "big")}),
        "PREALLOCATED set with capacity 0 (checksum recomputed)",
        "bad_header",
        72,
    )
    cat.recover(
        "must.writer.recover.refuse_bad_header",
        header_crc,
        recovery_refused(error("bad_header", 1, 92)),
        ["R-6", *WRITER_VALIDATION],
    )

    several = cat.fixtures["several_segments"]
    _damaged(
        cat,
        "header_shorter_than_256",
        several,
        Mutation().truncate(SEG1, 100),
        defect="segment 1 cut to 100 bytes while segment 2 exists: not a blank last segment",
        expected_records=[],
        err=error("truncated", 1, 0),
        requirements=["R-6", "R-7"],
        group="header",
        faults=["T11"],
    )
    _damaged(
        cat,
        "zero_header_with_successor",
        several,
        Mutation().fill(SEG1, 0, 256),
        defect="segment 1's header is all zeros while segment 2 exists: version 0",
        expected_records=[],
        err=error("unsupported_version", 1, 4),
        requirements=["R-6", "R-7"],
        group="header",
        faults=["T11"],
    )
    several_log = several_segments_log()
    first_two = [fact for fact in several_log.published() if fact.log < 3]
    zeroed = _damaged(
        cat,
        "zero_header_last_segment",
        several,
        Mutation().fill(SEG3, 0, 256),
        defect="segment 3, the last, has its first 256 bytes zeroed while its records remain after them: not blank,"
        " version 0",
        expected_records=first_two,
        err=error("unsupported_version", 3, 4),
        requirements=["R-6", "R-7"],
        group="header",
        faults=["T11"],
    )
    cat.recover(
        "must.writer.recover.refuse_zero_header_last_segment",
        zeroed,
        recovery_refused(error("unsupported_version", 3, 4)),
        ["R-6", "W-25", "W-24"],
        description="recover: segment 3, the last, lost its header but not its records: it is not blank, so it is"
        " not deleted; its header fails, recovery refuses and changes nothing",
    )


def _slots(cat: Catalog) -> None:
    log = basic_log()
    basic = cat.fixtures["basic"]
    active = log.last.commit  # generation 4, slot 0 (offset 96); slot 1 holds generation 3

    def slot(id: str, mutation: Mutation, defect: str, offset: int, faults: list[str] | None = None) -> None:
        _damaged(
            cat,
            id,
            basic,
            mutation,
            defect=defect,
            expected_records=[],
            err=error("bad_header", 1, offset),
            requirements=SLOT_CHECKS,
            group="slot",
            faults=faults,
        )

    def rewrite(**changes: int) -> Mutation:
        at, raw = slot_bytes(replace(active, **changes))
        return Mutation().write(SEG1, at, raw)

    data = basic.files[SEG1]
    slot(
        "no_valid_slot",
        Mutation().write(SEG1, 100, bytes([data[100] ^ 0x40])).write(SEG1, 148, bytes([data[148] ^ 0x40])),
        "both commit slots fail their checksum",
        96,
        ["T10"],
    )
    slot(
        "same_generation_in_both_slots",
        Mutation().write(SEG1, 144, slot_bytes(replace(active, commit_offset=781, next_index=4))[1]),
        "both slots are valid and carry generation 4",
        96,
    )
    wrong = replace(active, generation=5)
    slot(
        "generation_in_wrong_slot",
        Mutation().write(SEG1, 96, slot_bytes(wrong)[1]),
        "generation 5 written into slot 0; odd generations belong to slot 1",
        144,
    )
    slot("commit_offset_below_256", rewrite(commit_offset=100), "the active slot's commit offset is 100", 96)
    slot("next_index_below_base", rewrite(next_index=0), "the active slot's next index 0 is below the base index 1", 96)
    slot(
        "sealed_with_wrong_successor",
        rewrite(next_log_number=3),
        "the active slot of segment 1 names log 3 as its successor",
        96,
    )
    slot("last_asqn_below_minus_one", rewrite(last_asqn=-2), "the active slot's last asqn is -2", 96)
    _damaged(
        cat,
        "next_index_disagrees",
        basic,
        rewrite(next_index=active.next_index + 1),
        defect="the active slot's next index is 7 (slot checksum recomputed); the records below its commit point"
        " end before index 6",
        expected_records=log.published(),
        err=error("bad_header", 1, 96, active.next_index),
        requirements=["R-39", "R-31", "R-32"],
        group="slot",
    )


def _records(cat: Catalog) -> None:
    log = basic_log()
    basic = cat.fixtures["basic"]
    r1, r2, r3, r4, r5 = log.published()
    commit = log.last.commit

    def rec(
        id: str,
        mutation: Mutation,
        defect: str,
        damaged: RecordFact,
        cls: str,
        *,
        faults: list[str] | None = None,
        parser: bool = True,
        extra: list[str] | None = None,
    ) -> Fixture:
        before = [fact for fact in (r1, r2, r3, r4, r5) if fact.end <= damaged.offset]
        return _damaged(
            cat,
            id,
            basic,
            mutation,
            defect=defect,
            expected_records=before,
            err=error(cls, damaged.log, damaged.offset, damaged.index),
            requirements=[*RECORD_CHECKS, *(extra or [])],
            group="record",
            faults=faults,
            parser=parser,
        )

    flipped = rec(
        "payload_bit_flip",
        Mutation().write(SEG1, r3.offset + 100, bytes([basic.files[SEG1][r3.offset + 100] ^ 0x08])),
        "one bit of record 3's payload flipped",
        r3,
        "checksum_mismatch",
        faults=["T10"],
        extra=["R-14"],
    )
    rec(
        "record_header_bit_flip",
        Mutation().write(SEG1, r2.offset + 30, bytes([basic.files[SEG1][r2.offset + 30] ^ 0x01])),
        "one bit of record 2's timestamp flipped",
        r2,
        "checksum_mismatch",
        faults=["T10"],
        extra=["R-14"],
    )
    zeros = rec(
        "committed_zeros",
        Mutation().fill(SEG1, r4.offset, r5.end - r4.offset),
        "the commit point reached the disk but records 4 and 5 did not: zeros below the commit point",
        r4,
        "checksum_mismatch",
        faults=["T7"],
    )
    sector = next(fact for fact in (r1, r2, r3, r4, r5) if fact.end > 512)
    rec(
        "lost_write_sector",
        Mutation().fill(SEG1, 512, 512),
        "the 512-byte sector at offset 512 reads as zeros: a write the device acknowledged and lost",
        sector,
        "checksum_mismatch",
        faults=["T11"],
    )
    rec(
        "hostile_length_4gib",
        Mutation().write(SEG1, r3.offset, raw_record(r3, length=0xFFFFFFFF)[:40]),
        "record 3's length says 4 GiB, with its header checksum recomputed",
        r3,
        "length_out_of_range",
        faults=["T15"],
        extra=["R-10"],
    )
    rec(
        "hostile_length_crossing_commit_point",
        Mutation().write(SEG1, r3.offset, raw_record(r3, length=0x7FFFFFFF)[:40]),
        "record 3's length is 2^31 - 1, within range but far beyond the commit point (checksum recomputed)",
        r3,
        "length_out_of_range",
        faults=["T15"],
        extra=["R-10"],
    )
    rec(
        "length_below_minimum",
        Mutation().write(SEG1, r3.offset, raw_record(r3, length=35)[:40]),
        "record 3's length is 35, below the 36 bytes of a record header (checksum recomputed)",
        r3,
        "length_out_of_range",
    )
    at, _ = slot_bytes(commit)
    rec(
        "commit_point_inside_payload",
        Mutation().write(SEG1, at, slot_bytes(replace(commit, commit_offset=r3.offset + 50))[1]),
        "the active slot's commit point falls inside record 3's payload",
        r3,
        "length_out_of_range",
        extra=["R-3"],
    )
    rec(
        "commit_point_inside_record_header",
        Mutation().write(SEG1, at, slot_bytes(replace(commit, commit_offset=r3.offset + 20))[1]),
        "the active slot's commit point falls inside record 3's 40-byte header",
        r3,
        "truncated",
        extra=["R-3"],
    )
    short = rec(
        "file_shorter_than_commit_point",
        Mutation().truncate(SEG1, r3.offset + 60),
        "the file ends inside record 3, below the commit point",
        r3,
        "truncated",
        faults=["T11"],
    )
    beyond = RecordFact(1, commit.commit_offset, 6, -1, 0, b"")
    rec(
        "commit_point_far_beyond_file",
        Mutation().write(SEG1, at, slot_bytes(replace(commit, commit_offset=2**62))[1]),
        "the active slot claims 2^62 committed bytes; the file holds 1066",
        beyond,
        "truncated",
        faults=["T15"],
        extra=["R-10"],
    )
    rec(
        "misdirected_record",
        Mutation().write(SEG1, r4.offset, replace(r4, index=5).encode()),
        "the bytes at record 4's place are a valid record carrying index 5",
        r4,
        "index_discontinuity",
        faults=["T12"],
        parser=False,
    )
    resurrected = RecordFact(1, commit.commit_offset, 6, -1, 0, b"")
    rec(
        "resurrected_record",
        Mutation()
        .append(SEG1, r5.encode())
        .write(SEG1, at, slot_bytes(replace(commit, commit_offset=r5.end + r5.size, next_index=7))[1]),
        "an old copy of record 5 re-appended after it and covered by the commit point",
        resurrected,
        "index_discontinuity",
        faults=["T12"],
        parser=False,
    )
    rec(
        "asqn_repeated",
        Mutation().write(SEG1, r4.offset, replace(r4, asqn=10).encode()),
        "record 4 carries asqn 10, the asqn of record 2 (checksums recomputed)",
        r4,
        "asqn_not_increasing",
        parser=False,
    )
    rec(
        "asqn_below_minus_one",
        Mutation().write(SEG1, r3.offset, replace(r3, asqn=-2).encode()),
        "record 3 carries asqn -2 (checksums recomputed)",
        r3,
        "asqn_not_increasing",
        parser=False,
    )
    for name, field, defect in (
        ("frame_must_understand", {"frame": 2}, "record 3 has frame 2, a must-understand kind"),
        ("frame_zero_committed", {"frame": 0}, "record 3 has frame 0 (unwritten space) with valid checksums"),
        ("record_flags_set", {"flags": 1}, "record 3 has flags 1"),
        ("record_reserved_set", {"reserved": 1}, "record 3's reserved bytes are not zero"),
    ):
        rec(
            name,
            Mutation().write(SEG1, r3.offset, raw_record(r3, **field)[:40]),
            f"{defect} (checksums recomputed)",
            r3,
            "unsupported_feature",
        )

    skippable = cat.fixtures["skippable_frames"]
    data = skippable.files[SEG1]
    data_1, metadata = skippable_log().last.records[:2]
    _damaged(
        cat,
        "skippable_frame_checksum",
        skippable,
        Mutation().write(SEG1, metadata.offset + 45, bytes([data[metadata.offset + 45] ^ 0x10])),
        defect="a payload bit of the skippable frame-128 record flipped: skipped records are verified too",
        expected_records=[data_1],
        err=error("checksum_mismatch", 1, metadata.offset, metadata.index),
        requirements=[*RECORD_CHECKS, "R-11"],
        group="record",
        faults=["T10"],
        parser=True,
    )

    cat.recover(
        "must.writer.recover.refuse_checksum_mismatch",
        flipped,
        recovery_refused(error("checksum_mismatch", 1, r3.offset, r3.index)),
        ["R-8", *WRITER_VALIDATION],
    )
    cat.recover(
        "must.writer.recover.refuse_committed_zeros",
        zeros,
        recovery_refused(error("checksum_mismatch", 1, r4.offset, r4.index)),
        ["R-8", *WRITER_VALIDATION],
    )
    cat.recover(
        "must.writer.recover.refuse_truncated",
        short,
        recovery_refused(error("truncated", 1, r3.offset, r3.index)),
        ["R-8", *WRITER_VALIDATION],
    )


def _chain(cat: Catalog) -> None:
    log = several_segments_log()
    several = cat.fixtures["several_segments"]
    first = [fact for fact in log.published() if fact.log == 1]
    seg2 = several.files[SEG2]
    expected_index = first[-1].index + 1
    chain = ["R-17", "R-18", "R-19"]

    def broken(id: str, mutation: Mutation, defect: str, offset: int | None, faults: list[str]) -> None:
        _damaged(
            cat,
            id,
            several,
            mutation,
            defect=defect,
            expected_records=first,
            err=error("chain_broken", 2, offset, expected_index),
            requirements=chain,
            group="chain",
            faults=faults,
        )

    broken("missing_middle_segment", Mutation().remove(SEG2), "segment 2 of 1..3 is missing", None, ["T13"])
    broken(
        "foreign_log_id",
        header_patch(seg2, {32: OTHER_LOG_ID}, SEG2),
        "segment 2 carries another log's id (checksum recomputed): a segment of another log",
        0,
        ["T12"],
    )
    broken(
        "base_index_gap",
        header_patch(seg2, {48: (expected_index + 1).to_bytes(8, "big")}, SEG2),
        "segment 2's base index skips one index (checksum recomputed)",
        0,
        ["T13"],
    )
    broken(
        "base_index_overlap",
        header_patch(seg2, {48: (expected_index - 1).to_bytes(8, "big")}, SEG2),
        "segment 2's base index repeats segment 1's last index (checksum recomputed)",
        0,
        ["T12"],
    )
    four = next(fact for fact in log.published() if fact.log == 2)
    _damaged(
        cat,
        "asqn_across_segments",
        several,
        Mutation().write(SEG2, four.offset, replace(four, asqn=2).encode()),
        defect="segment 2's first record carries asqn 2, below segment 1's last asqn 3 (checksums recomputed)",
        expected_records=first,
        err=error("asqn_not_increasing", 2, four.offset, four.index),
        requirements=[*chain, *RECORD_CHECKS],
        group="chain",
    )


def _io(cat: Catalog) -> None:
    several = cat.fixtures["several_segments"]
    _damaged(
        cat,
        "segment_unreadable",
        several,
        Mutation()
        .remove(SEG2)
        .create(f"{SEG2}/README", b"00000002.dat is a directory here: opening it works, reading it fails.\n"),
        defect="segment 2 cannot be read (it is a directory): an I/O error, never a torn tail or the end of the log",
        expected_records=None,
        err=error("io_error"),
        requirements=["R-20"],
        group="io",
        faults=["T14"],
    )
    missing = cat.fixture(
        "missing_directory",
        "the path given to the reader does not exist",
        {"README": b"The case reads the path no-such-log inside this directory, which does not exist.\n"},
    )
    cat.read(
        "must.reader.io.missing_directory",
        missing,
        reject([], error("io_error")),
        ["R-20", "R-31"],
        path="no-such-log",
    )
