"""Decision mutants of the reading procedure (spec format.md, readers.md).

Directory, header, records, the walk, tolerant reads, splits, refs, torn tails, compressed segments.

Each takes the other plausible reading of one judgement call; the cases in ``pinned_by`` tell it apart.
"""

from __future__ import annotations

import dataclasses
import os
import re

from decisions import Registry, replace, resource

from openbinlog import _format, _records, _ref, _segment, _segment_file, _split, _verify, compressed, walk
from openbinlog._format import COMPRESSED_SUFFIXES, segment_name
from openbinlog._records import RecordDecoder
from openbinlog.errors import (
    BadHeaderError,
    BinlogError,
    BinlogIOError,
    InvalidRefError,
    LengthOutOfRangeError,
    NotALogError,
    TruncatedError,
)
from openbinlog_conformance import reference

_orig_at_commit = walk.SegmentWalk._at_commit
_orig_start_at = walk.LogWalk.start_at

_registry = Registry()
mutant = _registry.mutant


@mutant(
    "segment_zero_is_a_segment",
    "2.1 R-1/2.2",
    "00000000.dat is not a segment name (log number 0 is never used): ignored like any unknown name",
    "00000000.dat is a segment with log number 0 (eight digits and .dat)",
    pinned_by=("must.reader.valid.segment_zero_name_ignored",),
)
def _segment_zero_is_a_segment() -> None:
    replace(_format, "SEGMENT_NAME", re.compile(r"\A([0-9]{8})\.dat(\.gz|\.zst)?\Z"))


@mutant(
    "segment_name_trailing_newline",
    "2.1 R-1",
    "names match whole (no trailing newline)",
    "'$'-style match: '00000002.dat\\n' counts as segment 2",
    pinned_by=("must.reader.crash.segment_name_with_newline",),
)
def _segment_name_trailing_newline() -> None:
    replace(_format, "SEGMENT_NAME", re.compile(r"^([0-9]{8})\.dat(\.gz|\.zst)?$"))


@mutant(
    "dir_without_lock_is_empty_log",
    "2.3 R-42",
    "a directory with neither segment nor LOCK is io_error",
    "any existing directory without segments is an empty log",
    pinned_by=("must.reader.io.not_a_log_directory",),
)
def _dir_without_lock_is_empty_log() -> None:
    orig = _segment_file.list_segments

    def list_segments(directory: str, *, require_log: bool = False) -> list[int]:
        return orig(directory)

    replace(_segment_file, "list_segments", list_segments)


@mutant(
    "compressed_plain_second",
    "10.2.2 OPEN",
    "the plain file is used when both plain and compressed exist",
    "the compressed copy is preferred",
    pinned_by=("may.reader.compressed.plain_and_compressed",),
)
def _compressed_plain_second() -> None:
    def find_segment(directory: str, log: int) -> str | None:
        plain = os.path.join(directory, segment_name(log))
        for path in (*(plain + s for s in COMPRESSED_SUFFIXES), plain):
            if os.path.lexists(path):
                return path
        return None

    replace(_segment_file, "find_segment", find_segment)


@mutant(
    "slot_fallback_on_bad_contents",
    "3.2",
    "an active slot failing steps 5-8 is bad_header, no fallback",
    "fall back to the other valid slot",
    pinned_by=(
        "must.reader.slot.commit_offset_below_256",
        "must.reader.slot.generation_in_wrong_slot",
        "must.reader.slot.last_asqn_below_minus_one",
    ),
)
def _slot_fallback_on_bad_contents() -> None:
    orig = _segment.active_commit

    def active_commit(data: bytes, *, base_index: int, log: int):
        try:
            return orig(data, base_index=base_index, log=log)
        except BadHeaderError:
            for at in (96, 144):
                blanked = bytearray(data)
                blanked[at : at + 48] = bytes(48)
                try:
                    return orig(bytes(blanked), base_index=base_index, log=log)
                except BadHeaderError:
                    continue
            raise

    replace(_segment, "active_commit", active_commit)


@mutant(
    "slot_generation_zero_valid",
    "3.2",
    "a slot with generation 0 is never valid",
    "a slot is valid when its CRC matches, whatever its generation",
    pinned_by=("must.reader.slot.generation_zero",),
)
def _slot_generation_zero_valid() -> None:
    resource(_segment, "decode_slot", ("if generation == 0 or masked", "if masked"))


@mutant(
    "header_checksum_before_version",
    "3.4",
    "version (step 3) and signature (4) before checksum (5)",
    "checksum first, then version and signature",
    pinned_by=(
        "must.reader.header.bad_signature",
        "must.reader.header.zero_header_last_segment",
        "must.reader.header.zero_header_with_successor",
    ),
)
def _header_checksum_before_version() -> None:
    resource(
        _segment,
        "parse_header",
        (
            "    if fields.version != VERSION_2:\n",
            "    if masked_crc32c(*_covered(data)) != fields.header_crc:\n"
            "        raise BadHeaderError('segment header checksum mismatch', log=log, offset=92)\n"
            "    if fields.version != VERSION_2:\n",
        ),
    )


@mutant(
    "reserved_offset_first_nonzero",
    "3.4 step 8",
    "reserved bytes: offset 68 whatever byte is set",
    "offset of the first non-zero reserved byte",
    pinned_by=("must.reader.header.reserved_byte_set",),
)
def _reserved_offset_first_nonzero() -> None:
    resource(
        _segment,
        "parse_header",
        (
            'raise BadHeaderError("reserved header bytes are not zero", log=log, offset=68)',
            "raise BadHeaderError('reserved', log=log, offset=next("
            "i for i in [*range(68, 72), *range(80, 92), *range(192, 256)] if data[i]))",
        ),
    )


