"""The ``binlog`` command line: a thin layer over the library.

Exit codes: 0 success, 1 damage found in committed data, 2 usage or I/O error.
Every command that reports takes ``--json`` for scripts; people get tables.
"""

from __future__ import annotations

import base64
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

import click
from rich.console import Console
from rich.live import Live
from rich.progress import Progress
from rich.table import Table

from . import __version__
from ._maintenance import CODECS, compress_segments, repair, retain
from ._reader import Reader
from ._records import Entry
from ._ref import Ref
from ._stat import SegmentStat, stat
from ._subscribers import add_subscriber, get_subscriber, lag, last_ref, list_subscribers, remove_subscriber
from ._verify import verify as verify_log
from ._writer import DURABILITY_MODES, Writer
from .errors import BinlogError, CorruptionError, NotALogError

EXIT_DAMAGE = 1
EXIT_ERROR = 2


def _console() -> Console:
    # Not a terminal: wide enough that tables are never cut.
    return Console(highlight=False, width=None if sys.stdout.isatty() else 200)


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


def _require_log(directory: str) -> None:
    if not os.path.isdir(directory):
        raise NotALogError("not a log directory", path=directory)


def _iso(micros: int | None) -> str | None:
    if micros is None:
        return None
    return datetime.fromtimestamp(micros / 1_000_000, UTC).isoformat().replace("+00:00", "Z")


def _entry_json(entry: Entry) -> dict[str, Any]:
    return {
        "log": entry.log,
        "offset": entry.offset,
        "index": entry.index,
        "asqn": entry.asqn,
        "timestamp": _iso(entry.timestamp_us),
        "checked": entry.checked,
        "ref": str(entry.ref),
        "payload": base64.b64encode(entry.payload).decode("ascii"),
    }


def _print_entry(entry: Entry, fmt: str) -> None:
    if fmt == "jsonl":
        click.echo(json.dumps(_entry_json(entry), separators=(",", ":")))
    else:
        click.echo(f"{entry.ref}\t{entry.payload.decode('utf-8', errors='backslashreplace')}")


def _emit_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2))


def _progress(enabled: bool) -> Progress:
    return Progress(console=Console(stderr=True), transient=True, disable=not enabled or not sys.stderr.isatty())


class _RefParam(click.ParamType):  # type: ignore[type-arg]
    name = "REF"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Ref:
        if isinstance(value, Ref):
            return value
        try:
            return Ref.parse(str(value))
        except BinlogError as exc:
            self.fail(exc.message, param, ctx)


_SIZE = re.compile(r"^(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?$", re.I)
_AGE = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw]?)$", re.I)


def _parse_size(text: str | None) -> int | None:
    if text is None:
        return None
    match = _SIZE.match(text.strip())
    if match is None:
        raise click.BadParameter(f"not a size: {text!r} (for example 500M, 10G)")
    return int(float(match[1]) * 1024 ** "_kmgt".index(match[2].lower() or "_"))


def _parse_age(text: str | None) -> float | None:
    if text is None:
        return None
    match = _AGE.match(text.strip())
    if match is None:
        raise click.BadParameter(f"not an age: {text!r} (for example 90s, 12h, 7d)")
    unit = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}[match[2].lower()]
    return float(match[1]) * unit


log_dir = click.argument("directory", type=click.Path(file_okay=False, path_type=str))
json_option = click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="binlog")
def main() -> None:
    """Write, read, check and maintain BinLog logs (a log is a directory of segments).

    Exit codes: 0 success, 1 damage found in committed data, 2 usage or I/O error.
    """


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
            _print_entry(entry, fmt)


