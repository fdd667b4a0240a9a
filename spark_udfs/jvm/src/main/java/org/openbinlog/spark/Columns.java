package org.openbinlog.spark;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * The DataFrame's columns, the same as the Python source's (openbinlog_spark columns.py): the record fields and
 * {@code file}, then, in PERMISSIVE mode only, the corrupt-record column and {@code _error}.
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
    enum Kind { LOG, OFFSET, INDEX, ASQN, TIMESTAMP, PAYLOAD, FILE, CORRUPT, ERROR }

    private Columns() {}

    static StructType schema(ReadOptions options) {
        List<StructField> fields = new ArrayList<>(List.of(
            DataTypes.createStructField("log", DataTypes.IntegerType, true),
            DataTypes.createStructField("offset", DataTypes.LongType, true),
            DataTypes.createStructField("index", DataTypes.LongType, true),
            DataTypes.createStructField("asqn", DataTypes.LongType, true),
            DataTypes.createStructField("timestamp", DataTypes.TimestampType, true),
            DataTypes.createStructField("payload", DataTypes.BinaryType, true),
            DataTypes.createStructField("file", DataTypes.StringType, true)));
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
            String name = readSchema.fields()[i].name();
            if (name.equals(options.corruptRows())) {
                kinds[i] = Kind.CORRUPT;
            } else if (name.equals(ERROR_COLUMN)) {
                kinds[i] = Kind.ERROR;
            } else {
                kinds[i] = Kind.valueOf(name.toUpperCase(java.util.Locale.ROOT));
            }
        }
        return kinds;
    }
}
