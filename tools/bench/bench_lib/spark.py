"""R2 to R5: the Spark data source on one core and on two, against the single-process Reader and
against Spark's own readers of the same records.

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

The peers (R4, R5) hold the records the ``binlog`` source returns for the
100 MB and 1 GB logs, written once before the sessions start: Parquet (snappy,
by pyarrow, one file per segment), JSON lines read with the source's schema,
and the segment files themselves read by ``binaryFile`` and decoded by
``openbinlog_spark.udfs.explode_segments``. Their scans take turns with the
``binlog`` scans in the same sessions. R5 is the first query of a fresh
session: a new worker (a new JVM, no Python worker started yet) for every
query, timed from ``spark.read`` to the end of the scan.

What a scan costs beyond reading is Spark's and stays in the figure: about
0.2 s per job (planning, starting and committing it) and some 50 to 80 ms of
CPU per Python task. On a 10 MB log these are most of the time (the Reader
needs well under 0.1 s for it), so its rows measure Spark's fixed costs more
than the data source; the 100 MB rows measure the reading.
"""

from __future__ import annotations

import binascii
import importlib.util
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openbinlog._accel import DECODER

from .logs import BuiltLog, size_label
from .measure import Row, compared, median, not_run
from .plan import MB, MIB
from .processes import READY, emit, run_worker, worker_command

if TYPE_CHECKING:
    from collections.abc import Iterator

    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.datasource import DataSource
    from pyspark.sql.types import StructType

SPARK_TIMEOUT = 1800.0
START_TIMEOUT = 600.0
MASTERS = ("local[1]", "local[2]")
DRIVER_MEMORY = "3g"  # every session's heap (local mode: the driver is the executor)
# Every session's collector and a heap of fixed size: left to itself the JVM takes the serial collector on one
# CPU and G1 on two, and sizes its heap by what earlier scans allocated, so that local[2] against local[1] (R2)
# would compare collectors and histories as much as cores. The parallel collector is the same algorithm on both.
JVM_OPTIONS = f"-XX:+UseParallelGC -Xms{DRIVER_MEMORY}"
FIRST_MASTER = "local[2]"  # R5: the machine's every core, as local[*] gives it
BINLOG, PREBUILT = "binlog", "prebuilt"  # PREBUILT: the log's first batch sent again and again (R3.ceiling)
JVM = "binlog-jvm"  # the JVM source (spark_udfs/jvm), the same reading in Spark's own process
JVM_JAR = Path(__file__).resolve().parents[3] / "build" / "jvm" / "openbinlog.jar"
NARROW = "narrow:"  # a worker request: X3 on the log that follows
NARROWED_ROWS = 10_000
X3_BAR = 2.0  # issue 20: at most twice the bytes of the rows returned
EMPTY = "empty"  # a Python data source that returns no rows: the first query's floor (R5.floor)
PARQUET, JSON_LINES, BINARY_FILE = "parquet", "json", "binaryFile"
PEERS = (PARQUET, JSON_LINES, BINARY_FILE)
PEER_LOG_SIZES = (100 * MB, 1000 * MB)  # the logs the peers are written for
ROW_GROUP_BYTES = 16 * MIB  # Parquet row groups: several per task on two cores, as Spark splits files by them
RECORD_COLUMNS = ("log", "offset", "index", "asqn", "timestamp", "payload", "file")
# R5 is judged on its seconds: the figure must stay at or under the bar times the baseline.
RATIO_AT_MOST = "ratio<="
FIRST_QUERY_BAR = 1.3
PEER_NAMES = {
    PARQUET: "Parquet (snappy)",
    JSON_LINES: "JSON lines",
    BINARY_FILE: "binaryFile + explode_segments",
}
PEER_IDS = {PARQUET: "", JSON_LINES: ".json", BINARY_FILE: ".binaryFile"}


def spark_unavailable() -> str | None:
    """Why Spark cannot be measured here, or None."""
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed"
    if shutil.which("java") is None:
        return "no Java runtime on PATH"
    if importlib.util.find_spec("openbinlog_spark") is None:
        return "the openbinlog_spark package is not importable"
    if not JVM_JAR.is_file():
        return f"the JVM source is not built ({JVM_JAR.name}: make jvm)"
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


# -- the peers' files -------------------------------------------------------------


