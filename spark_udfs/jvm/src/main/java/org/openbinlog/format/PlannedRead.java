package org.openbinlog.format;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Paths;
import java.util.List;

/**
 * The testee's reads in parts it plans itself ({@link Testee}): planned splits of one segment (capability
 * {@code split_plan}, spec/conformance.md §3.2: {@code log} and {@code parts}), and, beyond the protocol, a read
 * of the whole log in the parts of {@link LogReader#plan(long, Bounds)} ({@code plan_bytes} with {@code bounds},
 * an object of decimal strings {@code index_low}, {@code index_high}, {@code low_us}, {@code high_us}, each
 * optional). Both answers also carry {@code bytes_read}, the bytes the storage delivered, index files included,
 * and {@code index_bytes_read}, those of index files.
 */
final class PlannedRead {
    private static final JsonNodeFactory JSON = JsonNodeFactory.instance;

    private PlannedRead() {}

    static ObjectNode read(JsonNode request) {
        boolean tolerant = request.path("tolerant").asBoolean(false);
        boolean split = request.hasNonNull("parts");
        if (split ? tolerant || !request.hasNonNull("log") : !request.hasNonNull("plan_bytes")) {
            return null; // no combination this class answers
        }
        ArrayNode records = JSON.arrayNode();
        ArrayNode damage = JSON.arrayNode();
        ArrayNode cuts = JSON.arrayNode();
        Sink sink = new Sink() {
            @Override
            public void record(Record r) {
                records.add(Testee.recordJson(r));
            }

            @Override
            public void damage(Damage d) {
                damage.add(Testee.damageJson(d));
            }
        };
        CountingStorage storage = new CountingStorage(new LocalStorage(Paths.get(request.path("path").asText())));
        JsonNode error = null;
        try (LogReader reader = new LogReader(storage, Testee.UNPACKING)) {
            if (split) {
                int log = request.get("log").asInt();
                List<Long> starts = reader.cuts(log, request.get("parts").asInt());
                starts.forEach(start -> cuts.add(Long.toUnsignedString(start)));
                for (int k = 0; k < starts.size(); k++) {
                    long stop = k + 1 < starts.size() ? starts.get(k + 1) : -1; // 2^64 - 1
                    reader.readSplit(log, starts.get(k), stop, false, sink);
                }
            } else {
                reader.readParts(reader.plan(request.get("plan_bytes").asLong(), bounds(request.path("bounds"))),
                        tolerant, sink);
            }
        } catch (BinlogException e) {
            error = Testee.error(e.errorClass.specName(), e.log, e.offset, e.index);
        } catch (IOException | RuntimeException e) {
            e.printStackTrace();
            error = Testee.error("io_error", null, null, null);
        }
        ObjectNode reply = JSON.objectNode().put("ok", true).put("outcome", error == null ? "accept" : "reject");
        reply.set("records", records);
        reply.putNull("torn");
        reply.set("error", error);
        if (tolerant) {
            reply.set("damage", damage);
        }
        if (split) {
            reply.set("cuts", cuts);
        }
        return reply.put("bytes_read", Long.toString(storage.bytes()))
                .put("index_bytes_read", Long.toString(storage.indexBytes()));
    }

    private static Bounds bounds(JsonNode b) {
        return new Bounds(number(b, "index_low", Bounds.ALL.lowIndex()), number(b, "index_high", Bounds.ALL.highIndex()),
                number(b, "low_us", Bounds.ALL.lowUs()), number(b, "high_us", Bounds.ALL.highUs()));
    }

    /** A decimal string, unsigned for an index, signed for a time; {@code otherwise} when absent. */
    private static long number(JsonNode b, String member, long otherwise) {
        JsonNode v = b.get(member);
        if (v == null || v.isNull()) {
            return otherwise;
        }
        return member.startsWith("index") ? Long.parseUnsignedLong(v.asText()) : Long.parseLong(v.asText());
    }
}
