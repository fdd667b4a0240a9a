"""Result rows, repeated interleaved runs, and the verdict against a bar.

Absolute figures drift on a shared machine, so every figure is run next to
its baseline, alternating which goes first, and the medians are compared.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# How a row is judged: the ratio figure/baseline must reach the bar, or the
# figure itself must stay at or under it; rows without a bar only inform.
RATIO_AT_LEAST = "ratio>="
FIGURE_AT_MOST = "figure<="


@dataclass
class Row:
    """One line of the report: a figure, what it is compared with, and the verdict."""

    id: str
    measure: str
    unit: str
    record_size: int | None
    log_size: int | None
    versus: str | None = None
    tail_size: int | None = None
    figure: float | None = None
    baseline: float | None = None
    ratio: float | None = None
    bar: float | None = None
    bar_kind: str | None = None
    passed: bool | None = None
    runs: list[float] = field(default_factory=list)
    baseline_runs: list[float] = field(default_factory=list)
    status: str = "ok"
    note: str = ""

    def judge(self) -> Row:
        """Fill in the ratio and the verdict from the figure, the baseline and the bar."""
        if self.figure is not None and self.baseline:
            self.ratio = self.figure / self.baseline
        if self.bar_kind == RATIO_AT_LEAST and self.ratio is not None and self.bar is not None:
            self.passed = self.ratio >= self.bar
        elif self.bar_kind == FIGURE_AT_MOST and self.figure is not None and self.bar is not None:
            self.passed = self.figure <= self.bar
        return self

    @property
    def verdict(self) -> str:
        if self.status != "ok":
            return "NOT RUN"
        if self.passed is None:
            return "info"
        return "PASS" if self.passed else "BELOW"

    def as_json(self) -> dict[str, Any]:
        return {**self.__dict__, "verdict": self.verdict}


def not_run(row: Row, reason: str) -> Row:
    """A row whose measurement could not be made: reported, never dropped."""
    row.status = f"not run: {reason}"
    row.passed = None
    return row


def median(values: list[float]) -> float:
    return float(statistics.median(values))


def percentile(values: list[float], fraction: float) -> float:
    """The nearest-rank percentile: a value that was actually observed."""
    ordered = sorted(values)
    rank = max(1, round(fraction * len(ordered) + 0.5))
    return ordered[min(rank, len(ordered)) - 1]


def timed(action: Callable[[], int]) -> tuple[int, float]:
    """Run ``action`` (which returns how many operations it did); return that count and the seconds it took."""
    start = time.perf_counter()
    count = action()
    return count, time.perf_counter() - start


def rate(action: Callable[[], int]) -> float:
    """Operations per second of one run of ``action``."""
    count, seconds = timed(action)
    return count / seconds


def side_by_side(
    figure: Callable[[], float], baseline: Callable[[], float], repeats: int
) -> tuple[list[float], list[float]]:
    """Run figure and baseline ``repeats`` times each, alternating which goes first."""
    figures: list[float] = []
    baselines: list[float] = []
    for turn in range(repeats):
        if turn % 2 == 0:
            figures.append(figure())
            baselines.append(baseline())
        else:
            baselines.append(baseline())
            figures.append(figure())
    return figures, baselines


@dataclass
class Variant:
    """One contender of an interleaved measurement: ``run(count)`` performs ``count`` operations
    and returns the seconds they took."""

    run: Callable[[int], float]
    count: int


def interleaved_rates(variants: list[Variant], *, rounds: int, repeats: int) -> list[list[float]]:
    """Operations per second of each variant, one figure per repeat.

    A repeat is ``rounds`` short rounds in which every variant runs its
    ``count`` operations, in an order that rotates from round to round: the
    cost of a sync on a shared disk drifts by a factor of ten within seconds,
    and only fine interleaving makes the variants meet the same disk.
    """
    rates: list[list[float]] = [[] for _ in variants]
    for _ in range(repeats):
        operations = [0] * len(variants)
        seconds = [0.0] * len(variants)
        for turn in range(rounds):
            for step in range(len(variants)):
                which = (turn + step) % len(variants)
                seconds[which] += variants[which].run(variants[which].count)
                operations[which] += variants[which].count
        for which, series in enumerate(rates):
            series.append(operations[which] / seconds[which])
    return rates


def compared(row: Row, figures: list[float], baselines: list[float], *, bar: float | None = None) -> Row:
    """Complete ``row`` with the medians of both series and judge it against ``bar``."""
    row.runs, row.baseline_runs = figures, baselines
    row.figure, row.baseline = median(figures), median(baselines)
    if bar is not None:
        row.bar, row.bar_kind = bar, RATIO_AT_LEAST
    return row.judge()
