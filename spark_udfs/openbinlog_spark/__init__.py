"""openbinlog_spark: BinLog segments as Spark DataFrames.

``register(spark)`` registers the ``binlog`` data source; then
``spark.read.format("binlog").load(path)`` reads every committed record of
the logs under ``path`` (local paths or fsspec URLs such as ``s3://``), and
``spark.readStream.format("binlog").load(log_directory)`` tails a live log.
``corruption_report(spark, path)`` lists every damaged region. The UDFs in
``openbinlog_spark.udfs`` decode segments and records held in a binary
column.
"""

from __future__ import annotations

from typing import Any

from openbinlog._optional import require

# The modules of the spark extra that this package imports as it loads, imported first so that a missing one names
# the extra to install (the others are imported where used: s3fs by fsspec for s3://, zstandard for .zst segments).
for _module in ("pyspark", "pyarrow", "numpy", "fsspec"):
    require(_module, "spark", "the Spark data source openbinlog_spark")

from pyspark.sql import DataFrame, SparkSession  # noqa: E402

from .source import PUSHDOWN_CONF, BinlogDataSource  # noqa: E402

__all__ = ["BinlogDataSource", "corruption_report", "register"]


def register(spark: SparkSession, **default_options: Any) -> type[BinlogDataSource]:
    """Register the ``binlog`` format with ``spark``; return the class registered.

    The class carries the session's facts the planner cannot ask Spark for:
    whether filter pushdown is enabled (``spark.sql.python.filterPushdown.enabled``,
    read now: call ``register`` again after changing it) and the default
    parallelism (the default of the ``minPartitions`` option). Keyword
    arguments become default options of every read.
    """
    defaults = {"minPartitions": str(spark.sparkContext.defaultParallelism)}
    defaults.update({key: str(value) for key, value in default_options.items()})
    pushdown = str(spark.conf.get(PUSHDOWN_CONF, "false")).lower() == "true"
    # Defined here, not at module level, so cloudpickle ships it by value with these class attributes.
    registered = type(
        "BinlogDataSource",
        (BinlogDataSource,),
        {"DEFAULT_OPTIONS": defaults, "PUSHDOWN": pushdown, "__qualname__": "register.<locals>.BinlogDataSource"},
    )
    spark.dataSource.register(registered)
    return registered


def corruption_report(spark: SparkSession, path: str | list[str], **options: Any) -> DataFrame:
    """Every damaged region under ``path``: file, log, offset, index, error class, message, bytes skipped."""
    register(spark)
    reader = spark.read.format("binlog").option("report", "true")
    for key, value in options.items():
        reader = reader.option(key, str(value))
    return reader.load(path)
