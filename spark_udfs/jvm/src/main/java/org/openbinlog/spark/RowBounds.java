package org.openbinlog.spark;

import java.sql.Timestamp;
import java.time.Instant;
import java.util.Arrays;

import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.sources.GreaterThan;
import org.apache.spark.sql.sources.GreaterThanOrEqual;
import org.apache.spark.sql.sources.LessThan;
import org.apache.spark.sql.sources.LessThanOrEqual;
import org.openbinlog.format.Bounds;

/**
 * The index and time bounds a query's filters give the planner ({@link Bounds}). Spark evaluates every filter
 * again on the rows read, so bounds only have to hold every row a filter keeps, and may hold more.
 *
 * <p>Spark's long holds indexes of 2^63 and more as negative numbers, which {@code index < v} keeps: an upper
 * bound on the index is therefore used only with a lower bound of 0 or more, which excludes them; a comparison
 * with a negative long is not used at all.
 */
final class RowBounds {
    private static final String INDEX = "index";
    private static final String TIMESTAMP = "timestamp";

    private long lowIndex = 0;
    private Long highIndex;
    private boolean lowIndexGiven;
    private long lowUs = Long.MIN_VALUE;
    private long highUs = Long.MAX_VALUE;

    private RowBounds() {}

    /** Whether the filter is one these bounds use. */
    static boolean understands(Filter filter) {
        String[] columns = filter.references();
        if (columns.length != 1 || !(columns[0].equals(INDEX) || columns[0].equals(TIMESTAMP))) {
            return false;
        }
        long[] values = values(filter);
        return values != null && (columns[0].equals(TIMESTAMP) || Arrays.stream(values).allMatch(v -> v >= 0));
    }

    static Bounds of(Filter[] filters) {
        RowBounds bounds = new RowBounds();
        for (Filter filter : filters) {
            if (understands(filter)) {
                bounds.take(filter);
            }
        }
        return bounds.bounds();
    }

    private void take(Filter filter) {
        long[] values = values(filter);
        long min = Arrays.stream(values).min().orElseThrow();
        long max = Arrays.stream(values).max().orElseThrow();
        boolean index = filter.references()[0].equals(INDEX);
        long low = Long.MIN_VALUE;
        long high = Long.MAX_VALUE;
        if (Comparisons.pointwise(filter)) {
            low = min;
            high = max;
        } else if (filter instanceof GreaterThan) {
            low = min == Long.MAX_VALUE ? min : min + 1;
        } else if (filter instanceof GreaterThanOrEqual) {
            low = min;
        } else if (filter instanceof LessThan) {
            high = max == Long.MIN_VALUE ? max : max - 1;
        } else {
            high = max;
        }
        if (index) {
            if (low != Long.MIN_VALUE) {
                lowIndex = Math.max(lowIndex, low);
                lowIndexGiven = true;
            }
            if (high != Long.MAX_VALUE) {
                highIndex = highIndex == null ? high : Math.min(highIndex, high);
            }
        } else {
            lowUs = Math.max(lowUs, low);
            highUs = Math.min(highUs, high);
        }
    }

    private Bounds bounds() {
        boolean upper = lowIndexGiven && highIndex != null && highIndex >= 0;
        return new Bounds(lowIndex, upper ? highIndex : Bounds.ALL.highIndex(), lowUs, highUs);
    }

    /** The values a comparison names, as longs (a time in microseconds); null for a filter not used. */
    private static long[] values(Filter filter) {
        Object[] values = Comparisons.values(filter);
        if (values == null || values.length == 0) {
            return null;
        }
        long[] longs = new long[values.length];
        for (int i = 0; i < values.length; i++) {
            Object v = values[i];
            if (v instanceof Long l) {
                longs[i] = l;
            } else if (v instanceof Integer n) {
                longs[i] = n;
            } else if (v instanceof Timestamp t) {
                longs[i] = Math.floorDiv(t.getTime(), 1000) * 1_000_000 + t.getNanos() / 1000;
            } else if (v instanceof Instant t) {
                longs[i] = t.getEpochSecond() * 1_000_000 + t.getNano() / 1000;
            } else {
                return null;
            }
        }
        return longs;
    }
}
