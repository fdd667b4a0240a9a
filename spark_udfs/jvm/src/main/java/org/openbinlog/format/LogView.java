package org.openbinlog.format;

import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * The listing of a log directory and its segments, opened (OPEN of readers §10.2.2) and with their
 * headers checked (format §3.4, legacy-v1 §B.3) once each. A blank last segment is not present.
 * Compressed segments are read as {@link Unpacking} says; {@link #close} drops what they unpacked.
 */
final class LogView implements AutoCloseable {
    static final int MAX_LOG_NUMBER = 99_999_999;
    private static final Pattern SEGMENT = Pattern.compile("[0-9]{8}\\.dat(\\.gz|\\.zst)?");
    private static final String[] COMPRESSED = {"gz", "zst"}; // in the order OPEN tries them
    /** Listings while the segment a listing ends with is removed before it is opened (retention). */
    private static final int MAX_LISTINGS = 8;
    /**
     * How long before a plan reads a header its file must have last changed for the check to be trusted later
     * ({@link CheckedHeaders}): more than the granularity of the coarsest file times (2 s), so that any change
     * after the read gives the file another time than the one its stamp holds.
     */
    static final long SETTLED_MS = 2_000;

    final Storage storage;
    private final Unpacking unpacking;
    private final Deque<CompressedSegment> live = new ArrayDeque<>();
    private TreeSet<Integer> present = new TreeSet<>();
    private int blank;
    private boolean lock;
    private final Map<Integer, SegmentFile> open = new HashMap<>();
    private final Map<Integer, Header> headers = new HashMap<>();
    /** The name OPEN finds first of each segment present, as the listing shows it. */
    private final Map<Integer, String> listed = new HashMap<>();
    /** The digest of the file each sealed header that passed its checks was read from ({@link CheckedHeaders}). */
    private final Map<Integer, Long> checked = new HashMap<>();
    private CheckedHeaders trusted = CheckedHeaders.NONE;

    LogView(Storage storage, Unpacking unpacking) throws BinlogException {
        this.storage = storage;
        this.unpacking = unpacking;
        list();
    }

    /** Lists the directory: the segments, plain or compressed (protocols §2.6), and whether LOCK is there. */
    void list() throws BinlogException {
        for (int attempt = 1; ; attempt++) {
            List<String> names;
            try {
                names = storage.list();
            } catch (IOException e) {
                throw new BinlogException(ErrorClass.IO_ERROR, storage.describe(""), null, null, null,
                        "cannot list the log directory: " + e, e);
            }
            TreeSet<Integer> numbers = new TreeSet<>();
            lock = names.contains("LOCK");
            listed.clear();
            for (String name : names) {
                int n = number(name);
                if (n != 0) {
                    numbers.add(n);
                    listed.merge(n, name, (a, b) -> rank(a) <= rank(b) ? a : b);
                }
            }
            blank = 0;
            present = numbers;
            if (numbers.isEmpty()) {
                return;
            }
            int last = numbers.last();
            SegmentFile s;
            try {
                s = openFile(last);
            } catch (BinlogException e) {
                if (e.errorClass == ErrorClass.UNSUPPORTED_FEATURE) {
                    return; // only compressed, in a form this reader does not read: not blank
                }
                throw e;
            }
            if (s == null && attempt < MAX_LISTINGS) {
                continue; // removed since the listing: list again
            }
            if (s != null && blank(s)) {
                numbers.remove(last);
                blank = last;
            }
            return;
        }
    }

    /** Where a segment's name comes in the order OPEN tries them ({@link #names}). */
    private static int rank(String name) {
        return name.length() == 12 ? 0 : 1 + java.util.Arrays.asList(COMPRESSED).indexOf(name.substring(13));
    }

    /** The log number of a segment's name, plain or compressed; 0 for any other name. */
    static int number(String name) {
        // 00000000.dat names no segment: log number 0 is never used.
        return SEGMENT.matcher(name).matches() ? Integer.parseInt(name.substring(0, 8)) : 0;
    }

    /**
     * Format §3.5: at most 256 bytes, all zero, a file of no bytes included. A compressed segment that cannot be
     * unpacked that far is not blank: the walk reports why where it opens it.
     */
    private static boolean blank(SegmentFile s) throws BinlogException {
        try {
            return s.sizeUpTo(Header.SIZE + 1) <= Header.SIZE && s.firstNonZero(0) == s.size();
        } catch (BinlogException e) {
            if (!s.compressed()) {
                throw e;
            }
            return false;
        }
    }

    boolean empty() {
        return present.isEmpty() && blank == 0;
    }

    boolean lock() {
        return lock;
    }

    int blank() {
        return blank;
    }

    boolean present(int n) {
        return present.contains(n);
    }

    List<Integer> presentSegments() {
        return List.copyOf(present);
    }

    /** The lowest segment present, or -1. */
    int lowest() {
        return present.isEmpty() ? -1 : present.first();
    }

    /** The lowest segment present above {@code n}, or -1. */
    int presentAbove(int n) {
        Integer m = present.higher(n);
        return m == null ? -1 : m;
    }

    /** The listing shows a segment numbered above {@code n}, blank or not (readers §10.2.2, NEXT step 4). */
    boolean listedAbove(int n) {
        return blank > n || presentAbove(n) >= 0;
    }

    /**
     * OPEN(n) of readers §10.2.2: the plain file, else the gzip copy, else the Zstandard one (protocols §2.6), or
     * {@code unsupported_feature} for a form this reader has no decoder of; when no name of n exists, the
     * directory is listed again, and n is absent (null) unless the fresh listing shows it, when a second failure
     * is {@code io_error}.
     */
    SegmentFile segment(int n) throws BinlogException {
        SegmentFile s = openFile(n);
        if (s != null) {
            return s;
        }
        list();
        if (!present(n) && blank != n) {
            return null;
        }
        s = openFile(n);
        if (s == null) {
            throw new BinlogException(ErrorClass.IO_ERROR, storage.describe(name(n)), n, null, null,
                    "the segment is listed but no name of it can be opened");
        }
        return s;
    }

    /**
     * Segment n's checked header; null when n is absent. A version 2 header that passes sealed is recorded with the
     * stamp its file had before it was read, if the file had not changed for {@link #SETTLED_MS} then: what
     * {@link #checked} hands a plan's parts.
     */
    Header header(int n) throws BinlogException {
        Header h = headers.get(n);
        if (h != null) {
            return h;
        }
        SegmentFile s = segment(n);
        if (s == null) {
            return null;
        }
        Storage.Stamp stamp = stamp(s.name);
        long now = System.currentTimeMillis();
        h = read(s);
        headers.put(n, h);
        boolean settled = stamp != null
                && (stamp.changedMs() == Storage.Stamp.CONTENT || stamp.changedMs() <= now - SETTLED_MS);
        if (settled && !h.legacy() && h.active.sealed()) {
            checked.put(n, CheckedHeaders.digest(s.name, stamp));
        }
        return h;
    }

    /** The sealed headers this view read and found passing, each with the digest of its file. */
    CheckedHeaders checked() {
        return new CheckedHeaders(checked);
    }

    /** A plan's checked headers, which {@link #unchanged} trusts. */
    void trust(CheckedHeaders plan) {
        trusted = plan;
    }

    /**
     * Whether segment n's header is known to pass without reading it: the plan checked it, sealed, in the file OPEN
     * finds for n now (the first of its names the listing shows), with the same stamp ({@link CheckedHeaders}).
     * Costs no read: a look at the file's attributes (on an object store, what the listing said).
     */
    boolean unchanged(int n) {
        String name = listed.get(n);
        Storage.Stamp now = name == null || trusted.size() == 0 ? null : stamp(name);
        return now != null && trusted.holds(n, CheckedHeaders.digest(name, now));
    }

    /** The storage's stamp of a file; null where it tells none, or cannot look. */
    private Storage.Stamp stamp(String name) {
        try {
            return storage.stamp(name);
        } catch (IOException e) {
            return null; // the header is read, and meets the failure if it lasts
        }
    }

    /** The header from the file, R-46 applied; the size taken after it, so the records it publishes lie within. */
    static Header read(SegmentFile s) throws BinlogException {
        byte[] b = s.head();
        s.stat();
        return Header.check(b, b.length, s.sizeUpTo(Header.SIZE), s.log, s.file());
    }

    static String name(int n) {
        return String.format("%08d.dat", n);
    }

    /** Every name of segment n, in the order OPEN tries them. */
    static List<String> names(int n) {
        List<String> all = new ArrayList<>(List.of(name(n)));
        for (String suffix : COMPRESSED) {
            all.add(name(n) + "." + suffix);
        }
        return all;
    }

    private SegmentFile openFile(int n) throws BinlogException {
        SegmentFile s = open.get(n);
        if (s != null) {
            return s;
        }
        String name = name(n);
        try {
            s = new SegmentFile(storage, name, n, storage.size(name), null);
        } catch (NoSuchFileException e) {
            s = openCompressed(n, name);
            if (s == null) {
                return null;
            }
        } catch (IOException e) {
            throw new BinlogException(ErrorClass.IO_ERROR, storage.describe(name), n, null, null, e.toString(), e);
        }
        open.put(n, s);
        return s;
    }

    /** The first compressed form of segment n that exists, or null. */
    private SegmentFile openCompressed(int n, String plain) throws BinlogException {
        for (String suffix : COMPRESSED) {
            String name = plain + "." + suffix;
            long stored;
            try {
                stored = storage.size(name);
            } catch (NoSuchFileException e) {
                continue;
            } catch (IOException e) {
                throw new BinlogException(ErrorClass.IO_ERROR, storage.describe(name), n, null, null, e.toString(), e);
            }
            Decompressor decompressor = unpacking.decompressor(suffix);
            if (decompressor == null) {
                throw new BinlogException(ErrorClass.UNSUPPORTED_FEATURE, storage.describe(name), n, 0L, null,
                        "only a compressed form of the segment exists, and this reader does not read ." + suffix);
            }
            return new SegmentFile(storage, name, n, stored,
                    new CompressedSegment(storage, name, n, decompressor, unpacking, live));
        }
        return null;
    }

    /** Drops the temporary files of compressed segments. */
    @Override
    public void close() {
        while (!live.isEmpty()) {
            live.peekFirst().release();
        }
    }
}
