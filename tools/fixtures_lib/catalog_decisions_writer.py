"""Cases that pin the spec's judgement calls (writer): each tells the spec's reading from the other plausible one.

The decision each case pins, and the mutant of the reference that takes the other reading, are in
conformance/mutants/decisions_writer.py; the suite must fail every mutant (spec/conformance.md section 7.3).
"""

from __future__ import annotations

from .catalog import Catalog


def add(cat: Catalog) -> None:
    del cat  # no case yet