@mutant(
    "capacity_before_flags",
    "3.4 steps 9/10",
    "unknown flag (step 9) before PREALLOCATED/capacity (step 10)",
    "capacity agreement checked first",
    pinned_by=("must.reader.header.unknown_flag_and_capacity",),
)
def _capacity_before_flags() -> None:
    resource(
        _segment,
        "parse_header",
        (
            "    if fields.flags & ~KNOWN_HEADER_FLAGS:\n",
            "    if bool(fields.flags & FLAG_PREALLOCATED) != (fields.capacity != 0):\n"
            "        raise BadHeaderError('capacity', log=log, offset=72)\n"
            "    if fields.flags & ~KNOWN_HEADER_FLAGS:\n",
        ),
    )


@mutant(
    "blank_by_header_only",
    "3.5",
    "blank: the whole file is at most 256 bytes, all zero",
    "a segment whose first 256 bytes are zero is blank",
    pinned_by=(
        "must.reader.header.zero_header_last_segment",
        "must.reader.header.zeroed_last_segment",
        "must.reader.split.zeroed_last_segment",
    ),
)
def _blank_by_header_only() -> None:
    def is_blank(source: walk.Source) -> bool:
        head = source.read_at(0, walk.HEADER_SIZE)
        return head.count(0) == len(head)

    replace(walk, "is_blank", is_blank)


@mutant(
    "blank_short_nonzero_is_blank",
    "3.5",
    "a file < 256 bytes holding a non-zero byte is truncated",
    "every file shorter than 256 bytes is blank (the pre-2.0.2 rule)",
    pinned_by=(
        "must.reader.header.short_last_segment",
        "must.reader.legacy.short_last_segment",
        "must.reader.split.short_last_segment",
    ),
)
def _blank_short_nonzero_is_blank() -> None:
    def is_blank(source: walk.Source) -> bool:
        head = source.read_at(0, walk.HEADER_SIZE + 1)
        return len(head) < walk.HEADER_SIZE or (len(head) == walk.HEADER_SIZE and head.count(0) == len(head))

    replace(walk, "is_blank", is_blank)


@mutant(
    "blank_absent_anywhere",
    "3.5 R-7",
    "a blank segment with any segment above it (blank or not) is damage",
    "a blank segment is absent wherever it is when only blank segments lie above it",
    pinned_by=("must.reader.header.two_blank_segments",),
)
def _blank_absent_anywhere() -> None:
    def present_segment(directory, log, present=None):
        segment = directory.open(log)
        if segment is None:
            return None
        listed = directory.segments() if present is None else present

        def blank(n: int) -> bool:
            other = directory.open(n)
            if other is None:
                return True
            try:
                return walk.is_blank(other)
            finally:
                other.close()

        if walk.is_blank(segment) and all(blank(n) for n in listed if n > log):
            segment.close()
            return None
        return segment

    replace(walk, "present_segment", present_segment)
    orig_is_last = walk.is_last

    # the split's own blank test
    def read_split_is_last(log, listed):
        return orig_is_last(log, listed)

    replace(walk, "is_last", read_split_is_last)


@mutant(
    "skippable_index_unchecked",
    "4.2/4.3.1 step 7",
    "a skippable record's index must equal E",
    "skippable records are not index-checked",
    pinned_by=("must.reader.record.skippable_wrong_index",),
)
def _skippable_index_unchecked() -> None:
    resource(
        _records,
        "RecordDecoder._walk_one",
        ("    if index != self.next_index:", "    if index != self.next_index and frame == FRAME_DATA:"),
    )


@mutant(
    "skippable_asqn_unchecked",
    "4.2/4.3.1 step 8",
    "a skippable record's asqn is checked (step 8)",
    "skippable records' asqn is not checked",
    pinned_by=("must.reader.record.skippable_asqn_going_back",),
)
def _skippable_asqn_unchecked() -> None:
    resource(
        _records,
        "RecordDecoder._walk_one",
        (
            "    if asqn != NO_ASQN and (asqn < NO_ASQN or asqn <= self.last_asqn):",
            "    if frame == FRAME_DATA and asqn != NO_ASQN and (asqn < NO_ASQN or asqn <= self.last_asqn):",
        ),
    )


@mutant(
    "file_before_bound",
    "4.3.1 steps 4/5",
    "record end compared with its bound U (step 4) before the file (5)",
    "file size first: a record crossing both U and F is truncated",
    pinned_by=("must.reader.record.hostile_length_crossing_commit_point",),
)
def _file_before_bound() -> None:
    orig = walk.SegmentWalk.next_batch

    def next_batch(self, most=256):
        try:
            return orig(self, most)
        except LengthOutOfRangeError as exc:
            head = self.source.read_at(exc.offset, 4)
            length = int.from_bytes(head, "big") if len(head) == 4 else 0
            if 36 <= length < 2**31 and exc.offset + 4 + length > self.source.size():
                raise TruncatedError(
                    "file first", path=exc.path, log=exc.log, offset=exc.offset, index=exc.index
                ) from None
            raise

    walk.SegmentWalk.next_batch = next_batch


@mutant(
    "bound_is_S_everywhere",
    "4.3.1 U",
    "U = C below C, S from C on (finished unsealed segment)",
    "U = S for every record of a finished segment",
    pinned_by=(
        "must.reader.split.commit_point_inside_record",
        "must.reader.split.finished_next_index_disagrees_stop_at_commit_point",
    ),
)
def _bound_is_S_everywhere() -> None:
    orig = walk.SegmentWalk._limit

    def _limit(self, offset):
        if (
            self.end.final
            and not self.end.closed
            and self.end.offset > self.end.commit_offset
            and offset < self.end.commit_offset
        ):
            return self.end.offset
        return orig(self, offset)

    walk.SegmentWalk._limit = _limit


