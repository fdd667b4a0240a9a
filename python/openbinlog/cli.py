"""The ``binlog`` command line: a thin layer over the library.

Exit codes, the same for every command, are decided in one place
(``_exit_codes``): 0 success, 1 damage found in committed data, 2 usage error,
I/O error or not a log, 130 interrupted, 141 standard output closed early.
Every command that reports takes ``--json`` for scripts (exact integers);
people get plain columns, sizes in KiB/MiB/GiB and times in ISO 8601 UTC.

Only click is needed: tables come from ``_table``, progress is one line on a
terminal's stderr, and the conformance runner is imported only when
``binlog conformance`` runs.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import importlib
import json
import os
import re
import secrets
import signal
import stat as stat_module
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, MutableMapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any, BinaryIO, NoReturn

import click

from ._format import HEADER_SIZE, RECORD_HEADER_SIZE
from ._index_build import build_index
from ._maintenance import CODECS, compress_segments, repair, retain
from ._reader import Reader
from ._records import Entry
from ._ref import Ref
from ._segment_file import LocalDirectory, require_log_directory
from ._sparse_index import DEFAULT_INTERVAL, MAX_INTERVAL
from ._stat import SegmentStat, stat
from ._subscribers import (
    SubscriberInfo,
    add_subscriber,
    get_subscriber,
    lag,
    last_ref,
    list_subscribers,
    remove_subscriber,
    reset_subscriber,
)
from ._table import human_size, table
from ._verify import SegmentReport, VerifyReport
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
       (export --tolerant still writes the records it could read)
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
    except ModuleNotFoundError as exc:  # an optional extra not installed: its message says which to install
        _fail(EXIT_ERROR, f"error: {exc}")
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


class _LazyGroup(click.Group):
    """A group of subcommands whose module is imported only when it is used.

    ``binlog --help`` lists it from the short help given here, without the
    import; running it (its ``--help`` included), or asking for its
    subcommands, imports ``module:attribute`` and hands over to that group.
    """

    def __init__(self, name: str, target: str, *, short_help: str) -> None:
        self._target = target
        self._loaded: click.Group | None = None
        super().__init__(name, short_help=short_help)

    def _load(self) -> click.Group:
        if self._loaded is None:
            module, _, attribute = self._target.partition(":")
            group = getattr(importlib.import_module(module), attribute)
            if not isinstance(group, click.Group):
                raise TypeError(f"{self._target} is not a click group")
            self._loaded = group
        return self._loaded

    @property
    def commands(self) -> MutableMapping[str, click.Command]:
        return self._load().commands

    @commands.setter
    def commands(self, _value: MutableMapping[str, click.Command]) -> None:
        pass  # click.Group's constructor sets an empty mapping; the loaded group's own is used instead

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        return self._load().make_context(info_name, args, parent, **extra)

    def get_help(self, ctx: click.Context) -> str:
        return self._load().get_help(ctx)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return self._load().list_commands(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return self._load().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        return self._load().invoke(ctx)


# -- output for people ------------------------------------------------------------------------------------------


def _styled(text: str, **style: Any) -> str:
    """``text`` in colour or bold when standard output is a terminal (and NO_COLOR is not set); else as is."""
    if not sys.stdout.isatty() or os.environ.get("NO_COLOR"):
        return text
    return click.style(text, **style)


def _echo_table(lines: list[str], *, header: bool = True) -> None:
    for number, line in enumerate(lines):
        click.echo(_styled(line, bold=True) if header and number == 0 else line)


class _Progress:
    """A transient status line on a terminal's stderr: a spinner, what is under way, a count, the seconds.

    Redrawn by a thread ten times a second (a long verify has no count to
    advance) and erased when the work ends, however it ends.
    """

    _FRAMES = "|/-\\"

    def __init__(self, what: str, unit: str | None) -> None:
        self.what = what
        self.unit = unit
        self.count = 0
        self._started = time.monotonic()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="binlog-progress", daemon=True)

    def advance(self, amount: int) -> None:
        self.count += amount

    def _write(self, text: str) -> bool:
        try:
            sys.stderr.write(text)
            sys.stderr.flush()
        except (OSError, ValueError):  # the terminal went away: progress is not worth an error
            return False
        return True

    def _run(self) -> None:
        frame = 0
        while True:
            counted = f" {self.count:,} {self.unit}" if self.unit is not None else ""
            seconds = time.monotonic() - self._started
            line = f"\r{self._FRAMES[frame % len(self._FRAMES)]} {self.what}{counted}  {seconds:.0f}s\x1b[K"
            if not self._write(line) or self._done.wait(0.1):
                return
            frame += 1

    def __enter__(self) -> Callable[[int], None]:
        self._thread.start()
        return self.advance

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._done.set()
        self._thread.join()
        self._write("\r\x1b[K")


@contextmanager
def _progress(what: str, *, unit: str | None = None, enabled: bool = True) -> Iterator[Callable[[int], None]]:
    """A transient progress line (with a count of ``unit``) on stderr, only when stderr is a terminal.

    Yields the function that advances the count.
    """
    if not enabled or not sys.stderr.isatty():
        yield lambda _n: None
        return
    with _Progress(what, unit) as advance:
        yield advance


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


def _regions(count: int) -> str:
    return "1 damaged region" if count == 1 else f"{count} damaged regions"


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


def _exact_size(size: int) -> str:
    """A size for the header view: human, with the exact count beside it once they differ."""
    return f"{size} B" if size < 1024 else f"{human_size(size)} ({size:,} bytes)"


# -- payloads: one view for people and scripts ------------------------------------------------------------------

PAYLOAD_VIEWS = ("text", "hex", "base64", "json")
_ESCAPED = re.compile("[\\\\\x00-\x1f\x7f-\x9f\u2028\u2029\udc80-\udcff]")
_NAMED_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED_ESCAPES.get(char)
    if named is not None:
        return named
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8, kept by surrogateescape
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}"


def _text_view(payload: bytes) -> str:
    r"""The payload as UTF-8 text on one line, unambiguously: a byte that is not UTF-8 shows as ``\xff``, a
    control character as ``\n``, ``\t``, ``\x00`` or ``\u0085``, and a backslash as ``\\``."""
    return _ESCAPED.sub(_escape, payload.decode("utf-8", "surrogateescape"))


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"number out of range: {text}")
    return value


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def _json_view(payload: bytes) -> tuple[Any, str | None]:
    """The payload parsed as JSON, and None; or, when it is not JSON, its text view and the reason."""
    try:
        return json.loads(payload.decode("utf-8"), parse_float=_finite, parse_constant=_reject_constant), None
    except UnicodeDecodeError as exc:
        return _text_view(payload), f"not UTF-8 (byte {exc.object[exc.start]:#04x} at {exc.start})"
    except ValueError as exc:
        return _text_view(payload), str(exc)
    except RecursionError:
        return _text_view(payload), "nested too deeply"


def _payload_value(payload: bytes, view: str) -> tuple[Any, str | None]:
    if view == "base64":
        return base64.b64encode(payload).decode("ascii"), None
    if view == "hex":
        return payload.hex(), None
    if view == "text":
        return _text_view(payload), None
    return _json_view(payload)


def _entry_json(entry: Entry, view: str = "base64") -> dict[str, Any]:
    payload, error = _payload_value(entry.payload, view)
    row = {
        "log": entry.log,
        "offset": entry.offset,
        "index": entry.index,
        "asqn": entry.asqn,
        "timestamp": _iso(entry.timestamp_us),
        "checked": entry.checked,
        "ref": str(entry.ref),
        "payload": payload,
    }
    if error is not None:
        row["payload_error"] = error
    return row


NOT_JSON_MARK = "!not JSON: "


def _print_entry(entry: Entry, fmt: str, view: str | None = None) -> bool:
    """One record on one line; False when ``--payload json`` met a payload that is not JSON (shown marked)."""
    if fmt == "jsonl":
        row = _entry_json(entry, view or "base64")
        click.echo(json.dumps(row, separators=(",", ":")))
        return "payload_error" not in row
    if view is None or view == "text":
        click.echo(f"{entry.ref}\t{_text_view(entry.payload)}")
        return True
    value, error = _payload_value(entry.payload, view)
    if view == "json":
        shown = NOT_JSON_MARK + value if error is not None else json.dumps(value, separators=(",", ":"))
        click.echo(f"{entry.ref}\t{shown}")
        return error is None
    click.echo(f"{entry.ref}\t{value}")
    return True


def _emit_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2))


# -- parameters -------------------------------------------------------------------------------------------------


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
_AGO = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$", re.I)  # in a TIME the unit is required: 2026 is a year
_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


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
    return float(match[1]) * _SECONDS[match[2].lower()]


def _parse_time(_ctx: click.Context, _param: click.Parameter, text: str | None) -> int | None:
    """A TIME, as microseconds since the epoch: ISO 8601 (a naive time or a date is UTC), or an age ago."""
    if text is None:
        return None
    match = _AGO.match(text.strip())
    if match is not None:
        return time.time_ns() // 1000 - int(float(match[1]) * _SECONDS[match[2].lower()] * 1_000_000)
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise click.BadParameter(
            f"not a time: {text!r} (ISO 8601 such as 2026-11-24T10:00:00Z or 2026-11-24, or an age ago such as"
            " 10m, 2h, 7d)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // timedelta(microseconds=1)


def _existing_log(ctx: click.Context, _param: click.Parameter, directory: str) -> str:
    # The library's rule (spec 2.3): a missing directory, or one with neither a segment nor LOCK, is not a log.
    if not ctx.resilient_parsing:
        require_log_directory(directory)
    return directory


# Every command but append works on an existing log only; append creates one.
log_dir = click.argument("directory", type=click.Path(file_okay=False, path_type=str), callback=_existing_log)
new_log_dir = click.argument("directory", type=click.Path(file_okay=False, path_type=str))
json_option = click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")


# -- reading ranges ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Range:
    """Which records dump and export read: where to start, when to stop."""

    start: Ref | None = None
    after: Ref | None = None
    from_index: int | None = None
    since_us: int | None = None
    until_us: int | None = None
    count: int | None = None

    def reader(self, directory: str, *, one_segment: bool = False, tolerant: bool = False) -> Reader:
        return Reader(
            directory,
            self.start,
            after=self.after,
            start_index=self.from_index,
            start_time=self.since_us,
            one_segment=one_segment,
            tolerant=tolerant,
        )

    def rows(self, reader: Iterable[Entry]) -> Iterator[Entry]:
        """The records of ``reader`` up to ``--until`` (exclusive) and at most ``--count`` of them."""
        if self.until_us is None and self.count is None:
            yield from reader
            return
        left = self.count
        if left == 0:
            return
        for entry in reader:
            if self.until_us is not None and entry.timestamp_us is not None and entry.timestamp_us >= self.until_us:
                return
            yield entry
            if left is not None:
                left -= 1
                if left == 0:
                    return


_RANGE_HELP = (
    "TIME is ISO 8601 in UTC unless it names its offset (2026-11-24T10:00:00Z, or a date, 2026-11-24, meaning its"
    " midnight) or an age ago (90s, 10m, 2h, 7d, 1w)."
)


def _range_options(command: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option(
            "--from-index", type=click.IntRange(min=0), metavar="N", help="Start at the first record with index >= N."
        ),
        click.option(
            "--since", callback=_parse_time, metavar="TIME", help="Start at the first record stamped at or after TIME."
        ),
        click.option(
            "--until",
            callback=_parse_time,
            metavar="TIME",
            help="Stop before the first record stamped at or after TIME (so --since A --until B and --since B"
            " do not overlap).",
        ),
        click.option("--count", type=click.IntRange(min=0), metavar="N", help="Read at most N records."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _range(
    *,
    start: Ref | None = None,
    after: Ref | None = None,
    from_index: int | None,
    since: int | None,
    until: int | None,
    count: int | None,
) -> _Range:
    given = {"--start": start, "--after": after, "--from-index": from_index, "--since": since}
    starts = [name for name, value in given.items() if value is not None]
    if len(starts) > 1:
        raise click.UsageError(f"give one place to start, not {' and '.join(starts)}")
    if since is not None and until is not None and until <= since:
        raise click.UsageError("--until is not after --since: no record could be read")
    return _Range(start, after, from_index, since, until, count)


# -- one segment, one JSON shape --------------------------------------------------------------------------------


def _segment_json(item: SegmentStat) -> dict[str, Any]:
    """A segment as stat, meta, verify and info --json show it: the same keys, exact integers, ISO 8601 times
    beside the microseconds they render."""
    shape = asdict(item)
    shape["first_timestamp"] = _iso(item.first_timestamp_us)
    shape["last_timestamp"] = _iso(item.last_timestamp_us)
    shape["created"] = _iso(item.created_us)
    return shape


def _segment_json_from_report(seg: SegmentReport) -> dict[str, Any]:
    """The same shape from what verify read, for a log whose headers stat cannot read (damage verify reports):
    what only the headers say is null."""
    item = SegmentStat(
        seg.log,
        os.path.basename(seg.path),
        seg.version,
        seg.state,
        seg.path.endswith((".gz", ".zst")),
        seg.file_size,
        seg.records,
        seg.first_index,
        seg.last_index,
        seg.commit_offset,
    )
    return _segment_json(item) | {"flags": None, "capacity": None}


def _segments_json(directory: str, report: VerifyReport | None = None) -> list[dict[str, Any]]:
    """Every segment in the one shape, from the headers (stat); when damage keeps stat from reading them, from
    ``report``, the verify that found it."""
    try:
        return [_segment_json(item) for item in stat(directory)]
    except BinlogIOError:
        raise
    except BinlogError:
        if report is None:
            raise
        return [_segment_json_from_report(seg) for seg in report.segments]


def _totals(segments: list[dict[str, Any]]) -> dict[str, Any]:
    """The log's counts and ranges, from its segments' shapes (stat and info say the same)."""
    with_records = [s for s in segments if s["records"]]
    first = with_records[0] if with_records else None
    last = with_records[-1] if with_records else None
    return {
        "segments": len(segments),
        "records": sum(s["records"] for s in segments),
        "bytes": sum(s["size"] for s in segments),
        "first_index": None if first is None else first["first_index"],
        "last_index": None if last is None else last["last_index"],
        "first_timestamp_us": None if first is None else first["first_timestamp_us"],
        "last_timestamp_us": None if last is None else last["last_timestamp_us"],
    }


def _tail_json(report: VerifyReport) -> dict[str, Any] | None:
    """What lies beyond the last segment's commit point (never damage), with the segment it is in."""
    for seg in reversed(report.segments):
        if seg.tail is not None:
            return {"log": seg.log, "file": os.path.basename(seg.path), **asdict(seg.tail)}
    return None


