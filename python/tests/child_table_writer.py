"""A writer process for the commit table tests: appends ``tag-n`` payloads, printing each outcome."""

from __future__ import annotations

import sys

from openbinlog import BinlogError, Writer


def main() -> None:
    directory, tag, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with Writer(directory) as writer:
        n = 0
        while count == 0 or n < count:
            payload = f"{tag}-{n}"
            try:
                ref = writer.append(payload.encode())
            except BinlogError as error:
                print(f"ERR {payload} {error.error_class}", flush=True)
                return
            print(f"ACK {ref.log} {ref.offset} {ref.index} {payload}", flush=True)
            n += 1


if __name__ == "__main__":
    main()