@mutant(
    "timestamps_checked",
    "4.4 R-13",
    "timestamps are never validated",
    "a timestamp going back is damage",
    pinned_by=("must.reader.valid.timestamps_not_monotonic",),
)
def _timestamps_checked() -> None:
    resource(
        _records,
        "RecordDecoder._walk_one",
        (
            "    self._pos = payload_end\n",
            "    if timestamp_us < getattr(self, '_ts', 0):\n"
            "        return self._fail(AsqnNotIncreasingError('ts', log=self.log, offset=offset, index=index))\n"
            "    self._ts = timestamp_us\n    self._pos = payload_end\n",
        ),
    )
    # the batch loop would bypass the check
    RecordDecoder._verified_run_pure = lambda self, most: []


@mutant(
    "sealed_finished_tail_walk",
    "8.4 step 2",
    "a sealed segment ends at its commit point",
    "a finished segment's tail is walked even when it is sealed",
    pinned_by=("must.reader.crash.sealed_with_record_beyond_commit_point",),
)
def _sealed_finished_tail_walk() -> None:
    resource(
        walk,
        "segment_end",
        (
            "if commit.closed or not isinstance(successor, SegmentHeaderInfo):",
            "if not isinstance(successor, SegmentHeaderInfo):",
        ),
    )


@mutant(
    "finished_tail_asqn_minus_one",
    "8.4 step 4",
    "the finished-segment tail walk starts with the slot's last_asqn",
    "it starts with A = -1",
    pinned_by=("must.reader.crash.finished_tail_asqn_from_slot",),
)
def _finished_tail_asqn_minus_one() -> None:
    orig = walk.tail_walk

    def tail_walk(source, *, log, commit, stop_before_index=None):
        return orig(
            source, log=log, commit=dataclasses.replace(commit, last_asqn=-1), stop_before_index=stop_before_index
        )

    walk.tail_walk = tail_walk  # segment_end only (recovery imported its own name)


@mutant(
    "commit_point_end_while_declaring_tail_walk",
    "6.1/14",
    "full reader: tail walk (declared choice)",
    "minimal reader's commit point end, while declaring tail_walk",
    pinned_by=(
        "must.reader.ref.after_record_beyond_commit_point",
        "must.reader.split.finished_segment_tail",
        "must.reader.tolerant.finished_damage_without_resume_point",
    ),
)
def _commit_point_end_while_declaring_tail_walk() -> None:
    resource(walk, "segment_end", ("if commit.closed or not isinstance(successor, SegmentHeaderInfo):", "if True:"))


@mutant(
    "r39_not_on_empty_segment",
    "8.4 R-39",
    "R-39 applies to a segment without records (walk at 256 = C)",
    "no check when the segment holds no record",
    pinned_by=(
        "must.reader.slot.empty_segment_next_index_disagrees",
        "must.reader.split.empty_segment_next_index_disagrees",
    ),
)
def _r39_not_on_empty_segment() -> None:
    def _at_commit(self):
        if self.end.commit_offset == walk.HEADER_SIZE:
            return
        _orig_at_commit(self)

    walk.SegmentWalk._at_commit = _at_commit


@mutant(
    "r39_not_when_end_beyond_c",
    "8.4 R-39",
    "R-39 at C also in a finished unsealed segment with S > C",
    "no check when S > C (the end is the tail walk's)",
    pinned_by=(
        "must.reader.crash.finished_next_index_disagrees",
        "must.reader.split.finished_next_index_disagrees_stop_at_commit_point",
    ),
)
def _r39_not_when_end_beyond_c() -> None:
    def _at_commit(self):
        if self.end.offset > self.end.commit_offset:
            return
        _orig_at_commit(self)

    walk.SegmentWalk._at_commit = _at_commit


@mutant(
    "r39_not_in_splits",
    "10.5 R-39",
    "a split walk that reaches C makes the check",
    "splits never check R-39",
    pinned_by=(
        "must.reader.split.finished_next_index_disagrees_stop_at_commit_point",
        "must.reader.split.empty_segment_next_index_disagrees",
        "must.reader.split.slot_next_index_disagrees",
    ),
)
def _r39_not_in_splits() -> None:
    def _at_commit(self):
        if self.split is not None:
            return
        _orig_at_commit(self)

    walk.SegmentWalk._at_commit = _at_commit


@mutant(
    "r39_not_when_split_stops_at_c",
    "10.5 R-39",
    "a split whose b(t) = C checks R-39 before ending",
    "a split that lands on b(t) = C ends without the check",
    pinned_by=(
        "must.reader.split.finished_next_index_disagrees_stop_at_commit_point",
        "must.reader.split.empty_segment_next_index_disagrees",
        "must.reader.split.slot_next_index_disagrees",
    ),
)
def _r39_not_when_split_stops_at_c() -> None:
    def _at_commit(self):
        if self.split is not None and self._decoder.offset == self.split.walk_to:
            return
        _orig_at_commit(self)

    walk.SegmentWalk._at_commit = _at_commit


