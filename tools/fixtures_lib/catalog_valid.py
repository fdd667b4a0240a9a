"""Valid logs, and resuming from refs."""

from __future__ import annotations

from dataclasses import replace

from .bases import basic_log, several_segments_log, skippable_log
from .builder import LOCK, T0, LogBuilder, seeded_bytes, slot_bytes
from .catalog import Catalog
from .model import Fixture, accept, error, records, reject
from .mutations import Mutation

READ_BASICS = ["R-3", "R-6", "R-8", "R-14", "R-15", "R-21", "R-31"]
CHAIN = ["R-17", "R-18", "R-19"]


def add(cat: Catalog) -> None:
    _single_segment(cat)
    _many_segments(cat)
    _refs(cat)


def _valid(cat: Catalog, id: str, description: str, log: LogBuilder, requirements: list[str]) -> Fixture:
    fixture = cat.fixture(id, description, log.files(), workload=log.trace, requirements=requirements)
    cat.read(f"must.reader.valid.{id}", fixture, accept(records(log.published())), requirements, parser=True)
    return fixture


def _single_segment(cat: Catalog) -> None:
    no_segments = cat.fixture(
        "no_segments",
        "a log directory holding only the LOCK file: an empty log, not an error",
        {LOCK: b""},
        requirements=["R-1"],
    )
    cat.read("must.reader.valid.no_segments", no_segments, accept([]), ["R-1"], parser=True)

    _valid(cat, "empty_log", "a new log: segment 1 with its header and no record", LogBuilder(), READ_BASICS)

    one = LogBuilder()
    one.batch(b"hello")
    _valid(cat, "one_record", "one record 'hello' (test vectors TV-5 and TV-6)", one, READ_BASICS)

    tv9 = LogBuilder()
    tv9.write(b"hello")
    tv9.write(bytes([1, 2, 3]), asqn=7)
    tv9.publish()
    _valid(cat, "two_records_tv9", "the segment of test vector TV-9: two records, slot 0 active", tv9, READ_BASICS)

    empty_payload = LogBuilder()
    empty_payload.batch(b"before", b"", b"after")
    _valid(cat, "empty_payload", "a record with an empty payload between two others", empty_payload, READ_BASICS)

    big = LogBuilder()
    big.batch(seeded_bytes(64, 65536), b"small")
    _valid(cat, "payload_64k", "a 64 KiB payload followed by a small one", big, [*READ_BASICS, "R-10"])

    _valid(cat, "basic", "five records in three commits, two with an asqn", basic_log(), [*READ_BASICS, "R-11"])

    many = LogBuilder()
    for number in range(6):
        many.batch(f"commit-{number}".encode())
    _valid(
        cat,
        "many_commits",
        "six commits of one record: generation 7 active in slot 1, generation 6 in slot 0",
        many,
        READ_BASICS,
    ).faults.append("T1")

    _valid(
        cat,
        "skippable_frames",
        "records of frames 128 and 255 between data records: verified, skipped, no index consumed",
        skippable_log(),
        [*READ_BASICS, "R-11"],
    )

    preallocated = LogBuilder(capacity=4096)
    preallocated.batch(b"one", b"two")
    preallocated.batch(b"three")
    _valid(
        cat,
        "preallocated",
        "a preallocated segment of 4096 bytes: three records, zeros up to the capacity",
        preallocated,
        [*READ_BASICS, "R-12"],
    )

    clock = LogBuilder()
    for stamp in (T0, T0 - 5_000_000, -1, 0, 2**63 - 1, -(2**63)):
        clock.write(f"at {stamp}".encode(), timestamp_us=stamp)
    clock.publish()
    _valid(
        cat,
        "timestamps_not_monotonic",
        "timestamps that go back, negative, zero and extreme: readers never judge timestamps",
        clock,
        ["R-13"],
    )

    large = LogBuilder(base_index=2**63 + 12345)
    large.batch((b"near the top", 2**63 - 3), b"no asqn")
    large.batch((b"largest asqn", 2**63 - 1))
    _valid(
        cat,
        "large_numbers",
        "indexes above 2^63 and asqns up to 2^63 - 1: 64-bit numbers survive as decimal strings",
        large,
        [*READ_BASICS, "R-21"],
    )

    basic = cat.fixtures["basic"]
    stale = cat.derive(
        "stale_mirrors",
        basic,
        Mutation()
        .write("00000001.dat", 6, bytes.fromhex("0007ffffffffffffffff"))
        .write("00000001.dat", 20, (99).to_bytes(4, "big")),
        "mirror fields that lie (status 7, last element position 2^64 - 1, next log 99): never used",
        defect=None,
        requirements=["R-5"],
    )
    cat.read("must.reader.valid.stale_mirrors", stale, accept(records(basic_log().published())), ["R-5"], parser=True)

    unknown = cat.derive(
        "unknown_files",
        basic,
        Mutation()
        .create("00000001.idx", b"reserved sparse index name")
        .create("notes.txt", b"not part of the log")
        .create("1.dat", b"not eight digits")
        .create("00000002.dat.bak", b"not a segment name")
        .create("0000000A.dat", b"not decimal digits"),
        "files that are not segments next to the log: ignored",
        defect=None,
        requirements=["R-1", "R-33"],
    )
    cat.read(
        "must.reader.valid.unknown_files",
        unknown,
        accept(records(basic_log().published())),
        ["R-1", "R-33"],
        parser=True,
    )


