// Kaitai cross-check harness for Java: parse segment and index files, print canonical JSON.
// Usage: java Harness strict|tolerant|legacy|index FILE...; one JSON line per file,
// {"error": ...} when the generated parser fails on it. The first three read
// segment files (.dat), `index` reads sparse index files (.idx).
// In the default package because the generated classes are.

import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.zip.CRC32C;

public final class Harness {
    private static long maskedCrc32c(byte[]... parts) {
        CRC32C crc = new CRC32C();
        for (byte[] part : parts) {
            crc.update(part);
        }
        long c = crc.getValue();
        return ((((c >>> 15) | (c << 17)) & 0xFFFFFFFFL) + 0xA282EAD8L) & 0xFFFFFFFFL;
    }

    private static boolean headerOk(BinlogV2.SegmentHeader header) {
        BinlogV2.CommitSlot slot = header.activeSlot();
        return maskedCrc32c(header.crcCoveredLengthVersion(), header.crcCoveredLogNumber(),
                        header.crcCoveredSignatureToReserved()) == header.headerCrc()
                && maskedCrc32c(slot.crcCovered()) == slot.slotCrc();
    }

    private static boolean recordOk(BinlogV2.Record record) {
        return maskedCrc32c(record.crcCoveredHeader()) == record.headerCrc()
                && maskedCrc32c(record.payload()) == record.payloadCrc();
    }

    private static String quote(String text) {
        StringBuilder out = new StringBuilder("\"");
        for (char ch : text.toCharArray()) {
            if (ch == '"' || ch == '\\') {
                out.append('\\').append(ch);
            } else if (ch < 0x20) {
                out.append(String.format("\\u%04x", (int) ch));
            } else {
                out.append(ch);
            }
        }
        return out.append('"').toString();
    }

    private static String entry(long offset, String index, String asqn, String timestampUs, byte[] payload) {
        return "{\"offset\":" + offset + ",\"index\":" + quote(index) + ",\"asqn\":" + quote(asqn)
                + ",\"timestamp_us\":" + (timestampUs == null ? "null" : quote(timestampUs))
                + ",\"payload_hex\":" + quote(HexFormat.of().formatHex(payload)) + "}";
    }

    private static String summary(String version, String log, String baseIndex, String commitOffset,
            List<String> records, String checksumsOk, String tornTailOffset) {
        return "{\"version\":" + version + ",\"log\":" + log + ",\"base_index\":" + baseIndex
                + ",\"commit_offset\":" + commitOffset + ",\"records\":[" + String.join(",", records)
                + "],\"checksums_ok\":" + checksumsOk + ",\"torn_tail_offset\":" + tornTailOffset + "}";
    }

    private static String v2Summary(BinlogV2.SegmentHeader header, List<BinlogV2.Record> records,
            boolean checksumsOk, Long tornTailOffset) {
        List<String> entries = new ArrayList<>();
        for (BinlogV2.Record r : records) {
            if (r.isData()) {
                entries.add(entry(r.ofsRecord(), Long.toUnsignedString(r.index()), Long.toString(r.asqn()),
                        Long.toString(r.timestampUs()), r.payload()));
            }
        }
        return summary(Integer.toString(header.version()), Long.toString(header.logNumber()),
                quote(Long.toUnsignedString(header.baseIndex())),
                quote(Long.toUnsignedString(header.activeSlot().ofsCommit())), entries,
                Boolean.toString(checksumsOk), String.valueOf(tornTailOffset));
    }

    private static <T> List<T> orEmpty(List<T> list) {
        return list == null ? List.of() : list;
    }

    private static String strict(String path) throws Exception {
        BinlogV2 segment = BinlogV2.fromFile(path);
        List<BinlogV2.Record> records = orEmpty(segment.records());
        boolean ok = headerOk(segment.header()) && records.stream().allMatch(Harness::recordOk);
        return v2Summary(segment.header(), records, ok, null);
    }