def _tail_note(tail: dict[str, Any] | None) -> str | None:
    if tail is None or not (tail["adoptable_records"] or tail["extra_bytes"]):
        return None
    return (
        f"{tail['file']}: beyond the commit point {tail['adoptable_records']} complete records,"
        f" {human_size(tail['extra_bytes'])} to truncate ({tail['stop_reason']}); not damage"
    )


def _damage_json(damage: list[Damage]) -> list[dict[str, Any]]:
    return [asdict(item) for item in damage]


# -- the commands -----------------------------------------------------------------------------------------------


def _show_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from .build import build_info  # noqa: PLC0415 - only --version needs it

    info = build_info()
    click.echo(f"binlog {info.version} (decoder: {info.decoder}, encoder: {info.encoder})")
    if info.decoder_note:
        click.echo(f"  pure-Python decoder: {info.decoder_note}")
    click.echo(f"  Python {info.python}")
    installed = [name for name, present in info.extras.items() if present]
    missing = [name for name, present in info.extras.items() if not present]
    extras = ", ".join(installed) or "none"
    click.echo(f"  extras: {extras}" + (f" (not installed: {', '.join(missing)})" if missing else ""))
    ctx.exit()


@click.group(
    cls=_BinlogGroup,
    epilog=EXIT_CODES_HELP,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_show_version,
    help="Show the version, which decoder and encoder run (compiled or pure Python) and the extras; exit.",
)
def main() -> None:
    """Write, read, check and maintain BinLog logs (a log is a directory of segments)."""


