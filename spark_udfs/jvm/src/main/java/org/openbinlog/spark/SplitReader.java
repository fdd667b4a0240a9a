package org.openbinlog.spark;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.unsafe.types.UTF8String;
import org.openbinlog.format.BinlogException;
import org.openbinlog.format.CountingStorage;
import org.openbinlog.format.Damage;
import org.openbinlog.format.LogReader;
import org.openbinlog.format.Record;
import org.openbinlog.format.Sink;
import org.openbinlog.format.Storage;

/**
 * Reads one split with the reader core's walk, which pushes records and damage to a sink, in a thread of its own
 * that fills column batches for the task: the task pulls batches while the walk fills the next. A few batches
 * go round between the two (the task gives one back when it asks for the next), so memory stays bounded
 * whatever the split's size.
 */
final class SplitReader implements PartitionReader<ColumnarBatch> {
    private static final int BATCHES = 3;
    private static final Optional<ColumnBatch> END = Optional.empty();

    private final SplitPartition part;
    private final ReadOptions options;
    private final List<ColumnBatch> batches;
    private final BlockingQueue<ColumnBatch> free = new ArrayBlockingQueue<>(BATCHES);
    private final BlockingQueue<Optional<ColumnBatch>> filled = new ArrayBlockingQueue<>(BATCHES + 1);
    private final Thread walker;
    private volatile Throwable failure;
    private volatile boolean closed;
    private volatile long bytesRead;
    private ColumnBatch current;
    private boolean ended;

    SplitReader(SplitPartition part, StructType readSchema, ReadOptions options) {
        this.part = part;
        this.options = options;
        Columns.Kind[] kinds = Columns.kinds(readSchema, options);
        ColumnBatch[] made = new ColumnBatch[BATCHES];
        for (int i = 0; i < BATCHES; i++) {
            made[i] = new ColumnBatch(readSchema, kinds, part.partitions);
        }
        batches = List.of(made);
        free.addAll(batches);
        this.walker = new Thread(this::walk, "binlog-part-" + part.part.log() + "-" + part.part.start());
        walker.setDaemon(true);
        walker.start();
    }

    private void walk() {
        try {
            Storage opened = Storages.open(part.directory, part.hadoop);
            CountingStorage storage = new CountingStorage(new SelectedStorage(opened, part.names));
            try (LogReader reader = new LogReader(storage, options.unpacking())) {
                BatchSink sink = new BatchSink(storage);
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
            filled.add(END);
        } catch (InterruptedIOException e) {
            return; // closed by the task
        } catch (Throwable e) {
            failure = e;
            filled.add(END); // never full: it has room for every batch and the end
        }
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
        private final CountingStorage storage;
        private final UTF8String directory = UTF8String.fromString(part.directory);
        private ColumnBatch batch;
        private int fileLog;
        private UTF8String file;

        BatchSink(CountingStorage storage) {
            this.storage = storage;
        }

        /** The batch the next row of segment {@code log} from {@code file} goes to: a new one when the current
         * cannot take it. */
        private ColumnBatch batch(int log, UTF8String file) throws IOException {
            if (batch != null && !batch.takes(log, file)) {
                flush();
            }
            if (batch == null) {
                batch = take();
                batch.start(log, file);
            }
            return batch;
        }

        private UTF8String file(int log) {
            if (file == null || log != fileLog) {
                fileLog = log;
                file = UTF8String.fromString(storage.describe(segmentName(log)));
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
            if (options.corruptRows() == null) {
                return; // DROPMALFORMED: the damaged bytes are dropped; FAILFAST never gets here
            }
            byte[] raw = raw(d);
            // A missing segment (no offset) has no file: its row names the log directory, as the Python source's.
            batch(d.log(), d.offset() < 0 ? directory : file(d.log())).damage(d, raw);
        }

        /** Up to maxCorruptRecordBytes of the bytes stepped over, for the corrupt-record column. */
        private byte[] raw(Damage d) throws IOException {
            int length = (int) Math.min(d.bytesSkipped(), options.maxCorruptRecordBytes);
            byte[] raw = new byte[Math.max(length, 0)];
            int filled = 0;
            while (filled < raw.length) {
                int n = storage.read(segmentName(d.log()), d.offset() + filled, raw, filled, raw.length - filled);
                if (n <= 0) {
                    return java.util.Arrays.copyOf(raw, filled);
                }
                filled += n;
            }
            return raw;
        }

        /** Hands the batch being filled, which holds a row at least, to the task. */
        void flush() {
            if (batch != null) {
                bytesRead = storage.bytes();
                filled.add(Optional.of(batch));
                batch = null;
            }
        }
    }

    private static String segmentName(int log) {
        return String.format("%08d.dat", log);
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
            throw new InterruptedIOException("interrupted while reading " + part.directory);
        }
        if (next.isEmpty()) {
            ended = true;
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
        batches.forEach(ColumnBatch::close);
    }
}
