package org.openbinlog.format;

import java.util.zip.CRC32C;

/** The masked CRC32C of format §5. */
final class Checksums {
    private static final int MASK_DELTA = 0xA282EAD8;

    private Checksums() {}

    /** LevelDB's mask: rotate right by 15 bits, add the constant (format §5). */
    static int mask(int crc) {
        return Integer.rotateRight(crc, 15) + MASK_DELTA;
    }

    static int masked(byte[] b, int off, int len) {
        CRC32C crc = new CRC32C();
        crc.update(b, off, len);
        return mask((int) crc.getValue());
    }
}
