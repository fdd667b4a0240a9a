"""The BinLog demonstration: several writers, a cutover, a killed writer, recovery, verification.

Run with `make demo`. Everything happens in build/demo/ and is explained as it goes.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

from openbinlog import Reader, Writer, encode_record, read_all, recover, stat, verify

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "build" / "demo"
LOG = DEMO / "log"

WRITER = textwrap.dedent(
    """
    import sys, threading
    from openbinlog import Writer
    name, count, threads = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    printing = threading.Lock()
    with Writer(sys.argv[1]) as writer:
        def work(t):
            for n in range(count):
                ref = writer.append(f"{name}/t{t}/{n}".encode())
                with printing:
                    print(ref.index, flush=True)
        pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
        for thread in pool: thread.start()
        for thread in pool: thread.join()
    """
)


def say(text: str) -> None:
    print(f"\n== {text}")


def spawn(name: str, count: int, threads: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(LOG), name, str(count), str(threads)],
        stdout=subprocess.PIPE,
        text=True,
    )


def segments_table() -> None:
    report = verify(LOG)
    for seg in report.segments:
        span = f"indexes {seg.first_index}..{seg.last_index}" if seg.records else "no records"
        print(f"   {Path(seg.path).name}  {seg.state:<8} {seg.records:>5} records  {span}")


def spark_query() -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession, functions  # noqa: PLC0415 - Spark is only this step's

    import openbinlog_spark  # noqa: PLC0415

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("binlog-demo")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        openbinlog_spark.register(spark)
        frame = spark.read.format("binlog").load(str(LOG))
        writer_name = functions.split(functions.col("payload").cast("string"), "/").getItem(0)
        print("   spark.read.format('binlog').load(log).groupBy(writer).agg(count, min(index), max(index)):")
        summary = (
            frame.groupBy(writer_name.alias("writer"))
            .agg(
                functions.count("*").alias("records"),
                functions.min("index").alias("first"),
                functions.max("index").alias("last"),
            )
            .orderBy("writer")
            .collect()
        )
        for row in summary:
            print(f"   {row['writer']:<6} {row['records']:>5} records, indexes {row['first']}..{row['last']}")
        per_segment = frame.groupBy("log").count().orderBy("log").collect()
        print("   records per segment: " + ", ".join(f"{row['log']:08d}.dat {row['count']}" for row in per_segment))
    finally:
        spark.stop()


def main() -> None:
    shutil.rmtree(DEMO, ignore_errors=True)
    DEMO.mkdir(parents=True)

    say("1. Three writer processes, four threads each, append to one log at the same time")
    writers = {name: spawn(name, 150, 4) for name in ("alpha", "beta", "gamma")}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (LOG.is_dir() and sum(s.records for s in stat(LOG)) >= 300):
        time.sleep(0.05)  # cut over in the middle of the appends
    with Writer(LOG) as cutter:
        new_log = cutter.cutover()
    print(f"   meanwhile this process cut over to segment {new_log:08d}.dat (safe while others append)")
    acknowledged: set[int] = set()
    for name, process in writers.items():
        out, _ = process.communicate(timeout=120)
        indexes = [int(line) for line in out.split()]
        acknowledged.update(indexes)
        print(f"   {name}: {len(indexes)} appends acknowledged (each durable before it was acknowledged)")

    say("2. A fourth writer is killed with SIGKILL in the middle of its appends")
    victim = spawn("delta", 100_000, 2)
    assert victim.stdout is not None
    killed_after = [int(victim.stdout.readline()) for _ in range(200)]
    victim.send_signal(signal.SIGKILL)  # no clean-up, no flush: as abrupt as it gets
    rest, _ = victim.communicate(timeout=30)
    killed_after += [int(line) for line in rest.split()]
    acknowledged.update(killed_after)
    print(f"   delta was acknowledged {len(killed_after)} appends before it died")

    say("3. A power loss tears the last write: half a record lands beyond the commit point")
    last = max(int(name[:8]) for name in os.listdir(LOG) if name.endswith(".dat"))
    torn = encode_record(999_999, b"a record whose write never finished")[:29]
    with (LOG / f"{last:08d}.dat").open("ab") as handle:
        handle.write(torn)
    report = verify(LOG)
    tail = report.segments[-1].tail
    assert tail is not None
    print(f"   verify: ok={report.ok}; beyond the commit point: {tail.extra_bytes} bytes ({tail.stop_reason})")
    print("   a torn tail is not damage: readers never look past the commit point")

    say("4. Recovery (what the next writer does on its own) removes the torn bytes")
    for action in recover(LOG):
        print(f"   {action.action}: {Path(action.path).name} at offset {action.offset}, {action.bytes} bytes")
    print(f"   recovering again changes nothing: {recover(LOG) == []}")

    say("5. Verify the whole log")
    report = verify(LOG)
    segments_table()
    print(f"   {report.records} records, indexes {report.first_index}..{report.last_index}, damage: {report.damage}")

    say("6. Read it back")
    entries = read_all(LOG)
    indexes = [e.index for e in entries]
    by_writer = Counter(e.payload.split(b"/")[0].decode() for e in entries)
    print(f"   records per writer: {dict(sorted(by_writer.items()))}")
    print(f"   indexes continuous from 1: {indexes == list(range(1, len(indexes) + 1))}")
    lost = acknowledged - set(indexes)
    print(f"   acknowledged records lost: {len(lost)}")
    middle = entries[len(entries) // 2]
    with Reader(LOG, after=middle.ref) as resumed:
        rest_count = sum(1 for _ in resumed)
    print(f"   resuming after ref {middle.ref} (text form LOG:OFFSET:INDEX) returns the {rest_count} later records")
    print("   first record as `binlog dump` prints it:")
    first = entries[0]
    print("   " + json.dumps({"log": first.log, "offset": first.offset, "index": first.index, "ref": str(first.ref)}))

    say("7. The same log as a Spark DataFrame (a local Spark with two cores)")
    spark_query()

    if lost or indexes != list(range(1, len(indexes) + 1)) or not report.ok:
        print("\nDEMO FAILED: the log does not hold what was acknowledged")
        sys.exit(1)
    print(
        f"\nDemo finished: the log is in {LOG.relative_to(ROOT)}; try `.venv/bin/binlog verify {LOG.relative_to(ROOT)}`"
    )


if __name__ == "__main__":
    main()
