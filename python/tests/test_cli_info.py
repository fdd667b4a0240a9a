"""The command line a user reaches for first (issue #17): info, one JSON shape for a segment, human sizes and
ISO times, subscriber reset, reading ranges, payload views, export --tolerant, a quick start without rich."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from logtools import flip_bit, legacy_segment, one_line_on_stderr, read_entries, segment, tree_digest, write_log

from openbinlog import (
    InvalidRefError,
    Ref,
    Subscriber,
    SubscriberInfo,
    Writer,
    add_subscriber,
    get_subscriber,
    read_all,
    reset_subscriber,
)
from openbinlog._table import human_size, table
from openbinlog.cli import main

BINLOG = [sys.executable, "-m", "openbinlog"]
ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")
T0 = datetime(2026, 11, 24, 10, 0, tzinfo=UTC)


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def micros(moment: datetime) -> int:
    return (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)


def stamped_log(directory: Path, stamps: list[datetime], *, cutover_after: int | None = None) -> None:
    """One record per stamp, record n written while the writer's clock reads ``stamps[n - 1]``."""
    now = [micros(stamps[0])]
    with Writer(directory, clock_us=lambda: now[0]) as writer:
        for number, moment in enumerate(stamps, start=1):
            now[0] = micros(moment)
            writer.append(f"r{number}".encode())
            if number == cutover_after:
                writer.cutover()


@pytest.fixture
def busy_log(log_dir: Path) -> Path:
    write_log(log_dir, [b"a", b"b", None, b"c", None, b"d", b"e"])
    return log_dir


@pytest.fixture
def timed_log(log_dir: Path) -> Path:
    """Records 1..6 stamped 10:00, 10:01, ... 10:05 UTC on 2026-11-24, across a cutover after record 3."""
    stamped_log(log_dir, [T0 + timedelta(minutes=n) for n in range(6)], cutover_after=3)
    assert [e.timestamp for e in read_entries(log_dir)] == [T0 + timedelta(minutes=n) for n in range(6)]
    return log_dir


@pytest.fixture
def damaged_log(log_dir: Path) -> Path:
    write_log(log_dir, [b"one", b"two", b"three"])
    flip_bit(segment(log_dir), 256 + 43 + 41)  # the payload of record 2, at offset 299
    return log_dir


def segment_bytes(directory: Path) -> int:
    return sum(path.stat().st_size for path in directory.glob("0*.dat*"))


# -- info -----------------------------------------------------------------------------------------------------------


def test_info_shows_segments_records_ranges_size_damage_and_subscribers(busy_log: Path) -> None:
    add_subscriber(busy_log, "billing")
    add_subscriber(busy_log, "alerts", at_end=True)
    code, out, err = cli("info", str(busy_log))
    assert (code, err) == (0, "")
    lines = {line.split("  ")[0]: line for line in out.splitlines()}
    assert "3: 2 sealed, 1 open; 3 plain, 0 compressed" in lines["segments"]
    assert "5, indexes 1..5" in lines["records"]
    entries = read_all(busy_log)
    first, last = entries[0].timestamp, entries[-1].timestamp
    assert first is not None and last is not None
    assert f"{first.isoformat().replace('+00:00', 'Z')} .. {last.isoformat().replace('+00:00', 'Z')}" in lines["time"]
    assert f"{human_size(segment_bytes(busy_log))} in segments" in lines["on disk"]
    assert "none: every committed record checked" in lines["damage"]
    assert "lag 5, checkpoint (start)" in lines["subscriber billing"]
    assert "lag 0, checkpoint 3:297:5" in lines["subscriber alerts"]


