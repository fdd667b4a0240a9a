"""The JVM source reads logs on S3 through Hadoop's S3A, as the same logs on disk.

A moto server on 127.0.0.1 holds the logs; the session's Hadoop configuration (where a cluster's
``spark.hadoop.fs.s3a.*`` settings land) names its endpoint and an IAM user's keys, and moto checks every
request's signature against them. hadoop-aws and the AWS SDK modules it needs are on the classpath
(``make unit`` fetches them); without them these tests fail, they never skip.
"""

from __future__ import annotations

import json
import re
import shutil
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from binlog_frames import collected, log_of_logs, strict_reference
from logtools import flip_bit, segment
from moto_s3 import moto_server
from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession
from pyspark.sql.utils import AnalysisException
from test_jvm_missing import _after_planning, _flip_header_byte, _reader, _reference_to_its_end, _without_file
from test_jvm_paths import _rows
from test_jvm_source import (
    FORMAT,
    INTERVAL,
    _log,
    _reference,
    _scan,
    _strict,
    assert_one_listing_in_one_task,
    many_small_segments,
)
from test_spark_semantics import build_log

from openbinlog import Writer, build_indexes
from openbinlog._format import RECORD_HEADER_SIZE

BUCKET = "logs"
LOCKED = "locked"  # read with a wrong secret key
REGION = "us-west-2"
S3A = "org.apache.hadoop.fs.s3a.S3AFileSystem"
WAIT_S = 120  # an error, not a hang: S3A gives up on a refused request at once


@pytest.fixture(scope="module")
def s3(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A boto3 client of the server; the session's Hadoop configuration points s3a:// at it."""
    jvm = spark._jvm  # type: ignore[attr-defined]
    try:
        jvm.java.lang.Class.forName(S3A, False, jvm.java.lang.Thread.currentThread().getContextClassLoader())
    except Py4JJavaError:
        pytest.fail(f"no {S3A} on the session's classpath: `make unit` fetches hadoop-aws into build/jvm/s3")
    with moto_server(tmp_path_factory.mktemp("moto")) as url:
        root = boto3.client(
            "iam", endpoint_url=url, region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x"
        )
        root.create_user(UserName="reader")
        root.put_user_policy(
            UserName="reader",
            PolicyName="all",
            PolicyDocument=json.dumps(
                {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
            ),
        )
        key = root.create_access_key(UserName="reader")["AccessKey"]
        # From here on moto checks credentials and signatures (its IAM authorization): zero unchecked requests.
        switch = urllib.request.Request(f"{url}/moto-api/reset-auth", data=b"0", headers={"Content-Type": "text/plain"})
        urllib.request.urlopen(switch).close()
        client = boto3.client(
            "s3",
            endpoint_url=url,
            region_name=REGION,
            aws_access_key_id=key["AccessKeyId"],
            aws_secret_access_key=key["SecretAccessKey"],
        )
        for bucket in (BUCKET, LOCKED):
            client.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})
        settings = {
            "fs.s3a.endpoint": url,
            "fs.s3a.endpoint.region": REGION,
            "fs.s3a.path.style.access": "true",
            "fs.s3a.connection.ssl.enabled": "false",
            "fs.s3a.access.key": key["AccessKeyId"],
            "fs.s3a.secret.key": key["SecretAccessKey"],
            f"fs.s3a.bucket.{LOCKED}.secret.key": "not-" + key["SecretAccessKey"],
        }
        hadoop = spark.sparkContext._jsc.hadoopConfiguration()  # type: ignore[union-attr]
        for name, value in settings.items():
            hadoop.set(name, value)
        try:
            yield client
        finally:
            for name in settings:
                hadoop.unset(name)


def _upload(s3: Any, directory: Path, prefix: str, bucket: str = BUCKET) -> str:
    for path in sorted(directory.iterdir()):
        s3.upload_file(str(path), bucket, f"{prefix}/{path.name}")
    return f"s3a://{bucket}/{prefix}"


def _stream_counts(spark: SparkSession, url: str) -> tuple[int, int]:
    """The streams S3A opened and closed so far, of the file system the source reads ``url`` with: the one
    instance Hadoop caches in this JVM, which a local Spark's tasks share."""
    jvm = spark._jvm  # type: ignore[attr-defined]
    fs = jvm.org.apache.hadoop.fs.FileSystem.get(jvm.java.net.URI(url), spark.sparkContext._jsc.hadoopConfiguration())  # type: ignore[union-attr]
    counters = fs.getIOStatistics().counters()
    return int(counters.get("op_open")), int(counters.get("stream_read_close_operations"))


