"""The fixtures and the manifest: reproducible, complete, and saying what they claim."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from conformance_helpers import MANIFEST, REPO, expected_outcome

from openbinlog_conformance import Manifest
from openbinlog_conformance.vocabulary import ERROR_CLASSES, LEVELS, ROLES

GEN = REPO / "tools" / "gen_fixtures.py"
FIXTURES = REPO / "fixtures"
sys.path.insert(0, str(REPO / "tools"))

from fixtures_lib.mutations import apply_op  # noqa: E402 - the generator's own mutation semantics


def gen_check(*extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(GEN), "--check", *extra], capture_output=True, text=True, timeout=120, check=False
    )


def test_gen_fixtures_check_passes_on_the_committed_fixtures() -> None:
    done = gen_check()
    assert done.returncode == 0, done.stderr
    assert "up to date" in done.stdout


def test_gen_fixtures_check_names_a_changed_byte_and_a_stale_file(tmp_path: Path) -> None:
    fixtures = tmp_path / "fixtures"
    shutil.copytree(FIXTURES, fixtures)
    manifest = tmp_path / "manifest.json"
    shutil.copy(MANIFEST, manifest)
    segment = fixtures / "basic" / "00000001.dat"
    data = bytearray(segment.read_bytes())
    data[300] ^= 0x01
    segment.write_bytes(bytes(data))
    (fixtures / "hand-made.json").write_text("{}")
    done = gen_check("--fixtures", str(fixtures), "--manifest", str(manifest))
    assert done.returncode == 1
    assert "differs: fixtures/basic/00000001.dat" in done.stderr
    assert "not generated (stale): fixtures/hand-made.json" in done.stderr


def spec_requirements() -> set[str]:
    text = "".join(
        (REPO / "spec" / doc).read_text()
        for doc in ("format.md", "protocols.md", "readers.md", "legacy-v1.md", "index.md")
    )
    return set(re.findall(r"\*\*([RW]-\d+)\*\*", text))


def test_every_cited_requirement_is_defined_in_the_spec(manifest: Manifest) -> None:
    defined = spec_requirements()
    cited = {req for case in manifest.cases for req in case.requirements}
    assert len(defined) > 60
    assert cited - defined == set()


def test_every_fault_of_the_model_has_cases(manifest: Manifest) -> None:
    covered = {fault for case in manifest.cases for fault in case.faults}
    assert covered == {f"T{number}" for number in range(1, 16)}


def test_every_error_class_is_expected_by_a_reject_case(manifest: Manifest) -> None:
    expected = set()
    for case in manifest.cases:
        if case.op == "read":
            outcome = expected_outcome(manifest, case.id)
            if outcome["outcome"] == "reject":
                expected.add(outcome["error"]["class"])  # type: ignore[index]
    assert expected == set(ERROR_CLASSES)


def test_case_ids_are_unique_and_name_their_level_and_role(manifest: Manifest) -> None:
    ids = [case.id for case in manifest.cases]
    assert len(ids) == len(set(ids))
    for case in manifest.cases:
        level, role, group, name = case.id.split(".")
        assert level == case.level in LEVELS
        assert role in case.roles
        assert set(case.roles) <= set(ROLES)
        assert re.fullmatch(r"[a-z0-9_]+", group + name)


def test_every_damaged_fixture_has_one_named_defect_and_replays_from_its_base(manifest: Manifest) -> None:
    twins = {path.stem: json.loads(path.read_text()) for path in FIXTURES.glob("*.json")}
    damaged = [twin for twin in twins.values() if twin["defect"] is not None]
    assert len(damaged) > 40
    for twin in twins.values():
        if twin["derived_from"] is None:
            assert twin["mutation"] is None and twin["defect"] is None
            continue
        base_dir = FIXTURES / twin["derived_from"]
        files = {str(p.relative_to(base_dir)): p.read_bytes() for p in base_dir.rglob("*") if p.is_file()}
        for op in twin["mutation"]:
            apply_op(files, op)
        own_dir = FIXTURES / twin["id"]
        own = {str(p.relative_to(own_dir)): p.read_bytes() for p in own_dir.rglob("*") if p.is_file()}
        assert files == own, f"{twin['id']}: the mutation does not turn {twin['derived_from']} into it"


def test_negative_cases_state_their_error_position(manifest: Manifest) -> None:
    for case in manifest.cases:
        if case.op != "read":
            continue
        outcome = expected_outcome(manifest, case.id)
        if outcome["outcome"] != "reject":
            continue
        error = outcome["error"]
        assert isinstance(error, dict)
        if error["class"] not in ("invalid_ref", "io_error"):
            assert error["log"] is not None, case.id  # every report of damage names the segment


def spec_vector(name: str) -> bytes:
    """The bytes of a hex test vector of spec appendix A."""
    text = "".join(
        (REPO / "spec" / doc).read_text()
        for doc in ("format.md", "protocols.md", "readers.md", "legacy-v1.md", "index.md")
    )
    block = re.search(rf"```hex {name}\n(.*?)```", text, re.S)
    assert block is not None, name
    return bytes.fromhex("".join(line.split(":", 1)[1] for line in block[1].splitlines()))


def test_fixtures_named_after_test_vectors_hold_their_bytes() -> None:
    assert (FIXTURES / "two_records_tv9" / "00000001.dat").read_bytes() == spec_vector("TV-9")
    assert (FIXTURES / "legacy_tv13" / "00000001.dat").read_bytes() == spec_vector("TV-13")
    assert (FIXTURES / "empty_log" / "00000001.dat").read_bytes() == spec_vector("TV-5")
