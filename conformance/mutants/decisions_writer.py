"""Decision mutants of writer recovery and preallocation (spec protocols.md): what recover decides and changes.

Each takes the other plausible reading of one judgement call; the cases in ``pinned_by`` tell it apart.
"""

from __future__ import annotations

import dataclasses
import os
import re

from decisions import Registry, replace, resource

from openbinlog import _commit, _recovery, _recovery_exec, _segment, _verify, walk
from openbinlog._reader import Reader
from openbinlog.errors import BinlogError, BinlogIOError

_registry = Registry()
mutant = _registry.mutant


@mutant(
    "temp_names_any_case",
    "7.4",
    "only lower-case hex temp names are temporary files (deleted by recover)",
    "temp names matched case-insensitively",
    pinned_by=("must.writer.recover.keep_upper_case_temp_name",),
)
def _temp_names_any_case() -> None:
    pat = [
        re.compile(r"\.[0-9]{8}\.dat\.[0-9a-f]+\.tmp", re.I),
        re.compile(r"\.[0-9]{8}\.dat\.(?:gz|zst)\.[0-9a-f]+\.tmp", re.I),
    ]
    replace(_recovery, "is_temp_name", lambda name: any(p.fullmatch(name) for p in pat))


@mutant(
    "recover_ignores_r39",
    "7.5 W-26 / R-39",
    "W-26 includes the check of R-39: recover refuses with bad_header when the last segment's records end before"
    " another index than its active slot's next_index",
    "recover checks the records only (format 4.3.1 steps 1-8), not the slot's next_index",
    pinned_by=("must.writer.recover.refuse_next_index_disagrees",),
)
def _recover_ignores_r39() -> None:
    resource(_recovery, "_check_committed", ("    if decoder.next_index != commit.next_index:", "    if False:"))


@mutant(
    "recovery_tail_asqn_minus_one",
    "7.2 step 2",
    "recovery's tail walk starts with the slot's last_asqn",
    "it starts with A = -1",
    pinned_by=("must.writer.recover.tail_walk_asqn_from_slot",),
)
def _recovery_tail_asqn_minus_one() -> None:
    orig = _recovery.tail_walk

    def tail_walk(source, *, log, commit, stop_before_index=None):
        return orig(
            source, log=log, commit=dataclasses.replace(commit, last_asqn=-1), stop_before_index=stop_before_index
        )

    _recovery.tail_walk = tail_walk


@mutant(
    "recover_creates_segment_1",
    "2.4",
    "recovery without an append creates no segment: a directory left without segments stays so",
    "recover creates segment 1 as a writer's open before its first append does",
    pinned_by=(
        "must.writer.recover.no_segments_creates_nothing",
        "must.writer.recover.blank_only_segment_leaves_no_segment",
    ),
)
def _recover_creates_segment_1() -> None:
    _verify._RecoveringWriter._creates_log = True


@mutant(
    "recover_cleans_before_refusing",
    "7.4 W-37",
    "refusals decided before temp files / blanks are deleted",
    "temp files and blank last segments deleted first, then the refusal",
    pinned_by=(
        "must.writer.recover.refuse_before_removing_temp_file",
        "must.writer.recover.refuse_before_removing_blank_segment",
    ),
)
def _recover_cleans_before_refusing() -> None:
    orig = _recovery.plan_open

    def plan_open(fs, directory, *, verify):
        for name in fs.listdir(directory):
            path = os.path.join(directory, name)
            if _recovery.is_temp_name(name) and not fs.held(path):
                fs.unlink(path)
        logs = sorted(int(n[:8]) for n in fs.listdir(directory) if re.fullmatch(r"[0-9]{8}\.dat", n))
        while logs:
            path = os.path.join(directory, f"{logs[-1]:08d}.dat")
            with _recovery._opened(fs, path) as source:
                if not walk.is_blank(source):
                    break
            fs.unlink(path)
            logs.pop()
        return orig(fs, directory, verify=verify)

    replace(_recovery, "plan_open", plan_open)


@mutant(
    "recover_ignores_predecessor_header",
    "8.5 / W-37",
    "a damaged header of the last segment's predecessor refuses recovery",
    "a predecessor whose header fails is left alone (no seal), recovery goes on",
    pinned_by=("must.writer.recover.refuse_damaged_predecessor_header",),
)
def _recover_ignores_predecessor_header() -> None:
    orig = _recovery._plan_seal

    def _plan_seal(fs, directory, log, successor):
        try:
            return orig(fs, directory, log, successor)
        except BinlogIOError:
            raise
        except BinlogError:
            return None

    _recovery._plan_seal = _plan_seal


@mutant(
    "recover_validates_whole_log",
    "7.5 W-26",
    "recover validates the last segment only",
    "recover refuses on any damage a strict read of the whole log reports",
    pinned_by=("must.writer.recover.remove_two_blank_last_segments",),
)
def _recover_validates_whole_log() -> None:
    orig = _recovery.plan_open

    def plan_open(fs, directory, *, verify):
        if verify and any(re.fullmatch(r"[0-9]{8}\.dat", n) for n in os.listdir(directory)):
            with Reader(directory) as reader:
                for _entry in reader:
                    pass
        return orig(fs, directory, verify=verify)

    replace(_recovery, "plan_open", plan_open)


