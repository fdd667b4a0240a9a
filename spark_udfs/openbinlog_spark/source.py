"""The ``binlog`` Python data source: ``spark.read.format("binlog").load(path_or_paths)``."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, ClassVar

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, Filter, InputPartition
from pyspark.sql.types import StructField, StructType
from pyspark.version import __version__ as SPARK_VERSION

from openbinlog._format import HEADER_SIZE

from .columns import record_schema, report_schema
from .execute import ItemReader
from .listing import SegmentFile, list_segment_files, partition_columns
from .options import ReadOptions
from .plan import BinlogPartition, IssueItem, LegacyItem, RangeItem, SegmentFacts, plan_read
from .pruning import ALWAYS_NULL, Bounds, Comparison, may_match, partition_bounds, row_bounds, usable
from .storage import Storage
from .stream import BinlogStreamReader

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
# Up to Spark 4.3 the read plan (partitions and read function) of a pushdown pass is kept on the relation of the
# loaded DataFrame (PythonScanBuilder.pushFilters calls PythonDataSourceV2.setReadInfo), shared by every query built
# on it, and each scan reads with the newest plan: a later query that pushes no filter, or a query planned before
# another one's pass, would read a plan pruned for another query. So only a Spark that keeps the plan in its scan
# (SPARK-58551, Spark 5) prunes segments and narrows reads to index entries (row_bounds); measured by
# test_on_this_spark_a_narrowed_plan_reaches_the_next_query_of_the_dataframe.
PRUNES_PER_QUERY = int(SPARK_VERSION.split(".")[0]) >= 5
PUSHDOWN_LOG = logging.getLogger("openbinlog_spark.pushdown")
# Spark's Python worker logging (spark.sql.pyspark.worker.logging.enabled) collects the records that reach the root
# logger, which passes WARNING and up in a worker: this logger lets its INFO lines through.
PUSHDOWN_LOG.setLevel(logging.INFO)
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
            return BinlogPushdownReader(self.settings, schema, prune=PRUNES_PER_QUERY)
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
        listed = len(files)
        pruned = 0

        def values_of(segment: SegmentFile) -> dict[str, Any]:
            return {name: value for name, value in values.get(segment.url, {}).items() if name in names}

        def keep(facts: SegmentFacts) -> bool:
            nonlocal pruned
            header = facts.version2
            assert header is not None
            bounds = {
                "log": Bounds(header.log, header.log),
                # Spark's long holds indexes of 2^63 and more as negative numbers: no index pruning there.
                "index": Bounds(header.base_index, facts.end_index - 1) if facts.end_index <= 2**63 else Bounds(),
                "timestamp": Bounds(facts.predecessor_timestamp_us, facts.end_timestamp_us),
                **partition_bounds(values_of(facts.file)),
            }
            if may_match(filters, bounds):
                return True
            pruned += 1
            return False

        def keep_item(item: RangeItem | LegacyItem | IssueItem) -> bool:
            nonlocal pruned
            if not isinstance(item, LegacyItem):
                return True
            logs = [file.log for file in item.files]
            # Version 1 records have no timestamp; a log that mixes in version 2 segments has some.
            stamps = ALWAYS_NULL if item.all_legacy else Bounds()
            if may_match(filters, {"timestamp": stamps, "log": Bounds(min(logs), max(logs))}):
                return True
            pruned += len(item.files)
            return False

        if filters:
            files = [segment for segment in files if may_match(filters, partition_bounds(values_of(segment)))]
            pruned = listed - len(files)
        bounds = row_bounds(filters)
        partitions = plan_read(storage, files, self.options, values_of, keep, bounds=bounds)
        if filters:
            partitions = [
                BinlogPartition(kept)
                for partition in partitions
                if (kept := [item for item in partition.items if keep_item(item)])
            ]
            items = [item for partition in partitions for item in partition.items if isinstance(item, RangeItem)]
            whole = {item.file.url: item.range.readable_end - HEADER_SIZE for item in items}
            PUSHDOWN_LOG.info(
                "pushed filters %s prune %d of %d segment files; %s leave %d of their %d bytes to read",
                filters,
                pruned,
                listed,
                bounds,
                sum(item.weight for item in items),
                sum(whole.values()),
            )
        return partitions or [BinlogPartition([])]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return ItemReader(self.options, self.schema).read(partition.value)


class BinlogPushdownReader(BinlogReader):
    """A reader that prunes segments by the filters Spark pushes (``filters``), unless ``prune`` is false."""

    def __init__(self, options: ReadOptions, schema: StructType, prune: bool = True) -> None:
        super().__init__(options, schema)
        self.prune = prune

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        """Keep the filters pruning can judge; Spark still applies all of them to the rows read."""
        judged = usable(filters, [field.name for field in self.schema.fields])
        if self.prune:
            self.filters = judged
        elif judged:
            PUSHDOWN_LOG.info(
                "pushed filters %s prune nothing: Spark %s reads every query of a DataFrame with one kept plan",
                judged,
                SPARK_VERSION,
            )
        return filters
