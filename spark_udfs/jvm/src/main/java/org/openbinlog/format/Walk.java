package org.openbinlog.format;

/**
 * The walk of readers §10.2, stated once: its procedures READ-LOG, OPEN (in {@link LogView}), WALK, END,
 * RECORD, DAMAGE, RESYNC, WALK-V1, NEXT, BROKEN, FROM-REF and SPLIT, each a method of that name. The rules
 * they call live where the spec states them: the header checks in {@link Header}, the record checks in
 * {@link RecordCheck}, the resynchronisation conditions and the boundary search in {@link Search}.
 * A walk is used for one read.
 */
final class Walk {
    /** How the walk of one segment ended. */
    private enum Stop {
        /** At S, or at S' after damage with nothing to resume at: NEXT decides. */
        SEGMENT_END,
        /** A commit point that went back (readers §10.3), or the end of a split: nothing follows. */
        WALK_END
    }

    private final LogView view;
    private final boolean tolerant;
    private final Sink sink;
    private final RecordCheck check = new RecordCheck();
    private final Search search = new Search();

    // The segment walked: N, its header and file, and C, S, I_S of readers §10.2.1.
    private int n;
    private Header h;
    private SegmentFile f;
    private Slot slot;
    private long c;
    private boolean known;
    private long s;
    private long endIndex;
    private long endAsqn; // the A a walk without damage has at S: what PLAN carries into the next segment
    // A PART's first part: the segment READ-LOG walks before it (0: none, or A is settled) and the A carried into it.
    private int carriedFrom;
    private long fromCarried;
    // E and A, carried over every segment.
    private long e;
    private long a;
    // A split [s, t): t, and b(t) with its index (-1: none).
    private boolean split;
    private long t;
    private long bt = -1;
    private long btIndex;

    Walk(LogView view, boolean tolerant, Sink sink) {
        this.view = view;
        this.tolerant = tolerant;
        this.sink = sink;
    }

    /** READ-LOG: the log from its start. */
    Torn readLog() throws java.io.IOException {
        if (view.empty()) {
            if (view.lock()) {
                return null;
            }
            throw new BinlogException(ErrorClass.IO_ERROR, view.storage.describe(""), null, null, null,
                    "not a log directory: it holds neither a segment nor LOCK");
        }
        Header first = null;
        int lowest = -1;
        for (int attempt = 0; first == null; attempt++) {
            lowest = view.lowest();
            if (lowest < 0) {
                return null; // only a blank last segment: the log is empty
            }
            first = view.header(lowest);
            if (first == null && attempt >= 8) {
                throw new BinlogException(ErrorClass.IO_ERROR, view.storage.describe(""), lowest, null, null,
                        "the lowest segment keeps disappearing");
            }
        }
        e = first.legacy() ? 1 : first.baseIndex;
        a = -1;
        enter(lowest, first);
        return walkOn(first.firstRecord());
    }

    /** FROM-REF, after the ref (readers §10.6, R-29, R-30; legacy-v1 §B.6 and R-38 for version 1). */
    Torn fromRef(int log, long offset, long index) throws java.io.IOException {
        Header r = Integer.compareUnsigned(log, LogView.MAX_LOG_NUMBER) > 0 || log == 0 || !view.present(log)
                ? null : view.header(log);
        if (r == null) {
            throw invalidRef(log, offset, index, "no such segment");
        }
        enter(log, r);
        if (r.legacy()) {
            long lep = Offsets.clamp(r.lastElementPosition);
            if (offset < Header.V1_FIRST_RECORD || offset >= lep || check.legacy(f, offset, lep, false) != null) {
                throw invalidRef(log, offset, index, "no version 1 record at that offset");
            }
            e = index + 1;
            a = -1;
            return walkOn(check.end);
        }
        end();
        if (offset < Header.SIZE || offset >= s) {
            throw invalidRef(log, offset, index, "offset outside the segment's records");
        }
        ErrorClass failed = check.committed(f, offset, offset < c ? c : s, index, -1, false);
        if (failed != null || check.frame != RecordCheck.FRAME_DATA) {
            throw invalidRef(log, offset, index, failed == null ? "not a data record" : failed.specName());
        }
        e = index + 1;
        a = check.asqn;
        return walkOn(check.end);
    }

    /** SPLIT(N, s, t) of readers §10.2.2; tolerant as readers §10.5 "Tolerant splits" says. */
    void split(int log, long start, long stop) throws java.io.IOException {
        if (log == view.blank()) {
            return; // a blank last segment holds no record
        }
        Header r = enterSplittable(log);
        split = true;
        t = stop;
        end();
        long bound = Math.min(s, f.size());
        long bs = search.boundary(f, start, bound, r.baseIndex, endIndex);
        if (bs < 0 || bs >= t) {
            return;
        }
        long first = search.index;
        bt = search.boundary(f, t, bound, r.baseIndex, endIndex);
        btIndex = search.index;
        e = first;
        a = -1;
        walk(bs);
    }

