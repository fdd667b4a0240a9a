"""Writer cases: the testee writes a new log from a specification; every reader reads it back.

The offsets, indexes and segment numbers of the records follow from the
payload sizes and the cutovers alone (records are contiguous from offset 256,
spec W-6); timestamps come from the writer's clock and are not compared, only
checked to be non-decreasing (W-9).
"""

from __future__ import annotations

from typing import Any

from openbinlog import HEADER_SIZE, RECORD_HEADER_SIZE
from openbinlog._format import segment_name

from .builder import seeded_bytes
from .catalog import Catalog
from .model import Json, accept, error, payload_fields, segment_state

WRITE_RULES = ["W-1", "W-2", "W-4", "W-5", "W-6", "W-7", "W-9", "W-11", "W-12", "W-34"]
CUTOVER_RULES = ["W-16", "W-27", "W-28"]
PREALLOCATION_RULES = ["W-10", "W-18"]

Append = tuple[bytes, int]


def add(cat: Catalog) -> None:
    _write(cat, "one_record", "one record 'hello'", [(b"hello", -1)])
    _write(cat, "empty_payload", "an empty payload between two others", [(b"a", -1), (b"", -1), (b"b", -1)])
    _write(cat, "payload_64k", "a 64 KiB payload", [(seeded_bytes(640, 65536), -1), (b"after", -1)])
    _write(
        cat,
        "binary_payloads",
        "payloads holding every byte value, zeros and 0xff",
        [(bytes(range(256)), -1), (bytes(40), -1), (b"\xff" * 40, -1)],
    )
    _write(
        cat,
        "asqn_mixed",
        "records with and without an asqn, up to 2^63 - 1",
        [(b"a", -1), (b"b", 0), (b"c", -1), (b"d", 5), (b"e", 6), (b"f", -1), (b"g", 2**63 - 1)],
    )
    ten = [(f"record {number}".encode(), -1) for number in range(1, 11)]
    _write(cat, "cutovers", "ten records, cut over before indexes 4 and 8", ten, cutover_before=[4, 8])
    _write(
        cat,
        "cutover_before_first",
        "a cutover before the first record: segment 1 sealed empty",
        ten[:3],
        cutover_before=[1],
    )
    _write(
        cat,
        "many_records",
        "300 records of 1 to 60 bytes in one log",
        [(seeded_bytes(number, 1 + number % 60), -1) for number in range(300)],
    )
    _write(
        cat,
        "refuse_asqn_repeated",
        "the second append repeats the first one's asqn: refused, nothing written for it",
        [(b"first", 5), (b"again", 5)],
        refused_at=2,
        rules=["W-8"],
    )
    _write(
        cat,
        "refuse_asqn_below_minus_one",
        "an append with asqn -2: refused",
        [(b"first", -1), (b"bad", -2)],
        refused_at=2,
        rules=["W-8"],
    )
    _write(
        cat,
        "cutover_after_last_record",
        "three records, then a cutover listed before index 4: segment 1 sealed, segment 2 empty",
        ten[:3],
        cutover_before=[4],
    )
    _preallocated(cat)
    _write(
        cat,
        "refuse_asqn_across_cutover",
        "asqn 3 after asqn 5 in the previous segment: refused, the order spans segments",
        [(b"first", 5), (b"second", 3)],
        cutover_before=[2],
        refused_at=2,
        rules=["W-8"],
    )


