"""Cases that pin the spec's judgement calls: each tells the spec's reading from the other plausible one.

The decision each case pins, and the mutant of the reference that takes the other reading, are listed in
conformance/mutants/decisions.py; the suite must fail every mutant (spec/conformance.md section 7.3).
"""

from __future__ import annotations

from .bases import basic_log
from .catalog import Catalog
from .model import error, reject
from .mutations import Mutation

SEG1 = "00000001.dat"


def add(cat: Catalog) -> None:
    _split_start(cat)


def _split_start(cat: Catalog) -> None:
    """Spec 10.5 step 1: offset 256 is a boundary by definition, so a split from 256 reports a damaged first
    record; a search for a boundary there would step over it silently."""
    basic = basic_log()
    first = basic.published()[0]
    at = first.offset + 40
    flipped = cat.derive(
        "first_record_payload_bit_flip",
        cat.fixtures["basic"],
        Mutation().write(SEG1, at, bytes([basic.files()[SEG1][at] ^ 0x01])),
        "one bit of record 1's payload flipped",
        defect="record 1's payload checksum fails",
        faults=["T10"],
        requirements=["R-27", "R-14"],
    )
    for name, start in (("from_256", 256), ("from_0", 0)):
        cat.read(
            f"must.reader.split.first_record_damaged_{name}",
            flipped,
            reject([], error("checksum_mismatch", 1, 256, 1)),
            ["R-27", "R-14"],
            split=(1, start, 100_000),
            description=f"a split from {start} of a segment whose first record is damaged: the damage is reported,"
            " never searched past",
        )
