"""The binlog command line, as a user runs it: a real process, real exit codes."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest
from logtools import flip_bit, read_entries, segment, write_log

BINLOG = [sys.executable, "-m", "openbinlog"]


def run(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([*BINLOG, *args], input=stdin, capture_output=True, text=True, timeout=60, check=False)


def test_append_with_ack_prints_each_durable_index(log_dir: Path) -> None:
    result = run("append", str(log_dir), "--ack", stdin="one\ntwo\n\nthree")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1", "2", "3", "4"]
    assert [e.payload for e in read_entries(log_dir)] == [b"one", b"two", b"", b"three"]


@pytest.mark.parametrize(
    "options",
    [
        ("--exclusive",),
        ("--durability", "process"),
        ("--durability", "os", "--exclusive"),
        ("--durability", "mmap", "--preallocate", "4096"),
    ],
)
def test_append_of_an_exclusive_writer_acknowledges_only_durable_records(
    log_dir: Path, options: tuple[str, ...]
) -> None:
    result = run("append", str(log_dir), "--ack", *options, stdin="one\ntwo\nthree")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1", "2", "3"]
    assert [e.payload for e in read_entries(log_dir)] == [b"one", b"two", b"three"]


def test_append_in_the_mmap_mode_without_preallocated_segments_is_a_usage_error(log_dir: Path) -> None:
    result = run("append", str(log_dir), "--durability", "mmap", stdin="one")
    assert result.returncode == 2
    assert "--preallocate" in result.stderr
    assert not log_dir.exists()


def test_dump_jsonl_has_log_offset_index_and_base64_payload(log_dir: Path) -> None:
    write_log(log_dir, [b"a", None, b"\x00\xff"])
    result = run("dump", str(log_dir), "--format", "jsonl")
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["log"], r["offset"], r["index"], base64.b64decode(r["payload"])) for r in rows] == [
        (1, 256, 1, b"a"),
        (2, 256, 2, b"\x00\xff"),
    ]
    after = run("dump", str(log_dir), "--after", rows[0]["ref"])
    assert [json.loads(line)["index"] for line in after.stdout.splitlines()] == [2]


def test_verify_exit_codes_ok_damaged_and_missing(log_dir: Path, tmp_path: Path) -> None:
    write_log(log_dir, [b"one", b"two"])
    ok = run("verify", str(log_dir))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    flip_bit(segment(log_dir), 256 + 43 + 41)
    damaged = run("verify", str(log_dir), "--json")
    assert damaged.returncode == 1
    report = json.loads(damaged.stdout)
    assert [(d["error_class"], d["log"], d["offset"], d["index"]) for d in report["damage"]] == [
        ("checksum_mismatch", 1, 299, 2)
    ]
    missing = run("verify", str(tmp_path / "absent"))
    assert missing.returncode == 2
    assert "absent" in missing.stderr


def test_dump_of_damaged_log_exits_1_with_the_position(log_dir: Path) -> None:
    write_log(log_dir, [b"one", b"two"])
    flip_bit(segment(log_dir), 256 + 43 + 41)
    result = run("dump", str(log_dir))
    assert result.returncode == 1
    assert len(result.stdout.splitlines()) == 1
    assert "offset 299" in result.stderr and "index 2" in result.stderr


def test_cutover_command_is_safe_while_another_process_appends(log_dir: Path) -> None:
    write_log(log_dir, [b"seed"])
    appender = subprocess.Popen(
        [*BINLOG, "append", str(log_dir), "--ack"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert appender.stdin is not None
    assert appender.stdout is not None
    acked: list[int] = []
    for n in range(60):
        appender.stdin.write(f"line-{n}\n")
        appender.stdin.flush()
        acked.append(int(appender.stdout.readline()))
        if n % 20 == 10:
            assert run("cutover", str(log_dir)).returncode == 0
    appender.stdin.close()
    assert appender.wait(30) == 0
    entries = read_entries(log_dir)
    assert [e.index for e in entries] == list(range(1, 62))
    assert set(acked) <= {e.index for e in entries}
    assert len({e.log for e in entries}) == 4


def test_cutover_of_a_missing_directory_creates_nothing(tmp_path: Path) -> None:
    result = run("cutover", str(tmp_path / "absent"))
    assert result.returncode == 2
    assert not (tmp_path / "absent").exists()


def test_a_file_where_the_log_should_be_is_an_io_error(tmp_path: Path) -> None:
    not_a_directory = tmp_path / "file"
    not_a_directory.write_bytes(b"x")
    for command in ("dump", "verify", "cutover", "append"):
        result = run(command, str(not_a_directory))
        assert result.returncode == 2, (command, result.stderr)
        assert str(not_a_directory) in result.stderr


def test_cli_reference_is_generated_from_the_current_help() -> None:
    tool = Path(__file__).resolve().parents[2] / "tools" / "gen_cli_reference.py"
    result = subprocess.run(
        [sys.executable, str(tool), "--check"], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
