package org.openbinlog.format;

import java.util.Arrays;
import java.util.Map;

/**
 * The segments whose header a plan read and found passing its checks and sealed, each with a digest of the file it
 * read: its name and its {@link Storage.Stamp}, taken before the header was read, of a file changed at least
 * {@link LogView#SETTLED_MS} before. A part trusts that check for a segment below its own while the file OPEN
 * finds for it now has the same name and stamp ({@link LogView#unchanged}), and reads the header of every other
 * segment below its own, so that one failing since planning still ends the walk (readers §10.4).
 *
 * <p>What this relies on (spec protocols): no protocol writes a byte of a sealed segment. A writer appends and
 * publishes slots in the last segment only, and one whose last segment is sealed first creates its successor and
 * goes on there (§6.2 steps 2 to 5, W-16, W-29); recovery and sealing act on unsealed segments only (§7.2, §8.5);
 * compression replaces a sealed segment by a new file under another name, {@code NNNNNNNN.dat.gz} or
 * {@code .zst}, and removes the plain one (§2.6, W-36); retention removes the lowest segments whole (§2.5, W-3).
 * So a header that passed sealed fails later only where its file was replaced, or written outside these protocols
 * (damage, an operator), and each of those changes the name OPEN finds or the stamp (the times of a write after
 * the plan's read differ from those of a file settled {@link LogView#SETTLED_MS} before it). An unsealed segment's
 * header is rewritten in place (a commit, §6.2 step 9; sealing, §8.5): it is not trusted, and read again. What no
 * stamp shows, bytes that change on the medium itself, is still met by the part of the segment below, which reads
 * the header after its own (END and NEXT), and reports it once; the parts above may then return their rows.
 */
public final class CheckedHeaders implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    /** Nothing checked: a part reads the header of every segment below its own. */
    public static final CheckedHeaders NONE = new CheckedHeaders(Map.of());

    private final int[] logs; // ascending
    private final long[] digests;

    CheckedHeaders(Map<Integer, Long> checked) {
        logs = checked.keySet().stream().mapToInt(Integer::intValue).sorted().toArray();
        digests = Arrays.stream(logs).mapToLong(checked::get).toArray();
    }

    /** How many segments it holds. */
    public int size() {
        return logs.length;
    }

    /** Whether the plan checked segment {@code log} in the file whose digest is {@code digest}. */
    boolean holds(int log, long digest) {
        int at = Arrays.binarySearch(logs, log);
        return at >= 0 && digests[at] == digest;
    }

    /** The digest of a file's name and stamp. */
    static long digest(String name, Storage.Stamp stamp) {
        return Storage.Stamp.mix(stamp.facts() ^ Storage.Stamp.of(0, name).facts());
    }
}
