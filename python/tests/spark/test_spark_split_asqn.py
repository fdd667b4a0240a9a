"""Both Spark sources, read in parts of one byte (or of a few records), report an asqn that goes back across
records without one.

Each part of a segment starts at a boundary with no earlier asqn (spec readers 10.2.2, SPLIT step 5): the part
that ends before the records without an asqn checks the first asqn after them (LOOK, R-27), so FAILFAST fails
with ``asqn_not_increasing`` where one read of the log does, and PERMISSIVE has its damage row (0 bytes skipped,
resumed at that record, which the part holding it returns, as a part returns a record at its stop boundary).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from binlog_frames import collected, reference
from pyspark.sql import SparkSession
from test_java_reader import Item, damaged_log

SOURCES = ("binlog", "binlog-jvm")
LOGS: dict[str, tuple[list[Item], list[tuple[str, int, int]], int, str]] = {
    # records 1..3 carry asqns 0 (forged), none, 0: record 3 (index 3) fails step 8; parts of one byte
    "three_records": ([(b"", None), (b"", None), (b"", 1)], [("asqn", 0, 3)], 3, "1"),
    # record 1 carries asqn 2 (forged), records 2..201 none, record 202 asqn 1: record 202 fails step 8; parts of
    # 100 bytes (one byte each would be 21,000 tasks), so that most parts hold records without an asqn
    "two_hundred_between": (
        [(b"a" * 30, 1), *[(b"b" * 30, None)] * 200, (b"c" * 30, 1), *[(b"d" * 30, None)] * 100],
        [("asqn", 0, 5)],
        202,
        "100",
    ),
}


@pytest.mark.spec("R-27")
@pytest.mark.parametrize("name", sorted(LOGS))
def test_parts_of_one_byte_report_an_asqn_going_back_in_both_sources(
    spark: SparkSession, tmp_path: Path, name: str
) -> None:
    items, faults, failing, part_bytes = LOGS[name]
    log = tmp_path / "log"
    written, _ = damaged_log(log, items, faults)
    at = written[failing - 1].offset
    records, damage = reference(log)
    assert [row[:4] for row in damage] == [("asqn_not_increasing", 1, at, failing)]  # one read of the whole log
    read = {}
    for source in SOURCES:
        frame = spark.read.format(source).options(maxPartitionBytes=part_bytes, openCostInBytes="1")
        with pytest.raises(Exception, match=r"asqn_not_increasing"):
            frame.option("mode", "FAILFAST").load(str(log)).collect()
        read[source] = collected(frame.option("mode", "PERMISSIVE").load(str(log)))
    assert read["binlog"] == read["binlog-jvm"]
    rows, damage_rows = read["binlog"]
    assert damage_rows == [("asqn_not_increasing", 1, at, failing, 0, failing)]
    # Every record one read returns, and the record it stepped over at the damage, which the part holding it returns.
    assert [row for row in rows if row[1] != at] == records
    assert [row[1:3] for row in rows if row[1] == at] == [(at, failing)]