def _many_segments(cat: Catalog) -> None:
    several = several_segments_log()
    _valid(cat, "several_segments", "three segments, two sealed, asqns across them", several, [*READ_BASICS, *CHAIN])

    middle = LogBuilder()
    middle.batch(b"one", b"two", b"three")
    middle.cutover()
    middle.cutover()
    middle.batch(b"four", b"five")
    _valid(
        cat,
        "empty_middle_segment",
        "a sealed segment with no record between two with records",
        middle,
        [*READ_BASICS, *CHAIN],
    )

    last = LogBuilder()
    last.batch(b"one", b"two")
    last.cutover()
    _valid(
        cat,
        "empty_last_segment",
        "a cutover just done: the last segment is open and empty",
        last,
        [*READ_BASICS, *CHAIN],
    )

    rolled = LogBuilder(capacity=512)
    for number in range(5):
        if rolled.last.end + 100 > 512:
            rolled.cutover()
        rolled.batch(seeded_bytes(number, 60))
    _valid(
        cat,
        "preallocated_segments",
        "preallocated segments of 512 bytes, cut over whenever the next record would not fit",
        rolled,
        [*READ_BASICS, *CHAIN, "R-12"],
    )

    retained = LogBuilder()
    retained.batch(b"one", b"two")
    retained.cutover()
    retained.batch(b"three", b"four")
    retained.cutover()
    retained.batch(b"five", b"six")
    retained.cutover()
    retained.batch(b"seven")
    full = cat.fixture(
        "four_segments",
        "four segments of a log, used as the base of a retention case",
        retained.files(),
        workload=retained.trace,
    )
    cat.read(
        "must.reader.valid.four_segments",
        full,
        accept(records(retained.published())),
        [*READ_BASICS, *CHAIN],
        parser=True,
    )
    after_retention = cat.derive(
        "retention_removed_first_segments",
        full,
        Mutation().remove("00000001.dat").remove("00000002.dat"),
        "segments 1 and 2 removed by retention: the log starts at segment 3 with base index 5",
        defect=None,
        requirements=["R-21"],
    )
    kept = [fact for fact in retained.published() if fact.log >= 3]
    cat.read(
        "must.reader.valid.retention_removed_first_segments",
        after_retention,
        accept(records(kept)),
        ["R-21", "W-3"],
        parser=True,
    )


