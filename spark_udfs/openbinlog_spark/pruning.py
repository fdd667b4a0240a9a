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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
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


def _literal(value: Any) -> Any:
    if isinstance(value, datetime):
        return round(value.timestamp() * 1_000_000)
    return value


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
