"""The sparse index cases of suite 2.1.0: what they claim, planned splits over both ways in, and R-33's promise
that a testee which ignores index files passes them all."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from conformance_helpers import REFERENCE, REPO

from openbinlog import build_indexes
from openbinlog_conformance import Filters, Hello, Implementation, Manifest, RunResult, load, run, serve
from openbinlog_conformance.reference_testee import ReferenceTestee
from openbinlog_conformance.vocabulary import CAPABILITIES

FIXTURES = REPO / "fixtures"
INDEX = Filters(case_globs=("*.reader.index.*",))


def _index_cases(manifest: Manifest) -> set[str]:
    return {case.id for case in INDEX.select(manifest.cases)}


def test_every_index_case_is_of_spec_2_1_and_cites_r47(manifest: Manifest) -> None:
    cases = INDEX.select(manifest.cases)
    assert len(cases) > 100
    for case in cases:
        assert (case.since, case.until) == ("2.1", None), case.id
        assert {"R-33", "R-47"} <= set(case.requirements), case.id
    ops = {tuple(sorted(set(case.operation) - {"op"})) for case in cases}
    assert ops == {(), ("from_index",), ("since_us",), ("log", "parts"), ("log", "start", "stop")}
    # Seeks and compressed segments are what the spec permits (may); reads from the start and planned splits
    # hold every reader, and every reader that plans splits (must).
    permitted = {case.id for case in cases if {"seek", "compressed"} & set(case.requires)}
    assert {case.level for case in cases if case.id in permitted} == {"may"}
    assert {case.level for case in cases if case.id not in permitted} == {"must"}


def test_the_reference_passes_every_index_case(reference_run: RunResult, manifest: Manifest) -> None:
    ran = {r.id: r.status for r in reference_run.implementations[0].results if r.id in _index_cases(manifest)}
    assert set(ran) == _index_cases(manifest)
    assert set(ran.values()) == {"passed"}


def test_a_testee_of_spec_2_0_is_given_no_index_case() -> None:
    every = load(REPO / "conformance" / "manifest.json")
    result = run(
        [Implementation(REFERENCE, "python-2.0")],
        Filters(case_globs=INDEX.case_globs, spec_version="2.0"),
        manifest=every,
    )
    results = result.implementations[0].results
    assert results and {r.status for r in results} == {"skipped"}
    assert {r.detail for r in results} == {"not part of spec version 2.0"}


IGNORES_INDEXES = """
import os, shutil, sys, tempfile
from openbinlog_conformance import serve
from openbinlog_conformance.reference_testee import ReferenceTestee

class IgnoresIndexes(ReferenceTestee):
    # Every read on a copy of the directory without its .idx files: a reader that never looks at them.
    def _copy(self, path):
        scratch = tempfile.mkdtemp()
        target = os.path.join(scratch, "log")
        if os.path.isdir(path):
            shutil.copytree(path, target, ignore=lambda _, names: [n for n in names if n.endswith(".idx")])
        return target

    def read(self, path, after):
        return super().read(self._copy(path), after)

    def read_from(self, path, start):
        return super().read_from(self._copy(path), start)

    def read_plan(self, path, log, parts):
        return super().read_plan(self._copy(path), log, parts)

    def read_split(self, path, log, start, stop):
        return super().read_split(self._copy(path), log, start, stop)

sys.exit(serve.main(IgnoresIndexes(), sys.argv[1:]))
"""


def test_a_testee_that_ignores_index_files_passes_every_index_case(manifest: Manifest, tmp_path: Path) -> None:
    testee = tmp_path / "ignores_indexes.py"
    testee.write_text(IGNORES_INDEXES)
    result = run([Implementation([sys.executable, str(testee)], "ignores-indexes")], INDEX, manifest=manifest)
    results = result.implementations[0].results
    assert len(results) == len(_index_cases(manifest))
    assert [f"{r.id}: {r.detail}" for r in results if r.status != "passed"] == []


def test_planned_splits_run_over_the_file_level_cli(manifest: Manifest) -> None:
    hello = Hello("python-cli", "", "2.1", ["reader"], ["split_plan"], {}, declared=False)
    globs = (
        "must.reader.index.good_plan_1",
        "must.reader.index.segment_removed_plan_1",
        "must.reader.index.lie_index_plan_1",
    )
    result = run([Implementation(REFERENCE, "python-cli", "cli", hello)], Filters(case_globs=globs), manifest=manifest)
    results = result.implementations[0].results
    assert len(results) == 3
    assert [(r.id, r.detail) for r in results if r.status != "passed"] == []


class _NoPlans:
    """A handler that has no ``read_plan``: it does not plan splits."""


def test_a_plan_request_answers_the_records_of_every_split_and_where_they_start() -> None:
    answer = serve.answer(ReferenceTestee(), {"op": "read", "path": str(FIXTURES / "index_good"), "log": 1, "parts": 4})
    assert answer["ok"] is True and answer["outcome"] == "accept"
    assert answer["cuts"][0] == "256" and len(answer["cuts"]) == 4
    twin = json.loads((FIXTURES / "index_good.json").read_text())
    (case,) = [case for case in twin["cases"] if case["id"] == "must.reader.index.good_plan_1"]
    assert answer["records"] == case["expected"]["records"]
    # A handler without planned splits, or a plan of no parts, is answered unsupported_operation.
    refused = serve.answer(_NoPlans(), {"op": "read", "path": "x", "log": 1, "parts": 2})  # type: ignore[arg-type]
    assert refused["error"]["class"] == "unsupported_operation"
    nothing = serve.answer(ReferenceTestee(), {"op": "read", "path": "x", "log": 1, "parts": 0})
    assert nothing["error"]["class"] == "unsupported_operation"
    assert "split_plan" in CAPABILITIES and "split_plan" in ReferenceTestee().hello()["capabilities"]


@pytest.mark.parametrize(
    ("base", "good", "interval"),
    [("index_base", "index_good", 128), ("index_log_of_logs", "index_log_of_logs_good", 128)],
)
def test_the_good_indexes_are_those_the_reference_builder_writes(
    tmp_path: Path, base: str, good: str, interval: int
) -> None:
    copy = tmp_path / "log"
    shutil.copytree(FIXTURES / base, copy)
    build_indexes(copy, interval=interval)
    built = {path.name: path.read_bytes() for path in copy.glob("*.idx")}
    assert built and built == {path.name: path.read_bytes() for path in (FIXTURES / good).glob("*.idx")}
