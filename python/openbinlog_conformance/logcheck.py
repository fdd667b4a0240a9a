"""Checks of a log directory that a testee wrote or recovered, beyond what a reader sees.

A reader's answer says which records a log holds; these checks say whether
the writer left the directory as the spec requires: the lock file, no
temporary files, consecutive segment names, valid headers with one log id,
chained base indexes, mirrors that match the active slot, non-decreasing
timestamps, and each segment's size and sealed state.
"""

from __future__ import annotations

import hashlib
import itertools
import os
from pathlib import Path
from typing import Any

from openbinlog import BinlogError
from openbinlog._format import LOCK_NAME, SEGMENT_NAME
from openbinlog._recovery import is_temp_name
from openbinlog._segment import SegmentHeaderInfo, encode_mirror, parse_header

Json = dict[str, Any]


def digest(directory: str, *, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """Relative path -> size and sha256 of every file: what must not change."""
    result = {}
    for root, _dirs, files in os.walk(directory):
        for name in files:
            path = Path(root, name)
            relative = str(path.relative_to(directory))
            if relative not in skip:
                data = path.read_bytes()
                result[relative] = f"{len(data)}:{hashlib.sha256(data).hexdigest()}"
    return result


def foreign_file_problems(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """W-25: recovery deletes only temporary files and blank segments; every other file that is not a segment stays
    byte for byte (``before`` and ``after`` are digests of the log directory)."""
    kept = [
        name
        for name in before
        if "/" not in name
        and not SEGMENT_NAME.match(name)
        and not is_temp_name(name)
        and before[name] != after.get(name)
    ]
    return [
        f"W-25: recovery changed or deleted {name}, which is neither a segment nor a temporary file" for name in kept
    ]


def _segments(directory: str) -> dict[int, Path]:
    return {
        int(match[1]): Path(directory, name) for name in os.listdir(directory) if (match := SEGMENT_NAME.match(name))
    }


def _header(path: Path, log: int) -> SegmentHeaderInfo | str:
    try:
        with path.open("rb") as handle:
            header = parse_header(handle.read(256), log=log)
    except (OSError, BinlogError) as exc:
        return f"{path.name}: {exc}"
    if not isinstance(header, SegmentHeaderInfo):
        return f"{path.name}: a version 1 segment"
    return header


def directory_problems(directory: str) -> list[str]:
    """What every writer leaves behind: a zero-length LOCK if any, no temporary files."""
    problems = []
    lock = Path(directory, LOCK_NAME)
    if lock.exists() and lock.stat().st_size != 0:
        problems.append(f"W-34: {LOCK_NAME} is {lock.stat().st_size} bytes, not zero-length")
    temps = sorted(name for name in os.listdir(directory) if is_temp_name(name))
    if temps:
        problems.append(f"W-25/W-28: temporary files left: {', '.join(temps)}")
    return problems


def segment_problems(directory: str, expected: dict[str, Json], optional: list[str]) -> list[str]:
    """The exact set of segment files, each with the size, sealed state and preallocated capacity expected."""
    problems = []
    present = {path.name: (log, path) for log, path in _segments(directory).items()}
    missing = sorted(set(expected) - set(present))
    extra = sorted(set(present) - set(expected) - set(optional))
    if missing:
        problems.append(f"segments missing: {', '.join(missing)}")
    if extra:
        problems.append(f"unexpected segments: {', '.join(extra)}")
    for name, state in sorted(expected.items()):
        if name not in present:
            continue
        log, path = present[name]
        if state.get("size") is not None and str(path.stat().st_size) != state["size"]:
            problems.append(f"{name}: {path.stat().st_size} bytes, expected {state['size']}")
        if state.get("sealed") is None and state.get("capacity") is None:
            continue
        header = _header(path, log)
        if isinstance(header, str):
            problems.append(header)
            continue
        if state.get("sealed") is not None and header.commit.closed != state["sealed"]:
            problems.append(f"{name}: {'sealed' if header.commit.closed else 'open'}, expected the opposite")
        if state.get("capacity") is not None:
            capacity = str(header.capacity) if header.preallocated else "none"
            if capacity != state["capacity"]:
                problems.append(f"W-18: {name}: preallocated capacity {capacity}, expected {state['capacity']}")
    return problems


def written_log_problems(directory: str, records: list[Json]) -> list[str]:
    """The spec's rules for a log a writer created, checked on the files (``records`` as the reference read them)."""
    problems = directory_problems(directory)
    if not Path(directory, LOCK_NAME).exists():
        problems.append(f"W-34: no {LOCK_NAME} file")
    segments = _segments(directory)
    if sorted(segments) != list(range(1, len(segments) + 1)):
        problems.append(f"W-1: segment numbers {sorted(segments)} are not 1..{len(segments)}")
    previous: SegmentHeaderInfo | None = None
    for log in sorted(segments):
        path = segments[log]
        header = _header(path, log)
        if isinstance(header, str):
            problems.append(f"W-4: {header}")
            continue
        if log == 1 and header.base_index != 1:
            problems.append(f"W-2: segment 1 has base index {header.base_index}")
        with path.open("rb") as handle:
            mirror = handle.read(24)[6:24]
        _at, wanted = encode_mirror(header.commit, log)
        if mirror != wanted:
            problems.append(
                f"W-5: {path.name}: mirror fields {mirror.hex()} do not match the active slot ({wanted.hex()})"
            )
        if previous is not None:
            if header.log_id != previous.log_id:
                problems.append(f"W-27: {path.name} has another log id than its predecessor")
            if header.base_index != previous.commit.next_index:
                problems.append(
                    f"W-27: {path.name} base index {header.base_index}, predecessor's next index"
                    f" {previous.commit.next_index}"
                )
        previous = header
    stamps = [int(item["timestamp_us"]) for item in records if item.get("timestamp_us") is not None]
    if any(later < earlier for earlier, later in itertools.pairwise(stamps)):
        problems.append("W-9: timestamps go backwards")
    return problems
