"""Hostile input never hurts a reader (issue #16).

Whatever the bytes of a log directory say, a reader's memory is bounded by
what it actually reads (R-10), every failure is a typed ``BinlogError`` with
where it happened, only names of ASCII digits are segments (R-1), unpacking a
compressed segment costs what the walk reads and fails as ``io_error`` when
the disk does, and the version 1 walk steps over runs of empty records in
bulk.

Run as a script, this module is the driver the tests run reading under an
address-space limit of 1 GiB: ``--serve`` answers one JSON request a line,
each run in a fork of the driver (a CLI command, or every read-only library
entry point on a directory); ``--library DIRECTORY`` runs the library entry
points once and prints their outcomes.
"""

from __future__ import annotations

import errno
import gzip
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import zlib
from collections.abc import Callable, Iterator
from dataclasses import replace
from itertools import count
from pathlib import Path
from typing import IO, Any
from unittest import mock

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st
from logtools import legacy_segment, read_entries, write_log
from strategies import hostile_logs, legacy_pieces

import openbinlog
from openbinlog import BinlogIOError, Entry, Reader, Writer, add_subscriber, commit_checkpoint, stat, verify
from openbinlog._crc import masked_crc32c
from openbinlog._format import SEGMENT_NAME
from openbinlog._legacy import iter_legacy_records
from openbinlog._records import encode_record
from openbinlog._segment import CommitState, build_header, decode_slot, encode_slot
from openbinlog._segment_file import SegmentFile, list_segments
from openbinlog.compressed import CompressedSegment, UnpackError, unpack_failure
from openbinlog.walk import BytesSource, LegacyWalk, legacy_end

ADDRESS_SPACE = 1 << 30
REQUEST_SECONDS = 60  # a request that runs longer hangs: its child is killed by SIGALRM
CLI_COMMANDS = (["verify"], ["verify", "--json"], ["dump"], ["stat"], ["meta"])
TWO_GIB_RECORD = 2**31 - 1


# -- the driver: runs in its own process, under the address-space limit ------------------------------------------


def _summary(value: object) -> str:
    if isinstance(value, list):
        return f"{len(value)} items"
    if isinstance(value, openbinlog.VerifyReport):
        return f"{value.records} records, {len(value.damage)} damaged"
    return "ok"


def _library(directory: str) -> dict[str, str]:
    """Every read-only library entry point on ``directory``: a summary of what it returned, the error class of
    the typed error it raised (``unlocated`` when it names no file), or ``untyped`` and the traceback of anything
    else."""
    from openbinlog import Subscriber, last_entry, read_split, recover  # noqa: PLC0415 - the driver's own imports
    from openbinlog._segment_file import LocalDirectory  # noqa: PLC0415
    from openbinlog.walk import LogWalk  # noqa: PLC0415

    def read(**options: Any) -> Callable[[], list[Entry]]:
        def run() -> list[Entry]:
            with Reader(directory, **options) as reader:
                return list(reader)

        return run

    def walk(*, tolerant: bool) -> list[Entry]:
        log_walk = LogWalk(LocalDirectory(directory), tolerant=tolerant)
        try:
            entries: list[Entry] = []
            while batch := log_walk.next_batch():
                entries += batch
            return entries
        finally:
            log_walk.close()

    def subscriber() -> list[Entry]:
        with Subscriber(directory, "fuzz") as reading:
            return list(reading)

    calls: dict[str, Callable[[], object]] = {
        "Reader": read(),
        "Reader(one_segment=True)": read(one_segment=True),
        "Reader(tolerant=True)": read(tolerant=True),
        "Reader(start_index=3)": read(one_segment=True, start_index=3),
        "Reader(start_time=1)": read(one_segment=True, start_time=1, tolerant=True),
        "LogWalk": lambda: walk(tolerant=False),
        "LogWalk(tolerant=True)": lambda: walk(tolerant=True),
        "Subscriber": subscriber,
        "last_entry": lambda: last_entry(directory),
        "verify": lambda: verify(directory),
        "recover(dry_run=True)": lambda: recover(directory, dry_run=True),
        "stat": lambda: stat(directory),  # also the library side of ``binlog meta``
    }
    try:
        logs = list_segments(directory)
    except openbinlog.BinlogError:
        logs = []
    for log in logs:
        for start, stop in ((0, 2**63), (256, 300), (300, 2**64 - 1)):
            calls[f"read_split({log}, {start}, {stop})"] = lambda log=log, start=start, stop=stop: list(
                read_split(directory, log, start, stop)
            )

        def raw(log: int = log) -> bytes:
            with SegmentFile(directory, log) as segment:
                return segment.read_at(256, TWO_GIB_RECORD + 4)

        calls[f"SegmentFile({log}).read_at(256, 2 GiB)"] = raw
    outcomes = {}
    for name, call in calls.items():
        try:
            outcomes[name] = _summary(call())
        except openbinlog.BinlogError as exc:
            outcomes[name] = exc.error_class if exc.path else f"unlocated: {exc!r}"
        except Exception:
            outcomes[name] = "untyped: " + traceback.format_exc()
    return outcomes


