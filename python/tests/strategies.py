"""Every Hypothesis strategy of the suite, in one place."""

from __future__ import annotations

import random

from hypothesis import strategies as st

from openbinlog._buffer import SYNC_FILE, SYNC_NONE, SYNC_RECORDS

MIB = 1 << 20

small_payloads = st.binary(min_size=0, max_size=300)
# Mostly small, sometimes large (up to 1 MiB), always including the empty payload.
payloads = st.one_of(
    small_payloads,
    st.just(b""),
    st.integers(min_value=0, max_value=MIB).map(lambda n: bytes([n % 251]) * n),
)

# A log workload: payloads to append, None for a cutover.
operations = st.lists(st.one_of(payloads.map(lambda p: p), st.none()), min_size=0, max_size=25)

indexes = st.integers(min_value=0, max_value=2**64 - 1)
asqns = st.one_of(st.just(-1), st.integers(min_value=0, max_value=2**63 - 1))
timestamps = st.integers(min_value=-(2**63), max_value=2**63 - 1)
log_numbers = st.integers(min_value=1, max_value=2**32 - 1)
offsets = st.integers(min_value=0, max_value=2**64 - 1)

# Logs for the tests of the compiled walks (test_native.py), described rather than encoded: each
# record a payload, an asqn step (None: no asqn; n: n above the last asqn) and a timestamp.
log_records = st.lists(
    st.tuples(small_payloads, st.one_of(st.none(), st.integers(min_value=1, max_value=1000)), timestamps), max_size=10
)
RECORD_DAMAGES = (
    "header_byte",  # any byte of the header flipped, the length field's included
    "length_byte",
    "payload_byte",
    "wrong_index",
    "stale_asqn",
    "unknown_frame",
    "skippable_frame",
    "flags",
    "reserved",
    "short_length",  # below the minimum, under a valid header checksum
    "long_length",  # beyond the record, up to 4 GiB, under a valid header checksum
    "truncated",  # the log cut inside the record
)
# At most one damage: its kind, which record (modulo their count), and a number that picks where and how.
record_damages = st.one_of(
    st.none(),
    st.tuples(
        st.sampled_from(RECORD_DAMAGES),
        st.integers(min_value=0, max_value=2**16),
        st.integers(min_value=0, max_value=2**32 - 1),
    ),
)
# What follows the records: nothing, zeros (preallocated space), garbage, or bytes that look like a length.
log_tails = st.one_of(
    st.just(b""),
    st.integers(min_value=1, max_value=100).map(bytes),
    st.binary(min_size=1, max_size=100),
    st.just(b"\xff" * 45),
)

# Hostile input (test_hostile_input.py): one of the small logs built there, and what is done to it. Each mutation
# is (kind, where, value): ``where`` picks the segment, record or byte, ``value`` the number that is forged or the bit
# that is flipped; forged fields get valid checksums, so they reach the checks behind them.
HOSTILE_LOGS = ("v2", "v2_preallocated", "v1")
SEGMENT_MUTATIONS = (
    "flip",  # one bit anywhere
    "truncate",
    "zero",  # a range of zero bytes: unwritten space, or the length fields of empty version 1 records
    "append",  # bytes after the end: zeros, 0xff, or a forged record header
    "record_length",  # a record's length field (version 2: under a valid header checksum)
    "commit_offset",  # the active slot's, or a newer generation's in the other slot, under a valid slot checksum
    "next_index",
    "legacy_tail",  # a version 1 header's last element position
    "checkpoint",  # a subscriber's stored ref
)
hostile_numbers = st.one_of(
    st.sampled_from(
        [0, 1, 4, 35, 36, 40, 248, 252, 255, 256, 257, 296, 2**31 - 1, 2**31, 2**32 - 1, 2**63 - 1, 2**63, 2**64 - 1]
    ),
    st.integers(min_value=0, max_value=4096),
    st.integers(min_value=0, max_value=2**64 - 1),
)
segment_mutations = st.lists(
    st.tuples(st.sampled_from(SEGMENT_MUTATIONS), st.integers(min_value=0, max_value=2**32 - 1), hostile_numbers),
    min_size=1,
    max_size=3,
)
# A hostile log: which base log, its mutations, and which segment (modulo their count) is stored compressed
# (None: none; "flip" or "cut" to damage the archive itself afterwards, by ``where``).
hostile_logs = st.tuples(
    st.sampled_from(HOSTILE_LOGS),
    segment_mutations,
    st.one_of(
        st.none(),
        st.tuples(
            st.sampled_from(("gz", "zst")),
            st.integers(min_value=0, max_value=7),
            st.sampled_from((None, "flip", "cut")),
            st.integers(min_value=0, max_value=2**32 - 1),
        ),
    ),
)
# Version 1 record bytes for the bulk walk of empty records: runs of zero bytes (each four of them an empty
# record, three or fewer the start of a length field), records with data, and garbage.
legacy_pieces = st.lists(
    st.one_of(
        st.integers(min_value=1, max_value=64).map(bytes),
        st.binary(max_size=40).map(lambda data: len(data).to_bytes(4, "big") + data),
        st.binary(min_size=1, max_size=8),
    ),
    max_size=20,
)

