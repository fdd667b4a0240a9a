#!/usr/bin/env bash
# Builds what the Kaitai testee adapters run: the parsers kaitai-struct-compiler
# generates from ksy/, the cross-check harnesses of tools/ksy/harness/, and the
# Java line server that keeps one JVM for a whole session.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)

bash "$ROOT/tools/ksy/setup.sh"
node "$ROOT/tools/ksy/compile.js"
bash "$ROOT/tools/ksy/build_harnesses.sh"
rm -rf "$ROOT/build/conformance/kaitai-java"
javac -nowarn -encoding UTF-8 -cp "$ROOT/build/ksy/java-classes" -d "$ROOT/build/conformance/kaitai-java" \
  "$HERE/java/KaitaiLines.java"
