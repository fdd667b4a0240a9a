"""The ``binlog`` command line: a thin layer over the library.

Exit codes, the same for every command, are decided in one place
(``_exit_codes``): 0 success, 1 damage found in committed data, 2 usage error,
I/O error or not a log, 130 interrupted, 141 standard output closed early.
Every command that reports takes ``--json`` for scripts; people get tables.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import json
import os
import re
import secrets
import signal
import stat as stat_module
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from typing import Any, BinaryIO, NoReturn

import click
from rich.console import Console
from rich.live import Live
from rich.progress import Progress, ProgressColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from . import __version__
from ._maintenance import CODECS, compress_segments, repair, retain
from ._reader import Reader
from ._records import Entry
from ._ref import Ref
from ._segment_file import require_log_directory
from ._stat import SegmentStat, stat
from ._subscribers import add_subscriber, get_subscriber, lag, last_ref, list_subscribers, remove_subscriber
from ._verify import verify as verify_log
from ._writer import DURABILITY_MODES, Writer
from .errors import ERROR_CLASSES, BinlogError, BinlogIOError, CorruptionError, NotALogError
from .walk import Damage

EXIT_DAMAGE = 1
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a tool stopped by Ctrl-C
EXIT_CLOSED_PIPE = 141  # 128 + SIGPIPE, as a shell reports a tool killed by a closed pipe

EXIT_CODES_HELP = """\b
Exit codes, the same for every command:
  0    success (verify: every committed record is intact)
  1    committed data is damaged; stderr names the first damage
  2    usage error, I/O error, or the directory is not a log; stderr says which
  130  interrupted (Ctrl-C); an export leaves no partial file behind
       (tail -f and monitor are meant to be stopped so: 0)
  141  standard output was closed early (`binlog dump DIR | head`): the command
       stops quietly, as a tool killed by SIGPIPE does
"""


def _fail(code: int, message: str) -> NoReturn:
    click.echo(f"binlog: {message}", err=True)
    sys.exit(code)


def _stop_on_closed_pipe() -> NoReturn:
    """The reader of stdout went away: stop without a word, as Unix tools do.

    Both streams are pointed at /dev/null so that the flush at interpreter
    exit cannot fail again (Python docs, signal module, "Note on SIGPIPE").
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # not a real file: a test runner's buffer
            os.dup2(devnull, stream.fileno())
    os.close(devnull)
    sys.exit(EXIT_CLOSED_PIPE)


@contextmanager
def _exit_codes() -> Iterator[None]:
    """Every error of every command becomes one line on stderr and the documented exit code: here only."""
    try:
        yield
        sys.stdout.flush()  # a closed pipe can show only at the last flush
    except CorruptionError as exc:
        _fail(EXIT_DAMAGE, f"damage: {exc}")
    except NotALogError as exc:
        _fail(EXIT_ERROR, f"not a log: {exc}")
    except BinlogError as exc:
        _fail(EXIT_ERROR, f"error: {exc}")
    except OSError as exc:
        if exc.errno == errno.EPIPE:
            _stop_on_closed_pipe()
        _fail(EXIT_ERROR, f"error: {exc}")
    except KeyboardInterrupt:
        _fail(EXIT_INTERRUPTED, "interrupted")
    except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
        raise  # click reports these itself: usage errors exit 2
    except Exception as exc:  # a bug: still one line and a documented code, never a traceback
        _fail(EXIT_ERROR, f"internal error: {type(exc).__name__}: {exc}")


class _BinlogGroup(click.Group):
    """The top-level group: parsing (``--help``, ``--version``) and every subcommand run under ``_exit_codes``."""

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        with _exit_codes():
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        with _exit_codes():
            return super().invoke(ctx)


class _Console(Console):
    def on_broken_pipe(self) -> None:
        # Rich would exit 1 (the code for damage); the central handler stops quietly instead.
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))


def _console() -> Console:
    # Not a terminal: wide enough that tables are never cut.
    return _Console(highlight=False, width=None if sys.stdout.isatty() else 200)


def _damage_as_error(item: Damage, message: str | None = None) -> BinlogError:
    """A reported damage entry as the typed error it stands for, rendered as the library renders errors."""
    cls = ERROR_CLASSES.get(item.error_class, CorruptionError)
    return cls(message or item.message, path=item.path, log=item.log, offset=item.offset, index=item.index)


