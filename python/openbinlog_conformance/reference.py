"""The reference implementation's answers to the protocol's operations.

The runner uses these to judge writer cases (the reference reads what a
testee wrote or recovered); ``ReferenceTestee`` serves them over the protocol
(conformance/implementations/python/testee.py), and the decision mutants of
conformance/mutants/ serve them with one reading of the spec switched.
"""

from __future__ import annotations

import os
from typing import Any

from openbinlog import BinlogError, Reader, Ref, Writer, read_split, recover, split_offsets, verify
from openbinlog._format import COMPRESSED_SUFFIXES, HEADER_SIZE
from openbinlog._segment import parse_header
from openbinlog.walk import legacy_leftover

from . import canonical

Json = dict[str, Any]
CHUNK = 1 << 20
U64_MAX = 2**64 - 1  # the stop of a segment's last split: any offset beyond its end


def read_log(directory: str, after: str | bytes | None = None) -> Json:
    """Read the log from its start (or after a ref, text or binary): outcome, records, torn tail, error."""
    return _read(directory, {} if after is None else {"after": after})


def read_log_from(directory: str, start: Json) -> Json:
    """Read the log from where ``start`` says: ``at`` a ref, ``from_index`` or ``since_us`` (spec 10.6, 10.7)."""
    return _read(directory, start)


def _read(directory: str, start: Json) -> Json:
    records: list[Json] = []
    try:
        with Reader(directory, **_start(start)) as reader:
            for entry in reader:
                records.append(canonical.record(entry))
        torn = torn_tail(directory)
    except BinlogError as exc:
        return {"outcome": "reject", "records": records, "torn": None, "error": canonical.error(exc)}
    return _completed(records, torn)


def _start(start: Json) -> dict[str, Any]:
    """The Reader arguments for one start of the protocol."""
    if "after" in start:
        after = start["after"]
        return {"after": Ref.from_bytes(after) if isinstance(after, bytes) else Ref.parse(after)}
    if "at" in start:
        return {"start": Ref.parse(start["at"])}
    if "from_index" in start:
        return {"start_index": int(start["from_index"])}
    if "since_us" in start:
        return {"start_time": int(start["since_us"])}
    return {}


def read_log_tolerant(directory: str) -> Json:
    """Read the log from its start, stepping over damage (spec 10.4): the read answer and the damage list."""
    records: list[Json] = []
    reader: Reader | None = None
    try:
        with Reader(directory, tolerant=True) as reader:
            for entry in reader:
                records.append(canonical.record(entry))
        answer = _completed(records, torn_tail(directory))
    except BinlogError as exc:
        answer = {"outcome": "reject", "records": records, "torn": None, "error": canonical.error(exc)}
    regions = [] if reader is None else reader.damage
    return {**answer, "damage": [canonical.damage(region) for region in regions]}


def read_split_log(directory: str, log: int, start: int, stop: int) -> Json:
    """The records of segment ``log`` whose offset lies in [start, stop) (spec 10.5); never a torn tail."""
    records: list[Json] = []
    try:
        for entry in read_split(directory, log, start, stop):
            records.append(canonical.record(entry))
    except BinlogError as exc:
        return {"outcome": "reject", "records": records, "torn": None, "error": canonical.error(exc)}
    return _completed(records, None)


def read_planned_splits(directory: str, log: int, parts: int) -> Json:
    """Segment ``log`` in up to ``parts`` splits planned by ``split_offsets`` (at checked entries of its sparse
    index when one passes the index check, spec 18.5), read one after another: the records of them all in
    order, or those returned before the first failure and that failure. ``cuts``: where the splits start."""
    records: list[Json] = []
    cuts: list[int] = []
    try:
        cuts = split_offsets(directory, log, parts)
        for start, stop in zip(cuts, [*cuts[1:], U64_MAX], strict=True):
            for entry in read_split(directory, log, start, stop):
                records.append(canonical.record(entry))
    except BinlogError as exc:
        answer = {"outcome": "reject", "records": records, "torn": None, "error": canonical.error(exc)}
    else:
        answer = _completed(records, None)
    return {**answer, "cuts": [str(cut) for cut in cuts]}


def _completed(records: list[Json], torn: Json | None) -> Json:
    return {"outcome": "accept" if torn is None else "recovered", "records": records, "torn": torn, "error": None}


def torn_tail(directory: str) -> Json | None:
    """Non-zero bytes beyond the last segment's commit point, as a torn object; None when there are none.

    The last segment is the highest-numbered one that is not blank (a blank
    last segment is absent, spec R-7); its commit point is the active slot's
    commit offset (version 2) or the last element position (version 1).
    """
    listed = verify(directory).segments
    segments = [segment for segment in listed if segment.state != "blank"]
    if not segments:
        return None
    last = segments[-1]
    if len(segments) > 1 and last.version == 1 and segments[-2].version == 1 and segments[-2].state == "open":
        # The log ends at an open version 1 segment below the leftover of a cutover (legacy-v1 B.4).
        below = segments[-2]
        with open(last.path, "rb") as handle:
            successor = parse_header(handle.read(HEADER_SIZE), log=last.log)
        higher = [segment.log for segment in listed if segment.log > below.log]
        if legacy_leftover(successor, nxt=below.log + 1, higher=higher):
            last = below
    assert last.commit_offset is not None
    if last.path.endswith(COMPRESSED_SUFFIXES):
        return None  # a compressed copy is unpacked no further than its commit point (spec R-43): nothing shows beyond
    with open(last.path, "rb") as handle:
        if last.commit_offset >= os.fstat(handle.fileno()).st_size:
            return None  # a commit point beyond the file, where a file system may refuse to seek
        handle.seek(last.commit_offset)
        while chunk := handle.read(CHUNK):
            if any(chunk):
                return {"log": last.log, "offset": str(last.commit_offset)}
    return None


def write_log(directory: str, spec: Json) -> Json:
    """Write a new log from a write specification; stop at the first append the writer refuses.

    A cutover listed before index n + 1 (n records) happens after the last record.
    """
    cuts = {int(index) for index in spec.get("cutover_before", [])}
    options = spec.get("options", {})
    preallocate = options.get("preallocate")
    try:
        with Writer(
            directory,
            durability=options.get("durability", "sync"),
            preallocate=None if preallocate is None else int(preallocate),
        ) as writer:
            for index, item in enumerate(spec["records"], start=1):
                if index in cuts:
                    writer.cutover()
                writer.append(bytes.fromhex(item["payload"]), asqn=int(item["asqn"]))
            if len(spec["records"]) + 1 in cuts:
                writer.cutover()
    except BinlogError as exc:
        return {"ok": False, "error": canonical.error(exc)}
    return {"ok": True}


def recover_log(directory: str) -> Json:
    """Writer recovery: what a writer does to the log before it appends."""
    if not os.path.isdir(directory):
        return {"ok": False, "error": {"class": "io_error", "log": None, "offset": None, "index": None}}
    try:
        recover(directory)
    except BinlogError as exc:
        return {"ok": False, "error": canonical.error(exc)}
    return {"ok": True}
