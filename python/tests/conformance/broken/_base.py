"""What every deliberately broken testee shares: the reference's answers, reader role only.

Each broken testee changes one thing in these answers, so the suite's
self-tests can check that the runner catches exactly that defect.
"""

from __future__ import annotations

from typing import Any

from openbinlog_conformance import reference, serve
from openbinlog_conformance.vocabulary import SPEC_VERSION

Json = dict[str, Any]


class ReferenceReader:
    name = "broken"
    capabilities = ("legacy_v1", "refs")

    def hello(self) -> Json:
        return {
            "name": self.name,
            "version": "0",
            "spec_version": SPEC_VERSION,
            "roles": ["reader"],
            "capabilities": list(self.capabilities),
            "choices": {"finished_segment_end": "tail_walk"},
        }

    def read(self, path: str, after: str | None) -> Json:
        return reference.read_log(path, after)

    def read_tolerant(self, path: str) -> Json:
        return reference.read_log_tolerant(path)

    def read_split(self, path: str, log: int, start: int, stop: int) -> Json:
        return reference.read_split_log(path, log, start, stop)

    def write(self, path: str, spec: Json) -> Json:
        raise serve.Unsupported("reader only")

    def recover(self, path: str) -> Json:
        raise serve.Unsupported("reader only")
