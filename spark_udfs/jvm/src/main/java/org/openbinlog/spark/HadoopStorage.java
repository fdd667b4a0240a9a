package org.openbinlog.spark;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.EtagSource;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FutureDataInputStreamBuilder;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.util.functional.FutureIO;
import org.openbinlog.format.Storage;

/**
 * A log directory on any file system Hadoop's configuration reaches (s3a, hdfs, ...), for the reader core. Unlike
 * {@link org.openbinlog.format.LocalStorage} it keeps a stream per file open until {@link #close}: on an object
 * store an open costs a request, and the stream's connection serves the walk's next window.
 */
final class HadoopStorage implements Storage, AutoCloseable {
    private final FileSystem fs;
    private final Path dir;
    private final Map<String, FSDataInputStream> open = new HashMap<>();
    /** The status each size() found, handed to the open so that it needs no request of its own. */
    private final Map<String, FileStatus> statuses = new HashMap<>();
    /** The statuses the last list() found, which stamp() tells without a request. */
    private final Map<String, FileStatus> listed = new HashMap<>();

    HadoopStorage(String uri, Configuration conf) throws IOException {
        Path given = new Path(uri);
        this.fs = given.getFileSystem(conf);
        this.dir = fs.makeQualified(given);
    }

    @Override
    public List<String> list() throws IOException {
        FileStatus[] statuses;
        try {
            statuses = fs.listStatus(dir);
        } catch (FileNotFoundException e) {
            throw new NoSuchFileException(dir.toString());
        }
        List<String> names = new ArrayList<>();
        listed.clear();
        for (FileStatus status : statuses) {
            // Listing a file lists the file itself; a log is a directory, as on the local file system.
            if (status.getPath().equals(dir)) {
                throw new NotDirectoryException(dir.toString());
            }
            names.add(status.getPath().getName());
            listed.put(status.getPath().getName(), status);
        }
        return names;
    }

    /**
     * What the last listing said of the file, without a request: its length and modification time, and the ETag
     * where the store gives one (S3A, ABFS, ...), an identifier of the object's bytes: an object is never written
     * in place, and an object put again under the name has another ETag unless it holds the same bytes.
     */
    @Override
    public Stamp stamp(String name) {
        FileStatus status = listed.get(name);
        if (status == null || !status.isFile()) {
            return null;
        }
        String etag = status instanceof EtagSource source ? source.getEtag() : null;
        if (etag == null || etag.isEmpty()) {
            return Stamp.of(status.getModificationTime(), status.getLen(), status.getModificationTime());
        }
        return Stamp.of(Stamp.CONTENT, status.getLen(), status.getModificationTime(), etag);
    }

    @Override
    public long size(String name) throws IOException {
        FileStatus status;
        try {
            status = fs.getFileStatus(new Path(dir, name));
        } catch (FileNotFoundException e) {
            throw new NoSuchFileException(describe(name));
        }
        // An object store's prefix named like a segment is a directory of size 0, no segment.
        if (!status.isFile()) {
            throw new IOException(describe(name) + " is not a regular file");
        }
        statuses.put(name, status);
        return status.getLen();
    }

    @Override
    public int read(String name, long pos, byte[] buf, int off, int len) throws IOException {
        FSDataInputStream in = open.get(name);
        if (in == null) {
            FutureDataInputStreamBuilder builder = fs.openFile(new Path(dir, name));
            FileStatus status = statuses.get(name);
            if (status != null) {
                builder.withFileStatus(status);
            }
            try {
                in = FutureIO.awaitFuture(builder.build());
            } catch (FileNotFoundException e) {
                throw new NoSuchFileException(describe(name));
            }
            open.put(name, in);
        }
        return in.read(pos, buf, off, len);
    }

    @Override
    public String describe(String name) {
        return name.isEmpty() ? dir.toString() : new Path(dir, name).toString();
    }

    /** Closes every stream, even when one fails to close. */
    @Override
    public void close() throws IOException {
        IOException failed = null;
        for (FSDataInputStream in : open.values()) {
            try {
                in.close();
            } catch (IOException e) {
                if (failed == null) {
                    failed = e;
                } else {
                    failed.addSuppressed(e);
                }
            }
        }
        open.clear();
        if (failed != null) {
            throw failed;
        }
    }
}
