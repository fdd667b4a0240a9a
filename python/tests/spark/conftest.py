"""One local Spark for the whole Spark test folder (starting one costs about 12 s)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# Without pyspark or a Java runtime these tests cannot run at all: collect none of them.
if importlib.util.find_spec("pyspark") is None or shutil.which("java") is None:
    collect_ignore_glob = ["test_*.py"]
else:
    from pyspark.sql import SparkSession

    import openbinlog_spark

# The JVM source (spark_udfs/jvm), built by `make jvm` before the tests run.
JVM_JAR = Path(__file__).resolve().parents[3] / "build" / "jvm" / "openbinlog.jar"
# What s3a:// needs on the classpath (hadoop-aws and the AWS SDK modules), fetched by `make unit` for test_jvm_s3.
S3_JARS = JVM_JAR.parent / "s3"


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    # Workers must run this interpreter (the one with openbinlog installed) and stay on loopback.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    session = (
        SparkSession.builder.master("local[2]")
        .appName("openbinlog-spark-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.python.filterPushdown.enabled", "true")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.python.worker.reuse", "true")
        .config("spark.jars", ",".join(str(jar) for jar in [JVM_JAR, *sorted(S3_JARS.glob("*.jar"))]))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    openbinlog_spark.register(session)
    yield session
    session.stop()
