"""The Spark tests on a standalone cluster: `make spark-cluster` starts one (tools/spark_cluster.py) and sets
OPENBINLOG_SPARK_MASTER to its URL; without it every test here is skipped, so a plain `pytest` still runs.

One process holds one SparkContext at a time: the reads are first made in local mode (``local_outcomes``),
that session is stopped, and the same reads are then made on the cluster, whose results must be the same.
Run this directory on its own (a session of the other Spark tests would hold a local context).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
from cluster_env import MASTER, MASTER_VARIABLE, WORKERS, wait_for_workers

SKIP_REASON = (
    f"{MASTER_VARIABLE} is not set: `make spark-cluster` runs these tests on a standalone cluster "
    "(tools/spark_cluster.py run -- pytest python/tests/spark_cluster)"
)
CONFORMANCE_TEST = "test_conformance_cases_pass_through_the_spark_testee_on_the_cluster"
# The JVM source (spark_udfs/jvm), built by `make jvm`: spark.jars ships it to the executors.
JVM_JAR = Path(__file__).resolve().parents[3] / "build" / "jvm" / "openbinlog.jar"

# Without pyspark or a Java runtime these tests cannot run at all: collect none of them.
if importlib.util.find_spec("pyspark") is None or shutil.which("java") is None:
    collect_ignore_glob = ["test_*.py"]
else:
    # The helpers of the local Spark tests (binlog_frames, test_spark_semantics, test_spark_fixtures).
    _LOCAL_TESTS = str(Path(__file__).resolve().parent.parent / "spark")
    if _LOCAL_TESTS not in sys.path:
        sys.path.insert(0, _LOCAL_TESTS)

    from cluster_conformance import run_on_cluster
    from cluster_reads import Outcome, Read, outcome, reads
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    import openbinlog_spark
    from openbinlog_conformance.runner import RunResult


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without a cluster, skip this directory's tests before any of their fixtures starts a Spark."""
    if MASTER:
        return
    here = Path(__file__).resolve().parent
    for item in items:
        if here in item.path.resolve().parents:
            item.add_marker(pytest.mark.skip(reason=SKIP_REASON))


@pytest.fixture(scope="session", autouse=True)
def conformance_run(request: pytest.FixtureRequest) -> Iterator[Future[RunResult] | None]:
    """The conformance testee's run, started with the session: it runs on the cluster beside the other tests."""
    if not MASTER or not any(item.name == CONFORMANCE_TEST for item in request.session.items):
        yield None
        return

    def on_cluster() -> RunResult:
        wait_for_workers()
        return run_on_cluster()

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="conformance") as pool:
        yield pool.submit(on_cluster)  # leaving the block waits for it, whatever the tests did


def new_session(master: str) -> SparkSession:
    """A session configured as the local Spark tests' (python/tests/spark/conftest.py), on ``master``."""
    # Python workers (and executors) must run this interpreter, the one with openbinlog, and stay on loopback.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    session = (
        SparkSession.builder.master(master)
        .appName("openbinlog-spark-cluster-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.python.filterPushdown.enabled", "true")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.python.worker.reuse", "true")
        .config("spark.jars", str(JVM_JAR))
        # On the cluster: one executor of one core on each worker, leaving cores for the conformance testee.
        .config("spark.cores.max", str(WORKERS))
        .config("spark.executor.cores", "1")
        .config("spark.executor.memory", "512m")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    openbinlog_spark.register(session)
    return session


def executors(session: SparkSession) -> int:
    """Executors registered with the driver (the status tracker lists the driver too)."""
    infos = session.sparkContext._jsc.sc().statusTracker().getExecutorInfos()  # type: ignore[union-attr]
    return len(infos) - 1


@pytest.fixture(scope="session")
def cluster_reads(tmp_path_factory: pytest.TempPathFactory) -> list[Read]:
    """The logs read in both modes, built in one directory that the driver and every worker can read."""
    return reads(tmp_path_factory.mktemp("cluster-logs"))


@pytest.fixture(scope="session")
def local_outcomes(cluster_reads: list[Read]) -> dict[str, Outcome]:
    """Each read in local mode, in this process, before the cluster session exists (while the cluster starts)."""
    if SparkContext._active_spark_context is not None:
        pytest.skip("a Spark context is active in this process already: run python/tests/spark_cluster on its own")
    session = new_session("local[2]")
    try:
        return {read.name: outcome(session, read) for read in cluster_reads}
    finally:
        session.stop()


@pytest.fixture(scope="session")
def cluster_spark(local_outcomes: dict[str, Outcome]) -> Iterator[SparkSession]:
    """A session on the cluster, once an executor has registered on each worker (so tasks spread over both)."""
    assert MASTER
    wait_for_workers()
    session = new_session(MASTER)
    try:
        assert session.sparkContext.master == MASTER
        deadline = time.monotonic() + 120
        while executors(session) < WORKERS:
            assert time.monotonic() < deadline, f"{executors(session)} of {WORKERS} executors after 120 s"
            time.sleep(0.2)
        yield session
    finally:
        session.stop()
