package org.openbinlog.format;

import java.io.IOException;

/** Where a walk delivers, in walk order (readers §10.2.3), its records and, when tolerant, its damage list. */
public interface Sink {
    void record(Record r) throws IOException;

    default void damage(Damage d) throws IOException {}
}
