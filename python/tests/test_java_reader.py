"""The Java reader core (spark_udfs/jvm, package ``org.openbinlog.format``) against the reference.

The reference writes a log, which is then damaged in up to three ways (``strategies.java_log_damages``); the
reference and the Java walk read it, the Java one through its conformance testee (one session for the module),
and must give the same answer: the same records, the same error (class, log, offset, index), the same torn tail
and, when tolerant, the same damage list. Reads from the start, strict and tolerant (spec 10.2, 10.4), after a
ref (10.6) and in consecutive splits, strict and tolerant (10.5).
"""

from __future__ import annotations

import dataclasses
import gzip
import os
import random
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import zstandard
from hypothesis import example, given, settings
from hypothesis import strategies as st
from logtools import legacy_segment, read_entries
from strategies import java_compressed_damages, java_log_damages, java_log_items

from openbinlog import BinlogError, Entry, Writer, build_indexes
from openbinlog._crc import masked_crc32c
from openbinlog._format import SEGMENT_NAME
from openbinlog._maintenance import CODECS, _compress_into
from openbinlog._segment import SegmentHeaderInfo, active_commit, encode_slot
from openbinlog._segment_file import LocalDirectory
from openbinlog._split import _split_segment
from openbinlog.walk import Damage, SegmentWalk, end_in, split_range
from openbinlog_conformance import canonical
from openbinlog_conformance.client import SessionTestee
from openbinlog_conformance.reference import U64_MAX, read_log, read_log_tolerant, read_split_log

Json = dict[str, Any]
Item = tuple[bytes, int | None] | None
Fault = tuple[str, int, int]

ROOT = Path(__file__).resolve().parents[2]
# A record's header fields a damage forges (offset, size), under a header checksum made valid again.
FORGED_FIELDS = {"length": (0, 4), "frame": (4, 1), "index": (8, 8), "asqn": (16, 8)}
EXAMPLES = settings(max_examples=100)


@pytest.fixture(scope="module")
def java() -> Iterator[SessionTestee]:
    """The Java testee, built once by spark_udfs/jvm/build.sh, in one session for the module."""
    if shutil.which("javac") is None:
        pytest.skip("javac is not installed: the Java reader core cannot be built")
    subprocess.run(["sh", "spark_udfs/jvm/build.sh"], cwd=ROOT, check=True)
    testee = SessionTestee(["sh", "spark_udfs/jvm/testee.sh"], cwd=str(ROOT))
    hello = testee.start("2.1.0", timeout=60)
    assert {"tolerant", "split", "refs", "compressed"} <= set(hello.capabilities)
    yield testee
    testee.close()


def ask(java: SessionTestee, request: Json) -> Json:
    answer = java.request({"op": "read", **request}, timeout=60)
    assert answer.pop("ok") is True, answer
    return answer


def assert_same(answer: Json, expected: Json) -> None:
    """The same answer. Of an ``invalid_ref`` only the members the reference gives are compared: the spec gives the
    ref's fields "where known" (12), which the conformance runner compares only where expected (5.1); the Java
    reader gives all three, the reference fewer when the segment or the offset is not there."""
    error, wanted = answer.get("error"), expected.get("error")
    if error is not None and wanted is not None and wanted["class"] == "invalid_ref":
        answer = {**answer, "error": {key: None if wanted.get(key) is None else value for key, value in error.items()}}
    assert answer == expected


def write(directory: Path, items: Sequence[Item]) -> None:
    """The log ``items`` describe, written by the reference writer."""
    asqn = -1
    with Writer(directory, durability="os") as writer:
        for item in items:
            if item is None:
                writer.cutover()
                continue
            payload, step = item
            if step is not None:
                asqn += step
            writer.append(payload, asqn=-1 if step is None else asqn)


def forge(data: bytearray, at: int, kind: str, value: int) -> None:
    """Forge one header field of the record at ``at``, its header checksum made valid again."""
    field, size = FORGED_FIELDS[kind]
    current = int.from_bytes(data[at + field : at + field + size], "big")
    forged = {
        "index": current + value % 5 - 2,  # a record lost, repeated or resurrected
        "asqn": value % 6 - 3,  # often stale, sometimes below -1
        "length": current + value % 9 - 4 if value % 2 else value,  # off by a few bytes, or anything
        "frame": value,
    }[kind] % 2 ** (8 * size)
    data[at + field : at + field + size] = forged.to_bytes(size, "big")
    data[at + 36 : at + 40] = masked_crc32c(bytes(data[at : at + 36])).to_bytes(4, "big")


