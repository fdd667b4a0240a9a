#!/usr/bin/env python3
"""The reference testee with one decision of the spec taken the other way (a decision mutant).

testee.py --list                      the mutants, as JSON (name, section, decision, other, pinned_by)
testee.py NAME session | read DIR ... the reference testee with mutant NAME applied

The suite must fail every mutant (``binlog conformance mutants``). Mutants
patch the pure-Python reference: the compiled accelerator is switched off so
that each patched procedure is the one that runs.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ["OPENBINLOG_PURE_PYTHON"] = "1"  # before openbinlog is imported
sys.path.insert(0, str(Path(__file__).resolve().parent))

import decisions_index
import decisions_legacy
import decisions_reader
import decisions_writer
import requirements

from openbinlog_conformance import serve

MUTANTS = (
    decisions_reader.MUTANTS
    + decisions_writer.MUTANTS
    + decisions_legacy.MUTANTS
    + decisions_index.MUTANTS
    + requirements.MUTANTS
)


def main(argv: list[str]) -> int:
    if argv == ["--list"]:
        print(json.dumps([mutant.describe() for mutant in MUTANTS]))
        return 0
    by_name = {mutant.name: mutant for mutant in MUTANTS}
    if not argv or argv[0] not in by_name:
        print(f"usage: testee.py --list | NAME COMMAND...; NAME one of {sorted(by_name)}", file=sys.stderr)
        return 2
    return serve.main(by_name[argv[0]].apply(), argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
