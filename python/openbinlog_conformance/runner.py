"""Run the conformance cases against implementations: ``run(impls, filters) -> RunResult``.

For each implementation the runner starts the testee once (a session) and
sends it every case that applies to what it declared in its hello: its roles,
its capabilities and the spec version it implements. Reader cases read a
private copy of a fixture; writer cases let the testee write or recover a log
that the reference then reads and inspects. Afterwards every reader reads
every log the writers wrote (the producer x consumer matrix).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openbinlog import Writer

from . import canonical, compare, logcheck, reference
from .client import CliTestee, Hello, SessionTestee, TesteeFailure
from .manifest import Case, Filters, Manifest, default_manifest, in_spec_version, load
from .vocabulary import LEVELS, SUITE_VERSION, UNSUPPORTED_OPERATION

Json = dict[str, Any]
STATUSES = ("passed", "failed", "xfailed", "xpassed", "skipped")
APPENDED_AFTER_RECOVERY = b"appended after recovery"


@dataclass
class Implementation:
    """How to start one testee. ``hello`` is required for the file-level CLI (it has no hello)."""

    command: list[str]
    name: str | None = None
    protocol: str = "session"
    hello: Hello | None = None
    cwd: str | None = None

    def testee(self) -> SessionTestee | CliTestee:
        if self.protocol == "cli":
            if self.hello is None:
                raise ValueError("a CLI testee needs its roles and capabilities declared")
            return CliTestee(self.command, self.hello, cwd=self.cwd)
        return SessionTestee(self.command, cwd=self.cwd)


@dataclass
class CaseResult:
    id: str
    level: str
    op: str
    status: str
    detail: str = ""
    kind: str = ""  # mismatch, crash, timeout, protocol, unavailable, or why it was skipped
    seconds: float = 0.0
    profile: str | None = None


@dataclass
class ImplementationRun:
    name: str
    command: list[str]
    hello: Hello | None
    error: str | None
    results: list[CaseResult] = field(default_factory=list)

    def counts(self) -> dict[str, dict[str, int]]:
        table = {level: dict.fromkeys(STATUSES, 0) for level in LEVELS}
        for result in self.results:
            table[result.level][result.status] += 1
        return table

    @property
    def blocking(self) -> list[CaseResult]:
        """What fails the run: a must case that failed, or any listed expected failure that passed."""
        return [r for r in self.results if (r.status == "failed" and r.level == "must") or r.status == "xpassed"]


@dataclass
class InteropResult:
    writer: str
    reader: str
    case: str
    level: str
    status: str
    detail: str = ""


@dataclass
class RunResult:
    suite_version: str
    manifest: str
    seconds: float
    implementations: list[ImplementationRun]
    interop: list[InteropResult]

    @property
    def ok(self) -> bool:
        return not any(run.blocking or run.error for run in self.implementations) and not any(
            (item.status == "failed" and item.level == "must") or item.status == "xpassed" for item in self.interop
        )


@dataclass
class _Output:
    """A log a writer case left behind, for every reader to read."""

    writer: str
    case: Case
    path: Path


class _Session:
    """A started testee that is started again after it crashes or hangs."""

    def __init__(self, impl: Implementation, hello_timeout: float) -> None:
        self.testee = impl.testee()
        self.hello_timeout = hello_timeout
        self.hello = self.testee.start(SUITE_VERSION, hello_timeout)

    def restart(self) -> None:
        self.hello = self.testee.start(SUITE_VERSION, self.hello_timeout)

    def close(self) -> None:
        self.testee.close()


def load_xfail(path: str | Path) -> dict[tuple[str, str], str]:
    """``IMPLEMENTATION CASE_ID  # reason`` per line; ``*`` matches every implementation.

    A producer x consumer read is listed as ``READER CASE_ID@WRITER`` (``@*``: any writer).
    """
    entries = {}
    for number, line in enumerate(Path(path).read_text().splitlines(), start=1):
        text, _, reason = line.partition("#")
        if not text.strip():
            continue
        parts = text.split()
        if len(parts) != 2:
            raise ValueError(f"{path}:{number}: expected 'IMPLEMENTATION CASE_ID  # reason'")
        entries[(parts[0], parts[1])] = reason.strip()
    return entries


def run(
    impls: Iterable[Implementation],
    filters: Filters | None = None,
    *,
    manifest: Manifest | str | Path | None = None,
    timeout: float = 10.0,
    hello_timeout: float = 60.0,
    xfail: dict[tuple[str, str], str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> RunResult:
    """Run the selected cases against every implementation; never raises for a testee's misbehaviour."""
    started = time.monotonic()
    if not isinstance(manifest, Manifest):
        manifest = load(manifest or default_manifest())
    cases = (filters or Filters()).select(manifest.cases)
    spec_version = (filters or Filters()).spec_version
    runs: list[ImplementationRun] = []
    outputs: list[_Output] = []
    readers: list[tuple[Implementation, str]] = []
    with tempfile.TemporaryDirectory(prefix="binlog-conformance-") as scratch:
        for number, impl in enumerate(impls):
            work = Path(scratch, f"impl-{number}")
            work.mkdir()
            result, written = _run_implementation(
                impl,
                cases=cases,
                work=work,
                timeout=timeout,
                hello_timeout=hello_timeout,
                xfail=xfail or {},
                spec_version=spec_version,
                progress=progress,
            )
            runs.append(result)
            outputs += written
            if result.hello is not None and {"reader", "parser"} & set(result.hello.roles):
                readers.append((impl, result.name))
        interop = _interop(
            readers,
            outputs=outputs,
            scratch=Path(scratch),
            timeout=timeout,
            hello_timeout=hello_timeout,
            xfail=xfail or {},
            progress=progress,
        )
    return RunResult(SUITE_VERSION, str(manifest.path), time.monotonic() - started, runs, interop)