def _refs(cat: Catalog) -> None:
    log = several_segments_log()
    fixture = cat.fixtures["several_segments"]
    facts = log.published()
    ref_rules = ["R-28", "R-29", "R-30"]

    def after(id: str, ref: str, description: str, expected_from: int) -> None:
        cat.read(
            f"must.reader.ref.{id}",
            fixture,
            accept(records(facts[expected_from:])),
            ref_rules,
            after=ref,
            description=description,
        )

    after("after_first_record", facts[0].ref, "resume after the first record", 1)
    after("after_last_record_of_segment", facts[2].ref, "resume after the last record of segment 1", 3)
    after("after_last_record", facts[-1].ref, "resume after the log's last record: nothing follows", len(facts))
    after(
        "leading_zeros_and_white_space",
        f"  {facts[0].log:03d}:{facts[0].offset:05d}:{facts[0].index:04d} ",
        "a ref with leading zeros and surrounding white space is the same ref",
        1,
    )

    def invalid(id: str, ref: str, description: str, target: Fixture = fixture) -> None:
        cat.read(
            f"must.reader.ref.{id}",
            target,
            reject([], error("invalid_ref")),
            ref_rules,
            after=ref,
            description=description,
        )

    second = facts[1]
    invalid("stale_index", f"{second.log}:{second.offset}:{second.index + 1}", "the record there carries another index")
    invalid("offset_inside_record", f"{second.log}:{second.offset + 7}:{second.index}", "an offset inside a record")
    invalid("offset_in_header", "1:0:1", "an offset inside the segment header")
    invalid("missing_segment", "9:256:1", "a segment that does not exist")
    invalid("malformed_text", "1:256", "only two numbers")
    invalid("log_number_zero", "0:256:1", "log number 0 is never used")
    invalid("negative_number", "-1:256:1", "a sign is not part of the grammar")
    invalid("log_number_too_large", "4294967296:256:1", "a log number beyond 2^32 - 1")
    invalid("index_too_large", "1:256:18446744073709551616", "an index beyond 2^64 - 1")

    metadata = skippable_log().last.records[1]
    invalid(
        "skippable_frame",
        metadata.ref,
        "the record at that offset is a skippable frame, not a data record",
        cat.fixtures["skippable_frames"],
    )

    last = facts[-1]
    beyond = cat.fixtures["basic"]
    invalid(
        "offset_at_commit_point",
        f"1:{basic_log().last.commit.commit_offset}:6",
        "the offset of the commit point: no committed record starts there",
        beyond,
    )
    invalid("offset_beyond_file", f"{last.log}:1000000:{last.index}", "an offset beyond the end of the segment")

    # A forged commit point of 2^64 - 1 (S = C, segment unfinished): every offset up to 2^64 - 2 passes step 3.
    # A ref at 2^64 - 2 names bytes far beyond the file: the record check fails step 1 (truncated), which is
    # invalid_ref, whatever step failed. Its bounds o + 40 and o + 4 + length must not wrap around.
    basic_commit = basic_log().last.commit
    at, raw = slot_bytes(replace(basic_commit, commit_offset=2**64 - 1))
    forged = cat.derive(
        "commit_point_at_u64_max",
        beyond,
        Mutation().write("00000001.dat", at, raw),
        "the active slot claims a commit point of 2^64 - 1; the file holds 1066 bytes",
        defect="the active slot claims a commit point of 2^64 - 1; the file holds 1066 bytes",
        faults=["T15"],
        requirements=ref_rules,
    )
    invalid(
        "offset_near_u64_max",
        f"1:{2**64 - 2}:6",
        "an offset of 2^64 - 2 below a forged commit point of 2^64 - 1: inside S, but the record check fails"
        " step 1 there (the file holds 1066 bytes), so the ref is invalid, whatever step failed (R-29)",
        forged,
    )
    fifth = basic_log().published()[-1]
    cat.read(
        "must.reader.ref.after_last_record_below_u64_max_commit_point",
        forged,
        reject([], error("truncated", 1, basic_commit.commit_offset, fifth.index + 1)),
        [*ref_rules, "R-8", "R-9", "R-10"],
        after=fifth.ref,
        description="the control of offset_near_u64_max: the ref of record 5 is valid; after it, the walk meets"
        " the end of the file below the forged commit point: truncated at 1066 with index 6, not invalid_ref",
    )
