package org.openbinlog.spark;

import java.math.BigInteger;
import java.time.LocalDate;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.DateTimeUtils;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.sources.GreaterThan;
import org.apache.spark.sql.sources.GreaterThanOrEqual;
import org.apache.spark.sql.sources.LessThan;
import org.apache.spark.sql.sources.LessThanOrEqual;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Partition columns: their types, inferred from the {@code key=value} directory names as the Python source infers
 * them (openbinlog_spark listing.py {@code partition_columns}: int, else long, else date, else string), each log's
 * values, and the pruning of whole logs by filters on them. Spark evaluates every filter again on the rows read.
 */
final class Partitions {
    // ASCII digits, anchored: as the Python source's patterns.
    private static final Pattern INT = Pattern.compile("-?[0-9]+");
    private static final Pattern DATE = Pattern.compile("[0-9]{4}-[0-9]{2}-[0-9]{2}");
    private static final BigInteger[] INT_RANGE = {BigInteger.valueOf(Integer.MIN_VALUE), BigInteger.valueOf(Integer.MAX_VALUE)};
    private static final BigInteger[] LONG_RANGE = {BigInteger.valueOf(Long.MIN_VALUE), BigInteger.valueOf(Long.MAX_VALUE)};

    private Partitions() {}

    /** The partition columns in order of first appearance over the logs, without the names the source uses. */
    static StructType fields(List<Listing.Log> logs, Set<String> reserved) {
        Map<String, Set<String>> values = new LinkedHashMap<>();
        for (Listing.Log log : logs) {
            log.partitions().forEach((name, value) -> {
                Set<String> seen = values.computeIfAbsent(name, n -> new LinkedHashSet<>());
                if (value != null) {
                    seen.add(value);
                }
            });
        }
        List<StructField> fields = new ArrayList<>();
        values.forEach((name, seen) -> {
            if (!reserved.contains(name)) {
                fields.add(DataTypes.createStructField(name, type(seen), true));
            }
        });
        return new StructType(fields.toArray(new StructField[0]));
    }

    private static DataType type(Set<String> values) {
        if (values.isEmpty()) {
            return DataTypes.StringType;
        }
        if (values.stream().allMatch(v -> INT.matcher(v).matches())) {
            if (values.stream().allMatch(v -> within(v, INT_RANGE))) {
                return DataTypes.IntegerType;
            }
            if (values.stream().allMatch(v -> within(v, LONG_RANGE))) {
                return DataTypes.LongType;
            }
        }
        if (values.stream().allMatch(v -> DATE.matcher(v).matches() && date(v) != null)) {
            return DataTypes.DateType;
        }
        return DataTypes.StringType;
    }

    private static boolean within(String value, BigInteger[] range) {
        BigInteger n = new BigInteger(value);
        return n.compareTo(range[0]) >= 0 && n.compareTo(range[1]) <= 0;
    }

    /** A date as Python's {@code date.fromisoformat} takes one (years 1 to 9999); null otherwise. */
    private static LocalDate date(String value) {
        try {
            LocalDate date = LocalDate.parse(value);
            return date.getYear() >= 1 ? date : null;
        } catch (DateTimeParseException e) {
            return null;
        }
    }

    /**
     * The values of {@code log} for {@code fields}, as Spark holds them (null where its path has no such
     * directory). A value that is no longer of the type inferred at {@code load()} (the directories changed
     * since) fails the query: read as another type it would be a wrong row.
     */
    static InternalRow values(StructType fields, Listing.Log log) {
        Object[] values = new Object[fields.size()];
        for (int i = 0; i < values.length; i++) {
            StructField field = fields.fields()[i];
            String raw = log.partitions().get(field.name());
            values[i] = raw == null ? null : value(field, raw, log.directory());
        }
        return new GenericInternalRow(values);
    }

