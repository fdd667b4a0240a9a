package org.openbinlog.spark;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * The DataFrame's columns, the same as the Python source's (openbinlog_spark columns.py): the record fields and
 * {@code file}, the partition columns, then, in PERMISSIVE mode only, the corrupt-record column and {@code _error}.
 */
final class Columns {
    static final String ERROR_COLUMN = "_error";
    static final StructType ERROR_TYPE = new StructType(new StructField[] {
        DataTypes.createStructField("error_class", DataTypes.StringType, true),
        DataTypes.createStructField("message", DataTypes.StringType, true),
        DataTypes.createStructField("bytes_skipped", DataTypes.LongType, true),
        DataTypes.createStructField("resume_index", DataTypes.LongType, true),
    });

    /** What a column of the read schema holds; batches are filled for the columns Spark asked for only. */
    enum Kind { LOG, OFFSET, INDEX, ASQN, TIMESTAMP, PAYLOAD, FILE, PARTITION, CORRUPT, ERROR }

    private static final Map<String, Kind> RECORD = Map.of("log", Kind.LOG, "offset", Kind.OFFSET, "index",
            Kind.INDEX, "asqn", Kind.ASQN, "timestamp", Kind.TIMESTAMP, "payload", Kind.PAYLOAD, "file", Kind.FILE);

    private Columns() {}

    /** Whether {@code name} is one of the source's own columns, which no corrupt-record column may take. */
    static boolean named(String name) {
        return RECORD.containsKey(name) || name.equals(ERROR_COLUMN);
    }

    /** Names no partition column takes: the source's columns, and those of the Python source's report rows. */
    static Set<String> reserved(ReadOptions options) {
        Set<String> names = new HashSet<>(RECORD.keySet());
        names.addAll(List.of("error_class", "message", "bytes_skipped", "resume_index", ERROR_COLUMN,
                options.corruptColumn));
        return names;
    }

    /** The partition columns of a schema this class made. */
    static StructType partitions(StructType schema, ReadOptions options) {
        return new StructType(Arrays.stream(schema.fields())
                .filter(field -> kind(field.name(), options) == Kind.PARTITION)
                .toArray(StructField[]::new));
    }

    static StructType schema(ReadOptions options, StructType partitions) {
        List<StructField> fields = new ArrayList<>(List.of(
            DataTypes.createStructField("log", DataTypes.IntegerType, true),
            DataTypes.createStructField("offset", DataTypes.LongType, true),
            DataTypes.createStructField("index", DataTypes.LongType, true),
            DataTypes.createStructField("asqn", DataTypes.LongType, true),
            DataTypes.createStructField("timestamp", DataTypes.TimestampType, true),
            DataTypes.createStructField("payload", DataTypes.BinaryType, true),
            DataTypes.createStructField("file", DataTypes.StringType, true)));
        fields.addAll(List.of(partitions.fields()));
        String corrupt = options.corruptRows();
        if (corrupt != null) {
            fields.add(DataTypes.createStructField(corrupt, DataTypes.BinaryType, true));
            fields.add(DataTypes.createStructField(ERROR_COLUMN, ERROR_TYPE, true));
        }
        return new StructType(fields.toArray(new StructField[0]));
    }

    static Kind[] kinds(StructType readSchema, ReadOptions options) {
        Kind[] kinds = new Kind[readSchema.fields().length];
        for (int i = 0; i < kinds.length; i++) {
            kinds[i] = kind(readSchema.fields()[i].name(), options);
        }
        return kinds;
    }

    private static Kind kind(String name, ReadOptions options) {
        if (name.equals(options.corruptRows())) {
            return Kind.CORRUPT;
        }
        if (name.equals(ERROR_COLUMN)) {
            return Kind.ERROR;
        }
        return RECORD.getOrDefault(name, Kind.PARTITION);
    }
}
