package org.openbinlog.format;

/**
 * The walk of readers §10.2, stated once: its procedures READ-LOG, OPEN (in {@link LogView}), WALK, END,
 * RECORD, DAMAGE, RESYNC, WALK-V1, NEXT, BROKEN, FROM-REF and SPLIT, each a method of that name. The rules
 * they call live where the spec states them: the header checks in {@link Header}, the record checks in
 * {@link RecordCheck}, the resynchronisation conditions and the boundary search in {@link Search}; the
 * landing of the entry check of a sparse index (index §18.5, {@link CheckedEntries}) is a walk too. A walk is
 * used for one read.
 */
final class Walk {
    /** How the walk of one segment ended. */
    private enum Stop {
        /** At S, or at S' after damage with nothing to resume at: NEXT decides. */
        SEGMENT_END,
        /** A commit point that went back (readers §10.3), or the end of a split: nothing follows. */
        WALK_END
    }

    /** What the reference's walk reads of a segment at a time (walk.READ_CHUNK), where a record needs more bytes. */
    static final int READ_CHUNK = 1 << 20;

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
    private long endTimestamp; // the last_timestamp_us at S: what PLAN prunes by (W-9)
    // A PART's first part: A was carried from the segment before, not yet settled by an asqn of this segment.
    private boolean carriedUnsettled;
    // A part's walk landed on b(stop), whose record passed steps 7 and 8 of format §4.3.1 and sets no A (it has no
    // asqn): the A the part holds is READ-LOG's beyond b(stop) too, up to the first asqn.
    private boolean aPassesStop;
    // A PART of a segment whose END raises, which walks it alone: END is made where READ-LOG makes it (at the first
    // record damage of a tolerant walk, RESYNC step 1, or at C), not at the start.
    private boolean endAtC;
    // PLAN ends at a compressed segment whose archive fails ({@link #unpacks}); false: a plan of the segments' order
    // only, which does not unpack them.
    private boolean archivesChecked = true;
    // How far the walk has read a compressed segment N, as the reference's walk reads it ({@link #feed}).
    private long fed;
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
            if (offset < Header.V1_FIRST_RECORD || offset >= lep || check.legacy(f, offset, lep) != null) {
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
        ErrorClass failed = check.committed(f, offset, offset < c ? c : s, index, -1);
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
        if (bt >= 0 && aPassesStop && a != -1) {
            lookPast(bt, Part.TO_END, false); // LOOK(b(t)): the split that starts at b(t) knows no earlier asqn
        }
    }

    /**
     * PLAN: READ-LOG's segments in its order, each cut into splits of about {@code step} bytes, without reading
     * a record: END and NEXT of each segment as the walk makes them, with the E and A a walk without damage has
     * at S. The planning walk is tolerant and lists nothing: what NEXT reports is reported by the part that ends
     * at S. It stops at what READ-LOG stops at (a header that fails its checks is raised by the part before it,
     * or by the first part); a log with a version 1 segment is one part, read by READ-LOG itself.
     */
    java.util.List<Part> plan(long step) throws java.io.IOException {
        return plan(step, Bounds.ALL);
    }

