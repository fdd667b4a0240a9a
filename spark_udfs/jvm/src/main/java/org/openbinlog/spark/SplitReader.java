package org.openbinlog.spark;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.unsafe.types.UTF8String;
import org.openbinlog.format.BinlogException;
import org.openbinlog.format.Damage;
import org.openbinlog.format.LogReader;
import org.openbinlog.format.Record;
import org.openbinlog.format.Sink;
import org.openbinlog.format.Storage;

/**
 * Reads one split with the reader core's walk, which pushes records and damage to a sink, in a thread of its own
 * that hands rows over in batches through a bounded queue: the task pulls rows while the walk reads ahead, and
 * memory stays bounded by the queue whatever the split's size.
 */
final class SplitReader implements PartitionReader<InternalRow> {
    private static final int BATCH = 1024;
    private static final int BATCHES = 8;
    private static final List<InternalRow> END = new ArrayList<>();

    private final SplitPartition part;
    private final Columns.Kind[] kinds;
    private final ReadOptions options;
    private final BlockingQueue<List<InternalRow>> queue = new ArrayBlockingQueue<>(BATCHES);
    private final Thread walker;
    private volatile Throwable failure;
    private volatile boolean closed;
    private volatile long bytesRead;
    private List<InternalRow> batch = List.of();
    private int next;
    private InternalRow current;
    private boolean ended;

    SplitReader(SplitPartition part, Columns.Kind[] kinds, ReadOptions options) {
        this.part = part;
        this.kinds = kinds;
        this.options = options;
        this.walker = new Thread(this::walk, "binlog-part-" + part.part.log() + "-" + part.part.start());
        walker.setDaemon(true);
        walker.start();
    }

    private void walk() {
        try {
            Storage opened = Storages.open(part.path, part.hadoop);
            CountingStorage storage = new CountingStorage(opened);
            try (LogReader reader = new LogReader(storage)) {
                RowSink sink = new RowSink(storage);
                try {
                    reader.readPart(part.part, options.tolerant(), sink);
                } catch (BinlogException e) {
                    // A tolerant walk stops at what it cannot step over (a damaged header, readers 10.4): a row of
                    // its own in PERMISSIVE, dropped in DROPMALFORMED, as any other damage.
                    if (!options.tolerant()) {
                        throw e;
                    }
                    sink.damage(new Damage(e.errorClass, e.log == null ? part.part.log() : e.log,
                            e.offset == null ? 0 : e.offset, e.index, e.getMessage(), 0, null));
                }
                sink.flush();
            } finally {
                bytesRead = storage.bytes();
                Storages.close(opened);
            }
            put(END);
        } catch (InterruptedIOException e) {
            return; // closed by the task
        } catch (Throwable e) {
            failure = e;
            try {
                put(END);
            } catch (InterruptedIOException ignored) {
                // closed by the task: nobody waits for the failure
            }
        }
    }

    private void put(List<InternalRow> rows) throws InterruptedIOException {
        try {
            while (!closed) {
                if (queue.offer(rows, 100, java.util.concurrent.TimeUnit.MILLISECONDS)) {
                    return;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        throw new InterruptedIOException("the task closed its reader");
    }

    /** Turns the walk's records and damage into rows of the read schema, by mode. */
    private final class RowSink implements Sink {
        private final Storage storage;
        private final java.util.Map<String, UTF8String> files = new java.util.HashMap<>();
        private List<InternalRow> rows = new ArrayList<>(BATCH);

        RowSink(Storage storage) {
            this.storage = storage;
        }

        private UTF8String file(int log) {
            return files.computeIfAbsent(String.format("%08d.dat", log), n -> UTF8String.fromString(storage.describe(n)));
        }

        @Override
        public void record(Record r) throws IOException {
            add(Columns.record(kinds, r, file(r.log())));
        }

        @Override
        public void damage(Damage d) throws IOException {
            if (options.corruptRows() == null) {
                return; // DROPMALFORMED: the damaged bytes are dropped; FAILFAST never gets here
            }
            add(Columns.damage(kinds, d, file(d.log()), raw(d)));
        }

        /** Up to maxCorruptRecordBytes of the bytes stepped over, for the corrupt-record column. */
        private byte[] raw(Damage d) throws IOException {
            int length = (int) Math.min(d.bytesSkipped(), options.maxCorruptRecordBytes);
            byte[] raw = new byte[Math.max(length, 0)];
            int filled = 0;
            while (filled < raw.length) {
                int n = storage.read(String.format("%08d.dat", d.log()), d.offset() + filled, raw, filled, raw.length - filled);
                if (n <= 0) {
                    return java.util.Arrays.copyOf(raw, filled);
                }
                filled += n;
            }
            return raw;
        }

        private void add(InternalRow row) throws IOException {
            rows.add(row);
            if (rows.size() == BATCH) {
                flush();
            }
        }

        void flush() throws IOException {
            if (!rows.isEmpty()) {
                put(rows);
                rows = new ArrayList<>(BATCH);
            }
        }
    }

    @Override
    public boolean next() throws IOException {
        while (next == batch.size()) {
            if (ended) {
                return false;
            }
            try {
                batch = queue.take();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new InterruptedIOException("interrupted while reading " + part.path);
            }
            next = 0;
            if (batch == END) {
                ended = true;
                batch = List.of();
                if (failure != null) {
                    throw failure instanceof IOException io ? io : new IOException(failure);
                }
            }
        }
        current = batch.get(next++);
        return true;
    }

    @Override
    public InternalRow get() {
        return current;
    }

    @Override
    public CustomTaskMetric[] currentMetricsValues() {
        return new CustomTaskMetric[] {BytesReadMetric.of(bytesRead)};
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
    }
}
