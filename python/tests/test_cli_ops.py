"""Operations commands through the CLI runner: stat, meta, tail, monitor, repair, compress, export,
retain, subscribers; each with its error paths."""

from __future__ import annotations

import errno
import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.ipc
import pyarrow.parquet
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from logtools import append_raw, flip_bit, read_entries, segment, tree_digest, write_log
from test_legacy import legacy_segment

from openbinlog import Subscriber, Writer, add_subscriber, list_subscribers, read_all, retain
from openbinlog.cli import main

BINLOG = [sys.executable, "-m", "openbinlog"]


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def busy_log(log_dir: Path) -> Path:
    write_log(log_dir, [b"a", b"b", None, b"c", None, b"d", b"e"])
    return log_dir


@pytest.fixture
def v1_log(tmp_path: Path) -> Path:
    directory = tmp_path / "v1"
    directory.mkdir()
    (directory / "00000001.dat").write_bytes(legacy_segment([b"one", b"two"], log=1, closed=True, next_log=2))
    (directory / "00000002.dat").write_bytes(legacy_segment([b"three"], log=2, closed=False))
    return directory


COMMANDS_ON_A_LOG = [
    ["stat"],
    ["meta"],
    ["tail"],
    ["verify"],
    ["repair", "--dry-run"],
    ["compress", "--dry-run"],
    ["retain", "--dry-run"],
    ["subscriber", "list"],
]


@pytest.mark.parametrize("command", COMMANDS_ON_A_LOG)
def test_missing_directory_exits_2_naming_it(tmp_path: Path, command: list[str]) -> None:
    code, _, err = cli(
        *command[:1],
        *command[1:2] if command[0] == "subscriber" else [],
        str(tmp_path / "gone"),
        *([] if command[0] == "subscriber" else command[1:]),
    )
    assert code == 2
    assert "gone" in err
    assert not (tmp_path / "gone").exists()


@pytest.mark.parametrize("command", COMMANDS_ON_A_LOG)
def test_v1_log_is_served_or_refused_with_a_typed_error(v1_log: Path, command: list[str]) -> None:
    args = [*command[:2], str(v1_log)] if command[0] == "subscriber" else [command[0], str(v1_log), *command[1:]]
    before = tree_digest(v1_log)
    code, _, err = cli(*args)
    assert code in (0, 2), err
    if code == 2:
        assert "version" in err  # writers refuse legacy logs, by name
    if "--dry-run" in command or command[0] in ("stat", "meta", "tail", "verify", "subscriber"):
        assert tree_digest(v1_log) == before


@pytest.mark.parametrize("command", [["stat"], ["meta"], ["tail"], ["verify"], ["repair"], ["compress"]])
def test_damaged_log_exits_1_with_file_and_offset(busy_log: Path, command: list[str]) -> None:
    flip_bit(segment(busy_log, 1), 256 + 40)  # the payload of record 1: committed data
    code, out, err = cli(command[0], str(busy_log))
    if command[0] in ("stat", "meta"):
        assert code == 0  # headers only: they do not read records
        return
    assert code == 1, (out, err)
    assert "offset 256" in out + err
    assert "00000001.dat" in out + err


