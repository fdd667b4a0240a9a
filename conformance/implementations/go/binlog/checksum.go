package binlog

import "hash/crc32"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maskDelta is LevelDB's mask constant (section 5).
const maskDelta = 0xA282EAD8

// Mask applies the rotate-and-add mask of section 5 to a CRC32C value.
func Mask(crc uint32) uint32 {
	return ((crc >> 15) | (crc << 17)) + maskDelta
}

// MaskedCRC returns the stored checksum of the concatenation of parts.
func MaskedCRC(parts ...[]byte) uint32 {
	var crc uint32
	for _, p := range parts {
		crc = crc32.Update(crc, castagnoli, p)
	}
	return Mask(crc)
}