@main.command()
@log_dir
@click.option("-f", "--follow", is_flag=True, help="Keep waiting for new records (stop with Ctrl-C).")
@click.option("-n", "--lines", "count", type=click.IntRange(min=0), default=10, show_default=True)
@click.option("--format", "fmt", type=click.Choice(["jsonl", "text"]), default="text", show_default=True)
@click.option("--for", "duration", type=float, default=None, help="With -f: stop after this many seconds.")
def tail(directory: str, follow: bool, count: int, fmt: str, duration: float | None) -> None:
    """Print the last records, then (with -f) new ones as they are committed."""
    with _errors_to_exit_codes():
        _require_log(directory)
        with Reader(directory) as reader:
            recent: list[Entry] = []
            for entry in reader:
                recent.append(entry)
                del recent[: max(len(recent) - count, 0)]
            for entry in recent:
                _print_entry(entry, fmt)
            sys.stdout.flush()
            deadline = None if duration is None else time.monotonic() + duration
            try:
                while follow and (deadline is None or time.monotonic() < deadline):
                    wait = 1.0 if deadline is None else max(min(1.0, deadline - time.monotonic()), 0.0)
                    if reader.has_next(wait):
                        _print_entry(next(reader), fmt)
                        sys.stdout.flush()
            except KeyboardInterrupt:
                pass


@main.command()
@log_dir
@json_option
def verify(directory: str, as_json: bool) -> None:
    """Check every committed record; exit 1 if committed data is damaged.

    Bytes beyond the commit point (a torn tail) are described, never counted
    as damage.
    """
    with _errors_to_exit_codes():
        _require_log(directory)
        with _progress(not as_json) as progress:
            progress.add_task("verifying", total=None)
            report = verify_log(directory)
    if as_json:
        _emit_json(report.to_dict())
    else:
        span = "" if report.first_index is None else f", indexes {report.first_index}..{report.last_index}"
        click.echo(f"{report.directory}: {len(report.segments)} segments, {report.records} records{span}")
        for seg in report.segments:
            tail_info = seg.tail
            note = ""
            if tail_info is not None and (tail_info.adoptable_records or tail_info.extra_bytes):
                note = (
                    f"; beyond the commit point: {tail_info.adoptable_records} complete records,"
                    f" {tail_info.extra_bytes} bytes to truncate ({tail_info.stop_reason}), not damage"
                )
            click.echo(f"  {os.path.basename(seg.path)}  v{seg.version} {seg.state:<8} {seg.records} records{note}")
        for damage in report.damage:
            click.echo(
                f"  DAMAGE {damage.error_class}: {damage.message} (file {damage.path}, log {damage.log},"
                f" offset {damage.offset}, index {damage.index}, {damage.bytes_skipped} bytes skipped)"
            )
        click.echo("ok" if report.ok else f"DAMAGED: {len(report.damage)} damaged regions in committed data")
    if not report.ok:
        sys.exit(EXIT_DAMAGE)


@main.command()
@log_dir
def cutover(directory: str) -> None:
    """Seal the last segment and start the next; safe while other processes append (cron-friendly)."""
    with _errors_to_exit_codes():
        _require_log(directory)
        with Writer(directory, verify_on_open=False) as writer:
            click.echo(writer.cutover())


def _stat_table(items: list[SegmentStat]) -> Table:
    table = Table(box=None, pad_edge=False)
    for column in ("segment", "v", "state", "records", "indexes", "from", "to", "bytes", "commit"):
        table.add_column(column, justify="right" if column in ("records", "bytes", "commit") else "left")
    for item in items:
        span = "" if item.first_index is None else f"{item.first_index}..{item.last_index}"
        table.add_row(
            item.file,
            str(item.version),
            item.state,
            str(item.records),
            span,
            _iso(item.first_timestamp_us) or "",
            _iso(item.last_timestamp_us) or "",
            str(item.size),
            "" if item.commit_offset is None else str(item.commit_offset),
        )
    return table


@main.command("stat")
@log_dir
@json_option
def stat_command(directory: str, as_json: bool) -> None:
    """Segments, records, index and time ranges, sizes, commit points, open or sealed."""
    with _errors_to_exit_codes():
        items = stat(directory)
    totals = {
        "segments": len(items),
        "records": sum(i.records for i in items),
        "bytes": sum(i.size for i in items),
        "first_index": next((i.first_index for i in items if i.first_index is not None), None),
        "last_index": next((i.last_index for i in reversed(items) if i.last_index is not None), None),
    }
    if as_json:
        _emit_json({"directory": directory, **totals, "segments_detail": [asdict(i) for i in items]})
        return
    out = _console()
    out.print(_stat_table(items))
    out.print(
        f"{totals['segments']} segments, {totals['records']} records, {totals['bytes']} bytes,"
        f" indexes {totals['first_index']}..{totals['last_index']}"
    )


