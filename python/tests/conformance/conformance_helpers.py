"""Helpers of the conformance suite's self-tests: paths, broken testees, expectations."""

from __future__ import annotations

import sys
from pathlib import Path

from openbinlog_conformance import Implementation, Manifest, RunResult
from openbinlog_conformance.compare import resolve

REPO = Path(__file__).resolve().parents[3]
BROKEN = Path(__file__).resolve().parent / "broken"
MANIFEST = REPO / "conformance" / "manifest.json"
XFAIL = REPO / "conformance" / "xfail.txt"
REFERENCE = [sys.executable, str(REPO / "conformance" / "implementations" / "python" / "testee.py")]
FULL_READER_CHOICES = {"finished_segment_end": "tail_walk"}


def broken(name: str) -> Implementation:
    """A deliberately broken testee from broken/ (reader role, legacy_v1 and refs)."""
    return Implementation([sys.executable, str(BROKEN / f"{name}.py")], name)


def expected_outcome(manifest: Manifest, case_id: str) -> dict[str, object]:
    case = next(case for case in manifest.cases if case.id == case_id)
    resolved, _ = resolve(case.expected, FULL_READER_CHOICES)
    assert resolved is not None
    return resolved


def failed(result: RunResult) -> dict[str, str]:
    """Case id -> failure kind, for the cases that failed."""
    return {r.id: r.kind for r in result.implementations[0].results if r.status == "failed"}


BROKEN_CAPABILITIES = frozenset({"legacy_v1", "refs"})


def read_cases(manifest: Manifest) -> list[str]:
    """The read cases a broken testee runs: those needing no capability beyond the ones it declares."""
    return [case.id for case in manifest.cases if case.op == "read" and set(case.requires) <= BROKEN_CAPABILITIES]
