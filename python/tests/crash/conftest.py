"""Crash-injection options and the summary of states checked.

``--full`` runs larger workloads and samples nested crashes more densely;
pass it with this folder on the command line (``pytest python/tests/crash
--full``) so that pytest loads this file before it parses options.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from .summary import CrashSummary

SUMMARY_KEY = pytest.StashKey[CrashSummary]()


def pytest_addoption(parser: pytest.Parser) -> None:
    # Another conftest may have registered --full already: then share it.
    with contextlib.suppress(ValueError):
        parser.addoption(
            "--full",
            action="store_true",
            default=False,
            help="crash injection: larger workloads, denser sampling of nested crashes (slow)",
        )


@pytest.fixture(scope="session")
def full_crash_run(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--full", default=False))


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
