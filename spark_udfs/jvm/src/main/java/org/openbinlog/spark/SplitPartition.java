package org.openbinlog.spark;

import java.util.Map;

import org.apache.spark.sql.connector.read.InputPartition;
import org.openbinlog.format.Part;

/** One task's part of the log (the reader core's {@link Part}), and where the log lies. */
final class SplitPartition implements InputPartition {
    private static final long serialVersionUID = 1L;

    final String path;
    final Map<String, String> hadoop;
    final Part part;

    SplitPartition(String path, Map<String, String> hadoop, Part part) {
        this.path = path;
        this.hadoop = hadoop;
        this.part = part;
    }
}
