"""Compare what a testee answered with what a case expects (spec/conformance.md, "What is compared").

Compared: the outcome; every record, field by field (fields absent from an
expected record are not compared); the torn object; the error class and the
error's log, offset and index where the expectation gives them; for a
tolerant read, every damaged region (its error members as for an error, the
bytes skipped and the index reading resumed at). Never compared: messages,
or any member a testee adds.
"""

from __future__ import annotations

import hashlib
from typing import Any

Json = dict[str, Any]
READER = "reader"
PARSER = "parser"


def resolve(expected: Json, choices: dict[str, str]) -> tuple[Json | None, str | None]:
    """The expectation that applies to a testee, given its declared choices; or why none does."""
    if expected.get("outcome") != "implementation_defined":
        return expected, None
    name = expected["choice"]
    allowed: dict[str, Json] = expected["allowed"]
    choice = choices.get(name)
    if choice is None:
        return None, (
            f"implementation-defined case: the testee declared no value for choice {name!r}"
            f" (one of {sorted(allowed)}: in its hello, or --choice {name}=VALUE for a cli: testee)"
        )
    if choice not in allowed:
        return None, f"declared choice {name}={choice!r} is not one of {sorted(allowed)}"
    return allowed[choice], None


def read_problems(actual: Json, expected: Json, profile: str = READER) -> list[str]:
    """Differences between a read answer and a (resolved) expectation; empty when it passes."""
    problems: list[str] = []
    want, got = expected["outcome"], actual["outcome"]
    if profile == PARSER:
        # A parser cannot tell a torn tail apart and names no error class: accept and
        # recovered are one answer, reject the other; records are compared unless rejected.
        if (want == "reject") != (got == "reject"):
            problems.append(f"outcome: expected {want}, got {got}")
        elif want != "reject":
            problems += record_problems(actual["records"], expected["records"])
        return problems
    if want != got:
        problems.append(f"outcome: expected {want}, got {got}")
    if expected.get("records") is not None:
        problems += record_problems(actual["records"], expected["records"])
    if expected.get("torn") != actual.get("torn"):
        problems.append(f"torn: expected {expected.get('torn')}, got {actual.get('torn')}")
    problems += error_problems(actual.get("error"), expected.get("error"))
    if "damage" in expected:
        problems += damage_problems(actual["damage"], expected["damage"])
    return problems


def damage_problems(actual: list[Json], expected: list[Json]) -> list[str]:
    """The damaged regions of a tolerant read, in log order (spec R-26)."""
    problems = []
    for position, (got, want) in enumerate(zip(actual, expected, strict=False)):
        what = f"damage[{position}]"
        problems += error_problems(got, want, what)
        for key in ("bytes_skipped", "resumed_index"):
            if got.get(key) != want[key]:
                problems.append(f"{what} {key}: expected {want[key]!r}, got {got.get(key)!r}")
    if len(actual) != len(expected):
        problems.append(f"damage: expected {len(expected)} regions, got {len(actual)}")
    return problems


def error_problems(actual: Json | None, expected: Json | None, what: str = "error") -> list[str]:
    if expected is None:
        return [] if actual is None else [f"{what}: expected none, got {actual}"]
    if actual is None:
        return [f"{what}: expected class {expected['class']}, got none"]
    problems = []
    if actual.get("class") != expected["class"]:
        problems.append(f"{what} class: expected {expected['class']}, got {actual.get('class')}")
    for key in ("log", "offset", "index"):
        if expected.get(key) is not None and actual.get(key) != expected[key]:
            problems.append(f"{what} {key}: expected {expected[key]!r}, got {actual.get(key)!r}")
    return problems


def record_problems(actual: list[Json], expected: list[Json]) -> list[str]:
    problems = []
    for position, (got, want) in enumerate(zip(actual, expected, strict=False)):
        for key, value in want.items():
            if key == "payload_sha256":
                digest = hashlib.sha256(bytes.fromhex(got.get("payload", ""))).hexdigest()
                if digest != value:
                    problems.append(f"records[{position}].payload: sha256 {digest}, expected {value}")
            elif key == "payload_size":
                size = str(len(got.get("payload", "")) // 2)
                if size != value:
                    problems.append(f"records[{position}].payload: {size} bytes, expected {value}")
            elif got.get(key) != value:
                problems.append(f"records[{position}].{key}: expected {value!r}, got {got.get(key)!r}")
        if len(problems) >= 5:
            break
    if len(actual) != len(expected):
        problems.append(f"records: expected {len(expected)}, got {len(actual)}")
    return problems
