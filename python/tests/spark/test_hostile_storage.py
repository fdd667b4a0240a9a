"""Hostile input never hurts the Spark source's file access either (issue #16).

Its reads are bounded by the bytes a file holds, its compressed segments are
unpacked by the reference reader's one procedure (``openbinlog.compressed``,
with the ``maxDecompressedBytes`` cap), and its listing takes only names of
ASCII digits for segments. No Spark session is needed: this is the storage
layer below it.
"""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard
from binlog_frames import planned
from pyspark.sql.types import StringType
from test_hostile_input import (
    TWO_GIB_RECORD,
    fill_the_disk_of_spills,
    header_and_record,
    one_segment,
    sealed_log,
    zstd_bomb,
)

from openbinlog import BinlogIOError
from openbinlog._format import SEGMENT_NAME
from openbinlog.compressed import UnpackError
from openbinlog_spark.listing import SegmentFile, partition_columns
from openbinlog_spark.storage import CorruptFileError, Storage


def _limit_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, resource.getrlimit(resource.RLIMIT_AS)[1]))


@pytest.mark.spec("R-10")
def test_a_local_read_of_2_gib_costs_the_bytes_the_file_holds(tmp_path: Path) -> None:
    data = header_and_record(commit_offset=256 + 4 + TWO_GIB_RECORD, length=TWO_GIB_RECORD)
    path = one_segment(tmp_path / "log", bytes(data))
    code = (
        "import sys\nfrom openbinlog_spark.storage import Storage\n"
        "with Storage().open(sys.argv[1], None) as source:\n"
        f"    print(len(source.read_at(256, {TWO_GIB_RECORD + 4})))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_limit_address_space,
        check=False,
    )
    assert (done.returncode, done.stdout.strip()) == (0, "40"), done.stderr


def _bomb(directory: Path, zeros: int) -> tuple[Path, bytes]:
    sealed_log(directory)
    plain = directory / "00000001.dat"
    data = plain.read_bytes()
    packed = directory / "00000001.dat.zst"
    packed.write_bytes(zstd_bomb(data, zeros))
    plain.unlink()
    return packed, data


def test_compressed_segments_are_unpacked_by_the_reference_reader_no_further_than_their_end(tmp_path: Path) -> None:
    assert CorruptFileError is UnpackError  # one unpacking procedure, the reference reader's
    packed, data = _bomb(tmp_path / "log", 256 << 20)
    with Storage().open(str(packed), "zstd") as source:
        assert source.read_at(0, 256) == data[:256]
        assert source.size() == len(data)  # the commit point of the sealed segment, not 256 MiB of zeros
    records, damages, _ = planned(tmp_path / "log")
    assert (len(records), damages) == (51, [])


def test_the_cap_on_unpacked_bytes_refuses_only_reads_beyond_it(tmp_path: Path) -> None:
    packed, data = _bomb(tmp_path / "log", 1 << 20)
    with Storage().open(str(packed), "zstd", max_decompressed=1000) as source:
        assert source.read_at(0, 256) == data[:256]  # planning reads the header
        with pytest.raises(CorruptFileError, match=r"more than 1000 bytes.*option maxDecompressedBytes") as raised:
            source.size()
        assert raised.value.error_class == "bad_header"
    # Refused, segment 1 is bad_header at offset 0, which ends the walk of the log as a header that fails its
    # checks does (spec readers 10.4): none of its records (the first read needs bytes beyond the cap) nor segment 2's.
    records, damages, _ = planned(tmp_path / "log", maxDecompressedBytes="1k")
    assert [damage[:3] for damage in damages] == [("bad_header", 1, 0)]
    assert records == []
    assert planned(tmp_path / "log", maxDecompressedBytes="1k", ignoreCorruptFiles="true")[:2] == ([], [])


def test_a_full_disk_while_unpacking_is_an_io_error_not_a_corrupt_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sealed_log(tmp_path / "log")
    plain = tmp_path / "log" / "00000001.dat"
    packed = tmp_path / "log" / "00000001.dat.zst"
    packed.write_bytes(zstandard.ZstdCompressor().compress(plain.read_bytes()))
    fill_the_disk_of_spills(monkeypatch)
    with Storage().open(str(packed), "zstd") as source, pytest.raises(BinlogIOError) as raised:
        source.read_at(0, 256)
    assert not isinstance(raised.value, CorruptFileError)  # ignoreCorruptFiles must not skip a full disk
    assert raised.value.error_class == "io_error"


@pytest.mark.spec("R-1")
@pytest.mark.parametrize(
    "name", ["\uff10" * 7 + "1.dat", "\u0660" * 7 + "1.dat.gz", "00000001.dat\n", "00000001.dat.zst\n"]
)
def test_names_of_other_digits_or_with_a_trailing_newline_are_not_segment_files(name: str) -> None:
    assert SEGMENT_NAME.match(name) is None
    assert SEGMENT_NAME.match(name.strip().translate(str.maketrans("\uff10\u0660", "00"))) is not None


def test_partition_values_of_other_digits_are_strings() -> None:
    files = [SegmentFile("u", "d", 1, None, 0, (("day", "\u0661\u0662"),)), SegmentFile("v", "d", 1, None, 0, ())]
    fields, values = partition_columns(files)
    assert fields[0].dataType == StringType()
    assert values["u"]["day"] == "\u0661\u0662"
