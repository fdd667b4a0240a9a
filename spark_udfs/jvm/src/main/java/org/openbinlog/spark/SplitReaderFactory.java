package org.openbinlog.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.types.StructType;

/** Sent to executors: makes the reader of each task's split. */
final class SplitReaderFactory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;

    private final StructType readSchema;
    private final ReadOptions options;

    SplitReaderFactory(StructType readSchema, ReadOptions options) {
        this.readSchema = readSchema;
        this.options = options;
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
        return new SplitReader((SplitPartition) partition, Columns.kinds(readSchema, options), options);
    }
}
