package org.openbinlog.spark;

import java.io.IOException;
import java.io.InputStream;

import com.github.luben.zstd.ZstdInputStreamNoFinalizer;
import org.openbinlog.format.Decompressor;

/**
 * Zstandard copies of segments (protocols §2.6) by zstd-jni, which Spark ships: frames that follow one another are
 * read as one stream, and a stream cut inside a frame fails its read. Also a service of
 * {@link Decompressor}, for the conformance testee.
 */
public final class ZstdDecompressor implements Decompressor {
    @Override
    public String suffix() {
        return "zst";
    }

    @Override
    public InputStream open(InputStream archive) throws IOException {
        return new ZstdInputStreamNoFinalizer(archive);
    }
}
