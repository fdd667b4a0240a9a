"""The JVM source (``binlog-jvm``) finds logs as the Python source (``binlog``) does.

Several load paths, globs, ``file:`` URLs, a directory of many logs, Spark's file options
(``pathGlobFilter``, ``recursiveFileLookup``, ``basePath``, ``modifiedBefore``,
``modifiedAfter``, ``ignoreMissingFiles``) and ``key=value`` partition
directories: on each layout both sources must give the same schema (columns,
types, order) and the same rows, every column included. Filters on partition
columns must return the rows Spark's evaluation keeps, and prune whole logs.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from logtools import segment
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.utils import AnalysisException
from test_spark_semantics import build_log, damaged_log

from openbinlog_spark.globs import expand_braces

Layout = tuple[list[str], dict[str, str]]  # load paths, options

# A partitioned tree: a date, a string, an int (one null) and a long column between the base and the logs.
TREE = {
    "day=2026-01-01/region=eu/hour=7/batch=1": 20,
    "day=2026-01-01/region=us/hour=__HIVE_DEFAULT_PARTITION__/batch=2": 30,
    "day=2026-01-02/region=e%20u/hour=23/batch=3000000000": 40,
}


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tree")
    for number, (below, records) in enumerate(TREE.items()):
        build_log(root / below / "log", records=records, cut_every=7 + number)
    # A damaged log among them: its damage rows carry the partition values too.
    damaged_log(root / "day=2026-01-03" / "region=eu" / "hour=1" / "batch=4", "record_header_bit_flip")
    # Hidden directories and a stray file are not read (as Spark skips them).
    build_log(root / "_hidden" / "log", records=5)
    build_log(root / "day=2026-01-01" / ".staging" / "log", records=5)
    (root / "day=2026-01-01" / "notes.txt").write_text("not a segment")
    return root


def _row(row: Any) -> tuple[Any, ...]:
    return tuple(_plain(value) for value in row)


def _plain(value: Any) -> Any:
    if isinstance(value, bytearray):
        return bytes(value)
    if hasattr(value, "asDict"):  # _error: its message is each implementation's own wording, as test_jvm_source
        return tuple(sorted((key, item) for key, item in value.asDict().items() if key != "message"))
    return value


def _rows(frame: DataFrame) -> list[tuple[Any, ...]]:
    return sorted((_row(row) for row in frame.collect()), key=repr)


def _both(spark: SparkSession, paths: list[str], options: dict[str, str]) -> Iterator[DataFrame]:
    for name in ("binlog", "binlog-jvm"):
        reader = spark.read.format(name).options(**options)
        yield reader.load(paths[0] if len(paths) == 1 else paths)


def _same(spark: SparkSession, paths: list[str], options: dict[str, str] | None = None) -> list[tuple[Any, ...]]:
    """The rows both sources read from ``paths``, once checked equal, schema and all."""
    python, jvm = _both(spark, paths, {"maxPartitionBytes": "4k", **(options or {})})
    assert jvm.schema == python.schema
    rows = _rows(jvm)
    assert rows == _rows(python)
    return rows


def _columns(rows: list[tuple[Any, ...]], frame_columns: list[str], *names: str) -> set[tuple[Any, ...]]:
    at = [frame_columns.index(name) for name in names]
    return {tuple(row[i] for i in at) for row in rows}


def test_a_partitioned_tree_gives_typed_partition_columns_and_the_same_rows(spark: SparkSession, tree: Path) -> None:
    rows = _same(spark, [str(tree)])
    frame = spark.read.format("binlog-jvm").load(str(tree))
    assert [(field.name, field.dataType.simpleString()) for field in frame.schema.fields[7:11]] == [
        ("day", "date"),
        ("region", "string"),
        ("hour", "int"),
        ("batch", "bigint"),
    ]
    assert frame.columns[11:] == ["_corrupt_record", "_error"]
    values = _columns(rows, frame.columns, "day", "region", "hour", "batch")
    assert values == {
        (date(2026, 1, 1), "eu", 7, 1),
        (date(2026, 1, 1), "us", None, 2),
        (date(2026, 1, 2), "e u", 23, 3_000_000_000),
        (date(2026, 1, 3), "eu", 1, 4),
    }
    assert sum(row[frame.columns.index("_error")] is not None for row in rows) >= 1
    # Every record, but the one whose header is damaged.
    assert len([row for row in rows if row[frame.columns.index("_error")] is None]) == 90 + 239


@pytest.mark.parametrize(
    "layout",
    [
        "two paths",
        "glob of directories",
        "glob of segment files",
        "recursiveFileLookup",
        "pathGlobFilter",
        "basePath",
        "dropmalformed",
    ],
)
def test_each_layout_reads_the_same_rows_as_the_python_source(spark: SparkSession, tree: Path, layout: str) -> None:
    eu = tree / "day=2026-01-01" / "region=eu"
    layouts: dict[str, Layout] = {
        "two paths": ([str(eu), str(tree / "day=2026-01-02")], {}),
        "glob of directories": ([str(tree / "day=2026-01-0[12]" / "region=*")], {}),
        "glob of segment files": ([str(eu / "hour=7" / "batch=1" / "log" / "0000000[23].dat")], {}),
        "recursiveFileLookup": ([str(tree)], {"recursiveFileLookup": "true"}),
        "pathGlobFilter": ([str(tree)], {"pathGlobFilter": "0000000{1,3}.dat"}),
        "basePath": ([str(eu), str(tree / "day=2026-01-02")], {"basePath": str(tree)}),
        "dropmalformed": ([str(tree)], {"mode": "DROPMALFORMED"}),
    }
    paths, options = layouts[layout]
    rows = _same(spark, paths, options)
    columns = spark.read.format("binlog-jvm").options(**options).load(paths[0] if len(paths) == 1 else paths).columns
    # The segment files rows come from (the row of a missing segment has no offset, and names the log directory).
    files = {row[columns.index("file")] for row in rows if row[1] is not None}
    logs = {file.rsplit("/", 1)[0] for file in files}
    segments = {int(file.rsplit("/", 1)[1][:8]) for file in files}
    partition_columns = [name for name in columns[7:] if name not in ("_corrupt_record", "_error")]
    expected: dict[str, tuple[int, set[int] | None, list[str]]] = {
        "two paths": (2, None, ["hour", "batch", "region"]),  # each load path is its own base
        "glob of directories": (3, None, ["hour", "batch"]),
        "glob of segment files": (1, {2, 3}, []),
        "recursiveFileLookup": (4, None, []),
        "pathGlobFilter": (4, {1, 3}, ["day", "region", "hour", "batch"]),
        "basePath": (2, None, ["day", "region", "hour", "batch"]),
        "dropmalformed": (4, None, ["day", "region", "hour", "batch"]),
    }
    count, logs_read, partitions = expected[layout]
    assert len(logs) == count
    assert logs_read is None or segments == logs_read
    assert partition_columns == partitions


def test_a_directory_of_logs_without_partitions_reads_every_log(spark: SparkSession, tmp_path: Path) -> None:
    build_log(tmp_path / "billing", records=20, cut_every=10)
    build_log(tmp_path / "audit" / "eu", records=30)
    rows = _same(spark, [str(tmp_path)])
    assert len(rows) == 50
    assert spark.read.format("binlog-jvm").load(str(tmp_path)).columns[7] == "_corrupt_record"


def test_modification_times_select_segment_files(spark: SparkSession, tmp_path: Path) -> None:
    directory = build_log(tmp_path / "log")
    os.utime(segment(directory, 1), (1_600_000_000, 1_600_000_000))  # 2020-09-13T12:26:40Z
    for options, logs in (
        ({"modifiedAfter": "2021-01-01T00:00:00"}, {2, 3}),
        ({"modifiedBefore": "2021-01-01T00:00:00"}, {1}),
        ({"modifiedAfter": "2020-09-13T14:26:39+02:00"}, {1, 2, 3}),
        ({"modifiedAfter": "2020-09-13T14:26:41+02:00"}, {2, 3}),
        ({"modifiedAfter": "2020-09-13 14:26:41", "timeZone": "Europe/Paris"}, {2, 3}),
        ({"modifiedBefore": "2020-09-13T14:26:41", "timeZone": "+02:00"}, {1}),
    ):
        rows = _same(spark, [str(directory)], options)
        assert {row[0] for row in rows} == logs, options


def test_a_partition_value_that_changed_type_since_load_fails_the_query(spark: SparkSession, tmp_path: Path) -> None:
    build_log(tmp_path / "hour=7" / "log", records=10)
    frame = spark.read.format("binlog-jvm").load(str(tmp_path))
    assert frame.schema["hour"].dataType.simpleString() == "int"
    build_log(tmp_path / "hour=late" / "log", records=10)
    with pytest.raises(Exception, match=r"hour=late/log: the value 'late' of hour is not of its type at load\(\), int"):
        frame.collect()
    assert spark.read.format("binlog-jvm").load(str(tmp_path)).schema["hour"].dataType.simpleString() == "string"


A, B, C = TREE
DAMAGED = "day=2026-01-03/region=eu/hour=1/batch=4"


def _segments(tree: Path, below: str) -> list[Path]:
    return sorted((tree / below).rglob("0*.dat"))


@pytest.mark.parametrize(
    ("condition", "kept"),
    [
        ("day = date'2026-01-02'", {C}),
        ("region in ('us', 'e u') and day < date'2026-01-02'", {B}),
        ("hour > 7", {C}),
        ("batch <= 1", {A}),
        ("hour is null", None),  # IsNull is not judged: Spark alone filters
        ("batch >= 3000000000 or region = 'us'", None),  # nor is an Or
    ],
)
def test_filters_on_partition_columns_return_the_rows_spark_keeps_and_prune_logs(
    spark: SparkSession, tree: Path, condition: str, kept: set[str] | None
) -> None:
    python, jvm = _both(spark, [str(tree)], {"maxPartitionBytes": "4k"})
    query = jvm.where(condition)
    rows = _rows(query)
    assert rows and rows == _rows(python.where(condition))
    plan = query._jdf.queryExecution().executedPlan().toString()
    # Every segment file of a log whose partition values fail a filter is pruned, and no other.
    pruned = 0 if kept is None else sum(len(_segments(tree, below)) for below in {A, B, C, DAMAGED} - kept)
    assert f"SegmentsPruned: {pruned} " in plan + " "
    if kept is not None:
        assert "PushedFilters: []" not in plan


def test_partition_and_log_filters_prune_together(spark: SparkSession, tree: Path) -> None:
    jvm = spark.read.format("binlog-jvm").option("maxPartitionBytes", "4k").load(str(tree))
    query = jvm.where("batch = 2 and log = 2")
    rows = _rows(query.select("log", "index", "batch", "file"))
    assert {row[0] for row in rows} == {2} and {row[2] for row in rows} == {2} and len(rows) == 8
    # Kept: segments 1 and 2 of log B (the chain check after segment 1 may report damage at log 2).
    pruned = sum(len(_segments(tree, below)) for below in (A, C, DAMAGED)) + len(_segments(tree, B)) - 2
    assert f"SegmentsPruned: {pruned}" in query._jdf.queryExecution().executedPlan().toString()


def test_missing_paths_are_path_not_found_unless_ignore_missing_files(spark: SparkSession, tree: Path) -> None:
    present = str(tree / "day=2026-01-02")
    for missing in (str(tree / "absent"), str(tree / "absent*")):
        with pytest.raises(AnalysisException, match=rf"PATH_NOT_FOUND.*{missing.replace('*', '[*]')}"):
            spark.read.format("binlog-jvm").load([present, missing])
    rows = _same(spark, [present, str(tree / "absent")], {"ignoreMissingFiles": "true"})
    assert len(rows) == 40


def test_a_directory_that_is_not_a_log_fails_at_load(spark: SparkSession, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(Exception, match=r"io_error in .*empty: not a log directory"):
        spark.read.format("binlog-jvm").load(str(tmp_path / "empty"))


@pytest.mark.parametrize("options", [{"maxPartitionNum": "1"}, {"openCostInBytes": "0", "maxPartitionBytes": "64m"}])
def test_logs_packed_into_one_task_keep_each_logs_partition_values(
    spark: SparkSession, tree: Path, options: dict[str, str]
) -> None:
    """Every log of the tree in one task: each batch carries its own log's partition values."""
    _same(spark, [str(tree)], options)
    frame = spark.read.format("binlog-jvm").options(**options).load(str(tree))
    frame.collect()
    assert "Tasks: 1," in frame._jdf.queryExecution().executedPlan().toString()


