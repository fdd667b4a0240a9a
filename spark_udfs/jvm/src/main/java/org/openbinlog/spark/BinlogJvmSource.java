package org.openbinlog.spark;

import java.util.List;
import java.util.Map;

import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * {@code spark.read.format("binlog-jvm").load(PATH, ...)}: the BinLog logs found under the load paths ({@link
 * Listing}), read by Spark's JVM data source API with the reader core of {@code org.openbinlog.format}. Its rows
 * are the Python source's ({@code binlog}).
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
        // Listed at load(), as Spark's file sources do: a missing path fails here, and partition directories are
        // columns. Each query lists again, to read the segments and logs there are then.
        List<Listing.Log> logs = Listing.logs(read, Listing.sessionHadoopConf());
        for (Listing.Log log : logs) {
            if (read.corruptRows() != null && log.partitions().containsKey(read.corruptRows())) {
                throw new OptionException("option columnNameOfCorruptRecord: '" + read.corruptRows()
                        + "' names a partition column of " + log.directory());
            }
        }
        return Columns.schema(read, Partitions.fields(logs, Columns.reserved(read)));
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        return new BinlogTable(schema);
    }
}
