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
        "refuse_asqn_across_cutover",
        "asqn 3 after asqn 5 in the previous segment: refused, the order spans segments",
        [(b"first", 5), (b"second", 3)],
        cutover_before=[2],
        refused_at=2,
        rules=["W-8"],
    )


def _write(
    cat: Catalog,
    name: str,
    description: str,
    appends: list[Append],
    *,
    cutover_before: list[int] | None = None,
    refused_at: int | None = None,
    rules: list[str] | None = None,
) -> None:
    cuts = cutover_before or []
    spec: Json = {
        "records": [{"payload": payload.hex(), "asqn": str(asqn)} for payload, asqn in appends],
        "cutover_before": [str(index) for index in cuts],
        "options": {"durability": "sync"},
    }
    written = appends if refused_at is None else appends[: refused_at - 1]
    expected_records, segments = _layout(written, cuts, last_cut_applies=refused_at)
    outcome: dict[str, Any] = {
        "write": {"ok": True, "error": None}
        if refused_at is None
        else {"ok": False, "error": error("asqn_not_increasing")},
        "then": accept(expected_records),
        "segments": segments,
        "optional_segments": [],
        "unchanged": False,
    }
    requirements = [*WRITE_RULES, *(CUTOVER_RULES if cuts else []), *(rules or [])]
    cat.write(f"must.writer.write.{name}", description, spec, outcome, requirements)


def _layout(
    appends: list[Append], cuts: list[int], *, last_cut_applies: int | None
) -> tuple[list[Json], dict[str, Json]]:
    """Where each record lands: contiguous from offset 256, a new segment at each cutover."""
    log, offset = 1, HEADER_SIZE
    ends: dict[int, int] = {}
    out: list[Json] = []
    for index, (payload, asqn) in enumerate(appends, start=1):
        if index in cuts:
            ends[log] = offset
            log, offset = log + 1, HEADER_SIZE
        record: Json = {"log": log, "offset": str(offset), "index": str(index), "asqn": str(asqn)}
        record.update(payload_fields(payload))
        record["checked"] = True
        out.append(record)
        offset += RECORD_HEADER_SIZE + len(payload)
    if last_cut_applies is not None and last_cut_applies in cuts:
        # The cutover before the refused append happened; the append did not.
        ends[log] = offset
        log, offset = log + 1, HEADER_SIZE
    ends[log] = offset
    last = max(ends)
    segments = {
        segment_name(number): segment_state(size=end, sealed=number != last) for number, end in sorted(ends.items())
    }
    return out, segments