def test_a_log_the_load_paths_give_two_sets_of_partition_values_is_refused(spark: SparkSession, tmp_path: Path) -> None:
    """A log reached from the root (a=1) and through its own segment (no partition) would need two rows of values;
    the read fails at load(), as Spark's file sources ask for basePath, never giving the log either set."""
    build_log(tmp_path / "a=1" / "log", records=30, cut_every=10)
    build_log(tmp_path / "a=2" / "log", records=5)
    paths = [str(tmp_path), str(tmp_path / "a=1" / "log" / "00000001.dat")]
    for order in (paths, paths[::-1]):
        with pytest.raises(Exception, match="reached through load paths that give it different partition values"):
            spark.read.format("binlog-jvm").load(order).collect()
    assert _same(spark, paths, {"basePath": str(tmp_path)})  # one base: one row of values


def test_partition_columns_come_in_the_python_sources_order_beyond_u_ffff(spark: SparkSession, tmp_path: Path) -> None:
    build_log(tmp_path / "\uff5e" / "b=1" / "log", records=5)
    build_log(tmp_path / "\U0001f600" / "a=2" / "log", records=5)
    assert _same(spark, [str(tmp_path)])
    names = spark.read.format("binlog-jvm").load(str(tmp_path)).columns
    assert names.index("b") < names.index("a")  # U+FF5E before U+1F600 by code point, not by UTF-16 unit


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"pathGlobFilter": "[z-a]*"}, "option pathGlobFilter: '\\[z-a\\]\\*' is not a glob"),
        ({"columnNameOfCorruptRecord": "payload"}, "option columnNameOfCorruptRecord: 'payload' names a column"),
        ({"columnNameOfCorruptRecord": "region"}, "option columnNameOfCorruptRecord: 'region' names a partition"),
    ],
)
def test_options_that_clash_with_the_layout_are_refused_at_load(
    spark: SparkSession, tree: Path, options: dict[str, str], message: str
) -> None:
    with pytest.raises(Exception, match=message):
        spark.read.format("binlog-jvm").options(**options).load(str(tree)).collect()


