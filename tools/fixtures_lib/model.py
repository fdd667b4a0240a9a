"""Fixtures, conformance cases and their expected outcomes, as the catalog states them.

A ``Fixture`` is a log directory (its files) with the facts of how it was
made: the workload trace that wrote it, or the fixture it was derived from
and the mutation applied. A ``Case`` is one operation on a fixture (read,
read after a ref, recover) or a write specification, with the exact outcome
the spec demands. All 64-bit numbers are decimal strings, all bytes hex
(spec/conformance.md).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from openbinlog_conformance.vocabulary import CHOICES, ERROR_CLASSES, LEVELS, ROLES, SPEC_VERSIONS

from .builder import RecordFact
from .mutations import Files, Mutation

Json = dict[str, Any]

# Payloads above this size are compared by hash in expectations (the manifest stays small).
INLINE_PAYLOAD_LIMIT = 4096

# The ``until`` of a case whose expectation suite 2.0.2 corrected (issue 14: one reading procedure): it no
# longer holds for spec 2.0 as corrected, and its corrected expectation has a new case id.
RETIRED_BY_2_0_2 = "2.0"

# The spec version a case tests from (its ``since``): 2.0 for what the format has had from the start, 2.1 for
# the sparse index (spec index.md) that minor revision 2.1 added.
SINCE_2_0, SINCE_2_1 = SPEC_VERSIONS


def record(fact: RecordFact, *, checked: bool = True) -> Json:
    """The canonical record object a reader must return for ``fact``."""
    obj: Json = {
        "log": fact.log,
        "offset": str(fact.offset),
        "index": str(fact.index),
        "asqn": str(fact.asqn),
        "timestamp_us": str(fact.timestamp_us) if checked else None,
    }
    obj.update(payload_fields(fact.payload))
    obj["checked"] = checked
    return obj


def payload_fields(payload: bytes) -> Json:
    if len(payload) > INLINE_PAYLOAD_LIMIT:
        return {"payload_size": str(len(payload)), "payload_sha256": hashlib.sha256(payload).hexdigest()}
    return {"payload": payload.hex()}


def records(facts: list[RecordFact], *, checked: bool = True) -> list[Json]:
    return [record(fact, checked=checked) for fact in facts]


def error(cls: str, log: int | None = None, offset: int | None = None, index: int | None = None) -> Json:
    """An expected error; a None member is not compared (the spec does not fix it)."""
    if cls not in ERROR_CLASSES:
        raise ValueError(f"unknown error class {cls}")
    return {
        "class": cls,
        "log": log,
        "offset": None if offset is None else str(offset),
        "index": None if index is None else str(index),
    }


def accept(recs: list[Json]) -> Json:
    return {"outcome": "accept", "records": recs, "torn": None, "error": None}


def recovered(recs: list[Json], *, log: int, offset: int) -> Json:
    return {"outcome": "recovered", "records": recs, "torn": {"log": log, "offset": str(offset)}, "error": None}


def reject(recs: list[Json] | None, err: Json) -> Json:
    """``recs`` None: the records returned before the failure are not compared."""
    return {"outcome": "reject", "records": recs, "torn": None, "error": err}


def damage(cls: str, log: int, offset: int | None, index: int, *, skipped: int, resumed: int | None) -> Json:
    """One damaged region a tolerant reader steps over (spec R-26); an offset None is not compared."""
    return {**error(cls, log, offset, index), "bytes_skipped": str(skipped), "resumed_index": u64(resumed)}


def tolerant(answer: Json, regions: list[Json]) -> Json:
    """A tolerant read's expectation: the read answer and the damaged regions, in log order."""
    return {**answer, "damage": regions}


def u64(value: int | None) -> str | None:
    return None if value is None else str(value)


def segment_state(*, size: int | None = None, sealed: bool | None = None, capacity: int | None = None) -> Json:
    """What a segment must look like after a write or recovery; None members are not compared.

    ``capacity``: the segment is preallocated (flag ``PREALLOCATED``) with this capacity (W-18).
    """
    state: Json = {"size": None if size is None else str(size), "sealed": sealed}
    if capacity is not None:
        state["capacity"] = str(capacity)
    return state


def after_recovery(recs: list[Json], segments: dict[str, Json], *, optional: tuple[str, ...] = ()) -> Json:
    """Recovery succeeds; the reference then reads exactly ``recs`` with nothing beyond the commit point.

    ``segments`` is the exact set of segment files left (with their state);
    ``optional`` names segment files that may exist as well (W-29 lets a
    writer create a missing successor before it appends).
    """
    return {
        "recover": {"ok": True, "error": None},
        "then": accept(recs),
        "segments": segments,
        "optional_segments": list(optional),
        "unchanged": False,
    }


def recovery_refused(err: Json) -> Json:
    """Recovery refuses (damage at or below a commit point, a legacy log) and changes no segment."""
    return {
        "recover": {"ok": False, "error": err},
        "then": None,
        "segments": None,
        "optional_segments": [],
        "unchanged": True,
    }


def recovery_unchanged() -> Json:
    """Recovery succeeds and has nothing to change: every file stays as it was (what a read then reports is the
    read cases' concern)."""
    return {
        "recover": {"ok": True, "error": None},
        "then": None,
        "segments": None,
        "optional_segments": [],
        "unchanged": True,
    }


def implementation_defined(choice: str, **allowed: Json) -> Json:
    if choice not in CHOICES or set(allowed) != set(CHOICES[choice]):
        raise ValueError(f"choice {choice} needs exactly the values {CHOICES.get(choice)}")
    return {"outcome": "implementation_defined", "choice": choice, "allowed": allowed}


@dataclass
class Fixture:
    id: str
    description: str
    files: Files
    faults: list[str] = field(default_factory=list)
    requirements: list[str] = field(default_factory=list)
    workload: list[Json] | None = None
    derived_from: str | None = None
    mutation: Mutation | None = None
    defect: str | None = None

    def sha256(self) -> dict[str, str]:
        return {name: hashlib.sha256(data).hexdigest() for name, data in sorted(self.files.items())}


@dataclass
class Case:
    id: str
    description: str
    operation: Json
    expected: Json
    requirements: list[str]
    fixture: Fixture | None = None
    roles: list[str] = field(default_factory=lambda: ["reader"])
    requires: list[str] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)
    defect: str | None = None
    since: str = SINCE_2_0
    until: str | None = None

    def __post_init__(self) -> None:
        parts = self.id.split(".")
        if len(parts) != 4 or parts[0] not in LEVELS or parts[1] not in ROLES:
            raise ValueError(f"case id {self.id}: expected LEVEL.ROLE.GROUP.NAME")
        if parts[1] not in self.roles:
            raise ValueError(f"case id {self.id}: role {parts[1]} missing from roles {self.roles}")
        if self.since not in SPEC_VERSIONS:
            raise ValueError(f"case id {self.id}: since {self.since} is not one of {SPEC_VERSIONS}")

    @property
    def level(self) -> str:
        return self.id.split(".")[0]
