package org.openbinlog.format;

import java.io.IOException;

/** A failure with its error class (format §12) and where it was found; a field is null when it does not apply. */
public final class BinlogException extends IOException {
    private static final long serialVersionUID = 1L;

    public final ErrorClass errorClass;
    public final String file;
    public final Integer log;
    public final Long offset;
    public final Long index;

    public BinlogException(ErrorClass errorClass, String file, Integer log, Long offset, Long index, String message,
            Throwable cause) {
        super(describe(errorClass, file, log, offset, index, message), cause);
        this.errorClass = errorClass;
        this.file = file;
        this.log = log;
        this.offset = offset;
        this.index = index;
    }

    public BinlogException(ErrorClass errorClass, String file, Integer log, Long offset, Long index, String message) {
        this(errorClass, file, log, offset, index, message, null);
    }

    private static String describe(ErrorClass c, String file, Integer log, Long offset, Long index, String message) {
        StringBuilder s = new StringBuilder(c.specName());
        if (file != null) {
            s.append(" in ").append(file);
        }
        if (log != null) {
            s.append(" log=").append(Integer.toUnsignedString(log));
        }
        if (offset != null) {
            s.append(" offset=").append(Long.toUnsignedString(offset));
        }
        if (index != null) {
            s.append(" index=").append(Long.toUnsignedString(index));
        }
        return message == null || message.isEmpty() ? s.toString() : s.append(": ").append(message).toString();
    }
}