def compress(path: Path, codec: str) -> None:
    """Replace the segment file ``path`` by its copy in ``codec``, made by the reference's compression (spec 2.6)."""
    target = os.open(path.with_name(f"{path.name}.{codec}"), os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o644)
    source = os.open(path, os.O_RDONLY)
    try:
        _compress_into(source, target, codec)
    finally:
        os.close(source)
        os.close(target)
    path.unlink()


def damage(directory: Path, records: Sequence[Entry], faults: Sequence[Fault]) -> None:
    """Apply ``faults`` (``strategies.JAVA_LOG_DAMAGES``) to the log, whose records were ``records``."""
    for kind, where, value in faults:
        segments = sorted(path for path in directory.iterdir() if SEGMENT_NAME.match(path.name))
        if kind in FORGED_FIELDS:
            if not records:
                continue
            record = records[where % len(records)]
            path = directory / f"{record.log:08d}.dat"
            if not path.exists() or path.stat().st_size < record.offset + 40:
                continue
            data = bytearray(path.read_bytes())
            forge(data, record.offset, kind, value)
        elif not segments:
            continue
        else:
            path = segments[where % len(segments)]
            data = bytearray(path.read_bytes())
            if kind == "remove":
                path.unlink()
                continue
            if kind == "compress":
                if path.suffix == ".dat":
                    compress(path, CODECS[value % len(CODECS)])
                continue
            if kind == "slot_asqn":
                lie_about_last_asqn(data, value)
            if kind == "flip" and data:
                data[value // 8 % len(data)] ^= 1 << value % 8
            elif kind == "truncate":
                del data[value % (len(data) + 1) :]
            elif kind == "zero" and data:
                at = value % len(data)
                span = min(1 + where % 64, len(data) - at)
                data[at : at + span] = bytes(span)
            elif kind == "append":
                data += bytes([value % 256]) * (1 + where % 80)
        path.write_bytes(data)


def lie_about_last_asqn(data: bytearray, value: int) -> None:
    """Over- or understate the last asqn of the segment's active slot (format 3.2), its checksum made valid: no
    check of the walk looks at it, but it is what a reader that starts a segment on its own carries into it."""
    if len(data) < 256:
        return
    try:
        commit = active_commit(bytes(data[:256]), base_index=0, log=0)
    except (BinlogError, ValueError):
        return
    lie = max(-1, commit.last_asqn + value % 7 - 3)
    at, raw = encode_slot(dataclasses.replace(commit, last_asqn=lie))
    data[at : at + len(raw)] = raw


def damaged_log(directory: Path, items: Sequence[Item], faults: Sequence[Fault]) -> tuple[list[Entry], dict[int, int]]:
    """Write and damage a log; the records and the segments it had before the damage, with their sizes."""
    write(directory, items)
    records = read_entries(directory)
    sizes = {int(path.name[:8]): path.stat().st_size for path in sorted(directory.glob("*.dat"))}
    damage(directory, records, faults)
    return records, sizes


def reference_tolerant_split(directory: str, log: int, start: int, stop: int) -> Json:
    """A tolerant split (spec 10.5, "Tolerant splits") by the reference's walk, as ``read_split`` reads a strict one."""
    records: list[Json] = []
    regions: list[Damage] = []
    answer: Json = {"outcome": "accept", "records": records, "torn": None, "error": None}
    try:
        logs = LocalDirectory(directory)
        with _split_segment(logs, log) as segment:
            if segment is not None:
                header = segment.header()
                assert isinstance(header, SegmentHeaderInfo)  # _split_segment refuses version 1
                end = end_in(logs, segment, header, logs.segments())
                planned = split_range(segment, header=header, end=end, start=start, stop=stop)
                if planned is not None:
                    first, index, split = planned
                    walk = SegmentWalk(
                        segment,
                        path=segment.path,
                        header=header,
                        end=end,
                        start=first,
                        next_index=index,
                        split=split,
                        tolerant=True,
                        damage=regions,
                    )
                    while entries := walk.next_batch():
                        records.extend(canonical.record(entry) for entry in entries)
    except BinlogError as exc:
        answer = {"outcome": "reject", "records": records, "torn": None, "error": canonical.error(exc)}
    return {**answer, "damage": [canonical.damage(region) for region in regions]}


@pytest.mark.spec("R-8", "R-9", "R-12", "R-17", "R-18", "R-39")
@EXAMPLES
@given(java_log_items, java_log_damages)
def test_a_strict_read_returns_and_rejects_what_the_reference_does(
    java: SessionTestee, items: list[Item], faults: list[Fault]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp, "log")
        damaged_log(directory, items, faults)
        assert_same(ask(java, {"path": str(directory)}), read_log(str(directory)))


@pytest.mark.spec("R-25", "R-26", "R-39")
@EXAMPLES
@given(java_log_items, java_log_damages)
def test_a_tolerant_read_steps_over_the_damage_the_reference_steps_over(
    java: SessionTestee, items: list[Item], faults: list[Fault]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp, "log")
        damaged_log(directory, items, faults)
        assert_same(ask(java, {"path": str(directory), "tolerant": True}), read_log_tolerant(str(directory)))


@pytest.mark.spec("R-43")
@EXAMPLES
@given(java_log_items, java_compressed_damages)
def test_compressed_copies_damaged_or_not_are_read_as_the_reference_reads_them(
    java: SessionTestee, items: list[Item], faults: list[Fault]
) -> None:
    """A segment compressed by the reference's compression (spec 2.6), with damage before and after: flipped, cut,
    zeroed or appended to, the copy is unpacked as far as the reference unpacks it and fails where it fails."""
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp, "log")
        damaged_log(directory, items, faults)
        assert_same(ask(java, {"path": str(directory)}), read_log(str(directory)))
        assert_same(ask(java, {"path": str(directory), "tolerant": True}), read_log_tolerant(str(directory)))