def test_info_json_has_exact_numbers_and_the_totals_stat_has(busy_log: Path) -> None:
    add_subscriber(busy_log, "billing")
    code, out, _ = cli("info", str(busy_log), "--json")
    assert code == 0
    report = json.loads(out)
    entries = read_all(busy_log)
    assert report["bytes"] == segment_bytes(busy_log)
    assert (report["segments"], report["records"], report["first_index"], report["last_index"]) == (3, 5, 1, 5)
    assert (report["first_timestamp_us"], report["last_timestamp_us"]) == (
        entries[0].timestamp_us,
        entries[-1].timestamp_us,
    )
    assert ISO.fullmatch(report["first_timestamp"]) and ISO.fullmatch(report["last_timestamp"])
    assert report["segment_states"] == {"sealed": 2, "finished": 0, "open": 1, "blank": 0}
    assert (report["plain_segments"], report["compressed_segments"]) == (3, 0)
    assert (report["checked"], report["ok"], report["damage"], report["tail"]["extra_bytes"]) == (
        "records",
        True,
        [],
        0,
    )
    assert report["subscribers"] == [{"name": "billing", "checkpoint": None, "lag": 5}]
    stat_report = json.loads(cli("stat", str(busy_log), "--json")[1])
    for key in ("segments", "records", "bytes", "first_index", "last_index", "segments_detail"):
        assert report[key] == stat_report[key], key


@pytest.mark.parametrize("as_json", [False, True])
def test_info_on_a_damaged_log_exits_1_and_still_reports(damaged_log: Path, as_json: bool) -> None:
    add_subscriber(damaged_log, "audit")
    code, out, err = cli("info", str(damaged_log), *(["--json"] if as_json else []))
    assert code == 1
    one_line_on_stderr(err, "damage", "1 damaged region", "offset 299", "index 2")
    if as_json:
        report = json.loads(out)
        assert report["ok"] is False
        assert [(d["error_class"], d["offset"], d["index"]) for d in report["damage"]] == [
            ("checksum_mismatch", 299, 2)
        ]
        assert report["subscribers"] == [{"name": "audit", "checkpoint": None, "lag": None}]  # unknown, not a guess
    else:
        assert "1 damaged region; the first:" in out and "offset 299" in out
        assert "subscriber audit  lag unknown (damage)" in out
        assert "None" not in out


def test_info_quick_reads_headers_only_and_says_damage_was_not_looked_for(damaged_log: Path) -> None:
    code, out, err = cli("info", str(damaged_log), "--quick")
    assert (code, err) == (0, "")
    assert "not looked for (--quick" in out
    code, out, _ = cli("info", str(damaged_log), "--quick", "--json")
    report = json.loads(out)
    assert (code, report["checked"], report["ok"], report["damage"], report["records"]) == (0, "headers", None, [], 3)


def test_info_of_an_empty_log_shows_none_not_none(log_dir: Path) -> None:
    Writer(log_dir).close()
    code, out, err = cli("info", str(log_dir))
    assert (code, err) == (0, "")
    assert "None" not in out
    assert re.search(r"^records +0, indexes none$", out, re.M)
    assert re.search(r"^time +none$", out, re.M)


def test_info_names_a_torn_tail_without_calling_it_damage(busy_log: Path) -> None:
    with segment(busy_log, 3).open("ab") as torn:
        torn.write(b"\x00\x00\x00\x30torn record bytes")
    code, out, _ = cli("info", str(busy_log))
    assert code == 0
    assert re.search(r"^tail +00000003\.dat: beyond the commit point 0 complete records, 21 B to truncate", out, re.M)
    assert "none: every committed record checked" in out


# -- one JSON shape for a segment -----------------------------------------------------------------------------------

SEGMENT_KEYS = {
    "log",
    "file",
    "version",
    "state",
    "compressed",
    "size",
    "records",
    "first_index",
    "last_index",
    "commit_offset",
    "first_timestamp_us",
    "last_timestamp_us",
    "first_timestamp",
    "last_timestamp",
    "log_id",
    "created_us",
    "created",
    "flags",
    "capacity",
    "slots",
}


