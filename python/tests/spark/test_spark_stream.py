"""``spark.readStream.format("binlog")``: tailing a live log, committed records only, exactly once."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from binlog_frames import payloads, record_of, strict_reference
from logtools import append_raw, segment
from pyspark.sql import SparkSession

from openbinlog import Reader, Writer
from openbinlog._records import encode_record


def _wait_for(condition: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the stream did not catch up in time"
        time.sleep(0.2)


def test_stream_tails_a_live_log_across_cutovers_exactly_once(spark: SparkSession, tmp_path: Path) -> None:
    directory = tmp_path / "live"
    batches = [payloads(12, 64, seed) for seed in (1, 2, 3)]
    with Writer(directory, durability="os") as writer:
        writer.append_many(batches[0])
        query = (
            spark.readStream.format("binlog")
            .load(str(directory))
            .writeStream.format("memory")
            .queryName("tail_live")
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(processingTime="300 milliseconds")
            .start()
        )
        try:

            def seen() -> int:
                return int(spark.sql("select count(*) from tail_live").first()[0])

            _wait_for(lambda: seen() == 12)
            writer.append_many(batches[1])
            writer.cutover()
            writer.append_many(batches[2])
            # Written and synced but never published: beyond the commit point, never read.
            append_raw(segment(directory, 2), encode_record(37, b"unpublished"))
            _wait_for(lambda: seen() == 36)
            time.sleep(1.0)  # a few more triggers: nothing new may appear
            rows = spark.sql("select log, offset, index, asqn, unix_micros(timestamp) as ts, payload from tail_live")
            got = sorted((row[0], row[1], row[2], row[3], row[4], bytes(row[5])) for row in rows.collect())
        finally:
            query.stop()
    assert got == strict_reference(directory)
    assert [record[2] for record in got] == list(range(1, 37))


def test_stream_caps_records_per_trigger(spark: SparkSession, tmp_path: Path) -> None:
    directory = tmp_path / "capped"
    with Writer(directory, durability="os") as writer:
        writer.append_many(payloads(13, 40))
        writer.cutover()
        writer.append_many(payloads(12, 40, 9))
    query = (
        spark.readStream.format("binlog")
        .option("maxRecordsPerTrigger", 10)
        .load(str(directory))
        .writeStream.format("memory")
        .queryName("tail_capped")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    sizes = [progress["numInputRows"] for progress in query.recentProgress if progress["numInputRows"]]
    assert sizes == [10, 10, 5]
    rows = spark.sql("select index from tail_capped").collect()
    assert sorted(row[0] for row in rows) == list(range(1, 26))


def test_stream_starting_at_latest_sees_only_later_records(spark: SparkSession, tmp_path: Path) -> None:
    directory = tmp_path / "latest"
    with Writer(directory, durability="os") as writer:
        writer.append_many(payloads(5, 40))
        query = (
            spark.readStream.format("binlog")
            .option("startingOffsets", "latest")
            .load(str(directory))
            .writeStream.format("memory")
            .queryName("tail_latest")
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(processingTime="300 milliseconds")
            .start()
        )
        try:
            _wait_for(lambda: query.lastProgress is not None)
            writer.append_many(payloads(3, 40, 5))
            _wait_for(lambda: spark.sql("select count(*) from tail_latest").first()[0] == 3)
        finally:
            query.stop()
    with Reader(directory) as reader:
        expected = [record_of(entry)[2] for entry in reader][5:]
    assert sorted(row[0] for row in spark.sql("select index from tail_latest").collect()) == expected


def test_stream_of_a_file_url_reads_the_rows_of_the_plain_path_damage_rows_included(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Spark writes local paths as ``file:/p``: the stream reads the rows of ``/p``, and every row, the
    ``chain_broken`` row of a missing segment included, names its file by the plain path, as a batch read does."""
    directory = tmp_path / "gap"
    with Writer(directory, durability="os") as writer:
        for seed in (1, 2, 3):
            writer.append_many(payloads(4, 40, seed))
            writer.cutover()
    segment(directory, 2).unlink()
    got: dict[str, list[tuple[Any, ...]]] = {}
    for name, path in (("plain", str(directory)), ("url", f"file:{directory}")):
        query = (
            spark.readStream.format("binlog")
            .load(path)
            .writeStream.format("memory")
            .queryName(f"tail_{name}")
            .option("checkpointLocation", str(tmp_path / f"checkpoint_{name}"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(120)
        rows = spark.sql(f"select log, offset, index, file, _error.error_class from tail_{name}").collect()
        got[name] = sorted(tuple(row) for row in rows)
    assert got["url"] == got["plain"]
    assert {row[4] for row in got["plain"]} == {None, "chain_broken"}
    assert {row[3] for row in got["plain"] if row[4] is not None} == {str(directory)}


def _available_now(spark: SparkSession, path: str, name: str, checkpoint: Path) -> int:
    """The rows a stream of ``path`` reads with Trigger.AvailableNow."""
    query = (
        spark.readStream.format("binlog")
        .load(path)
        .writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    return int(spark.sql(f"select count(*) from {name}").first()[0])


def test_stream_of_an_escaped_glob_character_reads_that_directory_and_of_a_glob_is_refused(
    spark: SparkSession, tmp_path: Path
) -> None:
    """``glob\\[1\\]`` is the directory ``glob[1]``, as in a batch read; a glob (``glob[1]``, of ``glob1``) would list
    its logs and follow none of them, a stream without rows and without an error."""
    for name, records in (("glob[1]", 4), ("glob1", 3)):
        with Writer(tmp_path / name, durability="os") as writer:
            writer.append_many(payloads(records, 40))
    assert _available_now(spark, str(tmp_path / "glob\\[1\\]"), "tail_escaped", tmp_path / "checkpoint_escaped") == 4
    with pytest.raises(Exception, match="a stream follows one log directory, not a glob"):
        _available_now(spark, str(tmp_path / "glob[1]"), "tail_glob", tmp_path / "checkpoint_glob")
