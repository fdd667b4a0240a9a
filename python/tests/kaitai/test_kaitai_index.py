"""Cross-check ksy/binlog_index.ksy (the sparse index, spec 18) against the reference decoder.

Index files (TV-14, indexes that build_indexes wrote for real logs of
version 2 and legacy version 1, and damaged copies of them) are parsed by
the parsers kaitai-struct-compiler generates for Python, JavaScript, Java
and Go, through the `index` mode of the harnesses in tools/ksy/harness/.
Every field, every verdict (header CRC, entry CRCs, file size) and every
failure to parse is compared with what parse_index_header and decode_entry
say of the same bytes.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path
from typing import Any

import pytest
from kaitai_tools import LANGUAGES, run_harness
from logtools import legacy_segment
from test_spec import T0, vectors

from openbinlog import Writer, build_indexes
from openbinlog._crc import masked_crc32c
from openbinlog._format import (
    INDEX_HEADER_CRC_COVERS,
    INDEX_HEADER_SIZE,
    INDEX_SIGNATURE,
    INDEX_VERSION,
    SIGNATURE,
    IndexEntry,
    IndexHeader,
)
from openbinlog._legacy import iter_legacy_records
from openbinlog._records import RecordDecoder
from openbinlog._segment import SegmentHeaderInfo, parse_header
from openbinlog._sparse_index import EntryRule, decode_entry, entry_offset, parse_index_header

INTERVALS = (1, 64, 16384)
LEGACY_INTERVALS = (1, 64)
HEADER_CRC_AT = INDEX_HEADER_CRC_COVERS.stop

# --- logs written by the package, and the indexes build_indexes makes of them ------------------------------

# (payload size, asqn or None, microseconds after the previous record): small and large records, so that
# interval 16384 skips many records and interval 1 takes every one; equal and rising timestamps.
SEGMENT_1 = [
    (size, None if n % 3 else n, n % 4)
    for n, size in enumerate([0, 1, 37, 300, 5000, 12, 20000, 7, 0, 70000, 64, 1000] * 4 + [100] * 30)
]
SEGMENT_3 = [(10, 500, 1), (20000, None, 0), (5, 501, 1)]


def write_v2_log(directory: Path) -> None:
    """Segment 1 full, segment 2 empty, segment 3 short (all finished), segment 4 last, never indexed."""
    now = [T0]
    with Writer(directory, durability="os", clock_us=lambda: now[0]) as writer:
        for part in (SEGMENT_1, [], SEGMENT_3):
            for size, asqn, gap in part:
                now[0] += gap
                writer.append(bytes([size % 251]) * size, asqn=-1 if asqn is None else asqn)
            writer.cutover()
        writer.append(b"the last segment")


def write_legacy_log(directory: Path) -> None:
    """jPOS-EE version 1: segment 1 closed with records, segment 2 closed and empty, segment 3 open."""
    directory.mkdir()
    records = [b"r%03d" % n * (n % 7) for n in range(60)]
    (directory / "00000001.dat").write_bytes(legacy_segment(records, log=1, closed=True, next_log=2))
    (directory / "00000002.dat").write_bytes(legacy_segment([], log=2, closed=True, next_log=3))
    (directory / "00000003.dat").write_bytes(legacy_segment([b"open"], log=3, closed=False))


def built_indexes(directory: Path, intervals: tuple[int, ...], kind: str) -> dict[str, tuple[bytes, bytes]]:
    """name -> (index bytes, bytes of the segment it indexes), for every index build_indexes writes."""
    found = {}
    for interval in intervals:
        results = build_indexes(directory, interval=interval)
        assert [r.status for r in results][-1] == "skipped"  # the last segment is never indexed
        for result in results[:-1]:
            assert result.status in ("built", "unchanged"), result
            index = Path(result.path).read_bytes()
            found[f"{kind}_log{result.log}_interval{interval}"] = (
                index,
                (directory / f"{result.log:08d}.dat").read_bytes(),
            )
    return found


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[bytes, bytes]]:
    folder = tmp_path_factory.mktemp("kaitai_index_logs")
    write_v2_log(folder / "v2")
    write_legacy_log(folder / "v1")
    found = built_indexes(folder / "v2", INTERVALS, "v2") | built_indexes(folder / "v1", LEGACY_INTERVALS, "v1")
    shutil.rmtree(folder)
    return found


# --- damaged copies -----------------------------------------------------------------------------------------


def flip(data: bytes, offset: int) -> bytes:
    return data[:offset] + bytes([data[offset] ^ 0x01]) + data[offset + 1 :]


def resealed(data: bytes, offset: int, raw: bytes) -> bytes:
    """Header bytes changed and the header CRC made valid again, so that only the change itself is wrong."""
    header = bytearray(data[:INDEX_HEADER_SIZE])
    header[offset : offset + len(raw)] = raw
    header[HEADER_CRC_AT : HEADER_CRC_AT + 4] = masked_crc32c(header[INDEX_HEADER_CRC_COVERS]).to_bytes(4, "big")
    return bytes(header) + data[INDEX_HEADER_SIZE:]


def entry_count(value: int) -> bytes:
    return value.to_bytes(8, "big")


def damaged(good: bytes) -> dict[str, bytes]:
    """Damaged copies of ``good``, an index of at least four entries."""
    entry_1 = entry_offset(1)
    return {
        "header_byte_flipped": flip(good, 39),  # base_index: the header CRC fails
        "header_crc_flipped": flip(good, HEADER_CRC_AT + 3),
        "entry_byte_flipped": flip(good, entry_1 + 15),  # entry 1's offset: its entry CRC fails
        "entry_crc_flipped": flip(good, entry_1 + 31),
        "span_crc_flipped": flip(good, entry_1 + 25),  # covered by the entry CRC too
        "truncated_mid_entry": good[:-5],
        "truncated_at_entry": good[: entry_offset(2)],
        "truncated_in_header": good[:50],
        "truncated_to_nothing": b"",
        "header_only_but_entries_counted": good[:INDEX_HEADER_SIZE],
        "garbage_appended": good + b"\x00\xff\x00",
        "entry_count_far_larger": resealed(good, 56, entry_count(2**40)),
        "entry_count_2_63": resealed(good, 56, entry_count(2**63)),
        "entry_count_max_u8": resealed(good, 56, entry_count(2**64 - 1)),
        "entry_count_smaller": resealed(good, 56, entry_count(1)),
        "wrong_signature": resealed(good, 0, SIGNATURE[:8]),  # the segment signature, \x89BLOG\r\n\x1a
        "signature_bit_flipped": flip(good, 3),
        "version_2": resealed(good, 8, (2).to_bytes(2, "big")),
        "version_0": resealed(good, 8, (0).to_bytes(2, "big")),
    }


# --- what the reference says --------------------------------------------------------------------------------


def reference_index(data: bytes) -> dict[str, Any] | None:
    """The harnesses' JSON for ``data`` as the reference decodes it; None where a Kaitai parser must fail.

    A Kaitai parser fails where the file has no 72-byte header with the
    signature and version 1; the reference ignores such a file too. It
    parses a header whose CRC fails, and the caller sees the CRC fail: the
    reference ignores that file as well (parse_index_header is None), and its
    fields are then those of the byte table (IndexHeader of _format).
    """
    info = parse_index_header(data)
    if len(data) < INDEX_HEADER_SIZE:
        assert info is None
        return None
    raw = IndexHeader.parse(data[:INDEX_HEADER_SIZE])
    if raw.signature != INDEX_SIGNATURE or raw.version != INDEX_VERSION:
        assert info is None
        return None
    if info is not None:
        facts = (info.segment_version, info.log, info.log_id, info.base_index)
        facts += (info.segment_end, info.end_index, info.entry_count, info.interval)
    else:
        facts = (raw.segment_version, raw.log_number, bytes(raw.log_id), raw.base_index)
        facts += (raw.segment_end, raw.end_index, raw.entry_count, raw.interval)
    segment_version, log, log_id, base_index, segment_end, end_index, count, interval = facts
    entries = []
    for k in range((len(data) - INDEX_HEADER_SIZE) // 32):
        chunk = data[entry_offset(k) : entry_offset(k + 1)]
        stored = IndexEntry.parse(chunk)
        decoded = decode_entry(chunk)
        fields = (stored.index, stored.offset, stored.timestamp_us, stored.span_crc)
        if decoded is not None:
            fields = (decoded.index, decoded.offset, decoded.timestamp_us, decoded.span_crc)
        entries.append(
            {
                "index": str(fields[0]),
                "offset": str(fields[1]),
                "timestamp_us": str(fields[2]),
                "span_crc": fields[3],
                "entry_crc": stored.entry_crc,
                "entry_crc_ok": decoded is not None,
            }
        )
    return {
        "version": INDEX_VERSION,
        "segment_version": segment_version,
        "log": log,
        "log_id_hex": log_id.hex(),
        "base_index": str(base_index),
        "segment_end": str(segment_end),
        "end_index": str(end_index),
        "entry_count": str(count),
        "interval": interval,
        "header_crc": raw.header_crc,
        "header_crc_ok": info is not None,
        "size_ok": len(data) == entry_offset(count),
        "entries": entries,
        "trailing_hex": data[entry_offset(len(entries)) :].hex(),
    }


def usable_by_reference(data: bytes) -> bool:
    """The part of the index check (spec 18.5, steps 2 and 3) that needs nothing but the index file."""
    info = parse_index_header(data)
    return info is not None and len(data) == info.file_size


def segment_facts(segment: bytes) -> tuple[dict[str, Any], list[tuple[int, int, int]]]:
    """What the reference reads in a finished segment: the header an index of it carries, and its data
    records as (index, offset, timestamp_us), numbered within the segment for version 1 (spec 18.6)."""
    info = parse_header(segment)
    if isinstance(info, SegmentHeaderInfo):
        decoder = RecordDecoder(log=info.log, offset=256, next_index=info.base_index, limit=info.commit.commit_offset)
        decoder.feed(segment[256:])
        decoder.end_of_input()
        records = [(e.index, e.offset, e.timestamp_us or 0) for e in decoder]
        version, log_id, base_index, end = 2, info.log_id, info.base_index, info.commit.commit_offset
    else:
        legacy = iter_legacy_records(segment[248:], log=info.log, offset=248, tail=info.tail, next_index=1)
        records = [(e.index, e.offset, 0) for e in legacy]
        version, log_id, base_index, end = 1, bytes(16), 1, info.tail
    header = {
        "segment_version": version,
        "log": info.log,
        "log_id_hex": log_id.hex(),
        "base_index": str(base_index),
        "segment_end": str(end),
        "end_index": str(base_index + len(records)),
    }
    return header, records


# --- the files on disk and every harness's view of them -----------------------------------------------------


@pytest.fixture(scope="module")
def index_files(tmp_path_factory: pytest.TempPathFactory, built: dict[str, tuple[bytes, bytes]]) -> dict[str, bytes]:
    """name -> bytes of every index file the harnesses parse."""
    good = built["v2_log1_interval64"][0]
    assert (len(good) - INDEX_HEADER_SIZE) // 32 >= 4
    return {"TV-14": vectors()["TV-14"]} | {name: data for name, (data, _) in built.items()} | damaged(good)


class Parsed:
    """Each harness's JSON per index file, from one harness run per language, run on first use."""

    def __init__(self, folder: Path, files: dict[str, bytes]) -> None:
        self._paths = {}
        for number, (name, data) in enumerate(files.items(), start=1):
            self._paths[name] = folder / f"{number:08d}.idx"
            self._paths[name].write_bytes(data)
        self._runs: dict[str, dict[str, dict[str, Any]]] = {}

    def __getitem__(self, language: str) -> dict[str, dict[str, Any]]:
        if language not in self._runs:
            outputs = run_harness(language, "index", list(self._paths.values()))
            self._runs[language] = {name: outputs[path] for name, path in self._paths.items()}
        return self._runs[language]