@main.command()
@new_log_dir
@click.option("--ack", is_flag=True, help="Print each record's index once it is durable.")
@click.option(
    "--durability", type=click.Choice(DURABILITY_MODES), default="sync", show_default=True, help="When to sync."
)
@click.option(
    "--exclusive",
    is_flag=True,
    help="Hold the log's lock until the input ends: faster; other writers wait (implied by process and mmap).",
)
@click.option(
    "--preallocate",
    type=click.IntRange(min=HEADER_SIZE + RECORD_HEADER_SIZE),
    default=None,
    help="Create segments of this many bytes, zero-filled (needed by --durability mmap).",
)
def append(directory: str, ack: bool, durability: str, exclusive: bool, preallocate: int | None) -> None:
    """Append each line of standard input as one record (the newline is not stored).

    Creates the log if DIRECTORY does not exist. Lines are bytes: any encoding is stored as it is.
    With --durability process or mmap, --ack prints the indexes when the input has ended and the log is synced.
    """
    if durability == "mmap" and preallocate is None:
        raise click.UsageError("--durability mmap needs preallocated segments: give --preallocate")
    buffered: list[int] = []  # the process and mmap modes acknowledge at close (spec 6.5)
    with Writer(
        directory,
        durability=durability,  # type: ignore[arg-type]
        exclusive=exclusive or None,
        preallocate=preallocate,
    ) as writer:
        for line in sys.stdin.buffer:
            ref = writer.append(line[:-1] if line.endswith(b"\n") else line)
            if ack and durability in ("process", "mmap"):
                buffered.append(ref.index)
            elif ack:
                click.echo(ref.index)
    for index in buffered:
        click.echo(index)


