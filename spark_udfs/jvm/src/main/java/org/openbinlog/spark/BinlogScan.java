package org.openbinlog.spark;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
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
        return new CustomMetric[] {new BytesReadMetric()};
    }

    /** A log the partition filters keep, with its storage and reader open for planning. */
    private record Planned(Listing.Log log, InternalRow values, Storage storage, LogReader reader) {}

    @Override
    public InputPartition[] planInputPartitions() {
        Configuration conf = Listing.sessionHadoopConf();
        Map<String, String> hadoop = Storages.settings(conf);
        List<InputPartition> parts = new ArrayList<>();
        List<Planned> kept = new ArrayList<>();
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
                    kept.add(new Planned(log, values, storage,
                            new LogReader(new SelectedStorage(storage, log.names()), options.unpacking())));
                }
                long step = splitBytes(kept.stream().flatMap(p -> p.reader().segmentSizes().stream()).toList());
                for (Planned log : kept) {
                    InternalRow values = Partitions.project(log.values(), partitions, readSchema);
                    for (Part part : log.reader().plan(step, RowBounds.of(pushed))) {
                        if (!part.whole() && !LogPruning.keeps(pushed, part.log())) {
                            pruned.add(log.log().directory() + " " + part.log());
                            continue;
                        }
                        parts.add(new SplitPartition(log.log().directory(), log.log().names(),
                                local(log.log()) ? Map.of() : hadoop, part, values));
                    }
                }
            } finally {
                for (Planned log : kept) {
                    Storages.close(log.storage());
                }
            }
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        planned = parts.size();
        return parts.toArray(new InputPartition[0]);
    }

    private static boolean local(Listing.Log log) {
        return Storages.local(log.directory());
    }

    /**
     * The option maxPartitionBytes, else the split size of Spark's file sources (FilePartition.maxSplitBytes):
     * the segments' bytes, each file weighing openCostInBytes more, over minPartitionNum tasks (by default the
     * session's cores), within openCostInBytes and maxPartitionBytes; so every core reads even a small log.
     */
    private long splitBytes(List<Long> sizes) {
        if (options.maxPartitionBytes != null) {
            return options.maxPartitionBytes;
        }
        SQLConf conf = SQLConf.get();
        long openCost = conf.filesOpenCostInBytes();
        long total = sizes.stream().mapToLong(size -> size + openCost).sum();
        scala.Option<Object> minPartitions = conf.filesMinPartitionNum();
        int tasks = minPartitions.isDefined() ? (Integer) minPartitions.get()
                : ((org.apache.spark.sql.classic.SparkSession) SparkSession.active()).leafNodeDefaultParallelism();
        return Math.max(1, Math.min(conf.filesMaxPartitionBytes(), Math.max(openCost, total / tasks)));
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        return new SplitReaderFactory(readSchema, options);
    }
}