@pytest.fixture(scope="module")
def parsed(kaitai_build: None, tmp_path_factory: pytest.TempPathFactory, index_files: dict[str, bytes]) -> Parsed:
    return Parsed(tmp_path_factory.mktemp("kaitai_indexes"), index_files)


def all_names() -> list[str]:
    """Every index file's name, known before the logs are written (for parametrize)."""
    v2 = [f"v2_log{log}_interval{interval}" for interval in INTERVALS for log in (1, 2, 3)]
    v1 = [f"v1_log{log}_interval{interval}" for interval in LEGACY_INTERVALS for log in (1, 2)]
    return ["TV-14", *v2, *v1, *damaged(bytes(entry_offset(4)))]


# --- the tests ----------------------------------------------------------------------------------------------


def test_every_file_is_named(index_files: dict[str, bytes]) -> None:
    assert list(index_files) == all_names()


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("name", all_names())
def test_index_matches_the_reference(parsed: Parsed, index_files: dict[str, bytes], language: str, name: str) -> None:
    """Every field of the header and of each whole entry, every CRC verdict, the size verdict, the trailing
    bytes; or a failure to parse exactly where the reference finds no index header."""
    got = parsed[language][name]
    expected = reference_index(index_files[name])
    if expected is None:
        assert set(got) == {"error"}, got
    else:
        assert got == expected


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("name", all_names())
def test_verdicts_match_the_reference(parsed: Parsed, index_files: dict[str, bytes], language: str, name: str) -> None:
    """A file the harness finds whole (it parses, its header CRC and its size hold) is one the reference
    would use; an entry whose CRC the harness finds valid is one decode_entry returns."""
    data = index_files[name]
    got = parsed[language][name]
    whole = "error" not in got and got["header_crc_ok"] and got["size_ok"]
    assert whole == usable_by_reference(data)
    if "error" not in got:
        chunks = [data[entry_offset(k) : entry_offset(k + 1)] for k in range(len(got["entries"]))]
        assert [e["entry_crc_ok"] for e in got["entries"]] == [decode_entry(c) is not None for c in chunks]


