"""Write the catalog out: fixture directories, their JSON twins, the manifest, the README table."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

from openbinlog_conformance.vocabulary import (
    CAPABILITIES,
    CHOICES,
    ERROR_CLASSES,
    LEVELS,
    OUTCOMES,
    ROLES,
    SPEC_VERSION,
    SUITE_VERSION,
)

from .catalog import Catalog
from .model import Case, Fixture, Json

FIXTURE_ROOT = "../fixtures"  # relative to the manifest's directory


def dump(obj: Any) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"


def file_list(fixture: Fixture, prefix: str = "") -> list[Json]:
    return [
        {"path": prefix + name, "size": str(len(data)), "sha256": hashlib.sha256(data).hexdigest()}
        for name, data in sorted(fixture.files.items())
    ]


def case_json(case: Case) -> Json:
    fixture = case.fixture
    requirements = sorted(set(case.requirements) | set(fixture.requirements if fixture else []), key=_req_key)
    return {
        "id": case.id,
        "level": case.level,
        "roles": case.roles,
        "requires": case.requires,
        "requirements": requirements,
        "faults": sorted(set(case.faults), key=_fault_key),
        "since": case.since,
        "until": case.until,
        "description": case.description,
        "defect": case.defect,
        "fixture": None if fixture is None else fixture.id,
        "files": [] if fixture is None else file_list(fixture, f"{fixture.id}/"),
        "derived_from": None if fixture is None else fixture.derived_from,
        "mutation": None if fixture is None or fixture.mutation is None else fixture.mutation.ops,
        "operation": case.operation,
        "expected": case.expected,
    }


def _req_key(requirement: str) -> tuple[str, int]:
    kind, _, number = requirement.partition("-")
    return kind, int(number)


def _fault_key(fault: str) -> int:
    return int(fault[1:])


def manifest(cat: Catalog) -> Json:
    cases = sorted(cat.cases, key=lambda case: case.id)
    levels = Counter(case.level for case in cases)
    return {
        "suite": "binlog-conformance",
        "suite_version": SUITE_VERSION,
        "spec_version": SPEC_VERSION,
        "generated_by": "tools/gen_fixtures.py",
        "fixture_root": FIXTURE_ROOT,
        "vocabulary": {
            "levels": list(LEVELS),
            "roles": list(ROLES),
            "capabilities": list(CAPABILITIES),
            "outcomes": list(OUTCOMES),
            "error_classes": list(ERROR_CLASSES),
            "choices": {name: list(values) for name, values in CHOICES.items()},
        },
        "counts": {level: levels.get(level, 0) for level in LEVELS},
        "cases": [case_json(case) for case in cases],
    }


def twin(fixture: Fixture, cases: list[Case]) -> Json:
    requirements = set(fixture.requirements)
    for case in cases:
        requirements |= set(case.requirements)
    return {
        "id": fixture.id,
        "description": fixture.description,
        "faults": sorted({*fixture.faults, *(f for case in cases for f in case.faults)}, key=_fault_key),
        "requirements": sorted(requirements, key=_req_key),
        "defect": fixture.defect,
        "files": file_list(fixture),
        "workload": fixture.workload,
        "derived_from": fixture.derived_from,
        "mutation": None if fixture.mutation is None else fixture.mutation.ops,
        "cases": [_twin_case(case) for case in cases],
    }


def _twin_case(case: Case) -> Json:
    """A case as the fixture's twin lists it; a retired case says from which spec version it no longer holds."""
    entry: Json = {"id": case.id}
    if case.until is not None:
        entry["until"] = case.until
    return {**entry, "operation": case.operation, "expected": case.expected}


def summary(expected: Json) -> str:
    """One line saying what a case expects, for the README table."""
    if "write" in expected or "recover" in expected:
        action = "write" if "write" in expected else "recover"
        result = expected[action]
        if not result["ok"]:
            return f"{action} refused: `{result['error']['class']}`" + (
                "; segments unchanged" if expected.get("unchanged") else ""
            )
        then = expected["then"]
        if then is None:
            return f"{action} ok, nothing changed"
        return f"{action} ok, then {len(then['records'])} records, {len(expected['segments'])} segments"
    outcome = expected["outcome"]
    if outcome == "implementation_defined":
        choices = ", ".join(f"{name}: {summary(value)}" for name, value in expected["allowed"].items())
        return f"implementation-defined `{expected['choice']}` ({choices})"
    count = "" if expected["records"] is None else f" {len(expected['records'])} records"
    if "damage" in expected:
        return f"tolerant: {_read_summary(outcome, expected, count)}, {len(expected['damage'])} damaged regions"
    return _read_summary(outcome, expected, count)


def _read_summary(outcome: str, expected: Json, count: str) -> str:
    if outcome == "recovered":
        torn = expected["torn"]
        return f"recovered{count}, torn at {torn['log']}:{torn['offset']}"
    if outcome == "reject":
        err = expected["error"]
        where = ":".join(str(err[key]) for key in ("log", "offset") if err[key] is not None)
        return f"reject `{err['class']}`" + (f" at {where}" if where else "") + (f" after{count}" if count else "")
    return f"accept{count}"


def readme(cat: Catalog) -> str:
    lines = [
        "# Fixtures",
        "",
        "Generated by `tools/gen_fixtures.py`; never edit by hand (CI runs `tools/gen_fixtures.py --check`).",
        "Each `NAME/` directory is a log directory; `NAME.json` is its twin: how it was made (the workload, or",
        "`derived_from` and the `mutation` applied), the spec requirements and faults it exercises, and the exact",
        "expected outcome of every conformance case that uses it. `conformance/manifest.json` lists the cases.",
        "",
        f"{len(cat.fixtures)} fixtures, {sum(1 for c in cat.cases if c.fixture)} fixture cases,"
        f" {sum(1 for c in cat.cases if not c.fixture)} write cases.",
        "",
        "| case | fixture | faults | defect or state | expected |",
        "|---|---|---|---|---|",
    ]
    for case in sorted(cat.cases, key=lambda case: case.id):
        fixture = case.fixture
        name = "(write)" if fixture is None else f"[`{fixture.id}`]({fixture.id}.json)"
        state = case.defect or case.description
        faults = " ".join(sorted(set(case.faults), key=_fault_key))
        expected = summary(case.expected) if case.until is None else f"(until {case.until}) {summary(case.expected)}"
        lines.append(f"| `{case.id}` | {name} | {faults} | {_cell(state)} | {_cell(expected)} |")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def write_all(cat: Catalog, fixtures_dir: Path, manifest_path: Path) -> None:
    """Write every output; ``fixtures_dir`` must be empty or absent."""
    fixtures_dir.mkdir(parents=True, exist_ok=True)
    by_fixture: dict[str, list[Case]] = {}
    for case in sorted(cat.cases, key=lambda case: case.id):
        if case.fixture is not None:
            by_fixture.setdefault(case.fixture.id, []).append(case)
    for fixture in cat.fixtures.values():
        directory = fixtures_dir / fixture.id
        directory.mkdir()
        for name, data in fixture.files.items():
            path = directory / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        (fixtures_dir / f"{fixture.id}.json").write_text(dump(twin(fixture, by_fixture.get(fixture.id, []))))
    (fixtures_dir / "README.md").write_text(readme(cat))
    manifest_path.parent.mkdir(parents=True, exist_ok=True)
    manifest_path.write_text(dump(manifest(cat)))