def _segment_objects(directory: Path) -> dict[str, list[dict[str, Any]]]:
    """The segment objects of stat, meta, verify and info --json, by command."""
    found = {}
    for command, key in (
        ("stat", "segments_detail"),
        ("meta", None),
        ("verify", "segments"),
        ("info", "segments_detail"),
    ):
        code, out, err = cli(command, str(directory), "--json")
        assert code == 0, (command, err)
        report = json.loads(out)
        found[command] = report if key is None else report[key]
    return found


@pytest.mark.parametrize("layout", ["plain and compressed", "version 1"])
def test_stat_meta_verify_and_info_show_a_segment_in_one_shape(busy_log: Path, tmp_path: Path, layout: str) -> None:
    directory = busy_log
    if layout == "plain and compressed":
        assert cli("compress", str(busy_log), "--codec", "gz")[0] == 0
        assert "segments     3: 2 sealed, 1 open; 1 plain, 2 compressed" in cli("info", str(busy_log))[1]
    else:
        directory = tmp_path / "v1"
        directory.mkdir()
        (directory / "00000001.dat").write_bytes(legacy_segment([b"one", b"two"], log=1, closed=True, next_log=2))
        (directory / "00000002.dat").write_bytes(legacy_segment([b"three"], log=2, closed=False))
    found = _segment_objects(directory)
    assert found["stat"] == found["meta"] == found["verify"] == found["info"]
    assert all(set(seg) == SEGMENT_KEYS for seg in found["stat"])
    shown = [(s["file"], s["compressed"], s["records"], s["first_index"]) for s in found["stat"]]
    if layout == "plain and compressed":
        assert shown == [
            ("00000001.dat.gz", True, 2, 1),
            ("00000002.dat.gz", True, 1, 3),
            ("00000003.dat", False, 2, 4),
        ]
        assert all(s["size"] == (directory / s["file"]).stat().st_size for s in found["stat"])
        assert all(ISO.fullmatch(s["last_timestamp"]) for s in found["stat"])
    else:
        assert shown == [("00000001.dat", False, 2, 1), ("00000002.dat", False, 1, 3)]


def test_verify_json_keeps_the_segment_shape_when_damage_keeps_stat_from_the_headers(tmp_path: Path) -> None:
    directory = tmp_path / "v1"
    directory.mkdir()
    data = bytearray(legacy_segment([b"abc", b"defg"], log=1, closed=False))
    data[255:259] = (-5).to_bytes(4, "big", signed=True)  # the second record's length: stat raises, verify reports
    (directory / "00000001.dat").write_bytes(bytes(data))
    code, out, err = cli("verify", str(directory), "--json")
    assert code == 1
    one_line_on_stderr(err, "damage", "offset 255")
    report = json.loads(out)
    assert [set(seg) for seg in report["segments"]] == [SEGMENT_KEYS]
    assert (report["segments"][0]["file"], report["segments"][0]["flags"]) == ("00000001.dat", None)
    code, out, _ = cli("info", str(directory), "--json")
    assert code == 1 and [set(seg) for seg in json.loads(out)["segments_detail"]] == [SEGMENT_KEYS]


# -- people get sizes in KiB/MiB/GiB and ISO times; scripts get exact integers -------------------------------------


@pytest.mark.parametrize(
    ("size", "shown"),
    [(0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1536, "1.5 KiB"), (10 << 20, "10.0 MiB"), (5 << 30, "5.0 GiB")],
)
def test_human_size_uses_binary_units(size: int, shown: str) -> None:
    assert human_size(size) == shown


def test_table_aligns_columns_and_right_aligns_numbers() -> None:
    assert table([["a", "1"], ["long name", "100"]], header=["name", "n"], right={1}) == [
        "name         n",
        "a            1",
        "long name  100",
    ]
    assert table([]) == []