# Logs for the seek tests (test_seek.py): each item a cutover (None) or a record, as its payload, its asqn step
# (None: no asqn; n: n above the last asqn) and how many microseconds its timestamp lies after the previous one
# (0: equal timestamps, across cutovers too); with how many of the lowest segments retention removes.
seek_logs = st.tuples(
    st.lists(
        st.one_of(
            st.none(),
            st.tuples(
                st.binary(max_size=40),
                st.one_of(st.none(), st.integers(min_value=1, max_value=3)),
                st.integers(min_value=0, max_value=2),
            ),
        ),
        max_size=30,
    ),
    st.integers(min_value=0, max_value=3),
)

# What happens to the index files of a log (test_sparse_index.py): nothing, removal, damage, or a lie told
# with valid checksums (entries moved, renumbered or retimed; a segment end that is not the segment's; another
# log's index).
index_faults = st.sampled_from(
    ["good", "missing", "torn", "flipped", "garbage", "lie_offset", "lie_index", "lie_time", "lie_end", "other_log"]
)

# Byte edits of one index file (which: 1, 2, 3, or 0 for all), an optional new length, and whether the CRCs are made
# valid afterwards, so that an edit reaches the checks of fields and not only the checksums (test_index_hostile.py).
index_byte_edits = st.tuples(
    st.sampled_from([0, 1, 2, 3]),
    st.lists(st.tuples(st.integers(min_value=0, max_value=2**12), st.integers(min_value=0, max_value=255)), max_size=8),
    st.one_of(st.none(), st.integers(min_value=0, max_value=2**12)),
    st.booleans(),
)

# A forged index (test_index_hostile.py): which segment's index, then operations on its entries (valid CRCs), each
# (what, which entry, which value); values come from the log's own records, shifted or not, and the fields' extremes.
INDEX_FORGE_OPS = ("index", "offset", "time", "swap", "duplicate", "drop", "record", "reverse", "shift")
index_forgeries = st.tuples(
    st.sampled_from([1, 2, 3]),
    st.lists(
        st.tuples(st.sampled_from(INDEX_FORGE_OPS), st.integers(min_value=0, max_value=2**16), st.integers(0, 2**16)),
        min_size=1,
        max_size=5,
    ),
)

# Entries of an index over a log of logs (test_java_index.py), each moved onto the record embedded in the payload of
# the record it names: same index and time, valid CRCs; only the landing walk of the entry check refuses them.
index_embedded_moves = st.lists(st.integers(min_value=0, max_value=2**16), min_size=1, max_size=5)

