#!/usr/bin/env python3
"""Generate the golden fixtures and the conformance manifest, deterministically.

    python tools/gen_fixtures.py          # rewrite fixtures/ and conformance/manifest.json
    python tools/gen_fixtures.py --check  # regenerate into a temporary directory; exit 1 on any difference

Every byte comes from the catalog in tools/fixtures_lib/ (workloads played
with the reference's pure encoders, fixed log id and clock, seeded payloads,
explicit mutations), so two runs produce identical files.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from fixtures_lib import build_catalog
from fixtures_lib.emit import write_all

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
MANIFEST = REPO / "conformance" / "manifest.json"


def tree(root: Path, prefix: str) -> dict[str, bytes]:
    return {
        f"{prefix}{path.relative_to(root)}": path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()
    }


def generate(fixtures: Path, manifest: Path) -> int:
    catalog = build_catalog()
    used = {case.fixture.id for case in catalog.cases if case.fixture is not None}
    unused = sorted(set(catalog.fixtures) - used)
    if unused:
        raise SystemExit(f"gen_fixtures: fixtures without a case: {', '.join(unused)}")
    write_all(catalog, fixtures, manifest)
    return len(catalog.cases)


def check(fixtures_dir: Path, manifest_file: Path) -> int:
    with tempfile.TemporaryDirectory() as scratch:
        fresh_fixtures = Path(scratch) / "fixtures"
        fresh_manifest = Path(scratch) / "manifest.json"
        generate(fresh_fixtures, fresh_manifest)
        expected = {**tree(fresh_fixtures, "fixtures/"), "conformance/manifest.json": fresh_manifest.read_bytes()}
    actual = tree(fixtures_dir, "fixtures/") if fixtures_dir.is_dir() else {}
    if manifest_file.is_file():
        actual["conformance/manifest.json"] = manifest_file.read_bytes()
    problems = [f"missing: {name}" for name in sorted(expected.keys() - actual.keys())]
    problems += [f"not generated (stale): {name}" for name in sorted(actual.keys() - expected.keys())]
    problems += [
        f"differs: {name}" for name in sorted(expected.keys() & actual.keys()) if expected[name] != actual[name]
    ]
    if problems:
        print("gen_fixtures --check: the committed fixtures are not what the generator produces:", file=sys.stderr)
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
        print("run: python tools/gen_fixtures.py", file=sys.stderr)
        return 1
    print(f"gen_fixtures --check: {len(expected)} files up to date")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="regenerate into a temporary directory and compare")
    parser.add_argument("--fixtures", type=Path, default=FIXTURES, help="the fixtures directory (default: fixtures/)")
    parser.add_argument("--manifest", type=Path, default=MANIFEST, help="default: conformance/manifest.json")
    args = parser.parse_args()
    if args.check:
        return check(args.fixtures, args.manifest)
    if args.fixtures.exists():
        shutil.rmtree(args.fixtures)
    count = generate(args.fixtures, args.manifest)
    print(f"gen_fixtures: {count} cases written to fixtures/ and conformance/manifest.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
