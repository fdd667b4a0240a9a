"""R2 and R3: the Spark data source on one core and on two, against the single-process Reader.

Each master runs in its own worker process (one Spark session each, about
12 s to start), which scans every log into Spark's ``noop`` sink, as
``openbinlog_spark.bench.measure`` does: every record of every segment is
decoded, verified and handed to the JVM. One session per master serves all
logs and repeats (``measure`` starts a session per call, which the time
budget of the default mode cannot pay for every repeat of every log).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import time
from typing import Any

from .logs import BuiltLog
from .measure import Row, compared, not_run
from .processes import emit, run_worker

SPARK_TIMEOUT = 1800.0
MASTERS = ("local[1]", "local[2]")


def spark_unavailable() -> str | None:
    """Why Spark cannot be measured here, or None."""
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed"
    if shutil.which("java") is None:
        return "no Java runtime on PATH"
    if importlib.util.find_spec("openbinlog_spark") is None:
        return "the openbinlog_spark package is not importable"
    return None


def spark_worker(arguments: dict[str, Any]) -> None:
    """Worker side: one session on ``master``; records/s of a full scan of each log, ``repeats`` times."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    # Imported here only: without pyspark every other measurement still runs.
    from pyspark.sql import SparkSession  # noqa: PLC0415

    import openbinlog_spark  # noqa: PLC0415

    session = (
        SparkSession.builder.master(arguments["master"])
        .appName("openbinlog-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.python.worker.reuse", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    openbinlog_spark.register(session)
    results: dict[str, Any] = {}
    try:
        for path in arguments["logs"]:
            frame = session.read.format("binlog").load(path)
            records = frame.count()  # the first scan also starts the Python workers
            rates = []
            for _ in range(arguments["repeats"]):
                start = time.perf_counter()
                frame.write.format("noop").mode("overwrite").save()
                rates.append(records / (time.perf_counter() - start))
            results[path] = {"records": records, "rates": rates}
    finally:
        session.stop()
    emit(results)


def _rows_for(log: BuiltLog) -> tuple[Row, Row]:
    where: dict[str, Any] = dict(record_size=log.record_size, log_size=log.log_size)
    return (
        Row("R2", "Spark records/s, local[2]", "records/s", **where, versus="local[1]"),
        Row("R3", "Spark records/s per core (local[1])", "records/s", **where, versus="Reader, one process"),
    )


def measure_spark(logs: list[BuiltLog], reader_rates: dict[str, float], repeats: int, skip: str | None) -> list[Row]:
    """R2 and R3 rows for every log; ``reader_rates`` are the R1 Reader figures by log path."""
    reason = skip or spark_unavailable()
    rows: list[Row] = []
    if reason is not None:
        for log in logs:
            rows.extend(not_run(row, reason) for row in _rows_for(log))
        return rows
    by_master: dict[str, dict[str, Any]] = {}
    try:
        for master in MASTERS:
            by_master[master] = run_worker(
                "spark", timeout=SPARK_TIMEOUT, master=master, logs=[str(log.path) for log in logs], repeats=repeats
            )
    except Exception as exc:  # a failed Spark run is reported in the table, never hidden
        message = str(exc).strip().splitlines()[-1][:300] if str(exc).strip() else type(exc).__name__
        for log in logs:
            rows.extend(not_run(row, f"Spark run failed: {message}") for row in _rows_for(log))
        return rows
    for log in logs:
        one, two = (by_master[master][str(log.path)] for master in MASTERS)
        scaling, per_core = _rows_for(log)
        rows.append(compared(scaling, two["rates"], one["rates"], bar=1.7))
        rows.append(compared(per_core, one["rates"], [reader_rates[str(log.path)]], bar=0.5))
    return rows