# What a process-mode buffer is asked to do (test_record_buffer.py): appends (a payload or a value
# that is no plain payload, an asqn or a value that is no plain asqn, a clock reading) and takes.
_odd_values = st.sampled_from([True, 2**63, -2, 1.5, "text", None])
buffer_appends = st.tuples(
    st.one_of(small_payloads, small_payloads.map(bytearray), st.just("text")),
    st.one_of(st.just(-1), st.integers(min_value=0, max_value=40), _odd_values),
    st.integers(min_value=0, max_value=2**40),  # None, the system clock, is tested apart: it cannot repeat
)
buffer_operations = st.lists(
    st.one_of(buffer_appends, st.sampled_from(["take", "take-and-close"])), min_size=1, max_size=40
)
# A buffer's starting state: start offset, next index, last asqn, last timestamp, end and size limits, buffer bytes.
buffer_states = st.tuples(
    st.integers(min_value=256, max_value=4096),
    st.one_of(st.integers(min_value=1, max_value=1000), st.just(2**64 - 2)),
    st.integers(min_value=-1, max_value=20),
    st.integers(min_value=0, max_value=2**40),
    st.one_of(st.just(2**64 - 1), st.integers(min_value=300, max_value=3000)),
    st.one_of(st.just(2**64 - 1), st.integers(min_value=300, max_value=3000)),
    st.integers(min_value=1, max_value=2000),
)
# A mapped buffer (the mmap mode): the state as above with a bounded end limit (a mapping covers it), and the
# generation and next log number of the active slot it starts from.
mapped_buffer_states = st.tuples(
    st.integers(min_value=256, max_value=4096),
    st.one_of(st.integers(min_value=1, max_value=1000), st.just(2**64 - 2)),
    st.integers(min_value=-1, max_value=20),
    st.integers(min_value=0, max_value=2**40),
    st.integers(min_value=300, max_value=3000),
    st.one_of(st.just(2**64 - 1), st.integers(min_value=300, max_value=3000)),
    st.integers(min_value=1, max_value=2000),
)
mapped_slots = st.tuples(
    st.one_of(st.integers(min_value=1, max_value=1000), st.integers(min_value=2**64 - 45, max_value=2**64 - 2)),
    st.sampled_from([0, 4]),
)
# What a buffer is bound to (bind and group): the active slot's generation and next log number, strict, how each
# batch of the group commit syncs (none, the file, the records alone), how far apart it syncs the whole file, and
# whether an unsynced commit starts the writeback of its records.
buffer_bindings = st.tuples(
    st.one_of(st.integers(min_value=0, max_value=1000), st.integers(min_value=2**64 - 8, max_value=2**64 - 1)),
    st.sampled_from([0, 4]),
    st.booleans(),
    st.sampled_from([SYNC_NONE, SYNC_FILE, SYNC_RECORDS]),
    st.sampled_from([0, 100, 1 << 20]),
    st.booleans(),
)
# Commits between a buffer's operations: None (no commit there), "through" (the group commit of the last record
# appended, led by the caller), or a commit's sync and close.
buffer_commits = st.lists(
    st.one_of(st.none(), st.just("through"), st.tuples(st.booleans(), st.booleans())),
    max_size=5,
)

# Ways of taking records from one Reader, interleaved: a for loop left after so many records, next(), and
# next() on an iterator of the reader kept across steps.
reader_steps = st.lists(
    st.one_of(
        st.tuples(st.just("loop"), st.integers(min_value=0, max_value=700)),
        st.tuples(st.just("next"), st.just(1)),
        st.tuples(st.just("iterator"), st.integers(min_value=1, max_value=5)),
    ),
    max_size=12,
)

# Batches of writers sharing syncs (test_shared_compiled.py): which of two writers, and its appends, each a payload
# and an asqn step (None: no asqn; n: the last asqn given plus n, so 0 or less is out of order); None cuts over.
shared_batches = st.lists(
    st.one_of(
        st.tuples(
            st.integers(min_value=0, max_value=1),
            st.lists(
                st.tuples(small_payloads, st.one_of(st.none(), st.integers(min_value=-1, max_value=3))),
                min_size=1,
                max_size=4,
            ),
        ),
        st.none(),
    ),
    max_size=12,
)

