"""Read throughput of the ``binlog`` data source against the single-process reference reader.

``measure()`` writes a log (or uses the one given), reads it with
``openbinlog.Reader`` in this process, then with Spark on ``local[1]`` and
``local[2]``, and returns records per second for each. The Spark figures time
full scans into Spark's ``noop`` sink after one warm-up scan, so they
include the Arrow transfer to the JVM but not the start of Python workers.
All sessions share this process's JVM and CPUs: ``local[1]`` is one task
slot, yet its Python worker and the JVM busy about 1.5 cores between them.
``make bench`` binds each master to its own cores for the R2 and R3 bars.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

import openbinlog_spark
from openbinlog import Reader, Writer

from .source import BinlogDataSource, BinlogReader

BATCH = 1_000


class PrebuiltBatches(DataSource):
    """``binlog-prebuilt``: the first Arrow batch the ``binlog`` source makes of the log at ``path``,
    handed to Spark again and again until ``records`` rows have gone, in one task.

    What a scan of it costs is Spark's own work per row for the source's
    schema (the Arrow transfer and the conversion to rows), with no reading
    and no decoding: the ceiling of the ``binlog`` source on one core.
    """

    @classmethod
    def name(cls) -> str:
        return "binlog-prebuilt"

    def __init__(self, options: Mapping[str, str]) -> None:
        super().__init__(dict(options))
        self.source = BinlogDataSource({"path": options["path"]})
        self.records = int(options["records"])

    def schema(self) -> StructType:
        return self.source.schema()

    def reader(self, schema: StructType) -> DataSourceReader:
        source = self.source.reader(schema)
        assert isinstance(source, BinlogReader)
        return _PrebuiltReader(source, self.records)


class _PrebuiltReader(DataSourceReader):
    def __init__(self, source: BinlogReader, records: int) -> None:
        self.source = source
        self.records = records

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(None)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        first = next(batch for part in self.source.partitions() for batch in self.source.read(part) if batch.num_rows)
        sent = 0
        while sent < self.records:
            batch = first if self.records - sent >= first.num_rows else first.slice(0, self.records - sent)
            sent += batch.num_rows
            yield batch


def write_log(directory: Path, records: int, payload_size: int, segment_bytes: int) -> None:
    payload = os.urandom(payload_size)
    with Writer(directory, durability="os", max_segment_bytes=segment_bytes) as writer:
        for first in range(0, records, BATCH):
            writer.append_many([payload] * min(BATCH, records - first))


def reference_rate(directory: Path, repeats: int) -> tuple[int, float]:
    best = 0.0
    for _ in range(repeats):
        started = time.perf_counter()
        with Reader(directory) as reader:
            count = sum(1 for _ in reader)
        best = max(best, count / (time.perf_counter() - started))
    return count, best


def spark_rate(directory: Path, master: str, expected: int, options: dict[str, str], repeats: int) -> float:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = (
        SparkSession.builder.master(master)
        .appName(f"openbinlog-bench-{master}")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
    try:
        spark.sparkContext.setLogLevel("ERROR")
        openbinlog_spark.register(spark)
        df = spark.read.format("binlog").options(**options).load(str(directory))
        assert df.count() == expected, "the data source and the reference reader disagree"
        best = 0.0
        for _ in range(repeats):
            started = time.perf_counter()
            df.write.format("noop").mode("overwrite").save()
            best = max(best, expected / (time.perf_counter() - started))
        return best
    finally:
        spark.stop()


def measure(
    records: int = 1_000_000,
    payload_size: int = 200,
    *,
    directory: str | os.PathLike[str] | None = None,
    segment_bytes: int = 64 << 20,
    masters: tuple[str, ...] = ("local[1]", "local[2]"),
    options: dict[str, str] | None = None,
    repeats: int = 3,
) -> dict[str, float]:
    """Records per second: ``reference`` (one process, ``openbinlog.Reader``) and one entry per Spark master.

    ``directory``: an existing log to read; otherwise a log of ``records``
    records of ``payload_size`` bytes is written to a temporary directory
    (segments of ``segment_bytes``) and removed afterwards. Each figure is the
    best of ``repeats`` timed scans: on a shared machine the best is the least disturbed.
    """
    with tempfile.TemporaryDirectory(prefix="binlog-bench-") as scratch:
        path = Path(directory) if directory is not None else Path(scratch) / "log"
        if directory is None:
            write_log(path, records, payload_size, segment_bytes)
        count, rate = reference_rate(path, repeats)
        rates = {"records": float(count), "reference": rate}
        for master in masters:
            rates[master] = spark_rate(path, master, count, options or {}, repeats)
        return rates


if __name__ == "__main__":
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    for name, value in measure(size).items():
        print(f"{name:>10}: {value:,.0f}" + ("" if name == "records" else " rec/s"))
