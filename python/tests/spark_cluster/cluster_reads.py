"""The reads the cluster tests make twice, in local mode and on the cluster, and what each returns."""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from binlog_frames import DamageRow, Record, collected_by_directory, log_of_logs, split_options
from logtools import segment
from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from test_spark_semantics import damaged_log

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
# A handful of golden fixtures: valid logs (several segments, gzip, legacy version 1, an open finished segment)
# and rejected ones (record damage, a broken chain, a hostile length, a damaged header).
FIXTURE_NAMES = (
    "basic",
    "four_segments",
    "gzip_sealed_segment",
    "legacy_cutover_chain",
    "finished_segment_open",
    "last_record_bit_flip",
    "foreign_log_id",
    "hostile_length_4gib",
    "header_checksum_mismatch",
)
LOG_OF_LOGS_RECORDS = 600
SPLITS = 7
# Small logs: a tiny open cost and four tasks put reads on both executors.
SPREAD = {"openCostInBytes": "1", "minPartitions": "4"}
# How openbinlog's errors render: "PATH: MESSAGE (log 2, offset 3456, index 101) [checksum_mismatch]".
RENDERED_ERROR = re.compile(
    r"(?P<type>[A-Za-z]+Error): (?P<path>/[^\s:]+): (?P<message>[^\n]*?) "
    r"\(log (?P<log>\d+), offset (?P<offset>\d+), index (?P<index>\d+)\) \[(?P<cls>[a-z_]+)\]"
)

TypedError = tuple[str, str, str, int, int, int, str]  # type, path, message, log, offset, index, class


@dataclass(frozen=True)
class Read:
    name: str
    paths: tuple[str, ...]
    options: dict[str, str] = field(default_factory=dict)
    format: str = "binlog"  # or "binlog-jvm", the JVM source (spark_udfs/jvm), which spark.jars ships to executors


@dataclass(frozen=True)
class Outcome:
    """Records and damage rows per log directory, the task count, the row count, or the error the read raised."""

    rows: dict[str, tuple[list[Record], list[DamageRow]]]
    partitions: int
    count: int | None
    error: TypedError | None


def reads(root: Path) -> list[Read]:
    """Build the logs under ``root`` (fixtures are copied: another run may regenerate fixtures/ meanwhile)."""
    for name in FIXTURE_NAMES:
        shutil.copytree(FIXTURES / name, root / "fixtures" / name)
    # Three segments, a damaged record header in the second: one damage row, so that the error of a FAILFAST read
    # is the same whichever task meets it first.
    damaged = damaged_log(root, "record_header_bit_flip")
    logs = log_of_logs(root / "log_of_logs", LOG_OF_LOGS_RECORDS)  # sealed segment 1 with its sparse index
    split = {key: str(value) for key, value in split_options(segment(logs, 1).stat().st_size, SPLITS).items()}
    return [
        Read("fixtures", tuple(str(root / "fixtures" / name) for name in FIXTURE_NAMES), SPREAD),
        Read("permissive", (str(damaged),), SPREAD),
        Read("dropmalformed", (str(damaged),), {**SPREAD, "mode": "DROPMALFORMED"}),
        Read("failfast", (str(damaged),), {**SPREAD, "mode": "FAILFAST"}),
        Read("split", (str(segment(logs, 1)),), split),
        # The JVM source: parts of 16 KiB put tasks on both executors.
        Read("jvm-permissive", (str(damaged),), {"maxPartitionBytes": "16k"}, "binlog-jvm"),
        Read("jvm-log-of-logs", (str(logs),), {"maxPartitionBytes": "8k", "mode": "FAILFAST"}, "binlog-jvm"),
    ]


def typed_error(text: str) -> TypedError | None:
    """The last openbinlog error rendered in a failed job's text (Spark wraps the task's Python traceback)."""
    found = list(RENDERED_ERROR.finditer(text))
    if not found:
        return None
    last = found[-1]
    return (
        last["type"],
        last["path"],
        last["message"],
        int(last["log"]),
        int(last["offset"]),
        int(last["index"]),
        last["cls"],
    )


def outcome(spark: SparkSession, read: Read) -> Outcome:
    paths: str | list[str] = read.paths[0] if len(read.paths) == 1 else list(read.paths)
    df = spark.read.format(read.format).options(**read.options).load(paths)
    partitions = df.rdd.getNumPartitions()
    try:
        rows = collected_by_directory(df)
        count = df.count()
    except (Py4JJavaError, PySparkException) as exc:
        error = typed_error(str(exc))
        if error is None:
            raise
        return Outcome({}, partitions, None, error)
    return Outcome(rows, partitions, count, None)