@mutant(
    "r39_after_lost_tail",
    "10.4/R-39",
    "a tolerant walk that found nothing to resume at skips R-39",
    "the check is made at C anyway",
    pinned_by=(
        "must.reader.tolerant.commit_point_inside_payload",
        "must.reader.tolerant.commit_point_inside_record_header",
        "must.reader.tolerant.committed_zeros",
    ),
)
def _r39_after_lost_tail() -> None:
    def _at_commit(self):
        lost, self.lost_tail = self.lost_tail, False
        try:
            _orig_at_commit(self)
        finally:
            self.lost_tail = lost

    walk.SegmentWalk._at_commit = _at_commit


@mutant(
    "r39_tolerant_fatal",
    "10.4",
    "a tolerant reader steps over R-39",
    "R-39 ends a tolerant read",
    pinned_by=("must.reader.tolerant.sealed_next_index_disagrees", "must.reader.tolerant.next_index_disagrees"),
)
def _r39_tolerant_fatal() -> None:
    resource(walk, "SegmentWalk._at_commit", ("if not self.tolerant:", "if True:"))


@mutant(
    "r39_tolerant_keeps_walk_index",
    "10.4",
    "after R-39 a tolerant walk resumes with the slot's next_index",
    "it keeps the walk's expected index",
    pinned_by=("must.reader.tolerant.sealed_next_index_disagrees",),
)
def _r39_tolerant_keeps_walk_index() -> None:
    resource(walk, "SegmentWalk._at_commit", ("decoder.next_index = end.commit_index", "pass"))


@mutant(
    "ref_after_asqn_reset",
    "10.6/10.2.2 FROM-REF",
    "after a ref, A = the referenced record's asqn",
    "after a ref, A = -1 (the referenced record's asqn is not carried)",
    pinned_by=("must.reader.ref.asqn_going_back_after_ref",),
)
def _ref_after_asqn_reset() -> None:
    def start_at(self, ref, *, inclusive):
        entries = _orig_start_at(self, ref, inclusive=True)
        w = self._walk
        if inclusive or not isinstance(w, walk.SegmentWalk):
            return entries if inclusive else entries[1:]
        first = entries[0]
        w._restart(first.offset + first.size, first.index + 1, walk.NO_ASQN)
        return []

    walk.LogWalk.start_at = start_at


@mutant(
    "ref_asqn_from_segment_prefix",
    "10.6/10.2.2 FROM-REF",
    "at a ref A starts at -1",
    "at a ref A starts at the last asqn of the segment's records before the ref",
    pinned_by=("must.reader.ref.asqn_before_ref_unknown",),
)
def _ref_asqn_from_segment_prefix() -> None:
    def start_at(self, ref, *, inclusive):
        entries = _orig_start_at(self, ref, inclusive=True)
        w = self._walk
        if not isinstance(w, walk.SegmentWalk):
            return entries if inclusive else entries[1:]
        dec = RecordDecoder(log=ref.log, offset=256, next_index=w.header.base_index, limit=ref.offset)
        fed = 256
        try:
            while True:
                got, fed = walk.next_entries(dec, w.source, fed=fed, end=ref.offset)
                if not got:
                    break
        except BinlogError:
            pass
        first = entries[0]
        if inclusive:
            w._restart(first.offset, first.index, dec.last_asqn)
        else:
            w._restart(first.offset + first.size, first.index + 1, first.asqn if first.asqn != -1 else dec.last_asqn)
        return []

    walk.LogWalk.start_at = start_at


@mutant(
    "v1_resets_asqn",
    "10.2.2 NEXT 5 / R-19",
    "A carries over a version 1 segment (whose records have no asqn)",
    "A is reset to -1 when the walk leaves a version 1 segment",
    pinned_by=("must.reader.legacy.asqn_carried_across_version_1",),
)
def _v1_resets_asqn() -> None:
    resource(
        walk,
        "LogWalk._next",
        ("last_asqn=walk.last_asqn,", "last_asqn=walk.last_asqn if isinstance(walk, SegmentWalk) else NO_ASQN,"),
    )


@mutant(
    "resync_no_upper_bound",
    "10.4 cond. 6",
    "candidate index < I_S",
    "no upper bound",
    pinned_by=(
        "must.reader.tolerant.forged_future_record",
        "must.reader.tolerant.forged_successor_record",
        "must.reader.tolerant.forged_successor_record_lost_publication",
    ),
)
def _resync_no_upper_bound() -> None:
    orig = walk.resync
    replace(
        walk,
        "resync",
        lambda source, damaged_at, bound, *, low, high: orig(source, damaged_at, bound, low=low, high=2**64),
    )


@mutant(
    "resync_no_lower_bound",
    "10.4 cond. 6",
    "candidate index >= E",
    "no lower bound",
    pinned_by=(
        "must.reader.tolerant.finished_damage_without_resume_point",
        "must.reader.tolerant.stale_record_in_damage",
    ),
)
def _resync_no_lower_bound() -> None:
    orig = walk.resync
    replace(
        walk,
        "resync",
        lambda source, damaged_at, bound, *, low, high: orig(source, damaged_at, bound, low=0, high=high),
    )


@mutant(
    "resync_window_1mib",
    "10.4 R-25",
    "no search window, any candidate size",
    "search limited to 1 MiB after the damage and candidates of at most 1 MiB",
    pinned_by=("must.reader.tolerant.resync_beyond_1_mib",),
)
def _resync_window_1mib() -> None:
    W = 1 << 20

    def resync(source, damaged_at, bound, *, low, high):
        for found, index, length in walk._candidates(
            source, damaged_at + 1, min(bound, damaged_at + 1 + W + 40), low, high
        ):
            if found > damaged_at + W:
                return None
            if length > W:
                continue
            return found, index
        return None

    replace(walk, "resync", resync)