def _cli(args: list[str]) -> int:
    """``binlog ARGS`` as its console script runs it (``sys.exit(main())``); the exit status."""
    from openbinlog import cli  # noqa: PLC0415

    sys.argv = ["binlog", *args]
    try:
        cli.main()
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1
    return 0


def _forked(request: dict[str, Any]) -> dict[str, Any]:
    """Run ``request`` in a fork of this process, its output captured: a crash or a hang ends only the child."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        pid = os.fork()
        if pid == 0:
            status = 70
            try:
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                signal.alarm(REQUEST_SECONDS)
                if "cli" in request:
                    status = _cli(request["cli"])
                else:
                    print(json.dumps(_library(request["library"])))
                    status = 0
            except BaseException:
                traceback.print_exc()  # what the interpreter prints for an uncaught exception
                status = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(status)
        _, wait_status = os.waitpid(pid, 0)
        out.seek(0)
        err.seek(0)
        return {
            "code": os.waitstatus_to_exitcode(wait_status),
            "stdout": out.read().decode(errors="replace"),
            "stderr": err.read().decode(errors="replace"),
        }


def _serve() -> None:
    from openbinlog import cli  # noqa: F401, PLC0415 - imported once, before the forks

    for line in sys.stdin:
        print(json.dumps(_forked(json.loads(line))), flush=True)


def _limit_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, resource.getrlimit(resource.RLIMIT_AS)[1]))


class Driver:
    """The driver process, under an address-space limit of 1 GiB."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            preexec_fn=_limit_address_space,  # noqa: PLW1509 - setrlimit only: no lock a thread could hold
        )

    def run(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert line, "the driver died"
        answer: dict[str, Any] = json.loads(line)
        return answer

    def library(self, directory: Path) -> dict[str, str]:
        answer = self.run({"library": str(directory)})
        assert answer["code"] == 0, answer["stderr"]
        outcomes: dict[str, str] = json.loads(answer["stdout"])
        return outcomes

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=REQUEST_SECONDS)


@pytest.fixture(scope="module")
def driver() -> Iterator[Driver]:
    running = Driver()
    yield running
    running.close()


def assert_typed(outcomes: dict[str, str]) -> None:
    """Every entry point returned, or raised a typed error that names the file (or directory) at fault."""
    untyped = {name: outcome for name, outcome in outcomes.items() if outcome.startswith(("untyped", "unlocated"))}
    assert not untyped, "\n".join(f"{name}: {outcome}" for name, outcome in untyped.items())


def assert_cli_contract(driver: Driver, directory: Path) -> None:
    """Exit 0, 1 (damage) or 2 (usage, I/O, not a log); a reason on stderr for 1 and 2; never a traceback, nor an
    exception the CLI had to catch as a bug."""
    for command in CLI_COMMANDS:
        answer = driver.run({"cli": [*command, str(directory)]})
        code, stderr = answer["code"], answer["stderr"]
        where = f"binlog {' '.join(command)}: exit {code}\n{stderr}"
        assert code in (0, 1, 2), where
        assert code == 0 or stderr.strip(), where
        assert "Traceback" not in stderr, where
        assert "internal error" not in stderr, where


# -- building hostile segments -------------------------------------------------------------------------------------


def forge_slot(data: bytearray, *, new_generation: bool = False, **fields: int) -> None:
    """Rewrite the active commit slot of a version 2 segment with ``fields``, under a valid slot checksum; with
    ``new_generation``, publish it as the next generation, in the other slot."""
    slots = [decode_slot(bytes(data[at : at + 48])) for at in (96, 144)]
    valid = [slot for slot in slots if slot is not None]
    active = max(valid, key=lambda slot: slot.generation) if valid else CommitState(1, 256, 1, -1, 0)
    if new_generation:
        fields = {"generation": active.generation + 1, **fields}
    at, raw = encode_slot(replace(active, **fields))
    data[at : at + 48] = raw


def forge_record_length(data: bytearray, offset: int, length: int) -> None:
    """Set the length of the version 2 record at ``offset``, under a valid record header checksum."""
    data[offset : offset + 4] = length.to_bytes(4, "big")
    data[offset + 36 : offset + 40] = masked_crc32c(bytes(data[offset : offset + 36])).to_bytes(4, "big")


def one_segment(directory: Path, data: bytes) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "00000001.dat"
    path.write_bytes(data)
    return path


