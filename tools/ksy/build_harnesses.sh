#!/usr/bin/env bash
# Builds the Java and Go cross-check harnesses against the parsers that
# compile.js generated into build/ksy/ (run setup.sh and compile.js first).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUILD=$(cd "$HERE/../.." && pwd)/build/ksy

rm -rf "$BUILD/java-classes"
javac -nowarn -encoding UTF-8 -cp "$BUILD/lib/kaitai-struct-runtime-0.11.jar" -d "$BUILD/java-classes" \
  "$BUILD"/java/*.java "$HERE/harness/java/Harness.java"

# Go builds packages from one module tree: put the harness and the generated
# package (imported as openbinlog/ksyharness/binlogksy) side by side.
rm -rf "$BUILD/go-harness"
mkdir -p "$BUILD/go-harness/binlogksy"
cp "$HERE"/harness/go/{go.mod,go.sum,main.go} "$BUILD/go-harness/"
cp "$BUILD"/go/*.go "$BUILD/go-harness/binlogksy/"
(cd "$BUILD/go-harness" && go build -o harness .)
