"""Session fixtures of the conformance suite's self-tests: the manifest and the reference's run."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conformance_helpers import MANIFEST, REFERENCE, XFAIL

from openbinlog_conformance import Implementation, Manifest, RunResult, load, load_xfail, run
from openbinlog_conformance.manifest import in_spec_version
from openbinlog_conformance.vocabulary import SPEC_VERSION


@pytest.fixture(scope="session")
def manifest() -> Manifest:
    """The cases of the spec version the testees declare: retired cases (an ``until`` at or below it) left out."""
    loaded = load(MANIFEST)
    return replace(loaded, cases=tuple(case for case in loaded.cases if in_spec_version(case, SPEC_VERSION)))


@pytest.fixture(scope="session")
def reference_run(manifest: Manifest) -> RunResult:
    """The reference implementation against every case, with the registered expected failures."""
    return run([Implementation(REFERENCE, "python")], manifest=manifest, xfail=load_xfail(XFAIL))


@pytest.fixture(scope="session")
def reference_read_failures(reference_run: RunResult) -> set[str]:
    """Read cases the reference itself fails (its known bugs): every broken testee built on it inherits them."""
    return {r.id for r in reference_run.implementations[0].results if r.op == "read" and r.status != "passed"}
