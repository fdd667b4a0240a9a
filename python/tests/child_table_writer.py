"""A writer process for the commit table tests: appends ``tag-n`` payloads, printing each outcome.

After each acknowledgement it reads the segment's published commit point, as a reader opened then would
(W-46: a round marks a batch done only once its publication covers it), and prints ``UNPUBLISHED`` when the
record's end lies beyond it.
"""

from __future__ import annotations

import sys

from openbinlog import BinlogError, Writer
from openbinlog._format import RECORD_HEADER_SIZE
from openbinlog._segment import SegmentHeaderInfo
from openbinlog._segment_file import SegmentFile


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
            with SegmentFile(directory, ref.log) as segment:
                header = segment.header()
                published = segment.commit(header).commit_offset if isinstance(header, SegmentHeaderInfo) else 0
            if published < ref.offset + RECORD_HEADER_SIZE + len(payload):
                print(f"UNPUBLISHED {payload} {published}", flush=True)
            n += 1


if __name__ == "__main__":
    main()
