"""S1 to S6: BinLog side by side with what users already have, SQLite in WAL mode as an event store.

The SQLite store is one table ``events (id INTEGER PRIMARY KEY, payload
BLOB)`` through Python's ``sqlite3``. An append is one INSERT in autocommit
mode, so a transaction of its own: the fewest statements a durable append
can take, nothing tilted against SQLite. Both stores start from the same
records (the R1 log's, loaded into the table), each BinLog figure is
interleaved with its SQLite peer in rounds of its own, and every SQLite run
does exactly as many commits as the BinLog run beside it.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from openbinlog import Reader, Writer

from .logs import BuiltLog, payloads, record_bytes
from .measure import Row, Variant, compared, interleaved_rates, rate, side_by_side
from .plan import Plan
from .reads import reader_walk
from .writes import (
    EXCLUSIVE_OS,
    EXCLUSIVE_SYNC,
    PREALLOCATED_EXCLUSIVE,
    PROCESS_MODE,
    PROCESS_NOTE,
    AppendingProcesses,
    BaselineFile,
    bare_one_write_then_sync,
    bare_write_sync,
    process_mode_appends,
    serve_appends,
    spare_ready,
    threaded_calls,
    writer_appends,
)

CREATE = "CREATE TABLE events (id INTEGER PRIMARY KEY, payload BLOB)"
INSERT = "INSERT INTO events (payload) VALUES (?)"
SELECT = "SELECT payload FROM events ORDER BY id"
# Concurrent writers wait for SQLite's write lock instead of failing; a sync-bound queue of 8 can take seconds.
BUSY_TIMEOUT_MS = 60_000
SQLITE = f"SQLite {sqlite3.sqlite_version} WAL"


class SqliteEvents:
    """One connection to the events table, appending as an event store on SQLite does."""

    def __init__(self, database: Path | str, *, synchronous: str, check_same_thread: bool = True) -> None:
        # isolation_level=None: autocommit, every INSERT commits on its own, with the sync ``synchronous`` asks for.
        self.connection = sqlite3.connect(database, isolation_level=None, check_same_thread=check_same_thread)
        self.connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        self.connection.execute(f"PRAGMA synchronous = {synchronous}")  # per connection, never stored in the file

    def append(self, payload: bytes) -> None:
        self.connection.execute(INSERT, (payload,))

    def count(self) -> int:
        (count,) = self.connection.execute("SELECT count(*) FROM events").fetchone()
        return int(count)

    def close(self) -> None:
        self.connection.close()


def load_events(log: Path, database: Path) -> int:
    """A new WAL database at ``database`` holding the payloads of the log at ``log``, in order; returns how many."""
    events = SqliteEvents(database, synchronous="OFF")
    try:
        events.connection.execute("PRAGMA journal_mode = WAL")  # stored in the file: every later connection uses it
        events.connection.execute(CREATE)
        events.connection.execute("BEGIN")
        with Reader(log) as reader:
            events.connection.executemany(INSERT, ((entry.payload,) for entry in reader))
        events.connection.execute("COMMIT")
        # The records in the database file, as in a store at rest, not in the WAL the load left.
        events.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return events.count()
    finally:
        events.close()


def select_walk(events: SqliteEvents) -> int:
    """Rows returned by a plain scan of the table in id order (SQLite checks no checksum of its own)."""
    count = 0
    for _row in events.connection.execute(SELECT):
        count += 1
    return count


def sqlite_append_worker(arguments: dict[str, Any]) -> None:
    """Worker side of S3: ``append_worker``'s protocol, one INSERT per append on a connection of its own."""
    events = SqliteEvents(arguments["database"], synchronous="FULL")
    try:
        serve_appends(events, payloads(arguments["record_size"], seed=arguments["seed"]))
    finally:
        events.close()