def _preallocated(cat: Catalog) -> None:
    """Preallocated segments (spec 6.5, W-10, W-18): a writer MAY preallocate; one that does must get this right."""
    capacity = 512
    # 256 + 3 * 80 = 496: the fourth record (80 bytes) does not fit and starts segment 2, which it fills exactly
    # with the fifth and a record of 256 - 2 * 80 - 40 = 56 payload bytes.
    fits = [(seeded_bytes(700 + n, 40), -1) for n in range(5)] + [(seeded_bytes(705, 56), -1), (b"last", -1)]
    _write(
        cat,
        "preallocated",
        f"preallocated segments of {capacity} bytes: a record that does not fit starts the next segment",
        fits,
        capacity=capacity,
    )
    _write(
        cat,
        "preallocated_with_cutovers",
        f"preallocated segments of {capacity} bytes with a cutover listed before index 2 and after the last record",
        fits[:3],
        cutover_before=[2, 4],
        capacity=capacity,
    )
    _write(
        cat,
        "preallocated_refuse_record_too_large",
        f"a record of {capacity - HEADER_SIZE + 1} bytes cannot fit an empty preallocated segment of {capacity}:"
        " refused, nothing written for it",
        [(b"first", -1), (seeded_bytes(710, capacity - HEADER_SIZE - RECORD_HEADER_SIZE + 1), -1)],
        capacity=capacity,
        refused_at=2,
        refusal="length_out_of_range",
        rules=["W-10"],
    )


def _write(
    cat: Catalog,
    name: str,
    description: str,
    appends: list[Append],
    *,
    cutover_before: list[int] | None = None,
    capacity: int | None = None,
    refused_at: int | None = None,
    refusal: str = "asqn_not_increasing",
    rules: list[str] | None = None,
) -> None:
    """A write case; with ``capacity`` a case of level may for writers that preallocate (capability preallocate)."""
    cuts = cutover_before or []
    options: Json = {"durability": "sync"}
    if capacity is not None:
        options["preallocate"] = str(capacity)
    spec: Json = {
        "records": [{"payload": payload.hex(), "asqn": str(asqn)} for payload, asqn in appends],
        "cutover_before": [str(index) for index in cuts],
        "options": options,
    }
    written = appends if refused_at is None else appends[: refused_at - 1]
    after_last = len(appends) + 1 if refused_at is None else refused_at
    expected_records, segments = _layout(written, cuts, cut_after=after_last in cuts, capacity=capacity)
    outcome: dict[str, Any] = {
        "write": {"ok": True, "error": None} if refused_at is None else {"ok": False, "error": error(refusal)},
        "then": accept(expected_records),
        "segments": segments,
        "optional_segments": [],
        "unchanged": False,
    }
    requirements = [*WRITE_RULES, *(CUTOVER_RULES if cuts else []), *(PREALLOCATION_RULES if capacity else [])]
    requirements += rules or []
    if capacity is None:
        cat.write(f"must.writer.write.{name}", description, spec, outcome, requirements)
    else:
        cat.write(f"may.writer.write.{name}", description, spec, outcome, requirements, requires=["preallocate"])


def _layout(
    appends: list[Append], cuts: list[int], *, cut_after: bool, capacity: int | None
) -> tuple[list[Json], dict[str, Json]]:
    """Where each record lands: contiguous from offset 256, a new segment at each cutover and, in preallocated
    segments, before a record that does not fit (spec 6.5); ``cut_after``: a cutover after the last record
    (listed before the next index, or before a refused append)."""
    log, offset = 1, HEADER_SIZE
    ends: dict[int, int] = {}
    out: list[Json] = []
    for index, (payload, asqn) in enumerate(appends, start=1):
        size = RECORD_HEADER_SIZE + len(payload)
        if index in cuts or (capacity is not None and offset + size > capacity):
            ends[log] = offset
            log, offset = log + 1, HEADER_SIZE
        record: Json = {"log": log, "offset": str(offset), "index": str(index), "asqn": str(asqn)}
        record.update(payload_fields(payload))
        record["checked"] = True
        out.append(record)
        offset += size
    if cut_after:
        ends[log] = offset
        log, offset = log + 1, HEADER_SIZE
    ends[log] = offset
    last = max(ends)
    segments = {
        segment_name(number): segment_state(size=capacity or end, sealed=number != last, capacity=capacity)
        for number, end in sorted(ends.items())
    }
    return out, segments
