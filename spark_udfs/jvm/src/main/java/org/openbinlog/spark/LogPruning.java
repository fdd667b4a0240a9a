package org.openbinlog.spark;

import java.util.Arrays;

import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.sources.GreaterThan;
import org.apache.spark.sql.sources.GreaterThanOrEqual;
import org.apache.spark.sql.sources.LessThan;
import org.apache.spark.sql.sources.LessThanOrEqual;

/**
 * Pruning whole segments by a filter on {@code log}. Every row read from segment N carries log N, except the
 * report of the chain check at its end, which may name N+1 (spec protocols 8.6): a segment is kept while a
 * filter may hold for N or N+1, so pruning never removes a row the filter keeps.
 */
final class LogPruning {
    private static final String LOG = "log";

    private LogPruning() {}

    static boolean understands(Filter filter) {
        return Arrays.asList(filter.references()).equals(java.util.List.of(LOG)) && logs(filter) != null;
    }

    /** Whether rows read from segment {@code log} may pass every filter on {@code log}. */
    static boolean keeps(Filter[] filters, long log) {
        for (Filter filter : filters) {
            if (understands(filter) && !holds(filter, log) && !holds(filter, log + 1)) {
                return false;
            }
        }
        return true;
    }

    private static boolean holds(Filter filter, long log) {
        long[] values = logs(filter);
        if (values == null) {
            return true;
        }
        if (Comparisons.pointwise(filter)) {
            return Arrays.stream(values).anyMatch(v -> v == log);
        }
        long bound = values[0];
        if (filter instanceof GreaterThan) {
            return log > bound;
        }
        if (filter instanceof GreaterThanOrEqual) {
            return log >= bound;
        }
        if (filter instanceof LessThan) {
            return log < bound;
        }
        return log <= bound;
    }

    /** The log numbers a comparison names; null for a filter this pruning does not judge. */
    private static long[] logs(Filter filter) {
        Object[] values = Comparisons.values(filter);
        return values != null && Arrays.stream(values).allMatch(Integer.class::isInstance)
                ? Arrays.stream(values).mapToLong(v -> (Integer) v).toArray()
                : null;
    }
}