    /**
     * PLAN narrowed to the rows {@code bounds} lets through. A segment whose rows cannot match is left out, judged
     * by its header and END as the Spark planner judges it (indexes base_index .. I_S - 1; timestamps, by W-9,
     * from the last_timestamp_us of its predecessor, when that is N - 1, to its own at S); and a segment with a
     * usable index is read only from the checked entry at or before its first row that can match to the checked
     * entry after its last ({@link #planSegment}). Either way a part at S makes NEXT's checks. Such a plan is a
     * seek, not a verification (index §18.5, "What an index changes"): damage in what it leaves out is not
     * reported; within what it reads, records and damage are READ-LOG's.
     */
    java.util.List<Part> plan(long step, Bounds bounds) throws java.io.IOException {
        java.util.List<Part> parts = new java.util.ArrayList<>();
        int lowest = view.lowest();
        if (lowest < 0) {
            return view.empty() && !view.lock() ? java.util.List.of(Part.wholeLog()) : parts; // R-42 raised there
        }
        Header first;
        try {
            first = view.header(lowest);
        } catch (BinlogException e) {
            return java.util.List.of(new Part(lowest, 0, Part.TO_END, -1, false)); // raised by its only part
        }
        if (first == null || first.legacy() || view.presentSegments().stream().anyMatch(this::legacy)) {
            return java.util.List.of(Part.wholeLog());
        }
        e = first.baseIndex;
        a = -1;
        enter(lowest, first);
        int before = 0; // the segment PLAN left before N, with its last_timestamp_us
        long beforeUs = Long.MIN_VALUE;
        while (true) {
            boolean endRaises = false;
            try {
                end();
            } catch (BinlogException error) {
                endRaises = true; // its one part reads up to where READ-LOG raises it
                s = c;
            }
            long since = before == n - 1 ? beforeUs : Long.MIN_VALUE;
            if (endRaises || bounds.mayHold(h.baseIndex, endIndex, since, endTimestamp)) {
                planSegment(parts, step, bounds, a, endRaises);
                if (!endRaises && archivesChecked && view.listedAbove(n) && !unpacks(n)) {
                    return parts; // its part reads up to where the archive fails, where READ-LOG ends
                }
            } else {
                atEnd(parts); // the chain after it is checked all the same, as the Spark planner does
            }
            before = n;
            beforeUs = slot.lastTimestampUs();
            if (endRaises) {
                return parts;
            }
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

    /**
     * PLAN's segments, a part each, in its order, for a part that learns the A READ-LOG carries: their archives are
     * not unpacked for it (the read's PLAN did, and no part reads beyond one that fails, {@link #reached}).
     */
    private java.util.List<Part> segmentOrder() throws java.io.IOException {
        Walk order = new Walk(view, true, record -> {});
        order.archivesChecked = false;
        return order.plan(Part.TO_END);
    }

    /**
     * Whether segment {@code log} unpacks up to its end, as READ-LOG's walk of it would unpack it: a plain one does;
     * a compressed one whose archive is cut or undecodable before its commit point (beyond the pieces its header
     * check unpacked) ends the walk there with {@code bad_header}, after the records before, and nothing after
     * it is read. Unpacks it whole to know, then drops what it unpacked, so that a walk of it afterwards meets the
     * failure where READ-LOG meets it; a failed read is raised.
     */
    private boolean unpacks(int log) throws java.io.IOException {
        SegmentFile file = view.segment(log);
        if (file == null || !file.compressed()) {
            return true;
        }
        try {
            file.size();
            return true;
        } catch (BinlogException failed) {
            if (failed.errorClass == ErrorClass.IO_ERROR) {
                throw failed;
            }
            return false;
        } finally {
            file.release();
        }
    }

    /**
     * The parts of segment N, entered, with its END made and A {@code carried} into it: splits of about
     * {@code step} bytes from the first record, [0, c1), [c1, c2), ..., [cm, S]. A finished segment whose index
     * passes the index check (index §18.5) is cut only at checked entries, each cut moved to the checked entry
     * at or before it (SPLIT with an index; a cut with none beyond the cut before is left out), so that a payload
     * holding valid records cannot make a false boundary. With bounds, its parts cover only [the checked entry
     * at or before the first row that can match, the checked entry after the last), as SEEK with an index starts
     * at both ends; the record at the stop entry is not returned, and a part at S makes NEXT's checks. A compressed
     * segment (protocols §2.6) is one part, read whole, its index unused, as the Python source plans it: a cut
     * would unpack it up to there in each task. So is a segment whose END raises ({@code endRaises}, a successor
     * header that fails its checks), as the Python source plans it: READ-LOG raises it at the first record damage
     * of a tolerant walk (RESYNC step 1) or at C, and a part that starts after that damage cannot know of it.
     */
    private void planSegment(java.util.List<Part> parts, long step, Bounds bounds, long carried, boolean endRaises)
            throws java.io.IOException {
        if (f.compressed() || endRaises) {
            parts.add(new Part(n, 0, Part.TO_END, carried, endRaises));
            return;
        }
        CheckedEntries entries = checkedEntries();
        IndexFile.Entry from = entries == null ? null : narrowedStart(entries, bounds);
        IndexFile.Entry to = entries == null ? null : narrowedStop(entries, bounds);
        if (to != null && (from == null ? Header.SIZE : from.offset()) >= to.offset()) {
            from = null; // nothing narrower, or entries out of time order (a log that broke W-9): read it all
            to = null;
        }
        if (from != null && from.offset() == Header.SIZE) {
            from = null; // the first record: start as READ-LOG enters N
        }
        long start = from == null ? 0 : from.offset();
        long stop = to == null ? Math.min(f.size(), s) : to.offset();
        java.util.List<Long> wanted = new java.util.ArrayList<>();
        for (long cut = Math.max(start, Header.SIZE); stop - cut > step; ) {
            cut += step;
            wanted.add(cut);
        }
        long startIndex = from == null ? Part.NO_ENTRY : from.index();
        if (entries == null) {
            for (long cut : wanted) {
                parts.add(new Part(n, start, cut, carried, false, startIndex, Part.NO_ENTRY));
                start = cut;
                startIndex = Part.NO_ENTRY;
            }
        } else {
            long readTo = to == null ? Part.TO_END : to.offset();
            for (IndexFile.Entry cut : entries.cuts(wanted, Math.max(start, Header.SIZE), stop)) {
                parts.add(new Part(n, start, cut.offset(), carried, false, startIndex, cut.index(), readTo));
                start = cut.offset();
                startIndex = cut.index();
            }
        }
        if (to == null) {
            parts.add(new Part(n, start, Part.TO_END, carried, false, startIndex, Part.NO_ENTRY));
        } else {
            parts.add(new Part(n, start, to.offset(), carried, false, startIndex, to.index(), to.offset()));
            atEnd(parts);
        }
    }

    /**
     * A part at S of N, with E := I_S: it reads no record and makes NEXT's checks. Without a segment listed
     * above N, NEXT only ends the log: no part is needed.
     */
    private void atEnd(java.util.List<Part> parts) {
        if (view.listedAbove(n)) {
            parts.add(new Part(n, s, Part.TO_END, -1, false, endIndex, Part.NO_ENTRY));
        }
    }

    /** N's index, when N is finished (index §18.1) and its index passes the index check (index §18.5). */
    private CheckedEntries checkedEntries() {
        if (!slot.sealed() && !view.present(n + 1)) {
            return null;
        }
        IndexFile index = IndexFile.open(view.storage, n, h, s, endIndex);
        return index == null ? null : new CheckedEntries(index, h.baseIndex, s, endIndex, this::lands);
    }

    /** The checked entry a narrowed read of N starts at: the later of the bounds' (null: N's first record). */
    private static IndexFile.Entry narrowedStart(CheckedEntries entries, Bounds bounds) {
        IndexFile.Entry start = null;
        if (bounds.lowIndexBounded()) {
            start = entries.atOrBefore(entry -> Long.compareUnsigned(entry.index(), bounds.lowIndex()) <= 0);
        }
        if (bounds.lowTimeBounded()) {
            IndexFile.Entry byTime = entries.atOrBefore(entry -> entry.timestampUs() < bounds.lowUs());
            start = start == null || (byTime != null && byTime.offset() > start.offset()) ? byTime : start;
        }
        return start;
    }

    /** The checked entry a narrowed read of N stops at: the earlier of the bounds' (null: S). */
    private static IndexFile.Entry narrowedStop(CheckedEntries entries, Bounds bounds) {
        IndexFile.Entry stop = null;
        if (bounds.highIndexBounded()) {
            stop = entries.after(entry -> Long.compareUnsigned(entry.index(), bounds.highIndex()) <= 0);
        }
        if (bounds.highTimeBounded()) {
            IndexFile.Entry byTime = entries.after(entry -> entry.timestampUs() <= bounds.highUs());
            stop = stop == null || (byTime != null && byTime.offset() < stop.offset()) ? byTime : stop;
        }
        return stop;
    }

    /**
     * Step 2 of the entry check (index §18.5), landing: a walk of N in committed mode from the record boundary
     * {@code from} with E := {@code fromIndex} and A := -1 reaches {@code to.offset()} exactly, with E =
     * {@code to.index()}, without damage; and the record there passes steps 1 to 8 of format §4.3.1 and carries
     * the entry's time. WALK's stop at b(t) is the landing: b(t) := the entry, where the walk stops or finds that
     * it stepped over it. It reports nothing: damage only makes the entry unusable, and reads no further
     * than the record at the entry.
     */
    private boolean lands(long from, long fromIndex, IndexFile.Entry to) {
        Walk landing = new Walk(view, false, record -> {});
        landing.n = n;
        landing.h = h;
        landing.f = f;
        landing.slot = slot;
        landing.c = c;
        landing.known = true;
        landing.s = s;
        landing.endIndex = endIndex;
        landing.split = true;
        landing.t = from; // t at the start: no record is returned
        landing.bt = to.offset();
        landing.btIndex = to.index();
        landing.e = fromIndex;
        landing.a = -1;
        f.limit(to.offset() + RecordCheck.HEADER);
        try {
            landing.walk(from);
            RecordCheck at = landing.check;
            return at.committed(f, to.offset(), to.offset() < c ? c : s, to.index(), landing.a) == null
                    && at.frame == RecordCheck.FRAME_DATA && at.timestampUs == to.timestampUs();
        } catch (java.io.IOException damage) {
            return false; // not reported: a read from N's start meets it (an io_error too)
        } finally {
            f.limit(Long.MAX_VALUE);
        }
    }

    /**
     * The cut points of planned splits of segment {@code log} into at most {@code parts} splits (conformance
     * §3.2): 256, then the offsets at the fractions 1/parts, 2/parts, ... of [256, S), each moved to the checked
     * entry at or before it when the segment has a usable index (SPLIT with an index, index §18.5), or taken as
     * they are without one. A segment that cannot be split is one split, whose read reports why; so is a
     * compressed one.
     */
    java.util.List<Long> cuts(int log, int parts) throws java.io.IOException {
        java.util.List<Long> cuts = new java.util.ArrayList<>(java.util.List.of((long) Header.SIZE));
        if (log == view.blank()) {
            return cuts;
        }
        try {
            enterSplittable(log);
            end();
        } catch (BinlogException unsplittable) {
            return cuts; // the split read reports it
        }
        if (f.compressed()) {
            return cuts; // one split, as PLAN makes one part of it
        }
        long span = Math.min(s, f.size()) - Header.SIZE;
        java.util.List<Long> wanted = new java.util.ArrayList<>();
        long last = Header.SIZE;
        for (int k = 1; k < parts; k++) {
            long cut = Header.SIZE + span / parts * k + span % parts * k / parts;
            if (cut > last) {
                wanted.add(cut);
                last = cut;
            }
        }
        CheckedEntries entries = checkedEntries();
        if (entries == null) {
            cuts.addAll(wanted);
        } else {
            entries.cuts(wanted, Header.SIZE, s).forEach(entry -> cuts.add(entry.offset()));
        }
        return cuts;
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
     * end stops at b(stop) as SPLIT does; the one that walks to S (the last, or one with no b(stop)) makes NEXT's
     * checks, reporting what NEXT reports, without walking into the next segment. Consecutive parts of PLAN therefore return READ-LOG's
     * records and damage, except where the A carried into a segment is not the A READ-LOG has there (damage
     * in the segment before, or a slot whose last asqn its records disagree with). Such an A lies below READ-LOG's
     * unless a slot understates: where the first asqn of the segment fails step 8 after the A carried, the first
     * part walks the segment before to learn READ-LOG's A ({@link #enteringAsqn}); where it passes after the A
     * carried and would fail after READ-LOG's, the last part of the segment before raises {@code ambiguous_split}.
     * Within a segment, a part that starts at b(start) knows no earlier asqn (A := -1): the part before it checks
     * the first asqn after its stop against its own A, over any records without an asqn ({@link #lookPast}).
     */
    void part(Part part, boolean opens) throws java.io.IOException {
        int log = part.log();
        if (!reached(log, opens)) {
            return;
        }
        Header r = enterSplittable(log);
        if (part.endRaises() || !endMade(log)) {
            // RESYNC step 1 and WALK step 2.1 make END, which raises, where READ-LOG makes it: at the first record
            // damage of a tolerant walk, or at C. Only a walk of the segment from where the plan's read of it
            // starts knows which comes first, so the part that opens the segment walks it alone, unsplit (PLAN
            // makes it the only one where END raised at planning), and the others read nothing.
            if (!opens) {
                return;
            }
            endAtC = true;
            s = c;
            endIndex = slot.nextIndex();
        }
        long o;
        if (part.first()) {
            o = r.firstRecord();
            e = r.baseIndex;
            a = part.carriedAsqn();
            carriedUnsettled = true;
        } else if (part.startIndex() != Part.NO_ENTRY) {
            o = part.start(); // a checked entry: E := its index, A := -1, as SEEK with an index (index §18.5)
            e = part.startIndex();
            a = -1;
        } else {
            o = search.boundary(f, part.start(), Math.min(s, f.size()), r.baseIndex, endIndex);
            if (o < 0 || o >= part.stop()) {
                return;
            }
            e = search.index;
            a = -1;
        }
        if (endAtC && o > c) {
            end(); // a part that opens the segment beyond C: the walk of it ended at C, where END raises
            throw new BinlogException(ErrorClass.IO_ERROR, f.file(), n, null, null,
                    "the header of segment " + (n + 1) + " changed while this part was read");
        }
        if (!part.last() && !endAtC) {
            split = true;
            t = part.stop();
            boolean atEntry = part.stopIndex() != Part.NO_ENTRY;
            bt = atEntry ? t : search.boundary(f, t, Math.min(s, f.size()), r.baseIndex, endIndex);
            btIndex = atEntry ? part.stopIndex() : search.index;
            if (bt >= 0) {
                f.limit(bt + RecordCheck.HEADER); // the walk needs no byte beyond the record header at b(stop)
            }
            walk(o);
            if (bt >= 0) {
                if (aPassesStop && a != -1) {
                    lookPast(bt, part.readTo(), true); // the next part starts at b(stop) with A := -1
                }
                return; // the next part starts at b(stop)
            }
            // No boundary from stop: this part walked to S (SPLIT), the parts after it find none; NEXT follows.
        } else if (walk(o) != Stop.SEGMENT_END) {
            return;
        }
        long walked = a;
        long planned = endAsqn;
        if (next()) {
            checkCarried(walked, planned);
        }
    }

    /**
     * After NEXT entered N from the segment before it, at whose S the walk held A {@code walked} and PLAN carried
     * {@code planned} into N: {@code ambiguous_split} where N's first part misjudges the first asqn READ-LOG meets
     * from here without noticing ({@link #carriedAsqnMatters}).
     */
    private void checkCarried(long walked, long planned) throws java.io.IOException {
        if (walked != planned && carriedAsqnMatters(walked, planned)) {
            throw new BinlogException(ErrorClass.AMBIGUOUS_SPLIT, f.file(), n, null, e,
                    "the asqn carried into this segment by the walk (" + walked + ") is not the one its predecessor's"
                            + " end gives (" + planned + "), and its first asqn is judged otherwise by each:"
                            + " read this log in one part");
        }
    }

    /**
     * Step 8 of format §4.3.1 across the stop boundary of a part that landed on b(stop) holding A = {@code a} (not
     * -1). The part that starts at b(stop) starts with A := -1 (SPLIT step 5), and the check of the record at
     * b(stop) (WALK step 2.2) is the only one this part makes beyond its stop: where that record, and maybe the
     * records after it, carry no asqn, the first asqn after b(stop) is checked by no part against the A READ-LOG
     * holds there, which is this part's A (records without an asqn leave A as it is). So the walk goes on from
     * b(stop) in committed mode, returning nothing, over the records without an asqn (and skippable records, which
     * never change A, R-11), across the stop boundaries of later parts, up to the first data record with an asqn:
     * where that record fails step 8 after this part's A, this part reports {@code asqn_not_increasing} there with
     * the index the walk expects (a tolerant part: a region of 0 bytes, resumed at that record, which the part that
     * holds it returns, as at b(stop)); where it passes, that part's own A is READ-LOG's from there on. Any other
     * damage on the way ends the look: the part that holds it reports it, and READ-LOG's A after it is -1 (RESYNC).
     * Reaching S, it makes the check of a carried A that the part at S makes ({@link #checkCarried}) with this
     * part's A, which the part at S, having met no asqn, does not hold; it reports nothing that NEXT reports. A
     * plan narrowed by bounds reads the segment up to {@code readTo} only: the look ends there. This is LOOK(b(t))
     * of readers §10.2.2, which SPLIT makes too ({@link #split}); a split, which never calls NEXT, ends its
     * look at S ({@code intoNext} false).
     */
    private void lookPast(long o, long readTo, boolean intoNext) throws java.io.IOException {
        long from = o;
        long reach = from; // reads beyond b(stop) reach no further than twice what the look has walked, plus 4 KiB
        while (true) {
            if (o >= readTo) {
                return; // left out of a narrowed read (index §18.5): a seek, not a verification
            }
            if (o + RecordCheck.HEADER > reach) {
                reach = o + Math.max(o - from, 4096);
                f.limit(Math.min(reach, readTo));
            }
            if (o == c && e != slot.nextIndex()) { // R-39, as WALK step 2.1 makes it at C
                if (!tolerant) {
                    return; // the part that reaches C raises it
                }
                e = slot.nextIndex();
            }
            if (o >= s) {
                break;
            }
            ErrorClass failed = check.committed(f, o, o < c ? c : s, e, a);
            if (failed == ErrorClass.ASQN_NOT_INCREASING && carriedUnsettled) {
                carriedUnsettled = false;
                a = enteringAsqn(n); // the A PLAN carried may lie above READ-LOG's
                failed = check.committed(f, o, o < c ? c : s, e, a);
            }
            if (failed == ErrorClass.ASQN_NOT_INCREASING) {
                report(failed, o, e, 0, e, "the first asqn after the stop boundary of the part before it");
                return;
            }
            if (failed != null || (check.frame == RecordCheck.FRAME_DATA && check.asqn != -1)) {
                return;
            }
            if (check.frame == RecordCheck.FRAME_DATA) {
                e = check.index + 1;
            }
            o = check.end;
        }
        if (endAtC || !intoNext) {
            return; // END raises at C, where READ-LOG stops; a split ends at S (SPLIT step 5)
        }
        Walk probe = new Walk(view, tolerant, record -> {});
        probe.enter(n, h);
        probe.e = e;
        boolean moved;
        try {
            moved = probe.next();
        } catch (BinlogException raised) {
            if (raised.errorClass == ErrorClass.IO_ERROR) {
                throw raised;
            }
            return; // the part at S raises it
        }
        if (moved) {
            probe.checkCarried(a, endAsqn);
        }
    }

    /**
     * Whether READ-LOG reaches segment {@code log} as the directory is now: a header that fails its checks ends
     * the walk (readers §10.4), so a part of a segment above one changed so since planning reads nothing. The
     * failing header is raised once, as READ-LOG raises it: by the END or NEXT of the part at C or S of the segment
     * below it, or, where none is below, by the first part of its own segment that is read ({@code opens}). A
     * header below {@code log} that the plan checked, in a file unchanged since, is not read again: the plan's
     * check holds for it ({@link CheckedHeaders} says why), so a part reads its own header and those of the
     * segments below it that changed, not every one below it. A compressed segment below whose archive fails before
     * its commit point ends the walk as well: one that changed since planning is unpacked whole to know (PLAN
     * unpacked the others, and ends at one that fails).
     */
    boolean reached(int log, boolean opens) throws java.io.IOException {
        for (int k : view.presentSegments()) {
            if (k > log) {
                return true;
            }
            if (k < log && view.unchanged(k)) {
                continue;
            }
            try {
                view.header(k);
            } catch (BinlogException failed) {
                if (failed.errorClass == ErrorClass.IO_ERROR || (k == log && k == view.lowest() && opens)) {
                    throw failed;
                }
                return false;
            }
            if (k < log && !unpacks(k)) {
                return false; // READ-LOG ends in it: its own part raises the archive's failure
            }
        }
        return true;
    }

    /**
     * Whether READ-LOG walks through segment {@code log} into the one after it, as the directory is now: it reaches
     * {@code log} ({@link #reached}, which reads its header), and a compressed {@code log} unpacks up to its commit
     * point. One whose file is unchanged since the plan checked it is not unpacked again: PLAN unpacked it,
     * and ends at one that fails; one changed since is unpacked whole to know. So a segment above an archive that
     * fails now is not one the walk needs: missing, it is neither a missing file nor a broken chain. A segment the
     * listing does not show (below the lowest, say) is passed.
     */
    boolean passes(int log) throws java.io.IOException {
        return reached(log, false) && (!view.present(log) || view.unchanged(log) || unpacks(log));
    }

    /**
     * END(N) for a part of N; false, with nothing made, where N+1's header fails its checks, planned or not: END
     * then raises at C, after the records before it, as READ-LOG raises it.
     */
    private boolean endMade(int log) throws java.io.IOException {
        try {
            end();
            return true;
        } catch (BinlogException failed) {
            if (failed.errorClass == ErrorClass.IO_ERROR || failed.log == null || failed.log != log + 1) {
                throw failed;
            }
            return false;
        }
    }

    /**
     * A part of segment {@code log}, which is absent though the plan had it. Retention removes the lowest segments
     * first, so a segment whose predecessor is present was not removed by it: where a segment above is listed, the
     * rows after it would read as a whole log, and the hole is reported as NEXT from the predecessor reports it
     * (its END made without the segment, then BROKEN). Otherwise the log starts above it or ends below it.
     */
    void absent(int log) throws java.io.IOException {
        if (!passes(log - 1)) {
            return; // the walk ends below it, where the part that meets the failing header or archive raises it
        }
        Header below = view.present(log - 1) ? view.header(log - 1) : null;
        if (below == null || !view.listedAbove(log)) {
            return;
        }
        enter(log - 1, below);
        end();
        e = endIndex;
        broken(null);
    }

    /**
     * The A READ-LOG has when it enters segment {@code log}: the walk of the segment PLAN puts before it, again,
     * as its first part walks it, with the A PLAN carries into that one, corrected in turn where that A misjudges
     * its first asqn, or where it holds no asqn to settle it. Only a first asqn that fails step 8 after the A
     * carried asks for it.
     */
    private long enteringAsqn(int log) throws java.io.IOException {
        java.util.List<Part> segments = segmentOrder();
        Part before = null;
        for (int k = 1; k < segments.size(); k++) {
            before = segments.get(k).log() == log ? segments.get(k - 1) : before;
        }
        if (before == null) {
            return a; // the log's first segment: -1 is carried, exactly
        }
        Walk again = new Walk(view, true, record -> {});
        Header header = again.enterSplittable(before.log());
        again.end();
        again.e = header.baseIndex;
        again.a = before.carriedAsqn();
        again.carriedUnsettled = true;
        again.walk(header.firstRecord());
        // A segment without an asqn leaves the A it was entered with: the one PLAN carried, learnt again before it.
        return again.carriedUnsettled ? again.enteringAsqn(before.log()) : again.a;
    }

    /**
     * Whether the first part of the segment NEXT entered, carrying {@code planned}, judges the first asqn READ-LOG
     * meets from here otherwise than READ-LOG, carrying {@code walked}, without noticing: that asqn passes step 8
     * of format §4.3.1 after {@code planned} and fails it after {@code walked}, which needs {@code walked} >
     * {@code planned} (the first part corrects the other way round itself, {@link #enteringAsqn}). Segments
     * without an asqn carry the difference on to the next (in PLAN's order); damage before that asqn does not
     * depend on A, and the resynchronisation after it sets A to -1.
     */
    private boolean carriedAsqnMatters(long walked, long planned) throws java.io.IOException {
        if (Long.compare(walked, planned) <= 0) {
            return false;
        }
        boolean reached = false;
        for (Part following : segmentOrder()) {
            reached |= following.log() == n;
            if (!reached) {
                continue;
            }
            Walk scan = new Walk(view, true, record -> {});
            Header header = scan.enterSplittable(following.log());
            if (!scan.endMade(following.log())) {
                scan.s = scan.c; // END raises at C, after the records before it, as READ-LOG raises it
            }
            long o = header.firstRecord();
            long index = header.baseIndex;
            while (o < scan.s) {
                if (check.committed(scan.f, o, o < scan.c ? scan.c : scan.s, index, -1) != null) {
                    return false;
                }
                if (check.asqn != -1) {
                    boolean misjudged = RecordCheck.asqnFollows(check.asqn, planned)
                            && !RecordCheck.asqnFollows(check.asqn, walked);
                    if (misjudged || check.frame == RecordCheck.FRAME_DATA
                            || !RecordCheck.asqnFollows(check.asqn, planned)) {
                        // A skippable record checks an asqn without setting A; one that fails after the
                        // A carried makes the first part learn READ-LOG's A (enteringAsqn).
                        return misjudged;
                    }
                }
                if (check.frame == RecordCheck.FRAME_DATA) {
                    index = check.index + 1;
                }
                o = check.end;
            }
            if (!scan.known) {
                return false; // READ-LOG raises the successor's header at C
            }
        }
        return false; // the log ends without another asqn
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
        f.limit(Long.MAX_VALUE); // a part before may have bounded its reads
        fed = 0;
        slot = header.active;
        c = slot == null ? 0 : Offsets.clamp(slot.commitOffset());
        known = false;
    }

    /** WALK(N, o): the committed records of version 2 segment N from o. */
    private Stop walk(long o) throws java.io.IOException {
        while (true) {
            boolean record = false;
            if (o == c) { // step 2.1
                if (!split || endAtC) {
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
        int frame = w[f.at(bt) + 4] & 0xff;
        if (index != e) {
            report(ErrorClass.INDEX_DISCONTINUITY, bt, e, 0, btIndex, "at the split's stop boundary");
            return;
        }
        if (!RecordCheck.asqnFollows(asqn, a) && carriedUnsettled) {
            carriedUnsettled = false;
            a = enteringAsqn(n); // the A PLAN carried may lie above READ-LOG's, as in RECORD
        }
        if (!RecordCheck.asqnFollows(asqn, a)) {
            report(ErrorClass.ASQN_NOT_INCREASING, bt, e, 0, btIndex, "at the split's stop boundary");
            return;
        }
        // A data record with an asqn settles A for the part that starts here; otherwise A passes over it.
        aPassesStop = asqn == -1 || frame != RecordCheck.FRAME_DATA;
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
        endTimestamp = slot.lastTimestampUs();
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
            if (check.committed(f, o, Offsets.NO_BOUND, index, asqn) != null) {
                break;
            }
            if (check.frame == RecordCheck.FRAME_DATA) {
                index = check.index + 1;
                asqn = check.asqn == -1 ? asqn : check.asqn;
                endTimestamp = check.timestampUs;
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
        if (f.compressed()) {
            feed(o, o < c ? c : s);
        }
        ErrorClass failed = check.committed(f, o, o < c ? c : s, e, a);
        if (failed == ErrorClass.ASQN_NOT_INCREASING && carriedUnsettled) {
            carriedUnsettled = false;
            a = enteringAsqn(n); // the A PLAN carried may lie above READ-LOG's
            failed = check.committed(f, o, o < c ? c : s, e, a);
        }
        if (failed != null) {
            carriedUnsettled = false;
            return damage(failed, o);
        }
        if (check.frame == RecordCheck.FRAME_DATA) {
            if (check.asqn != -1) {
                carriedUnsettled = false; // from here on A comes from this segment's records
            }
            if (keep) {
                deliver(o, check.index, check.asqn, check.timestampUs, true);
            }
            e = check.index + 1;
            a = check.asqn == -1 ? a : check.asqn;
        }
        return check.end;
    }

    /**
     * The reads of a compressed segment's records, as the reference's walk makes them (walk.next_entries): where the
     * record at {@code o} does not lie whole in the bytes read so far, {@link #READ_CHUNK} bytes from {@code o}, and
     * then, where the record is longer and its header passes steps 2 to 4 of format §4.3.1, the whole record; never
     * beyond the bound {@code u}. The first of them unpacks and checks the segment to its end, so an archive cut
     * or undecodable anywhere before it fails here, before any of its records, whatever these reads ask for.
     */
    private void feed(long o, long u) throws BinlogException {
        if (o + RecordCheck.HEADER > fed) {
            fed = f.sizeUpTo(o + Math.min(READ_CHUNK, Math.max(0, u - o)));
            f.limit(fed);
        }
        if (o + RecordCheck.HEADER > fed || o > u || u - o < RecordCheck.HEADER || check.header(f, o, u) != null
                || check.end <= fed) {
            return; // the record check reports what is wrong, or finds the record whole
        }
        fed = f.sizeUpTo(o + Math.min(Math.max(check.end - o, READ_CHUNK), u - o));
        f.limit(fed);
    }

    /** The record at o, just checked, to the sink: its payload in the file's window, unless larger than that. */
    private void deliver(long o, long index, long asqn, long timestampUs, boolean checked) throws java.io.IOException {
        long at = check.payloadAt;
        int length = (int) (check.end - at);
        boolean windowed = length <= SegmentFile.WINDOW;
        byte[] bytes = windowed ? f.window(at, length) : f.copy(at, length);
        sink.record(n, o, index, asqn, timestampUs, checked, bytes, windowed ? f.at(at) : 0, length);
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
        if (f.compressed()) {
            fed = Long.MAX_VALUE; // unpacked to its end: no read of it can fail any more
            f.limit(Long.MAX_VALUE);
        }
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
            ErrorClass failed = check.legacy(f, o, s);
            if (failed != null) {
                damage(failed, o);
                return Stop.SEGMENT_END;
            }
            deliver(o, e, -1, 0, false);
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

    /**
     * The torn tail of N, the segment the log ends with: non-zero bytes beyond its commit point. A compressed
     * copy is unpacked no further than its commit point: nothing shows beyond it.
     */
    private Torn torn() throws BinlogException {
        if (f.compressed()) {
            return null;
        }
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
