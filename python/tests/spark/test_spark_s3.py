"""Reading logs from S3: a moto server on 127.0.0.1, reached through s3fs with credentials and endpoint as options."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path

import pytest
from binlog_frames import collected, log_of_logs, reference, split_options, strict_reference
from logtools import flip_bit, segment
from moto_s3 import moto_server
from pyspark.sql import DataFrameReader, SparkSession
from test_jvm_paths import BRACE_GLOBS
from test_spark_semantics import build_log

s3fs = pytest.importorskip("s3fs")
pytest.importorskip("moto")

BUCKET = "archive"
REGION = "us-west-2"


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with moto_server(tmp_path_factory.mktemp("moto")) as url:
        yield url


def _options(endpoint: str) -> dict[str, str]:
    return {
        "fs.key": "testing",
        "fs.secret": "testing",
        "fs.endpoint_url": endpoint,
        "fs.client_kwargs": f'{{"region_name": "{REGION}"}}',
    }


def _reader(spark: SparkSession, endpoint: str) -> DataFrameReader:
    reader = spark.read.format("binlog")
    for key, value in _options(endpoint).items():
        reader = reader.option(key, value)
    return reader


@pytest.fixture(scope="module")
def bucket(endpoint: str) -> s3fs.S3FileSystem:
    fs = s3fs.S3FileSystem(
        key="testing", secret="testing", endpoint_url=endpoint, client_kwargs={"region_name": REGION}
    )
    fs.mkdir(BUCKET)
    return fs


def test_log_on_s3_reads_as_the_same_log_on_disk(
    spark: SparkSession, tmp_path: Path, endpoint: str, bucket: s3fs.S3FileSystem
) -> None:
    directory = build_log(tmp_path / "log")
    expected = strict_reference(directory)
    upload = tmp_path / "upload"
    upload.mkdir()
    for path in sorted(directory.glob("*.dat")):
        data = path.read_bytes()
        if path.name == "00000001.dat":
            (upload / (path.name + ".zst")).write_bytes(__import__("zstandard").ZstdCompressor().compress(data))
        elif path.name == "00000002.dat":
            (upload / (path.name + ".gz")).write_bytes(gzip.compress(data))
        else:
            (upload / path.name).write_bytes(data)
    bucket.put(str(upload) + "/", f"{BUCKET}/logs/app=payments/", recursive=True)
    df = _reader(spark, endpoint).load(f"s3://{BUCKET}/logs")
    assert collected(df) == (expected, [])
    assert {row.app for row in df.select("app").distinct().collect()} == {"payments"}
    assert {row.file for row in df.select("file").distinct().collect()} == {
        f"s3://{BUCKET}/logs/app=payments/{name}" for name in ("00000001.dat.zst", "00000002.dat.gz", "00000003.dat")
    }


def test_damaged_log_on_s3_splits_and_reports_like_on_disk(
    spark: SparkSession, tmp_path: Path, endpoint: str, bucket: s3fs.S3FileSystem
) -> None:
    directory = build_log(tmp_path / "log")
    flip_bit(segment(directory, 2), 3000)
    bucket.put(str(directory) + "/", f"{BUCKET}/damaged/", recursive=True)
    reader = _reader(spark, endpoint)
    for key, value in split_options(segment(directory, 2).stat().st_size, 7).items():
        reader = reader.option(key, value)
    df = reader.load(f"s3://{BUCKET}/damaged/00000002.dat")
    assert df.rdd.getNumPartitions() == 7
    records, damages = collected(df)
    expected_records, expected_damages = reference(directory)
    assert records == [record for record in expected_records if record[0] == 2]
    assert damages == [damage for damage in expected_damages if damage[1] == 2] != []


@pytest.mark.spec("R-47", "R-40")
def test_indexes_on_s3_are_read_and_cut_the_splits_of_a_log_of_logs(
    spark: SparkSession, tmp_path: Path, endpoint: str, bucket: s3fs.S3FileSystem
) -> None:
    directory = log_of_logs(tmp_path / "log", 600)
    expected = [record for record in strict_reference(directory) if record[0] == 1]
    bucket.put(str(directory) + "/", f"{BUCKET}/indexed/", recursive=True)
    bucket.put(str(directory / "00000001.dat"), f"{BUCKET}/bare/00000001.dat")
    assert bucket.exists(f"{BUCKET}/indexed/00000001.idx")
    options = split_options(segment(directory, 1).stat().st_size, 7)
    results = {}
    for name in ("indexed", "bare"):
        reader = _reader(spark, endpoint)
        for key, value in options.items():
            reader = reader.option(key, value)
        results[name] = collected(reader.load(f"s3://{BUCKET}/{name}/00000001.dat"))
    # The index listed beside the segment on S3 makes the seven splits exact; without it the same cuts fall
    # inside payloads that hold valid records, and the walk reports it.
    assert results["indexed"] == (expected, [])
    assert "ambiguous_split" in {damage[0] for damage in results["bare"][1]}


def test_brace_globs_on_s3_list_the_logs_they_list_on_disk(
    spark: SparkSession, tmp_path: Path, endpoint: str, bucket: s3fs.S3FileSystem
) -> None:
    """The globs test_jvm_paths reads on disk as Spark lists them, on an object store: the Python source's glob
    lists prefixes one path component at a time there too, the bucket never a glob."""
    for below in {log for logs in BRACE_GLOBS.values() for log in logs}:
        build_log(tmp_path / "apps" / below, records=12, cut_every=5)
    bucket.put(str(tmp_path / "apps") + "/", f"{BUCKET}/apps/", recursive=True)
    for below, logs in BRACE_GLOBS.items():
        files = {row.file for row in _reader(spark, endpoint).load(f"s3://{BUCKET}/apps/{below}").collect()}
        assert {file.rsplit("/", 1)[0] for file in files} == {f"s3://{BUCKET}/apps/{log}" for log in logs}, below
    files = {row.file for row in _reader(spark, endpoint).load(f"s3://{BUCKET}/a?p{{s,x}}/app{{1,2}}").collect()}
    assert {file.rsplit("/", 1)[0] for file in files} == {f"s3://{BUCKET}/apps/app1", f"s3://{BUCKET}/apps/app2"}