def test_permission_denied_is_an_io_error(busy_log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = os.open

    def refusing_open(path: str, flags: int, *args: int) -> int:
        if str(path).endswith(".dat"):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", refusing_open)
    code, _, err = cli("dump", str(busy_log))
    assert code == 2
    assert "Permission denied" in err


def test_stat_json_counts_segments_records_and_ranges(busy_log: Path) -> None:
    code, out, _ = cli("stat", str(busy_log), "--json")
    assert code == 0
    report = json.loads(out)
    assert (report["segments"], report["records"], report["first_index"], report["last_index"]) == (3, 5, 1, 5)
    states = [s["state"] for s in report["segments_detail"]]
    assert states == ["sealed", "sealed", "open"]
    code, out, _ = cli("stat", str(busy_log))
    assert "00000003.dat" in out and "5 records" in out


def test_meta_shows_both_slots(busy_log: Path) -> None:
    code, out, _ = cli("meta", str(busy_log), "--json")
    assert code == 0
    first = json.loads(out)[0]
    assert first["slots"][0]["next_log_number"] == 2 or first["slots"][1]["next_log_number"] == 2


def test_tail_prints_the_last_records(busy_log: Path) -> None:
    code, out, _ = cli("tail", str(busy_log), "-n", "2")
    assert code == 0
    assert [line.split("\t")[1] for line in out.splitlines()] == ["d", "e"]


def test_tail_follow_prints_records_a_live_writer_appends(log_dir: Path) -> None:
    write_log(log_dir, [b"old"])
    follower = subprocess.Popen(
        [*BINLOG, "tail", str(log_dir), "-f", "-n", "1", "--for", "20"], stdout=subprocess.PIPE, text=True
    )
    assert follower.stdout is not None
    assert follower.stdout.readline().split("\t")[1].strip() == "old"
    writer = subprocess.Popen([*BINLOG, "append", str(log_dir)], stdin=subprocess.PIPE, text=True)
    assert writer.stdin is not None
    writer.stdin.write("live-1\nlive-2\n")
    writer.stdin.close()
    assert writer.wait(30) == 0
    got = [follower.stdout.readline().split("\t")[1].strip() for _ in range(2)]
    follower.kill()
    follower.wait(10)
    assert got == ["live-1", "live-2"]


def test_monitor_updates_in_place_on_a_terminal_while_a_writer_appends(log_dir: Path) -> None:
    write_log(log_dir, [b"x"])
    add_subscriber(log_dir, "audit")
    leader, follower_fd = pty.openpty()
    monitor = subprocess.Popen(
        [*BINLOG, "monitor", str(log_dir), "--interval", "0.2", "--count", "15"],
        stdin=follower_fd,
        stdout=follower_fd,
        stderr=follower_fd,
        env={**os.environ, "COLUMNS": "100", "TERM": "xterm"},
    )
    os.close(follower_fd)
    with Writer(log_dir) as writer:
        for n in range(40):
            writer.append(f"{n}".encode())
            time.sleep(0.02)
    screen = b""
    deadline = time.monotonic() + 30
    while monitor.poll() is None and time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.5)
        if ready:
            try:
                screen += os.read(leader, 65536)
            except OSError:
                break
    monitor.wait(10)
    os.close(leader)
    text = screen.decode(errors="replace")
    assert "\x1b[" in text  # cursor movement: the view is redrawn in place
    assert "appends/s" in text
    assert "subscriber audit" in text
    assert "41" in text  # the last index after the writer's appends


def test_repair_truncates_with_a_backup_and_is_idempotent(busy_log: Path) -> None:
    append_raw(segment(busy_log, 3), b"\x00\x00\x00\x30torn record bytes")
    code, out, _ = cli("repair", str(busy_log), "--dry-run")
    assert code == 0 and "would truncate_tail" in out
    assert segment(busy_log, 3).read_bytes().endswith(b"torn record bytes")
    code, out, _ = cli("repair", str(busy_log), "--json")
    assert code == 0
    report = json.loads(out)
    assert [a["action"] for a in report["actions"]] == ["truncate_tail"]
    backups = list(Path(report["backup_dir"]).iterdir())
    assert [b.read_bytes() for b in backups] == [b"\x00\x00\x00\x30torn record bytes"]
    code, out, _ = cli("repair", str(busy_log))
    assert code == 0 and out.strip() == "nothing to repair"


def test_repair_resets_a_checkpoint_into_a_removed_segment(busy_log: Path) -> None:
    add_subscriber(busy_log, "late")
    with Subscriber(busy_log, "late") as sub:
        sub.commit(next(sub))
    (busy_log / "00000001.dat").unlink()
    code, out, _ = cli("repair", str(busy_log))
    assert code == 0
    assert "late" in out and "removed segment" in out
    assert list_subscribers(busy_log)[0].checkpoint is None


def test_compressed_sealed_segments_read_identically(busy_log: Path) -> None:
    before = [(e.ref, e.payload) for e in read_all(busy_log)]
    code, out, _ = cli("compress", str(busy_log), "--codec", "gz")
    assert code == 0 and "compressed 00000001.dat.gz" in out
    code, out, _ = cli("compress", str(busy_log), "--codec", "zst")
    assert "no sealed segment left" in out
    assert sorted(p.name for p in busy_log.glob("0*")) == ["00000001.dat.gz", "00000002.dat.gz", "00000003.dat"]
    assert [(e.ref, e.payload) for e in read_all(busy_log)] == before
    code, out, _ = cli("dump", str(busy_log))
    assert [json.loads(line)["ref"] for line in out.splitlines()] == [str(ref) for ref, _ in before]
    assert cli("verify", str(busy_log))[0] == 0
    with Writer(busy_log) as writer:  # writing goes on next to compressed segments
        writer.append(b"f")
    assert len(read_all(busy_log)) == 6


