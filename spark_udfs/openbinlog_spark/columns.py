"""The DataFrame schemas and the Arrow batches that fill them.

Batches are built in bulk: header fields come from one numpy gather per
chunk, payloads are cut out of the chunk with one mask and handed to Arrow
as buffers, so no Python object is made per record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    BinaryType,
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from openbinlog import Damage, Entry

from .walk import DamagedRegion, RecordRun

FILE_COLUMN = "file"
ERROR_COLUMN = "_error"
DEFAULT_CORRUPT_COLUMN = "_corrupt_record"

RECORD_FIELDS = [
    StructField("log", IntegerType()),
    StructField("offset", LongType()),
    StructField("index", LongType()),
    StructField("asqn", LongType()),
    StructField("timestamp", TimestampType()),
    StructField("payload", BinaryType()),
    StructField(FILE_COLUMN, StringType()),
]
ERROR_TYPE = StructType(
    [
        StructField("error_class", StringType()),
        StructField("message", StringType()),
        StructField("bytes_skipped", LongType()),
        StructField("resume_index", LongType()),
    ]
)
REPORT_FIELDS = [
    StructField(FILE_COLUMN, StringType()),
    StructField("log", IntegerType()),
    StructField("offset", LongType()),
    StructField("index", LongType()),
    StructField("error_class", StringType()),
    StructField("message", StringType()),
    StructField("bytes_skipped", LongType()),
    StructField("resume_index", LongType()),
]


def record_schema(partition_fields: Sequence[StructField], corrupt_column: str | None) -> StructType:
    """Records, then the partition columns, then (PERMISSIVE only) the damage columns."""
    fields = [*RECORD_FIELDS, *partition_fields]
    if corrupt_column is not None:
        fields += [StructField(corrupt_column, BinaryType()), StructField(ERROR_COLUMN, ERROR_TYPE)]
    return StructType(fields)


def report_schema(partition_fields: Sequence[StructField]) -> StructType:
    return StructType([*REPORT_FIELDS, *partition_fields])


def _repeat(value: Any, arrow_type: pa.DataType, count: int) -> pa.Array:
    if value is None:
        return pa.nulls(count, arrow_type)
    return pa.repeat(pa.scalar(value, arrow_type), count)


class BatchBuilder:
    """Arrow batches with exactly the schema Spark expects (``to_arrow_schema``), by column name."""

    def __init__(self, schema: StructType, *, file: str, partition_values: Mapping[str, Any]) -> None:
        self.schema = schema
        self.arrow_schema = to_arrow_schema(schema, timezone="UTC")
        self.file = file
        self.partition_values = dict(partition_values)

    def _assemble(self, columns: dict[str, pa.Array], count: int) -> pa.RecordBatch:
        arrays = []
        for field in self.arrow_schema:
            if field.name in columns:
                array = columns[field.name]
                if array.type != field.type:
                    array = array.cast(field.type)
            elif field.name in self.partition_values:
                array = _repeat(self.partition_values[field.name], field.type, count)
            elif field.name == FILE_COLUMN:
                array = _repeat(self.file, field.type, count)
            else:
                array = pa.nulls(count, field.type)
            arrays.append(array)
        return pa.RecordBatch.from_arrays(arrays, schema=self.arrow_schema)

    def records(self, run: RecordRun) -> pa.RecordBatch:
        headers = run.headers
        count = len(run)
        return self._assemble(
            {
                "log": pa.array(np.full(count, run.log, dtype=np.int32)),
                "offset": pa.array(run.starts + run.base),
                "index": pa.array(headers["index"].astype(np.int64)),
                "asqn": pa.array(headers["asqn"].astype(np.int64)),
                "timestamp": pa.array(headers["timestamp_us"].astype(np.int64), pa.timestamp("us", tz="UTC")),
                "payload": run.payloads,
            },
            count,
        )

    def entries(self, entries: Sequence[Entry]) -> pa.RecordBatch:
        return self._assemble(
            {
                "log": pa.array([entry.log for entry in entries], pa.int32()),
                "offset": pa.array([entry.offset for entry in entries], pa.int64()),
                "index": pa.array([entry.index for entry in entries], pa.int64()),
                "asqn": pa.array([entry.asqn for entry in entries], pa.int64()),
                "timestamp": pa.array([entry.timestamp_us for entry in entries], pa.timestamp("us", tz="UTC")),
                "payload": pa.array([entry.payload for entry in entries], pa.binary()),
            },
            len(entries),
        )

    def damage(self, damage: Damage, raw: bytes | None, corrupt_column: str | None) -> pa.RecordBatch:
        """One row for a damaged region: a PERMISSIVE corrupt row or a report row, by the schema."""
        error = pa.StructArray.from_arrays(
            [
                pa.array([damage.error_class]),
                pa.array([damage.message]),
                pa.array([damage.bytes_skipped], pa.int64()),
                pa.array([damage.next_index], pa.int64()),
            ],
            fields=[pa.field(field.name, _arrow(field.dataType)) for field in ERROR_TYPE.fields],
        )
        columns = {
            "log": pa.array([damage.log], pa.int32()),
            "offset": pa.array([damage.offset], pa.int64()),
            "index": pa.array([damage.index], pa.int64()),
            "error_class": pa.array([damage.error_class]),
            "message": pa.array([damage.message]),
            "bytes_skipped": pa.array([damage.bytes_skipped], pa.int64()),
            "resume_index": pa.array([damage.next_index], pa.int64()),
            ERROR_COLUMN: error,
        }
        if corrupt_column is not None:
            columns[corrupt_column] = pa.array([raw], pa.binary())
        if damage.path is not None:
            columns[FILE_COLUMN] = pa.array([damage.path])
        return self._assemble(columns, 1)

    def region(self, region: DamagedRegion, corrupt_column: str | None) -> pa.RecordBatch:
        return self.damage(region.damage, region.raw, corrupt_column)


def _arrow(data_type: DataType) -> pa.DataType:
    return to_arrow_schema(StructType([StructField("x", data_type)]), timezone="UTC").field("x").type
