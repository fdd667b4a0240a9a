package org.openbinlog.format;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;
import java.util.Deque;

/**
 * The unpacked bytes of a compressed segment (protocols §2.6), unpacked as the reference's
 * {@code openbinlog.compressed} unpacks them, so that both readers meet the same bytes and the same failures at the
 * same reads:
 *
 * <ul>
 *   <li>into a temporary file (random access for the walk, no memory), a piece of at most 1 MiB at a time;
 *   <li>the header, and the byte after it that the blank check reads, alone; the first read beyond them unpacks the
 *       segment to its end before it returns, so that an archive that fails anywhere before that end fails
 *       before the walk checks any record of the segment, whatever sizes the walk reads in;
 *   <li>never beyond the segment's end as its header states it: its commit point (of a version 1 segment,
 *       its last element position), or 257 bytes when the header fails its checks, so that a small archive of
 *       gigabytes of zeros costs the committed bytes;
 *   <li>never beyond {@link Unpacking#maxBytes}: a segment whose header puts its end beyond it is refused at that
 *       first read beyond the header, before anything more is unpacked.
 * </ul>
 *
 * <p>A stream that cannot be decoded, a Zstandard archive that ends inside a frame ({@link ZstdFrames}), and a
 * segment beyond the cap are {@code bad_header} at offset 0, and stay so: nothing more is read. A failed read
 * of the archive or of the temporary file is {@code io_error}.
 * At most {@link #LIVE} segments of a reader hold their temporary files; a released one that is read again is
 * unpacked again from its start (a walk goes back to an earlier segment only to learn the asqn it ends with).
 */
final class CompressedSegment {
    static final int PIECE = 1 << 20;
    static final int LIVE = 2; // the segment walked and its successor, whose header its END reads
    private static final long MAX_OFFSET = Long.MAX_VALUE;

    private final Storage storage;
    private final String name;
    private final int log;
    private final Decompressor decompressor;
    private final Unpacking unpacking;
    private final Deque<CompressedSegment> live;
    private Archive archive;
    private InputStream stream;
    private FileChannel spill;
    private byte[] piece;
    private long unpacked; // bytes in the spill
    private long end = -1; // where unpacking stops: known once the header is unpacked
    private long statedEnd; // the end the header states, held against the cap
    private boolean exhausted; // the stream gave its last byte
    private BinlogException failed;

    CompressedSegment(Storage storage, String name, int log, Decompressor decompressor, Unpacking unpacking,
            Deque<CompressedSegment> live) {
        this.storage = storage;
        this.name = name;
        this.log = log;
        this.decompressor = decompressor;
        this.unpacking = unpacking;
        this.live = live;
    }

    /** A positioned read of the unpacked bytes: the number read, -1 where the segment (as far as it unpacks) ends. */
    int read(long pos, byte[] b, int off, int len) throws BinlogException {
        unpackTo(len > MAX_OFFSET - pos ? MAX_OFFSET : pos + len);
        int n = (int) Math.min(len, unpacked - pos);
        if (n <= 0) {
            return -1;
        }
        spilled(pos, b, off, n);
        return n;
    }

    /** The bytes a walk can read: the segment up to its end, or fewer where the archive ends. */
    long size() throws BinlogException {
        unpackTo(MAX_OFFSET);
        return unpacked;
    }

    /** {@code min(size(), n)}, unpacking only the header for an {@code n} within it, else up to the end. */
    long sizeUpTo(long n) throws BinlogException {
        unpackTo(n);
        return Math.min(unpacked, n);
    }

    /** Drops the temporary file and the stream: a later read unpacks from the start again. */
    void release() {
        live.remove(this);
        try {
            if (stream != null) {
                stream.close();
            }
            if (spill != null) {
                spill.close();
            }
        } catch (IOException e) {
            // A decoder and a temporary file that no read needs any more: nothing is lost.
        }
        archive = null;
        stream = null;
        spill = null;
        piece = null;
        unpacked = 0;
        end = -1;
        statedEnd = 0;
        exhausted = false;
        failed = null;
    }

    /** How far to unpack: the header first, then up to the end it states (and one byte beyond the cap). */
    private long limit() throws BinlogException {
        if (end < 0) {
            if (unpacked < Header.SIZE && !exhausted) {
                return Header.SIZE;
            }
            byte[] head = new byte[(int) Math.min(unpacked, Header.SIZE)];
            spilled(0, head, 0, head.length);
            statedEnd = segmentEnd(head);
            long cap = unpacking.maxBytes();
            end = cap == Long.MAX_VALUE ? statedEnd : Math.min(statedEnd, cap + 1);
        }
        return end;
    }

    /**
     * How far a walk reads a segment whose first bytes are {@code head}: a sealed segment ends at its commit point,
     * a version 1 segment at its last element position, and a header that fails its checks is all the walk reads.
     * Never less than one byte beyond the header, which tells a blank file (format §3.5) from a longer one. The
     * header is checked with the log number it states: the walk checks it against the file name.
     */
    private long segmentEnd(byte[] head) {
        long stated = 0;
        try {
            int headerLog = head.length >= 20 ? Bytes.u4(head, 16) : log;
            Header h = Header.check(head, head.length, head.length, headerLog, null);
            stated = h.legacy() ? Offsets.clamp(h.lastElementPosition) : Offsets.clamp(h.active.commitOffset());
        } catch (BinlogException e) {
            stated = 0;
        }
        return Math.max(stated, Header.SIZE + 1);
    }

