package org.openbinlog.spark;

import java.io.IOException;
import java.util.List;

import org.openbinlog.format.Storage;

/** Counts the bytes a read takes from its storage: the source's {@code bytesRead} metric. */
final class CountingStorage implements Storage {
    private final Storage inner;
    private long bytes;

    CountingStorage(Storage inner) {
        this.inner = inner;
    }

    long bytes() {
        return bytes;
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
        int n = inner.read(name, pos, buf, off, len);
        if (n > 0) {
            bytes += n;
        }
        return n;
    }

    @Override
    public String describe(String name) {
        return inner.describe(name);
    }
}
