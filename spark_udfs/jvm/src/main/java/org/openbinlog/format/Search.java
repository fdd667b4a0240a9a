package org.openbinlog.format;

/**
 * The searches for a place where a record provably starts: the resynchronisation conditions 1 to 6 of
 * readers §10.4 and the boundary search of readers §10.5, which adds the continuity check. A search that
 * finds a position leaves the index and end of the record there in {@link #index} and {@link #end}.
 */
final class Search {
    long index;
    long end;
    private final RecordCheck follower = new RecordCheck();

    /**
     * The first {@code p >= from}, {@code p < limit}, that satisfies conditions 1 to 6 of readers §10.4 with
     * {@code S' = bound} and {@code low <= index < high} (unsigned); -1 when there is none. Every position is
     * tried, whatever the length of the record there (R-25: no search window).
     */
    long candidate(SegmentFile f, long from, long bound, long limit, long low, long high) throws BinlogException {
        if (Long.compareUnsigned(low, high) >= 0) {
            return -1; // no index satisfies condition 6
        }
        long p = from;
        while (p + RecordCheck.HEADER <= bound && p < limit) {
            int n = (int) Math.min(SegmentFile.WINDOW, bound - p);
            byte[] w = f.window(p, n);
            int base = f.at(p);
            int last = n - RecordCheck.HEADER;
            for (int i = 0; i <= last && p + i < limit; i++) {
                int h = base + i;
                if (w[h + 4] != RecordCheck.FRAME_DATA) {
                    continue;
                }
                long q = p + i;
                long length = Bytes.u4(w, h) & 0xffffffffL;
                long at = Bytes.u8(w, h + 8);
                if (length < RecordCheck.MIN_LENGTH || q + 4 + length > bound
                        || Long.compareUnsigned(at, low) < 0 || Long.compareUnsigned(at, high) >= 0
                        || Bytes.u4(w, h + 36) != f.masked(w, h, 36)) {
                    continue;
                }
                int stored = Bytes.u4(w, h + 32);
                if (f.maskedCrc(q + RecordCheck.HEADER, length - RecordCheck.MIN_LENGTH) == stored) {
                    index = at;
                    end = q + 4 + length;
                    return q;
                }
                w = f.window(p, n); // the payload's checksum may have moved the window
                base = f.at(p);
            }
            p += last + 1;
        }
        return -1;
    }

    /**
     * b(x) of readers §10.5 in a segment whose records start at 256 with index {@code low}: 256 when
     * {@code x <= 256}; otherwise the first candidate at or after x whose record ends at {@code bound} or is
     * followed by one that passes steps 1 to 6 of format §4.3.1 within it and carries the next index.
     */
    long boundary(SegmentFile f, long x, long bound, long low, long high) throws BinlogException {
        if (x <= Header.SIZE) {
            index = low;
            return Header.SIZE;
        }
        for (long from = x; ; ) {
            long p = candidate(f, from, bound, Long.MAX_VALUE, low, high);
            if (p < 0 || end == bound) {
                return p;
            }
            // Step 8 (the asqn) is no part of the continuity check: a previous asqn of MIN_VALUE passes it.
            ErrorClass c = follower.committed(f, end, bound, index + 1, Long.MIN_VALUE);
            if (c == null || c == ErrorClass.ASQN_NOT_INCREASING) {
                return p;
            }
            from = p + 1;
        }
    }
}
