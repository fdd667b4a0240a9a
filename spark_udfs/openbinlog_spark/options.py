"""The options of ``spark.read.format("binlog")``, parsed once.

Spark hands options over as strings in a case-insensitive map; everything
here is looked up by its lower-cased name. Options starting with ``fs.`` are
passed to fsspec (``fs.key``, ``fs.secret``, ``fs.endpoint_url``,
``fs.client_kwargs`` as JSON, ...).

Under the options a read is given lie the session's: ``session_defaults``
turns Spark's own settings (``spark.sql.files.*``, the session time zone, the
corrupt-record column's name) into options, which ``register`` reads on the
driver, since a Python data source is handed nothing but its options.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

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


def parse_count(name: str, text: str, *, least: int) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise OptionError(f"option {name}: {text!r} is not a whole number") from None
    if value < least:
        raise OptionError(f"option {name}: {value} is below {least}")
    return value


def parse_bool(name: str, text: str) -> bool:
    value = text.strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    raise OptionError(f"option {name}: {text!r} is not true or false")


# Java's ZoneId.SHORT_IDS, which Spark's session time zone accepts too.
_SHORT_IDS = {
    "ACT": "Australia/Darwin",
    "AET": "Australia/Sydney",
    "AGT": "America/Argentina/Buenos_Aires",
    "ART": "Africa/Cairo",
    "AST": "America/Anchorage",
    "BET": "America/Sao_Paulo",
    "BST": "Asia/Dhaka",
    "CAT": "Africa/Harare",
    "CNT": "America/St_Johns",
    "CST": "America/Chicago",
    "CTT": "Asia/Shanghai",
    "EAT": "Africa/Addis_Ababa",
    "ECT": "Europe/Paris",
    "IET": "America/Indiana/Indianapolis",
    "IST": "Asia/Kolkata",
    "JST": "Asia/Tokyo",
    "MIT": "Pacific/Apia",
    "NET": "Asia/Yerevan",
    "NST": "Pacific/Auckland",
    "PLT": "Asia/Karachi",
    "PNT": "America/Phoenix",
    "PRT": "America/Puerto_Rico",
    "PST": "America/Los_Angeles",
    "SST": "Pacific/Guadalcanal",
    "VST": "Asia/Ho_Chi_Minh",
    "EST": "-05:00",
    "MST": "-07:00",
    "HST": "-10:00",
}
_OFFSET = re.compile(r"\A(?:UTC|GMT|UT)?([+-])([0-9]{1,2})(?::?([0-9]{2}))?(?::?([0-9]{2}))?\Z", re.IGNORECASE)


def parse_zone(name: str, text: str) -> tzinfo:
    """A time zone as Spark's ``spark.sql.session.timeZone`` names one: a region (``Europe/Paris``), ``UTC``,
    ``Z``, an offset (``+02:00``, ``UTC-8``, ``GMT+05:30``) or one of Java's short names (``PST``)."""
    value = text.strip()
    value = _SHORT_IDS.get(value, value)
    if value.upper() in ("Z", "UTC", "GMT", "UT"):
        return UTC
    offset = _OFFSET.match(value)
    if offset is not None:
        sign = -1 if offset[1] == "-" else 1
        hours, minutes, seconds = (int(part or 0) for part in offset.groups()[1:])
        return timezone(sign * timedelta(hours=hours, minutes=minutes, seconds=seconds))
    try:
        return ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise OptionError(f"option {name}: {text!r} is not a time zone (examples: UTC, Europe/Paris, +02:00)") from exc


