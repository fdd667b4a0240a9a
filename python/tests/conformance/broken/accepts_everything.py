"""Broken on purpose: never rejects and never reports a torn tail."""

from __future__ import annotations

import sys

from _base import Json, ReferenceReader

from openbinlog_conformance import serve


class AcceptsEverything(ReferenceReader):
    name = "accepts-everything"

    def read(self, path: str, after: str | None) -> Json:
        answer = super().read(path, after)
        return {"outcome": "accept", "records": answer["records"], "torn": None, "error": None}


if __name__ == "__main__":
    sys.exit(serve.main(AcceptsEverything()))