    private static Object value(StructField field, String raw, String directory) {
        DataType type = field.dataType();
        boolean integral = INT.matcher(raw).matches();
        if (type.equals(DataTypes.IntegerType) && integral && within(raw, INT_RANGE)) {
            return Integer.parseInt(raw);
        }
        if (type.equals(DataTypes.LongType) && integral && within(raw, LONG_RANGE)) {
            return Long.parseLong(raw);
        }
        LocalDate date = DATE.matcher(raw).matches() ? date(raw) : null;
        if (type.equals(DataTypes.DateType) && date != null) {
            return (int) date.toEpochDay();
        }
        if (type.equals(DataTypes.StringType)) {
            return UTF8String.fromString(raw);
        }
        throw new IllegalStateException("partition directory " + directory + ": the value '" + raw + "' of "
                + field.name() + " is not of its type at load(), " + type.simpleString() + ": load the path again");
    }

    /** The columns of {@code fields} in {@code schema}'s order, and their values in {@code row}. */
    static InternalRow project(InternalRow row, StructType fields, StructType schema) {
        List<Object> values = new ArrayList<>();
        for (StructField field : schema.fields()) {
            int at = Arrays.asList(fields.fieldNames()).indexOf(field.name());
            if (at >= 0) {
                values.add(row.get(at, field.dataType()));
            }
        }
        return new GenericInternalRow(values.toArray());
    }

    /** Whether a filter is a comparison of one partition column that {@link #keeps} judges. */
    static boolean understands(Filter filter, StructType fields) {
        String[] columns = filter.references();
        return columns.length == 1 && Arrays.asList(fields.fieldNames()).contains(columns[0])
                && Comparisons.values(filter) != null;
    }

    /** False only when some filter fails for the log whose partition values are {@code values}. */
    static boolean keeps(Filter[] filters, StructType fields, InternalRow values) {
        for (Filter filter : filters) {
            if (!understands(filter, fields)) {
                continue;
            }
            int at = Arrays.asList(fields.fieldNames()).indexOf(filter.references()[0]);
            DataType type = fields.fields()[at].dataType();
            Object value = values.isNullAt(at) ? null : values.get(at, type);
            if (Arrays.stream(Comparisons.values(filter)).noneMatch(literal -> holds(filter, type, value, literal))) {
                return false;
            }
        }
        return true;
    }

    /** Whether {@code filter}'s comparison of {@code value} with {@code literal} may be true. */
    private static boolean holds(Filter filter, DataType type, Object value, Object literal) {
        if (value == null || literal == null) {
            return false; // a comparison with null is never true
        }
        Integer order = compare(type, value, literal);
        if (order == null) {
            return true; // values of types this does not compare: keep the log
        }
        if (filter instanceof GreaterThan) {
            return order > 0;
        }
        if (filter instanceof GreaterThanOrEqual) {
            return order >= 0;
        }
        if (filter instanceof LessThan) {
            return order < 0;
        }
        if (filter instanceof LessThanOrEqual) {
            return order <= 0;
        }
        return order == 0; // EqualTo, or one value of In
    }

    /** The order of a partition value (as Spark holds it) and a filter's literal, as Spark orders them. */
    private static Integer compare(DataType type, Object value, Object literal) {
        if (type.equals(DataTypes.StringType) && literal instanceof String other) {
            return ((UTF8String) value).compareTo(UTF8String.fromString(other));
        }
        boolean integral = type.equals(DataTypes.IntegerType) || type.equals(DataTypes.LongType);
        if (integral && (literal instanceof Integer || literal instanceof Long)) {
            return Long.compare(((Number) value).longValue(), ((Number) literal).longValue());
        }
        if (type.equals(DataTypes.DateType) && literal instanceof java.sql.Date other) {
            return Integer.compare((Integer) value, DateTimeUtils.fromJavaDate(other));
        }
        if (type.equals(DataTypes.DateType) && literal instanceof LocalDate other) {
            return Long.compare((Integer) value, other.toEpochDay());
        }
        return null;
    }
}