def _applicability(case: Case, hello: Hello, spec_version: str) -> tuple[str | None, str | None]:
    """(profile, None) when the case applies to the testee, else (None, why not)."""
    if not in_spec_version(case, spec_version):
        return None, f"not part of spec version {spec_version}"
    if case.op == "read":
        if "reader" in case.roles and "reader" in hello.roles:
            profile = compare.READER
        elif "parser" in case.roles and "parser" in hello.roles:
            profile = compare.PARSER
        else:
            return None, f"role {'/'.join(r for r in case.roles if r != 'writer')} not declared"
    else:
        if "writer" not in hello.roles:
            return None, "role writer not declared"
        profile = "writer"
    missing = [cap for cap in (*case.requires,) if cap not in hello.capabilities]
    if missing:
        return None, f"capability {', '.join(missing)} not declared"
    return profile, None


def _run_implementation(
    impl: Implementation,
    *,
    cases: list[Case],
    work: Path,
    timeout: float,
    hello_timeout: float,
    xfail: dict[tuple[str, str], str],
    spec_version: str | None,
    progress: Callable[[str], None] | None,
) -> tuple[ImplementationRun, list[_Output]]:
    label = impl.name or " ".join(impl.command)
    try:
        session = _Session(impl, hello_timeout)
    except TesteeFailure as exc:
        failed = [CaseResult(case.id, case.level, case.op, "failed", str(exc), "unavailable") for case in cases]
        return ImplementationRun(label, impl.command, None, f"the testee did not start: {exc}", failed), []
    name = impl.name or session.hello.name
    version = spec_version or session.hello.spec_version
    run_result = ImplementationRun(name, impl.command, session.hello, None)
    outputs: list[_Output] = []
    unavailable: str | None = None
    for number, case in enumerate(cases):
        if unavailable is not None:
            run_result.results.append(CaseResult(case.id, case.level, case.op, "failed", unavailable, "unavailable"))
            continue
        profile, why_not = _applicability(case, session.hello, version)
        if profile is None:
            run_result.results.append(CaseResult(case.id, case.level, case.op, "skipped", why_not or "", "skipped"))
            continue
        place = work / str(number)
        place.mkdir()
        began = time.monotonic()
        kind = "mismatch"
        try:
            problems, output = _execute(case, session, profile, place, timeout)
        except _NotSupported as exc:
            shutil.rmtree(place, ignore_errors=True)
            run_result.results.append(
                CaseResult(
                    case.id, case.level, case.op, "skipped", f"the testee does not support this {exc}", "skipped"
                )
            )
            continue
        except TesteeFailure as exc:
            problems, output, kind = [str(exc)], None, exc.kind
            try:
                session.restart()
            except TesteeFailure as again:
                unavailable = f"the testee did not start again after {exc.kind}: {again}"
        result = CaseResult(
            case.id,
            case.level,
            case.op,
            "failed" if problems else "passed",
            "; ".join(problems),
            kind if problems else "",
            round(time.monotonic() - began, 4),
            profile,
        )
        _apply_xfail(result, name, xfail, case.id)
        run_result.results.append(result)
        if output is not None and not problems:
            outputs.append(_Output(name, case, output))
        else:
            shutil.rmtree(place, ignore_errors=True)
        if progress is not None:
            progress(f"{name} {result.status:8} {case.id}")
    session.close()
    return run_result, outputs


