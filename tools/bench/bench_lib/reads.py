"""R1: verified sequential reading against a bare length walk, and the reader's memory.

The bare walk is the least a reader that returns payloads can do: read the
segments in large chunks, follow the u4 length fields, and slice each
payload into a bytes object. No checksum, no index, no header parsing.
The checksum floor adds to it the two CRC32C calls per record a verifying
reader cannot avoid, and nothing else.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any

from crc32c import crc32c

from openbinlog import HEADER_SIZE, RECORD_HEADER_SIZE, Reader, RecordDecoder
from openbinlog._accel import DECODER

from .logs import BuiltLog, segment_files
from .measure import Row, compared, rate, side_by_side
from .plan import MB, Plan
from .processes import emit, run_worker

CHUNK = 1 << 20
LENGTH = struct.Struct(">I")
HEADER_CRC_END = RECORD_HEADER_SIZE - 4  # the header checksum covers the bytes before it
MEMORY_TIMEOUT = 1800.0


def bare_walk(path: Path) -> int:
    """Records of every segment of the log at ``path``, walked by their length fields alone.

    The payloads of each chunk are collected in a list, as a bulk reader would return them.
    """
    unpack_length = LENGTH.unpack_from
    count = 0
    for segment in segment_files(path):
        with open(segment, "rb", buffering=0) as file:
            file.seek(HEADER_SIZE)
            rest = b""
            while chunk := file.read(CHUNK):
                buffer = rest + chunk
                position, end = 0, len(buffer)
                payloads = []
                while position + 4 <= end:
                    (length,) = unpack_length(buffer, position)
                    stop = position + 4 + length
                    if stop > end:
                        break
                    payloads.append(buffer[position + RECORD_HEADER_SIZE : stop])
                    position = stop
                count += len(payloads)
                rest = buffer[position:]
    return count


def checksum_floor_walk(path: Path) -> int:
    """``bare_walk`` line for line, plus the two CRC32C calls per record that verification needs
    (results unused): no comparison, no other field, no entry.

    A copy, not a shared loop: even the order in which a chunk's payloads are freed moves the bare
    walk (by a third for 1 KiB records), so the floor keeps the baseline's exact code around its calls.
    """
    unpack_length = LENGTH.unpack_from
    count = 0
    for segment in segment_files(path):
        with open(segment, "rb", buffering=0) as file:
            file.seek(HEADER_SIZE)
            rest = b""
            while chunk := file.read(CHUNK):
                buffer = rest + chunk
                position, end = 0, len(buffer)
                payloads = []
                while position + 4 <= end:
                    (length,) = unpack_length(buffer, position)
                    stop = position + 4 + length
                    if stop > end:
                        break
                    crc32c(buffer[position : position + HEADER_CRC_END])
                    payload = buffer[position + RECORD_HEADER_SIZE : stop]
                    crc32c(payload)
                    payloads.append(payload)
                    position = stop
                count += len(payloads)
                rest = buffer[position:]
    return count


def decoder_walk(path: Path) -> int:
    """Records of every segment through ``RecordDecoder.next_batch`` alone: the codec as the Reader
    uses it, without the Reader around it.

    The logs are built by a writer that closed cleanly, so each segment's
    records end at its file size, and the indexes run on across segments.
    """
    count = 0
    next_index = 1
    for log, segment in enumerate(segment_files(path), start=1):
        with open(segment, "rb", buffering=0) as file:
            size = os.fstat(file.fileno()).st_size
            file.seek(HEADER_SIZE)
            decoder = RecordDecoder(log=log, offset=HEADER_SIZE, next_index=next_index, limit=size)
            while chunk := file.read(CHUNK):
                decoder.feed(chunk)
                while entries := decoder.next_batch():
                    count += len(entries)
            next_index = decoder.next_index
    return count


def reader_walk(path: Path) -> int:
    """Records returned by the reference ``Reader`` (every checksum, index and commit point checked)."""
    count = 0
    with Reader(path) as reader:
        for _entry in reader:
            count += 1
    return count


def measure_reads(log: BuiltLog, plan: Plan) -> list[Row]:
    where: dict[str, Any] = dict(record_size=log.record_size, log_size=log.log_size)
    seen = reader_walk(log.path)  # also warms the page cache for both
    walked = bare_walk(log.path)
    if seen != walked:
        raise RuntimeError(f"{log.path}: the reader returned {seen} records, the bare walk {walked}")
    figures, baselines = side_by_side(
        lambda: rate(lambda: reader_walk(log.path)), lambda: rate(lambda: bare_walk(log.path)), plan.repeats
    )
    row = Row("R1", "verified sequential read, Reader", "records/s", **where, versus="bare length walk, no CRC")
    row.note = f"{seen} records, {log.bytes / MB:.0f} MB, {DECODER} decoder"
    decoded = decoder_walk(log.path)
    if decoded != seen:
        raise RuntimeError(f"{log.path}: the decoder returned {decoded} records, the reader {seen}")
    codec = [rate(lambda: decoder_walk(log.path)) for _ in range(plan.repeats)]
    split = Row(
        "R1.codec", "verified read, RecordDecoder alone", "records/s", **where, versus="bare length walk, no CRC"
    )
    split.note = f"the codec's batch decode without the Reader around it: where R1's time goes ({DECODER} decoder)"
    floors, floor_baselines = side_by_side(
        lambda: rate(lambda: checksum_floor_walk(log.path)), lambda: rate(lambda: bare_walk(log.path)), plan.repeats
    )
    floor = Row(
        "R1.floor",
        "bare walk plus two CRC32C calls per record",
        "records/s",
        **where,
        versus="bare length walk, no CRC",
    )
    floor.note = "the ceiling of R1 for any CPython reader that verifies both checksums with the crc32c package"
    return [
        compared(row, figures, baselines, bar=0.8),
        compared(split, codec, baselines),
        compared(floor, floors, floor_baselines),
    ]


def _rss_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def read_memory_worker(arguments: dict[str, Any]) -> None:
    """Worker side: walk the whole log with a Reader; report how far the resident set grew."""
    path = Path(arguments["log"])
    with Reader(path) as reader:
        before = _rss_kib("VmRSS")
        count = sum(1 for _ in reader)
    emit({"records": count, "growth_kib": _rss_kib("VmHWM") - before})


def measure_memory(log: BuiltLog) -> Row:
    result = run_worker("read_memory", timeout=MEMORY_TIMEOUT, log=str(log.path))
    row = Row(
        "M1",
        "reader peak RSS growth over a whole-log read",
        "MiB",
        record_size=log.record_size,
        log_size=log.log_size,
    )
    row.figure = result["growth_kib"] / 1024
    row.runs = [row.figure]
    row.note = f"{result['records']} records, {os.path.basename(log.path)}"
    return row
