package org.openbinlog.format;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.util.zip.CRC32;
import java.util.zip.DataFormatException;
import java.util.zip.Inflater;
import java.util.zip.ZipException;

/**
 * The decompressed bytes of a gzip archive (RFC 1952), member after member, read as the reference reads them
 * (Python's gzip module): an empty archive holds no bytes; zero bytes between and after members are skipped; any
 * other byte after a member must start one; the header CRC is skipped, the trailer's CRC-32 and size are checked
 * once the deflate stream has ended. The JDK's GZIPInputStream differs where a copy is damaged (it ignores bytes
 * after the last member and checks the header CRC), which would make the two readers disagree on damaged copies.
 */
final class GzipStream extends InputStream {
    static final String SUFFIX = "gz";
    static final Decompressor DECOMPRESSOR = new Decompressor() {
        @Override
        public String suffix() {
            return SUFFIX;
        }

        @Override
        public InputStream open(InputStream archive) {
            return new GzipStream(archive);
        }
    };
    private static final int FHCRC = 2;
    private static final int FEXTRA = 4;
    private static final int FNAME = 8;
    private static final int FCOMMENT = 16;

    private final InputStream archive;
    private final Inflater inflater = new Inflater(true);
    private final CRC32 crc = new CRC32();
    private final byte[] input = new byte[1 << 16];
    private int inputAt;
    private int inputEnd;
    private boolean inMember;
    private long memberBytes;

    private GzipStream(InputStream archive) {
        this.archive = archive;
    }

    @Override
    public int read() throws IOException {
        byte[] one = new byte[1];
        return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        if (len == 0) {
            return 0;
        }
        while (true) {
            if (inMember && inflater.finished()) {
                inputAt = inputEnd - inflater.getRemaining();
                trailer();
                inMember = false;
            }
            if (!inMember) {
                if (!header()) {
                    return -1;
                }
                inflater.reset();
                crc.reset();
                memberBytes = 0;
                inMember = true;
            }
            boolean fed = true;
            if (inflater.needsInput()) {
                fed = fill();
                if (fed) {
                    inflater.setInput(input, inputAt, inputEnd - inputAt);
                    inputAt = inputEnd;
                }
            }
            int n;
            try {
                n = inflater.inflate(b, off, len);
            } catch (DataFormatException e) {
                throw new ZipException("invalid deflate data: " + e.getMessage());
            }
            if (n > 0) {
                crc.update(b, off, n);
                memberBytes += n;
                return n;
            }
            if (!fed && !inflater.finished()) {
                throw new EOFException("the archive ended before the end of its deflate stream");
            }
        }
    }

    /** A member's header; false at the end of the archive. */
    private boolean header() throws IOException {
        int first = next();
        if (first < 0) {
            return false;
        }
        if (first != 0x1f || next() != 0x8b) {
            throw new ZipException("not a gzip member");
        }
        int method = exact();
        int flags = exact();
        skip(6); // mtime, extra flags, operating system
        if (method != 8) {
            throw new ZipException("unknown compression method " + method);
        }
        if ((flags & FEXTRA) != 0) {
            skip(exact() | exact() << 8);
        }
        for (int field : new int[] {FNAME, FCOMMENT}) {
            if ((flags & field) != 0) {
                for (int c = next(); c > 0; c = next()) {
                    continue; // a zero-terminated string, or the rest of the archive
                }
            }
        }
        if ((flags & FHCRC) != 0) {
            skip(2);
        }
        return true;
    }

    /** The member's trailer, then the zero bytes after it. */
    private void trailer() throws IOException {
        long stored = exact() | exact() << 8 | exact() << 16 | (long) exact() << 24;
        long size = exact() | exact() << 8 | exact() << 16 | (long) exact() << 24;
        if (stored != crc.getValue()) {
            throw new ZipException("CRC-32 check failed");
        }
        if (size != (memberBytes & 0xffffffffL)) {
            throw new ZipException("the member's size differs from its trailer's");
        }
        int c = next();
        while (c == 0) {
            c = next();
        }
        if (c > 0) {
            inputAt--; // the first byte of the next member
        }
    }

    /** Whether there are bytes in the input buffer, refilled from the archive when it is empty. */
    private boolean fill() throws IOException {
        if (inputAt < inputEnd) {
            return true;
        }
        int got = archive.read(input, 0, input.length);
        inputAt = 0;
        inputEnd = Math.max(got, 0);
        return got > 0;
    }

    /** The next byte of the archive outside the deflate stream, -1 at its end. */
    private int next() throws IOException {
        return fill() ? input[inputAt++] & 0xff : -1;
    }

    private int exact() throws IOException {
        int c = next();
        if (c < 0) {
            throw new EOFException("the archive ended inside a member's header or trailer");
        }
        return c;
    }

    private void skip(int n) throws IOException {
        for (int i = 0; i < n; i++) {
            exact();
        }
    }

    @Override
    public void close() throws IOException {
        inflater.end();
        archive.close();
    }
}
