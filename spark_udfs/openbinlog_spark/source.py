"""The ``binlog`` Python data source: ``spark.read.format("binlog").load(path_or_paths)``.

Spark runs this source in Python workers: the planner's on the driver
(``schema``, ``reader``, ``partitions``) and every executor's (``read``),
each unpickling the source and its readers. They are pickled behind
``IMPORT_GUARD``, a function shipped by value that imports this package
before anything of it is unpickled: a worker without it fails with a
``ModuleNotFoundError`` that names openbinlog and what to install, not with
an unpickling error deep in PySpark.
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
import pickle
import socket
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from types import FrameType
from typing import Any, ClassVar

import pyarrow as pa
from pyspark import cloudpickle
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, Filter, InputPartition
from pyspark.sql.types import BinaryType, StructField, StructType
from pyspark.version import __version__ as SPARK_VERSION

from openbinlog._format import HEADER_SIZE

from .columns import ERROR_COLUMN, record_schema, report_schema
from .execute import ItemReader
from .listing import PathNotFoundError, SegmentFile, list_segment_files, partition_columns
from .options import DROPMALFORMED, OptionError, ReadOptions
from .plan import BinlogPartition, IssueItem, LegacyItem, RangeItem, SegmentFacts, plan_read
from .pruning import ALWAYS_NULL, Bounds, Comparison, may_match, partition_bounds, row_bounds, usable, zoned
from .storage import HADOOP_S3, Storage
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
# The PySpark modules whose workers call DataSource.reader: a pushdown pass (only made while pushdown is enabled),
# and a read plan, which gets the setting as its local enable_pushdown.
PUSHDOWN_PASS = "pyspark.sql.worker.data_source_pushdown_filters"
READ_PLAN = "pyspark.sql.worker.plan_data_source_read"


def _import_guard() -> Callable[..., Any]:
    """``IMPORT_GUARD``: made here, in a function, so that cloudpickle ships it by value, with nothing of this
    package, into the Python workers (a function of the module itself would be shipped as an import of it)."""

    def unpickle(blob: bytes, instance: bool = False) -> Any:
        """``blob`` unpickled (and, with ``instance``, an instance of the class it holds made for its state)
        once this package imports: in a Python worker without it, a ``ModuleNotFoundError`` that says so.
        The modules it uses are the standard library's (cloudpickle ships them as imports)."""
        try:
            importlib.import_module("openbinlog_spark")
        except ModuleNotFoundError as exc:
            # Another missing module (pyarrow, fsspec...) is named by the error of its own import.
            if (exc.name or "").partition(".")[0] not in ("openbinlog", "openbinlog_spark"):
                raise
            raise ModuleNotFoundError(
                f"No module named {exc.name!r} in the Python worker on {socket.gethostname()} ({sys.executable}):"
                " the Spark data source 'binlog' needs the package openbinlog in the Python of the driver and of"
                " every executor: pip install 'openbinlog[spark]' in the environment PYSPARK_PYTHON names there"
                " (or ship it with --py-files or spark.archives)",
                name=exc.name,
            ) from None
        loaded = pickle.loads(blob)
        return loaded.__new__(loaded) if instance else loaded

    return unpickle


IMPORT_GUARD = _import_guard()
_dumps: Callable[[Any], bytes] = cloudpickle.dumps  # what Spark pickles with: by value where it must


class ImportGuarded:
    """Pickled as its class behind ``IMPORT_GUARD``, then its state: nothing of this package is unpickled before
    the guard has imported it."""

    def __reduce__(self) -> tuple[Any, ...]:
        return IMPORT_GUARD, (_dumps(type(self)), True), self.__dict__


def guarded_class(source: type[DataSource]) -> type[DataSource]:
    """A class to register in place of ``source``, shipped by value with ``source`` behind ``IMPORT_GUARD``:
    the planner's worker, which unpickles the registered class, gets ``source``'s instances from it."""
    blob = _dumps(source)
    unpickle = IMPORT_GUARD
    name = source.name()

    class Guarded(DataSource):
        @classmethod
        def name(cls) -> str:
            return name

        def __new__(cls, options: dict[str, str]) -> Any:
            return unpickle(blob)(options)

    Guarded.__name__ = source.__name__
    Guarded.__qualname__ = f"guarded_class.<locals>.{source.__name__}"  # never found by name: shipped by value
    return Guarded


