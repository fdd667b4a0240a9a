package org.openbinlog.format;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * The entries of a segment's usable index that pass the entry check of index §18.5, found by the binary search
 * of SEEK with an index: step 1 (both entries' checksums, the order and ranges of offsets and indexes) here,
 * step 2 (landing) by the walk. Each entry is checked at most once. An entry that fails is never used, and
 * reported as nothing.
 */
final class CheckedEntries {
    /** Step 2 of the entry check: a committed-mode walk from a record boundary lands on the entry. */
    interface Landing {
        boolean lands(long from, long fromIndex, IndexFile.Entry to);
    }

    private final IndexFile index;
    private final long baseIndex;
    private final long s;
    private final long endIndex;
    private final Landing landing;
    private final Map<Long, IndexFile.Entry> checked = new HashMap<>();

    CheckedEntries(IndexFile index, long baseIndex, long s, long endIndex, Landing landing) {
        this.index = index;
        this.baseIndex = baseIndex;
        this.s = s;
        this.endIndex = endIndex;
        this.landing = landing;
    }

    /** Entry {@code k} when it passes the entry check; null otherwise, or when there is no entry k. */
    IndexFile.Entry entry(long k) {
        if (k < 0 || k >= index.entryCount) {
            return null;
        }
        if (checked.containsKey(k)) {
            return checked.get(k);
        }
        IndexFile.Entry found = check(k);
        checked.put(k, found);
        return found;
    }

    private IndexFile.Entry check(long k) {
        IndexFile.Entry entry = index.entry(k);
        IndexFile.Entry previous = k == 0 ? new IndexFile.Entry(baseIndex, Header.SIZE, 0) : index.entry(k - 1);
        if (entry == null || previous == null) {
            return null;
        }
        // Offsets and indexes are unsigned; S is at most 2^63 - 1, so an offset below it compares signed alike.
        boolean after = k == 0 || (Long.compareUnsigned(previous.offset(), entry.offset()) < 0
                && Long.compareUnsigned(previous.index(), entry.index()) < 0);
        boolean within = Long.compareUnsigned(previous.offset(), Header.SIZE) >= 0
                && Long.compareUnsigned(entry.offset(), s) < 0
                && Long.compareUnsigned(previous.index(), baseIndex) >= 0
                && Long.compareUnsigned(entry.index(), endIndex) < 0
                && Long.compareUnsigned(entry.offset(), Header.SIZE) >= 0
                && Long.compareUnsigned(entry.index(), baseIndex) >= 0;
        if (!after || !within) {
            return null;
        }
        return landing.lands(previous.offset(), previous.index(), entry) ? entry : null;
    }

    /** The last entry {@code before} holds for, when it passes the entry check (SEEK with an index). */
    IndexFile.Entry atOrBefore(Predicate<IndexFile.Entry> before) {
        return entry(index.lastBefore(before));
    }

    /** The entry after the last one {@code before} holds for (entry 0 when none does), when it passes. */
    IndexFile.Entry after(Predicate<IndexFile.Entry> before) {
        long k = index.lastBefore(before);
        return k < -1 ? null : entry(k + 1);
    }

    /**
     * SPLIT with an index (index §18.5): for each offset in {@code wanted} (ascending), the checked entry at or
     * before it, when it lies beyond the cut before (beyond {@code from} for the first) and before {@code to};
     * a wanted cut with no such entry is left out, so the split before it runs on.
     */
    List<IndexFile.Entry> cuts(List<Long> wanted, long from, long to) {
        List<IndexFile.Entry> cuts = new ArrayList<>();
        long last = from;
        for (long x : wanted) {
            IndexFile.Entry cut = atOrBefore(entry -> Long.compareUnsigned(entry.offset(), x) <= 0);
            if (cut != null && cut.offset() > last && cut.offset() < to) {
                cuts.add(cut);
                last = cut.offset();
            }
        }
        return cuts;
    }
}