def header_and_record(*, commit_offset: int, length: int) -> bytearray:
    """A version 2 header whose active slot says ``commit_offset``, and one record header claiming ``length``."""
    data = bytearray(build_header(log=1, log_id=bytes(16), base_index=1, created_us=0))
    data += encode_record(1, b"")
    forge_record_length(data, 256, length)
    forge_slot(data, new_generation=True, commit_offset=commit_offset, next_index=2)
    return data


def zstd_bomb(data: bytes, zeros: int) -> bytes:
    """One Zstandard frame (RFC 8878): ``data`` in raw blocks, then ``zeros`` zero bytes in RLE blocks of 4 bytes
    each, so that 4 GiB of zeros take 128 KiB."""
    block = 1 << 17
    frame = bytearray(b"\x28\xb5\x2f\xfd\x00\x38")  # magic; no content size, no checksum; a 128 KiB window
    blocks = [((len(data[at : at + block]) << 3), data[at : at + block]) for at in range(0, len(data), block)]
    while zeros:
        run = min(zeros, block)
        blocks.append(((run << 3) | (1 << 1), b"\x00"))  # block type 1: RLE
        zeros -= run
    for number, (head, body) in enumerate(blocks):
        frame += (head | (number == len(blocks) - 1)).to_bytes(3, "little") + body
    return bytes(frame)


def sealed_log(directory: Path, *, size: int = 100) -> list[bytes]:
    """A log of two segments, the first sealed (what compression archives) and holding 50 records of about
    ``size`` bytes."""
    payloads = [bytes([n]) * (size + n) for n in range(50)]
    write_log(directory, [*payloads, None, b"last"])
    return [*payloads, b"last"]


