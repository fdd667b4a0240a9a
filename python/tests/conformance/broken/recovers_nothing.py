"""Broken on purpose: a writer whose recovery says ok and does nothing."""

from __future__ import annotations

import sys

from _base import Json, ReferenceReader

from openbinlog_conformance import serve


class RecoversNothing(ReferenceReader):
    name = "recovers-nothing"

    def hello(self) -> Json:
        return {**super().hello(), "roles": ["writer"], "capabilities": ["recover"]}

    def recover(self, path: str) -> Json:
        return {"ok": True}


if __name__ == "__main__":
    sys.exit(serve.main(RecoversNothing()))
