package org.openbinlog.format;

/** Big-endian fields (format §1.3). */
final class Bytes {
    private Bytes() {}

    static int u2(byte[] b, int at) {
        return ((b[at] & 0xff) << 8) | (b[at + 1] & 0xff);
    }

    static int u4(byte[] b, int at) {
        return ((b[at] & 0xff) << 24) | ((b[at + 1] & 0xff) << 16) | ((b[at + 2] & 0xff) << 8) | (b[at + 3] & 0xff);
    }

    static long u8(byte[] b, int at) {
        return ((long) u4(b, at) << 32) | (u4(b, at + 4) & 0xffffffffL);
    }

    static boolean zero(byte[] b, int from, int to) {
        for (int i = from; i < to; i++) {
            if (b[i] != 0) {
                return false;
            }
        }
        return true;
    }
}