    /**
     * PLAN: READ-LOG's segments in its order, each cut into splits of about {@code step} bytes, without reading
     * a record: END and NEXT of each segment as the walk makes them, with the E and A a walk without damage has
     * at S. The planning walk is tolerant and lists nothing: what NEXT reports is reported by the part that ends
     * at S. It stops at what READ-LOG stops at (a header that fails its checks is raised by the part before it,
     * or by the first part); a log with a version 1 segment is one part, read by READ-LOG itself.
     */
    java.util.List<Part> plan(long step) throws java.io.IOException {
        java.util.List<Part> parts = new java.util.ArrayList<>();
        int lowest = view.lowest();
        if (lowest < 0) {
            return view.empty() && !view.lock() ? java.util.List.of(Part.wholeLog()) : parts; // R-42 raised there
        }
        Header first;
        try {
            first = view.header(lowest);
        } catch (BinlogException e) {
            return java.util.List.of(new Part(lowest, 0, Part.TO_END, -1, 0, -1)); // raised by its only part
        }
        if (first == null || first.legacy() || view.presentSegments().stream().anyMatch(this::legacy)) {
            return java.util.List.of(Part.wholeLog());
        }
        e = first.baseIndex;
        a = -1;
        enter(lowest, first);
        int from = 0;
        long fromCarried = -1;
        while (true) {
            end();
            long carried = a;
            long readable = Math.min(f.size(), s);
            for (long start = 0; ; start += step) {
                boolean last = readable - start <= step;
                parts.add(new Part(n, start, last ? Part.TO_END : start + step, carried, from, fromCarried));
                if (last) {
                    break;
                }
            }
            from = n;
            fromCarried = carried;
            e = endIndex;
            a = endAsqn;
            try {
                if (!next()) {
                    return parts;
                }
            } catch (BinlogException stop) {
                return parts; // the part that ends at S raises it
            }
        }
    }

    private boolean legacy(int log) {
        try {
            Header header = view.header(log);
            return header != null && header.legacy();
        } catch (BinlogException e) {
            return false;
        }
    }

    /**
     * PART: one part of PLAN's. The first part of a segment starts where READ-LOG enters it, with E its base
     * index and A carried; a later one starts at b(start) as SPLIT does. A part that ends before the segment
     * end stops at b(stop) as SPLIT does; the last one walks to S and makes NEXT's checks, reporting what NEXT
     * reports, without walking into the next segment. Consecutive parts of PLAN therefore return READ-LOG's
     * records and damage, except where the A carried into a segment is not the A READ-LOG has there (damage
     * in the segment before, or a slot whose last asqn its records disagree with). Such an A lies below READ-LOG's
     * unless a slot understates: where the first asqn of the segment fails step 8 after the A carried, the first
     * part walks the segment before to learn READ-LOG's A ({@link #walkedAsqn}); where it passes after the A
     * carried and would fail after READ-LOG's, the last part of the segment before raises {@code ambiguous_split}.
     */
    void part(Part part) throws java.io.IOException {
        int log = part.log();
        Header r = enterSplittable(log);
        end();
        long o;
        if (part.first()) {
            o = r.firstRecord();
            e = r.baseIndex;
            a = part.carriedAsqn();
            carriedFrom = part.from();
            fromCarried = part.fromCarriedAsqn();
        } else {
            o = search.boundary(f, part.start(), Math.min(s, f.size()), r.baseIndex, endIndex);
            if (o < 0 || o >= part.stop()) {
                return;
            }
            e = search.index;
            a = -1;
        }
        if (!part.last()) {
            split = true;
            t = part.stop();
            bt = search.boundary(f, t, Math.min(s, f.size()), r.baseIndex, endIndex);
            btIndex = search.index;
            walk(o);
            return;
        }
        if (walk(o) != Stop.SEGMENT_END) {
            return;
        }
        long walked = a;
        long planned = endAsqn;
        if (next() && walked != planned && carriedAsqnMatters(walked, planned)) {
            throw new BinlogException(ErrorClass.AMBIGUOUS_SPLIT, f.file(), n, null, e,
                    "the asqn carried into this segment by the walk (" + walked + ") is not the one its predecessor's"
                            + " end gives (" + planned + "), and its first asqn is judged otherwise by each:"
                            + " read this log in one part");
        }
    }

