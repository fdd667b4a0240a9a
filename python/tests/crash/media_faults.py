"""P4: media faults on committed data, which must be detected, not necessarily repaired.

Starting from a finished log (the end of a trace), each fault damages
committed bytes: a bit flip in a record or in the immutable part of a
header, a zeroed 512-byte sector, a synced write that the device lost (its
bytes reverted), a record written at another record's offset. A reader must
report it (segment, offset, and index for a record) after returning exactly
the records before it; ``verify`` must list it; a tolerant reader must
still return every record the damage did not touch (spec 10.4); a writer
must refuse to append behind damage in the last segment and must never
repair or truncate committed bytes.

Damage to a commit slot is a different case: a slot that fails its checksum
is indistinguishable from a torn publication, so the spec tolerates it (the
other slot holds the previous commit point). For those the check is that
nothing is lost once a writer has recovered, or that the damage is reported.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from logtools import tree_digest

from openbinlog import BinlogError, BinlogIOError, Reader, Writer, verify
from openbinlog._format import HEADER_SIZE, SLOT_OFFSETS, SLOT_SIZE
from openbinlog._segment import SegmentHeaderInfo, active_commit, parse_header

from .checker import ModelResult, ScratchFileSystem, describe, log_problems, read_log
from .crash_states import SECTOR
from .disk_image import Image
from .fs_trace import Pwrite, Trace, Truncate, apply_data
from .workloads import LOG, deterministic_clock

# Bytes of a version 2 header that are written once and covered by its checksum.
IMMUTABLE_HEADER = [*range(0, 6), *range(16, 20), *range(24, 92)]


@dataclass(frozen=True)
class Located:
    """A committed record of the finished log."""

    log: int
    offset: int
    size: int
    index: int

    @property
    def end(self) -> int:
        return self.offset + self.size


@dataclass(frozen=True)
class MediaFault:
    kind: str
    description: str
    image: Image
    log: int  # the damaged segment
    first_byte: int  # the damaged range in it
    end_byte: int
    detect: bool  # committed data (True) or a commit slot (False: tolerated by design)


def final_image(trace: Trace) -> Image:
    *_, last = trace.points(len(trace.ops))
    return last.volatile


def segment_files(image: Image) -> dict[int, bytes]:
    found = {}
    for path, inode in image.reachable().items():
        name = path.removeprefix(f"{LOG}/")
        if path.startswith(f"{LOG}/") and name.endswith(".dat") and name[:8].isdigit() and len(name) == 12:
            found[int(name[:8])] = image.files[inode]
    return found


def _with_segment(image: Image, log: int, data: bytes) -> Image:
    damaged = image.copy()
    inode = damaged.reachable()[f"{LOG}/{log:08d}.dat"]
    damaged.files[inode] = data
    return damaged


def _replay_without(trace: Trace, skipped: int, inode: int) -> bytes:
    """The file as it would be if the device had dropped write ``skipped`` and kept every other."""
    content = trace.initial.files.get(inode, b"")
    for position, op in enumerate(trace.ops):
        if isinstance(op, Pwrite | Truncate) and op.inode == inode and position != skipped:
            content = apply_data(content, op)
    return content


def _flip(data: bytes, position: int) -> bytes:
    flipped = bytearray(data)
    flipped[position] ^= 1 << (position % 8)
    return bytes(flipped)


def media_faults(trace: Trace, final: Image, records: list[Located]) -> Iterator[MediaFault]:
    """Every fault of each kind on the committed data of the trace's final state."""
    segments = segment_files(final)
    commits = {}
    for log, data in segments.items():
        header = parse_header(data, log=log)
        assert isinstance(header, SegmentHeaderInfo)
        commits[log] = active_commit(data, base_index=header.base_index, log=log)

    for log, data in segments.items():
        where = f"segment {log}"
        for position in [*IMMUTABLE_HEADER, *range(HEADER_SIZE, commits[log].commit_offset)]:
            damaged = _with_segment(final, log, _flip(data, position))
            yield MediaFault("bit flip", f"{where} byte {position}", damaged, log, position, position + 1, True)
        active = SLOT_OFFSETS[commits[log].generation % 2]
        for position in range(active, active + SLOT_SIZE, 5):
            damaged = _with_segment(final, log, _flip(data, position))
            yield MediaFault("slot bit flip", f"{where} byte {position}", damaged, log, position, position + 1, False)
        for start in range(0, commits[log].commit_offset, SECTOR):
            end = min(start + SECTOR, len(data))
            if any(data[start:end]):
                damaged = _with_segment(final, log, data[:start] + bytes(end - start) + data[end:])
                yield MediaFault("zeroed sector", f"{where} bytes {start}..{end - 1}", damaged, log, start, end, True)

    # A synced write the device dropped while keeping every other; the file keeps its size.
    inode_log = {final.reachable()[f"{LOG}/{log:08d}.dat"]: log for log in segments}
    for position, op in enumerate(trace.ops):
        if not isinstance(op, Pwrite) or op.inode not in inode_log:
            continue
        log = inode_log[op.inode]
        data = segments[log]
        reverted = _replay_without(trace, position, op.inode)[: len(data)].ljust(len(data), b"\0")
        changed = [p for p in range(op.offset, min(op.end, len(data))) if reverted[p] != data[p]]
        slot = op.offset in SLOT_OFFSETS and len(op.data) == SLOT_SIZE
        if not changed or all(6 <= p < 24 for p in changed) or (not slot and changed[0] >= commits[log].commit_offset):
            continue
        damaged = _with_segment(final, log, reverted)
        yield MediaFault(
            "lost write",
            f"segment {log} write @{position} [{op.offset}:{op.end})",
            damaged,
            log,
            changed[0],
            changed[-1] + 1,
            not slot,
        )

    # A record written at another record's offset (fault T12).
    for source in records:
        for target in records:
            if source == target:
                continue
            raw = segments[source.log][source.offset : source.offset + source.size]
            data = segments[target.log]
            misplaced = data[: target.offset] + raw + data[target.offset + len(raw) :]
            yield MediaFault(
                "misdirected write",
                f"record {source.index} written over record {target.index}",
                _with_segment(final, target.log, misplaced),
                target.log,
                target.offset,
                target.offset + len(raw),
                True,
            )