@pytest.mark.parametrize("form", ["file:{}", "file://{}", "file:///{}"])  # file:/p, file:///p, file:////p
def test_file_urls_read_the_rows_of_the_plain_path_and_name_files_by_it(
    spark: SparkSession, tree: Path, form: str
) -> None:
    """Spark and Hadoop write local paths as ``file:/p`` (``Path.toUri``): both sources read them as the plain
    path, and the ``file`` column (part of every row compared) is the plain path, as for a plain load path."""
    assert _same(spark, [form.format(tree)]) == _same(spark, [str(tree)])
    eu = tree / "day=2026-01-01" / "region=eu"
    below = _same(spark, [form.format(eu)], {"basePath": form.format(tree)})
    assert below == _same(spark, [str(eu)], {"basePath": str(tree)})
    assert len(below[0]) == 13  # the partition columns from basePath: day and region too


@pytest.mark.parametrize("host", ["localhost", "otherhost"])
def test_a_file_url_that_names_a_host_is_refused_at_load(spark: SparkSession, tree: Path, host: str) -> None:
    """Hadoop refuses both (``Wrong FS``): read as a local path, ``file://otherhost/p`` would read this machine's."""
    with pytest.raises(AnalysisException, match=f"file://{host}/.*not of the host '{host}'.*io_error"):
        spark.read.format("binlog").load(f"file://{host}{tree}")
    # The JVM source's load error is the core's io_error (BinlogException), naming the URL and what to write.
    refused = rf"BinlogException: io_error in file://{host}{tree}: .*not of the host '{host}': write file:/path"
    for path, options in ((f"file://{host}{tree}", {}), (str(tree), {"basePath": f"file://{host}{tree}"})):
        with pytest.raises(Exception, match=refused):
            spark.read.format("binlog-jvm").options(**options).load(path)