    /**
     * Unpacks until {@code target} bytes are in the spill, the stream ends, or the limit is reached. A target beyond
     * the header (and the byte after it) is the segment's end: the archive is checked up to it before any byte
     * beyond the header is returned, so that where it fails never depends on the sizes reads ask for.
     */
    private void unpackTo(long target) throws BinlogException {
        if (failed != null) {
            throw failed; // the stream and the spill are out of step: nothing more can be read
        }
        try {
            if (target > Header.SIZE + 1) {
                unpackWhile(Header.SIZE);
                limit(); // the end the header states
                if (statedEnd > unpacking.maxBytes()) {
                    throw capped(); // before any record, and before anything is unpacked for nothing
                }
                target = MAX_OFFSET;
            }
            unpackWhile(target);
            if (Math.min(target, unpacked) > unpacking.maxBytes()) {
                throw capped();
            }
        } catch (BinlogException e) {
            failed = e;
            throw e;
        }
    }

    /** Unpacks, a piece at a time, until {@code target} bytes are in the spill, the stream ends, or the limit. */
    private void unpackWhile(long target) throws BinlogException {
        while (!exhausted && unpacked < Math.min(target, limit())) {
            int got = nextPiece((int) Math.min(PIECE, limit() - unpacked));
            if (got == 0) {
                exhausted = true;
                break;
            }
            keep(got);
        }
    }

    /** The next piece of the stream into {@link #piece}: {@code size} bytes, fewer only where the stream ends. */
    private int nextPiece(int size) throws BinlogException {
        int got;
        try {
            if (stream == null) {
                start();
            }
            got = stream.readNBytes(piece, 0, size);
        } catch (IOException e) {
            if (archive != null && archive.failure != null) {
                throw ioError("read of the compressed segment failed: " + archive.failure, archive.failure);
            }
            throw undecodable(e.getMessage(), e);
        }
        boolean cut;
        try {
            cut = got == 0 && decompressor.suffix().equals("zst") && !ZstdFrames.whole(storage, name);
        } catch (IOException e) {
            throw ioError("read of the compressed segment failed: " + e, e);
        }
        if (cut) {
            throw undecodable("the archive ends inside a Zstandard frame", null);
        }
        return got;
    }

    private BinlogException capped() {
        return new BinlogException(ErrorClass.BAD_HEADER, storage.describe(name), log, 0L, null,
                "unpacks to more than " + unpacking.maxBytes() + " bytes, the most this reader unpacks ("
                        + unpacking.capName() + ")");
    }

    private BinlogException undecodable(String why, Throwable cause) {
        return new BinlogException(ErrorClass.BAD_HEADER, storage.describe(name), log, 0L, null,
                "compressed segment cannot be unpacked: " + why, cause);
    }

    private void start() throws IOException {
        live.remove(this);
        live.addLast(this);
        while (live.size() > LIVE) {
            live.peekFirst().release();
        }
        archive = new Archive();
        piece = new byte[PIECE];
        stream = decompressor.open(archive);
    }

    private void keep(int got) throws BinlogException {
        try {
            if (spill == null) {
                // Deleted when closed: by release, at the latest when the reader is closed.
                spill = FileChannel.open(Files.createTempFile("binlog-unpacked-", ".tmp"), StandardOpenOption.READ,
                        StandardOpenOption.WRITE, StandardOpenOption.DELETE_ON_CLOSE);
            }
            ByteBuffer source = ByteBuffer.wrap(piece, 0, got);
            while (source.hasRemaining()) {
                spill.write(source, unpacked + source.position());
            }
        } catch (IOException e) {
            // A full disk or a file size limit: the archive may be intact, so this is never damage.
            throw ioError("cannot unpack the compressed segment into a temporary file: " + e, e);
        }
        unpacked += got;
    }

    /** {@code n} bytes unpacked already, from {@code pos}. */
    private void spilled(long pos, byte[] b, int off, int n) throws BinlogException {
        ByteBuffer target = ByteBuffer.wrap(b, off, n);
        try {
            while (target.hasRemaining()) {
                if (spill.read(target, pos + target.position() - off) < 0) {
                    throw new IOException("the temporary file is shorter than what was unpacked into it");
                }
            }
        } catch (IOException e) {
            throw ioError("read of the unpacked segment failed: " + e, e);
        }
    }

    private BinlogException ioError(String why, Throwable cause) {
        return new BinlogException(ErrorClass.IO_ERROR, storage.describe(name), log, null, null, why, cause);
    }

    /** The archive, read from the storage in order; a failed read is kept, to be told apart from bad data. */
    private final class Archive extends InputStream {
        private long at;
        IOException failure;

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            try {
                int got = storage.read(name, at, b, off, len);
                at += Math.max(got, 0);
                return got;
            } catch (IOException e) {
                failure = e;
                throw e;
            }
        }
    }
}
