package org.openbinlog.spark;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Map;

import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * {@code spark.read.format("binlog-jvm").load(DIR)}: a BinLog log directory read by Spark's JVM data source API,
 * with the reader core of {@code org.openbinlog.format}. Its rows are the Python source's ({@code binlog}).
 */
public final class BinlogJvmSource implements TableProvider, DataSourceRegister {
    public static final String NAME = "binlog-jvm";

    @Override
    public String shortName() {
        return NAME;
    }

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        ReadOptions read = ReadOptions.parse(options);
        boolean exists;
        try {
            exists = Storages.exists(read.path);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        if (!exists) {
            throw SparkErrors.pathNotFound(read.path); // at load(), as Spark's file sources do
        }
        return Columns.schema(read);
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        return new BinlogTable(schema);
    }
}
