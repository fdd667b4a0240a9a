"""The Arrow batches the ``binlog`` source hands to Spark: the compiled runs against the pure ones.

``openbinlog_spark.walk.ArrowRuns`` proves and lays out runs of records in
one compiled pass when ``openbinlog._accel.arrow_run`` exists, and by numpy
otherwise. Whatever the bytes (damaged or not), the chunk size and the cuts
into tasks, both must give Spark the same batches, each with exactly the
schema Spark checks (``to_arrow_schema`` of the DataFrame's schema), in every
mode. The batches are read through the data source classes in this process,
as a Spark task reads them; no Spark session is needed.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any
from unittest import mock

import pyarrow as pa
import pytest
from binlog_frames import payloads, raw_segment, write_segment
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql.pandas.types import to_arrow_schema

from openbinlog import _accel
from openbinlog._format import HEADER_SIZE
from openbinlog.errors import BinlogError
from openbinlog_spark.source import BinlogDataSource

pytestmark = pytest.mark.skipif(_accel.arrow_run is None, reason="openbinlog._native is not built with arrow_run")

Outcome = tuple[list[pa.RecordBatch], None] | tuple[None, tuple[type[BinlogError], str]]


def batches(directory: Path, options: dict[str, str], *, compiled: bool) -> Outcome:
    """Every batch of every task of a read of ``directory``, or the error that ends it."""
    source = BinlogDataSource({"path": str(directory), **options})
    schema = source.schema()
    reader = source.reader(schema)
    expected = to_arrow_schema(schema, timezone="UTC")
    found: list[pa.RecordBatch] = []
    with mock.patch.object(_accel, "arrow_run", _accel.arrow_run if compiled else None):
        try:
            for partition in reader.partitions():
                for batch in reader.read(partition):
                    # What Spark checks of a data source's first batch, for every batch.
                    assert batch.schema.equals(expected), (batch.schema, expected)
                    found.append(batch)
        except BinlogError as error:
            return None, (type(error), str(error))
    return found, None


def damaged(data: bytes, flips: list[tuple[int, int]], cut: int | None) -> bytes:
    """``data`` with bytes beyond the header flipped and perhaps its end cut off."""
    out = bytearray(data)
    for at, value in flips:
        if len(out) > HEADER_SIZE:
            out[HEADER_SIZE + at % (len(out) - HEADER_SIZE)] ^= value % 255 + 1
    return bytes(out if cut is None else out[: max(HEADER_SIZE, len(out) - cut)])


segments = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=40),  # records
        st.integers(min_value=0, max_value=300),  # payload size
        st.booleans(),  # with asqns
    ),
    min_size=1,
    max_size=3,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    segments,
    st.lists(st.tuples(st.integers(0, 2**20), st.integers(0, 254)), max_size=3),
    st.one_of(st.none(), st.integers(1, 200)),
    st.sampled_from(["PERMISSIVE", "DROPMALFORMED", "FAILFAST"]),
    st.sampled_from(["64", "333", "4096", "8m"]),
    st.integers(min_value=1, max_value=4),
)
def test_compiled_batches_are_the_pure_batches(
    shapes: list[tuple[int, int, bool]],
    flips: list[tuple[int, int]],
    cut: int | None,
    mode: str,
    chunk: str,
    tasks: int,
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch) / "log"
        base = 1
        for log, (count, size, with_asqns) in enumerate(shapes, start=1):
            data = raw_segment(
                payloads(count, size, seed=log),
                log=log,
                base_index=base,
                asqns=[3 * number for number in range(count)] if with_asqns else None,
                sealed=log < len(shapes),
            )
            # Damage in the last segment only: the others keep the chain a reader walks along.
            write_segment(directory, damaged(data, flips, cut) if log == len(shapes) else data, log=log)
            base += count
        data_bytes = sum(path.stat().st_size - HEADER_SIZE for path in directory.glob("*.dat"))
        options: dict[str, Any] = {
            "mode": mode,
            "readChunkBytes": chunk,
            "minPartitions": str(tasks),
            "openCostInBytes": "1",
            "maxPartitionBytes": str(max(1, -(-data_bytes // tasks))),
        }
        compiled, compiled_error = batches(directory, options, compiled=True)
        pure, pure_error = batches(directory, options, compiled=False)
    assert compiled_error == pure_error
    if compiled is None or pure is None:
        return
    assert [batch.num_rows for batch in compiled] == [batch.num_rows for batch in pure]
    for mine, reference in zip(compiled, pure, strict=True):
        assert mine.equals(reference)
