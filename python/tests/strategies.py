"""Every Hypothesis strategy of the suite, in one place."""

from __future__ import annotations

from hypothesis import strategies as st

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