def test_stat_shows_human_sizes_and_iso_times_and_json_exact_bytes(log_dir: Path) -> None:
    write_log(log_dir, [b"x" * 2000, b"y" * 2000])
    code, out, _ = cli("stat", str(log_dir))
    assert code == 0
    size = segment(log_dir).stat().st_size
    assert f"{human_size(size)}" in out and "KiB" in out
    assert len(ISO.findall(out)) == 2 and "T" in out
    assert out.splitlines()[-1] == f"1 segments, 2 records, {human_size(size)}, indexes 1..2"
    report = json.loads(cli("stat", str(log_dir), "--json")[1])
    assert report["bytes"] == size and report["segments_detail"][0]["size"] == size


def test_meta_shows_created_and_slot_times_in_iso_and_sizes_exact(busy_log: Path) -> None:
    code, out, _ = cli("meta", str(busy_log))
    assert code == 0
    assert re.search(r"created \d{4}-\d\d-\d\dT[\d:.]+Z", out)
    assert re.search(r"slot \d: generation \d+, commit offset \d+, next index \d+, last asqn -1, last timestamp "
                     r"\d{4}-[\d:.T-]+Z, next log number \d+", out)  # fmt: skip
    assert "_us" not in out and "None" not in out


def test_monitor_without_a_terminal_prints_each_refresh_with_size_and_time(busy_log: Path) -> None:
    code, out, _ = cli("monitor", str(busy_log), "--count", "2", "--interval", "0.01")
    assert code == 0
    frames = out.split("\n\n")
    assert len(frames) == 2
    for frame in frames:
        header, *rows = frame.strip().splitlines()
        assert header.startswith(f"binlog monitor {busy_log}") and ISO.search(header)
        assert f"on disk       {human_size(segment_bytes(busy_log))}" in rows
    assert "\x1b[" not in out  # no cursor movement when nothing is redrawn in place
    report = json.loads(cli("monitor", str(busy_log), "--count", "1", "--json")[1])
    assert report["bytes"] == segment_bytes(busy_log)


def test_compress_and_retain_show_sizes_for_people(busy_log: Path) -> None:
    plain = segment(busy_log, 1).stat().st_size
    code, out, _ = cli("compress", str(busy_log), "--codec", "gz")
    assert code == 0
    assert re.search(rf"^compressed 00000001\.dat\.gz: {plain} B -> \d+ B \(\d+%\)$", out, re.M)
    assert re.search(r"^2 segments compressed: \d+ B -> \d+ B \(\d+%\)$", out, re.M)
    packed = (busy_log / "00000001.dat.gz").stat().st_size
    code, out, _ = cli("retain", str(busy_log), "--max-bytes", "1", "--dry-run")
    assert code == 0
    assert "would remove segment 00000001: log is" in out and f"({packed} B)" in out
    assert re.search(r"^2 segments, \d+ B, would be removed$", out, re.M)


# -- subscriber reset -----------------------------------------------------------------------------------------------


def test_subscriber_reset_to_a_ref_resumes_just_after_it(busy_log: Path) -> None:
    add_subscriber(busy_log, "billing", at_end=True)
    ref = read_all(busy_log)[1].ref
    code, out, err = cli("subscriber", "reset", str(busy_log), "billing", "--to", str(ref))
    assert (code, err) == (0, "")
    assert out == f"billing: checkpoint {ref} (was 3:297:5), lag 3\n"
    assert get_subscriber(busy_log, "billing").checkpoint == ref
    with Subscriber(busy_log, "billing") as sub:
        assert [entry.index for entry in sub] == [3, 4, 5]


