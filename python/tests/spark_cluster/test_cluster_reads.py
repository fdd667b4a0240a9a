"""``spark.read.format("binlog")`` on a standalone cluster (a master and two workers on 127.0.0.1): the same rows,
damage rows, task counts and errors as in local mode, and as the reference reader and the fixtures' twins say."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from binlog_frames import reference, strict_reference
from cluster_reads import FIXTURE_NAMES, LOG_OF_LOGS_RECORDS, SPLITS, Outcome, Read, outcome
from logtools import segment
from pyspark.sql import SparkSession
from test_spark_fixtures import ROW_CASES, check

from openbinlog import BinlogError, build_info


@pytest.fixture(scope="session")
def on_cluster(cluster_spark: SparkSession, cluster_reads: list[Read]) -> Callable[[str], Outcome]:
    """Each read on the cluster, made once."""
    by_name = {read.name: read for read in cluster_reads}
    made: dict[str, Outcome] = {}

    def get(name: str) -> Outcome:
        if name not in made:
            made[name] = outcome(cluster_spark, by_name[name])
        return made[name]

    return get


def _read(cluster_reads: list[Read], name: str) -> Read:
    return next(read for read in cluster_reads if read.name == name)


def _directory(cluster_reads: list[Read], name: str) -> str:
    return _read(cluster_reads, name).paths[0]


def test_tasks_run_on_both_workers_and_decode_as_the_driver_does(cluster_spark: SparkSession) -> None:
    def where(_: int) -> tuple[str, str]:
        import os  # noqa: PLC0415 - runs in an executor's Python worker

        from openbinlog import build_info  # noqa: PLC0415

        return os.getcwd(), build_info().decoder

    seen = set(cluster_spark.sparkContext.parallelize(range(8), 8).map(where).collect())
    directories = {directory for directory, _ in seen}
    # An executor's Python workers run in its work directory, one per worker: neither is the driver's. The decoder
    # is the compiled one wherever the driver has it (shipped as a zip, it would fall back to pure Python).
    assert len(directories) == 2 and os.getcwd() not in directories, seen
    assert {decoder for _, decoder in seen} == {build_info().decoder}, seen


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_fixture_rows_on_the_cluster_equal_local_mode_and_the_twin(
    on_cluster: Callable[[str], Outcome],
    local_outcomes: dict[str, Outcome],
    cluster_reads: list[Read],
    name: str,
) -> None:
    directory = next(path for path in _read(cluster_reads, "fixtures").paths if Path(path).name == name)
    local = local_outcomes["fixtures"]
    cluster = on_cluster("fixtures")
    assert cluster.error is None and local.error is None
    assert cluster.partitions == local.partitions >= 2
    assert cluster.rows.get(directory) == local.rows.get(directory)
    expected = [wanted for fixture, wanted in ROW_CASES if fixture == name]
    assert len(expected) == 1, f"{name}: expected one read case in its twin"
    check(name, expected[0], *cluster.rows.get(directory, ([], [])))


def test_permissive_damage_row_on_the_cluster_equals_local_mode_and_the_reference(
    on_cluster: Callable[[str], Outcome], local_outcomes: dict[str, Outcome], cluster_reads: list[Read]
) -> None:
    directory = _directory(cluster_reads, "permissive")
    cluster = on_cluster("permissive")
    assert cluster == local_outcomes["permissive"]
    assert cluster.partitions >= 2
    records, damages = reference(directory)
    assert cluster.rows == {directory: (records, damages)}
    assert [damage[0] for damage in damages] == ["checksum_mismatch"]
    assert cluster.count == len(records) + len(damages)


def test_dropmalformed_on_the_cluster_keeps_the_records_local_mode_keeps(
    on_cluster: Callable[[str], Outcome], local_outcomes: dict[str, Outcome], cluster_reads: list[Read]
) -> None:
    directory = _directory(cluster_reads, "dropmalformed")
    cluster = on_cluster("dropmalformed")
    assert cluster == local_outcomes["dropmalformed"]
    records, damages = reference(directory)
    assert damages
    assert cluster.rows == {directory: (records, [])}
    assert cluster.count == len(records)


def test_failfast_on_the_cluster_raises_the_typed_error_local_mode_raises(
    on_cluster: Callable[[str], Outcome], local_outcomes: dict[str, Outcome], cluster_reads: list[Read]
) -> None:
    directory = _directory(cluster_reads, "failfast")
    cluster = on_cluster("failfast")
    assert cluster == local_outcomes["failfast"]
    with pytest.raises(BinlogError) as failed:
        strict_reference(directory)
    expected = failed.value
    assert cluster.error == (
        type(expected).__name__,
        f"{directory}/00000002.dat",
        expected.message,
        expected.log,
        expected.offset,
        expected.index,
        expected.error_class,
    )


def test_split_read_of_an_indexed_segment_on_the_cluster_equals_local_mode(
    on_cluster: Callable[[str], Outcome], local_outcomes: dict[str, Outcome], cluster_reads: list[Read]
) -> None:
    path = Path(_directory(cluster_reads, "split"))
    assert path.with_suffix(".idx").is_file()
    cluster = on_cluster("split")
    assert cluster == local_outcomes["split"]
    assert cluster.partitions == SPLITS
    expected = [record for record in strict_reference(path.parent) if record[0] == 1]
    assert len(expected) == LOG_OF_LOGS_RECORDS
    assert cluster.rows == {str(path.parent): (expected, [])}
    assert segment(path.parent, 1) == path


@pytest.mark.parametrize("name", ["jvm-permissive", "jvm-log-of-logs"])
def test_the_jvm_source_on_the_cluster_returns_the_rows_of_local_mode_and_the_reference(
    on_cluster: Callable[[str], Outcome], local_outcomes: dict[str, Outcome], cluster_reads: list[Read], name: str
) -> None:
    """spark.read.format("binlog-jvm") with spark.jars: its tasks run in the executors' JVMs, on both workers."""
    directory = _directory(cluster_reads, name)
    cluster = on_cluster(name)
    assert cluster == local_outcomes[name]
    assert cluster.partitions >= 3  # a part per segment at least: tasks on both executors
    records, damages = reference(directory)
    assert cluster.rows == {directory: (records, damages)}
    assert cluster.count == len(records) + len(damages)
