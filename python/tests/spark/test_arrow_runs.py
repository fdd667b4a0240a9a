"""Spark's vectorised verifier (``ArrowRuns``) against the reference batch loop of ``RecordDecoder``.

``SegmentWalk.next_run`` lets ``ArrowRuns`` prove runs of records in place of
the reference loop; it must accept exactly the records that loop accepts, from
any state, on valid and damaged bytes alike. No Spark session is needed.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from strategies import log_records, log_tails, record_damages
from test_native import FIRST, LOG, START, render

from openbinlog import NO_ASQN, RecordDecoder
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
