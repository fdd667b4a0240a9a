package org.openbinlog.spark;

import java.io.Serializable;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import java.time.temporal.TemporalAccessor;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.spark.sql.catalyst.util.DateTimeUtils;
import org.apache.spark.sql.internal.SQLConf;
import org.openbinlog.format.Unpacking;

/**
 * The options of one read, with the same names, defaults and checks as the Python source's (openbinlog_spark
 * options.py): per-read options first, then the session's {@code spark.sql.files.*} settings.
 */
final class ReadOptions implements Serializable {
    private static final long serialVersionUID = 1L;
    private static final Pattern SIZE = Pattern.compile("^\\s*(\\d+)\\s*([kmgt]?)i?b?\\s*$", Pattern.CASE_INSENSITIVE);

    enum Mode { PERMISSIVE, DROPMALFORMED, FAILFAST }

    /** The load paths, globs allowed: {@code load(p)} or {@code load(p1, p2)}. */
    final List<String> paths;
    /** Spark's generic file options, as the Python source honours them (openbinlog_spark listing.py). */
    final String pathGlobFilter;
    final boolean recursive;
    final String basePath;
    /** Bounds on a segment file's modification time, in epoch microseconds; null: none. */
    final Long modifiedBeforeUs;
    final Long modifiedAfterUs;
    final boolean ignoreMissing;
    final Mode mode;
    final String corruptColumn;
    /** The split size the read asks for; null: sized as Spark sizes splits of files ({@link BinlogScan}). */
    final Long maxPartitionBytes;
    final int maxCorruptRecordBytes;
    /** Whether filters prune and narrow the read (option {@code pushdown}, as the Python source's). */
    final boolean pushdown;
    /** The most bytes one compressed segment unpacks to (protocols §2.6, R-43). */
    final long maxDecompressedBytes;
    /** How tasks are sized and packed, as Spark's file sources do; null: the session's spark.sql.files.* setting. */
    final Long openCostInBytes;
    final Integer minPartitions;
    final Integer maxPartitionNum;

    private ReadOptions(List<String> paths, Map<String, String> lower, Mode mode, String corruptColumn,
            Long maxPartitionBytes, int maxCorruptRecordBytes, boolean pushdown, long maxDecompressedBytes) {
        this.paths = paths;
        this.pathGlobFilter = lower.get("pathglobfilter");
        this.recursive = flag(lower, "recursiveFileLookup", false);
        this.basePath = lower.get("basepath");
        this.ignoreMissing = flag(lower, "ignoreMissingFiles", SQLConf.get().ignoreMissingFiles());
        ZoneId zone = zone(lower.getOrDefault("timezone", SQLConf.get().sessionLocalTimeZone()));
        this.modifiedBeforeUs = time(lower, "modifiedBefore", zone);
        this.modifiedAfterUs = time(lower, "modifiedAfter", zone);
        this.openCostInBytes = lower.containsKey("opencostinbytes")
                ? parseSize("openCostInBytes", lower.get("opencostinbytes"))
                : null;
        this.minPartitions = count(lower, "minPartitions");
        this.maxPartitionNum = count(lower, "maxPartitionNum");
        this.mode = mode;
        this.corruptColumn = corruptColumn;
        this.maxPartitionBytes = maxPartitionBytes;
        this.maxCorruptRecordBytes = maxCorruptRecordBytes;
        this.pushdown = pushdown;
        this.maxDecompressedBytes = maxDecompressedBytes;
    }

    /** How the read unpacks compressed segments: gzip and Zstandard, up to maxDecompressedBytes each. */
    Unpacking unpacking() {
        return new Unpacking(new ZstdDecompressor(), maxDecompressedBytes, "option maxDecompressedBytes");
    }

    /** Damage is stepped over (spec readers 10.4) unless the read fails at the first. */
    boolean tolerant() {
        return mode != Mode.FAILFAST;
    }

    /** The corrupt-record column, present only where damage becomes rows (PERMISSIVE). */
    String corruptRows() {
        return mode == Mode.PERMISSIVE ? corruptColumn : null;
    }

    static ReadOptions parse(Map<String, String> options) {
        Map<String, String> lower = new java.util.HashMap<>();
        options.forEach((key, value) -> {
            if (value != null) {
                lower.put(key.toLowerCase(Locale.ROOT), value);
            }
        });
        refuseOptionsOfThePythonSource(lower);
        List<String> paths = paths(lower);
        if (paths.isEmpty()) {
            throw new OptionException("a path is required: spark.read.format(\"binlog-jvm\").load(DIR)");
        }
        String modeText = lower.getOrDefault("mode", "PERMISSIVE").toUpperCase(Locale.ROOT);
        Mode mode;
        try {
            mode = Mode.valueOf(modeText);
        } catch (IllegalArgumentException e) {
            throw new OptionException("option mode: '" + modeText + "' is not one of PERMISSIVE, DROPMALFORMED, FAILFAST");
        }
        SQLConf conf = SQLConf.get();
        String corrupt = lower.getOrDefault("columnnameofcorruptrecord", conf.columnNameOfCorruptRecord());
        if (Columns.named(corrupt)) {
            throw new OptionException("option columnNameOfCorruptRecord: '" + corrupt + "' names a column of the source");
        }
        Long maxBytes = lower.containsKey("maxpartitionbytes")
                ? parseSize("maxPartitionBytes", lower.get("maxpartitionbytes"))
                : null;
        if (maxBytes != null && maxBytes < 1) {
            throw new OptionException("option maxPartitionBytes must be at least 1 byte");
        }
        long corruptBytes = lower.containsKey("maxcorruptrecordbytes")
                ? parseSize("maxCorruptRecordBytes", lower.get("maxcorruptrecordbytes"))
                : 1 << 16;
        if (corruptBytes > Integer.MAX_VALUE - 8) {
            throw new OptionException("option maxCorruptRecordBytes must stay below 2 GiB");
        }
        long maxDecompressed = lower.containsKey("maxdecompressedbytes")
                ? parseSize("maxDecompressedBytes", lower.get("maxdecompressedbytes"))
                : 16L << 30;
        return new ReadOptions(paths, lower, mode, corrupt, maxBytes, (int) corruptBytes,
                flag(lower, "pushdown", true), maxDecompressed);
    }

