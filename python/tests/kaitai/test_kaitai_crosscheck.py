"""Cross-check the Kaitai descriptions (ksy/) against the reference codec.

Segment files are built with the pure reference functions, parsed by the
parsers kaitai-struct-compiler generates for Python, JavaScript, Java and Go
(through the harnesses in tools/ksy/harness/), and every field is compared
with what parse_header and RecordDecoder return for the same bytes. Index
files: test_kaitai_index.py.
"""

from __future__ import annotations

import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kaitai_tools import BUILD, LANGUAGES, REPO, TARGETS, TOOLS, run_harness

from openbinlog._crc import masked_crc32c
from openbinlog._format import HEADER_CRC_COVERS, HEADER_SIZE, SIGNATURE
from openbinlog._legacy import iter_legacy_records
from openbinlog._records import Entry, RecordDecoder, encode_record
from openbinlog._segment import CommitState, build_header, encode_mirror, encode_slot, parse_header
from openbinlog.errors import BinlogError

LOG_ID = bytes(range(16))
CREATED_US = 1_700_000_000_000_000


# --- building segment files with the reference functions -------------------------------------------------


@dataclass(frozen=True)
class Rec:
    payload: bytes
    asqn: int = -1
    timestamp_us: int = CREATED_US
    frame: int = 1


def publish(header: bytearray, commit: CommitState, log: int) -> None:
    at, raw = encode_slot(commit)
    header[at : at + len(raw)] = raw
    at, raw = encode_mirror(commit, log)
    header[at : at + len(raw)] = raw


def v2_segment(
    records: list[Rec],
    *,
    log: int = 1,
    base_index: int = 1,
    committed: int | None = None,
    sealed: bool = False,
    capacity: int = 0,
    earlier_commit: int | None = None,
) -> bytes:
    """A segment whose first ``committed`` records (default: all) are published in generation 2.

    ``earlier_commit`` publishes generation 2 after that many records and
    generation 3 after ``committed``, so both slots hold a commit.
    """
    committed = len(records) if committed is None else committed
    header = bytearray(
        build_header(log=log, log_id=LOG_ID, base_index=base_index, created_us=CREATED_US, capacity=capacity)
    )
    encoded, index, asqn, timestamp, states = [], base_index, -1, 0, [(256, base_index, -1, 0)]
    for rec in records:
        encoded.append(encode_record(index, rec.payload, asqn=rec.asqn, timestamp_us=rec.timestamp_us, frame=rec.frame))
        if rec.frame == 1:
            index += 1
            asqn = rec.asqn if rec.asqn != -1 else asqn
            timestamp = rec.timestamp_us
        states.append((states[-1][0] + len(encoded[-1]), index, asqn, timestamp))
    next_log = log + 1 if sealed else 0
    generations = [(earlier_commit, 2), (committed, 3)] if earlier_commit is not None else [(committed, 2)]
    for count, generation in generations:
        offset, next_index, last_asqn, last_timestamp = states[count]
        publish(header, CommitState(generation, offset, next_index, last_asqn, last_timestamp, next_log), log)
    data = bytes(header) + b"".join(encoded)
    return data.ljust(capacity, b"\0") if capacity else data


def legacy_segment(
    payloads: list[bytes], *, log: int = 1, status: int = 0, next_log: int = 0, tail_extra: int = 0
) -> bytes:
    """jPOS-EE v1: a 256-byte header, records from offset 248 over its last 8 bytes."""
    body = b"".join(struct.pack(">i", len(p)) + p for p in payloads)
    end = 248 + len(body)
    data = bytearray(struct.pack(">IHHQII", 252, 1, status, end + tail_extra, log, next_log).ljust(256, b"\0"))
    data[248 : 248 + len(body)] = body
    return bytes(data)


def flip_bit(data: bytes, offset: int) -> bytes:
    return data[:offset] + bytes([data[offset] ^ 0x01]) + data[offset + 1 :]


def with_header_fields(data: bytes, offset: int, raw: bytes) -> bytes:
    """Change immutable header bytes and reseal the header checksum, so only the change itself is wrong."""
    header = bytearray(data[:256])
    header[offset : offset + len(raw)] = raw
    header[92:96] = masked_crc32c(*(header[part] for part in HEADER_CRC_COVERS)).to_bytes(4, "big")
    return bytes(header) + data[256:]


