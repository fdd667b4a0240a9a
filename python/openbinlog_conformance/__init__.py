"""The BinLog conformance suite runner (spec/conformance.md).

``run(impls, filters)`` runs the cases of ``conformance/manifest.json``
against testees that speak the testee protocol and returns a ``RunResult``;
``write_reports`` turns it into results.json, JUnit XML, Markdown and HTML
matrices and badges; ``conformance_group`` is the ``binlog conformance``
command line.
"""

from .cli import conformance_group
from .client import Hello, TesteeFailure
from .manifest import Case, Filters, Manifest, load
from .report import write_reports
from .runner import CaseResult, Implementation, ImplementationRun, InteropResult, RunResult, load_xfail, run
from .vocabulary import SPEC_VERSION, SUITE_VERSION

__all__ = [
    "SPEC_VERSION",
    "SUITE_VERSION",
    "Case",
    "CaseResult",
    "Filters",
    "Hello",
    "Implementation",
    "ImplementationRun",
    "InteropResult",
    "Manifest",
    "RunResult",
    "TesteeFailure",
    "conformance_group",
    "load",
    "load_xfail",
    "run",
    "write_reports",
]
