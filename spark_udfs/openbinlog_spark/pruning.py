"""Filter pushdown: which segments cannot hold a matching row, judged from their headers.

Spark 4.1+ hands ``pushFilters`` the conjuncts of a query's filter when
``spark.sql.python.filterPushdown.enabled`` is true. Pruning only drops
segments whose every row would fail a filter; Spark still evaluates every
filter on the rows that are read, so pruning never changes a result.

What a version 2 header proves (spec 3.2, 4.4):
- ``index``: the records of a segment carry ``base_index`` up to the active
  slot's ``next_index - 1``.
- ``timestamp``: writers never write a timestamp below the active slot's
  ``last_timestamp_us`` (W-9), so a segment's records lie between its
  predecessor's ``last_timestamp_us`` and its own. ``created_us`` is not used:
  no requirement ties record timestamps to it, and a clock that steps back
  writes records older than their segment.
- ``log``: the segment's number; partition columns: the directory names.
Legacy version 1 records have no timestamp, so no timestamp comparison can
match them.

Within a segment, ``row_bounds`` turns the same filters into the range of
indexes and times a matching row can have, which the planner narrows a read
to with the segment's sparse index (spec 18.5; ``openbinlog_spark.indexes``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

from pyspark.sql.datasource import (
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
)

RANGE_COLUMNS = ("log", "index", "timestamp")
_COMPARISONS = (EqualTo, GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual, In)
Comparison = EqualTo | GreaterThan | GreaterThanOrEqual | LessThan | LessThanOrEqual | In


@dataclass(frozen=True, slots=True)
class Bounds:
    """The values a column takes in a segment: ``low``..``high`` (None: unbounded), or always null."""

    low: Any = None
    high: Any = None
    null: bool = False


ALWAYS_NULL = Bounds(null=True)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def _literal(value: Any) -> Any:
    """A filter's value as the column holds it: a time in microseconds since the epoch, exactly (a time
    without a zone is UTC here: ``zoned`` gives the ones Spark pushes the session time zone first)."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return (value - _EPOCH) // _MICROSECOND
    return value


def _in_zone(value: Any, zone: tzinfo) -> Any:
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=zone)
    return value


def zoned(filters: Sequence[Comparison], zone: tzinfo) -> list[Comparison]:
    """``filters`` with each time that has no zone (a ``TIMESTAMP_NTZ`` value) taken in ``zone``, the session
    time zone: what Spark does to compare one with a ``timestamp``."""
    found: list[Comparison] = []
    for item in filters:
        if isinstance(item, In):
            found.append(dataclasses.replace(item, value=tuple(_in_zone(value, zone) for value in item.value)))
        else:
            found.append(dataclasses.replace(item, value=_in_zone(item.value, zone)))
    return found


@dataclass(frozen=True, slots=True)
class RowBounds:
    """The indexes and times a row matching every pushed filter can have: inclusive bounds, None for none."""

    index_low: int | None = None
    index_high: int | None = None
    time_low_us: int | None = None
    time_high_us: int | None = None

    def __bool__(self) -> bool:
        return any(
            bound is not None for bound in (self.index_low, self.index_high, self.time_low_us, self.time_high_us)
        )


def _interval(item: Comparison) -> tuple[int | None, int | None] | None:
    """The inclusive range of integers ``item`` lets through; None when it gives none to narrow by."""
    if isinstance(item, In):
        values = [_literal(value) for value in item.value]
        if not values or not all(isinstance(value, int) for value in values):
            return None
        return min(values), max(values)
    value = _literal(item.value)
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    if isinstance(item, EqualTo):
        return value, value
    if isinstance(item, GreaterThan):
        return value + 1, None
    if isinstance(item, GreaterThanOrEqual):
        return value, None
    if isinstance(item, LessThan):
        return None, value - 1
    if isinstance(item, LessThanOrEqual):
        return None, value
    return None


def row_bounds(filters: Sequence[Comparison]) -> RowBounds:
    """The bounds of ``index`` and ``timestamp`` that every filter (a conjunct) allows together.

    Times are widened by a microsecond each way: a bound only saves reading,
    and a time Spark pushed through a float must not lose a row at its edge.
    """
    found: dict[str, list[int | None]] = {"index": [None, None], "timestamp": [None, None]}
    for item in filters:
        column = item.attribute[0]
        interval = _interval(item) if column in found else None
        if interval is None:
            continue
        low, high = found[column]
        if interval[0] is not None:
            low = interval[0] if low is None else max(low, interval[0])
        if interval[1] is not None:
            high = interval[1] if high is None else min(high, interval[1])
        found[column] = [low, high]
    (index_low, index_high), (time_low, time_high) = found["index"], found["timestamp"]
    return RowBounds(
        index_low=index_low,
        index_high=index_high,
        time_low_us=None if time_low is None else time_low - 1,
        time_high_us=None if time_high is None else time_high + 1,
    )


def usable(filters: Sequence[Filter], partition_names: Sequence[str]) -> list[Comparison]:
    """The filters pruning can judge: comparisons of one top-level column with literals."""
    columns = set(RANGE_COLUMNS) | set(partition_names)
    return [
        item
        for item in filters
        if isinstance(item, _COMPARISONS) and len(item.attribute) == 1 and item.attribute[0] in columns
    ]


def _may_match(item: Comparison, bounds: Bounds) -> bool:
    if bounds.null:
        return False  # a comparison with null is never true
    low, high = bounds.low, bounds.high
    try:
        if isinstance(item, In):
            return any(_may_match(EqualTo(item.attribute, value), bounds) for value in item.value)
        value = _literal(item.value)
        if value is None:
            return False
        if isinstance(item, EqualTo):
            return (low is None or low <= value) and (high is None or value <= high)
        if isinstance(item, GreaterThan):
            return high is None or high > value
        if isinstance(item, GreaterThanOrEqual):
            return high is None or high >= value
        if isinstance(item, LessThan):
            return low is None or low < value
        if isinstance(item, LessThanOrEqual):
            return low is None or low <= value
    except TypeError:
        return True  # values of types that do not compare: keep the segment
    return True


def may_match(filters: Sequence[Comparison], bounds: Mapping[str, Bounds]) -> bool:
    """False only when some filter fails for every value the bounds allow."""
    return all(_may_match(item, bounds[item.attribute[0]]) for item in filters if item.attribute[0] in bounds)


def partition_bounds(values: Mapping[str, Any]) -> dict[str, Bounds]:
    return {name: ALWAYS_NULL if value is None else Bounds(value, value) for name, value in values.items()}
