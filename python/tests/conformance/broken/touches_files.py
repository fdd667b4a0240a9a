"""Broken on purpose: a reader that leaves a file behind in the log directory (R-2)."""

from __future__ import annotations

import os
import sys

from _base import Json, ReferenceReader

from openbinlog_conformance import serve


class TouchesFiles(ReferenceReader):
    name = "touches-files"

    def read(self, path: str, after: str | None) -> Json:
        answer = super().read(path, after)
        if os.path.isdir(path):
            with open(os.path.join(path, "reader-was-here"), "w") as handle:
                handle.write("readers must never write\n")
        return answer


if __name__ == "__main__":
    sys.exit(serve.main(TouchesFiles()))
