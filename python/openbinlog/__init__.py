"""openbinlog: the reference implementation of the BinLog format, version 2.

A log is a directory of segments; ``Writer`` appends crash-safely (one sync
per commit, group commit across threads, several processes under a lock),
``Reader`` returns committed records in index order and follows a live log,
``verify`` and ``recover`` report and repair. The format is specified in
``spec/binlog.md``; this package is its executable reference.
"""

from ._format import FIRST_INDEX, HEADER_SIZE, MAX_PAYLOAD_SIZE, NO_ASQN, RECORD_HEADER_SIZE, SIGNATURE
from ._reader import Damage, Reader, read_all
from ._records import Entry, RecordDecoder, TailStop, encode_record
from ._ref import Ref
from ._verify import SegmentReport, TailReport, VerifyReport, recover, verify
from ._writer import DURABILITY_MODES, Durability, RecoveryAction, Writer
from .errors import (
    AsqnNotIncreasingError,
    AsqnOrderError,
    BadHeaderError,
    BadSignatureError,
    BinlogError,
    BinlogIOError,
    ChainBrokenError,
    ChecksumMismatchError,
    CorruptionError,
    IndexDiscontinuityError,
    InvalidRefError,
    LegacyLogError,
    LengthOutOfRangeError,
    NotALogError,
    PayloadTooLargeError,
    TruncatedError,
    UnsupportedFeatureError,
    UnsupportedVersionError,
    WriterClosedError,
    WriterFailedError,
)

__version__ = "0.1.0"

__all__ = [
    "DURABILITY_MODES",
    "FIRST_INDEX",
    "HEADER_SIZE",
    "MAX_PAYLOAD_SIZE",
    "NO_ASQN",
    "RECORD_HEADER_SIZE",
    "SIGNATURE",
    "AsqnNotIncreasingError",
    "AsqnOrderError",
    "BadHeaderError",
    "BadSignatureError",
    "BinlogError",
    "BinlogIOError",
    "ChainBrokenError",
    "ChecksumMismatchError",
    "CorruptionError",
    "Damage",
    "Durability",
    "Entry",
    "IndexDiscontinuityError",
    "InvalidRefError",
    "LegacyLogError",
    "LengthOutOfRangeError",
    "NotALogError",
    "PayloadTooLargeError",
    "Reader",
    "RecordDecoder",
    "RecoveryAction",
    "Ref",
    "SegmentReport",
    "TailReport",
    "TailStop",
    "TruncatedError",
    "UnsupportedFeatureError",
    "UnsupportedVersionError",
    "VerifyReport",
    "Writer",
    "WriterClosedError",
    "WriterFailedError",
    "__version__",
    "encode_record",
    "read_all",
    "recover",
    "verify",
]
