#!/bin/sh
# The conformance testee of the Java reader core (spec/conformance.md §3.4); the runner appends "session".
# Jackson, for the protocol's JSON only, and zstd-jni, for Zstandard copies of segments, come from pyspark's jars.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
jars=$("$root/.venv/bin/python" -c 'import pyspark, os; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')
exec java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto \
    -cp "$root/build/jvm/openbinlog.jar:$(echo "$jars"/jackson-core-*.jar):$(echo "$jars"/jackson-databind-*.jar):$(echo "$jars"/jackson-annotations-*.jar):$(echo "$jars"/zstd-jni-*.jar)" \
    org.openbinlog.format.Testee "$@"
