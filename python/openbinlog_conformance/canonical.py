"""The canonical JSON objects of the testee protocol (spec/conformance.md, "Objects").

64-bit integers are decimal strings, bytes are lower-case hex. These
functions build them from the reference library's values and check that an
object a testee sent has exactly the required shape.
"""

from __future__ import annotations

import re
from typing import Any

from openbinlog import BinlogError, Damage, Entry

from .vocabulary import ERROR_CLASSES, UNSUPPORTED_OPERATION

Json = dict[str, Any]

_UNSIGNED = re.compile(r"^(0|[1-9][0-9]*)$")
_SIGNED = re.compile(r"^(0|-?[1-9][0-9]*)$")
_HEX = re.compile(r"^([0-9a-f]{2})*$")
RECORD_KEYS = ("log", "offset", "index", "asqn", "timestamp_us", "payload", "checked")
ERROR_KEYS = ("class", "log", "offset", "index")
DAMAGE_KEYS = (*ERROR_KEYS, "bytes_skipped", "resumed_index")


def u64(value: int | None) -> str | None:
    return None if value is None else str(value)


def record(entry: Entry) -> Json:
    return {
        "log": entry.log,
        "offset": str(entry.offset),
        "index": str(entry.index),
        "asqn": str(entry.asqn),
        "timestamp_us": u64(entry.timestamp_us),
        "payload": entry.payload.hex(),
        "checked": entry.checked,
    }


def error(exc: BinlogError) -> Json:
    return {"class": exc.error_class, "log": exc.log, "offset": u64(exc.offset), "index": u64(exc.index)}


def damage(region: Damage) -> Json:
    """One damaged region a tolerant read stepped over (spec R-26)."""
    return {
        "class": region.error_class,
        "log": region.log,
        "offset": u64(region.offset),
        "index": u64(region.index),
        "bytes_skipped": str(region.bytes_skipped),
        "resumed_index": u64(region.next_index),
    }


def unsupported(what: str) -> Json:
    """The error object of a request the implementation cannot serve."""
    return {"class": UNSUPPORTED_OPERATION, "log": None, "offset": None, "index": None, "detail": what}


# -- shape checks of what a testee sent --------------------------------------------


class ShapeError(ValueError):
    """An answer that does not follow the protocol's object shapes."""


def _number(value: object, pattern: re.Pattern[str], what: str, *, nullable: bool = False) -> None:
    if value is None and nullable:
        return
    if not isinstance(value, str) or not pattern.match(value):
        raise ShapeError(f"{what} must be a decimal string, got {value!r}")
    if pattern is _UNSIGNED and int(value) >= 2**64:
        raise ShapeError(f"{what} {value} exceeds 2^64 - 1")
    if pattern is _SIGNED and not -(2**63) <= int(value) < 2**63:
        raise ShapeError(f"{what} {value} is outside the signed 64-bit range")


def _log(value: object, what: str, *, nullable: bool = False) -> None:
    if value is None and nullable:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**32:
        raise ShapeError(f"{what} must be a JSON integer 0..2^32-1, got {value!r}")


def check_record(obj: object, where: str) -> Json:
    if not isinstance(obj, dict):
        raise ShapeError(f"{where} must be an object")
    missing = [key for key in RECORD_KEYS if key not in obj]
    if missing:
        raise ShapeError(f"{where} lacks {', '.join(missing)}")
    _log(obj["log"], f"{where}.log")
    _number(obj["offset"], _UNSIGNED, f"{where}.offset")
    _number(obj["index"], _UNSIGNED, f"{where}.index")
    _number(obj["asqn"], _SIGNED, f"{where}.asqn")
    _number(obj["timestamp_us"], _SIGNED, f"{where}.timestamp_us", nullable=True)
    if not isinstance(obj["payload"], str) or not _HEX.match(obj["payload"]):
        raise ShapeError(f"{where}.payload must be lower-case hex")
    if not isinstance(obj["checked"], bool):
        raise ShapeError(f"{where}.checked must be true or false")
    return obj


def check_error(
    obj: object, where: str, *, classes: tuple[str, ...] = ERROR_CLASSES, nullable_class: bool = False
) -> Json:
    if not isinstance(obj, dict):
        raise ShapeError(f"{where} must be an object")
    cls = obj.get("class")
    if not (cls is None and nullable_class) and cls not in classes:
        raise ShapeError(f"{where}.class {cls!r} is not one of the spec's error classes")
    _log(obj.get("log"), f"{where}.log", nullable=True)
    _number(obj.get("offset"), _UNSIGNED, f"{where}.offset", nullable=True)
    _number(obj.get("index"), _UNSIGNED, f"{where}.index", nullable=True)
    return obj


def check_damage(obj: object, where: str) -> Json:
    region = check_error(obj, where)
    missing = [key for key in DAMAGE_KEYS if key not in region]
    if missing:
        raise ShapeError(f"{where} lacks {', '.join(missing)}")
    _number(region["bytes_skipped"], _UNSIGNED, f"{where}.bytes_skipped")
    _number(region["resumed_index"], _UNSIGNED, f"{where}.resumed_index", nullable=True)
    return region


def check_read_answer(obj: object, *, parser: bool = False, tolerant: bool = False) -> Json:
    """A read answer: outcome, records, torn, error (the same object from the CLI and the session).

    The answer to a tolerant read also lists the damaged regions it stepped over.
    """
    if not isinstance(obj, dict):
        raise ShapeError("the answer must be a JSON object")
    outcome = obj.get("outcome")
    if outcome not in ("accept", "recovered", "reject"):
        raise ShapeError(f"outcome {outcome!r} is not accept, recovered or reject")
    recs = obj.get("records")
    if not isinstance(recs, list):
        raise ShapeError("records must be a list")
    for position, item in enumerate(recs):
        check_record(item, f"records[{position}]")
    torn = obj.get("torn")
    if outcome == "recovered" and not parser:
        if not isinstance(torn, dict):
            raise ShapeError("a recovered answer needs a torn object")
        _log(torn.get("log"), "torn.log")
        _number(torn.get("offset"), _UNSIGNED, "torn.offset")
    elif torn is not None and not parser:
        raise ShapeError(f"torn must be null when the outcome is {outcome}")
    err = obj.get("error")
    if outcome == "reject":
        check_error(err, "error", nullable_class=parser)
    elif err is not None:
        raise ShapeError(f"error must be null when the outcome is {outcome}")
    if tolerant:
        regions = obj.get("damage")
        if not isinstance(regions, list):
            raise ShapeError("the answer to a tolerant read needs a damage list")
        for position, item in enumerate(regions):
            check_damage(item, f"damage[{position}]")
    return obj


def check_status_answer(obj: object) -> Json:
    """The answer to write and recover: {"ok": true} or {"ok": false, "error": ...}."""
    if not isinstance(obj, dict) or not isinstance(obj.get("ok"), bool):
        raise ShapeError('the answer must be {"ok": true} or {"ok": false, "error": ...}')
    if not obj["ok"]:
        check_error(obj.get("error"), "error", classes=(*ERROR_CLASSES, UNSUPPORTED_OPERATION))
    return obj
