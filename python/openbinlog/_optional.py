"""Optional dependencies: imported where they are used, and named by the extra that installs them when missing.

The core package reads, writes and runs the ``binlog`` command with its few
required dependencies; ``.zst`` segments, Parquet and Arrow export and the
Spark data source each need an extra (``pip install 'openbinlog[EXTRA]'``).
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

__all__ = ["EXTRAS", "MissingExtraError", "extras_present", "require"]

# The modules each extra of pyproject.toml installs that the package imports (the test and all extras aside).
EXTRAS: dict[str, tuple[str, ...]] = {
    "zstd": ("zstandard",),
    "arrow": ("pyarrow",),
    "spark": ("pyspark", "pandas", "numpy", "fsspec", "s3fs", "pyarrow", "zstandard"),
}


class MissingExtraError(ModuleNotFoundError):
    """An optional module is not installed: ``extra`` names the extra of the package that installs it.

    An ``ImportError`` (a ``ModuleNotFoundError``), not a ``BinlogError``: the log is fine, the
    environment lacks a package.
    """

    def __init__(self, module: str, extra: str, purpose: str) -> None:
        super().__init__(f"{purpose} needs the '{extra}' extra: pip install 'openbinlog[{extra}]'", name=module)
        self.extra = extra
        self.purpose = purpose


def require(module: str, extra: str, purpose: str) -> ModuleType:
    """Import ``module`` and return it, or raise ``MissingExtraError`` naming ``extra`` if it is not installed.

    ``purpose`` says what needs it and starts the message, e.g. ``require("zstandard", "zstd", "reading .zst
    segments")``. Only the module itself missing is translated: a module it fails to import propagates as is.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is None or module.partition(".")[0] != exc.name.partition(".")[0]:
            raise
        raise MissingExtraError(module, extra, purpose) from exc


def extras_present() -> dict[str, bool]:
    """For each extra of ``EXTRAS``, whether all its modules are installed (found, never imported: cheap)."""
    return {
        extra: all(importlib.util.find_spec(module) is not None for module in modules)
        for extra, modules in EXTRAS.items()
    }