def _tolerant_problems(log: Path, records: list[Located], hit: list[Located]) -> list[str]:
    """T10, spec 10.4: every record the damage did not touch is still returned; the damage is reported where it is.

    (Not for misdirected writes: a copy of a later record is a valid record, and resuming at it is correct.)
    """
    with Reader(log, tolerant=True) as reader:
        returned = [entry.index for entry in reader]
        damage = reader.damage
    problems = []
    untouched = [r.index for r in records if r not in hit]
    if returned != untouched:
        lost = sorted(set(untouched) - set(returned))
        problems.append(f"a tolerant reader lost records {lost[:5]} next to damage at record {hit[0].index}")
    if not damage or (damage[0].log, damage[0].offset) != (hit[0].log, hit[0].offset):
        problems.append(f"a tolerant reader reported {damage[:1]} for damage at record {hit[0].index}")
    return problems


class MediaFaultChecker:
    """Runs the P4 checks; results accumulate in ``result``."""

    def __init__(self, scratch: Path, workload: str, writer_options: dict[str, Any]) -> None:
        self.scratch = scratch
        self.workload = workload
        self.writer_options = writer_options
        self.result = ModelResult()

    def run(self, trace: Trace) -> None:
        root = self.scratch / "finished"
        root.mkdir(parents=True, exist_ok=True)
        final = final_image(trace)
        final.materialise(root)
        with Reader(root / LOG) as reader:
            records = [Located(e.log, e.offset, e.size, e.index) for e in reader]
        seen: set[str] = set()
        for fault in media_faults(trace, final, records):
            key = fault.image.fingerprint()
            if key in seen:
                continue
            seen.add(key)
            self.result.states += 1
            self.result.record(
                "P4", self.workload, f"{fault.kind}: {fault.description}", self._check(fault, trace, records)
            )

    def _check(self, fault: MediaFault, trace: Trace, records: list[Located]) -> list[str]:
        root = self.scratch / "damaged"
        root.mkdir(parents=True, exist_ok=True)
        fault.image.materialise(root)
        log = root / LOG
        problems: list[str] = []
        untouched = tree_digest(root)
        returned: list[tuple[int, bytes, int]] = []
        error: BinlogError | None = None
        try:
            with Reader(log) as reader:
                for entry in reader:
                    returned.append((entry.index, entry.payload, entry.asqn))
        except BinlogError as exc:
            error = exc
        except Exception as exc:
            return [f"reader raised an untyped error: {describe(exc)}"]
        if tree_digest(root) != untouched:
            problems.append("a reader modified the directory")
        problems += log_problems(returned, trace.expected)

        segments = segment_files(fault.image)
        last = segments[fault.log]
        if fault.log == max(segments) and len(last) <= HEADER_SIZE and not any(last):
            # The last segment is now a blank one (spec 3.5), absent. That is only right if it held no
            # committed record; then the log is every record before it.
            if any(r.log == fault.log for r in records):
                problems.append(f"segment {fault.log} held records and now reads as a blank last segment")
            elif error is not None or len(returned) != len(records):
                problems.append(f"a blank last segment changed the read: {len(returned)} records, {describe(error)}")
            return problems
        if not fault.detect:
            if error is not None and (error.log is None or error.offset is None):
                problems.append(f"slot damage reported without its location: {describe(error)}")
            if error is None:
                problems += self._recovers_everything(log, trace)
            return problems

        if error is None:
            return [*problems, f"damage not detected: the reader returned {len(returned)} records and no error"]
        if isinstance(error, BinlogIOError) or error.log is None or error.offset is None:
            problems.append(f"damage reported without segment and offset: {describe(error)}")
        hit = [r for r in records if r.log == fault.log and r.offset < fault.end_byte and r.end > fault.first_byte]
        if fault.first_byte >= HEADER_SIZE and hit:
            first = hit[0]
            if (error.log, error.offset, error.index) != (first.log, first.offset, first.index):
                problems.append(
                    f"damage to record {first.index} (log {first.log}, offset {first.offset}) "
                    f"reported as {describe(error)}"
                )
            before = [r for r in records if (r.log, r.offset) < (first.log, first.offset)]
        else:
            if error.log != fault.log:
                problems.append(f"damage to the header of segment {fault.log} reported as {describe(error)}")
            before = [r for r in records if r.log < fault.log]
        if len(returned) != len(before):
            problems.append(f"{len(returned)} records returned before the damage, {len(before)} precede it")
        if not verify(log).damage:
            problems.append("verify reported no damage")
        if fault.kind != "misdirected write" and fault.first_byte >= HEADER_SIZE and hit:
            problems += _tolerant_problems(log, records, hit)
        problems += self._writer_leaves_damage(log, fault)
        return problems

    def _writer_leaves_damage(self, log: Path, fault: MediaFault) -> list[str]:
        """W-24, W-26: a writer never repairs or truncates committed bytes, never appends behind damage."""
        segments = segment_files(fault.image)
        problems = []
        try:
            with Writer(log, fs=ScratchFileSystem(), clock_us=deterministic_clock(), **self.writer_options):
                opened = True
        except BinlogError:
            opened = False
        except Exception as exc:
            return [f"writer raised an untyped error on damaged data: {describe(exc)}"]
        if opened and fault.log == max(segments):
            problems.append("a writer opened the log for appending behind damage in its last segment")
        path = log / f"{fault.log:08d}.dat"
        if not path.exists():
            return [*problems, "a writer deleted the damaged segment"]
        now = path.read_bytes()
        # The mutable header fields (mirrors, slots) are the writer's to rewrite; nothing else of the damage is.
        kept = [p for p in range(fault.first_byte, fault.end_byte) if not (6 <= p < 24 or 96 <= p < 192)]
        if any(now[p : p + 1] != segments[fault.log][p : p + 1] for p in kept):
            problems.append("a writer changed or truncated the damaged committed bytes")
        return problems

    def _recovers_everything(self, log: Path, trace: Trace) -> list[str]:
        try:
            with Writer(log, fs=ScratchFileSystem(), clock_us=deterministic_clock(), **self.writer_options):
                pass
            after = read_log(log)
        except Exception as exc:
            return [f"recovery after slot damage failed: {describe(exc)}"]
        return log_problems(after, trace.expected, acked=len(trace.expected))
