"""Whatever is appended reads back identically, across cutovers, whichever way it is read."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from logtools import Op, assert_read_only, read_entries, write_log
from strategies import operations

from openbinlog import Reader, verify


@settings(max_examples=40)
@given(operations)
def test_any_appends_and_cutovers_read_back_identically(ops: list[Op]) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch) / "log"
        appended = write_log(directory, ops)
        entries = assert_read_only(directory, lambda: read_entries(directory))
        assert [e.payload for e in entries] == appended
        assert [e.index for e in entries] == list(range(1, len(appended) + 1))
        assert len({e.ref for e in entries}) == len(entries)
        logs = [e.log for e in entries]
        assert logs == sorted(logs)
        assert verify(directory).ok
        for entry in entries[:: max(1, len(entries) // 3)]:
            with Reader(directory, start=entry.ref) as resumed:
                assert [e.payload for e in resumed] == appended[entry.index - 1 :]