def test_a_log_on_s3_reads_as_on_disk_and_closes_its_streams(spark: SparkSession, tmp_path: Path, s3: Any) -> None:
    log = _log(tmp_path / "log", 2000, segment_bytes=150_000)
    url = _upload(s3, log, "plain")
    frame = spark.read.format(FORMAT).option("maxPartitionBytes", "7k").load(url)
    opened, closed = _stream_counts(spark, url)
    assert collected(frame) == _reference(log)
    now_opened, now_closed = _stream_counts(spark, url)
    assert now_opened - opened == now_closed - closed > 0
    names = sorted(path.name for path in log.glob("*.dat"))
    assert len(names) >= 4
    assert sorted(row.file for row in frame.select("file").distinct().collect()) == [f"{url}/{name}" for name in names]


def test_a_task_lists_a_log_directory_on_s3_once_for_all_its_pieces(
    spark: SparkSession, tmp_path: Path, s3: Any
) -> None:
    """As on disk (test_jvm_source): each piece of a task listed the log's prefix again, a LIST request a piece, so
    that one task reading a log of many small segments made one a segment. Now its pieces start from the task's
    listing, and the ETags it gave, which parts trust (test_a_part_on_s3_opens_no_segment_below_its_own)."""
    log = many_small_segments(tmp_path / "log")
    assert_one_listing_in_one_task(spark, log, _upload(s3, log, "small-segments"))


def test_damage_on_s3_is_the_reference_damage(spark: SparkSession, tmp_path: Path, s3: Any) -> None:
    log = _log(tmp_path / "log", 2000, segment_bytes=150_000)
    flip_bit(segment(log, 2), 3000)
    url = _upload(s3, log, "damaged")
    records, damages = _reference(log)
    assert damages
    for split in ("5k", "64m"):
        frame = spark.read.format(FORMAT).option("maxPartitionBytes", split).load(url)
        got_records, got_damages = collected(frame)
        assert (got_records, sorted(got_damages, key=repr)) == (records, damages)
    failfast = spark.read.format(FORMAT).option("mode", "FAILFAST").load(url)
    expected = _strict(log)
    assert isinstance(expected, str)
    with pytest.raises(Exception, match=rf"BinlogException: {expected} in s3a://{BUCKET}/damaged/00000002\.dat log=2 "):
        failfast.collect()


def test_an_index_range_on_s3_reads_about_the_bytes_of_its_rows(spark: SparkSession, tmp_path: Path, s3: Any) -> None:
    """Several sealed segments with sparse indexes: the read is narrowed to the checked entries around the rows
    (spec index §18.5) by positioned reads, as on disk (test_jvm_source's bar)."""
    directory = tmp_path / "log"
    with Writer(directory, durability="os", max_segment_bytes=1_000_000) as writer:
        for number in range(15_000):
            writer.append(b"%08d" % number + b"." * 192)
        writer.cutover()
    build_indexes(directory, interval=INTERVAL)
    segments = sorted(directory.glob("*.dat"))
    assert len(segments) >= 3 and len(list(directory.glob("*.idx"))) >= 2
    frame = spark.read.format(FORMAT).load(_upload(s3, directory, "indexed"))
    records, read, plan = _scan(frame.where("index between 7000 and 7400"))
    assert [row[2] for row in records] == list(range(7000, 7401))
    assert records == sorted(
        (row[0], row[1], row[2], row[5]) for row in strict_reference(directory) if 7000 <= row[2] <= 7400
    )
    row_bytes = sum(RECORD_HEADER_SIZE + len(row[3]) for row in records)
    assert 0 < read <= 2 * row_bytes + 4 * INTERVAL + 8 * 256, (read, row_bytes)
    assert "PushedFilters: [GreaterThanOrEqual(index,7000), LessThanOrEqual(index,7400)]" in plan


def test_a_split_cut_at_index_entries_on_s3_is_exact(spark: SparkSession, tmp_path: Path, s3: Any) -> None:
    log = log_of_logs(tmp_path / "log", 3000, interval=512)
    frame = spark.read.format(FORMAT).option("maxPartitionBytes", "7k").option("mode", "FAILFAST")
    assert collected(frame.load(_upload(s3, log, "nested"))) == (strict_reference(log), [])


def test_a_missing_s3_path_is_spark_path_not_found(spark: SparkSession, s3: Any) -> None:
    with pytest.raises(AnalysisException, match="PATH_NOT_FOUND"):
        spark.read.format(FORMAT).load(f"s3a://{BUCKET}/absent")


