"""Finding segment files: load paths, globs, Spark's generic file options, Hive-style partitions.

A log is the set of segment files in one directory. Below each load path the
listing descends into every directory that is not hidden (names starting
with ``.`` or ``_``, as Spark skips them); ``key=value`` directory names
between the base path and a log become partition columns, unless
``recursiveFileLookup`` is set, which (as in Spark) turns partition
inference off.

Beside each segment the listing notes its sparse index ``NNNNNNNN.idx``
(spec 18) when the same directory holds one, whatever the file options
select: an index is only ever a hint, checked before any use.

A load path is read as Hadoop's globber reads it (``globs``): braces
``{a,b}``, nested or holding a ``/``, beside ``*``, ``?`` and ``[...]``, and a
backslash escaping the character after it (``glob\\[1\\]`` is the directory
``glob[1]``); ``pathGlobFilter`` as Hadoop's ``GlobFilter`` reads it, on
file names. A load path that does not exist, or a glob that matches nothing,
is Spark's ``PATH_NOT_FOUND`` (``PathNotFoundError``), as for Spark's own file
sources.

``basePath``, as in Spark's file sources, is taken literally (never a glob)
and must be a directory that exists and is every load path or above it; any
other is refused (``OptionError``), never read without partition columns.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from typing import Any
from urllib.parse import unquote

from pyspark.errors import AnalysisException
from pyspark.sql.types import DateType, IntegerType, LongType, StringType, StructField

from openbinlog._format import LOCK_NAME, SEGMENT_NAME, index_name
from openbinlog.errors import BinlogIOError, NotALogError

from .conditions import SparkCondition
from .globs import GlobError, glob, glob_pattern, load_pattern
from .options import OptionError, ReadOptions
from .storage import COMPRESSIONS, Stamp, Storage, is_local, listed_stamp, modified_time

# ASCII digits, anchored at both ends: \d takes any Unicode digit and $ a name or value ending in a newline.
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
_DATE = re.compile(r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")
_INT = re.compile(r"\A-?[0-9]+\Z")


class PathNotFoundError(NotALogError, SparkCondition, AnalysisException):
    """A load path that does not exist: Spark's ``PATH_NOT_FOUND`` (SQLSTATE 42K03), the error Spark's file
    sources raise, and the ``NotALogError`` (``io_error``) of the reference reader.

    Raised in the planner, it reaches the user inside Spark's
    ``PYTHON_DATA_SOURCE_ERROR``, its message ``[PATH_NOT_FOUND] Path does not exist`` (``conditions``).
    """

    CONDITION = "PATH_NOT_FOUND"
    SQLSTATE = "42K03"
    TEXT = "Path does not exist: {path}."

    def __init__(self, path: str) -> None:
        NotALogError.__init__(self, "Path does not exist", path=path)
        self._as_condition(self.error_class, path=path)


@dataclass(frozen=True, slots=True)
class SegmentFile:
    """One segment file found by the listing."""

    url: str
    directory: str
    log: int
    compression: str | None
    size: int
    partitions: tuple[tuple[str, str | None], ...]
    index_url: str | None = None  # the segment's sparse index, when its directory lists one
    index_size: int = 0
    stamp: Stamp | None = None  # a remote file's, as the listing describes it (a local file's is taken by a stat)


def _base_path(storage: Storage, options: ReadOptions) -> tuple[Any, str] | None:
    """The file system and path of ``basePath``, checked as Spark's file sources check it: a directory that exists,
    taken literally; None without one, or with ``recursiveFileLookup`` (no partitions, as Spark ignores it then)."""
    given = options.base_path
    if given is None or options.recursive:
        return None
    if not given:
        raise OptionError("option basePath: '' names no directory")
    fs, path = storage.filesystem(given)
    try:
        info = fs.info(path)
    except FileNotFoundError:
        raise OptionError(f"option basePath: '{given}' does not exist (it is one directory, never a glob)") from None
    if info.get("type") != "directory":
        raise OptionError(f"option basePath: '{given}' is not a directory")
    return fs, path.rstrip("/")


def _segment_below(root: str, path: str) -> re.Match[str] | None:
    """The segment-name match of ``path`` (R-1, the core's rule), unless it or a directory above it is hidden."""
    relative = posixpath.relpath(path, root).split("/")
    if any(_hidden(part) for part in relative if part != "."):
        return None
    return SEGMENT_NAME.match(relative[-1])


def _hidden(name: str) -> bool:
    return name.startswith((".", "_"))


def _partition_pairs(relative_dirs: Iterable[str]) -> tuple[tuple[str, str | None], ...]:
    pairs = []
    for part in relative_dirs:
        key, sep, value = part.partition("=")
        if sep and key:
            raw = unquote(value)
            pairs.append((unquote(key), None if raw == NULL_PARTITION else raw))
    return tuple(pairs)


def _siblings(fs: Any, directory: str, cache: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What one listing of ``directory`` holds (path to details), for the index of a segment loaded by its own
    path; nothing when the listing fails, since an index is never needed (R-33)."""
    if directory not in cache:
        try:
            cache[directory] = {info["name"]: info for info in fs.ls(directory, detail=True)}
        except Exception:  # any store's failure: read without indexes
            cache[directory] = {}
    return cache[directory]


def _name_filter(given: str | None) -> re.Pattern[str] | None:
    """``pathGlobFilter`` as Spark reads it, Hadoop's ``GlobFilter``: the pattern a whole file name must match."""
    if not given:
        return None
    try:
        return glob_pattern(given)[0]
    except GlobError as error:
        raise OptionError(f"option pathGlobFilter: '{given}' is not a glob: {error}") from None


def list_segment_files(storage: Storage, options: ReadOptions) -> list[SegmentFile]:
    """Every segment file the load paths and the file options select, with the index beside each if any."""
    if not options.paths:
        raise NotALogError("no path given: use load(path) or load([path, ...])")
    name_filter = _name_filter(options.path_glob_filter)
    found: dict[str, SegmentFile] = {}
    listed: dict[str, dict[str, Any]] = {}  # directories listed for segments given by their own path
    base_path = _base_path(storage, options)
    for given in options.paths:
        fs, path = storage.filesystem(given)
        try:
            pattern, wildcard = load_pattern(path)
            matches = glob(fs, path, local=is_local(given)) if wildcard else [pattern]
        except GlobError as error:
            raise NotALogError(f"not a glob: {error}", path=given) from None
        if not matches and not options.ignore_missing:
            raise PathNotFoundError(given)
        for match in matches:
            try:
                info = fs.info(match)
            except FileNotFoundError:
                if options.ignore_missing:
                    continue
                raise PathNotFoundError(given) from None
            if base_path is not None and (base_path[0] is not fs or not f"{match}/".startswith(f"{base_path[1]}/")):
                # Spark's "Wrong basePath": below no base, the logs would be read without their partition columns.
                at = match if is_local(given) else fs.unstrip_protocol(match)
                raise OptionError(
                    f"option basePath: '{options.base_path}' is neither the load path '{at}' nor a directory above it"
                )
            if info.get("type") == "directory":
                root = match.rstrip("/")
                entries = fs.find(root, detail=True, withdirs=True)
                if (
                    not any(_segment_below(root, path) for path in entries)
                    and posixpath.join(root, LOCK_NAME) not in entries
                ):
                    # Spec R-42: a directory with neither a segment nor LOCK is not a log, never an empty one.
                    raise NotALogError("not a log directory: it holds neither a segment nor LOCK", path=given)
            else:
                root = posixpath.dirname(match)
                entries = {match: info}
            single = info.get("type") != "directory"
            base = root if base_path is None else base_path[1]
            for file_path, file_info in entries.items():
                name = posixpath.basename(file_path)
                hit = _segment_below(root, file_path)
                if hit is None:
                    continue
                if file_info.get("type") == "directory":
                    # A segment that cannot be read is an I/O error, never a gap (spec R-20).
                    raise BinlogIOError("segment is not a regular file", path=file_path)
                if name_filter is not None and not name_filter.fullmatch(name):
                    continue
                modified = modified_time(file_info)
                if options.modified_before is not None and (modified is None or modified >= options.modified_before):
                    continue
                if options.modified_after is not None and (modified is None or modified <= options.modified_after):
                    continue
                directory = posixpath.dirname(file_path)
                partitions: tuple[tuple[str, str | None], ...] = ()
                if not options.recursive and (directory + "/").startswith(base + "/"):
                    below = posixpath.relpath(directory, base)
                    partitions = _partition_pairs([] if below == "." else below.split("/"))
                url = file_path if is_local(given) else fs.unstrip_protocol(file_path)
                directory_url = directory if is_local(given) else fs.unstrip_protocol(directory)
                index_path = posixpath.join(directory, index_name(int(hit[1])))
                index_info = (_siblings(fs, directory, listed) if single else entries).get(index_path)
                indexed = index_info is not None and index_info.get("type") != "directory"
                found[url] = SegmentFile(
                    url=url,
                    directory=directory_url,
                    log=int(hit[1]),
                    compression=COMPRESSIONS.get((hit[2] or "").lstrip(".")),
                    size=int(file_info.get("size") or 0),
                    partitions=partitions,
                    index_url=(index_path if is_local(given) else fs.unstrip_protocol(index_path)) if indexed else None,
                    index_size=int(index_info.get("size") or 0) if index_info is not None else 0,
                    stamp=None if is_local(given) else listed_stamp(file_info),
                )
    return sorted(found.values(), key=lambda segment: (segment.directory, segment.log, segment.url))


def _typed(values: set[str]) -> tuple[Any, Any]:
    """The Spark type Spark's own partition inference would give these values, and a converter."""
    if values and all(_INT.match(value) for value in values):
        numbers = [int(value) for value in values]
        if all(-(2**31) <= number < 2**31 for number in numbers):
            return IntegerType(), int
        if all(-(2**63) <= number < 2**63 for number in numbers):
            return LongType(), int
    if values and all(_DATE.match(value) for value in values):
        try:
            for value in values:
                date.fromisoformat(value)
        except ValueError:
            pass
        else:
            return DateType(), date.fromisoformat
    return StringType(), str


def partition_columns(files: Iterable[SegmentFile]) -> tuple[list[StructField], dict[str, dict[str, Any]]]:
    """Partition columns in order of first appearance, their types, and each file's typed values."""
    names: list[str] = []
    values: dict[str, set[str]] = {}
    files = list(files)
    for segment in files:
        for key, value in segment.partitions:
            if key not in values:
                names.append(key)
                values[key] = set()
            if value is not None:
                values[key].add(value)
    types = {name: _typed(values[name]) for name in names}
    fields = [StructField(name, types[name][0]) for name in names]
    by_file: dict[str, dict[str, Any]] = {}
    for segment in files:
        raw = dict(segment.partitions)
        by_file[segment.url] = {name: None if raw.get(name) is None else types[name][1](raw[name]) for name in names}
    return fields, by_file
