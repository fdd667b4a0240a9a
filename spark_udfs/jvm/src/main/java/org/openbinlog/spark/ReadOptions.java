package org.openbinlog.spark;

import java.io.Serializable;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

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

    final String path;
    final Mode mode;
    final String corruptColumn;
    /** The split size the read asks for; null: sized as Spark sizes splits of files ({@link BinlogScan}). */
    final Long maxPartitionBytes;
    final int maxCorruptRecordBytes;
    /** Whether filters prune and narrow the read (option {@code pushdown}, as the Python source's). */
    final boolean pushdown;
    /** The most bytes one compressed segment unpacks to (protocols §2.6, R-43). */
    final long maxDecompressedBytes;

    private ReadOptions(String path, Mode mode, String corruptColumn, Long maxPartitionBytes, int maxCorruptRecordBytes,
            boolean pushdown, long maxDecompressedBytes) {
        this.path = path;
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
        String path = lower.get("path");
        if (path == null || path.isEmpty()) {
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
        String pushdown = lower.getOrDefault("pushdown", "true").trim().toLowerCase(Locale.ROOT);
        if (!pushdown.equals("true") && !pushdown.equals("false")) {
            throw new OptionException("option pushdown: '" + pushdown + "' is not true or false");
        }
        long maxDecompressed = lower.containsKey("maxdecompressedbytes")
                ? parseSize("maxDecompressedBytes", lower.get("maxdecompressedbytes"))
                : 16L << 30;
        return new ReadOptions(path, mode, corrupt, maxBytes, (int) corruptBytes, pushdown.equals("true"),
                maxDecompressed);
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
