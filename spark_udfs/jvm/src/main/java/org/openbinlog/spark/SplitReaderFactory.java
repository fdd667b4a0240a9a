package org.openbinlog.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/** Sent to executors: makes the reader of each task's split, which reads column batches only. */
final class SplitReaderFactory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;

    private final StructType readSchema;
    private final ReadOptions options;

    SplitReaderFactory(StructType readSchema, ReadOptions options) {
        this.readSchema = readSchema;
        this.options = options;
    }

    @Override
    public boolean supportColumnarReads(InputPartition partition) {
        return true;
    }

    @Override
    public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
        return new SplitReader((SplitPartition) partition, readSchema, options);
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
        throw new UnsupportedOperationException("the binlog-jvm source reads column batches only");
    }
}
