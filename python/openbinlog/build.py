"""What runs: the package's version, which decoder and encoder, and which optional extras are installed.

``binlog --version`` prints it; a benchmark or a bug report quotes it. A missing
accelerator is silent at import (a machine without Rust installs the pure
package): this is where it shows.
"""

from __future__ import annotations

import platform
from dataclasses import asdict, dataclass
from typing import Any, Literal

from . import _accel
from ._optional import extras_present

__all__ = ["BuildInfo", "build_info"]


@dataclass(frozen=True, slots=True)
class BuildInfo:
    version: str  # of openbinlog, e.g. "0.1.0"
    python: str  # e.g. "3.11.7 (CPython)"
    decoder: Literal["compiled", "pure Python"]  # the record decoder the Reader and verify use
    decoder_note: str | None  # why the decoder is pure Python ("openbinlog._native not built", ...); None if compiled
    # The record encoder of exclusive writers (_buffer; the process and mmap modes are exclusive): compiled with the
    # decoder. Ordinary writers encode in Python.
    encoder: Literal["compiled", "pure Python"]
    extras: dict[str, bool]  # each optional extra ("zstd", "arrow", "spark"): installed or not

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def build_info() -> BuildInfo:
    """What this installation runs (cheap: no optional module is imported)."""
    from . import __version__  # noqa: PLC0415 - defined by the package after it imports this module

    return BuildInfo(
        version=__version__,
        python=f"{platform.python_version()} ({platform.python_implementation()})",
        decoder="compiled" if _accel.PURE_REASON is None else "pure Python",
        decoder_note=_accel.PURE_REASON,
        encoder="compiled" if _accel.RecordBuffer is not None else "pure Python",
        extras=extras_present(),
    )
