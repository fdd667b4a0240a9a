// Kaitai cross-check harness for JavaScript: parse segment and index files, print canonical JSON.
// Usage: node harness.js strict|tolerant|legacy|index FILE...; one JSON line per file,
// {"error": ...} when the generated parser fails on it. The first three read
// segment files (.dat), `index` reads sparse index files (.idx).
"use strict";

const fs = require("fs");
const path = require("path");
const KaitaiStream = require("kaitai-struct/KaitaiStream");
const { maskedCrc32c } = require("./crc32c");

const GENERATED = path.resolve(__dirname, "..", "..", "..", "..", "build", "ksy", "javascript");
// The generated modules require their runtime by package name, which does not
// resolve from build/; point that one name at this project's node_modules.
const Module = require("module");
const RUNTIME = require.resolve("kaitai-struct/KaitaiStream");
const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  return request === "kaitai-struct/KaitaiStream" ? RUNTIME : resolveFilename.call(this, request, ...rest);
};
const BinlogV2 = require(path.join(GENERATED, "BinlogV2.js")).BinlogV2;
const BinlogV2Tolerant = require(path.join(GENERATED, "BinlogV2Tolerant.js")).BinlogV2Tolerant;
const JposBinlogV1 = require(path.join(GENERATED, "JposBinlogV1.js")).JposBinlogV1;
const BinlogIndex = require(path.join(GENERATED, "BinlogIndex.js")).BinlogIndex;

const hex = (bytes) => Buffer.from(bytes).toString("hex");

function headerOk(header) {
  const covered = [header.crcCoveredLengthVersion, header.crcCoveredLogNumber, header.crcCoveredSignatureToReserved];
  const slot = header.activeSlot;
  return maskedCrc32c(...covered) === header.headerCrc && maskedCrc32c(slot.crcCovered) === slot.slotCrc;
}

function recordOk(record) {
  return maskedCrc32c(record.crcCoveredHeader) === record.headerCrc && maskedCrc32c(record.payload) === record.payloadCrc;
}

// The runtime reads 64-bit integers as Numbers, exact below 2^53 only: the exact
// values come from the byte ranges the parser exposes for the checksums, read as BigInt.
function exact(bytes, at, signed) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return (signed ? view.getBigInt64(at) : view.getBigUint64(at)).toString();
}

const entry = (record) => ({
  offset: record.ofsRecord,
  index: exact(record.crcCoveredHeader, 8, false),
  asqn: exact(record.crcCoveredHeader, 16, true),
  timestamp_us: exact(record.crcCoveredHeader, 24, true),
  payload_hex: hex(record.payload),
});

const summary = (header, records, checksumsOk, tornTailOffset) => ({
  version: header.version,
  log: header.logNumber,
  base_index: exact(header.crcCoveredSignatureToReserved, 24, false),
  commit_offset: String(header.activeSlot.ofsCommit),
  records: records.filter((r) => r.isData).map(entry),
  checksums_ok: checksumsOk,
  torn_tail_offset: tornTailOffset,
});

function strict(data) {
  const segment = new BinlogV2(new KaitaiStream(data));
  const records = segment.records || [];
  return summary(segment.header, records, headerOk(segment.header) && records.every(recordOk), null);
}

function tolerant(data) {
  const view = new BinlogV2Tolerant(new KaitaiStream(data));
  if (!view.header) {
    return { version: null, log: null, base_index: null, commit_offset: null, records: [], checksums_ok: null, torn_tail_offset: view.ofsTornTail };
  }
  // The valid prefix ends at the first whole record whose checksums fail.
  const records = view.records || [];
  const firstBad = records.findIndex((r) => !recordOk(r));
  const valid = firstBad < 0 ? records : records.slice(0, firstBad);
  const tornTailOffset = valid.length ? valid[valid.length - 1].ofsEnd : 256;
  return summary(view.header, valid, headerOk(view.header), tornTailOffset);
}

function legacy(data) {
  const segment = new JposBinlogV1(new KaitaiStream(data));
  const records = (segment.records || []).map((r, i) => ({
    offset: r.ofsRecord, index: String(i + 1), asqn: "-1", timestamp_us: null, payload_hex: hex(r.data),
  }));
  return {
    version: segment.header.version, log: segment.header.logNumber, base_index: null,
    commit_offset: String(segment.header.ofsLastElement), records, checksums_ok: null, torn_tail_offset: null,
  };
}

// The 64-bit fields come from the checksummed byte ranges, read as BigInt (see exact).
const indexEntry = (e) => ({
  index: exact(e.crcCovered, 0, false),
  offset: exact(e.crcCovered, 8, false),
  timestamp_us: exact(e.crcCovered, 16, true),
  span_crc: e.spanCrc,
  entry_crc: e.entryCrc,
  entry_crc_ok: maskedCrc32c(e.crcCovered) === e.entryCrc,
});

// An index file: every header field, every whole entry, and the checks the caller adds (CRCs, size).
function index(data) {
  const view = new BinlogIndex(new KaitaiStream(data));
  const header = view.header;
  return {
    version: header.version,
    segment_version: header.segmentVersion,
    log: header.logNumber,
    log_id_hex: hex(header.logId),
    base_index: exact(header.crcCovered, 32, false),
    segment_end: exact(header.crcCovered, 40, false),
    end_index: exact(header.crcCovered, 48, false),
    entry_count: exact(header.crcCovered, 56, false),
    interval: header.interval,
    header_crc: header.headerCrc,
    header_crc_ok: maskedCrc32c(header.crcCovered) === header.headerCrc,
    size_ok: view.hasExpectedSize,
    entries: view.entries.map(indexEntry),
    trailing_hex: hex(view.trailing),
  };
}

function run(parse, file) {
  try {
    const data = fs.readFileSync(file);
    return parse(new Uint8Array(data.buffer, data.byteOffset, data.length));
  } catch (error) {
    return { error: `${error.name}: ${error.message}` };
  }
}

const [mode, ...files] = process.argv.slice(2);
const parse = { strict, tolerant, legacy, index }[mode];
for (const file of files) {
  console.log(JSON.stringify(run(parse, file)));
}
