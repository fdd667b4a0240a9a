package org.openbinlog.spark;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Paths;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.openbinlog.format.LocalStorage;
import org.openbinlog.format.Storage;

/** The storage of a log directory: local files directly, every other scheme through Hadoop's file systems. */
final class Storages {
    private Storages() {}

    static boolean local(String path) {
        String scheme = URI.create(path.replace(" ", "%20")).getScheme();
        return scheme == null || scheme.equals("file");
    }

    static java.nio.file.Path localPath(String path) {
        return path.startsWith("file:") ? Paths.get(URI.create(path)) : Paths.get(path);
    }

    /** {@code hadoop}: the session's Hadoop settings, shipped to executors with the partition. */
    static Storage open(String path, Map<String, String> hadoop) throws IOException {
        if (local(path)) {
            return new LocalStorage(localPath(path));
        }
        Configuration conf = new Configuration();
        hadoop.forEach(conf::set);
        return new HadoopStorage(path, conf);
    }

    static void close(Storage storage) throws IOException {
        if (storage instanceof AutoCloseable closeable) {
            try {
                closeable.close();
            } catch (IOException e) {
                throw e;
            } catch (Exception e) {
                throw new IOException(e);
            }
        }
    }
}
