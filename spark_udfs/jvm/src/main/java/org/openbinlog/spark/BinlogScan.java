package org.openbinlog.spark;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeSet;
import java.util.stream.Collectors;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructType;
import org.openbinlog.format.CheckedHeaders;
import org.openbinlog.format.LogReader;
import org.openbinlog.format.Part;
import org.openbinlog.format.Storage;

/** The plan of one query: which splits of which segments of which logs each task reads. */
final class BinlogScan implements Scan, Batch {
    private final StructType readSchema;
    private final StructType partitions;
    private final ReadOptions options;
    private final Filter[] pushed;
    private int planned = -1;
    /** The segment files left out by the filters, as directory and log number. */
    private final Set<String> pruned = new TreeSet<>();

    /** {@code partitions}: the table's partition columns, which filters may name. */
    BinlogScan(StructType readSchema, StructType partitions, ReadOptions options, Filter[] pushed) {
        this.readSchema = readSchema;
        this.partitions = partitions;
        this.options = options;
        this.pushed = pushed;
    }

    @Override
    public StructType readSchema() {
        return readSchema;
    }

    @Override
    public String description() {
        String filters = Arrays.stream(pushed).map(Filter::toString).collect(Collectors.joining(", ", "[", "]"));
        String tasks = planned < 0 ? "" : ", Tasks: " + planned + ", SegmentsPruned: " + pruned.size();
        return "BinLog " + String.join(", ", options.paths) + ", Mode: " + options.mode + ", PushedFilters: "
                + filters + tasks;
    }

    @Override
    public Batch toBatch() {
        return this;
    }

    @Override
    public CustomMetric[] supportedCustomMetrics() {
        return new CustomMetric[] {new BytesReadMetric(), new ListingsMetric()};
    }

    /** A log the partition filters keep, with its storage and reader open for planning, and its segments' sizes. */
    private record Planned(Listing.Log log, InternalRow values, Storage storage, LogReader reader,
            SortedMap<Integer, Long> sizes) {}

