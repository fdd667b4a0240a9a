"""The Python source (``binlog``) on logs of many segments: what a task reads of the segments below its ranges.

A segment header that fails its checks after planning ends the walk there (spec readers 10.4), so a task has to
know whether one below its ranges fails now. Reading every header below made a read of N segments, one task each,
read N^2 / 2 headers (a request each on S3). A task now trusts the plan's check of a sealed header whose file is
unchanged since (the plan records its stamp: on disk, device, inode, size, modification and change times; on S3,
the ETag the listing gives), and reads only the headers of changed files, as the JVM source does
(``test_jvm_segments``). The plan trusts only files that had not changed for 2 s when it read their headers, so
these logs are left to settle that long before they are read.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import pytest
from binlog_frames import planned, reference_to_its_end
from test_jvm_missing import _flip_header_byte
from test_jvm_segments import CHANGES, segment_logs
from test_spark_header_damage import expected, read_in_process
from test_spark_semantics import build_log

import openbinlog_spark.execute

SEGMENTS = 60
ONE_TASK_A_SEGMENT = {"maxPartitionBytes": "64m", "openCostInBytes": "64m", "minPartitions": "1"}


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return segment_logs(tmp_path_factory, SEGMENTS)


@pytest.fixture
def header_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The log numbers of the headers the tasks read (planning's reads are not counted)."""
    reads: list[int] = []
    read_facts = openbinlog_spark.execute.read_facts

    def counted(storage: Any, segment: Any, options: Any, **kwargs: Any) -> Any:
        reads.append(segment.log)
        return read_facts(storage, segment, options, **kwargs)

    monkeypatch.setattr(openbinlog_spark.execute, "read_facts", counted)
    return reads


@pytest.mark.parametrize("mode", ["PERMISSIVE", "FAILFAST"])
def test_a_task_of_each_segment_reads_its_own_headers_not_those_below(
    logs: dict[str, Path], header_reads: list[int], mode: str
) -> None:
    """One task a segment: each reads its own segment's header and its successor's (END), whatever number it has;
    before, the task of segment n read the n - 1 headers below too (1,889 header reads for 60 segments, now 119)."""
    log = logs["many"]
    records, damages, tasks = planned(log, mode=mode, **ONE_TASK_A_SEGMENT)
    assert (len(records), damages, tasks) == (SEGMENTS, [], SEGMENTS)
    assert len(header_reads) <= 2 * SEGMENTS, sorted(header_reads)


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_header_far_below_failing_after_planning_still_ends_the_walk_there(
    logs: dict[str, Path], change: str
) -> None:
    """Segment 2 of six changed after planning so that its header fails, the others left as they were: the tasks of
    segments 3 to 6 trust the plan's check of segment 1 and see that segment 2 changed, so they read nothing, and the
    rows are the reference's: segment 1's records, one damage row for segment 2."""
    log = logs[change]
    found = read_in_process(
        log, "PERMISSIVE", {"ignoreMissingFiles": "true", **ONE_TASK_A_SEGMENT}, between=partial(CHANGES[change], log)
    )
    assert found == expected(log, "PERMISSIVE")
    records, _, ended = reference_to_its_end(log)
    assert {record[0] for record in records} == {1} and ended is not None and ended.log == 2


def test_on_s3_a_task_reads_no_header_below_its_segment_and_sees_one_replaced_since_planning(
    tmp_path: Path, header_reads: list[int]
) -> None:
    """On S3 the stamp is the ETag the listing gives, an identifier of an object's bytes however recently it was put:
    a task lists the directory once and reads its own header and its successor's, where it read the n - 1 headers
    below with a request each. An object put again after planning with a damaged header has another ETag: its
    header is read, and ends the walk there."""
    s3fs = pytest.importorskip("s3fs")
    pytest.importorskip("moto")
    from moto_s3 import moto_server  # noqa: PLC0415 - only with moto
    from test_spark_s3 import BUCKET, REGION, _options  # noqa: PLC0415

    (tmp_path / "moto").mkdir()
    with moto_server(tmp_path / "moto") as endpoint:
        options = {**_options(endpoint), **ONE_TASK_A_SEGMENT}
        fs = s3fs.S3FileSystem(
            key="testing", secret="testing", endpoint_url=endpoint, client_kwargs={"region_name": REGION}
        )
        fs.mkdir(BUCKET)
        log = build_log(tmp_path / "log", records=20, cut_every=1)
        fs.put(str(log) + "/", f"{BUCKET}/many/", recursive=True)
        url = f"s3://{BUCKET}/many"
        records, damages, tasks = planned(url, mode="FAILFAST", **options)
        assert (len(records), damages, tasks) == (20, [], 20)
        assert len(header_reads) <= 2 * 20, sorted(header_reads)

        def damage() -> None:
            _flip_header_byte(log)  # on disk too, for the reference
            fs.put_file(str(log / "00000002.dat"), f"{BUCKET}/many/00000002.dat")

        found = read_in_process(url, "PERMISSIVE", options, between=damage)  # type: ignore[arg-type]
        assert found == expected(log, "PERMISSIVE")
        assert {record[0] for record in found[0]} == {1}
