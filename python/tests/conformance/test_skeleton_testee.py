"""The C skeleton testee (conformance/skeleton/c): it builds, passes its README's first case and every
case that applies to it, and never breaks the session protocol."""

from __future__ import annotations

import fnmatch
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conformance_helpers import MANIFEST, REPO

from openbinlog_conformance import Implementation, Manifest, RunResult, load, run
from openbinlog_conformance.manifest import in_spec_version

SKELETON = REPO / "conformance" / "skeleton" / "c"
README = SKELETON / "README.md"
CASE_ID = re.compile(r"\b(?:must|should|may)\.[a-z_]+\.[a-z0-9_]+\.[a-z0-9_*]+")
UNSUPPORTED = {"class": "unsupported_operation", "log": None, "offset": None, "index": None}


def first_case() -> str:
    """The case of the README's "Your first passing case" section: the one its first run command names."""
    section = README.read_text().split("## Your first passing case in 15 minutes", 1)[1]
    match = re.search(r"binlog conformance run [^\n]*--case (\S+)", section)
    assert match, "the README's first-case section runs no single case"
    return match.group(1)


@pytest.fixture(scope="module")
def skeleton(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The skeleton compiled with cc and the flags of its Makefile, outside the repository."""
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler: `cc` is not on PATH")
    flags = re.search(r"^CFLAGS = (.*)$", (SKELETON / "Makefile").read_text(), re.MULTILINE)
    assert flags, "the Makefile sets no CFLAGS"
    assert {"-std=c11", "-Wall", "-Wextra", "-Werror"} <= set(flags.group(1).split())
    binary = tmp_path_factory.mktemp("skeleton") / "binlog-skeleton"
    built = subprocess.run(
        [cc, *flags.group(1).split(), "-o", str(binary), str(SKELETON / "binlog_skeleton.c")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, f"the skeleton does not compile:\n{built.stderr}"
    return binary


@pytest.fixture(scope="module")
def skeleton_run(skeleton: Path, manifest: Manifest) -> RunResult:
    return run([Implementation([str(skeleton)], "skeleton")], manifest=manifest)


def statuses(result: RunResult) -> dict[str, str]:
    return {r.id: r.status for r in result.implementations[0].results}


def test_the_hello_declares_a_minimal_reader_and_nothing_more(skeleton_run: RunResult) -> None:
    hello = skeleton_run.implementations[0].hello
    assert hello is not None
    assert (hello.spec_version, hello.roles, hello.capabilities) == ("2.0", ["reader"], [])
    assert hello.choices == {"finished_segment_end": "commit_point"}


def test_the_readme_names_cases_that_exist() -> None:
    ids = {case.id for case in load(MANIFEST).cases}
    named = set(CASE_ID.findall(README.read_text()))
    assert first_case() in ids
    assert named, "the README names no case"
    assert [name for name in sorted(named) if not fnmatch.filter(ids, name)] == []


def test_the_readme_first_case_passes(skeleton_run: RunResult) -> None:
    assert statuses(skeleton_run)[first_case()] == "passed"


def test_every_valid_log_it_reads_passes(skeleton_run: RunResult, manifest: Manifest) -> None:
    status = statuses(skeleton_run)
    valid = {case.id for case in manifest.cases if case.id.startswith("must.reader.valid.") and not case.requires}
    passed = {case for case in valid if status[case] == "passed"}
    assert first_case() in passed
    assert passed == valid


def test_every_case_that_applies_passes_and_no_other_runs(skeleton_run: RunResult, manifest: Manifest) -> None:
    """The README's claim: a reader without capabilities passes all of its cases (the run's exit code 0)."""
    results = skeleton_run.implementations[0].results
    broken = {r.id: r.kind for r in results if r.kind in ("protocol", "crash", "timeout")}
    assert broken == {}, "the skeleton broke the session protocol"
    assert {r.id: r.detail for r in results if r.status not in ("passed", "skipped")} == {}
    assert skeleton_run.ok
    declared = skeleton_run.implementations[0].hello
    assert declared is not None
    # The cases of the spec version it declares (2.0): those of the sparse index (2.1) are not given to it.
    applies = {
        case.id
        for case in manifest.cases
        if "reader" in case.roles and not case.requires and in_spec_version(case, declared.spec_version)
    }
    ran = {r.id for r in results if r.status != "skipped"}
    assert ran == applies
    assert len(ran) > 100


def session(skeleton: Path, requests: list[str]) -> tuple[int, list[dict[str, Any]]]:
    """Send the request lines, return the exit code and every answer line."""
    done = subprocess.run(
        [str(skeleton), "session"],
        input="".join(f"{line}\n" for line in requests),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.returncode, [json.loads(line) for line in done.stdout.splitlines()]


def test_requests_it_cannot_serve_are_unsupported_operations(skeleton: Path) -> None:
    log = str(REPO / "fixtures" / "two_records_tv9")
    requests = [
        json.dumps({"op": "hello", "suite_version": "2.0.2"}),
        json.dumps({"op": "read", "path": log, "after": "1:256:1"}),
        json.dumps({"op": "read", "path": log, "tolerant": True}),
        json.dumps({"op": "read", "path": log, "log": 1, "start": "256", "stop": "301"}),
        json.dumps({"op": "write", "path": "/nonexistent", "records": [{"payload": "00", "asqn": "-1"}]}),
        json.dumps({"op": "recover", "path": log}),
        json.dumps({"op": "no_such_operation"}),
        "",
        json.dumps({"op": "read", "path": log}),
        json.dumps({"op": "bye"}),
        json.dumps({"op": "read", "path": log}),
    ]
    code, answers = session(skeleton, requests)
    assert code == 0
    assert len(answers) == 9, "one answer per request, none after bye, none for an empty line"
    assert answers[0]["ok"] is True
    for answer in answers[1:7]:
        assert answer["ok"] is False
        assert {key: answer["error"][key] for key in UNSUPPORTED} == UNSUPPORTED
    assert answers[7]["outcome"] == "accept"
    assert [record["payload"] for record in answers[7]["records"]] == ["68656c6c6f", "010203"]
    assert answers[8] == {"ok": True}


def test_the_end_of_input_ends_the_session(skeleton: Path) -> None:
    code, answers = session(skeleton, [json.dumps({"op": "hello", "suite_version": "2.0.2"})])
    assert (code, len(answers)) == (0, 1)


@pytest.mark.parametrize(
    ("case_id", "exit_code"),
    [
        ("must.reader.valid.two_records_tv9", 0),
        ("must.reader.torn.unpublished_record", 2),
        ("must.reader.record.payload_bit_flip", 1),
    ],
)
def test_the_read_command_exits_by_outcome(
    skeleton: Path, manifest: Manifest, tmp_path: Path, case_id: str, exit_code: int
) -> None:
    case = next(case for case in manifest.cases if case.id == case_id)
    assert case.fixture_dir is not None
    shutil.copytree(case.fixture_dir, tmp_path / "log")
    done = subprocess.run(
        [str(skeleton), "read", str(tmp_path / "log")], capture_output=True, text=True, timeout=60, check=False
    )
    assert (done.returncode, json.loads(done.stdout)["outcome"]) == (exit_code, case.expected["outcome"])