def _files(rows: list[tuple[Any, ...]]) -> set[str]:
    """The segment files rows come from (``file`` is the column at 6)."""
    return {row[6] for row in rows}


@pytest.mark.parametrize("form", ["file:{}", "file://{}", "file:///{}"])
def test_a_percent_in_a_file_url_names_the_directory_so_named_not_the_decoded_one(
    spark: SparkSession, tmp_path: Path, form: str
) -> None:
    """Hadoop's ``Path`` takes the rest of a ``file:`` URL literally: ``file:/x/a%20b`` is the directory ``a%20b``.
    Decoded, it would be ``a b``, another log whose rows would come back without an error."""
    build_log(tmp_path / "a%20b", records=10)
    build_log(tmp_path / "a b", records=20, cut_every=7)
    for name, count in (("a%20b", 10), ("a b", 20)):
        url = form.format(tmp_path / name)
        rows = _same(spark, [url])
        assert len(rows) == count
        assert {file.rsplit("/", 1)[0] for file in _files(rows)} == {str(tmp_path / name)}
        # The files Spark's own file source lists for the URL are those the rows come from.
        listed = spark.read.format("binaryFile").load(url + "/*.dat").select("path").collect()
        assert {row.path.replace("file:", "", 1) for row in listed} == _files(rows)


