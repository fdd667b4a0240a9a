"""Broken on purpose: dies (an uncaught exception) on any log of three or more segment files."""

from __future__ import annotations

import os
import re
import sys

from _base import Json, ReferenceReader

from openbinlog_conformance import serve

SEGMENT = re.compile(r"^[0-9]{8}\.dat$")


class Crashes(ReferenceReader):
    name = "crashes"

    def read(self, path: str, after: str | None) -> Json:
        if os.path.isdir(path) and sum(bool(SEGMENT.match(name)) for name in os.listdir(path)) >= 3:
            raise RuntimeError("segment table overflow")
        return super().read(path, after)


if __name__ == "__main__":
    sys.exit(serve.main(Crashes()))
