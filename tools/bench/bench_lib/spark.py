"""R2 and R3: the Spark data source on one core and on two, against the single-process Reader.

Each master runs in its own worker process holding one Spark session (about
12 s to start) for all logs and repeats; both sessions are started first and
then take turns, scan by scan, so that both meet the same machine load. A
scan is one job that writes every record of the log into Spark's ``noop``
sink, as ``openbinlog_spark.bench.measure`` does: every record of every
segment is decoded, verified and handed to the JVM.

``local[N]`` runs on N cores: its worker, and so the JVM and the Python
workers it starts, is bound to N CPUs. Unbound, ``local[1]`` is one task slot
but two busy processes, the Python worker decoding and the JVM turning Arrow
batches into rows, and it used about 1.5 of the machine's 2 cores: "local[2]
against local[1]" (R2) could not pass 1.33 whatever the data source did, and
R3 compared 1.5 cores with the Reader's one.

What a scan costs beyond reading is Spark's and stays in the figure: about
0.2 s per job (planning, starting and committing it) and some 50 to 80 ms of
CPU per Python task. On a 10 MB log these are most of the time (the Reader
needs well under 0.1 s for it), so its rows measure Spark's fixed costs more
than the data source; the 100 MB rows measure the reading.
"""

from __future__ import annotations

import importlib.util
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

from openbinlog._accel import DECODER

from .logs import BuiltLog
from .measure import Row, compared, not_run
from .processes import READY, worker_command

SPARK_TIMEOUT = 1800.0
START_TIMEOUT = 600.0
MASTERS = ("local[1]", "local[2]")
PREBUILT = "prebuilt:"  # a scan request for the log's first batch sent again and again (R3.ceiling)


def spark_unavailable() -> str | None:
    """Why Spark cannot be measured here, or None."""
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed"
    if shutil.which("java") is None:
        return "no Java runtime on PATH"
    if importlib.util.find_spec("openbinlog_spark") is None:
        return "the openbinlog_spark package is not importable"
    return None


def cores_of(master: str) -> int:
    return int(master.removeprefix("local[").removesuffix("]"))


def bind_to_cores(cores: int) -> str:
    """Bind this process, and every process it starts, to ``cores`` CPUs; say what was done."""
    if not hasattr(os, "sched_setaffinity"):
        return "CPU binding not supported here"
    available = sorted(os.sched_getaffinity(0))
    if len(available) < cores:
        return f"only {len(available)} CPUs: not bound"
    os.sched_setaffinity(0, available[:cores])
    return f"bound to {cores} CPU" + ("s" if cores > 1 else "")


def spark_worker(arguments: dict[str, Any]) -> None:
    """Worker side: one session on ``master``; after ``ready``, each input line names a log to scan
    and gets back the records and seconds of that scan as one JSON line."""
    binding = bind_to_cores(cores_of(arguments["master"]))
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    # Imported here only: without pyspark every other measurement still runs.
    from pyspark.sql import DataFrame, SparkSession  # noqa: PLC0415

    import openbinlog_spark  # noqa: PLC0415
    from openbinlog_spark.bench import PrebuiltBatches  # noqa: PLC0415

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
    session.dataSource.register(PrebuiltBatches)
    jobs: dict[str, tuple[DataFrame, int]] = {}
    try:
        for path in arguments["logs"]:
            frame = session.read.format("binlog").load(path)
            jobs[path] = (frame, frame.count())  # the first scan also starts the Python workers
            prebuilt = session.read.format(PrebuiltBatches.name()).option("records", jobs[path][1]).load(path)
            jobs[PREBUILT + path] = (prebuilt, prebuilt.count())
        print(json.dumps({READY: binding}), flush=True)
        for line in sys.stdin:
            frame, records = jobs[line.strip()]
            start = time.perf_counter()
            frame.write.format("noop").mode("overwrite").save()
            print(json.dumps({"records": records, "seconds": time.perf_counter() - start}), flush=True)
    finally:
        session.stop()