def test_spaces_and_globs_in_file_urls_read_as_in_plain_paths(spark: SparkSession, tmp_path: Path) -> None:
    """A space, ``[...]`` or ``?`` in a ``file:`` URL is what it is in a plain path (a name's, a glob's), as Hadoop
    reads them: no URI syntax error. A plain path with ``[1]`` is a glob (as in Spark), which ``d [1]`` is not."""
    build_log(tmp_path / "d 1", records=10)
    build_log(tmp_path / "d 2", records=20, cut_every=7)
    build_log(tmp_path / "d [1]", records=5)
    for below, logs in (("d 1", {"d 1"}), ("d [12]", {"d 1", "d 2"}), ("d ?", {"d 1", "d 2"}), ("d [1]", {"d 1"})):
        plain = str(tmp_path / below)
        rows = _same(spark, [plain])
        assert {file.rsplit("/", 2)[1] for file in _files(rows)} == logs
        for form in ("file:{}", "file://{}"):
            assert _same(spark, [form.format(plain)]) == rows
            assert _same(spark, [form.format(plain)], {"basePath": form.format(tmp_path)}) == rows


@pytest.fixture(scope="module")
def based(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``root/day=1/log``, and beside it what a wrong basePath names: a directory that is a string prefix of
    ``day=1`` but not above it, and another directory."""
    top = tmp_path_factory.mktemp("based")
    build_log(top / "root" / "day=1" / "log", records=10)
    (top / "root" / "day").mkdir()
    (top / "other").mkdir()
    return top


# basePath, relative to the fixture (None: empty), what both sources say, and whether Spark's file sources refuse it.
WRONG_BASE_PATHS = {
    "empty": (None, "option basePath: '' names no directory", True),
    "missing": ("absent", "option basePath: '{}' does not exist", True),
    "glob": ("ro*", "option basePath: '{}' does not exist (it is one directory, never a glob)", True),
    "file": ("root/day=1/log/00000001.dat", "option basePath: '{}' is not a directory", True),
    "not above": ("other", "option basePath: '{}' is neither the load path '{load}' nor a directory above it", True),
    "below": ("root/day=1/log", "option basePath: '{}' is neither the load path '{load}' nor", True),
    # Spark's file sources compare strings: they take root/day as the base of root/day=1, and infer partitions
    # past it. Here the base must be a directory above the load path.
    "a string prefix": ("root/day", "option basePath: '{}' is neither the load path '{load}' nor", False),
}


@pytest.mark.parametrize("case", WRONG_BASE_PATHS)
def test_a_base_path_that_is_not_a_directory_above_every_load_path_is_refused_at_load(
    spark: SparkSession, based: Path, case: str
) -> None:
    """Either source read these without an error and without the partition columns; Spark's refuse them."""
    below, message, spark_refuses = WRONG_BASE_PATHS[case]
    base = "" if below is None else str(based / below)
    load = str(based / "root")
    for name in ("binlog", "binlog-jvm"):
        with pytest.raises(Exception, match=re.escape(message.format(base, load=load))):
            spark.read.format(name).option("basePath", base).load(load)
        # A glob's matches are each checked, as Spark checks them.
        with pytest.raises(Exception, match=re.escape(message.format(base, load=load + "/day=1"))):
            spark.read.format(name).option("basePath", base).load(str(based / "ro*" / "day=1"))
    if spark_refuses:
        with pytest.raises(Exception, match=r"basePath|empty string"):
            spark.read.format("binaryFile").option("basePath", base).load(load)
    # recursiveFileLookup infers no partitions: basePath is not used, as Spark's file sources then ignore it.
    assert len(_same(spark, [load], {"basePath": base, "recursiveFileLookup": "true"})) == 10


def test_a_missing_load_path_beside_the_base_path_is_path_not_found_in_both_sources(
    spark: SparkSession, based: Path
) -> None:
    """What is wrong with it is that it is missing: the Python source said basePath, the JVM source PATH_NOT_FOUND;
    with ignoreMissingFiles both skip it."""
    paths = [str(based / "root" / "day=1"), str(based / "absent")]
    options = {"basePath": str(based / "root")}
    for name in ("binlog", "binlog-jvm"):
        with pytest.raises(AnalysisException, match=rf"PATH_NOT_FOUND.*{re.escape(paths[1])}"):
            spark.read.format(name).options(**options).load(paths)
    assert len(_same(spark, paths, {**options, "ignoreMissingFiles": "true"})) == 10


@pytest.mark.parametrize("form", ["{}", "{}/", "{}/day=1/..", "file:{}", "file:///{}"])
def test_a_base_path_above_the_load_path_gives_its_partition_columns_in_every_form(
    spark: SparkSession, based: Path, form: str
) -> None:
    load = str(based / "root" / "day=1" / "log")
    rows = _same(spark, [load], {"basePath": form.format(based / "root")})
    assert {row[7] for row in rows} == {1}  # day, after the 7 columns of a record
    assert _same(spark, [load], {"basePath": load}) == _same(spark, [load])  # the load path itself: no columns


def test_a_backslash_escapes_a_glob_character_in_a_load_path_as_in_spark(spark: SparkSession, tmp_path: Path) -> None:
    """Hadoop's glob escape: ``glob\\[1\\]`` is the directory ``glob[1]``, which the Python source could not load
    (PATH_NOT_FOUND); ``glob[1]`` stays a glob, of ``glob1``; ``glob\\.1`` names ``glob.1``, as in Spark (the
    sources looked for a directory ``glob\\.1``). Both read what Spark's file sources list."""
    build_log(tmp_path / "glob[1]", records=10)
    build_log(tmp_path / "glob1", records=20, cut_every=7)
    build_log(tmp_path / "glob.1", records=5)
    cases = (("glob\\[1\\]", "glob[1]"), ("g*\\[1\\]", "glob[1]"), ("glob[1]", "glob1"), ("glob\\.1", "glob.1"))
    for below, log in cases:
        path = str(tmp_path / below)
        rows = _same(spark, [path])
        assert {file.rsplit("/", 2)[1] for file in _files(rows)} == {log}
        listed = spark.read.format("binaryFile").load(path + "/*.dat").select("path").collect()
        assert {row.path.replace("file:", "", 1) for row in listed} == _files(rows)


@pytest.mark.parametrize("below", ["glob\\d", "glob1\\"])
def test_a_backslash_hadoop_takes_for_a_regular_expression_is_refused(
    spark: SparkSession, tmp_path: Path, below: str
) -> None:
    """Hadoop makes ``\\d`` a digit and fails on ``\\o`` or a last backslash: the Python source refuses them all, never
    reading a directory whose name has the backslash."""
    build_log(tmp_path / below, records=5)
    with pytest.raises(Exception, match=r"not a glob: a backslash escapes only ASCII punctuation or a space"):
        spark.read.format("binlog").load(str(tmp_path / below))


@pytest.fixture(scope="module")
def apps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Logs whose directory names braces pick among: ``lit{b}`` and ``a,b`` hold a brace and a comma themselves."""
    root = tmp_path_factory.mktemp("apps")
    for below in ("app1", "app2", "app3", "lit{b}", "a,b", "other/x", "other/y"):
        build_log(root / below, records=12, cut_every=5)
    return root


# A load path below the fixture, and the logs it names.
BRACE_GLOBS = {
    "{app1,app2}": {"app1", "app2"},
    "app{1,{2,3}}": {"app1", "app2", "app3"},  # nested
    "{app*,lit?b?}": {"app1", "app2", "app3", "lit{b}"},  # with * and ?
    "{app[13],other/?}": {"app1", "app3", "other/x", "other/y"},  # with [...], and a group that holds a '/'
    "other/{x,y}": {"other/x", "other/y"},
    "{other/x,app2}": {"other/x", "app2"},
    "{lit\\{b\\},app3}": {"lit{b}", "app3"},  # an escaped brace inside a group
    "lit\\{b\\}": {"lit{b}"},  # escaped braces alone: a name
    "{a\\,b,app1}": {"a,b", "app1"},  # an escaped comma
}


# The examples of Hadoop's GlobExpander: a pattern, and the patterns its groups that hold a '/' expand to.
HADOOP_EXPANSIONS = {
    "{a/b}": ["a/b"],
    "/}{a/b}": ["/}a/b"],
    "p{a/b,c/d}s": ["pa/bs", "pc/ds"],
    "{a/b,c/d,{e,f}}": ["a/b", "c/d", "{e,f}"],
    "{a/b,c/d}{e,f}": ["a/b{e,f}", "c/d{e,f}"],
    "{a,b}/{b,{c/d,e/f}}": ["{a,b}/b", "{a,b}/c/d", "{a,b}/e/f"],
    "{a,b}/{c/\\d}": ["{a,b}/c/d"],
}


@pytest.mark.parametrize("pattern", sorted(HADOOP_EXPANSIONS))
def test_brace_groups_holding_a_slash_expand_as_hadoops_glob_expander(pattern: str) -> None:
    assert expand_braces(pattern) == HADOOP_EXPANSIONS[pattern]


@pytest.mark.parametrize("below", sorted(BRACE_GLOBS))
def test_braces_in_a_load_path_list_the_logs_spark_lists_in_both_sources(
    spark: SparkSession, apps: Path, below: str
) -> None:
    """Hadoop's glob braces: the Python source read ``{app1,app2}`` as a directory so named (PATH_NOT_FOUND), and
    the JVM source failed on a group holding a '/'. Both now read the logs Spark's own file sources list."""
    path = str(apps / below)
    rows = _same(spark, [path])
    assert {posixpath.relpath(file.rsplit("/", 1)[0], apps) for file in _files(rows)} == BRACE_GLOBS[below]
    listed = spark.read.format("binaryFile").option("recursiveFileLookup", "true").load(path).select("path")
    assert {row.path.replace("file:", "", 1) for row in listed.collect()} == _files(rows)


@pytest.mark.parametrize(("pattern", "logs"), [("0000000[^1].dat", {2, 3}), ("0000000[!2].dat", {1, 3})])
def test_path_glob_filter_reads_a_negated_set_as_hadoop_does_in_both_sources(
    spark: SparkSession, tmp_path: Path, pattern: str, logs: set[int]
) -> None:
    """Hadoop's ``[^1]`` is any character but 1, which the Python source matched as a set of '^' and '1'."""
    build_log(tmp_path / "log", records=30, cut_every=10)
    rows = _same(spark, [str(tmp_path / "log")], {"pathGlobFilter": pattern})
    assert {row[0] for row in rows if row[1] is not None} == logs  # (segment 2 left out: a chain_broken row too)
    listed = spark.read.format("binaryFile").option("pathGlobFilter", pattern).load(str(tmp_path / "log"))
    segments = {file for file in _files(rows) if file.endswith(".dat")}
    assert {row.path.replace("file:", "", 1) for row in listed.select("path").collect()} == segments


def test_a_path_glob_filter_that_is_not_a_glob_is_refused_at_load_by_the_python_source(
    spark: SparkSession, tmp_path: Path
) -> None:
    """As the JVM source refuses it (test_options_that_clash_with_the_layout_are_refused_at_load): the Python
    source read ``[z-a]*`` as a pattern that matched nothing."""
    build_log(tmp_path / "log", records=5)
    with pytest.raises(AnalysisException, match=re.escape("option pathGlobFilter: '[z-a]*' is not a glob: ")):
        spark.read.format("binlog").option("pathGlobFilter", "[z-a]*").load(str(tmp_path / "log"))