def run_library_limited(directory: Path, *, file_size: int) -> dict[str, str]:
    """The library entry points on ``directory`` in a process that may write no file larger than ``file_size``."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    done = subprocess.run(
        [sys.executable, __file__, "--library", str(directory)],
        capture_output=True,
        text=True,
        timeout=REQUEST_SECONDS,
        preexec_fn=limit,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    outcomes: dict[str, str] = json.loads(done.stdout)
    return outcomes


# -- 1. memory is bounded by what is read, never by a length the file states (R-10) ------------------------------


@pytest.mark.spec("R-10")
def test_a_2_gib_record_length_before_a_commit_point_beyond_the_file_costs_no_memory(
    tmp_path: Path, driver: Driver
) -> None:
    data = header_and_record(commit_offset=256 + 4 + TWO_GIB_RECORD, length=TWO_GIB_RECORD)
    assert len(data) == 296
    one_segment(tmp_path / "log", bytes(data))
    outcomes = driver.library(tmp_path / "log")
    assert_typed(outcomes)
    assert outcomes["Reader"] == "truncated"  # spec 3.2: a commit point beyond the file cuts its last record short
    assert outcomes["SegmentFile(1).read_at(256, 2 GiB)"] == "ok"
    assert outcomes["verify"] == "0 records, 1 damaged"
    assert_cli_contract(driver, tmp_path / "log")


@pytest.mark.spec("R-10", "R-35")
def test_a_version_1_tail_beyond_the_file_costs_no_memory(tmp_path: Path, driver: Driver) -> None:
    data = bytearray(legacy_segment([b"abc"], log=1, closed=False))
    data[8:16] = (2**62).to_bytes(8, "big")
    one_segment(tmp_path / "log", bytes(data))
    outcomes = driver.library(tmp_path / "log")
    assert_typed(outcomes)
    assert outcomes["stat"] == "truncated"  # stat counts version 1 records: the tail is missing its bytes
    assert outcomes["Reader(tolerant=True)"] == "1 items"
    assert_cli_contract(driver, tmp_path / "log")


# -- 2. stat and meta: typed errors, or what the headers say ---------------------------------------------------


def test_stat_of_a_segment_whose_commit_point_lies_beyond_its_last_bytes_shows_no_first_timestamp(
    tmp_path: Path,
) -> None:
    data = bytearray(build_header(log=1, log_id=bytes(16), base_index=1, created_us=0)) + b"\x00" * 10
    forge_slot(data, new_generation=True, commit_offset=4096, next_index=5)
    one_segment(tmp_path / "log", bytes(data))
    [item] = stat(tmp_path / "log")
    assert (item.records, item.first_index, item.last_index, item.first_timestamp_us) == (4, 1, 4, None)
    assert item.size == 266


def test_stat_of_a_damaged_version_1_segment_is_a_typed_error_with_its_place(tmp_path: Path) -> None:
    data = bytearray(legacy_segment([b"abc", b"defg"], log=1, closed=False))
    data[255:259] = (-5).to_bytes(4, "big", signed=True)  # the second record's length
    one_segment(tmp_path / "log", bytes(data))
    with pytest.raises(openbinlog.LengthOutOfRangeError) as raised:
        stat(tmp_path / "log")
    assert (raised.value.log, raised.value.offset, raised.value.index) == (1, 255, 2)
    assert raised.value.path == str(tmp_path / "log" / "00000001.dat")


# -- 3. segment names: ASCII digits, exactly ------------------------------------------------------------------------


@pytest.mark.spec("R-1")
@pytest.mark.parametrize(
    "name",
    [
        "\uff10" * 7 + "4.dat",  # fullwidth digits
        "\u0660" * 7 + "4.dat",  # Arabic-Indic digits
        "00000004.dat\n",
        "00000004.dat.gz\n",
        "00000004.dat.zst\n",
    ],
)
def test_names_of_other_digits_or_with_a_trailing_newline_are_not_segments(log_dir: Path, name: str) -> None:
    payloads = write_log(log_dir, [b"a", None, b"b"])
    (log_dir / name).write_bytes(b"not a segment")  # taken for segment 4, it would break the chain
    assert SEGMENT_NAME.match(name) is None
    assert list_segments(str(log_dir)) == [1, 2]
    assert [entry.payload for entry in read_entries(log_dir)] == payloads
    assert [item.log for item in stat(log_dir)] == [1, 2]
    assert verify(log_dir).ok


# -- 4. compressed segments: unpacked to the segment's end and no further, disk failures are io_error -------------


@pytest.mark.spec("R-43")
def test_a_compressed_segment_is_unpacked_no_further_than_its_commit_point(tmp_path: Path) -> None:
    # 4 GiB of zeros after the records of a sealed segment (a preallocated one, or a bomb) in 128 KiB of archive.
    directory = tmp_path / "log"
    payloads = sealed_log(directory)
    plain = directory / "00000001.dat"
    (directory / "00000001.dat.zst").write_bytes(zstd_bomb(plain.read_bytes(), 4 << 30))
    plain.unlink()
    outcomes = run_library_limited(directory, file_size=16 << 20)
    assert_typed(outcomes)
    assert outcomes["Reader"] == f"{len(payloads)} items"
    assert outcomes["verify"] == f"{len(payloads)} records, 0 damaged"
    assert outcomes["stat"] == "2 items"


@pytest.mark.spec("R-43")
def test_a_compressed_segment_whose_header_fails_is_unpacked_no_further_than_its_header(tmp_path: Path) -> None:
    directory = tmp_path / "log"
    sealed_log(directory)
    (directory / "00000001.dat.zst").write_bytes(zstd_bomb(b"", 4 << 30))  # a header of zeros, then more zeros
    (directory / "00000001.dat").unlink()
    outcomes = run_library_limited(directory, file_size=16 << 20)
    assert_typed(outcomes)
    assert outcomes["Reader"] == "unsupported_version"  # a zeroed header longer than 256 bytes (spec 3.5)


@pytest.mark.spec("R-43")
@pytest.mark.parametrize("codec", ["gz", "zst"])
def test_a_file_size_limit_while_unpacking_a_healthy_archive_is_an_io_error(tmp_path: Path, codec: str) -> None:
    directory = tmp_path / "log"
    sealed_log(directory, size=100_000)  # 5 MB unpacked
    plain = directory / "00000001.dat"
    data = plain.read_bytes()
    packed = gzip.compress(data) if codec == "gz" else zstandard.ZstdCompressor().compress(data)
    (directory / f"00000001.dat.{codec}").write_bytes(packed)
    plain.unlink()
    outcomes = run_library_limited(directory, file_size=1 << 20)
    assert_typed(outcomes)
    assert outcomes["Reader"] == "io_error"
    assert outcomes["stat"] == "io_error"


def fill_the_disk_of_spills(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every temporary file made from now on refuses writes with ENOSPC, as on a full disk."""
    real = tempfile.TemporaryFile

    def full_disk(*args: Any, **kwargs: Any) -> IO[bytes]:
        spill: IO[bytes] = real(*args, **kwargs)

        def write(data: bytes) -> int:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        spill.write = write  # type: ignore[method-assign]
        return spill

    monkeypatch.setattr(tempfile, "TemporaryFile", full_disk)


def test_a_full_disk_while_unpacking_a_healthy_archive_is_an_io_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "log"
    sealed_log(directory)
    plain = directory / "00000001.dat"
    (directory / "00000001.dat.zst").write_bytes(zstandard.ZstdCompressor().compress(plain.read_bytes()))
    plain.unlink()
    fill_the_disk_of_spills(monkeypatch)
    with pytest.raises(BinlogIOError, match="No space left on device") as raised:
        read_entries(directory)
    assert (raised.value.error_class, raised.value.log) == ("io_error", 1)
    assert raised.value.path == str(directory / "00000001.dat.zst")


