package org.openbinlog.format;

/**
 * The record checks: steps 1 to 8 of format §4.3.1 (tail mode, §4.3.2, is the same check without a bound)
 * and steps 1 to 3 of legacy-v1 §B.4. A check returns the class of the first step that fails, or null; the
 * fields then hold the record. One instance is reused for every record of a walk.
 */
final class RecordCheck {
    static final int HEADER = 40;
    static final long MIN_LENGTH = 36;
    static final long MAX_LENGTH = (1L << 31) - 1;
    static final int FRAME_DATA = 1;

    int frame;
    long index;
    long asqn;
    long timestampUs;
    long end;
    /** Where the record's payload starts; it runs to {@link #end}. */
    long payloadAt;

    /**
     * Steps 1 to 8 of format §4.3.1 for the record at {@code o} with bound {@code u}, expected index
     * {@code e} and previous asqn {@code a}.
     */
    ErrorClass committed(SegmentFile f, long o, long u, long e, long a) throws BinlogException {
        // min(u, F) - o < 40, asked only up to o + 40 (a compressed segment was unpacked to its end before, R-43).
        if (o > u || u - o < HEADER || f.sizeUpTo(o + HEADER) - o < HEADER) {
            return ErrorClass.TRUNCATED;
        }
        ErrorClass failed = header(f, o, u);
        if (failed != null) {
            return failed;
        }
        if (f.sizeUpTo(end) < end) {
            return ErrorClass.TRUNCATED;
        }
        byte[] w = f.window(o, HEADER);
        int h = f.at(o);
        payloadAt = o + HEADER;
        index = Bytes.u8(w, h + 8);
        asqn = Bytes.u8(w, h + 16);
        timestampUs = Bytes.u8(w, h + 24);
        int stored = Bytes.u4(w, h + 32);
        if (f.maskedCrc(o + HEADER, end - o - HEADER) != stored) {
            return ErrorClass.CHECKSUM_MISMATCH;
        }
        if (index != e) {
            return ErrorClass.INDEX_DISCONTINUITY;
        }
        if (!asqnFollows(asqn, a)) {
            return ErrorClass.ASQN_NOT_INCREASING;
        }
        return null;
    }

    /**
     * Steps 2 to 4 of format §4.3.1 for the record header at {@code o}, whose 40 bytes exist, with bound {@code u}:
     * what a record's header alone tells; {@link #frame} and {@link #end} then hold the record's.
     */
    ErrorClass header(SegmentFile f, long o, long u) throws BinlogException {
        byte[] w = f.window(o, HEADER);
        int h = f.at(o);
        if (Bytes.u4(w, h + 36) != f.masked(w, h, 36)) {
            return ErrorClass.CHECKSUM_MISMATCH;
        }
        frame = w[h + 4] & 0xff;
        if ((frame != FRAME_DATA && frame < 128) || w[h + 5] != 0 || w[h + 6] != 0 || w[h + 7] != 0) {
            return ErrorClass.UNSUPPORTED_FEATURE;
        }
        long length = Bytes.u4(w, h) & 0xffffffffL;
        // u >= o + 40 here, so u - o - 4 cannot wrap.
        if (length < MIN_LENGTH || length > MAX_LENGTH || length > u - o - 4) {
            return ErrorClass.LENGTH_OUT_OF_RANGE;
        }
        end = o + 4 + length;
        return null;
    }

    /** Step 8 of format §4.3.1: no asqn, or one above the previous. */
    static boolean asqnFollows(long asqn, long previous) {
        return asqn == -1 || (asqn >= 0 && asqn > previous);
    }

    /** Steps 1 to 3 of legacy-v1 §B.4 for the record at {@code p} of a version 1 segment ending at {@code s}. */
    ErrorClass legacy(SegmentFile f, long p, long s) throws BinlogException {
        if (p + 4 > s || f.sizeUpTo(p + 4) < p + 4) {
            return ErrorClass.TRUNCATED;
        }
        byte[] w = f.window(p, 4);
        long length = Bytes.u4(w, f.at(p));
        if (length < 0 || p + 4 + length > s) {
            return ErrorClass.LENGTH_OUT_OF_RANGE;
        }
        end = p + 4 + length;
        if (f.sizeUpTo(end) < end) {
            return ErrorClass.TRUNCATED;
        }
        payloadAt = p + 4;
        return null;
    }
}
