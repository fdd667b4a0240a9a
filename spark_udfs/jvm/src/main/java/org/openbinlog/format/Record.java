package org.openbinlog.format;

/**
 * A data record a reader returns. Offsets and indexes are unsigned 64-bit values held in a long. A version 1
 * entry is not {@code checked}: no checksum or stored index vouches for it, its asqn is -1 and it has no
 * timestamp ({@code timestampUs} 0), legacy-v1 §B.4.
 */
public record Record(int log, long offset, long index, long asqn, long timestampUs, byte[] payload, boolean checked) {}