def _apply_xfail(result: CaseResult | InteropResult, name: str, xfail: dict[tuple[str, str], str], key: str) -> None:
    reason = next((xfail[k] for k in ((name, key), ("*", key)) if k in xfail), None)
    if reason is None and isinstance(result, InteropResult):
        reason = next((xfail[k] for k in ((name, f"{result.case}@*"), ("*", f"{result.case}@*")) if k in xfail), None)
    if reason is None:
        return
    if result.status == "failed":
        result.status = "xfailed"
        result.detail = f"expected failure ({reason}): {result.detail}"
    elif result.status == "passed":
        result.status = "xpassed"
        result.detail = f"listed as an expected failure ({reason}) but passed: remove it from the list"


def _execute(case: Case, session: _Session, profile: str, place: Path, timeout: float) -> tuple[list[str], Path | None]:
    if case.op == "read":
        return _read_case(case, session, profile, place, timeout), None
    if case.op == "write":
        return _write_case(case, session, place, timeout)
    return _recover_case(case, session, place, timeout), None


def _copy_fixture(case: Case, place: Path) -> Path:
    assert case.fixture_dir is not None
    target = place / "log"
    shutil.copytree(case.fixture_dir, target, symlinks=True)
    return target


class _NotSupported(Exception):
    """A testee without a hello (file-level CLI) said it does not support a case's input."""


def _unsupported(answer: Json, what: str, session: _Session, case: Case | None) -> list[str]:
    error = answer.get("error")
    if answer.get("ok") is False and isinstance(error, dict) and error.get("class") == UNSUPPORTED_OPERATION:
        if not session.hello.declared and case is not None and (case.requires or case.op != "read"):
            raise _NotSupported(what)
        return [f"answered {UNSUPPORTED_OPERATION} to a {what} it declared it supports"]
    return []


# The members of a read operation that say how to read: after a ref, at a ref, from an index or a time,
# tolerantly, one split, or planned splits.
READ_OPTIONS = ("after", "after_binary", "at", "from_index", "since_us", "tolerant", "log", "start", "stop", "parts")


def read_and_compare(
    session: _Session,
    path: Path,
    *,
    options: Json,
    expected: Json,
    profile: str,
    timeout: float,
    case: Case | None = None,
) -> list[str]:
    """Send one read, check the answer's shape, compare it, and check the files were left alone (R-2)."""
    before = logcheck.digest(str(path)) if path.exists() else {}
    request: Json = {"op": "read", "path": str(path), **options}
    answer = session.testee.request(request, timeout)
    problems = _unsupported(answer, "read", session, case)
    if problems:
        return problems
    if answer.get("ok") is not True:
        return [f"read answer not ok: {answer}"]
    try:
        canonical.check_read_answer(answer, parser=profile == compare.PARSER, tolerant=options.get("tolerant") is True)
    except canonical.ShapeError as exc:
        return [f"protocol: {exc}"]
    resolved, why = compare.resolve(expected, session.hello.choices)
    if resolved is None:
        return [why or "no expectation applies"]
    problems = compare.read_problems(answer, resolved, profile)
    if path.exists() and logcheck.digest(str(path)) != before:
        problems.append("R-2: the reader changed files of the log directory")
    return problems


def _read_case(case: Case, session: _Session, profile: str, place: Path, timeout: float) -> list[str]:
    log = _copy_fixture(case, place)
    path = log / case.operation["path"] if "path" in case.operation else log
    return read_and_compare(
        session,
        path,
        options={key: value for key, value in case.operation.items() if key in READ_OPTIONS},
        expected=case.expected,
        profile=profile,
        timeout=timeout,
        case=case,
    )


def _status_problems(answer: Json, expected: Json, what: str, session: _Session, case: Case) -> list[str]:
    problems = _unsupported(answer, what, session, case)
    if problems:
        return problems
    try:
        canonical.check_status_answer(answer)
    except canonical.ShapeError as exc:
        return [f"protocol: {exc}"]
    if answer["ok"] != expected["ok"]:
        detail = answer.get("error") if not answer["ok"] else "ok"
        return [f"{what}: expected ok={expected['ok']}, got {detail}"]
    return compare.error_problems(answer.get("error"), expected["error"], f"{what} error")


def _reference_read(path: Path, expected: Json) -> tuple[list[str], Json]:
    answer = reference.read_log(str(path))
    return [f"read back by the reference: {p}" for p in compare.read_problems(answer, expected)], answer


