#!/usr/bin/env python3
"""The Python reference implementation (openbinlog) as a conformance testee.

testee.py session | read DIR [--after REF | --tolerant | --split LOG:START:STOP] | write DIR < SPEC.json | recover DIR
"""

from __future__ import annotations

import sys

from openbinlog_conformance import serve
from openbinlog_conformance.reference_testee import ReferenceTestee

if __name__ == "__main__":
    sys.exit(serve.main(ReferenceTestee()))
