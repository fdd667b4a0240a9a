package org.openbinlog.format;

import java.io.IOException;
import java.util.List;

/** One log directory, read by positioned reads: what the walk needs of a file system (readers §10.2.2, OPEN). */
public interface Storage {
    /** The entry names in the directory. */
    List<String> list() throws IOException;

    /** The size of entry {@code name}; {@link java.nio.file.NoSuchFileException} when it does not exist. */
    long size(String name) throws IOException;

    /** A positioned read: the number of bytes read, -1 at the end of the file. */
    int read(String name, long pos, byte[] buf, int off, int len) throws IOException;

    /** The full path or URI of an entry, for messages and the {@code file} column. */
    String describe(String name);

    /**
     * What the storage tells of entry {@code name} without reading it, as its last {@link #list} found it (or a
     * look at it now, where a listing tells names only); null where it tells nothing, or the entry is not there.
     * The default tells nothing: every header is then read where it is needed.
     */
    default Stamp stamp(String name) throws IOException {
        return null;
    }

    /**
     * Facts of one file that differ whenever its bytes may differ: {@code facts}, a digest of what changes with every
     * write, truncation or replacement of the file ({@link #of}: its size, modification and change times and
     * identity; an object store's ETag), and {@code changedMs}, when it last changed by the storage's clock, in ms
     * since the epoch: times that a storage keeps coarsely may stay the same over two changes close together.
     * {@link #CONTENT} there: {@code facts} include an identifier of the bytes themselves (an ETag), which no two
     * contents share however close in time.
     */
    record Stamp(long facts, long changedMs) {
        public static final long CONTENT = Long.MIN_VALUE;

        /** The stamp of a file with these facts, digested to 64 bits (a change of any of them changes it). */
        public static Stamp of(long changedMs, Object... facts) {
            long h = 0x9E3779B97F4A7C15L;
            for (Object fact : facts) {
                String text = String.valueOf(fact);
                h = mix(h ^ text.length());
                for (int i = 0; i < text.length(); i++) {
                    h = mix(h ^ text.charAt(i));
                }
            }
            return new Stamp(h, changedMs);
        }

        /** The 64-bit finalizer of MurmurHash3, after a step of SplitMix64. */
        static long mix(long h) {
            h += 0x9E3779B97F4A7C15L;
            h = (h ^ (h >>> 33)) * 0xFF51AFD7ED558CCDL;
            h = (h ^ (h >>> 33)) * 0xC4CEB9FE1A85EC53L;
            return h ^ (h >>> 33);
        }
    }
}
