"""Broken on purpose: after record damage a tolerant read resumes one record later than it should."""

from __future__ import annotations

import sys

from _base import Json, ReferenceReader

from openbinlog_conformance import serve


class ResumesOneRecordLate(ReferenceReader):
    name = "resumes-one-record-late"
    capabilities = ("legacy_v1", "refs", "tolerant")

    def read_tolerant(self, path: str) -> Json:
        answer = super().read_tolerant(path)
        records: list[Json] = answer["records"]
        return {**answer, "records": records, "damage": [self._late(region, records) for region in answer["damage"]]}

    @staticmethod
    def _late(region: Json, records: list[Json]) -> Json:
        """Drop the record the region resumed at from ``records``; the region then resumes at the one after it.

        A region that is not record damage, or whose record was itself stepped over as damage, stays as it is.
        """
        if region["class"] in ("chain_broken", "bad_header") or region["resumed_index"] is None:
            return region
        at = next(
            (n for n, r in enumerate(records) if (r["log"], r["index"]) == (region["log"], region["resumed_index"])),
            None,
        )
        if at is None:
            return region
        skipped = records.pop(at)
        following = records[at] if at < len(records) and records[at]["log"] == region["log"] else None
        return {
            **region,
            "bytes_skipped": str(int(region["bytes_skipped"]) + 40 + len(skipped["payload"]) // 2),
            "resumed_index": None if following is None else following["index"],
        }


if __name__ == "__main__":
    sys.exit(serve.main(ResumesOneRecordLate()))
