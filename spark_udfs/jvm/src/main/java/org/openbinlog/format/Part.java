package org.openbinlog.format;

/**
 * One task's share of a read of the whole log by parallel readers ({@link LogReader#plan}): the split
 * {@code [start, stop)} of segment {@code log} (readers §10.5), where {@code stop} {@link #TO_END} means the
 * segment end and the chain check after it; {@code carriedAsqn} is the A the walk carries into the segment's
 * first record, as its predecessor's end says (protocols §6.1); {@code endRaises}: the segment's END raises
 * (a damaged successor header), so it is one part, which walks it as READ-LOG does up to where END raises: at the
 * first record damage of a tolerant walk (RESYNC step 1), or at C. {@code log} 0: the whole
 * log, read in order (a log with version 1 segments, whose records are numbered by counting, legacy-v1 §B.5).
 *
 * <p>{@code startIndex} and {@code stopIndex} other than {@link #NO_ENTRY}: that end of the split is a checked
 * entry of the segment's index (index §18.5), a record boundary whose index is known, so no boundary search is
 * made there: the walk starts with E := startIndex and A := -1 (SEEK with an index), and stops on landing at
 * {@code stop}, b(stop) being stop with stopIndex (what the boundary search finds at a record boundary).
 *
 * <p>{@code readTo}: where the plan's read of the segment ends, {@link #TO_END} but where bounds narrowed it to a
 * checked entry (index §18.5): what lies from there on is left out, and no part of the segment looks at it.
 */
public record Part(int log, long start, long stop, long carriedAsqn, boolean endRaises, long startIndex,
        long stopIndex, long readTo) implements java.io.Serializable {
    public static final long TO_END = Long.MAX_VALUE;
    /** No entry: 2^64 - 1, an index no entry carries (entries lie below I_S). */
    static final long NO_ENTRY = -1;

    /** A part whose ends are found by the boundary search (or are the segment's first record and end). */
    public Part(int log, long start, long stop, long carriedAsqn, boolean endRaises) {
        this(log, start, stop, carriedAsqn, endRaises, NO_ENTRY, NO_ENTRY);
    }

    /** A part of a segment read up to its end. */
    public Part(int log, long start, long stop, long carriedAsqn, boolean endRaises, long startIndex,
            long stopIndex) {
        this(log, start, stop, carriedAsqn, endRaises, startIndex, stopIndex, TO_END);
    }

    static Part wholeLog() {
        return new Part(0, 0, TO_END, -1, false);
    }

    public boolean whole() {
        return log == 0;
    }

    boolean first() {
        return start <= Header.SIZE && startIndex == NO_ENTRY;
    }

    boolean last() {
        return stop == TO_END;
    }
}