@main.command(epilog=_RANGE_HELP)
@log_dir
@click.option("--format", "fmt", type=click.Choice(["jsonl", "text"]), default="jsonl", show_default=True)
@click.option(
    "--payload",
    "view",
    type=click.Choice(PAYLOAD_VIEWS),
    help="How payloads are shown (default: base64 in jsonl, text in text). text: UTF-8 on one line, a byte that"
    " is not UTF-8 as \\xff, control characters and the backslash escaped; json: the payload parsed, and one"
    ' that is not JSON shown as text, marked (jsonl: a "payload_error" key; text: a leading'
    f" '{NOT_JSON_MARK.strip()}'), counted on stderr; the exit code stays 0.",
)
@click.option("--start", type=_RefParam(), help="Start at this ref (LOG:OFFSET:INDEX), inclusive.")
@click.option("--after", type=_RefParam(), help="Start just after this ref.")
@_range_options
@click.option(
    "--one-segment",
    is_flag=True,
    help="Stop at the end of the segment where reading starts, instead of crossing cutovers into the segments"
    " after it.",
)
def dump(
    *,
    directory: str,
    fmt: str,
    view: str | None,
    start: Ref | None,
    after: Ref | None,
    from_index: int | None,
    since: int | None,
    until: int | None,
    count: int | None,
    one_segment: bool,
) -> None:
    """Print the committed records, one per line, then exit (progress on stderr when it is a terminal).

    Every record, or the range the options select. dump never waits: it
    prints what is committed when it reads, across cutovers unless
    --one-segment, and stops at the end. To wait for new records, use tail -f.
    """
    selection = _range(start=start, after=after, from_index=from_index, since=since, until=until, count=count)
    not_json = shown = 0
    # Records printed on a terminal are their own progress.
    with (
        selection.reader(directory, one_segment=one_segment) as reader,
        _progress("dumping", unit="records", enabled=not sys.stdout.isatty()) as advance,
    ):
        for entry in selection.rows(reader):
            if not _print_entry(entry, fmt, view):
                not_json += 1
            shown += 1
            advance(1)
    if not_json:
        click.echo(f"binlog: {not_json} of {shown} payloads are not JSON: shown as text, marked", err=True)


