package org.openbinlog.spark;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.SparkSession;
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

    /**
     * The file-system settings ({@code fs.*}) of the active session's Hadoop configuration, where a cluster's
     * {@code spark.hadoop.fs.*} settings land: what executors need to open the files of {@code path}.
     */
    static Map<String, String> settings(String path) {
        if (local(path)) {
            return Map.of();
        }
        Configuration conf = ((org.apache.spark.sql.classic.SparkSession) SparkSession.active()).sessionState().newHadoopConf();
        Map<String, String> settings = new HashMap<>();
        conf.forEach(entry -> {
            if (entry.getKey().startsWith("fs.")) {
                settings.put(entry.getKey(), entry.getValue());
            }
        });
        return settings;
    }

    /** Whether {@code path} exists, with the active session's settings. */
    static boolean exists(String path) throws IOException {
        if (local(path)) {
            return Files.exists(localPath(path));
        }
        org.apache.hadoop.fs.Path hadoopPath = new org.apache.hadoop.fs.Path(path);
        return hadoopPath.getFileSystem(configuration(settings(path))).exists(hadoopPath);
    }

    /** {@code hadoop}: the session's Hadoop settings, shipped to executors with the partition. */
    static Storage open(String path, Map<String, String> hadoop) throws IOException {
        if (local(path)) {
            return new LocalStorage(localPath(path));
        }
        return new HadoopStorage(path, configuration(hadoop));
    }

    private static Configuration configuration(Map<String, String> hadoop) {
        Configuration conf = new Configuration();
        hadoop.forEach(conf::set);
        return conf;
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
