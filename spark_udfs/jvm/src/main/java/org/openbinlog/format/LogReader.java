package org.openbinlog.format;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * A reader of one log: the entry points of the walk (readers §10.2) over one listing of its directory.
 * It never writes and never locks. Strict reads throw {@link BinlogException} at the first damage, after
 * every record before it went to the sink; tolerant ones list damage and step over it (readers §10.4).
 * Compressed segments (protocols §2.6) are read as {@link Unpacking} says; closing the reader drops the
 * temporary files they are unpacked into.
 */
public final class LogReader implements AutoCloseable {
    private final LogView view;

    public LogReader(Storage storage, Unpacking unpacking) throws IOException {
        this.view = new LogView(storage, unpacking);
    }

    /** The log number a directory entry names as a segment, plain or compressed; 0 for any other name. */
    public static int segmentNumber(String name) {
        return LogView.number(name);
    }

    /** The names segment {@code log} may have: plain, then its compressed forms, in the order OPEN tries them. */
    public static List<String> segmentNames(int log) {
        return LogView.names(log);
    }

    /** The name of segment {@code log}'s sparse index (index §18.2). */
    public static String indexName(int log) {
        return IndexFile.name(log);
    }

    /** The segments present, in log order, with what their headers say (-1 where a header fails its checks). */
    public List<SegmentInfo> segments() throws IOException {
        List<SegmentInfo> out = new ArrayList<>();
        for (int n : view.presentSegments()) {
            SegmentFile f = view.segment(n);
            if (f == null) {
                continue; // removed since the listing
            }
            Header h;
            try {
                h = view.header(n);
            } catch (BinlogException e) {
                if (e.errorClass == ErrorClass.IO_ERROR) {
                    throw e;
                }
                out.add(new SegmentInfo(n, f.name, f.size(), -1, -1, false, false));
                continue;
            }
            if (h == null) {
                continue;
            }
            boolean sealed = h.legacy() ? h.closed() : h.active.sealed();
            boolean finished = h.legacy() ? h.closed() : view.present(n + 1);
            out.add(new SegmentInfo(n, f.name, f.size(), h.version, h.baseIndex, sealed, finished));
        }
        return out;
    }

    /**
     * The sizes of the segment files present, by log number in log order, for sizing splits (of a compressed
     * segment, its archive's): a segment that cannot be opened is left out (a read of it reports why). It reads no
     * header.
     */
    public SortedMap<Integer, Long> segmentSizes() {
        SortedMap<Integer, Long> sizes = new TreeMap<>();
        for (int n : view.presentSegments()) {
            try {
                SegmentFile f = view.segment(n);
                if (f != null) {
                    sizes.put(n, f.storedSize());
                }
            } catch (BinlogException e) {
                continue; // in a form this reader does not read, or no regular file: the part that reads it raises
            }
        }
        return sizes;
    }

    /**
     * The file that holds segment {@code log}, plain or compressed, as its records' rows name it; the plain name
     * where none can be opened now (a row of the damage that says why).
     */
    public String file(int log) {
        try {
            SegmentFile f = view.segment(log);
            if (f != null) {
                return f.file();
            }
        } catch (BinlogException e) {
            // no file to name: the plain name below
        }
        return view.storage.describe(LogView.name(log));
    }

    /**
     * Up to {@code length} bytes of segment {@code log} from {@code offset} as the walk reads them (unpacked, of a
     * compressed segment), no further than its end: the bytes a damage report stepped over.
     */
    public byte[] bytes(int log, long offset, int length) throws IOException {
        SegmentFile f = view.segment(log);
        if (f == null || offset < 0 || length <= 0) {
            return new byte[0];
        }
        return f.copy(offset, (int) Math.max(0, Math.min(length, f.sizeUpTo(offset + length) - offset)));
    }

    /** READ-LOG: every record from the log's start; the torn tail of the last segment, or null. */
    public Torn readAll(boolean tolerant, Sink sink) throws IOException {
        return new Walk(view, tolerant, sink).readLog();
    }

    /**
     * SPLIT(log, start, stop), readers §10.5: the records whose offset lies in [start, stop) (a tolerant split
     * also those up to b(stop)), then the walk on to b(stop) or S. Offsets are unsigned.
     */
    public void readSplit(int log, long start, long stop, boolean tolerant, Sink sink) throws IOException {
        new Walk(view, tolerant, sink).split(log, Offsets.clamp(start), Offsets.clamp(stop));
    }

    /**
     * The parts of a parallel read of the whole log, splits of about {@code step} bytes: read each with
     * {@link #readPart}, in any order and in any process, and together they return what {@link #readAll} returns
     * (its records, and its damage when tolerant), or one of them raises.
     */
    public List<Part> plan(long step) throws IOException {
        return plan(step, Bounds.ALL);
    }

    /**
     * {@link #plan(long)} for the rows within {@code bounds} only: segments none of whose rows can be within them
     * are left out, and a finished segment with a usable sparse index is read only between the checked entries
     * around its rows within them (index §18.5). Its parts return every record within the bounds that
     * {@link #readAll} returns, and others near them, which the caller filters out. Such a plan is a seek, not a
     * verification: damage in what it leaves out is not reported (index §18.5, "What an index changes"). With
     * or without bounds, a segment with a usable index is cut only at checked entries, where a payload that
     * holds valid records cannot make a false boundary (SPLIT with an index).
     */
    public List<Part> plan(long step, Bounds bounds) throws IOException {
        if (step < 1) {
            throw new IllegalArgumentException("a split holds at least one byte");
        }
        return new Walk(view, true, record -> {}).plan(step, bounds);
    }

