package org.openbinlog.format;

import java.io.IOException;

/**
 * A {@link Storage} that counts the bytes its reads deliver: what a read costs (the Spark source's
 * {@code binlogBytesRead} metric, the testee's {@code bytes_read}), index files apart as well.
 */
public final class CountingStorage extends ForwardingStorage {
    private long bytes;
    private long indexBytes;

    public CountingStorage(Storage inner) {
        super(inner);
    }

    /** The bytes delivered so far, index files included. */
    public long bytes() {
        return bytes;
    }

    /** The bytes of index files among them. */
    public long indexBytes() {
        return indexBytes;
    }

    @Override
    public int read(String name, long pos, byte[] buf, int off, int len) throws IOException {
        int got = inner.read(name, pos, buf, off, len);
        if (got > 0) {
            bytes += got;
            indexBytes += name.endsWith(".idx") ? got : 0;
        }
        return got;
    }
}