def parse_time(name: str, text: str, zone: tzinfo = UTC) -> float:
    """Epoch seconds of an ISO time; without an offset it is a time in ``zone`` (the session time zone)."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError as exc:
        raise OptionError(f"option {name}: {text!r} is not a time like 2024-05-01T10:00:00") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=zone)
    return moment.timestamp()


# Spark's settings that are options here, each under the option it becomes: Spark's file sources follow the same
# settings, and a read's own option (or a keyword of ``register``) overrides them.
SESSION_SIZES = {
    "spark.sql.files.maxPartitionBytes": "maxPartitionBytes",
    "spark.sql.files.openCostInBytes": "openCostInBytes",
}
SESSION_FLAGS = {
    "spark.sql.files.ignoreCorruptFiles": "ignoreCorruptFiles",
    "spark.sql.files.ignoreMissingFiles": "ignoreMissingFiles",
}
TIME_ZONE_SETTING = "spark.sql.session.timeZone"
CORRUPT_COLUMN_SETTING = "spark.sql.columnNameOfCorruptRecord"
MIN_PARTITIONS_SETTINGS = ("spark.sql.files.minPartitionNum", "spark.sql.leafNodeDefaultParallelism")
MAX_PARTITIONS_SETTING = "spark.sql.files.maxPartitionNum"


def session_defaults(setting: Callable[[str], str | None], default_parallelism: int) -> dict[str, str]:
    """The options Spark's settings make the defaults of every read.

    ``setting(key)`` is the session's value of a setting (None when it has
    none). ``minPartitions`` follows Spark's ``minPartitionNum``:
    ``spark.sql.files.minPartitionNum``, else
    ``spark.sql.leafNodeDefaultParallelism``, else the default parallelism.
    A value that cannot be used fails here, naming the setting.
    """
    defaults: dict[str, str] = {}
    for key, option in SESSION_SIZES.items():
        if (value := setting(key)) is not None:
            defaults[option] = str(parse_size(key, value))
    for key, option in SESSION_FLAGS.items():
        if (value := setting(key)) is not None:
            defaults[option] = str(parse_bool(key, value)).lower()
    if (zone := setting(TIME_ZONE_SETTING)) is not None:
        parse_zone(TIME_ZONE_SETTING, zone)
        defaults["timeZone"] = zone
    if column := setting(CORRUPT_COLUMN_SETTING):
        defaults["columnNameOfCorruptRecord"] = column
    parallelism = next((value for key in MIN_PARTITIONS_SETTINGS if (value := setting(key)) is not None), None)
    defaults["minPartitions"] = str(int(parallelism) if parallelism is not None else default_parallelism)
    if (most := setting(MAX_PARTITIONS_SETTING)) is not None:
        defaults["maxPartitionNum"] = str(parse_count(MAX_PARTITIONS_SETTING, most, least=1))
    return defaults


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
    max_partitions: int | None = None
    chunk_bytes: int = CHUNK_BYTES
    max_corrupt_record_bytes: int = 1 << 16
    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED
    pushdown: bool = True
    starting_offsets: str = "earliest"
    max_records_per_trigger: int | None = None
    time_zone: str = "UTC"  # of times written without an offset: option timeZone, else the session's
    # Credentials among them: never in a repr (a log line, a traceback with locals).
    storage_options: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def zone(self) -> tzinfo:
        return parse_zone("timeZone", self.time_zone)

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
        zone: tzinfo = UTC
        if "timezone" in opts:
            zone = parse_zone("timeZone", opts["timezone"])
            known["time_zone"] = opts["timezone"].strip()
        for name, attribute in (("modifiedbefore", "modified_before"), ("modifiedafter", "modified_after")):
            if name in opts:
                known[attribute] = parse_time(name, opts[name], zone)
        if "columnnameofcorruptrecord" in opts:
            known["corrupt_column"] = opts["columnnameofcorruptrecord"]
        if "pathglobfilter" in opts:
            known["path_glob_filter"] = opts["pathglobfilter"]
        if "basepath" in opts:
            known["base_path"] = opts["basepath"]
        if "minpartitions" in opts:
            known["min_partitions"] = parse_count("minPartitions", opts["minpartitions"], least=1)
        if "maxpartitionnum" in opts:
            known["max_partitions"] = parse_count("maxPartitionNum", opts["maxpartitionnum"], least=1)
        if "startingoffsets" in opts:
            known["starting_offsets"] = opts["startingoffsets"]
        if "maxrecordspertrigger" in opts:
            known["max_records_per_trigger"] = parse_count(
                "maxRecordsPerTrigger", opts["maxrecordspertrigger"], least=1
            )
        if known.get("chunk_bytes", CHUNK_BYTES) >= 1 << 31:
            raise OptionError("option readChunkBytes must stay below 2 GiB")
        known["storage_options"] = {
            key[len(STORAGE_PREFIX) :]: _storage_value(value)
            for key, value in opts.items()
            if key.startswith(STORAGE_PREFIX)
        }
        return cls(**known)
