"""The cluster the tests run on, as `tools/spark_cluster.py run` names it in the environment."""

from __future__ import annotations

import json
import os
import time
import urllib.request

MASTER_VARIABLE = "OPENBINLOG_SPARK_MASTER"  # spark://127.0.0.1:7077; the conformance testee reads it too
MASTER_UI_VARIABLE = "OPENBINLOG_SPARK_MASTER_UI"  # the master's web UI: /json/ lists workers and applications
MASTER = os.environ.get(MASTER_VARIABLE)
MASTER_UI = os.environ.get(MASTER_UI_VARIABLE)
WORKERS = 2


def master_status(ui: str) -> dict[str, object]:
    with urllib.request.urlopen(f"{ui}/json/", timeout=5) as answer:
        status: dict[str, object] = json.load(answer)
    return status


def wait_for_workers(timeout: float = 120.0) -> None:
    """`tools/spark_cluster.py run` starts the tests as it starts the cluster: wait until its workers are up.

    Without the UI's address (a cluster started some other way) there is nothing to wait on.
    """
    if MASTER_UI is None:
        return
    deadline = time.monotonic() + timeout
    while True:
        try:
            if int(str(master_status(MASTER_UI).get("aliveworkers", 0))) >= WORKERS:
                return
        except (OSError, ValueError):
            pass  # the master's UI is not up yet, or not answering yet
        assert time.monotonic() < deadline, f"no {WORKERS} workers at {MASTER_UI} after {timeout:.0f} s"
        time.sleep(0.25)
