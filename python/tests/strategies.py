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
