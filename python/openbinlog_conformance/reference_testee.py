"""The reference implementation as a testee: ``python -m openbinlog_conformance.reference_testee session``.

The registered testee ``python`` (conformance/implementations/python/testee.py
in a checkout, this module in an installed package's kit) and the decision
mutants of conformance/mutants/, which serve it with one reading of the spec
switched, are this handler.
"""

from __future__ import annotations

import sys
from typing import Any

import openbinlog
from openbinlog.build import build_info

from . import serve
from .reference import (
    read_log,
    read_log_from,
    read_log_tolerant,
    read_planned_splits,
    read_split_log,
    recover_log,
    write_log,
)
from .vocabulary import CAPABILITIES, SPEC_VERSION

Json = dict[str, Any]


class ReferenceTestee:
    """The reference implementation as a testee (a ``serve.Handler``): every role and capability."""

    name = "openbinlog-python"

    def hello(self) -> Json:
        return {
            "name": self.name,
            "version": openbinlog.__version__,
            "spec_version": SPEC_VERSION,
            "roles": ["reader", "writer"],
            # Reading compressed segments means both codecs of spec 2.6: Zstandard needs the zstd extra.
            "capabilities": [cap for cap in CAPABILITIES if cap != "compressed" or build_info().extras["zstd"]],
            # A full reader: the end of a finished, unsealed segment is found by walking its tail.
            "choices": {"finished_segment_end": "tail_walk"},
        }

    def read(self, path: str, after: str | bytes | None) -> Json:
        return read_log(path, after)

    def read_from(self, path: str, start: Json) -> Json:
        return read_log_from(path, start)

    def read_tolerant(self, path: str) -> Json:
        return read_log_tolerant(path)

    def read_split(self, path: str, log: int, start: int, stop: int) -> Json:
        return read_split_log(path, log, start, stop)

    def read_plan(self, path: str, log: int, parts: int) -> Json:
        return read_planned_splits(path, log, parts)

    def write(self, path: str, spec: Json) -> Json:
        return write_log(path, spec)

    def recover(self, path: str) -> Json:
        return recover_log(path)


if __name__ == "__main__":
    sys.exit(serve.main(ReferenceTestee()))
