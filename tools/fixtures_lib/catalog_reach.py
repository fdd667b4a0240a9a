"""What the protocol could not reach before suite 2.0.3: binary refs, resuming at a ref, seeks, compressed
segments, and the successor's damage seen from a split.

Resuming at a ref (spec 10.6 step 5), seeks (10.7) and reading compressed segments (2.6) are what the spec
permits (MAY): their cases are of level ``may`` and apply to a testee that declares the capability. A reader
that reads compressed segments must then keep R-43, and a seek R-44.
"""

from __future__ import annotations

import gzip
import zlib

import zstandard

from openbinlog import Ref

from .bases import several_segments_log
from .builder import LogBuilder
from .catalog import Catalog
from .model import Fixture, accept, error, records, reject, tolerant
from .mutations import Mutation

REF_RULES = ["R-28", "R-29", "R-30"]
SEEK_RULES = ["R-44", "R-21"]
COMPRESSED_RULES = ["R-43", "R-21"]


def add(cat: Catalog) -> None:
    _binary_refs(cat)
    _resume_at(cat)
    _seeks(cat)
    _compressed(cat)
    _archives_failing_partway(cat)
    _successor_damage_in_splits(cat)


def _binary_refs(cat: Catalog) -> None:
    """R-28: a reader that supports refs accepts the 20-byte binary form as well as the text form."""
    fixture = cat.fixtures["several_segments"]
    facts = several_segments_log().published()

    def binary(id: str, raw: bytes, expected: dict[str, object], description: str) -> None:
        cat.read(
            f"must.reader.ref.{id}",
            fixture,
            expected,
            REF_RULES,
            start={"after_binary": raw.hex()},
            description=description,
        )

    first, third = facts[0], facts[2]
    binary(
        "binary_after_first_record",
        Ref(first.log, first.offset, first.index).to_bytes(),
        accept(records(facts[1:])),
        "the binary form of the first record's ref: resume after it",
    )
    binary(
        "binary_after_last_record_of_segment",
        Ref(third.log, third.offset, third.index).to_bytes(),
        accept(records(facts[3:])),
        "the binary form of the ref of segment 1's last record: the walk goes on in segment 2",
    )
    whole = Ref(first.log, first.offset, first.index).to_bytes()
    binary("binary_19_bytes", whole[:-1], reject([], error("invalid_ref")), "a binary ref one byte short")
    binary("binary_21_bytes", whole + b"\0", reject([], error("invalid_ref")), "a binary ref one byte too long")
    binary(
        "binary_log_number_zero",
        bytes(4) + whole[4:],
        reject([], error("invalid_ref")),
        "a binary ref with log number 0, which no segment has",
    )
    binary(
        "binary_stale_index",
        Ref(first.log, first.offset, first.index + 1).to_bytes(),
        reject([], error("invalid_ref")),
        "a binary ref whose index is not the one the record there carries",
    )


def _resume_at(cat: Catalog) -> None:
    """Spec 10.6 step 5: a reader MAY offer resuming at a ref; the referenced record then comes first."""
    fixture = cat.fixtures["several_segments"]
    facts = several_segments_log().published()

    def at(id: str, ref: str, expected: dict[str, object], description: str) -> None:
        cat.read(f"may.reader.ref.{id}", fixture, expected, REF_RULES, start={"at": ref}, description=description)

    at("at_first_record", facts[0].ref, accept(records(facts)), "resume at the first record: the whole log")
    at(
        "at_first_record_of_segment",
        facts[3].ref,
        accept(records(facts[3:])),
        "resume at the first record of segment 2",
    )
    at("at_last_record", facts[-1].ref, accept(records(facts[-1:])), "resume at the log's last record")
    stale = facts[1]
    at(
        "at_stale_index",
        f"{stale.log}:{stale.offset}:{stale.index + 1}",
        reject([], error("invalid_ref")),
        "resume at a ref whose index is not the one the record there carries",
    )