SIZES = [Rec(b""), Rec(b"a", asqn=5), Rec(bytes(range(256)) * 16, asqn=9), Rec(b"\xab" * 65536), Rec(b"end", asqn=10)]
TORN_RECORD = encode_record(6, b"a record that was being written when the process died")
FIVE = v2_segment(SIZES)
SECOND_RECORD = 256 + 40  # FIVE's first record has an empty payload
LEGACY_PAYLOADS = [b"first", b"", b"\x00" * 300, b"last"]

# name -> bytes of segment files every strict and tolerant parser must read like the reference.
GOOD_V2 = {
    "fresh_header_only": build_header(log=1, log_id=LOG_ID, base_index=1, created_us=CREATED_US),
    "empty": v2_segment([]),
    "one_empty_payload": v2_segment([Rec(b"")]),
    "sizes_up_to_64k": FIVE,
    "asqn_all_present": v2_segment([Rec(b"x", asqn=1), Rec(b"y", asqn=2), Rec(b"z", asqn=40)]),
    "asqn_all_absent": v2_segment([Rec(b"x"), Rec(b"y"), Rec(b"z")]),
    "negative_timestamp_big_index": v2_segment([Rec(b"old", timestamp_us=-5)], log=7, base_index=2**40),
    "slot_1_active_gen_3": v2_segment([Rec(b"a"), Rec(b"b"), Rec(b"c")], earlier_commit=1),
    "skippable_frame": v2_segment([Rec(b"a"), Rec(b"extension", frame=200), Rec(b"b")]),
    "sealed": v2_segment([Rec(b"a")], log=4, sealed=True),
    "preallocated": v2_segment([Rec(b"a"), Rec(b"b")], capacity=4096),
    "uncommitted_whole_record": v2_segment([Rec(b"a"), Rec(b"b"), Rec(b"synced, not published")], committed=2),
}
# Truncated at several points of the last record, which lies beyond the commit point.
TORN = {f"torn_after_{cut}_bytes": FIVE + TORN_RECORD[:cut] for cut in (1, 4, 5, 39, 40, 41, len(TORN_RECORD) - 1)}
TORN |= {
    "tail_garbage": FIVE + b"\xff" * 50,
    "tail_whole_record_bad_payload_crc": FIVE + flip_bit(TORN_RECORD, len(TORN_RECORD) - 1),
    "no_header_short": bytes(100),
    "no_header_zeros": bytes(256),
}
# name -> (bytes, how the strict parsers fail: "checksum" = parse, but checksums_ok is false; "parse" = throw)
CORRUPT = {
    "committed_payload_bit_flip": (flip_bit(FIVE, SECOND_RECORD + 40), "checksum"),
    "committed_record_header_bit_flip": (flip_bit(FIVE, SECOND_RECORD + 8), "checksum"),
    "header_crc_broken": (flip_bit(FIVE, 40), "checksum"),
    "committed_data_missing": (FIVE[:-1], "parse"),
    "bad_signature": (FIVE[:24] + b"\x89BLOG\n\n\x1a" + FIVE[32:], "parse"),
    "unknown_header_flag": (with_header_fields(FIVE, 64, (2).to_bytes(4, "big")), "parse"),
    "record_crosses_commit_point": (
        v2_segment([Rec(b"a"), Rec(b"b")])[:256] + v2_segment([Rec(b"a"), Rec(b"bb")])[256:],
        "parse",
    ),
}


def torn_slot_write(data: bytes) -> bytes:
    """Generation 3 half-written into slot 1: its checksum does not match."""
    at, raw = encode_slot(CommitState(3, len(data), 6, 10, CREATED_US, 0))
    return data[:at] + raw[:-1] + bytes([raw[-1] ^ 0xFF]) + data[at + len(raw) :]


TORN_SLOT_WRITE = torn_slot_write(FIVE)
GOOD_LEGACY = {
    "legacy_records": legacy_segment(LEGACY_PAYLOADS, log=3),
    "legacy_empty": legacy_segment([]),
    "legacy_closed": legacy_segment([b"only"], log=2, status=1, next_log=3),
    "legacy_short_first_record": legacy_segment([b"ab"]),
}
CORRUPT_LEGACY = {"legacy_tail_beyond_file": legacy_segment([b"a"], tail_extra=10)}


# --- what the reference says ----------------------------------------------------------------------------


