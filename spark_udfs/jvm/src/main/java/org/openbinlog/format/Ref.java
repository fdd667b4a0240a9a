package org.openbinlog.format;

import java.util.regex.Pattern;

/** A ref, {@code (log, offset, index)}, in its text or binary form (readers §10.6, R-28). Fields are unsigned. */
public record Ref(int log, long offset, long index) {
    private static final Pattern TEXT = Pattern.compile("[0-9]{1,10}:[0-9]{1,20}:[0-9]{1,20}");
    private static final int BINARY_SIZE = 20;

    /** The text form {@code LOG:OFFSET:INDEX}, white space (space, tab, CR, LF) around it ignored. */
    public static Ref parse(String text) throws BinlogException {
        String t = strip(text);
        if (!TEXT.matcher(t).matches()) {
            throw malformed("not LOG:OFFSET:INDEX");
        }
        String[] parts = t.split(":");
        try {
            long log = Long.parseLong(parts[0]);
            if (log < 1 || log > 0xffffffffL) {
                throw malformed("log number out of range");
            }
            return new Ref((int) log, Long.parseUnsignedLong(parts[1]), Long.parseUnsignedLong(parts[2]));
        } catch (NumberFormatException e) {
            throw malformed("number out of range");
        }
    }

    /** The 20-byte binary form: u4 log, u8 offset, u8 index, big-endian. */
    public static Ref parse(byte[] binary) throws BinlogException {
        if (binary.length != BINARY_SIZE) {
            throw malformed("a binary ref is 20 bytes, not " + binary.length);
        }
        int log = Bytes.u4(binary, 0);
        if (log == 0) {
            throw malformed("log number 0");
        }
        return new Ref(log, Bytes.u8(binary, 4), Bytes.u8(binary, 12));
    }

    private static String strip(String s) {
        int from = 0;
        int to = s.length();
        while (from < to && " \t\r\n".indexOf(s.charAt(from)) >= 0) {
            from++;
        }
        while (to > from && " \t\r\n".indexOf(s.charAt(to - 1)) >= 0) {
            to--;
        }
        return s.substring(from, to);
    }

    private static BinlogException malformed(String why) {
        return new BinlogException(ErrorClass.INVALID_REF, null, null, null, null, why);
    }
}
