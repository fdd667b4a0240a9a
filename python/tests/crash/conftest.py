"""The summary of crash states checked, and ``--full`` (the root conftest's option) as the crash tests read it:
larger workloads, nested crashes sampled more densely."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .summary import CrashSummary

SUMMARY_KEY = pytest.StashKey[CrashSummary]()


@pytest.fixture(scope="session")
def crash_summary(request: pytest.FixtureRequest) -> Iterator[CrashSummary]:
    summary = CrashSummary()
    request.config.stash[SUMMARY_KEY] = summary
    yield summary
    summary.write()
    print("\n" + "\n".join(summary.lines()))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    summary = config.stash.get(SUMMARY_KEY, None)
    if summary is None or not summary.rows:
        return
    terminalreporter.section("crash states checked")
    for line in summary.lines():
        terminalreporter.write_line(line)
