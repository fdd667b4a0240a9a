"""How many crash states were checked, per persistence model, and how many broke an invariant."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .checker import ModelResult

# The repository root, from python/tests/crash/summary.py.
SUMMARY_PATH = Path(__file__).resolve().parents[3] / "build" / "crash" / "summary.json"


@dataclass
class Row:
    states: int = 0
    violations: int = 0
    sampled_points: int = 0
    workloads: dict[str, dict[str, int]] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)


class CrashSummary:
    """Per model (or harness): distinct states checked, states that broke an invariant; seconds per workload."""

    def __init__(self) -> None:
        self.rows: dict[str, Row] = defaultdict(Row)
        self.seconds: dict[str, float] = {}

    def add(self, workload: str, label: str, result: ModelResult) -> None:
        row = self.rows[label]
        row.states += result.states
        row.violations += result.violating_states
        row.sampled_points += result.sampled_points
        row.workloads[workload] = {"states": result.states, "violations": result.violating_states}
        row.examples += [str(v) for v in result.violations[: max(0, 5 - len(row.examples))]]

    def add_all(self, workload: str, results: dict[str, ModelResult]) -> None:
        for label, result in sorted(results.items()):
            self.add(workload, label, result)

    def timed(self, workload: str, seconds: float) -> None:
        self.seconds[workload] = self.seconds.get(workload, 0.0) + seconds

    def lines(self) -> list[str]:
        width = max([len(label) for label in self.rows] + [len("model")])
        lines = [f"{'model':<{width}} {'states':>9} {'violations':>10} {'sampled points':>14}"]
        for label in sorted(self.rows):
            row = self.rows[label]
            lines.append(f"{label:<{width}} {row.states:>9} {row.violations:>10} {row.sampled_points:>14}")
        lines.append(f"(states: distinct crash states or kill trials; {sum(self.seconds.values()):.1f} s in all)")
        return lines

    def to_json(self) -> dict[str, Any]:
        models = {
            label: {
                "states": row.states,
                "violations": row.violations,
                "sampled_points": row.sampled_points,
                "workloads": row.workloads,
                "examples": row.examples,
            }
            for label, row in sorted(self.rows.items())
        }
        return {"models": models, "seconds": {name: round(t, 2) for name, t in sorted(self.seconds.items())}}

    def write(self, path: Path = SUMMARY_PATH) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), indent=2, sort_keys=True) + "\n")