@mutant(
    "resync_keeps_asqn",
    "10.4 R-25",
    "after a resync A := -1",
    "A kept",
    pinned_by=("must.reader.tolerant.asqn_reset_after_resync",),
)
def _resync_keeps_asqn() -> None:
    resource(
        walk,
        "SegmentWalk._step_over",
        ("self._restart(resume, resume_index, NO_ASQN)", "self._restart(resume, resume_index, decoder.last_asqn)"),
    )


@mutant(
    "resync_at_skippable",
    "10.4 cond. 2",
    "only frame 1 is a place to resume",
    "frames 128..255 too",
    pinned_by=("must.reader.tolerant.damage_before_skippable",),
)
def _resync_at_skippable() -> None:
    def _candidates(source, first, bound, low, high):
        unpack = walk.RECORD_HEADER.unpack_from
        at = first
        while at + 40 <= bound:
            head = source.read_at(at, 40)
            if len(head) == 40:
                length, frame, _flags, _reserved, index, _a, _t, pcrc, hcrc = unpack(head, 0)
                end = at + 4 + length
                if (
                    (frame == 1 or frame >= 128)
                    and low <= index < high
                    and 36 <= length < 2**31
                    and end <= bound
                    and walk.mask(walk._raw_crc32c(head[:36])) == hcrc
                    and walk._payload_matches(source, head, at, (at + 40, end), pcrc)
                ):
                    yield at, index, length
            at += 1

    replace(walk, "_candidates", _candidates)


@mutant(
    "lost_tail_expects_end_index",
    "10.4 / R-39",
    "after damage with no resume point E stays the damaged record's index",
    "E := I_S (the segment's end index)",
    pinned_by=("must.reader.tolerant.sealed_segment_last_record_bit_flip",),
)
def _lost_tail_expects_end_index() -> None:
    resource(
        walk,
        "SegmentWalk._step_over",
        (
            "    self._restart(self.end.offset, expected, decoder.last_asqn)",
            "    self._restart(self.end.offset, self.end.index, decoder.last_asqn)",
        ),
    )


@mutant(
    "lost_tail_skipped_to_c",
    "10.4 R-25",
    "no resume point: bytes_skipped = S' - o",
    "bytes_skipped = C - o",
    pinned_by=("must.reader.tolerant.finished_damage_without_resume_point",),
)
def _lost_tail_skipped_to_c() -> None:
    resource(
        walk,
        "SegmentWalk._step_over",
        (
            "bytes_skipped=max(bound - damaged_at, 0), next_index=None",
            "bytes_skipped=max(min(self.end.commit_offset, bound) - damaged_at, 0), next_index=None",
        ),
    )


@mutant(
    "split_start_searched",
    "10.5",
    "b(x) = 256 for x <= 256 by definition",
    "a split from 256 searches too",
    pinned_by=(
        "must.reader.split.empty_segment_next_index_disagrees",
        "must.reader.split.file_cut_at_header",
        "must.reader.split.file_cut_at_header_from_0",
    ),
)
def _split_start_searched() -> None:
    def find_boundary(source, start, bound, *, low, high):
        for found, index, length in walk._candidates(source, max(start, walk.HEADER_SIZE), bound, low, high):
            following = found + 4 + length
            if following == bound or walk._continues(source, following, bound, index + 1):
                return found, index
        return None

    replace(walk, "find_boundary", find_boundary)


@mutant(
    "split_ignores_successor_header",
    "8.4 step 1 / 10.2.2 SPLIT 3",
    "a split reads N+1's header (END) first",
    "a split does not look at N+1; N ends at C",
    pinned_by=("must.reader.split.successor_header_damaged", "must.reader.split.successor_header_damaged_second_half"),
)
def _split_ignores_successor_header() -> None:
    orig = _split.end_in

    def end_in(directory, segment, header, present):
        try:
            return orig(directory, segment, header, present)
        except BinlogIOError:
            raise
        except BinlogError as exc:
            if exc.log == header.log + 1:
                return walk.segment_end(segment, header, None)
            raise

    _split.end_in = end_in


@mutant(
    "split_finished_ends_at_c",
    "10.5 / 6.1",
    "a split of a finished unsealed segment walks to S (tail walk)",
    "a split ends at C",
    pinned_by=("must.reader.split.finished_segment_tail",),
)
def _split_finished_ends_at_c() -> None:
    orig = _split.end_in

    def end_in(directory, segment, header, present):
        end = orig(directory, segment, header, present)
        if end.offset > end.commit_offset:
            end = dataclasses.replace(end, offset=end.commit_offset, index=end.commit_index)
        return end

    _split.end_in = end_in


@mutant(
    "continuity_requires_data_frame",
    "10.5 step 2",
    "the record at q may be a skippable frame",
    "the continuity record at q must be a data record",
    pinned_by=("must.reader.split.continuity_at_skippable_record",),
)
def _continuity_requires_data_frame() -> None:
    resource(
        walk, "_continues", ("and (frame == FRAME_DATA or frame >= FRAME_FIRST_SKIPPABLE)", "and frame == FRAME_DATA")
    )


@mutant(
    "continuity_needed_at_end",
    "10.5 step 2",
    "q = S' needs no continuity check",
    "q = S' is not a boundary",
    pinned_by=("must.reader.split.commit_point_far_beyond_file", "must.reader.split.start_before_records_of_end_index"),
)
def _continuity_needed_at_end() -> None:
    resource(walk, "find_boundary", ("if following == bound or _continues", "if _continues"))


