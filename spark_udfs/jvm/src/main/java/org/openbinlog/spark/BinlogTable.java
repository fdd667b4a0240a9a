package org.openbinlog.spark;

import java.util.EnumSet;
import java.util.Set;

import org.apache.spark.sql.connector.catalog.CatalogV2Util;
import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** The logs under the load paths, read in batches. */
final class BinlogTable implements SupportsRead {
    private final StructType schema;

    BinlogTable(StructType schema) {
        this.schema = schema;
    }

    @Override
    public String name() {
        return BinlogJvmSource.NAME;
    }

    @Override
    public Column[] columns() {
        return CatalogV2Util.structTypeToV2Columns(schema, false);
    }

    @Override
    public Set<TableCapability> capabilities() {
        return EnumSet.of(TableCapability.BATCH_READ);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
        return new BinlogScanBuilder(schema, ReadOptions.parse(options));
    }
}
