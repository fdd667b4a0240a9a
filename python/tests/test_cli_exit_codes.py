"""Exit codes a CI pipeline can trust, and commands that never destroy data (issue #16).

0 intact or done; 1 committed data damaged; 2 usage error, I/O error or not a
log; 130 Ctrl-C; 141 standard output closed early. Every 1 or 2 says why on
stderr, in one line; nothing ever prints a traceback or "None".
"""

from __future__ import annotations

import errno
import json
import os
import pty
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow.ipc
import pyarrow.parquet
import pytest
from click.testing import CliRunner
from logtools import flip_bit, one_line_on_stderr, read_entries, segment, tree_digest, write_log

from openbinlog import Writer, add_subscriber
from openbinlog import cli as cli_module
from openbinlog.cli import main

BINLOG = [sys.executable, "-m", "openbinlog"]


def cli(*args: str, stdin: bytes = b"") -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), input=stdin, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def run(*args: str, **options: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [*BINLOG, *args], capture_output=True, text=True, timeout=60, check=False, **options
    )


def temp_files(folder: Path) -> list[str]:
    return [name for name in os.listdir(folder) if name.endswith(".tmp")]


@pytest.fixture
def small_log(log_dir: Path) -> Path:
    write_log(log_dir, [b"one", b"two", b"three"])
    return log_dir


@pytest.fixture
def damaged_log(small_log: Path) -> Path:
    flip_bit(segment(small_log), 256 + 43 + 41)  # the payload of record 2, at offset 299
    return small_log


# -- 1. export never writes into the log, and never leaves a partial file -------------------------


def _output_in_the_log(log: Path, tmp_path: Path, how: str) -> str:
    if how == "segment":
        return str(segment(log))
    if how == "new file in the log":
        return str(log / "export.jsonl")
    if how == "dot-dot":
        return str(log / ".." / log.name / "export.jsonl")
    if how == "symlinked folder":
        (tmp_path / "alias").symlink_to(log, target_is_directory=True)
        return str(tmp_path / "alias" / "00000001.dat")
    if how == "symlink to a segment":
        (tmp_path / "out.jsonl").symlink_to(segment(log))
        return str(tmp_path / "out.jsonl")
    assert how == "hard link to a segment"
    os.link(segment(log), tmp_path / "out.jsonl")
    return str(tmp_path / "out.jsonl")


@pytest.mark.parametrize(
    "how",
    [
        "segment",
        "new file in the log",
        "dot-dot",
        "symlinked folder",
        "symlink to a segment",
        "hard link to a segment",
    ],
)
def test_export_into_the_log_is_refused_and_the_segment_survives(small_log: Path, tmp_path: Path, how: str) -> None:
    output = _output_in_the_log(small_log, tmp_path, how)
    before = tree_digest(small_log)
    code, out, err = cli("export", str(small_log), "-o", output)
    assert code == 2, (out, err)
    assert "export never" in err and "records written" not in out
    assert tree_digest(small_log) == before
    assert [e.payload for e in read_entries(small_log)] == [b"one", b"two", b"three"]


@pytest.mark.parametrize("fmt", ["jsonl", "parquet", "arrow"])
def test_export_of_a_damaged_log_leaves_the_previous_file_and_no_partial_one(
    damaged_log: Path, tmp_path: Path, fmt: str
) -> None:
    target = tmp_path / f"out.{fmt}"
    target.write_bytes(b"previous export")
    code, out, err = cli("export", str(damaged_log), "--format", fmt, "-o", str(target))
    assert code == 1, (out, err)
    one_line_on_stderr(err, "damage", "00000001.dat", "offset 299", "index 2")
    assert target.read_bytes() == b"previous export"
    assert temp_files(tmp_path) == []


