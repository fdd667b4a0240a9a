package org.openbinlog.format;

/**
 * The rows a query can match, for {@link LogReader#plan(long, Bounds)}: indexes {@code lowIndex .. highIndex}
 * (unsigned) and timestamps {@code lowUs .. highUs} (microseconds), both inclusive. {@link #ALL} bounds
 * nothing; {@link #indexes} and {@link #times} bound one column. Bounds only leave rows out: a caller that
 * needs exactly the rows within them filters the rows it is given again.
 */
public record Bounds(long lowIndex, long highIndex, long lowUs, long highUs) implements java.io.Serializable {
    private static final long NO_HIGH_INDEX = -1; // 2^64 - 1 unsigned

    public static final Bounds ALL = new Bounds(0, NO_HIGH_INDEX, Long.MIN_VALUE, Long.MAX_VALUE);

    public static Bounds indexes(long low, long high) {
        return new Bounds(low, high, Long.MIN_VALUE, Long.MAX_VALUE);
    }

    public static Bounds times(long lowUs, long highUs) {
        return new Bounds(0, NO_HIGH_INDEX, lowUs, highUs);
    }

    boolean lowIndexBounded() {
        return lowIndex != 0;
    }

    boolean highIndexBounded() {
        return highIndex != NO_HIGH_INDEX;
    }

    boolean lowTimeBounded() {
        return lowUs != Long.MIN_VALUE;
    }

    boolean highTimeBounded() {
        return highUs != Long.MAX_VALUE;
    }

    /**
     * Whether a segment whose records carry indexes {@code baseIndex .. endIndex - 1} and, by W-9, timestamps
     * from {@code sinceUs} (its predecessor's {@code last_timestamp_us}; Long.MIN_VALUE when unknown) to
     * {@code untilUs} (its own at its end) may hold a row within the bounds.
     */
    boolean mayHold(long baseIndex, long endIndex, long sinceUs, long untilUs) {
        boolean indexes = (!highIndexBounded() || Long.compareUnsigned(baseIndex, highIndex) <= 0)
                && (!lowIndexBounded() || Long.compareUnsigned(endIndex, lowIndex) > 0);
        boolean times = (!highTimeBounded() || sinceUs <= highUs) && (!lowTimeBounded() || untilUs >= lowUs);
        return indexes && times;
    }
}