# The two commit slots of a header (test_native.py), each: never written, random bytes, or a slot with a valid
# checksum whose fields lie in and out of range, written at its own place or at the other one's (None or the place
# 0/1 it was encoded for). Generations are close together so that equal, adjacent and swapped ones come up.
_slot_fields = st.tuples(
    st.one_of(st.integers(min_value=0, max_value=4), st.just(2**64 - 1)),
    st.one_of(st.integers(min_value=250, max_value=260), st.integers(min_value=0, max_value=2**64 - 1)),
    st.one_of(st.integers(min_value=5, max_value=9), st.integers(min_value=0, max_value=2**64 - 1)),
    st.one_of(st.integers(min_value=-3, max_value=3), st.integers(min_value=-(2**63), max_value=2**63 - 1)),
    timestamps,
    st.one_of(st.sampled_from([0, 3, 4, 5]), st.integers(min_value=0, max_value=2**32 - 1)),
)
commit_slot_pairs = st.tuples(
    *(
        st.one_of(
            st.none(),
            st.binary(min_size=48, max_size=48),
            st.tuples(_slot_fields, st.booleans()),
        )
        for _ in range(2)
    )
)

# Logs the Java reader core is compared on with the reference (test_java_reader.py): each item a cutover (None)
# or a record, as its payload and its asqn step (None: no asqn; n: n above the last asqn).
java_log_items = st.lists(
    st.one_of(st.none(), st.tuples(small_payloads, st.one_of(st.none(), st.integers(min_value=1, max_value=3)))),
    max_size=16,
)
# Damage done to such a log after writing it, at most three, each (kind, where, value): ``where`` picks the segment
# or the record, ``value`` the byte, the length, the forged number or the codec. Forged fields get a valid header
# checksum, so that they reach the record checks behind it. Damage after a compression hits the compressed file.
JAVA_LOG_DAMAGES = (
    "flip",  # one bit of a segment file, header included
    "truncate",  # a segment file cut short
    "zero",  # a range of zero bytes
    "index",  # a record's index
    "asqn",  # a record's asqn, often stale
    "length",  # a record's length field
    "frame",  # a record's frame
    "remove",  # a whole segment file
    "append",  # bytes after a segment's end
    "slot_asqn",  # the last_asqn of a segment's active slot, over- or understated, its checksum made valid again
    "compress",  # a plain segment file replaced by its gzip or Zstandard copy (protocols 2.6), damage and all
)
java_log_damages = st.lists(
    st.tuples(
        st.sampled_from(JAVA_LOG_DAMAGES),
        st.integers(min_value=0, max_value=2**32 - 1),
        st.integers(min_value=0, max_value=2**32 - 1),
    ),
    max_size=3,
)
# One-segment logs read in consecutive splits by the reference (test_splits.py): records as in java_log_items,
# without cutovers, and the damage of java_log_damages that stays inside the segment's bytes.
split_log_items = st.lists(
    st.tuples(small_payloads, st.one_of(st.none(), st.integers(min_value=1, max_value=3))), max_size=16
)
split_log_damages = st.lists(
    st.tuples(
        st.sampled_from(("flip", "truncate", "zero", "index", "asqn", "asqn", "asqn", "length", "frame", "slot_asqn")),
        st.integers(min_value=0, max_value=2**32 - 1),
        st.integers(min_value=0, max_value=2**32 - 1),
    ),
    max_size=3,
)
# Damage around a compression: the damage above, one segment compressed (its codec by the value's parity), then up to
# two kinds of damage to that copy, where a decoder and the walk must agree on what is left.
java_compressed_damages = st.tuples(
    java_log_damages,
    st.integers(min_value=0, max_value=2**32 - 1),
    st.integers(min_value=0, max_value=1),
    st.lists(
        st.tuples(
            st.sampled_from(("flip", "truncate", "zero", "append")), st.integers(min_value=0, max_value=2**32 - 1)
        ),
        max_size=2,
    ),
).map(lambda d: [*d[0], ("compress", d[1], d[2]), *((kind, d[1], value) for kind, value in d[3])])

