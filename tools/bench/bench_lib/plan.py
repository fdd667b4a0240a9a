"""How much each mode measures: record sizes, log sizes, run counts."""

from __future__ import annotations

from dataclasses import dataclass

MB = 1_000_000
MIB = 1 << 20


@dataclass(frozen=True)
class Plan:
    name: str
    record_sizes: tuple[int, ...]
    log_sizes: tuple[int, ...]
    repeats: int
    segment_bytes: int  # logs roll over to a new segment past this size, as a deployment would
    rounds: int  # interleaved rounds per repeat of the write figures (see measure.interleaved_rates)
    sync_appends: int  # per round: W1 and its baselines (one fdatasync each)
    threads: int
    thread_appends: int  # per thread per round, W2
    processes: int
    process_appends: int  # per process per round, W3
    buffered_appends: int  # per round: W4 and its baselines
    follower_commits: int
    recovery_tail: int  # bytes of adoptable records beyond the commit point, recovery against log size
    tail_sizes: tuple[int, ...]  # recovery against tail size
    seeks: int  # random targets per seek figure (X1, X2), with the index and without it; odd, for a true median
    spark: bool


PLANS = {
    # The smoke test's mode: every measurement once, on small numbers; Spark left out (its start alone takes 12 s).
    "tiny": Plan(
        name="tiny",
        record_sizes=(200, 1024),
        log_sizes=(1 * MB,),
        repeats=1,
        segment_bytes=4 * MIB,
        rounds=2,
        sync_appends=4,
        threads=8,
        thread_appends=2,
        processes=4,
        process_appends=2,
        buffered_appends=250,
        follower_commits=10,
        recovery_tail=64 * 1024,
        tail_sizes=(64 * 1024, 256 * 1024),
        seeks=5,
        spark=False,
    ),
    "default": Plan(
        name="default",
        record_sizes=(200, 1024),
        log_sizes=(10 * MB, 100 * MB),
        repeats=3,
        segment_bytes=64 * MIB,
        rounds=60,  # the virtual disk's sync time drifts within seconds: many short rounds average it out
        sync_appends=5,
        threads=8,
        thread_appends=16,
        processes=4,
        process_appends=16,
        buffered_appends=2000,
        follower_commits=100,
        recovery_tail=1 * MIB,
        tail_sizes=(1 * MIB, 4 * MIB, 16 * MIB),
        seeks=201,
        spark=True,
    ),
    "full": Plan(
        name="full",
        record_sizes=(200, 1024),
        log_sizes=(10 * MB, 100 * MB, 1000 * MB, 2000 * MB),
        repeats=3,
        segment_bytes=64 * MIB,
        rounds=40,
        sync_appends=6,
        threads=8,
        thread_appends=24,
        processes=4,
        process_appends=24,
        buffered_appends=4000,
        follower_commits=200,
        recovery_tail=1 * MIB,
        tail_sizes=(1 * MIB, 4 * MIB, 16 * MIB, 64 * MIB),
        seeks=201,
        spark=True,
    ),
}
