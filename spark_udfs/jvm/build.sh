#!/bin/sh
# Compiles the JVM sources (the reader core org.openbinlog.format and the Spark source org.openbinlog.spark)
# into build/jvm/classes and packs them into build/jvm/openbinlog.jar, at the repository root.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
PYSPARK_JARS=$(.venv/bin/python -c 'import pyspark, os; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')
out="$root/build/jvm"
rm -rf "$out/classes"
mkdir -p "$out/classes"
find spark_udfs/jvm/src/main/java -name '*.java' > "$out/sources.txt"
# -Xlint:-path: pyspark's jars name Class-Path jars that pyspark does not ship (derby, scala-reflect).
javac --release 17 -Xlint:all -Xlint:-path -Werror -cp "$PYSPARK_JARS/*" -d "$out/classes" @"$out/sources.txt"
# The resources: the DataSourceRegister service entry that makes format("binlog-jvm") known to Spark.
jar --create --file "$out/openbinlog.jar" -C "$out/classes" . -C spark_udfs/jvm/src/main/resources .
