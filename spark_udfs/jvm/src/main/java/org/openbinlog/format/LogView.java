package org.openbinlog.format;

import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * The listing of a log directory and its segments, opened (OPEN of readers §10.2.2) and with their
 * headers checked (format §3.4, legacy-v1 §B.3) once each. A blank last segment is not present.
 */
final class LogView {
    static final int MAX_LOG_NUMBER = 99_999_999;
    private static final Pattern SEGMENT = Pattern.compile("[0-9]{8}\\.dat(\\.gz|\\.zst)?");
    private static final String[] COMPRESSED = {".gz", ".zst"};
    /** Listings while the segment a listing ends with is removed before it is opened (retention). */
    private static final int MAX_LISTINGS = 8;

    final Storage storage;
    private TreeSet<Integer> present = new TreeSet<>();
    private int blank;
    private boolean lock;
    private final Map<Integer, SegmentFile> open = new HashMap<>();
    private final Map<Integer, Header> headers = new HashMap<>();

    LogView(Storage storage) throws BinlogException {
        this.storage = storage;
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
            for (String name : names) {
                int n = number(name);
                if (n != 0) {
                    numbers.add(n);
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
                    return; // only compressed: not blank
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

    /** The log number of a segment's name, plain or compressed; 0 for any other name. */
    static int number(String name) {
        // 00000000.dat names no segment: log number 0 is never used.
        return SEGMENT.matcher(name).matches() ? Integer.parseInt(name.substring(0, 8)) : 0;
    }

    /** Format §3.5: at most 256 bytes, all zero, a file of no bytes included. */
    private static boolean blank(SegmentFile s) throws BinlogException {
        return s.size() <= Header.SIZE && s.firstNonZero(0) == s.size();
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
     * OPEN(n) of readers §10.2.2: the plain file, else {@code unsupported_feature} when only a compressed
     * form exists; when no name of n exists, the directory is listed again, and n is absent (null)
     * unless the fresh listing shows it, when a second failure is {@code io_error}.
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

    /** Segment n's checked header; null when n is absent. */
    Header header(int n) throws BinlogException {
        Header h = headers.get(n);
        if (h != null) {
            return h;
        }
        SegmentFile s = segment(n);
        if (s == null) {
            return null;
        }
        h = read(s);
        headers.put(n, h);
        return h;
    }

    /** The header from the file, R-46 applied; the size taken after it, so the records it publishes lie within. */
    static Header read(SegmentFile s) throws BinlogException {
        byte[] b = s.head();
        s.stat();
        return Header.check(b, b.length, s.size(), s.log, s.file());
    }

    static String name(int n) {
        return String.format("%08d.dat", n);
    }

    private SegmentFile openFile(int n) throws BinlogException {
        SegmentFile s = open.get(n);
        if (s != null) {
            return s;
        }
        String name = name(n);
        try {
            s = new SegmentFile(storage, name, n, storage.size(name));
        } catch (NoSuchFileException e) {
            for (String suffix : COMPRESSED) {
                if (exists(name + suffix)) {
                    throw new BinlogException(ErrorClass.UNSUPPORTED_FEATURE, storage.describe(name + suffix), n, 0L,
                            null, "only a compressed form of the segment exists, and this reader reads plain ones");
                }
            }
            return null;
        } catch (IOException e) {
            throw new BinlogException(ErrorClass.IO_ERROR, storage.describe(name), n, null, null, e.toString(), e);
        }
        open.put(n, s);
        return s;
    }

    private boolean exists(String name) {
        try {
            storage.size(name);
            return true;
        } catch (NoSuchFileException e) {
            return false;
        } catch (IOException e) {
            return true; // it exists but cannot be read: it is still only the compressed form
        }
    }
}
