"""The judgement calls of the spec, each with a mutant of the reference that takes the other reading.

A judgement call is a place where a careful implementer could read the spec
two ways with a different answer through the conformance protocol, or a
SHOULD/MAY with an observable effect. For each, ``decision`` is the reading
the spec takes (stated in the section named), ``other`` the reading the
mutant takes, and ``pinned_by`` the cases that tell the two apart. The list
in conformance/README.md is generated from here.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from openbinlog import walk
from openbinlog_conformance import serve
from openbinlog_conformance.reference_testee import ReferenceTestee

Json = dict[str, Any]


def replace(module: Any, name: str, new: Any) -> None:
    """Replace ``module.name`` everywhere the reference imported it by name."""
    old = getattr(module, name)
    for loaded in list(sys.modules.values()):
        if getattr(loaded, "__name__", "").startswith("openbinlog") and getattr(loaded, name, None) is old:
            setattr(loaded, name, new)


@dataclass(frozen=True)
class Mutant:
    name: str
    section: str
    decision: str
    other: str
    pinned_by: tuple[str, ...]
    patch: Callable[[], None]

    def describe(self) -> Json:
        return {
            "name": self.name,
            "section": self.section,
            "decision": self.decision,
            "other": self.other,
            "pinned_by": list(self.pinned_by),
        }

    def apply(self) -> serve.Handler:
        self.patch()
        return ReferenceTestee()


# -- the mutations ---------------------------------------------------------------------------------------------------


def _blank_by_header_only() -> None:
    def is_blank(source: walk.Source) -> bool:
        head = source.read_at(0, walk.HEADER_SIZE)
        return head.count(0) == len(head)

    replace(walk, "is_blank", is_blank)


def _split_start_searched() -> None:
    def find_boundary(source: walk.Source, start: int, bound: int, *, low: int, high: int) -> tuple[int, int] | None:
        for found, index, length in walk._candidates(source, max(start, walk.HEADER_SIZE), bound, low, high):
            following = found + 4 + length
            if following == bound or walk._continues(source, following, bound, index + 1):
                return found, index
        return None

    replace(walk, "find_boundary", find_boundary)


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "blank_by_header_only",
        "3.5",
        "a segment is blank only when the whole file is at most 256 bytes, all zero",
        "a segment whose first 256 bytes are zero is blank, whatever follows",
        ("must.reader.header.zero_header_last_segment", "must.writer.recover.refuse_zero_header_last_segment"),
        _blank_by_header_only,
    ),
    Mutant(
        "split_start_searched",
        "10.5",
        "offset 256 is a record boundary by definition: a split starting at or below it starts there",
        "a split starting at 256 searches for a boundary like any other, skipping a damaged first record",
        ("must.reader.split.first_record_damaged_from_256", "must.reader.split.first_record_damaged_from_0"),
        _split_start_searched,
    ),
)
