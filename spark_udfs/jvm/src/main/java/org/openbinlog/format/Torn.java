package org.openbinlog.format;

/** Non-zero bytes beyond the commit point of the last segment: a torn tail, never an error (R-12, readers §10.1). */
public record Torn(int log, long offset) {}