def test_subscriber_reset_earliest_and_latest(busy_log: Path) -> None:
    add_subscriber(busy_log, "billing", at_end=True)
    code, out, _ = cli("subscriber", "reset", str(busy_log), "billing", "--earliest", "--json")
    assert code == 0
    assert json.loads(out) == {"name": "billing", "checkpoint": None, "previous": "3:297:5", "lag": 5}
    with Subscriber(busy_log, "billing") as sub:
        assert next(sub).index == 1
    code, out, _ = cli("subscriber", "reset", str(busy_log), "billing", "--latest", "--json")
    assert code == 0
    assert json.loads(out) == {"name": "billing", "checkpoint": "3:297:5", "previous": None, "lag": 0}
    with Subscriber(busy_log, "billing") as sub:
        assert list(sub) == []


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--to", "3:999:9"], "offset outside the committed records"),
        (["--to", "1:256:2"], "1:256:2"),  # a record is there, with another index
        (["--to", "9:256:1"], "segment 9 does not exist"),
    ],
)
def test_subscriber_reset_to_a_ref_that_names_no_record_is_exit_2_and_changes_nothing(
    busy_log: Path, options: list[str], said: str
) -> None:
    add_subscriber(busy_log, "billing")
    before = tree_digest(busy_log)
    code, out, err = cli("subscriber", "reset", str(busy_log), "billing", *options)
    assert (code, out) == (2, "")
    one_line_on_stderr(err, "error:", "invalid_ref", said)
    assert tree_digest(busy_log) == before


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ([], "give one of --to REF, --earliest and --latest"),
        (["--earliest", "--latest"], "give one of --to REF, --earliest and --latest"),
        (["--to", "not-a-ref"], "Invalid value for '--to'"),
    ],
)
def test_subscriber_reset_needs_exactly_one_target(busy_log: Path, options: list[str], said: str) -> None:
    add_subscriber(busy_log, "billing")
    before = tree_digest(busy_log)
    code, _, err = cli("subscriber", "reset", str(busy_log), "billing", *options)
    assert code == 2 and said in err
    assert tree_digest(busy_log) == before


def test_reset_subscriber_is_public_checks_the_ref_and_changes_nothing_when_it_names_no_record(busy_log: Path) -> None:
    add_subscriber(busy_log, "billing")
    ref = read_all(busy_log)[2].ref
    assert reset_subscriber(busy_log, "billing", to=ref) == SubscriberInfo("billing", ref)
    with pytest.raises(InvalidRefError):
        reset_subscriber(busy_log, "billing", to=Ref(ref.log, ref.offset, ref.index + 1))
    assert get_subscriber(busy_log, "billing").checkpoint == ref
    assert reset_subscriber(busy_log, "billing", to=None).checkpoint is None


def test_subscriber_reset_of_an_unknown_subscriber_is_exit_2(busy_log: Path) -> None:
    code, _, err = cli("subscriber", "reset", str(busy_log), "ghost", "--earliest")
    assert code == 2
    one_line_on_stderr(err, "no subscriber 'ghost'")
    assert not (busy_log / "subscribers" / "ghost.json").exists()


# -- reading ranges -------------------------------------------------------------------------------------------------


def dumped(*args: str) -> list[int]:
    code, out, err = cli("dump", *args)
    assert code == 0, err
    return [json.loads(line)["index"] for line in out.splitlines()]


def test_dump_from_index_and_count(timed_log: Path) -> None:
    assert dumped(str(timed_log), "--from-index", "3") == [3, 4, 5, 6]
    assert dumped(str(timed_log), "--from-index", "2", "--count", "2") == [2, 3]
    assert dumped(str(timed_log), "--from-index", "99") == []
    assert dumped(str(timed_log), "--count", "0") == []
    assert dumped(str(timed_log), "--from-index", "3", "--one-segment") == [3]  # the segment where reading starts


def test_dump_since_and_until_take_iso_times_and_dates(timed_log: Path) -> None:
    log = str(timed_log)
    assert dumped(log, "--since", "2026-11-24T10:02:00Z") == [3, 4, 5, 6]
    assert dumped(log, "--since", "2026-11-24T10:02:00Z", "--until", "2026-11-24T10:04:00Z") == [3, 4]
    assert dumped(log, "--since", "2026-11-24T11:02:00+01:00", "--count", "1") == [3]  # an offset is honoured
    assert dumped(log, "--since", "2026-11-24T10:01:30") == [3, 4, 5, 6]  # naive: UTC
    assert dumped(log, "--until", "2026-11-24T10:00:00.000001Z") == [1]
    assert dumped(log, "--since", "2026-11-24") == [1, 2, 3, 4, 5, 6]  # a date: its midnight, UTC
    assert dumped(log, "--since", "2026-11-25") == []
    assert dumped(log, "--until", "2026-11-24") == []


