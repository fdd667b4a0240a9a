"""The Spark data source's conformance testee (conformance/implementations/spark/testee.py) run on the cluster.

The testee takes its master from OPENBINLOG_SPARK_MASTER, so the registered command runs unchanged, as
`binlog conformance run --impl spark` would run it. It starts with the session (conftest.conformance_run) and
runs beside the reads: its application takes one core of the cluster's four, the tests' session two.
"""

from __future__ import annotations

from pathlib import Path

from openbinlog_conformance.manifest import Filters
from openbinlog_conformance.registry import default_registry, load_registry
from openbinlog_conformance.runner import Implementation, RunResult, load_xfail, run

ROOT = Path(__file__).resolve().parents[3]
MANIFEST = ROOT / "conformance" / "manifest.json"
APPLICATION = "binlog-conformance"  # the testee's application name
# One executor for the testee's application (its reads are one small task each), as spark-submit would pass it.
SUBMIT_ARGS = "--conf spark.cores.max=1 --conf spark.executor.memory=512m pyspark-shell"
# Broken chains, record damage in strict and tolerant reads, compressed and legacy segments, several segments.
CASES = (
    "must.reader.chain.*",
    "must.reader.record.*bit_flip*",
    "must.reader.tolerant.*bit_flip*",
    "may.reader.compressed.gzip_sealed_segment",
    "may.reader.compressed.zstd_sealed_segment",
    "must.reader.legacy.cutover_chain",
    "must.reader.valid.four_segments",
)


def run_on_cluster() -> RunResult:
    """The subset of the manifest's cases through the registered Spark testee (its master from the environment)."""
    command = load_registry(default_registry(MANIFEST))["spark"].command
    xfail = {key: reason for key, reason in load_xfail(ROOT / "conformance" / "xfail.txt").items() if key[0] == "spark"}
    return run(
        [Implementation(["env", f"PYSPARK_SUBMIT_ARGS={SUBMIT_ARGS}", *command], "spark")],
        Filters(case_globs=CASES),
        manifest=MANIFEST,
        timeout=30.0,  # the machine is shared: 10 s, the suite's default, is for a local testee on a quiet one
        hello_timeout=120.0,
        xfail=xfail,
    )
