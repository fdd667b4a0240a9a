package org.openbinlog.spark;

import org.apache.spark.sql.sources.EqualTo;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.sources.GreaterThan;
import org.apache.spark.sql.sources.GreaterThanOrEqual;
import org.apache.spark.sql.sources.In;
import org.apache.spark.sql.sources.LessThan;
import org.apache.spark.sql.sources.LessThanOrEqual;

/** The comparisons of one column with values that the source's pruning and bounds read. */
final class Comparisons {
    private Comparisons() {}

    /** The values {@code filter} compares its column with; null for a filter that is no such comparison. */
    static Object[] values(Filter filter) {
        if (filter instanceof In in) {
            return in.values();
        }
        if (filter instanceof EqualTo f) {
            return new Object[] {f.value()};
        }
        if (filter instanceof GreaterThan f) {
            return new Object[] {f.value()};
        }
        if (filter instanceof GreaterThanOrEqual f) {
            return new Object[] {f.value()};
        }
        if (filter instanceof LessThan f) {
            return new Object[] {f.value()};
        }
        if (filter instanceof LessThanOrEqual f) {
            return new Object[] {f.value()};
        }
        return null;
    }

    /** Whether {@code filter} keeps values equal to the ones it names (=, IN), not a range. */
    static boolean pointwise(Filter filter) {
        return filter instanceof EqualTo || filter instanceof In;
    }
}