@main.command()
@log_dir
@click.option(
    "-f",
    "--follow",
    is_flag=True,
    help="After the last records, wait for new ones and print each as it is committed, across cutovers, until"
    " Ctrl-C (exit 0) or --for.",
)
@click.option("-n", "--lines", "count", type=click.IntRange(min=0), default=10, show_default=True)
@click.option("--format", "fmt", type=click.Choice(["jsonl", "text"]), default="text", show_default=True)
@click.option(
    "--for", "duration", type=click.FloatRange(min=0), default=None, help="With -f: stop after this many seconds."
)
def tail(directory: str, follow: bool, count: int, fmt: str, duration: float | None) -> None:
    """Print the last records, then (with -f) wait for new ones as they are committed."""
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
    one line on stderr names the first damage. The segments in --json have
    the shape of stat, meta and info --json.
    """
    with _progress("verifying"):
        report = verify_log(directory)
    _require_checked(report.damage)
    if as_json:
        _emit_json(
            {
                "directory": report.directory,
                "ok": report.ok,
                "records": report.records,
                "first_index": report.first_index,
                "last_index": report.last_index,
                "segments": _segments_json(directory, report),
                "tail": _tail_json(report),
                "damage": _damage_json(report.damage),
                "indexes": [asdict(index) for index in report.indexes],
            }
        )
    else:
        span = "" if report.first_index is None else f", indexes {_span(report.first_index, report.last_index)}"
        click.echo(f"{report.directory}: {len(report.segments)} segments, {report.records} records{span}")
        rows = [
            [os.path.basename(seg.path), f"v{seg.version}", seg.state, f"{seg.records} records"]
            for seg in report.segments
        ]
        for line in table(rows, right={3}):
            click.echo(f"  {line}")
        note = _tail_note(_tail_json(report))
        if note is not None:
            click.echo(f"  {note}")
        for index in report.indexes:
            state = "used by seeks and splits" if index.usable else f"not used: {index.reason}"
            click.echo(f"  index {os.path.basename(index.path)}: {state}")
        for damage in report.damage:
            click.echo(_styled(f"  DAMAGE {_damage_as_error(damage)}; {damage.bytes_skipped} bytes skipped", fg="red"))
        if report.ok:
            click.echo(_styled("ok", fg="green"))
        else:
            click.echo(_styled(f"DAMAGED: {_regions(len(report.damage))} in committed data", fg="red", bold=True))
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


def _stat_lines(segments: list[dict[str, Any]]) -> list[str]:
    header = ["segment", "v", "state", "records", "indexes", "from", "to", "size", "commit"]
    rows = [
        [
            seg["file"],
            str(seg["version"]),
            seg["state"],
            str(seg["records"]),
            "" if seg["first_index"] is None else f"{seg['first_index']}..{seg['last_index']}",
            _shown_time(seg["first_timestamp_us"]),
            _shown_time(seg["last_timestamp_us"]),
            human_size(seg["size"]),
            "" if seg["commit_offset"] is None else str(seg["commit_offset"]),
        ]
        for seg in segments
    ]
    return table(rows, header=header, right={3, 7, 8})


@main.command("stat")
@log_dir
@json_option
def stat_command(directory: str, as_json: bool) -> None:
    """Segments, records, index and time ranges, sizes, commit points, open or sealed.

    Reads the headers only (fast; binlog verify checks the records). The
    segments in --json (segments_detail) have the shape of meta, verify and
    info --json.
    """
    segments = _segments_json(directory)
    totals = _totals(segments)
    if as_json:
        _emit_json(
            {
                "directory": directory,
                **{key: totals[key] for key in ("segments", "records", "bytes", "first_index", "last_index")},
                "segments_detail": segments,
            }
        )
        return
    _echo_table(_stat_lines(segments))
    click.echo(
        f"{totals['segments']} segments, {totals['records']} records, {human_size(totals['bytes'])},"
        f" indexes {_span(totals['first_index'], totals['last_index'])}"
    )


@main.command()
@log_dir
@json_option
def meta(directory: str, as_json: bool) -> None:
    """Every header field of every segment: log id, base index, flags, both commit slots.

    --json: one object per segment, in the shape of stat, verify and info --json.
    """
    segments = _segments_json(directory)
    if as_json:
        _emit_json(segments)
        return
    for seg in segments:
        click.echo(f"{seg['file']}: version {seg['version']}, {seg['state']}, {_exact_size(seg['size'])}")
        if seg["version"] == 2:
            click.echo(f"  log id {seg['log_id']}, created {_shown_time(seg['created_us'])}")
            click.echo(
                f"  flags {seg['flags']:#010x}, capacity {_exact_size(seg['capacity'])},"
                f" indexes {_span(seg['first_index'], seg['last_index'])}"
            )
            for number, slot in enumerate(seg["slots"]):
                click.echo(f"  slot {number}: {_slot_text(slot)}")


def _slot_text(slot: dict[str, int] | None) -> str:
    if slot is None:
        return "empty or invalid"
    fields = [
        f"{name.removesuffix('_us').replace('_', ' ')} {_shown_time(value) if name.endswith('_us') else value}"
        for name, value in slot.items()
    ]
    return ", ".join(fields)


def _lag_or_none(directory: str, info: SubscriberInfo, last: Ref | None) -> int | None:
    """A subscriber's lag; None when damage keeps the records it counts from being read."""
    try:
        return lag(directory, info, last)
    except CorruptionError:
        return None