@pytest.mark.parametrize("language", LANGUAGES)
def test_tv14_as_the_spec_describes_it(parsed: Parsed, language: str) -> None:
    """The values spec 18.7 states in prose, so agreement is not agreement on a shared mistake."""
    got = parsed[language]["TV-14"]
    assert (got["version"], got["segment_version"], got["log"], got["log_id_hex"]) == (1, 2, 1, bytes(range(16)).hex())
    assert (got["base_index"], got["segment_end"], got["end_index"], got["entry_count"]) == ("1", "344", "3", "2")
    assert (got["interval"], got["header_crc"], got["header_crc_ok"], got["size_ok"]) == (32, 0x1814B617, True, True)
    assert [(e["index"], e["offset"], e["timestamp_us"]) for e in got["entries"]] == [
        ("1", "256", str(T0)),
        ("2", "301", str(T0 + 1000)),
    ]
    assert [(e["span_crc"], e["entry_crc"], e["entry_crc_ok"]) for e in got["entries"]] == [
        (0x47158BAE, 0x060CDC86, True),
        (0x7A271ED1, 0x14054474, True),
    ]
    assert got["trailing_hex"] == ""


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("name", [n for n in all_names() if n.startswith(("v1_", "v2_"))])
def test_a_built_index_describes_its_segment(
    parsed: Parsed, built: dict[str, tuple[bytes, bytes]], language: str, name: str
) -> None:
    """Read through Kaitai, a built index carries its segment's header facts and exactly the entries of the
    entry rule (spec 18.3), and each span CRC covers the segment's bytes between the entries' offsets."""
    _, segment = built[name]
    got = parsed[language][name]
    header, records = segment_facts(segment)
    assert {key: got[key] for key in header} == header
    rule = EntryRule(got["interval"])
    for record in records:
        rule.offer(*record)
    entries = [(int(e["index"]), int(e["offset"]), int(e["timestamp_us"])) for e in got["entries"]]
    assert entries == [(e.index, e.offset, e.timestamp_us) for e in rule.entries]
    assert got["entry_count"] == str(len(entries))
    assert all(e["entry_crc_ok"] for e in got["entries"]) and got["header_crc_ok"] and got["size_ok"]
    ends = [*(offset for _, offset, _ in entries), int(got["segment_end"])][1:]
    for entry, (_, start, _), end in zip(got["entries"], entries, ends, strict=True):
        assert entry["span_crc"] == masked_crc32c(segment[start:end])


