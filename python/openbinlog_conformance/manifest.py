"""Load ``conformance/manifest.json`` and select cases from it."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .vocabulary import LEVELS, OUTCOMES, SUITE_VERSION

Json = dict[str, Any]


class ManifestError(ValueError):
    pass


@dataclass(frozen=True)
class Case:
    id: str
    level: str
    roles: tuple[str, ...]
    requires: tuple[str, ...]
    requirements: tuple[str, ...]
    faults: tuple[str, ...]
    since: str
    until: str | None
    description: str
    fixture_dir: Path | None
    operation: Json
    expected: Json
    raw: Json = field(repr=False)

    @property
    def op(self) -> str:
        return str(self.operation["op"])


@dataclass(frozen=True)
class Manifest:
    path: Path
    suite_version: str
    spec_version: str
    cases: tuple[Case, ...]


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def load(path: str | os.PathLike[str], *, verify_files: bool = True) -> Manifest:
    """Read and check a manifest; with ``verify_files`` every fixture file must match its sha256."""
    manifest_path = Path(path).resolve()
    try:
        data = json.loads(manifest_path.read_text())
        return _parse(manifest_path, data, verify_files)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        if isinstance(exc, ManifestError):
            raise
        raise ManifestError(f"{manifest_path}: not a valid manifest: {exc!r}") from exc


def _parse(manifest_path: Path, data: Json, verify_files: bool) -> Manifest:
    if version_tuple(data["suite_version"])[0] != version_tuple(SUITE_VERSION)[0]:
        raise ManifestError(f"manifest suite version {data['suite_version']} is not major {SUITE_VERSION[0]}")
    root = (manifest_path.parent / data["fixture_root"]).resolve()
    cases = []
    for raw in data["cases"]:
        if raw["level"] not in LEVELS or raw["expected"].get("outcome", "accept") not in OUTCOMES:
            raise ManifestError(f"case {raw['id']}: unknown level or outcome")
        fixture_dir = None if raw["fixture"] is None else root / raw["fixture"]
        if verify_files:
            for item in raw["files"]:
                file = root / item["path"]
                if not file.is_file() or hashlib.sha256(file.read_bytes()).hexdigest() != item["sha256"]:
                    raise ManifestError(f"case {raw['id']}: fixture file {file} is missing or differs from its sha256")
        cases.append(
            Case(
                id=raw["id"],
                level=raw["level"],
                roles=tuple(raw["roles"]),
                requires=tuple(raw["requires"]),
                requirements=tuple(raw["requirements"]),
                faults=tuple(raw["faults"]),
                since=raw["since"],
                until=raw["until"],
                description=raw["description"],
                fixture_dir=fixture_dir,
                operation=raw["operation"],
                expected=raw["expected"],
                raw=raw,
            )
        )
    return Manifest(manifest_path, data["suite_version"], data["spec_version"], tuple(cases))


@dataclass(frozen=True)
class Filters:
    """Which cases to run: a case must pass every filter that is set."""

    levels: frozenset[str] = frozenset()
    roles: frozenset[str] = frozenset()
    case_globs: tuple[str, ...] = ()
    spec_version: str | None = None

    def select(self, cases: tuple[Case, ...]) -> list[Case]:
        return [case for case in cases if self.matches(case)]

    def matches(self, case: Case) -> bool:
        if self.levels and case.level not in self.levels:
            return False
        if self.roles and not (set(case.roles) & self.roles):
            return False
        return not self.case_globs or any(fnmatch.fnmatchcase(case.id, glob) for glob in self.case_globs)


def in_spec_version(case: Case, version: str) -> bool:
    """``since`` <= version < ``until`` (spec versions, MAJOR.MINOR)."""
    wanted = version_tuple(version)[:2]
    if version_tuple(case.since)[:2] > wanted:
        return False
    return case.until is None or wanted < version_tuple(case.until)[:2]


def default_manifest() -> Path:
    """``conformance/manifest.json`` found from the working directory, of the checkout this package lives in,
    or of the kit an installed package carries (``openbinlog_conformance/kit/``)."""
    here = Path(__file__).resolve().parent
    candidates = [Path.cwd(), *Path.cwd().parents, here.parents[1], here / "kit"]
    for directory in candidates:
        path = directory / "conformance" / "manifest.json"
        if path.is_file():
            return path
    raise ManifestError("conformance/manifest.json not found: run from the repository or pass --manifest")