def _require_checked(damage: list[Damage]) -> None:
    """Raise the first entry that is not damage to committed data.

    The library's verify lists a failed read (or an unsupported feature) with
    the damage; it means the log could not be checked, which is exit 2, not 1.
    """
    for item in damage:
        error = _damage_as_error(item)
        if not isinstance(error, CorruptionError):
            raise error


def _raise_damage(damage: list[Damage]) -> None:
    """Exit 1 through the central mapping, naming how much damage there is and where the first lies."""
    if damage:
        count = "1 damaged region:" if len(damage) == 1 else f"{len(damage)} damaged regions; the first:"
        raise _damage_as_error(damage[0], f"committed data has {count} {damage[0].message}")


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _iso(micros: int | None) -> str | None:
    """ISO 8601 in UTC; None when there is none or a datetime cannot hold it (readers do not validate
    timestamps, R-13: a valid record can carry any value)."""
    if micros is None:
        return None
    try:
        return (_EPOCH + timedelta(microseconds=micros)).isoformat().replace("+00:00", "Z")
    except OverflowError:
        return None


def _shown_time(micros: int | None) -> str:
    """For people: ISO 8601, else the microseconds a datetime cannot hold, else nothing (never "None")."""
    if micros is None:
        return ""
    return _iso(micros) or f"{micros} us since the epoch"


def _span(first: int | None, last: int | None) -> str:
    return "none" if first is None else f"{first}..{last}"


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


@contextmanager
def _progress(what: str, *, unit: str | None = None, enabled: bool = True) -> Iterator[Callable[[int], None]]:
    """A transient spinner (with a count of ``unit``) on stderr, only when stderr is a terminal.

    Yields the function that advances the count.
    """
    if not enabled or not sys.stderr.isatty():
        yield lambda _n: None
        return
    columns: list[ProgressColumn] = [SpinnerColumn(), TextColumn(what), TimeElapsedColumn()]
    if unit is not None:
        columns.insert(2, TextColumn(f"{{task.completed:,.0f}} {unit}"))
    # No redirection: a console on stderr would carry what commands print on stdout over to stderr.
    with Progress(
        *columns, console=_Console(stderr=True), transient=True, redirect_stdout=False, redirect_stderr=False
    ) as progress:
        task = progress.add_task(what, total=None)
        yield lambda n: progress.advance(task, n)


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


def _parse_size(_ctx: click.Context, _param: click.Parameter, text: str | None) -> int | None:
    if text is None:
        return None
    match = _SIZE.match(text.strip())
    if match is None:
        raise click.BadParameter(f"not a size: {text!r} (for example 500M, 10G)")
    return int(float(match[1]) * 1024 ** "_kmgt".index(match[2].lower() or "_"))


def _parse_age(_ctx: click.Context, _param: click.Parameter, text: str | None) -> float | None:
    if text is None:
        return None
    match = _AGE.match(text.strip())
    if match is None:
        raise click.BadParameter(f"not an age: {text!r} (for example 90s, 12h, 7d)")
    unit = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}[match[2].lower()]
    return float(match[1]) * unit


def _existing_log(ctx: click.Context, _param: click.Parameter, directory: str) -> str:
    # The library's rule (spec 2.3): a missing directory, or one with neither a segment nor LOCK, is not a log.
    if not ctx.resilient_parsing:
        require_log_directory(directory)
    return directory


# Every command but append works on an existing log only; append creates one.
log_dir = click.argument("directory", type=click.Path(file_okay=False, path_type=str), callback=_existing_log)
new_log_dir = click.argument("directory", type=click.Path(file_okay=False, path_type=str))
json_option = click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")


@click.group(
    cls=_BinlogGroup,
    epilog=EXIT_CODES_HELP,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="binlog")
def main() -> None:
    """Write, read, check and maintain BinLog logs (a log is a directory of segments)."""


