package org.openbinlog.spark;

import org.apache.spark.sql.errors.QueryCompilationErrors;

/** Spark's own errors, where Spark has one for what went wrong. */
final class SparkErrors {
    private SparkErrors() {}

    /** PATH_NOT_FOUND, Spark's AnalysisException for a missing input path, as its file sources raise it. */
    static RuntimeException pathNotFound(String path) {
        return SparkErrors.<RuntimeException>raise(QueryCompilationErrors.dataPathNotExistError(path));
    }

    // AnalysisException is a checked exception to Java; Spark's Scala code raises it from methods that do not
    // declare it, and so does this.
    @SuppressWarnings("unchecked")
    private static <E extends Throwable> RuntimeException raise(Throwable error) throws E {
        throw (E) error;
    }
}
