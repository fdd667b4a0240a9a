package org.openbinlog.spark;

import java.nio.file.NoSuchFileException;

import org.apache.spark.sql.errors.QueryCompilationErrors;
import org.apache.spark.sql.errors.QueryExecutionErrors;

/** Spark's own errors, where Spark has one for what went wrong. */
final class SparkErrors {
    private SparkErrors() {}

    /** PATH_NOT_FOUND, Spark's AnalysisException for a missing input path, as its file sources raise it. */
    static RuntimeException pathNotFound(String path) {
        return SparkErrors.<RuntimeException>raise(QueryCompilationErrors.dataPathNotExistError(path));
    }

    /**
     * FAILED_READ_FILE.FILE_NOT_EXIST, the error Spark's file sources raise for a file planned and gone when a
     * task reads it (FileScanRDD, without ignoreMissingFiles).
     */
    static RuntimeException fileNotExist(String path) {
        return SparkErrors.<RuntimeException>raise(
                QueryExecutionErrors.fileNotExistError(path, new NoSuchFileException(path)));
    }

    /** A Spark error (a checked SparkException among them) thrown again as it is. */
    static RuntimeException rethrow(Throwable error) {
        return SparkErrors.<RuntimeException>raise(error);
    }

    // AnalysisException is a checked exception to Java; Spark's Scala code raises it from methods that do not
    // declare it, and so does this.
    @SuppressWarnings("unchecked")
    private static <E extends Throwable> RuntimeException raise(Throwable error) throws E {
        throw (E) error;
    }
}
