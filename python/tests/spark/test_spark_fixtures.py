"""The golden fixtures, read by the data source: each outcome as the fixture's twin says.

``accept`` and ``recovered``: exactly the expected records and no damage (a
torn tail is not damage). ``reject``: every record the strict reader returns
before the damage, and a damage row with the expected class at the expected
place. The implementation-defined end of an unsealed finished segment is
the tail walk of spec 8.4.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from binlog_frames import Record, collected_by_directory, planned
from pyspark.sql import SparkSession

from openbinlog_conformance import load
from openbinlog_conformance.manifest import in_spec_version
from openbinlog_conformance.vocabulary import SPEC_VERSION

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
MANIFEST = FIXTURES.parent / "conformance" / "manifest.json"
ACTIVE = {case.id for case in load(MANIFEST).cases if in_spec_version(case, SPEC_VERSION)}


def _read_cases() -> list[tuple[str, dict[str, Any]]]:
    cases = []
    for twin in sorted(FIXTURES.glob("*.json")) if FIXTURES.is_dir() else []:
        fixture = json.loads(twin.read_text())
        for case in fixture["cases"]:
            if case["id"] not in ACTIVE:
                continue  # retired: its expectation no longer holds in the spec version read here
            if case["operation"] == {"op": "read"} and (FIXTURES / fixture["id"]).is_dir():
                expected = case["expected"]
                if expected["outcome"] == "implementation_defined":
                    expected = expected["allowed"]["tail_walk"]
                cases.append((fixture["id"], expected))
    return cases


CASES = _read_cases()
# A segment that is a directory is an I/O error for the whole read, not a row: checked on its own.
ROW_CASES = [(name, expected) for name, expected in CASES if (expected.get("error") or {}).get("class") != "io_error"]


def as_long(value: int) -> int:
    """A u8 index as Spark's signed long holds it: the same 64 bits (two's complement)."""
    return value - 2**64 if value >= 2**63 else value


def _payload(item: dict[str, Any]) -> bytes | str:
    return bytes.fromhex(item["payload"]) if "payload" in item else item["payload_sha256"]


def _records(expected: dict[str, Any]) -> list[Record]:
    return sorted(
        (
            item["log"],
            int(item["offset"]),
            as_long(int(item["index"])),
            int(item["asqn"]),
            None if item["timestamp_us"] is None else int(item["timestamp_us"]),
            _payload(item),
        )
        for item in expected["records"]
    )


def _hashed(records: list[Record], expected: dict[str, Any]) -> list[Record]:
    """Large payloads are named by their SHA-256 in the twins."""
    big = {int(item["offset"]) for item in expected["records"] if "payload_sha256" in item}
    return sorted(
        (*record[:5], hashlib.sha256(record[5]).hexdigest() if record[1] in big else record[5])  # type: ignore[misc]
        for record in records
    )


def check(name: str, expected: dict[str, Any], records: list[Record], damages: list[tuple[Any, ...]]) -> None:
    wanted = _records(expected)
    records = _hashed(records, expected)
    if expected["outcome"] in ("accept", "recovered"):
        assert records == wanted, name
        assert damages == [], name
        return
    error = expected["error"]
    assert set(wanted) <= set(records), name
    places = [(damage[0], damage[1], damage[2]) for damage in damages]
    offset = None if error.get("offset") is None else int(error["offset"])
    assert (error["class"], error["log"], offset) in places, (name, places)


pytestmark = pytest.mark.skipif(not CASES, reason="no golden fixtures generated")


@pytest.mark.parametrize(("name", "expected"), ROW_CASES, ids=[name for name, _ in ROW_CASES])
def test_fixture_reads_as_its_twin_says(name: str, expected: dict[str, Any]) -> None:
    records, damages, _ = planned(FIXTURES / name)
    check(name, expected, records, damages)


def test_every_fixture_in_one_spark_read(spark: SparkSession) -> None:
    names = sorted({name for name, _ in ROW_CASES})
    # Small files: a tiny open cost packs them into two tasks instead of one task per segment.
    df = (
        spark.read.format("binlog")
        .options(openCostInBytes="1", minPartitions="2")
        .load([str(FIXTURES / name) for name in names])
    )
    assert df.rdd.getNumPartitions() <= 3
    by_directory = collected_by_directory(df)
    for name, expected in ROW_CASES:
        records, damages = by_directory.get(str(FIXTURES / name), ([], []))
        check(name, expected, records, damages)


def test_segment_that_cannot_be_read_fails_the_read_with_an_io_error(spark: SparkSession) -> None:
    broken = [name for name, expected in CASES if (expected.get("error") or {}).get("class") == "io_error"]
    assert "directory_without_segment_or_lock" in broken
    for name in broken:
        # A segment name on a directory cannot be read; a directory with neither segment nor LOCK is
        # not a log.
        reason = "not a log directory" if name == "directory_without_segment_or_lock" else "not a regular file"
        with pytest.raises(Exception, match=rf"{reason}.* \[io_error\]"):
            spark.read.format("binlog").load(str(FIXTURES / name)).collect()