def test_since_takes_an_age_ago(log_dir: Path) -> None:
    now = datetime.now(UTC)
    stamped_log(log_dir, [now - timedelta(hours=3), now - timedelta(minutes=30), now])
    assert dumped(str(log_dir), "--since", "1h") == [2, 3]
    assert dumped(str(log_dir), "--since", "4h", "--until", "10m") == [1, 2]
    assert dumped(str(log_dir), "--since", "2d") == [1, 2, 3]


def test_export_takes_the_same_ranges(timed_log: Path, tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    code, out, _ = cli("export", str(timed_log), "-o", str(target), "--from-index", "2", "--until", "2026-11-24T10:04Z")
    assert (code, out) == (0, f"3 records written to {target}\n")
    assert [json.loads(line)["index"] for line in target.read_text().splitlines()] == [2, 3, 4]
    code, out, _ = cli("export", str(timed_log), "-o", "-", "--since", "2026-11-24T10:04:00Z", "--count", "1")
    assert code == 0 and [json.loads(line)["index"] for line in out.splitlines()] == [5]


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--since", "yesterday"], "Invalid value for '--since': not a time: 'yesterday'"),
        (["--until", "2026-13-01"], "Invalid value for '--until'"),
        (["--since", "10"], "Invalid value for '--since'"),  # a number without a unit is not an age in a TIME
        (["--from-index", "-1"], "Invalid value for '--from-index'"),
        (["--count", "-1"], "Invalid value for '--count'"),
        (["--from-index", "2", "--since", "1h"], "give one place to start, not --from-index and --since"),
        (["--after", "1:256:1", "--from-index", "2"], "not --after and --from-index"),
        (["--since", "2026-11-24T10:00Z", "--until", "2026-11-24T09:00Z"], "--until is not after --since"),
    ],
)
@pytest.mark.parametrize("command", ["dump", "export"])
def test_bad_ranges_are_usage_errors(
    timed_log: Path, tmp_path: Path, command: str, options: list[str], said: str
) -> None:
    if command == "export" and options[0] == "--after":
        options = ["--from-index", "2", "--since", "1h"]
        said = "not --from-index and --since"
    extra = ["-o", str(tmp_path / "out.jsonl")] if command == "export" else []
    code, out, err = cli(command, str(timed_log), *extra, *options)
    assert (code, out) == (2, "")
    assert said in err and "Traceback" not in err
    assert not (tmp_path / "out.jsonl").exists()


def test_help_says_what_one_segment_and_tail_follow_do() -> None:
    dump_help = cli("dump", "--help")[1]
    assert "never waits" in dump_help and "use tail -f" in dump_help
    assert "crossing cutovers" in " ".join(dump_help.split())
    tail_help = " ".join(cli("tail", "--help")[1].split())
    assert "wait for new ones and print each as it is committed, across cutovers" in tail_help


# -- payload views --------------------------------------------------------------------------------------------------


@pytest.fixture
def payload_log(log_dir: Path) -> Path:
    write_log(log_dir, [b'{"k": [1, 2.5, "\\u00e9"]}', b"a\tb\\c\xff\nd\x00\xc2\x85", "caf\u00e9".encode()])
    return log_dir


def test_text_view_shows_one_line_per_record_and_escapes_unambiguously(payload_log: Path) -> None:
    code, out, _ = cli("dump", str(payload_log), "--format", "text")
    assert code == 0
    refs = [str(e.ref) for e in read_entries(payload_log)]
    assert out.splitlines() == [
        f'{refs[0]}\t{{"k": [1, 2.5, "\\\\u00e9"]}}',  # the payload's own backslash, doubled
        f"{refs[1]}\ta\\tb\\\\c\\xff\\nd\\x00\\u0085",
        f"{refs[2]}\tcaf\u00e9",
    ]
    rows = [json.loads(line) for line in cli("dump", str(payload_log), "--payload", "text")[1].splitlines()]
    assert rows[1]["payload"] == "a\\tb\\\\c\\xff\\nd\\x00\\u0085"


