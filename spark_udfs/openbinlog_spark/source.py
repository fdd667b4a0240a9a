"""The ``binlog`` Python data source: ``spark.read.format("binlog").load(path_or_paths)``."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, ClassVar

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, Filter, InputPartition
from pyspark.sql.types import StructField, StructType

from .columns import record_schema, report_schema
from .execute import ItemReader
from .listing import SegmentFile, list_segment_files, partition_columns
from .options import ReadOptions
from .plan import BinlogPartition, IssueItem, LegacyItem, RangeItem, SegmentFacts, plan_read
from .pruning import ALWAYS_NULL, Bounds, Comparison, may_match, partition_bounds, usable
from .storage import Storage
from .stream import BinlogStreamReader

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
RESERVED = {"log", "offset", "index", "asqn", "timestamp", "payload", "file", "error_class", "message"}


def _partition_fields(options: ReadOptions) -> tuple[list[StructField], dict[str, dict[str, Any]]]:
    files = list_segment_files(Storage(options.storage_options), options)
    fields, values = partition_columns(files)
    reserved = RESERVED | {options.corrupt_column, "_error", "bytes_skipped", "resume_index"}
    kept = [item for item in fields if item.name not in reserved]
    return kept, values


class BinlogDataSource(DataSource):
    """Committed records of BinLog segments (version 2 and legacy version 1), plain or compressed.

    Use ``openbinlog_spark.register(spark)``: it registers a variant of this
    class that carries the session's defaults (filter pushdown enabled or
    not, the default parallelism).
    """

    DEFAULT_OPTIONS: ClassVar[Mapping[str, str]] = {}
    PUSHDOWN: ClassVar[bool] = False

    @classmethod
    def name(cls) -> str:
        return "binlog"

    def __init__(self, options: Mapping[str, str]) -> None:
        super().__init__(dict(options))
        merged = {key.lower(): value for key, value in self.DEFAULT_OPTIONS.items()}
        merged.update({str(key).lower(): value for key, value in dict(options).items()})
        self.settings = ReadOptions.parse(merged)

    def schema(self) -> StructType:
        fields, _ = _partition_fields(self.settings)
        if self.settings.report:
            return report_schema(fields)
        return record_schema(fields, self.settings.corrupt_rows)

    def reader(self, schema: StructType) -> DataSourceReader:
        if self.PUSHDOWN and self.settings.pushdown:
            return BinlogPushdownReader(self.settings, schema)
        return BinlogReader(self.settings, schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return BinlogStreamReader(self.settings, schema)


class BinlogReader(DataSourceReader):
    def __init__(self, options: ReadOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema
        self.filters: list[Comparison] = []

    def partitions(self) -> Sequence[InputPartition]:
        storage = Storage(self.options.storage_options)
        files = list_segment_files(storage, self.options)
        _, values = partition_columns(files)
        names = [field.name for field in self.schema.fields]
        filters = self.filters

        def values_of(segment: SegmentFile) -> dict[str, Any]:
            return {name: value for name, value in values.get(segment.url, {}).items() if name in names}

        def keep(facts: SegmentFacts) -> bool:
            header = facts.version2
            assert header is not None
            bounds = {
                "log": Bounds(header.log, header.log),
                # Spark's long holds indexes of 2^63 and more as negative numbers: no index pruning there.
                "index": Bounds(header.base_index, facts.end_index - 1) if facts.end_index <= 2**63 else Bounds(),
                "timestamp": Bounds(facts.predecessor_timestamp_us, facts.end_timestamp_us),
                **partition_bounds(values_of(facts.file)),
            }
            return may_match(filters, bounds)

        if filters:
            files = [segment for segment in files if may_match(filters, partition_bounds(values_of(segment)))]
        partitions = plan_read(storage, files, self.options, values_of, keep)
        if filters:
            partitions = [
                BinlogPartition(kept)
                for partition in partitions
                if (kept := [item for item in partition.items if self._keep_item(item)])
            ]
        return partitions or [BinlogPartition([])]

    def _keep_item(self, item: RangeItem | LegacyItem | IssueItem) -> bool:
        if isinstance(item, LegacyItem):
            logs = [header.log for _, header in item.files]
            return may_match(self.filters, {"timestamp": ALWAYS_NULL, "log": Bounds(min(logs), max(logs))})
        return True

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return ItemReader(self.options, self.schema).read(partition.value)


class BinlogPushdownReader(BinlogReader):
    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        """Keep the filters pruning can judge; Spark still applies all of them to the rows read."""
        self.filters = usable(filters, [field.name for field in self.schema.fields])
        return filters