    @Override
    public InputPartition[] planInputPartitions() {
        Configuration conf = Listing.sessionHadoopConf();
        Map<String, String> hadoop = Storages.settings(conf);
        List<SplitPartition.Piece> pieces = new ArrayList<>();
        List<Planned> kept = new ArrayList<>();
        long step;
        pruned.clear();
        try {
            try {
                for (Listing.Log log : Listing.logs(options, conf)) {
                    InternalRow values = Partitions.values(partitions, log);
                    if (!Partitions.keeps(pushed, partitions, values)) {
                        log.names().forEach(name -> pruned.add(log.directory() + " " + LogReader.segmentNumber(name)));
                        continue;
                    }
                    Storage storage = Storages.open(log.directory(), local(log) ? Map.of() : hadoop);
                    LogReader reader = new LogReader(new SelectedStorage(storage, log.names()), options.unpacking());
                    kept.add(new Planned(log, values, storage, reader, reader.segmentSizes()));
                }
                List<Long> sizes = new ArrayList<>();
                kept.forEach(p -> sizes.addAll(p.sizes().values()));
                step = splitBytes(sizes);
                for (Planned log : kept) {
                    InternalRow values = Partitions.project(log.values(), partitions, readSchema);
                    List<Part> parts = new ArrayList<>();
                    for (Part part : log.reader().plan(step, RowBounds.of(pushed))) {
                        if (!part.whole() && !LogPruning.keeps(pushed, part.log())) {
                            pruned.add(log.log().directory() + " " + part.log());
                            continue;
                        }
                        parts.add(part);
                    }
                    Set<Integer> read = parts.stream().map(Part::log).collect(Collectors.toSet());
                    CheckedHeaders checked = log.reader().checkedHeaders();
                    for (int k = 0; k < parts.size(); k++) {
                        Part part = parts.get(k);
                        pieces.add(new SplitPartition.Piece(log.log().directory(), log.log().names(),
                                local(log.log()) ? Map.of() : hadoop, part, values, bytes(part, log.sizes()),
                                k == 0 || parts.get(k - 1).log() != part.log(), read.contains(part.log() + 1),
                                checked));
                    }
                }
            } finally {
                for (Planned log : kept) {
                    log.reader().close(); // drops what planning unpacked of compressed segments
                    Storages.close(log.storage());
                }
            }
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        List<SplitPartition> tasks = tasks(pieces, step);
        planned = tasks.size();
        return tasks.toArray(new InputPartition[0]);
    }

    private static boolean local(Listing.Log log) {
        return Storages.local(log.directory());
    }

    /** The bytes a part spans: its split of a segment, to the segment's end, or all of a log read whole. */
    private static long bytes(Part part, SortedMap<Integer, Long> segments) {
        if (part.whole()) {
            return segments.values().stream().mapToLong(Long::longValue).sum();
        }
        long size = segments.getOrDefault(part.log(), 0L);
        return Math.max(0, Math.min(part.stop(), size) - part.start());
    }

    /**
     * The parts packed into tasks as Spark packs split files (FilePartition.getFilePartitions), but in log order:
     * a task takes parts while their bytes, each weighing openCostInBytes more, stay within {@code step}; and
     * when that makes more tasks than maxPartitionNum, packed again within the bytes over that many tasks.
     */
    private List<SplitPartition> tasks(List<SplitPartition.Piece> pieces, long step) {
        long openCost = openCost();
        List<SplitPartition> tasks = pack(pieces, step, openCost);
        scala.Option<Object> setting = SQLConf.get().filesMaxPartitionNum();
        Integer most = options.maxPartitionNum != null ? options.maxPartitionNum
                : setting.isDefined() ? (Integer) setting.get() : null;
        if (most != null && tasks.size() > most) {
            long total = pieces.stream().mapToLong(piece -> piece.bytes() + openCost).sum();
            tasks = pack(pieces, Math.max(1, (total + most - 1) / most), openCost);
        }
        return tasks;
    }

    private static List<SplitPartition> pack(List<SplitPartition.Piece> pieces, long step, long openCost) {
        List<SplitPartition> tasks = new ArrayList<>();
        List<SplitPartition.Piece> task = new ArrayList<>();
        long size = 0;
        for (SplitPartition.Piece piece : pieces) {
            if (!task.isEmpty() && size + piece.bytes() > step) {
                tasks.add(new SplitPartition(task));
                task.clear();
                size = 0;
            }
            task.add(piece);
            size += piece.bytes() + openCost;
        }
        if (!task.isEmpty()) {
            tasks.add(new SplitPartition(task));
        }
        return tasks;
    }

    private long openCost() {
        return options.openCostInBytes != null ? options.openCostInBytes : SQLConf.get().filesOpenCostInBytes();
    }

    /**
     * The option maxPartitionBytes, else the split size of Spark's file sources (FilePartition.maxSplitBytes):
     * the segments' bytes, each file weighing openCostInBytes more, over minPartitions tasks (by default
     * spark.sql.files.minPartitionNum, else the session's cores), within openCostInBytes and maxPartitionBytes;
     * so every core reads even a small log.
     */
    private long splitBytes(List<Long> sizes) {
        if (options.maxPartitionBytes != null) {
            return options.maxPartitionBytes;
        }
        SQLConf conf = SQLConf.get();
        long openCost = openCost();
        long total = sizes.stream().mapToLong(size -> size + openCost).sum();
        scala.Option<Object> minPartitions = conf.filesMinPartitionNum();
        int tasks = options.minPartitions != null ? options.minPartitions
                : minPartitions.isDefined() ? (Integer) minPartitions.get()
                : ((org.apache.spark.sql.classic.SparkSession) SparkSession.active()).leafNodeDefaultParallelism();
        return Math.max(1, Math.min(conf.filesMaxPartitionBytes(), Math.max(openCost, total / tasks)));
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        return new SplitReaderFactory(readSchema, options);
    }
}
