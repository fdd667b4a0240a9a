#!/usr/bin/env python3
"""The Python reference implementation (openbinlog) as a conformance testee.

testee.py session | read DIR [--after REF | --tolerant | --split LOG:START:STOP] | write DIR < SPEC.json | recover DIR
"""

from __future__ import annotations

import sys
from typing import Any

import openbinlog
from openbinlog_conformance import reference, serve
from openbinlog_conformance.vocabulary import SPEC_VERSION

Json = dict[str, Any]


class ReferenceTestee:
    def hello(self) -> Json:
        return {
            "name": "openbinlog-python",
            "version": openbinlog.__version__,
            "spec_version": SPEC_VERSION,
            "roles": ["reader", "writer"],
            "capabilities": ["legacy_v1", "refs", "tolerant", "split", "recover", "write"],
            # A full reader: the end of a finished, unsealed segment is found by walking its tail.
            "choices": {"finished_segment_end": "tail_walk"},
        }

    def read(self, path: str, after: str | None) -> Json:
        return reference.read_log(path, after)

    def read_tolerant(self, path: str) -> Json:
        return reference.read_log_tolerant(path)

    def read_split(self, path: str, log: int, start: int, stop: int) -> Json:
        return reference.read_split_log(path, log, start, stop)

    def write(self, path: str, spec: Json) -> Json:
        return reference.write_log(path, spec)

    def recover(self, path: str) -> Json:
        return reference.recover_log(path)


if __name__ == "__main__":
    sys.exit(serve.main(ReferenceTestee()))
