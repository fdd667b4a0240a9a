"""Reports of a run: results.json, JUnit XML, a Markdown and an HTML matrix, shields.io badges."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from .runner import ImplementationRun, RunResult
from .vocabulary import LEVELS

Json = dict[str, Any]
CELL = {"passed": "pass", "failed": "FAIL", "xfailed": "xfail", "xpassed": "XPASS", "skipped": "-"}
COLOUR = {"passed": "#c8f0c8", "failed": "#f4b8b8", "xfailed": "#f4e2b0", "xpassed": "#f4b8b8", "skipped": "#eeeeee"}


def to_json(result: RunResult) -> Json:
    return {
        "suite_version": result.suite_version,
        "manifest": result.manifest,
        "seconds": round(result.seconds, 2),
        "ok": result.ok,
        "implementations": [
            {
                "name": run.name,
                "command": run.command,
                "version": run.hello.version if run.hello else None,
                "spec_version": run.hello.spec_version if run.hello else None,
                "roles": run.hello.roles if run.hello else [],
                "capabilities": run.hello.capabilities if run.hello else [],
                "choices": run.hello.choices if run.hello else {},
                "error": run.error,
                "counts": run.counts(),
                "cases": [vars(item) for item in run.results],
            }
            for run in result.implementations
        ],
        "interop": [vars(item) for item in result.interop],
    }


def junit(result: RunResult) -> bytes:
    suites = ElementTree.Element("testsuites", name="binlog-conformance", time=f"{result.seconds:.2f}")
    for run in result.implementations:
        suite = ElementTree.SubElement(suites, "testsuite", name=run.name)
        counts = {"tests": 0, "failures": 0, "skipped": 0}
        for item in run.results:
            case = ElementTree.SubElement(
                suite, "testcase", classname=f"{run.name}.{item.level}", name=item.id, time=f"{item.seconds:.3f}"
            )
            counts["tests"] += 1
            if item.status in ("failed", "xpassed"):
                ElementTree.SubElement(case, "failure", message=item.kind or item.status).text = item.detail
                counts["failures"] += 1
            elif item.status in ("skipped", "xfailed"):
                ElementTree.SubElement(case, "skipped", message=item.detail[:500])
                counts["skipped"] += 1
        suite.attrib.update({key: str(value) for key, value in counts.items()})
    if result.interop:
        suite = ElementTree.SubElement(suites, "testsuite", name="interop", tests=str(len(result.interop)))
        failures = 0
        for read in result.interop:
            case = ElementTree.SubElement(
                suite, "testcase", classname=f"interop.{read.writer}", name=f"{read.case} read by {read.reader}"
            )
            if read.status in ("failed", "xpassed"):
                ElementTree.SubElement(case, "failure", message="interop").text = read.detail
                failures += 1
            elif read.status == "xfailed":
                ElementTree.SubElement(case, "skipped", message=read.detail[:500])
        suite.set("failures", str(failures))
    ElementTree.indent(suites)
    text: bytes = ElementTree.tostring(suites, encoding="utf-8", xml_declaration=True)
    return text + b"\n"


def totals(run: ImplementationRun) -> str:
    counts = run.counts()
    parts = []
    for level in LEVELS:
        row = counts[level]
        ran = row["passed"] + row["failed"] + row["xfailed"] + row["xpassed"]
        if ran or row["skipped"]:
            extra = [f"{row[key]} {key}" for key in ("xfailed", "xpassed", "skipped") if row[key]]
            parts.append(f"{level} {row['passed']}/{ran}" + (f" ({', '.join(extra)})" if extra else ""))
    return "; ".join(parts) if parts else "no cases"


def _case_ids(result: RunResult) -> list[str]:
    seen: dict[str, None] = {}
    for run in result.implementations:
        for item in run.results:
            seen.setdefault(item.id, None)
    return list(seen)


def markdown(result: RunResult) -> str:
    runs = result.implementations
    lines = [
        "# BinLog conformance results",
        "",
        f"Suite {result.suite_version}; {len(_case_ids(result))} cases; {result.seconds:.1f} s;"
        f" overall: {'PASS' if result.ok else 'FAIL'}.",
        "",
        "| implementation | version | roles | capabilities | result |",
        "|---|---|---|---|---|",
    ]
    for run in runs:
        hello = run.hello
        lines.append(
            f"| {run.name} | {hello.version if hello else ''} | {', '.join(hello.roles) if hello else ''}"
            f" | {', '.join(hello.capabilities) if hello else ''} | {run.error or totals(run)} |"
        )
    lines += ["", "## Cases", "", "| case | " + " | ".join(run.name for run in runs) + " |"]
    lines.append("|---|" + "---|" * len(runs))
    status = {(run.name, item.id): item.status for run in runs for item in run.results}
    for case_id in _case_ids(result):
        cells = [CELL.get(status.get((run.name, case_id), ""), "") for run in runs]
        lines.append(f"| `{case_id}` | " + " | ".join(cells) + " |")
    failures = [(run.name, item) for run in runs for item in run.results if item.status in ("failed", "xpassed")]
    if failures:
        lines += ["", "## Failures", ""]
        lines += [f"- **{name}** `{item.id}` ({item.kind}): {_one_line(item.detail)}" for name, item in failures]
    if result.interop:
        lines += ["", "## Producer x consumer (writer cases read by every reader)", ""]
        readers = sorted({item.reader for item in result.interop})
        lines += ["| writer | case | " + " | ".join(readers) + " |", "|---|---|" + "---|" * len(readers)]
        grid: dict[tuple[str, str], dict[str, str]] = {}
        for read in result.interop:
            grid.setdefault((read.writer, read.case), {})[read.reader] = CELL[read.status]
        for (writer, case_id), row in grid.items():
            lines.append(f"| {writer} | `{case_id}` | " + " | ".join(row.get(r, "") for r in readers) + " |")
        bad = [item for item in result.interop if item.status in ("failed", "xpassed")]
        lines += [""] + [f"- {i.reader} reading {i.writer}'s `{i.case}`: {_one_line(i.detail)}" for i in bad]
    return "\n".join(lines).rstrip() + "\n"


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text)[:400].replace("|", "\\|")


def html_page(result: RunResult) -> str:
    runs = result.implementations
    esc = html.escape
    head = "".join(f"<th>{esc(run.name)}<br><small>{esc(run.error or totals(run))}</small></th>" for run in runs)
    rows = []
    by_key = {(run.name, item.id): item for run in runs for item in run.results}
    for case_id in _case_ids(result):
        cells = []
        for run in runs:
            item = by_key.get((run.name, case_id))
            if item is None:
                cells.append("<td></td>")
                continue
            cells.append(
                f'<td style="background:{COLOUR[item.status]}" title="{esc(item.detail)}">{CELL[item.status]}</td>'
            )
        rows.append(f"<tr><td><code>{esc(case_id)}</code></td>{''.join(cells)}</tr>")
    interop = ""
    if result.interop:
        items = "".join(
            f"<tr><td>{esc(i.writer)}</td><td><code>{esc(i.case)}</code></td><td>{esc(i.reader)}</td>"
            f'<td style="background:{COLOUR[i.status]}" title="{esc(i.detail)}">{CELL[i.status]}</td></tr>'
            for i in result.interop
        )
        interop = (
            "<h2>Producer x consumer</h2><table><tr><th>writer</th><th>case</th><th>reader</th><th></th></tr>"
            f"{items}</table>"
        )
    return (
        '<!doctype html><html><head><meta charset="utf-8"><title>BinLog conformance</title>'
        "<style>body{font-family:sans-serif}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
        "padding:2px 6px;font-size:13px}th{vertical-align:bottom}</style></head><body>"
        f"<h1>BinLog conformance: {'PASS' if result.ok else 'FAIL'}</h1>"
        f"<p>Suite {esc(result.suite_version)}, {len(_case_ids(result))} cases, {result.seconds:.1f} s."
        " Hover a cell for details.</p>"
        f"<table><tr><th>case</th>{head}</tr>{''.join(rows)}</table>{interop}</body></html>\n"
    )


def badge(run: ImplementationRun) -> Json:
    """A shields.io endpoint badge: must cases passed of those run."""
    must = run.counts()["must"]
    ran = must["passed"] + must["failed"] + must["xfailed"] + must["xpassed"]
    good = not run.blocking and not run.error
    return {
        "schemaVersion": 1,
        "label": f"binlog conformance ({run.name})",
        "message": "unavailable" if run.error else f"{must['passed']}/{ran} must",
        "color": "brightgreen" if good and must["xfailed"] == 0 else "yellow" if good else "red",
    }


def overall_badge(result: RunResult) -> Json:
    failing = [run.name for run in result.implementations if run.blocking or run.error]
    return {
        "schemaVersion": 1,
        "label": "binlog conformance",
        "message": f"{len(result.implementations)} implementations pass"
        if not failing
        else f"failing: {', '.join(failing)}",
        "color": "brightgreen" if result.ok else "red",
    }


def write_reports(result: RunResult, out: Path) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "results": out / "results.json",
        "junit": out / "junit.xml",
        "markdown": out / "matrix.md",
        "html": out / "matrix.html",
        "badge": out / "badge.json",
    }
    paths["results"].write_text(json.dumps(to_json(result), indent=2) + "\n")
    paths["junit"].write_bytes(junit(result))
    paths["markdown"].write_text(markdown(result))
    paths["html"].write_text(html_page(result))
    paths["badge"].write_text(json.dumps(overall_badge(result)) + "\n")
    badges = out / "badges"
    badges.mkdir(exist_ok=True)
    for run in result.implementations:
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", run.name)
        (badges / f"{safe}.json").write_text(json.dumps(badge(run)) + "\n")
    return paths
