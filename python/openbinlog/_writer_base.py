"""What the parts of the writer share (spec protocols.md sections 6 to 9): its settings, its files and its limits.

``Writer`` (``_writer``) is put together from one mixin per job: the commit
of a batch (``_commit``), spare volumes (``_spare``), creating segments and
cutover (``_cutover``) and carrying out recovery (``_recovery_exec``). Each
reaches the others through ``self``; the state they share is declared here,
once, and set by ``Writer.__init__``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from .errors import BinlogIOError, WriterClosedError, WriterFailedError

if TYPE_CHECKING:
    from ._commit import OpenSegment
    from ._fs import FileSystem
    from ._index_builder import IndexBuilder
    from ._recovery import RecoveryAction
    from ._segment import CommitState
    from ._writer import Durability, _DirectoryLock

ZERO_CHUNK = bytes(1 << 20)
MAX_LOG_NUMBER = 99_999_999  # eight digits (W-1)


class WriterBase:
    """The writer's state that more than one of its parts reads or changes."""

    directory: str
    durability: Durability
    group_delay: float
    preallocate: int | None
    max_segment_bytes: int | None
    recovery: list[RecoveryAction]
    backup_dir: str | None
    _fs: FileSystem
    _clock_us: Callable[[], int]
    _locked: _DirectoryLock  # the in-process mutex and the lock on LOCK, entered together
    _failed: BaseException | None
    _closed: bool
    _segment: OpenSegment | None
    # An exclusive writer's last segment and the commit state it published there itself (W-39);
    # None when the next batch must find them by steps 2 to 5 of the write protocol.
    _known: tuple[OpenSegment, CommitState] | None
    _io_mutex: threading.RLock  # one commit, cutover or close of this writer at a time
    _lock_fd: int  # the descriptor of LOCK that holds the lock
    _lock_path: str
    _lock_identity: tuple[int, int]  # device and inode of the file _lock_fd opened (W-38)
    _buffer_fs: FileSystem | None  # the file system object compiled code calls, None for the files themselves
    _custom_clock: bool  # a clock given to the writer, not the system's
    _lock_held: bool  # an exclusive writer holds the lock on LOCK from open to close
    _shares_sync: bool  # batches commit by 6.8 where they can: written under the append lock, synced outside it
    _index_builder: IndexBuilder | None  # builds the index of each segment this writer seals (spec 18.4)

    def _check_usable(self) -> None:
        if self._closed:
            raise WriterClosedError("writer is closed", path=self.directory)
        if self._failed is not None:
            raise WriterFailedError(
                f"an earlier write or sync failed ({self._failed}); reopen the log to continue", path=self.directory
            )

    @contextmanager
    def _os_errors(self, what: str) -> Iterator[None]:
        try:
            yield
        except OSError as exc:
            raise BinlogIOError(f"{what}: {exc}", path=getattr(exc, "filename", None) or self.directory) from exc

    def _path(self, name: str) -> str:
        return os.path.join(self.directory, name)


def payload_bytes(payload: object) -> bytes:
    """A payload is bytes: say so plainly, rather than ``bytes()``'s "string argument without an encoding"."""
    if type(payload) is bytes:  # the common case, without a copy
        return payload
    if isinstance(payload, str):
        raise TypeError("a payload is bytes, not str: encode it first, e.g. text.encode()")
    try:
        return bytes(memoryview(payload))  # type: ignore[arg-type]  # not bytes(n): an int is no payload
    except TypeError:
        raise TypeError(f"a payload is bytes (or bytes-like), not {type(payload).__name__}") from None
