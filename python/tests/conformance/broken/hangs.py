"""Broken on purpose: walks record lengths without checking them, and hangs on a length above 2^31 - 1.

It writes its process id to the file named by HANGS_PID_FILE (one line per
start), so a test can check that the runner killed every process it hung in.
"""

from __future__ import annotations

import os
import re
import sys
import time

from _base import Json, ReferenceReader

from openbinlog_conformance import serve

SEGMENT = re.compile(r"^[0-9]{8}\.dat$")


def naive_lengths(path: str) -> list[int]:
    """The length fields a reader meets when it trusts every length (no checksum first)."""
    with open(path, "rb") as handle:
        data = handle.read()
    lengths, offset = [], 256
    if data[4:6] != b"\x00\x02":
        return lengths
    while offset + 4 <= len(data):
        length = int.from_bytes(data[offset : offset + 4], "big")
        lengths.append(length)
        offset += 4 + length
    return lengths


class Hangs(ReferenceReader):
    name = "hangs"

    def read(self, path: str, after: str | None) -> Json:
        names = sorted(n for n in os.listdir(path) if SEGMENT.match(n)) if os.path.isdir(path) else []
        files = [os.path.join(path, name) for name in names if os.path.isfile(os.path.join(path, name))]
        if any(length > 2**31 - 1 for file in files for length in naive_lengths(file)):
            while True:  # the loop a hostile length sends a careless reader into
                time.sleep(3600)
        return super().read(path, after)


if __name__ == "__main__":
    if pid_file := os.environ.get("HANGS_PID_FILE"):
        with open(pid_file, "a") as handle:
            handle.write(f"{os.getpid()}\n")
    sys.exit(serve.main(Hangs()))