def _pushdown_of_planner() -> bool | None:
    """Whether Spark accepts filters from the reader being made: True in a pushdown pass, the read plan's
    ``enable_pushdown`` (``spark.sql.python.filterPushdown.enabled``) otherwise; None when not called by Spark's
    planning worker (then the setting ``register`` read is used)."""
    try:
        frame: FrameType | None = sys._getframe(2)  # the caller of DataSource.reader
    except ValueError:
        return None
    for _ in range(4):
        if frame is None:
            return None
        spec = frame.f_globals.get("__spec__")
        module = getattr(spec, "name", None) or frame.f_globals.get("__name__")
        if module == PUSHDOWN_PASS:
            return True
        if module == READ_PLAN:
            enabled = frame.f_locals.get("enable_pushdown")
            return enabled if isinstance(enabled, bool) else None
        frame = frame.f_back
    return None


def _for_schema(options: ReadOptions, schema: StructType) -> ReadOptions:
    """The options a read of ``schema`` follows: as Spark's JSON reader does, a schema given without the
    corrupt-record column (nor ``_error``) keeps no damage rows in PERMISSIVE mode."""
    column = options.corrupt_rows
    if column is None:
        return options
    fields = {field.name: field for field in schema.fields}
    if column in fields and not isinstance(fields[column].dataType, BinaryType):
        raise OptionError(
            f"column {column}: the corrupt-record column holds the damaged bytes, so its type is binary,"
            f" not {fields[column].dataType.simpleString()}"
        )
    if column not in fields and ERROR_COLUMN not in fields:
        return dataclasses.replace(options, mode=DROPMALFORMED)
    return options


def _partition_fields(options: ReadOptions) -> tuple[list[StructField], dict[str, dict[str, Any]]]:
    files = list_segment_files(Storage(options.storage_options), options)
    fields, values = partition_columns(files)
    reserved = RESERVED | {options.corrupt_column, "_error", "bytes_skipped", "resume_index"}
    kept = [item for item in fields if item.name not in reserved]
    return kept, values


class BinlogDataSource(ImportGuarded, DataSource):
    """Committed records of BinLog segments (version 2 and legacy version 1), plain or compressed.

    Use ``openbinlog_spark.register(spark)``: it registers a variant of this
    class that carries the session's defaults (Spark's settings that are
    options here, the S3A settings of the Hadoop configuration, filter
    pushdown enabled or not).
    """

    DEFAULT_OPTIONS: ClassVar[Mapping[str, str]] = {}
    PUSHDOWN: ClassVar[bool] = False
    HADOOP_S3: ClassVar[Mapping[str, str]] = {}  # fs.s3a.* settings, for a read given no fs.* option

    @classmethod
    def name(cls) -> str:
        return "binlog"

    def __init__(self, options: Mapping[str, str]) -> None:
        super().__init__(dict(options))
        merged = {key.lower(): value for key, value in self.DEFAULT_OPTIONS.items()}
        merged.update({str(key).lower(): value for key, value in dict(options).items()})
        self.settings = ReadOptions.parse(merged)
        if not self.settings.storage_options and self.HADOOP_S3:
            self.settings = dataclasses.replace(self.settings, storage_options={HADOOP_S3: dict(self.HADOOP_S3)})

    def schema(self) -> StructType:
        try:
            fields, _ = _partition_fields(self.settings)
        except PathNotFoundError as error:
            raise error.with_traceback(None) from None  # Spark shows the traceback: one line of it says enough
        if self.settings.report:
            return report_schema(fields)
        return record_schema(fields, self.settings.corrupt_rows)

    def reader(self, schema: StructType) -> DataSourceReader:
        options = _for_schema(self.settings, schema)
        pushdown = _pushdown_of_planner()
        if (self.PUSHDOWN if pushdown is None else pushdown) and options.pushdown:
            return BinlogPushdownReader(options, schema, prune=PRUNES_PER_QUERY)
        return BinlogReader(options, schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return GuardedStreamReader(_for_schema(self.settings, schema), schema)


class GuardedStreamReader(ImportGuarded, BinlogStreamReader):
    """``BinlogStreamReader``, pickled behind the import guard."""


class BinlogReader(ImportGuarded, DataSourceReader):
    def __init__(self, options: ReadOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema
        self.filters: list[Comparison] = []

    def partitions(self) -> Sequence[InputPartition]:
        storage = Storage(self.options.storage_options)
        try:
            files = list_segment_files(storage, self.options)
        except PathNotFoundError as error:
            raise error.with_traceback(None) from None
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
        judged = zoned(usable(filters, [field.name for field in self.schema.fields]), self.options.zone)
        if self.prune:
            self.filters = judged
        elif judged:
            PUSHDOWN_LOG.info(
                "pushed filters %s prune nothing: Spark %s reads every query of a DataFrame with one kept plan",
                judged,
                SPARK_VERSION,
            )
        return filters
