package org.openbinlog.format;

import java.io.IOException;
import java.io.InputStream;

/**
 * The decoder of one kind of compressed segment (protocols §2.6): gzip is built in ({@link Unpacking}), Zstandard
 * is supplied by the caller, so that this package needs the JDK only. A caller registers one as a service of this
 * interface where a reader finds its decoders on its class path (the conformance testee).
 */
public interface Decompressor {
    /** The suffix of the file names it reads, without its dot: {@code zst} for {@code NNNNNNNN.dat.zst}. */
    String suffix();

    /**
     * The decompressed bytes of {@code archive}, whose frames or members follow one another. A stream that is not
     * valid, or that ends inside a frame, throws an {@link IOException} from its reads.
     */
    InputStream open(InputStream archive) throws IOException;
}
