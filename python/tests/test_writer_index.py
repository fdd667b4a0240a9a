"""A writer given ``index_interval`` builds the index of each segment it seals, in a thread of its own (spec 18.4)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from logtools import segment

from openbinlog import Reader, Writer, build_index, check_indexes, read_all
from openbinlog import _index_build as index_build_module
from openbinlog._format import index_name
from openbinlog._fs import OsFileSystem

TIMEOUT = 20.0


def _usable(directory: Path) -> dict[int, bool]:
    return {note.log: note.usable for note in check_indexes(directory)}


def _wait_for_builds(writer: Writer, count: int) -> None:
    """Until the builder has done ``count`` builds (it runs on after a cutover returns)."""
    done = threading.Event()
    for _ in range(int(TIMEOUT / 0.01)):
        if len(writer.index_builds) >= count:
            return
        done.wait(0.01)
    raise AssertionError(f"the builder did {len(writer.index_builds)} builds, not {count}")


@pytest.mark.parametrize("exclusive", [False, True], ids=["per-batch lock", "exclusive"])
@pytest.mark.spec("W-45")
def test_a_writer_indexes_each_segment_it_seals_as_binlog_index_would(log_dir: Path, exclusive: bool) -> None:
    with Writer(log_dir, exclusive=exclusive, index_interval=300, max_segment_bytes=20_000) as writer:
        for number in range(400):  # several cutovers at the size limit, and one asked for
            writer.append(b"%05d" % number + b"." * 95)
        writer.cutover()
        sealed = writer.cutover() - 1
        _wait_for_builds(writer, sealed)
        assert [(build.log, build.status) for build in writer.index_builds] == [
            (log, "built") for log in range(1, sealed + 1)
        ]
    assert _usable(log_dir) == {log: True for log in range(1, sealed + 1)}
    for log in range(1, sealed + 1):  # the same bytes as binlog index writes
        built = (log_dir / index_name(log)).read_bytes()
        assert build_index(log_dir, log, interval=300, rebuild=True).status == "unchanged"
        assert (log_dir / index_name(log)).read_bytes() == built
    with Reader(log_dir, start_index=333) as reader:
        assert next(iter(reader)).payload.startswith(b"00332")
    assert not list(log_dir.glob(".*.tmp"))


@pytest.mark.parametrize("exclusive", [False, True], ids=["per-batch lock", "exclusive"])
@pytest.mark.spec("W-45")
def test_no_commit_waits_for_the_index_builder(log_dir: Path, monkeypatch: pytest.MonkeyPatch, exclusive: bool) -> None:
    """The build of the sealed segment is held back: the cutover returns, and appends commit meanwhile."""
    walking, release = threading.Event(), threading.Event()
    original = index_build_module._index_bytes
    committing = threading.current_thread()

    def held(*arguments: object, **keywords: object) -> object:
        assert threading.current_thread() is not committing, "the index was built in the committing thread"
        walking.set()
        assert release.wait(TIMEOUT)
        return original(*arguments, **keywords)  # type: ignore[arg-type]

    with monkeypatch.context() as patch, Writer(log_dir, exclusive=exclusive, index_interval=100) as writer:
        patch.setattr(index_build_module, "_index_bytes", held)
        for number in range(50):
            writer.append(b"a%03d" % number)
        writer.cutover()
        assert walking.wait(TIMEOUT)
        refs = [writer.append(b"b%03d" % number) for number in range(50)]  # committed while the build waits
        writer.cutover()
        assert writer.index_builds == [] and refs[-1].index == 100
        release.set()
        _wait_for_builds(writer, 2)
    assert _usable(log_dir) == {1: True, 2: True}
    assert [entry.payload for entry in read_all(log_dir)][-1] == b"b049"


def test_closing_the_writer_gives_up_a_build_under_way_and_leaves_no_file(
    log_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    walking, closed = threading.Event(), threading.Event()
    original = index_build_module._walk_entries

    def slow(*arguments: object, cancelled: object) -> object:
        walking.set()
        assert closed.wait(TIMEOUT)  # close() has asked the builder to stop
        return original(*arguments, cancelled=cancelled)  # type: ignore[arg-type]

    monkeypatch.setattr(index_build_module, "_walk_entries", slow)
    writer = Writer(log_dir, index_interval=100)
    for number in range(30):
        writer.append(b"%03d" % number)
    writer.cutover()
    assert walking.wait(TIMEOUT)
    builder = writer._index_builder
    assert builder is not None
    stopping = threading.Thread(target=writer.close)
    stopping.start()
    for _ in range(int(TIMEOUT / 0.01)):
        if builder._closing:
            break
        closed.wait(0.01)
    closed.set()
    stopping.join(TIMEOUT)
    assert not stopping.is_alive()
    assert [(build.log, build.status, build.reason) for build in writer.index_builds] == [(1, "skipped", "cancelled")]
    assert not (log_dir / index_name(1)).exists() and not list(log_dir.glob(".*.tmp"))


def test_a_damaged_sealed_segment_is_left_without_an_index_and_the_writer_goes_on(log_dir: Path) -> None:
    with Writer(log_dir, index_interval=100) as writer:
        for number in range(30):
            writer.append(b"%03d" % number + b"." * 20)
        data = bytearray(segment(log_dir, 1).read_bytes())
        data[256 + 3 * 63 + 50] ^= 1  # a payload byte of the fourth record, before the cutover seals it
        segment(log_dir, 1).write_bytes(bytes(data))
        writer.cutover()
        _wait_for_builds(writer, 1)
        [build] = writer.index_builds
        assert (build.status, build.reason) == ("skipped", "damaged: checksum_mismatch")
        writer.append(b"after")
    assert not (log_dir / index_name(1)).exists()


def test_an_index_interval_the_index_cannot_hold_is_refused(log_dir: Path) -> None:
    for interval in (0, 1 << 32):
        with pytest.raises(ValueError, match="interval"):
            Writer(log_dir, index_interval=interval)
    assert not list(log_dir.glob("*.dat"))


def test_closing_the_writer_does_not_wait_for_a_lock_its_builder_waits_for(
    log_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process's writer holds LOCK (an exclusive writer, from open to close): the builder, ready to
    write its file, waits for it; close() gives the build up rather than wait with it."""
    walked, locked, waiting = threading.Event(), threading.Event(), threading.Event()
    original, try_lock = index_build_module._walk_entries, OsFileSystem.try_lock

    def gated(*arguments: object, cancelled: object) -> object:
        walked.set()
        assert locked.wait(TIMEOUT)
        return original(*arguments, cancelled=cancelled)  # type: ignore[arg-type]

    def trying(self: OsFileSystem, fd: int) -> bool:
        taken = try_lock(self, fd)
        if not taken:
            waiting.set()
        return taken

    monkeypatch.setattr(index_build_module, "_walk_entries", gated)
    monkeypatch.setattr(OsFileSystem, "try_lock", trying)
    writer = Writer(log_dir, index_interval=100)
    for number in range(30):
        writer.append(b"%03d" % number)
    writer.cutover()
    assert walked.wait(TIMEOUT)
    other = os.open(log_dir / "LOCK", os.O_RDWR)
    try:
        OsFileSystem().lock(other)  # an open file description of its own, as another process has
        locked.set()
        assert waiting.wait(TIMEOUT), "the builder never waited for the lock"
        stopping = threading.Thread(target=writer.close)
        stopping.start()
        stopping.join(TIMEOUT)
        assert not stopping.is_alive(), "close() waited for the lock its builder was waiting for"
    finally:
        os.close(other)
    assert [(build.log, build.status, build.reason) for build in writer.index_builds] == [(1, "skipped", "cancelled")]
    assert not (log_dir / index_name(1)).exists() and not list(log_dir.glob(".*.tmp"))


def test_a_writer_opened_with_an_interval_indexes_the_finished_segments_that_have_none(log_dir: Path) -> None:
    with Writer(log_dir) as writer:  # no builder: three sealed segments without an index
        for number in range(90):
            writer.append(b"%03d" % number + b"." * 40)
            if number % 30 == 29:
                writer.cutover()
    build_index(log_dir, 2, interval=50)  # one indexed already, with another interval: left as it is
    kept = (log_dir / index_name(2)).read_bytes()
    with Writer(log_dir, index_interval=100) as writer:
        _wait_for_builds(writer, 2)
        assert [(build.log, build.status) for build in writer.index_builds] == [(1, "built"), (3, "built")]
    assert _usable(log_dir) == {1: True, 2: True, 3: True}
    assert (log_dir / index_name(2)).read_bytes() == kept
    assert not (log_dir / index_name(4)).exists()  # the last segment is not finished