def _seeks(cat: Catalog) -> None:
    """Spec 10.7: a reader MAY start at an index or a time; one that does keeps R-44."""
    fixture = cat.fixtures["several_segments"]
    facts = several_segments_log().published()

    def seek(id: str, start: dict[str, object], first: int, description: str, target: Fixture = fixture) -> None:
        cat.read(
            f"may.reader.seek.{id}",
            target,
            accept(records(facts[first:])),
            SEEK_RULES,
            start=start,
            description=description,
        )

    seek("index_zero", {"from_index": "0"}, 0, "from index 0: every record")
    seek("index_first", {"from_index": "1"}, 0, "from index 1, the first record's")
    seek("index_inside_segment", {"from_index": "5"}, 4, "from index 5, the second record of segment 2")
    seek("index_at_segment_base", {"from_index": "6"}, 5, "from index 6, segment 3's base index")
    seek("index_beyond_last", {"from_index": "8"}, len(facts), "from index 8, beyond the last record: nothing")
    seek("index_u64_max", {"from_index": str(2**64 - 1)}, len(facts), "from index 2^64 - 1: nothing")
    seek("time_before_first", {"since_us": "0"}, 0, "since time 0: every record")
    seek(
        "time_of_a_record",
        {"since_us": str(facts[3].timestamp_us)},
        3,
        "since the timestamp of segment 2's first record",
    )
    seek(
        "time_between_records",
        {"since_us": str(facts[4].timestamp_us - 1)},
        4,
        "since one microsecond before the fifth record's timestamp",
    )
    seek("time_after_last", {"since_us": str(facts[-1].timestamp_us + 1)}, len(facts), "after the last record")

    first_removed = cat.derive(
        "several_segments_first_removed",
        fixture,
        Mutation().remove("00000001.dat"),
        "segment 1 removed by retention: the log starts at segment 2 with base index 4",
        defect=None,
        requirements=["R-21"],
    )
    seek(
        "index_below_first_present",
        {"from_index": "1"},
        3,
        "from index 1 after retention removed segment 1: from the first record present",
        first_removed,
    )
    seek(
        "time_before_first_present",
        {"since_us": "0"},
        3,
        "since time 0 after retention removed segment 1: from the first record present",
        first_removed,
    )