def peer_logs(logs: list[BuiltLog]) -> list[BuiltLog]:
    """The logs the peers are measured on: 100 MB and 1 GB; without those (the tiny mode), the largest."""
    chosen = [log for log in logs if log.log_size in PEER_LOG_SIZES]
    if chosen or not logs:
        return chosen
    largest = max(log.log_size for log in logs)
    return [log for log in logs if log.log_size == largest]


def _json_lines(records: pa.RecordBatch) -> bytes:
    """The records as JSON lines, in Spark's text for each type: base64 for binary, ISO 8601 for timestamps."""
    import pyarrow as pa  # noqa: PLC0415 - the bench runs without pyarrow when Spark is not measured
    import pyarrow.compute as pc  # noqa: PLC0415

    for name in RECORD_COLUMNS:
        if records.column(name).null_count:
            raise ValueError(f"a null in column {name}: the JSON lines would not hold the same records")
    encode = binascii.b2a_base64
    payloads = [encode(value, newline=False).decode() for value in records.column("payload").to_pylist()]
    quoted: dict[str, str] = {}
    files = [
        quoted.get(name) or quoted.setdefault(name, json.dumps(name)) for name in records.column("file").to_pylist()
    ]

    def text(name: str) -> pa.Array:
        return pc.cast(records.column(name), pa.string())

    lines = pc.binary_join_element_wise(
        '{"log":',
        text("log"),
        ',"offset":',
        text("offset"),
        ',"index":',
        text("index"),
        ',"asqn":',
        text("asqn"),
        ',"timestamp":"',
        pc.strftime(records.column("timestamp"), format="%Y-%m-%dT%H:%M:%SZ"),
        '","payload":"',
        pa.array(payloads, pa.string()),
        '","file":',
        pa.array(files, pa.string()),
        "}\n",
        "",
    )
    return "".join(lines.to_pylist()).encode()


