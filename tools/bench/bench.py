#!/usr/bin/env python3
"""Measure BinLog against the bars of the design brief, each figure side by side with its baseline.

    tools/bench/bench            # default mode: 10 MB and 100 MB logs (a few minutes)
    tools/bench/bench --full     # adds 1 GB and 2 GB logs and the reader's memory on 2 GB
    tools/bench/bench --tiny     # every measurement once on a 1 MB log (the smoke test's mode)
    tools/bench/bench --only seeks   # one section (or several, comma-separated) on the default logs

(``tools/bench/bench`` runs this script with the repository's virtual environment.)

Writes build/bench/results.json, README-table.md and throughput-recovery.png,
the report page docs/benchmarks.md (beside the results with ``--out``), and
prints the table. Logs are built in build/bench/work on the repository's
file system and removed afterwards. The exit status is 0 whatever the
verdicts (``--strict`` makes a BELOW fail the run).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench_lib.follower import follow_worker, measure_follower
from bench_lib.logs import BuiltLog, build_log, size_label
from bench_lib.measure import Row
from bench_lib.plan import PLANS, Plan
from bench_lib.reads import measure_memory, measure_reads, read_memory_worker
from bench_lib.recovery import measure_recovery
from bench_lib.report import describe_machine, plot, text_table, write_json, write_markdown, write_page
from bench_lib.seeks import measure_seeks
from bench_lib.spark import measure_spark, spark_first_worker, spark_worker
from bench_lib.sqlite import measure_sqlite, sqlite_append_worker
from bench_lib.writes import append_worker, bare_append_worker, measure_writes, protocol_append_worker

REPO = Path(__file__).resolve().parents[2]

SECTIONS = ("reads", "seeks", "spark", "memory", "writes", "recovery", "follower", "sqlite")
WORKERS: dict[str, Callable[[dict[str, Any]], None]] = {
    "append": append_worker,
    "bare_append": bare_append_worker,
    "protocol_append": protocol_append_worker,
    "follow": follow_worker,
    "read_memory": read_memory_worker,
    "spark": spark_worker,
    "spark_first": spark_first_worker,
    "sqlite_append": sqlite_append_worker,
}
ORDER = (
    "W1",
    "W1.space",
    "W1.ceiling",
    "W1.exclusive",
    "W2",
    "W2.floor",
    "W2.exclusive",
    "W3",
    "W3.floor",
    "W3.ceiling",
    "W4",
    "W4.floor",
    "W4.encode",
    "W4.exclusive",
    "W5",
    "W6",
    "R1",
    "R1.codec",
    "R1.floor",
    "R2",
    "R2.parquet",
    "R2.jvm",
    "R3",
    "R3.ceiling",
    "R4",
    "R4.ceiling",
    "R4.local2",
    "R4.json",
    "R4.json.local2",
    "R4.binaryFile",
    "R4.binaryFile.local2",
    "R4.jvm",
    "R4.jvm.local2",
    "R5",
    "R5.json",
    "R5.binaryFile",
    "R5.jvm",
    "R5.floor",
    "X1",
    "X1.unindexed",
    "X2",
    "X2.unindexed",
    "X3",
    "F1",
    "F1.p99",
    "M1",
    "C1",
    "C2",
    "S1",
    "S1.exclusive",
    "S1.ceiling",
    "S2",
    "S2.exclusive",
    "S3",
    "S4",
    "S4.exclusive",
    "S5",
    "S6",
    "S6.ceiling",
)


def progress(message: str, started: float) -> None:
    print(f"[{time.monotonic() - started:6.1f} s] {message}", file=sys.stderr, flush=True)


def run(plan: Plan, out: Path, sections: set[str], skip_spark: str | None) -> tuple[list[Row], float]:
    started = time.monotonic()
    work = out / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    rows: list[Row] = []
    try:
        logs: list[BuiltLog] = []
        for record_size in plan.record_sizes:
            for log_size in plan.log_sizes:
                progress(f"building a {size_label(log_size)} log of {record_size} B records", started)
                logs.append(
                    build_log(
                        work / f"log-{record_size}-{log_size}",
                        record_size=record_size,
                        log_size=log_size,
                        segment_bytes=plan.segment_bytes,
                    )
                )
        reader_rates: dict[str, float] = {}
        reader_runs: dict[str, list[float]] = {}
        if "reads" in sections or "spark" in sections:
            for log in logs:
                progress(f"R1 on {log.path.name}", started)
                found = measure_reads(log, plan)
                reader_rates[str(log.path)] = found[0].figure or 0.0
                reader_runs[str(log.path)] = found[0].runs
                rows.extend(found if "reads" in sections else [])
        if "seeks" in sections:
            # Before the writes, on the logs as built: the full reads R1 timed are those of the same logs.
            for log in logs:
                progress(f"X1, X2: seeks on {log.path.name}, indexes built and removed", started)
                rows.extend(
                    measure_seeks(
                        log, seeks=plan.seeks, repeats=plan.repeats, reader_runs=reader_runs.get(str(log.path))
                    )
                )
        if "spark" in sections:
            progress("R2 to R5: Spark on local[1] and local[2], beside Parquet, JSON lines and binaryFile", started)
            rows.extend(measure_spark(logs, reader_rates, plan.repeats, skip_spark))
        if "memory" in sections:
            for log in logs:
                progress(f"M1 on {log.path.name}", started)
                rows.append(measure_memory(log))
        if "sqlite" in sections:
            # Before the writes: S5 reads the R1 log as built. The appends, like C2, on the smallest logs only.
            for log in logs:
                appends = log.log_size == min(plan.log_sizes)
                progress(f"{'S1 to S6' if appends else 'S5'}: SQLite side by side on {log.path.name}", started)
                rows.extend(measure_sqlite(log, plan, work / "scratch", appends=appends))
        if "writes" in sections:
            for log in logs:
                progress(f"W1 to W6 on {log.path.name}", started)
                rows.extend(measure_writes(log, plan, work / "scratch"))
        if "recovery" in sections:
            for log in logs:
                progress(f"C1 on {log.path.name}", started)
                rows.append(
                    measure_recovery(
                        log.path,
                        row_id="C1",
                        record_size=log.record_size,
                        log_size=log.log_size,
                        tail=plan.recovery_tail,
                        repeats=plan.repeats,
                    )
                )
            smallest = logs[0]
            for tail in plan.tail_sizes:
                progress(f"C2 with a {size_label(tail)} tail", started)
                rows.append(
                    measure_recovery(
                        smallest.path,
                        row_id="C2",
                        record_size=smallest.record_size,
                        log_size=smallest.log_size,
                        tail=tail,
                        repeats=plan.repeats,
                    )
                )
        if "follower" in sections:
            progress("F1: follower wake-up", started)
            rows.extend(measure_follower(work / "follower", plan.follower_commits))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rows.sort(key=lambda row: (ORDER.index(row.id), row.record_size or 0, row.log_size or 0, row.tail_size or 0))
    return rows, time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    if arguments[:1] == ["--worker"]:
        WORKERS[arguments[1]](json.loads(arguments[2]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--full", action="store_true", help="add 1 GB and 2 GB logs")
    size.add_argument("--tiny", action="store_true", help="a 1 MB log, one run each, no Spark")
    parser.add_argument("--out", type=Path, help="where results go (default build/bench)")
    parser.add_argument("--page", type=Path, help="the report page (docs/benchmarks.md; with --out, OUT/benchmarks.md)")
    parser.add_argument("--repeats", type=int, help="runs per figure (the median is reported)")
    parser.add_argument("--only", help=f"comma-separated sections out of {','.join(SECTIONS)}")
    parser.add_argument("--no-spark", action="store_true", help="report R2 and R3 as not run")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a figure is below its bar")
    options = parser.parse_args(arguments)
    plan = PLANS["full" if options.full else "tiny" if options.tiny else "default"]
    if options.repeats:
        plan = Plan(**{**plan.__dict__, "repeats": options.repeats})
    sections = set(options.only.split(",")) if options.only else set(SECTIONS)
    if unknown := sections - set(SECTIONS):
        parser.error(f"unknown sections: {', '.join(sorted(unknown))}")
    skip_spark = "--no-spark given" if options.no_spark else None if plan.spark else f"{plan.name} mode"
    out: Path = options.out or REPO / "build" / "bench"
    out.mkdir(parents=True, exist_ok=True)
    # A run told where to put its results (the smoke test's) leaves the committed page alone.
    page: Path = options.page or (out / "benchmarks.md" if options.out else REPO / "docs" / "benchmarks.md")
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    rows, seconds = run(plan, out, sections, skip_spark)
    meta = {
        "mode": plan.name,
        "started": started,
        "seconds": seconds,
        "repeats": plan.repeats,
        "cores": os.cpu_count(),
        "load": " ".join(f"{load:.1f}" for load in os.getloadavg()),
        "sections": ", ".join(section for section in SECTIONS if section in sections),
        "command": " ".join(["tools/bench/bench.py", *arguments]),
    }
    write_json(rows, out / "results.json")
    write_markdown(rows, meta, out / "README-table.md")
    plot(rows, out / "throughput-recovery.png")
    write_page(rows, meta, describe_machine(out), page)
    print(text_table(rows))
    print(f"\n{plan.name} mode, {seconds:.0f} s; results in {out}, the page in {page}")
    below = [row for row in rows if row.passed is False]
    return 1 if options.strict and below else 0


if __name__ == "__main__":
    raise SystemExit(main())
