package org.openbinlog.spark;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.List;
import java.util.Map;
import java.util.function.LongConsumer;

import org.openbinlog.format.ForwardingStorage;
import org.openbinlog.format.Storage;

/**
 * A log directory listed once a task where it is local: the listing a piece's reader starts from is the one
 * the task's first piece of the directory took, where each piece listed it again, the largest cost of a piece of a
 * small segment. A listing the walk asks for again (OPEN, readers §10.2.2 step 2: a segment the listing shows cannot
 * be opened, removed since) is a fresh one, which the task's later pieces then start from. What a piece reads is
 * therefore what a fresh listing gives: a segment removed since the task's listing is looked for, found absent and
 * listed again, as within one piece; a segment that appeared since is not one the plan reads (it is selected out,
 * {@link SelectedStorage}); compression's copy of a segment is found by its name (OPEN step 1). A stat tells
 * whether the directory is still there, so that one removed since is missing as before. Other file systems are
 * listed once a piece: there a listing is also what the stamps of the files come from ({@code HadoopStorage}).
 * Every listing made is counted ({@link ListingsMetric}).
 */
final class TaskListing extends ForwardingStorage {
    private final Path directory;
    private final Map<Path, List<String>> listings;
    private final LongConsumer counted;
    private boolean listed;

    /**
     * {@code directory}: the local directory, null for another file system; {@code listings}: the task's listings
     * of its local log directories, which this uses and adds to; {@code counted}: told of each listing made.
     */
    TaskListing(Storage inner, Path directory, Map<Path, List<String>> listings, LongConsumer counted) {
        super(inner);
        this.directory = directory;
        this.listings = listings;
        this.counted = counted;
    }

    @Override
    public List<String> list() throws IOException {
        List<String> names = listed || directory == null ? null : listings.get(directory);
        listed = true;
        if (names != null) {
            // A directory gone is NoSuchFileException, one that cannot be read an IOException, as a listing's.
            if (!Files.readAttributes(directory, BasicFileAttributes.class).isDirectory()) {
                throw new NotDirectoryException(directory.toString());
            }
            return names;
        }
        names = List.copyOf(inner.list());
        counted.accept(1);
        if (directory != null) {
            listings.put(directory, names);
        }
        return names;
    }
}