    /** The A READ-LOG has at the end of segment {@code log}, entered with A {@code carried}: its walk again. */
    private long walkedAsqn(int log, long carried) throws java.io.IOException {
        Walk again = new Walk(view, true, record -> {});
        Header header = view.header(log);
        again.enter(log, header);
        again.end();
        again.e = header.baseIndex;
        again.a = carried;
        again.walk(header.firstRecord());
        return again.a;
    }

    /**
     * Whether the first part of the segment NEXT entered, carrying {@code planned}, judges its first asqn
     * otherwise than READ-LOG, carrying {@code walked}, without noticing: the asqn passes step 8 of format §4.3.1
     * after {@code planned} and fails it after {@code walked} (the first part corrects the other way round itself).
     * Damage before it does not depend on A, and the resynchronisation after it sets A to -1; a segment without
     * such a record carries the difference on to the next, which is taken to matter.
     */
    private boolean carriedAsqnMatters(long walked, long planned) throws java.io.IOException {
        end();
        long o = h.firstRecord();
        long index = e;
        while (o < s) {
            if (check.committed(f, o, o < c ? c : s, index, -1, false) != null) {
                return false;
            }
            if (check.frame == RecordCheck.FRAME_DATA) {
                if (check.asqn != -1) {
                    return RecordCheck.asqnFollows(check.asqn, planned) && !RecordCheck.asqnFollows(check.asqn, walked);
                }
                index = check.index + 1;
            }
            o = check.end;
        }
        return true;
    }

    /** Enters version 2 segment {@code log} for a split or a part: a version 1 one cannot be split. */
    private Header enterSplittable(int log) throws java.io.IOException {
        Header r = view.present(log) ? view.header(log) : null;
        if (r == null) {
            throw new BinlogException(ErrorClass.IO_ERROR, view.storage.describe(LogView.name(log)), log, null, null,
                    "no such segment");
        }
        if (r.legacy()) {
            throw new BinlogException(ErrorClass.UNSUPPORTED_VERSION, view.storage.describe(LogView.name(log)), log,
                    4L, null, "version 1 records carry nothing to find a boundary by");
        }
        enter(log, r);
        return r;
    }

    /** Walks N from o, then on through NEXT until the log ends; the torn tail of the segment it ends with. */
    private Torn walkOn(long o) throws java.io.IOException {
        while (true) {
            Stop stop = h.legacy() ? walkV1(o) : walk(o);
            if (stop == Stop.WALK_END || !next()) {
                return torn();
            }
            o = h.firstRecord();
        }
    }

    private void enter(int log, Header header) throws BinlogException {
        n = log;
        h = header;
        f = view.segment(log);
        if (f == null) {
            throw new BinlogException(ErrorClass.IO_ERROR, view.storage.describe(LogView.name(log)), log, null, null,
                    "the segment went away while it was read");
        }
        slot = header.active;
        c = slot == null ? 0 : Offsets.clamp(slot.commitOffset());
        known = false;
    }

    /** WALK(N, o): the committed records of version 2 segment N from o. */
    private Stop walk(long o) throws java.io.IOException {
        while (true) {
            boolean record = false;
            if (o == c) { // step 2.1
                if (!split) {
                    end();
                    if (c < o) {
                        return Stop.WALK_END; // a commit point that went back: the log ends here for now
                    }
                    record = c > o;
                }
                if (!record) {
                    checkNextIndex();
                }
            }
            if (!record && bt >= 0 && o >= bt) { // step 2.2, splits only
                if (o == bt) {
                    checkAtStop();
                } else {
                    report(ErrorClass.AMBIGUOUS_SPLIT, bt, btIndex, 0, null,
                            "the boundary found from the stop offset lies inside a record: split elsewhere or read sequentially");
                }
                return Stop.WALK_END;
            }
            if (!record && known && o == s) { // step 2.3
                return split ? Stop.WALK_END : Stop.SEGMENT_END;
            }
            o = record(o); // step 2.4
            if (o < 0) {
                return split ? Stop.WALK_END : Stop.SEGMENT_END;
            }
        }
    }

    /** R-39 at C: the walk expects the active slot's next_index; a tolerant walk takes the slot's (§10.4 row 5). */
    private void checkNextIndex() throws java.io.IOException {
        if (e != slot.nextIndex()) {
            report(ErrorClass.BAD_HEADER, slot.at(), e, 0, slot.nextIndex(),
                    "the walk expects another index at the commit point than the slot's next_index");
            e = slot.nextIndex();
        }
    }