def _subscribers_json(directory: str, *, damaged_ok: bool = False) -> list[dict[str, Any]]:
    """Every subscriber with its checkpoint and lag; with ``damaged_ok`` a lag that damage hides is null."""
    subscribers = list_subscribers(directory)
    if not subscribers:
        return []
    try:
        last = last_ref(directory)
    except CorruptionError:
        if not damaged_ok:
            raise
        return [{"name": i.name, "checkpoint": _checkpoint(i), "lag": None} for i in subscribers]
    lag_of = _lag_or_none if damaged_ok else lag
    return [{"name": i.name, "checkpoint": _checkpoint(i), "lag": lag_of(directory, i, last)} for i in subscribers]


def _checkpoint(info: SubscriberInfo) -> str | None:
    return None if info.checkpoint is None else str(info.checkpoint)


def _state_counts(segments: list[dict[str, Any]]) -> dict[str, int]:
    counts = {state: 0 for state in ("sealed", "finished", "open", "blank")}
    for seg in segments:
        counts[seg["state"]] = counts.get(seg["state"], 0) + 1
    return counts


@main.command()
@log_dir
@click.option(
    "--quick",
    is_flag=True,
    help="Read the headers only: no record is checked, so damage is not looked for (the damage line says so).",
)
@json_option
def info(directory: str, quick: bool, as_json: bool) -> None:
    """One screen about a log: segments, records, index and time ranges, size on disk, damage, subscribers.

    Checks every committed record, as verify does (exit 1 on damage, the
    report still printed), unless --quick. --json has exact numbers and the
    segments in the shape of stat, meta and verify --json.
    """
    report: VerifyReport | None = None
    if not quick:
        with _progress("verifying"):
            report = verify_log(directory)
        _require_checked(report.damage)
    segments = _segments_json(directory, report)
    totals = _totals(segments)
    subscribers = _subscribers_json(directory, damaged_ok=True)
    tail_json = None if report is None else _tail_json(report)
    damage = [] if report is None else report.damage
    states = _state_counts(segments)
    compressed = sum(1 for seg in segments if seg["compressed"])
    if as_json:
        _emit_json(
            {
                "directory": directory,
                **totals,
                "first_timestamp": _iso(totals["first_timestamp_us"]),
                "last_timestamp": _iso(totals["last_timestamp_us"]),
                "segment_states": states,
                "plain_segments": len(segments) - compressed,
                "compressed_segments": compressed,
                "checked": "headers" if quick else "records",
                "ok": None if report is None else report.ok,
                "damage": _damage_json(damage),
                "tail": tail_json,
                "subscribers": subscribers,
                "segments_detail": segments,
            }
        )
        _raise_damage(damage)
        return
    state_text = ", ".join(f"{n} {state}" for state, n in states.items() if n) or "none"
    rows = [
        ["log", directory],
        ["segments", f"{len(segments)}: {state_text}; {len(segments) - compressed} plain, {compressed} compressed"],
        ["records", f"{totals['records']:,}, indexes {_span(totals['first_index'], totals['last_index'])}"],
        ["time", _time_range(totals["first_timestamp_us"], totals["last_timestamp_us"], totals["records"])],
        ["on disk", f"{human_size(totals['bytes'])} in segments"],
    ]
    if report is None:
        rows.append(["damage", "not looked for (--quick reads headers only; binlog verify checks every record)"])
    elif report.ok:
        rows.append(["damage", _styled("none: every committed record checked", fg="green")])
    else:
        first = _damage_as_error(damage[0])
        rows.append(["damage", _styled(f"{_regions(len(damage))}; the first: {first}", fg="red", bold=True)])
    note = _tail_note(tail_json)
    if note is not None:
        rows.append(["tail", note])
    if not subscribers:
        rows.append(["subscribers", "none"])
    for sub in subscribers:
        behind = "unknown (damage)" if sub["lag"] is None else f"{sub['lag']:,}"
        rows.append([f"subscriber {sub['name']}", f"lag {behind}, checkpoint {sub['checkpoint'] or '(start)'}"])
    for line in table(rows):
        click.echo(line)
    _raise_damage(damage)


def _time_range(first: int | None, last: int | None, records: int) -> str:
    if not records:
        return "none"
    return f"{_shown_time(first) or 'unknown'} .. {_shown_time(last) or 'unknown'}"


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
        "bytes": sum(i.size for i in items),
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


