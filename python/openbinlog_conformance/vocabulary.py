"""The closed vocabularies of the conformance suite (spec/conformance.md).

The fixture generator writes them into ``conformance/manifest.json`` and the
runner checks every manifest and every testee answer against them, so the
two cannot drift apart.
"""

from __future__ import annotations

from typing import Final

# MAJOR.MINOR follow the format specification's version (2.1); PATCH counts
# fixes to the suite itself. Cases carry `since` / `until` in spec versions.
SUITE_VERSION: Final = "2.1.2"
SPEC_VERSION: Final = "2.1"
# The spec versions the suite has cases for, oldest first: a case's `since` is one of them.
SPEC_VERSIONS: Final = ("2.0", "2.1")

LEVELS: Final = ("must", "should", "may")

# reader: a reader of the spec (minimal or full); writer: write and recover;
# follower: reserved (no protocol operation yet); parser: a generated or
# hand-written structure parser that checks bytes and checksums of each
# segment file but not the commit-point, chain, index or asqn rules.
ROLES: Final = ("reader", "writer", "follower", "parser")

# tolerant: reads that step over damage and list it (spec 10.4); split: reads of
# one byte range of a segment (spec 10.5). The rest are what the spec permits
# (MAY) and a testee that offers it must get right: resume_at: resuming at a ref
# (10.6 step 5); seek: starting at an index or a time (10.7); compressed: reading
# compressed sealed segments (2.6); preallocate: writing preallocated segments (6.5).
# split_plan (suite 2.1.0): planning the splits of a segment and reading them one after
# another (spec 10.5; with a sparse index, spec 18.5 "SPLIT with an index").
CAPABILITIES: Final = (
    "legacy_v1",
    "refs",
    "tolerant",
    "split",
    "recover",
    "write",
    "resume_at",
    "seek",
    "compressed",
    "preallocate",
    "split_plan",
)

OUTCOMES: Final = ("accept", "recovered", "reject", "implementation_defined")

ERROR_CLASSES: Final = (
    "bad_signature",
    "unsupported_version",
    "unsupported_feature",
    "bad_header",
    "truncated",
    "checksum_mismatch",
    "length_out_of_range",
    "index_discontinuity",
    "asqn_not_increasing",
    "chain_broken",
    "invalid_ref",
    "ambiguous_split",
    "io_error",
)

# Not an error of the format: the answer of a testee asked for something it
# cannot do (an operation outside its roles, or input outside its capabilities).
UNSUPPORTED_OPERATION: Final = "unsupported_operation"

# Implementation-defined behaviour: choice name -> the values a testee may
# declare in its hello (spec/conformance.md, "Implementation-defined cases").
CHOICES: Final[dict[str, tuple[str, ...]]] = {
    # Spec section 14: a minimal reader MAY end a finished, unsealed segment at
    # its commit point instead of walking its tail (section 8.4).
    "finished_segment_end": ("tail_walk", "commit_point"),
}

OPERATIONS: Final = ("read", "write", "recover")
