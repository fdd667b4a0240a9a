"""Helpers of the Spark tests: rows read through the data source (with and without Spark) and the reference's rows."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from openbinlog import BinlogError, Damage, Reader, Writer, build_indexes
from openbinlog._format import HEADER_SIZE, SEGMENT_NAME
from openbinlog._records import encode_record
from openbinlog._segment import CommitState, build_header, encode_slot
from openbinlog_spark.source import BinlogDataSource, BinlogPushdownReader

Record = tuple[int, int, int, int, int | None, bytes]  # log, offset, index, asqn, timestamp_us, payload
DamageRow = tuple[
    str, int | None, int | None, int | None, int, int | None
]  # class, log, offset, index, skipped, resume

LOG_ID = bytes(range(16))


def record_of(entry: Any) -> Record:
    return (entry.log, entry.offset, entry.index, entry.asqn, entry.timestamp_us, bytes(entry.payload))


def damage_of(damage: Damage) -> DamageRow:
    return (damage.error_class, damage.log, damage.offset, damage.index, damage.bytes_skipped, damage.next_index)


def reference(path: Path | str) -> tuple[list[Record], list[DamageRow]]:
    """What the reference tolerant Reader returns: the records and the damage it reports."""
    with Reader(path, tolerant=True) as reader:
        records = sorted(record_of(entry) for entry in reader)
        return records, [damage_of(damage) for damage in reader.damage]


def reference_to_its_end(path: Path | str) -> tuple[list[Record], list[DamageRow], BinlogError | None]:
    """What the reference tolerant Reader returns before its walk ends: the records, the damage it steps over, and
    the error that ends it (a segment header that fails its checks is never stepped over, spec readers 10.4), or
    None where it reads to the end of the log."""
    records: list[Record] = []
    with Reader(path, tolerant=True) as reader:
        try:
            records.extend(record_of(entry) for entry in reader)
        except BinlogError as error:
            return sorted(records), [damage_of(damage) for damage in reader.damage], error
        return sorted(records), [damage_of(damage) for damage in reader.damage], None


def row_of(error: BinlogError) -> DamageRow:
    """The damage row of a segment header that fails its checks: no walk steps over it, so 0 bytes skipped and no
    index resumed at."""
    return (error.error_class, error.log, error.offset, error.index, 0, None)


def strict_reference(path: Path | str) -> list[Record]:
    with Reader(path) as reader:
        return sorted(record_of(entry) for entry in reader)


def _split_rows(rows: Sequence[dict[str, Any]], corrupt: bool) -> tuple[list[Record], list[DamageRow]]:
    records: list[Record] = []
    damages: list[DamageRow] = []
    for given in rows:
        row = {**given, "_error": given} if "error_class" in given else given  # a corruption report row
        error = row.get("_error") if corrupt or "error_class" in given else None
        if error is not None:
            damages.append(
                (
                    error["error_class"],
                    row["log"],
                    row["offset"],
                    row["index"],
                    error["bytes_skipped"],
                    error["resume_index"],
                )
            )
        else:
            records.append((row["log"], row["offset"], row["index"], row["asqn"], row["ts"], bytes(row["payload"])))
    return sorted(records), sorted(damages, key=lambda item: (item[1] or 0, item[2] or 0, item[0]))


def planned(
    path: Path | str | list[str],
    *,
    filters: Sequence[Any] = (),
    between: Callable[[], object] | None = None,
    **options: Any,
) -> tuple[list[Record], list[DamageRow], int]:
    """Plan and read through the data source classes in this process, without Spark.

    Returns the records, the damage rows and the number of partitions planned.
    ``between``: a change made after planning, before the partitions are read.
    """
    given = {"paths": _json_paths(path)} if isinstance(path, list) else {"path": str(path)}
    source = BinlogDataSource({**given, **{key: str(value) for key, value in options.items()}})
    schema = source.schema()
    reader = source.reader(schema)
    if filters:
        reader = BinlogPushdownReader(reader.options, schema)
        reader.pushFilters(list(filters))
    partitions = reader.partitions()
    if between is not None:
        between()
    rows: list[dict[str, Any]] = []
    for partition in partitions:
        for batch in reader.read(partition):
            table = pa.Table.from_batches([batch])
            if "timestamp" in table.column_names:
                stamps = table.column("timestamp").cast(pa.int64())
                table = table.drop_columns(["timestamp"]).append_column("ts", stamps)
            rows.extend(table.to_pylist())
    records, damages = _split_rows(rows, "_error" in schema.fieldNames())
    return records, damages, len([partition for partition in partitions if partition.value])


def _json_paths(paths: list[str]) -> str:
    return json.dumps([str(path) for path in paths])


def collected(df: DataFrame) -> tuple[list[Record], list[DamageRow]]:
    """Records and damage rows of a ``binlog`` DataFrame read by Spark."""
    corrupt = "_error" in df.columns
    chosen = df.select(
        "log",
        "offset",
        "index",
        "asqn",
        F.unix_micros("timestamp").alias("ts"),
        "payload",
        *(["_error"] if corrupt else []),
    )
    rows = [row.asDict(recursive=True) for row in chosen.collect()]
    return _split_rows(rows, corrupt)


def collected_by_directory(df: DataFrame) -> dict[str, tuple[list[Record], list[DamageRow]]]:
    """``collected``, per log directory (the directory of the row's file, or the file when it names one)."""
    corrupt = "_error" in df.columns
    chosen = df.select(
        "file",
        "log",
        "offset",
        "index",
        "asqn",
        F.unix_micros("timestamp").alias("ts"),
        "payload",
        *(["_error"] if corrupt else []),
    )
    rows: dict[str, list[dict[str, Any]]] = {}
    for row in chosen.collect():
        file = row["file"]
        directory = os.path.dirname(file) if SEGMENT_NAME.match(os.path.basename(file)) else file
        rows.setdefault(directory, []).append(row.asDict(recursive=True))
    return {directory: _split_rows(items, corrupt) for directory, items in rows.items()}


def split_options(segment_bytes: int, splits: int) -> dict[str, int]:
    """Options that cut a segment of ``segment_bytes`` into exactly ``splits`` byte ranges."""
    data = segment_bytes - HEADER_SIZE
    return {"maxPartitionBytes": max(1, -(-data // splits)), "openCostInBytes": 1, "minPartitions": 1}


def raw_segment(
    payloads: Sequence[bytes],
    *,
    log: int = 1,
    base_index: int = 1,
    asqns: Sequence[int] | None = None,
    indexes: Sequence[int] | None = None,
    sealed: bool = False,
    log_id: bytes = LOG_ID,
    timestamp_us: int = 1_700_000_000_000_000,
) -> bytes:
    """A version 2 segment built byte by byte, its commit point after the last record.

    ``asqns`` and ``indexes`` let a test write what a correct writer never would.
    """
    body = b"".join(
        encode_record(
            indexes[number] if indexes else base_index + number,
            payload,
            asqn=asqns[number] if asqns else -1,
            timestamp_us=timestamp_us + number,
        )
        for number, payload in enumerate(payloads)
    )
    header = bytearray(build_header(log=log, log_id=log_id, base_index=base_index, created_us=timestamp_us))
    commit = CommitState(
        generation=2,
        commit_offset=HEADER_SIZE + len(body),
        next_index=base_index + len(payloads),
        last_asqn=max([-1, *(asqns or [])]),
        last_timestamp_us=timestamp_us + max(len(payloads) - 1, 0),
        next_log_number=log + 1 if sealed else 0,
    )
    at, slot = encode_slot(commit)
    header[at : at + len(slot)] = slot
    return bytes(header) + body


def write_segment(directory: Path, data: bytes, log: int = 1, suffix: str = "") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{log:08d}.dat{suffix}"
    path.write_bytes(data)
    return path


def record_offsets(path: Path) -> list[int]:
    """The offsets of the records of a segment, from the reference reader."""
    with Reader(path.parent) as reader:
        return [entry.offset for entry in reader if entry.log == int(path.name[:8])]


def payloads(count: int, size: int = 120, seed: int = 7) -> list[bytes]:
    """Deterministic payloads of ``size`` bytes that avoid no byte value."""
    state = seed
    out = []
    for _ in range(count):
        chunk = bytearray()
        while len(chunk) < size:
            state = (state * 6364136223846793005 + 1442695040888963407) % 2**64
            chunk += state.to_bytes(8, "big")
        out.append(bytes(chunk[:size]))
    return out


def file_size(path: Path) -> int:
    return os.path.getsize(path)


def log_of_logs(directory: Path, count: int, *, interval: int = 256, filler: int = 0) -> Path:
    """A sealed segment whose every payload is a whole, valid record of the same log carrying the index and time
    of the record that holds it (and ``filler`` bytes after it), so that every embedded record passes every check
    a reader can make at its offset; then a cutover (segment 2, empty) and the index of segment 1."""
    now = [1_700_000_000_000_000]
    with Writer(directory, durability="os", clock_us=lambda: now[0]) as writer:
        for index in range(1, count + 1):
            now[0] += 1_000
            inner = encode_record(index, b"inner-%d" % index * 3 + b"." * filler, timestamp_us=now[0])
            writer.append(inner)
        writer.cutover()
    build_indexes(directory, interval=interval)
    return directory
