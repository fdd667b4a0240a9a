"""Kaitai cross-check harness for Python: parse segment and index files, print canonical JSON.

Usage: harness.py strict|tolerant|legacy|index FILE...; one JSON line per file,
{"error": ...} when the generated parser fails on it. The first three read
segment files (.dat), `index` reads sparse index files (.idx).
"""

import json
import sys
from pathlib import Path

import crc32c

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "build" / "ksy" / "python"))

from binlog_index import BinlogIndex
from binlog_v2 import BinlogV2
from binlog_v2_tolerant import BinlogV2Tolerant
from jpos_binlog_v1 import JposBinlogV1


def optional(struct, name):
    """A field with an `if`: generated Python code leaves it unset when the condition is false."""
    return getattr(struct, name, None)


def masked_crc32c(*parts):
    crc = 0
    for part in parts:
        crc = crc32c.crc32c(part, crc)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def header_ok(header):
    covered = (
        header.crc_covered_length_version,
        header.crc_covered_log_number,
        header.crc_covered_signature_to_reserved,
    )
    slot = header.active_slot
    return masked_crc32c(*covered) == header.header_crc and masked_crc32c(slot.crc_covered) == slot.slot_crc


def record_ok(record):
    return (
        masked_crc32c(record.crc_covered_header) == record.header_crc
        and masked_crc32c(record.payload) == record.payload_crc
    )


def entry(record):
    return {
        "offset": record.ofs_record,
        "index": str(record.index),
        "asqn": str(record.asqn),
        "timestamp_us": str(record.timestamp_us),
        "payload_hex": record.payload.hex(),
    }


def summary(header, records, checksums_ok, torn_tail_offset):
    return {
        "version": header.version,
        "log": header.log_number,
        "base_index": str(header.base_index),
        "commit_offset": str(header.active_slot.ofs_commit),
        "records": [entry(r) for r in records if r.is_data],
        "checksums_ok": checksums_ok,
        "torn_tail_offset": torn_tail_offset,
    }


def strict(path):
    segment = BinlogV2.from_file(path)
    records = optional(segment, "records") or []
    ok = header_ok(segment.header) and all(record_ok(r) for r in records)
    return summary(segment.header, records, ok, None)


def tolerant(path):
    view = BinlogV2Tolerant.from_file(path)
    if optional(view, "header") is None:
        return {
            "version": None,
            "log": None,
            "base_index": None,
            "commit_offset": None,
            "records": [],
            "checksums_ok": None,
            "torn_tail_offset": view.ofs_torn_tail,
        }
    # The valid prefix ends at the first whole record whose checksums fail.
    valid = []
    for record in optional(view, "records") or []:
        if not record_ok(record):
            break
        valid.append(record)
    torn_tail_offset = valid[-1].ofs_end if valid else 256
    return summary(view.header, valid, header_ok(view.header), torn_tail_offset)


def legacy(path):
    segment = JposBinlogV1.from_file(path)
    records = [
        {"offset": r.ofs_record, "index": str(i), "asqn": "-1", "timestamp_us": None, "payload_hex": r.data.hex()}
        for i, r in enumerate(optional(segment, "records") or [], start=1)
    ]
    return {
        "version": segment.header.version,
        "log": segment.header.log_number,
        "base_index": None,
        "commit_offset": str(segment.header.ofs_last_element),
        "records": records,
        "checksums_ok": None,
        "torn_tail_offset": None,
    }


def index_entry(entry):
    return {
        "index": str(entry.index),
        "offset": str(entry.ofs_record),
        "timestamp_us": str(entry.timestamp_us),
        "span_crc": entry.span_crc,
        "entry_crc": entry.entry_crc,
        "entry_crc_ok": masked_crc32c(entry.crc_covered) == entry.entry_crc,
    }


def index(path):
    """An index file: every header field, every whole entry, and the checks the caller adds (CRCs, size)."""
    view = BinlogIndex.from_file(path)
    header = view.header
    return {
        "version": header.version,
        "segment_version": header.segment_version,
        "log": header.log_number,
        "log_id_hex": header.log_id.hex(),
        "base_index": str(header.base_index),
        "segment_end": str(header.ofs_segment_end),
        "end_index": str(header.end_index),
        "entry_count": str(header.num_entries),
        "interval": header.interval,
        "header_crc": header.header_crc,
        "header_crc_ok": masked_crc32c(header.crc_covered) == header.header_crc,
        "size_ok": view.has_expected_size,
        "entries": [index_entry(e) for e in view.entries],
        "trailing_hex": view.trailing.hex(),
    }


def run(parse, path):
    try:
        return parse(path)
    except Exception as error:  # a parser failure is a result to report, not a crash
        return {"error": f"{type(error).__name__}: {error}"}


def main():
    parse = {"strict": strict, "tolerant": tolerant, "legacy": legacy, "index": index}[sys.argv[1]]
    for path in sys.argv[2:]:
        print(json.dumps(run(parse, path)))


if __name__ == "__main__":
    main()
