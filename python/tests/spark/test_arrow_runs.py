"""Spark's vectorised verifier (``ArrowRuns``) against the reference batch loop of ``RecordDecoder``.

``SegmentWalk.next_run`` lets ``ArrowRuns`` prove runs of records in place of
the reference loop; it must accept exactly the records that loop accepts, from
any state, on valid and damaged bytes alike. No Spark session is needed.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import log_records, log_tails, record_damages
from test_native import FIRST, LOG, START, render

from openbinlog import NO_ASQN, BadHeaderError, RecordDecoder, Writer, encode_record
from openbinlog._crc import masked_crc32c
from openbinlog._segment import SegmentHeaderInfo
from openbinlog._segment_file import LocalDirectory
from openbinlog.walk import SegmentWalk, Split, end_in
from openbinlog_spark.walk import ARROW_RUNS


class PureDecoder(RecordDecoder):
    _native = None


def reference_run(buf: bytes, next_index: int, last_asqn: int, stop: int) -> tuple[list[tuple[int, int, bytes]], int]:
    """The records the reference loop proves in ``buf`` (segment offset ``START``) that start before ``stop``."""
    decoder = PureDecoder(log=LOG, offset=START, next_index=next_index, last_asqn=last_asqn, limit=START + len(buf))
    decoder._buf, decoder._pos = buf, 0
    entries = [entry for entry in decoder._verified_run_pure(len(buf) + 1) if entry.offset < stop]
    return [(entry.offset, entry.index, entry.payload) for entry in entries], (
        entries[-1].offset + entries[-1].size if entries else START
    )


@given(log_records, record_damages, log_tails, st.data())
def test_arrow_runs_accept_exactly_what_the_reference_loop_accepts(
    records: list[tuple[bytes, int | None, int]],
    damage: tuple[str, int, int] | None,
    tail: bytes,
    data: st.DataObject,
) -> None:
    buf, _ = render(records, damage, tail)
    next_index = data.draw(st.one_of(st.just(FIRST), st.integers(0, 2**64 - 1), st.integers(2**64 - 3, 2**64)))
    last_asqn = data.draw(st.one_of(st.just(NO_ASQN), st.integers(-(2**63), 2**63 - 1)))
    stop = data.draw(st.one_of(st.just(START + len(buf)), st.integers(START, START + len(buf))))
    expected, end = reference_run(buf, next_index, last_asqn, stop)
    run = ARROW_RUNS.verify(buf, base=START, log=LOG, next_index=next_index, last_asqn=last_asqn, stop=stop)
    if not expected:
        assert run is None
        return
    assert run is not None
    got = [
        (START + int(at), int(header["index"]), payload.as_py())
        for at, header, payload in zip(run.starts, run.headers, run.payloads, strict=True)
    ]
    assert got == expected
    assert (run.end, run.next_index) == (end, expected[-1][1] + 1)
    present = [asqn for asqn in (int(h["asqn"]) for h in run.headers) if asqn != NO_ASQN]
    assert run.last_asqn(last_asqn) == max([last_asqn, *present])


@pytest.mark.spec("R-39")
def test_the_vectorised_walk_checks_r39_at_a_commit_point_below_the_segment_end(tmp_path: Path) -> None:
    # Segment 1 finished but not sealed, its slot at C saying next index 4 where the records below C end at 3:
    # a verified run that ends exactly at C must not carry the walk past it without the check.
    directory = tmp_path / "log"
    with Writer(directory) as writer:
        for payload in (b"one", b"two", b"three"):
            writer.append(payload)
        writer.cutover()
    path = directory / "00000001.dat"
    data = bytearray(path.read_bytes())
    generation = max(int.from_bytes(data[at : at + 8], "big") for at in (96, 144))
    commit = len(data) - len(encode_record(3, b"three", timestamp_us=0))
    raw = struct.pack(">QQQqqI", generation + 1, commit, 4, -1, 0, 0)
    at = 96 if (generation + 1) % 2 == 0 else 144
    data[at : at + 48] = raw + masked_crc32c(raw).to_bytes(4, "big")
    path.write_bytes(bytes(data))
    logs = LocalDirectory(str(directory))
    segment = logs.open(1)
    assert segment is not None
    header = segment.header()
    assert isinstance(header, SegmentHeaderInfo)
    walk = SegmentWalk(segment, path=segment.path, header=header, end=end_in(logs, segment, header, logs.segments()))
    with pytest.raises(BadHeaderError):
        while len(walk.next_run(ARROW_RUNS, chunk=1 << 20)):
            pass
    segment.close()


class _ReadRecorder:
    """A segment source that remembers the furthest byte any read asked for."""

    def __init__(self, inner: object) -> None:
        self.inner, self.furthest = inner, 0

    def read_at(self, offset: int, size: int) -> bytes:
        self.furthest = max(self.furthest, offset + size)
        return self.inner.read_at(offset, size)  # type: ignore[attr-defined, no-any-return]

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


@pytest.mark.spec("R-27")
def test_a_split_walked_by_runs_reads_only_the_record_at_the_boundary_it_stops_at(tmp_path: Path) -> None:
    # A split that stops mid-segment reads the record at b(t), which it checks (spec 10.5), and nothing after
    # it: a read of a whole chunk would fetch the next split's bytes (on object storage, bytes paid for twice).
    directory = tmp_path / "log"
    with Writer(directory) as writer:
        refs = [writer.append(bytes([i % 251]) * 100) for i in range(200)]
    logs = LocalDirectory(str(directory))
    segment = logs.open(1)
    assert segment is not None
    header = segment.header()
    assert isinstance(header, SegmentHeaderInfo)
    boundary = refs[120]
    source = _ReadRecorder(segment)
    walk = SegmentWalk(
        source,  # type: ignore[arg-type]
        path=segment.path,
        header=header,
        end=end_in(logs, segment, header, logs.segments()),
        start=refs[40].offset,
        next_index=refs[40].index,
        last_asqn=NO_ASQN,
        split=Split(boundary.offset, boundary.offset, boundary.index),
    )
    returned = 0
    while part := walk.next_run(ARROW_RUNS, chunk=1 << 20):
        returned += len(part)
    segment.close()
    assert returned == 80
    assert source.furthest == refs[121].offset
