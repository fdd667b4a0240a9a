#!/usr/bin/env bash
# Installs what compiling ksy/*.ksy and building the cross-check harnesses need:
# the npm compiler and runtime, the Kaitai Java runtime jar, the Go runtime module.
# Idempotent, and quick when everything is already in place.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUILD="$HERE/../../build/ksy"
JAVA_RUNTIME="$BUILD/lib/kaitai-struct-runtime-0.11.jar"

for tool in node npm java javac mvn go; do
  command -v "$tool" >/dev/null || { echo "setup.sh: '$tool' is not installed" >&2; exit 1; }
done

# npm ci wipes node_modules, so run it only when the lock file changed since the last one.
stamp="$HERE/node_modules/.lock-installed"
if ! cmp -s "$HERE/package-lock.json" "$stamp"; then
  (cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$HERE/package-lock.json" "$stamp"
fi

if [ ! -f "$JAVA_RUNTIME" ]; then
  mvn -B -q -Dstyle.color=never -f "$HERE/harness/java/pom.xml" \
    dependency:copy-dependencies -DoutputDirectory="$BUILD/lib"
fi

(cd "$HERE/harness/go" && go mod download)