def _compressed(cat: Catalog) -> None:
    """Spec 2.6 and R-43: compressed sealed segments, for a reader that reads them (capability compressed)."""
    log = several_segments_log()
    facts = log.published()
    files = log.files()
    plain = files["00000001.dat"]

    def compressed(
        id: str,
        description: str,
        changes: dict[str, bytes | None],
        expected: dict[str, object],
        *,
        start: dict[str, object] | None = None,
    ) -> None:
        fixture_files = dict(files)
        for name, data in changes.items():
            if data is None:
                del fixture_files[name]
            else:
                fixture_files[name] = data
        fixture = cat.fixture(id, description, fixture_files, requirements=COMPRESSED_RULES)
        cat.read(
            f"may.reader.compressed.{id}", fixture, expected, COMPRESSED_RULES, requires=["compressed"], start=start
        )

    gz = gzip.compress(plain, compresslevel=9, mtime=0)
    zst = zstandard.ZstdCompressor(level=3).compress(plain)
    compressed(
        "gzip_sealed_segment",
        "sealed segment 1 replaced by its gzip copy 00000001.dat.gz",
        {"00000001.dat": None, "00000001.dat.gz": gz},
        accept(records(facts)),
    )
    compressed(
        "zstd_sealed_segment",
        "sealed segments 1 and 2 replaced by Zstandard copies",
        {
            "00000001.dat": None,
            "00000001.dat.zst": zst,
            "00000002.dat": None,
            "00000002.dat.zst": zstandard.ZstdCompressor(level=3).compress(files["00000002.dat"]),
        },
        accept(records(facts)),
    )
    compressed(
        "plain_and_compressed",
        "both 00000001.dat and a damaged 00000001.dat.gz (a crash during compression): the plain file is read",
        {"00000001.dat.gz": gz[: len(gz) // 2]},
        accept(records(facts)),
    )
    compressed(
        "ref_into_gzip_segment",
        "resume after a ref into the gzip copy of segment 1",
        {"00000001.dat": None, "00000001.dat.gz": gz},
        accept(records(facts[1:])),
        start={"after_binary": Ref(facts[0].log, facts[0].offset, facts[0].index).to_bytes().hex()},
    )
    compressed(
        "not_a_gzip_stream",
        "00000001.dat.gz holds the plain segment's bytes, not a gzip stream: bad_header",
        {"00000001.dat": None, "00000001.dat.gz": plain},
        reject([], error("bad_header", 1, 0)),
    )
    compressed(
        "gzip_cut_inside_header",
        "00000001.dat.gz cut after 40 bytes, inside the segment's header: bad_header",
        {"00000001.dat": None, "00000001.dat.gz": gz[:40]},
        reject([], error("bad_header", 1, 0)),
    )
    # A whole archive of a short file is a short segment, not a cut archive: the record its end cuts is
    # truncated at that record's offset, as in the plain file, after the records before it.
    short = plain[: facts[1].offset + 20]
    compressed(
        "gzip_of_a_short_segment",
        "00000001.dat.gz a whole gzip stream of segment 1 cut inside its second record: truncated there",
        {"00000001.dat": None, "00000001.dat.gz": gzip.compress(short, compresslevel=9, mtime=0)},
        reject(records(facts[:1]), error("truncated", 1, facts[1].offset)),
    )
    # The bytes beyond a sealed segment's commit point are no part of it: a stream damaged only there
    # reads whole. Segment 1 with 4 KiB of zeros beyond its end (space preallocated and never used) is
    # compressed, and the stream's trailer (its checksum of all the bytes) is damaged.
    padded = gzip.compress(plain + bytes(4096), compresslevel=9, mtime=0)
    trailer_damaged = padded[:-8] + bytes(b ^ 0xFF for b in padded[-8:])
    compressed(
        "gzip_damaged_beyond_commit_point",
        "a gzip copy of segment 1 with zeros beyond its commit point and a damaged stream trailer: read whole",
        {"00000001.dat": None, "00000001.dat.gz": trailer_damaged},
        accept(records(facts)),
    )
    # The same for Zstandard: 4 KiB of zeros beyond the commit point, then a frame that no decoder accepts. The
    # archive is checked up to the commit point before the first record, never beyond it.
    compressed(
        "zstd_fails_beyond_commit_point",
        "a Zstandard copy of segment 1 with zeros beyond its commit point, then a frame whose block has the reserved"
        " type: read whole",
        {"00000001.dat": None, "00000001.dat.zst": _zstd_failing_at(plain + bytes(4096), len(plain) + 4096)},
        accept(records(facts)),
    )


MIB = 1 << 20


def _megabytes_log() -> LogBuilder:
    """Segment 1 sealed, of 1200 compressible records of 8000 bytes (about 9.6 MB, so that an archive of it can fail
    in its third or ninth mebibyte and stay small), and segment 2, open, of one record."""
    log = LogBuilder()
    for first in range(0, 1200, 50):
        log.batch(*(bytes([(first + n) % 251]) * 8000 for n in range(50)))
    log.cutover()
    log.batch(b"after")
    return log


def _gzip_failing_at(plain: bytes, at: int) -> bytes:
    """A gzip member of ``plain[:at]``, flushed to a byte boundary, then a deflate block of the reserved type 3, which
    every inflater refuses (RFC 1951 3.2.3): the stream fails once it has given ``at`` bytes."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    return packer.compress(plain[:at]) + packer.flush(zlib.Z_SYNC_FLUSH) + b"\x07" + bytes(16)


def _gzip_cut_after(plain: bytes, at: int) -> bytes:
    """A gzip member of all of ``plain``, cut 256 bytes after the point where it has given ``plain[:at]``."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = packer.compress(plain[:at]) + packer.flush(zlib.Z_FULL_FLUSH)
    rest = packer.compress(plain[at:]) + packer.flush()
    return head + rest[:256]


def _zstd_failing_at(plain: bytes, at: int) -> bytes:
    """A Zstandard frame of ``plain[:at]``, then a frame whose first block has the reserved block type 3, which
    every decoder refuses (RFC 8878 3.1.1.2.2): the stream fails once it has given ``at`` bytes."""
    frame = b"\x28\xb5\x2f\xfd\x00\x58"  # magic; no content size, no checksum; a window of 2 MiB
    block = ((16 << 3) | (3 << 1) | 1).to_bytes(3, "little") + bytes(16)
    return zstandard.ZstdCompressor(level=3).compress(plain[:at]) + frame + block


def _zstd_cut_after(plain: bytes, at: int) -> bytes:
    """Two Zstandard frames, of ``plain[:at]`` and of the rest, the second cut after 256 bytes."""
    packer = zstandard.ZstdCompressor(level=3)
    rest = packer.compress(plain[at:])
    return packer.compress(plain[:at]) + rest[:256]


def _archives_failing_partway(cat: Catalog) -> None:
    """R-43: an archive that fails before the segment's end is bad_header at offset 0, with none of the segment's
    records before it, wherever it fails. A reader that unpacks as far as it walks, in pieces of any size, returns
    the records of the pieces before the failing one and fails these cases; the failure lies in the first 64 KiB
    (beyond reads of a few KiB), in the third mebibyte (beyond pieces of 1 MiB and 2 MiB) or in the ninth (beyond
    pieces of 4 MiB and 8 MiB)."""
    log = _megabytes_log()
    facts = log.published()
    files = log.files()
    plain = files["00000001.dat"]
    first = facts[0]
    failed = reject([], error("bad_header", 1, 0))

    others = {name: data for name, data in files.items() if name != "00000001.dat"}

    def case(id: str, description: str, name: str, archive: bytes) -> None:
        fixture = cat.fixture(id, description, {**others, name: archive}, requirements=COMPRESSED_RULES)
        cat.read(f"may.reader.compressed.{id}", fixture, failed, COMPRESSED_RULES, requires=["compressed"])

    third = 5 * MIB // 2
    case(
        "gzip_fails_in_third_mebibyte",
        "segment 1 (9.6 MB) as 00000001.dat.gz whose deflate stream has a block of the reserved type after 2.5 MiB:"
        " bad_header at offset 0, none of its records",
        "00000001.dat.gz",
        _gzip_failing_at(plain, third),
    )
    case(
        "gzip_cut_in_third_mebibyte",
        "segment 1 (9.6 MB) as 00000001.dat.gz cut inside its member 256 bytes after those of its first 2.5 MiB:"
        " bad_header at offset 0, none of its records",
        "00000001.dat.gz",
        _gzip_cut_after(plain, third),
    )
    case(
        "gzip_fails_after_first_records",
        "segment 1 (9.6 MB) as 00000001.dat.gz whose deflate stream has a block of the reserved type after 64 KiB,"
        " eight whole records: bad_header at offset 0, none of its records",
        "00000001.dat.gz",
        _gzip_failing_at(plain, 64 << 10),
    )
    case(
        "gzip_fails_in_ninth_mebibyte",
        "segment 1 (9.6 MB) as 00000001.dat.gz whose deflate stream has a block of the reserved type after 8.5 MiB:"
        " bad_header at offset 0, none of its records",
        "00000001.dat.gz",
        _gzip_failing_at(plain, 17 * MIB // 2),
    )
    case(
        "zstd_fails_in_third_mebibyte",
        "segment 1 (9.6 MB) as 00000001.dat.zst, a frame of its first 2.5 MiB and a frame whose block has the"
        " reserved type: bad_header at offset 0, none of its records",
        "00000001.dat.zst",
        _zstd_failing_at(plain, third),
    )
    case(
        "zstd_cut_in_third_mebibyte",
        "segment 1 (9.6 MB) as 00000001.dat.zst, a frame of its first 2.5 MiB and a frame of the rest cut after"
        " 256 bytes: bad_header at offset 0, none of its records",
        "00000001.dat.zst",
        _zstd_cut_after(plain, third),
    )
    # The same archive read tolerantly: a bad_header of an archive is not stepped over (readers 10.4), and no record
    # of the segment precedes it.
    tolerant_fixture = cat.fixtures["gzip_fails_in_third_mebibyte"]
    cat.read(
        "may.reader.compressed.gzip_fails_in_third_mebibyte_tolerant",
        tolerant_fixture,
        tolerant(failed, []),
        COMPRESSED_RULES,
        requires=["compressed"],
        tolerant=True,
        description="read tolerantly: bad_header at offset 0, not stepped over, none of the segment's records",
    )
    cat.read(
        "may.reader.compressed.zstd_fails_in_third_mebibyte_after_ref",
        cat.fixtures["zstd_fails_in_third_mebibyte"],
        failed,
        [*COMPRESSED_RULES, "R-29"],
        requires=["compressed"],
        after=f"{first.log}:{first.offset}:{first.index}",
        description="resumed after the first record of segment 1: bad_header at offset 0, none of its records",
    )


def _successor_damage_in_splits(cat: Catalog) -> None:
    """END step 1 (section 8.4): a split of a finished segment checks the successor's header first."""
    base = cat.fixtures["several_segments"]
    damaged = cat.derive(
        "several_segments_successor_header_damaged",
        base,
        Mutation().write("00000002.dat", 40, b"\xff"),
        "segment 2's header has a byte changed (its header checksum fails)",
        defect="segment 2's header checksum fails",
        requirements=["R-16", "R-27"],
    )
    cat.read(
        "must.reader.split.successor_header_damaged",
        damaged,
        reject([], error("bad_header", 2)),
        ["R-16", "R-27", "R-5"],
        split=(1, 256, 10_000),
        description="a split of sealed segment 1 whose successor's header is damaged: the successor's bad_header",
    )
    cat.read(
        "must.reader.split.successor_header_damaged_second_half",
        damaged,
        reject([], error("bad_header", 2)),
        ["R-16", "R-27", "R-5"],
        split=(1, 300, 10_000),
        description="the same, for a split that starts inside the segment",
    )
