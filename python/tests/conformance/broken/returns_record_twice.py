"""Broken on purpose: a split that starts inside a record returns that record too (so two splits return it)."""

from __future__ import annotations

import sys

from _base import Json, ReferenceReader

from openbinlog import HEADER_SIZE, RECORD_HEADER_SIZE
from openbinlog_conformance import serve


class ReturnsRecordTwice(ReferenceReader):
    name = "returns-record-twice"
    capabilities = ("legacy_v1", "refs", "split")

    def read_split(self, path: str, log: int, start: int, stop: int) -> Json:
        answer = super().read_split(path, log, HEADER_SIZE, stop)
        ends_after_start = [
            record
            for record in answer["records"]
            if int(record["offset"]) + RECORD_HEADER_SIZE + len(record["payload"]) // 2 > start
        ]
        return {**answer, "records": ends_after_start}


if __name__ == "__main__":
    sys.exit(serve.main(ReturnsRecordTwice()))