    /** The load paths: Spark passes one as {@code path}, several as {@code paths}, a JSON array. */
    private static List<String> paths(Map<String, String> lower) {
        String several = lower.get("paths");
        if (several == null) {
            String path = lower.get("path");
            return path == null || path.isEmpty() ? List.of() : List.of(path);
        }
        try {
            return List.of(new ObjectMapper().readValue(several, String[].class));
        } catch (java.io.IOException e) {
            throw new OptionException("option paths: not a JSON array of strings: " + several);
        }
    }

    /**
     * Options of the Python source whose results this source does not give: refused, never ignored, since a read
     * that ignored them would return other rows than the user asked for.
     */
    private static void refuseOptionsOfThePythonSource(Map<String, String> lower) {
        if (flag(lower, "report", false)) {
            throw new OptionException("option report is not supported by binlog-jvm: the damage report is the "
                    + "Python source's, format(\"binlog\") or openbinlog_spark.corruption_report");
        }
        if (flag(lower, "ignoreCorruptFiles", false)) {
            throw new OptionException("option ignoreCorruptFiles is not supported by binlog-jvm: format(\"binlog\")"
                    + " drops the damage row of a segment header that fails its checks, whose log's walk ends there in"
                    + " both sources (spec readers §10.4); this source always reports that damage");
        }
    }

    /** A count of tasks, at least 1; null when the option is not given. */
    private static Integer count(Map<String, String> lower, String name) {
        String text = lower.get(name.toLowerCase(Locale.ROOT));
        if (text == null) {
            return null;
        }
        try {
            int value = Integer.parseInt(text.trim());
            if (value >= 1) {
                return value;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new OptionException("option " + name + ": '" + text + "' is not a whole number of at least 1");
    }

    /** A flag, as the Python source reads one: true, 1, yes or false, 0, no. */
    private static boolean flag(Map<String, String> lower, String name, boolean otherwise) {
        String text = lower.get(name.toLowerCase(Locale.ROOT));
        if (text == null) {
            return otherwise;
        }
        String value = text.trim().toLowerCase(Locale.ROOT);
        if (value.equals("true") || value.equals("1") || value.equals("yes")) {
            return true;
        }
        if (value.equals("false") || value.equals("0") || value.equals("no")) {
            return false;
        }
        throw new OptionException("option " + name + ": '" + text + "' is not true or false");
    }

    private static ZoneId zone(String text) {
        try {
            return DateTimeUtils.getZoneId(text.trim());
        } catch (java.time.DateTimeException e) {
            throw new OptionException("option timeZone: '" + text + "' is not a time zone (UTC, Europe/Paris, +02:00)");
        }
    }

    /**
     * An ISO time ({@code 2024-05-01T10:00:00}, a date, an offset or {@code Z}) in epoch microseconds; without an
     * offset it is a time in {@code zone}, the session's. The instant it names, as the Python source takes it.
     */
    private static Long time(Map<String, String> lower, String name, ZoneId zone) {
        String text = lower.get(name.toLowerCase(Locale.ROOT));
        if (text == null) {
            return null;
        }
        String iso = text.trim();
        if (iso.length() > 10 && iso.charAt(10) == ' ') {
            iso = iso.substring(0, 10) + "T" + iso.substring(11);
        }
        Instant instant;
        try {
            TemporalAccessor parsed = DateTimeFormatter.ISO_DATE_TIME.parseBest(iso, OffsetDateTime::from,
                    LocalDateTime::from);
            instant = parsed instanceof OffsetDateTime at ? at.toInstant()
                    : ((LocalDateTime) parsed).atZone(zone).toInstant();
        } catch (java.time.DateTimeException e) {
            try {
                instant = LocalDate.parse(iso).atStartOfDay(zone).toInstant();
            } catch (java.time.DateTimeException notDate) {
                throw new OptionException("option " + name + ": '" + text + "' is not a time like 2024-05-01T10:00:00");
            }
        }
        return Math.addExact(Math.multiplyExact(instant.getEpochSecond(), 1_000_000L), instant.getNano() / 1000);
    }

    /** A size such as {@code 16m}, {@code 1 GiB} or {@code 4096}. */
    static long parseSize(String name, String text) {
        Matcher m = SIZE.matcher(text);
        if (!m.matches()) {
            throw new OptionException("option " + name + ": '" + text + "' is not a size (a number of bytes, or 16m, 1g)");
        }
        int shift = switch (m.group(2).toLowerCase(Locale.ROOT)) {
            case "k" -> 10;
            case "m" -> 20;
            case "g" -> 30;
            case "t" -> 40;
            default -> 0;
        };
        try {
            return Math.multiplyExact(Long.parseLong(m.group(1)), 1L << shift);
        } catch (ArithmeticException | NumberFormatException e) {
            throw new OptionException("option " + name + ": '" + text + "' is too large");
        }
    }
}
