"""Waking a waiting reader when another process changes the log directory.

inotify (Linux) wakes the reader as soon as a writer writes or creates a
file in the directory; elsewhere, and as a safety net even with inotify
(spec R-23), the reader polls with a bounded delay.
"""

from __future__ import annotations

import time

try:
    from inotify_simple import INotify, flags
except ImportError:  # pragma: no cover - a dependency on Linux only: elsewhere the reader polls
    INotify = None

POLL_FIRST = 0.001
POLL_MAX = 0.02
NOTIFIED_POLL_MAX = 0.1


class ChangeWaiter:
    """Sleep until the directory changes or a bounded delay passes."""

    def __init__(self, directory: str) -> None:
        self._inotify = None
        self._delay = POLL_FIRST
        if INotify is not None:
            try:
                watcher = INotify()
                watcher.add_watch(directory, flags.MODIFY | flags.CREATE | flags.MOVED_TO | flags.DELETE)
            except OSError:  # out of watches or descriptors: polling still works
                pass
            else:
                self._inotify = watcher

    @property
    def notified(self) -> bool:
        return self._inotify is not None

    def reset(self) -> None:
        """Something was found: the next wait starts with the shortest delay again."""
        self._delay = POLL_FIRST

    def wait(self, timeout: float) -> None:
        if timeout <= 0:
            return
        if self._inotify is not None:
            self._inotify.read(timeout=int(min(timeout, NOTIFIED_POLL_MAX) * 1000) or 1)
            return
        time.sleep(min(self._delay, timeout))
        self._delay = min(self._delay * 2, POLL_MAX)

    def close(self) -> None:
        if self._inotify is not None:
            self._inotify.close()
            self._inotify = None
