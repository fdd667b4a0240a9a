package org.openbinlog.format;

/** The closed list of error classes of format §12. */
public enum ErrorClass {
    BAD_SIGNATURE,
    UNSUPPORTED_VERSION,
    UNSUPPORTED_FEATURE,
    BAD_HEADER,
    TRUNCATED,
    CHECKSUM_MISMATCH,
    LENGTH_OUT_OF_RANGE,
    INDEX_DISCONTINUITY,
    ASQN_NOT_INCREASING,
    CHAIN_BROKEN,
    INVALID_REF,
    AMBIGUOUS_SPLIT,
    IO_ERROR;

    /** The class's name in the spec, e.g. {@code checksum_mismatch}. */
    public String specName() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