@mutant(
    "split_no_upper_bound",
    "10.5 step 1",
    "boundary index < I_S",
    "no upper bound",
    pinned_by=(
        "must.reader.split.start_before_records_of_end_index",
        "must.reader.split.stop_before_records_of_end_index",
    ),
)
def _split_no_upper_bound() -> None:
    orig = walk.find_boundary
    replace(
        walk,
        "find_boundary",
        lambda source, start, bound, *, low, high: orig(source, start, bound, low=low, high=2**64),
    )


@mutant(
    "split_no_lower_bound",
    "10.5 step 1",
    "boundary index >= base_index",
    "no lower bound",
    pinned_by=("must.reader.split.record_copies_below_base_index",),
)
def _split_no_lower_bound() -> None:
    resource(
        walk,
        "find_boundary",
        ("_candidates(source, start, bound, low, high)", "_candidates(source, start, bound, 0, high)"),
    )


@mutant(
    "split_bound_s_prime",
    "10.5 / 4.3.1",
    "split record checks use U (step 4) and F (step 5)",
    "split record checks use S' = min(S, F) as the bound",
    pinned_by=(
        "must.reader.split.commit_point_far_beyond_file",
        "must.reader.split.file_cut_at_header",
        "must.reader.split.file_cut_at_header_from_0",
    ),
)
def _split_bound_s_prime() -> None:
    orig = walk.SegmentWalk._limit

    def _limit(self, offset):
        value = orig(self, offset)
        return min(value, self.source.size()) if self.split is not None else value

    walk.SegmentWalk._limit = _limit


@mutant(
    "split_returns_t_to_bt",
    "10.5",
    "a (non-tolerant) split returns records in [s, t) only",
    "it also returns records in [t, b(t))",
    pinned_by=("must.reader.split.damage_after_stop",),
)
def _split_returns_t_to_bt() -> None:
    resource(
        walk,
        "SegmentWalk._before_stop",
        ("keep_before = split.walk_to if self.tolerant else split.stop", "keep_before = split.walk_to"),
    )


@mutant(
    "split_stops_at_t",
    "10.5 R-27",
    "a split walks on to b(t), reporting damage before it",
    "a split stops at the first record at or after t",
    pinned_by=(
        "must.reader.split.damage_after_stop",
        "must.reader.split.damage_at_stop",
        "must.reader.split.stop_at_asqn_going_back",
    ),
)
def _split_stops_at_t() -> None:
    def _before_stop(self, entries, held):
        kept = []
        for entry in entries:
            if entry.offset >= self.split.stop:
                self.over = True
                return kept
            kept.append(entry)
        return kept

    def _beyond_split(self, error):
        if self.split is None or error.offset is None or error.offset < self.split.stop:
            return False
        self.over = True
        return True

    walk.SegmentWalk._before_stop = _before_stop
    walk.SegmentWalk._beyond_split = _beyond_split


@mutant(
    "split_no_check_at_bt",
    "10.5 R-27",
    "steps 7/8 of the record at b(t) checked by the split ending there",
    "not checked",
    pinned_by=(
        "must.reader.split.stop_at_asqn_going_back",
        "must.reader.split.stop_at_index_gap",
        "must.reader.split.stop_at_resurrected_record",
    ),
)
def _split_no_check_at_bt() -> None:
    resource(
        walk,
        "SegmentWalk._beyond_split",
        ("        if not self.tolerant:\n            raise error", "        if False:\n            raise error"),
    )


@mutant(
    "split_no_look",
    "10.2.2 LOOK, R-27",
    "a split that lands on b(t) holding an asqn, where the record there carries none, checks the first asqn after it",
    "it checks only the record at b(t)",
    pinned_by=(
        "must.reader.split.look_stop_among_records_without_asqn",
        "must.reader.split.look_stop_before_records_without_asqn",
        "must.reader.split.look_stop_inside_record_before_records_without_asqn",
    ),
)
def _split_no_look() -> None:
    walk.SegmentWalk._look_past = lambda self, split, landed, held: None


@mutant(
    "split_no_ambiguous",
    "10.5 R-40",
    "a walk stepping over b(t) is ambiguous_split",
    "it ends silently",
    pinned_by=("must.reader.split.stop_before_record_of_own_index",),
)
def _split_no_ambiguous() -> None:
    walk.SegmentWalk._ambiguous = lambda self, split: None


@mutant(
    "ref_blank_segment_empty",
    "10.6 step 2",
    "a ref into a blank last segment is invalid_ref",
    "it reads as an empty remainder",
    pinned_by=("must.reader.ref.blank_last_segment",),
)
def _ref_blank_segment_empty() -> None:
    def start_at(self, ref, *, inclusive):
        try:
            return _orig_start_at(self, ref, inclusive=inclusive)
        except InvalidRefError:
            seg = self.directory.open(ref.log)
            if seg is not None:
                try:
                    if walk.is_blank(seg):
                        self.ended = True
                        return []
                finally:
                    seg.close()
            raise

    walk.LogWalk.start_at = start_at


@mutant(
    "ref_header_error_is_invalid_ref",
    "10.6 step 2/3",
    "header errors of N (and N+1 at END) are reported as such",
    "any failure validating a ref is invalid_ref",
    pinned_by=("must.reader.ref.damaged_header", "must.reader.ref.successor_header_damaged"),
)
def _ref_header_error_is_invalid_ref() -> None:
    def start_at(self, ref, *, inclusive):
        try:
            return _orig_start_at(self, ref, inclusive=inclusive)
        except (InvalidRefError, BinlogIOError):
            raise
        except BinlogError as exc:
            raise InvalidRefError(str(exc), log=ref.log) from exc

    walk.LogWalk.start_at = start_at