def _monitor_lines(directory: str, frame: dict[str, Any]) -> list[str]:
    def shown(value: object) -> str:
        return "-" if value is None else str(value)

    rows = [
        ["segments", str(frame["segments"])],
        ["on disk", human_size(frame["bytes"])],
        ["last segment", shown(frame["last_segment"])],
        ["commit point", shown(frame["commit_offset"])],
        ["last index", shown(frame["last_index"])],
        ["appends/s", f"{frame['appends_per_second']:,.1f}"],
    ]
    rows += [[f"subscriber {sub['name']}", f"lag {sub['lag']}"] for sub in frame["subscribers"]]
    return [f"binlog monitor {directory}  {frame['time']}", *table(rows)]


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
    """A live view of appends per second, the commit point, size and subscriber lag.

    On a terminal the view is redrawn in place; otherwise each refresh is
    printed after the last, a blank line apart. Runs until Ctrl-C (exit 0) or
    --count refreshes.
    """
    in_place = sys.stdout.isatty()
    height = 0
    try:
        for frame in _monitor_frames(directory, interval, count):
            if as_json:
                click.echo(json.dumps(frame, separators=(",", ":")))
                continue
            lines = _monitor_lines(directory, frame)
            if in_place and height:
                click.echo(f"\x1b[{height}F\x1b[J", nl=False)  # back to the view's first line, erase it all
            elif height:
                click.echo()
            click.echo(_styled(lines[0], bold=True))
            for line in lines[1:]:
                click.echo(line)
            height = len(lines)
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
        amount = (
            f", {human_size(action.bytes)}" if action.bytes else f", {action.records} records" if action.records else ""
        )
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
        name = os.path.basename(item.path)
        if dry_run:
            click.echo(f"would compress {name} ({human_size(item.original_bytes)})")
        else:
            click.echo(f"compressed {name}: {_shrunk(item.original_bytes, item.compressed_bytes)}")
    if not done:
        click.echo("no sealed segment left to compress")
    elif not dry_run and len(done) > 1:
        before, after = sum(d.original_bytes for d in done), sum(d.compressed_bytes for d in done)
        click.echo(f"{len(done)} segments compressed: {_shrunk(before, after)}")


@main.command("index")
@log_dir
@click.option(
    "--interval",
    type=click.IntRange(1, MAX_INTERVAL),
    default=DEFAULT_INTERVAL,
    show_default=True,
    metavar="BYTES",
    help="Bytes between index entries: a seek walks about this far from the entry before its target.",
)
@click.option("--rebuild", is_flag=True, help="Walk every finished segment again, even one whose index is current.")
@json_option
def index_command(directory: str, interval: int, rebuild: bool, as_json: bool) -> None:
    """Build the sparse index (NNNNNNNN.idx) of every finished segment, version 1 included.

    Seeks (--from-index, --since) and split reads then start near their target
    instead of walking whole segments. An index is never trusted: readers check
    each entry against the records, and read correctly without any index. The
    last segment is indexed once a cutover has finished it; a damaged segment
    is not indexed, and the damage is reported (exit code 1). A segment whose
    index is current is left alone after reading headers only, so running this
    after each cutover (from cron, as binlog cutover) costs little.
    """
    with _progress("indexing", unit="segments") as advance:
        results = []
        for log in LocalDirectory(directory).segments():
            results.append(build_index(directory, log, interval=interval, rebuild=rebuild))
            advance(1)
    damage = [result.damage for result in results if result.damage is not None]
    if as_json:
        _emit_json([{k: v for k, v in asdict(r).items() if k != "damage"} for r in results])
    else:
        for result in results:
            name = os.path.basename(result.path)
            if result.status == "skipped":
                click.echo(f"{name}: not built, {result.reason}")
            else:
                click.echo(f"{name}: {result.status}, {result.entries} entries")
    _raise_damage(damage)


def _shrunk(before: int, after: int) -> str:
    ratio = f" ({after / before:.0%})" if before else ""
    return f"{human_size(before)} -> {human_size(after)}{ratio}"


def _export_rows(directory: str, selection: _Range, tolerant: bool, damage: list[Damage]) -> Iterator[Entry]:
    """The selected records; with ``tolerant`` damaged regions are skipped and listed in ``damage`` at the end."""
    with selection.reader(directory, tolerant=tolerant) as reader:
        yield from selection.rows(reader)
        damage.extend(reader.damage)


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


@main.command(epilog=_RANGE_HELP)
@log_dir
@click.option("--format", "fmt", type=click.Choice(["jsonl", "parquet", "arrow"]), default="jsonl", show_default=True)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True, path_type=str),
    required=True,
    help="The file to write; '-' is standard output (jsonl only).",
)
@_range_options
@click.option(
    "--tolerant",
    is_flag=True,
    help="Skip damaged regions instead of stopping at the first: the records read are written and the file"
    " kept, the damage is listed (stderr, and 'damage' in --json) and the exit code is 1.",
)
@json_option
def export(
    *,
    directory: str,
    fmt: str,
    output: str,
    from_index: int | None,
    since: int | None,
    until: int | None,
    count: int | None,
    tolerant: bool,
    as_json: bool,
) -> None:
    """Write the committed records (all, or a range) to a JSON-lines, Parquet or Arrow IPC file.

    The file is written under a temporary name beside it and renamed into
    place only when complete: on damage (exit 1), an error or Ctrl-C no
    partial file is left and a previous file of that name is untouched.
    With --tolerant, damage does not stop the export: the file holds every
    record that could be read and is kept, and the exit code is still 1.
    The output may not lie in the log directory.
    """
    selection = _range(from_index=from_index, since=since, until=until, count=count)
    to_stdout = output == "-"
    if to_stdout and fmt != "jsonl":
        raise click.BadParameter(f"{fmt} cannot be streamed to standard output: give a file", param_hint="'-o'")
    if to_stdout and as_json:
        raise click.UsageError("--json reports on standard output, where -o - would write the records")
    damage: list[Damage] = []
    rows = _export_rows(directory, selection, tolerant, damage)
    try:
        # Records streamed to a terminal are their own progress.
        with _progress("exporting", unit="records", enabled=not (to_stdout and sys.stdout.isatty())) as advance:
            if to_stdout:
                written = _EXPORTERS[fmt](rows, sys.stdout.buffer, advance)
                _require_checked(damage)
            else:
                target = _export_target(directory, output)
                with _replacing(target) as out:
                    written = _EXPORTERS[fmt](rows, out, advance)
                    _require_checked(damage)  # a region that could not be read: not checked, so no file
    except CorruptionError as exc:
        if as_json:
            stopped = Damage.from_error(exc, bytes_skipped=0, next_index=None)
            _emit_json(_export_report(output, fmt, 0, [stopped], tolerant=tolerant, written=False))
        raise
    if as_json:
        _emit_json(_export_report(output, fmt, written, damage, tolerant=tolerant, written=True))
    elif not to_stdout:
        skipped = f"; {_regions(len(damage))} skipped (the file is kept)" if damage else ""
        click.echo(f"{written} records written to {output}{skipped}")
    _raise_damage(damage)