# gzip archives (test_gzip_unpacking.py), described: each member its payload, its deflate level (0: stored blocks),
# its optional header fields (RFC 1952 2.3.1: extra field, name, comment, header CRC) and the zero bytes after it.
_gzip_payloads = st.one_of(
    small_payloads,
    # Incompressible: a member spans several reads of the archive.
    st.tuples(st.integers(min_value=0, max_value=2**32 - 1), st.integers(min_value=0, max_value=40_000)).map(
        lambda seed_size: random.Random(seed_size[0]).randbytes(seed_size[1])
    ),
    st.integers(min_value=0, max_value=300_000).map(bytes),  # many unpacked bytes from a few archive bytes
)
_gzip_strings = st.one_of(st.none(), st.binary(max_size=20).map(lambda name: name.replace(b"\0", b"")))
gzip_members = st.lists(
    st.tuples(
        _gzip_payloads,
        st.integers(min_value=0, max_value=9),
        st.one_of(st.none(), st.binary(max_size=20)),
        _gzip_strings,
        _gzip_strings,
        st.booleans(),
        st.integers(min_value=0, max_value=20),
    ),
    max_size=4,
)
# Damage to such an archive, (kind, where, value): ``where`` picks the byte (modulo the archive's size), ``value``
# the bits flipped or the byte appended.
gzip_damages = st.tuples(
    st.sampled_from(("flip", "cut", "append")),
    st.integers(min_value=0, max_value=2**32 - 1),
    st.integers(min_value=1, max_value=255),
)
# The sizes a reader asks for, in turn, before it reads all the rest.
gzip_read_sizes = st.lists(st.integers(min_value=1, max_value=70_000), max_size=8)

# A segment header that fails its checks (test_spark_header_damage.py) in a log ``java_log_items`` describes: how
# (a checked byte flipped, then the segment perhaps packed by gzip or Zstandard; the file cut inside its header or
# emptied; its gzip copy cut inside the archive's first bytes), which segment (modulo their count), the number that
# picks the byte and bit or the cut, and the bit of a record of the segment below that is flipped too (None: none);
# whether a blank segment follows the last one (absent, R-7, but listed: an emptied segment below it is not the last);
# then the mode of the read and how many tasks it is cut into.
HEADER_DAMAGES = ("flip", "gz", "zst", "cut", "empty", "gz_cut")
header_damages = st.tuples(
    st.sampled_from(HEADER_DAMAGES),
    st.integers(min_value=0, max_value=2**32 - 1),
    st.integers(min_value=0, max_value=2**32 - 1),
    st.one_of(st.none(), st.integers(min_value=0, max_value=2**32 - 1)),
    st.booleans(),
    st.sampled_from(("PERMISSIVE", "DROPMALFORMED", "FAILFAST")),
    st.integers(min_value=1, max_value=6),
)

# An archive of a compressed segment that fails partway (test_compressed_failures.py, spec R-43): its codec, how it
# fails (cut there; one byte changed there, which a deflate stream may decode to wrong bytes; a block that no decoder
# accepts put there) and where, in thousandths of the archive; and the sizes a reader unpacks and reads in.
archive_failures = st.tuples(
    st.sampled_from(("gz", "zst")),
    st.sampled_from(("cut", "flip", "bad_block")),
    st.integers(min_value=1, max_value=999),
)
unpacking_sizes = st.lists(st.sampled_from((1 << 12, 1 << 16, 1 << 20, 1 << 22)), min_size=2, max_size=3, unique=True)
