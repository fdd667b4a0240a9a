"""The report: a plain-text table, results.json, a Markdown table to paste, a plot, and the
report page (docs/benchmarks.md) with the machine it was measured on.

A ratio below its bar is printed as BELOW next to it, and a measurement that
could not be made is printed as NOT RUN with its reason: nothing is left out.
"""

from __future__ import annotations

import json
import math
import os
import platform
import sqlite3
from collections import defaultdict
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from openbinlog._accel import DECODER

from .logs import size_label
from .measure import FIGURE_AT_MOST, RATIO_AT_LEAST, Row
from .writes import PREALLOCATED_W1

COLUMNS = ("id", "measure", "rec", "log", "figure", "baseline", "versus", "ratio", "bar", "result")


def quantity(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit.endswith("/s"):
        for scale, suffix in ((1e6, "M"), (1e3, "k")):
            if value >= scale:
                return f"{value / scale:.3g}{suffix}/s"
        return f"{value:.3g}/s"
    return f"{value:.3g} {unit}"


def _bar_text(row: Row) -> str:
    if row.bar is None:
        return "-"
    if row.bar_kind == RATIO_AT_LEAST:
        return f">= {row.bar:g}x"
    if row.bar_kind == FIGURE_AT_MOST:
        return f"<= {row.bar:g} {row.unit}"
    return f"{row.bar:g}"


def _cells(row: Row) -> tuple[str, ...]:
    baseline_unit = row.unit
    return (
        row.id,
        row.measure,
        "-" if row.record_size is None else f"{row.record_size} B",
        "-" if row.log_size is None else size_label(row.log_size),
        quantity(row.figure, row.unit),
        quantity(row.baseline, baseline_unit),
        row.versus or "-",
        "-" if row.ratio is None else f"{row.ratio:.2f}x",
        _bar_text(row),
        row.verdict if row.status == "ok" else f"NOT RUN ({row.status.removeprefix('not run: ')})",
    )


def text_table(rows: list[Row]) -> str:
    cells = [COLUMNS, *(_cells(row) for row in rows)]
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)) for line in cells]
    lines.insert(1, "  ".join("-" * width for width in widths))
    notes = [f"{row.id} ({row.record_size} B, {_log(row)}): {row.note}" for row in rows if row.note]
    return "\n".join(lines + (["", *notes] if notes else []))


def _log(row: Row) -> str:
    return "-" if row.log_size is None else size_label(row.log_size)


def markdown_table(rows: list[Row]) -> str:
    head = "| " + " | ".join(COLUMNS) + " |"
    rule = "|" + "|".join("---" for _ in COLUMNS) + "|"
    body = ["| " + " | ".join(cell.replace("|", "\\|") for cell in _cells(row)) + " |" for row in rows]
    return "\n".join([head, rule, *body])


