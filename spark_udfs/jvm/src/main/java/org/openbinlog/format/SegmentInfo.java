package org.openbinlog.format;

/**
 * A segment present in the listing, for planning splits. {@code version} and {@code baseIndex} are -1 when
 * the header fails its checks (the walk reports it); {@code finished}: a successor is present, or,
 * for version 1, the segment is closed.
 */
public record SegmentInfo(int log, String name, long size, int version, long baseIndex, boolean sealed,
        boolean finished) {}
