"""Decision mutants: the reference testee with one reading of the spec switched, and the score of the suite.

Each mutant (conformance/mutants/) takes the other plausible reading of one
judgement call of the spec. The suite tells the readings apart when every
mutant fails at least one case by a wrong answer (a crash or a broken
protocol does not count: it would catch a broken mutant, not a reading), and
every case a mutant names as pinning its decision fails it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from .manifest import Filters, Manifest
from .runner import Implementation, run

MUTANTS_TESTEE = Path("mutants") / "testee.py"


class MutantsError(ValueError):
    """The mutants' testee could not list its mutants."""


@dataclass(frozen=True)
class Mutant:
    name: str
    section: str  # where the spec decides it
    decision: str  # the reading the spec takes
    other: str  # the reading the mutant takes
    pinned_by: tuple[str, ...]  # the cases the decision list names


@dataclass
class MutantResult:
    mutant: Mutant
    caught_by: list[str]  # cases failed with a wrong answer
    broken: list[str]  # cases failed by a crash, a timeout or a broken protocol
    unpinned: list[str]  # cases of pinned_by that passed

    @property
    def caught(self) -> bool:
        return bool(self.caught_by) and not self.broken and not self.unpinned


def default_testee(manifest: Manifest) -> Path:
    return manifest.path.parent / MUTANTS_TESTEE


def list_mutants(testee: Path) -> list[Mutant]:
    """The mutants ``testee --list`` declares."""
    done = subprocess.run([sys.executable, str(testee), "--list"], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise MutantsError(f"{testee} --list failed: {done.stderr.strip()[-500:]}")
    try:
        return [
            Mutant(item["name"], item["section"], item["decision"], item["other"], tuple(item["pinned_by"]))
            for item in json.loads(done.stdout)
        ]
    except (ValueError, KeyError, TypeError) as exc:
        raise MutantsError(f"{testee} --list: malformed answer: {exc}") from exc


def run_mutants(
    testee: Path,
    mutants: list[Mutant],
    *,
    manifest: Manifest,
    timeout: float = 10.0,
    jobs: int | None = None,
    progress: Callable[[MutantResult], None] | None = None,
    pinned_only: bool = False,
) -> list[MutantResult]:
    """Run every case against each mutant, ``jobs`` mutants at a time (default: one per processor).

    ``pinned_only``: each mutant on the cases that pin it alone, which decide whether it is caught and pinned;
    a mutant that crashes on another case is then not seen.
    """

    def one(mutant: Mutant) -> MutantResult:
        impl = Implementation([sys.executable, str(testee), mutant.name], mutant.name)
        cases = Filters(case_globs=tuple(mutant.pinned_by)) if pinned_only else Filters()
        outcome = run([impl], cases, manifest=manifest, timeout=timeout).implementations[0].results
        failed = {result.id: result.kind for result in outcome if result.status == "failed"}
        return MutantResult(
            mutant,
            caught_by=sorted(case for case, kind in failed.items() if kind == "mismatch"),
            broken=sorted(case for case, kind in failed.items() if kind != "mismatch"),
            unpinned=[case for case in mutant.pinned_by if failed.get(case) != "mismatch"],
        )

    results = []
    with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as pool:
        for result in pool.map(one, mutants):  # in the mutants' order, whatever finishes first
            results.append(result)
            if progress is not None:
                progress(result)
    return results


def score(results: list[MutantResult]) -> str:
    caught = sum(result.caught for result in results)
    percent = 100.0 * caught / len(results) if results else 0.0
    return f"decision mutants caught: {caught}/{len(results)} ({percent:.0f}%)"
