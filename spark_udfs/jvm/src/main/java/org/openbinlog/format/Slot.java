package org.openbinlog.format;

/** The active commit slot of a version 2 segment (format §3.2), with the file offset it sits at. */
record Slot(long generation, long commitOffset, long nextIndex, long lastAsqn, long lastTimestampUs,
        int nextLogNumber, long at) {
    static final int SIZE = 48;
    static final int SLOT0 = 96;
    static final int SLOT1 = 144;

    boolean sealed() {
        return nextLogNumber != 0;
    }

    /** Neither slot passes its generation and checksum check: what R-46 reads again for. */
    static boolean noneValid(byte[] b, int at) {
        return !valid(b, at) && !valid(b, at + SIZE);
    }

    private static boolean valid(byte[] b, int at) {
        return Bytes.u8(b, at) != 0 && Bytes.u4(b, at + 44) == Checksums.masked(b, at, 44);
    }

    /** Steps 1 to 8 of format §3.2 over the 96 slot bytes at {@code b[at..]}; a failure is {@code bad_header}. */
    static Slot choose(byte[] b, int at, int log, long baseIndex, String file) throws BinlogException {
        boolean ok0 = valid(b, at);
        boolean ok1 = valid(b, at + SIZE);
        if (!ok0 && !ok1) {
            throw bad(file, log, SLOT0, "no valid commit slot");
        }
        long g0 = Bytes.u8(b, at);
        long g1 = Bytes.u8(b, at + SIZE);
        if (ok0 && ok1 && g0 == g1) {
            throw bad(file, log, SLOT0, "both slots carry the same generation");
        }
        boolean first = ok0 && (!ok1 || Long.compareUnsigned(g0, g1) > 0);
        int p = first ? at : at + SIZE;
        Slot s = new Slot(Bytes.u8(b, p), Bytes.u8(b, p + 8), Bytes.u8(b, p + 16), Bytes.u8(b, p + 24),
                Bytes.u8(b, p + 32), Bytes.u4(b, p + 40), (Bytes.u8(b, p) & 1) == 0 ? SLOT0 : SLOT1);
        if (s.at != (first ? SLOT0 : SLOT1)) {
            throw bad(file, log, s.at, "generation in the wrong slot");
        }
        if (Long.compareUnsigned(s.commitOffset, Header.SIZE) < 0 || Long.compareUnsigned(s.nextIndex, baseIndex) < 0) {
            throw bad(file, log, s.at, "commit offset or next index out of range");
        }
        if (s.nextLogNumber != 0 && (s.nextLogNumber & 0xffffffffL) != (log & 0xffffffffL) + 1) {
            throw bad(file, log, s.at, "next log number");
        }
        if (s.lastAsqn < -1) {
            throw bad(file, log, s.at, "last asqn below -1");
        }
        return s;
    }

    private static BinlogException bad(String file, int log, long at, String why) {
        return new BinlogException(ErrorClass.BAD_HEADER, file, log, at, null, why);
    }
}
