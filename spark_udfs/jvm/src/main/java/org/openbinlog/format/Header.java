package org.openbinlog.format;

import java.util.Arrays;

/**
 * A segment header that passed its checks: format §3.4 for version 2, legacy-v1 §B.3 for version 1. A version
 * 1 header carries its status, last element position and next log number, a version 2 one its active slot.
 */
final class Header {
    static final int SIZE = 256;
    static final int V1_FIRST_RECORD = 248;
    private static final byte[] SIGNATURE = {(byte) 0x89, 0x42, 0x4c, 0x4f, 0x47, 0x0d, 0x0a, 0x1a};
    private static final int PREALLOCATED = 1;

    final int version;
    final int log;
    final byte[] logId;
    final long baseIndex;
    final Slot active;
    final int status;
    final long lastElementPosition;
    final int nextLogNumber;

    private Header(int version, int log, byte[] logId, long baseIndex, Slot active, int status,
            long lastElementPosition, int nextLogNumber) {
        this.version = version;
        this.log = log;
        this.logId = logId;
        this.baseIndex = baseIndex;
        this.active = active;
        this.status = status;
        this.lastElementPosition = lastElementPosition;
        this.nextLogNumber = nextLogNumber;
    }

    boolean legacy() {
        return version == 1;
    }

    /** A version 1 segment is closed, and only then finished, by its status or its next log number. */
    boolean closed() {
        return status == 1 || nextLogNumber != 0;
    }

    boolean sameLog(Header other) {
        return Arrays.equals(logId, other.logId);
    }

    /** The first record's offset: 256, or 248 in version 1. */
    long firstRecord() {
        return legacy() ? V1_FIRST_RECORD : SIZE;
    }

    /** {@code b} holds a whole version 2 header in which neither commit slot is valid: R-46 reads it again. */
    static boolean slotsToSettle(byte[] b, int len) {
        return len >= SIZE && Bytes.u2(b, 4) == 2 && Slot.noneValid(b, Slot.SLOT0);
    }

    /** The checks of format §3.4 in order on the first {@code len} bytes of a file of {@code fileSize} bytes. */
    static Header check(byte[] b, int len, long fileSize, int log, String file) throws BinlogException {
        if (fileSize < SIZE || len < SIZE) {
            throw fail(ErrorClass.TRUNCATED, file, log, 0, "segment shorter than its header");
        }
        int version = Bytes.u2(b, 4);
        boolean signed = Arrays.equals(b, 24, 32, SIGNATURE, 0, 8);
        if (version == 1 && !signed) {
            return checkLegacy(b, log, file);
        }
        if (version != 2) {
            throw fail(ErrorClass.UNSUPPORTED_VERSION, file, log, 4, "unknown version " + version);
        }
        if (!signed) {
            throw fail(ErrorClass.BAD_SIGNATURE, file, log, 24, "");
        }
        if (Bytes.u4(b, 92) != headerCrc(b)) {
            throw fail(ErrorClass.BAD_HEADER, file, log, 92, "header checksum");
        }
        if (Bytes.u4(b, 0) != 252) {
            throw fail(ErrorClass.BAD_HEADER, file, log, 0, "header_length");
        }
        if (Bytes.u4(b, 16) != log) {
            throw fail(ErrorClass.BAD_HEADER, file, log, 16, "log number differs from the file name");
        }
        int flags = Bytes.u4(b, 64);
        if ((flags & ~PREALLOCATED) != 0) {
            throw fail(ErrorClass.UNSUPPORTED_FEATURE, file, log, 64, "unknown header flag");
        }
        if (!Bytes.zero(b, 68, 72) || !Bytes.zero(b, 80, 92) || !Bytes.zero(b, 192, 256)) {
            throw fail(ErrorClass.BAD_HEADER, file, log, 68, "reserved bytes");
        }
        if (((flags & PREALLOCATED) != 0) != (Bytes.u8(b, 72) != 0)) {
            throw fail(ErrorClass.BAD_HEADER, file, log, 72, "PREALLOCATED and capacity disagree");
        }
        long base = Bytes.u8(b, 48);
        Slot active = Slot.choose(b, Slot.SLOT0, log, base, file);
        return new Header(2, log, Arrays.copyOfRange(b, 32, 48), base, active, 0, 0, 0);
    }

    /** Steps 2 to 5 of legacy-v1 §B.3 (step 1, the size, is {@link #check}'s). */
    private static Header checkLegacy(byte[] b, int log, String file) throws BinlogException {
        if (Bytes.u4(b, 0) != 252) {
            throw fail(ErrorClass.BAD_SIGNATURE, file, log, 0, "no version 1 magic 252 at offset 0");
        }
        if (Bytes.u4(b, 16) != log) {
            throw fail(ErrorClass.BAD_HEADER, file, log, 16, "log number differs from the file name");
        }
        int status = Bytes.u2(b, 6);
        if (status > 1) {
            throw fail(ErrorClass.BAD_HEADER, file, log, 6, "status");
        }
        long lep = Bytes.u8(b, 8);
        if (Long.compareUnsigned(lep, V1_FIRST_RECORD) < 0) {
            throw fail(ErrorClass.BAD_HEADER, file, log, 8, "last element position below 248");
        }
        return new Header(1, log, null, 1, null, status, lep, Bytes.u4(b, 20));
    }

    /** Bytes 0..5 ++ 16..19 ++ 24..91 (format §3.1). */
    private static int headerCrc(byte[] b) {
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        crc.update(b, 0, 6);
        crc.update(b, 16, 4);
        crc.update(b, 24, 68);
        return Checksums.mask((int) crc.getValue());
    }

    private static BinlogException fail(ErrorClass c, String file, int log, long offset, String why) {
        return new BinlogException(c, file, log, offset, null, why);
    }
}
