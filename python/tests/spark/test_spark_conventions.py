"""Spark's conventions, through a real local Spark: its settings as defaults of every read, S3 settings of the
Hadoop configuration, PATH_NOT_FOUND, the corrupt-record column, the session time zone, filter pushdown without an
order of calls, and a Python worker without openbinlog.

A Python data source is handed nothing but its options: ``register`` reads the session's settings, so each test
that changes one registers again, and registers the session's own once more when it is done.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from binlog_frames import collected, planned, reference, strict_reference
from logtools import flip_bit, segment
from pyspark.errors import AnalysisException, PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.datasource import GreaterThan, In
from pyspark.sql.types import StructType
from test_spark_s3 import BUCKET, REGION, bucket, endpoint
from test_spark_semantics import build_log, damaged_log

import openbinlog_spark
from openbinlog import BinlogError
from openbinlog_spark.listing import PathNotFoundError
from openbinlog_spark.options import OptionError, ReadOptions
from openbinlog_spark.pruning import row_bounds, zoned
from openbinlog_spark.source import PUSHDOWN_CONF, BinlogDataSource, BinlogPushdownReader
from openbinlog_spark.storage import s3_options

__all__ = ["bucket", "endpoint"]  # the S3 server of test_spark_s3, one for this module

WORKER_LOGGING = "spark.sql.pyspark.worker.logging.enabled"
RECORD_COLUMNS = "log int, offset long, index long, asqn long, timestamp timestamp, payload binary, file string"


@contextmanager
def session_settings(spark: SparkSession, **settings: str) -> Iterator[None]:
    """Spark settings (``spark.sql.files.maxPartitionBytes`` as ``spark_sql_files_maxPartitionBytes``) set and
    the source registered under them; the session's own again afterwards."""
    keys = {name.replace("_", "."): value for name, value in settings.items()}
    before = {key: spark.conf.get(key, None) for key in keys}
    for key, value in keys.items():
        spark.conf.set(key, value)
    try:
        openbinlog_spark.register(spark)
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
        openbinlog_spark.register(spark)


@contextmanager
def hadoop_settings(spark: SparkSession, settings: dict[str, str]) -> Iterator[None]:
    """Settings of the context's Hadoop configuration (as ``spark.hadoop.*`` makes them at start)."""
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    for key, value in settings.items():
        conf.set(key, value)
    try:
        openbinlog_spark.register(spark)
        yield
    finally:
        for key in settings:
            conf.unset(key)
        openbinlog_spark.register(spark)


# -- spark.sql.files.*: defaults under the options of a read ------------------------------------------------------