@main.command()
@new_log_dir
@click.option("--ack", is_flag=True, help="Print each record's index once it is durable.")
@click.option(
    "--durability", type=click.Choice(DURABILITY_MODES), default="sync", show_default=True, help="When to sync."
)
def append(directory: str, ack: bool, durability: str) -> None:
    """Append each line of standard input as one record (the newline is not stored).

    Creates the log if DIRECTORY does not exist. Lines are bytes: any encoding is stored as it is.
    """
    with Writer(directory, durability=durability) as writer:  # type: ignore[arg-type]
        for line in sys.stdin.buffer:
            ref = writer.append(line[:-1] if line.endswith(b"\n") else line)
            if ack:
                click.echo(ref.index)


@main.command()
@log_dir
@click.option("--format", "fmt", type=click.Choice(["jsonl", "text"]), default="jsonl", show_default=True)
@click.option("--start", type=_RefParam(), help="Start at this ref (LOG:OFFSET:INDEX), inclusive.")
@click.option("--after", type=_RefParam(), help="Start just after this ref.")
@click.option("--no-follow", is_flag=True, help="Stop at the end of the first segment instead of following cutovers.")
def dump(directory: str, fmt: str, start: Ref | None, after: Ref | None, no_follow: bool) -> None:
    """Print every committed record, one per line (progress on stderr when it is a terminal)."""
    if start is not None and after is not None:
        raise click.UsageError("give --start or --after, not both")
    # Records printed on a terminal are their own progress.
    with (
        Reader(directory, start, after=after, follow=not no_follow) as reader,
        _progress("dumping", unit="records", enabled=not sys.stdout.isatty()) as advance,
    ):
        for entry in reader:
            _print_entry(entry, fmt)
            advance(1)


@main.command()
@log_dir
@click.option("-f", "--follow", is_flag=True, help="Keep waiting for new records (stop with Ctrl-C).")
@click.option("-n", "--lines", "count", type=click.IntRange(min=0), default=10, show_default=True)
@click.option("--format", "fmt", type=click.Choice(["jsonl", "text"]), default="text", show_default=True)
@click.option(
    "--for", "duration", type=click.FloatRange(min=0), default=None, help="With -f: stop after this many seconds."
)
def tail(directory: str, follow: bool, count: int, fmt: str, duration: float | None) -> None:
    """Print the last records, then (with -f) new ones as they are committed."""
    with Reader(directory) as reader:
        recent: list[Entry] = []
        for entry in reader:
            recent.append(entry)
            del recent[: max(len(recent) - count, 0)]
        for entry in recent:
            _print_entry(entry, fmt)
        deadline = None if duration is None else time.monotonic() + duration
        try:
            while follow and (deadline is None or time.monotonic() < deadline):
                wait = 1.0 if deadline is None else max(min(1.0, deadline - time.monotonic()), 0.0)
                if reader.has_next(wait):
                    _print_entry(next(reader), fmt)
        except KeyboardInterrupt:
            pass  # Ctrl-C is how -f ends: success


@main.command()
@log_dir
@json_option
def verify(directory: str, as_json: bool) -> None:
    """Check every committed record; exit 1 if committed data is damaged.

    Bytes beyond the commit point (a torn tail) are described, never counted
    as damage. A segment that cannot be read is an I/O error (exit 2): the
    log could not be checked. On exit 1 the report still goes to stdout and
    one line on stderr names the first damage.
    """
    with _progress("verifying"):
        report = verify_log(directory)
    _require_checked(report.damage)
    if as_json:
        _emit_json(report.to_dict())
    else:
        span = "" if report.first_index is None else f", indexes {_span(report.first_index, report.last_index)}"
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
            click.echo(f"  DAMAGE {_damage_as_error(damage)}; {damage.bytes_skipped} bytes skipped")
        click.echo("ok" if report.ok else f"DAMAGED: {len(report.damage)} damaged regions in committed data")
    _raise_damage(report.damage)


@main.command()
@log_dir
@json_option
def cutover(directory: str, as_json: bool) -> None:
    """Seal the last segment and start the next; print the new log number.

    Safe while other processes append (cron-friendly).
    """
    with Writer(directory, verify_on_open=False) as writer:
        log = writer.cutover()
    if as_json:
        _emit_json({"directory": directory, "log": log})
    else:
        click.echo(log)


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
            _shown_time(item.first_timestamp_us),
            _shown_time(item.last_timestamp_us),
            str(item.size),
            "" if item.commit_offset is None else str(item.commit_offset),
        )
    return table


