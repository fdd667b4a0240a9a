package org.openbinlog.format;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;

/**
 * A log directory on the local file system. It holds no open file between calls: a reader never locks
 * and keeps nothing to close, and the walk reads in large windows, so an open per read costs little.
 */
public final class LocalStorage implements Storage {
    private final Path dir;

    public LocalStorage(Path dir) {
        this.dir = dir;
    }

    @Override
    public List<String> list() throws IOException {
        List<String> names = new ArrayList<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
            for (Path entry : entries) {
                names.add(entry.getFileName().toString());
            }
        }
        return names;
    }

    @Override
    public long size(String name) throws IOException {
        BasicFileAttributes attributes = Files.readAttributes(dir.resolve(name), BasicFileAttributes.class);
        // A directory, FIFO or device named like a segment would block or read as what a segment is not.
        if (!attributes.isRegularFile()) {
            throw new IOException(describe(name) + " is not a regular file");
        }
        return attributes.size();
    }

    @Override
    public int read(String name, long pos, byte[] buf, int off, int len) throws IOException {
        try (FileChannel channel = FileChannel.open(dir.resolve(name), StandardOpenOption.READ)) {
            ByteBuffer target = ByteBuffer.wrap(buf, off, len);
            int total = 0;
            while (target.hasRemaining()) {
                int n = channel.read(target, pos + total);
                if (n < 0) {
                    return total == 0 ? -1 : total;
                }
                total += n;
            }
            return total;
        }
    }

    @Override
    public String describe(String name) {
        return dir.resolve(name).toString();
    }
}
