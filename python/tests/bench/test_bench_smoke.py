"""The benchmark runs end to end in its tiny mode and reports every bar: never a speed asserted."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "tools" / "bench" / "bench.py"
BAR_IDS = {"W1", "W2", "W3", "W4", "R1", "R2", "R3", "S1", "S2", "S3", "S4", "S5", "X1", "X2"}
FIELDS = {"id", "figure", "baseline", "ratio", "bar", "passed", "unit", "record_size", "log_size", "status"}


def test_tiny_run_reports_every_bar_with_its_ratio_in_json_text_and_markdown(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--tiny", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads((tmp_path / "results.json").read_text())
    assert isinstance(rows, list)
    for row in rows:
        assert row.keys() >= FIELDS, row
    assert {row["id"] for row in rows} >= BAR_IDS
    for bar_id in BAR_IDS:
        bars = [row for row in rows if row["id"] == bar_id]
        assert {row["record_size"] for row in bars} == {200, 1024}, bar_id
        for row in bars:
            assert row["bar"] is not None or row["status"].startswith("not run: "), row
            if row["status"] == "ok":
                assert row["figure"] > 0 and row["baseline"] > 0
                assert abs(row["ratio"] - row["figure"] / row["baseline"]) < 1e-9 * row["ratio"]
                assert row["passed"] == (row["ratio"] >= row["bar"])
            else:
                assert row["passed"] is None and row["ratio"] is None
    # Spark is left out of the tiny mode: reported as not run, with the reason, never dropped.
    assert all(row["status"] == "not run: tiny mode" for row in rows if row["id"] in ("R2", "R3"))
    # R1's info rows: the codec alone and the checksum floor, with a ratio and no bar.
    info = [row for row in rows if row["id"] in ("R1.codec", "R1.floor")]
    assert sorted((row["id"], row["record_size"]) for row in info) == [
        ("R1.codec", 200),
        ("R1.codec", 1024),
        ("R1.floor", 200),
        ("R1.floor", 1024),
    ]
    assert all(row["bar"] is None and row["passed"] is None and row["ratio"] > 0 for row in info)
    # The machine's ceilings beside the write bars: measured in the same run, judged against nothing.
    ceilings = [
        row
        for row in rows
        if row["id"] in ("S1.ceiling", "S6.ceiling", "W1.ceiling", "W2.floor", "W3.floor", "W3.ceiling")
    ]
    assert sorted((row["id"], row["record_size"]) for row in ceilings) == [
        ("S1.ceiling", 200),
        ("S1.ceiling", 1024),
        ("S6.ceiling", 200),
        ("S6.ceiling", 1024),
        ("W1.ceiling", 200),
        ("W1.ceiling", 1024),
        ("W2.floor", 200),
        ("W2.floor", 1024),
        ("W3.ceiling", 200),
        ("W3.ceiling", 1024),
        ("W3.floor", 200),
        ("W3.floor", 1024),
    ]
    assert all(row["bar"] is None and row["passed"] is None and row["ratio"] > 0 for row in ceilings)
    # W3 against both bars of its issue: one process, and as many threads of one writer.
    w3 = sorted((row["versus"], row["bar"]) for row in rows if row["id"] == "W3")
    assert w3 == [("4 threads, one writer", 0.8)] * 2 + [("W1", 2.5)] * 2
    # The seeks without the index beside X1 and X2: the same targets, against the same full read, no bar.
    unindexed = [row for row in rows if row["id"] in ("X1.unindexed", "X2.unindexed")]
    assert sorted((row["id"], row["record_size"]) for row in unindexed) == [
        ("X1.unindexed", 200),
        ("X1.unindexed", 1024),
        ("X2.unindexed", 200),
        ("X2.unindexed", 1024),
    ]
    assert all(row["bar"] is None and row["passed"] is None and row["ratio"] > 0 for row in unindexed)
    seeks = [row for row in rows if row["id"] in ("X1", "X2")]
    assert all(row["bar"] == 1000 and "full read" in row["note"] for row in seeks)
    recovery = [row for row in rows if row["id"] == "C1"]
    assert recovery and all(row["figure"] > 0 and row["unit"] == "ms" for row in recovery)

    table = done.stdout
    for row in rows:
        verdict = {"ok": None}.get(row["status"], "NOT RUN")
        expected = verdict or {True: "PASS", False: "BELOW", None: "info"}[row["passed"]]
        assert expected in table
    bar_lines = [line for line in table.splitlines() if re.match(r"(W[1-4]|R1)  ", line)]
    assert len(bar_lines) == 18 and all(re.search(r"\d\.\d\dx +>= \S+x +(PASS|BELOW)", line) for line in bar_lines)
    markdown = (tmp_path / "README-table.md").read_text()
    assert markdown.count("\n| W1 |") == 8 and "| R2 |" in markdown
    assert (tmp_path / "throughput-recovery.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (tmp_path / "work").exists()
