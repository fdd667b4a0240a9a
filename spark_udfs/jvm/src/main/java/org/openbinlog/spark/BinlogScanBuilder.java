package org.openbinlog.spark;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownFilters;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Made by Spark for each query: the columns it reads and the filters it pushes belong to that query alone (the
 * Python source's plan is shared by every query of a DataFrame up to Spark 4.3, which is why it cannot prune).
 */
final class BinlogScanBuilder implements ScanBuilder, SupportsPushDownFilters, SupportsPushDownRequiredColumns {
    private final ReadOptions options;
    private final StructType partitions;
    private StructType readSchema;
    private Filter[] pushed = new Filter[0];

    BinlogScanBuilder(StructType schema, ReadOptions options) {
        this.readSchema = schema;
        this.options = options;
        this.partitions = Columns.partitions(schema, options);
    }

    /**
     * Takes the filters on {@code log} that prune segments, on partition columns that prune logs, and on
     * {@code index} and {@code timestamp} that bound the rows read ({@link RowBounds}); Spark evaluates every
     * filter on the rows again.
     */
    @Override
    public Filter[] pushFilters(Filter[] filters) {
        List<Filter> taken = new ArrayList<>();
        for (Filter filter : options.pushdown ? filters : new Filter[0]) {
            if (LogPruning.understands(filter) || RowBounds.understands(filter)
                    || Partitions.understands(filter, partitions)) {
                taken.add(filter);
            }
        }
        pushed = taken.toArray(new Filter[0]);
        return filters;
    }

    @Override
    public Filter[] pushedFilters() {
        return pushed.clone();
    }

    @Override
    public void pruneColumns(StructType requiredSchema) {
        // _error is read whole: Spark may ask for some of its fields (nested pruning), and takes what readSchema
        // says it gets.
        readSchema = new StructType(java.util.Arrays.stream(requiredSchema.fields())
                .map(field -> field.name().equals(Columns.ERROR_COLUMN)
                        ? DataTypes.createStructField(field.name(), Columns.ERROR_TYPE, true) : field)
                .toArray(StructField[]::new));
    }

    @Override
    public Scan build() {
        return new BinlogScan(readSchema, partitions, options, pushed);
    }
}
