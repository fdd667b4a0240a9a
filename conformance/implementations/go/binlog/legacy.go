package binlog

// Legacy jPOS-EE version 1 segments (Appendix B): read, never written.

// Closed reports whether a version 1 segment is closed: status 1 or a next
// log number. Only a closed version 1 segment is finished; a successor file
// does not finish it (Appendix B.4).
func (h *Header) Closed() bool { return h.Status == 1 || h.NextLogNumber != 0 }

// LegacyFirstRecord is where the first version 1 record starts (B.1).
const LegacyFirstRecord = 248

// LegacyMagic is the u4 at offset 0 of every version 1 segment: jPOS-EE
// checks it on open and refuses a file without it (B.3).
const LegacyMagic = 252

// checkLegacyHeader applies steps 2 to 5 of Appendix B.3 (step 1, the
// size, is CheckHeader's): the magic at offset 0, the log number, the
// status and the last element position, in that order.
func checkLegacyHeader(b []byte, logNumber uint32) (*Header, error) {
	h := &Header{
		Version:             Version1,
		LogNumber:           logNumber,
		Status:              be.Uint16(b[6:]),
		LastElementPosition: be.Uint64(b[8:]),
		NextLogNumber:       be.Uint32(b[20:]),
	}
	if be.Uint32(b[0:]) != LegacyMagic {
		return nil, segmentError(ClassBadSignature, logNumber, 0, "no version 1 magic 252 at offset 0")
	}
	if be.Uint32(b[16:]) != logNumber {
		return nil, segmentError(ClassBadHeader, logNumber, 16, "log number differs from the file name")
	}
	if h.Status > 1 {
		return nil, segmentError(ClassBadHeader, logNumber, 6, "status")
	}
	if h.LastElementPosition < LegacyFirstRecord {
		return nil, segmentError(ClassBadHeader, logNumber, 8, "last element position below 248")
	}
	return h, nil
}

// legacyRecord applies the checks of Appendix B.4 to the record at p of a
// version 1 segment with segment end s and file size f. It returns the
// record's data and the offset after it; index is the index assigned to it.
func legacyRecord(r *segmentFile, p, s, f, index uint64) ([]byte, uint64, error) {
	if p+4 > s || p+4 > f {
		return nil, 0, recordError(ClassTruncated, r.log, p, index, "length field cut short")
	}
	lb, err := r.readAt(p, 4)
	if err != nil {
		return nil, 0, err
	}
	length := int64(int32(be.Uint32(lb)))
	if length < 0 || p+4+uint64(length) > s {
		return nil, 0, recordError(ClassLengthOutOfRange, r.log, p, index, "")
	}
	end := p + 4 + uint64(length)
	if end > f {
		return nil, 0, recordError(ClassTruncated, r.log, p, index, "data cut short")
	}
	data, err := r.readAt(p+4, uint64(length))
	if err != nil {
		return nil, 0, err
	}
	return data, end, nil
}
