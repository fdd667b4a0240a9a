package org.openbinlog.spark;

import java.io.IOException;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.hadoop.conf.Configuration;
import org.openbinlog.format.BinlogException;
import org.openbinlog.format.ErrorClass;
import org.openbinlog.format.LocalStorage;
import org.openbinlog.format.Storage;

/** The storage of a log directory: local files directly, every other scheme through Hadoop's file systems. */
final class Storages {
    private static final Pattern SCHEME = Pattern.compile("^([A-Za-z][A-Za-z0-9+.-]*):");

    private Storages() {}

    /** Whether a path names no scheme but file: a plain path, glob characters included. */
    static boolean local(String path) {
        Matcher scheme = SCHEME.matcher(path);
        return !scheme.find() || scheme.group(1).equalsIgnoreCase("file");
    }

    /**
     * The path a local load path names, as Hadoop's {@code Path} reads it: {@code /p}, {@code file:/p},
     * {@code file:///p} and {@code file:////p} alike. The rest of a {@code file:} URL is taken literally, never
     * decoded as a URI ({@code file:/x/a%20b} is the directory {@code a%20b}, and a space, {@code ?} or {@code [}
     * is what it is in a plain path). A URL that names a host, {@code localhost} included, is refused as Hadoop
     * refuses it ({@code Wrong FS}): read as a local path it would read this machine's files.
     */
    static java.nio.file.Path localPath(String path) throws BinlogException {
        if (!path.regionMatches(true, 0, "file:", 0, 5)) {
            return Paths.get(path);
        }
        String rest = path.substring(5);
        if (rest.startsWith("//")) {
            int slash = rest.indexOf('/', 2);
            String host = rest.substring(2, slash < 0 ? rest.length() : slash);
            if (!host.isEmpty()) {
                throw new BinlogException(ErrorClass.IO_ERROR, path, null, null, null, "a file: URL names a file of "
                        + "this machine, not of the host '" + host + "': write file:/path or file:///path (or mount "
                        + "that host's files here)");
            }
            rest = slash < 0 ? "/" : rest.substring(slash);
        }
        return Paths.get(rest);
    }

    /**
     * The file-system settings ({@code fs.*}) of the session's Hadoop configuration {@code conf}, where a cluster's
     * {@code spark.hadoop.fs.*} settings land: what executors need to open the files.
     */
    static Map<String, String> settings(Configuration conf) {
        Map<String, String> settings = new HashMap<>();
        conf.forEach(entry -> {
            if (entry.getKey().startsWith("fs.")) {
                settings.put(entry.getKey(), entry.getValue());
            }
        });
        return settings;
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
