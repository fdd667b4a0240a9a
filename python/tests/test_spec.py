"""The spec and the code agree: every test vector is reproduced, every requirement is tested."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from logtools import legacy_segment

from openbinlog import Reader, Ref, encode_record
from openbinlog._crc import masked_crc32c
from openbinlog._segment import CommitState, build_header, encode_mirror, encode_slot

ROOT = Path(__file__).resolve().parents[2]
SPEC_DIR = ROOT / "spec"
# The normative documents of the specification; the sections each holds are listed at its top.
NORMATIVE = [SPEC_DIR / name for name in ("format.md", "protocols.md", "readers.md", "legacy-v1.md", "index.md")]
# Every document of the specification, normative or not, by the name cross-references use ("readers §10.2").
DOCUMENTS = {path.stem: path for path in NORMATIVE} | {
    "rationale": ROOT / "docs" / "rationale.md",
    "operators": ROOT / "docs" / "operators.md",
    "implementation-notes": ROOT / "docs" / "implementation-notes.md",
    "README": SPEC_DIR / "README.md",
}
FORMAT_LIMIT = 60_000  # bytes: spec/format.md stays readable in one sitting
LOG_ID = bytes(range(16))
T0 = 1_700_000_000_000_000


def normative_text() -> str:
    return "".join(path.read_text() for path in NORMATIVE)


def vectors() -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for match in re.finditer(r"^```hex (TV-\d+)\n(.*?)^```", normative_text(), re.M | re.S):
        lines = match[2].strip().splitlines()
        assert match[1] not in found, f"{match[1]} is given twice"
        found[match[1]] = bytes.fromhex("".join(line.split(":", 1)[1] for line in lines))
    return found


def requirement_definitions() -> list[str]:
    return re.findall(r"^- \*\*([RW]-\d+)\*\*", normative_text(), re.M)


def requirement_ids() -> set[str]:
    return set(requirement_definitions())


def test_spec_has_every_vector() -> None:
    assert set(vectors()) == {f"TV-{n}" for n in range(1, 15)}


def test_masked_crc_vectors() -> None:
    tv = vectors()
    assert tv["TV-1"] == masked_crc32c(b"").to_bytes(4, "big")
    assert tv["TV-2"] == masked_crc32c(b"123456789").to_bytes(4, "big")
    assert tv["TV-3"] == masked_crc32c(b"hello").to_bytes(4, "big")
    assert tv["TV-4"] == masked_crc32c(b"\x01\x02\x03").to_bytes(4, "big")


@pytest.mark.spec("W-4", "W-2")
def test_empty_segment_header_vector() -> None:
    assert build_header(log=1, log_id=LOG_ID, base_index=1, created_us=T0) == vectors()["TV-5"]


@pytest.mark.spec("W-6", "W-11")
def test_record_vectors() -> None:
    tv = vectors()
    assert encode_record(1, b"hello", timestamp_us=T0) == tv["TV-6"]
    assert encode_record(2, b"\x01\x02\x03", asqn=7, timestamp_us=T0 + 1000) == tv["TV-7"]
    assert encode_record(3, b"", timestamp_us=T0 + 2000) == tv["TV-8"]


@pytest.mark.spec("W-5", "W-12", "W-14")
def test_whole_segment_and_seal_vectors(tmp_path: Path) -> None:
    tv = vectors()
    segment = bytearray(tv["TV-5"] + tv["TV-6"] + tv["TV-7"])
    commit = CommitState(2, 344, 3, 7, T0 + 1000, 0)
    for at, raw in (encode_slot(commit), encode_mirror(commit, 1)):
        segment[at : at + len(raw)] = raw
    assert bytes(segment) == tv["TV-9"]
    sealed = CommitState(3, 344, 3, 7, T0 + 1000, 2)
    assert encode_slot(sealed) == (144, tv["TV-10"])
    assert encode_mirror(sealed, 1) == (6, tv["TV-11"])
    log = tmp_path / "log"
    log.mkdir()
    (log / "00000001.dat").write_bytes(tv["TV-9"])
    with Reader(log) as reader:
        entries = list(reader)
    assert [(e.index, e.payload, e.asqn) for e in entries] == [(1, b"hello", -1), (2, b"\x01\x02\x03", 7)]


def test_binary_ref_vector() -> None:
    assert Ref(3, 1024, 77).to_bytes() == vectors()["TV-12"]


@pytest.mark.spec("R-34", "R-35", "R-37")
def test_legacy_segment_vector(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.mkdir()
    (log / "00000001.dat").write_bytes(vectors()["TV-13"])
    # The segment was closed by a cutover, which jPOS-EE starts by creating the successor.
    (log / "00000002.dat").write_bytes(legacy_segment([], log=2, closed=False))
    with Reader(log) as reader:
        entries = list(reader)
    assert [(e.index, e.offset, e.payload, e.checked) for e in entries] == [
        (1, 248, b"record-0", False),
        (2, 260, b"record-1", False),
        (3, 272, b"record-2", False),
    ]


def cited_ids() -> dict[str, set[str]]:
    """Requirement ids cited by tests (``pytest.mark.spec``) and by fixture twins."""
    citations: dict[str, set[str]] = {}
    marker = re.compile(r"mark\.spec\(([^)]*)\)")
    for path in (ROOT / "python" / "tests").rglob("*.py"):
        for match in marker.finditer(path.read_text()):
            for rid in re.findall(r"[RW]-\d+", match[1]):
                citations.setdefault(rid, set()).add(path.name)
    for path in (ROOT / "fixtures").glob("*.json"):
        for rid in re.findall(r'"([RW]-\d+)"', path.read_text()):
            citations.setdefault(rid, set()).add(path.name)
    manifest = ROOT / "conformance" / "manifest.json"
    if manifest.exists():
        for rid in re.findall(r'"([RW]-\d+)"', json.dumps(json.loads(manifest.read_text()))):
            citations.setdefault(rid, set()).add(manifest.name)
    return citations


def test_every_requirement_is_cited_by_a_test_or_fixture() -> None:
    missing = sorted(requirement_ids() - set(cited_ids()), key=lambda r: (r[0], int(r[2:])))
    assert not missing, f"requirements no test or fixture cites: {missing}"


def test_no_test_cites_a_requirement_the_spec_lacks() -> None:
    unknown = sorted(set(cited_ids()) - requirement_ids())
    assert not unknown, f"cited but not in the spec: {unknown}"


def test_every_requirement_is_defined_exactly_once() -> None:
    counts = Counter(requirement_definitions())
    assert len(counts) > 80
    twice = sorted(rid for rid, count in counts.items() if count > 1)
    assert not twice, f"defined more than once across the normative documents: {twice}"


def test_format_document_fits_its_size_limit() -> None:
    size = len((SPEC_DIR / "format.md").read_bytes())
    assert size < FORMAT_LIMIT, f"spec/format.md is {size} bytes, the limit is {FORMAT_LIMIT}"


def test_no_normative_document_holds_rationale_or_operator_sections() -> None:
    heading = re.compile(r"^#+ (1[56]\.|.*\b(Rationale|Error recovery for operators)\b)", re.M)
    for path in NORMATIVE:
        found = heading.findall(path.read_text())
        assert not found, f"{path.name} holds {found}"
    assert re.search(r"^## 15\. Rationale", DOCUMENTS["rationale"].read_text(), re.M)
    assert re.search(r"^## 16\. Error recovery for operators", DOCUMENTS["operators"].read_text(), re.M)


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {github_anchor(title) for title in re.findall(r"^#+ (.*)$", path.read_text(), re.M)}


def test_relative_links_of_the_specification_resolve() -> None:
    for source in DOCUMENTS.values():
        for target in re.findall(r"\]\(([^)\s]+)\)", source.read_text()):
            if re.match(r"[a-z]+:", target):
                continue
            name, _, anchor = target.partition("#")
            path = (source.parent / name).resolve() if name else source
            assert path.exists(), f"{source.name}: link to {target} names no file"
            if anchor and path.suffix == ".md":
                assert anchor in anchors(path), f"{source.name}: link to {target} names no heading"


def sections(path: Path) -> set[str]:
    """The section numbers whose headings a document holds: "10.2.1", "B.4", "15"."""
    return set(re.findall(r"^#+ (?:Appendix )?((?:\d+|[AB])(?:\.\d+)*)[.: ]", path.read_text(), re.M))


def test_section_references_name_a_section_of_the_named_document() -> None:
    held = {name: sections(path) for name, path in DOCUMENTS.items()}
    names = "|".join(re.escape(name) for name in DOCUMENTS)
    reference = re.compile(rf"(?:\b({names}) )?§((?:\d+|[AB])(?:\.\d+)*)")
    for name, path in DOCUMENTS.items():
        if name == "README":  # the index names sections without holding them
            continue
        for named, number in reference.findall(path.read_text()):
            document = named or name
            assert number in held[document], f"{path.name}: {document} §{number} is not a section of {document}"
