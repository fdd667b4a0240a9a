package org.openbinlog.format;

/**
 * One task's share of a read of the whole log by parallel readers ({@link LogReader#plan}): the split
 * {@code [start, stop)} of segment {@code log} (readers §10.5), where {@code stop} {@link #TO_END} means the
 * segment end and the chain check after it; {@code carriedAsqn} is the A the walk carries into the segment's
 * first record, as its predecessor's end says (protocols §6.1), and {@code from} that predecessor (0: none)
 * with the A carried into it. {@code log} 0: the whole log, read in order (a log with version 1 segments,
 * whose records are numbered by counting, legacy-v1 §B.5).
 */
public record Part(int log, long start, long stop, long carriedAsqn, int from, long fromCarriedAsqn)
        implements java.io.Serializable {
    public static final long TO_END = Long.MAX_VALUE;

    static Part wholeLog() {
        return new Part(0, 0, TO_END, -1, 0, -1);
    }

    public boolean whole() {
        return log == 0;
    }

    boolean first() {
        return start <= Header.SIZE;
    }

    boolean last() {
        return stop == TO_END;
    }
}
