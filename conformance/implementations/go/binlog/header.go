package binlog

import (
	"bytes"
	"encoding/binary"
)

// Layout constants of the segment header (section 3).
const (
	HeaderSize      = 256
	HeaderLength    = 252
	Version2        = 2
	Version1        = 1
	FlagPrealloc    = 0x00000001
	SlotSize        = 48
	slot0Offset     = 96
	slot1Offset     = 144
	mirrorOffset    = 6
	mirrorSize      = 18
	headerCRCOffset = 92
)

// Signature is the version 2 signature at header offset 24.
var Signature = []byte{0x89, 0x42, 0x4c, 0x4f, 0x47, 0x0d, 0x0a, 0x1a}

var be = binary.BigEndian

// Slot is one commit slot (section 3.2).
type Slot struct {
	Generation      uint64
	CommitOffset    uint64
	NextIndex       uint64
	LastAsqn        int64
	LastTimestampUS int64
	NextLogNumber   uint32
}

// SlotOffset is the file offset of the slot that holds generation g.
func SlotOffset(g uint64) int64 {
	if g%2 == 0 {
		return slot0Offset
	}
	return slot1Offset
}

// Encode returns the 48 bytes of the slot, checksum included.
func (s Slot) Encode() []byte {
	b := make([]byte, SlotSize)
	be.PutUint64(b[0:], s.Generation)
	be.PutUint64(b[8:], s.CommitOffset)
	be.PutUint64(b[16:], s.NextIndex)
	be.PutUint64(b[24:], uint64(s.LastAsqn))
	be.PutUint64(b[32:], uint64(s.LastTimestampUS))
	be.PutUint32(b[40:], s.NextLogNumber)
	be.PutUint32(b[44:], MaskedCRC(b[:44]))
	return b
}

func decodeSlot(b []byte) (s Slot, valid bool) {
	s = Slot{
		Generation:      be.Uint64(b[0:]),
		CommitOffset:    be.Uint64(b[8:]),
		NextIndex:       be.Uint64(b[16:]),
		LastAsqn:        int64(be.Uint64(b[24:])),
		LastTimestampUS: int64(be.Uint64(b[32:])),
		NextLogNumber:   be.Uint32(b[40:]),
	}
	valid = s.Generation != 0 && be.Uint32(b[44:]) == MaskedCRC(b[:44])
	return s, valid
}

// Mirrors returns the 18 bytes written at offset 6 after publishing s (section 3.3).
func Mirrors(s Slot, logNumber uint32) []byte {
	b := make([]byte, mirrorSize)
	if s.NextLogNumber != 0 {
		be.PutUint16(b[0:], 1)
	}
	be.PutUint64(b[2:], s.CommitOffset)
	be.PutUint32(b[10:], logNumber)
	be.PutUint32(b[14:], s.NextLogNumber)
	return b
}

// Header is a checked segment header. For a legacy version 1 segment only
// Version, LogNumber, Status, LastElementPosition and NextLogNumber are set.
type Header struct {
	Version   uint16
	LogNumber uint32
	LogID     [16]byte
	BaseIndex uint64
	CreatedUS int64
	Flags     uint32
	Capacity  uint64
	Active    Slot

	// Legacy version 1 fields (Appendix B.1).
	Status              uint16
	LastElementPosition uint64
	NextLogNumber       uint32
}

// Legacy reports whether the header is a version 1 header.
func (h *Header) Legacy() bool { return h.Version == Version1 }

// Preallocated reports whether the PREALLOCATED flag is set.
func (h *Header) Preallocated() bool { return h.Flags&FlagPrealloc != 0 }

// NewHeader describes a new segment with generation 1 in slot 1 (W-4).
type NewHeader struct {
	LogNumber       uint32
	LogID           [16]byte
	BaseIndex       uint64
	CreatedUS       int64
	Capacity        uint64 // 0: not preallocated
	LastAsqn        int64
	LastTimestampUS int64
}

// Encode returns the 256 header bytes of a new segment.
func (n NewHeader) Encode() []byte {
	b := make([]byte, HeaderSize)
	be.PutUint32(b[0:], HeaderLength)
	be.PutUint16(b[4:], Version2)
	be.PutUint32(b[16:], n.LogNumber)
	copy(b[24:], Signature)
	copy(b[32:], n.LogID[:])
	be.PutUint64(b[48:], n.BaseIndex)
	be.PutUint64(b[56:], uint64(n.CreatedUS))
	if n.Capacity != 0 {
		be.PutUint32(b[64:], FlagPrealloc)
		be.PutUint64(b[72:], n.Capacity)
	}
	be.PutUint32(b[headerCRCOffset:], headerCRC(b))
	slot := Slot{Generation: 1, CommitOffset: HeaderSize, NextIndex: n.BaseIndex,
		LastAsqn: n.LastAsqn, LastTimestampUS: n.LastTimestampUS}
	copy(b[slot1Offset:], slot.Encode())
	copy(b[mirrorOffset:], Mirrors(slot, n.LogNumber))
	return b
}