def write_peers(log: BuiltLog, directory: Path) -> dict[str, str]:
    """Parquet (snappy) and JSON lines of the records the ``binlog`` source returns for ``log``,
    one file of each per segment; returns their directories by peer."""
    import pyarrow as pa  # noqa: PLC0415
    import pyarrow.parquet as pq  # noqa: PLC0415

    from openbinlog_spark.source import BinlogDataSource  # noqa: PLC0415

    source = BinlogDataSource({"path": str(log.path)})
    reader = source.reader(source.schema())
    places = {PARQUET: directory / "parquet", JSON_LINES: directory / "json"}
    for place in places.values():
        place.mkdir(parents=True)
    rows_per_group = max(1, ROW_GROUP_BYTES // (log.record_size + 64))
    segments: dict[str, list[pa.RecordBatch]] = {}
    for partition in reader.partitions():
        for batch in reader.read(partition):
            if batch.num_rows:
                records = batch.select(list(RECORD_COLUMNS))
                segments.setdefault(records.column("file")[0].as_py(), []).append(records)
    for number, batches in enumerate(segments.values()):
        table = pa.Table.from_batches(batches)
        # Dictionaries as pyarrow's default, but not for the payloads: the bench's logs cycle through 64
        # payloads, which a dictionary would fold into 64 values; real payloads do not repeat.
        dictionary = [name for name in RECORD_COLUMNS if name != "payload"]
        pq.write_table(
            table,
            places[PARQUET] / f"part-{number:05d}.parquet",
            compression="snappy",
            use_dictionary=dictionary,
            row_group_size=rows_per_group,
        )
        with open(places[JSON_LINES] / f"part-{number:05d}.json", "wb") as out:
            for records in batches:
                out.write(_json_lines(records))
    return {peer: str(place) for peer, place in places.items()}


# -- the sessions -----------------------------------------------------------------


def _session(master: str) -> SparkSession:
    """The session every Spark worker of the bench uses, on ``master``."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    # Imported here only: without pyspark every other measurement still runs.
    from pyspark.sql import SparkSession  # noqa: PLC0415

    session = (
        SparkSession.builder.master(master)
        .appName("openbinlog-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.python.worker.reuse", "true")
        .config("spark.jars", str(JVM_JAR))
        # binaryFile holds a whole segment (64 MiB) per row, several times over while it turns rows into Arrow
        # batches: two such tasks outgrow the default heap of 1 GiB on the 1 GB logs.
        .config("spark.driver.memory", DRIVER_MEMORY)
        .config("spark.driver.extraJavaOptions", JVM_OPTIONS)
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session


def _driver_imports() -> None:
    """What a script imports before its queries (``_frame`` uses them): never timed."""
    import openbinlog_spark.bench  # noqa: PLC0415
    import openbinlog_spark.udfs  # noqa: F401, PLC0415


def _empty_source(schema: StructType, tasks: int) -> type[DataSource]:
    """A Python data source with ``schema`` that returns no rows from ``tasks`` tasks: what Spark's machinery
    for Python data sources costs alone. Made here, not in a module, so that it reaches Spark's Python
    workers by value: they import nothing of openbinlog for it."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition  # noqa: PLC0415

    class EmptyReader(DataSourceReader):
        def partitions(self) -> list[InputPartition]:
            return [InputPartition(number) for number in range(tasks)]

        def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
            return iter(())

    class EmptySource(DataSource):
        @classmethod
        def name(cls) -> str:
            return "bench-empty"

        def schema(self) -> StructType:
            return schema

        def reader(self, schema: StructType) -> DataSourceReader:
            return EmptyReader()

    return EmptySource


def _frame(session: SparkSession, kind: str, path: str, peers: dict[str, str], records: int) -> DataFrame:
    """The DataFrame of ``kind`` over the records of the log at ``path``."""
    import openbinlog_spark  # noqa: PLC0415
    from openbinlog_spark.bench import PrebuiltBatches  # noqa: PLC0415
    from openbinlog_spark.columns import record_schema  # noqa: PLC0415
    from openbinlog_spark.udfs import explode_segments  # noqa: PLC0415

    if kind == BINLOG:
        openbinlog_spark.register(session)
        return session.read.format("binlog").load(path)
    if kind == JVM:
        return session.read.format(JVM).load(path)
    if kind == PREBUILT:
        session.dataSource.register(PrebuiltBatches)
        return session.read.format(PrebuiltBatches.name()).option("records", records).load(path)
    if kind == PARQUET:
        return session.read.parquet(peers[PARQUET])
    if kind == JSON_LINES:
        schema = record_schema([], None)
        return session.read.schema(schema).json(peers[JSON_LINES])
    if kind == BINARY_FILE:
        files = session.read.format("binaryFile").option("pathGlobFilter", "*.dat").load(path)
        return explode_segments(files, path_column="path")
    if kind == EMPTY:
        source = _empty_source(record_schema([], "_corrupt_record"), session.sparkContext.defaultParallelism)
        session.dataSource.register(source)
        return session.read.format(source.name()).load()
    raise ValueError(f"no scan of kind {kind!r}")


def _counted(frame: DataFrame, kind: str) -> int:
    """The rows of ``frame``; for JSON lines, also that every timestamp and payload was parsed."""
    if kind != JSON_LINES:
        return int(frame.count())
    rows, stamps, payloads = frame.selectExpr("count(*)", "count(timestamp)", "count(payload)").first()  # type: ignore[misc]
    if not rows == stamps == payloads:
        raise RuntimeError(f"JSON lines: {rows} rows, {stamps} timestamps and {payloads} payloads parsed")
    return int(rows)


def _scans(arguments: dict[str, Any]) -> list[tuple[str, str]]:
    """(kind, path) of every scan a worker makes: ``binlog`` and pre-built on every log, the peers on theirs."""
    scans = []
    for path in arguments["logs"]:
        scans += [(BINLOG, path), (JVM, path), (PREBUILT, path)]
        scans += [(peer, path) for peer in PEERS if path in arguments["peers"]]
    return scans


def scan_key(kind: str, path: str) -> str:
    return f"{kind}:{path}"


def spark_worker(arguments: dict[str, Any]) -> None:
    """Worker side: one session on ``master``; after ``ready``, each input line names a scan (``scan_key``)
    and gets back the records and seconds of that scan as one JSON line."""
    binding = bind_to_cores(cores_of(arguments["master"]))
    session = _session(arguments["master"])
    jobs: dict[str, tuple[DataFrame, int]] = {}
    try:
        for kind, path in _scans(arguments):
            peers = arguments["peers"].get(path, {})
            records = jobs[scan_key(BINLOG, path)][1] if kind != BINLOG else 0
            frame = _frame(session, kind, path, peers, records)
            count = _counted(frame, kind)  # the first scan also starts the Python workers
            if kind != BINLOG and count != records:
                raise RuntimeError(f"{kind} holds {count} records of {path}, the binlog source {records}")
            jobs[scan_key(kind, path)] = (frame, count)
        print(json.dumps({READY: binding}), flush=True)
        for line in sys.stdin:
            if line.startswith(NARROW):
                print(json.dumps(_narrowed(session, line.strip().removeprefix(NARROW))), flush=True)
                continue
            frame, records = jobs[line.strip()]
            start = time.perf_counter()
            frame.write.format("noop").mode("overwrite").save()
            print(json.dumps({"records": records, "seconds": time.perf_counter() - start}), flush=True)
    finally:
        session.stop()


def _narrowed(session: SparkSession, path: str) -> dict[str, int]:
    """X3, in a worker: the sealed first segment of the log at ``path`` indexed (spec 18), then a query of
    NARROWED_ROWS consecutive indexes from its middle through the JVM source; the bytes the source read (its
    binlogBytesRead metric) and the bytes of the rows returned (record headers and payloads)."""
    from openbinlog import build_indexes  # noqa: PLC0415
    from openbinlog._format import RECORD_HEADER_SIZE  # noqa: PLC0415

    build_indexes(path)
    frame = session.read.format(JVM).load(path)
    low, high = frame.where("log = 1").selectExpr("min(index)", "max(index)").first()  # type: ignore[misc]
    start = (low + high - NARROWED_ROWS) // 2
    query = frame.where(f"index between {start} and {start + NARROWED_ROWS - 1}").select("payload")
    rows = query.collect()
    if len(rows) != NARROWED_ROWS:
        raise RuntimeError(f"X3: {len(rows)} rows of indexes {start} to {start + NARROWED_ROWS - 1} in {path}")
    scan = query._jdf.queryExecution().executedPlan().collectLeaves().apply(0)
    read = int(scan.metrics().apply("binlogBytesRead").value())
    return {"read": read, "rows": sum(RECORD_HEADER_SIZE + len(row[0]) for row in rows)}


def spark_first_worker(arguments: dict[str, Any]) -> None:
    """Worker side: a fresh session on ``master``, then one query timed, from ``spark.read`` to the end of
    a scan of every record; emits its seconds."""
    binding = bind_to_cores(cores_of(arguments["master"]))
    session = _session(arguments["master"])
    _driver_imports()
    try:
        start = time.perf_counter()
        frame = _frame(session, arguments["kind"], arguments["path"], arguments["peers"], 0)
        frame.write.format("noop").mode("overwrite").save()
        seconds = time.perf_counter() - start
    finally:
        session.stop()
    emit({"seconds": seconds, "binding": binding})


class SparkWorker:
    """A running ``spark_worker`` that scans on request; its error output goes to a file, read on failure."""

    def __init__(self, master: str, logs: list[str], peers: dict[str, dict[str, str]]) -> None:
        self.errors = tempfile.TemporaryFile("w+")  # noqa: SIM115 - lives as long as the worker, closed by stop()
        self.process = subprocess.Popen(
            worker_command("spark", master=master, logs=logs, peers=peers),
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

    def scan(self, key: str) -> float:
        """Records/s of one timed job (``scan_key``)."""
        assert self.process.stdin is not None
        self.process.stdin.write(key + "\n")
        self.process.stdin.flush()
        answer = self.answer(timeout=SPARK_TIMEOUT)
        return float(answer["records"]) / float(answer["seconds"])

    def narrowed(self, path: str) -> dict[str, int]:
        """X3 on the log at ``path`` (``_narrowed``)."""
        assert self.process.stdin is not None
        self.process.stdin.write(NARROW + path + "\n")
        self.process.stdin.flush()
        return {key: int(value) for key, value in self.answer(timeout=SPARK_TIMEOUT).items()}

    def stop(self) -> None:
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        self.errors.close()


# -- the measurements -------------------------------------------------------------


def spark_rates(
    logs: list[BuiltLog], peers: dict[str, dict[str, str]], repeats: int, narrowed: dict[str, dict[str, int]]
) -> tuple[dict[str, dict[str, list[float]]], str]:
    """Records/s of every scan on every master, the masters taking turns; and how the workers were bound.
    ``narrowed`` gets X3's bytes of each log."""
    paths = [str(log.path) for log in logs]
    workers = {master: SparkWorker(master, paths, peers) for master in MASTERS}
    try:
        # The ready line says how the worker was bound.
        binding = ", ".join(
            f"{master} {worker.answer(timeout=START_TIMEOUT)[READY]}" for master, worker in workers.items()
        )
        keys = [scan_key(kind, path) for kind, path in _scans({"logs": paths, "peers": peers})]
        rates: dict[str, dict[str, list[float]]] = {master: {key: [] for key in keys} for master in MASTERS}
        for turn in range(repeats):
            for key in keys:
                for master in MASTERS if turn % 2 == 0 else MASTERS[::-1]:
                    rates[master][key].append(workers[master].scan(key))
        # X3 last (indexing a log changes how the Python source cuts it), on the logs with a sealed segment.
        for path in peers:
            narrowed[path] = workers[FIRST_MASTER].narrowed(path)
        return rates, binding
    finally:
        for worker in workers.values():
            worker.stop()


def first_queries(logs: list[BuiltLog], peers: dict[str, dict[str, str]], repeats: int) -> dict[str, list[float]]:
    """Seconds of the first query of a fresh session on ``FIRST_MASTER``, by ``scan_key``; the kinds take
    turns, in an order that rotates from repeat to repeat."""
    seconds: dict[str, list[float]] = {}
    for turn in range(repeats):
        for number, log in enumerate(logs):
            path = str(log.path)
            # The empty source reads no log: once per repeat, beside the first log's queries.
            kinds = (BINLOG, JVM, *PEERS, EMPTY) if number == 0 else (BINLOG, JVM, *PEERS)
            for step in range(len(kinds)):
                kind = kinds[(turn + step) % len(kinds)]
                answer = run_worker(
                    "spark_first",
                    timeout=START_TIMEOUT + SPARK_TIMEOUT,
                    master=FIRST_MASTER,
                    kind=kind,
                    path=path,
                    peers=peers[path],
                )
                key = scan_key(kind, "" if kind == EMPTY else path)
                seconds.setdefault(key, []).append(float(answer["seconds"]))
    return seconds


def _narrowed_row(log: BuiltLog) -> Row:
    where: dict[str, Any] = dict(record_size=log.record_size, log_size=log.log_size)
    row = Row("X3", f"JVM source, where index between a and a+{NARROWED_ROWS - 1}: bytes read", "bytes", **where)
    row.versus = "bytes of the rows returned"
    return row


def _rows_for(log: BuiltLog) -> tuple[Row, Row, Row, Row]:
    where: dict[str, Any] = dict(record_size=log.record_size, log_size=log.log_size)
    ceiling = Row("R3.ceiling", "Spark records/s, local[1], pre-built batches", "records/s", **where)
    ceiling.versus = "Reader, one process"
    ceiling.note = "the source's first Arrow batch sent again and again: Spark's own cost per row, the ceiling of R3"
    return (
        Row("R2", "Spark records/s, local[2]", "records/s", **where, versus="local[1]"),
        Row("R3", "Spark records/s per core (local[1])", "records/s", **where, versus="Reader, one process"),
        ceiling,
        Row("R2.jvm", "Spark records/s, JVM source, local[2]", "records/s", **where, versus="local[1]"),
    )


def _peer_rows(log: BuiltLog) -> list[Row]:
    """R2.parquet, R4 (each peer, each master) and R5 (each peer) of one log, without figures."""
    where: dict[str, Any] = dict(record_size=log.record_size, log_size=log.log_size)
    rows = [Row("R2.parquet", "Parquet (snappy) records/s, local[2]", "records/s", **where, versus="local[1]")]
    for peer in PEERS:
        for master in MASTERS:
            suffix = "" if master == "local[1]" else ".local2"
            rows.append(
                Row(
                    f"R4{PEER_IDS[peer]}{suffix}",
                    f"Spark records/s, {master}",
                    "records/s",
                    **where,
                    versus=f"{PEER_NAMES[peer]}, {master}",
                )
            )
    for master in MASTERS:
        suffix = "" if master == "local[1]" else ".local2"
        rows.append(
            Row(
                f"R4.jvm{suffix}",
                f"Spark records/s, JVM source, {master}",
                "records/s",
                **where,
                versus=f"{PEER_NAMES[PARQUET]}, {master}",
            )
        )
    parquet = PEER_NAMES[PARQUET]
    ceiling = Row("R4.ceiling", "Spark records/s, local[1], pre-built batches", "records/s", **where)
    ceiling.versus = f"{parquet}, local[1]"
    rows.append(ceiling)
    for peer in PEERS:
        rows.append(
            Row(
                f"R5{PEER_IDS[peer]}",
                f"first query of a fresh session, {FIRST_MASTER}",
                "s",
                **where,
                versus=PEER_NAMES[peer],
            )
        )
    rows.append(Row("R5.jvm", f"first query of a fresh session, {FIRST_MASTER}, JVM source", "s", **where))
    rows[-1].versus = PEER_NAMES[PARQUET]
    floor = Row("R5.floor", f"first query of a fresh session, {FIRST_MASTER}, empty Python source", "s", **where)
    floor.versus = parquet
    rows.append(floor)
    return rows


PEER_NOTE = (
    "the records the binlog source returns, written by pyarrow: Parquet with snappy, one file per segment, "
    "row groups of 16 MiB, dictionaries but for the payloads (the logs cycle through 64 payloads); JSON lines "
    "read with the source's schema; binaryFile reads the segment files"
)


def _judged_peer_rows(
    log: BuiltLog,
    rates: dict[str, dict[str, list[float]]],
    seconds: dict[str, list[float]],
    *,
    binding: str,
    first_size: str,
) -> list[Row]:
    path = str(log.path)
    rows = _peer_rows(log)
    by_id = {row.id: row for row in rows}
    scaling = by_id["R2.parquet"]
    scaling.note = binding
    compared(scaling, rates["local[2]"][scan_key(PARQUET, path)], rates["local[1]"][scan_key(PARQUET, path)])
    ceiling = by_id["R4.ceiling"]
    compared(ceiling, rates["local[1]"][scan_key(PREBUILT, path)], rates["local[1]"][scan_key(PARQUET, path)])
    ceiling.note = (
        "the source's first Arrow batch sent again and again (R3.ceiling) against Parquet: Spark's own cost per row "
        "through a Python data source, the most R4 can reach"
    )
    for peer in PEERS:
        for master in MASTERS:
            suffix = "" if master == "local[1]" else ".local2"
            row = by_id[f"R4{PEER_IDS[peer]}{suffix}"]
            bar = 1.0 if peer == PARQUET else None
            compared(row, rates[master][scan_key(BINLOG, path)], rates[master][scan_key(peer, path)], bar=bar)
            if peer == PARQUET:
                row.note = f"{PEER_NOTE}; {binding}; {DECODER} walk"
        first = by_id[f"R5{PEER_IDS[peer]}"]
        key = scan_key(peer, path)
        if peer == PARQUET:
            _judge_jvm(by_id, rates, seconds, path, key)
        if key not in seconds:
            not_run(first, f"first queries are timed on the {first_size} logs only")
            if peer == PARQUET:
                not_run(by_id["R5.floor"], f"first queries are timed on the {first_size} logs only")
            continue
        compared(first, seconds[scan_key(BINLOG, path)], seconds[key])
        if peer == PARQUET:
            floor = by_id["R5.floor"]
            compared(floor, seconds[scan_key(EMPTY, "")], seconds[key])
            floor.note = (
                "a Python data source that returns no rows from one task per core (its workers import nothing of "
                "openbinlog): what Spark's Python data source machinery alone adds to a first query; R5 stays above it"
            )
            first.bar, first.bar_kind = FIRST_QUERY_BAR, RATIO_AT_MOST
            first.passed = first.ratio is not None and first.ratio <= FIRST_QUERY_BAR
            first.note = (
                f"bar: at most {FIRST_QUERY_BAR:g}x Parquet's seconds; a new JVM per query, timed from spark.read "
                "to the end of a noop scan of every record; the medians of "
                f"{len(first.runs)} ({median(first.runs):.1f} s against {median(first.baseline_runs):.1f} s)"
            )
    return rows


def _judge_jvm(
    by_id: dict[str, Row],
    rates: dict[str, dict[str, list[float]]],
    seconds: dict[str, list[float]],
    path: str,
    parquet: str,
) -> None:
    """R4.jvm and R5.jvm: the JVM source against Parquet, with the bars of R4 and R5."""
    for master in MASTERS:
        row = by_id["R4.jvm" + ("" if master == "local[1]" else ".local2")]
        compared(row, rates[master][scan_key(JVM, path)], rates[master][parquet], bar=1.0)
        row.note = "the same records as R4; the JVM source reads them in Spark's own process, no Python worker"
    first = by_id["R5.jvm"]
    if parquet not in seconds:
        not_run(first, "first queries are timed on the smallest peer logs only")
        return
    compared(first, seconds[scan_key(JVM, path)], seconds[parquet])
    first.bar, first.bar_kind = FIRST_QUERY_BAR, RATIO_AT_MOST
    first.passed = first.ratio is not None and first.ratio <= FIRST_QUERY_BAR
    first.note = f"bar: at most {FIRST_QUERY_BAR:g}x Parquet's seconds, timed as R5"


def measure_spark(logs: list[BuiltLog], reader_rates: dict[str, float], repeats: int, skip: str | None) -> list[Row]:
    """R2 to R5 for every log; ``reader_rates`` are the R1 Reader figures by log path."""
    reason = skip or spark_unavailable()
    rows: list[Row] = []
    with_peers = peer_logs(logs)
    smallest = min((log.log_size for log in with_peers), default=0)
    if reason is not None:
        for log in logs:
            rows.extend(not_run(row, reason) for row in _rows_for(log))
        for log in with_peers:
            rows.extend(not_run(row, reason) for row in (*_peer_rows(log), _narrowed_row(log)))
        return rows
    try:
        peers: dict[str, dict[str, str]] = {}
        for log in with_peers:
            peers[str(log.path)] = write_peers(log, log.path.parent / f"peers-{log.path.name}")
        narrowed: dict[str, dict[str, int]] = {}
        rates, binding = spark_rates(logs, peers, repeats, narrowed)
        seconds = first_queries([log for log in with_peers if log.log_size == smallest], peers, repeats)
    except Exception as exc:  # a failed Spark run is reported in the table, never hidden
        message = str(exc).strip().splitlines()[-1][:300] if str(exc).strip() else type(exc).__name__
        for log in logs:
            rows.extend(not_run(row, f"Spark run failed: {message}") for row in _rows_for(log))
        for log in with_peers:
            rows.extend(not_run(row, f"Spark run failed: {message}") for row in (*_peer_rows(log), _narrowed_row(log)))
        return rows
    finally:
        for log in with_peers:
            shutil.rmtree(log.path.parent / f"peers-{log.path.name}", ignore_errors=True)
    for log in logs:
        path = str(log.path)
        scaling, per_core, ceiling, jvm_scaling = _rows_for(log)
        # Spark's Python workers inherit this process's environment: they choose the same walk.
        scaling.note = per_core.note = f"{binding}; {DECODER} walk"
        rows.append(
            compared(
                scaling, rates["local[2]"][scan_key(BINLOG, path)], rates["local[1]"][scan_key(BINLOG, path)], bar=1.7
            )
        )
        rows.append(compared(per_core, rates["local[1]"][scan_key(BINLOG, path)], [reader_rates[path]], bar=0.5))
        rows.append(compared(ceiling, rates["local[1]"][scan_key(PREBUILT, path)], [reader_rates[path]]))
        jvm_scaling.note = binding
        rows.append(
            compared(
                jvm_scaling, rates["local[2]"][scan_key(JVM, path)], rates["local[1]"][scan_key(JVM, path)], bar=1.7
            )
        )
    for log in with_peers:
        rows.extend(_judged_peer_rows(log, rates, seconds, binding=binding, first_size=size_label(smallest)))
        x3 = _narrowed_row(log)
        compared(x3, [float(narrowed[str(log.path)]["read"])], [float(narrowed[str(log.path)]["rows"])])
        x3.bar, x3.bar_kind = X3_BAR, RATIO_AT_MOST
        x3.passed = x3.ratio is not None and x3.ratio <= X3_BAR
        x3.note = "the sealed first segment indexed (interval 64 KiB); counted by the source's binlogBytesRead metric"
        rows.append(x3)
    return rows