def _export_report(
    output: str, fmt: str, records: int, damage: list[Damage], *, tolerant: bool, written: bool
) -> dict[str, Any]:
    """export --json: ``written`` says whether ``output`` now holds this export (kept on damage only if
    tolerant); ``damage`` lists each damaged region, in verify's shape."""
    return {
        "output": output,
        "format": fmt,
        "records": records,
        "written": written,
        "tolerant": tolerant,
        "damage": _damage_json(damage),
    }


def _export_jsonl(rows: Iterator[Entry], out: BinaryIO, advance: Callable[[int], None]) -> int:
    count = 0
    for entry in rows:
        out.write(json.dumps(_entry_json(entry), separators=(",", ":")).encode() + b"\n")
        count += 1
        advance(1)
    return count


def _export_arrow(rows: Iterator[Entry], out: BinaryIO, advance: Callable[[int], None], *, parquet: bool) -> int:
    from ._optional import require  # noqa: PLC0415 - only these exports need Arrow; keep the CLI quick to start

    pa = require("pyarrow", "arrow", "Parquet and Arrow export")
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
        pq = require("pyarrow.parquet", "arrow", "Parquet export")
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
        click.echo(f"{verb} segment {decision.log:08d}: {decision.reason} ({human_size(decision.size)})")
    removed = [d for d in decisions if d.remove]
    if removed:
        freed = human_size(sum(d.size for d in removed))
        click.echo(f"{len(removed)} segments, {freed}, {'would be removed' if dry_run else 'removed'}")
    else:
        click.echo("nothing to remove")


@main.group()
def subscriber() -> None:
    """Named durable subscribers: checkpoints kept in the log directory."""


@subscriber.command("list")
@log_dir
@json_option
def subscriber_list(directory: str, as_json: bool) -> None:
    """Every subscriber with its checkpoint and lag."""
    rows = _subscribers_json(directory)
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
    row = {"name": info.name, "checkpoint": _checkpoint(info), "lag": behind}
    if as_json:
        _emit_json(row)
    else:
        click.echo(f"{row['name']}: checkpoint {row['checkpoint'] or '(start)'}, lag {behind}")


@subscriber.command("reset")
@log_dir
@click.argument("name")
@click.option("--to", "to", type=_RefParam(), help="The last record to count as consumed: reading resumes after it.")
@click.option("--earliest", is_flag=True, help="Nothing consumed: reading resumes at the first record.")
@click.option("--latest", is_flag=True, help="Everything committed now consumed: reading resumes after it.")
@json_option
def subscriber_reset(*, directory: str, name: str, to: Ref | None, earliest: bool, latest: bool, as_json: bool) -> None:
    """Move a subscriber's checkpoint: --to REF, --earliest or --latest (give one).

    --to must name a committed record of the log (exit 2 otherwise, nothing
    changed). Stop the consumer first: one running under this name keeps its
    own position and overwrites the checkpoint at its next commit.
    """
    if sum((to is not None, earliest, latest)) != 1:
        raise click.UsageError("give one of --to REF, --earliest and --latest")
    previous = get_subscriber(directory, name)
    target = last_ref(directory) if latest else to
    info = reset_subscriber(directory, name, to=target)
    row = {
        "name": info.name,
        "checkpoint": _checkpoint(info),
        "previous": _checkpoint(previous),
        "lag": lag(directory, info, last_ref(directory)),
    }
    if as_json:
        _emit_json(row)
    else:
        click.echo(
            f"{info.name}: checkpoint {row['checkpoint'] or '(start)'} (was {row['previous'] or '(start)'}),"
            f" lag {row['lag']}"
        )


# The conformance runner is its own package; the reference CLI only exposes it, imported when it is used.
main.add_command(
    _LazyGroup(
        "conformance",
        "openbinlog_conformance.cli:conformance_group",
        short_help="Run the BinLog conformance suite (spec/conformance.md) against implementations.",
    )
)