@pytest.mark.spec("R-43")
def test_a_zstd_archive_cut_inside_a_frame_after_a_whole_one_is_a_bad_header(java: SessionTestee) -> None:
    """Decoders may end without an error where a cut frame follows a whole one in the bytes they hold (zstd-jni
    does): the end of the frames is checked where the decoded stream ends."""
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp, "log")
        write(directory, [(bytes([n]) * 50, 1) for n in range(20)] + [None, (b"last", 1)])
        plain = directory / "00000001.dat"
        data = plain.read_bytes()
        packer = zstandard.ZstdCompressor()
        (directory / "00000001.dat.zst").write_bytes(packer.compress(data[:600]) + packer.compress(data[600:])[:-4])
        plain.unlink()
        expected = read_log(str(directory))
        assert expected["error"] == {"class": "bad_header", "log": 1, "offset": "0", "index": None}
        assert_same(ask(java, {"path": str(directory)}), expected)


def cut_archive_log(directory: Path, codec: str, record_bytes: int, kept: float, segments: int = 3) -> None:
    """A log of ``segments`` segments of about 4 MB, the first two compressed in ``codec`` by the reference's
    compression, the second's archive then cut after ``kept`` of its bytes: beyond the first pieces a reader unpacks."""
    with Writer(directory, max_segment_bytes=4_000_000, durability="os") as writer:
        for number in range(segments * 4_000_000 // (record_bytes + 40)):
            writer.append((number.to_bytes(4, "big") * (record_bytes // 4 + 1))[:record_bytes])
    for number in (1, 2):
        compress(directory / f"{number:08d}.dat", codec)
    archive = directory / f"00000002.dat.{codec}"
    packed = archive.read_bytes()
    archive.write_bytes(packed[: int(len(packed) * kept)])


@pytest.mark.spec("R-43")
@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize(("record_bytes", "kept"), [(1400, 0.5), (1400, 0.99), (300_000, 0.7), (300_000, 0.9)])
def test_an_archive_cut_beyond_its_first_pieces_returns_none_of_its_records_as_the_reference_does(
    java: SessionTestee, codec: str, record_bytes: int, kept: float
) -> None:
    """Segment 2's archive cut beyond the first pieces a reader unpacks: the header check passes, and the first
    read of a record unpacks the segment to its end and meets the cut (R-43). None of segment 2's records is
    returned, by a read in one piece or in parts, where readers that unpacked as far as they walked returned those
    before the cut, as many as their piece sizes gave."""
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp, "log")
        cut_archive_log(directory, codec, record_bytes, kept)
        for tolerant in (False, True):
            whole = read_log_tolerant(str(directory)) if tolerant else read_log(str(directory))
            assert whole["error"] == {"class": "bad_header", "log": 2, "offset": "0", "index": None}
            assert {record["log"] for record in whole["records"]} == {1}
            assert_same(ask(java, {"path": str(directory), "tolerant": tolerant}), whole)
            parts = ask(java, {"path": str(directory), "tolerant": tolerant, "plan_bytes": 1 << 20})
            assert_same(parts, in_one_piece(whole))


@pytest.mark.spec("R-43", "R-36", "R-38")
@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("record_bytes", [1000, 100_000, 1_500_000])
def test_a_version_1_archive_cut_inside_its_second_mib_is_read_as_the_reference_reads_it(
    java: SessionTestee, codec: str, record_bytes: int
) -> None:
    """A closed version 1 segment of about 3 MiB of incompressible records, stored compressed and cut inside its
    second MiB, then an open one (legacy-v1 B.4): bad_header at offset 0 and none of the segment's records (R-43), in
    one piece, in parts and after a ref into it, as the reference reads it. The version 1 walk checks record by
    record where the reference reads a MiB at a time: a reader that unpacked only as far as its walk read returned
    records the reference does not (or, of gzip, fewer), and after a ref the records of the read or invalid_ref."""
    payloads = [random.Random(number).randbytes(record_bytes) for number in range(3 * 2**20 // record_bytes)]
    plain = legacy_segment(payloads, log=1, closed=True, next_log=2)
    packed = gzip.compress(plain) if codec == "gz" else zstandard.ZstdCompressor().compress(plain)
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp, "log")
        directory.mkdir()
        (directory / f"00000001.dat.{codec}").write_bytes(packed[: 3 * 2**19])  # about 1.5 MiB of records
        (directory / "00000002.dat").write_bytes(legacy_segment([b"last"], log=2, closed=False))
        for tolerant in (False, True):
            whole = read_log_tolerant(str(directory)) if tolerant else read_log(str(directory))
            assert whole["error"] == {"class": "bad_header", "log": 1, "offset": "0", "index": None}
            assert whole["records"] == []
            assert_same(ask(java, {"path": str(directory), "tolerant": tolerant}), whole)
            parts = ask(java, {"path": str(directory), "tolerant": tolerant, "plan_bytes": 1 << 20})
            assert_same(parts, in_one_piece(whole))
        offsets = [248 + number * (record_bytes + 4) for number in range(len(payloads))]
        for number in sorted({0, 1, len(offsets) // 4, len(offsets) // 2, len(offsets) - 1}):
            ref = f"1:{offsets[number]}:{number + 1}"
            assert_same(ask(java, {"path": str(directory), "after": ref}), read_log(str(directory), ref))


@pytest.mark.spec("R-28", "R-29", "R-30")
@EXAMPLES
@given(java_log_items, java_log_damages, st.data())
def test_a_read_after_a_ref_resumes_or_rejects_where_the_reference_does(
    java: SessionTestee, items: list[Item], faults: list[Fault], data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp, "log")
        records, _ = damaged_log(directory, items, faults)
        refs = [f"{record.log}:{record.offset}:{record.index}" for record in records]
        # A ref taken before the damage, or one that names no record: moved, renumbered or in no segment.
        ref = data.draw(
            st.one_of(
                st.sampled_from(refs) if refs else st.nothing(),
                st.tuples(st.integers(0, 4), st.integers(0, 2000), st.integers(0, 30)).map(
                    lambda ref: ":".join(map(str, ref))
                ),
            )
        )
        assert_same(ask(java, {"path": str(directory), "after": ref}), read_log(str(directory), ref))


@pytest.mark.spec("R-27", "R-40", "R-25")
@EXAMPLES
@given(java_log_items, java_log_damages, st.booleans(), st.data())
def test_consecutive_splits_return_and_reject_what_the_reference_splits_do(
    java: SessionTestee, items: list[Item], faults: list[Fault], tolerant: bool, data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp, "log")
        _, sizes = damaged_log(directory, items, faults)
        for log, written in sizes.items():  # every segment the log had, removed and compressed ones included
            path = directory / f"{log:08d}.dat"
            size = path.stat().st_size if path.exists() else written
            cuts = data.draw(st.lists(st.integers(257, max(size, 256) + 64), max_size=4, unique=True).map(sorted))
            for start, stop in zip([256, *cuts], [*cuts, U64_MAX], strict=True):
                request = {"path": str(directory), "log": log, "start": str(start), "stop": str(stop)}
                if tolerant:
                    expected = reference_tolerant_split(str(directory), log, start, stop)
                    assert_same(ask(java, {**request, "tolerant": True}), expected)
                else:
                    assert_same(ask(java, request), read_split_log(str(directory), log, start, stop))


def in_one_piece(answer: Json) -> Json:
    """A read answer without its torn tail, which a read in parts does not look for (the last part ends at S)."""
    outcome = "accept" if answer["outcome"] == "recovered" else answer["outcome"]
    return {**answer, "outcome": outcome, "torn": None}


@pytest.mark.spec("R-19", "R-27")
def test_a_read_in_parts_learns_the_asqn_carried_over_a_segment_without_one(java: SessionTestee) -> None:
    """Segment 3's first asqn (0) follows the walk's A (-1: segment 1's only record, forged, says so), not the last
    asqn segment 1's slot gives (1), which the empty segment 2 passes on: the first part of segment 3 learns the
    walk's A by walking back over segment 2 to segment 1."""
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp, "log")
        damaged_log(directory, [(b"", 1), None, None, (b"", None)], [("asqn", 0, 254), ("asqn", 1, 159)])
        whole = in_one_piece(read_log(str(directory)))
        assert whole["error"] is None and len(whole["records"]) == 2
        assert_same(ask(java, {"path": str(directory), "plan_bytes": 1}), whole)


@pytest.mark.spec("R-27", "R-47")
@pytest.mark.parametrize("indexed", [False, True])
def test_a_read_in_parts_checks_the_first_asqn_after_parts_without_one(java: SessionTestee, indexed: bool) -> None:
    """Record 1 carries asqn 2 (forged), records 2 to 201 none, record 202 asqn 1, which fails step 8 in one read.
    The parts between record 1 and record 202 start with no earlier asqn and meet none, so the part that holds
    record 1 checks the first asqn after its stop, whatever the size of the parts, cut at the checked entries of
    an index or not; a read narrowed to rows before record 202 does not look at it (a seek, not a verification)."""
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp, "log")
        items: list[Item] = [(b"a" * 30, 1), *[(b"b" * 30, None)] * 200, (b"c" * 30, 1), *[(b"d" * 30, None)] * 100]
        records, _ = damaged_log(directory, [*items, None], [])
        if indexed:
            build_indexes(directory, interval=16)
        damage(directory, records, [("asqn", 0, 5)])  # record 1's asqn 0 becomes 2
        failed = {"class": "asqn_not_increasing", "log": 1, "offset": str(records[201].offset), "index": "202"}
        for tolerant in (False, True):
            whole = in_one_piece(read_log_tolerant(str(directory)) if tolerant else read_log(str(directory)))
            if tolerant:
                assert [{k: d[k] for k in failed} for d in whole["damage"]] == [failed]
            else:
                assert whole["error"] == failed
            for step in (100, 1000, 4000):
                answer = ask(java, {"path": str(directory), "tolerant": tolerant, "plan_bytes": step})
                if tolerant:
                    assert_same_but_for_split_boundaries(answer, whole)
                else:
                    assert answer["error"] == failed
                    assert all(record in whole["records"] for record in answer["records"])
        if indexed:
            for tolerant in (False, True):
                bounds = {"index_low": "20", "index_high": "60"}
                answer = ask(java, {"path": str(directory), "tolerant": tolerant, "plan_bytes": 400, "bounds": bounds})
                assert answer["error"] is None and not answer.get("damage")


def slot_lie_misjudged(answer: Json, faults: Sequence[Fault]) -> bool:
    """The one error a read in parts gives where the whole walk gives another: ``ambiguous_split`` from the part
    that ends a segment, when the segment's slot understates the last asqn of its records (a forged slot, or a
    forged record asqn), so that a later first asqn passes after the A the slot gives and fails after the walk's."""
    error = answer.get("error")
    lied = any(fault[0] in ("slot_asqn", "asqn") for fault in faults)
    return lied and error is not None and error["class"] == "ambiguous_split" and error["offset"] is None


def key(item: Json) -> tuple[Any, ...]:
    return (item.get("class"), item["log"], int(item["offset"]) if item["offset"] is not None else None)


def assert_same_but_for_split_boundaries(parts: Json, whole: Json) -> None:
    """A tolerant read in parts against the tolerant whole walk. Where a part's stop boundary ``b(t)`` holds a
    record that does not carry the index or asqn the walk expects, the part that ends there reports it and the
    next part starts there (readers 10.5, "Tolerant splits"; the damage row's resume index is that record's),
    while the whole walk resynchronises after it: the same damage is reported at the same place, and the read in
    parts also returns the records the whole walk stepped over there. The whole walk, having stepped over other
    records, "may list different damage after it" (10.5): where it found nothing to resume at, its walk of the
    segment ends there and keeps the E of the damaged record (RESYNC step 4, R-39), so that its NEXT reports a
    successor whose base index lies above that E as ``chain_broken``, while the parts returned the records up to the
    segment's end, whose E the successor continues. Nothing else may differ."""
    assert parts["error"] == whole["error"]
    mine = {json_key(record) for record in parts["records"]}
    theirs = {json_key(record) for record in whole["records"]}
    assert theirs <= mine
    reported = {key(damage) for damage in parts["damage"]}
    skipped = [damage for damage in whole["damage"] if key(damage) in reported]
    stepped: list[Json] = []  # the whole walk's regions over a record the parts returned
    for extra in mine - theirs:
        over = [
            damage
            for damage in skipped
            if damage["log"] == extra[0]
            and int(damage["offset"]) <= extra[1] < int(damage["offset"]) + int(damage["bytes_skipped"])
        ]
        assert over, extra
        stepped += over
    assert {key(damage) for damage in whole["damage"] if not after_a_step(damage, stepped)} <= reported


def after_a_step(damage: Json, stepped: list[Json]) -> bool:
    """Whether ``damage`` is the whole walk's broken chain after a segment whose walk ended at damage with nothing to
    resume at, over records the parts returned (a region of ``stepped``), with the E of that damage."""
    return damage["class"] == "chain_broken" and any(
        region["resumed_index"] is None and damage["log"] == region["log"] + 1 and damage["index"] == region["index"]
        for region in stepped
    )


def json_key(record: Json) -> tuple[int, int, str, str]:
    return (record["log"], int(record["offset"]), record["index"], record["payload"])


@pytest.mark.spec("R-9", "R-19", "R-27", "R-39")
@EXAMPLES
@given(java_log_items, java_log_damages, st.booleans(), st.integers(min_value=1, max_value=4096))
@example(items=[(b"", None), (b"", None), (b"", 1)], faults=[("asqn", 0, 3)], tolerant=False, step=1)
@example(items=[(b"", None), (b"", None), (b"", 1)], faults=[("asqn", 0, 3)], tolerant=True, step=1)
@example(items=[(b"", 1), (b"", None), None, (b"", 1)], faults=[("asqn", 0, 5)], tolerant=False, step=1)
@example(items=[(b"", 1), (b"", None), None, (b"", 1)], faults=[("asqn", 0, 5)], tolerant=True, step=1)
@example(items=[(b"", 3), None, (b"", None), (b"", 1)], faults=[("asqn", 0, 3), ("asqn", 2, 4)], tolerant=False, step=1)
@example(items=[(b"", 3), None, (b"", None), (b"", 1)], faults=[("asqn", 0, 3), ("asqn", 2, 4)], tolerant=True, step=1)
@example(items=[(b"", None), (b"", None), None], faults=[("frame", 0, 128)], tolerant=True, step=1)
@example(
    items=[None, None, None, None, (b"", None), (b"", 1), None, None],
    faults=[("asqn", 0, 3), ("zero", 152, 0)],
    tolerant=True,
    step=1,
)
def test_a_read_in_parts_returns_and_rejects_what_one_read_does(
    java: SessionTestee, items: list[Item], faults: list[Fault], tolerant: bool, step: int
) -> None:
    """The parts the Spark source reads in parallel (``LogReader.plan``, ``readPart``), read one after another,
    return the records and the damage of one read of the whole log, or fail with its error; tolerant, but for
    what the spec lets a tolerant split do at its stop boundary."""
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp, "log")
        damaged_log(directory, items, faults)
        whole = in_one_piece(read_log_tolerant(str(directory)) if tolerant else read_log(str(directory)))
        answer = ask(java, {"path": str(directory), "tolerant": tolerant, "plan_bytes": step})
        if slot_lie_misjudged(answer, faults):
            return
        if tolerant and answer != whole:
            assert_same_but_for_split_boundaries(answer, whole)
        elif whole["error"] is not None and answer != whole:
            # Strict splits return their records and those below the error or none of them: a record
            # beyond a split's stop is returned only by the split that starts at a boundary before it, which damage
            # after it can hide from the boundary search. The error is the same.
            assert_same({**answer, "records": whole["records"]}, whole)
            assert all(record in whole["records"] for record in answer["records"])
        else:
            assert_same(answer, whole)