@mutant(
    "recover_w26_asqn_from_predecessor",
    "7.5 W-26",
    "W-26 validates the last segment on its own, with previous asqn -1",
    "with the previous asqn of the predecessor's active slot (as a read of the log carries an asqn across)",
    pinned_by=("must.writer.recover.last_segment_validated_on_its_own",),
)
def _recover_w26_asqn_from_predecessor() -> None:
    state = {"asqn": -1}
    orig_last = _recovery._plan_last

    def _plan_last(fs, directory, log, *, verify):
        state["asqn"] = -1
        previous = os.path.join(directory, f"{log - 1:08d}.dat")
        if os.path.exists(previous):
            with open(previous, "rb") as handle:
                data = handle.read(256)
            try:
                header = _segment.parse_header(data, log=log - 1)
            except BinlogError:
                header = None
            if isinstance(header, _segment.SegmentHeaderInfo):
                state["asqn"] = header.commit.last_asqn
        return orig_last(fs, directory, log, verify=verify)

    _recovery._w26_start_asqn = lambda: state["asqn"]
    _recovery._plan_last = _plan_last
    resource(
        _recovery,
        "_check_committed",
        ("next_index=header.base_index, limit", "next_index=header.base_index, last_asqn=_w26_start_asqn(), limit"),
    )


@mutant(
    "recover_seals_despite_gap",
    "8.5 W-30",
    "a predecessor whose end index != successor base is left untouched",
    "it is sealed anyway",
    pinned_by=("must.writer.recover.leave_predecessor_before_gap",),
)
def _recover_seals_despite_gap() -> None:
    resource(_recovery, "_plan_seal", ("if tail.scan.next_index != successor.base_index:", "if False:"))


@mutant(
    "recover_no_successor_for_sealed",
    "8.3 W-29",
    "a writer's open, recovery included, creates the missing successor of a sealed last segment",
    "recover leaves a sealed last segment without successor (only an append creates it)",
    pinned_by=("must.writer.recover.sealed_last_segment_gets_successor",),
)
def _recover_no_successor_for_sealed() -> None:
    _recovery.LastSegment.create_successor = property(lambda self: False)
    resource(
        _recovery_exec,
        "RecoveryMixin._prepare",
        ("    if commit.closed:", "    if commit.closed and self._creates_log:"),
    )


@mutant(
    "recover_no_truncate_zero_tail",
    "7.1/7.2",
    "a non-preallocated segment longer than C is truncated (zeros too)",
    "a tail of zeros is left",
    pinned_by=("must.writer.recover.truncate_zero_filled_tail", "must.writer.recover.torn_length_zero_bytes"),
)
def _recover_no_truncate_zero_tail() -> None:
    resource(
        _recovery,
        "plan_tail",
        (
            '        if not header.preallocated:\n            clear = "truncate_tail"',
            "        if not header.preallocated:\n"
            '            clear = None if all_zero(source, scan.end) else "truncate_tail"',
        ),
    )


@mutant(
    "preallocated_eager_cutover",
    "8.1 / 6.5",
    "a preallocated segment is cut over when the next record does not fit",
    "cut over as soon as fewer than 40 bytes remain",
    pinned_by=("may.writer.write.preallocated_exact_fill",),
)
def _preallocated_eager_cutover() -> None:
    resource(
        _commit,
        "CommitMixin._due_for_cutover",
        (
            "return left_over or (",
            "return left_over or (segment.header.capacity != 0 and segment.header.capacity - offset < 40) or (",
        ),
    )


@mutant(
    "preallocated_cutover_then_refuse",
    "W-10",
    "a record too large for an empty preallocated segment is refused before any cutover",
    "cut over first, refuse in the new empty segment",
    pinned_by=("may.writer.write.preallocated_refuse_record_too_large",),
)
def _preallocated_cutover_then_refuse() -> None:
    resource(
        _commit, "CommitMixin._encode_batch", ("if HEADER_SIZE + len(record) > capacity:", "if offset == HEADER_SIZE:")
    )


@mutant(
    "recover_deletes_one_blank",
    "7.4 step 2",
    "recovery deletes blank last segments while the highest is blank",
    "recovery deletes only the highest blank segment",
    pinned_by=("must.writer.recover.remove_two_blank_last_segments",),
)
def _recover_deletes_one_blank() -> None:
    resource(
        _recovery,
        "plan_open",
        ("        plan.blanks.append(logs.pop())", "        plan.blanks.append(logs.pop())\n        break"),
    )


@mutant(
    "recover_preallocated_truncated",
    "7.2 step 3",
    "a preallocated segment's tail is zeroed (size kept)",
    "it is truncated like any other",
    pinned_by=("must.writer.recover.zero_preallocated_tail", "must.writer.recover.clear_stale_records_behind_hole"),
)
def _recover_preallocated_truncated() -> None:
    resource(
        _recovery,
        "plan_tail",
        ("        if not header.preallocated:\n            clear", "        if True:\n            clear"),
    )


@mutant(
    "compression_temp_not_cleaned",
    "7.4 step 1",
    "recovery deletes unheld .NNNNNNNN.dat.(gz|zst).<hex>.tmp files",
    "only cutover temp names are deleted",
    pinned_by=("must.writer.recover.remove_compression_temp_file",),
)
def _compression_temp_not_cleaned() -> None:
    pat = re.compile(r"\.[0-9]{8}\.dat\.[0-9a-f]+\.tmp")
    replace(_recovery, "is_temp_name", lambda name: pat.fullmatch(name) is not None)


@mutant(
    "recover_skippable_tail_not_adopted",
    "7.2 step 5 / W-21",
    "recovery publishes X whenever X > C, also when the walked tail holds only skippable records",
    "it publishes only when the tail holds a data record (the skippable records stay beyond C)",
    pinned_by=("must.writer.recover.adopt_skippable_only_tail",),
)
def _recover_skippable_tail_not_adopted() -> None:
    resource(_recovery, "plan_tail", ("    if scan.end > commit.commit_offset:", "    if scan.records:"))


MUTANTS = tuple(_registry.mutants)
