"""Plain-text tables and sizes for the command line: columns padded with spaces, nothing else.

The CLI's only formatting code, so that the base install needs no terminal
library: cells are strings, widths are their lengths, and the result is a
list of lines the caller prints (and may style whole, which keeps columns
aligned).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

_UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def human_size(size: int) -> str:
    """``size`` bytes in binary units, for people: ``512 B``, ``1.5 KiB``, ``12.0 MiB`` (scripts use --json)."""
    if abs(size) < 1024:
        return f"{size} B"
    value = float(size)
    for unit in _UNITS:
        value /= 1024
        if abs(value) < 1024 or unit == _UNITS[-1]:
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")  # pragma: no cover


def table(
    rows: Sequence[Sequence[str]],
    *,
    header: Sequence[str] | None = None,
    right: Collection[int] = (),
    gap: int = 2,
) -> list[str]:
    """``rows`` (and a ``header``) as lines of columns, ``gap`` spaces apart; the columns in ``right`` are
    right-aligned (numbers), the others left-aligned. No trailing spaces."""
    given = ([header] if header is not None else []) + list(rows)
    if not given:
        return []
    columns = max(len(line) for line in given)
    lines = [[*line, *[""] * (columns - len(line))] for line in given]
    widths = [max(len(line[at]) for line in lines) for at in range(columns)]
    spacer = " " * gap
    return [
        spacer.join(
            cell.rjust(width) if at in right else cell.ljust(width)
            for at, (cell, width) in enumerate(zip(line, widths, strict=True))
        ).rstrip()
        for line in lines
    ]
