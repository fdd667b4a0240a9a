package org.openbinlog.format;

import java.io.IOException;
import java.util.Arrays;
import java.util.zip.CRC32C;

/**
 * One open segment file: its size {@code F} and positioned reads through a reused window, so that a record
 * costs no allocation (its payload goes to the sink in the window). Every failed or short read is
 * {@code io_error}: callers bound what they read by {@code F}, so a short read means the file changed,
 * never that it is truncated. A compressed segment (protocols §2.6) is read as its unpacked bytes, and its
 * {@code F} is theirs ({@link CompressedSegment}).
 */
final class SegmentFile {
    static final int WINDOW = 1 << 18;
    /** Reads of the commit slots while neither is valid. */
    private static final int SETTLE_READS = 8;

    final Storage storage;
    final String name;
    final int log;
    private long size; // of a compressed segment: the archive's
    private final CompressedSegment unpacked;
    // Taken at the first walk through the file: a part may check the headers of many segments below its own (those
    // changed since planning, or all where the storage tells no stamps), and a window each would hold a quarter MiB
    // per segment of the log.
    private byte[] window;
    private long windowAt;
    private int windowLength;
    private long limit = Long.MAX_VALUE;
    private final CRC32C crc = new CRC32C();

    SegmentFile(Storage storage, String name, int log, long size, CompressedSegment unpacked) {
        this.storage = storage;
        this.name = name;
        this.log = log;
        this.size = size;
        this.unpacked = unpacked;
    }

    String file() {
        return storage.describe(name);
    }

    boolean compressed() {
        return unpacked != null;
    }

    /** F; of a compressed segment, unpacked up to its end to be known. */
    long size() throws BinlogException {
        return unpacked == null ? size : unpacked.size();
    }

    /** {@code min(F, n)}; a compressed segment unpacks its header alone for an {@code n} within it, else to its end. */
    long sizeUpTo(long n) throws BinlogException {
        return unpacked == null ? Math.min(size, n) : unpacked.sizeUpTo(n);
    }

    /**
     * Of a compressed segment, drops what was unpacked (a failure met too): a later read unpacks it from its start
     * again, and meets what that read meets.
     */
    void release() {
        if (unpacked != null) {
            unpacked.release();
            windowLength = 0;
        }
    }

    /** The size of the file itself (of a compressed segment, the archive's): what sizing splits weighs. */
    long storedSize() {
        return size;
    }

    /**
     * The size again; the window is dropped, since bytes beyond an old commit point may have been written. A
     * compressed segment is sealed: its bytes do not change.
     */
    void stat() throws BinlogException {
        if (unpacked == null) {
            try {
                size = storage.size(name);
            } catch (IOException e) {
                throw ioError(null, e);
            }
        }
        windowLength = 0;
    }

    /**
     * Where the walk of one part stops needing bytes: a refill of the window reads beyond it only as far as a
     * request needs, so that a part reads about its own bytes. {@code Long.MAX_VALUE}: the file's end.
     */
    void limit(long end) {
        limit = end;
    }

    /** The window holding {@code [pos, pos + n)}, n at most the window's size, refilled when it does not. */
    byte[] window(long pos, int n) throws BinlogException {
        if (window == null) {
            window = new byte[WINDOW];
        }
        if (pos < windowAt || pos + n > windowAt + windowLength) {
            // The window reads no further than the walk needs; a compressed segment was checked to its end first.
            int want = (int) Math.max(0, sizeUpTo(Math.min(pos + WINDOW, limit)) - pos);
            windowAt = pos;
            windowLength = 0;
            readFully(pos, window, 0, Math.max(want, n));
            windowLength = Math.max(want, n);
        }
        return window;
    }

    /** Where {@code pos} lies in the array {@link #window} returned. */
    int at(long pos) {
        return (int) (pos - windowAt);
    }

    /** The masked CRC32C of {@code len} bytes of {@code b}, with this file's reused CRC. */
    int masked(byte[] b, int off, int len) {
        crc.reset();
        crc.update(b, off, len);
        return Checksums.mask((int) crc.getValue());
    }

    /** The masked CRC32C of {@code n} bytes at {@code pos}, read a window at a time. */
    int maskedCrc(long pos, long n) throws BinlogException {
        crc.reset();
        while (n > 0) {
            int piece = (int) Math.min(n, WINDOW);
            byte[] b = window(pos, piece);
            crc.update(b, at(pos), piece);
            pos += piece;
            n -= piece;
        }
        return Checksums.mask((int) crc.getValue());
    }

    /** {@code n} bytes at {@code pos}, more than the window holds, read into an array of their own. */
    byte[] copy(long pos, int n) throws BinlogException {
        byte[] out = new byte[n];
        readFully(pos, out, 0, n);
        return out;
    }

    /**
     * The header's bytes from the file (never the window), read again by R-46 while neither slot is valid. A
     * compressed segment unpacks its header and the byte after it alone here, as far as the blank check of OPEN reads
     * (format §3.5): failures in that range are met when the segment is opened, as the reference meets them.
     */
    byte[] head() throws BinlogException {
        int n = (int) Math.min(Header.SIZE, sizeUpTo(Header.SIZE + 1));
        byte[] b = new byte[n];
        readFully(0, b, 0, n);
        for (int reads = 1; reads < SETTLE_READS && Header.slotsToSettle(b, n); reads++) {
            byte[] again = new byte[n];
            readFully(0, again, 0, n);
            boolean same = Arrays.equals(b, again);
            b = again;
            if (same) {
                break;
            }
        }
        return b;
    }

    /** The offset of the first non-zero byte at or after {@code from}, or the size when there is none. */
    long firstNonZero(long from) throws BinlogException {
        long end = size();
        for (long pos = from; pos < end; ) {
            int n = (int) Math.min(WINDOW, end - pos);
            byte[] b = window(pos, n);
            int base = at(pos);
            for (int i = 0; i < n; i++) {
                if (b[base + i] != 0) {
                    return pos + i;
                }
            }
            pos += n;
        }
        return end;
    }

    private void readFully(long pos, byte[] b, int off, int n) throws BinlogException {
        int done = 0;
        try {
            while (done < n) {
                int got = unpacked == null ? storage.read(name, pos + done, b, off + done, n - done)
                        : unpacked.read(pos + done, b, off + done, n - done);
                if (got < 0) {
                    throw ioError(pos, new IOException("the file ended at " + (pos + done) + ", before its size"));
                }
                done += got;
            }
        } catch (BinlogException e) {
            throw e;
        } catch (IOException e) {
            throw ioError(pos, e);
        }
    }

    BinlogException ioError(Long offset, IOException cause) {
        return new BinlogException(ErrorClass.IO_ERROR, file(), log, offset, null, cause.getMessage(), cause);
    }
}
