"""Write the `binlog` command reference from the commands' own --help (CI checks it is current).

python tools/gen_cli_reference.py           # rewrite python/CLI.md
python tools/gen_cli_reference.py --check   # exit 1 if python/CLI.md is stale
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from openbinlog.cli import main

REFERENCE = Path(__file__).resolve().parent.parent / "python" / "CLI.md"


def _commands(group: click.Group, prefix: list[str]) -> list[tuple[list[str], click.Command]]:
    found: list[tuple[list[str], click.Command]] = []
    for name in sorted(group.commands):
        command = group.commands[name]
        found.append(([*prefix, name], command))
        if isinstance(command, click.Group):
            found.extend(_commands(command, [*prefix, name]))
    return found


def _help(path: list[str], command: click.Command) -> str:
    with click.Context(command, info_name=" ".join(path), terminal_width=100, max_content_width=100) as ctx:
        return command.get_help(ctx)


def render() -> str:
    parts = [
        "# The `binlog` command line",
        "",
        "Generated from `--help` by `tools/gen_cli_reference.py`; do not edit by hand.",
        "",
        "Exit codes, for every command: 0 success, 1 damage found in committed data, 2 usage error, I/O error"
        " or not a log, 130 interrupted, 141 standard output closed early (see below).",
        "",
        "```text",
        _help(["binlog"], main),
        "```",
    ]
    for path, command in _commands(main, ["binlog"]):
        parts += ["", f"## {' '.join(path)}", "", "```text", _help(path, command), "```"]
    return "\n".join(parts) + "\n"


def main_cli() -> None:
    text = render()
    if "--check" in sys.argv[1:]:
        if not REFERENCE.exists() or REFERENCE.read_text() != text:
            print(f"{REFERENCE.name} is stale: run python tools/gen_cli_reference.py", file=sys.stderr)
            sys.exit(1)
        return
    REFERENCE.write_text(text)


if __name__ == "__main__":
    main_cli()
