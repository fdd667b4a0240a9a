"""UDFs over binary columns: whole segments loaded with ``binaryFile``, single records, payload helpers."""

from __future__ import annotations

from pathlib import Path

import pytest
from binlog_frames import collected, reference
from logtools import flip_bit, segment
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from test_spark_semantics import build_log, damaged_log

from openbinlog._records import encode_record
from openbinlog.errors import BadHeaderError
from openbinlog_spark.columns import DEFAULT_CORRUPT_COLUMN, ERROR_COLUMN, BatchBuilder, record_schema
from openbinlog_spark.options import ReadOptions
from openbinlog_spark.udfs import (
    decode_record,
    explode_segments,
    payload_json,
    payload_text,
    segment_batches,
    segment_records,
)

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"


def test_segments_in_a_binary_column_decode_like_the_log(spark: SparkSession, tmp_path: Path) -> None:
    directory = damaged_log(tmp_path, "payload_bit_flip")
    expected_records, expected_damages = reference(directory)
    files = spark.read.format("binaryFile").option("pathGlobFilter", "*.dat").load(str(directory))
    nested = files.select(F.explode(segment_records("content")).alias("record")).select("record.*")
    rows = nested.collect()
    records = sorted(
        (row.log, row.offset, row["index"], row.asqn, row.timestamp is not None, bytes(row.payload))
        for row in rows
        if row.error_class is None
    )
    assert records == [(*record[:4], True, record[5]) for record in expected_records]
    assert [
        (row.error_class, row.log, row.offset, row["index"], row.bytes_skipped) for row in rows if row.error_class
    ] == [damage[:5] for damage in expected_damages]
    flat = explode_segments(files)
    assert collected(flat) == (expected_records, expected_damages)
    assert {row.file for row in flat.select("file").distinct().collect()} == {
        row.path for row in files.select("path").collect()
    }
    assert {segment(directory, log).name for log in (1, 2, 3)} == {
        row.path.rsplit("/", 1)[1] for row in files.select("path").collect()
    }


def test_single_records_decode_or_say_why_not(spark: SparkSession) -> None:
    good = encode_record(41, b'{"amount": 12, "currency": "EUR"}', asqn=7, timestamp_us=1_700_000_000_000_000)
    flipped = bytearray(good)
    flipped[50] ^= 0x01
    df = spark.createDataFrame([(good,), (bytes(flipped),), (good[:30],), (None,)], "raw binary")
    rows = df.select(decode_record("raw").alias("record")).collect()
    first = rows[0].record
    assert (first["index"], first.asqn, bytes(first.payload), first.error_class) == (
        41,
        7,
        b'{"amount": 12, "currency": "EUR"}',
        None,
    )
    assert [rows[1].record.error_class, rows[2].record.error_class, rows[3].record] == [
        "checksum_mismatch",
        "truncated",
        None,
    ]


def test_payload_helpers_decode_text_and_json(spark: SparkSession) -> None:
    df = spark.createDataFrame([(b'{"amount": 12}',), (b"\xff\xfe not utf-8",), (b"plain",)], "payload binary")
    rows = df.select(
        payload_text("payload").alias("text"), payload_json("payload", "amount int").alias("json")
    ).collect()
    assert [row.text for row in rows] == ['{"amount": 12}', None, "plain"]
    assert rows[0].json.amount == 12
    assert rows[1].json is None


@pytest.mark.spec("R-39")
def test_a_segment_in_a_column_checks_its_slot_against_the_records(tmp_path: Path) -> None:
    # The active slot claims one more record than the segment holds (the fixture of
    # must.reader.slot.next_index_disagrees): strict decoding fails, tolerant decoding reports it.
    data = (FIXTURES / "next_index_disagrees" / "00000001.dat").read_bytes()
    builder = BatchBuilder(record_schema([], DEFAULT_CORRUPT_COLUMN), file="column", partition_values={})
    with pytest.raises(BadHeaderError) as caught:
        list(segment_batches(data, builder, ReadOptions.parse({"mode": "FAILFAST"}), "column"))
    assert (caught.value.offset, caught.value.index) == (96, 6)
    batches = list(segment_batches(data, builder, ReadOptions.parse({}), "column"))
    errors = [row for batch in batches for row in batch.column(ERROR_COLUMN).to_pylist() if row is not None]
    assert [(error["error_class"], error["resume_index"]) for error in errors] == [("bad_header", 7)]
    assert sum(batch.num_rows for batch in batches) == 5 + 1  # the five records and the damage row


def test_a_damaged_segment_header_in_a_column_is_a_damage_row_of_0_bytes_skipped(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Its row gave the segment's size as bytes_skipped, where the data sources give 0: no walk steps over a damaged
    header (spec readers 10.4), so none of its bytes were skipped by one (conformance 3.1)."""
    directory = build_log(tmp_path / "log", records=30, cut_every=10)
    flip_bit(segment(directory, 2), 70)
    files = spark.read.format("binaryFile").option("pathGlobFilter", "*.dat").load(str(directory))
    nested = files.select(F.explode(segment_records("content")).alias("record")).select("record.*")
    damaged = nested.where("error_class is not null").collect()
    assert [(row.error_class, row.offset, row.bytes_skipped) for row in damaged] == [("bad_header", 92, 0)]
    flat = [damage[2:] for damage in collected(explode_segments(files))[1]]
    source = [damage[2:] for damage in collected(spark.read.format("binlog").load(str(directory)))[1]]
    assert flat == source == [(92, None, 0, None)]


def test_dropmalformed_explode_segments_gives_no_row_for_a_damaged_segment_header(
    spark: SparkSession, tmp_path: Path
) -> None:
    """DROPMALFORMED dropped the damage of records but not a damaged header's, which came out as a row of the record
    schema with a null payload and index: a record that is not in the log."""
    directory = build_log(tmp_path / "log", records=30, cut_every=10)
    flip_bit(segment(directory, 2), 70)
    files = spark.read.format("binaryFile").option("pathGlobFilter", "*.dat").load(str(directory))
    rows = explode_segments(files, mode="DROPMALFORMED").collect()
    assert [row for row in rows if row.payload is None] == []
    assert sorted((row.log, row["index"]) for row in rows) == [
        (log, index) for log in (1, 3) for index in range(10 * log - 9, 10 * log + 1)
    ]