    /** WALK step 2.2 at b(t): steps 7 and 8 of format §4.3.1, which only this split can check there. */
    private void checkAtStop() throws java.io.IOException {
        byte[] w = f.window(bt, RecordCheck.HEADER);
        long index = Bytes.u8(w, f.at(bt) + 8);
        long asqn = Bytes.u8(w, f.at(bt) + 16);
        if (index != e) {
            report(ErrorClass.INDEX_DISCONTINUITY, bt, e, 0, btIndex, "at the split's stop boundary");
        } else if (!RecordCheck.asqnFollows(asqn, a)) {
            report(ErrorClass.ASQN_NOT_INCREASING, bt, e, 0, btIndex, "at the split's stop boundary");
        }
    }

    /** END(N): S, I_S and C of version 2 segment N (protocols §6.1, and §8.4 for a finished segment). */
    private void end() throws java.io.IOException {
        Header next = view.present(n + 1) ? view.header(n + 1) : null; // §8.4 step 1 checks N+1's header first
        Header again = LogView.read(f); // the slots from the file again
        if (again.legacy()) {
            throw new BinlogException(ErrorClass.BAD_HEADER, f.file(), n, 4L, null,
                    "the segment changed version while it was read");
        }
        slot = again.active;
        c = Offsets.clamp(slot.commitOffset());
        s = c;
        endIndex = slot.nextIndex();
        endAsqn = slot.lastAsqn();
        known = true;
        if (next != null && !slot.sealed() && !next.legacy()) {
            tailWalk(next.baseIndex);
        }
    }

    /** Protocols §8.4 step 4: format §4.3.2 from C, with the stop rule "s" at the successor's base index. */
    private void tailWalk(long successorBase) throws BinlogException {
        long o = c;
        long index = slot.nextIndex();
        long asqn = slot.lastAsqn();
        while (Long.compareUnsigned(index, successorBase) < 0 && o < f.size()) {
            if (o + 5 <= f.size() && f.window(o + 4, 1)[f.at(o + 4)] == 0) {
                break; // "unwritten"
            }
            if (check.committed(f, o, Offsets.NO_BOUND, index, asqn, false) != null) {
                break;
            }
            if (check.frame == RecordCheck.FRAME_DATA) {
                index = check.index + 1;
                asqn = check.asqn == -1 ? asqn : check.asqn;
            }
            o = check.end;
        }
        s = o;
        endIndex = index;
        endAsqn = asqn;
    }

    /** RECORD(o): the new o, or -1 when the walk of N (or the split) ended at damage. */
    private long record(long o) throws java.io.IOException {
        boolean keep = !split || o < (tolerant ? (bt >= 0 ? bt : s) : t);
        ErrorClass failed = check.committed(f, o, o < c ? c : s, e, a, keep);
        if (failed == ErrorClass.ASQN_NOT_INCREASING && carriedFrom != 0) {
            a = walkedAsqn(carriedFrom, fromCarried); // a PART's carried A may lie above READ-LOG's
            carriedFrom = 0;
            failed = check.committed(f, o, o < c ? c : s, e, a, keep);
        }
        if (failed != null) {
            carriedFrom = 0;
            return damage(failed, o);
        }
        if (check.frame == RecordCheck.FRAME_DATA) {
            if (check.asqn != -1) {
                carriedFrom = 0; // from here on A comes from this segment's records
            }
            if (keep) {
                sink.record(new Record(n, o, check.index, check.asqn, check.timestampUs, check.payload, true));
            }
            e = check.index + 1;
            a = check.asqn == -1 ? a : check.asqn;
        }
        return check.end;
    }

    /** DAMAGE(class, o): the new o when a tolerant walk resumes in N, -1 when the walk of N ended. */
    private long damage(ErrorClass failed, long o) throws java.io.IOException {
        if (!tolerant) {
            throw new BinlogException(failed, f.file(), n, o, e, "record check");
        }
        if (h.legacy()) { // step 3: nothing to resynchronise on (§10.4 row 2)
            sink.damage(new Damage(failed, n, o, e, "record check", Math.max(0, Math.min(s, f.size()) - o), null));
            return -1;
        }
        return resync(failed, o);
    }

    /** RESYNC(o) in version 2 segment N (readers §10.4, R-25). */
    private long resync(ErrorClass failed, long o) throws java.io.IOException {
        if (!known) {
            end();
        }
        long bound = Math.min(s, f.size());
        long p = search.candidate(f, o + 1, bound, split && bt >= 0 ? bt : Long.MAX_VALUE, e, endIndex);
        if (p >= 0) { // row 1
            sink.damage(new Damage(failed, n, o, e, "record check", p - o, search.index));
            e = search.index;
            a = -1;
            return p;
        }
        if (split && bt >= 0) { // row 3: reading resumes at b(t), in the split that starts at t
            sink.damage(new Damage(failed, n, o, e, "record check", Math.max(0, bt - o), btIndex));
            return -1;
        }
        sink.damage(new Damage(failed, n, o, e, "record check", Math.max(0, bound - o), null)); // row 2
        return -1;
    }

