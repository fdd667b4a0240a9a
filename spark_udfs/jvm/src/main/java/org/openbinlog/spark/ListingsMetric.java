package org.openbinlog.spark;

import org.apache.spark.sql.connector.metric.CustomSumMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;

/**
 * The listings of log directories the source's tasks made, summed over tasks (a request each on an object store):
 * a task lists a log directory once for its pieces, and again only where a walk asks for a fresh listing
 * ({@link TaskListing}).
 */
public final class ListingsMetric extends CustomSumMetric {
    static final String NAME = "binlogListings";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public String description() {
        return "log directory listings by the binlog source";
    }

    static CustomTaskMetric of(long listings) {
        return new CustomTaskMetric() {
            @Override
            public String name() {
                return NAME;
            }

            @Override
            public long value() {
                return listings;
            }
        };
    }
}
