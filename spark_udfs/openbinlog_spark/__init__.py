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

from .options import session_defaults  # noqa: E402
from .source import PUSHDOWN_CONF, BinlogDataSource, guarded_class  # noqa: E402
from .storage import hadoop_s3_settings  # noqa: E402

__all__ = ["BinlogDataSource", "corruption_report", "register"]

CREDENTIAL_PROVIDERS = "hadoop.security.credential.provider.path"
S3A_SECRETS = ("fs.s3a.access.key", "fs.s3a.secret.key", "fs.s3a.session.token")


def _setting(spark: SparkSession, key: str) -> str | None:
    """The session's value of ``key`` (its default when not set), None when it has none."""
    try:
        value = spark.conf.get(key)
    except Exception:  # a setting this Spark does not know
        return None
    return None if value is None else str(value)


def _hadoop_s3(spark: SparkSession) -> dict[str, str]:
    """The ``fs.s3a.*`` settings of the session's Hadoop configuration (``spark.hadoop.fs.s3a.*`` given at
    start, or set on the session since), with secrets kept by a Hadoop credential provider; nothing where
    the session has no JVM of its own (Spark Connect)."""
    try:
        conf = spark._jsparkSession.sessionState().newHadoopConf()
        entries = {str(key): str(value) for key, value in conf.getValByRegex(r"^(spark\.hadoop\.)?fs\.s3a\.").items()}
        if conf.get(CREDENTIAL_PROVIDERS):
            for name in S3A_SECRETS:
                secret = conf.getPassword(name)
                if secret is not None:
                    entries[name] = str(spark.sparkContext._jvm.java.lang.String(secret))  # type: ignore[union-attr]
    except Exception:  # no JVM to ask (Spark Connect): s3fs finds credentials as the AWS SDK does
        return {}
    return hadoop_s3_settings(entries)


def register(spark: SparkSession, **default_options: Any) -> type[BinlogDataSource]:
    """Register the ``binlog`` format with ``spark``; return the data source class it reads with.

    A Python data source is handed nothing but its options, so the class
    carries what the session says, read now (call ``register`` again after
    changing a setting): Spark's settings that are options here
    (``spark.sql.files.maxPartitionBytes``, ``openCostInBytes``,
    ``minPartitionNum``, ``maxPartitionNum``, ``ignoreCorruptFiles``, ``ignoreMissingFiles``,
    ``spark.sql.session.timeZone``, ``spark.sql.columnNameOfCorruptRecord``),
    the S3A settings of the Hadoop configuration (for reads given no ``fs.*``
    option), and whether filter pushdown is enabled (used only where Spark's
    planner does not say). Keyword arguments become default options of every
    read, over the session's settings; a read's own options override both.

    The class is registered behind an import guard (``guarded_class``): a
    Python worker without openbinlog says so.
    """
    defaults = session_defaults(lambda key: _setting(spark, key), spark.sparkContext.defaultParallelism)
    defaults.update({key: str(value) for key, value in default_options.items()})
    pushdown = str(spark.conf.get(PUSHDOWN_CONF, "false")).lower() == "true"
    # Defined here, not at module level, so cloudpickle ships it by value with these class attributes.
    registered = type(
        "BinlogDataSource",
        (BinlogDataSource,),
        {
            "DEFAULT_OPTIONS": defaults,
            "PUSHDOWN": pushdown,
            "HADOOP_S3": _hadoop_s3(spark),
            "__qualname__": "register.<locals>.BinlogDataSource",
        },
    )
    spark.dataSource.register(guarded_class(registered))
    return registered


def corruption_report(spark: SparkSession, path: str | list[str], **options: Any) -> DataFrame:
    """Every damaged region under ``path``: file, log, offset, index, error class, message, bytes skipped."""
    register(spark)
    reader = spark.read.format("binlog").option("report", "true")
    for key, value in options.items():
        reader = reader.option(key, str(value))
    return reader.load(path)
