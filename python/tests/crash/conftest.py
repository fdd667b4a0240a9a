"""The summary of crash states checked, and ``--full`` (the root conftest's option) as the crash tests read it:
larger workloads, nested crashes sampled more densely."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from openbinlog import _accel

from .summary import CrashSummary

SUMMARY_KEY = pytest.StashKey[CrashSummary]()


@pytest.fixture(scope="session")
def crash_summary(request: pytest.FixtureRequest) -> Iterator[CrashSummary]:
    summary = CrashSummary()
    request.config.stash[SUMMARY_KEY] = summary
    yield summary
    summary.write()
    print("\n" + "\n".join(summary.lines()))


@pytest.fixture(params=["compiled", "pure"])
def batch_code(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The batch of a writer that shares its syncs (spec 6.8) in compiled code (``_accel.shared_write``, with a
    file system object of the tests: through its calls) or in Python, the reference. Processes forked by the
    test run what it patched."""
    if request.param == "pure":
        monkeypatch.setattr(_accel, "shared_write", None)
        monkeypatch.setattr(_accel, "shared_publish", None)
    elif _accel.shared_write is None or _accel.shared_publish is None:
        pytest.skip(f"the compiled accelerator is not used here: {_accel.DECODER}")
    return str(request.param)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    summary = config.stash.get(SUMMARY_KEY, None)
    if summary is None or not summary.rows:
        return
    terminalreporter.section("crash states checked")
    for line in summary.lines():
        terminalreporter.write_line(line)
