#!/usr/bin/env python3
"""The Spark data source (spark_udfs/openbinlog_spark) as a conformance testee, in the reader role.

    testee.py session | read DIR [--tolerant]

Every read is ``spark.read.format("binlog").load(DIR)`` in PERMISSIVE mode, in
one local Spark session per testee process, started by the hello (whose time
limit is a minute; a read's is 10 seconds, and one takes well under one). The
records and the damage come from the DataFrame's rows, put in log order (a
DataFrame has no order of its own): a record row becomes a record object, an
``_error`` row a damage object. A strict read is those rows up to the first
``_error`` row, which is its error: FAILFAST would lose the records before
the failure (R-9), because a failed Spark job delivers no row. A tolerant
read steps over the damage the protocol steps over and stops, as the
protocol says, at a damaged segment header (which the data source reports
and reads past). An error Spark raises instead of a row (a file that cannot
be opened, a directory that does not exist) is the read's error; an
exception that names no error of openbinlog ends the testee (a crash).

The data source never reads beyond a segment end, so it cannot see a torn
tail: the torn object of a read that reached the end comes from the reference
(``reference.torn_tail``), which only looks at the bytes after the last
segment's commit point.

Declared: role ``reader``; ``legacy_v1`` and ``tolerant``. Not declared:
``refs`` and ``split`` (the data source reads whole logs; its splits are its
own), and the writer role.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import Row, SparkSession
from pyspark.sql import functions as F

import openbinlog
import openbinlog_spark
from openbinlog import BinlogError
from openbinlog._format import LOCK_NAME
from openbinlog_conformance import reference, serve
from openbinlog_conformance.vocabulary import ERROR_CLASSES, SPEC_VERSION

Json = dict[str, Any]
U64 = (1 << 64) - 1
U32 = (1 << 32) - 1
# Version 1 records start at 248, version 2 records at 256: damage below is damage of a segment header.
FIRST_RECORD_OFFSET = 248
SEGMENT_END = 1 << 64
# How openbinlog's errors render (BinlogError): "... (log 1, offset 441, index 3) [checksum_mismatch]".
RENDERED_ERROR = re.compile(r"(?:\((?P<where>[^()]*)\) )?\[(?P<cls>[a-z_]+)\]")
WHERE = re.compile(r"(log|offset|index) (\d+)")


def unsigned(value: int | None, mask: int = U64) -> int | None:
    """Spark's signed columns hold the format's unsigned values: 2^63 and up (2^31 for log) come out negative."""
    return None if value is None else value & mask


def u64(value: int | None) -> str | None:
    number = unsigned(value)
    return None if number is None else str(number)


class SparkTestee:
    def __init__(self) -> None:
        self._spark: SparkSession | None = None

    def spark(self) -> SparkSession:
        if self._spark is None:
            os.environ["PYSPARK_PYTHON"] = sys.executable
            os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
            os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
            # One core: a read is one small task, and the machines running the suite are small.
            spark = (
                SparkSession.builder.master(os.environ.get("OPENBINLOG_SPARK_MASTER", "local[1]"))
                .appName("binlog-conformance")
                .config("spark.ui.enabled", "false")
                .config("spark.ui.showConsoleProgress", "false")
                .config("spark.sql.shuffle.partitions", "1")
                .config("spark.sql.session.timeZone", "UTC")
                .config("spark.driver.host", "127.0.0.1")
                .config("spark.python.worker.reuse", "true")
                .getOrCreate()
            )
            spark.sparkContext.setLogLevel("ERROR")
            openbinlog_spark.register(spark)
            self._spark = spark
        return self._spark

    def close(self) -> None:
        if self._spark is not None:
            self._spark.stop()
            self._spark = None

    def hello(self) -> Json:
        spark = self.spark()
        with tempfile.TemporaryDirectory() as empty:
            Path(empty, LOCK_NAME).touch()  # an empty log (spec R-42: a directory without LOCK is none)
            self._rows(empty)  # starts the Python workers now, within the hello's time limit
        return {
            "name": "openbinlog-spark",
            "version": f"openbinlog {openbinlog.__version__}, Spark {spark.version}",
            "spec_version": SPEC_VERSION,
            "roles": ["reader"],
            "capabilities": ["legacy_v1", "tolerant", "compressed"],
            # The end of a finished, unsealed segment is found by the tail walk of spec 8.4.
            "choices": {"finished_segment_end": "tail_walk"},
        }

    def _rows(self, path: str) -> list[Row]:
        df = self.spark().read.format("binlog").load(path)
        stamp = F.unix_micros("timestamp").alias("timestamp_us")
        return df.select("log", "offset", "index", "asqn", stamp, "payload", "_error").collect()

    def read(self, path: str, after: str | None) -> Json:
        if after is not None:
            raise serve.Unsupported("the Spark data source reads a log from its start")
        return self._answer(path, tolerant=False)

    def read_tolerant(self, path: str) -> Json:
        return self._answer(path, tolerant=True)

    def _answer(self, path: str, *, tolerant: bool) -> Json:
        records: list[Json] = []
        damage: list[Json] = []
        error: Json | None = None
        try:
            rows = self._rows(path)
        except Exception as exc:  # Spark wraps what the data source raised: find openbinlog's error in the text
            error = raised(exc)
            if error is None:
                raise
            rows = []
        for row in sorted(rows, key=walk_positions(rows)):
            if row["_error"] is None:
                records.append(record(row))
                continue
            region = damaged(row)
            if not tolerant or stops(region):
                error = {key: region[key] for key in ("class", "log", "offset", "index")}
                break
            damage.append(region)
        if error is not None:
            answer: Json = {"outcome": "reject", "records": records, "torn": None, "error": error}
        else:
            try:
                torn = reference.torn_tail(path)
            except BinlogError:
                torn = None  # the reference cannot place the commit point: the records tell the disagreement
            outcome = "accept" if torn is None else "recovered"
            answer = {"outcome": outcome, "records": records, "torn": torn, "error": None}
        return {**answer, "damage": damage} if tolerant else answer

    def read_split(self, path: str, log: int, start: int, stop: int) -> Json:
        raise serve.Unsupported("the Spark data source plans its own splits")

    def write(self, path: str, spec: Json) -> Json:
        raise serve.Unsupported("the Spark data source does not write")

    def recover(self, path: str) -> Json:
        raise serve.Unsupported("the Spark data source does not recover")


def record(row: Row) -> Json:
    stamp = row["timestamp_us"]
    return {
        "log": unsigned(row["log"], U32),
        "offset": u64(row["offset"]),
        "index": u64(row["index"]),
        "asqn": str(row["asqn"]),
        "timestamp_us": None if stamp is None else str(stamp),
        "payload": bytes(row["payload"]).hex(),
        # Version 1 records, and only they, have no timestamp.
        "checked": stamp is not None,
    }


def damaged(row: Row) -> Json:
    problem = row["_error"]
    return {
        "class": problem["error_class"],
        "log": unsigned(row["log"], U32),
        "offset": u64(row["offset"]),
        "index": u64(row["index"]),
        "bytes_skipped": u64(problem["bytes_skipped"]),
        "resumed_index": u64(problem["resume_index"]),
    }


def walk_positions(rows: list[Row]) -> Callable[[Row], tuple[int, int]]:
    """Where a walk of the log meets each row: (log number, offset).

    A broken chain comes before the segment it names. R-39's bad_header names
    the slot in the header, but the walk meets it at the commit point: before
    the segment's first record whose index is at least the walk's expected
    index there (records of a finished segment's tail lie beyond it), or at the
    segment's end.
    """
    records = [row for row in rows if row["_error"] is None]
    checks = {unsigned(row["log"], U32) for row in rows if _r39(row)}

    def position(row: Row) -> tuple[int, float]:
        log = unsigned(row["log"], U32)
        offset = unsigned(row["offset"])
        problem = row["_error"]
        if problem is not None and problem["error_class"] == "chain_broken":
            offset = None
        elif _r39(row):
            expected = unsigned(row["index"])
            beyond = [
                at
                for other in records
                if other["log"] == row["log"] and expected is not None and unsigned(other["index"]) >= expected
                if (at := unsigned(other["offset"])) is not None
            ]
            offset = min(beyond) - 1 if beyond else SEGMENT_END
        elif problem is not None and offset is not None and offset < FIRST_RECORD_OFFSET and log - 1 in checks:
            # The successor's header is read by END of the segment before it, ahead of that one's R-39.
            before = position(next(other for other in rows if _r39(other) and other["log"] == log - 1))
            return (before[0], before[1] - 0.5)
        return (-1 if log is None else log, -1 if offset is None else offset)

    return position


def _r39(row: Row) -> bool:
    """A disagreement of R-39: a bad_header naming a slot, with the slot's next index to resume at."""
    problem = row["_error"]
    return problem is not None and problem["error_class"] == "bad_header" and problem["resume_index"] is not None


def stops(region: Json) -> bool:
    """Damage a tolerant read does not step over: a damaged segment header, a file that cannot be read.

    It steps over broken chains, record damage and R-39's bad_header (which
    resumes at the slot's next index).
    """
    if region["class"] == "chain_broken" or region["resumed_index"] is not None:
        return False
    return region["offset"] is None or int(region["offset"]) < FIRST_RECORD_OFFSET


def raised(exc: Exception) -> Json | None:
    """The error object of the openbinlog error a failed Spark read reports, the last one in its text."""
    found = [match for match in RENDERED_ERROR.finditer(str(exc)) if match["cls"] in ERROR_CLASSES]
    if not found:
        return None
    where = {name: int(value) for name, value in WHERE.findall(found[-1]["where"] or "")}
    return {
        "class": found[-1]["cls"],
        "log": where.get("log"),
        "offset": u64(where.get("offset")),
        "index": u64(where.get("index")),
    }


def main() -> int:
    # Spark's JVM and its Python workers inherit standard output: they get standard error, the protocol keeps the rest.
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = protocol
    testee = SparkTestee()
    try:
        return serve.main(testee)
    finally:
        testee.close()


if __name__ == "__main__":
    sys.exit(main())
