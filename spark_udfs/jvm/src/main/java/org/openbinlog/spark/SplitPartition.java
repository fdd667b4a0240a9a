package org.openbinlog.spark;

import java.io.Serializable;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.openbinlog.format.CheckedHeaders;
import org.openbinlog.format.Part;

/**
 * One task: parts of logs read one after the other, packed as Spark packs the split files of its file sources
 * into one task (FilePartition): a segment's split, or several small segments, of one log or of several.
 */
final class SplitPartition implements InputPartition {
    private static final long serialVersionUID = 1L;

    /**
     * One of the reader core's {@link Part}s, where its log lies (its directory and the segment files the listing
     * selected there), the log's values of the partition columns the query reads, in its order, and the bytes the
     * part spans, by which tasks are packed. A segment removed after planning is reported by the parts that read
     * it, not by the NEXT of the segment before: {@code first}, the first part of its segment in the plan, reports
     * it where that leaves a hole; {@code nextRead}, the plan has parts of the segment after this part's;
     * {@code checked}, the headers the plan checked, which the part trusts in files unchanged since (one object for
     * the pieces of a log, serialized once with a task).
     */
    record Piece(String directory, List<String> names, Map<String, String> hadoop, Part part, InternalRow partitions,
            long bytes, boolean first, boolean nextRead, CheckedHeaders checked) implements Serializable {
        private static final long serialVersionUID = 1L;
    }

    final List<Piece> pieces;

    SplitPartition(List<Piece> pieces) {
        this.pieces = List.copyOf(pieces);
    }
}