@main.command()
@log_dir
@json_option
def meta(directory: str, as_json: bool) -> None:
    """Every header field of every segment: log id, base index, flags, both commit slots."""
    with _errors_to_exit_codes():
        items = stat(directory)
    if as_json:
        _emit_json([asdict(i) for i in items])
        return
    for item in items:
        click.echo(f"{item.file}: version {item.version}, {item.state}, {item.size} bytes")
        if item.version == 2:
            click.echo(f"  log id {item.log_id}, created {_iso(item.created_us)}")
            click.echo(f"  flags {item.flags:#010x}, capacity {item.capacity}, first index {item.first_index}")
            for number, slot in enumerate(item.slots):
                text = "empty or invalid" if slot is None else ", ".join(f"{k} {v}" for k, v in slot.items())
                click.echo(f"  slot {number}: {text}")


def _monitor_frame(directory: str, previous: tuple[float, int] | None) -> tuple[Table, tuple[float, int]]:
    items = stat(directory)
    now = time.monotonic()
    last_index = next((i.last_index for i in reversed(items) if i.last_index is not None), 0) or 0
    rate = 0.0
    if previous is not None and now > previous[0]:
        rate = (last_index - previous[1]) / (now - previous[0])
    table = Table(title=f"binlog monitor {directory}", box=None, show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    current = items[-1] if items else None
    table.add_row("segments", str(len(items)))
    table.add_row("last segment", current.file if current else "-")
    table.add_row("commit point", str(current.commit_offset) if current else "-")
    table.add_row("last index", str(last_index))
    table.add_row("appends/s", f"{rate:,.1f}")
    last = last_ref(directory) if items else None
    for info in list_subscribers(directory):
        table.add_row(f"subscriber {info.name}", f"lag {lag(directory, info, last)}")
    return table, (now, last_index)


@main.command()
@log_dir
@click.option("--interval", type=float, default=1.0, show_default=True, help="Seconds between refreshes.")
@click.option("--count", type=int, default=None, help="Stop after this many refreshes.")
def monitor(directory: str, interval: float, count: int | None) -> None:
    """A live view of appends per second, the commit point and subscriber lag, updated in place."""
    with _errors_to_exit_codes():
        _require_log(directory)
        table, previous = _monitor_frame(directory, None)
        frames = 1
        try:
            with Live(table, console=_console(), refresh_per_second=max(1, int(1 / max(interval, 0.05)))) as live:
                while count is None or frames < count:
                    time.sleep(interval)
                    table, previous = _monitor_frame(directory, previous)
                    live.update(table)
                    frames += 1
        except KeyboardInterrupt:
            pass


@main.command("repair")
@log_dir
@click.option("--dry-run", is_flag=True, help="Say what would be done; change nothing.")
@click.option("--backup-dir", type=click.Path(file_okay=False), help="Where removed bytes are kept.")
@json_option
def repair_command(directory: str, dry_run: bool, backup_dir: str | None, as_json: bool) -> None:
    """Truncate torn tails, finish interrupted cutovers, fix stale checkpoints; back up every removed byte.

    Damage to committed data is never cut away: repair then exits 1 with the damage.
    """
    with _errors_to_exit_codes():
        _require_log(directory)
        report = repair(directory, dry_run=dry_run, backup_dir=backup_dir)
    if as_json:
        _emit_json(asdict(report) | {"dry_run": dry_run})
        if report.damage:
            sys.exit(EXIT_DAMAGE)
        return
    verb = "would" if dry_run else "did"
    if not report.actions and not report.checkpoints:
        click.echo("nothing to repair")
    for action in report.actions:
        where = "" if action.offset is None else f" at offset {action.offset}"
        amount = f", {action.bytes} bytes" if action.bytes else f", {action.records} records" if action.records else ""
        click.echo(f"{verb} {action.action}: {action.path}{where}{amount}")
    for note in report.checkpoints:
        click.echo(f"{verb} fix {note}")
    if report.backup_dir:
        click.echo(f"removed bytes kept in {report.backup_dir}")
    for damage in report.damage:
        click.echo(
            f"DAMAGE left in place: {damage.error_class} in {damage.path} at offset {damage.offset},"
            f" index {damage.index} (repair never cuts committed data)"
        )
    if report.damage:
        sys.exit(EXIT_DAMAGE)


@main.command()
@log_dir
@click.option("--codec", type=click.Choice(CODECS), default="zst", show_default=True)
@click.option("--dry-run", is_flag=True, help="List the segments that would be compressed.")
@json_option
def compress(directory: str, codec: str, dry_run: bool, as_json: bool) -> None:
    """Compress sealed segments (never the last); readers see the whole old or the whole new file."""
    with _errors_to_exit_codes():
        _require_log(directory)
        with _progress(not as_json) as progress:
            task = progress.add_task("compressing", total=None)
            done = compress_segments(
                directory, codec=codec, dry_run=dry_run, progress=lambda n: progress.advance(task, n)
            )
    if as_json:
        _emit_json([asdict(d) for d in done])
        return
    for item in done:
        ratio = f" ({item.compressed_bytes / item.original_bytes:.0%})" if item.compressed_bytes else ""
        click.echo(f"{'would compress' if dry_run else 'compressed'} {os.path.basename(item.path)}{ratio}")
    if not done:
        click.echo("no sealed segment left to compress")


def _export_rows(directory: str) -> Iterator[Entry]:
    with Reader(directory) as reader:
        yield from reader


@main.command()
@log_dir
@click.option("--format", "fmt", type=click.Choice(["jsonl", "parquet", "arrow"]), default="jsonl", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), required=True)
def export(directory: str, fmt: str, output: str) -> None:
    """Write every committed record to a JSON-lines, Parquet or Arrow IPC file."""
    with _errors_to_exit_codes():
        _require_log(directory)
        with _progress(True) as progress:
            task = progress.add_task("exporting", total=None)
            written = _EXPORTERS[fmt](_export_rows(directory), output, lambda: progress.advance(task))
    click.echo(f"{written} records written to {output}")