def test_spark_files_settings_plan_the_read_unless_the_read_says_otherwise(spark: SparkSession, tmp_path: Path) -> None:
    directory = build_log(tmp_path / "log")
    data = sum(path.stat().st_size - 256 for path in directory.glob("*.dat"))
    split = str(data // 5)
    expected = planned(directory, maxPartitionBytes=split, openCostInBytes="1k", minPartitions=1)[2]
    assert expected >= 5
    default = spark.read.format("binlog").load(str(directory)).rdd.getNumPartitions()
    assert default != expected
    with session_settings(
        spark,
        spark_sql_files_maxPartitionBytes=split,
        spark_sql_files_openCostInBytes="1k",
        spark_sql_files_minPartitionNum="1",
    ):
        assert spark.read.format("binlog").load(str(directory)).rdd.getNumPartitions() == expected
        own = spark.read.format("binlog").option("maxPartitionBytes", "1g").load(str(directory))
        assert own.rdd.getNumPartitions() == 1


def test_spark_max_partition_num_caps_the_tasks_unless_the_read_says_otherwise(
    spark: SparkSession, tmp_path: Path
) -> None:
    directory = build_log(tmp_path / "log")
    data = sum(path.stat().st_size - 256 for path in directory.glob("*.dat"))
    split = dict(maxPartitionBytes=str(data // 5), openCostInBytes="1k", minPartitions=1)
    assert planned(directory, **split)[2] >= 5
    capped_records, _, capped = planned(directory, **split, maxPartitionNum=2)
    assert capped == 2 and capped_records == planned(directory, **split)[0]
    with session_settings(
        spark,
        spark_sql_files_maxPartitionBytes=split["maxPartitionBytes"],
        spark_sql_files_openCostInBytes="1k",
        spark_sql_files_minPartitionNum="1",
        spark_sql_files_maxPartitionNum="2",
    ):
        df = spark.read.format("binlog").load(str(directory))
        assert df.rdd.getNumPartitions() == 2
        assert collected(df) == collected(
            spark.read.format("binlog").option("maxPartitionNum", "100").load(str(directory))
        )
        own = spark.read.format("binlog").option("maxPartitionNum", "3").load(str(directory))
        assert own.rdd.getNumPartitions() == 3


@pytest.mark.parametrize(
    ("option", "value"),
    [("maxPartitionNum", "0"), ("maxPartitionNum", "two"), ("minPartitions", "0"), ("maxRecordsPerTrigger", "1.5")],
)
def test_a_count_option_that_is_not_a_positive_whole_number_is_refused_naming_it(option: str, value: str) -> None:
    with pytest.raises(OptionError, match=f"option {option}: "):
        ReadOptions.parse({option: value})


def test_spark_ignore_corrupt_and_missing_files_settings_apply_unless_the_read_says_otherwise(
    spark: SparkSession, tmp_path: Path
) -> None:
    directory = build_log(tmp_path / "log")
    flip_bit(segment(directory, 2), 40)  # inside the log id: the header checksum fails, bad_header
    paths = [str(directory), str(tmp_path / "gone")]
    with session_settings(spark, spark_sql_files_ignoreCorruptFiles="true", spark_sql_files_ignoreMissingFiles="true"):
        records, damages = collected(spark.read.format("binlog").load(paths))
        assert (len(records), damages) == (80, [])  # segment 1's: the damaged header still ends the walk
        strict = spark.read.format("binlog").option("ignoreCorruptFiles", "false").load(str(directory))
        assert [damage[:2] for damage in collected(strict)[1]] == [("bad_header", 2)]
    assert [damage[:2] for damage in collected(spark.read.format("binlog").load(str(directory)))[1]] == [
        ("bad_header", 2)
    ]


# -- S3 through the Hadoop configuration --------------------------------------------------------------------------


def test_s3_credentials_and_endpoint_come_from_the_hadoop_configuration_without_fs_options(
    spark: SparkSession, tmp_path: Path, endpoint: str, bucket: object
) -> None:
    directory = build_log(tmp_path / "log", records=30, cut_every=10)
    bucket.put(str(directory) + "/", f"{BUCKET}/hadoop/", recursive=True)
    address = endpoint.removeprefix("http://")
    settings = {
        "fs.s3a.access.key": "testing",
        "fs.s3a.secret.key": "testing",
        "fs.s3a.endpoint": "127.0.0.1:1",  # nothing listens: the bucket's own endpoint must win
        f"fs.s3a.bucket.{BUCKET}.endpoint": address,
        "fs.s3a.connection.ssl.enabled": "false",  # an endpoint without a scheme is then http://
        "fs.s3a.path.style.access": "true",
        "fs.s3a.endpoint.region": REGION,
    }
    with hadoop_settings(spark, settings):
        df = spark.read.format("binlog").load(f"s3a://{BUCKET}/hadoop")
        assert collected(df) == (strict_reference(directory), [])
        # A read with fs.* options uses them alone.
        given = spark.read.format("binlog").option("fs.endpoint_url", endpoint).option("fs.key", "testing")
        assert given.option("fs.secret", "testing").load(f"s3://{BUCKET}/hadoop").count() == 30


def test_s3a_settings_become_s3fs_options_per_bucket() -> None:
    settings = {
        "access.key": "AK",
        "secret.key": "SK",
        "endpoint": "storage.example:9000",
        "bucket.logs.eu.endpoint": "https://eu.example",
        "bucket.logs.eu.path.style.access": "true",
        "aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
    }
    assert s3_options(settings, "other") == {
        "key": "AK",
        "secret": "SK",
        "endpoint_url": "https://storage.example:9000",
    }
    assert s3_options(settings, "logs.eu") == {
        "key": "AK",
        "secret": "SK",
        "endpoint_url": "https://eu.example",
        "config_kwargs": {"s3": {"addressing_style": "path"}},
    }
    anonymous = {"aws.credentials.provider": "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"}
    assert s3_options(anonymous, "public") == {"anon": True}
    assert s3_options({}, "any") == {}


# -- PATH_NOT_FOUND -----------------------------------------------------------------------------------------------


def test_a_missing_path_is_spark_path_not_found(spark: SparkSession, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    # Spark's own sources raise it as the condition of the AnalysisException.
    with pytest.raises(AnalysisException) as parquet:
        spark.read.parquet(str(missing))
    assert parquet.value.getCondition() == "PATH_NOT_FOUND"
    # A Python data source's error reaches the user inside PYTHON_DATA_SOURCE_ERROR (PySpark passes a planner's
    # errors on as text): the message carries the condition, its SQLSTATE, and the one line that raised it.
    for path in (str(missing), str(tmp_path / "nothing*")):
        with pytest.raises(AnalysisException) as raised:
            spark.read.format("binlog").load(path)
        assert raised.value.getCondition() == "PYTHON_DATA_SOURCE_ERROR"
        message = str(raised.value)
        assert f"[PATH_NOT_FOUND] Path does not exist: {path}. SQLSTATE: 42K03" in message
        assert message.count('File "') == 1, message
    # In Python, without Spark: an AnalysisException with the condition, and the reference reader's error.
    with pytest.raises(PathNotFoundError) as direct:
        BinlogDataSource({"path": str(missing)}).schema()
    assert isinstance(direct.value, AnalysisException) and isinstance(direct.value, BinlogError)
    assert (direct.value.getCondition(), direct.value.getSqlState(), direct.value.error_class) == (
        "PATH_NOT_FOUND",
        "42K03",
        "io_error",
    )
    assert direct.value.getMessageParameters() == {"path": str(missing)}


# -- the corrupt-record column ------------------------------------------------------------------------------------


def test_corrupt_record_column_as_spark_json_reader_keeps_it(spark: SparkSession, tmp_path: Path) -> None:
    directory = damaged_log(tmp_path, "payload_bit_flip")
    records, damages = reference(directory)
    assert damages
    # The source's own schema always has both damage columns (the documented contract; see the README).
    assert {"_corrupt_record", "_error"} <= set(spark.read.format("binlog").load(str(directory)).columns)
    # A schema given without the column (nor _error): damage is dropped, as Spark's JSON reader does.
    plain = spark.read.format("binlog").schema(RECORD_COLUMNS).load(str(directory))
    assert collected(plain) == (records, [])
    # A schema given with it: one row per damaged region, with its bytes.
    kept = spark.read.format("binlog").schema(RECORD_COLUMNS + ", _corrupt_record binary").load(str(directory))
    assert _count_by_damage(kept, "_corrupt_record") == {True: len(damages), False: len(records)}
    with pytest.raises(PySparkException, match="holds the damaged bytes, so its type is binary"):
        spark.read.format("binlog").schema(RECORD_COLUMNS + ", _corrupt_record string").load(str(directory)).count()
    with session_settings(spark, spark_sql_columnNameOfCorruptRecord="_damaged"):
        named = spark.read.format("binlog").load(str(directory))
        assert "_corrupt_record" not in named.columns
        assert _count_by_damage(named, "_damaged") == {True: len(damages), False: len(records)}


def _count_by_damage(df: DataFrame, column: str) -> dict[bool, int]:
    counted = df.groupBy(F.col(column).isNotNull().alias("damage")).count().collect()
    return {row["damage"]: row["count"] for row in counted}


# -- the session time zone ----------------------------------------------------------------------------------------


def test_times_without_an_offset_are_in_the_session_time_zone(spark: SparkSession, tmp_path: Path) -> None:
    directory = build_log(tmp_path / "log")
    for log, hour in ((1, 3), (2, 9), (3, 11)):  # 2021-01-01 at 03:00, 09:00 and 11:00 UTC
        moment = datetime(2021, 1, 1, hour, tzinfo=UTC).timestamp()
        os.utime(segment(directory, log), (moment, moment))
    after = "2021-01-01T00:00:00"  # 05:00 UTC in New York

    def logs(reader_options: dict[str, str]) -> set[int]:
        reader = spark.read.format("binlog").option("modifiedAfter", after)
        for key, value in reader_options.items():
            reader = reader.option(key, value)
        return {row.log for row in reader.load(str(directory)).select("log").distinct().collect()}

    def spark_files() -> set[str]:
        found = spark.read.format("binaryFile").option("pathGlobFilter", "*.dat").option("modifiedAfter", after)
        return {os.path.basename(row.path) for row in found.load(str(directory)).select("path").collect()}

    with session_settings(spark, spark_sql_session_timeZone="America/New_York"):
        assert logs({}) == {2, 3}
        assert logs({"timeZone": "UTC"}) == {1, 2, 3}
        # Measured: Spark's own file sources take the option in the session time zone too, but compare it with
        # the file's time as a wall clock there read as UTC, which moves the cut by the zone's offset once
        # more (to 10:00 UTC here). This source keeps the cut at the instant the option names (the README).
        assert spark_files() == {"00000003.dat"}
        # Record times are instants: the session time zone does not move them.
        assert collected(spark.read.format("binlog").load(str(directory))) == (strict_reference(directory), [])


def test_pushed_times_without_a_zone_are_taken_in_the_session_time_zone() -> None:
    zone = ZoneInfo("America/New_York")
    naive = datetime(2024, 1, 1)
    micros = int(datetime(2024, 1, 1, 5, tzinfo=UTC).timestamp()) * 1_000_000
    assert row_bounds(zoned([GreaterThan(("timestamp",), naive)], zone)).time_low_us == micros
    assert row_bounds([GreaterThan(("timestamp",), naive)]).time_low_us == micros - 5 * 3600 * 1_000_000
    assert zoned([In(("timestamp",), (naive,))], zone)[0].value == (naive.replace(tzinfo=zone),)
    schema = StructType.fromDDL(RECORD_COLUMNS)
    reader = BinlogPushdownReader(ReadOptions(time_zone="America/New_York"), schema, prune=True)
    reader.pushFilters([GreaterThan(("timestamp",), naive)])
    assert reader.filters == [GreaterThan(("timestamp",), naive.replace(tzinfo=zone))]
    assert ReadOptions.parse({"timeZone": "+02:00", "modifiedAfter": "2024-01-01T02:00:00"}).modified_after == (
        datetime(2024, 1, 1, tzinfo=UTC).timestamp()
    )
    with pytest.raises(OptionError, match="not a time zone"):
        ReadOptions.parse({"timeZone": "Mars/Olympus"})


# -- filter pushdown without an order of calls --------------------------------------------------------------------


def test_pushdown_follows_the_setting_when_the_query_is_planned_not_when_register_ran(
    spark: SparkSession, tmp_path: Path
) -> None:
    directory = str(build_log(tmp_path / "log"))
    try:
        # Registered with pushdown on, turned off since: Spark would refuse a reader with pushFilters.
        spark.conf.set(PUSHDOWN_CONF, "false")
        assert spark.read.format("binlog").load(directory).where(F.col("index") >= 233).count() == 8
        # Registered with pushdown off, turned on since: Spark makes a pushdown pass, which the source logs.
        openbinlog_spark.register(spark)
        spark.conf.set(PUSHDOWN_CONF, "true")
        spark.conf.set(WORKER_LOGGING, "true")
        assert spark.read.format("binlog").load(directory).where(F.col("index") >= 231).count() == 10
        logs = spark.tvf.python_worker_logs().where(F.col("logger") == "openbinlog_spark.pushdown")
        assert any("value=231)" in row.msg for row in logs.collect())
    finally:
        spark.conf.unset(WORKER_LOGGING)
        spark.conf.set(PUSHDOWN_CONF, "true")
        openbinlog_spark.register(spark)


# -- a Python worker without openbinlog ---------------------------------------------------------------------------


WITHOUT_OPENBINLOG = """#!{python}
# A Python for Spark's workers in which openbinlog cannot be imported by the workers named: {blocked}
import importlib.abc
import runpy
import sys

BLOCKED = {blocked!r}


class Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("openbinlog", "openbinlog_spark") and set(sys.argv) & set(BLOCKED):
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, Missing())
module = sys.argv[2]  # python -m pyspark.daemon <worker module>
sys.argv = [module, *sys.argv[3:]]
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


@pytest.mark.parametrize(
    "blocked",
    [
        pytest.param(("pyspark.worker",), id="executors"),
        pytest.param(("pyspark.worker", "pyspark.sql.worker.create_data_source"), id="planner"),
    ],
)
def test_a_python_worker_without_openbinlog_says_what_to_install(
    spark: SparkSession, tmp_path: Path, blocked: tuple[str, ...]
) -> None:
    directory = str(build_log(tmp_path / "log", records=10))
    python = tmp_path / "python"
    python.write_text(WITHOUT_OPENBINLOG.format(python=sys.executable, blocked=blocked))
    python.chmod(0o755)
    context = spark.sparkContext
    own = context.pythonExec
    context.pythonExec = str(python)  # the Python the source registered now runs its workers with
    try:
        openbinlog_spark.register(spark)
    finally:
        context.pythonExec = own
    try:
        with pytest.raises(PySparkException) as raised:
            spark.read.format("binlog").load(directory).count()
    finally:
        openbinlog_spark.register(spark)
    message = str(raised.value)
    assert "ModuleNotFoundError: No module named 'openbinlog_spark' in the Python worker" in message, message
    assert "pip install 'openbinlog[spark]'" in message
    assert spark.read.format("binlog").load(directory).count() == 10
