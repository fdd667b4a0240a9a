package org.openbinlog.spark;

import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.openbinlog.format.Storage;

/** A log directory on any file system Hadoop's configuration reaches (s3a, hdfs, ...), for the reader core. */
final class HadoopStorage implements Storage, AutoCloseable {
    private final FileSystem fs;
    private final Path dir;
    private final Map<String, FSDataInputStream> open = new HashMap<>();

    HadoopStorage(String uri, Configuration conf) throws IOException {
        this.dir = new Path(uri);
        this.fs = dir.getFileSystem(conf);
    }

    @Override
    public List<String> list() throws IOException {
        List<String> names = new ArrayList<>();
        try {
            for (FileStatus status : fs.listStatus(dir)) {
                names.add(status.getPath().getName());
            }
        } catch (java.io.FileNotFoundException e) {
            throw new NoSuchFileException(dir.toString());
        }
        return names;
    }

    @Override
    public long size(String name) throws IOException {
        try {
            return fs.getFileStatus(new Path(dir, name)).getLen();
        } catch (java.io.FileNotFoundException e) {
            throw new NoSuchFileException(describe(name));
        }
    }

    @Override
    public int read(String name, long pos, byte[] buf, int off, int len) throws IOException {
        FSDataInputStream in = open.get(name);
        if (in == null) {
            try {
                in = fs.open(new Path(dir, name));
            } catch (java.io.FileNotFoundException e) {
                throw new NoSuchFileException(describe(name));
            }
            open.put(name, in);
        }
        return in.read(pos, buf, off, len);
    }

    @Override
    public String describe(String name) {
        return new Path(dir, name).toString();
    }

    @Override
    public void close() throws IOException {
        for (FSDataInputStream in : open.values()) {
            in.close();
        }
        open.clear();
    }
}