def entry_json(entry: Entry) -> dict[str, Any]:
    return {
        "offset": entry.offset,
        "index": str(entry.index),
        "asqn": str(entry.asqn),
        "timestamp_us": None if entry.timestamp_us is None else str(entry.timestamp_us),
        "payload_hex": entry.payload.hex(),
    }


def reference_strict(data: bytes) -> dict[str, Any]:
    """The committed records, as a reader returns them; raises on corruption."""
    info = parse_header(data)
    assert info.version == 2
    decoder = RecordDecoder(log=info.log, offset=256, next_index=info.base_index, limit=info.commit.commit_offset)
    decoder.feed(data[256:])
    decoder.end_of_input()
    return {
        "version": 2,
        "log": info.log,
        "base_index": str(info.base_index),
        "commit_offset": str(info.commit.commit_offset),
        "records": [entry_json(entry) for entry in decoder],
        "checksums_ok": True,
        "torn_tail_offset": None,
    }


def headerless(data: bytes) -> bool:
    """No header a parser can read: the tolerant view's ``has_header`` is false (fewer than 256 bytes, or zeros)."""
    return len(data) < HEADER_SIZE or not any(data[:HEADER_SIZE])


def reference_tolerant(data: bytes) -> dict[str, Any]:
    """Every valid record from offset 256 on, and where that valid prefix ends (the torn offset)."""
    if headerless(data):
        return {
            "version": None,
            "log": None,
            "base_index": None,
            "commit_offset": None,
            "records": [],
            "checksums_ok": None,
            "torn_tail_offset": 0,
        }
    info = parse_header(data)
    assert info.version == 2
    decoder = RecordDecoder(log=info.log, offset=256, next_index=info.base_index)
    decoder.feed(data[256:])
    decoder.end_of_input()
    entries = [entry_json(entry) for entry in decoder]
    assert decoder.stop is not None
    return {
        "version": 2,
        "log": info.log,
        "base_index": str(info.base_index),
        "commit_offset": str(info.commit.commit_offset),
        "records": entries,
        "checksums_ok": True,
        "torn_tail_offset": decoder.stop.offset,
    }


def reference_legacy(data: bytes) -> dict[str, Any]:
    info = parse_header(data)
    assert info.version == 1
    entries = iter_legacy_records(data[248:], log=info.log, offset=248, tail=info.tail, next_index=1)
    return {
        "version": 1,
        "log": info.log,
        "base_index": None,
        "commit_offset": str(info.tail),
        "records": [entry_json(entry) for entry in entries],
        "checksums_ok": None,
        "torn_tail_offset": None,
    }


# --- the files on disk and every harness's view of them --------------------------------------------------


@pytest.fixture(scope="session")
def segment_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("kaitai_segments")
    files = {}
    every = (
        GOOD_V2
        | TORN
        | {name: data for name, (data, _) in CORRUPT.items()}
        | {"torn_slot_write": TORN_SLOT_WRITE}
        | GOOD_LEGACY
        | CORRUPT_LEGACY
    )
    for number, (name, data) in enumerate(every.items(), start=1):
        files[name] = folder / f"{number:08d}.dat"
        files[name].write_bytes(data)
    return files


MODE_FILES = {
    "strict": [*GOOD_V2, *TORN, *CORRUPT, "torn_slot_write"],
    "tolerant": [*GOOD_V2, *TORN, *CORRUPT],
    "legacy": [*GOOD_LEGACY, *CORRUPT_LEGACY],
}


class Parsed:
    """Each harness's JSON per file, from one harness run per language and mode, run on first use
    (so a broken harness fails only its own language's tests)."""

    def __init__(self, files: dict[str, Path]) -> None:
        self._files = files
        self._runs: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}

    def __getitem__(self, language_mode: tuple[str, str]) -> dict[str, dict[str, Any]]:
        if language_mode not in self._runs:
            language, mode = language_mode
            paths = [self._files[name] for name in MODE_FILES[mode]]
            outputs = run_harness(language, mode, paths)
            self._runs[language_mode] = {name: outputs[self._files[name]] for name in MODE_FILES[mode]}
        return self._runs[language_mode]


@pytest.fixture(scope="session")
def parsed(kaitai_build: None, segment_files: dict[str, Path]) -> Parsed:
    return Parsed(segment_files)


# --- the tests ---------------------------------------------------------------------------------------------


