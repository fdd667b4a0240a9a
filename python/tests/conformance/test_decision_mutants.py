"""The suite tells every reading of the spec apart: each decision mutant (conformance/mutants/) fails it.

A mutant is the reference testee with one judgement call of the spec taken
the other way. It is caught when it fails a case with a wrong answer and
fails every case its decision names as pinning it; the score must be 100%.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner
from conformance_helpers import REPO

from openbinlog_conformance import Manifest, conformance_group
from openbinlog_conformance.mutation import Mutant, MutantResult, list_mutants, run_mutants, score

TESTEE = REPO / "conformance" / "mutants" / "testee.py"


@pytest.fixture(scope="module")
def mutants() -> list[Mutant]:
    return list_mutants(TESTEE)


@pytest.fixture(scope="module")
def results(mutants: list[Mutant], manifest: Manifest, full_run: bool) -> list[MutantResult]:
    """Each mutant on the cases that pin it; with ``--full``, on every case (a mutant that crashes anywhere)."""
    return run_mutants(TESTEE, mutants, manifest=manifest, pinned_only=not full_run)


def test_every_decision_names_its_section_its_two_readings_and_the_cases_that_pin_it(
    mutants: list[Mutant], manifest: Manifest
) -> None:
    ids = {case.id for case in manifest.cases if case.until is None}
    assert len({mutant.name for mutant in mutants}) == len(mutants)
    for mutant in mutants:
        assert mutant.section and mutant.decision and mutant.other and mutant.decision != mutant.other, mutant.name
        assert mutant.pinned_by, f"{mutant.name}: no case pins it"
        assert set(mutant.pinned_by) <= ids, f"{mutant.name}: pinned by cases the manifest lacks"


def test_every_decision_mutant_fails_the_cases_that_pin_it(results: list[MutantResult]) -> None:
    survivors = {result.mutant.name: result.unpinned for result in results if not result.caught_by}
    assert not survivors, f"mutants the suite does not catch: {survivors}"
    unpinned = {result.mutant.name: result.unpinned for result in results if result.unpinned}
    assert not unpinned, f"cases said to pin a decision that pass its mutant: {unpinned}"
    broken = {result.mutant.name: result.broken[:3] for result in results if result.broken}
    assert not broken, f"mutants that crash or break the protocol instead of answering: {broken}"
    assert score(results).endswith(f"{len(results)}/{len(results)} (100%)")


def test_a_run_on_pinning_cases_only_runs_each_mutant_on_the_cases_that_pin_it(
    mutants: list[Mutant], manifest: Manifest
) -> None:
    # The mutant caught by the most cases beyond those that pin it: a run on them all would see more. The first
    # mutants decide rules of spec 2.0: the cases of 2.0 are "them all" here (the sparse index's add only time).
    of_2_0 = replace(manifest, cases=tuple(case for case in manifest.cases if case.since == "2.0"))
    everywhere = run_mutants(TESTEE, mutants[:8], manifest=of_2_0)
    widest = max(everywhere, key=lambda result: len(set(result.caught_by) - set(result.mutant.pinned_by)))
    assert set(widest.caught_by) - set(widest.mutant.pinned_by)
    (pinned,) = run_mutants(TESTEE, [widest.mutant], manifest=manifest, pinned_only=True)
    assert sorted(pinned.caught_by) == sorted(widest.mutant.pinned_by)


def test_a_mutant_that_changes_nothing_survives_and_fails_the_command(tmp_path: Path) -> None:
    # The reference itself as a "mutant": nothing fails, so it is not caught, and the command exits 1.
    testee = tmp_path / "testee.py"
    testee.write_text(
        "import json, sys\n"
        "from openbinlog_conformance import serve\n"
        "from openbinlog_conformance.reference_testee import ReferenceTestee\n"
        "if sys.argv[1:] == ['--list']:\n"
        "    print(json.dumps([{'name': 'identity', 'section': '0', 'decision': 'a', 'other': 'b',"
        " 'pinned_by': ['must.reader.valid.one_record']}]))\n"
        "else:\n"
        "    sys.exit(serve.main(ReferenceTestee(), sys.argv[2:]))\n"
    )
    done = CliRunner().invoke(conformance_group, ["mutants", "--testee", str(testee)])
    assert done.exit_code == 1, done.output
    assert "SURVIVED identity" in done.output
    assert "decision mutants caught: 0/1 (0%)" in done.output


def test_the_readme_lists_every_decision() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "tools" / "gen_decisions.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
