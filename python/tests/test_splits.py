"""Consecutive splits of a segment read by the reference (spec readers 10.5) against one read of the whole log.

Splits ``[256, t1)``, ``[t1, t2)``, ... cut anywhere return the records one read returns and reject with its
error (R-27, R-40): strict, the same error, after some of the records before it; tolerant, the same damage at the
same places, but for what a tolerant split may do at its boundaries (a failure found at ``b(t)`` or where its look
ends is listed with 0 bytes skipped, and the split that holds that record returns it). The asqn checks across
splits are the point: a split starts with ``A`` := -1, so the first asqn after records without one is checked by
the look of the split before them (LOOK, spec 10.2.2).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from strategies import split_log_damages, split_log_items
from test_java_reader import (
    Fault,
    Item,
    assert_same_but_for_split_boundaries,
    damaged_log,
    in_one_piece,
    reference_tolerant_split,
)

from openbinlog_conformance.reference import U64_MAX, read_log, read_log_tolerant, read_split_log

Json = dict[str, Any]


def in_splits(directory: str, cuts: list[int], *, tolerant: bool) -> Json:
    """Segment 1 read in the consecutive splits that start at 256 and at ``cuts``, one after another: the records
    of each, and the first error, which ends the read; tolerant, the damage of each too."""
    records: list[Json] = []
    damage: list[Json] = []
    for start, stop in zip([256, *cuts], [*cuts, U64_MAX], strict=True):
        if tolerant:
            answer = reference_tolerant_split(directory, 1, start, stop)
            damage += answer["damage"]
        else:
            answer = read_split_log(directory, 1, start, stop)
        records += answer["records"]
        if answer["error"] is not None:
            return {"error": answer["error"], "records": records, "damage": damage}
    return {"error": None, "records": records, "damage": damage}


def whole(directory: str, *, tolerant: bool) -> Json:
    return in_one_piece(read_log_tolerant(directory) if tolerant else read_log(directory))


def assert_split_like_whole(directory: Path, cuts: list[int], tolerant: bool) -> None:
    one = whole(str(directory), tolerant=tolerant)
    parts = in_splits(str(directory), cuts, tolerant=tolerant)
    if tolerant:
        assert_same_but_for_split_boundaries(parts, one)
        return
    assert parts["error"] == one["error"]
    if one["error"] is None:
        assert parts["records"] == one["records"]
    else:
        # R-9 for each split: a split returns its records before its error; a record beyond a split's stop is
        # returned by the split that starts before it, which may come after the one that fails.
        assert all(record in one["records"] for record in parts["records"])


@pytest.mark.spec("R-8", "R-9", "R-25", "R-26", "R-27", "R-40")
@settings(max_examples=300, deadline=None)
@given(split_log_items, split_log_damages, st.booleans(), st.data())
@example(items=[(b"", None), (b"", None), (b"", 1)], faults=[("asqn", 0, 3)], tolerant=False, data=None)
@example(items=[(b"", None), (b"", None), (b"", 1)], faults=[("asqn", 0, 3)], tolerant=True, data=None)
@example(items=[(b"", 1), (b"", None), (b"", None), (b"", 1)], faults=[("asqn", 0, 5)], tolerant=False, data=None)
@example(items=[(b"", 1), (b"", None), (b"", None), (b"", 1)], faults=[("asqn", 0, 5)], tolerant=True, data=None)
def test_consecutive_splits_return_and_reject_what_one_read_does(
    items: list[Item], faults: list[Fault], tolerant: bool, data: st.DataObject | None
) -> None:
    """Cut anywhere (or, in the explicit examples, at every record): the splits together read what one read of the
    log reads. The examples are logs whose asqn goes back across records without one, which the splits returned
    silently before LOOK."""
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp, "log")
        records, sizes = damaged_log(directory, items, faults)
        if data is None:
            cuts = [record.offset for record in records if record.offset > 256]
        else:
            size = max(sizes.get(1, 256), 256)
            at_records = st.sampled_from([record.offset for record in records]) if records else st.nothing()
            cut = st.one_of(st.integers(257, size + 64), at_records).filter(lambda offset: offset > 256)
            cuts = data.draw(st.lists(cut, max_size=8, unique=True).map(sorted))
        assert_split_like_whole(directory, cuts, tolerant)


@pytest.mark.spec("R-27")
@pytest.mark.parametrize("tolerant", [False, True])
def test_splits_report_an_asqn_going_back_after_200_records_without_one(tolerant: bool) -> None:
    """Record 1 carries asqn 2 (forged), records 2 to 201 none, record 202 asqn 1: the split that holds record 1
    reports record 202, whatever the splits between them, and its look reads no further than record 202."""
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp, "log")
        items: list[Item] = [(b"a" * 30, 1), *[(b"b" * 30, None)] * 200, (b"c" * 30, 1), *[(b"d" * 30, None)] * 100]
        records, _ = damaged_log(directory, items, [("asqn", 0, 5)])
        failed = {"class": "asqn_not_increasing", "log": 1, "offset": str(records[201].offset), "index": "202"}
        one = whole(str(directory), tolerant=tolerant)
        assert (one["damage"][0] if tolerant else one["error"]) | failed == (
            one["damage"][0] if tolerant else one["error"]
        )
        for step in (1, 100, 1000, 4000):
            cuts = list(range(256 + step, records[-1].offset + 1, step))
            assert_split_like_whole(directory, cuts, tolerant)
            parts = in_splits(str(directory), cuts, tolerant=tolerant)
            reported = parts["damage"][0] if tolerant else parts["error"]
            assert {key: reported[key] for key in failed} == failed