def test_compile_produces_every_target(kaitai_build: None) -> None:
    for ksy in sorted((REPO / "ksy").glob("*.ksy")):
        for target in TARGETS:
            produced = [
                p for p in (BUILD / target).iterdir() if p.stem.lower().replace("_", "") == ksy.stem.replace("_", "")
            ]
            assert produced, f"{ksy.name}: nothing generated for {target}"


def test_compile_fails_on_a_broken_ksy(kaitai_build: None, tmp_path: Path) -> None:
    (tmp_path / "broken.ksy").write_text("meta:\n  id: broken\nseq:\n  - id: a\n    type: u9\n")
    done = subprocess.run(
        ["node", str(TOOLS / "compile.js"), str(tmp_path), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert "unable to find type 'u9'" in done.stderr


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("name", [*GOOD_V2, *TORN])
def test_strict_reads_the_committed_records(parsed: Parsed, language: str, name: str) -> None:
    data = (GOOD_V2 | TORN)[name]
    got = parsed[language, "strict"][name]
    if headerless(data):
        assert "error" in got
    else:
        assert got == reference_strict(data)


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("name", [*GOOD_V2, *TORN])
def test_tolerant_reads_the_valid_prefix(parsed: Parsed, language: str, name: str) -> None:
    assert parsed[language, "tolerant"][name] == reference_tolerant((GOOD_V2 | TORN)[name])


def test_torn_files_keep_the_committed_prefix() -> None:
    """The torn cases really are torn beyond the commit point, not below it."""
    committed = reference_strict(FIVE)["records"]
    for name, data in TORN.items():
        if not headerless(data):
            assert reference_strict(data)["records"] == committed, name
            assert reference_tolerant(data)["torn_tail_offset"] == len(FIVE), name


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("name", list(CORRUPT))
def test_strict_rejects_corruption(parsed: Parsed, language: str, name: str) -> None:
    data, failure = CORRUPT[name]
    with pytest.raises(BinlogError):
        reference_strict(data)
    got = parsed[language, "strict"][name]
    if failure == "parse":
        assert "error" in got, got
    else:
        assert got.get("checksums_ok") is False, got


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("name", ["committed_payload_bit_flip", "committed_record_header_bit_flip"])
def test_tolerant_stops_before_a_damaged_record(parsed: Parsed, language: str, name: str) -> None:
    data, _ = CORRUPT[name]
    got = parsed[language, "tolerant"][name]
    assert got == reference_tolerant(data)
    assert got["torn_tail_offset"] == SECOND_RECORD


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("name", list(GOOD_LEGACY))
def test_legacy_matches_reference(parsed: Parsed, language: str, name: str) -> None:
    assert parsed[language, "legacy"][name] == reference_legacy(GOOD_LEGACY[name])


@pytest.mark.parametrize("language", LANGUAGES)
def test_legacy_rejects_a_tail_beyond_the_file(parsed: Parsed, language: str) -> None:
    data = CORRUPT_LEGACY["legacy_tail_beyond_file"]
    with pytest.raises(BinlogError):
        list(iter_legacy_records(data[248:], log=1, offset=248, tail=parse_header(data).tail, next_index=1))
    assert "error" in parsed[language, "legacy"]["legacy_tail_beyond_file"]


@pytest.mark.parametrize("language", LANGUAGES)
def test_torn_slot_write_is_left_to_the_caller(parsed: Parsed, language: str) -> None:
    """Kaitai picks the higher generation without its checksum: the caller sees the slot fail.

    The reference skips the torn slot and uses the other one; a full reader
    built on the Kaitai parser must do the same (ksy/README.md).
    """
    data = TORN_SLOT_WRITE
    assert reference_strict(data)["records"] == reference_strict(FIVE)["records"]
    got = parsed[language, "strict"]["torn_slot_write"]
    assert got["checksums_ok"] is False
    assert got["records"] == reference_strict(FIVE)["records"]


def test_builders_match_the_byte_facts() -> None:
    """The files are what the spec says, so agreement is not agreement on a shared mistake."""
    assert FIVE[24:32] == SIGNATURE
    assert reference_strict(FIVE)["records"][1]["offset"] == SECOND_RECORD
    assert FIVE[SECOND_RECORD : SECOND_RECORD + 4] == (36 + 1).to_bytes(4, "big")
    legacy = GOOD_LEGACY["legacy_records"]
    assert legacy[4:6] == b"\x00\x01"
    assert legacy[248:252] == len(LEGACY_PAYLOADS[0]).to_bytes(4, "big")
