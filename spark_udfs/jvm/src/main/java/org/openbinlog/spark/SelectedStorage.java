package org.openbinlog.spark;

import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.openbinlog.format.LogReader;
import org.openbinlog.format.Storage;

/**
 * A log directory as the listing selected it ({@link Listing}): the segment files the file options left out are
 * absent to the reader core, as they are to the Python source's walk; the sparse index of a selected segment
 * and LOCK stay (an index is a hint the core checks before any use, index §18.5). The forms OPEN tries after the
 * selected one stay too: compression may replace a plain file by its compressed copy between planning and reading
 * (protocols §2.6), and the walk follows it there (OPEN, readers §10.2.2), while a selected form found first is
 * still the one read.
 */
final class SelectedStorage implements Storage {
    private final Storage inner;
    private final Set<String> visible = new HashSet<>();

    SelectedStorage(Storage inner, Collection<String> names) {
        this.inner = inner;
        visible.add("LOCK");
        for (String name : names) {
            int log = LogReader.segmentNumber(name);
            List<String> forms = LogReader.segmentNames(log);
            visible.addAll(forms.subList(forms.indexOf(name), forms.size()));
            visible.add(LogReader.indexName(log));
        }
    }

    @Override
    public List<String> list() throws IOException {
        return inner.list().stream().filter(visible::contains).toList();
    }

    @Override
    public long size(String name) throws IOException {
        return inner.size(visible(name));
    }

    @Override
    public int read(String name, long pos, byte[] buf, int off, int len) throws IOException {
        return inner.read(visible(name), pos, buf, off, len);
    }

    @Override
    public Stamp stamp(String name) throws IOException {
        return visible.contains(name) ? inner.stamp(name) : null;
    }

    @Override
    public String describe(String name) {
        return inner.describe(name);
    }

    private String visible(String name) throws NoSuchFileException {
        if (!visible.contains(name)) {
            throw new NoSuchFileException(describe(name));
        }
        return name;
    }
}
