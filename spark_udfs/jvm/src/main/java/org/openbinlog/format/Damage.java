package org.openbinlog.format;

/**
 * One damaged region a tolerant walk stepped over: a row of the table of readers §10.4. {@code offset} is -1
 * where the row gives none (a missing segment of a broken chain); {@code resumeIndex} is null where reading
 * did not resume at a known index.
 */
public record Damage(ErrorClass errorClass, int log, long offset, Long index, String message, long bytesSkipped,
        Long resumeIndex) {}
