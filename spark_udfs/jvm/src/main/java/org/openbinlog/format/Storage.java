package org.openbinlog.format;

import java.io.IOException;
import java.util.List;

/** One log directory, read by positioned reads: what the walk needs of a file system (readers §10.2.2, OPEN). */
public interface Storage {
    /** The entry names in the directory. */
    List<String> list() throws IOException;

    /** The size of entry {@code name}; {@link java.nio.file.NoSuchFileException} when it does not exist. */
    long size(String name) throws IOException;

    /** A positioned read: the number of bytes read, -1 at the end of the file. */
    int read(String name, long pos, byte[] buf, int off, int len) throws IOException;

    /** The full path or URI of an entry, for messages and the {@code file} column. */
    String describe(String name);
}
