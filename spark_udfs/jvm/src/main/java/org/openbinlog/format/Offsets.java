package org.openbinlog.format;

/**
 * Offsets of the walk. Stored offsets (a commit point, a last element position, a ref's offset) are unsigned
 * 64-bit values; every one at or beyond 2^63 lies beyond any file, so the walk holds it as Long.MAX_VALUE and
 * compares offsets as signed longs.
 */
final class Offsets {
    /** The absent bound {@code U} of tail mode (format §4.3.2). */
    static final long NO_BOUND = Long.MAX_VALUE;

    private Offsets() {}

    static long clamp(long unsigned) {
        return unsigned < 0 ? Long.MAX_VALUE : unsigned;
    }
}
