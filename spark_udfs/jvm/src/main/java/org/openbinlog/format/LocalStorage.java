package org.openbinlog.format;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.NoSuchFileException;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

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

    /**
     * A look at the file now (a stat, no open; a symbolic link followed, as a read follows it): its device and
     * inode, its size, and its modification and change times to the nanosecond where the system keeps them. The
     * change time (ctime) moves with every write, truncation, link or rename of the file, and no call sets it
     * back, as one can set the modification time. Without the {@code unix} attribute view: the basic attributes
     * (the file key, size and modification time).
     */
    @Override
    public Stamp stamp(String name) throws IOException {
        Path file = dir.resolve(name);
        try {
            Map<String, Object> a;
            try {
                a = Files.readAttributes(file, "unix:dev,ino,size,lastModifiedTime,ctime,isRegularFile");
            } catch (UnsupportedOperationException | IllegalArgumentException noUnixView) {
                BasicFileAttributes b = Files.readAttributes(file, BasicFileAttributes.class);
                return !b.isRegularFile() ? null
                        : Stamp.of(b.lastModifiedTime().toMillis(), b.fileKey(), b.size(), nanos(b.lastModifiedTime()));
            }
            if (!Boolean.TRUE.equals(a.get("isRegularFile"))) {
                return null; // no regular file: OPEN fails on it
            }
            FileTime modified = (FileTime) a.get("lastModifiedTime");
            FileTime changed = (FileTime) a.get("ctime");
            return Stamp.of(Math.max(modified.toMillis(), changed.toMillis()), a.get("dev"), a.get("ino"), a.get("size"),
                    nanos(modified), nanos(changed));
        } catch (NoSuchFileException gone) {
            return null;
        }
    }

    private static long nanos(FileTime time) {
        return time.to(TimeUnit.NANOSECONDS);
    }

    @Override
    public String describe(String name) {
        return dir.resolve(name).toString();
    }
}
