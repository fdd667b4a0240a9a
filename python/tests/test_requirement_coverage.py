"""Every writer requirement is covered by a mutant that something catches, not merely cited by a test.

A requirement counts as covered only by a case or test that fails when the
requirement is broken. ``COVERAGE`` maps every W-n the spec defines to
where a mutant breaking it lives: ``conformance:NAME``, a requirement
mutant of conformance/mutants/requirements.py, caught by the conformance
cases it names (``binlog conformance mutants`` runs them); ``pytest:NAME``,
a test of python/tests/crash/test_requirement_mutants.py that applies a
mutant and asserts the suite's checks catch it; or ``unmutable: REASON``
for a requirement no mutant can break observably. A requirement with
several clauses may list several mutants. This file checks the table
against the spec and the two mutant files; it does not run the mutants.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from openbinlog_conformance import Manifest, load

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "spec"
# The spec's normative documents.
NORMATIVE = ("format.md", "protocols.md", "readers.md", "legacy-v1.md", "index.md")
MUTANTS_DIR = ROOT / "conformance" / "mutants"
MUTANT_TESTS = Path(__file__).resolve().parent / "crash" / "test_requirement_mutants.py"
KINDS = ("conformance:", "pytest:", "unmutable: ")

COVERAGE: dict[str, tuple[str, ...]] = {
    "W-1": ("conformance:w01_new_log_numbered_2", "pytest:test_w01_segment_beyond_99999999_is_caught"),
    "W-2": ("conformance:w02_new_log_base_index_0",),
    "W-3": ("pytest:test_w03_removal_above_the_lowest_segment_is_caught",),
    "W-4": ("conformance:w04_new_header_mirror_position_0",),
    "W-5": ("conformance:w05_mirror_not_updated",),
    "W-6": ("conformance:w06_records_padded",),
    "W-7": ("conformance:w07_index_skips_one",),
    "W-8": ("conformance:w08_repeated_asqn_accepted",),
    "W-9": ("pytest:test_w09_timestamp_below_the_last_one_is_caught",),
    "W-10": ("conformance:w10_unfitting_record_refused_as_log_full",),
    "W-11": ("conformance:w11_header_checksum_little_endian",),
    "W-12": ("pytest:test_w12_generation_skipping_is_caught",),
    "W-13": (
        "pytest:test_w13_publication_before_the_batch_sync_is_caught",
        "pytest:test_w13_records_alone_written_without_their_sync_is_caught",
    ),
    "W-14": ("conformance:w14_slot_over_the_active_one",),
    "W-15": ("pytest:test_w15_acknowledgement_before_the_strict_sync_is_caught",),
    "W-16": ("pytest:test_w16_append_to_a_finished_segment_is_caught",),
    "W-17": ("pytest:test_w17_batch_published_record_by_record_is_caught",),
    "W-18": ("conformance:w18_capacity_above_the_file_size",),
    "W-19": ("pytest:test_w19_writer_going_on_after_a_failed_sync_is_caught",),
    "W-20": ("pytest:test_w20_batch_without_the_tail_check_is_caught",),
    "W-21": ("conformance:w21_tail_records_not_adopted",),
    "W-22": ("conformance:w22_tail_not_truncated",),
    "W-23": (
        "pytest:test_w23_recovery_without_sync_is_caught",
        "pytest:test_w23_recovery_without_rewriting_the_adopted_bytes_is_caught",
    ),
    "W-24": ("conformance:w24_truncation_cuts_a_committed_byte",),
    "W-25": ("conformance:w25_stale_temp_files_kept", "pytest:test_w25_clean_up_without_the_directory_sync_is_caught"),
    "W-26": ("conformance:w26_committed_records_not_checked",),
    "W-27": ("conformance:w27_successor_with_a_new_log_id", "pytest:test_w27_seal_before_the_directory_sync_is_caught"),
    "W-28": ("pytest:test_w28_segment_linked_before_its_header_is_synced_is_caught",),
    "W-29": (
        "conformance:w29_successor_base_index_skips_one",
        "pytest:test_w29_sealed_last_segment_left_without_successor_is_caught",
    ),
    "W-30": ("conformance:w30_finished_predecessor_left_open",),
    "W-31": ("pytest:test_w31_commit_without_the_lock_is_caught",),
    "W-32": ("pytest:test_w32_flock_is_caught",),
    "W-33": ("pytest:test_w33_a_lock_file_opened_per_writer_is_caught",),
    "W-34": ("conformance:w34_lock_holds_the_pid",),
    "W-35": ("conformance:w35_legacy_log_refused_as_bad_header",),
    "W-36": ("pytest:test_w36_compression_file_not_held_is_caught",),
    "W-37": ("pytest:test_w37_clean_up_before_the_refusal_is_caught",),
    "W-38": ("pytest:test_w38_replaced_lock_unnoticed_is_caught",),
    "W-39": (
        "pytest:test_w39_ordinary_writer_relying_on_its_own_slot_is_caught",
        "pytest:test_w39_exclusive_writer_releasing_the_lock_between_batches_is_caught",
    ),
    "W-40": (
        "pytest:test_w40_flush_publishing_before_its_sync_is_caught",
        "pytest:test_w40_cutover_without_committing_the_buffer_is_caught",
    ),
    "W-41": (
        "pytest:test_w41_slot_stored_before_its_record_is_caught",
        "pytest:test_w41_flush_without_syncing_the_mapping_is_caught",
    ),
    "W-42": (
        "pytest:test_w42_unsynced_publication_over_the_durable_slot_is_caught",
        "pytest:test_w42_records_synced_alone_then_published_over_the_durable_slot_is_caught",
    ),
    "W-43": (
        "pytest:test_w43_shared_sync_without_writing_the_unpublished_records_again_is_caught",
        "pytest:test_w43_shared_sync_without_writing_the_header_again_is_caught",
        "pytest:test_w43_shared_publication_below_the_commit_point_is_caught",
        "pytest:test_w43_shared_publication_before_the_segment_sync_is_caught",
        "pytest:test_w43_shared_batch_behind_a_torn_tail_is_caught",
    ),
    "W-44": ("pytest:test_w44_shared_publication_over_a_slot_not_known_durable_is_caught",),
    "W-45": (
        "pytest:test_w45_a_damaged_segment_indexed_by_a_tolerant_walk_is_caught",
        "pytest:test_w45_an_entry_off_the_rule_is_caught",
        "pytest:test_w45_an_index_written_under_its_own_name_is_caught",
        "pytest:test_w45_a_writer_that_indexes_a_segment_in_its_cutover_is_caught",
    ),
    "W-46": ("pytest:test_w46_shared_batch_acknowledged_where_a_dead_round_planned_it_is_caught",),
    "W-47": ("pytest:test_w47_shared_batch_committed_again_after_a_dead_round_committed_it_is_caught",),
}


def spec_documents() -> list[Path]:
    return [SPEC / name for name in NORMATIVE]


def writer_requirements() -> set[str]:
    """The W-n the spec defines (``- **W-n** ...`` list items)."""
    found: set[str] = set()
    for document in spec_documents():
        found |= set(re.findall(r"^- \*\*(W-\d+)\*\*", document.read_text(), re.M))
    return found


def entries(kind: str) -> list[tuple[str, str]]:
    """(W-n, what follows the prefix) for every entry of one kind."""
    return [
        (rid, entry.removeprefix(kind)) for rid, found in COVERAGE.items() for entry in found if entry.startswith(kind)
    ]


def number(rid: str) -> int:
    return int(rid.removeprefix("W-"))


@pytest.fixture(scope="module")
def requirement_mutants() -> ModuleType:
    """conformance/mutants/requirements.py, imported beside decisions.py as the mutants' testee imports it.

    Importing patches nothing: a mutant changes the reference only when its patch is applied.
    """
    spec = importlib.util.spec_from_file_location("conformance_requirement_mutants", MUTANTS_DIR / "requirements.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(MUTANTS_DIR))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(MUTANTS_DIR))
    return module


def mutant_test_names() -> set[str]:
    tree = ast.parse(MUTANT_TESTS.read_text())
    # The mutant tests, named after their requirement; the file's other tests show the reference passes a check.
    pattern = re.compile(r"test_w\d\d_\w+")
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef) and pattern.fullmatch(node.name)}


def test_the_table_holds_every_writer_requirement_of_the_spec_and_nothing_else() -> None:
    defined = writer_requirements()
    assert defined, f"no writer requirement found in {[str(d) for d in spec_documents()]}"
    missing = sorted(defined - set(COVERAGE), key=number)
    unknown = sorted(set(COVERAGE) - defined, key=number)
    assert not missing, f"writer requirements without a mutant: {missing}"
    assert not unknown, f"in the table but not defined by the spec: {unknown}"


def test_every_entry_says_where_its_mutant_lives_or_why_there_is_none() -> None:
    for rid, found in COVERAGE.items():
        assert found, f"{rid}: no entry"
        for entry in found:
            assert entry.startswith(KINDS), f"{rid}: {entry!r} is none of {KINDS}"
        unmutable = [entry for entry in found if entry.startswith("unmutable: ")]
        assert not unmutable or len(found) == 1, f"{rid}: unmutable, yet a mutant is listed"
        for entry in unmutable:
            assert len(entry.removeprefix("unmutable: ").split()) >= 5, f"{rid}: say precisely why: {entry!r}"


def test_every_conformance_entry_names_a_requirement_mutant_of_that_requirement(
    requirement_mutants: ModuleType,
) -> None:
    mutants = {mutant.name: mutant for mutant in requirement_mutants.MUTANTS}
    assert len(mutants) == len(requirement_mutants.MUTANTS), "two requirement mutants share a name"
    listed = entries("conformance:")
    for rid, name in listed:
        assert name in mutants, f"{rid}: no requirement mutant {name!r} in {MUTANTS_DIR / 'requirements.py'}"
        assert mutants[name].section == rid, f"{name} breaks {mutants[name].section}, the table says {rid}"
    unlisted = sorted(set(mutants) - {name for _rid, name in listed})
    assert not unlisted, f"requirement mutants the table does not list: {unlisted}"


def test_every_requirement_mutant_names_its_readings_and_the_cases_that_catch_it(
    requirement_mutants: ModuleType,
) -> None:
    manifest: Manifest = load(ROOT / "conformance" / "manifest.json", verify_files=False)
    ids = {case.id for case in manifest.cases if case.until is None}
    for mutant in requirement_mutants.MUTANTS:
        assert re.fullmatch(rf"w{number(mutant.section):02d}_[a-z0-9_]+", mutant.name), mutant.name
        assert mutant.decision and mutant.other and mutant.decision != mutant.other, mutant.name
        assert mutant.pinned_by, f"{mutant.name}: no case said to catch it"
        assert set(mutant.pinned_by) <= ids, f"{mutant.name}: pinned by cases the manifest lacks"


def test_every_pytest_entry_names_a_test_of_the_mutant_file_for_that_requirement() -> None:
    tests = mutant_test_names()
    listed = entries("pytest:")
    for rid, name in listed:
        assert name in tests, f"{rid}: no test {name} in {MUTANT_TESTS}"
        assert name.startswith(f"test_w{number(rid):02d}_"), f"{name} is not named after {rid}"
    unlisted = sorted(tests - {name for _rid, name in listed})
    assert not unlisted, f"mutant tests the table does not list: {unlisted}"