def test_a_wrong_secret_key_fails_the_read_at_once(spark: SparkSession, tmp_path: Path, s3: Any) -> None:
    url = _upload(s3, _log(tmp_path / "log", 10, segment_bytes=150_000), "log", bucket=LOCKED)
    failure: list[BaseException] = []

    def read() -> None:
        try:
            spark.read.format(FORMAT).load(url).collect()
        except Exception as error:
            failure.append(error)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(WAIT_S)
    assert not reader.is_alive(), f"no answer in {WAIT_S} s"
    assert failure, "no error"
    assert re.search(rf"AccessDeniedException: {url}: .* Status Code: 403", str(failure[0])), failure[0]


def test_a_segment_file_or_a_prefix_named_like_a_segment_reads_as_on_disk(
    spark: SparkSession, tmp_path: Path, s3: Any
) -> None:
    log = _log(tmp_path / "log", 2000, segment_bytes=150_000)  # several segments
    url = _upload(s3, log, "odd")
    # A segment file given as the path is that segment alone, as a load path selects it on disk.
    on_disk, on_s3 = (
        sorted(spark.read.format(FORMAT).load(path).select("log", "index").collect())
        for path in (str(log / "00000001.dat"), f"{url}/00000001.dat")
    )
    assert on_disk == on_s3
    assert on_disk and {row["log"] for row in on_disk} == {1}
    small = _log(tmp_path / "small", 10, segment_bytes=150_000)  # one segment: 00000002.dat is free
    url = _upload(s3, small, "small")
    (small / "00000002.dat").mkdir()
    (small / "00000002.dat" / "x").write_bytes(b"x")
    s3.put_object(Bucket=BUCKET, Key="small/00000002.dat/x", Body=b"x")
    for path in (str(small), url):  # a directory named like a segment is no segment
        with pytest.raises(Exception, match=r"io_error in \S*00000002\.dat .*is not a regular file"):
            spark.read.format(FORMAT).load(path).collect()


def test_a_log_gone_after_planning_fails_its_tasks_as_on_disk(spark: SparkSession, tmp_path: Path, s3: Any) -> None:
    log = _log(tmp_path / "log", 10, segment_bytes=150_000)
    url = _upload(s3, log, "vanished")
    keys = [{"Key": f"vanished/{path.name}"} for path in log.iterdir()]
    for path in (str(log), url):
        frame = spark.read.format(FORMAT).load(path)
        assert "Tasks: 1" in frame._jdf.queryExecution().executedPlan().toString()  # planned from the listing
        if path == url:
            s3.delete_objects(Bucket=BUCKET, Delete={"Objects": keys})
        else:
            shutil.rmtree(log)
        # Spark's error for a planned file gone at read time, naming it (spark_udfs/jvm/README.md)
        with pytest.raises(Exception, match=rf"FAILED_READ_FILE\.FILE_NOT_EXIST\].*{re.escape(path)}"):
            frame.collect()


def test_a_part_on_s3_opens_no_segment_below_its_own(spark: SparkSession, tmp_path: Path, s3: Any) -> None:
    """A part trusts the plan's check of a header whose object has the ETag the plan saw, as the listing gives it:
    ``log >= 59`` of 60 segments opens segments 58 to 60 (and the successor of each), never the 57 below, which
    each of its parts opened (a GET each) before."""
    log = build_log(tmp_path / "log", records=60, cut_every=1)
    url = _upload(s3, log, "many")
    rdd = spark.read.format(FORMAT).option("mode", "FAILFAST").load(url).where("log >= 59").select("log").rdd
    rdd.getNumPartitions()  # plans the scan, which reads every header once
    opened, _ = _stream_counts(spark, url)
    assert sorted(row.log for row in rdd.collect()) == [59, 60]
    assert _stream_counts(spark, url)[0] - opened <= 2 * 3


def test_a_header_replaced_on_s3_after_planning_ends_the_walk_there(
    spark: SparkSession, tmp_path: Path, s3: Any
) -> None:
    """Segment 2 of six put again after planning with a damaged header, of the same size: its ETag differs from the
    one the plan saw, so the parts above it read its header and nothing else, as a fresh read stops there."""
    log = build_log(tmp_path / "log", records=60, cut_every=10)
    url = _upload(s3, log, "replaced")
    frame = _reader(spark, FORMAT, "PERMISSIVE", True).load(url)

    def replace() -> None:
        _flip_header_byte(log)
        s3.upload_file(str(log / "00000002.dat"), BUCKET, "replaced/00000002.dat")

    rows = _without_file(frame, _after_planning(frame, replace))
    records, damages = _reference_to_its_end(log)
    assert {record[0] for record in records} == {1} and [damage[1:] for damage in damages] == [(2, damages[0][2])]
    on_disk = _reader(spark, FORMAT, "PERMISSIVE", True).load(str(log))
    assert rows == _without_file(on_disk, _rows(on_disk))