@pytest.mark.parametrize("fmt", ["jsonl", "parquet", "arrow"])
def test_export_writes_every_record(busy_log: Path, tmp_path: Path, fmt: str) -> None:
    output = tmp_path / f"out.{fmt}"
    code, out, _ = cli("export", str(busy_log), "--format", fmt, "-o", str(output))
    assert code == 0 and "5 records" in out
    if fmt == "jsonl":
        rows = [json.loads(line) for line in output.read_text().splitlines()]
        assert [r["index"] for r in rows] == [1, 2, 3, 4, 5]
        return
    table = pyarrow.parquet.read_table(output) if fmt == "parquet" else pyarrow.ipc.open_file(output).read_all()
    assert table.column("payload").to_pylist() == [b"a", b"b", b"c", b"d", b"e"]
    assert table.column("index").to_pylist() == [1, 2, 3, 4, 5]


def test_subscriber_commands(busy_log: Path) -> None:
    assert cli("subscriber", "add", str(busy_log), "billing")[0] == 0
    assert cli("subscriber", "add", str(busy_log), "alerts", "--at-end")[0] == 0
    assert cli("subscriber", "add", str(busy_log), "billing")[0] == 2  # exists already
    assert cli("subscriber", "add", str(busy_log), "../escape")[0] == 2
    code, out, _ = cli("subscriber", "list", str(busy_log), "--json")
    rows = {row["name"]: row for row in json.loads(out)}
    assert rows["billing"]["lag"] == 5 and rows["alerts"]["lag"] == 0
    code, out, _ = cli("subscriber", "show", str(busy_log), "alerts")
    assert code == 0
    assert "lag 0" in out
    assert cli("subscriber", "remove", str(busy_log), "alerts")[0] == 0
    assert cli("subscriber", "show", str(busy_log), "alerts")[0] == 2


def test_retain_keeps_what_a_subscriber_needs(busy_log: Path) -> None:
    add_subscriber(busy_log, "slow")
    code, out, _ = cli("retain", str(busy_log))
    assert "kept segment 00000001: needed by slow" in out
    assert segment(busy_log, 1).exists()
    with Subscriber(busy_log, "slow") as sub:
        for entry in sub:
            if entry.index == 3:
                sub.commit(entry)
                break
    code, out, _ = cli("retain", str(busy_log), "--json")
    assert code == 0
    removed = [d["log"] for d in json.loads(out) if d["remove"]]
    assert removed == [1, 2]
    assert [e.index for e in read_entries(busy_log)] == [4, 5]


def test_retain_by_size_and_age(busy_log: Path) -> None:
    code, out, _ = cli("retain", str(busy_log), "--max-bytes", "1", "--dry-run")
    assert out.count("would remove") == 2
    code, out, _ = cli("retain", str(busy_log), "--max-age", "10000d", "--dry-run")
    assert code == 0
    assert "kept segment 00000001: kept by the policy" in out
    assert cli("retain", str(busy_log), "--max-age", "soon")[0] == 2


@settings(max_examples=25, deadline=None)
@given(
    layout=st.lists(st.integers(min_value=0, max_value=4), min_size=2, max_size=6),
    consumed=st.lists(st.integers(min_value=0, max_value=30), min_size=1, max_size=3),
)
def test_retention_never_removes_an_unconsumed_record(
    tmp_path_factory: pytest.TempPathFactory, layout: list[int], consumed: list[int]
) -> None:
    directory = tmp_path_factory.mktemp("retain") / "log"
    ops: list[bytes | None] = []
    for size in layout:
        ops.extend(f"r{len(ops)}".encode() for _ in range(size))
        ops.append(None)
    write_log(directory, ops)
    entries = read_all(directory)
    for number, upto in enumerate(consumed):
        add_subscriber(directory, f"s{number}")
        if entries and upto:
            with Subscriber(directory, f"s{number}") as sub:
                sub.commit(entries[min(upto, len(entries)) - 1])
    low_water = min((0 if info.checkpoint is None else info.checkpoint.index) for info in list_subscribers(directory))
    retain(directory, max_bytes=0)
    remaining = {e.index for e in read_all(directory)}
    unconsumed = {e.index for e in entries if e.index > low_water}
    assert unconsumed <= remaining
