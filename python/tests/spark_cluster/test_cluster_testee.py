"""The Spark data source's conformance testee on the cluster: a subset of the manifest's reader cases pass."""

from __future__ import annotations

import time
from concurrent.futures import Future
from typing import Any

from cluster_conformance import APPLICATION, CASES
from cluster_env import MASTER_UI, master_status

from openbinlog_conformance.runner import RunResult


def _applications(ui: str) -> list[Any]:
    status = master_status(ui)
    return [*status.get("activeapps", []), *status.get("completedapps", [])]  # type: ignore[misc]


def test_conformance_cases_pass_through_the_spark_testee_on_the_cluster(
    conformance_run: Future[RunResult] | None,
) -> None:
    assert conformance_run is not None
    result = conformance_run.result(timeout=600)
    (testee,) = result.implementations
    assert testee.error is None, testee.error
    assert testee.hello is not None and testee.hello.name == "openbinlog-spark"
    assert len(testee.results) >= 16, CASES
    assert {case.status for case in testee.results} <= {"passed", "xfailed"}, [
        (case.id, case.status, case.kind, case.detail[:300])
        for case in testee.results
        if case.status not in ("passed", "xfailed")
    ]
    assert result.ok
    # It ran on this cluster: the master lists the testee's application.
    assert MASTER_UI
    deadline = time.monotonic() + 30
    while not [app for app in _applications(MASTER_UI) if app["name"] == APPLICATION]:
        assert time.monotonic() < deadline, f"no application {APPLICATION} on the master at {MASTER_UI}"
        time.sleep(0.5)
