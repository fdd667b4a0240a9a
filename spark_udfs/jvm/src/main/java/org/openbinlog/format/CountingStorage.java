package org.openbinlog.format;

import java.io.IOException;
import java.util.List;

/**
 * A {@link Storage} that counts the bytes its reads deliver: what a read costs (the Spark source's
 * {@code binlogBytesRead} metric, the testee's {@code bytes_read}), index files apart as well.
 */
public final class CountingStorage implements Storage {
    private final Storage inner;
    private long bytes;
    private long indexBytes;

    public CountingStorage(Storage inner) {
        this.inner = inner;
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
    public List<String> list() throws IOException {
        return inner.list();
    }

    @Override
    public long size(String name) throws IOException {
        return inner.size(name);
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

    @Override
    public Stamp stamp(String name) throws IOException {
        return inner.stamp(name);
    }

    @Override
    public String describe(String name) {
        return inner.describe(name);
    }
}
