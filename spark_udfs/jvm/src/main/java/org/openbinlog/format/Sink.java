package org.openbinlog.format;

import java.io.IOException;
import java.util.Arrays;

/** Where a walk delivers, in walk order (readers §10.2.3), its records and, when tolerant, its damage list. */
public interface Sink {
    void record(Record r) throws IOException;

    /**
     * A record whose payload is {@code length} bytes of {@code bytes} from {@code at}: the walk's own buffer,
     * to be read during the call only and never changed. The walk delivers every record here; a sink that
     * copies payloads where it keeps them takes them without the copy a {@link Record} holds.
     */
    default void record(int log, long offset, long index, long asqn, long timestampUs, boolean checked,
            byte[] bytes, int at, int length) throws IOException {
        record(new Record(log, offset, index, asqn, timestampUs, Arrays.copyOfRange(bytes, at, at + length),
                checked));
    }

    default void damage(Damage d) throws IOException {}
}
