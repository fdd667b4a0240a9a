"""Decision mutants of the sparse index (spec index.md, section 18.5: the index check and the entry check, R-47).

Each takes the other plausible reading of one judgement call; the cases in ``pinned_by`` tell it apart. Each
patches one function of ``openbinlog.walk`` (``usable_index``: the index check; ``entry_reached``: the entry
check) by an edit of its own source.
"""

from __future__ import annotations

from decisions import Registry, resource

from openbinlog import walk

_registry = Registry()
mutant = _registry.mutant


@mutant(
    "index_entry_checked_at_its_record",
    "18.5 R-47",
    "an entry is used only when a walk from the entry before it (from 256 for entry 0) lands exactly on its offset",
    "an entry is used when the record at its offset passes format 4.3.1 steps 1-8 with its index and time"
    " (no landing walk): a record embedded in a payload passes",
    pinned_by=(
        "may.reader.index.log_of_logs_embedded_from_index_entry",
        "may.reader.index.log_of_logs_embedded_from_index_later_entry",
    ),
)
def _index_entry_checked_at_its_record() -> None:
    resource(
        walk,
        "entry_reached",
        ("start=previous.offset, next_index=previous.index", "start=entry.offset, next_index=entry.index"),
    )


@mutant(
    "index_end_unchecked",
    "18.5 R-47",
    "the index check compares segment_end and end_index with the segment's S and I_S: a stale index is not used",
    "the header identifies the segment by log number, log id and base index; segment_end and end_index are not"
    " compared (the entry check is trusted to catch what moved)",
    pinned_by=(
        "may.reader.index.copied_records_stale_from_index_copied_entry",
        "may.reader.index.copied_records_stale_since_copied_entry",
    ),
)
def _index_end_unchecked() -> None:
    resource(
        walk,
        "usable_index",
        (
            "(info.base_index, info.segment_end, info.end_index) != (header.base_index, end.offset, end.index)",
            "info.base_index != header.base_index",
        ),
    )


@mutant(
    "index_entry_time_unchecked",
    "18.5 R-47",
    "the record the landing walk reaches at an entry's offset carries the entry's timestamp_us",
    "the landing walk checks the entry's offset and index only: a seek by time trusts the entry's time",
    pinned_by=(
        "may.reader.index.lie_time_since_between_entries",
        "may.reader.index.lie_time_since_entry",
    ),
)
def _index_entry_time_unchecked() -> None:
    resource(
        walk,
        "entry_reached",
        (
            "(record.offset, record.index, record.timestamp_us) ==",
            "(record.offset, record.index, entry.timestamp_us) ==",
        ),
    )


MUTANTS = tuple(_registry.mutants)