    /** WALK-V1(N, o): the records of version 1 segment N (legacy-v1 §B.4), numbered on from E. */
    private Stop walkV1(long o) throws java.io.IOException {
        s = Offsets.clamp(h.lastElementPosition);
        while (o < s) {
            ErrorClass failed = check.legacy(f, o, s, true);
            if (failed != null) {
                damage(failed, o);
                return Stop.SEGMENT_END;
            }
            sink.record(new Record(n, o, e, -1, 0, check.payload, false));
            e++;
            o = check.end;
        }
        return Stop.SEGMENT_END;
    }

    /** NEXT(N): moves the walk to the next segment (true), or the log ends with N (false). */
    private boolean next() throws java.io.IOException {
        Header following = view.present(n + 1) ? view.header(n + 1) : null; // step 3
        if (following == null) {
            if (view.listedAbove(n + 1) && (view.lowest() < 0 || view.lowest() > n)) {
                // Retention removed N while it was read: not damage (step 4, before the tables).
                throw new BinlogException(ErrorClass.INVALID_REF, view.storage.describe(LogView.name(n + 1)), n + 1,
                        null, e, "retention overtook the walk: read again from the lowest segment present");
            }
            if (!(h.legacy() && h.closed()) && !view.listedAbove(n + 1)) {
                return false; // the last segment: the log ends here for now
            }
            return broken(null); // a missing segment, or the successor a closed version 1 segment lacks
        }
        if (h.legacy() && !h.closed()) {
            if (!view.listedAbove(n + 1) && following.legacy() && !following.closed()
                    && following.lastElementPosition == Header.V1_FIRST_RECORD) {
                return false; // the empty leftover of a cutover that died: the log ends at N (legacy-v1 §B.4)
            }
            return broken(0L);
        }
        if (!h.legacy() && !following.legacy() && (!following.sameLog(h) || following.baseIndex != e)) {
            return broken(0L);
        }
        moveTo(n + 1, following);
        return true;
    }

    /** NEXT step 5. */
    private void moveTo(int k, Header header) throws BinlogException {
        if (!header.legacy() && h.legacy()) {
            e = header.baseIndex; // a boundary between versions (legacy-v1 §B.4)
        }
        enter(k, header);
    }

    /** BROKEN(offset): a broken chain at N+1; offset null where N+1 is absent. */
    private boolean broken(Long offset) throws java.io.IOException {
        int missing = n + 1;
        String file = view.storage.describe(LogView.name(missing));
        if (!tolerant) {
            throw new BinlogException(ErrorClass.CHAIN_BROKEN, file, missing, offset, e, "broken chain");
        }
        long o = offset == null ? -1 : offset;
        int k = view.present(missing) ? missing : view.presentAbove(missing);
        Header header = k < 0 ? null : view.header(k);
        if (header == null) { // §10.4 row 4, with no K
            sink.damage(new Damage(ErrorClass.CHAIN_BROKEN, missing, o, e, "broken chain", 0, null));
            return false;
        }
        long expected = e;
        if (!header.legacy()) {
            e = header.baseIndex;
        }
        sink.damage(new Damage(ErrorClass.CHAIN_BROKEN, missing, o, expected, "broken chain", 0,
                header.legacy() ? null : e));
        moveTo(k, header);
        return true;
    }

    /** The torn tail of N, the segment the log ends with: non-zero bytes beyond its commit point. */
    private Torn torn() throws BinlogException {
        long commit = h.legacy() ? Offsets.clamp(h.lastElementPosition) : c;
        f.stat();
        return f.firstNonZero(commit) < f.size() ? new Torn(n, commit) : null;
    }

    /** A report of the walk: a strict walk ends with it, a tolerant one lists it as damage (readers §10.4). */
    private void report(ErrorClass c, long offset, long index, long skipped, Long resume, String why)
            throws java.io.IOException {
        if (!tolerant) {
            throw new BinlogException(c, f.file(), n, offset, index, why);
        }
        sink.damage(new Damage(c, n, offset, index, why, skipped, resume));
    }

    private BinlogException invalidRef(int log, long offset, long index, String why) {
        return new BinlogException(ErrorClass.INVALID_REF, view.storage.describe(LogView.name(log)), log, offset,
                index, why);
    }
}
