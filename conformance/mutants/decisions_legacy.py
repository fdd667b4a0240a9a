"""Decision mutants of legacy jPOS-EE version 1 logs (spec legacy-v1.md).

Each takes the other plausible reading of one judgement call; the cases in ``pinned_by`` tell it apart.
"""

from __future__ import annotations

import os

from decisions import Registry, replace, resource

from openbinlog import _segment, walk
from openbinlog.errors import BinlogError, InvalidRefError
from openbinlog_conformance import reference

_orig_start_at = walk.LogWalk.start_at

_registry = Registry()
mutant = _registry.mutant


@mutant(
    "version1_with_signature_is_v1",
    "3.4 step 2",
    "version 1 with the v2 signature is unsupported_version",
    "version 1 is legacy whatever bytes 24..31 hold",
    pinned_by=("must.reader.legacy.version_1_with_signature",),
)
def _version1_with_signature_is_v1() -> None:
    resource(
        _segment,
        "parse_header",
        (
            "if fields.version == VERSION_LEGACY and fields.signature != SIGNATURE:",
            "if fields.version == VERSION_LEGACY:",
        ),
    )


@mutant(
    "v1_successor_tail_walk",
    "8.4 step 3",
    "an open v2 segment followed by a v1 segment ends at C",
    "its tail is walked (no stop rule)",
    pinned_by=("must.reader.legacy.after_unsealed_version_2",),
)
def _v1_successor_tail_walk() -> None:
    resource(
        walk,
        "segment_end",
        ("if commit.closed or not isinstance(successor, SegmentHeaderInfo):", "if commit.closed or successor is None:"),
        ("stop_before_index=successor.base_index", "stop_before_index=getattr(successor, 'base_index', None)"),
    )


@mutant(
    "broken_to_v1_resumes_index",
    "10.2.2 BROKEN",
    "tolerant: chain_broken into a v1 segment after a missing one: resumed null",
    "resumed_index = E (the index the v1 records are numbered from)",
    pinned_by=("must.reader.legacy.tolerant_after_missing_segment",),
)
def _broken_to_v1_resumes_index() -> None:
    resource(
        walk,
        "LogWalk._next",
        (
            "isinstance(opened[1], SegmentHeaderInfo) else None",
            "isinstance(opened[1], SegmentHeaderInfo)"
            " else (boundary.next_index if opened is not None and boundary.next_log != header.log + 1 else None)",
        ),
    )


@mutant(
    "v1_closed_by_status_only",
    "B.4",
    "v1 closed: status 1 or next log number != 0",
    "closed: status 1 only",
    pinned_by=(
        "must.reader.legacy.closed_by_next_log_number",
        "must.reader.legacy.closed_by_next_log_number_then_records",
    ),
)
def _v1_closed_by_status_only() -> None:
    _segment.LegacyHeaderInfo.closed = property(lambda self: self.status == 1)


@mutant(
    "v1_closed_blank_successor_ok",
    "B.4",
    "closed v1 + blank last successor: chain_broken (offset null)",
    "a blank successor counts as the successor: log ends",
    pinned_by=("must.reader.legacy.closed_blank_successor",),
)
def _v1_closed_blank_successor_ok() -> None:
    resource(
        walk,
        "next_segment",
        (
            "if isinstance(header, LegacyHeaderInfo) and end.closed:",
            "if isinstance(header, LegacyHeaderInfo) and end.closed and nxt not in present:",
        ),
    )


@mutant(
    "v1_to_v2_base_checked",
    "B.4 / 10.2.2 NEXT 5",
    "v1 -> v2: no base_index check, E := base_index",
    "v1 -> v2: base_index must equal the count (chain_broken otherwise)",
    pinned_by=("must.reader.legacy.then_version_2_base_10",),
)
def _v1_to_v2_base_checked() -> None:
    resource(
        walk,
        "next_segment",
        (
            "    if isinstance(header, SegmentHeaderInfo) and isinstance(successor, SegmentHeaderInfo):",
            "    if isinstance(header, LegacyHeaderInfo) and isinstance(successor, SegmentHeaderInfo)"
            " and successor.base_index != expected:\n"
            "        raise ChainBrokenError('v1->v2', path=where, log=nxt, offset=0, index=expected)\n"
            "    if isinstance(header, SegmentHeaderInfo) and isinstance(successor, SegmentHeaderInfo):",
        ),
    )


