package org.openbinlog.format;

/**
 * How a reader reads compressed segments (protocols §2.6): gzip by the JDK, Zstandard by {@code zstd} when given
 * (without it a segment present only as {@code .dat.zst} is {@code unsupported_feature}, readers R-45), and at most
 * {@code maxBytes} unpacked bytes of one segment, a cap its users set by {@code capName}.
 */
public record Unpacking(Decompressor zstd, long maxBytes, String capName) {
    /** gzip only, with no cap. */
    public static final Unpacking GZIP = new Unpacking(null, Long.MAX_VALUE, "");

    public Unpacking {
        if (maxBytes < 0) {
            throw new IllegalArgumentException("the cap on unpacked bytes is at least 0");
        }
    }

    /** The decoder of {@code suffix} ({@code gz} or {@code zst}), or null when this reader has none. */
    Decompressor decompressor(String suffix) {
        return suffix.equals(GzipStream.SUFFIX) ? GzipStream.DECOMPRESSOR : zstd;
    }
}