@main.command("stat")
@log_dir
@json_option
def stat_command(directory: str, as_json: bool) -> None:
    """Segments, records, index and time ranges, sizes, commit points, open or sealed."""
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
        f" indexes {_span(totals['first_index'], totals['last_index'])}"
    )


@main.command()
@log_dir
@json_option
def meta(directory: str, as_json: bool) -> None:
    """Every header field of every segment: log id, base index, flags, both commit slots."""
    items = stat(directory)
    if as_json:
        _emit_json([asdict(i) for i in items])
        return
    for item in items:
        click.echo(f"{item.file}: version {item.version}, {item.state}, {item.size} bytes")
        if item.version == 2:
            click.echo(f"  log id {item.log_id}, created {_shown_time(item.created_us)}")
            click.echo(
                f"  flags {item.flags:#010x}, capacity {item.capacity},"
                f" indexes {_span(item.first_index, item.last_index)}"
            )
            for number, slot in enumerate(item.slots):
                text = "empty or invalid" if slot is None else ", ".join(f"{k} {v}" for k, v in slot.items())
                click.echo(f"  slot {number}: {text}")


def _monitor_frame(directory: str, previous: tuple[float, int] | None) -> tuple[dict[str, Any], tuple[float, int]]:
    items = stat(directory)
    now = time.monotonic()
    last_index = next((i.last_index for i in reversed(items) if i.last_index is not None), None)
    rate = 0.0
    if previous is not None and now > previous[0]:
        rate = ((last_index or 0) - previous[1]) / (now - previous[0])
    current = items[-1] if items else None
    last = last_ref(directory) if items else None
    frame = {
        "time": _iso(time.time_ns() // 1000),
        "segments": len(items),
        "last_segment": current.file if current else None,
        "commit_offset": current.commit_offset if current else None,
        "last_index": last_index,
        "appends_per_second": round(rate, 1),
        "subscribers": [{"name": i.name, "lag": lag(directory, i, last)} for i in list_subscribers(directory)],
    }
    return frame, (now, last_index or 0)


def _monitor_frames(directory: str, interval: float, count: int | None) -> Iterator[dict[str, Any]]:
    frame, previous = _monitor_frame(directory, None)
    shown = 1
    yield frame
    while count is None or shown < count:
        time.sleep(interval)
        frame, previous = _monitor_frame(directory, previous)
        shown += 1
        yield frame


def _monitor_table(directory: str, frame: dict[str, Any]) -> Table:
    def shown(value: object) -> str:
        return "-" if value is None else str(value)

    table = Table(title=f"binlog monitor {directory}", box=None, show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    table.add_row("segments", str(frame["segments"]))
    table.add_row("last segment", shown(frame["last_segment"]))
    table.add_row("commit point", shown(frame["commit_offset"]))
    table.add_row("last index", shown(frame["last_index"]))
    table.add_row("appends/s", f"{frame['appends_per_second']:,.1f}")
    for sub in frame["subscribers"]:
        table.add_row(f"subscriber {sub['name']}", f"lag {sub['lag']}")
    return table


@main.command()
@log_dir
@click.option(
    "--interval",
    type=click.FloatRange(min=0, min_open=True),
    default=1.0,
    show_default=True,
    help="Seconds between refreshes.",
)
@click.option("--count", type=click.IntRange(min=1), default=None, help="Stop after this many refreshes.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per refresh, one per line.")
def monitor(directory: str, interval: float, count: int | None, as_json: bool) -> None:
    """A live view of appends per second, the commit point and subscriber lag, updated in place.

    Runs until Ctrl-C (exit 0) or --count refreshes.
    """
    frames = _monitor_frames(directory, interval, count)
    try:
        if as_json:
            for frame in frames:
                click.echo(json.dumps(frame, separators=(",", ":")))
            return
        refresh = max(1, int(1 / max(interval, 0.05)))
        with Live(_monitor_table(directory, next(frames)), console=_console(), refresh_per_second=refresh) as live:
            for frame in frames:
                live.update(_monitor_table(directory, frame))
    except KeyboardInterrupt:
        pass  # Ctrl-C is how a live view ends: success


@main.command("repair")
@log_dir
@click.option("--dry-run", is_flag=True, help="Say what would be done; change nothing.")
@click.option("--backup-dir", type=click.Path(file_okay=False), help="Where removed bytes are kept.")
@json_option
def repair_command(directory: str, dry_run: bool, backup_dir: str | None, as_json: bool) -> None:
    """Truncate torn tails, finish interrupted cutovers, fix stale checkpoints; back up every removed byte.

    Damage to committed data is never cut away: repair then exits 1 with the damage.
    """
    report = repair(directory, dry_run=dry_run, backup_dir=backup_dir)
    _require_checked(report.damage)
    if as_json:
        _emit_json(asdict(report) | {"dry_run": dry_run})
        _raise_damage(report.damage)
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
        click.echo(f"DAMAGE left in place: {_damage_as_error(damage)} (repair never cuts committed data)")
    _raise_damage(report.damage)


@main.command()
@log_dir
@click.option("--codec", type=click.Choice(CODECS), default="zst", show_default=True)
@click.option("--dry-run", is_flag=True, help="List the segments that would be compressed.")
@json_option
def compress(directory: str, codec: str, dry_run: bool, as_json: bool) -> None:
    """Compress sealed segments (never the last); readers see the whole old or the whole new file."""
    with _progress("compressing", unit="segments") as advance:
        done = compress_segments(directory, codec=codec, dry_run=dry_run, progress=advance)
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


def _export_target(directory: str, output: str) -> str:
    """The real path the export replaces; refused when it lies in the log or is a file of the log.

    Compared by identity (device and inode), not by name: a symlink, a
    ``..`` or a bind mount of the log directory is still the log, and a hard
    link to a segment is still the segment.
    """
    target = os.path.realpath(output)
    log = os.stat(directory)
    ancestor = os.path.dirname(target)
    while True:
        with contextlib.suppress(OSError):  # a folder that does not exist is not the log
            if os.path.samestat(os.stat(ancestor), log):
                raise click.BadParameter(
                    f"{output} is inside the log directory {directory}: an export never writes into the log it reads",
                    param_hint="'-o' / '--output'",
                )
        if os.path.dirname(ancestor) == ancestor:
            break
        ancestor = os.path.dirname(ancestor)
    with contextlib.suppress(FileNotFoundError):
        existing = os.stat(target)
        if any(os.path.samestat(entry.stat(), existing) for entry in os.scandir(directory)):
            raise click.BadParameter(
                f"{output} is a file of the log {directory}: an export never overwrites the log it reads",
                param_hint="'-o' / '--output'",
            )
    return target


@contextmanager
def _replacing(target: str) -> Iterator[BinaryIO]:
    """A new file beside ``target``, renamed over it only once complete and synced.

    On any failure (damage, an I/O error, Ctrl-C) the new file is removed and
    ``target`` keeps whatever it held before, if anything.
    """
    temp = os.path.join(os.path.dirname(target), f".{os.path.basename(target)}.{secrets.token_hex(8)}.tmp")
    try:
        fd = os.open(temp, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, 0o666)
    except OSError as exc:
        raise BinlogIOError(f"cannot create the output file: {exc.strerror}", path=target) from exc
    # A service manager stops with SIGTERM: unwind through the clean-up below, exit 128 + 15.
    in_main = threading.current_thread() is threading.main_thread()  # only there may handlers be set
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm) if in_main else None
    try:
        with open(fd, "wb") as out:
            yield out
            out.flush()
            with contextlib.suppress(FileNotFoundError):  # a replaced file keeps its permissions
                os.fchmod(fd, stat_module.S_IMODE(os.stat(target).st_mode))
            os.fsync(fd)
        os.replace(temp, target)
    except BaseException:
        os.unlink(temp)
        raise
    finally:
        if in_main:
            signal.signal(signal.SIGTERM, previous)


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def _error_json(exc: BinlogError) -> dict[str, Any]:
    return {
        "error_class": exc.error_class,
        "message": exc.message,
        "path": exc.path,
        "log": exc.log,
        "offset": exc.offset,
        "index": exc.index,
    }


@main.command()
@log_dir
@click.option("--format", "fmt", type=click.Choice(["jsonl", "parquet", "arrow"]), default="jsonl", show_default=True)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True, path_type=str),
    required=True,
    help="The file to write; '-' is standard output (jsonl only).",
)
@json_option
def export(directory: str, fmt: str, output: str, as_json: bool) -> None:
    """Write every committed record to a JSON-lines, Parquet or Arrow IPC file.

    The file is written under a temporary name beside it and renamed into
    place only when complete: on damage (exit 1), an error or Ctrl-C no
    partial file is left and a previous file of that name is untouched. The
    output may not lie in the log directory.
    """
    to_stdout = output == "-"
    if to_stdout and fmt != "jsonl":
        raise click.BadParameter(f"{fmt} cannot be streamed to standard output: give a file", param_hint="'-o'")
    if to_stdout and as_json:
        raise click.UsageError("--json reports on standard output, where -o - would write the records")
    try:
        # Records streamed to a terminal are their own progress.
        with _progress("exporting", unit="records", enabled=not (to_stdout and sys.stdout.isatty())) as advance:
            if to_stdout:
                written = _EXPORTERS[fmt](_export_rows(directory), sys.stdout.buffer, advance)
            else:
                target = _export_target(directory, output)
                with _replacing(target) as out:
                    written = _EXPORTERS[fmt](_export_rows(directory), out, advance)
    except CorruptionError as exc:
        if as_json:
            _emit_json({"output": output, "format": fmt, "records": 0, "damage": _error_json(exc)})
        raise
    if as_json:
        _emit_json({"output": output, "format": fmt, "records": written, "damage": None})
    elif not to_stdout:
        click.echo(f"{written} records written to {output}")


