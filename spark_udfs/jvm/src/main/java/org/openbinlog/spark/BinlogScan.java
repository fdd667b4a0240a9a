package org.openbinlog.spark;

import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.SparkSession;
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

/** The plan of one query: which splits of which segments each task reads. */
final class BinlogScan implements Scan, Batch {
    private final StructType readSchema;
    private final ReadOptions options;
    private final Filter[] pushed;
    private int planned = -1;
    private final java.util.Set<Integer> pruned = new java.util.TreeSet<>();

    BinlogScan(StructType readSchema, ReadOptions options, Filter[] pushed) {
        this.readSchema = readSchema;
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
        return "BinLog " + options.path + ", Mode: " + options.mode + ", PushedFilters: " + filters + tasks;
    }

    @Override
    public Batch toBatch() {
        return this;
    }

    @Override
    public CustomMetric[] supportedCustomMetrics() {
        return new CustomMetric[] {new BytesReadMetric()};
    }

    @Override
    public InputPartition[] planInputPartitions() {
        Map<String, String> hadoop = Storages.local(options.path) ? Map.of() : hadoopSettings();
        List<InputPartition> parts = new ArrayList<>();
        pruned.clear();
        try {
            Storage storage = Storages.open(options.path, hadoop);
            storage.list(); // a missing directory is Spark's PATH_NOT_FOUND, as for its own file sources
            try (LogReader reader = new LogReader(storage, options.unpacking())) {
                for (Part part : reader.plan(splitBytes(reader), RowBounds.of(pushed))) {
                    if (!part.whole() && !LogPruning.keeps(pushed, part.log())) {
                        pruned.add(part.log());
                        continue;
                    }
                    parts.add(new SplitPartition(options.path, hadoop, part));
                }
            } finally {
                Storages.close(storage);
            }
        } catch (NoSuchFileException e) {
            throw SparkErrors.pathNotFound(options.path);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        planned = parts.size();
        return parts.toArray(new InputPartition[0]);
    }

    /**
     * The option maxPartitionBytes, else the split size of Spark's file sources (FilePartition.maxSplitBytes):
     * the segments' bytes, each file weighing openCostInBytes more, over minPartitionNum tasks (by default the
     * session's cores), within openCostInBytes and maxPartitionBytes; so every core reads even a small log.
     */
    private long splitBytes(LogReader reader) {
        if (options.maxPartitionBytes != null) {
            return options.maxPartitionBytes;
        }
        SQLConf conf = SQLConf.get();
        long openCost = conf.filesOpenCostInBytes();
        long total = reader.segmentSizes().stream().mapToLong(size -> size + openCost).sum();
        scala.Option<Object> minPartitions = conf.filesMinPartitionNum();
        int tasks = minPartitions.isDefined() ? (Integer) minPartitions.get()
                : ((org.apache.spark.sql.classic.SparkSession) SparkSession.active()).leafNodeDefaultParallelism();
        return Math.max(1, Math.min(conf.filesMaxPartitionBytes(), Math.max(openCost, total / tasks)));
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        return new SplitReaderFactory(readSchema, options);
    }

    /** The file-system settings of the session's Hadoop configuration, for executors that open the files. */
    private static Map<String, String> hadoopSettings() {
        Configuration conf = ((org.apache.spark.sql.classic.SparkSession) SparkSession.active()).sessionState().newHadoopConf();
        Map<String, String> settings = new HashMap<>();
        conf.forEach(entry -> {
            if (entry.getKey().startsWith("fs.")) {
                settings.put(entry.getKey(), entry.getValue());
            }
        });
        return settings;
    }
}
