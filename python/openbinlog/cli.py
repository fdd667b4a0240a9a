"""The ``binlog`` command line: a thin layer over the library.

Exit codes: 0 success, 1 damage found in committed data, 2 usage or I/O error.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import click

from . import __version__
from ._reader import Reader
from ._records import Entry
from ._ref import Ref
from ._verify import verify as verify_log
from ._writer import DURABILITY_MODES, Writer
from .errors import BinlogError, CorruptionError, NotALogError

EXIT_DAMAGE = 1
EXIT_ERROR = 2

F = TypeVar("F", bound=Callable[..., Any])


@contextmanager
def _errors_to_exit_codes() -> Iterator[None]:
    """Typed library errors become one line on stderr and the documented exit code."""
    try:
        yield
    except CorruptionError as exc:
        click.echo(f"binlog: damage: {exc}", err=True)
        sys.exit(EXIT_DAMAGE)
    except BinlogError as exc:
        click.echo(f"binlog: error: {exc}", err=True)
        sys.exit(EXIT_ERROR)


def _entry_json(entry: Entry) -> dict[str, Any]:
    return {
        "log": entry.log,
        "offset": entry.offset,
        "index": entry.index,
        "asqn": entry.asqn,
        "timestamp": None if entry.timestamp is None else entry.timestamp.isoformat().replace("+00:00", "Z"),
        "checked": entry.checked,
        "ref": str(entry.ref),
        "payload": base64.b64encode(entry.payload).decode("ascii"),
    }


class _RefParam(click.ParamType):  # type: ignore[type-arg]
    name = "REF"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Ref:
        if isinstance(value, Ref):
            return value
        try:
            return Ref.parse(str(value))
        except BinlogError as exc:
            self.fail(exc.message, param, ctx)


log_dir = click.argument("directory", type=click.Path(file_okay=False, path_type=str))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="binlog")
def main() -> None:
    """Write, read and check BinLog logs (a log is a directory of segments)."""


@main.command()
@log_dir
@click.option("--ack", is_flag=True, help="Print each record's index once it is durable.")
@click.option(
    "--durability", type=click.Choice(DURABILITY_MODES), default="sync", show_default=True, help="When to sync."
)
def append(directory: str, ack: bool, durability: str) -> None:
    """Append each line of standard input as one record (the newline is not stored)."""
    with _errors_to_exit_codes(), Writer(directory, durability=durability) as writer:  # type: ignore[arg-type]
        for line in sys.stdin.buffer:
            ref = writer.append(line[:-1] if line.endswith(b"\n") else line)
            if ack:
                click.echo(ref.index)
                sys.stdout.flush()


@main.command()
@log_dir
@click.option("--format", "fmt", type=click.Choice(["jsonl", "text"]), default="jsonl", show_default=True)
@click.option("--start", type=_RefParam(), help="Start at this ref (LOG:OFFSET:INDEX), inclusive.")
@click.option("--after", type=_RefParam(), help="Start just after this ref.")
@click.option("--no-follow", is_flag=True, help="Stop at the end of the first segment instead of following cutovers.")
def dump(directory: str, fmt: str, start: Ref | None, after: Ref | None, no_follow: bool) -> None:
    """Print every committed record, one per line."""
    with _errors_to_exit_codes(), Reader(directory, start, after=after, follow=not no_follow) as reader:
        for entry in reader:
            if fmt == "jsonl":
                click.echo(json.dumps(_entry_json(entry), separators=(",", ":")))
            else:
                text = entry.payload.decode("utf-8", errors="backslashreplace")
                click.echo(f"{entry.ref}\t{text}")


@main.command()
@log_dir
@click.option("--json", "as_json", is_flag=True, help="Print the full report as JSON.")
def verify(directory: str, as_json: bool) -> None:
    """Check every committed record; exit 1 if committed data is damaged.

    Bytes beyond the commit point (a torn tail) are described, never counted
    as damage.
    """
    with _errors_to_exit_codes():
        report = verify_log(directory)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
    else:
        span = "" if report.first_index is None else f", indexes {report.first_index}..{report.last_index}"
        click.echo(f"{report.directory}: {len(report.segments)} segments, {report.records} records{span}")
        for seg in report.segments:
            tail = seg.tail
            note = ""
            if tail is not None and (tail.adoptable_records or tail.extra_bytes):
                note = (
                    f"; beyond the commit point: {tail.adoptable_records} complete records,"
                    f" {tail.extra_bytes} bytes to truncate ({tail.stop_reason}), not damage"
                )
            click.echo(f"  {seg.log:08d}.dat  v{seg.version} {seg.state:<8} {seg.records} records{note}")
        for damage in report.damage:
            click.echo(
                f"  DAMAGE {damage.error_class}: {damage.message} (log {damage.log}, offset {damage.offset},"
                f" index {damage.index}, {damage.bytes_skipped} bytes skipped)"
            )
        click.echo("ok" if report.ok else f"DAMAGED: {len(report.damage)} damaged regions in committed data")
    if not report.ok:
        sys.exit(EXIT_DAMAGE)


@main.command()
@log_dir
def cutover(directory: str) -> None:
    """Seal the last segment and start the next; safe while other processes append."""
    with _errors_to_exit_codes():
        if not os.path.isdir(directory):
            raise NotALogError("not a log directory", path=directory)
    with _errors_to_exit_codes(), Writer(directory, verify_on_open=False) as writer:
        click.echo(writer.cutover())