def _exponent(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of log(cost) against log(size): 0 is flat, 1 is linear."""
    points = [(x, y) for x, y in points if x > 0 and y > 0]
    if len({x for x, _ in points}) < 2:
        return None
    xs = [math.log(x) for x, _ in points]
    ys = [math.log(y) for _, y in points]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread


SCALING = {
    # id: (what the cost is, how it is derived from a row, which size it is plotted against)
    "R1": ("time to read the whole log", lambda row: row.log_size / row.figure, "log_size"),
    # Appends are judged relative to their baseline: the cost of a sync drifts more than any size effect.
    "W1": ("time per durable append over the bare loop's", lambda row: 1 / row.ratio, "log_size"),
    "W4": ("time per buffered append over the bare loop's", lambda row: 1 / row.ratio, "log_size"),
    "C1": ("recovery time", lambda row: row.figure, "log_size"),
    "C2": ("recovery time", lambda row: row.figure, "tail_size"),
    "M1": ("reader RSS growth", lambda row: row.figure, "log_size"),
    # A seek's median time; with the index it should stay flat, without it grow up to the segment size.
    "X1": ("time per seek by index", lambda row: 1 / row.figure, "log_size"),
    "X1.unindexed": ("time per seek by index without the .idx files", lambda row: 1 / row.figure, "log_size"),
    "X2": ("time per seek by time", lambda row: 1 / row.figure, "log_size"),
    "X2.unindexed": ("time per seek by time without the .idx files", lambda row: 1 / row.figure, "log_size"),
}


def _against_size(row: Row) -> bool:
    """Whether the row tells how a cost grows with the log: one baseline per figure, on the log of its size."""
    return "seed" not in (row.versus or "") and row.measure != PREALLOCATED_W1


def scaling_findings(rows: list[Row]) -> list[str]:
    """How each cost grows with the log size (or the tail size), as an exponent of a power law."""
    series: dict[tuple[str, int | None], list[Row]] = defaultdict(list)
    for row in rows:
        if row.id in SCALING and row.status == "ok" and row.figure and _against_size(row):
            series[(row.id, row.record_size)].append(row)
    lines = []
    for (row_id, record_size), members in sorted(series.items(), key=lambda item: (item[0][0], item[0][1] or 0)):
        what, cost, axis = SCALING[row_id]
        points = [(float(getattr(row, axis)), float(cost(row))) for row in members if getattr(row, axis)]
        exponent = _exponent(points)
        if exponent is None:
            continue
        shape = "flat" if abs(exponent) < 0.25 else "linear" if abs(exponent - 1) < 0.25 else "neither flat nor linear"
        values = ", ".join(
            f"{size_label(int(x))}: {quantity(row.figure, row.unit)}"
            + ("" if row.ratio is None else f" ({row.ratio:.2f}x)")
            for (x, _), row in zip(points, members, strict=True)
        )
        axis_name = "tail size" if axis == "tail_size" else "log size"
        lines.append(f"- {row_id} ({record_size} B): {what} scales as {axis_name}^{exponent:.2f} ({shape}); {values}")
    return lines


def write_json(rows: list[Row], path: Path) -> None:
    path.write_text(json.dumps([row.as_json() for row in rows], indent=2) + "\n")


def write_markdown(rows: list[Row], meta: dict[str, Any], path: Path) -> None:
    findings = scaling_findings(rows)
    text = [
        f"Benchmark run ({meta['mode']} mode, {meta['started']}, {meta['cores']} cores, load average at the end "
        f"{meta['load']}, {meta['seconds']:.0f} s). Medians of {meta['repeats']} interleaved runs; "
        "ratios are figure / baseline, measured side by side.",
        "",
        markdown_table(rows),
        "",
        "Cost against size:",
        "",
        *findings,
        "",
    ]
    path.write_text("\n".join(text))


def plot(rows: list[Row], path: Path) -> None:
    """Throughput against log size, and recovery time against log size and tail size."""
    figure = Figure(figsize=(13, 5.5))
    FigureCanvasAgg(figure)
    throughput, recovery = figure.subplots(1, 2)
    # One colour per measure and record size; the figure solid, its baseline dotted.
    series: dict[str, dict[str, list[tuple[int, float]]]] = defaultdict(lambda: defaultdict(list))
    baseline_names: dict[str, str] = {}
    for row in rows:
        if row.status != "ok" or row.log_size is None or row.id not in ("W1", "W4", "R1"):
            continue
        if not _against_size(row):
            continue
        label = f"{row.id} {row.record_size} B"
        series[label]["figure"].append((row.log_size, row.figure or 0))
        series[label]["baseline"].append((row.log_size, row.baseline or 0))
        baseline_names[label] = row.versus or "baseline"
    for colour, label in enumerate(sorted(series)):
        for kind, style in (("figure", "-o"), ("baseline", ":x")):
            points = sorted(series[label][kind])
            name = label if kind == "figure" else f"{label}, baseline: {baseline_names[label]}"
            throughput.plot([x / 1e6 for x, _ in points], [y for _, y in points], style, color=f"C{colour}", label=name)
    throughput.set(xscale="log", yscale="log", xlabel="log size (MB)", ylabel="operations / s")
    throughput.set_title("Throughput against log size")
    if series:
        throughput.legend(fontsize=7)
    for row_id, axis, scale in (("C1", "log_size", 1e6), ("C2", "tail_size", 1e6)):
        for record_size in sorted({row.record_size or 0 for row in rows if row.id == row_id}):
            points = sorted(
                (getattr(row, axis) / scale, row.figure or 0)
                for row in rows
                if row.id == row_id and row.record_size == record_size and row.status == "ok"
            )
            if points:
                what = "log size (MB)" if row_id == "C1" else "tail size (MB)"
                recovery.plot(
                    [x for x, _ in points],
                    [y for _, y in points],
                    "-o",
                    label=f"{row_id} {record_size} B, against {what}",
                )
    recovery.set(xscale="log", xlabel="size (MB): log size for C1, tail size for C2", ylabel="recovery time (ms)")
    recovery.set_ylim(bottom=0)
    recovery.set_title("recover() time: flat in the log size, growing with the tail")
    if recovery.lines:
        recovery.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def _proc_fields(path: str, separator: str = ":") -> dict[str, str]:
    """The ``name: value`` lines of a /proc file, first occurrence of each; empty where there is none."""
    fields: dict[str, str] = {}
    try:
        with open(path) as file:
            for line in file:
                name, found, value = line.partition(separator)
                if found:
                    fields.setdefault(name.strip(), value.strip())
    except OSError:
        pass
    return fields


def _mount(directory: Path) -> str:
    """The file system holding ``directory``: the /proc/mounts entry with the longest mount point above it."""
    target = str(directory.resolve())
    best: list[str] | None = None
    try:
        with open("/proc/mounts") as mounts:
            for line in mounts:
                fields = [field.replace("\\040", " ") for field in line.split()]
                point = fields[1].rstrip("/") + "/"
                if (target + "/").startswith(point) and (best is None or len(fields[1]) > len(best[1])):
                    best = fields
    except OSError:
        return "unknown (no /proc/mounts)"
    if best is None:
        return "unknown"
    device, point, kind, options = best[:4]
    return f"{kind} on {device} mounted at {point} ({options})"


def describe_machine(directory: Path) -> dict[str, str]:
    """What the figures depend on besides the code: for the page's reader to compare machines."""
    cpu = _proc_fields("/proc/cpuinfo")
    memory = _proc_fields("/proc/meminfo")
    model = cpu.get("model name") or platform.processor() or "unknown model"
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    cpus = f"{model}, {os.cpu_count()} logical CPUs" + ("" if usable == os.cpu_count() else f" ({usable} usable)")
    if "hypervisor" in cpu.get("flags", "").split():
        cpus += ", virtual machine"
    total_kib = memory.get("MemTotal", "").removesuffix(" kB")
    uname = platform.uname()
    return {
        "CPU": cpus,
        "memory": f"{int(total_kib) / (1 << 20):.1f} GiB" if total_kib.isdigit() else "unknown",
        "kernel": f"{uname.system} {uname.release} ({uname.machine})",
        "file system of the work directory": _mount(directory),
        "Python": f"{platform.python_implementation()} {platform.python_version()}",
        "BinLog decoder": DECODER,
        "SQLite": f"{sqlite3.sqlite_version} (Python's sqlite3)",
    }


def legend(rows: list[Row]) -> list[str]:
    """What each row id measures, from its rows' measures, baselines and notes (each said once)."""
    lines = []
    for row_id in dict.fromkeys(row.id for row in rows):
        members = [row for row in rows if row.id == row_id]
        measures = "; ".join(dict.fromkeys(row.measure for row in members))
        versus = "; ".join(dict.fromkeys(row.versus for row in members if row.versus))
        notes = "; ".join(dict.fromkeys(row.note for row in members if row.note))
        line = f"- **{row_id}**: {measures}." + (f" Versus: {versus}." if versus else "")
        lines.append(line + (f" Notes: {notes}." if notes else ""))
    return lines


def write_page(rows: list[Row], meta: dict[str, Any], machine: dict[str, str], path: Path) -> None:
    """The report page: when, where, every row with its verdict, and what the rows mean."""
    tiny = meta["mode"] == "tiny"
    text = [
        "<!-- Generated by tools/bench/bench.py: do not edit, run `make bench` to regenerate. -->",
        "",
        "# BinLog benchmarks",
        "",
        "This page is generated by `make bench` (`tools/bench/bench.py`); edits are overwritten. "
        f"Regenerate it with `make bench`; this one came from `{meta['command']}`.",
        "",
        f"Measured {meta['started']} in {meta['mode']} mode ({meta['seconds']:.0f} s, sections {meta['sections']}; "
        f"load average at the end {meta['load']}).",
        *(
            [
                "",
                "**A tiny run**: every measurement once on a 1 MB log, to check the machinery. "
                "Its figures are not measurements; do not quote them.",
            ]
            if tiny
            else []
        ),
        "",
        "## Machine",
        "",
        *(f"- {name}: {value}" for name, value in machine.items()),
        "",
        "## Results",
        "",
        "Each figure is "
        + ("one run" if meta["repeats"] == 1 else f"the median of {meta['repeats']} runs")
        + ". A figure with a baseline was measured interleaved with it, in the same run on the same machine, and "
        "only their ratio (figure / baseline) is a claim. A bar `>= Nx` is met by the ratio, a bar `<= N ms` by the "
        "figure (PASS or BELOW); rows without a bar (info) show where the time goes; NOT RUN rows say why.",
        "",
        markdown_table(rows),
        "",
        *(["## Cost against size", "", *findings, ""] if (findings := scaling_findings(rows)) else []),
        "## What the rows mean",
        "",
        *legend(rows),
        "",
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(text))
