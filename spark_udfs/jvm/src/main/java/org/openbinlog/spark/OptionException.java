package org.openbinlog.spark;

/** An option of the read that cannot be used; the message names it. */
public final class OptionException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    OptionException(String message) {
        super(message);
    }
}
