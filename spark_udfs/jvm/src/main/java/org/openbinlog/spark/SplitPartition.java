package org.openbinlog.spark;

import java.util.List;
import java.util.Map;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.openbinlog.format.Part;

/**
 * One task's part of a log (the reader core's {@link Part}), where the log lies: its directory and the segment
 * files the listing selected there; and the log's values of the partition columns the query reads, in its order.
 */
final class SplitPartition implements InputPartition {
    private static final long serialVersionUID = 1L;

    final String directory;
    final List<String> names;
    final Map<String, String> hadoop;
    final Part part;
    final InternalRow partitions;

    SplitPartition(String directory, List<String> names, Map<String, String> hadoop, Part part,
            InternalRow partitions) {
        this.directory = directory;
        this.names = names;
        this.hadoop = hadoop;
        this.part = part;
        this.partitions = partitions;
    }
}
