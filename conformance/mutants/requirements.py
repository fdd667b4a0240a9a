"""Writer-requirement mutants: the reference writer with one writer requirement (W-n) broken.

A requirement counts as covered only by a case that fails when it is
broken. Each mutant here breaks one W-rule the conformance protocol can
observe (segment names and numbers, header values, record encoding, indexes
and asqns, cutover chaining, recovery's tail rules and refusals,
preallocation, the lock file), as little as possible: one function of the
reference recompiled from its own source with one edit, or one constant.
``section`` names the requirement, ``decision`` what it demands, ``other``
what the mutant does instead, and ``pinned_by`` cases that fail it with a
wrong answer. The rules the protocol cannot observe (sync order,
durability, locking, compression, retention) are proven covered by
python/tests/crash/test_requirement_mutants.py, and
python/tests/test_requirement_coverage.py maps every W-n to one or the other.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from decisions import Edit, Mutant, mutated, replace

from openbinlog import _commit, _records, _recovery, _segment, errors
from openbinlog._format import SLOT_OFFSETS
from openbinlog._recovery import FdSource
from openbinlog._segment import CommitState, SegmentHeaderInfo
from openbinlog._writer import Writer


def _method(owner: type, name: str, *edits: Edit) -> Callable[[], None]:
    """A patch that replaces method ``owner.name`` by its mutant."""

    def patch() -> None:
        setattr(owner, name, mutated(getattr(owner, name), *edits))

    return patch


def _function(module: Any, name: str, *edits: Edit) -> Callable[[], None]:
    """A patch that replaces ``module.name`` by its mutant, everywhere the reference imported it."""

    def patch() -> None:
        replace(module, name, mutated(getattr(module, name), *edits))

    return patch


# -- mutations that are not a source edit -----------------------------------------------------------------------------


def _slot_over_the_active_one() -> None:
    """The writer puts generation g+1 where generation g is (the slot codec itself, and its other users, untouched)."""
    name = "encode_slot"
    original: Callable[[CommitState], tuple[int, bytes]] = getattr(_commit, name)

    def encode_slot(commit: CommitState) -> tuple[int, bytes]:
        _at, raw = original(commit)
        return SLOT_OFFSETS[(commit.generation + 1) % 2], raw

    setattr(_commit, name, encode_slot)  # the writer's binding only


def _no_cutover_temp_name() -> None:
    _recovery.CUTOVER_TEMP = re.compile(r"(?!)")  # matches nothing


def _committed_records_unchecked() -> None:
    def check_committed(source: FdSource, header: SegmentHeaderInfo, commit: CommitState) -> None:
        return None

    replace(_recovery, "_check_committed", check_committed)


def _predecessor_never_sealed() -> None:
    def apply_seal(self: Writer, plan: _recovery.SealPlan) -> None:
        return None

    setattr(Writer, "_apply_seal", apply_seal)  # noqa: B010


class _LegacyRefusedAsBadHeader(errors.BadHeaderError):
    """A version 1 log refused, with the error class of a damaged header."""


def _legacy_refused_as_bad_header() -> None:
    replace(errors, "LegacyLogError", _LegacyRefusedAsBadHeader)


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "w01_new_log_numbered_2",
        "W-1",
        "a new log's first segment has log number 1 (00000001.dat)",
        "a new log's first segment is 00000002.dat",
        ("must.writer.write.one_record", "must.writer.write.cutovers"),
        _method(
            Writer,
            "_open",
            ("1, log_id=secrets.token_bytes(16), base_index=1", "2, log_id=secrets.token_bytes(16), base_index=1"),
        ),
    ),
    Mutant(
        "w02_new_log_base_index_0",
        "W-2",
        "segment 1 of a new log has base index 1",
        "segment 1 of a new log has base index 0",
        ("must.writer.write.one_record", "must.writer.write.many_records"),
        _method(
            Writer,
            "_open",
            ("log_id=secrets.token_bytes(16), base_index=1,", "log_id=secrets.token_bytes(16), base_index=0,"),
        ),
    ),
    Mutant(
        "w04_new_header_mirror_position_0",
        "W-4",
        "a new segment header's mirror last_element_position is 256",
        "a new segment header's mirror last_element_position is 0",
        ("must.writer.write.cutover_after_last_record",),
        _function(_segment, "build_header", ('"last_element_position": HEADER_SIZE,', '"last_element_position": 0,')),
    ),
    Mutant(
        "w05_mirror_not_updated",
        "W-5",
        "after each publication the mirror fields at offsets 6..23 match the new active slot",
        "a publication writes the slot only: the mirrors keep the values of the new header",
        ("must.writer.write.one_record", "must.writer.write.cutovers"),
        _method(
            Writer,
            "_publish",
            ("(encode_slot(commit), encode_mirror(commit, segment.log))", "(encode_slot(commit),)"),
        ),
    ),
    Mutant(
        "w06_records_padded",
        "W-6",
        "records are written contiguously from offset 256, without gap or padding",
        "each record is followed by one zero byte of padding",
        ("must.writer.write.one_record", "must.writer.write.many_records"),
        _method(
            Writer,
            "_encode_batch",
            (
                "record = encode_record(index, ticket.payload, asqn=ticket.asqn, timestamp_us=now)",
                "record = encode_record(index, ticket.payload, asqn=ticket.asqn, timestamp_us=now) + bytes(1)",
            ),
        ),
    ),
    Mutant(
        "w07_index_skips_one",
        "W-7",
        "the first record appended to a segment carries the active slot's next_index, each next one plus one",
        "every record carries the index after the one it should carry",
        ("must.writer.write.one_record", "must.writer.write.cutovers"),
        _method(Writer, "_encode_batch", ("record = encode_record(index,", "record = encode_record(index + 1,")),
    ),
    Mutant(
        "w08_repeated_asqn_accepted",
        "W-8",
        "an asqn that is not greater than the log's last asqn is refused with asqn_not_increasing",
        "an asqn equal to the log's last asqn is accepted",
        ("must.writer.write.refuse_asqn_repeated",),
        _method(Writer, "_encode_batch", ("ticket.asqn <= last_asqn", "ticket.asqn < last_asqn")),
    ),
    Mutant(
        "w10_unfitting_record_refused_as_log_full",
        "W-10",
        "a record that cannot fit an empty preallocated segment is refused with length_out_of_range",
        "a record that cannot fit an empty preallocated segment is refused with log_full",
        ("may.writer.write.preallocated_refuse_record_too_large",),
        _method(Writer, "_encode_batch", ("PayloadTooLargeError(", "LogFullError(")),
    ),
    Mutant(
        "w11_header_checksum_little_endian",
        "W-11",
        "every checksum is stored big-endian",
        "a record header's checksum is stored little-endian",
        ("must.writer.write.one_record", "must.writer.write.empty_payload"),
        _function(
            _records,
            "encode_record",
            ('masked_crc32c(head).to_bytes(4, "big")', 'masked_crc32c(head).to_bytes(4, "little")'),
        ),
    ),
    Mutant(
        "w14_slot_over_the_active_one",
        "W-14",
        "generation g+1 goes into slot (g+1) mod 2, never over the slot of the active generation g",
        "generation g+1 is written over the slot of generation g",
        ("must.writer.write.one_record", "must.writer.write.many_records"),
        _slot_over_the_active_one,
    ),
    Mutant(
        "w18_capacity_above_the_file_size",
        "W-18",
        "a preallocated segment's capacity is the size of the file created",
        "capacity says 64 bytes more than the file created holds",
        ("may.writer.write.preallocated", "may.writer.write.preallocated_with_cutovers"),
        _method(
            Writer,
            "_create_segment",
            ("capacity=self.preallocate or 0,", "capacity=self.preallocate + 64 if self.preallocate else 0,"),
        ),
    ),
    Mutant(
        "w21_tail_records_not_adopted",
        "W-21",
        "recovery adopts the records the tail walk walks over from the commit point",
        "recovery adopts none: the walked records stay beyond the commit point",
        ("must.writer.recover.adopt_unpublished_records", "must.writer.recover.seal_adopting_unpublished_records"),
        _function(
            _recovery,
            "plan_tail",
            ("if scan.end > commit.commit_offset:", "if False:"),
        ),
    ),
    Mutant(
        "w22_tail_not_truncated",
        "W-22",
        "recovery removes every byte after the adopted end X",
        "recovery of a segment that is not preallocated leaves the bytes after X",
        ("must.writer.recover.truncate_garbage_tail", "must.writer.recover.torn_body_partial"),
        _function(_recovery, "plan_tail", ('clear = "truncate_tail"', "clear = None")),
    ),
    Mutant(
        "w24_truncation_cuts_a_committed_byte",
        "W-24",
        "no byte below the commit point is modified, truncated or zeroed",
        "recovery truncates the file one byte short of the adopted end, inside the last committed record",
        ("must.writer.recover.truncate_garbage_tail", "must.writer.recover.torn_body_partial"),
        _method(
            Writer,
            "_apply_tail",
            ("self._fs.truncate(segment.fd, scan.end)", "self._fs.truncate(segment.fd, scan.end - 1)"),
        ),
    ),
    Mutant(
        "w25_stale_temp_files_kept",
        "W-25",
        "clean-up deletes every unheld temporary file named as a cutover's",
        "clean-up recognises no cutover temporary file and leaves them all",
        ("must.writer.recover.remove_temp_file", "must.writer.recover.link_done_temp_left"),
        _no_cutover_temp_name,
    ),
    Mutant(
        "w26_committed_records_not_checked",
        "W-26",
        "opening a log validates every committed record of the last segment and refuses to append behind damage",
        "opening a log checks the header only",
        ("must.writer.recover.refuse_checksum_mismatch", "must.writer.recover.refuse_committed_zeros"),
        _committed_records_unchecked,
    ),
    Mutant(
        "w27_successor_with_a_new_log_id",
        "W-27",
        "a cutover gives the new segment N's log id",
        "a cutover gives the new segment a fresh random log id",
        ("must.writer.write.cutovers", "must.writer.write.cutover_before_first"),
        _method(Writer, "_next_segment", ("log_id=log_id,", "log_id=secrets.token_bytes(16),")),
    ),
    Mutant(
        "w29_successor_base_index_skips_one",
        "W-29",
        "the successor created for a sealed last segment has the sealed segment's next_index as base index",
        "that successor has base index next_index + 1",
        ("must.writer.recover.sealed_without_successor",),
        _method(
            Writer,
            "_create_successor",
            (
                "segment.header.log_id, commit)",
                "segment.header.log_id, replace(commit, next_index=commit.next_index + 1))",
            ),
        ),
    ),
    Mutant(
        "w30_finished_predecessor_left_open",
        "W-30",
        "a finished predecessor whose end index equals the last segment's base index is sealed",
        "the finished predecessor is left open",
        ("must.writer.recover.seal_open_predecessor", "must.writer.recover.link_done_temp_left"),
        _predecessor_never_sealed,
    ),
    Mutant(
        "w34_lock_holds_the_pid",
        "W-34",
        "LOCK is created zero-length and never written",
        "the writer writes its process id into LOCK",
        ("must.writer.write.one_record", "must.writer.write.cutovers"),
        _method(
            Writer,
            "_open_lock",
            (
                "self._lock_fd = self._fs.open_lock(self._lock_path)",
                "self._lock_fd = self._fs.open_lock(self._lock_path)\n"
                "    self._fs.pwrite(self._lock_fd, str(os.getpid()).encode(), 0)",
            ),
        ),
    ),
    Mutant(
        "w35_legacy_log_refused_as_bad_header",
        "W-35",
        "appending to a log whose last segment is version 1 is refused with unsupported_version",
        "appending to a version 1 log is refused with bad_header",
        ("must.writer.recover.refuse_legacy_log",),
        _legacy_refused_as_bad_header,
    ),
)

# What the mutants' testee serves: the decision mutants, then the requirement mutants.
