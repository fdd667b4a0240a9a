"""Whether the compiled accelerator ``openbinlog._native`` is used, decided once for the package.

It is used when it was built, unless the environment sets
``OPENBINLOG_PURE_PYTHON=1``, and only if it reads a record header packed by
``RECORD_HEADER`` (the layout of ``_format``) back to the same fields and
repeats the format's constants with their values. The
pure-Python code stays the reference and the fallback: tests prove the native
walks equal to it, so the choice changes the speed, never a result.
"""

from __future__ import annotations

import os
import warnings
import zipimport
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._crc import MASK_DELTA
from ._format import FRAME_DATA, MAX_RECORD_LENGTH, MIN_RECORD_LENGTH, NO_ASQN, RECORD_HEADER, RECORD_HEADER_SIZE

if TYPE_CHECKING:
    from ._buffer import RecordBuffer as RecordBufferType
    from ._native import Appender as NativeAppender
    from ._native import CommitTable as NativeCommitTable
    from ._native import SharedTarget as NativeSharedTarget
    from ._native import Verifier as NativeVerifier

PURE_PYTHON_VARIABLE = "OPENBINLOG_PURE_PYTHON"

# Every field different, a negative asqn among them: a field read at the wrong place, width or sign differs.
_PROBE_FIELDS = (
    0x0102_0304,
    0x05,
    0x06,
    0x0708,
    0x090A_0B0C_0D0E_0F10,
    -0x1112_1314_1516_1718,
    0x191A_1B1C_1D1E_1F20,
    0x2122_2324,
    0x2526_2728,
)

walk_lengths: Callable[[bytes, int], tuple[bytes, bytes, bytes, int]] | None = None
# Spark's verified runs laid out for Arrow (openbinlog_spark.walk.ArrowRuns) in two buffers it is given:
# arrow_run(buf, next_index, last_asqn, stop, data, meta) -> (records, payload bytes) or None.
arrow_run: Callable[[bytes, int, int, int, Any, Any], tuple[int, int] | None] | None = None
Verifier: type[NativeVerifier[Any]] | None = None
RecordBuffer: Callable[..., RecordBufferType] | None = None
# Writer.append of the modes whose appends return at once, without a Python frame (_buffered).
Appender: type[NativeAppender] | None = None
# The batch of a writer that shares its syncs, steps 1 to 5 and 6 to 7 of spec 6.8 (_shared_commit).
SharedTarget: type[NativeSharedTarget] | None = None
shared_write: Callable[..., tuple[int, int, int, int, int, int, int, int] | None] | None = None
shared_publish: Callable[..., int] | None = None
# The commit table of spec 6.9 (Linux, /dev/shm): one entry of a log's table for a sharing writer.
CommitTable: type[NativeCommitTable] | None = None
TABLE_COMMITTED, TABLE_ALONE, TABLE_UNKNOWN = 0, 1, 2
PUBLISH_IN_PYTHON = -1  # what shared_publish returns when the Python code must publish: the module says
# Why the pure-Python decoder runs, or None when the compiled one does. A missing module is silent (a machine
# without Rust installs the pure package); build_info() tells.
PURE_REASON: str | None

if os.environ.get(PURE_PYTHON_VARIABLE) == "1":
    PURE_REASON = f"{PURE_PYTHON_VARIABLE}=1"
else:
    try:
        from . import _native
    except ModuleNotFoundError:
        PURE_REASON = "openbinlog._native not built"
    except ImportError as exc:
        loader = __spec__.loader if __spec__ is not None else None
        if isinstance(loader, zipimport.zipimporter):
            # Python cannot load an extension module from a zip (as addPyFile ships one), and says "circular import".
            PURE_REASON = (
                f"openbinlog is imported from the zip archive {loader.archive}, from which Python cannot load "
                "the compiled openbinlog._native: install the package instead"
            )
        else:
            PURE_REASON = f"openbinlog._native cannot be loaded: {exc}"
    else:
        _probe = RECORD_HEADER.pack(*_PROBE_FIELDS)
        _constants = (RECORD_HEADER_SIZE, MIN_RECORD_LENGTH, MAX_RECORD_LENGTH, FRAME_DATA, NO_ASQN, MASK_DELTA)
        _native_constants = (
            _native.RECORD_HEADER_SIZE,
            _native.MIN_RECORD_LENGTH,
            _native.MAX_RECORD_LENGTH,
            _native.FRAME_DATA,
            _native.NO_ASQN,
            _native.MASK_DELTA,
        )
        if _native_constants == _constants and _native.read_header(_probe) == _PROBE_FIELDS:
            walk_lengths, Verifier, RecordBuffer = _native.walk_lengths, _native.Verifier, _native.RecordBuffer
            # A module built before arrow_run existed still serves the rest: Spark's runs are then laid out by numpy.
            arrow_run = getattr(_native, "arrow_run", None)
            Appender = _native.Appender
            # A module built before they existed still serves the rest: the batch is then the Python one.
            SharedTarget = getattr(_native, "SharedTarget", None)
            shared_write = getattr(_native, "shared_write", None) if SharedTarget is not None else None
            shared_publish = getattr(_native, "shared_publish", None) if SharedTarget is not None else None
            PUBLISH_IN_PYTHON = getattr(_native, "PUBLISH_IN_PYTHON", PUBLISH_IN_PYTHON)
            if shared_write is not None and os.path.isdir("/dev/shm"):
                CommitTable = getattr(_native, "CommitTable", None)
            PURE_REASON = None
        else:
            PURE_REASON = "openbinlog._native disagrees with the record layout or constants"
            warnings.warn(f"pure ({PURE_REASON}): the pure-Python code is used", RuntimeWarning, stacklevel=1)

DECODER = "native" if PURE_REASON is None else f"pure ({PURE_REASON})"