def test_a_gzip_stream_of_invalid_deflate_data_is_a_bad_header(tmp_path: Path) -> None:
    directory = tmp_path / "log"
    sealed_log(directory)
    plain = directory / "00000001.dat"
    packed = bytearray(gzip.compress(plain.read_bytes()))
    packed[10] |= 0b110  # the first deflate block: type 3, which does not exist (RFC 1951)
    with pytest.raises(zlib.error):
        gzip.decompress(bytes(packed))
    (directory / "00000001.dat.gz").write_bytes(bytes(packed))
    plain.unlink()
    with pytest.raises(UnpackError, match="cannot be unpacked") as raised:
        read_entries(directory)
    assert (raised.value.error_class, raised.value.log, raised.value.offset) == ("bad_header", 1, 0)
    assert stat_error(directory) == "bad_header"


def replaced_by(directory: Path, codec: str, archive: Callable[[bytes], bytes]) -> bytes:
    """Segment 1 of ``directory`` replaced by ``archive`` of its bytes, named for ``codec``; its bytes."""
    plain = directory / "00000001.dat"
    data = plain.read_bytes()
    (directory / f"00000001.dat.{codec}").write_bytes(archive(data))
    plain.unlink()
    return data


@pytest.mark.spec("R-43")
@pytest.mark.parametrize("codec", ["gz", "zst"])
def test_an_archive_cut_after_the_header_is_a_bad_header_at_offset_0(tmp_path: Path, codec: str) -> None:
    """Wherever the cut lies: not at the count of bytes unpacked before it, and a Zstandard frame that stops
    short is not the end of the segment (python-zstandard's stream reader ends there without an error)."""
    directory = tmp_path / "log"
    sealed_log(directory)
    pack = gzip.compress if codec == "gz" else zstandard.ZstdCompressor().compress
    replaced_by(directory, codec, lambda data: pack(data)[: len(pack(data)) // 2])
    with pytest.raises(UnpackError, match="cannot be unpacked") as raised:
        read_entries(directory)
    assert (raised.value.error_class, raised.value.log, raised.value.offset) == ("bad_header", 1, 0)


def test_whole_zstd_frames_of_a_short_segment_read_as_the_short_file(tmp_path: Path) -> None:
    """Frames, a skippable one among them, that hold fewer bytes than the header's commit point: the walk meets
    the end of the file, as in the plain file cut there (truncated), not a cut archive."""
    directory = tmp_path / "log"
    sealed_log(directory)
    packer = zstandard.ZstdCompressor()
    skippable = (0x184D2A5A).to_bytes(4, "little") + (3).to_bytes(4, "little") + b"abc"
    data = replaced_by(
        directory, "zst", lambda data: packer.compress(data[:700]) + skippable + packer.compress(data[700:1500])
    )
    with pytest.raises(openbinlog.BinlogError) as raised:
        read_entries(directory)
    (directory / "00000001.dat.zst").unlink()
    (directory / "00000001.dat").write_bytes(data[:1500])
    with pytest.raises(openbinlog.BinlogError) as plain:
        read_entries(directory)
    assert raised.value.error_class == plain.value.error_class == "truncated"
    assert (raised.value.log, raised.value.offset) == (plain.value.log, plain.value.offset)


@pytest.mark.spec("R-43")
def test_damage_in_a_gzip_stream_just_beyond_the_commit_point_is_never_met(tmp_path: Path) -> None:
    """Unpacking stops at the commit point: no buffer reads ahead of it (GzipFile's reads 8 KiB ahead)."""
    directory = tmp_path / "log"
    payloads = sealed_log(directory, size=20)

    def damaged_beyond(data: bytes) -> bytes:
        # Stored blocks: the segment, 2000 zeros (whose header zlib reads once the segment is out), and a last block
        # whose NLEN no longer complements its LEN: invalid stored block lengths (RFC 1951 3.2.4).
        stored = zlib.compressobj(0, zlib.DEFLATED, -zlib.MAX_WBITS)
        deflate = stored.compress(data) + stored.flush(zlib.Z_FULL_FLUSH)
        deflate += stored.compress(bytes(2000)) + stored.flush(zlib.Z_FULL_FLUSH)
        last = bytearray(stored.compress(bytes(1000)) + stored.flush())
        last[3] ^= 0xFF
        whole = data + bytes(3000)
        trailer = zlib.crc32(whole).to_bytes(4, "little") + len(whole).to_bytes(4, "little")
        return b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + deflate + bytes(last) + trailer

    data = replaced_by(directory, "gz", damaged_beyond)
    assert len(data) + 3000 < 8192
    with pytest.raises(zlib.error):
        gzip.decompress((directory / "00000001.dat.gz").read_bytes())
    assert [entry.payload for entry in read_entries(directory)] == payloads


def stat_error(directory: Path) -> str | None:
    try:
        stat(directory)
    except openbinlog.BinlogError as exc:
        return exc.error_class
    return None


def test_a_zstd_archive_of_several_frames_holds_their_contents_in_order(tmp_path: Path) -> None:
    directory = tmp_path / "log"
    payloads = sealed_log(directory)
    plain = directory / "00000001.dat"
    data = plain.read_bytes()
    packer = zstandard.ZstdCompressor()
    (directory / "00000001.dat.zst").write_bytes(packer.compress(data[:1000]) + packer.compress(data[1000:]))
    plain.unlink()
    assert [entry.payload for entry in read_entries(directory)] == payloads


def test_unpacking_reads_only_the_segment_and_never_beyond_the_cap(tmp_path: Path) -> None:
    directory = tmp_path / "log"
    sealed_log(directory)
    data = (directory / "00000001.dat").read_bytes()
    archive = tmp_path / "segment.zst"
    archive.write_bytes(zstd_bomb(data, 1 << 30))
    with CompressedSegment(archive.open("rb"), "zst", path=str(archive)) as unpacked:
        assert unpacked.read_at(0, 256) == data[:256]
        assert unpacked.size() == len(data)  # the commit point of the sealed segment: no zeros unpacked
        assert unpacked.read_at(len(data) - 4, TWO_GIB_RECORD) == data[-4:]
    with CompressedSegment(archive.open("rb"), "zst", path=str(archive), max_unpacked=1000) as capped:
        assert capped.read_at(0, 257) == data[:257]  # the header and the byte the blank check reads
        with pytest.raises(UnpackError, match="more than 1000 bytes") as raised:
            capped.read_at(256, 44)  # the segment ends beyond the cap: refused before its first record
        assert raised.value.offset == 0
        with pytest.raises(UnpackError):  # the failure stays: nothing more is read
            capped.read_at(0, 10)


@pytest.mark.spec("R-43")
@pytest.mark.parametrize("codec", ["gz", "zst"])
def test_unpack_failure_tells_the_failure_a_walk_to_the_end_meets_and_keeps_nothing(tmp_path: Path, codec: str) -> None:
    """What a planner asks of an archive whose records are read elsewhere: whether it unpacks to the segment's end
    (R-43), without keeping its bytes (nothing is written to a temporary file)."""
    directory = tmp_path / "log"
    sealed_log(directory, size=80_000)  # about 4 MB: a cut at 60% lies beyond the first mebibyte unpacked
    data = (directory / "00000001.dat").read_bytes()
    packed = gzip.compress(data) if codec == "gz" else zstandard.ZstdCompressor().compress(data)
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    whole.write_bytes(packed)
    cut.write_bytes(packed[: len(packed) * 6 // 10])
    with CompressedSegment(cut.open("rb"), codec, path=str(cut)) as walked:
        assert walked.read_at(0, 256) == data[:256]
        with pytest.raises(UnpackError) as met:
            walked.read_at(256, 40)  # the first record: the segment is unpacked to its end before it
    with mock.patch.object(tempfile, "TemporaryFile", side_effect=AssertionError("unpacked bytes were kept")):
        assert unpack_failure(whole.open("rb"), codec, path=str(whole)) is None
        failed = unpack_failure(cut.open("rb"), codec, path=str(cut))
    assert failed is not None and (failed.offset, failed.message) == (0, met.value.message)


# -- 5. sparse version 1 files: empty records in bulk ----------------------------------------------------------------


def one_by_one(data: bytes, tail: int) -> tuple[list[tuple[int, int, bytes]], tuple[str, int, int] | None]:
    """Appendix B.4, one record at a time: the simple walk the bulk walk must equal."""
    entries = []
    at, index = 248, 1
    while at < tail:
        if at + 4 > tail or at + 4 > len(data):
            return entries, ("truncated", at, index)
        length = int.from_bytes(data[at : at + 4], "big", signed=True)
        if length < 0 or at + 4 + length > tail:
            return entries, ("length_out_of_range", at, index)
        if at + 4 + length > len(data):
            return entries, ("truncated", at, index)
        entries.append((at, index, data[at + 4 : at + 4 + length]))
        at, index = at + 4 + length, index + 1
    return entries, None


def legacy_bytes(body: bytes, tail: int) -> bytes:
    header = bytearray(legacy_segment([], log=1, closed=True))[:248]
    header[8:16] = tail.to_bytes(8, "big")
    return (bytes(header) + body).ljust(256, b"\x00")  # a header is 256 bytes, the first record starts at 248


@pytest.mark.spec("R-35")
@given(pieces=legacy_pieces, tail_cut=st.integers(min_value=-8, max_value=8), window=st.integers(1, 64))
@settings(max_examples=300)
def test_the_bulk_walk_of_empty_version_1_records_equals_the_walk_one_record_at_a_time(
    pieces: list[bytes], tail_cut: int, window: int
) -> None:
    body = b"".join(pieces)
    tail = max(248 + len(body) + tail_cut, 248)
    data = legacy_bytes(body, tail)
    expected, error = one_by_one(data, tail)

    got: list[tuple[int, int, bytes]] = []
    failed: tuple[str, int | None, int | None] | None = None
    try:
        for entry in iter_legacy_records(data[248:], log=1, offset=248, tail=tail, next_index=1):
            got.append((entry.offset, entry.index, entry.payload))
    except openbinlog.BinlogError as exc:
        failed = (exc.error_class, exc.offset, exc.index)
    assert (got, failed) == (expected, error)

    # The windowed walk, its windows cutting runs of zeros anywhere, and its count without entries (stat).
    source = BytesSource(data)
    walked: list[Entry] = []
    failed = None
    walk = LegacyWalk(source, path="<bytes>", log=1, end=legacy_end(source, 1)[1], window=window)
    try:
        while batch := walk.next_batch():
            walked += batch
    except openbinlog.BinlogError as exc:
        failed = (exc.error_class, exc.offset, exc.index)
    assert [(entry.offset, entry.index, entry.payload) for entry in walked] == expected
    assert failed == error
    assert walked == [Entry(1, at, index, payload, checked=False) for at, index, payload in expected]
    counter = LegacyWalk(source, path="<bytes>", log=1, end=legacy_end(source, 1)[1], window=window)
    counted = 0
    try:
        while runs := counter.next_runs():
            counted += sum(run[1] for run in runs)
    except openbinlog.BinlogError:
        pass
    assert counted == len(expected)


@pytest.mark.spec("R-35")
def test_stat_of_a_sparse_version_1_file_counts_its_quarter_billion_empty_records_in_bulk(tmp_path: Path) -> None:
    directory = tmp_path / "log"
    directory.mkdir()
    tail = 248 + (1 << 30)
    with (directory / "00000001.dat").open("wb") as out:
        out.write(legacy_bytes(b"", tail))
        out.truncate(tail)  # a hole: no disk used
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", "import sys, openbinlog; print(openbinlog.stat(sys.argv[1])[0].records)", directory],
        capture_output=True,
        text=True,
        timeout=REQUEST_SECONDS,  # one record at a time, this takes a quarter of an hour
        check=True,
    )
    assert int(done.stdout) == 1 << 28
    assert time.monotonic() - started < REQUEST_SECONDS


# -- entries whose fields a datetime cannot hold (R-13) --------------------------------------------------------------


@pytest.mark.spec("R-13")
def test_an_entry_whose_timestamp_a_datetime_cannot_hold_has_no_datetime() -> None:
    assert Entry(1, 256, 1, b"", timestamp_us=2**62).timestamp is None
    assert Entry(1, 256, 1, b"", timestamp_us=-(2**62)).timestamp is None
    assert Entry(1, 256, 1, b"", timestamp_us=1_700_000_000_000_000).timestamp is not None


@pytest.mark.spec("R-13")
def test_the_cli_shows_a_log_whose_timestamps_a_datetime_cannot_hold(tmp_path: Path, driver: Driver) -> None:
    record = encode_record(1, b"hello", timestamp_us=2**62)
    data = bytearray(build_header(log=1, log_id=bytes(16), base_index=1, created_us=2**62)) + record
    forge_slot(data, new_generation=True, commit_offset=256 + len(record), next_index=2, last_timestamp_us=2**62)
    one_segment(tmp_path / "log", bytes(data))
    assert_typed(driver.library(tmp_path / "log"))
    for command in CLI_COMMANDS:
        assert driver.run({"cli": [*command, str(tmp_path / "log")]})["code"] == 0, command


# -- 6. the fuzz test ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def base_logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict[str, list[int]]]]:
    """The logs the fuzz test damages, and the record offsets of each segment file."""
    root = tmp_path_factory.mktemp("base")
    asqns = iter(count(10, 7))
    built = {}
    for name in ("v2", "v2_preallocated"):
        directory = root / name
        with Writer(directory, preallocate=8192 if name == "v2_preallocated" else None) as writer:
            for number, payload in enumerate([b"first", b"", b"x" * 3000, b"asqn", b"y" * 40, b"z"]):
                writer.append(payload, asqn=next(asqns) if number % 2 else -1)
                if number in (2, 4):
                    writer.cutover()
        built[name] = directory
    legacy = root / "v1"
    legacy.mkdir()
    (legacy / "00000001.dat").write_bytes(legacy_segment([b"a", b"", b"b" * 300], log=1, closed=True, next_log=2))
    (legacy / "00000002.dat").write_bytes(legacy_segment([b"", b"", b"c"], log=2, closed=False))
    built["v1"] = legacy
    logs = {}
    for name, directory in built.items():
        entries = read_entries(directory)
        add_subscriber(directory, "fuzz")
        commit_checkpoint(directory, "fuzz", entries[1].ref)
        offsets: dict[str, list[int]] = {}
        for entry in entries:
            offsets.setdefault(f"{entry.log:08d}.dat", []).append(entry.offset)
        logs[name] = (directory, offsets)
    return logs


def mutate(directory: Path, offsets: dict[str, list[int]], kind: str, where: int, value: int) -> None:
    """Apply one mutation of ``strategies.SEGMENT_MUTATIONS`` to the log in ``directory``."""
    if kind == "checkpoint":
        ref = "not a ref" if value % 7 == 0 else f"{where % 4}:{value}:{where >> 2}"
        (directory / "subscribers" / "fuzz.json").write_text(json.dumps({"name": "fuzz", "checkpoint": ref}))
        return
    files = sorted(path for path in directory.iterdir() if path.is_file() and SEGMENT_NAME.match(path.name))
    if not files:
        return
    path = files[where % len(files)]
    data = bytearray(path.read_bytes())
    at = (where >> 3) % max(len(data), 1)
    version2 = data[4:6] == b"\x00\x02"
    starts = offsets.get(path.name) or [256 if version2 else 248]
    if kind == "flip" and data:
        data[at] ^= 1 << (value % 8)
    elif kind == "truncate":
        del data[value % (len(data) + 1) :]
    elif kind == "zero":
        data[at : at + value % 4096] = bytes(len(data[at : at + value % 4096]))
    elif kind == "append":
        forged = bytearray(encode_record(where % 16, b"p"))
        forge_record_length(forged, 0, value % 2**32)
        data += [bytes(value % 512), b"\xff" * (value % 512), bytes(forged)][where % 3]
    elif kind == "record_length":
        start = starts[(where >> 3) % len(starts)]
        if version2 and len(data) >= start + 40:
            forge_record_length(data, start, value % 2**32)
        else:
            data[start : start + 4] = (value % 2**32).to_bytes(4, "big")
    elif kind in ("commit_offset", "next_index") and version2 and len(data) >= 256:
        forge_slot(data, new_generation=bool(where & 1), **{kind: value % 2**64})
    elif kind == "legacy_tail" and len(data) >= 16:
        data[8:16] = (value % 2**64).to_bytes(8, "big")
    path.write_bytes(bytes(data))


def pack(directory: Path, codec: str, which: int, damage: str | None, where: int) -> None:
    """Store one segment compressed; with ``damage``, flip a bit of the archive or cut it."""
    files = sorted(path for path in directory.iterdir() if path.is_file() and SEGMENT_NAME.match(path.name))
    if not files:
        return
    path = files[which % len(files)]
    data = path.read_bytes()
    archive = bytearray(gzip.compress(data) if codec == "gz" else zstandard.ZstdCompressor().compress(data))
    if damage == "flip":
        archive[where % len(archive)] ^= 1 << (where % 8)
    elif damage == "cut":
        del archive[where % len(archive) :]
    path.unlink()
    path.with_name(f"{path.name}.{codec}").write_bytes(bytes(archive))


@pytest.mark.spec("R-10", "R-20")
def test_no_hostile_log_hurts_a_reader(
    base_logs: dict[str, tuple[Path, dict[str, list[int]]]],
    driver: Driver,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    """Mutated segments (bit flips, truncations, forged lengths, commit points and tails, version 1 and 2,
    compressed too) given to every read-only library entry point and CLI command, under 1 GiB of address space."""
    examples = count()

    @settings(max_examples=1000 if request.config.getoption("--full", default=False) else 100)
    @given(hostile=hostile_logs)
    def no_harm(hostile: tuple[str, list[tuple[str, int, int]], tuple[str, int, str | None, int] | None]) -> None:
        name, mutations, compression = hostile
        base, offsets = base_logs[name]
        directory = tmp_path / f"{next(examples)}"
        shutil.copytree(base, directory)
        try:
            for kind, where, value in mutations:
                mutate(directory, offsets, kind, where, value)
            if compression is not None:
                pack(directory, *compression)
            assert_typed(driver.library(directory))
            assert_cli_contract(driver, directory)
        finally:
            shutil.rmtree(directory)

    no_harm()


def test_the_fuzz_corpus_reads_cleanly_before_any_mutation(
    base_logs: dict[str, tuple[Path, dict[str, list[int]]]], driver: Driver
) -> None:
    for name, (directory, offsets) in base_logs.items():
        outcomes = driver.library(directory)
        assert_typed(outcomes)
        records = sum(len(starts) for starts in offsets.values())
        assert outcomes["Reader"] == outcomes["LogWalk"] == f"{records} items", name
        assert outcomes["verify"] == f"{records} records, 0 damaged", name
        assert outcomes["stat"] == f"{len(offsets)} items", name
        for command in CLI_COMMANDS:
            assert driver.run({"cli": [*command, str(directory)]})["code"] == 0, (name, command)


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        _serve()
    elif sys.argv[1:2] == ["--library"]:
        print(json.dumps(_library(sys.argv[2])))
