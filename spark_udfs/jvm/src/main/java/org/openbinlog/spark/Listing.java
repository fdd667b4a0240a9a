package org.openbinlog.spark;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.GlobExpander;
import org.apache.hadoop.fs.GlobPattern;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.openbinlog.format.BinlogException;
import org.openbinlog.format.ErrorClass;
import org.openbinlog.format.LogReader;

/**
 * Finding the logs of a read, as the Python source finds them (openbinlog_spark listing.py): every load path,
 * globs expanded; below a directory, every directory that is not hidden (a name starting with {@code .} or
 * {@code _}, as Spark skips them); a log is the segment files of one directory that the file options select
 * ({@code pathGlobFilter} on the file name, {@code modifiedBefore}, {@code modifiedAfter}); {@code key=value}
 * directory names between the base path and a log are its partition values, unless {@code recursiveFileLookup}
 * is set, which (as in Spark) turns partition inference off. A load path with a glob character or a backslash is
 * a glob, as Spark's file sources take it, where a backslash escapes the character after it ({@code glob\[1\]} is
 * the directory {@code glob[1]}). {@code basePath}, as in Spark, is taken literally (never a glob) and must be a
 * directory that exists and is every load path or above it. Only the listing: the reading rules are the core's.
 */
final class Listing {
    private static final String NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__";
    private static final String LOCK = "LOCK";
    // As Spark's isGlobPath: a backslash too, as Hadoop's globber unescapes it.
    private static final Pattern GLOB_MAGIC = Pattern.compile("[*?\\[{\\\\]");

    /**
     * One log: the directory (a local path, or a URI), the names of the segment files selected in it, and the
     * partition directories above it, name to value (null: {@value #NULL_PARTITION}), in path order.
     */
    record Log(String directory, List<String> names, Map<String, String> partitions) {}

    private Listing() {}

    /** The session's Hadoop configuration (fs.*, spark.hadoop.*), which Spark's own file sources list with. */
    static Configuration sessionHadoopConf() {
        return ((org.apache.spark.sql.classic.SparkSession) SparkSession.active()).sessionState().newHadoopConf();
    }