def _export_jsonl(rows: Iterator[Entry], output: str, tick: Callable[[], None]) -> int:
    count = 0
    with open(output, "w") as out:
        for entry in rows:
            out.write(json.dumps(_entry_json(entry), separators=(",", ":")) + "\n")
            count += 1
            tick()
    return count


def _export_arrow(rows: Iterator[Entry], output: str, tick: Callable[[], None], *, parquet: bool) -> int:
    import pyarrow as pa  # noqa: PLC0415 - only these exports need Arrow; keep the CLI quick to start

    schema = pa.schema(
        [
            ("log", pa.int32()),
            ("offset", pa.int64()),
            ("index", pa.int64()),
            ("asqn", pa.int64()),
            ("timestamp", pa.timestamp("us", tz="UTC")),
            ("payload", pa.binary()),
        ]
    )
    writer: Any
    if parquet:
        import pyarrow.parquet as pq  # noqa: PLC0415

        writer = pq.ParquetWriter(output, schema)
    else:
        writer = pa.ipc.new_file(output, schema)
    count = 0
    batch: list[Entry] = []

    def flush() -> None:
        columns = [
            [e.log for e in batch],
            [e.offset for e in batch],
            [e.index for e in batch],
            [e.asqn for e in batch],
            [e.timestamp_us for e in batch],
            [e.payload for e in batch],
        ]
        if parquet:
            writer.write_table(pa.table(columns, schema=schema))
        else:
            writer.write_batch(pa.record_batch(columns, schema=schema))
        batch.clear()

    with writer:
        for entry in rows:
            batch.append(entry)
            count += 1
            tick()
            if len(batch) >= 65536:
                flush()
        if batch:
            flush()
    return count


