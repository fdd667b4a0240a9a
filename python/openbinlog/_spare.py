"""Spare volumes (spec protocols.md 6.5, "Spare volumes"; 7.4; W-31): a preallocating writer's next segment file,
created under the lock and zero-filled in the background, so that a cutover (8.2 step 1) costs a header write.

The zero-filling of a preallocated volume is here too: a cutover without a
spare ready (``_cutover``) fills its new segment the same way.
"""

from __future__ import annotations

import secrets
import threading

from ._format import segment_name
from ._writer_base import ZERO_CHUNK, WriterBase


class SpareMixin(WriterBase):
    """Zero-filled volumes, and the one spare volume a preallocating writer keeps ready."""

    _spare: tuple[str, int] | None
    _spare_thread: threading.Thread | None

    def _write_zeros(self, fd: int, size: int) -> None:
        offset = 0
        while offset < size:
            chunk = ZERO_CHUNK[: min(len(ZERO_CHUNK), size - offset)]
            self._fs.pwrite(fd, chunk, offset)
            offset += len(chunk)

    def _start_spare(self) -> None:
        """Under the lock: create the next volume's temp file and zero-fill it in the background."""
        if self._spare_thread is not None or self._spare is not None:
            return
        temp = self._path(f".{segment_name(0)}.{secrets.token_hex(8)}.tmp")
        fd = self._fs.open_write(temp, create=True, exclusive=True)
        self._fs.hold(fd)  # filled without the log's lock: other writers' clean-up must leave it (7.4)
        capacity = self.preallocate or 0

        def fill() -> None:
            try:
                self._write_zeros(fd, capacity)
                self._fs.fdatasync(fd)
            except OSError:
                self._fs.close(fd)
                return  # no spare: the next cutover fills its volume itself
            self._spare = (temp, fd)

        self._spare_thread = threading.Thread(target=fill, name="binlog-spare-volume", daemon=True)
        self._spare_thread.start()

    def _take_spare(self) -> tuple[str, int] | None:
        """The spare volume if it is ready and still ours (another writer's clean-up may have removed it)."""
        thread = self._spare_thread
        if thread is None or thread.is_alive():
            return None
        self._spare_thread = None
        spare, self._spare = self._spare, None
        if spare is None:
            return None
        temp, fd = spare
        if self._fs.names(temp, self._fs.identity(fd)):
            return spare
        self._fs.close(fd)
        return None

    def _discard_spare(self) -> None:
        if self._spare_thread is not None:
            self._spare_thread.join()
        spare = self._take_spare()
        if spare is not None:
            self._fs.close(spare[1])
            self._fs.unlink(spare[0])