    /** Every log the load paths and file options select, ordered by directory. */
    static List<Log> logs(ReadOptions options, Configuration conf) {
        try {
            return new Listing.Run(options, conf).run();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Strings by code point, not by UTF-16 unit as String.compareTo: beyond U+FFFF the two orders differ. */
    static int byCodePoint(String a, String b) {
        int i = 0;
        int j = 0;
        while (i < a.length() && j < b.length()) {
            int x = a.codePointAt(i);
            int y = b.codePointAt(j);
            if (x != y) {
                return Integer.compare(x, y);
            }
            i += Character.charCount(x);
            j += Character.charCount(y);
        }
        return Integer.compare(a.length() - i, b.length() - j);
    }

    /** One listing: the segment files found so far, by directory. */
    private static final class Run {
        private final ReadOptions options;
        private final Configuration conf;
        private final GlobPattern nameFilter;
        // In code point order, as the Python source sorts: partition columns come in the order the logs give them.
        private final Map<String, TreeSet<String>> names = new TreeMap<>(Listing::byCodePoint);
        private final Map<String, Map<String, String>> partitions = new TreeMap<>(Listing::byCodePoint);

        Run(ReadOptions options, Configuration conf) {
            this.options = options;
            this.conf = conf;
            this.nameFilter = options.pathGlobFilter == null ? null : glob(options.pathGlobFilter);
        }

        private static GlobPattern glob(String pattern) {
            try {
                return new GlobPattern(pattern);
            } catch (RuntimeException e) { // Hadoop's pattern syntax errors are unchecked, of a shaded regex library
                throw new OptionException("option pathGlobFilter: '" + pattern + "' is not a glob: " + e.getMessage());
            }
        }

        List<Log> run() throws IOException {
            String base = base();
            for (String given : options.paths) {
                boolean local = Storages.local(given);
                FileSystem fs = fileSystem(given, local);
                for (FileStatus match : matches(fs, path(given, local), given)) {
                    String at = text(match.getPath(), local);
                    if (base != null && !(at + "/").startsWith(base + "/")) {
                        // Spark's "Wrong basePath": below no base, the logs would be read without partition columns.
                        throw new OptionException("option basePath: '" + options.basePath + "' is neither the load "
                                + "path '" + at + "' nor a directory above it");
                    }
                    take(fs, match, given, local, base);
                }
            }
            List<Log> logs = new ArrayList<>();
            names.forEach((directory, files) -> logs.add(new Log(directory, List.copyOf(files), partitions.get(directory))));
            return logs;
        }

        private FileSystem fileSystem(String given, boolean local) throws IOException {
            return local ? FileSystem.getLocal(conf).getRawFileSystem() : new Path(given).getFileSystem(conf);
        }

        private static Path path(String given, boolean local) throws IOException {
            return local ? new Path(Storages.localPath(given).toAbsolutePath().normalize().toString()) : new Path(given);
        }

        /**
         * {@code basePath} as the matches are written, checked as Spark's file sources check it: a directory that
         * exists, taken literally; null without one, or with recursiveFileLookup (no partitions: Spark ignores it).
         */
        private String base() throws IOException {
            String given = options.basePath;
            if (given == null || options.recursive) {
                return null;
            }
            if (given.isEmpty()) {
                throw new OptionException("option basePath: '' names no directory");
            }
            boolean local = Storages.local(given);
            FileStatus status;
            try {
                status = fileSystem(given, local).getFileStatus(path(given, local));
            } catch (FileNotFoundException e) {
                throw new OptionException("option basePath: '" + given + "' does not exist (it is one directory, never "
                        + "a glob)");
            }
            if (!status.isDirectory()) {
                throw new OptionException("option basePath: '" + given + "' is not a directory");
            }
            String base = text(status.getPath(), local);
            return base.endsWith("/") ? base.substring(0, base.length() - 1) : base;
        }

        /** What a load path names: itself, or what its glob matches; a missing path is Spark's PATH_NOT_FOUND. */
        private List<FileStatus> matches(FileSystem fs, Path path, String given) throws IOException {
            List<FileStatus> found = new ArrayList<>();
            if (GLOB_MAGIC.matcher(given).find()) {
                if (Storages.local(given)) {
                    // As Hadoop's globber: braces that hold a '/' first, then each pattern one component at a time.
                    for (String flat : GlobExpander.expand(given)) {
                        for (FileStatus match : localGlob(fs, Storages.localPath(flat).toAbsolutePath().normalize(),
                                given)) {
                            if (!found.contains(match)) {
                                found.add(match);
                            }
                        }
                    }
                } else {
                    found.addAll(hadoopGlob(fs, path, given));
                }
            } else {
                try {
                    found.add(fs.getFileStatus(path));
                } catch (FileNotFoundException e) {
                    // below: as a glob that matches nothing
                }
            }
            if (found.isEmpty() && !options.ignoreMissing) {
                throw SparkErrors.pathNotFound(given);
            }
            found.sort((a, b) -> a.getPath().compareTo(b.getPath()));
            return found;
        }

        /**
         * A local glob, expanded one path component at a time with Hadoop's glob syntax, each match named by its
         * whole path: Hadoop's globber names a child by its name alone, so that a name with ':' in a directory it
         * lists (notes:1.txt) parses as a URI scheme and fails the read, where the Python source reads the logs.
         */
        private static List<FileStatus> localGlob(FileSystem fs, java.nio.file.Path pattern, String given)
                throws IOException {
            List<java.nio.file.Path> matched = List.of(pattern.getRoot());
            for (java.nio.file.Path component : pattern) {
                String name = component.toString();
                boolean literal = !GLOB_MAGIC.matcher(name).find() && name.indexOf('\\') < 0;
                GlobPattern glob = literal ? null : globOf(name, given);
                List<java.nio.file.Path> next = new ArrayList<>();
                for (java.nio.file.Path dir : matched) {
                    if (literal) {
                        if (Files.exists(dir.resolve(name))) {
                            next.add(dir.resolve(name));
                        }
                        continue;
                    }
                    if (!Files.isDirectory(dir)) {
                        continue;
                    }
                    try (DirectoryStream<java.nio.file.Path> children = Files.newDirectoryStream(dir)) {
                        for (java.nio.file.Path child : children) {
                            if (glob.matches(child.getFileName().toString())) {
                                next.add(child);
                            }
                        }
                    }
                }
                matched = next;
            }
            List<FileStatus> found = new ArrayList<>();
            for (java.nio.file.Path match : matched) {
                found.add(fs.getFileStatus(new Path(match.toString()))); // a whole path: no scheme is read in it
            }
            return found;
        }

        private static GlobPattern globOf(String component, String given) {
            try {
                return new GlobPattern(component);
            } catch (PatternSyntaxException e) {
                throw new OptionException("load path '" + given + "' is not a glob: " + e.getMessage());
            }
        }

        /**
         * A glob on another file system, by Hadoop's globber: a name it cannot make a path of (one with ':') is an
         * io_error that names the load path, not an untyped failure.
         */
        private static List<FileStatus> hadoopGlob(FileSystem fs, Path path, String given) throws IOException {
            FileStatus[] globbed;
            try {
                globbed = fs.globStatus(path);
            } catch (IllegalArgumentException e) {
                throw new BinlogException(ErrorClass.IO_ERROR, given, null, null, null,
                        "Hadoop cannot glob it: a name where it lists is not a valid path (" + e.getMessage() + ")", e);
            }
            return globbed == null ? List.of() : Arrays.asList(globbed);
        }

        /** The segment files of one match: a directory and everything below it, or one file. */
        private void take(FileSystem fs, FileStatus match, String given, boolean local, String base)
                throws IOException {
            List<FileStatus> segments = new ArrayList<>();
            String root;
            if (match.isDirectory()) {
                root = text(match.getPath(), local);
                boolean lock = below(fs, match.getPath(), segments);
                if (segments.isEmpty() && !lock) {
                    // Spec readers R-42: a directory with neither a segment nor LOCK is not a log, never an empty one.
                    throw new BinlogException(ErrorClass.IO_ERROR, given, null, null, null,
                            "not a log directory: it holds neither a segment nor LOCK");
                }
            } else {
                root = text(match.getPath().getParent(), local);
                if (LogReader.segmentNumber(match.getPath().getName()) != 0) {
                    segments.add(match);
                }
            }
            for (FileStatus segment : segments) {
                if (selected(segment)) {
                    String directory = text(segment.getPath().getParent(), local);
                    names.computeIfAbsent(directory, d -> new TreeSet<>()).add(segment.getPath().getName());
                    Map<String, String> values = partitionsOf(directory, base == null ? root : base);
                    Map<String, String> before = partitions.putIfAbsent(directory, values);
                    if (before != null && !before.equals(values)) {
                        // The columns of a log are one row of values: a log whose segments the load paths reach
                        // from different bases would need two, so the read is refused rather than given either.
                        throw new OptionException("the log " + directory + " is reached through load paths that "
                                + "give it different partition values, " + before + " and " + values
                                + ": load it through one of them, or give basePath");
                    }
                }
            }
        }

        /**
         * Collects the segment files below {@code dir} into {@code segments}, hidden names apart; whether
         * {@code dir} holds LOCK. A directory named as a segment is an I/O error, never a gap (spec readers R-20).
         */
        private boolean below(FileSystem fs, Path dir, List<FileStatus> segments) throws IOException {
            boolean lock = false;
            for (FileStatus child : fs.listStatus(dir)) {
                String name = child.getPath().getName();
                lock |= name.equals(LOCK);
                if (name.startsWith(".") || name.startsWith("_")) {
                    continue;
                }
                int log = LogReader.segmentNumber(name);
                if (child.isDirectory()) {
                    if (log != 0) {
                        throw new BinlogException(ErrorClass.IO_ERROR, child.getPath().toString(), log, null, null,
                                "segment is not a regular file");
                    }
                    below(fs, child.getPath(), segments);
                } else if (log != 0) {
                    segments.add(child);
                }
            }
            return lock;
        }

        /** Whether the file options select a segment file: its name, and its modification time (ms, as Hadoop's). */
        private boolean selected(FileStatus segment) {
            if (nameFilter != null && !nameFilter.matches(segment.getPath().getName())) {
                return false;
            }
            long modifiedUs = segment.getModificationTime() * 1000;
            return (options.modifiedBeforeUs == null || modifiedUs < options.modifiedBeforeUs)
                    && (options.modifiedAfterUs == null || modifiedUs > options.modifiedAfterUs);
        }

        /** The {@code key=value} directories between {@code base} and {@code directory}, unless recursive. */
        private Map<String, String> partitionsOf(String directory, String base) {
            Map<String, String> pairs = new LinkedHashMap<>();
            if (options.recursive || !(directory + "/").startsWith(base + "/")) {
                return pairs;
            }
            for (String part : directory.substring(Math.min(base.length() + 1, directory.length())).split("/")) {
                int equals = part.indexOf('=');
                if (equals > 0) {
                    String value = unescape(part.substring(equals + 1));
                    pairs.put(unescape(part.substring(0, equals)), value.equals(NULL_PARTITION) ? null : value);
                }
            }
            return pairs;
        }
    }

    /** A local path as the Python source writes it (a plain path), any other as its URI. */
    private static String text(Path path, boolean local) {
        return local ? path.toUri().getPath() : path.toString();
    }

    /** Spark's escaping of partition directory names undone: {@code %XX} sequences, as UTF-8 ({@code +} stays). */
    private static String unescape(String text) {
        if (text.indexOf('%') < 0) {
            return text;
        }
        StringBuilder out = new StringBuilder();
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        for (int i = 0; i < text.length(); ) {
            if (text.charAt(i) == '%' && i + 2 < text.length() && hex(text.charAt(i + 1)) && hex(text.charAt(i + 2))) {
                bytes.write(Integer.parseInt(text.substring(i + 1, i + 3), 16));
                i += 3;
                continue;
            }
            if (bytes.size() > 0) {
                out.append(new String(bytes.toByteArray(), StandardCharsets.UTF_8));
                bytes.reset();
            }
            out.append(text.charAt(i++));
        }
        out.append(new String(bytes.toByteArray(), StandardCharsets.UTF_8));
        return out.toString();
    }

    private static boolean hex(char c) {
        return c < 128 && Character.digit(c, 16) >= 0;
    }
}