_EXPORTERS: dict[str, Callable[[Iterator[Entry], str, Callable[[], None]], int]] = {
    "jsonl": _export_jsonl,
    "parquet": lambda rows, output, tick: _export_arrow(rows, output, tick, parquet=True),
    "arrow": lambda rows, output, tick: _export_arrow(rows, output, tick, parquet=False),
}


@main.command("retain")
@log_dir
@click.option("--max-age", help="Remove sealed segments whose newest record is older (90s, 12h, 7d).")
@click.option("--max-bytes", help="Remove the oldest sealed segments while the log is larger (500M, 10G).")
@click.option("--dry-run", is_flag=True, help="Say what would be removed; remove nothing.")
@json_option
def retain_command(directory: str, max_age: str | None, max_bytes: str | None, dry_run: bool, as_json: bool) -> None:
    """Remove old sealed segments, never one a durable subscriber still needs."""
    age, size = _parse_age(max_age), _parse_size(max_bytes)
    with _errors_to_exit_codes():
        _require_log(directory)
        decisions = retain(directory, max_age_seconds=age, max_bytes=size, dry_run=dry_run)
    if as_json:
        _emit_json([asdict(d) for d in decisions])
        return
    for decision in decisions:
        verb = ("would remove" if dry_run else "removed") if decision.remove else "kept"
        click.echo(f"{verb} segment {decision.log:08d}: {decision.reason}")
    if not decisions:
        click.echo("nothing to remove")


@main.group()
def subscriber() -> None:
    """Named durable subscribers: checkpoints kept in the log directory."""


@subscriber.command("list")
@log_dir
@json_option
def subscriber_list(directory: str, as_json: bool) -> None:
    """Every subscriber with its checkpoint and lag."""
    with _errors_to_exit_codes():
        infos = list_subscribers(directory)
        last = last_ref(directory)
        rows = [
            {
                "name": i.name,
                "checkpoint": None if i.checkpoint is None else str(i.checkpoint),
                "lag": lag(directory, i, last),
            }
            for i in infos
        ]
    if as_json:
        _emit_json(rows)
        return
    if not rows:
        click.echo("no subscribers")
    for row in rows:
        click.echo(f"{row['name']}\tcheckpoint {row['checkpoint'] or '(start)'}\tlag {row['lag']}")


@subscriber.command("add")
@log_dir
@click.argument("name")
@click.option("--at-end", is_flag=True, help="Start after the last record instead of at the first.")
def subscriber_add(directory: str, name: str, at_end: bool) -> None:
    """Add a durable subscriber."""
    with _errors_to_exit_codes():
        info = add_subscriber(directory, name, at_end=at_end)
    click.echo(f"added {info.name} at {info.checkpoint or '(start)'}")


@subscriber.command("remove")
@log_dir
@click.argument("name")
def subscriber_remove(directory: str, name: str) -> None:
    """Remove a subscriber (its checkpoint no longer holds segments back)."""
    with _errors_to_exit_codes():
        remove_subscriber(directory, name)
    click.echo(f"removed {name}")


@subscriber.command("show")
@log_dir
@click.argument("name")
@json_option
def subscriber_show(directory: str, name: str, as_json: bool) -> None:
    """One subscriber's checkpoint and lag."""
    with _errors_to_exit_codes():
        info = get_subscriber(directory, name)
        behind = lag(directory, info, last_ref(directory))
    row = {"name": info.name, "checkpoint": None if info.checkpoint is None else str(info.checkpoint), "lag": behind}
    if as_json:
        _emit_json(row)
    else:
        click.echo(f"{row['name']}: checkpoint {row['checkpoint'] or '(start)'}, lag {behind}")


def _register_conformance() -> None:
    # The conformance runner is its own package; the reference CLI only exposes it.
    from openbinlog_conformance.cli import conformance_group  # noqa: PLC0415 - avoids an import cycle

    main.add_command(conformance_group)


_register_conformance()
