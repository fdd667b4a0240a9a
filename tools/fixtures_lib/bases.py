"""The workloads that the damaged and crashed fixtures start from.

Each function replays the same steps every time, so a catalog module can
rebuild a base to learn its record offsets while the catalog keeps one
fixture of it.
"""

from __future__ import annotations

import random

from .builder import LOG_ID, LogBuilder, seeded_bytes


def basic_log() -> LogBuilder:
    """One segment, five records in three commits, two of them with an asqn.

    Offsets: 256, 301, 441, 781, 1021; the commit point is 1066 (generation 4, slot 0).
    """
    log = LogBuilder()
    log.batch(b"first", (seeded_bytes(1, 100), 10))
    log.batch(seeded_bytes(2, 300))
    log.batch((seeded_bytes(3, 200), 11), b"fifth")
    return log


def several_segments_log() -> LogBuilder:
    """Three segments (3, 2 and 2 records): two sealed, the last open; asqns across them."""
    log = LogBuilder()
    log.batch((b"one", 1), b"two")
    log.batch((b"three", 3))
    log.cutover()
    log.batch((b"four", 4), b"five")
    log.cutover()
    log.batch(b"six", (b"seven", 7))
    return log


def finished_segment_log() -> LogBuilder:
    """Segment 1 open (never sealed) with four records in two commits, segment 2 from index 5 with two.

    Offsets in segment 1: 256, 299, 342, 387; its end is 431. Its slot 1 still
    holds generation 1 (commit point 256) until the second commit overwrites it
    with generation 3.
    """
    log = LogBuilder()
    log.batch(b"one", b"two")
    log.batch(b"three", b"four")
    log.start_successor()
    log.batch(b"five", b"six")
    return log


def unpublished_tail_log(count: int) -> LogBuilder:
    """``basic_log`` plus ``count`` records written after its commit point and never published.

    The state after a crash between the sync and the publication of a batch
    (write protocol, section 6.3), or after a publication that never reached the disk.
    """
    log = basic_log()
    for position in range(count):
        log.write(seeded_bytes(10 + position, 150 + 50 * position))
    return log


def skippable_log() -> LogBuilder:
    """Data records with skippable frames 128 and 255 between them (a later minor revision's metadata)."""
    log = LogBuilder()
    log.write(b"data-1")
    log.write(b"metadata a reader skips", frame=128)
    log.write(b"data-2", asqn=5)
    log.write(b"another skippable kind", frame=255)
    log.write(b"data-3")
    log.publish()
    return log


def indexed_log(*, log_id: bytes = LOG_ID, seed: int = 1800) -> LogBuilder:
    """Three segments for the sparse index (spec 18): segment 1 sealed with 18 records, segment 2 finished by
    its successor but not sealed (protocols 8.4) with 12, segment 3 open (the last) with 3.

    Seeded payloads of 8 to 64 bytes, published in batches of three; every third record carries an asqn.
    Segments 1 and 2 end at their commit points, so their ends S are the same for every reader. Another
    ``log_id`` and ``seed`` give another log of the same shape, with other payloads at other offsets.
    """
    log = LogBuilder(log_id=log_id)
    sizes = random.Random(seed).choices(range(8, 65), k=33)
    number = 0
    for count in (18, 12, 3):
        if number == 18:
            log.cutover()
        elif number:
            log.start_successor()
        for _ in range(0, count, 3):
            batch: list[bytes | tuple[bytes, int]] = []
            for _ in range(3):
                number += 1
                payload = seeded_bytes(seed + number, sizes[number - 1])
                batch.append((payload, 1000 + number) if number % 3 == 0 else payload)
            log.batch(*batch)
    return log
