"""Broken on purpose: reports every damage as checksum_mismatch, and checksum_mismatch as truncated."""

from __future__ import annotations

import sys

from _base import Json, ReferenceReader

from openbinlog_conformance import serve


class WrongErrorClass(ReferenceReader):
    name = "wrong-error-class"

    def read(self, path: str, after: str | None) -> Json:
        answer = super().read(path, after)
        error = answer["error"]
        if error is not None:
            wrong = "truncated" if error["class"] == "checksum_mismatch" else "checksum_mismatch"
            answer = {**answer, "error": {**error, "class": wrong}}
        return answer


if __name__ == "__main__":
    sys.exit(serve.main(WrongErrorClass()))
