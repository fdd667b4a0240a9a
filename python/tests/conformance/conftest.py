"""Session fixtures of the conformance suite's self-tests: the manifest and the reference's run."""

from __future__ import annotations

import pytest
from conformance_helpers import MANIFEST, REFERENCE, XFAIL

from openbinlog_conformance import Implementation, Manifest, RunResult, load, load_xfail, run


@pytest.fixture(scope="session")
def manifest() -> Manifest:
    return load(MANIFEST)


@pytest.fixture(scope="session")
def reference_run(manifest: Manifest) -> RunResult:
    """The reference implementation against every case, with the registered expected failures."""
    return run([Implementation(REFERENCE, "python")], manifest=manifest, xfail=load_xfail(XFAIL))


@pytest.fixture(scope="session")
def reference_read_failures(reference_run: RunResult) -> set[str]:
    """Read cases the reference itself fails (its known bugs): every broken testee built on it inherits them."""
    return {r.id for r in reference_run.implementations[0].results if r.op == "read" and r.status != "passed"}
