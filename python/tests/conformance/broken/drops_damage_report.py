"""Broken on purpose: a tolerant read that leaves the first damaged region out of its report."""

from __future__ import annotations

import sys

from _base import Json, ReferenceReader

from openbinlog_conformance import serve


class DropsDamageReport(ReferenceReader):
    name = "drops-damage-report"
    capabilities = ("legacy_v1", "refs", "tolerant")

    def read_tolerant(self, path: str) -> Json:
        answer = super().read_tolerant(path)
        return {**answer, "damage": answer["damage"][1:]}


if __name__ == "__main__":
    sys.exit(serve.main(DropsDamageReport()))
