"""The segment files planning listed for one log directory, as the walk's ``Directory`` (``openbinlog.walk``).

The reference walk reads them through the storage layer (local files and
every fsspec URL alike): the legacy walk on the executors, and the planner's
index checks (spec 18.5) on the driver.
"""

from __future__ import annotations

from collections.abc import Sequence

from .listing import SegmentFile
from .options import ReadOptions
from .storage import IndexFile, MissingFileError, SegmentSource, Storage


class PlannedSegment:
    """A planned segment file opened for the walk."""

    def __init__(self, source: SegmentSource, log: int) -> None:
        self.source = source
        self.path = source.url
        self.log = log

    def read_at(self, offset: int, size: int) -> bytes:
        return self.source.read_at(offset, size)

    def size(self) -> int:
        return self.source.size()

    def close(self) -> None:
        self.source.close()


class PlannedDirectory:
    """The segment files planning listed for one log directory, and the index files listed beside them."""

    def __init__(self, storage: Storage, files: Sequence[SegmentFile], options: ReadOptions) -> None:
        self.storage = storage
        self.options = options
        self.files = {file.log: file for file in files}
        self.path = files[0].directory if files else ""

    def segments(self) -> list[int]:
        return sorted(self.files)

    def url(self, log: int) -> str:
        return self.files[log].url

    def open(self, log: int) -> PlannedSegment | None:
        file = self.files.get(log)
        if file is None:
            return None
        try:
            source = self.storage.open_planned(
                file.url, file.compression, max_decompressed=self.options.max_decompressed
            )
            return PlannedSegment(source, log)
        except MissingFileError:
            if not self.options.ignore_missing:
                raise  # planned, then gone: an error, never a log that silently ends early
            del self.files[log]  # ignoreMissingFiles: the walk goes on as if it had never been listed
            return None

    def open_index(self, log: int) -> IndexFile | None:
        """The index listed beside segment ``log`` (spec 18), or None: an index only saves time (R-33), and
        the walk uses it only once it passes the index check (R-47)."""
        file = self.files.get(log)
        if file is None or file.index_url is None:
            return None
        return self.storage.open_index(file.index_url, file.index_size)
