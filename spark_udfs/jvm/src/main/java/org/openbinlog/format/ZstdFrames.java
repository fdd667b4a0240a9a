package org.openbinlog.format;

import java.io.IOException;

/**
 * Whether a Zstandard archive ends where a frame ends (RFC 8878 §3.1), walked by its frame and block headers
 * without decoding. A decoder that meets the end of its input after a finished frame may end without an error
 * even when bytes of a cut frame follow (zstd-jni, as the reference's python-zstandard at any cut): where the
 * decoded stream ends, this tells a whole archive from a cut one, which R-43 makes {@code bad_header}.
 */
final class ZstdFrames {
    private static final int MAGIC = 0xFD2FB528;
    private static final int SKIPPABLE = 0x184D2A50; // the last four bits are free (RFC 8878 §3.1.2)

    private final Storage storage;
    private final String name;
    private long at;

    private ZstdFrames(Storage storage, String name) {
        this.storage = storage;
        this.name = name;
    }

    static boolean whole(Storage storage, String name) throws IOException {
        return new ZstdFrames(storage, name).walk();
    }

    private boolean walk() throws IOException {
        byte[] b = new byte[4];
        for (int got; (got = read(b, 4)) > 0; ) {
            if (got < 4) {
                return false;
            }
            int magic = littleEndian(b, 4);
            if ((magic & ~0xF) == SKIPPABLE) {
                if (read(b, 4) < 4 || !skip(littleEndian(b, 4) & 0xffffffffL)) {
                    return false;
                }
                continue;
            }
            if (magic != MAGIC || read(b, 1) < 1) {
                return false;
            }
            int descriptor = b[0] & 0xff;
            int singleSegment = descriptor >> 5 & 1;
            boolean checksum = (descriptor >> 2 & 1) != 0;
            int window = 1 - singleSegment;
            int dictionary = new int[] {0, 1, 2, 4}[descriptor & 3];
            int contentSize = new int[] {singleSegment, 2, 4, 8}[descriptor >> 6];
            if (!skip(window + dictionary + contentSize)) {
                return false;
            }
            boolean last = false;
            while (!last) {
                if (read(b, 3) < 3) {
                    return false;
                }
                int header = littleEndian(b, 3);
                last = (header & 1) != 0;
                if (!skip((header >> 1 & 3) == 1 ? 1 : header >>> 3)) { // an RLE block holds one byte
                    return false;
                }
            }
            if (checksum && !skip(4)) {
                return false;
            }
        }
        return true;
    }

    /** Up to {@code n} bytes into {@code b}: fewer only where the archive ends. */
    private int read(byte[] b, int n) throws IOException {
        int done = 0;
        while (done < n) {
            int got = storage.read(name, at + done, b, done, n - done);
            if (got < 0) {
                break;
            }
            done += got;
        }
        at += done;
        return done;
    }

    /** Moves {@code n} bytes on; false when the archive ends before. */
    private boolean skip(long n) throws IOException {
        if (n == 0) {
            return true;
        }
        at += n - 1;
        return read(new byte[1], 1) == 1;
    }

    private static int littleEndian(byte[] b, int n) {
        int v = 0;
        for (int i = n - 1; i >= 0; i--) {
            v = v << 8 | (b[i] & 0xff);
        }
        return v;
    }
}
