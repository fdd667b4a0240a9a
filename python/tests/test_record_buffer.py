"""The process mode's buffer: the compiled one against the pure-Python reference.

Both are driven with the same appends, takes and starting states, and must
return the same refs, the same codes and the same bytes, so the compiled
buffer changes the speed of the ``process`` mode, never a byte it writes.
"""

from __future__ import annotations

import os
import time
from typing import Any

import pytest
from hypothesis import given, settings
from strategies import buffer_commits, buffer_operations, buffer_states

from openbinlog import NO_ASQN, RecordDecoder, Ref, _accel
from openbinlog._buffer import ASQN_ORDER, CHECK_ARGUMENTS, CLOSED, CUTOVER_FIRST, FLUSH_FIRST, PureRecordBuffer

pytestmark = pytest.mark.skipif(_accel.RecordBuffer is None, reason="openbinlog._native is not built or not used")


def compiled_buffer(*fields: Any) -> Any:
    assert _accel.RecordBuffer is not None
    return _accel.RecordBuffer(*fields)


class OperationLog:
    """A file system that only records the writes and syncs a commit asks of it."""

    def __init__(self) -> None:
        self.operations: list[tuple[Any, ...]] = []

    def pwrite(self, fd: int, data: bytes, offset: int) -> None:
        self.operations.append(("pwrite", fd, bytes(data), offset))

    def fdatasync(self, fd: int) -> None:
        self.operations.append(("fdatasync", fd))


def drive(buffer: Any, operations: list[Any], commits: list[Any]) -> list[Any]:
    """Run ``operations``; after each, the commit ``commits`` holds for its position, if any."""
    results: list[Any] = []
    fs = OperationLog()
    for position, operation in enumerate(operations):
        commit = commits[position % len(commits)] if commits else None
        if commit is not None:
            generation, next_log_number, sync, strict, close = commit
            results.append(buffer.commit(fs, 7, generation, next_log_number, sync, strict, close))
        if operation == "take":
            results.append(buffer.take(False))
        elif operation == "take-and-close":
            results.append(buffer.take(True))
        else:
            payload, asqn, now = operation
            result = buffer.append(payload, asqn, now)
            results.append((type(result).__name__, result))
        results.append(buffer.pending())
    return [*results, fs.operations]


@settings(max_examples=300, deadline=None)
@given(buffer_states, buffer_operations, buffer_commits)
def test_compiled_buffer_returns_the_reference_refs_codes_and_bytes(
    state: tuple[int, int, int, int, int, int, int], operations: list[Any], commits: list[Any]
) -> None:
    """Appends, takes and commits: the same refs, codes, records, and writes and syncs in the same order."""
    assert _accel.RecordBuffer is not None
    pure = PureRecordBuffer(Ref, 3, *state)
    native = _accel.RecordBuffer(Ref, 3, *state)
    assert drive(native, operations, commits) == drive(pure, operations, commits)
    assert native.take(False) == pure.take(False)


@pytest.mark.parametrize("make", [PureRecordBuffer, compiled_buffer], ids=["pure", "compiled"])
def test_buffer_codes_say_what_the_writer_must_do_first(make: Any) -> None:
    buffer = make(Ref, 1, 256, 1, 5, 0, 356, 2**64 - 1, 50)
    assert buffer.append(b"x", 5, 10) == ASQN_ORDER
    assert buffer.append(b"x" * 61, NO_ASQN, 10) == CUTOVER_FIRST  # 256 + 101 > the end limit, 356
    first = buffer.append(b"0123456789", 6, 10)
    assert first == Ref(1, 256, 1) and type(first) is Ref
    assert buffer.append(b"y", NO_ASQN, 10) == FLUSH_FIRST  # 50 bytes held: the limit
    records, end, next_index, last_asqn, last_timestamp = buffer.take(False)
    assert (end, next_index, last_asqn, last_timestamp) == (306, 2, 6, 10)
    decoder = RecordDecoder(log=1, offset=256, next_index=1, limit=306)
    decoder.feed(records)
    decoder.end_of_input()
    entries = decoder.next_batch()
    assert [(e.index, e.payload, e.asqn, e.timestamp_us) for e in entries] == [(1, b"0123456789", 6, 10)]
    assert buffer.append(b"abcdefghij", NO_ASQN, 5) == Ref(1, 306, 2)  # a clock behind the last: kept at 10
    assert buffer.append("text", NO_ASQN, 5) == CHECK_ARGUMENTS
    buffer.take(True)
    assert buffer.append(b"z", NO_ASQN, 5) == CLOSED


@pytest.mark.parametrize("make", [PureRecordBuffer, compiled_buffer], ids=["pure", "compiled"])
def test_buffer_without_a_clock_reading_stamps_the_system_time(make: Any) -> None:
    buffer = make(Ref, 1, 256, 1, NO_ASQN, 0, 2**64 - 1, 2**64 - 1, 1 << 20)
    before = time.time_ns() // 1000
    buffer.append(b"now", NO_ASQN, None)
    after = time.time_ns() // 1000
    *_, last_timestamp = buffer.take(False)
    assert before <= last_timestamp <= after


@pytest.mark.parametrize("make", [PureRecordBuffer, compiled_buffer], ids=["pure", "compiled"])
def test_failed_commit_closes_the_buffer(make: Any) -> None:
    class FailingSync(OperationLog):
        def fdatasync(self, fd: int) -> None:
            raise OSError(5, "injected")

    buffer = make(Ref, 1, 256, 1, NO_ASQN, 0, 2**64 - 1, 2**64 - 1, 1 << 20)
    buffer.append(b"lost", NO_ASQN, 1)
    with pytest.raises(OSError, match="injected"):
        buffer.commit(FailingSync(), 3, 1, 0, True, False, False)
    assert buffer.append(b"refused", NO_ASQN, 2) == CLOSED


def test_compiled_commit_writes_the_file_itself_as_the_reference_does(tmp_path: Any) -> None:
    """With no file-system object the compiled buffer writes and syncs the file directly: the same bytes."""
    images = []
    for make in (PureRecordBuffer, compiled_buffer):
        path = tmp_path / make.__name__
        path.write_bytes(bytes(256))
        fd = os.open(path, os.O_RDWR)
        try:
            buffer = make(Ref, 2, 256, 10, NO_ASQN, 0, 2**64 - 1, 2**64 - 1, 1 << 20)
            for n in range(5):
                buffer.append(b"x" * n, n * 3 if n % 2 else NO_ASQN, 1000 + n)
            published = buffer.commit(None, fd, 41, 0, True, True, False)
        finally:
            os.close(fd)
        images.append((published, path.read_bytes()))
    assert images[0] == images[1]
    assert images[0][0] is not None and images[0][0][:3] == (42, 256 + 5 * 40 + 10, 15)
