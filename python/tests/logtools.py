"""Shared helpers: building logs, damaging them, and proving readers never write."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from openbinlog import Entry, Reader, Writer

Op = bytes | None  # a payload to append, or None for a cutover


def write_log(directory: Path, ops: Sequence[Op], **writer_options: object) -> list[bytes]:
    """Run ``ops`` through a Writer; return the payloads in the order appended."""
    appended: list[bytes] = []
    with Writer(directory, **writer_options) as writer:  # type: ignore[arg-type]
        for op in ops:
            if op is None:
                writer.cutover()
            else:
                writer.append(op)
                appended.append(op)
    return appended


def read_entries(directory: Path, **reader_options: object) -> list[Entry]:
    with Reader(directory, **reader_options) as reader:  # type: ignore[arg-type]
        return list(reader)


def tree_digest(directory: Path) -> dict[str, str]:
    """Name, size, mode and content hash of every file: what a reader must never change."""
    digest: dict[str, str] = {}
    for root, _dirs, files in os.walk(directory):
        for name in files:
            path = Path(root) / name
            stat = path.stat()
            digest[str(path.relative_to(directory))] = (
                f"{stat.st_size}:{stat.st_mode:o}:{hashlib.sha256(path.read_bytes()).hexdigest()}"
            )
    return digest


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / "log"


def segment(directory: Path, log: int = 1) -> Path:
    return directory / f"{log:08d}.dat"


def flip_bit(path: Path, offset: int, bit: int = 0) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 1 << bit
    path.write_bytes(bytes(data))


def append_raw(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)