def _remove_database(database: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{database}{suffix}").unlink(missing_ok=True)


def measure_sqlite(log: BuiltLog, plan: Plan, scratch: Path, *, appends: bool) -> list[Row]:
    """S5 on ``log``; with ``appends``, S1 to S4 and S6 too, appending to the log and to the database mirroring it."""
    size = log.record_size
    where: dict[str, Any] = dict(record_size=size, log_size=log.log_size)
    scratch.mkdir(parents=True, exist_ok=True)
    database = scratch / f"events-{size}-{log.log_size}.sqlite"
    _remove_database(database)
    rows: list[Row] = []
    try:
        loaded = load_events(log.path, database)
        reader = SqliteEvents(database, synchronous="FULL")
        try:
            # Both stores read once before timing: the page cache warm for both, and the counts compared.
            seen, selected = reader_walk(log.path), select_walk(reader)
            if not seen == selected == loaded:
                raise RuntimeError(f"{log.path}: the reader returned {seen} records, SQLite {selected} of {loaded}")
            figures, baselines = side_by_side(
                lambda: rate(lambda: reader_walk(log.path)), lambda: rate(lambda: select_walk(reader)), plan.repeats
            )
        finally:
            reader.close()
        row = Row("S5", "verified sequential read, Reader", "records/s", **where, versus=f"{SQLITE}, SELECT")
        row.note = "the R1 log's records, every checksum checked, against SELECT payload FROM events ORDER BY id "
        row.note += "over the same records (SQLite keeps no checksum to check)"
        rows.append(compared(row, figures, baselines, bar=1.5))
        if appends:
            rows.extend(_appends(log, plan, database, loaded))
    finally:
        _remove_database(database)
    return rows


def _appends(log: BuiltLog, plan: Plan, database: Path, loaded: int) -> list[Row]:
    """S1 to S4 and S6: every pair in an interleaving of its own (a neighbour's load moves a figure, see writes.py)."""
    size = log.record_size
    where: dict[str, Any] = dict(record_size=size, log_size=log.log_size)
    pool = payloads(size)
    rounds, repeats = plan.rounds, plan.repeats
    single = SqliteEvents(database, synchronous="FULL")
    # One connection per thread: opened here, outside the timed runs, and each used by one thread at a time.
    threaded = [SqliteEvents(database, synchronous="FULL", check_same_thread=False) for _ in range(plan.threads)]
    unsynced = SqliteEvents(database, synchronous="OFF")
    durable = sqlite_processes = None
    try:
        with Writer(log.path, verify_on_open=False) as writer:
            s1, s1_sqlite = interleaved_rates(
                [
                    Variant(writer_appends(writer, pool), plan.sync_appends),
                    Variant(writer_appends(single, pool), plan.sync_appends),
                ],
                rounds=rounds,
                repeats=repeats,
            )
            concurrent = plan.threads * plan.thread_appends
            s2, s2_sqlite = interleaved_rates(
                [
                    Variant(threaded_calls([lambda i: writer.append(pool[i % len(pool)])] * plan.threads), concurrent),
                    Variant(threaded_calls([_appender(events, pool) for events in threaded]), concurrent),
                ],
                rounds=rounds,
                repeats=repeats,
            )
            durable = AppendingProcesses("append", plan.processes, log=str(log.path), record_size=size)
            sqlite_processes = AppendingProcesses(
                "sqlite_append", plan.processes, database=str(database), record_size=size
            )
            s3, s3_sqlite = interleaved_rates(
                [
                    Variant(durable, plan.processes * plan.process_appends),
                    Variant(sqlite_processes, plan.processes * plan.process_appends),
                ],
                rounds=rounds,
                repeats=repeats,
            )
        with Writer(log.path, durability="os", verify_on_open=False) as writer:
            s4, s4_sqlite = interleaved_rates(
                [
                    Variant(writer_appends(writer, pool), plan.buffered_appends),
                    Variant(writer_appends(unsynced, pool), plan.buffered_appends),
                ],
                rounds=rounds,
                repeats=repeats,
            )
        # Holding the lock from open to close: once the writers above, other processes' included, are closed.
        with Writer(log.path, exclusive=True, verify_on_open=False) as writer:
            s1_exclusive, s1_exclusive_sqlite = interleaved_rates(
                [
                    Variant(writer_appends(writer, pool), plan.sync_appends),
                    Variant(writer_appends(single, pool), plan.sync_appends),
                ],
                rounds=rounds,
                repeats=repeats,
            )
        # The fastest durable configuration: exclusive and preallocated (a log of its own, created untimed).
        volumes = database.parent / f"exclusive-preallocated-{log.record_size}"
        shutil.rmtree(volumes, ignore_errors=True)
        # Beside them, the least a durable append can cost: one write and one sync into zero-filled space.
        space = BaselineFile(database.parent / f"zero-filled-{log.record_size}.dat", zeros=plan.segment_bytes)
        try:
            with spare_ready(Writer(volumes, exclusive=True, preallocate=plan.segment_bytes)) as writer:
                s1_preallocated, s1_preallocated_sqlite, s1_ceiling = interleaved_rates(
                    [
                        Variant(writer_appends(writer, pool), plan.sync_appends),
                        Variant(writer_appends(single, pool), plan.sync_appends),
                        Variant(bare_write_sync(space, record_bytes(size)), plan.sync_appends),
                    ],
                    rounds=rounds,
                    repeats=repeats,
                )
                exclusive_threads = threaded_calls([lambda i: writer.append(pool[i % len(pool)])] * plan.threads)
                s2_exclusive, s2_exclusive_sqlite = interleaved_rates(
                    [
                        Variant(exclusive_threads, concurrent),
                        Variant(threaded_calls([_appender(events, pool) for events in threaded]), concurrent),
                    ],
                    rounds=rounds,
                    repeats=repeats,
                )
        finally:
            space.close()
            shutil.rmtree(volumes, ignore_errors=True)
        with Writer(log.path, durability="os", exclusive=True, verify_on_open=False) as writer:
            s4_exclusive, s4_exclusive_sqlite = interleaved_rates(
                [
                    Variant(writer_appends(writer, pool), plan.buffered_appends),
                    Variant(writer_appends(unsynced, pool), plan.buffered_appends),
                ],
                rounds=rounds,
                repeats=repeats,
            )
        # Beside them, the least a process-mode run can cost: its bytes in one write, then one sync.
        batch = BaselineFile(database.parent / f"process-batch-{log.record_size}.dat")
        try:
            s6, s6_sqlite, s6_ceiling = interleaved_rates(
                [
                    Variant(process_mode_appends(log.path, pool), plan.buffered_appends),
                    Variant(writer_appends(unsynced, pool), plan.buffered_appends),
                    Variant(bare_one_write_then_sync(batch, record_bytes(size)), plan.buffered_appends),
                ],
                rounds=rounds,
                repeats=repeats,
            )
        finally:
            batch.close()
        # A lost insert (a thread dead of an error) would inflate SQLite's rate: every commit must be there.
        per_round = plan.sync_appends + concurrent + plan.processes * plan.process_appends + plan.buffered_appends
        per_round += plan.sync_appends + 2 * plan.buffered_appends  # S1.exclusive, S4.exclusive and S6
        per_round += plan.sync_appends + concurrent  # S1.exclusive and S2.exclusive, preallocated
        if (stored := single.count()) != (expected := loaded + rounds * repeats * per_round):
            raise RuntimeError(f"{database}: {stored} rows after the appends, not {expected}")
    finally:
        for processes in (durable, sqlite_processes):
            if processes is not None:
                processes.close()
        for events in (single, *threaded, unsynced):
            events.close()

    rows: list[Row] = []
    durable_versus = f"{SQLITE}, synchronous=FULL"
    row = Row("S1", "durable appends/s, one writer", "appends/s", **where, versus=f"{durable_versus}, 1 connection")
    row.note = "durability sync against one INSERT per transaction (autocommit), fsync'd by SQLite on each commit"
    rows.append(compared(row, s1, s1_sqlite, bar=1.3))
    row = Row("S1.exclusive", EXCLUSIVE_SYNC, "appends/s", **where, versus=f"{durable_versus}, 1 connection")
    row.note = "Writer(exclusive=True), durability sync, the lock held from open to close, against S1's peer"
    rows.append(compared(row, s1_exclusive, s1_exclusive_sqlite, bar=1.3))
    row = Row("S1.exclusive", PREALLOCATED_EXCLUSIVE, "appends/s", **where, versus=f"{durable_versus}, 1 connection")
    row.note = "Writer(exclusive=True, preallocate=...), durability sync, on a log of its own, against S1's peer"
    rows.append(compared(row, s1_preallocated, s1_preallocated_sqlite, bar=1.3))
    row = Row("S1.ceiling", "bare write+fdatasync into zero-filled space", "appends/s", **where)
    row.note = (
        "one os.write and one fdatasync per record, no format, in S1.exclusive's rotation: the most any durable "
        "append can reach on this disk, the physical ceiling of S1's bar"
    )
    rows.append(ceiling(row, f"{durable_versus}, 1 connection", s1_ceiling, s1_preallocated_sqlite))
    measure = f"durable appends/s, {plan.threads} threads, one writer"
    row = Row("S2.exclusive", f"{measure}, exclusive, preallocated", "appends/s", **where)
    row.versus = f"{durable_versus}, {plan.threads} threads"
    row.note = "threads sharing one Writer(exclusive=True, preallocate=...) against S2's peer"
    rows.append(compared(row, s2_exclusive, s2_exclusive_sqlite, bar=8.0))
    row = Row("S2", measure, "appends/s", **where, versus=f"{durable_versus}, {plan.threads} threads")
    row.note = "threads sharing one Writer against threads with a connection each, queued on busy_timeout"
    rows.append(compared(row, s2, s2_sqlite, bar=8.0))
    measure = f"durable appends/s, {plan.processes} processes"
    row = Row("S3", measure, "appends/s", **where, versus=f"{durable_versus}, {plan.processes} processes")
    row.note = "a Writer per process against a connection per process on one database (the bar is issue #19's)"
    rows.append(compared(row, s3, s3_sqlite, bar=3.0))
    row = Row("S4", "buffered appends/s (durability os)", "appends/s", **where, versus=f"{SQLITE}, synchronous=OFF")
    row.note = "no sync on either side: both survive a crash of the process, not of the machine"
    rows.append(compared(row, s4, s4_sqlite, bar=1.0))
    row = Row("S4.exclusive", EXCLUSIVE_OS, "appends/s", **where, versus=f"{SQLITE}, synchronous=OFF")
    row.note = "Writer(durability='os', exclusive=True), the lock held from open to close, against S4's peer"
    rows.append(compared(row, s4_exclusive, s4_exclusive_sqlite, bar=1.0))
    row = Row("S6", PROCESS_MODE, "appends/s", **where, versus=f"{SQLITE}, synchronous=OFF")
    row.note = f"{PROCESS_NOTE}; against S4's peer, as many INSERTs, none synced"
    rows.append(compared(row, s6, s6_sqlite, bar=5.0))
    row = Row("S6.ceiling", "records in one write, then one fdatasync", "appends/s", **where)
    row.note = (
        "a run's bytes in one os.write and one fdatasync, no format, no appends, in S6's rotation: what the disk "
        "allows a process-mode run that ends with close()'s sync, the physical ceiling of S6's bar"
    )
    rows.append(ceiling(row, f"{SQLITE}, synchronous=OFF", s6_ceiling, s6_sqlite))
    return rows


def ceiling(row: Row, versus: str, figures: list[float], baselines: list[float]) -> Row:
    """A bar's physical ceiling: measured in the bar's rotation against the bar's peer, judged against nothing."""
    row.versus = versus
    return compared(row, figures, baselines)


def _appender(events: SqliteEvents, pool: list[bytes]) -> Callable[[int], None]:
    """A thread's call for ``threaded_calls``: each thread its own connection (a closure per loop value)."""
    return lambda i: events.append(pool[i % len(pool)])
