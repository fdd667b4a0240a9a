"""Broken on purpose: loses the last record it would return."""

from __future__ import annotations

import sys

from _base import Json, ReferenceReader

from openbinlog_conformance import serve


class DropsLastRecord(ReferenceReader):
    name = "drops-last-record"

    def read(self, path: str, after: str | None) -> Json:
        answer = super().read(path, after)
        return {**answer, "records": answer["records"][:-1]}


if __name__ == "__main__":
    sys.exit(serve.main(DropsLastRecord()))