def test_export_json_reports_the_damage_and_that_nothing_was_written(damaged_log: Path, tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    code, out, err = cli("export", str(damaged_log), "-o", str(target), "--json")
    assert code == 1
    report = json.loads(out)
    assert (report["records"], report["output"], report["written"], report["tolerant"]) == (
        0,
        str(target),
        False,
        False,
    )
    assert [(d["error_class"], d["offset"], d["index"]) for d in report["damage"]] == [("checksum_mismatch", 299, 2)]
    one_line_on_stderr(err, "offset 299")
    assert not target.exists()


def test_export_json_reports_rows_and_path_and_keeps_the_replaced_files_mode(small_log: Path, tmp_path: Path) -> None:
    target = tmp_path / "out.parquet"
    target.write_bytes(b"old")
    target.chmod(0o640)
    code, out, err = cli("export", str(small_log), "--format", "parquet", "-o", str(target), "--json")
    assert code == 0, err
    assert json.loads(out) == {
        "output": str(target),
        "format": "parquet",
        "records": 3,
        "written": True,
        "tolerant": False,
        "damage": [],
    }
    assert pyarrow.parquet.read_table(target).column("payload").to_pylist() == [b"one", b"two", b"three"]
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert temp_files(tmp_path) == []


def test_export_interrupted_in_process_leaves_no_partial_file(
    small_log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_rows = cli_module._export_rows

    def interrupted(directory: str, *selection: object) -> Iterator[object]:
        rows = real_rows(directory, *selection)  # type: ignore[arg-type]
        yield next(rows)
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_module, "_export_rows", interrupted)
    target = tmp_path / "out.arrow"
    target.write_bytes(b"previous export")
    code, _, err = cli("export", str(small_log), "--format", "arrow", "-o", str(target))
    assert code == 130
    one_line_on_stderr(err, "interrupted")
    assert target.read_bytes() == b"previous export"
    assert temp_files(tmp_path) == []


# A real process, a real signal: the export is held after its first row until the signal arrives.
_HELD_EXPORT = """
import pathlib, sys, time
from openbinlog import cli
ready = pathlib.Path(sys.argv[1])
real_rows = cli._export_rows
def held(directory, *selection):
    for entry in real_rows(directory, *selection):
        yield entry
        ready.touch()
        time.sleep(60)
cli._export_rows = held
sys.argv = ["binlog", *sys.argv[2:]]
cli.main()
"""


@pytest.mark.parametrize(
    ("stop", "code", "said"),
    [(signal.SIGINT, 130, "binlog: interrupted\n"), (signal.SIGTERM, 143, "")],
    ids=["sigint", "sigterm"],
)
def test_export_stopped_by_a_signal_leaves_no_partial_file(
    small_log: Path, tmp_path: Path, stop: signal.Signals, code: int, said: str
) -> None:
    target = tmp_path / "out" / "records.jsonl"
    target.parent.mkdir()
    target.write_text("previous export\n")
    ready = tmp_path / "ready"
    process = subprocess.Popen(
        [sys.executable, "-c", _HELD_EXPORT, str(ready), "export", str(small_log), "-o", str(target)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not ready.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ready.exists(), process.communicate()
        assert len(temp_files(target.parent)) == 1  # the export is under way, beside its target
        process.send_signal(stop)
        out, err = process.communicate(timeout=30)
    finally:
        process.kill()  # a no-op once it has exited
        process.wait()
    assert process.returncode == code
    assert out == ""
    assert err == said
    assert target.read_text() == "previous export\n"
    assert temp_files(target.parent) == []


def test_export_dash_is_standard_output_not_a_file_named_dash(small_log: Path, tmp_path: Path) -> None:
    result = run("export", str(small_log), "-o", "-", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert [json.loads(line)["index"] for line in result.stdout.splitlines()] == [1, 2, 3]
    assert result.stderr == ""  # no summary mixed into the data, no progress on a pipe
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize("fmt", ["parquet", "arrow"])
def test_export_dash_refuses_a_binary_format(
    small_log: Path, tmp_path: Path, fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("export", str(small_log), "--format", fmt, "-o", "-")
    assert code == 2
    assert "standard output" in err and out == ""
    assert not (tmp_path / "-").exists()


def test_export_into_a_missing_folder_is_an_io_error_naming_the_target(small_log: Path, tmp_path: Path) -> None:
    code, _, err = cli("export", str(small_log), "-o", str(tmp_path / "absent" / "out.jsonl"))
    assert code == 2
    one_line_on_stderr(err, "cannot create the output file", "out.jsonl")
    assert ".tmp" not in err


def test_export_writes_arrow_that_reads_back(small_log: Path, tmp_path: Path) -> None:
    target = tmp_path / "out.arrow"
    code, out, _ = cli("export", str(small_log), "--format", "arrow", "-o", str(target))
    assert code == 0 and out == f"3 records written to {target}\n"
    assert pyarrow.ipc.open_file(target).read_all().column("index").to_pylist() == [1, 2, 3]


# -- 2. a directory that is not a log is exit 2 in every command, and nothing is created ----------


COMMANDS = [
    ["verify", "{dir}"],
    ["verify", "{dir}", "--json"],
    ["dump", "{dir}"],
    ["tail", "{dir}"],
    ["stat", "{dir}"],
    ["meta", "{dir}"],
    ["info", "{dir}"],
    ["info", "{dir}", "--json"],
    ["info", "{dir}", "--quick"],
    ["monitor", "{dir}", "--count", "1", "--json"],
    ["cutover", "{dir}"],
    ["repair", "{dir}", "--dry-run"],
    ["repair", "{dir}"],
    ["compress", "{dir}", "--dry-run"],
    ["compress", "{dir}"],
    ["retain", "{dir}", "--dry-run"],
    ["retain", "{dir}", "--max-bytes", "1"],
    ["export", "{dir}", "-o", "{out}"],
    ["subscriber", "list", "{dir}"],
    ["subscriber", "show", "{dir}", "audit"],
    ["subscriber", "add", "{dir}", "audit"],
    ["subscriber", "remove", "{dir}", "audit"],
    ["subscriber", "reset", "{dir}", "audit", "--latest"],
]


def _args(command: list[str], directory: Path, out: Path) -> list[str]:
    return [part.format(dir=directory, out=out) for part in command]


@pytest.mark.parametrize("where", ["empty folder", "parent of a log", "missing"])
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c).replace("{dir}", "DIR"))
def test_a_directory_that_is_not_a_log_is_exit_2_and_stays_as_it_was(
    tmp_path: Path, command: list[str], where: str
) -> None:
    directory = tmp_path / "not-a-log"
    if where != "missing":
        directory.mkdir()
    if where == "parent of a log":
        write_log(directory / "log", [b"x"])
    before = tree_digest(tmp_path)
    code, out, err = cli(*_args(command, directory, tmp_path / "out.jsonl"))
    assert code == 2, (out, err)
    one_line_on_stderr(err, "binlog: not a log:", str(directory))
    assert "None" not in out + err
    assert tree_digest(tmp_path) == before
    assert directory.exists() == (where != "missing")


# -- 3. an unreadable segment is an I/O error (2), never damage (1), and never "None" --------------


@pytest.fixture
def refuse_segments(monkeypatch: pytest.MonkeyPatch) -> None:
    """Opening an existing segment fails as chmod 000 would (root reads through chmod, so simulate it)."""
    real_open = os.open

    def refusing_open(path: str, flags: int, *args: int) -> int:
        if str(path).endswith(".dat") and os.path.exists(path):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", refusing_open)


@pytest.mark.parametrize(
    "command",
    [c for c in COMMANDS if c[:2] != ["subscriber", "add"] and c[:2] != ["subscriber", "remove"]]
    + [["append", "{dir}"]],
    ids=lambda c: " ".join(c).replace("{dir}", "DIR"),
)
def test_an_unreadable_segment_is_exit_2_in_every_command(
    tmp_path: Path, command: list[str], request: pytest.FixtureRequest
) -> None:
    log = tmp_path / "log"
    write_log(log, [b"a", None, b"b"])
    add_subscriber(log, "audit")
    request.getfixturevalue("refuse_segments")
    code, out, err = cli(*_args(command, log, tmp_path / "out.jsonl"))
    assert code == 2, (out, err)
    one_line_on_stderr(err, "Permission denied", "00000")
    assert "None" not in out + err
    assert out == ""  # nothing reported as if the log had been checked


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_a_chmod_000_segment_is_exit_2_in_verify(small_log: Path) -> None:
    segment(small_log).chmod(0)
    try:
        result = run("verify", str(small_log))
    finally:
        segment(small_log).chmod(0o644)
    assert result.returncode == 2
    one_line_on_stderr(result.stderr, "Permission denied")


# -- 4. verify says on stderr why it exits 1 -------------------------------------------------------


@pytest.mark.parametrize("as_json", [False, True])
def test_verify_names_the_first_damage_on_stderr(damaged_log: Path, as_json: bool) -> None:
    code, out, err = cli("verify", str(damaged_log), *(["--json"] if as_json else []))
    assert code == 1
    one_line_on_stderr(err, "damage", "1 damaged region", "00000001.dat", "offset 299", "index 2", "checksum_mismatch")
    if as_json:
        assert json.loads(out)["ok"] is False  # stdout stays a clean report
    else:
        assert "offset 299" in out and "None" not in out


def test_verify_counts_every_damaged_region_on_stderr(small_log: Path) -> None:
    flip_bit(segment(small_log), 256 + 40)  # record 1's payload
    flip_bit(segment(small_log), 256 + 43 + 43 + 40)  # record 3's payload
    code, out, err = cli("verify", str(small_log))
    assert code == 1
    one_line_on_stderr(err, "2 damaged regions; the first:", "offset 256", "index 1")
    assert out.count("DAMAGE ") == 2


def test_repair_dry_run_names_damage_without_none(damaged_log: Path) -> None:
    before = tree_digest(damaged_log)
    code, out, err = cli("repair", str(damaged_log), "--dry-run")
    assert code == 1
    one_line_on_stderr(err, "offset 299", "index 2")
    assert "None" not in out
    assert tree_digest(damaged_log) == before


# -- 5. a closed pipe: exit 141, not a word -------------------------------------------------------


def test_dump_into_head_exits_141_quietly(log_dir: Path) -> None:
    write_log(log_dir, [f"record {n}".encode() for n in range(10_000)], durability="os")  # far beyond a pipe buffer
    dump = subprocess.Popen([*BINLOG, "dump", str(log_dir)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    head = subprocess.Popen(["head", "-1"], stdin=dump.stdout, stdout=subprocess.PIPE)
    assert dump.stdout is not None
    dump.stdout.close()  # head holds the only reading end
    first, _ = head.communicate(timeout=60)
    _, err = dump.communicate(timeout=60)
    assert json.loads(first)["index"] == 1
    assert dump.returncode == 141
    assert err == b""


def _into_a_closed_pipe(args: list[str], cwd: Path, stdin: bytes = b"") -> tuple[int, bytes]:
    reading, writing = os.pipe()
    os.close(reading)  # the first write fails with EPIPE
    try:
        result = subprocess.run(
            [*BINLOG, *args], input=stdin, stdout=writing, stderr=subprocess.PIPE, cwd=cwd, timeout=60, check=False
        )
    finally:
        os.close(writing)
    return result.returncode, result.stderr


@pytest.mark.parametrize(
    "command",
    [
        ["dump", "{dir}"],
        ["stat", "{dir}"],
        ["meta", "{dir}"],
        ["verify", "{dir}"],
        ["verify", "{dir}", "--json"],
        ["info", "{dir}"],
        ["info", "{dir}", "--json"],
        ["tail", "{dir}"],
        ["monitor", "{dir}", "--count", "1"],
        ["monitor", "{dir}", "--count", "1", "--json"],
        ["export", "{dir}", "-o", "-"],
        ["export", "{dir}", "-o", "-", "--tolerant"],
        ["dump", "{dir}", "--payload", "json", "--format", "text"],
        ["subscriber", "list", "{dir}"],
        ["--help"],
    ],
    ids=lambda c: " ".join(c).replace("{dir}", "DIR"),
)
def test_a_closed_stdout_is_exit_141_without_a_word(small_log: Path, tmp_path: Path, command: list[str]) -> None:
    code, err = _into_a_closed_pipe(_args(command, small_log, tmp_path / "unused"), tmp_path)
    assert (code, err) == (141, b"")


def test_append_ack_into_a_closed_pipe_stops_quietly_after_the_durable_record(log_dir: Path) -> None:
    code, err = _into_a_closed_pipe(["append", str(log_dir), "--ack"], log_dir.parent, stdin=b"first\nsecond\nthird\n")
    assert (code, err) == (141, b"")
    assert [e.payload for e in read_entries(log_dir)] == [b"first"]  # appended and durable; its ack was lost
    assert cli("verify", str(log_dir))[0] == 0


# -- 6. numeric options are validated; monitor, cutover and export report in JSON -----------------


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["monitor", "--interval", "-1", "--count", "2"], "'--interval'"),
        (["monitor", "--interval", "0", "--count", "2"], "'--interval'"),
        (["monitor", "--count", "0"], "'--count'"),
        (["tail", "--for", "-1"], "'--for'"),
        (["tail", "-n", "-1"], "'-n' / '--lines'"),
        (["retain", "--max-age", "soon"], "'--max-age'"),
        (["retain", "--max-bytes", "lots"], "'--max-bytes'"),
    ],
)
def test_bad_numbers_are_usage_errors(small_log: Path, options: list[str], named: str) -> None:
    code, _, err = cli(options[0], str(small_log), *options[1:])
    assert code == 2
    assert f"Invalid value for {named}" in err
    assert "Traceback" not in err


def test_dump_with_start_and_after_is_a_usage_error(small_log: Path) -> None:
    code, _, err = cli("dump", str(small_log), "--start", "1:256:1", "--after", "1:256:1")
    assert code == 2
    assert "give one place to start, not --start and --after" in err


def test_monitor_json_is_one_object_per_frame(small_log: Path) -> None:
    add_subscriber(small_log, "audit")
    code, out, err = cli("monitor", str(small_log), "--count", "3", "--interval", "0.01", "--json")
    assert code == 0, err
    frames = [json.loads(line) for line in out.splitlines()]
    assert len(frames) == 3
    assert {(f["segments"], f["last_segment"], f["last_index"]) for f in frames} == {(1, "00000001.dat", 3)}
    assert frames[0]["subscribers"] == [{"name": "audit", "lag": 3}]


def test_cutover_json_reports_the_new_log_number(small_log: Path) -> None:
    code, out, _ = cli("cutover", str(small_log), "--json")
    assert code == 0
    assert json.loads(out) == {"directory": str(small_log), "log": 2}
    assert segment(small_log, 2).exists()


# -- 7. progress on stderr when it is a terminal, never on a pipe ---------------------------------


@pytest.mark.parametrize(("command", "label"), [("verify", b"verifying"), ("dump", b"dumping"), ("info", b"verifying")])
def test_progress_goes_to_a_terminal_stderr_and_never_into_stdout(small_log: Path, command: str, label: bytes) -> None:
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [*BINLOG, command, str(small_log)],
        stdout=subprocess.PIPE,
        stderr=follower,
        env={**os.environ, "TERM": "xterm", "COLUMNS": "100"},
    )
    os.close(follower)
    out, _ = process.communicate(timeout=60)
    screen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the terminal's other side is closed and drained
            break
        if not chunk:
            break
        screen += chunk
    os.close(leader)
    assert process.returncode == 0
    assert label in screen
    assert label not in out and b"\x1b[" not in out

    piped = run(command, str(small_log))
    assert piped.returncode == 0 and piped.stderr == ""


# -- 8. nothing prints "None", a traceback, or an undocumented code -------------------------------


def test_an_empty_log_prints_no_none(log_dir: Path) -> None:
    Writer(log_dir).close()
    commands = (["stat"], ["meta"], ["verify"], ["info"], ["monitor", "--count", "1"], ["tail"], ["subscriber", "list"])
    for command in commands:
        args = [*command, str(log_dir)] if command[0] == "subscriber" else [command[0], str(log_dir), *command[1:]]
        code, out, err = cli(*args)
        assert code == 0, (command, err)
        assert "None" not in out + err, (command, out)


def test_a_bug_is_one_line_and_exit_2_not_a_traceback(small_log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(directory: str) -> object:
        raise RuntimeError("boom")

    monkeypatch.setattr(cli_module, "stat", broken)
    code, _, err = cli("stat", str(small_log))
    assert code == 2
    one_line_on_stderr(err, "internal error: RuntimeError: boom")


def test_append_stores_non_utf8_lines_as_bytes(log_dir: Path) -> None:
    code, _, err = cli("append", str(log_dir), stdin=b"\xff\xfe raw\nplain\n")
    assert code == 0, err
    assert [e.payload for e in read_entries(log_dir)] == [b"\xff\xfe raw", b"plain"]


def test_help_documents_every_exit_code() -> None:
    code, out, _ = cli("--help")
    assert code == 0
    for line in ("0    success", "1    committed data is damaged", "2    usage error", "130  interrupted", "141  "):
        assert line in out, line


def test_timestamps_a_datetime_cannot_hold_are_shown_not_fatal(log_dir: Path) -> None:
    # Readers do not validate timestamps: a valid record may carry one beyond the year 9999.
    with Writer(log_dir, clock_us=lambda: 2**62) as writer:
        writer.append(b"from the far future")
    code, out, err = cli("dump", str(log_dir))
    assert code == 0, err
    assert json.loads(out)["timestamp"] is None
    for command in ("stat", "meta", "verify", "info"):
        code, out, err = cli(command, str(log_dir))
        assert code == 0, (command, err)
        assert "None" not in out, (command, out)
    assert f"{2**62} us since the epoch" in cli("stat", str(log_dir))[1]
