"""openbinlog: the reference implementation of the BinLog format, version 2.

A log is a directory of segments; ``Writer`` appends crash-safely (one sync
per commit, group commit across threads, several processes under a lock),
``Reader`` returns committed records in index order and follows a live log,
``verify`` and ``recover`` report and repair. The format is specified in
``spec/`` (``spec/README.md`` lists its documents); this package is its executable reference.
"""

from ._format import FIRST_INDEX, HEADER_SIZE, MAX_PAYLOAD_SIZE, NO_ASQN, RECORD_HEADER_SIZE, SIGNATURE
from ._index_build import IndexBuild, IndexNote, build_index, build_indexes, check_indexes
from ._maintenance import CODECS, Compressed, RepairReport, RetentionDecision, compress_segments, repair, retain
from ._optional import MissingExtraError
from ._reader import Reader, last_entry, read_all
from ._records import Entry, RecordDecoder, TailStop, encode_record
from ._recovery import RecoveryAction
from ._ref import Ref
from ._split import read_split, split_offsets
from ._stat import SegmentStat, stat
from ._subscribers import (
    Subscriber,
    SubscriberError,
    SubscriberInfo,
    add_subscriber,
    commit_checkpoint,
    get_subscriber,
    list_subscribers,
    remove_subscriber,
    reset_subscriber,
)
from ._verify import SegmentReport, TailReport, VerifyReport, recover, verify
from ._writer import DEFAULT_SEGMENT_BYTES, DURABILITY_MODES, Durability, Writer
from .build import BuildInfo, build_info
from .errors import (
    AmbiguousSplitError,
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
    LogFullError,
    NotALogError,
    OvertakenError,
    PayloadTooLargeError,
    TruncatedError,
    UnsupportedFeatureError,
    UnsupportedVersionError,
    WriterClosedError,
    WriterFailedError,
)
from .walk import Damage

__version__ = "0.1.0"

__all__ = [
    "CODECS",
    "DEFAULT_SEGMENT_BYTES",
    "DURABILITY_MODES",
    "FIRST_INDEX",
    "HEADER_SIZE",
    "MAX_PAYLOAD_SIZE",
    "NO_ASQN",
    "RECORD_HEADER_SIZE",
    "SIGNATURE",
    "AmbiguousSplitError",
    "AsqnNotIncreasingError",
    "AsqnOrderError",
    "BadHeaderError",
    "BadSignatureError",
    "BinlogError",
    "BinlogIOError",
    "BuildInfo",
    "ChainBrokenError",
    "ChecksumMismatchError",
    "Compressed",
    "CorruptionError",
    "Damage",
    "Durability",
    "Entry",
    "IndexBuild",
    "IndexDiscontinuityError",
    "IndexNote",
    "InvalidRefError",
    "LegacyLogError",
    "LengthOutOfRangeError",
    "LogFullError",
    "MissingExtraError",
    "NotALogError",
    "OvertakenError",
    "PayloadTooLargeError",
    "Reader",
    "RecordDecoder",
    "RecoveryAction",
    "Ref",
    "RepairReport",
    "RetentionDecision",
    "SegmentReport",
    "SegmentStat",
    "Subscriber",
    "SubscriberError",
    "SubscriberInfo",
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
    "add_subscriber",
    "build_index",
    "build_indexes",
    "build_info",
    "check_indexes",
    "commit_checkpoint",
    "compress_segments",
    "encode_record",
    "get_subscriber",
    "last_entry",
    "list_subscribers",
    "read_all",
    "read_split",
    "recover",
    "remove_subscriber",
    "repair",
    "reset_subscriber",
    "retain",
    "split_offsets",
    "stat",
    "verify",
]
