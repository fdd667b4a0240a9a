package org.openbinlog.spark;

import java.io.IOException;
import java.util.Map;

import org.openbinlog.format.ForwardingStorage;
import org.openbinlog.format.Storage;

/**
 * A log directory whose stamps ({@link Storage#stamp}) the pieces of one task share: each piece lists the
 * directory and reads the headers it needs itself, but a file's stamp is looked at once a task (a stat each on
 * disk), so that a task of many small segments, each of whose parts asks for the stamps of every segment below
 * its own, makes one look per file rather than one per file and piece. Its parts then trust a header checked
 * by the plan while the file is as the task first found it.
 */
final class TaskStamps extends ForwardingStorage {
    private final Map<String, Stamp> seen;

    /** {@code seen}: the stamps the task found so far in this directory, which this adds to. */
    TaskStamps(Storage inner, Map<String, Stamp> seen) {
        super(inner);
        this.seen = seen;
    }

    @Override
    public Stamp stamp(String name) throws IOException {
        Stamp stamp = seen.get(name);
        if (stamp == null) {
            stamp = inner.stamp(name);
            if (stamp != null) {
                seen.put(name, stamp);
            }
        }
        return stamp;
    }
}
