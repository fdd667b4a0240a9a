"""Tolerant reads and splits: the runner compares damage reports and split boundaries, and catches broken ones."""

from __future__ import annotations

import pytest
from conformance_helpers import REFERENCE, broken, expected_outcome, failed

from openbinlog_conformance import Filters, Hello, Implementation, Manifest, RunResult, reference, run
from openbinlog_conformance.canonical import ShapeError, check_read_answer
from openbinlog_conformance.compare import damage_problems

TOLERANT = Filters(case_globs=("must.reader.tolerant.*",))
SPLITS = Filters(case_globs=("must.reader.split.*",))
REGION = {
    "class": "checksum_mismatch",
    "log": 1,
    "offset": "441",
    "index": "3",
    "bytes_skipped": "340",
    "resumed_index": "4",
}


def test_the_reference_runs_every_tolerant_and_split_case(reference_run: RunResult, manifest: Manifest) -> None:
    new = {case.id for case in manifest.cases if {"tolerant", "split"} & set(case.requires)}
    assert len(new) > 40
    ran = {r.id: r.status for r in reference_run.implementations[0].results if r.id in new}
    assert set(ran) == new
    assert set(ran.values()) <= {"passed", "xfailed"}


def test_dropping_a_damage_report_fails_every_case_with_damage(
    manifest: Manifest, reference_read_failures: set[str]
) -> None:
    result = run([broken("drops_damage_report")], TOLERANT, manifest=manifest)
    with_damage = {case.id for case in TOLERANT.select(manifest.cases) if _damage(manifest, case.id)}
    assert len(with_damage) > 20
    assert set(failed(result)) == with_damage | (
        reference_read_failures & {c.id for c in TOLERANT.select(manifest.cases)}
    )


def test_resuming_one_record_late_fails_every_case_that_resumes_after_record_damage(
    manifest: Manifest, reference_read_failures: set[str]
) -> None:
    result = run([broken("resumes_one_record_late")], TOLERANT, manifest=manifest)
    resumes = {
        case.id
        for case in TOLERANT.select(manifest.cases)
        if any(
            r["class"] not in ("chain_broken", "bad_header") and r["resumed_index"] is not None
            for r in _damage(manifest, case.id)
        )
    }
    assert len(resumes) > 10
    caught = failed(result)
    assert set(caught) == resumes | (reference_read_failures & {c.id for c in TOLERANT.select(manifest.cases)})
    assert {caught[case] for case in resumes} == {"mismatch"}


def test_a_split_that_returns_the_record_it_starts_in_fails_every_split_starting_inside_a_record(
    manifest: Manifest, reference_read_failures: set[str]
) -> None:
    result = run([broken("returns_record_twice")], SPLITS, manifest=manifest)
    cases = SPLITS.select(manifest.cases)
    # Where each segment's records lie, from every split case's expected records.
    extents: dict[tuple[object, int], set[tuple[int, int]]] = {}
    for case in cases:
        for r in case.expected["records"] or []:
            begin = int(r["offset"])
            extents.setdefault((case.fixture_dir, r["log"]), set()).add((begin, begin + 40 + len(r["payload"]) // 2))
    inside = {
        case.id
        for case in cases
        if any(
            begin < int(case.operation["start"]) < end
            for begin, end in extents.get((case.fixture_dir, case.operation["log"]), ())
        )
    }
    assert {
        "must.reader.split.start_in_payload",
        "must.reader.split.equal_2_of_3",
        "must.reader.split.next_split_after_damage",
    } <= inside
    # It also walks from 256, so it meets damage that lies before the start of a split that accepts.
    damaged_before = {
        case.id
        for case in cases
        if case.expected["outcome"] == "accept"
        and reference.read_split_log(str(case.fixture_dir), case.operation["log"], 256, int(case.operation["stop"]))[
            "outcome"
        ]
        == "reject"
    }
    assert "must.reader.split.start_at_resurrected_record" in damaged_before
    assert set(failed(result)) == inside | damaged_before | (reference_read_failures & {case.id for case in cases})


def test_damage_is_compared_region_by_region() -> None:
    assert damage_problems([REGION], [REGION]) == []
    unknown_offset = {**REGION, "offset": None}
    assert damage_problems([REGION], [unknown_offset]) == []
    assert damage_problems([{**REGION, "bytes_skipped": "341"}], [REGION]) == [
        "damage[0] bytes_skipped: expected '340', got '341'"
    ]
    assert damage_problems([{**REGION, "resumed_index": None}], [REGION]) == [
        "damage[0] resumed_index: expected '4', got None"
    ]
    assert damage_problems([REGION, REGION], [REGION]) == ["damage: expected 1 regions, got 2"]


def test_a_tolerant_answer_without_its_damage_list_breaks_the_protocol() -> None:
    answer = {"outcome": "accept", "records": [], "torn": None, "error": None}
    check_read_answer(answer)
    with pytest.raises(ShapeError, match="damage list"):
        check_read_answer(answer, tolerant=True)
    check_read_answer({**answer, "damage": [REGION]}, tolerant=True)
    with pytest.raises(ShapeError, match="bytes_skipped"):
        check_read_answer({**answer, "damage": [{**REGION, "bytes_skipped": 340}]}, tolerant=True)


def test_the_file_level_cli_runs_tolerant_and_split_reads(manifest: Manifest) -> None:
    hello = Hello("python-cli", "", "2.0", ["reader"], ["tolerant", "split"], {}, declared=False)
    globs = (
        "must.reader.tolerant.payload_bit_flip",
        "must.reader.tolerant.commit_point_inside_payload",
        "must.reader.tolerant.bad_signature",
        "must.reader.split.start_in_payload",
        "must.reader.split.equal_2_of_3",
    )
    result = run([Implementation(REFERENCE, "python-cli", "cli", hello)], Filters(case_globs=globs), manifest=manifest)
    results = result.implementations[0].results
    assert len(results) == len(globs)
    assert [(r.id, r.detail) for r in results if r.status != "passed"] == []


def _damage(manifest: Manifest, case_id: str) -> list[dict[str, object]]:
    """The damaged regions a full reader reports (an implementation-defined case resolved as a full reader's)."""
    regions = expected_outcome(manifest, case_id)["damage"]
    assert isinstance(regions, list)
    return regions
