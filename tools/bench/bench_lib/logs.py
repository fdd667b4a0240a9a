"""The logs the benchmark reads and appends to, built with the library itself."""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass
from pathlib import Path

from openbinlog import RECORD_HEADER_SIZE, Writer, encode_record

from .plan import MB, MIB

BUILD_BATCH_BYTES = 4 * MIB
DISTINCT_PAYLOADS = 64


def payloads(record_size: int, count: int = DISTINCT_PAYLOADS, seed: int = 1) -> list[bytes]:
    """A few distinct payloads of ``record_size`` bytes, cycled through by every workload."""
    generator = random.Random(seed)
    return [generator.randbytes(record_size) for _ in range(count)]


def record_bytes(record_size: int) -> bytes:
    """The bytes one record of ``record_size`` payload bytes occupies: what baselines write."""
    return encode_record(1, payloads(record_size, 1)[0], timestamp_us=1)


def size_label(size: int) -> str:
    if size % MIB == 0 and size < 1000 * MB:
        return f"{size // MIB} MiB"
    if size % 1024 == 0 and size < MIB:
        return f"{size // 1024} KiB"
    if size >= 1000 * MB:
        return f"{size / (1000 * MB):g} GB"
    return f"{size / MB:g} MB"


@dataclass(frozen=True)
class BuiltLog:
    path: Path
    record_size: int
    log_size: int  # the nominal size asked for
    records: int
    bytes: int  # the segment files' bytes as built


def build_log(path: Path, *, record_size: int, log_size: int, segment_bytes: int) -> BuiltLog:
    """Fill a new log at ``path`` with records of ``record_size`` until its segments hold ``log_size`` bytes."""
    pool = payloads(record_size)
    per_batch = max(1, BUILD_BATCH_BYTES // (record_size + RECORD_HEADER_SIZE))
    written = 0
    records = 0
    with Writer(path, durability="os", max_segment_bytes=segment_bytes) as writer:
        while written < log_size:
            count = min(per_batch, -(-(log_size - written) // (record_size + RECORD_HEADER_SIZE)))
            writer.append_many(pool[(records + i) % len(pool)] for i in range(count))
            records += count
            written += count * (record_size + RECORD_HEADER_SIZE)
    return BuiltLog(path, record_size, log_size, records, log_bytes(path))


def log_bytes(path: Path) -> int:
    return sum(entry.stat().st_size for entry in os.scandir(path) if entry.name.endswith(".dat"))


def segment_files(path: Path) -> list[Path]:
    return sorted(path / name for name in os.listdir(path) if name.endswith(".dat"))


def append_torn_tail(path: Path, *, next_index: int, record_size: int, tail_bytes: int, garbage: int = 4096) -> int:
    """What a writer killed between writing and publishing leaves: whole records beyond the
    commit point of the last segment, then a torn remainder. Returns the records written.

    The last segment must end at its commit point (a closed, non-preallocated writer's does).
    """
    pool = payloads(record_size, seed=2)
    now_us = time.time_ns() // 1000
    count = max(1, tail_bytes // (record_size + RECORD_HEADER_SIZE))
    records = b"".join(encode_record(next_index + i, pool[i % len(pool)], timestamp_us=now_us) for i in range(count))
    torn = random.Random(3).randbytes(garbage)
    with open(segment_files(path)[-1], "ab") as segment:
        segment.write(records + torn)
    return count