    /**
     * The segments whose headers the plans of this reader checked and found passing, sealed, each with a digest of
     * its file: what parts of those plans read in other readers of the log ({@link #readPart(Part, boolean, boolean,
     * Sink, CheckedHeaders)}) trust while the files are unchanged, instead of reading every header below theirs.
     */
    public CheckedHeaders checkedHeaders() {
        return view.checked();
    }

    /** The cut points of planned splits of segment {@code log} into at most {@code parts} (conformance §3.2). */
    List<Long> cuts(int log, int parts) throws IOException {
        return new Walk(view, false, record -> {}).cuts(log, Math.max(parts, 1));
    }

    /**
     * Whether OPEN finds segment {@code log} in one of its forms (readers §10.2.2): false when it is absent, after a
     * fresh listing, as a segment removed since a plan had it is.
     */
    public boolean has(int log) throws BinlogException {
        return view.segment(log) != null;
    }

    /**
     * Whether READ-LOG, as the directory is now, needs segment {@code log}: no segment below it has a header that
     * fails its checks, which ends the walk there (readers §10.4), nor a compressed one an archive that fails before
     * its commit point, which ends it as well. Of the segments below it, it reads the headers of those whose
     * files changed since the plan checked them ({@code checked}, {@link #checkedHeaders}), and of the one just
     * below it, whose END or NEXT needs {@code log}; it unpacks the archives of those that changed.
     */
    public boolean needs(int log, CheckedHeaders checked) throws IOException {
        view.trust(checked);
        return new Walk(view, false, record -> {}).passes(log - 1);
    }

    /**
     * Whether no record of segment {@code log} lies past its commit point: version 2 segment {@code log} is present
     * and its header's active slot sealed (format §3.2), or its header fails its checks, when none of its records
     * is read at all.
     */
    public boolean sealed(int log) throws BinlogException {
        Header h;
        try {
            h = view.present(log) ? view.header(log) : null;
        } catch (BinlogException failed) {
            if (failed.errorClass == ErrorClass.IO_ERROR) {
                throw failed;
            }
            return true;
        }
        return h != null && !h.legacy() && h.active.sealed();
    }

    /**
     * What a part of segment {@code log} reports when the segment is absent although a plan had it (removed since):
     * a broken chain where the segment below it is present and one above it is listed, as NEXT from the segment
     * below reports it; nothing where the log now starts above it (retention) or ends below it.
     */
    public void readAbsent(int log, boolean tolerant, Sink sink) throws IOException {
        readAbsent(log, tolerant, sink, CheckedHeaders.NONE);
    }

    /** {@link #readAbsent(int, boolean, Sink)}, trusting the plan's {@code checked} headers of unchanged files. */
    public void readAbsent(int log, boolean tolerant, Sink sink, CheckedHeaders checked) throws IOException {
        view.trust(checked);
        new Walk(view, tolerant, sink).absent(log);
    }

    /**
     * One part of {@link #plan}'s; the whole log for a part that says so. {@code opens}: it is the first of its
     * segment's parts that are read (others may be left out by bounds), the one that raises the segment's header
     * where no segment lies below it.
     */
    public void readPart(Part part, boolean opens, boolean tolerant, Sink sink) throws IOException {
        readPart(part, opens, tolerant, sink, CheckedHeaders.NONE);
    }

    /**
     * {@link #readPart(Part, boolean, boolean, Sink)} in a reader other than the plan's: {@code checked}, the plan's
     * {@link #checkedHeaders}. A header that fails its checks below the part's segment ends the walk there
     * (readers §10.4), so the part reads nothing; of the segments below its own, it reads the headers of those
     * whose files changed since the plan checked them (and of those the plan did not trust), not every one.
     */
    public void readPart(Part part, boolean opens, boolean tolerant, Sink sink, CheckedHeaders checked)
            throws IOException {
        view.trust(checked);
        if (part.whole()) {
            readAll(tolerant, sink);
        } else {
            new Walk(view, tolerant, sink).part(part, opens);
        }
    }

    /** Parts of {@link #plan}'s, in its order, one after the other. */
    public void readParts(List<Part> parts, boolean tolerant, Sink sink) throws IOException {
        for (int k = 0; k < parts.size(); k++) {
            readPart(parts.get(k), k == 0 || parts.get(k - 1).log() != parts.get(k).log(), tolerant, sink);
        }
    }

    /** FROM-REF after the ref (log, offset, index), readers §10.6; log, offset and index unsigned. */
    public Torn readAfter(int log, long offset, long index, Sink sink) throws IOException {
        return new Walk(view, false, sink).fromRef(log, Offsets.clamp(offset), index);
    }

    /**
     * Drops the temporary files of compressed segments; it holds no other resource: every read opens and closes
     * what it reads (see {@link LocalStorage}).
     */
    @Override
    public void close() {
        view.close();
    }
}
