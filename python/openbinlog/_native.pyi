"""The compiled accelerator (``python/native``); use it through ``openbinlog._accel`` only."""

from typing import Any, Final, Generic, TypeVar

_Entry = TypeVar("_Entry")

RECORD_HEADER_SIZE: Final[int]
MIN_RECORD_LENGTH: Final[int]
MAX_RECORD_LENGTH: Final[int]
FRAME_DATA: Final[int]
NO_ASQN: Final[int]
MASK_DELTA: Final[int]
PUBLISH_IN_PYTHON: Final[int]  # what shared_publish returns when the Python code must publish

def walk_lengths(buf: bytes, end: int, /) -> tuple[bytes, bytes, bytes, int]:
    """``openbinlog_spark.walk._walk_lengths``: record starts (native int64), raw header and payload
    CRC32Cs (native uint32), as bytes numpy can wrap; and where the walk stopped."""

def read_header(data: bytes, /) -> tuple[int, int, int, int, int, int, int, int, int]:
    """The fields of the record header at the start of ``data``, as ``RECORD_HEADER.unpack_from``."""

class SharedTarget:
    """Where a sharing writer's batches go (``shared_write``, ``shared_publish``), made once for each segment."""

    def __init__(
        self,
        segment_fd: int,
        lock_fd: int,
        lock_path: str,
        lock_identity: tuple[int, int],
        successor_path: str,
        log: int,
        base_index: int,
        /,
    ) -> None: ...

def shared_write(
    fs: object | None,
    target: SharedTarget,
    capacity: int,
    size_limit: int | None,
    zero_probe: bool,
    payloads: list[tuple[bytes, int]],
    now_us: int,
    /,
) -> tuple[int, int, int, int, int, int, int, int] | None:
    """Steps 1 to 5 of spec 6.8 (``_shared_commit._write_shared``) in the plain case, else None having written
    nothing: the generation and commit offset read, the first record's offset (beyond other writers' records
    written again) and index, then the commit offset, next index, last asqn and last timestamp after the
    records. ``fs``: None for the files, else the file system object."""

def shared_publish(
    fs: object | None,
    target: SharedTarget,
    seen: int,
    end: tuple[int, int, int, int],
    /,
) -> int:
    """Steps 6 and 7 of spec 6.8 (the sync, then ``_publish_shared``): 0 published in the next generation, 2
    covered already by another writer's publication, 3 published two generations on (W-44); 1 when the Python
    code must publish (``LOCK`` replaced, the segment sealed, an unusual header)."""

class CommitTable:
    """A sharing writer's entry in its log's commit table (spec 6.9), a file in /dev/shm named after ``LOCK``."""

    def __init__(self, lock_path: str, /) -> None: ...
    def counters(self) -> tuple[int, int]:
        """The rounds made so far, and the entries of live writers claimed by rounds that died, which the rounds
        after them failed."""
    def commit(
        self,
        target: SharedTarget,
        capacity: int,
        size_limit: int | None,
        zero_probe: bool,
        payloads: list[tuple[bytes, int]],
        now_us: int,
        /,
    ) -> tuple[int, tuple[int, int, int, int, int, int, int, int]]:
        """Steps 1 to 8 of spec 6.9: ``TABLE_COMMITTED`` with the log, 0, the first record's offset and index and
        the state after the round's records; ``TABLE_ALONE`` when the writer commits the batch itself, nothing of
        it written; ``TABLE_UNKNOWN`` with the log, timestamp, offset and index a round that died or failed
        planned for it."""

TABLE_COMMITTED: int
TABLE_ALONE: int
TABLE_UNKNOWN: int

def tail_end(
    data: bytes, commit_offset: int, next_index: int, last_asqn: int, last_timestamp_us: int, zero_probe: bool, /
) -> tuple[int, int, int, int] | None:
    """The walk ``shared_write`` makes beyond the commit point over ``data``: where it ends and the state there
    (commit offset, next index, last asqn, last timestamp), or None when the case is not plain."""

class Verifier(Generic[_Entry]):
    """``RecordDecoder._verified_run_pure`` in compiled code, building ``entry_type`` objects."""

    def __init__(self, entry_type: type[_Entry], /) -> None: ...
    def verified_run(
        self,
        buf: bytes,
        pos: int,
        end: int,
        most: int,
        offset: int,
        log: int,
        next_index: int,
        last_asqn: int,
        /,
    ) -> tuple[list[_Entry], int, int, int, int]:
        """Entries of ``buf[pos:end]``, then the buffer position, offset, next index and last asqn after them."""

class RecordBuffer:
    """``openbinlog._buffer.PureRecordBuffer`` in compiled code."""

    def __init__(
        self,
        ref_type: type,
        log: int,
        start: int,
        next_index: int,
        last_asqn: int,
        last_timestamp_us: int,
        end_limit: int,
        size_limit: int,
        buffer_bytes: int,
        /,
    ) -> None: ...
    def bind(self, fs: object | None, fd: int, generation: int, next_log_number: int, strict: bool, /) -> None: ...
    def write_behind(self) -> None: ...
    def group(
        self, io_lock: object, batch_sync: int, full_sync_bytes: int, group_delay: float, whole_delay: bool, /
    ) -> None: ...
    def map(self, length: int, /) -> None: ...
    def append(self, payload: object, asqn: object, now_us: int | None, /) -> Any: ...
    def take(self, close: bool, /) -> tuple[bytes, int, int, int, int]: ...
    def commit(self, sync: bool, close: bool, /) -> tuple[int, int, int, int, int] | None: ...
    def committed(self) -> tuple[int, int, int, int, int]: ...
    def commit_through(self, index: int, /) -> int | None: ...
    def pending(self) -> int: ...
    def age(self) -> float: ...

class Appender:
    """``Writer.append`` with the compiled buffer: ``buffer.append``, and ``slow(payload, asqn)`` for any code
    it returns; then, unless ``settle`` is None, ``buffer.commit_through``, and ``settle(ref, error)`` when
    that commit failed or did not happen."""

    def __init__(self, buffer: object, slow: Any, settle: Any, /) -> None: ...
    def use_buffer(self, buffer: object, /) -> None: ...
    def __call__(self, payload: bytes, *, asqn: int = -1) -> Any: ...