    private static String tolerant(String path) throws Exception {
        BinlogV2Tolerant view = BinlogV2Tolerant.fromFile(path);
        if (view.header() == null) {
            return summary("null", "null", "null", "null", List.of(), "null", Long.toString(view.ofsTornTail()));
        }
        // The valid prefix ends at the first whole record whose checksums fail.
        List<BinlogV2.Record> valid = new ArrayList<>();
        for (BinlogV2.Record record : orEmpty(view.records())) {
            if (!recordOk(record)) {
                break;
            }
            valid.add(record);
        }
        long tornTailOffset = valid.isEmpty() ? 256 : valid.get(valid.size() - 1).ofsEnd();
        return v2Summary(view.header(), valid, headerOk(view.header()), tornTailOffset);
    }

    private static String legacy(String path) throws Exception {
        JposBinlogV1 segment = JposBinlogV1.fromFile(path);
        List<String> entries = new ArrayList<>();
        long index = 1;
        for (JposBinlogV1.Record r : orEmpty(segment.records())) {
            entries.add(entry(r.ofsRecord(), Long.toString(index++), "-1", null, r.data()));
        }
        JposBinlogV1.LegacyHeader header = segment.header();
        return summary(Integer.toString(header.version()), Long.toString(header.logNumber()), "null",
                quote(Long.toUnsignedString(header.ofsLastElement())), entries, "null", "null");
    }

    private static String indexEntry(BinlogIndex.Entry e) {
        return "{\"index\":" + quote(Long.toUnsignedString(e.index()))
                + ",\"offset\":" + quote(Long.toUnsignedString(e.ofsRecord()))
                + ",\"timestamp_us\":" + quote(Long.toString(e.timestampUs()))
                + ",\"span_crc\":" + e.spanCrc() + ",\"entry_crc\":" + e.entryCrc()
                + ",\"entry_crc_ok\":" + (maskedCrc32c(e.crcCovered()) == e.entryCrc()) + "}";
    }

    // An index file: every header field, every whole entry, and the checks the caller adds (CRCs, size).
    private static String index(String path) throws Exception {
        BinlogIndex view = BinlogIndex.fromFile(path);
        BinlogIndex.IndexHeader h = view.header();
        List<String> entries = new ArrayList<>();
        for (BinlogIndex.Entry e : view.entries()) {
            entries.add(indexEntry(e));
        }
        return "{\"version\":" + h.version() + ",\"segment_version\":" + h.segmentVersion()
                + ",\"log\":" + h.logNumber() + ",\"log_id_hex\":" + quote(HexFormat.of().formatHex(h.logId()))
                + ",\"base_index\":" + quote(Long.toUnsignedString(h.baseIndex()))
                + ",\"segment_end\":" + quote(Long.toUnsignedString(h.ofsSegmentEnd()))
                + ",\"end_index\":" + quote(Long.toUnsignedString(h.endIndex()))
                + ",\"entry_count\":" + quote(Long.toUnsignedString(h.numEntries()))
                + ",\"interval\":" + h.interval() + ",\"header_crc\":" + h.headerCrc()
                + ",\"header_crc_ok\":" + (maskedCrc32c(h.crcCovered()) == h.headerCrc())
                + ",\"size_ok\":" + view.hasExpectedSize()
                + ",\"entries\":[" + String.join(",", entries) + "]"
                + ",\"trailing_hex\":" + quote(HexFormat.of().formatHex(view.trailing())) + "}";
    }

    private static String run(String mode, String path) {
        try {
            return switch (mode) {
                case "strict" -> strict(path);
                case "tolerant" -> tolerant(path);
                case "legacy" -> legacy(path);
                case "index" -> index(path);
                default -> throw new IllegalArgumentException("mode must be strict, tolerant, legacy or index: " + mode);
            };
        } catch (Exception error) {
            return "{\"error\":" + quote(error.getClass().getSimpleName() + ": " + error.getMessage()) + "}";
        }
    }

    public static void main(String[] args) {
        for (int i = 1; i < args.length; i++) {
            System.out.println(run(args[0], args[i]));
        }
    }
}