@mutant(
    "ref_beyond_c_invalid",
    "10.6 step 3",
    "a ref below S is valid (records beyond C in a finished segment)",
    "a ref must lie below C",
    pinned_by=("must.reader.ref.after_record_beyond_commit_point",),
)
def _ref_beyond_c_invalid() -> None:
    resource(
        walk,
        "LogWalk.start_at",
        (
            "if not low <= ref.offset < end.offset:",
            "if not low <= ref.offset < (end.commit_offset if isinstance(header, SegmentHeaderInfo) else end.offset):",
        ),
    )


@mutant(
    "ref_damage_after_is_invalid_ref",
    "10.6",
    "damage after a valid ref is reported with its class",
    "anything failing in the first batch after a ref is invalid_ref",
    pinned_by=(
        "must.reader.ref.asqn_going_back_after_ref",
        "must.reader.ref.after_last_record_below_u64_max_commit_point",
    ),
)
def _ref_damage_after_is_invalid_ref() -> None:
    def start_at(self, ref, *, inclusive):
        entries = _orig_start_at(self, ref, inclusive=inclusive)
        try:
            more = self._walk.next_batch()
        except BinlogIOError:
            raise
        except BinlogError as exc:
            raise InvalidRefError("after", log=ref.log) from exc
        return entries + more

    walk.LogWalk.start_at = start_at


@mutant(
    "torn_blank_last_counts",
    "conformance 3.1 torn",
    "torn is looked for in the last non-blank segment",
    "a blank last segment is the last segment: nothing torn",
    pinned_by=("must.reader.torn.garbage_below_blank_last_segment",),
)
def _torn_blank_last_counts() -> None:
    orig = reference.torn_tail

    def torn_tail(directory):
        segs = _verify.verify(directory).segments
        if segs and segs[-1].state == "blank":
            return None
        return orig(directory)

    replace(reference, "torn_tail", torn_tail)


@mutant(
    "r39_not_when_bt_is_c",
    "10.5 R-39",
    "a split whose b(t) = C (finished unsealed) checks R-39 first",
    "a split that lands on a real b(t) = C ends without the check",
    pinned_by=("must.reader.split.finished_next_index_disagrees_stop_at_commit_point",),
)
def _r39_not_when_bt_is_c() -> None:
    def _at_commit(self):
        if (
            self.split is not None
            and self.split.walk_to_index is not None
            and self._decoder.offset == self.split.walk_to
        ):
            return
        _orig_at_commit(self)

    walk.SegmentWalk._at_commit = _at_commit


@mutant(
    "successor_header_checked_late",
    "10.2.3 item 2 / 8.4 step 1",
    "N+1's header is checked at END (at C of N), before R-39 of N",
    "N+1's header is checked only when the walk moves to N+1",
    pinned_by=(
        "must.reader.header.successor_header_before_next_index_check",
        "must.reader.ref.successor_header_damaged",
    ),
)
def _successor_header_checked_late() -> None:
    orig = walk.end_in

    def end_in(directory, segment, header, present):
        try:
            return orig(directory, segment, header, present)
        except BinlogIOError:
            raise
        except BinlogError as exc:
            if exc.log == header.log + 1:
                return walk.segment_end(segment, header, None)
            raise

    walk.end_in = end_in  # LogWalk only; the split keeps its own name


@mutant(
    "seek_from_lowest",
    "10.7",
    "a seek starts in the segment K its header search picks and walks no segment below it",
    "a seek always starts at the lowest segment",
    pinned_by=("may.reader.seek.damage_below_start_segment",),
)
def _seek_from_lowest() -> None:
    def seek_segment(directory, target):
        present = directory.segments()
        for log in present:
            opened = walk.open_segment(directory, log, present)
            if opened is not None:
                return opened
        return None

    walk.seek_segment = seek_segment


@mutant(
    "compressed_cut_stream_is_short_file",
    "2.6 R-43",
    "an archive that is not a valid stream (cut) is bad_header",
    "the bytes unpacked before the cut are the file (a short file: truncated)",
    pinned_by=("may.reader.compressed.gzip_cut_inside_header", "may.reader.compressed.not_a_gzip_stream"),
)
def _compressed_cut_stream_is_short_file() -> None:
    def _next_piece(self, size):
        try:
            return self._stream.read(size)
        except self._undecodable:
            return b""

    compressed.CompressedSegment._next_piece = _next_piece


@mutant(
    "compressed_unpacked_whole",
    "2.6 R-43",
    "a compressed segment is never unpacked beyond its commit point",
    "the whole archive is unpacked (damage beyond C is met)",
    pinned_by=("may.reader.compressed.gzip_damaged_beyond_commit_point",),
)
def _compressed_unpacked_whole() -> None:
    compressed._segment_end = lambda head: 1 << 62


@mutant(
    "compressed_records_before_archive_failure",
    "2.6 R-43",
    "an archive is checked up to the segment's end before its first record: one that fails returns none of them",
    "unpacked as far as the walk reads: the records of the pieces before the failure, then bad_header",
    pinned_by=(
        "may.reader.compressed.gzip_fails_in_third_mebibyte",
        "may.reader.compressed.gzip_cut_in_third_mebibyte",
        "may.reader.compressed.zstd_fails_in_third_mebibyte",
        "may.reader.compressed.zstd_cut_in_third_mebibyte",
        "may.reader.compressed.gzip_fails_in_ninth_mebibyte",
        "may.reader.compressed.gzip_fails_in_third_mebibyte_tolerant",
        "may.reader.compressed.zstd_fails_in_third_mebibyte_after_ref",
    ),
)
def _compressed_records_before_archive_failure() -> None:
    def _unpack_to(self, target):
        if self._failed is not None:
            raise self._failed
        try:
            self._unpack(target)  # as far as the read reaches, a piece at a time
        except BinlogError as exc:
            self._failed = exc
            raise

    compressed.CompressedSegment._unpack_to = _unpack_to


