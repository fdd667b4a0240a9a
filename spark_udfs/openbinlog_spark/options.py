"""The options of ``spark.read.format("binlog")``, parsed once.

Spark hands options over as strings in a case-insensitive map; everything
here is looked up by its lower-cased name. Options starting with ``fs.`` are
passed to fsspec (``fs.key``, ``fs.secret``, ``fs.endpoint_url``,
``fs.client_kwargs`` as JSON, ...).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from .columns import DEFAULT_CORRUPT_COLUMN
from .storage import DEFAULT_MAX_DECOMPRESSED
from .walk import CHUNK_BYTES

PERMISSIVE = "PERMISSIVE"
DROPMALFORMED = "DROPMALFORMED"
FAILFAST = "FAILFAST"
MODES = (PERMISSIVE, DROPMALFORMED, FAILFAST)
STORAGE_PREFIX = "fs."

_SIZE = re.compile(r"^\s*(\d+)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


class OptionError(ValueError):
    """An option value that cannot be used."""


def parse_size(name: str, text: str) -> int:
    match = _SIZE.match(text)
    if match is None:
        raise OptionError(f"option {name}: {text!r} is not a size in bytes (examples: 1048576, 128m, 1g)")
    return int(match[1]) * _UNITS[match[2].lower()]


def parse_bool(name: str, text: str) -> bool:
    value = text.strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    raise OptionError(f"option {name}: {text!r} is not true or false")


def parse_time(name: str, text: str) -> float:
    """Epoch seconds of an ISO time; without a zone it is UTC."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError as exc:
        raise OptionError(f"option {name}: {text!r} is not a time like 2024-05-01T10:00:00") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _storage_value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


@dataclass(frozen=True)
class ReadOptions:
    paths: tuple[str, ...] = ()
    mode: str = PERMISSIVE
    corrupt_column: str = DEFAULT_CORRUPT_COLUMN
    report: bool = False
    path_glob_filter: str | None = None
    recursive: bool = False
    base_path: str | None = None
    modified_before: float | None = None
    modified_after: float | None = None
    ignore_missing: bool = False
    ignore_corrupt: bool = False
    max_partition_bytes: int = 128 << 20
    open_cost: int = 4 << 20
    min_partitions: int = 1
    chunk_bytes: int = CHUNK_BYTES
    max_corrupt_record_bytes: int = 1 << 16
    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED
    pushdown: bool = True
    starting_offsets: str = "earliest"
    max_records_per_trigger: int | None = None
    storage_options: dict[str, Any] = field(default_factory=dict)

    @property
    def tolerant(self) -> bool:
        return self.report or self.mode != FAILFAST

    @property
    def corrupt_rows(self) -> str | None:
        """The corrupt-record column, when damage becomes rows of the record DataFrame."""
        return self.corrupt_column if self.mode == PERMISSIVE and not self.report else None

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> ReadOptions:
        opts = {str(key).lower(): str(value) for key, value in options.items() if value is not None}
        known: dict[str, Any] = {}
        if "paths" in opts:
            paths = json.loads(opts["paths"])
            known["paths"] = tuple(str(path) for path in paths)
        elif "path" in opts:
            known["paths"] = (opts["path"],)
        mode = opts.get("mode", PERMISSIVE).upper()
        if mode not in MODES:
            raise OptionError(f"option mode: {mode!r} is not one of {', '.join(MODES)}")
        known["mode"] = mode
        flags = {
            "report": "report",
            "recursivefilelookup": "recursive",
            "ignoremissingfiles": "ignore_missing",
            "ignorecorruptfiles": "ignore_corrupt",
            "pushdown": "pushdown",
        }
        sizes = {
            "maxpartitionbytes": "max_partition_bytes",
            "opencostinbytes": "open_cost",
            "readchunkbytes": "chunk_bytes",
            "maxcorruptrecordbytes": "max_corrupt_record_bytes",
            "maxdecompressedbytes": "max_decompressed",
        }
        for name, attribute in flags.items():
            if name in opts:
                known[attribute] = parse_bool(name, opts[name])
        for name, attribute in sizes.items():
            if name in opts:
                known[attribute] = parse_size(name, opts[name])
        for name, attribute in (("modifiedbefore", "modified_before"), ("modifiedafter", "modified_after")):
            if name in opts:
                known[attribute] = parse_time(name, opts[name])
        if "columnnameofcorruptrecord" in opts:
            known["corrupt_column"] = opts["columnnameofcorruptrecord"]
        if "pathglobfilter" in opts:
            known["path_glob_filter"] = opts["pathglobfilter"]
        if "basepath" in opts:
            known["base_path"] = opts["basepath"]
        if "minpartitions" in opts:
            known["min_partitions"] = max(1, int(opts["minpartitions"]))
        if "startingoffsets" in opts:
            known["starting_offsets"] = opts["startingoffsets"]
        if "maxrecordspertrigger" in opts:
            limit = int(opts["maxrecordspertrigger"])
            if limit < 1:
                raise OptionError("option maxRecordsPerTrigger must be at least 1")
            known["max_records_per_trigger"] = limit
        if known.get("chunk_bytes", CHUNK_BYTES) >= 1 << 31:
            raise OptionError("option readChunkBytes must stay below 2 GiB")
        known["storage_options"] = {
            key[len(STORAGE_PREFIX) :]: _storage_value(value)
            for key, value in opts.items()
            if key.startswith(STORAGE_PREFIX)
        }
        return cls(**known)
