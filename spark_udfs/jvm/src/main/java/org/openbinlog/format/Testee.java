package org.openbinlog.format;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.util.HexFormat;
import java.util.ServiceLoader;

/**
 * The conformance testee of this reader: the JSON-lines session of spec/conformance.md §3.4, reader role
 * only ({@code hello}, {@code read} from the start, after a ref, tolerant, one split, planned splits;
 * {@code bye}). It reads compressed segments, with no cap, when a Zstandard {@link Decompressor} is a service on
 * its class path (the Spark package's, by zstd-jni): reading them means both codecs of protocols §2.6.
 */
public final class Testee {
    private static final JsonNodeFactory JSON = JsonNodeFactory.instance;
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final HexFormat HEX = HexFormat.of();
    static final Unpacking UNPACKING = new Unpacking(ServiceLoader.load(Decompressor.class).stream()
            .map(ServiceLoader.Provider::get).filter(d -> d.suffix().equals("zst")).findFirst().orElse(null),
            Long.MAX_VALUE, "");

    private Testee() {}

    public static void main(String[] args) throws IOException {
        if (args.length != 1 || !args[0].equals("session")) {
            System.err.println("usage: Testee session");
            System.exit(4);
        }
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            if (line.isBlank()) {
                continue;
            }
            JsonNode request;
            try {
                request = MAPPER.readTree(line);
            } catch (IOException e) {
                return; // a line that is not a JSON object may end the session
            }
            String op = request.path("op").asText();
            ObjectNode reply = switch (op) {
                case "hello" -> hello();
                case "read" -> read(request);
                case "bye" -> JSON.objectNode().put("ok", true);
                default -> unsupported();
            };
            out.println(MAPPER.writeValueAsString(reply));
            out.flush();
            if (op.equals("bye")) {
                return;
            }
        }
    }

    private static ObjectNode hello() {
        ObjectNode reply = JSON.objectNode().put("ok", true).put("name", "openbinlog-java").put("version", "0.1.0")
                .put("spec_version", "2.1");
        reply.putArray("roles").add("reader");
        ArrayNode capabilities = reply.putArray("capabilities").add("legacy_v1").add("refs").add("tolerant")
                .add("split").add("split_plan");
        if (UNPACKING.zstd() != null) {
            capabilities.add("compressed");
        }
        // Format §14: a full reader finds the end of a finished, unsealed segment by the tail walk of §8.4.
        reply.putObject("choices").put("finished_segment_end", "tail_walk");
        return reply;
    }

    private static ObjectNode unsupported() {
        ObjectNode reply = JSON.objectNode().put("ok", false);
        reply.putObject("error").put("class", "unsupported_operation").putNull("log").putNull("offset")
                .putNull("index");
        return reply;
    }

    private static boolean given(JsonNode request, String member) {
        JsonNode v = request.get(member);
        return v != null && !v.isNull() && !(v.isBoolean() && !v.asBoolean());
    }

    /**
     * A read request combines at most one way of starting; any other combination is unsupported. Beyond the
     * protocol, a split may be tolerant (readers §10.5 "Tolerant splits"): the answer then has {@code damage};
     * and {@code plan_bytes} reads the whole log, strict or tolerant, as the Spark source does: the parts of
     * {@link LogReader#plan} with splits of that many bytes, one after another (the answer has no torn tail);
     * with {@code bounds}, the parts of {@link LogReader#plan(long, Bounds)} ({@link PlannedRead}).
     */
    private static ObjectNode read(JsonNode request) {
        if (given(request, "parts") || given(request, "bounds")) {
            ObjectNode planned = PlannedRead.read(request); // planned splits, or a read narrowed by bounds
            return planned == null ? unsupported() : planned;
        }
        int ways = given(request, "tolerant") ? 1 : 0;
        for (String member : new String[] {"after", "after_binary", "log"}) {
            ways += given(request, member) ? 1 : 0;
        }
        if (given(request, "tolerant") && (given(request, "log") || given(request, "plan_bytes"))) {
            ways--; // a tolerant split, or a tolerant read in parts
        }
        ways += given(request, "plan_bytes") ? 1 : 0;
        for (String member : new String[] {"at", "from_index", "since_us"}) {
            if (given(request, member)) {
                return unsupported();
            }
        }
        if (ways > 1 || (given(request, "log") && !(given(request, "start") && given(request, "stop")))) {
            return unsupported();
        }
        boolean tolerant = given(request, "tolerant");
        ObjectNode reply = JSON.objectNode().put("ok", true);
        ArrayNode records = JSON.arrayNode();
        ArrayNode damage = JSON.arrayNode();
        Sink sink = new Sink() {
            @Override
            public void record(Record r) {
                records.add(recordJson(r));
            }

            @Override
            public void damage(Damage d) {
                damage.add(damageJson(d));
            }
        };
        Torn torn = null;
        JsonNode error = null;
        try (LogReader reader = new LogReader(new LocalStorage(Paths.get(request.path("path").asText())), UNPACKING)) {
            if (given(request, "plan_bytes")) {
                reader.readParts(reader.plan(request.get("plan_bytes").asLong()), tolerant, sink);
            } else if (given(request, "log")) {
                reader.readSplit(request.get("log").asInt(), Long.parseUnsignedLong(request.get("start").asText()),
                        Long.parseUnsignedLong(request.get("stop").asText()), tolerant, sink);
            } else if (given(request, "after") || given(request, "after_binary")) {
                Ref ref = given(request, "after") ? Ref.parse(request.get("after").asText())
                        : Ref.parse(binary(request.get("after_binary").asText()));
                torn = reader.readAfter(ref.log(), ref.offset(), ref.index(), sink);
            } else {
                torn = reader.readAll(tolerant, sink);
            }
        } catch (BinlogException e) {
            error = error(e.errorClass.specName(), e.log, e.offset, e.index);
        } catch (IOException | RuntimeException e) {
            e.printStackTrace();
            error = error("io_error", null, null, null);
        }
        reply.put("outcome", error != null ? "reject" : torn != null ? "recovered" : "accept");
        reply.set("records", records);
        if (torn == null || error != null) {
            reply.putNull("torn");
        } else {
            reply.putObject("torn").put("log", Integer.toUnsignedLong(torn.log()))
                    .put("offset", Long.toUnsignedString(torn.offset()));
        }
        reply.set("error", error);
        if (tolerant) {
            reply.set("damage", damage);
        }
        return reply;
    }

    /** The hex of a binary ref; hex that is not whole bytes is no ref of 20 bytes. */
    private static byte[] binary(String hex) throws BinlogException {
        try {
            return HEX.parseHex(hex);
        } catch (IllegalArgumentException e) {
            throw new BinlogException(ErrorClass.INVALID_REF, null, null, null, null, "not hexadecimal");
        }
    }

    static ObjectNode recordJson(Record r) {
        ObjectNode o = JSON.objectNode().put("log", Integer.toUnsignedLong(r.log()))
                .put("offset", Long.toUnsignedString(r.offset())).put("index", Long.toUnsignedString(r.index()))
                .put("asqn", Long.toString(r.asqn()));
        if (r.checked()) {
            o.put("timestamp_us", Long.toString(r.timestampUs()));
        } else {
            o.putNull("timestamp_us");
        }
        return o.put("payload", HEX.formatHex(r.payload())).put("checked", r.checked());
    }

    static ObjectNode damageJson(Damage d) {
        ObjectNode o = error(d.errorClass().specName(), d.log(), d.offset() < 0 ? null : d.offset(), d.index());
        o.put("bytes_skipped", Long.toUnsignedString(d.bytesSkipped()));
        if (d.resumeIndex() == null) {
            o.putNull("resumed_index");
        } else {
            o.put("resumed_index", Long.toUnsignedString(d.resumeIndex()));
        }
        return o;
    }

    static ObjectNode error(String errorClass, Integer log, Long offset, Long index) {
        ObjectNode o = JSON.objectNode().put("class", errorClass);
        if (log == null) {
            o.putNull("log");
        } else {
            o.put("log", Integer.toUnsignedLong(log));
        }
        if (offset == null) {
            o.putNull("offset");
        } else {
            o.put("offset", Long.toUnsignedString(offset));
        }
        if (index == null) {
            o.putNull("index");
        } else {
            o.put("index", Long.toUnsignedString(index));
        }
        return o;
    }
}
