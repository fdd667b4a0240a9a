"""A writer's own index builder (spec 18.4): the index of each segment it seals, built by a thread of its own.

The cutover only hands the sealed segment's number over; the walk, the file
written aside and its rename happen in the builder's thread, so no commit
waits for them (W-45). Closing the writer stops the builder: a build under
way is given up between two batches of its walk and leaves no file, and
segments still queued stay without an index (``binlog index`` builds them).
"""

from __future__ import annotations

import os
import threading
from collections import deque

from ._format import index_name
from ._index_build import SKIPPED, Exclusion, IndexBuild, index_segment
from .errors import BinlogError


class IndexBuilder:
    """Builds, one at a time and in the order sealed, the indexes of the segments handed to ``sealed``."""

    def __init__(self, directory: str, interval: int, exclusion: Exclusion | None) -> None:
        self._directory = directory
        self._interval = interval
        self._exclusion = exclusion
        self._queue: deque[int] = deque()
        self._wake = threading.Condition()
        self._closing = False
        self._thread: threading.Thread | None = None
        self.builds: list[IndexBuild] = []  # what each build did, in order (skipped ones say why)

    def sealed(self, log: int) -> None:
        """Queue the index of segment ``log``, just sealed; never waits for a build, and never fails the
        commit that sealed it."""
        with self._wake:
            if self._closing:
                return
            if self._thread is None:
                thread = threading.Thread(target=self._run, name="binlog-index-builder", daemon=True)
                try:
                    thread.start()
                except RuntimeError as exc:  # no thread to be had now: this segment stays without an index
                    path = os.path.join(self._directory, index_name(log))
                    self.builds.append(IndexBuild(log, SKIPPED, path, reason=f"no builder thread: {exc}"))
                    return
                self._thread = thread
            self._queue.append(log)
            self._wake.notify()

    def close(self) -> None:
        """Give up the build under way and those queued; return once the thread has ended."""
        with self._wake:
            self._closing = True
            self._queue.clear()
            self._wake.notify()
            thread = self._thread
        if thread is not None:
            thread.join()

    def _cancelled(self) -> bool:
        return self._closing

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._queue and not self._closing:
                    self._wake.wait()
                if self._closing:
                    return
                log = self._queue.popleft()
            path = os.path.join(self._directory, index_name(log))
            try:
                # Walked whatever file is there already: the index of a segment just sealed is this one's.
                build = index_segment(
                    self._directory,
                    log,
                    interval=self._interval,
                    rebuild=True,
                    exclusion=self._exclusion,
                    cancelled=self._cancelled,
                )
            except BinlogError as exc:  # an index is never needed: a failed build leaves the segment without one
                build = IndexBuild(log, SKIPPED, path, reason=f"{exc.error_class}: {exc}")
            except Exception as exc:  # whatever it is, the next segments are still built
                build = IndexBuild(log, SKIPPED, path, reason=f"{type(exc).__name__}: {exc}")
            self.builds.append(build)
