"""Reading one byte range of a segment: the unit of parallel reading (spec 10.5)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from ._format import HEADER_SIZE
from ._records import Entry
from ._segment import LegacyHeaderInfo
from ._segment_file import LocalDirectory, SegmentFile
from .errors import NotALogError, UnsupportedVersionError
from .walk import SegmentWalk, end_in, indexed_cuts, is_blank, is_last, split_range


def split_offsets(directory: str | os.PathLike[str], log: int, parts: int) -> list[int]:
    """Where to cut segment ``log`` into about ``parts`` splits for ``read_split``: ascending start offsets,
    256 first; the last split stops at the segment's end (any stop beyond it).

    With a usable sparse index the cuts are checked entries (spec 18.5):
    record boundaries, so consecutive splits are exact even where payloads
    hold valid records of the log. Without one they are equal fractions of
    the segment, where ``read_split`` searches for a boundary (spec 10.5).
    A blank last segment is one empty split.
    """
    if parts < 1:
        raise ValueError(f"parts must be at least 1, got {parts}")
    path = os.fspath(directory)
    logs = LocalDirectory(path)
    with _split_segment(logs, log) as segment:
        if segment is None:
            return [HEADER_SIZE]
        header = segment.header()
        assert not isinstance(header, LegacyHeaderInfo)  # refused by _split_segment
        end = end_in(logs, segment, header, logs.segments())
        cuts = indexed_cuts(logs, segment, header, end, parts)
        if cuts is not None:
            return cuts
        span = max(end.offset - HEADER_SIZE, 0)
        return sorted({HEADER_SIZE + span * part // parts for part in range(parts)})


@contextlib.contextmanager
def _split_segment(logs: LocalDirectory, log: int) -> Iterator[SegmentFile | None]:
    """Segment ``log`` opened for splitting; None for a blank last segment, which holds no records
    (spec 3.5). A missing segment, and a version 1 one, which cannot be split, raise."""
    segment = logs.open(log)
    if segment is None:
        raise NotALogError(f"segment {log} does not exist", path=logs.path, log=log)
    with segment:
        if is_blank(segment) and is_last(log, logs.segments()):
            yield None
            return
        if isinstance(segment.header(), LegacyHeaderInfo):
            raise UnsupportedVersionError(
                "legacy version 1 segments cannot be split",
                path=segment.path,
                log=log,
                offset=4,  # the version field
            )
        yield segment


def read_split(directory: str | os.PathLike[str], log: int, start: int, stop: int) -> Iterator[Entry]:
    """The committed records of segment ``log`` whose first byte lies in ``[start, stop)`` (spec 10.5).

    After the last of them the walk goes on, returning nothing, up to the
    boundary the search finds from ``stop``, where the next split starts:
    damage before that point raises here, and so does a walk that steps over
    that boundary instead of landing on it (``AmbiguousSplitError``).
    Consecutive splits ``[a, b)``, ``[b, c)`` ... therefore return every
    record of the segment exactly once, or one of them raises.
    """
    logs = LocalDirectory(os.fspath(directory))
    with _split_segment(logs, log) as segment:
        if segment is None:
            return
        header = segment.header()
        assert not isinstance(header, LegacyHeaderInfo)  # refused by _split_segment
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