func headerCRC(b []byte) uint32 {
	return MaskedCRC(b[0:6], b[16:20], b[24:92])
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// CheckHeader applies the header checks of section 3.4 (or Appendix B.3 for
// a version 1 segment) to b, the first bytes of segment logNumber, whose
// file holds fileSize bytes.
func CheckHeader(b []byte, fileSize int64, logNumber uint32) (*Header, error) {
	if fileSize < HeaderSize || len(b) < HeaderSize {
		return nil, segmentError(ClassTruncated, logNumber, 0, "segment shorter than its header")
	}
	version := be.Uint16(b[4:])
	sigOK := bytes.Equal(b[24:32], Signature)
	if version == Version1 && !sigOK {
		return checkLegacyHeader(b, logNumber)
	}
	if version != Version2 {
		return nil, segmentError(ClassUnsupportedVersion, logNumber, 4, "unknown version")
	}
	if !sigOK {
		return nil, segmentError(ClassBadSignature, logNumber, 24, "")
	}
	if be.Uint32(b[headerCRCOffset:]) != headerCRC(b) {
		return nil, segmentError(ClassBadHeader, logNumber, 92, "header checksum")
	}
	if be.Uint32(b[0:]) != HeaderLength {
		return nil, segmentError(ClassBadHeader, logNumber, 0, "header_length")
	}
	if be.Uint32(b[16:]) != logNumber {
		return nil, segmentError(ClassBadHeader, logNumber, 16, "log number differs from the file name")
	}
	h := &Header{
		Version:   version,
		LogNumber: logNumber,
		BaseIndex: be.Uint64(b[48:]),
		CreatedUS: int64(be.Uint64(b[56:])),
		Flags:     be.Uint32(b[64:]),
		Capacity:  be.Uint64(b[72:]),
	}
	copy(h.LogID[:], b[32:48])
	if h.Flags&^FlagPrealloc != 0 {
		return nil, segmentError(ClassUnsupportedFeature, logNumber, 64, "unknown header flag")
	}
	if !allZero(b[68:72]) || !allZero(b[80:92]) || !allZero(b[192:256]) {
		return nil, segmentError(ClassBadHeader, logNumber, 68, "reserved bytes")
	}
	if h.Preallocated() != (h.Capacity != 0) {
		return nil, segmentError(ClassBadHeader, logNumber, 72, "PREALLOCATED and capacity disagree")
	}
	active, err := SelectSlot(b[slot0Offset:192], logNumber, h.BaseIndex)
	if err != nil {
		return nil, err
	}
	h.Active = active
	return h, nil
}

// SelectSlot chooses the active slot from the 96 bytes at offsets 96..191
// by steps 1 to 8 of section 3.2.
func SelectSlot(slots []byte, logNumber uint32, baseIndex uint64) (Slot, error) {
	s0, ok0 := decodeSlot(slots[0:SlotSize])
	s1, ok1 := decodeSlot(slots[SlotSize : 2*SlotSize])
	var active Slot
	var at int64
	switch {
	case !ok0 && !ok1:
		return Slot{}, segmentError(ClassBadHeader, logNumber, slot0Offset, "no valid commit slot")
	case ok0 && ok1 && s0.Generation == s1.Generation:
		return Slot{}, segmentError(ClassBadHeader, logNumber, slot0Offset, "both slots carry the same generation")
	case ok0 && (!ok1 || s0.Generation > s1.Generation):
		active, at = s0, slot0Offset
	default:
		active, at = s1, slot1Offset
	}
	home := uint64(SlotOffset(active.Generation))
	if at != int64(home) {
		return Slot{}, segmentError(ClassBadHeader, logNumber, home, "generation in the wrong slot")
	}
	if active.CommitOffset < HeaderSize || active.NextIndex < baseIndex {
		return Slot{}, segmentError(ClassBadHeader, logNumber, home, "commit offset or next index out of range")
	}
	if active.NextLogNumber != 0 && uint64(active.NextLogNumber) != uint64(logNumber)+1 {
		return Slot{}, segmentError(ClassBadHeader, logNumber, home, "next log number")
	}
	if active.LastAsqn < -1 {
		return Slot{}, segmentError(ClassBadHeader, logNumber, home, "last asqn below -1")
	}
	return active, nil
}

// IsBlank reports whether a segment file that holds exactly the bytes b is
// blank (section 3.5): at most 256 bytes, every one of them zero; a file of
// length 0 is blank. Nothing else is: a short file holding a non-zero byte
// fails its header check with truncated at offset 0, and a file longer than
// 256 bytes whose first 256 are zero with unsupported_version at offset 4
// (it lost a header that was durable, with whatever followed it).
func IsBlank(b []byte) bool {
	return len(b) <= HeaderSize && allZero(b)
}
