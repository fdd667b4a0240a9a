"""The runner catches what it must: broken testees, hangs, crashes, readers that write, stale expected failures."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest
from click.testing import CliRunner
from conformance_helpers import (
    BROKEN,
    REFERENCE,
    REPO,
    XFAIL,
    broken,
    expected_outcome,
    failed,
    read_cases,
)

from openbinlog_conformance import Filters, Implementation, Manifest, RunResult, conformance_group, run, write_reports
from openbinlog_conformance.client import Hello
from openbinlog_conformance.compare import resolve
from openbinlog_conformance.runner import load_xfail


def test_reference_passes_every_must_case_but_its_listed_bugs(reference_run: RunResult) -> None:
    results = reference_run.implementations[0].results
    listed = {case for impl, case in load_xfail(XFAIL) if impl == "python"}
    assert reference_run.ok
    assert [r.id for r in results if r.status in ("failed", "xpassed")] == []
    assert {r.id for r in results if r.status == "xfailed"} == listed
    assert not [r for r in results if r.status == "skipped"], "the reference declares every role and capability"


def test_reference_writes_are_read_back_by_the_reference_reader(reference_run: RunResult) -> None:
    writes = [r for r in reference_run.implementations[0].results if r.op == "write"]
    assert writes
    assert len(reference_run.interop) == len(writes)
    assert all(read.status == "passed" for read in reference_run.interop)


def test_accepting_everything_is_caught_by_every_reject_and_torn_tail_case(
    manifest: Manifest, reference_read_failures: set[str]
) -> None:
    result = run([broken("accepts_everything")], manifest=manifest)
    caught = {
        case for case in read_cases(manifest) if expected_outcome(manifest, case)["outcome"] in ("reject", "recovered")
    }
    assert len(caught) > 60
    assert set(failed(result)) == caught | (reference_read_failures & set(read_cases(manifest)))


def test_dropping_the_last_record_is_caught_by_every_case_expecting_records(
    manifest: Manifest, reference_read_failures: set[str]
) -> None:
    result = run([broken("drops_last_record")], manifest=manifest)
    caught = {case for case in read_cases(manifest) if expected_outcome(manifest, case).get("records")}
    assert set(failed(result)) == caught | (reference_read_failures & set(read_cases(manifest)))


def test_a_wrong_error_class_is_caught_by_every_reject_case(
    manifest: Manifest, reference_read_failures: set[str]
) -> None:
    result = run([broken("wrong_error_class")], manifest=manifest)
    caught = {case for case in read_cases(manifest) if expected_outcome(manifest, case)["outcome"] == "reject"}
    assert set(failed(result)) == caught | (reference_read_failures & set(read_cases(manifest)))
    assert {kind for case, kind in failed(result).items() if case in caught} == {"mismatch"}


def test_a_crashing_testee_fails_those_cases_and_is_started_again(manifest: Manifest) -> None:
    globs = ("must.reader.valid.*", "must.reader.chain.*")
    result = run([broken("crashes")], Filters(case_globs=globs), manifest=manifest)
    segment = re.compile(r"^[0-9]{8}\.dat$")
    selected = Filters(case_globs=globs).select(manifest.cases)
    many_segments = {
        case.id
        for case in selected
        if sum(bool(segment.match(name)) for name in {item["path"].split("/")[1] for item in case.raw["files"]}) >= 3
    }
    assert len(many_segments) >= 5
    assert failed(result) == dict.fromkeys(many_segments, "crash")
    assert len(result.implementations[0].results) == len(selected)
    assert result.implementations[0].error is None


def test_a_hanging_testee_is_killed_by_the_timeout(
    manifest: Manifest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid_file = tmp_path / "pids"
    monkeypatch.setenv("HANGS_PID_FILE", str(pid_file))
    hostile = {"must.reader.record.hostile_length_4gib", "must.reader.torn.hostile_length"}
    filters = Filters(case_globs=(*sorted(hostile), "must.reader.valid.*"))
    result = run([broken("hangs")], filters, manifest=manifest, timeout=3.0)
    results = result.implementations[0].results
    assert {r.id: r.kind for r in results if r.status == "failed"} == dict.fromkeys(hostile, "timeout")
    assert sum(r.status == "passed" for r in results) >= 15, "cases after a hang still run"
    pids = [int(line) for line in pid_file.read_text().split()]
    assert len(pids) == len(hostile) + 1  # started once, and again after each kill
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_a_reader_that_writes_into_the_log_is_caught(manifest: Manifest) -> None:
    result = run(
        [broken("touches_files")], Filters(case_globs=("must.reader.valid.*", "must.reader.io.*")), manifest=manifest
    )
    failures = {r.id: r.detail for r in result.implementations[0].results if r.status == "failed"}
    assert "must.reader.valid.basic" in failures
    assert all("R-2" in detail for detail in failures.values())
    assert "must.reader.io.missing_directory" not in failures  # nothing there to write into


def test_a_recovery_that_does_nothing_is_caught_wherever_there_is_something_to_do(manifest: Manifest) -> None:
    result = run([broken("recovers_nothing")], manifest=manifest)
    recover_cases = {case.id for case in manifest.cases if case.op == "recover"}
    # Logs a recovery leaves as they are: a sealed last segment whose successor this old case lists as optional,
    # a file that is no temporary file, a predecessor before a gap (W-30), a last segment that is valid on its
    # own, and a directory without segments (recovery creates none).
    nothing_to_do = {
        f"must.writer.recover.{name}"
        for name in (
            "sealed_without_successor",
            "keep_upper_case_temp_name",
            "leave_predecessor_before_gap",
            "last_segment_validated_on_its_own",
            "no_segments_creates_nothing",
        )
    }
    assert set(failed(result)) == recover_cases - nothing_to_do
    refusals = {case.id for case in manifest.cases if case.op == "recover" and not case.expected["recover"]["ok"]}
    details = {r.id: r.detail for r in result.implementations[0].results}
    assert all("recover: expected ok=False" in details[case] for case in refusals)


def test_a_writer_that_leaves_a_temporary_file_is_caught_and_its_logs_are_not_cross_read(manifest: Manifest) -> None:
    writes = Filters(case_globs=("must.writer.write.*",))
    result = run([broken("leaves_temp_file"), Implementation(REFERENCE, "python")], writes, manifest=manifest)
    write_cases = {case.id for case in writes.select(manifest.cases)}
    assert set(failed(result)) == write_cases
    assert all("temporary files left" in r.detail for r in result.implementations[0].results if r.status == "failed")
    # Only the logs that passed are read by the readers of the run (here the reference).
    assert {(read.writer, read.reader) for read in result.interop} == {("python", "python")}
    assert {read.case for read in result.interop} == write_cases


def test_a_listed_expected_failure_that_passes_fails_the_run(manifest: Manifest) -> None:
    case = "must.reader.valid.basic"
    result = run(
        [Implementation(REFERENCE, "python")],
        Filters(case_globs=(case,)),
        manifest=manifest,
        xfail={("python", case): "listed by mistake"},
    )
    assert [r.status for r in result.implementations[0].results] == ["xpassed"]
    assert not result.ok


def test_a_listed_expected_failure_that_fails_keeps_the_run_green(manifest: Manifest) -> None:
    cases = ("must.reader.valid.basic", "must.reader.valid.one_record")
    result = run(
        [broken("drops_last_record")],
        Filters(case_globs=cases),
        manifest=manifest,
        xfail={("drops_last_record", case): "known" for case in cases},
    )
    assert [r.status for r in result.implementations[0].results] == ["xfailed", "xfailed"]
    assert result.ok


def test_implementation_defined_cases_hold_a_testee_to_its_declared_choice(manifest: Manifest) -> None:
    case = next(c for c in manifest.cases if c.expected.get("outcome") == "implementation_defined")
    assert resolve(case.expected, {})[0] is None
    assert resolve(case.expected, {"finished_segment_end": "guess"})[0] is None
    full, _ = resolve(case.expected, {"finished_segment_end": "tail_walk"})
    minimal, _ = resolve(case.expected, {"finished_segment_end": "commit_point"})
    assert full is not None and full["outcome"] == "accept"
    assert minimal is not None and minimal["outcome"] == "reject"
    assert minimal["error"]["class"] == "chain_broken"


def test_the_file_level_cli_runs_reads_writes_and_recovery(manifest: Manifest) -> None:
    hello = Hello(
        "python-cli", "", "2.0", ["reader", "writer"], ["legacy_v1", "refs", "recover", "write"], {}, declared=False
    )
    globs = (
        "must.reader.ref.*_record",
        "must.reader.ref.negative_number",
        "must.reader.torn.body_partial",
        "must.reader.header.bad_signature",
        "must.writer.write.cutovers",
        "must.writer.recover.torn_body_partial",
    )
    result = run([Implementation(REFERENCE, "python-cli", "cli", hello)], Filters(case_globs=globs), manifest=manifest)
    results = result.implementations[0].results
    assert len(results) == len(Filters(case_globs=globs).select(manifest.cases))
    assert {r.op for r in results} == {"read", "write", "recover"}
    assert [r.id for r in results if r.status != "passed"] == []


def test_a_cli_exit_code_that_contradicts_the_outcome_is_a_protocol_failure(manifest: Manifest, tmp_path: Path) -> None:
    liar = tmp_path / "liar.py"
    liar.write_text(
        "import json, sys\n"
        "print(json.dumps({'outcome': 'accept', 'records': [], 'torn': None, 'error': None}))\n"
        "sys.exit(1)\n"
    )
    hello = Hello("liar", "", "2.0", ["reader"], [], {}, declared=False)
    result = run(
        [Implementation([sys.executable, str(liar)], "liar", "cli", hello)],
        Filters(case_globs=("must.reader.valid.no_segments",)),
        manifest=manifest,
    )
    (only,) = result.implementations[0].results
    assert (only.status, only.kind) == ("failed", "protocol")


def test_a_testee_that_does_not_start_fails_every_selected_case(manifest: Manifest, tmp_path: Path) -> None:
    result = run(
        [Implementation([str(tmp_path / "missing-binary")], "ghost")],
        Filters(levels=frozenset({"must"})),
        manifest=manifest,
    )
    impl = result.implementations[0]
    assert impl.error is not None
    assert {r.status for r in impl.results} == {"failed"}
    assert not result.ok


def test_reports_count_what_the_run_found(manifest: Manifest, tmp_path: Path) -> None:
    result = run([broken("drops_last_record")], Filters(case_globs=("must.reader.valid.*",)), manifest=manifest)
    paths = write_reports(result, tmp_path / "out")
    impl = result.implementations[0]
    failures = [r for r in impl.results if r.status == "failed"]
    assert failures
    data = json.loads(paths["results"].read_text())
    assert data["ok"] is False
    assert data["implementations"][0]["counts"]["must"]["failed"] == len(failures)
    suite = ElementTree.parse(paths["junit"]).getroot().find("testsuite")
    assert suite is not None
    assert int(suite.get("failures", "-1")) == len(failures)
    assert len(suite.findall("testcase")) == len(impl.results)
    markdown = paths["markdown"].read_text()
    assert all(f"`{r.id}` | FAIL" in markdown for r in failures)
    assert "<table>" in paths["html"].read_text()
    badge = json.loads((tmp_path / "out" / "badges" / "drops_last_record.json").read_text())
    assert badge["schemaVersion"] == 1
    assert badge["color"] == "red"
    assert badge["message"] == f"{len(impl.results) - len(failures)}/{len(impl.results)} must"


def test_the_command_line_exits_non_zero_on_a_must_failure(tmp_path: Path) -> None:
    runner = CliRunner()
    good = runner.invoke(
        conformance_group,
        ["run", "--impl", "python", "--case", "must.reader.valid.*", "--out", str(tmp_path / "good")],
    )
    assert good.exit_code == 0, good.output
    assert (tmp_path / "good" / "junit.xml").is_file()
    bad = runner.invoke(
        conformance_group,
        [
            "run",
            "--impl",
            f"{sys.executable} {BROKEN / 'drops_last_record.py'}",
            "--name",
            "dropper",
            "--case",
            "must.reader.valid.*",
            "--out",
            str(tmp_path / "bad"),
        ],
    )
    assert bad.exit_code == 1, bad.output
    assert "dropper: must" in bad.output


IMPLEMENTATION_DEFINED = "must.reader.*finished_segment*"


def test_a_cli_testee_declares_its_implementation_defined_choices_with_a_flag(tmp_path: Path) -> None:
    command = "cli:" + " ".join(REFERENCE)
    base = ["run", "--impl", command, "--name", "ref-cli", "--case", IMPLEMENTATION_DEFINED]
    runner = CliRunner()
    undeclared = runner.invoke(conformance_group, [*base, "--out", str(tmp_path / "a")])
    assert undeclared.exit_code == 1, undeclared.output
    assert "declared no value" in (tmp_path / "a" / "matrix.md").read_text()
    declared = runner.invoke(
        conformance_group, [*base, "--choice", "finished_segment_end=tail_walk", "--out", str(tmp_path / "b")]
    )
    assert declared.exit_code == 0, declared.output
    assert "(PASS)" in declared.output
    # The reference walks tails: declaring the minimal reader's choice makes the cases that tell them apart fail.
    wrong = runner.invoke(
        conformance_group, [*base, "--choice", "finished_segment_end=commit_point", "--out", str(tmp_path / "c")]
    )
    assert wrong.exit_code == 1, wrong.output
    unknown = runner.invoke(conformance_group, [*base, "--choice", "finished_segment_end=guess"])
    assert unknown.exit_code == 2
    assert "tail_walk" in unknown.output


def test_the_go_implementation_passes_every_must_case(manifest: Manifest) -> None:
    binary = REPO / "build" / "conformance" / "go" / "binlog-go"
    if not binary.is_file():
        pytest.skip("build/conformance/go/binlog-go is not built: run conformance/implementations/go/build.sh")
    result = run([Implementation([str(binary)], "go")], manifest=manifest, xfail=load_xfail(XFAIL))
    results = result.implementations[0].results
    assert [f"{r.id}: {r.detail}" for r in results if r.status in ("failed", "xpassed")] == []
    assert sum(r.status == "passed" for r in results) > 150


def test_the_kaitai_python_parser_passes_its_parser_cases(manifest: Manifest) -> None:
    if not (REPO / "build" / "ksy" / "python" / "binlog_v2.py").is_file():
        pytest.skip("the Kaitai parsers are not generated: run conformance/implementations/kaitai/build.sh")
    adapter = REPO / "conformance" / "implementations" / "kaitai" / "adapter.py"
    result = run([Implementation([sys.executable, str(adapter), "python"], "kaitai-python")], manifest=manifest)
    results = result.implementations[0].results
    parser_cases = {case.id for case in manifest.cases if "parser" in case.roles}
    assert {r.id for r in results if r.status != "skipped"} == parser_cases
    assert [f"{r.id}: {r.detail}" for r in results if r.status == "failed"] == []
