package org.openbinlog.spark;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.file.NoSuchFileException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.spark.SparkThrowable;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.unsafe.types.UTF8String;
import org.openbinlog.format.BinlogException;
import org.openbinlog.format.CountingStorage;
import org.openbinlog.format.Damage;
import org.openbinlog.format.ErrorClass;
import org.openbinlog.format.LogReader;
import org.openbinlog.format.Record;
import org.openbinlog.format.Sink;
import org.openbinlog.format.Storage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads a task's parts, one after the other, with the reader core's walk, which pushes records and damage to a
 * sink, in a thread of its own that fills column batches for the task: the task pulls batches while the walk fills the next. A few batches
 * go round between the two (the task gives one back when it asks for the next), so memory stays bounded
 * whatever the split's size.
 */
final class SplitReader implements PartitionReader<ColumnarBatch> {
    private static final int BATCHES = 3;
    private static final Optional<ColumnBatch> END = Optional.empty();
    private static final Logger LOG = LoggerFactory.getLogger(SplitReader.class);

    private final SplitPartition part;
    private final ReadOptions options;
    private final List<ColumnBatch> batches;
    private final BlockingQueue<ColumnBatch> free = new ArrayBlockingQueue<>(BATCHES);
    private final BlockingQueue<Optional<ColumnBatch>> filled = new ArrayBlockingQueue<>(BATCHES + 1);
    private final Thread walker;
    /** The stamps of files the task's pieces looked at, by log directory: one look a file ({@link TaskStamps}). */
    private final Map<String, Map<String, Storage.Stamp>> stamps = new HashMap<>();
    /** The task's listings of its log directories: one a directory ({@link TaskListing}). */
    private final Map<String, TaskListing.Listed> listings = new HashMap<>();
    private volatile Throwable failure;
    private volatile boolean closed;
    private volatile long bytesRead;
    private volatile long listingsMade;
    private ColumnBatch current;
    private boolean ended;

    SplitReader(SplitPartition part, StructType readSchema, ReadOptions options) {
        this.part = part;
        this.options = options;
        Columns.Kind[] kinds = Columns.kinds(readSchema, options);
        ColumnBatch[] made = new ColumnBatch[BATCHES];
        for (int i = 0; i < BATCHES; i++) {
            made[i] = new ColumnBatch(readSchema, kinds);
        }
        batches = List.of(made);
        free.addAll(batches);
        SplitPartition.Piece first = part.pieces.get(0);
        this.walker = new Thread(this::walk, "binlog-part-" + first.part().log() + "-" + first.part().start());
        walker.setDaemon(true);
        walker.start();
    }

    private void walk() {
        try {
            for (SplitPartition.Piece piece : part.pieces) {
                read(piece);
            }
            filled.add(END);
        } catch (InterruptedIOException e) {
            return; // closed by the task
        } catch (Throwable e) {
            failure = e;
            filled.add(END); // never full: it has room for every batch and the end
        }
    }

    /** One part of the task's, to the end: its last batch is handed over, so that no batch holds two parts. */
    private void read(SplitPartition.Piece piece) throws IOException {
        Storage opened = Storages.open(piece.directory(), piece.hadoop());
        java.nio.file.Path local = Storages.local(piece.directory()) ? Storages.localPath(piece.directory()) : null;
        Storage listed = new TaskListing(opened, piece.directory(), local, listings, made -> listingsMade += made);
        Map<String, Storage.Stamp> seen = stamps.computeIfAbsent(piece.directory(), directory -> new HashMap<>());
        CountingStorage storage = new CountingStorage(new SelectedStorage(new TaskStamps(listed, seen), piece.names()));
        long before = bytesRead;
        try (LogReader reader = open(storage)) {
            if (reader == null) {
                return; // the log directory is gone, and missing files are ignored
            }
            BatchSink sink = new BatchSink(piece, storage, reader, before);
            try {
                if (present(piece, storage, reader)) {
                    reader.readPart(piece.part(), piece.first(), options.tolerant(), sink, piece.checked());
                } else if (piece.first()) {
                    reader.readAbsent(piece.part().log(), options.tolerant(), sink, piece.checked());
                }
            } catch (BinlogException e) {
                // NEXT's last check, after every row of the part: a successor gone since planning is its own parts'.
                if (!(e.errorClass == ErrorClass.CHAIN_BROKEN && e.offset == null && gone(piece, storage, e.log))) {
                    // A tolerant walk stops at what it cannot step over (a damaged header, readers 10.4): a row of
                    // its own in PERMISSIVE, dropped in DROPMALFORMED, as any other damage.
                    if (!options.tolerant()) {
                        throw e;
                    }
                    sink.damage(new Damage(e.errorClass, e.log == null ? piece.part().log() : e.log,
                            e.offset == null ? 0 : e.offset, e.index, e.getMessage(), 0, null));
                }
            }
            sink.flush();
        } finally {
            bytesRead = before + storage.bytes();
            Storages.close(opened);
        }
    }