@pytest.mark.parametrize("fmt", ["jsonl", "text"])
def test_hex_and_base64_views(payload_log: Path, fmt: str) -> None:
    payloads = [e.payload for e in read_entries(payload_log)]
    for view, render in (("hex", bytes.hex), ("base64", lambda p: base64.b64encode(p).decode())):
        code, out, _ = cli("dump", str(payload_log), "--format", fmt, "--payload", view)
        assert code == 0
        if fmt == "jsonl":
            shown = [json.loads(line)["payload"] for line in out.splitlines()]
        else:
            shown = [line.split("\t")[1] for line in out.splitlines()]
        assert shown == [render(p) for p in payloads]


def test_json_view_parses_payloads_and_marks_those_that_are_not_json(payload_log: Path) -> None:
    code, out, err = cli("dump", str(payload_log), "--payload", "json")
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert rows[0]["payload"] == {"k": [1, 2.5, "\u00e9"]} and "payload_error" not in rows[0]
    assert rows[1]["payload"] == "a\\tb\\\\c\\xff\\nd\\x00\\u0085"
    assert rows[1]["payload_error"].startswith("not UTF-8")
    assert (rows[2]["payload"], rows[2]["payload_error"][:15]) == ("caf\u00e9", "Expecting value")
    assert err == "binlog: 2 of 3 payloads are not JSON: shown as text, marked\n"
    code, out, _ = cli("dump", str(payload_log), "--payload", "json", "--format", "text")
    assert code == 0
    refs = [str(e.ref) for e in read_entries(payload_log)]
    assert out.splitlines() == [
        f'{refs[0]}\t{{"k":[1,2.5,"\\u00e9"]}}',
        f"{refs[1]}\t!not JSON: a\\tb\\\\c\\xff\\nd\\x00\\u0085",
        f"{refs[2]}\t!not JSON: caf\u00e9",
    ]


@pytest.mark.parametrize("payload", [b"NaN", b"[1e999]", b"[" * 100_000, b"\xef\xbb\xbf{}", b""])
def test_json_view_never_emits_invalid_json_nor_a_traceback(log_dir: Path, payload: bytes) -> None:
    write_log(log_dir, [payload])
    code, out, err = cli("dump", str(log_dir), "--payload", "json")
    assert code == 0 and "Traceback" not in err
    row = json.loads(out)  # strict JSON: no NaN or Infinity
    assert "payload_error" in row


# -- export --tolerant ----------------------------------------------------------------------------------------------


