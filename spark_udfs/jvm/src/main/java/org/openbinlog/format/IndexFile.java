package org.openbinlog.format;

import java.io.IOException;
import java.util.Arrays;
import java.util.function.Predicate;

/**
 * The sparse index {@code NNNNNNNN.idx} of a finished version 2 segment (index §18.2), once it passed the index
 * check of index §18.5. Entries are read and checked one at a time, as a binary search visits them. An index
 * that is missing, cannot be read or fails a check is no index: never damage, never a change to what a reader
 * returns. Whether an entry may be used is the entry check, the landing walk of {@link Walk}.
 */
final class IndexFile {
    static final int HEADER = 72;
    static final int ENTRY = 32;
    private static final byte[] SIGNATURE = {(byte) 0x89, 0x42, 0x4c, 0x49, 0x44, 0x58, 0x0d, 0x0a};

    /** One entry that passed its {@code entry_crc}: the index, offset and timestamp of a data record. */
    record Entry(long index, long offset, long timestampUs) {}

    private final Storage storage;
    private final String name;
    final long entryCount;

    private IndexFile(Storage storage, String name, long entryCount) {
        this.storage = storage;
        this.name = name;
        this.entryCount = entryCount;
    }

    static String name(int log) {
        return String.format("%08d.idx", log);
    }

    /**
     * Conditions 2 and 3 of the index check (index §18.5) for segment {@code log} with header {@code h}, end
     * {@code s} and end index {@code endIndex}; condition 1 (finished, END computed) is the caller's. Null when
     * the file is missing, unreadable or fails.
     */
    static IndexFile open(Storage storage, int log, Header h, long s, long endIndex) {
        String name = name(log);
        byte[] b = new byte[HEADER];
        long size;
        try {
            size = storage.size(name);
            if (size < HEADER || read(storage, name, 0, b) < HEADER) {
                return null; // a torn header
            }
        } catch (IOException e) {
            return null; // missing or unreadable: no index
        }
        long count = Bytes.u8(b, 56);
        long records = endIndex - h.baseIndex; // I_S >= base_index for a segment END accepted
        boolean describes = Bytes.u4(b, 68) == Checksums.masked(b, 0, 68)
                && Arrays.equals(b, 0, 8, SIGNATURE, 0, 8)
                && Bytes.u2(b, 8) == 1 // another version may be defined later: ignored
                && Bytes.u2(b, 10) == h.version
                && Bytes.u4(b, 12) == log
                && Arrays.equals(b, 16, 32, h.logId, 0, 16)
                && Bytes.u8(b, 32) == h.baseIndex
                && Bytes.u8(b, 40) == s
                && Bytes.u8(b, 48) == endIndex;
        // Condition 3, without a product that can overflow: F - 72 a multiple of 32, then the quotient compared.
        boolean whole = Bytes.u4(b, 64) != 0
                && Long.compareUnsigned(count, records) <= 0
                && (size - HEADER) % ENTRY == 0
                && (size - HEADER) / ENTRY == count;
        return describes && whole ? new IndexFile(storage, name, count) : null;
    }

    /** Entry {@code k} (0 ≤ k < entryCount), or null when it cannot be read or its {@code entry_crc} fails. */
    Entry entry(long k) {
        byte[] b = new byte[ENTRY];
        try {
            if (read(storage, name, HEADER + ENTRY * k, b) < ENTRY) {
                return null;
            }
        } catch (IOException e) {
            return null;
        }
        if (Bytes.u4(b, 28) != Checksums.masked(b, 0, 28)) {
            return null;
        }
        return new Entry(Bytes.u8(b, 0), Bytes.u8(b, 8), Bytes.u8(b, 16));
    }

    /**
     * The last {@code k} whose entry is {@code before} the target (SEEK with an index, index §18.5), by binary
     * search: -1 when none is, -2 when an entry it visits fails its {@code entry_crc} (the index is then given
     * up). On a lying index it still returns some entry; only the entry check decides whether it is used.
     */
    long lastBefore(Predicate<Entry> before) {
        long low = -1;
        long high = entryCount - 1;
        while (low < high) {
            long middle = low + (high - low + 1) / 2;
            Entry found = entry(middle);
            if (found == null) {
                return -2;
            }
            if (before.test(found)) {
                low = middle;
            } else {
                high = middle - 1;
            }
        }
        return low;
    }

    private static int read(Storage storage, String name, long pos, byte[] b) throws IOException {
        int done = 0;
        while (done < b.length) {
            int got = storage.read(name, pos + done, b, done, b.length - done);
            if (got < 0) {
                break;
            }
            done += got;
        }
        return done;
    }
}