@mutant(
    "v1_ref_index_counted",
    "B.6",
    "a ref into v1 takes the ref's index unverified",
    "the ref's index must equal the counted index (lowest segment only)",
    pinned_by=("must.reader.legacy.ref_index_taken_unverified", "must.reader.legacy.ref_before_retention"),
)
def _v1_ref_index_counted() -> None:
    def start_at(self, ref, *, inclusive):
        entries = _orig_start_at(self, ref, inclusive=inclusive if inclusive else True)
        if isinstance(self._walk, walk.LegacyWalk):
            present = self.directory.segments()
            if present and present[0] == ref.log:
                seg = self.directory.open(ref.log)
                try:
                    count = 1
                    for run in walk.legacy_runs(
                        seg.read_at(248, ref.offset - 248), log=ref.log, offset=248, tail=ref.offset, next_index=1
                    ):
                        count += run[1]
                except BinlogError:
                    count = -1
                finally:
                    seg.close()
                if count != ref.index:
                    raise InvalidRefError("counted", log=ref.log)
        return entries if inclusive else entries[1:]

    walk.LogWalk.start_at = start_at


@mutant(
    "v1_tolerant_damage_ends_log",
    "10.2.2 DAMAGE 3",
    "v1 damage: walk goes on with NEXT",
    "v1 damage ends the tolerant read",
    pinned_by=(
        "must.reader.tolerant.legacy_damage_then_next_segment",
        "must.reader.tolerant.legacy_negative_length_then_missing_successor",
    ),
)
def _v1_tolerant_damage_ends_log() -> None:
    resource(walk, "LegacyWalk._damaged", ("    self.over = True", "    self.over = True\n    raise error"))


@mutant(
    "v1_leftover_ignores_blank_above",
    "B.4 / 10.2.2 NEXT 4",
    "open N, empty open v1 leftover N+1 and any segment listed above it, blank or not: chain_broken at N+1",
    "blank segments above the leftover are ignored: the log ends at N",
    pinned_by=("must.reader.legacy.open_then_open_empty_blank_above",),
)
def _v1_leftover_ignores_blank_above() -> None:
    def listed_not_blank(directory: walk.Directory, log: int) -> bool:
        segment = directory.open(log)
        if segment is None:
            return False
        try:
            return not walk.is_blank(segment)
        finally:
            segment.close()

    walk.__dict__["_mutant_listed_not_blank"] = listed_not_blank  # a global of the recompiled function
    resource(
        walk,
        "LogWalk._next",
        (
            "present=present,",
            "present=[n for n in present if n <= header.log + 1 or _mutant_listed_not_blank(self.directory, n)],",
        ),
    )


@mutant(
    "v1_leftover_torn_in_leftover",
    "B.4 / conformance 3.1 torn",
    "open v1 N before the empty open leftover N+1: N is the last segment, its torn tail is reported",
    "the torn tail is looked for in the leftover, the highest segment that is not blank",
    pinned_by=("must.reader.legacy.open_then_open_empty_torn_tail",),
)
def _v1_leftover_torn_in_leftover() -> None:
    def torn_tail(directory: str) -> dict[str, object] | None:
        segments = [segment for segment in reference.verify(directory).segments if segment.state != "blank"]
        if not segments:
            return None
        last = segments[-1]
        assert last.commit_offset is not None
        with open(last.path, "rb") as handle:
            if last.commit_offset >= os.fstat(handle.fileno()).st_size:
                return None
            handle.seek(last.commit_offset)
            while chunk := handle.read(1 << 20):
                if any(chunk):
                    return {"log": last.log, "offset": str(last.commit_offset)}
        return None

    replace(reference, "torn_tail", torn_tail)


MUTANTS = tuple(_registry.mutants)
