"""Reading one byte range of a segment: the unit of parallel reading (spec 10.5)."""

from __future__ import annotations

import os
from collections.abc import Iterator

from ._records import Entry
from ._segment import LegacyHeaderInfo
from ._segment_file import LocalDirectory
from .errors import NotALogError, UnsupportedVersionError
from .walk import SegmentWalk, end_in, is_blank, is_last, split_range


def read_split(directory: str | os.PathLike[str], log: int, start: int, stop: int) -> Iterator[Entry]:
    """The committed records of segment ``log`` whose first byte lies in ``[start, stop)`` (spec 10.5).

    After the last of them the walk goes on, returning nothing, up to the
    boundary the search finds from ``stop``, where the next split starts:
    damage before that point raises here, and so does a walk that steps over
    that boundary instead of landing on it (``AmbiguousSplitError``).
    Consecutive splits ``[a, b)``, ``[b, c)`` ... therefore return every
    record of the segment exactly once, or one of them raises.
    """
    path = os.fspath(directory)
    logs = LocalDirectory(path)
    segment = logs.open(log)
    if segment is None:
        raise NotALogError(f"segment {log} does not exist", path=path, log=log)
    with segment:
        if is_blank(segment) and is_last(log, logs.segments()):
            return  # a blank last segment holds no records (spec 3.5)
        header = segment.header()
        if isinstance(header, LegacyHeaderInfo):
            raise UnsupportedVersionError(
                "legacy version 1 segments cannot be split",
                path=segment.path,
                log=log,
                offset=4,  # the version field
            )
        end = end_in(logs, segment, header, logs.segments())
        planned = split_range(segment, header=header, end=end, start=start, stop=stop)
        if planned is None:
            return
        first, index, split = planned
        walk = SegmentWalk(
            segment, path=segment.path, header=header, end=end, start=first, next_index=index, split=split
        )
        while entries := walk.next_batch():
            yield from entries
