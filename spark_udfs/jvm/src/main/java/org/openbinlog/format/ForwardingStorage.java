package org.openbinlog.format;

import java.io.IOException;
import java.util.List;

/**
 * A {@link Storage} that hands every call to another, {@code inner}: the base of storages that change one thing of
 * it (count its reads, remember its stamps) and override only that.
 */
public abstract class ForwardingStorage implements Storage {
    protected final Storage inner;

    protected ForwardingStorage(Storage inner) {
        this.inner = inner;
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
        return inner.read(name, pos, buf, off, len);
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