def test_export_tolerant_writes_what_it_read_keeps_the_file_and_exits_1(damaged_log: Path, tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    target.write_text("previous export\n")
    code, out, err = cli("export", str(damaged_log), "-o", str(target), "--tolerant")
    assert code == 1
    one_line_on_stderr(err, "damage", "1 damaged region", "00000001.dat", "offset 299", "index 2")
    assert out == f"2 records written to {target}; 1 damaged region skipped (the file is kept)\n"
    assert [base64.b64decode(json.loads(line)["payload"]) for line in target.read_text().splitlines()] == [
        b"one",
        b"three",
    ]
    assert [name for name in os.listdir(tmp_path) if name.endswith(".tmp")] == []


def test_export_tolerant_json_lists_the_damage_beside_the_rows(damaged_log: Path, tmp_path: Path) -> None:
    target = tmp_path / "out.parquet"
    code, out, err = cli("export", str(damaged_log), "--format", "parquet", "-o", str(target), "--tolerant", "--json")
    assert code == 1
    one_line_on_stderr(err, "offset 299")
    report = json.loads(out)
    assert (report["records"], report["written"], report["tolerant"]) == (2, True, True)
    assert [(d["error_class"], d["log"], d["offset"], d["index"]) for d in report["damage"]] == [
        ("checksum_mismatch", 1, 299, 2)
    ]
    import pyarrow.parquet  # noqa: PLC0415 - the arrow extra, only here

    assert pyarrow.parquet.read_table(target).column("index").to_pylist() == [1, 3]


def test_export_tolerant_to_stdout_streams_the_rows_and_exits_1(damaged_log: Path) -> None:
    code, out, err = cli("export", str(damaged_log), "-o", "-", "--tolerant")
    assert code == 1
    one_line_on_stderr(err, "offset 299")
    assert [json.loads(line)["index"] for line in out.splitlines()] == [1, 3]


def test_export_tolerant_of_an_intact_log_is_exit_0(busy_log: Path, tmp_path: Path) -> None:
    code, out, _ = cli("export", str(busy_log), "-o", str(tmp_path / "out.jsonl"), "--tolerant", "--json")
    assert code == 0
    assert json.loads(out)["damage"] == [] and json.loads(out)["records"] == 5


# -- start-up: no rich, the conformance runner imported when used --------------------------------------------------


def test_importing_the_cli_imports_neither_the_conformance_runner_nor_rich() -> None:
    probe = (
        "import sys, openbinlog.cli\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('openbinlog_conformance', 'rich', 'pygments')))"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == "[]"


def test_help_lists_conformance_without_importing_it_and_the_group_still_runs() -> None:
    probe = (
        "import sys\nfrom openbinlog.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print('imported' if 'openbinlog_conformance' in sys.modules else 'not imported')"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert re.search(r"^  conformance +Run the BinLog conformance suite", result.stdout, re.M)
    assert result.stdout.splitlines()[-1] == "not imported"
    group = subprocess.run([*BINLOG, "conformance", "--help"], capture_output=True, text=True, timeout=60, check=False)
    assert group.returncode == 0, group.stderr
    assert "Usage: python -m openbinlog conformance [OPTIONS] COMMAND" in group.stdout
    assert {"run", "list", "list-impls"} <= set(re.findall(r"^  ([a-z-]+) ", group.stdout, re.M))
    listed = subprocess.run(
        [*BINLOG, "conformance", "list-impls"], capture_output=True, text=True, timeout=60, check=False
    )
    assert listed.returncode == 0, listed.stderr


@pytest.mark.parametrize(("pure", "decoder"), [("0", None), ("1", "pure Python")])
def test_version_names_the_decoder_and_encoder_that_run(pure: str, decoder: str | None) -> None:
    result = subprocess.run(
        [*BINLOG, "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "OPENBINLOG_PURE_PYTHON": pure},
    )
    assert result.returncode == 0, result.stderr
    first = result.stdout.splitlines()[0]
    match = re.fullmatch(
        r"binlog (\d+\.\d+\.\d+\S*) \(decoder: (compiled|pure Python), encoder: (compiled|pure Python)\)", first
    )
    assert match, first
    if decoder is not None:
        assert match[2] == match[3] == decoder
    assert "Python 3." in result.stdout and "extras:" in result.stdout


@pytest.mark.parametrize(("fmt", "extra"), [("parquet", "arrow"), ("arrow", "arrow")])
def test_export_without_its_extra_is_exit_2_naming_it_and_leaves_the_previous_file(
    busy_log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str, extra: str
) -> None:
    for module in ("pyarrow", "pyarrow.parquet"):
        monkeypatch.setitem(sys.modules, module, None)  # imported, it fails as if it were not installed
    target = tmp_path / f"out.{fmt}"
    target.write_bytes(b"previous export")
    code, out, err = cli("export", str(busy_log), "--format", fmt, "-o", str(target))
    assert (code, out) == (2, "")
    one_line_on_stderr(err, "binlog: error:", f"needs the '{extra}' extra: pip install 'openbinlog[{extra}]'")
    assert target.read_bytes() == b"previous export"
    assert [name for name in os.listdir(tmp_path) if name.endswith(".tmp")] == []