def test_the_inputs_cover_what_they_claim(built: dict[str, tuple[bytes, bytes]], index_files: dict[str, bytes]) -> None:
    """Every interval yields distinct entries, version 1 and empty segments are there, each damage is the
    damage its name says (so that no case passes vacuously)."""
    headers = {name: parse_index_header(data) for name, (data, _) in built.items()}
    counts = {name: header.entry_count for name, header in headers.items() if header is not None}
    assert len(counts) == len(built)
    assert (
        counts["v2_log1_interval1"]
        == len(SEGMENT_1)
        > counts["v2_log1_interval64"]
        > counts["v2_log1_interval16384"]
        > 1
    )
    assert counts["v2_log2_interval1"] == counts["v1_log2_interval1"] == 0
    assert counts["v1_log1_interval1"] == 60
    assert {name: header.segment_version for name, header in headers.items() if header is not None} == {
        name: 1 if name.startswith("v1_") else 2 for name in built
    }
    fails_to_parse = {name for name, data in index_files.items() if reference_index(data) is None}
    assert fails_to_parse == {
        "truncated_in_header",
        "truncated_to_nothing",
        "wrong_signature",
        "signature_bit_flipped",
        "version_2",
        "version_0",
    }
    header_crc_fails = {
        name for name, data in index_files.items() if (r := reference_index(data)) and not r["header_crc_ok"]
    }
    assert header_crc_fails == {"header_byte_flipped", "header_crc_flipped"}
    entry_crc_fails = {
        name
        for name, data in index_files.items()
        if (r := reference_index(data)) and [e["entry_crc_ok"] for e in r["entries"]].count(False) == 1
    }
    assert entry_crc_fails == {"entry_byte_flipped", "entry_crc_flipped", "span_crc_flipped"}
    unusable = {name for name, data in index_files.items() if not usable_by_reference(data)}
    assert unusable == fails_to_parse | header_crc_fails | {
        "truncated_mid_entry",
        "truncated_at_entry",
        "header_only_but_entries_counted",
        "garbage_appended",
        "entry_count_far_larger",
        "entry_count_2_63",
        "entry_count_max_u8",
        "entry_count_smaller",
    }
    assert struct.unpack(">Q", index_files["entry_count_max_u8"][56:64]) == (2**64 - 1,)
