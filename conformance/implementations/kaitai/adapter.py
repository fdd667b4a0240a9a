#!/usr/bin/env python3
"""The Kaitai-generated parsers as conformance testees, in the reduced ``parser`` role.

    adapter.py python|javascript|java|go session

Each segment file of the log directory is parsed on its own by the harness of
tools/ksy/harness/ for that language (strict view; legacy view for a
version 1 segment), which also verifies every checksum. The adapter only
strings the per-file answers together: the records in file order, legacy
records numbered on from the previous one. A parse error or a failed
checksum is a reject without an error class. What a generated parser cannot
do (choose the active slot among valid ones, commit-point and tail rules,
index continuity, asqn order, the chain, refs, writing) it does not claim:
its hello declares the role ``parser`` and only the ``legacy_v1`` capability.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from openbinlog_conformance import serve
from openbinlog_conformance.vocabulary import SPEC_VERSION

Json = dict[str, Any]
ROOT = Path(__file__).resolve().parents[3]
HARNESS = ROOT / "tools" / "ksy" / "harness"
BUILD = ROOT / "build"
SEGMENT = re.compile(r"^([0-9]{8})\.dat$")
SIGNATURE = b"\x89BLOG\r\n\x1a"
HARNESS_TIMEOUT = 60


def python_parser() -> Callable[[str, str], Json]:
    spec = importlib.util.spec_from_file_location("ksy_harness", HARNESS / "python" / "harness.py")
    assert spec is not None
    assert spec.loader is not None
    harness = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(harness)
    modes = {"strict": harness.strict, "legacy": harness.legacy}

    def parse(mode: str, path: str) -> Json:
        result: Json = harness.run(modes[mode], path)
        return result

    return parse


def process_parser(command: list[str]) -> Callable[[str, str], Json]:
    """A harness that parses the files named on its command line, one process per file."""

    def parse(mode: str, path: str) -> Json:
        done = subprocess.run(
            [*command, mode, path], capture_output=True, text=True, timeout=HARNESS_TIMEOUT, check=False
        )
        if done.returncode != 0 or not done.stdout.strip():
            return {"error": f"harness exit {done.returncode}: {done.stderr[-300:]}"}
        answer: Json = json.loads(done.stdout.splitlines()[0])
        return answer

    return parse


def java_parser() -> Callable[[str, str], Json]:
    """One JVM for the session (KaitaiLines), so a session does not start a JVM per case."""
    classpath = os.pathsep.join(
        str(BUILD / part)
        for part in ("ksy/lib/kaitai-struct-runtime-0.11.jar", "ksy/java-classes", "conformance/kaitai-java")
    )
    server = subprocess.Popen(
        ["java", "-Xmx256m", "-cp", classpath, "KaitaiLines"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )

    def parse(mode: str, path: str) -> Json:
        assert server.stdin is not None
        assert server.stdout is not None
        server.stdin.write(f"{mode}\t{path}\n")
        server.stdin.flush()
        line = server.stdout.readline()
        if not line:
            return {"error": f"the Java harness exited ({server.poll()})"}
        answer: Json = json.loads(line)
        return answer

    return parse


PARSERS: dict[str, Callable[[], Callable[[str, str], Json]]] = {
    "python": python_parser,
    "javascript": lambda: process_parser(["node", str(HARNESS / "js" / "harness.js")]),
    "go": lambda: process_parser([str(BUILD / "ksy" / "go-harness" / "harness")]),
    "java": java_parser,
}


def is_legacy(path: Path) -> bool:
    """Version 1 and no signature (spec section 3.4, step 2): choose the legacy description."""
    with path.open("rb") as handle:
        head = handle.read(32)
    return len(head) == 32 and head[4:6] == b"\x00\x01" and head[24:32] != SIGNATURE


class KaitaiTestee:
    def __init__(self, language: str) -> None:
        self.language = language
        self._parse: Callable[[str, str], Json] | None = None

    def hello(self) -> Json:
        return {
            "name": f"kaitai-{self.language}",
            "version": "kaitai-struct-compiler 0.11",
            "spec_version": SPEC_VERSION,
            "roles": ["parser"],
            "capabilities": ["legacy_v1"],
            "choices": {},
        }

    def read(self, path: str, after: str | None) -> Json:
        if after is not None:
            raise serve.Unsupported("a generated parser does not resume from refs")
        if self._parse is None:
            self._parse = PARSERS[self.language]()
        records: list[Json] = []
        try:
            names = sorted(name for name in os.listdir(path) if SEGMENT.match(name))
        except OSError as exc:
            return reject(records, None, f"cannot list: {exc}")
        next_index = 1
        for name in names:
            file = Path(path, name)
            log = int(name[:8])
            legacy = is_legacy(file)
            result = self._parse("legacy" if legacy else "strict", str(file))
            if "error" in result or result.get("checksums_ok") is False:
                return reject(records, log, result.get("error", "a checksum does not match"))
            for entry in result["records"]:
                index = next_index if legacy else int(entry["index"])
                records.append(
                    {
                        "log": log,
                        "offset": str(entry["offset"]),
                        "index": str(index),
                        "asqn": entry["asqn"],
                        "timestamp_us": entry["timestamp_us"],
                        "payload": entry["payload_hex"],
                        "checked": not legacy,
                    }
                )
                next_index = index + 1
        return {"outcome": "accept", "records": records, "torn": None, "error": None}

    def read_tolerant(self, path: str) -> Json:
        raise serve.Unsupported("a generated parser does not step over damage")

    def read_split(self, path: str, log: int, start: int, stop: int) -> Json:
        raise serve.Unsupported("a generated parser does not read splits")

    def write(self, path: str, spec: Json) -> Json:
        raise serve.Unsupported("a generated parser does not write")

    def recover(self, path: str) -> Json:
        raise serve.Unsupported("a generated parser does not recover")


def reject(records: list[Json], log: int | None, why: str) -> Json:
    # A generated parser's exceptions follow field order, not the spec's check order:
    # it names no error class (class null, allowed in the parser role).
    return {
        "outcome": "reject",
        "records": records,
        "torn": None,
        "error": {"class": None, "log": log, "offset": None, "index": None, "detail": why},
    }


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in PARSERS:
        sys.exit(f"usage: adapter.py {'|'.join(PARSERS)} session|read DIR")
    sys.exit(serve.main(KaitaiTestee(sys.argv[1]), sys.argv[2:]))
