"""Broken on purpose: a writer that writes the right records and leaves a cutover's temporary file behind."""

from __future__ import annotations

import os
import sys

from _base import Json, ReferenceReader

from openbinlog_conformance import reference, serve


class LeavesTempFile(ReferenceReader):
    name = "leaves-temp-file"

    def hello(self) -> Json:
        return {**super().hello(), "roles": ["writer"], "capabilities": ["write"]}

    def write(self, path: str, spec: Json) -> Json:
        answer = reference.write_log(path, spec)
        with open(os.path.join(path, ".00000002.dat.dead.tmp"), "wb") as handle:
            handle.write(bytes(256))
        return answer


if __name__ == "__main__":
    sys.exit(serve.main(LeavesTempFile()))
