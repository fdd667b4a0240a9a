"""The compiled batch of a writer that shares its syncs (``_native.shared_write`` and ``shared_publish``, spec
6.8) against the Python one it accelerates: the same bytes on disk, the same refs, the same refusals.

The crash enumeration (crash/test_enumerated_crashes.py) runs both through the recording file system, and the
SIGKILL test of writer processes (crash/test_shared_sync_processes.py) both on real files.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from strategies import shared_batches

from openbinlog import NO_ASQN, BinlogError, Writer, _accel, verify
from openbinlog._fs import SHARED_SYNC_SUPPORTED

pytestmark = pytest.mark.skipif(
    _accel.shared_write is None or not SHARED_SYNC_SUPPORTED,
    reason=f"no compiled batch of spec 6.8 here ({_accel.DECODER}), or no shared syncs",
)

T0 = 1_700_000_000_000_000
Batches = list[tuple[int, list[tuple[bytes, int | None]]] | None]


def _run(directory: Path, batches: Batches) -> list[object]:
    """The batches through two writers of the log (each with its own lock descriptor, as processes have): what
    each batch returned, refs or the class of the error that refused it."""
    outcomes: list[object] = []
    last_asqn = 0
    writers = [Writer(directory, clock_us=lambda: T0, max_segment_bytes=600) for _ in range(2)]
    try:
        for step in batches:
            if step is None:
                outcomes.append(writers[0].cutover())
                continue
            who, appends = step
            items: list[tuple[bytes, int]] = []
            for payload, asqn_step in appends:
                asqn = NO_ASQN if asqn_step is None else max(last_asqn + asqn_step, 0)
                last_asqn = max(last_asqn, asqn)
                items.append((payload, asqn))
            try:
                outcomes.append(writers[who].append_many(items))
            except BinlogError as error:
                outcomes.append(type(error).__name__)
    finally:
        for writer in writers:
            writer.close()
    return outcomes


def _files(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir()) if path.name != "LOCK"}


@settings(max_examples=40, deadline=None)
@given(shared_batches)
def test_the_compiled_batch_writes_the_bytes_the_python_batch_writes(
    tmp_path_factory: pytest.TempPathFactory, batches: Batches
) -> None:
    root = tmp_path_factory.mktemp("shared")
    Writer(root / "log", clock_us=lambda: T0).close()  # one log, one log id, copied for both
    for name in ("compiled", "python"):
        shutil.copytree(root / "log", root / name)
    compiled = _run(root / "compiled", batches)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_accel, "shared_write", None)
        patch.setattr(_accel, "shared_publish", None)
        python = _run(root / "python", batches)
    assert compiled == python
    assert _files(root / "compiled") == _files(root / "python")
    assert verify(root / "compiled").ok
    shutil.rmtree(root)