    /**
     * The reader of the piece's log directory; null when the directory no longer exists and missing files are
     * ignored (Spark's file sources skip a file gone since planning; without the option, FILE_NOT_EXIST).
     */
    private LogReader open(Storage storage) throws IOException {
        try {
            return new LogReader(storage, options.unpacking());
        } catch (BinlogException e) {
            if (!(e.getCause() instanceof NoSuchFileException)) {
                throw e; // a directory that exists and cannot be listed is never skipped
            }
            missing(storage.describe(""));
            return null;
        }
    }

    /**
     * Whether the segments the piece reads are there, in one of their forms: its part's segment, or, for a log read
     * whole, every segment planned. One that is gone is FILE_NOT_EXIST, unless missing files are ignored: a part
     * of a removed segment then reads nothing, and a whole log is read as it is now. A segment the walk no longer
     * needs, above a header that fails its checks now (another segment renamed into its place, say), is not
     * missing: the walk ends below it, as a fresh read's does, and the part reads nothing.
     */
    private boolean present(SplitPartition.Piece piece, Storage storage, LogReader reader) throws IOException {
        if (!piece.part().whole()) {
            int log = piece.part().log();
            if (!reader.has(log)) {
                return reader.needs(log, piece.checked()) && missing(planned(piece, storage, log));
            }
            // END and NEXT read the header of the next segment the plan reads: without it the log would end here,
            // though that segment's task may have read it before it went. Ignored, it is its own parts' to skip,
            // unless this segment is unsealed: END would then end it at its commit point (protocols §8.4), and the
            // records the plan reads past that would be missing unreported.
            if (piece.nextRead() && !reader.has(log + 1) && !(options.ignoreMissing && reader.sealed(log))
                    && reader.needs(log + 1, piece.checked())) {
                throw SparkErrors.fileNotExist(planned(piece, storage, log + 1));
            }
            return true;
        }
        for (String name : piece.names()) {
            if (!reader.has(LogReader.segmentNumber(name))) {
                missing(planned(piece, storage, LogReader.segmentNumber(name)));
            }
        }
        return true;
    }

    /** A planned file that is gone: FILE_NOT_EXIST, or skipped with a warning, as Spark's FileScanRDD does. */
    private boolean missing(String path) {
        if (!options.ignoreMissing) {
            throw SparkErrors.fileNotExist(path);
        }
        LOG.warn("Skipped missing file: {}", path);
        return false;
    }

    /**
     * Whether {@code log}, which the NEXT of the piece's part found absent (a broken chain with no offset), is the
     * segment after it that the plan reads, removed since: its first part reports the hole (or finds the segment
     * was read before it went), so this part does not report it again; without ignoreMissingFiles it is
     * FILE_NOT_EXIST.
     */
    private boolean gone(SplitPartition.Piece piece, Storage storage, Integer log) {
        if (!piece.nextRead() || log == null || log != piece.part().log() + 1) {
            return false;
        }
        missing(planned(piece, storage, log));
        return true;
    }

    /** The file the plan selected for segment {@code log}, as messages name it. */
    private static String planned(SplitPartition.Piece piece, Storage storage, int log) {
        return storage.describe(piece.names().stream().filter(n -> LogReader.segmentNumber(n) == log).findFirst()
                .orElseThrow());
    }

