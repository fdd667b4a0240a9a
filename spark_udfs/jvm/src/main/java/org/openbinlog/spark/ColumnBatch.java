package org.openbinlog.spark;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.vectorized.ColumnVectorUtils;
import org.apache.spark.sql.execution.vectorized.ConstantColumnVector;
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.execution.vectorized.WritableColumnVector;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.unsafe.types.UTF8String;
import org.openbinlog.format.Damage;

/**
 * Rows of the read schema written straight into Spark's column vectors, as its Parquet reader fills them, so
 * that Spark turns them into rows with its generated code. A batch holds the rows of one segment file: its
 * {@code file} column is one constant, and so is each partition column (one log directory's values, set when
 * the batch starts on another log's rows).
 * Reused: {@link #start} empties it for the next rows.
 */
final class ColumnBatch implements AutoCloseable {
    static final int ROWS = 4096;
    /** The payload and corrupt bytes after which a batch takes no more rows: a bound on its memory. */
    static final int BYTES = 1 << 20;

    private final ColumnarBatch batch;
    private final WritableColumnVector log;
    private final WritableColumnVector offset;
    private final WritableColumnVector index;
    private final WritableColumnVector asqn;
    private final WritableColumnVector timestamp;
    private final WritableColumnVector payload;
    private final ConstantColumnVector file;
    private final WritableColumnVector corrupt;
    private final WritableColumnVector error;
    private final List<ConstantColumnVector> values = new ArrayList<>();
    private InternalRow partitions;
    private int segment;
    private UTF8String fileName;
    private int rows;
    private long bytes;

    ColumnBatch(StructType readSchema, Columns.Kind[] kinds) {
        ColumnVector[] vectors = new ColumnVector[kinds.length];
        WritableColumnVector[] byKind = new WritableColumnVector[Columns.Kind.values().length];
        ConstantColumnVector constant = null;
        for (int i = 0; i < kinds.length; i++) {
            if (kinds[i] == Columns.Kind.FILE) {
                constant = new ConstantColumnVector(ROWS, DataTypes.StringType);
                vectors[i] = constant;
            } else if (kinds[i] == Columns.Kind.PARTITION) {
                ConstantColumnVector value = new ConstantColumnVector(ROWS, readSchema.fields()[i].dataType());
                values.add(value);
                vectors[i] = value;
            } else {
                byKind[kinds[i].ordinal()] = new OnHeapColumnVector(ROWS, readSchema.fields()[i].dataType());
                vectors[i] = byKind[kinds[i].ordinal()];
            }
        }
        batch = new ColumnarBatch(vectors);
        log = byKind[Columns.Kind.LOG.ordinal()];
        offset = byKind[Columns.Kind.OFFSET.ordinal()];
        index = byKind[Columns.Kind.INDEX.ordinal()];
        asqn = byKind[Columns.Kind.ASQN.ordinal()];
        timestamp = byKind[Columns.Kind.TIMESTAMP.ordinal()];
        payload = byKind[Columns.Kind.PAYLOAD.ordinal()];
        if (payload != null) {
            payload.arrayData().reserve(BYTES); // at once: grown by doubling from small, it allocates as much again
        }
        file = constant;
        corrupt = byKind[Columns.Kind.CORRUPT.ordinal()];
        error = byKind[Columns.Kind.ERROR.ordinal()];
    }

    /**
     * Empties the batch for rows of segment {@code segment}, whose file is {@code fileName}, of a log whose values
     * of the read schema's partition columns are {@code partitions}, in its order.
     */
    void start(int segment, UTF8String fileName, InternalRow partitions) {
        if (partitions != this.partitions) {
            for (int i = 0; i < values.size(); i++) {
                values.get(i).setNotNull(); // populate sets a null, never clears one: the last log's may be null
                ColumnVectorUtils.populate(values.get(i), partitions, i);
            }
            this.partitions = partitions;
        }
        this.segment = segment;
        this.fileName = fileName;
        rows = 0;
        bytes = 0;
        for (int i = 0; i < batch.numCols(); i++) {
            if (batch.column(i) instanceof WritableColumnVector vector) {
                vector.reset();
            }
        }
        if (file != null) {
            file.setUtf8String(fileName);
        }
    }

    /** Whether a row of segment {@code segment} whose file is {@code fileName} may be added. */
    boolean takes(int segment, UTF8String fileName) {
        return segment == this.segment && fileName.equals(this.fileName) && rows < ROWS && bytes < BYTES;
    }

    /** A record's row; its payload is {@code length} bytes of {@code b} from {@code at}, copied here. */
    void record(int log, long offset, long index, long asqn, long timestampUs, boolean checked, byte[] b, int at,
            int length) {
        int row = rows++;
        if (this.log != null) {
            this.log.putInt(row, log);
        }
        if (this.offset != null) {
            this.offset.putLong(row, offset);
        }
        if (this.index != null) {
            this.index.putLong(row, index);
        }
        if (this.asqn != null) {
            this.asqn.putLong(row, asqn);
        }
        if (timestamp != null) {
            if (checked) {
                timestamp.putLong(row, timestampUs);
            } else {
                timestamp.putNull(row); // a version 1 record has no time
            }
        }
        if (payload != null) {
            payload.putByteArray(row, b, at, length);
            bytes += length;
        }
        if (corrupt != null) {
            corrupt.putNull(row);
        }
        if (error != null) {
            error.putNull(row);
        }
    }

    /** A damage row (PERMISSIVE): {@code raw}, the bytes stepped over, for the corrupt-record column. */
    void damage(Damage d, byte[] raw) {
        int row = rows++;
        if (log != null) {
            log.putInt(row, d.log());
        }
        if (offset != null) {
            putLong(offset, row, d.offset() < 0 ? null : d.offset()); // -1: no offset (a missing segment)
        }
        if (index != null) {
            putLong(index, row, d.index());
        }
        for (WritableColumnVector none : new WritableColumnVector[] {asqn, timestamp, payload}) {
            if (none != null) {
                none.putNull(row);
            }
        }
        if (corrupt != null) {
            corrupt.putByteArray(row, raw);
            bytes += raw.length;
        }
        if (error != null) {
            error.getChild(0).putByteArray(row, d.errorClass().specName().getBytes(StandardCharsets.UTF_8));
            error.getChild(1).putByteArray(row, d.message().getBytes(StandardCharsets.UTF_8));
            error.getChild(2).putLong(row, d.bytesSkipped());
            putLong(error.getChild(3), row, d.resumeIndex());
        }
    }

    private static void putLong(WritableColumnVector vector, int row, Long value) {
        if (value == null) {
            vector.putNull(row);
        } else {
            vector.putLong(row, value);
        }
    }

    /** The rows added since {@link #start}, for Spark. */
    ColumnarBatch rows() {
        batch.setNumRows(rows);
        return batch;
    }

    @Override
    public void close() {
        batch.close();
    }
}