def _export_jsonl(rows: Iterator[Entry], out: BinaryIO, advance: Callable[[int], None]) -> int:
    count = 0
    for entry in rows:
        out.write(json.dumps(_entry_json(entry), separators=(",", ":")).encode() + b"\n")
        count += 1
        advance(1)
    return count


def _export_arrow(rows: Iterator[Entry], out: BinaryIO, advance: Callable[[int], None], *, parquet: bool) -> int:
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

        writer = pq.ParquetWriter(out, schema)
    else:
        writer = pa.ipc.new_file(out, schema)
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
            advance(1)
            if len(batch) >= 65536:
                flush()
        if batch:
            flush()
    return count


_EXPORTERS: dict[str, Callable[[Iterator[Entry], BinaryIO, Callable[[int], None]], int]] = {
    "jsonl": _export_jsonl,
    "parquet": lambda rows, out, advance: _export_arrow(rows, out, advance, parquet=True),
    "arrow": lambda rows, out, advance: _export_arrow(rows, out, advance, parquet=False),
}


@main.command("retain")
@log_dir
@click.option(
    "--max-age", callback=_parse_age, help="Remove sealed segments whose newest record is older (90s, 12h, 7d)."
)
@click.option(
    "--max-bytes", callback=_parse_size, help="Remove the oldest sealed segments while the log is larger (500M, 10G)."
)
@click.option("--dry-run", is_flag=True, help="Say what would be removed; remove nothing.")
@json_option
def retain_command(directory: str, max_age: float | None, max_bytes: int | None, dry_run: bool, as_json: bool) -> None:
    """Remove old sealed segments, never one a durable subscriber still needs."""
    decisions = retain(directory, max_age_seconds=max_age, max_bytes=max_bytes, dry_run=dry_run)
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
    last = last_ref(directory)
    rows = [
        {
            "name": i.name,
            "checkpoint": None if i.checkpoint is None else str(i.checkpoint),
            "lag": lag(directory, i, last),
        }
        for i in list_subscribers(directory)
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
    info = add_subscriber(directory, name, at_end=at_end)
    click.echo(f"added {info.name} at {info.checkpoint or '(start)'}")


@subscriber.command("remove")
@log_dir
@click.argument("name")
def subscriber_remove(directory: str, name: str) -> None:
    """Remove a subscriber (its checkpoint no longer holds segments back)."""
    remove_subscriber(directory, name)
    click.echo(f"removed {name}")


@subscriber.command("show")
@log_dir
@click.argument("name")
@json_option
def subscriber_show(directory: str, name: str, as_json: bool) -> None:
    """One subscriber's checkpoint and lag."""
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