    /** A free batch for the walk to fill, once the task has given one back. */
    private ColumnBatch take() throws InterruptedIOException {
        try {
            while (!closed) {
                ColumnBatch batch = free.poll(100, TimeUnit.MILLISECONDS);
                if (batch != null) {
                    return batch;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        throw new InterruptedIOException("the task closed its reader");
    }

    /** Writes the walk's records and damage into batches, by mode. */
    private final class BatchSink implements Sink {
        private final SplitPartition.Piece piece;
        private final CountingStorage storage;
        private final LogReader reader;
        private final long before;
        private final UTF8String directory;
        private ColumnBatch batch;
        private int fileLog;
        private UTF8String file;

        /** {@code before}: the bytes the task's parts before this one read. */
        BatchSink(SplitPartition.Piece piece, CountingStorage storage, LogReader reader, long before) {
            this.piece = piece;
            this.storage = storage;
            this.reader = reader;
            this.before = before;
            this.directory = UTF8String.fromString(piece.directory());
        }

        /** The batch the next row of segment {@code log} from {@code file} goes to: a new one when the current
         * cannot take it. */
        private ColumnBatch batch(int log, UTF8String file) throws IOException {
            if (batch != null && !batch.takes(log, file)) {
                flush();
            }
            if (batch == null) {
                batch = take();
                batch.start(log, file, piece.partitions());
            }
            return batch;
        }

        private UTF8String file(int log) {
            if (file == null || log != fileLog) {
                fileLog = log;
                file = UTF8String.fromString(reader.file(log));
            }
            return file;
        }

        @Override
        public void record(Record r) throws IOException {
            record(r.log(), r.offset(), r.index(), r.asqn(), r.timestampUs(), r.checked(), r.payload(), 0,
                    r.payload().length);
        }

        /** What the walk calls: the payload goes from the walk's window into the batch, copied once. */
        @Override
        public void record(int log, long offset, long index, long asqn, long timestampUs, boolean checked,
                byte[] bytes, int at, int length) throws IOException {
            batch(log, file(log)).record(log, offset, index, asqn, timestampUs, checked, bytes, at, length);
        }

        @Override
        public void damage(Damage d) throws IOException {
            if (d.errorClass() == ErrorClass.CHAIN_BROKEN && d.offset() < 0 && gone(piece, storage, d.log())) {
                return;
            }
            if (options.corruptRows() == null) {
                return; // DROPMALFORMED: the damaged bytes are dropped; FAILFAST never gets here
            }
            byte[] raw = raw(d);
            // A missing segment (no offset) has no file: its row names the log directory, as the Python source's.
            batch(d.log(), d.offset() < 0 ? directory : file(d.log())).damage(d, raw);
        }

        /** Up to maxCorruptRecordBytes of the bytes stepped over, for the corrupt-record column. */
        private byte[] raw(Damage d) throws IOException {
            return reader.bytes(d.log(), d.offset(), (int) Math.min(d.bytesSkipped(), options.maxCorruptRecordBytes));
        }

        /** Hands the batch being filled, which holds a row at least, to the task. */
        void flush() {
            if (batch != null) {
                bytesRead = before + storage.bytes();
                filled.add(Optional.of(batch));
                batch = null;
            }
        }
    }

    @Override
    public boolean next() throws IOException {
        if (current != null) {
            free.add(current); // Spark is done with the rows of a batch when it asks for the next
            current = null;
        }
        if (ended) {
            return false;
        }
        Optional<ColumnBatch> next;
        try {
            next = filled.take();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while reading " + part.pieces.get(0).directory());
        }
        if (next.isEmpty()) {
            ended = true;
            if (failure instanceof SparkThrowable) {
                throw SparkErrors.rethrow(failure); // FILE_NOT_EXIST as Spark's file sources raise it
            }
            if (failure != null) {
                throw failure instanceof IOException io ? io : new IOException(failure);
            }
            return false;
        }
        current = next.get();
        return true;
    }

    @Override
    public ColumnarBatch get() {
        return current.rows();
    }

    @Override
    public CustomTaskMetric[] currentMetricsValues() {
        return new CustomTaskMetric[] {BytesReadMetric.of(bytesRead), ListingsMetric.of(listingsMade)};
    }

    @Override
    public void close() throws IOException {
        closed = true;
        walker.interrupt();
        try {
            walker.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        batches.forEach(ColumnBatch::close);
    }
}
