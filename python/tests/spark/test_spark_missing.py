"""Files of the Python source (``binlog``) removed or compressed between planning and reading, read by both sources.

The JVM source's behaviour is ``test_jvm_missing``'s; here each case is read by both sources from the same kind of
log, planned, then changed, then read, and the rows (damage rows included, the ``file`` column aside) must agree:
a segment removed from the middle of a log is one ``chain_broken`` report, never a silent gap, and a segment
compressed meanwhile is read from its compressed copy.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from test_jvm_missing import JVM, MODES, _after_planning, _log, _reader, _without_file

from openbinlog import compress_segments

SOURCES = (JVM, "binlog")


def _read_both(
    spark: SparkSession,
    tmp_path: Path,
    mode: str,
    ignore: bool,
    change: Callable[[Path], None],
    *,
    where: str = "true",
    make: Callable[[Path], Path] = _log,
) -> dict[str, list[tuple[Any, ...]] | str]:
    """For each source, the rows (without ``file``) of its own copy of a log ``make`` builds, read after planning
    and ``change``; or, where the read fails, the text of its error."""
    found: dict[str, list[tuple[Any, ...]] | str] = {}
    for source in SOURCES:
        log = make(tmp_path / source / "log")
        frame = _reader(spark, source, mode, ignore).load(str(log)).where(where)
        try:
            found[source] = _without_file(frame, _after_planning(frame, lambda log=log: change(log)))
        except Exception as error:  # the failure is compared below
            found[source] = str(error)
    return found


@pytest.mark.parametrize("ignore", [True, False])
@pytest.mark.parametrize("mode", MODES)
def test_a_segment_compressed_after_planning_is_read_from_its_compressed_copy_by_both_sources(
    spark: SparkSession, tmp_path: Path, mode: str, ignore: bool
) -> None:
    """Compression links ``NNNNNNNN.dat.gz``, then removes the plain file (spec protocols 2.6): the planned name is
    gone, the segment is not, and every row is read, with or without ignoreMissingFiles."""

    def compress(log: Path) -> None:
        assert sorted(item.log for item in compress_segments(log, codec="gz")) == [1, 2]

    found = _read_both(spark, tmp_path, mode, ignore, compress)
    assert found[JVM] == found["binlog"]
    assert isinstance(found[JVM], list)
    assert len(found[JVM]) == 30