class SparkWorker:
    """A running ``spark_worker`` that scans on request; its error output goes to a file, read on failure."""

    def __init__(self, master: str, logs: list[str]) -> None:
        self.errors = tempfile.TemporaryFile("w+")  # noqa: SIM115 - lives as long as the worker, closed by stop()
        self.process = subprocess.Popen(
            worker_command("spark", master=master, logs=logs),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errors,
            text=True,
        )

    def answer(self, *, timeout: float) -> dict[str, Any]:
        """The next JSON line; the worker is killed when none comes within ``timeout``."""
        assert self.process.stdout is not None
        readable, _, _ = select.select([self.process.stdout], [], [], timeout)
        line = self.process.stdout.readline().strip() if readable else ""
        if not line.startswith("{"):
            self.process.kill()
            self.process.wait(timeout=10)
            self.errors.seek(0)
            raise RuntimeError(f"Spark worker gave no answer ({line!r}): {self.errors.read().strip()[-2000:]}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def scan(self, path: str) -> float:
        """Records/s of one timed job on the log at ``path``."""
        assert self.process.stdin is not None
        self.process.stdin.write(path + "\n")
        self.process.stdin.flush()
        answer = self.answer(timeout=SPARK_TIMEOUT)
        return float(answer["records"]) / float(answer["seconds"])

    def stop(self) -> None:
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        self.errors.close()


def _rows_for(log: BuiltLog) -> tuple[Row, Row, Row]:
    where: dict[str, Any] = dict(record_size=log.record_size, log_size=log.log_size)
    ceiling = Row("R3.ceiling", "Spark records/s, local[1], pre-built batches", "records/s", **where)
    ceiling.versus = "Reader, one process"
    ceiling.note = "the source's first Arrow batch sent again and again: Spark's own cost per row, the ceiling of R3"
    return (
        Row("R2", "Spark records/s, local[2]", "records/s", **where, versus="local[1]"),
        Row("R3", "Spark records/s per core (local[1])", "records/s", **where, versus="Reader, one process"),
        ceiling,
    )


def spark_rates(logs: list[BuiltLog], repeats: int) -> tuple[dict[str, dict[str, list[float]]], str]:
    """Records/s of every master on every log, the masters taking turns; and how the workers were bound."""
    paths = [str(log.path) for log in logs]
    workers = {master: SparkWorker(master, paths) for master in MASTERS}
    try:
        # The ready line says how the worker was bound.
        binding = ", ".join(
            f"{master} {worker.answer(timeout=START_TIMEOUT)[READY]}" for master, worker in workers.items()
        )
        scans = [scan for path in paths for scan in (path, PREBUILT + path)]
        rates: dict[str, dict[str, list[float]]] = {master: {scan: [] for scan in scans} for master in MASTERS}
        for turn in range(repeats):
            for scan in scans:
                for master in MASTERS if turn % 2 == 0 else MASTERS[::-1]:
                    rates[master][scan].append(workers[master].scan(scan))
        return rates, binding
    finally:
        for worker in workers.values():
            worker.stop()


def measure_spark(logs: list[BuiltLog], reader_rates: dict[str, float], repeats: int, skip: str | None) -> list[Row]:
    """R2 and R3 rows for every log; ``reader_rates`` are the R1 Reader figures by log path."""
    reason = skip or spark_unavailable()
    rows: list[Row] = []
    if reason is not None:
        for log in logs:
            rows.extend(not_run(row, reason) for row in _rows_for(log))
        return rows
    try:
        rates, binding = spark_rates(logs, repeats)
    except Exception as exc:  # a failed Spark run is reported in the table, never hidden
        message = str(exc).strip().splitlines()[-1][:300] if str(exc).strip() else type(exc).__name__
        for log in logs:
            rows.extend(not_run(row, f"Spark run failed: {message}") for row in _rows_for(log))
        return rows
    for log in logs:
        path = str(log.path)
        scaling, per_core, ceiling = _rows_for(log)
        # Spark's Python workers inherit this process's environment: they choose the same walk.
        scaling.note = per_core.note = f"{binding}; {DECODER} walk"
        rows.append(compared(scaling, rates["local[2]"][path], rates["local[1]"][path], bar=1.7))
        rows.append(compared(per_core, rates["local[1]"][path], [reader_rates[path]], bar=0.5))
        rows.append(compared(ceiling, rates["local[1]"][PREBUILT + path], [reader_rates[path]]))
    return rows