def _write_case(case: Case, session: _Session, place: Path, timeout: float) -> tuple[list[str], Path | None]:
    path = place / "log"
    spec = {key: case.operation[key] for key in ("records", "cutover_before", "options")}
    answer = session.testee.request({"op": "write", "path": str(path), **spec}, timeout)
    problems = _status_problems(answer, case.expected["write"], "write", session, case)
    if problems or not path.is_dir():
        return problems or ["write: no log directory was created"], None
    read_problems, read_answer = _reference_read(path, case.expected["then"])
    problems += read_problems
    problems += logcheck.written_log_problems(str(path), read_answer["records"])
    problems += logcheck.segment_problems(str(path), case.expected["segments"], case.expected["optional_segments"])
    return problems, path


def _recover_case(case: Case, session: _Session, place: Path, timeout: float) -> list[str]:
    path = _copy_fixture(case, place)
    expected = case.expected
    before = logcheck.digest(str(path), skip=("LOCK",))
    answer = session.testee.request({"op": "recover", "path": str(path)}, timeout)
    problems = _status_problems(answer, expected["recover"], "recover", session, case)
    after = logcheck.digest(str(path), skip=("LOCK",))
    if expected["unchanged"] and after != before:
        what = "refused" if not expected["recover"]["ok"] else "had nothing to change"
        problems.append(f"W-24/W-37: a recovery that {what} changed files of the log")
    problems += logcheck.foreign_file_problems(before, after)
    if problems or not expected["recover"]["ok"] or expected["then"] is None:
        return problems
    problems += _reference_read(path, expected["then"])[0]
    problems += logcheck.directory_problems(str(path))
    problems += logcheck.segment_problems(str(path), expected["segments"], expected["optional_segments"])
    if problems:
        return problems
    settled = logcheck.digest(str(path))
    again = session.testee.request({"op": "recover", "path": str(path)}, timeout)
    if again.get("ok") is not True or logcheck.digest(str(path)) != settled:
        return ["recovery is not idempotent: running it again changed the log or failed"]
    return _append_after_recovery(path, expected["then"]["records"])


def _append_after_recovery(path: Path, records: list[Json]) -> list[str]:
    """The reference appends to the recovered log and reads it all back (appending after recovery works)."""
    try:
        with Writer(path) as writer:
            writer.append(APPENDED_AFTER_RECOVERY)
    except Exception as exc:  # the reference refusing the testee's log is the finding
        return [f"the reference writer cannot append after this recovery: {exc}"]
    answer = reference.read_log(str(path))
    got = answer["records"]
    if answer["outcome"] != "accept" or len(got) != len(records) + 1:
        return [f"after appending to the recovered log the reference read {answer['outcome']} with {len(got)} records"]
    if bytes.fromhex(got[-1]["payload"]) != APPENDED_AFTER_RECOVERY:
        return ["the record appended after recovery did not come back last"]
    return []


def _interop(
    readers: list[tuple[Implementation, str]],
    *,
    outputs: list[_Output],
    scratch: Path,
    timeout: float,
    hello_timeout: float,
    xfail: dict[tuple[str, str], str],
    progress: Callable[[str], None] | None,
) -> list[InteropResult]:
    """Every reader reads every log a writer case wrote (on a copy), against the case's expected records."""
    results: list[InteropResult] = []
    if not outputs:
        return results
    for impl, name in readers:
        try:
            session = _Session(impl, hello_timeout)
        except TesteeFailure as exc:
            results += [
                InteropResult(out.writer, name, out.case.id, out.case.level, "failed", f"did not start: {exc}")
                for out in outputs
            ]
            continue
        profile = compare.READER if "reader" in session.hello.roles else compare.PARSER
        unavailable = ""
        for number, out in enumerate(outputs):
            copy = scratch / f"interop-{name}-{number}"
            shutil.copytree(out.path, copy)
            if unavailable:
                problems = [unavailable]
            else:
                try:
                    problems = read_and_compare(
                        session, copy, options={}, expected=out.case.expected["then"], profile=profile, timeout=timeout
                    )
                except TesteeFailure as exc:
                    problems = [str(exc)]
                    try:
                        session.restart()
                    except TesteeFailure as again:
                        unavailable = f"the testee did not start again: {again}"
            status = "failed" if problems else "passed"
            item = InteropResult(out.writer, name, out.case.id, out.case.level, status, "; ".join(problems))
            _apply_xfail(item, name, xfail, f"{out.case.id}@{out.writer}")
            results.append(item)
            shutil.rmtree(copy, ignore_errors=True)
            if progress is not None:
                progress(f"{name} {item.status:8} reads {out.writer}'s {out.case.id}")
        session.close()
    return results