@mutant(
    "torn_sealed_last_not_torn",
    "conformance 3.1 torn / 8.3",
    "non-zero bytes beyond a sealed last segment's C are torn",
    "a sealed segment has no tail: torn null",
    pinned_by=("must.reader.torn.sealed_last_segment",),
)
def _torn_sealed_last_not_torn() -> None:
    orig = reference.torn_tail

    def torn_tail(directory):
        segs = [s for s in _verify.verify(directory).segments if s.state != "blank"]
        if segs and segs[-1].state == "sealed":
            return None
        return orig(directory)

    replace(reference, "torn_tail", torn_tail)


@mutant(
    "index_before_payload_checksum",
    "4.3.1 steps 5-8",
    "file (5) and payload checksum (6) before index (7) and asqn (8)",
    "index and asqn (header fields, already covered by header_crc) checked right after the length",
    pinned_by=("must.reader.record.payload_damage_and_wrong_index",),
)
def _index_before_payload_checksum() -> None:
    resource(
        _records,
        "RecordDecoder._walk_one",
        (
            "    if not self._available(4 + length):\n",
            "    if index != self.next_index:\n"
            "        return self._fail(IndexDiscontinuityError(\n"
            "            'early', log=self.log, offset=offset, index=self.next_index))\n"
            "    if asqn != NO_ASQN and (asqn < NO_ASQN or asqn <= self.last_asqn):\n"
            "        return self._fail(AsqnNotIncreasingError('early', log=self.log, offset=offset, index=index))\n"
            "    if not self._available(4 + length):\n",
        ),
    )
    RecordDecoder._verified_run_pure = lambda self, most: []


@mutant(
    "frame_before_header_checksum",
    "4.3.1 steps 2/3",
    "header checksum (2) before frame/flags/reserved (3)",
    "frame, flags and reserved checked first (a cheap filter)",
    pinned_by=(
        "must.reader.record.committed_zeros",
        "must.reader.tolerant.committed_zeros",
        "must.writer.recover.refuse_committed_zeros",
    ),
)
def _frame_before_header_checksum() -> None:
    resource(
        _records,
        "RecordDecoder._walk_one",
        (
            "    if masked_crc32c(view[pos : pos + _CRC_END]) != header_crc:\n",
            "    if (frame == FRAME_END or (frame != FRAME_DATA and frame < FRAME_FIRST_SKIPPABLE)\n"
            "            or flags or reserved):\n"
            "        return self._fail(UnsupportedFeatureError(\n"
            "            'early', log=self.log, offset=offset, index=self.next_index))\n"
            "    if masked_crc32c(view[pos : pos + _CRC_END]) != header_crc:\n",
        ),
    )
    RecordDecoder._verified_run_pure = lambda self, most: []


@mutant(
    "blank_only_dir_not_a_log",
    "2.3 R-42",
    "a directory whose only segment is blank (no LOCK) is an empty log: a segment name makes it a log",
    "it is not a log (io_error): only a segment that is not blank counts",
    pinned_by=("must.reader.crash.blank_segment_without_lock",),
)
def _blank_only_dir_not_a_log() -> None:
    orig = _segment_file.list_segments

    def list_segments(directory: str, *, require_log: bool = False) -> list[int]:
        logs = orig(directory, require_log=require_log)
        if require_log and logs and not os.path.exists(os.path.join(directory, "LOCK")):
            blank = [os.path.getsize(os.path.join(directory, segment_name(log))) == 0 for log in logs]
            if all(blank):
                raise NotALogError("only blank segments and no LOCK", path=directory)
        return logs

    replace(_segment_file, "list_segments", list_segments)


@mutant(
    "reserved_before_flags",
    "3.4 steps 8/9, 13.2",
    "unknown header flags (step 8) before the reserved bytes (step 9): a new field with its flag is refused as"
    " unsupported_feature",
    "reserved bytes first: a header of a later minor revision is bad_header",
    pinned_by=("must.reader.header.unknown_flag_and_reserved_byte",),
)
def _reserved_before_flags() -> None:
    resource(
        _segment,
        "parse_header",
        (
            "    if fields.flags & ~KNOWN_HEADER_FLAGS:\n",
            "    if fields.reserved_68 or any(fields.reserved_80) or any(fields.reserved_192):\n"
            "        raise BadHeaderError('reserved', log=log, offset=68)\n"
            "    if fields.flags & ~KNOWN_HEADER_FLAGS:\n",
        ),
    )


@mutant(
    "ref_zero_padding_unbounded",
    "10.6",
    "a text ref matches the grammar's widths (10, 20, 20 digits), leading zeros included",
    "any number of leading zeros is accepted",
    pinned_by=("must.reader.ref.zero_padded_too_long",),
)
def _ref_zero_padding_unbounded() -> None:
    _ref._TEXT = re.compile(r"0*([0-9]{1,10}):0*([0-9]{1,20}):0*([0-9]{1,20})")


@mutant(
    "ref_unicode_white_space",
    "10.6",
    "white space around a text ref is ASCII space, tab, CR and LF only",
    "any white space (form feed, vertical tab, Unicode spaces) is stripped",
    pinned_by=("must.reader.ref.form_feed_around",),
)
def _ref_unicode_white_space() -> None:
    _ref._WHITE_SPACE = None  # str.strip(None): every white space character


MUTANTS = tuple(_registry.mutants)
