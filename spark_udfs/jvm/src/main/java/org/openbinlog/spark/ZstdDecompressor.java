package org.openbinlog.spark;

import java.io.IOException;
import java.io.InputStream;

import com.github.luben.zstd.ZstdInputStreamNoFinalizer;
import org.openbinlog.format.Decompressor;

/**
 * Zstandard copies of segments (protocols §2.6) by zstd-jni, which Spark ships: frames that follow one another are
 * read as one stream. A stream cut inside a frame gives the bytes decoded before the cut and then ends, as the
 * reference's decoder gives them (zstd-jni's continuous mode; by itself it fails the read that meets the cut, losing
 * what that read had decoded): the reader then finds the archive cut ({@code ZstdFrames}), {@code bad_header},
 * after the same records. Also a service of {@link Decompressor}, for the conformance testee.
 */
public final class ZstdDecompressor implements Decompressor {
    @Override
    public String suffix() {
        return "zst";
    }

    @Override
    public InputStream open(InputStream archive) throws IOException {
        return new ZstdInputStreamNoFinalizer(archive).setContinuous(true);
    }
}
