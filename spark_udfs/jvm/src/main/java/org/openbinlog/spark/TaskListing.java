package org.openbinlog.spark;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongConsumer;

import org.openbinlog.format.ForwardingStorage;
import org.openbinlog.format.Storage;

/**
 * A log directory listed once a task: the listing a piece's reader starts from is the one the task's first
 * piece of the directory took, where each piece listed it again, the largest cost of a piece of a small segment (on
 * an object store, a request). A listing the walk asks for again (OPEN, readers §10.2.2 step 2: a segment the
 * listing shows cannot be opened, removed since) is a fresh one, which the task's later pieces then start from.
 * What a piece reads is therefore what a fresh listing gives: a segment removed since the task's listing is looked
 * for, found absent and listed again, as within one piece; a segment that appeared since is not one the plan reads
 * (it is selected out, {@link SelectedStorage}); compression's copy of a segment is found by its name (OPEN step 1).
 * A log directory removed since is missing as before: on disk a stat tells whether it is still there; elsewhere the
 * reader opens the last segment the listing shows, which is gone with it, and so lists the directory again, which
 * finds it gone. Where the listing is also what the stamps of the files come from ({@code HadoopStorage}: an object
 * store's ETags), the stamps it told are kept with it, and a piece that starts from it is told those. Every listing
 * made is counted ({@link ListingsMetric}).
 */
final class TaskListing extends ForwardingStorage {
    /** A listing a task took of one log directory: its names and, off the local disk, the stamps it told. */
    record Listed(List<String> names, Map<String, Stamp> stamps) {}

    private final String key;
    private final Path local;
    private final Map<String, Listed> listings;
    private final LongConsumer counted;
    private boolean listed;
    /** The stamps of the task's listing this piece started from, off the local disk; null: the inner storage's. */
    private Map<String, Stamp> stamps;

    /**
     * {@code directory}: the log directory, as the pieces of the task name it; {@code local}: its local path, null
     * for another file system; {@code listings}: the task's listings of its log directories, which this uses and
     * adds to; {@code counted}: told of each listing made.
     */
    TaskListing(Storage inner, String directory, Path local, Map<String, Listed> listings, LongConsumer counted) {
        super(inner);
        this.key = directory;
        this.local = local;
        this.listings = listings;
        this.counted = counted;
    }

    @Override
    public List<String> list() throws IOException {
        Listed task = listed ? null : listings.get(key);
        listed = true;
        if (task != null) {
            // A directory gone is NoSuchFileException, one that cannot be read an IOException, as a listing's.
            if (local != null && !Files.readAttributes(local, BasicFileAttributes.class).isDirectory()) {
                throw new NotDirectoryException(local.toString());
            }
            stamps = task.stamps();
            return task.names();
        }
        stamps = null;
        List<String> names = List.copyOf(inner.list());
        counted.accept(1);
        Map<String, Stamp> told = null;
        if (local == null) {
            told = new HashMap<>();
            for (String name : names) {
                Stamp stamp = inner.stamp(name); // what the listing said: no request
                if (stamp != null) {
                    told.put(name, stamp);
                }
            }
        }
        listings.put(key, new Listed(names, told));
        return names;
    }

    @Override
    public Stamp stamp(String name) throws IOException {
        return stamps != null ? stamps.get(name) : inner.stamp(name);
    }
}
