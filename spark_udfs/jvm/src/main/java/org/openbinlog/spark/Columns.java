package org.openbinlog.spark;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.openbinlog.format.Damage;
import org.openbinlog.format.Record;

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

    /** What a column of the read schema holds; rows are built for the columns Spark asked for only. */
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

    static InternalRow record(Kind[] kinds, Record r, UTF8String file) {
        Object[] values = new Object[kinds.length];
        for (int i = 0; i < kinds.length; i++) {
            values[i] = switch (kinds[i]) {
                case LOG -> r.log();
                case OFFSET -> r.offset();
                case INDEX -> r.index();
                case ASQN -> r.asqn();
                case TIMESTAMP -> r.checked() ? r.timestampUs() : null; // a version 1 record has no time
                case PAYLOAD -> r.payload();
                case FILE -> file;
                case CORRUPT, ERROR -> null;
            };
        }
        return new GenericInternalRow(values);
    }

    static InternalRow damage(Kind[] kinds, Damage d, UTF8String file, byte[] raw) {
        Object[] values = new Object[kinds.length];
        for (int i = 0; i < kinds.length; i++) {
            values[i] = switch (kinds[i]) {
                case LOG -> d.log();
                case OFFSET -> d.offset() < 0 ? null : d.offset(); // -1: no offset (a segment that is missing)
                case INDEX -> d.index();
                case FILE -> file;
                case CORRUPT -> raw;
                case ERROR -> new GenericInternalRow(new Object[] {
                    UTF8String.fromString(d.errorClass().specName()),
                    UTF8String.fromString(d.message()),
                    d.bytesSkipped(),
                    d.resumeIndex()});
                case ASQN, TIMESTAMP, PAYLOAD -> null;
            };
        }
        return new GenericInternalRow(values);
    }
}
