"""The exception hierarchy: one root, one subclass per error class of the spec.

Every error carries where it happened: the path of the file, the log
(segment) number, the byte offset and the record index, each ``None`` where
it does not apply. ``error_class`` is the spec's name for the failure
(section "Error classes"); the conformance suite compares that, never the
message.
"""

from __future__ import annotations

from pathlib import Path


class BinlogError(Exception):
    """Root of every error this package raises."""

    error_class = "error"

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        log: int | None = None,
        offset: int | None = None,
        index: int | None = None,
    ) -> None:
        self.message = message
        self.path = None if path is None else str(path)
        self.log = log
        self.offset = offset
        self.index = index
        super().__init__(self._render())

    def _render(self) -> str:
        where = [
            f"{name} {value}"
            for name, value in (("log", self.log), ("offset", self.offset), ("index", self.index))
            if value is not None
        ]
        prefix = f"{self.path}: " if self.path else ""
        suffix = f" ({', '.join(where)})" if where else ""
        return f"{prefix}{self.message}{suffix} [{self.error_class}]"

    def located(
        self,
        *,
        path: str | Path | None = None,
        log: int | None = None,
    ) -> BinlogError:
        """Fill in the file and log number a pure parsing function could not know."""
        if path is not None and self.path is None:
            self.path = str(path)
        if log is not None and self.log is None:
            self.log = log
        self.args = (self._render(),)
        return self


class CorruptionError(BinlogError):
    """Damage at or below the commit point: data that was committed is not intact."""

    error_class = "corruption"


class BadSignatureError(CorruptionError):
    error_class = "bad_signature"


class BadHeaderError(CorruptionError):
    error_class = "bad_header"


class TruncatedError(CorruptionError):
    error_class = "truncated"


class ChecksumMismatchError(CorruptionError):
    error_class = "checksum_mismatch"


class LengthOutOfRangeError(CorruptionError):
    error_class = "length_out_of_range"


class IndexDiscontinuityError(CorruptionError):
    error_class = "index_discontinuity"


class AsqnNotIncreasingError(CorruptionError):
    error_class = "asqn_not_increasing"


class ChainBrokenError(CorruptionError):
    error_class = "chain_broken"


class UnsupportedVersionError(BinlogError):
    error_class = "unsupported_version"


class UnsupportedFeatureError(BinlogError):
    error_class = "unsupported_feature"


class InvalidRefError(BinlogError):
    error_class = "invalid_ref"


class OvertakenError(InvalidRefError):
    """Retention removed the segment a reader was in, and those after it up to a later one (spec 10.2 NEXT).

    Not damage: the reader's position no longer names anything. Read again
    from the lowest segment present.
    """


class AmbiguousSplitError(BinlogError):
    """A split's end boundary lies inside a record its walk returned: a payload holds a valid record of the log.

    The bytes are intact; the split point cannot be resolved from them (spec 10.5).
    """

    error_class = "ambiguous_split"


class BinlogIOError(BinlogError):
    """The operating system refused a read, write, sync or lock."""

    error_class = "io_error"


class NotALogError(BinlogIOError):
    """The path is missing, not a directory, or holds neither a segment nor ``LOCK`` (spec 2.3)."""

    error_class = "io_error"


class WriterFailedError(BinlogError):
    """A sync failed earlier; the writer acknowledges nothing until reopened."""

    error_class = "writer_failed"


class WriterClosedError(BinlogError):
    error_class = "writer_closed"


class LogFullError(BinlogError):
    """The log cannot take this append or cutover: its log numbers (W-1) or 64-bit counters are used up."""

    error_class = "log_full"


class AsqnOrderError(BinlogError, ValueError):
    """An append's application sequence number is not above the previous one."""

    error_class = "asqn_not_increasing"


class PayloadTooLargeError(BinlogError, ValueError):
    error_class = "length_out_of_range"


class LegacyLogError(BinlogError):
    """Writers write version 2 only; a legacy version 1 log is read-only."""

    error_class = "unsupported_version"


ERROR_CLASSES: dict[str, type[BinlogError]] = {
    cls.error_class: cls
    for cls in (
        BadSignatureError,
        BadHeaderError,
        TruncatedError,
        ChecksumMismatchError,
        LengthOutOfRangeError,
        IndexDiscontinuityError,
        AsqnNotIncreasingError,
        ChainBrokenError,
        UnsupportedVersionError,
        UnsupportedFeatureError,
        InvalidRefError,
        AmbiguousSplitError,
        BinlogIOError,
    )
}
