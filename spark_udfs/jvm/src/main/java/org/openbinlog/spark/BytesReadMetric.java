package org.openbinlog.spark;

import org.apache.spark.sql.connector.metric.CustomSumMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;

/** The bytes the source read from storage, summed over tasks (shown in the SQL tab and by the query's metrics). */
public final class BytesReadMetric extends CustomSumMetric {
    static final String NAME = "binlogBytesRead";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public String description() {
        return "bytes read by the binlog source";
    }

    static CustomTaskMetric of(long bytes) {
        return new CustomTaskMetric() {
            @Override
            public String name() {
                return NAME;
            }

            @Override
            public long value() {
                return bytes;
            }
        };
    }
}
