// Masked CRC32C (Castagnoli, reflected; LevelDB's mask), for checking the
// byte ranges the generated parsers expose: Kaitai expressions cannot.
"use strict";

const TABLE = new Uint32Array(256);
for (let n = 0; n < 256; n++) {
  let c = n;
  for (let k = 0; k < 8; k++) {
    c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
  }
  TABLE[n] = c >>> 0;
}

function crc32c(bytes, crc = 0) {
  let c = ~crc >>> 0;
  for (let i = 0; i < bytes.length; i++) {
    c = TABLE[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  }
  return ~c >>> 0;
}

function maskedCrc32c(...parts) {
  const crc = parts.reduce((acc, part) => crc32c(part, acc), 0);
  return ((((crc >>> 15) | (crc << 17)) >>> 0) + 0xa282ead8) >>> 0;
}

if (crc32c(Buffer.from("123456789")) !== 0xe3069283) {
  throw new Error("crc32c self-check failed");
}

module.exports = { crc32c, maskedCrc32c };
